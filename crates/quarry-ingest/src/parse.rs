//! One entry point for every format: detect, load under a panic guard, and report one [`FileOutcome`] per
//! document (a ZIP yields one for itself and one per member).

use crate::{detect, IngestError};
use quarry_core::{Format, ParsedDocument};
use serde::{Deserialize, Serialize};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::time::Instant;

/// Size and safety limits for parsing, and the optional PDFium fallback. Defaults suit a desktop with a few
/// GiB to spare.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ParseOptions {
    /// Path of the PDFium shared library (`libpdfium.so`), the second PDF reader (see
    /// `crate::pdf_fallback` for when it is used). `None` turns it off.
    pub pdfium_library: Option<std::path::PathBuf>,
    /// Files larger than this are reported `too_large` without being read (bytes; default 512 MiB).
    pub max_file_bytes: u64,
    /// Archives listing more entries are refused (default 10,000).
    pub max_archive_entries: usize,
    /// A single ZIP member may unpack to at most this many bytes (default 512 MiB).
    pub max_member_bytes: u64,
    /// All members of one archive together may unpack to at most this many bytes (default 2 GiB).
    pub max_archive_total_bytes: u64,
    /// Members over 1 MiB whose unpacked/packed ratio exceeds this are refused as zip bombs (default 200).
    pub max_compression_ratio: u64,
    /// Archives nested deeper than this are refused (default 3: `a.zip!/b.zip!/c.zip!/doc.pdf`).
    pub max_archive_depth: u32,
    /// When OCR reads a PDF page (see [`OcrMode`]); pictures are always read by OCR unless `Off`.
    #[serde(default)]
    pub ocr: OcrMode,
    /// The OCR model files (see [`crate::ocr`]); `None` when they are not installed, and then a scanned
    /// page or a picture is refused with the reason.
    #[serde(default)]
    pub ocr_models: Option<crate::ocr::OcrModels>,
    /// Most pages of one PDF read by OCR (default [`DEFAULT_MAX_OCR_PAGES`]); the pages past it are left
    /// out with a warning, so a crafted 100,000-page scan costs minutes, not days.
    #[serde(default = "default_max_ocr_pages")]
    pub max_ocr_pages: u32,
}

/// [`ParseOptions::max_ocr_pages`]'s default: 500 pages, about 25 minutes of OCR on 2 cores at the
/// measured 2–3 s a page (docs/evaluation/ingest-and-search.md), within the whole-file wall budget.
pub const DEFAULT_MAX_OCR_PAGES: u32 = 500;

fn default_max_ocr_pages() -> u32 {
    DEFAULT_MAX_OCR_PAGES
}

/// When a PDF page is read by OCR.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OcrMode {
    /// Pages whose text layer has almost nothing (fewer than [`crate::pdf::OCR_BELOW_CHARS`] letters and
    /// digits: scans, or a scan with a stray page number) are read by OCR; pictures too.
    #[default]
    Auto,
    /// Never: scans are refused as `no text layer`, pictures as needing OCR.
    Off,
    /// Every page of every PDF is read by OCR, its text replacing the text layer's (for PDFs whose text
    /// layer is wrong: a bad OCR by another program, broken font encodings).
    Force,
}

impl std::str::FromStr for OcrMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(OcrMode::Auto),
            "off" => Ok(OcrMode::Off),
            "force" => Ok(OcrMode::Force),
            other => Err(format!("OCR mode {other:?}: auto, off or force")),
        }
    }
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            pdfium_library: quarry_core::models::find_model_file(crate::pdf_fallback::LIBRARY_FILE).ok(),
            max_file_bytes: 512 << 20,
            max_archive_entries: 10_000,
            max_member_bytes: 512 << 20,
            max_archive_total_bytes: 2 << 30,
            max_compression_ratio: 200,
            max_archive_depth: 3,
            ocr: OcrMode::Auto,
            ocr_models: crate::ocr::OcrModels::find().ok(),
            max_ocr_pages: DEFAULT_MAX_OCR_PAGES,
        }
    }
}

