//! `quarry parse` end to end: the real binary, real documents, isolated workers, the TSV report.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) fn eval_dir() -> PathBuf {
    let dir = std::env::var_os("QUARRY_EVAL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/eval"));
    assert!(dir.is_dir(), "evaluation documents not found at {} (set QUARRY_EVAL_DIR)", dir.display());
    dir
}

fn quarry() -> Command {
    Command::new(env!("CARGO_BIN_EXE_quarry"))
}

/// Runs `quarry parse` with `args` and returns the report's rows as maps, after checking the header.
fn parse_report(args: &[&str]) -> Vec<HashMap<String, String>> {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.tsv");
    let output = quarry().arg("parse").args(args).arg("--report").arg(&report).output().unwrap();
    assert!(output.status.success(), "quarry parse failed: {}", String::from_utf8_lossy(&output.stderr));
    let text = std::fs::read_to_string(&report).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    assert_eq!(header, "path\tformat\tstatus\tpages\tchars\tcjk_chars\tms\terror");
    let columns: Vec<&str> = header.split('\t').collect();
    lines
        .map(|l| {
            let fields: Vec<&str> = l.split('\t').collect();
            assert_eq!(fields.len(), columns.len(), "row {l:?}");
            columns.iter().map(|c| c.to_string()).zip(fields.iter().map(|f| f.to_string())).collect()
        })
        .collect()
}

fn manifest_paths(set: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(set.join("manifest.tsv")).unwrap();
    text.lines().skip(1).filter(|l| !l.is_empty()).map(|l| l.split('\t').next().unwrap().to_string()).collect()
}

/// Every parser on every file of the shared documents (1,251, hostile ones included): each ends in a row
/// and the batch finishes. OCR is off here — every PDF is still opened and its text layer read, but a page
/// without one is reported rather than rendered and read (on 2 cores OCR took 700 of the 1,035 s this
/// test's files cost, 2026-12-06, mostly pdf.js's rendering tests); the test below reads a sample of
/// those pages by OCR.
#[test]
fn every_real_document_ends_in_a_row_and_the_batch_finishes() {
    let b = eval_dir().join("B_documents");
    let b_arg = b.to_string_lossy().into_owned();
    let rows = parse_report(&[&b_arg, "--timeout-secs", "60", "--ocr", "off"]);
    let by_path: HashMap<&str, &HashMap<String, String>> = rows.iter().map(|r| (r["path"].as_str(), r)).collect();
    let allowed: HashSet<&str> = ["ok", "failed", "timeout", "too_large", "crashed"].into();
    let mut files = 0;
    for set in std::fs::read_dir(&b).unwrap().map(|e| e.unwrap().path()).filter(|p| p.join("manifest.tsv").exists()) {
        let set_name = set.file_name().unwrap().to_string_lossy().into_owned();
        for path in manifest_paths(&set) {
            files += 1;
            let key = format!("{set_name}/{path}");
            let row = by_path.get(key.as_str()).unwrap_or_else(|| panic!("no report row for {key}"));
            assert!(allowed.contains(row["status"].as_str()), "{key}: status {}", row["status"]);
            if row["status"] != "ok" {
                assert!(!row["error"].is_empty(), "{key}: not ok without a reason");
            }
        }
    }
    assert!(files > 1000, "only {files} manifest files");
    // ZIP members are reported with virtual paths.
    assert!(rows.iter().any(|r| r["path"] == "markitdown_test_files/test_files.zip!/test.docx" && r["status"] == "ok"));
    // Nothing took the process down: no row is `crashed` for a file another parser run reads fine.
    let crashed: Vec<_> = rows.iter().filter(|r| r["status"] == "crashed").map(|r| (&r["path"], &r["error"])).collect();
    eprintln!("crashed rows: {crashed:?}");
}

