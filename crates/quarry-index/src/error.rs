/// Errors of indexing and search. Messages name the file or setting involved.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// A model file or native library is missing or unreadable.
    #[error("{0}")]
    ModelFiles(String),
    /// ONNX Runtime or the embedding model failed.
    #[error("embedding failed: {0}")]
    Embedding(String),
    /// The keyword index failed.
    #[error("keyword index: {0}")]
    Keyword(#[from] tantivy::TantivyError),
    /// The keyword index in this folder was built with an older analyzer; a writer rebuilds it from the
    /// chunks it mirrors (searching it read-only still works).
    #[error("keyword index {0} was built before ASCII folding and must be rebuilt")]
    KeywordAnalyzerChanged(std::path::PathBuf),
}

impl quarry_core::Coded for IndexError {
    fn code(&self) -> quarry_core::ErrorCode {
        match self {
            IndexError::ModelFiles(_) => quarry_core::ErrorCode::ModelMissing,
            IndexError::Embedding(_) | IndexError::Keyword(_) | IndexError::KeywordAnalyzerChanged(_) => {
                quarry_core::ErrorCode::Other
            }
        }
    }
}
