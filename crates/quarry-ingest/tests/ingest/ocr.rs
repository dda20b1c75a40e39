//! OCR of scanned pages and pictures on real files: docling's OCR test PDFs (a page on its side, one upside
//! down, a four-page scan), the scanned page of the C library (a sideways table) and a Chinese page
//! rendered to a picture, each checked against the words printed on the page.

use crate::common::{b_docs, c_docs, parse_one, parse_with, text_of};
use quarry_ingest::{OcrMode, ParseOptions, Status};
use std::collections::HashMap;

/// Share of `expected`'s words (lowercased, letters and digits only) found in `text`, counted with
/// multiplicity.
fn word_recall(text: &str, expected: &str) -> f64 {
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
    };
    let mut have: HashMap<String, usize> = HashMap::new();
    for w in words(text) {
        *have.entry(w).or_default() += 1;
    }
    let wanted = words(expected);
    let found = wanted
        .iter()
        .filter(|w| match have.get_mut(*w) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        })
        .count();
    found as f64 / wanted.len().max(1) as f64
}

/// Share of `expected`'s CJK characters found in `text`, counted with multiplicity.
fn cjk_recall(text: &str, expected: &str) -> f64 {
    let is_cjk = |c: &char| ('\u{4E00}'..='\u{9FFF}').contains(c);
    let mut have: HashMap<char, usize> = HashMap::new();
    for c in text.chars().filter(is_cjk) {
        *have.entry(c).or_default() += 1;
    }
    let wanted: Vec<char> = expected.chars().filter(is_cjk).collect();
    let found = wanted
        .iter()
        .filter(|c| match have.get_mut(c) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        })
        .count();
    found as f64 / wanted.len().max(1) as f64
}

const DOCLING_SENTENCE: &str =
    "Docling bundles PDF document conversion to JSON and Markdown in an easy self contained package";

#[test]
fn scanned_pages_on_their_side_and_upside_down_are_read_upright() {
    for (name, turned) in
        [("ocr_test_rotated_90.pdf", "turned upright"), ("ocr_test_rotated_180.pdf", "turned upright")]
    {
        let outcome = parse_one(&b_docs(&format!("docling_tests/ocr/sources/{name}")));
        assert_eq!(outcome.status, Status::Ok, "{name}: {:?}", outcome.error);
        let text = text_of(&outcome);
        let recall = word_recall(&text, DOCLING_SENTENCE);
        eprintln!("{name}: {recall:.3} of the printed words");
        assert!(recall >= 0.9, "{name}: {recall:.2} of the words in {text:?}");
        assert!(
            outcome.warnings.iter().any(|w| w.contains("read by OCR") && w.contains(turned)),
            "{name}: {:?}",
            outcome.warnings
        );
    }
}

/// A scan whose cross-reference table is broken — lopdf cannot open it, PDFium rebuilds it — is read by
/// OCR too (it was refused as having no text layer).
#[test]
fn a_scan_that_only_pdfium_can_open_is_read_by_ocr() {
    let bytes = std::fs::read(b_docs("docling_tests/ocr/sources/ocr_test_rotated_180.pdf")).unwrap();
    let tail = bytes.len() - 32;
    let at = tail + bytes[tail..].windows(9).position(|w| w == b"startxref").expect("a startxref at the end");
    let mut broken = bytes[..at].to_vec();
    broken.extend_from_slice(b"startxref\n%%EOF\n");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken-scan.pdf");
    std::fs::write(&path, &broken).unwrap();
    let outcome = parse_one(&path);
    assert_eq!(outcome.status, Status::Ok, "{:?}", outcome.error);
    assert!(outcome.warnings.iter().any(|w| w.starts_with("read with PDFium")), "{:?}", outcome.warnings);
    assert!(outcome.warnings.iter().any(|w| w.contains("read by OCR")), "{:?}", outcome.warnings);
    let recall = word_recall(&text_of(&outcome), DOCLING_SENTENCE);
    assert!(recall >= 0.9, "{recall:.2} of the words in {:?}", text_of(&outcome));
    assert!(outcome.document.as_ref().unwrap().blocks.iter().all(|b| b.location.ocr));
}

