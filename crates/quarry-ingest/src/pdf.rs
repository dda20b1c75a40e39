//! PDF text per page, through lopdf (parsing, decryption) and pdf-extract (text layout from content
//! streams, font encodings, ToUnicode maps).
//!
//! When pdf-extract yields nothing for a page (or panics on it), lopdf's own extractor is tried on that page.
//! PDFium (see [`crate::pdf_fallback`]) then reads what these may have missed: files lopdf cannot open,
//! pages still empty or where pdf-extract failed, form-field values, documents with CJK CID fonts, and
//! pages where pdf-extract split words apart (`C o mmissio n file n umber`: it starts a word at every
//! kerned run of a `TJ` array and guesses spaces from glyph widths; see [`lone_letter_share`]).
//!
//! pdf-extract's own `extract_text_by_pages` stops at the first page that fails; here every page is tried
//! on its own, under a panic guard, so one broken page costs one page, not the document.

use crate::table::label_table_rows;
use crate::IngestError;
use quarry_core::{Block, Location};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

/// A page with fewer non-whitespace characters than this counts as "no text" when judging whether the
/// document has a text layer at all.
const MIN_PAGE_CHARS: usize = 1;

/// A page whose reading has more than this share of lone letters (see [`lone_letter_share`]) is read
/// again with PDFium. Running English prose has well under 1 %; a page with split words 10–30 %.
const SPLIT_WORDS_SHARE: f64 = 0.02;

/// Text blocks (one per page with text, `location.page` 1-based), page count and warnings.
///
/// Errors: [`IngestError::Encrypted`] when the PDF needs a non-empty password; [`IngestError::NoTextLayer`]
/// when no page has text (a scan); [`IngestError::Malformed`] when lopdf cannot parse the file.
///
/// `pdfium` is the path of the PDFium library for the fallback (see [`crate::pdf_fallback`]); `None`
/// disables it.
pub(crate) fn load(bytes: &[u8], pdfium: Option<&Path>) -> Result<(Vec<Block>, u32, Vec<String>), IngestError> {
    let mut doc = match lopdf::Document::load_mem(bytes) {
        Ok(doc) => doc,
        Err(lopdf::Error::Decryption(_) | lopdf::Error::InvalidPassword) => {
            return Err(IngestError::Encrypted("PDF needs a password".into()))
        }
        Err(error) => {
            // lopdf cannot read the file structure (often a broken cross-reference table): PDFium rebuilds it.
            let error = IngestError::malformed("pdf", error);
            let Some(library) = pdfium else { return Err(error) };
            return read_whole_with_pdfium(library, bytes, error);
        }
    };
    if doc.is_encrypted() {
        // Many PDFs are "encrypted" only to set permissions, with an empty user password.
        doc.decrypt("").map_err(|_| IngestError::Encrypted("PDF needs a password".into()))?;
    }
    let pages = doc.get_pages();
    let page_count = pages.len() as u32;
    let mut texts: Vec<(u32, String)> = Vec::new();
    let mut warnings = Vec::new();
    // Pages where pdf-extract returned an error or panicked.
    let mut primary_failed: Vec<u32> = Vec::new();
    for &page_num in pages.keys() {
        let mut text = String::new();
        let result = catch_unwind(AssertUnwindSafe(|| {
            let mut output = pdf_extract::PlainTextOutput::new(&mut text);
            pdf_extract::output_doc_page(&doc, &mut output, page_num)
        }));
        match result {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                primary_failed.push(page_num);
                warnings.push(format!("page {page_num}: {}", crate::error::one_line(&e.to_string())));
            }
            Err(panic) => {
                primary_failed.push(page_num);
                warnings.push(format!("page {page_num}: text extraction panicked: {}", crate::panic_message(&panic)));
            }
        }
        let mut text = tidy_page_text(&text);
        if text.trim().is_empty() {
            // pdf-extract found nothing (or gave up): lopdf's simpler extractor reads some pages it cannot.
            if let Ok(Ok(fallback)) = catch_unwind(AssertUnwindSafe(|| doc.extract_text(&[page_num]))) {
                text = tidy_page_text(&fallback);
            }
        }
        texts.push((page_num, text));
    }
    // Ask PDFium for pages the primary path may have read badly: pages still without text, pages where
    // pdf-extract failed, every page of a form (field values live in annotations, not in the content),
    // and every page of a document with CID-keyed CJK fonts (whose glyphs pdf-extract drops silently).
    // Per page, the reading with more text wins; form values are added to what the page already has.
    let has_form = has_form_fields(&doc);
    let whole_document = has_form || uses_cjk_cid_fonts(&doc);
    let wanted: Vec<u32> = texts
        .iter()
        .filter(|(n, t)| {
            whole_document || !has_text(t) || primary_failed.contains(n) || lone_letter_share(t) > SPLIT_WORDS_SHARE
        })
        .map(|(n, _)| *n)
        .collect();
    if let (Some(library), false) = (pdfium, wanted.is_empty()) {
        if let Ok((recovered, _)) = crate::pdf_fallback::extract_pages(library, bytes, Some(&wanted)) {
            let mut used = 0;
            for page in recovered {
                let Some(slot) = texts.iter_mut().find(|(n, _)| *n == page.number) else { continue };
                let pdfium_text = tidy_page_text(&page.text);
                let mut best = if better_reading(&pdfium_text, &slot.1) { pdfium_text } else { slot.1.clone() };
                let annotations = tidy_page_text(&page.annotations);
                if has_text(&annotations) && !best.contains(annotations.as_str()) {
                    best = join_nonempty(&best, &annotations);
                }
                if best != slot.1 {
                    slot.1 = best;
                    used += 1;
                }
            }
            if used > 0 {
                warnings.push(format!("{used} page(s) completed with PDFium"));
            }
        }
    }
    if page_count == 0 {
        let error = IngestError::malformed("pdf", "no pages found");
        return match pdfium {
            Some(library) => read_whole_with_pdfium(library, bytes, error),
            None => Err(error),
        };
    }
    if !texts.iter().any(|(_, t)| has_text(t)) && primary_failed.len() as u32 == page_count {
        return Err(IngestError::malformed("pdf", format!("no page could be decoded; first error: {}", warnings[0])));
    }
    finish(texts, page_count, warnings)
}