/// How parsing one document ended, as written to the report's `status` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Read.
    Ok,
    /// Refused with a reason ([`IngestError`]): not a supported format, damaged, encrypted, no text.
    Failed,
    /// Its worker took longer than the time allowed and was stopped.
    Timeout,
    /// Over a size or memory limit.
    TooLarge,
    /// Its worker process died while reading it (a crash in a parser), or sent something unreadable.
    Crashed,
}

impl Status {
    /// `ok`, `failed`, `timeout`, `too_large` or `crashed`: the report's `status` column.
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Failed => "failed",
            Status::Timeout => "timeout",
            Status::TooLarge => "too_large",
            Status::Crashed => "crashed",
        }
    }
}

/// The result for one document: a report row, plus the parsed text when it succeeded and was asked for.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileOutcome {
    /// Virtual path (see [`ParsedDocument::path`]).
    pub path: String,
    /// The format it was read as; `None` when it was not recognised.
    pub format: Option<Format>,
    /// How it ended.
    pub status: Status,
    /// Pages (PDF) or sheets (spreadsheets); `None` for formats without either.
    pub pages: Option<u32>,
    /// Characters (Unicode scalar values) of extracted text.
    pub chars: u64,
    /// Of those, CJK characters ([`quarry_core::count_cjk_chars`]).
    pub cjk_chars: u64,
    /// Wall-clock milliseconds spent on this document.
    pub ms: u64,
    /// Why it was not read (for every status but `ok`).
    pub error: Option<IngestError>,
    /// What was read but not well (skipped parts, unknown encodings), one sentence each.
    pub warnings: Vec<String>,
    /// The parsed text, when it was read and asked for.
    pub document: Option<ParsedDocument>,
}

/// What parsing reports as it goes: `Started` before a document is read (so a supervisor that sees the
/// process die knows which document did it), `Finished` with its outcome.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ParseEvent {
    /// Reading the document at `path` (virtual path) begins.
    Started {
        /// Its virtual path.
        path: String,
    },
    /// A long reading is under way: `done` of `total` steps (OCR: pages) of the document at `path`. A
    /// supervisor takes it as a sign of life.
    Progress {
        /// Its virtual path.
        path: String,
        /// Steps done.
        done: u32,
        /// Steps in all.
        total: u32,
    },
    /// The document's outcome.
    Finished(Box<FileOutcome>),
}

pub(crate) fn outcome_failed(path: String, format: Option<Format>, error: IngestError, ms: u64) -> ParseEvent {
    ParseEvent::Finished(Box::new(FileOutcome {
        path,
        format,
        status: error.status(),
        pages: None,
        chars: 0,
        cjk_chars: 0,
        ms,
        error: Some(error),
        warnings: Vec::new(),
        document: None,
    }))
}

/// The row of a container (a ZIP archive, a mailbox) once its members are out: ok, no text of its own.
pub(crate) fn container_finished(path: String, format: Format, ms: u64, warnings: Vec<String>) -> ParseEvent {
    ParseEvent::Finished(Box::new(FileOutcome {
        path,
        format: Some(format),
        status: Status::Ok,
        pages: None,
        chars: 0,
        cjk_chars: 0,
        ms,
        error: None,
        warnings,
        document: None,
    }))
}

/// Reads and parses the file at `path`, reporting under the virtual path `display`.
/// Never panics and never returns early: every problem becomes a `Finished` event with an error.
pub fn parse_file(path: &Path, display: &str, options: &ParseOptions, emit: &mut dyn FnMut(ParseEvent)) {
    emit(ParseEvent::Started { path: display.to_string() });
    match std::fs::metadata(path) {
        Ok(meta) if meta.len() > options.max_file_bytes => {
            let error = IngestError::TooLarge(format!("{} bytes (limit {})", meta.len(), options.max_file_bytes));
            return emit(outcome_failed(display.to_string(), None, error, 0));
        }
        Ok(_) => {}
        Err(e) => return emit(outcome_failed(display.to_string(), None, IngestError::Io(e.to_string()), 0)),
    }
    match std::fs::read(path) {
        Ok(bytes) => parse_bytes(display, &bytes, 0, options, emit),
        Err(e) => emit(outcome_failed(display.to_string(), None, IngestError::Io(e.to_string()), 0)),
    }
}

