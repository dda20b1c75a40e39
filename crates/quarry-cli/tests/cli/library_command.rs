//! Libraries end to end through the real `quarry` binary: create, add, re-add, sync (changed, moved,
//! vanished files), status, search in every mode, a model mismatch, searches during an ingest, and
//! `kill -9` at random moments of an ingest. Uses the real embedding model (scripts/setup.sh).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn sample_library() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/sample-library")
}

pub fn quarry(data: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_quarry"));
    command.env("QUARRY_DATA_DIR", data).env_remove("QUARRY_EMBED_MODEL_DIR").env_remove("QUARRY_EMBED_MODEL_ID");
    command
}

pub fn run(data: &Path, args: &[&str]) -> Output {
    let output = quarry(data).args(args).output().unwrap();
    assert!(
        output.status.success(),
        "quarry {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn json(data: &Path, args: &[&str]) -> Value {
    let output = run(data, args);
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("quarry {args:?}: not JSON ({e}): {}", String::from_utf8_lossy(&output.stdout)))
}

/// The events of `quarry add|sync --json`, and the final summary.
fn ingest(data: &Path, args: &[&str]) -> (Vec<Value>, Value) {
    let output = run(data, args);
    let events: Vec<Value> = String::from_utf8_lossy(&output.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let summary = events.iter().find(|e| e["event"] == "finished").cloned().expect("a finished event");
    (events, summary)
}

fn status(data: &Path, library: &str) -> Value {
    json(data, &["status", "--library", library, "--json"])
}

fn count(status: &Value, state: &str) -> u64 {
    status["documents"][state].as_u64().unwrap_or(0)
}

fn search(data: &Path, library: &str, query: &str, mode: &str) -> Vec<Value> {
    let output = json(data, &["search", query, "--library", library, "--mode", mode, "-k", "5", "--json"]);
    assert_eq!((output["query"].as_str(), output["mode"].as_str()), (Some(query), Some(mode)), "{output}");
    let hits = output["hits"].as_array().unwrap().clone();
    for hit in &hits {
        for key in ["path", "page", "sheet", "heading_path", "score", "chunk_id", "text"] {
            assert!(hit.get(key).is_some(), "hit without {key}: {hit}");
        }
    }
    hits
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn sample_library_is_added_searched_and_kept_in_sync() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let docs = tmp.path().join("docs");
    copy_dir(&sample_library(), &docs);
    // A damaged PDF among the real ones: recorded as failed with its reason, the rest goes on.
    std::fs::write(docs.join("damaged.pdf"), b"%PDF-1.7\n1 0 obj << /Type /Catalog >> garbage, no xref\n").unwrap();
    let docs_arg = docs.to_string_lossy().into_owned();
    run(&data, &["library", "create", "sample"]);
    let (events, summary) = ingest(&data, &["add", &docs_arg, "--library", "sample", "--json"]);
    // 17 files on disk: 15 documents of their own (SOURCES.md included), the damaged PDF and the ZIP, whose
    // 3 members are documents too: 18 documents indexed, 1 failed.
    assert_eq!(summary["files"], 17, "{summary}");
    assert_eq!(summary["failed"], 1, "{events:?}");
    assert_eq!(summary["indexed"], 18, "{summary}");
    let failure = status(&data, "sample")["failures"][0].clone();
    assert!(failure[0].as_str().unwrap().ends_with("damaged.pdf") && failure[1].as_str().unwrap().len() > 10, "{failure}");
    assert!(events.iter().any(|e| e["event"] == "read" && e["path"].as_str().unwrap().ends_with("more-ntsb-reports.zip!/reports/20080104X00020.pdf")));

    let s = status(&data, "sample");
    assert_eq!(count(&s, "indexed"), 18);
    assert_eq!(count(&s, "pending"), 0);
    assert_eq!(s["archives"], 1);
    assert_eq!(s["chunks"].as_u64(), s["keyword_chunks"].as_u64(), "both indexes hold every chunk: {s}");
    assert_eq!(s["chunks"], summary["chunks"]);

    // Every mode finds the document that answers; Chinese goes through the keyword index.
    for mode in ["bm25", "dense", "hybrid"] {
        let hits = search(&data, "sample", "Apple iPhone net sales by quarter", mode);
        assert!(hits.iter().take(3).any(|h| h["path"].as_str().unwrap().contains("AAPL")), "{mode}: {hits:?}");
        assert!(hits.iter().all(|h| h["page"].as_u64().is_some()), "PDF hits carry pages");
    }
    let hits = search(&data, "sample", "中国联通 资本开支", "hybrid");
    assert!(hits[0]["path"].as_str().unwrap().ends_with("china-unicom-2022-annual-report-summary.md"), "{hits:?}");
    assert!(hits[0]["dense_rank"].is_null(), "an English model does not rank a Chinese query");

    // Adding the same folder again reads nothing.
    let (_, again) = ingest(&data, &["add", &docs_arg, "--library", "sample", "--json"]);
    assert_eq!((again["unchanged"].as_u64(), again["indexed"].as_u64()), (Some(17), Some(0)), "{again}");

    // Change one file, move another, delete a third, then sync.
    let md = docs.join("zh/china-unicom-2022-annual-report-summary.md");
    let mut text = std::fs::read_to_string(&md).unwrap();
    text.push_str("\n\n## 附注\n本段为测试新增：量子计算实验室于二〇二三年成立。\n");
    std::fs::write(&md, text).unwrap();
    std::fs::rename(docs.join("office/handbook-1p.docx"), docs.join("handbook-moved.docx")).unwrap();
    std::fs::remove_file(docs.join("ntsb/20080102X00002.pdf")).unwrap();
    let (events, synced) = ingest(&data, &["sync", "--library", "sample", "--json"]);
    assert_eq!(synced["indexed"], 1, "the changed file: {events:?}");
    assert_eq!(synced["moved"], 1, "the moved file is not read again: {events:?}");
    assert_eq!(synced["removed"], 2, "old version of the changed file and the deleted file: {events:?}");
    let s = status(&data, "sample");
    assert_eq!(count(&s, "indexed"), 17, "18, less the deleted file; the changed one replaced");
    assert_eq!(s["chunks"].as_u64(), s["keyword_chunks"].as_u64());
    let hits = search(&data, "sample", "量子计算实验室", "bm25");
    assert!(hits[0]["text"].as_str().unwrap().contains("量子计算实验室"), "{hits:?}");
    let hits = search(&data, "sample", "employee handbook", "hybrid");
    assert!(hits.iter().any(|h| h["path"].as_str().unwrap().ends_with("handbook-moved.docx")), "{hits:?}");
    assert!(search(&data, "sample", "20080102X00002", "bm25").iter().all(|h| !h["path"].as_str().unwrap().contains("20080102X00002")));
}

#[test]
fn library_management_and_model_mismatch() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().to_path_buf();
    run(&data, &["library", "create", "one"]);
    run(&data, &["library", "rename", "one", "two"]);
    let list = json(&data, &["library", "list", "--json"]);
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["name"], "two");
    assert_eq!(list[0]["embedding"]["dimension"], 384);

    // A library made with another model id refuses this model and says how to re-index.
    let model_dir = quarry_core::models::find_model_file("all-minilm-l6-v2/model.onnx").unwrap().parent().unwrap().to_path_buf();
    let model_arg = model_dir.to_string_lossy().into_owned();
    run(&data, &["library", "create", "other", "--model-dir", &model_arg, "--model-id", "renamed-minilm"]);
    let file = sample_library().join("office/handbook-1p.docx");
    let output = quarry(&data).args(["add", file.to_str().unwrap(), "--library", "other"]).output().unwrap();
    assert!(!output.status.success());
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(message.contains("renamed-minilm") && message.contains("quarry library reindex other"), "{message}");

    let output = quarry(&data).args(["status", "--library", "missing"]).output().unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("quarry library create missing"));
    let output = quarry(&data).args(["library", "delete", "two"]).output().unwrap();
    assert!(!output.status.success(), "delete needs --yes");
    run(&data, &["library", "delete", "two", "--yes"]);
    assert_eq!(json(&data, &["library", "list", "--json"]).as_array().unwrap().len(), 1);
}

