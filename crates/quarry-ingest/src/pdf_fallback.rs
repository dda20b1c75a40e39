//! PDFium (Chromium's PDF engine) as a second PDF reader, through pdfium-render with the shared library
//! loaded from a path (`libpdfium.so` from the PyPI package `pypdfium2`, unpacked by `scripts/setup.sh`).
//!
//! Used where the primary path (lopdf + pdf-extract) falls short: PDFs whose structure lopdf cannot read
//! (PDFium rebuilds broken cross-reference tables), pages with no text or where pdf-extract failed, the
//! pages of forms (field values live in annotations), documents with CJK CID fonts, whose glyphs
//! pdf-extract drops without an error, pages where pdf-extract split words apart, and pages whose only
//! text is drawn by annotations (form buttons and fields, stamps), read after PDFium flattens them.
//! `crate::pdf` reads every page with both and keeps, per page, the better reading.

use pdfium_render::prelude::*;
use std::path::Path;
use std::sync::OnceLock;

/// Where the library sits under the model folders (see `quarry_core::models`).
pub(crate) const LIBRARY_FILE: &str = "pdfium/libpdfium.so";

/// PDFium's bindings are process-wide and bind once; the first path asked for wins.
static ENGINE: OnceLock<Result<Pdfium, String>> = OnceLock::new();

fn engine(library: &Path) -> Result<&'static Pdfium, String> {
    ENGINE
        .get_or_init(|| {
            if !library.is_file() {
                return Err(format!("PDFium library not found at {}", library.display()));
            }
            Pdfium::bind_to_library(library)
                .map(Pdfium::new)
                .map_err(|e| format!("cannot load PDFium from {}: {e}", library.display()))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The document in `bytes`, opened with an empty password through the PDFium library at `library`.
fn open<'a>(library: &Path, bytes: &'a [u8]) -> Result<PdfDocument<'a>, FallbackError> {
    let pdfium = engine(library).map_err(|_| FallbackError::Other)?;
    pdfium.load_pdf_from_byte_slice(bytes, Some("")).map_err(|e| match e {
        PdfiumError::PdfiumLibraryInternalError(PdfiumInternalError::PasswordError) => FallbackError::Password,
        _ => FallbackError::Other,
    })
}

/// Why PDFium could not read a document.
pub(crate) enum FallbackError {
    /// The PDF needs a password.
    Password,
    /// Anything else (library missing, file unreadable); the primary reader's error is reported instead.
    Other,
}

/// What PDFium reads on one page.
pub(crate) struct PageText {
    /// 1-based page number.
    pub number: u32,
    /// Text of the page's content stream.
    pub text: String,
    /// Text carried by annotations: form-field values, free-text and note contents, one per line.
    pub annotations: String,
}

/// Text of the given 1-based `pages` (all pages when `None`), in order, and the page count.
pub(crate) fn extract_pages(
    library: &Path,
    bytes: &[u8],
    pages: Option<&[u32]>,
) -> Result<(Vec<PageText>, u32), FallbackError> {
    let document = open(library, bytes)?;
    let all = document.pages();
    let count = all.len().max(0) as u32;
    let wanted: Vec<u32> = match pages {
        Some(list) => list.to_vec(),
        None => (1..=count).collect(),
    };
    let mut out = Vec::with_capacity(wanted.len());
    for number in wanted {
        let index = number as PdfPageIndex - 1;
        let Ok(mut page) = all.get(index) else { continue };
        let mut text = visible_text(&page);
        let mut annotations = Vec::new();
        for annotation in page.annotations().iter() {
            let value = match annotation.as_form_field() {
                Some(PdfFormField::Text(field)) => field.value(),
                Some(PdfFormField::ComboBox(field)) => field.value(),
                Some(PdfFormField::ListBox(field)) => field.value(),
                Some(_) => None,
                None => annotation.contents(),
            };
            if let Some(value) = value.map(|v| v.trim().to_string()).filter(|v| !v.is_empty()) {
                if !annotations.contains(&value) {
                    annotations.push(value);
                }
            }
        }
        // A page whose only text is drawn by its annotations — a button's caption, a text field's
        // appearance, a stamp — has none in its content stream: PDFium merges the annotations' appearances
        // into the content (the in-memory copy only) and the page is loaded and read again. Loaded afresh,
        // not read through `page`: pdfium-render 0.9.5's `flatten` closes the page's handle and opens a new
        // one, but the page's boundaries keep the closed handle, and reading the crop box through them read
        // freed memory (a SIGSEGV now and then when another thread was allocating, as in the test suite).
        if text.trim().is_empty() && !page.annotations().is_empty() && page.flatten().is_ok() {
            drop(page);
            if let Ok(flattened) = all.get(index) {
                text = visible_text(&flattened);
            }
        }
        out.push(PageText { number, text, annotations: annotations.join("\n") });
    }
    Ok((out, count))
}