/// The whole document through PDFium, for files the primary reader cannot open; `error` is the primary
/// reader's verdict, returned when PDFium cannot read the file either.
fn read_whole_with_pdfium(
    library: &Path,
    bytes: &[u8],
    error: IngestError,
) -> Result<(Vec<Block>, u32, Vec<String>), IngestError> {
    match crate::pdf_fallback::extract_pages(library, bytes, None) {
        Ok((pages, count)) if count > 0 => {
            let warning = format!("read with PDFium: lopdf could not read the file ({error})");
            let texts = pages
                .into_iter()
                .map(|p| (p.number, tidy_page_text(&join_nonempty(&p.text, &p.annotations))))
                .collect();
            finish(texts, count, vec![warning])
        }
        Err(crate::pdf_fallback::FallbackError::Password) => Err(IngestError::Encrypted("PDF needs a password".into())),
        _ => Err(error),
    }
}

fn join_nonempty(a: &str, b: &str) -> String {
    match (a.trim().is_empty(), b.trim().is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}\n{b}"),
    }
}

/// True when the catalog's AcroForm lists at least one field.
fn has_form_fields(doc: &lopdf::Document) -> bool {
    let Ok(catalog) = doc.catalog() else { return false };
    let Ok(form) = catalog.get(b"AcroForm") else { return false };
    let form = match form {
        lopdf::Object::Reference(id) => doc.get_dictionary(*id).ok(),
        lopdf::Object::Dictionary(d) => Some(d),
        _ => None,
    };
    let Some(fields) = form.and_then(|f| f.get(b"Fields").ok()) else { return false };
    let fields = match fields {
        lopdf::Object::Reference(id) => doc.get_object(*id).ok(),
        other => Some(other),
    };
    matches!(fields, Some(lopdf::Object::Array(a)) if !a.is_empty())
}

/// True when `candidate` (PDFium's reading of a page) is better than `current`: more text, or about
/// as much text (≥ 90 %) with words kept whole where `current` split them (half the lone letters or
/// fewer).
fn better_reading(candidate: &str, current: &str) -> bool {
    let (new_len, old_len) = (text_len(candidate), text_len(current));
    if new_len > old_len {
        return true;
    }
    let (new_split, old_split) = (lone_letter_share(candidate), lone_letter_share(current));
    old_split > SPLIT_WORDS_SHARE && new_split * 2.0 <= old_split && new_len * 10 >= old_len * 9
}

