//! PDFium (Chromium's PDF engine) as a second PDF reader, through pdfium-render with the shared library
//! loaded from a path (`libpdfium.so` from the PyPI package `pypdfium2`, unpacked by `scripts/setup.sh`).
//!
//! Used where the primary path (lopdf + pdf-extract) falls short: PDFs whose structure lopdf cannot read
//! (PDFium rebuilds broken cross-reference tables), pages with no text or where pdf-extract failed, the
//! pages of forms (field values live in annotations), documents with CJK CID fonts, whose glyphs
//! pdf-extract drops without an error, and pages where pdf-extract split words apart. `crate::pdf` reads
//! every page with both and keeps, per page, the better reading.

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
        let Ok(page) = all.get(number as PdfPageIndex - 1) else { continue };
        let text = page.text().map(|t| t.all()).unwrap_or_default();
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
        out.push(PageText { number, text, annotations: annotations.join("\n") });
    }
    Ok((out, count))
}

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