/// The text of `page` inside its visible area: the crop box, else the media box, in the page's own
/// coordinates. (`PdfPageText::all` asks for the text inside a rectangle at the origin the size of the
/// page, which misses every character of a page whose box does not start at (0, 0) — a page cropped to a
/// label or a coupon, `pdf.js` test `issue7769.pdf`.)
///
/// PDFium marks a word hyphenated across a line break with one character where the hyphen and the break
/// were ("im\u{2}portant" from its bounded-text call, U+FFFE from its plain one); the mark is dropped, so
/// the word reads whole ("important") for BM25, the embedding and the person.
fn visible_text(page: &PdfPage) -> String {
    let Ok(text) = page.text() else { return String::new() };
    let boundaries = page.boundaries();
    let text = match boundaries.crop().or_else(|_| boundaries.media()) {
        Ok(visible) => text.inside_rect(visible.bounds),
        Err(_) => text.all(),
    };
    if text.contains(HYPHENATION_MARKS) {
        text.replace(HYPHENATION_MARKS, "")
    } else {
        text
    }
}

/// What PDFium puts where a word was hyphenated at the end of a line.
const HYPHENATION_MARKS: [char; 2] = ['\u{2}', '\u{FFFE}'];

/// Renders the given 1-based `pages` one at a time, their longer side `max_side` pixels (white
/// background, form fields drawn, the page's own rotation applied), and hands each to `each` as an RGB
/// image: one page's bitmap in memory at a time. Pages that do not exist or fail to render are skipped.
/// Errors: the library or the document cannot be loaded (see [`FallbackError`]).
pub(crate) fn render_pages(
    library: &Path,
    bytes: &[u8],
    pages: &[u32],
    max_side: u32,
    each: &mut dyn FnMut(u32, image::RgbImage),
) -> Result<(), FallbackError> {
    let document = open(library, bytes)?;
    let all = document.pages();
    for &number in pages {
        let Ok(page) = all.get(number as PdfPageIndex - 1) else { continue };
        let longest = page.width().value.max(page.height().value).max(1.0);
        let config = PdfRenderConfig::new().scale_page_by_factor(max_side as f32 / longest).render_form_data(true);
        let Ok(bitmap) = page.render_with_config(&config) else { continue };
        let (width, height) = (bitmap.width().max(0) as u32, bitmap.height().max(0) as u32);
        let rgb: Vec<u8> = bitmap.as_rgba_bytes().chunks_exact(4).flat_map(|p| [p[0], p[1], p[2]]).collect();
        if let Some(image) = image::RgbImage::from_raw(width, height, rgb) {
            each(number, image);
        }
    }
    Ok(())
}

/// Most characters a page's text objects may hold together for [`pages_ocr_could_add`] to pass it by
/// (a page number up to 999).
const PAGE_NUMBER_CHARS: usize = 3;

/// Of `pages` (1-based), those OCR could read more of than their text layer: every page but one that
/// carries no annotation and draws nothing but shapes painted white and at most a page number
/// ([`PAGE_NUMBER_CHARS`]) in characters PDFium maps — a blank page, or a word processor's white page
/// background with the page number. Pictures, shadings, form objects, coloured shapes and any longer
/// text may draw words the text layer lacks or maps wrongly (fonts without a character map come out
/// empty, as control characters, in the private use area, or as other letters), so a page holding any
/// of them is kept. Errors: PDFium cannot open the document.
pub(crate) fn pages_ocr_could_add(library: &Path, bytes: &[u8], pages: &[u32]) -> Result<Vec<u32>, FallbackError> {
    let document = open(library, bytes)?;
    let all = document.pages();
    Ok(pages
        .iter()
        .copied()
        .filter(|&number| match all.get(number as PdfPageIndex - 1) {
            Ok(page) => !page.annotations().is_empty() || ocr_could_add(&page),
            Err(_) => true,
        })
        .collect())
}

