//! PDF text per page, through lopdf (parsing, decryption) and pdf-extract (text layout from content
//! streams, font encodings, ToUnicode maps).
//!
//! When pdf-extract yields nothing for a page (or panics on it), lopdf's own extractor is tried on that page.
//! PDFium (see [`crate::pdf_fallback`]) then reads every page as well. Its reading wins where it keeps
//! words whole that pdf-extract split apart (`C o mmissio n file n umber`, `INTEL CORPORA TION`:
//! pdf-extract starts a word at every kerned run of a `TJ` array and guesses spaces from glyph widths;
//! see [`keeps_words_whole`]), and where it finds more on pages the primary path may have missed: files
//! lopdf cannot open, pages still empty or where pdf-extract failed, form-field values, documents with
//! CJK CID fonts.
//!
//! pdf-extract's own `extract_text_by_pages` stops at the first page that fails; here every page is tried
//! on its own, under a panic guard, so one broken page costs one page, not the document.

use crate::ocr::OcrModels;
use crate::parse::{OcrMode, ParseOptions};
use crate::table::label_table_rows;
use crate::text::tidy_lines;
use crate::IngestError;
use quarry_core::{Block, Location};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

/// A page with fewer non-whitespace characters than this counts as "no text" when judging whether the
/// document has a text layer at all.
const MIN_PAGE_CHARS: usize = 1;

/// In [`OcrMode::Auto`], a page whose text layer holds fewer letters and digits than this (none: a scan;
/// a few: a scan with a stamped page number or a stray mark) is read by OCR, and OCR's text is kept when it
/// has more letters and digits than the text layer.
pub(crate) const OCR_BELOW_CHARS: usize = 20;

/// How a PDF's pages may be read by OCR (see [`crate::ocr`]), and where progress goes.
pub(crate) struct OcrSettings<'a> {
    pub mode: OcrMode,
    /// `None`: the models are not installed; pages that need OCR are left out with a warning.
    pub models: Option<&'a OcrModels>,
    /// Called with (pages read, pages to read) after each OCR page: a sign of life for the supervisor.
    pub progress: &'a mut dyn FnMut(u32, u32),
    /// Most pages read by OCR ([`ParseOptions::max_ocr_pages`]).
    pub max_pages: u32,
}

impl<'a> OcrSettings<'a> {
    pub fn of(options: &'a ParseOptions, progress: &'a mut dyn FnMut(u32, u32)) -> Self {
        OcrSettings {
            mode: options.ocr,
            models: options.ocr_models.as_ref(),
            progress,
            max_pages: options.max_ocr_pages,
        }
    }
}

/// A page whose reading has more than this share of lone letters (see [`lone_letter_share`]) is read
/// again with PDFium. Running English prose has well under 1 %; a page with split words 10–30 %.
const SPLIT_WORDS_SHARE: f64 = 0.02;

