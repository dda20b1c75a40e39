//! PDF text per page, through lopdf (parsing, decryption) and pdf-extract (text layout from content
//! streams, font encodings, ToUnicode maps).
//!
//! When pdf-extract yields nothing for a page (or panics on it), lopdf's own extractor is tried on that page.
//!
//! pdf-extract's own `extract_text_by_pages` stops at the first page that fails; here every page is tried
//! on its own, under a panic guard, so one broken page costs one page, not the document.

use crate::IngestError;
use quarry_core::{Block, Location};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A page with fewer non-whitespace characters than this counts as "no text" when judging whether the
/// document has a text layer at all.
const MIN_PAGE_CHARS: usize = 1;

/// Text blocks (one per page with text, `location.page` 1-based), page count and warnings.
///
/// Errors: [`IngestError::Encrypted`] when the PDF needs a non-empty password; [`IngestError::NoTextLayer`]
/// when no page has text (a scan); [`IngestError::Malformed`] when lopdf cannot parse the file.
pub(crate) fn load(bytes: &[u8]) -> Result<(Vec<Block>, u32, Vec<String>), IngestError> {
    let mut doc = lopdf::Document::load_mem(bytes).map_err(|e| match e {
        lopdf::Error::Decryption(_) | lopdf::Error::InvalidPassword => {
            IngestError::Encrypted("PDF needs a password".into())
        }
        other => IngestError::malformed("pdf", other),
    })?;
    if doc.is_encrypted() {
        // Many PDFs are "encrypted" only to set permissions, with an empty user password.
        doc.decrypt("").map_err(|_| IngestError::Encrypted("PDF needs a password".into()))?;
    }
    let pages = doc.get_pages();
    let page_count = pages.len() as u32;
    let mut blocks = Vec::new();
    let mut warnings = Vec::new();
    for &page_num in pages.keys() {
        let mut text = String::new();
        let result = catch_unwind(AssertUnwindSafe(|| {
            let mut output = pdf_extract::PlainTextOutput::new(&mut text);
            pdf_extract::output_doc_page(&doc, &mut output, page_num)
        }));
        match result {
            Ok(Ok(())) => {}
            Ok(Err(e)) => warnings.push(format!("page {page_num}: {}", crate::error::one_line(&e.to_string()))),
            Err(panic) => warnings.push(format!("page {page_num}: text extraction panicked: {}", crate::panic_message(&panic))),
        }
        let mut text = tidy_page_text(&text);
        if text.trim().is_empty() {
            // pdf-extract found nothing (or gave up): lopdf's simpler extractor reads some pages it cannot.
            if let Ok(Ok(fallback)) = catch_unwind(AssertUnwindSafe(|| doc.extract_text(&[page_num]))) {
                text = tidy_page_text(&fallback);
            }
        }
        if text.chars().filter(|c| !c.is_whitespace()).count() >= MIN_PAGE_CHARS {
            blocks.push(Block { text, location: Location { page: Some(page_num), ..Default::default() } });
        }
    }
    if page_count == 0 {
        return Err(IngestError::malformed("pdf", "no pages found"));
    }
    if blocks.is_empty() {
        if warnings.len() as u32 == page_count {
            return Err(IngestError::malformed("pdf", format!("no page could be decoded; first error: {}", warnings[0])));
        }
        return Err(IngestError::NoTextLayer);
    }
    Ok((blocks, page_count, warnings))
}

/// Trims trailing spaces, collapses runs of blank lines, and drops NULs and other control characters that
/// broken font encodings leave behind.
fn tidy_page_text(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut blank_run = 0;
    for line in raw.lines() {
        let line: String = line.chars().filter(|c| !c.is_control() || *c == '\t').collect();
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank_run += 1;
            if blank_run > 1 {
                continue;
            }
        } else {
            blank_run = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tidy_collapses_blank_runs_and_strips_controls() {
        assert_eq!(tidy_page_text("  a\u{0}b  \n\n\n\nc\n"), "ab\n\nc");
    }
}
