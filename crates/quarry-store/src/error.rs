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
    /// A library that exists already, has a bad name or a manifest that does not parse, or was opened
    /// read-only for a change.
    #[error("{0}")]
    Library(String),
    /// No library of that name, or no document of the library at a path (the message lists what there is).
    #[error("{0}")]
    NotFound(String),
    /// Another process is changing the library (it holds `write.lock`; the message names its pid).
    #[error("{0}")]
    Busy(String),
    /// The library was built with another embedding model.
    #[error("{0}")]
    ModelMismatch(String),
    /// A file or folder of the library could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: std::path::PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
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

impl quarry_core::Coded for StoreError {
    fn code(&self) -> quarry_core::ErrorCode {
        use quarry_core::ErrorCode;
        match self {
            _ if self.is_disk_full() => ErrorCode::DiskFull,
            StoreError::Index(e) => e.code(),
            StoreError::ModelFiles(_) => ErrorCode::ModelMissing,
            StoreError::NotFound(_) => ErrorCode::LibraryNotFound,
            StoreError::Busy(_) => ErrorCode::LibraryBusy,
            StoreError::Embedding(_)
            | StoreError::Store(_)
            | StoreError::Library(_)
            | StoreError::ModelMismatch(_)
            | StoreError::Io { .. } => ErrorCode::Other,
        }
    }
}

impl StoreError {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<std::path::PathBuf>, source: std::io::Error) -> Self {
        StoreError::Io { path: path.into(), source }
    }

    /// True when the error is the library's disk being full (ENOSPC), so a caller can say what to do
    /// ("free some space and run the command again"). LanceDB and tantivy report ENOSPC inside their own
    /// error text rather than as an [`std::io::ErrorKind`]; their text is read here, in one place.
    pub fn is_disk_full(&self) -> bool {
        match self {
            StoreError::Io { source, .. } => is_disk_full_io(source),
            other => other.to_string().contains(ENOSPC_MESSAGE),
        }
    }
}

pub use quarry_core::is_disk_full_io;
use quarry_core::ENOSPC_MESSAGE;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_is_recognised_whichever_layer_reports_it() {
        let full = std::io::Error::from(std::io::ErrorKind::StorageFull);
        assert!(StoreError::io("/data/lance", full).is_disk_full());
        let os = std::io::Error::from_raw_os_error(28);
        assert!(StoreError::io("/data/tantivy", os).is_disk_full(), "ENOSPC from the OS");
        let lance = StoreError::Store(
            "LanceError(IO): Generic LocalFileSystem error: No space left on device (os error 28)".into(),
        );
        assert!(lance.is_disk_full(), "inside LanceDB's text");
        assert!(!StoreError::Store("column text is missing".into()).is_disk_full());
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert!(!StoreError::io("/data", denied).is_disk_full());
    }

    #[test]
    fn each_failure_a_caller_acts_on_has_its_code() {
        use quarry_core::{Coded, ErrorCode};
        let full = std::io::Error::from_raw_os_error(28);
        assert_eq!(StoreError::io("/data/lance", full).code(), ErrorCode::DiskFull);
        assert_eq!(StoreError::Store("… No space left on device (os error 28)".into()).code(), ErrorCode::DiskFull);
        assert_eq!(StoreError::Busy("library \"a\" is being changed".into()).code(), ErrorCode::LibraryBusy);
        assert_eq!(StoreError::NotFound("no library named \"a\"".into()).code(), ErrorCode::LibraryNotFound);
        let model = quarry_index::IndexError::ModelFiles("tokenizer.json is missing".into());
        assert_eq!(StoreError::from(model).code(), ErrorCode::ModelMissing);
        assert_eq!(StoreError::Library("\"..\" is not a valid library name".into()).code(), ErrorCode::Other);
    }
}