/// Text blocks (one per page with text, `location.page` 1-based), page count and warnings.
///
/// Errors: [`IngestError::Encrypted`] when the PDF needs a non-empty password; [`IngestError::NoTextLayer`]
/// when no page has text (a scan); [`IngestError::Malformed`] when lopdf cannot parse the file.
///
/// `pdfium` is the path of the PDFium library for the fallback (see [`crate::pdf_fallback`]); `None`
/// disables it, and OCR with it (PDFium renders the pages OCR reads). `ocr` says which pages OCR reads.
pub(crate) fn load(
    bytes: &[u8],
    pdfium: Option<&Path>,
    ocr: &mut OcrSettings,
) -> Result<(Vec<Block>, u32, Vec<String>), IngestError> {
    let mut doc = match lopdf::Document::load_mem(bytes) {
        Ok(doc) => doc,
        Err(lopdf::Error::Decryption(_) | lopdf::Error::InvalidPassword) => {
            return Err(IngestError::Encrypted("PDF needs a password".into()))
        }
        Err(error) => {
            // lopdf cannot read the file structure (often a broken cross-reference table): PDFium rebuilds it.
            let error = IngestError::malformed("pdf", error);
            let Some(library) = pdfium else { return Err(error) };
            return read_whole_with_pdfium(library, bytes, error, ocr);
        }
    };
    if doc.is_encrypted() {
        // Many PDFs are "encrypted" only to set permissions, with an empty user password.
        doc.decrypt("").map_err(|_| IngestError::Encrypted("PDF needs a password".into()))?;
    }
    let page_count = doc.get_pages().len() as u32;
    let (mut texts, primary_failed, mut warnings) = primary_reading(&doc);
    // PDFium reads every page as well. Its reading replaces pdf-extract's where it keeps words whole that
    // pdf-extract split apart (`INTEL CORPORA TION`, `of fices`: see [`keeps_words_whole`]). On pages the
    // primary path may have read badly it is also taken when it finds more text: pages still without
    // text, pages where pdf-extract failed, every page of a form (field values live in annotations, not
    // in the content, and are added to what the page has) and every page of a document with CID-keyed
    // CJK fonts (whose glyphs pdf-extract drops silently).
    let has_form = has_form_fields(&doc);
    let whole_document = has_form || uses_cjk_cid_fonts(&doc);
    if let Some(library) = pdfium {
        if let Ok((recovered, _)) = crate::pdf_fallback::extract_pages(library, bytes, None) {
            let mut used = 0;
            for page in recovered {
                let Some(slot) = texts.iter_mut().find(|(n, _)| *n == page.number) else { continue };
                let suspect = whole_document
                    || !has_text(&slot.1)
                    || primary_failed.contains(&page.number)
                    || lone_letter_share(&slot.1) > SPLIT_WORDS_SHARE;
                let pdfium_text = tidy_lines(&page.text);
                let take = if suspect {
                    better_reading(&pdfium_text, &slot.1)
                } else {
                    keeps_words_whole(&pdfium_text, &slot.1)
                };
                let mut best = if take { pdfium_text } else { slot.1.clone() };
                // Annotation values the page's text lacks, one by one: a page PDFium flattened (its only
                // text was drawn by annotations) already shows most of them.
                if suspect {
                    let annotations = tidy_lines(&page.annotations);
                    let missing: Vec<&str> =
                        annotations.lines().filter(|value| has_text(value) && !best.contains(value.trim())).collect();
                    if !missing.is_empty() {
                        best = join_nonempty(&best, &missing.join("\n"));
                    }
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
    let mut ocr_pages = Vec::new();
    let ocr_ran = read_pages_by_ocr(&mut texts, bytes, pdfium, ocr, &mut ocr_pages, &mut warnings);
    if page_count == 0 {
        let error = IngestError::malformed("pdf", "no pages found");
        return match pdfium {
            Some(library) => read_whole_with_pdfium(library, bytes, error, ocr),
            None => Err(error),
        };
    }
    if !texts.iter().any(|(_, t)| has_text(t)) && primary_failed.len() as u32 == page_count {
        return Err(IngestError::malformed("pdf", format!("no page could be decoded; first error: {}", warnings[0])));
    }
    finish(texts, &ocr_pages, page_count, warnings, ocr_ran)
}

/// pdf-extract's reading of every page (lopdf's own extractor where pdf-extract finds nothing), tidied:
/// (1-based page, text) in page order, the pages where pdf-extract failed or panicked, and one warning
/// per failure.
fn primary_reading(doc: &lopdf::Document) -> (Vec<(u32, String)>, Vec<u32>, Vec<String>) {
    let pages = doc.get_pages();
    let mut texts: Vec<(u32, String)> = Vec::new();
    let mut warnings = Vec::new();
    // Pages where pdf-extract returned an error or panicked.
    let mut primary_failed: Vec<u32> = Vec::new();
    for &page_num in pages.keys() {
        let mut text = String::new();
        let result = catch_unwind(AssertUnwindSafe(|| {
            let mut output = pdf_extract::PlainTextOutput::new(&mut text);
            pdf_extract::output_doc_page(doc, &mut output, page_num)
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
        let mut text = tidy_lines(&text);
        if text.trim().is_empty() {
            // pdf-extract found nothing (or gave up): lopdf's simpler extractor reads some pages it cannot.
            if let Ok(Ok(fallback)) = catch_unwind(AssertUnwindSafe(|| doc.extract_text(&[page_num]))) {
                text = tidy_lines(&fallback);
            }
        }
        texts.push((page_num, text));
    }
    (texts, primary_failed, warnings)
}

/// The whole document through PDFium, for files the primary reader cannot open; `error` is the primary
/// reader's verdict, returned when PDFium cannot read the file either. Pages without a text layer are
/// read by OCR as in any other PDF (`ocr`; a scan whose cross-reference table is broken).
fn read_whole_with_pdfium(
    library: &Path,
    bytes: &[u8],
    error: IngestError,
    ocr: &mut OcrSettings,
) -> Result<(Vec<Block>, u32, Vec<String>), IngestError> {
    match crate::pdf_fallback::extract_pages(library, bytes, None) {
        Ok((pages, count)) if count > 0 => {
            let mut warnings = vec![format!("read with PDFium: lopdf could not read the file ({error})")];
            let mut texts: Vec<(u32, String)> =
                pages.into_iter().map(|p| (p.number, tidy_lines(&join_nonempty(&p.text, &p.annotations)))).collect();
            let mut ocr_pages = Vec::new();
            let ocr_ran = read_pages_by_ocr(&mut texts, bytes, Some(library), ocr, &mut ocr_pages, &mut warnings);
            finish(texts, &ocr_pages, count, warnings, ocr_ran)
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
/// fewer, or see [`keeps_words_whole`]).
fn better_reading(candidate: &str, current: &str) -> bool {
    let (new_len, old_len) = (text_len(candidate), text_len(current));
    if new_len > old_len {
        return true;
    }
    let (new_split, old_split) = (lone_letter_share(candidate), lone_letter_share(current));
    (old_split > SPLIT_WORDS_SHARE && new_split * 2.0 <= old_split && new_len * 10 >= old_len * 9)
        || keeps_words_whole(candidate, current)
}

/// True when `candidate` holds about as much text as `current` (≥ 90 %) and splits fewer than half as
/// many words apart as `current` does, judged against each other with [`words_split_apart`] (at least
/// one split word in `current`). On the 20 SEC filings of the shared library PDFium never split a word
/// pdf-extract kept whole; on two clinical-trial protocols it did (up to 28 a page), and there
/// pdf-extract's reading stays.
fn keeps_words_whole(candidate: &str, current: &str) -> bool {
    let (new_len, old_len) = (text_len(candidate), text_len(current));
    if new_len * 10 < old_len * 9 {
        return false;
    }
    let old_split = words_split_apart(current, candidate);
    old_split > 0 && words_split_apart(candidate, current) * 2 < old_split
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

/// How many words `reading` splits in two where `other` (another reader's text of the same page) keeps
/// them whole: adjacent alphabetic tokens `a b` of `reading` whose concatenation `ab` is a token of
/// `other` while `other` never has `a b` side by side (`CORPORA TION` against `CORPORATION`). Tokens
/// are compared without surrounding punctuation; three-way splits count where a pair of their pieces
/// joins into a word. Symmetric use tells which of two readings kept the words whole.
fn words_split_apart(reading: &str, other: &str) -> usize {
    use std::collections::HashSet;
    fn words(text: &str) -> Vec<&str> {
        text.split_whitespace().map(|t| t.trim_matches(|c: char| !c.is_alphanumeric())).collect()
    }
    let (ours, theirs) = (words(reading), words(other));
    let whole: HashSet<&str> = theirs.iter().copied().filter(|w| w.len() >= 3).collect();
    let pairs: HashSet<(&str, &str)> = theirs.windows(2).map(|p| (p[0], p[1])).collect();
    let alphabetic = |w: &str| !w.is_empty() && w.chars().all(char::is_alphabetic);
    ours.windows(2)
        .filter(|p| alphabetic(p[0]) && alphabetic(p[1]))
        .filter(|p| !pairs.contains(&(p[0], p[1])))
        .filter(|p| whole.contains(format!("{}{}", p[0], p[1]).as_str()))
        .count()
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

/// Letters and digits in `text`.
fn letters_and_digits(text: &str) -> usize {
    text.chars().filter(|c| c.is_alphanumeric()).count()
}

/// Reads by OCR the pages `ocr.mode` asks for (see [`OcrMode`]), rendered by PDFium, and puts OCR's
/// text in place of the text layer's where it is better: in `Force` mode wherever OCR found text, in
/// `Auto` mode where it found more letters and digits; the pages whose text OCR gave go to `read`. One
/// warning names them (and how many were turned upright); pages OCR could not read are named in
/// another. In `Auto` mode a page OCR could add nothing to (blank, or only text the layer maps:
/// [`crate::pdf_fallback::pages_ocr_could_add`]) is not rendered. True when OCR read the pages asked for,
/// or found them all blank (false: OCR off, nothing to read, models or PDFium missing, rendering failed).
fn read_pages_by_ocr(
    texts: &mut [(u32, String)],
    bytes: &[u8],
    pdfium: Option<&Path>,
    ocr: &mut OcrSettings,
    read: &mut Vec<u32>,
    warnings: &mut Vec<String>,
) -> bool {
    let wanted: Vec<u32> = match ocr.mode {
        OcrMode::Off => return false,
        OcrMode::Force => texts.iter().map(|(n, _)| *n).collect(),
        OcrMode::Auto => {
            texts.iter().filter(|(_, t)| letters_and_digits(t) < OCR_BELOW_CHARS).map(|(n, _)| *n).collect()
        }
    };
    if wanted.is_empty() {
        return false;
    }
    // A blank page, or one holding only a page number, has nothing OCR could read: rendering it and
    // running the detector took 0.5–2.5 s a page for nothing (2026-12-04, docs/evaluation/ingest-and-search.md).
    let wanted = match (ocr.mode, pdfium) {
        (OcrMode::Auto, Some(library)) => match crate::pdf_fallback::pages_ocr_could_add(library, bytes, &wanted) {
            Ok(pages) if pages.is_empty() => return true,
            Ok(pages) => pages,
            Err(_) => wanted,
        },
        _ => wanted,
    };
    let mut wanted = wanted;
    if wanted.len() > ocr.max_pages as usize {
        warnings.push(format!(
            "{} page(s) without a text layer left out: at most {} pages of one file are read by OCR (max_ocr_pages)",
            wanted.len() - ocr.max_pages as usize,
            ocr.max_pages
        ));
        wanted.truncate(ocr.max_pages as usize);
    }
    let (Some(models), Some(library)) = (ocr.models, pdfium) else {
        warnings.push(format!(
            "{} page(s) without a text layer left out: the OCR models or PDFium are not installed (run scripts/setup.sh)",
            wanted.len()
        ));
        return false;
    };
    let total = wanted.len() as u32;
    let (mut done, mut turned) = (0u32, 0u32);
    let mut failures: Vec<String> = Vec::new();
    let force = ocr.mode == OcrMode::Force;
    let progress = &mut *ocr.progress;
    let rendered =
        crate::pdf_fallback::render_pages(library, bytes, &wanted, crate::ocr::MAX_SIDE, &mut |number, image| {
            match crate::ocr::recognise(models, &image) {
                Ok(page) => {
                    if let Some(slot) = texts.iter_mut().find(|(n, _)| *n == number) {
                        let found = letters_and_digits(&page.text);
                        if found > 0 && (force || found > letters_and_digits(&slot.1)) {
                            slot.1 = tidy_lines(&page.text);
                            read.push(number);
                            turned += u32::from(page.rotation != 0);
                        }
                    }
                }
                Err(error) => failures.push(format!("p. {number}: {error}")),
            }
            done += 1;
            progress(done, total);
        });
    if rendered.is_err() {
        warnings.push("pages without a text layer left out: PDFium could not render them".to_string());
    }
    if !read.is_empty() {
        let pages: Vec<String> = read.iter().map(u32::to_string).collect();
        let upright = if turned > 0 { format!(", {turned} turned upright") } else { String::new() };
        warnings.push(format!("{} page(s) read by OCR (p. {}{upright})", read.len(), pages.join(", ")));
    }
    if let Some(first) = failures.first() {
        warnings.push(format!("OCR failed on {} page(s); first: {first}", failures.len()));
    }
    rendered.is_ok() && failures.is_empty()
}

fn has_text(text: &str) -> bool {
    text_len(text) >= MIN_PAGE_CHARS
}

/// Blocks from (page, tidied text) pairs, dropping pages without text; `NoTextLayer` when none has any,
/// or `Empty` when `read_pages_by_ocr` went over the pages (`ocr_ran`): a PDF without a text layer whose
/// pages OCR read and found nothing on (a drawing, a photograph, a blank page) holds no text, and saying
/// it "needs OCR" would send the person looking for an OCR tool. Table rows get their column names and
/// unit (see [`crate::table`]); the pages in `ocr_pages` are marked as read by OCR ([`Location::ocr`]).
fn finish(
    pages: Vec<(u32, String)>,
    ocr_pages: &[u32],
    page_count: u32,
    warnings: Vec<String>,
    ocr_ran: bool,
) -> Result<(Vec<Block>, u32, Vec<String>), IngestError> {
    let blocks: Vec<Block> = pages
        .into_iter()
        .filter(|(_, text)| has_text(text))
        .map(|(page, text)| Block {
            text: label_table_rows(&text),
            location: Location { page: Some(page), ocr: ocr_pages.contains(&page), ..Default::default() },
        })
        .collect();
    if blocks.is_empty() {
        return Err(if ocr_ran { IngestError::Empty } else { IngestError::NoTextLayer });
    }
    Ok((blocks, page_count, warnings))
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
    fn split_words_are_found_by_comparing_two_readings() {
        let split = "INTEL CORPORA TION (Address of principal executive of fices) QUAR TERLY REPORT \
                     (Registrant’ s telephone number , including area code) Commission File Number";
        let whole = "INTEL CORPORATION (Address of principal executive offices) QUARTERLY REPORT \
                     (Registrant’s telephone number, including area code) Commission File Number";
        assert_eq!(words_split_apart(split, whole), 3, "CORPORA TION, of fices, QUAR TERLY");
        assert_eq!(words_split_apart(whole, split), 0);
        assert!(keeps_words_whole(whole, split));
        assert!(!keeps_words_whole(split, whole));
        // A pair the other reading also has side by side is not a split ("in to" both times).
        assert_eq!(words_split_apart("turned in to the office into", "turned in to the office into"), 0);
        // A reading that keeps words whole but lost a fifth of the text does not win.
        assert!(!keeps_words_whole("INTEL CORPORATION", split));
    }

    /// Study, not a check: per PDF under `$QUARRY_SPLIT_STUDY_DIR`, pages where one reading splits words
    /// the other keeps whole. `cargo test -p quarry-ingest --lib split_study -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn split_study() {
        let Some(dir) = std::env::var_os("QUARRY_SPLIT_STUDY_DIR") else { return };
        let library = quarry_core::models::find_model_file(crate::pdf_fallback::LIBRARY_FILE).unwrap();
        let mut files: Vec<_> = walkdir::WalkDir::new(dir)
            .into_iter()
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x.eq_ignore_ascii_case("pdf")))
            .map(|e| e.into_path())
            .collect();
        files.sort();
        let (mut t_primary, mut t_pdfium, mut n_pages) = (0.0, 0.0, 0);
        for file in files {
            let bytes = std::fs::read(&file).unwrap();
            let t0 = std::time::Instant::now();
            let Ok(mut doc) = lopdf::Document::load_mem(&bytes) else { continue };
            if doc.is_encrypted() && doc.decrypt("").is_err() {
                continue;
            }
            let (texts, _, _) = primary_reading(&doc);
            t_primary += t0.elapsed().as_secs_f64();
            let t1 = std::time::Instant::now();
            let Ok((pages, _)) = crate::pdf_fallback::extract_pages(&library, &bytes, None) else { continue };
            t_pdfium += t1.elapsed().as_secs_f64();
            n_pages += texts.len();
            let mut lines = Vec::new();
            for page in pages {
                let Some((_, ours)) = texts.iter().find(|(n, _)| *n == page.number) else { continue };
                let theirs = tidy_lines(&page.text);
                let (a, b) = (words_split_apart(ours, &theirs), words_split_apart(&theirs, ours));
                let words = ours.split_whitespace().count();
                if a + b > 0 {
                    lines.push(format!(
                        "  p{} words={words} ours_split={a} pdfium_split={b} len={}/{} lone={:.3}/{:.3} better={}",
                        page.number,
                        text_len(&theirs),
                        text_len(ours),
                        lone_letter_share(&theirs),
                        lone_letter_share(ours),
                        better_reading(&theirs, ours)
                    ));
                }
            }
            println!("{} pages={} flagged={}", file.display(), texts.len(), lines.len());
            for l in lines {
                println!("{l}");
            }
        }
        println!("pages={n_pages} primary={t_primary:.1}s pdfium={t_pdfium:.1}s");
    }
}
