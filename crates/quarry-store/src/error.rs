/// Errors of libraries on disk. Messages name the library, file or setting involved.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Embedding, keyword index or model files (see [`quarry_index::IndexError`]).
    #[error(transparent)]
    Index(#[from] quarry_index::IndexError),
    /// ONNX Runtime or the embedding model failed, or the embedder is unusable (lock poisoned).
    #[error("embedding failed: {0}")]
    Embedding(String),
    /// A model file is missing or unreadable (the tokenizer the chunker needs).
    #[error("{0}")]
    ModelFiles(String),
    /// LanceDB or the shape of its tables.
    #[error("library storage: {0}")]
    Store(String),
    /// A library that does not exist, exists already, has a bad name, or is used by another process.
    #[error("{0}")]
    Library(String),
    /// The library was built with another embedding model.
    #[error("{0}")]
    ModelMismatch(String),
    /// A file or folder of the library could not be read or written.
    #[error("{path}: {source}")]
    Io { path: std::path::PathBuf, source: std::io::Error },
}

impl From<lancedb::Error> for StoreError {
    fn from(e: lancedb::Error) -> Self {
        StoreError::Store(e.to_string())
    }
}

impl From<arrow_schema::ArrowError> for StoreError {
    fn from(e: arrow_schema::ArrowError) -> Self {
        StoreError::Store(e.to_string())
    }
}

impl StoreError {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<std::path::PathBuf>, source: std::io::Error) -> Self {
        StoreError::Io { path: path.into(), source }
    }
}
