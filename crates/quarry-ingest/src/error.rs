use serde::{Deserialize, Serialize};

/// Why a file (or a ZIP member) could not be turned into text. The file's path is carried next to the
/// error (see [`crate::FileOutcome`]), so messages say only the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum IngestError {
    /// A format Quarry does not read (legacy .doc/.ppt, images, RTF, unknown binary, …).
    #[error("unsupported format: {0}")]
    Unsupported(String),
    /// Password-protected content that cannot be opened without the password.
    #[error("encrypted: {0}")]
    Encrypted(String),
    /// A PDF whose pages carry no text (a scan) while OCR is off or its models are not installed. (When OCR
    /// read the pages and found nothing, the PDF is [`IngestError::Empty`].)
    #[error("no text layer (needs OCR)")]
    NoTextLayer,
    /// The file opened but holds no text at all.
    #[error("no text found")]
    Empty,
    /// The file is damaged or not what its bytes claim.
    #[error("malformed {format}: {reason}")]
    Malformed {
        /// The format it was read as (`PDF`, `DOCX`, …).
        format: String,
        /// What is wrong, as the reader says it.
        reason: String,
    },
    /// Over a size limit (file size, ZIP member size, total unpacked size, worker memory cap).
    #[error("too large: {0}")]
    TooLarge(String),
    /// A ZIP entry refused for safety: path traversal, symbolic link, suspicious compression ratio, depth.
    #[error("unsafe archive entry: {0}")]
    UnsafeArchive(String),
    /// The parser panicked or its worker process died.
    #[error("parser crashed: {0}")]
    Crashed(String),
    /// Parsing took longer than the per-document time budget (milliseconds).
    #[error("timed out after {:.1} s", *.0 as f64 / 1000.0)]
    Timeout(u64),
    /// The file could not be read from disk.
    #[error("cannot read file: {0}")]
    Io(String),
}

impl IngestError {
    pub(crate) fn malformed(format: &str, reason: impl ToString) -> Self {
        IngestError::Malformed { format: format.to_string(), reason: one_line(&reason.to_string()) }
    }

    /// The report status this error maps to: `timeout`, `too_large`, `crashed` or `failed`.
    pub fn status(&self) -> crate::Status {
        match self {
            IngestError::Timeout(_) => crate::Status::Timeout,
            IngestError::TooLarge(_) => crate::Status::TooLarge,
            IngestError::Crashed(_) => crate::Status::Crashed,
            _ => crate::Status::Failed,
        }
    }
}

/// Squeezes a message onto one line of at most 300 characters, so it fits a TSV cell and a UI row.
pub(crate) fn one_line(message: &str) -> String {
    let flat: String = message.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 300 {
        let cut: String = flat.chars().take(297).collect();
        format!("{cut}...")
    } else {
        flat
    }
}
