//! OCR speed and memory on real scanned pages: per page, PDFium's rendering and OCR (detection, the
//! orientation vote, recognition) timed apart, with the lines and characters read, then the process's
//! peak RSS.
//!
//! `cargo bench -p quarry-ingest --bench ocr` (after `scripts/setup.sh`; the pages come from
//! ../shared/eval: docling's OCR samples, markitdown's scanned medical report, the C library's scan, and a
//! Chinese page of `fduthesis.pdf` rendered as a picture). The first page includes loading the models;
//! it is reported apart. Prints a Markdown table: per page also the process's resident set once the page
//! is read; then the resident set after `release_engine` (what a parse worker keeps once a file is done).

use quarry_ingest::ocr::{recognise, release_engine, render_pdf_page, OcrModels};
use quarry_ingest::ParseOptions;
use std::path::Path;
use std::time::Instant;

fn main() {
    let eval = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/eval");
    let pages: &[(&str, u32)] = &[
        ("B_documents/docling_tests/ocr/sources/ocr_test_rotated_90.pdf", 1),
        ("B_documents/docling_tests/ocr/sources/ocr_test_rotated_180.pdf", 1),
        ("B_documents/docling_tests/ocr/sources/nemotron_multipage.pdf", 1),
        ("B_documents/docling_tests/ocr/sources/nemotron_multipage.pdf", 2),
        ("B_documents/markitdown_test_files/MEDRPT-2024-PAT-3847_medical_report_scan.pdf", 1),
        ("B_documents/markitdown_test_files/MEDRPT-2024-PAT-3847_medical_report_scan.pdf", 2),
        ("C_private_library/docs/en_nih-clinical-trial-protocols/NCT06155240_Prot_SAP_000.pdf", 1),
        ("C_private_library/docs/zh_tex-manuals_pdf/fduthesis.pdf", 5),
    ];
    let options = ParseOptions::default();
    let pdfium = options.pdfium_library.clone().expect("PDFium (run scripts/setup.sh)");
    let models = OcrModels::find().expect("OCR models (run scripts/setup.sh)");
    println!("| page | pixels | turned | render ms | OCR ms | lines | characters | resident after, MiB |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let (mut total_ms, mut counted) = (0u128, 0u32);
    for (index, (file, page)) in pages.iter().enumerate() {
        let bytes = std::fs::read(eval.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let started = Instant::now();
        let image = render_pdf_page(&pdfium, &bytes, *page).unwrap_or_else(|e| panic!("{file}: {e}"));
        let render_ms = started.elapsed().as_millis();
        let started = Instant::now();
        let read = recognise(&models, &image).unwrap_or_else(|e| panic!("{file}: {e}"));
        let ocr_ms = started.elapsed().as_millis();
        let (width, height) = image.dimensions();
        if index > 0 {
            total_ms += ocr_ms;
            counted += 1;
        }
        let name = file.rsplit('/').next().unwrap_or(file);
        let note = if index == 0 { " (models loaded)" } else { "" };
        drop(image);
        println!(
            "| {name} p. {page}{note} | {}×{} | {}° | {render_ms} | {ocr_ms} | {} | {} | {} |",
            width,
            height,
            read.rotation,
            read.lines.len(),
            read.text.chars().filter(|c| !c.is_whitespace()).count(),
            status_kib("VmRSS:") / 1024
        );
    }
    let loaded = status_kib("VmRSS:") / 1024;
    release_engine();
    println!();
    println!(
        "resident set with the models loaded {loaded} MiB, after release_engine {} MiB",
        status_kib("VmRSS:") / 1024
    );
    println!(
        "OCR {:.2} s a page on average over {counted} pages after the first; peak RSS {} MiB",
        total_ms as f64 / counted.max(1) as f64 / 1000.0,
        status_kib("VmHWM:") / 1024
    );
}

/// A size in /proc/self/status (`VmHWM:` the peak resident set, `VmRSS:` the current one), KiB; 0 where
/// unknown.
fn status_kib(field: &str) -> u64 {
    quarry_core::proc_kib("/proc/self/status", field).unwrap_or(0)
}
