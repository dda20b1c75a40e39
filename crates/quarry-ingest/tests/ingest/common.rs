//! Helpers shared by the integration tests: where the real evaluation documents are, and small readers.
#![allow(dead_code)]

use quarry_ingest::{parse_file, FileOutcome, ParseEvent, ParseOptions};
use std::path::{Path, PathBuf};

/// `../shared/eval` beside the checkout, or `QUARRY_EVAL_DIR`. Panics with a clear message when missing:
/// these tests are about real documents and must not pass without them.
pub fn eval_dir() -> PathBuf {
    existing_dir("QUARRY_EVAL_DIR", "../../../shared/eval", "evaluation documents", "set QUARRY_EVAL_DIR")
}

/// `$var`, or `default` relative to this crate; panics naming `what` and `hint` when it is not a folder.
fn existing_dir(var: &str, default: &str, what: &str, hint: &str) -> PathBuf {
    let dir =
        std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(default));
    assert!(dir.is_dir(), "{what} not found at {} ({hint})", dir.display());
    dir
}

pub fn b_docs(rel: &str) -> PathBuf {
    eval_dir().join("B_documents").join(rel)
}

pub fn c_docs(rel: &str) -> PathBuf {
    eval_dir().join("C_private_library/docs").join(rel)
}

/// A 10-Q of the quick start's sample library (`assets/sample-library/sec-10-q/`), by file name.
pub fn sample_filing(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/sample-library/sec-10-q").join(name)
}

/// Parses one file in-process and returns every outcome (one, or several for a ZIP).
pub fn parse(path: &Path) -> Vec<FileOutcome> {
    parse_with(path, &ParseOptions::default())
}

pub fn parse_with(path: &Path, options: &ParseOptions) -> Vec<FileOutcome> {
    let display = path.file_name().unwrap().to_string_lossy().into_owned();
    let mut outcomes = Vec::new();
    parse_file(path, &display, options, &mut |event| {
        if let ParseEvent::Finished(outcome) = event {
            outcomes.push(*outcome);
        }
    });
    outcomes
}

/// The single outcome of a non-archive file.
pub fn parse_one(path: &Path) -> FileOutcome {
    let mut outcomes = parse(path);
    assert_eq!(outcomes.len(), 1, "expected one outcome for {}", path.display());
    outcomes.remove(0)
}

/// All text of a successfully parsed document, blocks joined.
pub fn text_of(outcome: &FileOutcome) -> String {
    let doc = outcome.document.as_ref().unwrap_or_else(|| panic!("{} not parsed: {:?}", outcome.path, outcome.error));
    doc.full_text()
}

/// Rows of a manifest.tsv as maps from column name to value.
pub fn manifest(set_dir: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let text = std::fs::read_to_string(set_dir.join("manifest.tsv")).expect("manifest.tsv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    lines
        .filter(|l| !l.is_empty())
        .map(|l| header.iter().map(|h| h.to_string()).zip(l.split('\t').map(str::to_string)).collect())
        .collect()
}

/// Share of the distinct words (lowercased, alphanumeric, ≥ 2 characters) of `reference` that occur in
/// `extracted`: how much of a ground-truth text an extractor recovered.
pub fn word_recall(reference: &str, extracted: &str) -> f64 {
    let words = |s: &str| -> std::collections::HashSet<String> {
        s.split(|c: char| !c.is_alphanumeric()).filter(|w| w.chars().count() >= 2).map(|w| w.to_lowercase()).collect()
    };
    let reference = words(reference);
    let extracted = words(extracted);
    if reference.is_empty() {
        return 1.0;
    }
    reference.iter().filter(|w| extracted.contains(*w)).count() as f64 / reference.len() as f64
}

/// The model files `scripts/setup.sh` unpacks (`assets/models/`), or `QUARRY_MODELS_DIR`.
pub fn models_dir() -> PathBuf {
    existing_dir("QUARRY_MODELS_DIR", "../../assets/models", "model files", "run scripts/setup.sh")
}
