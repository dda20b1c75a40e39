//! What kind of failure an error is, as a code a caller can branch on.
//!
//! Every error type of the library crates keeps its message for people (naming the file, library or
//! setting involved) and says, through [`Coded`], which of a few kinds it is: the CLI prints advice by
//! kind and the app replies `{code, message}` to its front end, which matches the code instead of the
//! message's wording.

use serde::{Deserialize, Serialize};

/// The kind of a failure, for a caller that acts on it. Serialized in snake_case (`"disk_full"`), as the
/// app's front end receives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The disk holding the library (or the file being written) is full (ENOSPC). What a library held
    /// before is kept; freeing space and running the command again finishes it.
    DiskFull,
    /// Another process is changing the library (it holds the library's write lock).
    LibraryBusy,
    /// No library of that name exists.
    LibraryNotFound,
    /// A model file or native library is missing, unreadable or of the wrong kind (a language model that
    /// is not GGUF, an embedding model folder without its tokenizer).
    ModelMissing,
    /// Offline mode refused to reach another machine; nothing was sent.
    Offline,
    /// A server (an LLM endpoint, a web search provider) did not answer, or answered with an error.
    Unreachable,
    /// The person stopped the work.
    Cancelled,
    /// Anything else; the message says what.
    Other,
}

impl ErrorCode {
    /// The code as the front end and `--json` output spell it (`disk_full`).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::DiskFull => "disk_full",
            ErrorCode::LibraryBusy => "library_busy",
            ErrorCode::LibraryNotFound => "library_not_found",
            ErrorCode::ModelMissing => "model_missing",
            ErrorCode::Offline => "offline",
            ErrorCode::Unreachable => "unreachable",
            ErrorCode::Cancelled => "cancelled",
            ErrorCode::Other => "other",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What Linux says for ENOSPC (`strerror(28)`), as it appears inside LanceDB's and tantivy's errors.
pub const ENOSPC_MESSAGE: &str = "No space left on device";

/// True for an I/O error that says the disk is full (`ErrorKind::StorageFull`, ENOSPC): the one check
/// every error type's [`Coded::code`] uses for [`ErrorCode::DiskFull`].
pub fn is_disk_full_io(error: &std::io::Error) -> bool {
    error.kind() == std::io::ErrorKind::StorageFull || error.to_string().contains(ENOSPC_MESSAGE)
}

/// An error that knows its [`ErrorCode`].
pub trait Coded {
    /// The kind of this failure.
    fn code(&self) -> ErrorCode;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_spelled_in_snake_case_alike_by_serde_and_as_str() {
        for code in [
            ErrorCode::DiskFull,
            ErrorCode::LibraryBusy,
            ErrorCode::LibraryNotFound,
            ErrorCode::ModelMissing,
            ErrorCode::Offline,
            ErrorCode::Unreachable,
            ErrorCode::Cancelled,
            ErrorCode::Other,
        ] {
            assert_eq!(serde_json::to_string(&code).unwrap(), format!("\"{}\"", code.as_str()));
        }
    }
}