/// The invariants of a library after any crash, read with the Rust API (read-only, as a search would).
fn check_consistent(data: &Path, library: &str) -> (usize, usize) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let data = quarry_store::DataDir::at(data);
        let library = quarry_store::Library::open_read(&data, library).await.expect("the library opens");
        let mut indexed = 0;
        let mut chunks = 0;
        for document in library.documents() {
            if document.state != quarry_store::DocumentState::Indexed || document.chunk_count == 0 {
                continue;
            }
            let id = &document.document_id;
            let stored = library.store().count_chunks(Some(format!("document_id = '{id}'"))).await.unwrap();
            assert_eq!(stored, document.chunk_count as usize, "{}: every chunk in LanceDB", document.path);
            assert_eq!(library.keyword().count_document(id).unwrap(), stored, "{}: every chunk in tantivy", document.path);
            indexed += 1;
            chunks += stored;
        }
        (indexed, chunks)
    })
}

#[test]
fn kill_minus_nine_at_random_moments_never_leaves_a_half_indexed_library() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let docs = tmp.path().join("docs");
    // Enough work for the kills to land in every phase: parse, embed, each commit of a group.
    for name in ["ntsb", "office", "zh"] {
        copy_dir(&sample_library().join(name), &docs.join(name));
    }
    std::fs::copy(sample_library().join("sec-10-q/2023 Q1 NVDA.pdf"), docs.join("nvda.pdf")).unwrap();
    let docs_arg = docs.to_string_lossy().into_owned();
    run(&data, &["library", "create", "crash"]);

    // Reference: a run that is never killed.
    let reference_data = tmp.path().join("reference");
    run(&reference_data, &["library", "create", "crash"]);
    let started = Instant::now();
    ingest(&reference_data, &["add", &docs_arg, "--library", "crash", "--json", "--batch-chunks", "24"]);
    let full_run = started.elapsed();
    let expected = check_consistent(&reference_data, "crash");
    assert!(expected.0 >= 10, "{expected:?}");

    // A simple xorshift, seeded from the clock but printed, so a failing run can be replayed.
    let mut seed: u64 = std::env::var("QUARRY_KILL_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1
    });
    eprintln!("kill test seed {seed}, full run {full_run:?}");
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut completed_runs = 0;
    for run_no in 0..16 {
        let mut child = quarry(&data)
            .args(["add", &docs_arg, "--library", "crash", "--json", "--batch-chunks", "24"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let delay = Duration::from_millis(100 + next() % (full_run.as_millis() as u64).max(200));
        std::thread::sleep(delay);
        let killed = child.try_wait().unwrap().is_none();
        let _ = child.kill(); // SIGKILL on Unix
        let _ = child.wait();
        let (indexed, _) = check_consistent(&data, "crash");
        eprintln!("run {run_no}: killed after {delay:?}: {killed}; {indexed} documents indexed");
        if !killed {
            completed_runs += 1;
        }
        if indexed == expected.0 {
            // Done: start over so later kills land mid-ingest again.
            run(&data, &["library", "delete", "crash", "--yes"]);
            run(&data, &["library", "create", "crash"]);
        }
    }
    assert!(completed_runs < 8, "most runs must really be killed mid-ingest");
    // A write open repairs, and a last add completes the rest with the same result as the clean run.
    ingest(&data, &["add", &docs_arg, "--library", "crash", "--json"]);
    assert_eq!(check_consistent(&data, "crash"), expected);
    let s = status(&data, "crash");
    assert_eq!(count(&s, "pending"), 0);
    assert_eq!(s["chunks"].as_u64(), s["keyword_chunks"].as_u64(), "nothing half-indexed remains: {s}");
}

#[test]
fn searches_work_while_an_ingest_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let docs = sample_library().join("sec-10-q");
    run(&data, &["library", "create", "busy"]);
    let mut child = quarry(&data)
        .args(["add", docs.to_str().unwrap(), "--library", "busy", "--json", "--batch-chunks", "32"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut searches = 0;
    let mut saw_results = false;
    while child.try_wait().unwrap().is_none() {
        let hits = search(&data, "busy", "revenue", "bm25");
        saw_results |= !hits.is_empty();
        for hit in &hits {
            assert!(!hit["text"].as_str().unwrap().is_empty());
        }
        searches += 1;
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(child.wait().unwrap().success());
    assert!(searches >= 3, "the ingest ran long enough to search during it ({searches})");
    assert!(saw_results, "documents became searchable before the ingest finished");
    let output = quarry(&data).args(["add", docs.to_str().unwrap(), "--library", "busy"]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}