#[test]
fn a_multipage_scan_is_read_page_by_page() {
    let outcome = parse_one(&b_docs("docling_tests/ocr/sources/nemotron_multipage.pdf"));
    assert_eq!(outcome.status, Status::Ok, "{:?}", outcome.error);
    let document = outcome.document.as_ref().unwrap();
    let pages: Vec<u32> = document.blocks.iter().filter_map(|b| b.location.page).collect();
    assert_eq!(pages, vec![1, 2, 3, 4], "one block per page, in order");
    // The same sentence on every page, each page turned another way.
    for block in &document.blocks {
        eprintln!(
            "nemotron_multipage.pdf p. {:?}: {:.3}",
            block.location.page,
            word_recall(&block.text, DOCLING_SENTENCE)
        );
        assert!(word_recall(&block.text, DOCLING_SENTENCE) >= 0.9, "{:?}: {:?}", block.location.page, block.text);
    }
    assert!(outcome.warnings.iter().any(|w| w.starts_with("4 page(s) read by OCR")), "{:?}", outcome.warnings);
    // Each page's text is marked as recognised, for its citations ("p. 2, OCR").
    assert!(document.blocks.iter().all(|b| b.location.ocr), "every block read by OCR is marked");
}

/// OCR reads at most `max_ocr_pages` pages of one file and says how many it left out: a crafted scan of
/// thousands of pages cannot hold a worker for days. Before, every page was read.
#[test]
fn ocr_stops_at_the_page_cap_and_says_what_it_left_out() {
    let options = ParseOptions { max_ocr_pages: 2, ..ParseOptions::default() };
    let outcome = parse_with(&b_docs("docling_tests/ocr/sources/nemotron_multipage.pdf"), &options).remove(0);
    assert_eq!(outcome.status, Status::Ok, "{:?}", outcome.error);
    let pages: Vec<u32> = outcome.document.as_ref().unwrap().blocks.iter().filter_map(|b| b.location.page).collect();
    assert_eq!(pages, vec![1, 2], "the first two pages only");
    assert!(
        outcome.warnings.iter().any(|w| w.starts_with("2 page(s) without a text layer left out: at most 2 pages")),
        "{:?}",
        outcome.warnings
    );
}

#[test]
fn the_scanned_page_of_the_c_library_becomes_searchable() {
    let path = c_docs("en_nih-clinical-trial-protocols/NCT06155240_Prot_SAP_000.pdf");
    let outcome = parse_one(&path);
    assert_eq!(outcome.status, Status::Ok, "{:?}", outcome.error);
    let text = text_of(&outcome);
    // The page's title and the rows' labels, as printed (the page is a table set sideways).
    let printed = "APPENDIX D Study Protocol Class Procedures Yoga for a Healthy Heart Protocol \
                   Week 1 Week 2 Week 3 Week 4 Week 5 Week 6 Week 7 Week 8";
    let recall = word_recall(&text, printed);
    eprintln!("NCT06155240_Prot_SAP_000.pdf: {recall:.3} of the printed words");
    assert!(recall >= 0.9, "{recall:.2} of the printed words in {text:?}");

    // Off: the scan is refused as before, with the reason.
    let off = ParseOptions { ocr: OcrMode::Off, ..Default::default() };
    let outcomes = parse_with(&path, &off);
    assert_eq!(outcomes[0].status, Status::Failed);
    assert!(outcomes[0].error.as_ref().unwrap().to_string().contains("no text layer"));
}

#[test]
fn a_chinese_page_as_a_picture_is_read() {
    let pdf_path = c_docs("zh_tex-manuals_pdf/fduthesis.pdf");
    let options = ParseOptions::default();
    let pdfium = options.pdfium_library.clone().expect("PDFium installed by scripts/setup.sh");
    let page = quarry_ingest::ocr::render_pdf_page(&pdfium, &std::fs::read(&pdf_path).unwrap(), 5).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let picture = dir.path().join("scan.png");
    page.save(&picture).unwrap();

    let layer = parse_one(&pdf_path);
    let printed = &layer.document.as_ref().unwrap().blocks.iter().find(|b| b.location.page == Some(5)).unwrap().text;
    let outcome = parse_one(&picture);
    assert_eq!(outcome.status, Status::Ok, "{:?}", outcome.error);
    assert_eq!(outcome.format, Some(quarry_ingest::Format::Image));
    let text = text_of(&outcome);
    let recall = cjk_recall(&text, printed);
    eprintln!("fduthesis.pdf p. 5 as a picture: {recall:.3} of the page's CJK characters");
    assert!(recall >= 0.9, "{recall:.2} of the page's Chinese characters in {text:?}");
    assert!(outcome.warnings.iter().any(|w| w == "read by OCR"), "{:?}", outcome.warnings);
}