/// Parses in-memory bytes named `path` (a virtual path), `depth` archives deep. ZIP archives emit a row for
/// themselves and then one per member.
pub fn parse_bytes(path: &str, bytes: &[u8], depth: u32, options: &ParseOptions, emit: &mut dyn FnMut(ParseEvent)) {
    let start = Instant::now();
    let ms = |start: Instant| start.elapsed().as_millis() as u64;
    if depth > 0 {
        emit(ParseEvent::Started { path: path.to_string() });
    }
    let format = match detect::detect_format(path, bytes) {
        Ok(format) => format,
        Err(error) => return emit(outcome_failed(path.to_string(), None, error, ms(start))),
    };
    if format == Format::Mbox {
        return expand_mailbox(path, bytes, depth, options, emit, start);
    }
    if format == Format::Zip {
        if let Some(kind) = detect::unsupported_package_kind(bytes) {
            return emit(outcome_failed(
                path.to_string(),
                Some(format),
                IngestError::Unsupported(kind.into()),
                ms(start),
            ));
        }
        if depth >= options.max_archive_depth {
            let error =
                IngestError::UnsafeArchive(format!("archives nested more than {} deep", options.max_archive_depth));
            return emit(outcome_failed(path.to_string(), Some(format), error, ms(start)));
        }
        // Members are emitted as they finish (a supervisor that must kill this worker keeps them); the
        // archive's own row follows them.
        let result = crate::archive::expand(path, bytes, depth, options, emit);
        match result {
            Ok(members) => {
                let warnings = if members == 0 { vec!["archive holds no files".into()] } else { Vec::new() };
                emit(container_finished(path.to_string(), format, ms(start), warnings))
            }
            Err(error) => emit(outcome_failed(path.to_string(), Some(format), error, ms(start))),
        }
        return;
    }
    let mut progress = |done: u32, total: u32| emit(ParseEvent::Progress { path: path.to_string(), done, total });
    let loaded = catch_unwind(AssertUnwindSafe(|| load_document(format, bytes, options, &mut progress)));
    let Loaded { blocks, pages: page_count, warnings, attachments } = match loaded {
        Ok(Ok(loaded)) => loaded,
        Ok(Err(error)) => return emit(outcome_failed(path.to_string(), Some(format), error, ms(start))),
        Err(panic) => {
            let error = IngestError::Crashed(format!("{format} parser panicked: {}", crate::panic_message(&panic)));
            return emit(outcome_failed(path.to_string(), Some(format), error, ms(start)));
        }
    };
    // A message's attachments come before the message itself, as an archive's members come before its
    // row: a library that has the message's row has all of it.
    if !attachments.is_empty() {
        crate::archive::expand_attachments(path, attachments, depth, options, emit);
    }
    let document = ParsedDocument {
        path: path.to_string(),
        format,
        content_hash: blake3::hash(bytes).to_hex().to_string(),
        byte_len: bytes.len() as u64,
        page_count,
        blocks,
        warnings: warnings.clone(),
    };
    if document.blocks.iter().all(|b| b.text.trim().is_empty()) {
        return emit(outcome_failed(path.to_string(), Some(format), IngestError::Empty, ms(start)));
    }
    emit(ParseEvent::Finished(Box::new(FileOutcome {
        path: path.to_string(),
        format: Some(format),
        status: Status::Ok,
        pages: page_count,
        chars: document.char_count() as u64,
        cjk_chars: document.cjk_char_count() as u64,
        ms: ms(start),
        error: None,
        warnings,
        document: Some(document),
    })));
}