/// Of the words made only of ASCII letters (after trimming punctuation), the share that are one letter
/// other than `a`, `A` and `I`: near 0 for text read well, high where a reader split words apart
/// (`UNITED ST A TES`, `n ame o f registran t`). 0.0 for pages with fewer than 20 such words (too little
/// to judge).
pub(crate) fn lone_letter_share(text: &str) -> f64 {
    let (mut words, mut lone) = (0usize, 0usize);
    for token in text.split_whitespace() {
        let word = token.trim_matches(|c: char| !c.is_alphanumeric());
        if word.is_empty() || !word.bytes().all(|b| b.is_ascii_alphabetic()) {
            continue;
        }
        words += 1;
        if word.len() == 1 && !matches!(word, "a" | "A" | "I") {
            lone += 1;
        }
    }
    if words < 20 {
        0.0
    } else {
        lone as f64 / words as f64
    }
}

/// Non-whitespace characters: how much text a reading of a page found.
fn text_len(text: &str) -> usize {
    text.chars().filter(|c| !c.is_whitespace()).count()
}

/// True when a font declares a CJK character collection (Adobe-GB1, -CNS1, -Japan1, -Korea1).
fn uses_cjk_cid_fonts(doc: &lopdf::Document) -> bool {
    let resolve = |object: &lopdf::Object| -> Option<lopdf::Object> {
        match object {
            lopdf::Object::Reference(id) => doc.get_object(*id).ok().cloned(),
            other => Some(other.clone()),
        }
    };
    doc.objects.values().any(|object| {
        let lopdf::Object::Dictionary(dict) = object else { return false };
        let Some(info) = dict.get(b"CIDSystemInfo").ok().and_then(resolve) else { return false };
        let lopdf::Object::Dictionary(info) = info else { return false };
        match info.get(b"Ordering").ok().and_then(resolve) {
            Some(lopdf::Object::String(ordering, _)) => {
                [&b"GB1"[..], b"CNS1", b"Japan1", b"Korea1"].contains(&ordering.as_slice())
            }
            _ => false,
        }
    })
}

fn has_text(text: &str) -> bool {
    text_len(text) >= MIN_PAGE_CHARS
}

/// Blocks from (page, tidied text) pairs, dropping pages without text; `NoTextLayer` when none has any.
/// Table rows get their column names and unit (see [`crate::table`]).
fn finish(
    pages: Vec<(u32, String)>,
    page_count: u32,
    warnings: Vec<String>,
) -> Result<(Vec<Block>, u32, Vec<String>), IngestError> {
    let blocks: Vec<Block> = pages
        .into_iter()
        .filter(|(_, text)| has_text(text))
        .map(|(page, text)| Block {
            text: label_table_rows(&text),
            location: Location { page: Some(page), ..Default::default() },
        })
        .collect();
    if blocks.is_empty() {
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
    fn split_words_are_told_from_prose() {
        let split = "UNITED ST A TES SECURITIES AND EXCHANGE COMMISSION FORM 1 0 -Q QUARTERL Y REPORT PURSUANT T O \
                     SECTION 13 C o mmissio n file n umber: NVID IA C ORPORA TION (Exact n ame o f registran t as sp ecified in its charter)";
        let prose = "UNITED STATES SECURITIES AND EXCHANGE COMMISSION FORM 10-Q QUARTERLY REPORT PURSUANT TO SECTION 13 \
                     Commission file number: NVIDIA CORPORATION (Exact name of registrant as specified in its charter), \
                     a company of the State of Delaware. (a) Item I.";
        assert!(lone_letter_share(split) > 0.2, "{}", lone_letter_share(split));
        assert!(lone_letter_share(prose) < SPLIT_WORDS_SHARE * 2.0, "{}", lone_letter_share(prose));
        assert!(better_reading(prose, split));
        assert!(!better_reading(split, prose));
        // Fewer lone letters but much less text is not better.
        assert!(!better_reading("UNITED STATES SECURITIES", split));
        assert_eq!(lone_letter_share("a b c"), 0.0, "too little text to judge");
    }

    #[test]
    fn tidy_collapses_blank_runs_and_strips_controls() {
        assert_eq!(tidy_page_text("  a\u{0}b  \n\n\n\nc\n"), "ab\n\nc");
    }
}