/// A multi-page TIFF (a stack of scans, a fax) is read page by page: two scanned pages rendered by PDFium
/// and written as one two-page greyscale TIFF — docling's page turned on its side, then the C library's
/// sideways protocol table — come back as pages 1 and 2, each with its own printed words, marked as OCR.
#[test]
fn a_multipage_tiff_is_read_page_by_page() {
    let options = ParseOptions::default();
    let pdfium = options.pdfium_library.clone().expect("PDFium installed by scripts/setup.sh");
    let render = |path: std::path::PathBuf| {
        let page = quarry_ingest::ocr::render_pdf_page(&pdfium, &std::fs::read(path).unwrap(), 1).unwrap();
        image::DynamicImage::ImageRgb8(page).to_luma8()
    };
    let pages = [
        render(b_docs("docling_tests/ocr/sources/ocr_test_rotated_90.pdf")),
        render(c_docs("en_nih-clinical-trial-protocols/NCT06155240_Prot_SAP_000.pdf")),
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scans.tiff");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut tiff = tiff::encoder::TiffEncoder::new(&mut file).unwrap();
    for page in &pages {
        tiff.write_image::<tiff::encoder::colortype::Gray8>(page.width(), page.height(), page.as_raw()).unwrap();
    }
    std::io::Write::flush(&mut file).unwrap();

    let outcome = parse_one(&path);
    assert_eq!(outcome.status, Status::Ok, "{:?}", outcome.error);
    let document = outcome.document.as_ref().unwrap();
    assert_eq!(document.page_count, Some(2));
    let numbers: Vec<Option<u32>> = document.blocks.iter().map(|b| b.location.page).collect();
    assert_eq!(numbers, [Some(1), Some(2)]);
    assert!(document.blocks.iter().all(|b| b.location.ocr), "both pages are marked as OCR");
    let recall = word_recall(&document.blocks[0].text, DOCLING_SENTENCE);
    assert!(recall >= 0.9, "page 1: {recall:.2} of docling's sentence in {:?}", document.blocks[0].text);
    let protocol = word_recall(&document.blocks[1].text, "Study Protocol Class Procedures");
    assert!(protocol >= 0.9, "page 2: {protocol:.2} in {:?}", document.blocks[1].text);
    assert!(!document.blocks[1].text.contains("Docling"), "page 2 is its own page");
    assert!(outcome.warnings.iter().any(|w| w == "2 pages read by OCR"), "{:?}", outcome.warnings);
}

#[test]
fn a_picture_is_refused_with_the_reason_when_ocr_is_off() {
    let dir = tempfile::tempdir().unwrap();
    let picture = dir.path().join("blank.png");
    image::RgbImage::from_pixel(64, 64, image::Rgb([255, 255, 255])).save(&picture).unwrap();
    let off = ParseOptions { ocr: OcrMode::Off, ..Default::default() };
    let outcomes = parse_with(&picture, &off);
    assert_eq!(outcomes[0].status, Status::Failed);
    assert!(outcomes[0].error.as_ref().unwrap().to_string().contains("OCR is off"), "{:?}", outcomes[0].error);
    // On, a picture without text is a document without text: refused as empty, not made up.
    let outcome = parse_one(&picture);
    assert_eq!(outcome.status, Status::Failed, "{:?}", outcome.document);
}

#[test]
fn a_pdf_whose_pages_hold_no_text_even_for_ocr_says_so() {
    // pdf.js's JBIG2 halftone test: one page of halftone dots, no text layer, nothing for OCR to read.
    let outcome = parse_one(&b_docs("pdfjs_test_pdfs/bitmap-halftone-refine.pdf"));
    assert_eq!(outcome.error, Some(quarry_ingest::IngestError::Empty), "{:?}", outcome.warnings);
}
