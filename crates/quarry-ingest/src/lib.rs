//! Quarry ingestion: turns a person's files into clean, located text and then into chunks.
//!
//! - [`detect_format`] decides the format from the bytes (magic numbers, container contents).
//! - [`parse_file`] / [`parse_bytes`] read one file (a ZIP: each member too) into [`ParsedDocument`]s,
//!   reporting a [`FileOutcome`] per document through [`ParseEvent`]s. Loaders: PDF (lopdf + pdf-extract),
//!   DOCX (docx-rs), PPTX, ODT and EPUB (quick-xml), spreadsheets (calamine), ZIP (zip), e-mail (`.eml` with
//!   mail-parser, Outlook `.msg` with cfb; attachments are documents of their own),
//!   text/Markdown/CSV/HTML/JSON.
//! - [`isolate`] runs parsing in worker processes with a per-document time budget and a memory cap, so a
//!   parser that hangs, balloons or aborts costs one document, never the batch.
//! - [`Chunker`] splits a parsed document into token-sized [`quarry_core::Chunk`]s that keep page spans;
//!   [`document_context`] names what the document is about, for every chunk of it.
//! - [`readable_text`] reduces a web page's HTML to its article text (run in a worker through
//!   [`isolate::PageReader`]).
//! - [`extraction_version`] numbers each format's reading; libraries read a file again when it rises.
//! - [`collect_inputs`] walks the paths a user gave; [`report`] writes the per-file TSV report.

mod archive;
mod chunk;
mod context;
mod detect;
mod docx;
mod docx_extras;
mod epub;
mod error;
mod extraction;
pub mod isolate;
mod mail;
pub mod ocr;
mod odt;
mod package;
mod parse;
mod pdf;
mod pdf_fallback;
mod pptx;
mod readable;
pub mod report;
mod rtf;
mod sandbox;
mod spreadsheet;
mod table;
mod text;
mod walk;

pub use chunk::{ChunkSizer, Chunker, ChunkerConfig};
pub use context::document_context;
pub use detect::detect_format;
pub use error::IngestError;
pub use extraction::{extraction_version, failure_version, RECOGNITION_VERSION, UNSTAMPED_EXTRACTION_VERSION};
pub use parse::{parse_bytes, parse_file, FileOutcome, OcrMode, ParseEvent, ParseOptions, Status};
pub use quarry_core::{Block, Chunk, Format, Location, ParsedDocument};
pub use readable::readable_text;
pub use text::decode_text;
pub use walk::{collect_inputs, InputFile};

/// The message of a caught panic payload (`&str` or `String`), or a placeholder.
pub(crate) fn panic_message(payload: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        error::one_line(s)
    } else if let Some(s) = payload.downcast_ref::<String>() {
        error::one_line(s)
    } else {
        "unknown panic".to_string()
    }
}

/// Real files of ../shared/eval for the unit tests.
#[cfg(test)]
pub(crate) mod test_files {
    use std::path::{Path, PathBuf};

    /// `rel` under ../shared/eval (or `$QUARRY_EVAL_DIR`); panics naming the path when it is missing.
    pub(crate) fn shared_file(rel: &str) -> PathBuf {
        let eval = std::env::var_os("QUARRY_EVAL_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/eval"));
        let path = eval.join(rel);
        assert!(path.is_file(), "evaluation document not found at {} (set QUARRY_EVAL_DIR)", path.display());
        path
    }
}