/// A mailbox: each message a document of its own (`Inbox!/message 3.eml`, its attachments below it), then
/// the mailbox's own row, as an archive's. At most `max_archive_entries` messages are read; the row's
/// warning says when more were left.
fn expand_mailbox(
    path: &str,
    bytes: &[u8],
    depth: u32,
    options: &ParseOptions,
    emit: &mut dyn FnMut(ParseEvent),
    start: Instant,
) {
    let ms = || start.elapsed().as_millis() as u64;
    if depth >= options.max_archive_depth {
        let error = IngestError::UnsafeArchive(format!("archives nested more than {} deep", options.max_archive_depth));
        return emit(outcome_failed(path.to_string(), Some(Format::Mbox), error, ms()));
    }
    let (messages, more) = match crate::mail::mbox_messages(bytes, options.max_archive_entries) {
        Ok(split) => split,
        Err(error) => return emit(outcome_failed(path.to_string(), Some(Format::Mbox), error, ms())),
    };
    let mut warnings = Vec::new();
    if messages.is_empty() {
        warnings.push("mailbox holds no messages".to_string());
    }
    if more {
        warnings.push(format!("only the first {} messages were read", options.max_archive_entries));
    }
    crate::archive::expand_attachments(path, messages, depth, options, emit);
    emit(container_finished(path.to_string(), Format::Mbox, ms(), warnings));
}

/// What a format's loader hands back: blocks in reading order, the page (sheet, slide) count when the
/// format has one, non-fatal warnings, and the files a message carries.
struct Loaded {
    blocks: Vec<quarry_core::Block>,
    pages: Option<u32>,
    warnings: Vec<String>,
    attachments: Vec<crate::mail::Attachment>,
}

impl Loaded {
    fn new(blocks: Vec<quarry_core::Block>, pages: Option<u32>, warnings: Vec<String>) -> Self {
        Loaded { blocks, pages, warnings, attachments: Vec::new() }
    }
}

fn load_document(
    format: Format,
    bytes: &[u8],
    options: &ParseOptions,
    progress: &mut dyn FnMut(u32, u32),
) -> Result<Loaded, IngestError> {
    match format {
        Format::Pdf => crate::pdf::load(
            bytes,
            options.pdfium_library.as_deref(),
            &mut crate::pdf::OcrSettings::of(options, progress),
        )
        .map(|(b, pages, w)| Loaded::new(b, Some(pages), w)),
        Format::Image => {
            crate::ocr::load_image(bytes, options, progress).map(|(b, pages, w)| Loaded::new(b, Some(pages), w))
        }
        Format::Rtf => crate::rtf::load(bytes).map(|b| Loaded::new(b, None, Vec::new())),
        Format::Docx => crate::docx::load(bytes).map(|(b, w)| Loaded::new(b, None, w)),
        Format::Pptx => crate::pptx::load(bytes).map(|(b, slides, w)| Loaded::new(b, Some(slides), w)),
        Format::Odt => crate::odt::load(bytes).map(|(b, w)| Loaded::new(b, None, w)),
        Format::Odp => crate::odt::load_presentation(bytes).map(|(b, slides, w)| Loaded::new(b, Some(slides), w)),
        Format::Epub => crate::epub::load(bytes).map(|(b, _chapters, w)| Loaded::new(b, None, w)),
        f if f.is_spreadsheet() => {
            crate::spreadsheet::load(f, bytes).map(|(b, sheets, w)| Loaded::new(b, Some(sheets), w))
        }
        f if f.is_mail() => crate::mail::load(f, bytes).map(|mail| Loaded {
            blocks: mail.blocks,
            pages: None,
            warnings: mail.warnings,
            attachments: mail.attachments,
        }),
        Format::Text | Format::Markdown | Format::Csv | Format::Html | Format::Json => {
            crate::text::load(format, bytes).map(|b| Loaded::new(b, None, Vec::new()))
        }
        other => Err(IngestError::Unsupported(other.to_string())),
    }
}