/// Whether a page's objects may show words its text layer lacks (see [`pages_ocr_could_add`]); unknown
/// properties count as "may".
fn ocr_could_add(page: &PdfPage) -> bool {
    let zero = |size: Result<PdfPoints, PdfiumError>| size.map(|s| s.value <= 0.0).unwrap_or(false);
    let white = |color: Result<PdfColor, PdfiumError>| {
        color.map(|c| c.red() == 255 && c.green() == 255 && c.blue() == 255).unwrap_or(false)
    };
    let unmapped =
        |c: char| c == '\u{FFFD}' || ('\u{E000}'..='\u{F8FF}').contains(&c) || (c.is_control() && !c.is_whitespace());
    let mut chars = 0;
    for object in page.objects().iter() {
        if zero(object.width()) || zero(object.height()) {
            continue;
        }
        match &object {
            PdfPageObject::Text(text) => {
                let text = text.text();
                if text.is_empty() || text.chars().any(unmapped) {
                    return true;
                }
                chars += text.chars().filter(|c| !c.is_whitespace()).count();
                if chars > PAGE_NUMBER_CHARS {
                    return true;
                }
            }
            PdfPageObject::Path(path) => {
                let filled = path.fill_mode().map(|mode| mode != PdfPathFillMode::None).unwrap_or(true);
                let stroked = path.is_stroked().unwrap_or(true);
                if (filled && !white(object.fill_color())) || (stroked && !white(object.stroke_color())) {
                    return true;
                }
            }
            _ => return true,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_files::shared_file;

    #[test]
    fn blank_pages_are_not_given_to_ocr_and_pictures_and_scans_are() {
        let library =
            quarry_core::models::find_model_file(LIBRARY_FILE).expect("PDFium, installed by scripts/setup.sh");
        let protocols = "C_private_library/docs/en_nih-clinical-trial-protocols";
        // Pages 6, 23 and 24 are blank but for the page number over Word's white page background; page 1
        // holds a picture (a logo).
        let blank = std::fs::read(shared_file(&format!("{protocols}/NCT06150378_Prot_SAP_000.pdf"))).unwrap();
        assert_eq!(pages_ocr_could_add(&library, &blank, &[1, 6, 23, 24]).ok(), Some(vec![1]));
        // The last page of a 10-Q: one white rectangle, nothing else.
        let filing = std::fs::read(shared_file("C_private_library/docs/en_sec-10-q/2023 Q2 MSFT.pdf")).unwrap();
        assert_eq!(pages_ocr_could_add(&library, &filing, &[74]).ok(), Some(vec![]));
        // A scanned page: a picture of text.
        let scan = std::fs::read(shared_file(&format!("{protocols}/NCT06155240_Prot_SAP_000.pdf"))).unwrap();
        assert_eq!(pages_ocr_could_add(&library, &scan, &[1]).ok(), Some(vec![1]));
        // Text the layer maps wrongly: to other letters ("'(6&5,37,21") and to the private use area.
        for wrong in ["issue4722.pdf", "issue215.pdf"] {
            let bytes = std::fs::read(shared_file(&format!("B_documents/pdfjs_test_pdfs/{wrong}"))).unwrap();
            assert_eq!(pages_ocr_could_add(&library, &bytes, &[1]).ok(), Some(vec![1]), "{wrong}");
        }
    }

    #[test]
    fn a_word_hyphenated_at_a_line_end_reads_whole() {
        let library =
            quarry_core::models::find_model_file(LIBRARY_FILE).expect("PDFium, installed by scripts/setup.sh");
        let bytes =
            std::fs::read(shared_file("B_documents/unstructured_example-docs/pdf/layout-parser-paper-fast.pdf"))
                .unwrap();
        let Ok((pages, count)) = extract_pages(&library, &bytes, Some(&[1])) else { panic!("PDFium reads the paper") };
        assert_eq!(count, 2);
        let text = &pages[0].text;
        assert!(!text.contains(HYPHENATION_MARKS), "{text:?}");
        // The abstract hyphenates "im-portant" and "applica-tions" at line ends.
        assert!(text.contains("easy reuse of important innovations"), "{text}");
        assert!(text.contains("research and applications."), "{text}");
    }
}