/// Pages without a text layer are rendered and read by OCR without taking a batch down: the shared
/// scans and pictures (docling's OCR sources, markitdown's scanned report and the picture in its ZIP),
/// one of py-pdf's four ImageMagick PDFs (images, LZW, CCITT fax, ASCII85; the first two take about 25 s
/// each to render and read, the others 7–8 s) and every sixteenth of pdf.js's rendering tests by name
/// (JBIG2, CCITT, masks, broken streams — what PDFium renders for OCR), each ending in a row with an
/// allowed status. Which sixteenth and which ImageMagick PDF change from run to run (printed;
/// `QUARRY_OCR_SAMPLE=N` replays them), so CI reads all of them over time at a fraction of the cost of
/// reading them all each run.
#[test]
fn scans_and_pdf_rendering_tests_read_by_ocr_end_in_rows() {
    let b = eval_dir().join("B_documents");
    let mut pdfjs: Vec<PathBuf> = std::fs::read_dir(b.join("pdfjs_test_pdfs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("pdf")))
        .collect();
    pdfjs.sort();
    let first = (crate::run_seed("QUARRY_OCR_SAMPLE") % 16) as usize;
    eprintln!("pdf.js sample: every sixteenth from number {first} (QUARRY_OCR_SAMPLE={first} replays it)");
    let mut inputs: Vec<PathBuf> = pdfjs.into_iter().skip(first).step_by(16).collect();
    let sampled = inputs.len();
    let mut imagemagick: Vec<PathBuf> = std::fs::read_dir(b.join("py-pdf_sample-files/007-imagemagick-images"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    imagemagick.sort();
    assert_eq!(imagemagick.len(), 4, "{imagemagick:?}");
    let imagemagick = imagemagick.swap_remove(first % 4);
    eprintln!("ImageMagick PDF: {}", imagemagick.display());
    inputs.push(b.join("docling_tests/ocr/sources"));
    inputs.push(imagemagick);
    inputs.push(b.join("markitdown_test_files/MEDRPT-2024-PAT-3847_medical_report_scan.pdf"));
    inputs.push(b.join("markitdown_test_files/test_files.zip"));
    let mut args: Vec<String> = inputs.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    args.extend(["--timeout-secs", "60", "--ocr", "auto"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let rows = parse_report(&args);
    assert!(sampled >= 25 && rows.len() > sampled, "{sampled} sampled, {} rows", rows.len());
    let allowed: HashSet<&str> = ["ok", "failed", "timeout", "too_large", "crashed"].into();
    for row in &rows {
        assert!(allowed.contains(row["status"].as_str()), "{}: status {}", row["path"], row["status"]);
        if row["status"] != "ok" {
            assert!(!row["error"].is_empty(), "{}: not ok without a reason", row["path"]);
        }
    }
    // The scans are read: their text comes from OCR alone.
    let text_of = |suffix: &str| -> u64 {
        let row = rows.iter().find(|r| r["path"].ends_with(suffix)).unwrap_or_else(|| panic!("no row for {suffix}"));
        row["chars"].parse().unwrap()
    };
    assert!(text_of("MEDRPT-2024-PAT-3847_medical_report_scan.pdf") > 1000);
    assert!(text_of("test.jpg") > 500, "the picture inside the ZIP is read by OCR");
}

#[test]
fn the_private_library_parses_with_cjk_text_intact() {
    let docs = eval_dir().join("C_private_library/docs");
    let rows = parse_report(&[&docs.to_string_lossy()]);
    let ok = rows.iter().filter(|r| r["status"] == "ok").count();
    assert!(ok * 100 >= rows.len() * 95, "{ok} of {} ok", rows.len());
    let cjk: u64 = rows.iter().map(|r| r["cjk_chars"].parse::<u64>().unwrap()).sum();
    assert!(cjk > 1_000_000, "only {cjk} CJK characters from the Chinese reports");
}

#[test]
fn a_document_over_the_memory_cap_is_too_large_and_the_rest_still_parse() {
    let folder = eval_dir().join("C_private_library/docs/en_misc_office");
    let rows = parse_report(&[&folder.to_string_lossy(), "--memory-limit-mb", "110", "--workers", "1"]);
    let status: HashMap<&str, &str> = rows.iter().map(|r| (r["path"].as_str(), r["status"].as_str())).collect();
    assert_eq!(status["handbook-872p.docx"], "too_large", "{rows:?}");
    let row = rows.iter().find(|r| r["path"] == "handbook-872p.docx").unwrap();
    assert!(row["error"].contains("memory cap"), "{}", row["error"]);
    for (path, s) in &status {
        if *path != "handbook-872p.docx" {
            assert_eq!(*s, "ok", "{path} should parse under the cap");
        }
    }
}

/// A worker that cannot set its memory cap parses nothing: here the hard address-space limit it inherits
/// (16 GiB, set by the shell) is below the cap asked for (64 GiB), so setting the cap fails. Each file's
/// row says why, and no document is read without its cap (before, the failure was ignored and the file
/// parsed with no cap at all).
#[test]
fn a_worker_that_cannot_cap_its_memory_parses_nothing() {
    let file = eval_dir().join("B_documents/markitdown_test_files/test.docx");
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.tsv");
    let script = r#"ulimit -v 16777216 && exec "$0" parse "$1" --memory-limit-mb 65536 --workers 1 --report "$2""#;
    let output = Command::new("bash")
        .args(["-c", script, env!("CARGO_BIN_EXE_quarry")])
        .arg(&file)
        .arg(&report)
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&report)
        .unwrap_or_else(|e| panic!("no report ({e}): {}", String::from_utf8_lossy(&output.stderr)));
    let row = text.lines().nth(1).expect("one row");
    assert!(row.contains("\tcrashed\t"), "{row}");
    assert!(row.contains("cannot cap the parser's address space"), "{row}");
}

#[test]
fn json_summary_counts_formats() {
    let folder = eval_dir().join("B_documents/markitdown_test_files");
    let output = quarry().args(["parse", "--json"]).arg(&folder).output().unwrap();
    assert!(output.status.success());
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(summary["formats"]["pdf"]["documents"].as_u64().unwrap() >= 5);
    assert!(summary["formats"]["docx"]["status"]["ok"].as_u64().unwrap() >= 3);
    // How the workers were confined is part of the summary (Landlock on this kernel, or its absence).
    let sandbox = summary["sandbox"].as_str().unwrap();
    assert!(sandbox.starts_with("parse workers: no network (seccomp);"), "{sandbox}");
}

#[test]
fn a_missing_path_is_a_clear_error() {
    let output = quarry().args(["parse", "/no/such/folder"]).output().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("/no/such/folder") && stderr.contains("No such file"), "{stderr}");
}

/// Two scans read by two real workers that may not both hold the OCR models at once (`--ocr-at-once
/// 1`): each asks its supervisor before loading them and waits its turn, and both scans are read, with
/// the same characters as with one permit per worker.
#[test]
fn scans_read_by_ocr_one_worker_at_a_time_are_read_whole() {
    let sources = eval_dir().join("B_documents/docling_tests/ocr/sources");
    let dir = tempfile::tempdir().unwrap();
    for name in ["ocr_test_rotated_90.pdf", "ocr_test_rotated_180.pdf"] {
        std::fs::copy(sources.join(name), dir.path().join(name)).unwrap();
    }
    let folder = dir.path().to_str().unwrap();
    let chars = |rows: Vec<HashMap<String, String>>| -> Vec<(String, String)> {
        let mut read: Vec<(String, String)> = rows
            .into_iter()
            .map(|row| {
                assert_eq!(row["status"], "ok", "{row:?}");
                (row["path"].clone(), row["chars"].clone())
            })
            .collect();
        read.sort();
        read
    };
    let one_at_a_time = chars(parse_report(&[folder, "--workers", "2", "--ocr-at-once", "1"]));
    assert_eq!(one_at_a_time.len(), 2);
    assert!(one_at_a_time.iter().all(|(_, n)| n.parse::<usize>().unwrap() > 50), "{one_at_a_time:?}");
    assert_eq!(one_at_a_time, chars(parse_report(&[folder, "--workers", "2", "--ocr-at-once", "2"])));
}
