//! DOCX and spreadsheet extraction checked against docling's ground-truth Markdown and against known
//! content of real files.

use crate::common::*;
use quarry_ingest::{Format, Status};

/// Recall of docling's ground-truth words for every DOCX/XLSX that has ground truth.
fn recall_against_docling(kind: &str) -> Vec<(String, f64)> {
    let dir = b_docs("docling_tests");
    let mut results = Vec::new();
    for entry in std::fs::read_dir(dir.join("groundtruth_md").join(kind)).unwrap() {
        let truth_path = entry.unwrap().path();
        let name = truth_path.file_name().unwrap().to_string_lossy().trim_end_matches(".md").to_string();
        let source = dir.join(kind).join("sources").join(&name);
        if !source.exists() {
            continue; // the ground truth of a source that the size budget dropped
        }
        // `<!-- image -->` is docling's placeholder for a picture, not text of the document.
        let truth = std::fs::read_to_string(&truth_path).unwrap().replace("<!-- image -->", "");
        let outcome = parse_one(&source);
        let text = if outcome.status == Status::Ok { text_of(&outcome) } else { String::new() };
        results.push((name, word_recall(&truth, &text)));
    }
    results.sort_by(|a, b| a.0.cmp(&b.0));
    results
}

#[test]
fn docx_text_matches_docling_ground_truth() {
    let results = recall_against_docling("docx");
    assert!(results.len() >= 10, "expected the docling DOCX set, found {}", results.len());
    for (name, recall) in &results {
        eprintln!("docx recall {recall:.3} {name}");
    }
    let mean = results.iter().map(|(_, r)| r).sum::<f64>() / results.len() as f64;
    eprintln!("docx mean recall {mean:.3} over {} files", results.len());
    assert!(mean >= 0.90, "mean word recall {mean:.3} < 0.90");
    let worst = results.iter().map(|(_, r)| *r).fold(1.0, f64::min);
    assert!(worst >= 0.5, "a DOCX lost more than half of its words: {results:?}");
}

#[test]
fn xlsx_text_matches_docling_ground_truth() {
    let results = recall_against_docling("xlsx");
    assert!(!results.is_empty());
    for (name, recall) in &results {
        eprintln!("xlsx recall {recall:.3} {name}");
        // Chart titles (xlsx_01 has "Line by Scatter chart") are not cell text and are not read.
        assert!(*recall >= 0.8, "{name}: recall {recall:.3} < 0.8");
    }
}

#[test]
fn docx_headings_become_heading_paths() {
    let outcome = parse_one(&b_docs("docling_tests/docx/sources/unit_test_headers.docx"));
    let doc = outcome.document.expect("parsed");
    let paths: Vec<&Vec<String>> = doc.blocks.iter().map(|b| &b.location.heading_path).collect();
    assert!(paths.iter().any(|p| p.len() >= 2), "nested headings expected, got {paths:?}");
    // Every nested path starts with a top-level heading that also stands alone.
    for p in paths.iter().filter(|p| p.len() >= 2) {
        assert!(paths.iter().any(|q| q.len() == 1 && q[0] == p[0]), "{p:?} has no parent section");
    }
}

#[test]
fn docx_tables_become_markdown_tables() {
    let outcome = parse_one(&b_docs("docling_tests/docx/sources/word_tables.docx"));
    let text = text_of(&outcome);
    assert!(text.lines().any(|l| l.starts_with("| ") && l.ends_with(" |")), "no Markdown table row in:\n{text}");
    assert!(text.contains("| --- |"), "no header separator in:\n{text}");
}

#[test]
fn large_real_docx_reads_fully() {
    // An 872-page DOJ handbook: the largest DOCX in the private library.
    let dir = c_docs("en_misc_office");
    let docx = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "docx"))
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .expect("a DOCX in en_misc_office");
    let outcome = parse_one(&docx);
    assert_eq!(outcome.status, Status::Ok, "{:?}", outcome.error);
    assert!(outcome.chars > 500_000, "{} chars from {}", outcome.chars, docx.display());
}

#[test]
fn spreadsheets_keep_sheet_names_and_cached_values() {
    let outcome = parse_one(&b_docs("markitdown_test_files/test.xlsx"));
    assert_eq!(outcome.format, Some(Format::Xlsx));
    let doc = outcome.document.unwrap();
    let sheets: std::collections::BTreeSet<_> = doc.blocks.iter().filter_map(|b| b.location.sheet.clone()).collect();
    assert!(sheets.len() >= 2, "sheets {sheets:?}");
    assert_eq!(doc.page_count, Some(sheets.len() as u32));
    // Rows read as `header: value` pairs, and no formula text.
    let text = doc.full_text();
    assert!(text.lines().any(|l| l.contains(": ") && l.contains("; ")), "{text}");
    assert!(!text.contains("=SUM("), "formulas leaked: {text}");
}

#[test]
fn legacy_xls_and_ods_read() {
    let xls = parse_one(&b_docs("markitdown_test_files/test.xls"));
    let xlsx = parse_one(&b_docs("markitdown_test_files/test.xlsx"));
    assert_eq!(xls.format, Some(Format::Xls));
    // The same workbook saved in both formats yields the same text.
    assert_eq!(text_of(&xls), text_of(&xlsx));
}

#[test]
fn password_protected_office_files_are_reported_as_encrypted() {
    let dir = b_docs("apache-poi_test-data");
    let encrypted: Vec<_> = manifest(&dir)
        .into_iter()
        .filter(|r| r["magic"] == "ole2" && (r["path"].ends_with(".docx") || r["path"].ends_with(".xlsx")))
        .filter(|r| r["note"].to_lowercase().contains("password") || r["note"].to_lowercase().contains("encrypt"))
        .collect();
    assert!(!encrypted.is_empty(), "the POI set has password-protected OOXML files");
    for row in encrypted {
        let outcome = parse_one(&dir.join(&row["path"]));
        let error = outcome.error.map(|e| e.to_string()).unwrap_or_default();
        assert!(error.starts_with("encrypted"), "{}: {error}", row["path"]);
    }
}

#[test]
fn an_rtf_document_is_read_with_its_table_cells_apart() {
    let outcome = parse_one(&b_docs("unstructured_example-docs/fake-doc.rtf"));
    assert_eq!(outcome.status, Status::Ok, "{:?}", outcome.error);
    assert_eq!(outcome.format, Some(quarry_ingest::Format::Rtf));
    let text = text_of(&outcome);
    for printed in ["My First Heading", "My first paragraph.", "Table Example:", "Row 1, Cell 1", "Row 2, Cell 2"] {
        assert!(text.contains(printed), "{printed:?} not in {text:?}");
    }
    assert!(!text.contains("Cell 1Row"), "cells run together: {text:?}");
}
