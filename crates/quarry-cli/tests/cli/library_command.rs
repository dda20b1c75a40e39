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

/// `quarry` with its libraries in `data`. Questions are answered by SmolLM2-135M (through
/// `QUARRY_LLM_MODEL_FILE`) unless a test names a model: the default, Qwen2.5-Coder-1.5B, takes a minute
/// or more an answer on 2 cores, and most tests check what Quarry does around the answer, not its wording.
pub fn quarry(data: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_quarry"));
    command.env("QUARRY_DATA_DIR", data).env_remove("QUARRY_EMBED_MODEL_DIR").env_remove("QUARRY_EMBED_MODEL_ID");
    if let Ok(small) = quarry_core::models::find_model_file(quarry_gguf::LOW_MEMORY_MODEL_FILE) {
        command.env("QUARRY_LLM_MODEL_FILE", small);
    }
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
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("quarry {args:?}: not JSON ({e}): {}", String::from_utf8_lossy(&output.stdout)))
}

/// The events of `quarry add|sync --json`, and the final summary.
fn ingest(data: &Path, args: &[&str]) -> (Vec<Value>, Value) {
    let output = run(data, args);
    let events: Vec<Value> =
        String::from_utf8_lossy(&output.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
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

/// Copies each of `files` into the folder `to` (made if missing), under its own file name.
pub fn copy_into<P: AsRef<Path>>(files: impl IntoIterator<Item = P>, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for from in files {
        let from = from.as_ref();
        std::fs::copy(from, to.join(from.file_name().unwrap())).unwrap();
    }
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

/// Two of the sample library's filings, NVIDIA's first quarter (49 pages) and Apple's second (28),
/// copied into `dir/sec-10-q`, which is returned: an ingest long enough to search, lock, fill a disk or
/// stop while it runs (a third of the six filings' text, so a third of their embedding time).
pub fn two_filings(dir: &Path) -> PathBuf {
    let docs = dir.join("sec-10-q");
    copy_into(["2023 Q1 NVDA.pdf", "2023 Q2 AAPL.pdf"].map(|n| sample_library().join("sec-10-q").join(n)), &docs);
    docs
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
    assert!(
        failure[0].as_str().unwrap().ends_with("damaged.pdf") && failure[1].as_str().unwrap().len() > 10,
        "{failure}"
    );
    assert!(events.iter().any(|e| e["event"] == "read"
        && e["path"].as_str().unwrap().ends_with("more-ntsb-reports.zip!/reports/20080104X00020.pdf")));
    // The run announces its phases in order, each before its own events.
    let phases: Vec<&str> =
        events.iter().filter(|e| e["event"] == "phase").map(|e| e["phase"].as_str().unwrap()).collect();
    assert_eq!(phases, ["scan", "read", "embed", "optimize"], "{events:?}");
    let position = |test: &dyn Fn(&Value) -> bool| events.iter().position(test).unwrap();
    assert!(position(&|e| e["phase"] == "read") < position(&|e| e["event"] == "read"));
    assert!(position(&|e| e["event"] == "keyword_ready") < position(&|e| e["phase"] == "embed"));
    assert!(position(&|e| e["phase"] == "embed") < position(&|e| e["event"] == "embedding"));

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
    hybrid_search_is_the_same_side_by_side_as_one_after_the_other(&data, "sample");

    // `quarry eval library`: a question set whose qrels name documents by path relative to its root.
    let set = tmp.path().join("qna");
    std::fs::create_dir_all(&set).unwrap();
    std::fs::write(
        set.join("queries.jsonl"),
        "{\"_id\": \"q1\", \"text\": \"How did Apple's iPhone net sales change?\"}\n\
         {\"_id\": \"q2\", \"text\": \"NVIDIA data center revenue\"}\n\
         {\"_id\": \"q3\", \"text\": \"a question without qrels is not asked\"}\n",
    )
    .unwrap();
    std::fs::write(
        set.join("qrels.tsv"),
        "query-id\tcorpus-id\tscore\nq1\tdocs/sec-10-q/2023 Q1 AAPL.pdf\t1\nq1\tdocs/sec-10-q/2023 Q2 AAPL.pdf\t1\n\
         q2\tdocs/sec-10-q/2023 Q1 NVDA.pdf\t1\nq2\tdocs/sec-10-q/2023 Q2 NVDA.pdf\t1\n",
    )
    .unwrap();
    let rankings = tmp.path().join("rankings.jsonl");
    let report = json(
        &data,
        &[
            "eval",
            "library",
            "--library",
            "sample",
            "--set",
            set.to_str().unwrap(),
            "--document-prior",
            "0",
            "--rankings",
            rankings.to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!((report["questions"].as_u64(), report["chunks"].as_u64()), (Some(2), s["chunks"].as_u64()), "{report}");
    for mode in ["bm25", "dense", "hybrid", "bm25, document prior 0", "hybrid, document prior 0"] {
        let scores = &report["results"][mode];
        for key in ["doc_recall@5", "doc_recall@10", "covered@5", "covered@10", "ms_per_query"] {
            assert!(scores[key].as_f64().is_some_and(|v| v >= 0.0), "{mode} {key}: {report}");
        }
        let (at_5, at_10) = (scores["doc_recall@5"].as_f64().unwrap(), scores["doc_recall@10"].as_f64().unwrap());
        assert!(at_5 <= at_10 && at_10 <= 1.0, "{mode}: {report}");
    }
    // Both companies' filings are found among the hybrid top 10 (each question has 2 of them).
    assert!(report["results"]["hybrid"]["doc_recall@10"].as_f64().unwrap() >= 0.5, "{report}");
    // The rankings before fusion, one line per question: [chunk id, score, path], up to 50 a side.
    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(&rankings).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    for line in &lines {
        assert_eq!(line["fused"], true, "{line}");
        for side in ["bm25", "dense"] {
            let hits = line[side].as_array().unwrap();
            assert!(!hits.is_empty() && hits.len() <= 50, "{line}");
            assert!(hits.iter().all(|h| h[0].is_u64() && h[1].is_f64() && h[2].as_str().is_some()));
        }
    }
    assert!(lines[0]["relevant"].as_array().unwrap().iter().any(|r| r == "docs/sec-10-q/2023 Q1 AAPL.pdf"));

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
    // Only its new paragraph's chunk is embedded; the chunks that read as before keep their vectors.
    let kept = synced["kept_embeddings"].as_u64().unwrap();
    assert!(kept >= 1 && synced["embedded_chunks"].as_u64() < Some(kept), "{synced}");
    assert_eq!(synced["chunks"].as_u64(), Some(kept + synced["embedded_chunks"].as_u64().unwrap()), "{synced}");
    assert_eq!(synced["moved"], 1, "the moved file is not read again: {events:?}");
    assert_eq!(synced["removed"], 2, "old version of the changed file and the deleted file: {events:?}");
    let s = status(&data, "sample");
    assert_eq!(count(&s, "indexed"), 17, "18, less the deleted file; the changed one replaced");
    assert_eq!(s["chunks"].as_u64(), s["keyword_chunks"].as_u64());
    let hits = search(&data, "sample", "量子计算实验室", "bm25");
    assert!(hits[0]["text"].as_str().unwrap().contains("量子计算实验室"), "{hits:?}");
    let hits = search(&data, "sample", "employee handbook", "hybrid");
    assert!(hits.iter().any(|h| h["path"].as_str().unwrap().ends_with("handbook-moved.docx")), "{hits:?}");
    assert!(search(&data, "sample", "20080102X00002", "bm25")
        .iter()
        .all(|h| !h["path"].as_str().unwrap().contains("20080102X00002")));
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
    let model_dir =
        quarry_core::models::find_model_file("all-minilm-l6-v2/model.onnx").unwrap().parent().unwrap().to_path_buf();
    let model_arg = model_dir.to_string_lossy().into_owned();
    run(&data, &["library", "create", "other", "--model-dir", &model_arg, "--model-id", "renamed-minilm"]);
    let file = sample_library().join("office/handbook-1p.docx");
    let output = quarry(&data).args(["add", file.to_str().unwrap(), "--library", "other"]).output().unwrap();
    assert!(!output.status.success());
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(message.contains("renamed-minilm") && message.contains("quarry library reindex other"), "{message}");

    let output = quarry(&data).args(["status", "--library", "missing"]).output().unwrap();
    assert!(!output.status.success());
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(message.contains("quarry library create missing"), "{message}");
    assert!(message.contains("`quarry library list` shows the libraries there are"), "{message}");
    let output = quarry(&data).args(["library", "delete", "two"]).output().unwrap();
    assert!(!output.status.success(), "delete needs --yes");
    run(&data, &["library", "delete", "two", "--yes"]);
    assert_eq!(json(&data, &["library", "list", "--json"]).as_array().unwrap().len(), 1);
}

/// The invariants of a library after any crash, read with the Rust API (read-only, as a search would):
/// every `keyword_only` and `indexed` document has all its chunks in LanceDB and in tantivy; every chunk
/// of an `indexed` document has a stored vector that dense search finds again; a `keyword_only`
/// document's chunks have either their vector or a zero placeholder, and dense search never returns a
/// placeholder; searches return chunks of searchable documents only. Returns (searchable documents, their
/// chunks); prints how many of them were searchable by keyword only.
fn check_consistent(data: &Path, library: &str) -> (usize, usize) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let data = quarry_store::DataDir::at(data);
        let mut library = quarry_store::Library::open_read(&data, library).await.expect("the library opens");
        let (mut searchable, mut indexed, mut chunks, mut keyword_only) = (0, 0, 0, 0);
        let mut complete = std::collections::HashSet::new();
        let mut placeholders = std::collections::HashSet::new();
        let mut probe: Option<Vec<f32>> = None;
        let documents: Vec<quarry_store::DocumentRecord> = library.documents().cloned().collect();
        for document in &documents {
            if !document.state.searchable() || document.chunk_count == 0 {
                continue;
            }
            let id = &document.document_id;
            let filter = format!("document_id = '{id}'");
            let stored = library.store().count_chunks(Some(filter.clone())).await.unwrap();
            assert_eq!(stored, document.chunk_count as usize, "{}: every chunk in LanceDB", document.path);
            assert_eq!(library.keyword().count_document(id).unwrap(), stored, "{}: every chunk in tantivy", document.path);
            let vectors = library.store().chunk_vectors(Some(filter)).await.unwrap();
            assert_eq!(vectors.len(), stored);
            complete.insert(id.clone());
            searchable += 1;
            chunks += stored;
            if document.state == quarry_store::DocumentState::KeywordOnly {
                keyword_only += 1;
                for (chunk, vector) in &vectors {
                    if vector.iter().all(|v| *v == 0.0) {
                        placeholders.insert(*chunk);
                    }
                }
                continue;
            }
            for (chunk, vector) in &vectors {
                assert!(vector.len() == 384 && vector.iter().any(|v| *v != 0.0), "{}: chunk {chunk} has a real vector", document.path);
            }
            // Dense search finds the document's first chunk from its own vector.
            let (first, vector) = &vectors[0];
            let nearest = library.store().nearest(vector, 3).await.unwrap();
            assert!(
                nearest.iter().any(|(c, similarity)| c.chunk_id == *first || (c.text == nearest[0].0.text && *similarity > 0.999)),
                "{}: dense search finds chunk {first}",
                document.path
            );
            probe.get_or_insert_with(|| vector.clone());
            indexed += 1;
        }
        // Waiting chunks of searchable documents are exactly their placeholders (a `pending` document a
        // kill cut off has waiting chunks too, which the next writer removes with it).
        let keyword_only_ids: Vec<&str> = documents
            .iter()
            .filter(|d| d.state == quarry_store::DocumentState::KeywordOnly)
            .map(|d| d.document_id.as_str())
            .collect();
        let waiting = if keyword_only_ids.is_empty() {
            0
        } else {
            let ids: Vec<String> = keyword_only_ids.iter().map(|id| format!("'{id}'")).collect();
            let filter = format!("embedded = false AND document_id IN ({})", ids.join(", "));
            library.store().count_chunks(Some(filter)).await.unwrap()
        };
        assert_eq!(waiting, placeholders.len(), "waiting chunks of keyword-only documents are their placeholders");
        // Dense search over a library with waiting chunks returns real neighbours only.
        if let (Some(vector), false) = (&probe, placeholders.is_empty()) {
            let search = quarry_store::VectorSearch::Exact;
            for (chunk, _) in library.store().nearest_where(vector, 200, search, true).await.unwrap() {
                assert!(!placeholders.contains(&chunk.chunk_id), "dense search returned a chunk waiting for its embedding");
            }
        }
        // Nothing half-indexed is returned: every hit belongs to a document checked complete above.
        for query in ["the", "aircraft", "revenue", "中国"] {
            for hit in library.search(query, quarry_store::SearchMode::Bm25, 50, None).await.unwrap() {
                assert!(complete.contains(&hit.chunk.document_id), "search returned {} of an incomplete document", hit.path);
            }
        }
        eprintln!("{indexed} documents indexed, {keyword_only} searchable by keyword only ({} chunks waiting)", placeholders.len());
        (searchable, chunks)
    })
}

/// Hybrid search on a multi-threaded runtime (the CLI's and the app's: the vector search runs beside BM25)
/// returns what it returns on a single-threaded one (one after the other): the same chunks, scores and
/// ranks in each list.
fn hybrid_search_is_the_same_side_by_side_as_one_after_the_other(data: &Path, library: &str) {
    let config = quarry_index::EmbedderConfig::default_model().unwrap();
    let embedder = std::sync::Arc::new(std::sync::Mutex::new(quarry_index::Embedder::new(&config).unwrap()));
    let queries = ["Apple iPhone net sales by quarter", "NVIDIA data center revenue", "engine failure after takeoff"];
    let search = |runtime: tokio::runtime::Runtime| {
        runtime.block_on(async {
            let data = quarry_store::DataDir::at(data);
            let mut library = quarry_store::Library::open_read(&data, library).await.unwrap();
            // Side by side wherever the runtime allows it, though the sample library is small.
            library.set_side_by_side_from(0);
            let mut found = Vec::new();
            for query in queries {
                let hits = library.search(query, quarry_store::SearchMode::Hybrid, 8, Some(&embedder)).await.unwrap();
                found.push(
                    hits.iter().map(|h| (h.chunk.chunk_id, h.score, h.bm25_rank, h.dense_rank)).collect::<Vec<_>>(),
                );
            }
            found
        })
    };
    let one_after_the_other = search(tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap());
    let side_by_side =
        search(tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap());
    assert_eq!(side_by_side, one_after_the_other);
    for hits in &side_by_side {
        assert_eq!(hits.len(), 8);
        assert!(hits.iter().any(|h| h.2.is_some()) && hits.iter().any(|h| h.3.is_some()), "both lists fused: {hits:?}");
    }
}

/// Lines of `file` (an `add --json` event log being written) whose event is `name`.
fn events_named(file: &Path, name: &str) -> usize {
    let needle = format!("\"event\":\"{name}\"");
    std::fs::read_to_string(file).map(|t| t.lines().filter(|l| l.contains(&needle)).count()).unwrap_or(0)
}

#[test]
fn kill_minus_nine_at_random_moments_never_leaves_a_half_indexed_library() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let docs = tmp.path().join("docs");
    // Enough work for the kills to land in every phase: parse, embed, each commit of a group. Eleven
    // documents (a ZIP's members among them) in groups of 16 chunks: several commits, and the longer
    // documents span more than one group. (A 49-page filing beside them tripled the embedding time and
    // added no kind of moment.)
    for name in ["ntsb", "office", "zh"] {
        copy_dir(&sample_library().join(name), &docs.join(name));
    }
    let docs_arg = docs.to_string_lossy().into_owned();
    run(&data, &["library", "create", "crash"]);

    // Reference: a run that is never killed.
    let reference_data = tmp.path().join("reference");
    run(&reference_data, &["library", "create", "crash"]);
    let started = Instant::now();
    ingest(&reference_data, &["add", &docs_arg, "--library", "crash", "--json", "--batch-chunks", "16"]);
    let full_run = started.elapsed();
    let expected = check_consistent(&reference_data, "crash");
    assert!(expected.0 >= 10, "{expected:?}");

    // Random moments, seeded from the clock but printed, so a failing run can be replayed.
    let seed = crate::run_seed("QUARRY_KILL_SEED");
    eprintln!("kill test seed {seed}, full run {full_run:?}");
    let mut random = fastrand::Rng::with_seed(seed);
    let mut next = || random.u64(..);
    let events = tmp.path().join("events.jsonl");
    let (mut completed_runs, mut commit_kills) = (0, 0);
    // Twelve runs: six at a random moment, six just after a group's vectors (24 before: half the CI
    // time for the same kinds of moment; the seed changes every run, so CI covers more over time).
    for run_no in 0..12 {
        if run_no % 2 == 1 && check_consistent(&data, "crash").0 > 0 {
            // Odd runs aim at a commit; start them from an empty library so the groups they wait for
            // exist (a resumed run only has the documents left over, often a single group).
            run(&data, &["library", "delete", "crash", "--yes"]);
            run(&data, &["library", "create", "crash"]);
        }
        let mut child = quarry(&data)
            .args(["add", &docs_arg, "--library", "crash", "--json", "--batch-chunks", "16"])
            .stdout(std::fs::File::create(&events).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Even runs: a random moment. Odd runs: just after a group's vectors are computed, when the
        // LanceDB and tantivy writes of that group are under way.
        let moment = if run_no % 2 == 0 {
            let delay = Duration::from_millis(100 + next() % (full_run.as_millis() as u64).max(200));
            std::thread::sleep(delay);
            format!("after {delay:?}")
        } else {
            let group = 1 + (next() % 2) as usize;
            let wait_from = Instant::now();
            while events_named(&events, "embedding") < group
                && child.try_wait().unwrap().is_none()
                && wait_from.elapsed() < full_run * 2
            {
                std::thread::sleep(Duration::from_millis(2));
            }
            let delay = Duration::from_millis(next() % 120);
            std::thread::sleep(delay);
            format!("{delay:?} after embedding group {group}")
        };
        let killed = child.try_wait().unwrap().is_none();
        let _ = child.kill(); // SIGKILL on Unix
        let _ = child.wait();
        let (embedded, committed) = (events_named(&events, "embedding"), events_named(&events, "indexed"));
        if killed && embedded > committed {
            commit_kills += 1; // vectors of a group computed, its commit not finished
        }
        let (indexed, _) = check_consistent(&data, "crash");
        eprintln!("run {run_no}: killed {moment}: {killed}; groups embedded {embedded}, committed {committed}; {indexed} documents searchable");
        if !killed {
            completed_runs += 1;
        }
        if indexed == expected.0 {
            // Done: start over so later kills land mid-ingest again.
            run(&data, &["library", "delete", "crash", "--yes"]);
            run(&data, &["library", "create", "crash"]);
        }
    }
    assert!(completed_runs < 5, "most runs must really be killed mid-ingest");
    assert!(commit_kills >= 3, "kills must land during commits too ({commit_kills})");
    // A write open repairs, and a last add completes the rest with the same result as the clean run.
    ingest(&data, &["add", &docs_arg, "--library", "crash", "--json"]);
    assert_eq!(check_consistent(&data, "crash"), expected);
    let s = status(&data, "crash");
    assert_eq!((count(&s, "pending"), count(&s, "keyword_only")), (0, 0), "{s}");
    assert_eq!(s["waiting_chunks"].as_u64(), Some(0), "every chunk embedded: {s}");
    assert_eq!(s["chunks"].as_u64(), s["keyword_chunks"].as_u64(), "nothing half-indexed remains: {s}");
}

/// What a `kill -9` leaves when a commit group ends inside a ZIP archive: its first member indexed, the
/// next ones `pending` (their group's commit cut off), the archive's own row (written after all its
/// members) missing. The next `add` must read the archive again and end with every member, as an
/// uninterrupted run does; it once took the archive for unchanged and lost the members for good.
#[test]
fn an_archive_cut_off_between_its_members_by_a_kill_is_read_again() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let zip = tmp.path().join("more-ntsb-reports.zip");
    std::fs::copy(sample_library().join("ntsb/more-ntsb-reports.zip"), &zip).unwrap();
    let zip_arg = zip.to_string_lossy().into_owned();
    run(&data, &["library", "create", "cut"]);
    ingest(&data, &["add", &zip_arg, "--library", "cut", "--json"]);
    let expected = check_consistent(&data, "cut");
    assert!(expected.0 >= 2, "the archive has several members: {expected:?}");

    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let dir = quarry_store::DataDir::at(&data);
        let library = quarry_store::Library::open_read(&dir, "cut").await.unwrap();
        let mut rows: Vec<quarry_store::DocumentRecord> = library.documents().cloned().collect();
        rows.sort_by(|a, b| a.path.cmp(&b.path));
        let (archive, members): (Vec<_>, Vec<_>) = rows.into_iter().partition(|d| d.path == d.file_path);
        assert_eq!(archive.len(), 1, "one row for the archive itself");
        library.store().delete_documents(&[archive[0].document_id.clone()]).await.unwrap();
        let cut: Vec<String> = members[1..].iter().map(|d| d.document_id.clone()).collect();
        library.store().set_state(&cut, quarry_store::DocumentState::Pending).await.unwrap();
    });
    assert_eq!(check_consistent(&data, "cut").0, 1, "only the first member is left indexed");

    let (events, summary) = ingest(&data, &["add", &zip_arg, "--library", "cut", "--json"]);
    assert_eq!(check_consistent(&data, "cut"), expected, "{events:?}");
    assert_eq!(summary["skipped"].as_u64(), Some(0), "the member already in is not a duplicate: {summary}");
    let s = status(&data, "cut");
    assert_eq!((count(&s, "pending"), s["archives"].as_u64()), (0, Some(1)), "{s}");
}

/// A library whose PDFs were read by an older reading of the format (rows written before the
/// `extraction_version` stamp, as every library made before 2026-11-27 has them): `sync` reads those files
/// again, same bytes and same document ids, and leaves the other formats alone; chunks whose text comes
/// out as before keep their embeddings (here all: the reading is the same) instead of being embedded
/// again; a second `sync` has nothing to do.
#[test]
fn sync_reads_again_the_files_an_older_parser_read() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let docs = tmp.path().join("docs");
    copy_into(
        ["ntsb/more-ntsb-reports.zip", "ntsb/20080102X00002.pdf", "office/handbook-1p.docx"]
            .map(|f| sample_library().join(f)),
        &docs,
    );
    let docs_arg = docs.to_string_lossy().into_owned();
    run(&data, &["library", "create", "old"]);
    ingest(&data, &["add", &docs_arg, "--library", "old", "--json"]);
    let expected = check_consistent(&data, "old");
    assert_eq!(expected.0, 5, "3 archive members, a PDF and a DOCX: {expected:?}");

    // Make the rows look as an older Quarry wrote them: no stamp.
    let rows = |data: &Path| -> Vec<quarry_store::DocumentRecord> {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let dir = quarry_store::DataDir::at(data);
            let library = quarry_store::Library::open_read(&dir, "old").await.unwrap();
            let mut rows: Vec<quarry_store::DocumentRecord> = library.documents().cloned().collect();
            rows.sort_by(|a, b| a.path.cmp(&b.path));
            rows
        })
    };
    let before = rows(&data);
    assert!(before.iter().all(|d| d.extraction_version == Some(quarry_ingest::extraction_version(&d.format))));
    let vectors = |data: &Path| -> std::collections::BTreeMap<u64, Vec<f32>> {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let dir = quarry_store::DataDir::at(data);
            let library = quarry_store::Library::open_read(&dir, "old").await.unwrap();
            library.store().chunk_vectors(None).await.unwrap().into_iter().collect()
        })
    };
    let vectors_before = vectors(&data);
    let pdf_chunks: u64 = before.iter().filter(|d| d.format == "pdf").map(|d| d.chunk_count as u64).sum();
    assert!(pdf_chunks > 0);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let dir = quarry_store::DataDir::at(&data);
        let library = quarry_store::Library::open_read(&dir, "old").await.unwrap();
        let unstamped: Vec<quarry_store::DocumentRecord> =
            before.iter().cloned().map(|d| quarry_store::DocumentRecord { extraction_version: None, ..d }).collect();
        let ids: Vec<String> = unstamped.iter().map(|d| d.document_id.clone()).collect();
        library.store().delete_documents(&ids).await.unwrap();
        library.store().add_documents(&unstamped).await.unwrap();
    });
    assert!(rows(&data).iter().all(|d| d.extraction_version.is_none()));

    let (events, synced) = ingest(&data, &["sync", "--library", "old", "--json"]);
    let scanned = events.iter().find(|e| e["event"] == "scanned").expect("a scanned event");
    assert_eq!(scanned["reread"].as_u64(), Some(2), "the archive of PDFs and the PDF: {scanned}");
    assert_eq!(synced["reread"].as_u64(), Some(2), "{synced}");
    assert_eq!(synced["indexed"].as_u64(), Some(4), "the four PDFs, written again: {synced}");
    assert_eq!(synced["unchanged"].as_u64(), Some(1), "the DOCX is not read again: {synced}");
    assert_eq!(
        (synced["kept_embeddings"].as_u64(), synced["embedded_chunks"].as_u64()),
        (Some(pdf_chunks), Some(0)),
        "the same text read again keeps its embeddings: {synced}"
    );
    assert_eq!(vectors(&data), vectors_before, "every chunk has the vector it had");
    for key in ["removed", "skipped", "failed", "moved"] {
        assert_eq!(synced[key].as_u64(), Some(0), "{key}: {synced}");
    }
    assert_eq!(check_consistent(&data, "old"), expected, "every document whole again: {events:?}");
    let after = rows(&data);
    let ids = |rows: &[quarry_store::DocumentRecord]| {
        rows.iter().map(|d| (d.path.clone(), d.document_id.clone())).collect::<Vec<_>>()
    };
    assert_eq!(ids(&after), ids(&before), "same documents under the same ids");
    for d in &after {
        let expected = if d.format == "docx" { None } else { Some(quarry_ingest::extraction_version(&d.format)) };
        assert_eq!(d.extraction_version, expected, "{}", d.path);
    }
    assert!(!search(&data, "old", "aircraft", "hybrid").is_empty(), "the PDFs are searchable again");

    let (_, again) = ingest(&data, &["sync", "--library", "old", "--json"]);
    assert_eq!(
        (again["reread"].as_u64(), again["indexed"].as_u64(), again["unchanged"].as_u64()),
        (Some(0), Some(0), Some(3)),
        "{again}"
    );
}

/// A file an older Quarry refused as an unsupported format (an `.eml` before e-mail was read: a failed
/// row, unstamped) is read by the next `sync` — the message and its attachment indexed and searchable —
/// and a second `sync` leaves it alone.
#[test]
fn sync_reads_a_file_an_older_quarry_refused_as_unsupported() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::copy(sample_library().join("office/handbook-1p.docx"), docs.join("handbook-1p.docx")).unwrap();
    let docs_arg = docs.to_string_lossy().into_owned();
    run(&data, &["library", "create", "mail"]);
    ingest(&data, &["add", &docs_arg, "--library", "mail", "--json"]);

    // The message arrives, and an older Quarry's refusal of it is what the library holds.
    let message = docs.join("harbour-survey.eml");
    std::fs::write(
        &message,
        "From: Surveyor <survey@example.org>\r\nTo: harbour@example.org\r\nSubject: Harbour survey\r\n\
         MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"b\"\r\n\r\n--b\r\n\
         Content-Type: text/plain\r\n\r\nThe harbour survey counted forty-two moorings in the inner basin.\r\n\
         --b\r\nContent-Type: text/csv\r\nContent-Disposition: attachment; filename=\"moorings.csv\"\r\n\r\n\
         basin,moorings\r\ninner,42\r\nouter,17\r\n--b--\r\n",
    )
    .unwrap();
    let path = message.to_string_lossy().into_owned();
    let hash = quarry_store::hash_file(&message).unwrap();
    let modified_ms = std::fs::metadata(&message)
        .unwrap()
        .modified()
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let refused = quarry_store::DocumentRecord {
        document_id: hash.clone(),
        origin_id: hash,
        path: path.clone(),
        file_path: path.clone(),
        format: "unknown".into(),
        byte_len: std::fs::metadata(&message).unwrap().len(),
        page_count: None,
        chunk_count: 0,
        char_count: 0,
        state: quarry_store::DocumentState::Failed,
        error: Some("failed: unsupported format: e-mail message (.eml)".into()),
        warnings: None,
        added_ms: modified_ms,
        modified_ms,
        context: None,
        extraction_version: None,
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let dir = quarry_store::DataDir::at(&data);
        let library = quarry_store::Library::open_read(&dir, "mail").await.unwrap();
        library.store().add_documents(&[refused]).await.unwrap();
    });
    assert_eq!(count(&status(&data, "mail"), "failed"), 1);

    let (events, synced) = ingest(&data, &["sync", "--library", "mail", "--json"]);
    assert_eq!(synced["reread"].as_u64(), Some(1), "{synced}");
    assert_eq!(synced["indexed"].as_u64(), Some(2), "the message and its attachment: {synced}");
    assert_eq!(synced["unchanged"].as_u64(), Some(1), "the DOCX: {synced}");
    let s = status(&data, "mail");
    assert_eq!((count(&s, "failed"), count(&s, "indexed")), (0, 3), "{s} {events:?}");
    let hits = search(&data, "mail", "moorings in the inner basin", "hybrid");
    let paths: Vec<&str> = hits.iter().filter_map(|h| h["path"].as_str()).collect();
    assert!(paths.iter().any(|p| *p == path), "the message: {paths:?}");
    assert!(paths.iter().any(|p| p.ends_with("harbour-survey.eml!/moorings.csv")), "its attachment: {paths:?}");

    let (_, again) = ingest(&data, &["sync", "--library", "mail", "--json"]);
    assert_eq!((again["reread"].as_u64(), again["unchanged"].as_u64()), (Some(0), Some(2)), "{again}");
}

/// `kill -9` during `sync` (a new file, a changed file, a vanished file), `remove` and `library reindex`,
/// each at 2 random moments from the same starting library: after every kill the library is consistent
/// (what `check_consistent` asserts: every indexed document whole in LanceDB and tantivy, searches see
/// nothing half-written), and running the command again ends exactly where an uninterrupted run ends.
#[test]
fn kill_minus_nine_during_sync_remove_and_reindex_never_leaves_a_half_indexed_library() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    copy_dir(&sample_library().join("ntsb"), &docs.join("ntsb"));
    copy_dir(&sample_library().join("office"), &docs.join("office"));
    let docs_arg = docs.to_string_lossy().into_owned();
    let office = docs.join("office").to_string_lossy().into_owned();
    let start = tmp.path().join("start");
    run(&start, &["library", "create", "crash"]);
    ingest(&start, &["add", &docs_arg, "--library", "crash", "--json"]);

    // Work for sync: a new document, a changed report (another report's bytes), a vanished report.
    std::fs::copy(sample_library().join("zh/china-unicom-2022-annual-report-summary.md"), docs.join("ntsb/new.md"))
        .unwrap();
    std::fs::copy(docs.join("ntsb/20080108X00029.pdf"), docs.join("ntsb/20080102X00005.pdf")).unwrap();
    std::fs::remove_file(docs.join("ntsb/20080117X00072.pdf")).unwrap();

    let seed = crate::run_seed("QUARRY_KILL_SEED");
    eprintln!("kill test seed {seed}");
    let mut random = fastrand::Rng::with_seed(seed);
    let mut next = move || random.u64(..);
    let fresh = |from: &Path, to: &Path| {
        let _ = std::fs::remove_dir_all(to);
        copy_dir(from, to);
    };
    let sync: &[&str] = &["sync", "--library", "crash", "--json"];
    let remove: &[&str] = &["remove", &office, "--library", "crash"];
    let reindex: &[&str] = &["library", "reindex", "crash"];
    let mut before = start.clone();
    for (step, args) in [("sync", sync), ("remove", remove), ("reindex", reindex)] {
        // The uninterrupted run: its time and its end state.
        let reference = tmp.path().join(format!("{step}-reference"));
        fresh(&before, &reference);
        let started = Instant::now();
        run(&reference, args);
        let full_run = started.elapsed();
        let expected = check_consistent(&reference, "crash");
        let expected_status = status(&reference, "crash");
        for attempt in 0..2 {
            let data = tmp.path().join(format!("{step}-{attempt}"));
            fresh(&before, &data);
            let mut child = quarry(&data).args(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
            let delay = Duration::from_millis(50 + next() % (full_run.as_millis() as u64).max(100));
            std::thread::sleep(delay);
            let killed = child.try_wait().unwrap().is_none();
            let _ = child.kill(); // SIGKILL on Unix
            let _ = child.wait();
            let after_kill = check_consistent(&data, "crash");
            eprintln!(
                "{step} {attempt}: killed after {delay:?} (of {full_run:?}): {killed}; {after_kill:?} consistent"
            );
            let again = quarry(&data).args(args).output().unwrap();
            let message = String::from_utf8_lossy(&again.stderr);
            // A kill after the last document was removed leaves nothing to remove: said so, not an error.
            let nothing_left = step == "remove" && message.contains("has no document at");
            assert!(again.status.success() || nothing_left, "{step} again after a kill failed: {message}");
            assert_eq!(check_consistent(&data, "crash"), expected, "{step} after a kill ends as without one");
            let s = status(&data, "crash");
            assert_eq!(s["documents"], expected_status["documents"], "{step}: {s}");
            assert_eq!(s["chunks"].as_u64(), s["keyword_chunks"].as_u64(), "{step}: nothing half-indexed: {s}");
        }
        before = reference;
    }
}

/// A `kill -9` after a group's vectors were written but before its documents were marked `indexed`
/// leaves `keyword_only` documents with no chunk waiting (what the kill test above hit once in CI, at
/// 12.99 s of 13.8 s): the next `sync`, with no file changed, marks them `indexed`.
#[test]
fn a_run_killed_between_its_last_vectors_and_the_indexed_mark_is_finished_by_the_next_sync() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let docs = tmp.path().join("docs");
    copy_dir(&sample_library().join("office"), &docs);
    run(&data, &["library", "create", "late"]);
    ingest(&data, &["add", &docs.to_string_lossy(), "--library", "late", "--json"]);
    let whole = status(&data, "late");
    assert_eq!((count(&whole, "indexed"), whole["waiting_chunks"].as_u64()), (2, Some(0)), "{whole}");

    // The state the kill leaves: every vector written, one document still `keyword_only`.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let dir = quarry_store::DataDir::at(&data);
        let library = quarry_store::Library::open_read(&dir, "late").await.unwrap();
        let one = library.documents().next().unwrap().document_id.clone();
        library.store().set_state(&[one], quarry_store::DocumentState::KeywordOnly).await.unwrap();
    });
    let killed = status(&data, "late");
    assert_eq!((count(&killed, "keyword_only"), killed["waiting_chunks"].as_u64()), (1, Some(0)), "{killed}");

    ingest(&data, &["sync", "--library", "late", "--json"]);
    let after = status(&data, "late");
    assert_eq!(after["documents"], whole["documents"], "{after}");
    assert_eq!(after["chunks"], whole["chunks"], "{after}");
}

/// `quarry add DOCS --library LIBRARY --json --batch-chunks N` running in the background, its output
/// discarded: for tests that search or kill while it works.
fn spawn_add(data: &Path, docs: &Path, library: &str, batch_chunks: usize) -> std::process::Child {
    quarry(data)
        .args(["add", docs.to_str().unwrap(), "--library", library, "--json", "--batch-chunks"])
        .arg(batch_chunks.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn searches_work_while_an_ingest_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let docs = two_filings(tmp.path());
    run(&data, &["library", "create", "busy"]);
    let mut child = spawn_add(&data, &docs, "busy", 32);
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

/// Issue 40: a document is searchable by keyword as soon as it is read, before its chunks are embedded;
/// hybrid search ranks the waiting chunks by BM25 and dense search leaves them out; a run killed while
/// embedding leaves them searchable by keyword, and the next `add` embeds only what waits.
#[test]
fn documents_are_found_by_keyword_before_their_embeddings_and_a_killed_run_leaves_them_so() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let docs = two_filings(tmp.path());
    run(&data, &["library", "create", "early"]);
    let mut child = spawn_add(&data, &docs, "early", 64);
    // Wait for the embedding phase: every filing searchable by keyword, chunks waiting.
    let started = Instant::now();
    let waiting_status = loop {
        let s = status(&data, "early");
        if count(&s, "keyword_only") == 2 && s["waiting_chunks"].as_u64().unwrap_or(0) > 0 {
            break s;
        }
        assert!(child.try_wait().unwrap().is_none(), "the ingest ended before a status saw chunks waiting: {s}");
        assert!(started.elapsed() < Duration::from_secs(600), "{s}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let hits = search(&data, "early", "NVIDIA data center revenue", "bm25");
    assert!(
        hits.iter().any(|h| h["path"].as_str().unwrap().contains("NVDA")),
        "keyword search finds the filings: {hits:?}"
    );
    let hybrid = search(&data, "early", "NVIDIA data center revenue", "hybrid");
    assert!(!hybrid.is_empty(), "hybrid search ranks waiting chunks by BM25");
    child.kill().unwrap();
    child.wait().unwrap();

    let (searchable, _) = check_consistent(&data, "early");
    let killed = status(&data, "early");
    let waiting = killed["waiting_chunks"].as_u64().unwrap();
    assert!(waiting > 0, "the kill landed while chunks waited: {killed} (status before: {waiting_status})");
    assert_eq!((count(&killed, "keyword_only") + count(&killed, "indexed"), searchable), (2, 2), "{killed}");
    // Searchable by keyword after the kill; dense search finds only embedded chunks (none of a waiting
    // document that has no embedded chunk yet).
    assert!(!search(&data, "early", "NVIDIA data center revenue", "bm25").is_empty());

    let (events, summary) = ingest(&data, &["add", docs.to_str().unwrap(), "--library", "early", "--json"]);
    assert_eq!(summary["indexed"].as_u64(), Some(0), "no file is read again: {summary}");
    assert_eq!(summary["embedded_chunks"].as_u64(), Some(waiting), "only the waiting chunks are embedded: {summary}");
    assert!(events.iter().any(|e| e["event"] == "keyword_ready" && e["documents"] == 0), "{events:?}");
    let done = status(&data, "early");
    assert_eq!((count(&done, "indexed"), done["waiting_chunks"].as_u64()), (2, Some(0)), "{done}");
    assert_eq!(check_consistent(&data, "early").0, 2);
    assert!(done["waiting_eta_seconds"].is_null(), "{done}");
    let toml = std::fs::read_to_string(data.join("libraries/early/library.toml")).unwrap();
    assert!(toml.contains("chunks_per_second"), "the embedding speed is recorded for the estimate: {toml}");
}

#[test]
fn remove_takes_documents_out_and_keeps_them_out_of_sync() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let docs = tmp.path().join("docs");
    copy_dir(&sample_library().join("office"), &docs.join("office"));
    std::fs::copy(sample_library().join("sec-10-q/2023 Q1 NVDA.pdf"), docs.join("nvda.pdf")).unwrap();
    let docs_arg = docs.to_string_lossy().into_owned();
    run(&data, &["library", "create", "lib"]);
    ingest(&data, &["add", &docs_arg, "--library", "lib", "--json"]);
    let before = status(&data, "lib");
    assert_eq!(count(&before, "indexed"), 3, "{before}");
    assert!(search(&data, "lib", "NVIDIA data center revenue", "bm25")
        .iter()
        .any(|h| h["path"].as_str().unwrap().ends_with("nvda.pdf")));

    // A file inside a source folder: its document goes, and sync does not bring it back.
    let nvda = docs.join("nvda.pdf");
    let removed = json(&data, &["remove", nvda.to_str().unwrap(), "--library", "lib", "--json"]);
    assert_eq!(removed["documents"], 1, "{removed}");
    assert!(removed["chunks"].as_u64().unwrap() > 10, "{removed}");
    let after = status(&data, "lib");
    assert_eq!(count(&after, "indexed"), 2);
    assert_eq!(
        after["chunks"].as_u64().unwrap() + removed["chunks"].as_u64().unwrap(),
        before["chunks"].as_u64().unwrap()
    );
    assert_eq!(after["chunks"].as_u64(), after["keyword_chunks"].as_u64(), "both indexes lost the same chunks");
    for mode in ["bm25", "dense", "hybrid"] {
        assert!(
            search(&data, "lib", "NVIDIA data center revenue", mode)
                .iter()
                .all(|h| !h["path"].as_str().unwrap().ends_with("nvda.pdf")),
            "{mode}"
        );
    }
    let (_, synced) = ingest(&data, &["sync", "--library", "lib", "--json"]);
    assert_eq!((synced["indexed"].as_u64(), synced["removed"].as_u64()), (Some(0), Some(0)), "{synced}");
    assert!(nvda.exists(), "the file itself is not touched");

    // Adding it explicitly takes it back in.
    let (_, added) = ingest(&data, &["add", nvda.to_str().unwrap(), "--library", "lib", "--json"]);
    assert_eq!(added["indexed"], 1, "{added}");
    let (_, synced) = ingest(&data, &["sync", "--library", "lib", "--json"]);
    assert_eq!((synced["indexed"].as_u64(), synced["removed"].as_u64()), (Some(0), Some(0)), "{synced}");

    // A path the library does not have: a clear error, nothing removed.
    let output = quarry(&data).args(["remove", "/no/such/file.pdf", "--library", "lib"]).output().unwrap();
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("has no document at /no/such/file.pdf"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(count(&status(&data, "lib"), "indexed"), 3);

    // The whole source folder: everything goes and it is no longer a source.
    let removed = json(&data, &["remove", &docs_arg, "--library", "lib", "--json"]);
    assert_eq!(removed["documents"], 3, "{removed}");
    let s = status(&data, "lib");
    assert_eq!((count(&s, "indexed"), s["chunks"].as_u64()), (0, Some(0)), "{s}");
    let list = json(&data, &["library", "list", "--json"]);
    assert!(
        list[0]["sources"].as_array().unwrap().iter().all(|p| !p.as_str().unwrap().starts_with(&docs_arg)),
        "{list}"
    );
}

#[test]
fn a_second_writer_is_refused_with_a_clear_message() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let docs = two_filings(tmp.path());
    run(&data, &["library", "create", "busy"]);
    let events = tmp.path().join("events.jsonl");
    let mut first = quarry(&data)
        .args(["add", docs.to_str().unwrap(), "--library", "busy", "--json"])
        .stdout(std::fs::File::create(&events).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The scan comes after the lock is taken.
    while events_named(&events, "scanned") == 0 {
        assert!(first.try_wait().unwrap().is_none(), "the first add ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    let office = sample_library().join("office");
    for args in [
        vec!["add", office.to_str().unwrap(), "--library", "busy"],
        vec!["sync", "--library", "busy"],
        vec!["remove", docs.to_str().unwrap(), "--library", "busy"],
    ] {
        let output = quarry(&data).args(&args).output().unwrap();
        assert!(!output.status.success(), "{args:?} must wait its turn");
        let message = String::from_utf8_lossy(&output.stderr);
        assert!(
            message
                .contains(&format!("library \"busy\" is being changed by another Quarry process (pid {})", first.id())),
            "{args:?}: {message}"
        );
    }
    assert!(first.wait().unwrap().success(), "the first add is not disturbed");
    let s = status(&data, "busy");
    assert_eq!(count(&s, "indexed"), 2, "{s}");
    run(&data, &["add", office.to_str().unwrap(), "--library", "busy"]);
}

/// Runs `script` with bash in new user and mount namespaces, where it may mount a small or read-only
/// tmpfs without privileges; `$QUARRY` is the binary under test. None when the system does not allow
/// unprivileged namespaces (the caller says so and skips).
fn in_mount_namespace(script: &str, env: &[(&str, &Path)]) -> Option<Output> {
    let allowed = Command::new("unshare").args(["--user", "--map-root-user", "--mount", "true"]).output();
    if !allowed.map(|o| o.status.success()).unwrap_or(false) {
        eprintln!("skipped: unshare --user --mount is not allowed here");
        return None;
    }
    let mut command = Command::new("unshare");
    command
        .args(["--user", "--map-root-user", "--mount", "bash", "-euc", script])
        .env("QUARRY", env!("CARGO_BIN_EXE_quarry"));
    command.env_remove("QUARRY_DATA_DIR").env_remove("QUARRY_EMBED_MODEL_DIR").env_remove("QUARRY_EMBED_MODEL_ID");
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().unwrap();
    assert!(output.status.success(), "namespace script failed:\n{}", String::from_utf8_lossy(&output.stderr));
    Some(output)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn a_full_disk_or_a_read_only_data_folder_leaves_the_library_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path();
    let data = work.join("data");
    run(&data, &["library", "create", "small"]);
    let handbook = sample_library().join("office/handbook-1p.docx");
    ingest(&data, &["add", handbook.to_str().unwrap(), "--library", "small", "--json"]);
    let before = check_consistent(&data, "small");
    assert_eq!(before.0, 1);
    let used_kib = folder_kib(&data);
    let docs = two_filings(work);

    // A disk with room for the library and half a megabyte more; the two 10-Qs need several.
    let script = format!(
        r#"mkdir -p "$WORK/mnt"
        mount -t tmpfs -o size={size}k tmpfs "$WORK/mnt"
        cp -a "$DATA" "$WORK/mnt/data"
        export QUARRY_DATA_DIR="$WORK/mnt/data"
        set +e
        "$QUARRY" add "$DOCS" --library small > "$WORK/add.out" 2> "$WORK/add.err"; echo $? > "$WORK/add.rc"
        "$QUARRY" search "employee handbook" --library small --json > "$WORK/search.out" 2> "$WORK/search.err"; echo $? > "$WORK/search.rc"
        cp -a "$WORK/mnt/data" "$WORK/after""#,
        size = used_kib + 512
    );
    if in_mount_namespace(&script, &[("WORK", work), ("DATA", &data), ("DOCS", &docs)]).is_none() {
        return;
    }
    let error = read(&work.join("add.err"));
    assert_eq!(read(&work.join("add.rc")).trim(), "1", "the add fails on a full disk: {error}");
    assert!(error.contains("No space left on device"), "{error}");
    assert!(error.contains("disk is full"), "the message says what to do: {error}");
    assert_eq!(read(&work.join("search.rc")).trim(), "0", "{}", read(&work.join("search.err")));
    assert!(read(&work.join("search.out")).contains("handbook-1p.docx"));
    assert_eq!(check_consistent(&work.join("after"), "small"), before, "the library is as it was");
    // Given room again, the same library completes the add.
    let after = work.join("after");
    let (_, summary) = ingest(&after, &["add", docs.to_str().unwrap(), "--library", "small", "--json"]);
    assert_eq!(summary["indexed"], 2, "{summary}");

    // A read-only data folder: changes are refused naming the folder, searches and status still work.
    let script = r#"mkdir -p "$WORK/ro"
        mount -t tmpfs -o size=64m tmpfs "$WORK/ro"
        cp -a "$DATA" "$WORK/ro/data"
        mount -o remount,ro "$WORK/ro"
        export QUARRY_DATA_DIR="$WORK/ro/data"
        set +e
        "$QUARRY" add "$DOCS" --library small > "$WORK/ro-add.out" 2> "$WORK/ro-add.err"; echo $? > "$WORK/ro-add.rc"
        "$QUARRY" search "employee handbook" --library small --json > "$WORK/ro-search.out" 2> "$WORK/ro-search.err"; echo $? > "$WORK/ro-search.rc"
        "$QUARRY" status --library small --json > "$WORK/ro-status.out" 2> "$WORK/ro-status.err"; echo $? > "$WORK/ro-status.rc""#;
    in_mount_namespace(script, &[("WORK", work), ("DATA", &data), ("DOCS", &docs)]);
    let error = read(&work.join("ro-add.err"));
    assert_eq!(read(&work.join("ro-add.rc")).trim(), "1", "{error}");
    assert!(error.contains("Read-only file system") && error.contains("ro/data/libraries/small"), "{error}");
    assert_eq!(read(&work.join("ro-search.rc")).trim(), "0", "{}", read(&work.join("ro-search.err")));
    assert!(read(&work.join("ro-search.out")).contains("handbook-1p.docx"));
    assert_eq!(read(&work.join("ro-status.rc")).trim(), "0", "{}", read(&work.join("ro-status.err")));
    assert_eq!(check_consistent(&data, "small"), before);
}

fn folder_kib(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        total += if meta.is_dir() { folder_kib(&entry.path()) * 1024 } else { meta.len().div_ceil(4096) * 4096 };
    }
    total / 1024
}

/// Polls `done` every 200 ms for up to `limit`; false when it never held.
fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}

#[test]
fn watch_follows_new_changed_and_deleted_files_until_interrupted() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let ntsb = sample_library().join("ntsb");
    std::fs::copy(ntsb.join("20080102X00002.pdf"), docs.join("first.pdf")).unwrap();
    run(&data, &["library", "create", "watched"]);
    ingest(&data, &["add", docs.to_str().unwrap(), "--library", "watched", "--json"]);
    let events = tmp.path().join("watch.jsonl");
    let mut watcher = quarry(&data)
        .args(["watch", "--library", "watched", "--json", "--quiet-secs", "0.5"])
        .stdout(std::fs::File::create(&events).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let limit = Duration::from_secs(180);
    assert!(wait_for(limit, || events_named(&events, "finished") >= 1), "the first sync finishes: {}", read(&events));

    // A new file, a new file in a new subfolder, then a deleted one: each burst becomes a sync.
    std::fs::copy(ntsb.join("20080108X00029.pdf"), docs.join("second.pdf")).unwrap();
    std::fs::create_dir_all(docs.join("later")).unwrap();
    std::fs::copy(ntsb.join("20080117X00072.pdf"), docs.join("later/third.pdf")).unwrap();
    assert!(
        wait_for(limit, || count(&status(&data, "watched"), "indexed") == 3),
        "new files are indexed: {}",
        status(&data, "watched")
    );
    assert!(events_named(&events, "changed") >= 1, "{}", read(&events));
    let paths: Vec<String> = search(&data, "watched", "aircraft accident pilot", "bm25")
        .iter()
        .map(|h| h["path"].as_str().unwrap().to_string())
        .collect();
    assert!(paths.iter().any(|p| p.ends_with("later/third.pdf")), "{paths:?}");

    std::fs::remove_file(docs.join("first.pdf")).unwrap();
    assert!(
        wait_for(limit, || count(&status(&data, "watched"), "indexed") == 2),
        "a deleted file leaves the library: {}",
        status(&data, "watched")
    );
    let paths: Vec<String> = search(&data, "watched", "aircraft accident pilot", "hybrid")
        .iter()
        .map(|h| h["path"].as_str().unwrap().to_string())
        .collect();
    assert!(!paths.iter().any(|p| p.ends_with("first.pdf")), "{paths:?}");

    // Ctrl-C (SIGINT) stops it cleanly, and the library needs no repair afterwards.
    let interrupted = Command::new("kill").args(["-INT", &watcher.id().to_string()]).status().unwrap();
    assert!(interrupted.success());
    assert!(wait_for(Duration::from_secs(30), || watcher.try_wait().unwrap().is_some()), "watch stops on Ctrl-C");
    assert!(watcher.wait().unwrap().success());
    assert_eq!(check_consistent(&data, "watched").0, 2);
}

/// Ctrl-C during `quarry add` (the app's Stop button uses the same stop flag): what was read is
/// committed, the files being read are stopped in the middle, the run ends cleanly saying it was stopped,
/// nothing is half indexed, and `quarry sync` reads exactly the files that were left.
#[test]
fn ctrl_c_stops_an_add_after_the_files_being_read_and_sync_reads_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let docs = tmp.path().join("docs");
    for name in ["ntsb", "office"] {
        copy_dir(&sample_library().join(name), &docs.join(name));
    }
    two_filings(&docs);
    let docs_arg = docs.to_string_lossy().into_owned();
    run(&data, &["library", "create", "stop"]);
    let events = tmp.path().join("events.jsonl");
    let child = quarry(&data)
        .args(["add", &docs_arg, "--library", "stop", "--json", "--workers", "1"])
        .stdout(std::fs::File::create(&events).unwrap())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while events_named(&events, "file_done") == 0 && started.elapsed() < Duration::from_secs(300) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(events_named(&events, "file_done") > 0, "no file finished within 5 minutes");
    let interrupted = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(interrupted.success());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "a stopped add is not a failure: {stderr}");
    assert!(stderr.contains("stopping: what was read is kept"), "{stderr}");
    let text = std::fs::read_to_string(&events).unwrap();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let scanned = lines.iter().find(|e| e["event"] == "scanned").expect("a scanned event");
    let first = lines.iter().find(|e| e["event"] == "finished").expect("a finished event");
    assert_eq!(first["cancelled"], true, "{first}");
    let to_read = scanned["to_read"].as_u64().unwrap();
    let files_done = events_named(&events, "file_done") as u64;
    assert!(files_done < to_read, "the stop came too late to leave anything: {files_done} of {to_read}");
    // What was read before the stop is searchable (by keyword at least).
    let (searchable_after_stop, _) = check_consistent(&data, "stop");
    assert_eq!(searchable_after_stop as u64, first["indexed"].as_u64().unwrap(), "{first}");

    // The stopped run recorded the folder as a source: sync reads the files it did not get to.
    let (_, second) = ingest(&data, &["sync", "--library", "stop", "--json"]);
    assert_eq!(second["cancelled"], false, "{second}");
    assert_eq!(
        second["files"].as_u64().unwrap() - second["unchanged"].as_u64().unwrap(),
        to_read - files_done,
        "{second}"
    );
    let (indexed, _) = check_consistent(&data, "stop");
    assert_eq!(indexed as u64, first["indexed"].as_u64().unwrap() + second["indexed"].as_u64().unwrap());
    let status = status(&data, "stop");
    assert_eq!(count(&status, "pending"), 0, "{status}");
    assert_eq!(
        (count(&status, "keyword_only"), status["waiting_chunks"].as_u64()),
        (0, Some(0)),
        "sync embedded what the stop left waiting: {status}"
    );
}

#[test]
fn a_chinese_library_on_e5_is_searched_beside_an_english_one_each_with_its_own_model() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let zh_docs = sample_library().join("zh");
    let en_doc = sample_library().join("office/handbook-1p.docx");
    // No model asked for: the first documents choose. Chinese text gets multilingual-e5-small, English
    // keeps MiniLM; a model named at creation is kept whatever the documents are.
    for name in ["zh", "en"] {
        run(&data, &["library", "create", name]);
    }
    run(&data, &["library", "create", "zh-minilm", "--embedder", "minilm"]);
    let (events, summary) = ingest(&data, &["add", zh_docs.to_str().unwrap(), "--library", "zh", "--json"]);
    assert!(summary["chunks"].as_u64().unwrap() > 0, "{summary}");
    let chosen = events.iter().find(|e| e["event"] == "model_chosen").expect("a model_chosen event");
    assert_eq!(chosen["model_id"], "multilingual-e5-small-q4");
    assert!(chosen["cjk_share"].as_f64().unwrap() > 0.5, "{chosen}");
    let (events, _) = ingest(&data, &["add", en_doc.to_str().unwrap(), "--library", "en", "--json"]);
    assert!(
        events.iter().any(|e| e["event"] == "model_chosen" && e["model_id"] == "all-minilm-l6-v2-int8"),
        "{events:#?}"
    );
    let (events, _) = ingest(&data, &["add", zh_docs.to_str().unwrap(), "--library", "zh-minilm", "--json"]);
    assert!(!events.iter().any(|e| e["event"] == "model_chosen"), "{events:#?}");
    let list = json(&data, &["library", "list", "--json"]);
    let model_of =
        |name: &str| list.as_array().unwrap().iter().find(|l| l["name"] == name).unwrap()["embedding"].clone();
    let (zh, en) = (model_of("zh"), model_of("en"));
    assert_eq!(
        (&zh["model_id"], &zh["dimension"]),
        (&serde_json::json!("multilingual-e5-small-q4"), &serde_json::json!(384))
    );
    assert_eq!(
        (&en["model_id"], &en["dimension"]),
        (&serde_json::json!("all-minilm-l6-v2-int8"), &serde_json::json!(384))
    );
    assert!(zh["automatic"].is_null() && en["automatic"].is_null(), "the choice is settled: {zh} {en}");
    assert_eq!(model_of("zh-minilm")["model_id"], "all-minilm-l6-v2-int8");

    // Without model options each library is searched with its own model.
    for mode in ["dense", "hybrid"] {
        let hits = search(&data, "zh", "中国联通2022年每股派发多少股利？", mode);
        assert!(hits.iter().take(3).any(|h| h["text"].as_str().unwrap().contains("0.109")), "{mode}: {hits:#?}");
    }
    // Both libraries in one research run: each retriever embeds the question with its own model.
    let output = run(
        &data,
        &[
            "ask",
            "中国联通2022年每股派发多少股利？",
            "--library",
            "zh",
            "--library",
            "en",
            "--agent",
            "naive",
            "--json",
            "--answer-tokens",
            "40",
            "--threads",
            "2",
        ],
    );
    let answer: Value = serde_json::from_str(String::from_utf8_lossy(&output.stdout).lines().last().unwrap()).unwrap();
    let sources = answer["sources"].as_array().unwrap();
    assert!(sources.iter().any(|s| s["passage"]["text"].as_str().unwrap().contains("0.109")), "{answer:#}");

    // An explicit other model for an existing library is refused with the way out, as before.
    let output = quarry(&data)
        .args(["add", en_doc.to_str().unwrap(), "--library", "zh", "--embedder", "minilm"])
        .output()
        .unwrap();
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success() && message.contains("quarry library reindex zh"), "{message}");
}

#[test]
fn problems_and_the_chosen_model_reach_stderr_when_it_is_not_a_terminal() {
    // Progress bars are hidden when stderr is a pipe or a file; the lines about single files must not be.
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(docs.join("broken.pdf"), b"%PDF-1.7\nthis is not a PDF body").unwrap();
    std::fs::write(
        docs.join("notes.txt"),
        "The fuel pump failed after 1,200 hours; the NTSB found a cracked housing.\n".repeat(20),
    )
    .unwrap();
    run(&data, &["library", "create", "notes"]);
    let output = quarry(&data).args(["add", docs.to_str().unwrap(), "--library", "notes"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.lines().any(|l| l.contains("broken.pdf") && l.contains("failed")), "{stderr}");
    assert!(stderr.contains("embedding model all-minilm-l6-v2-int8 (chosen from the first"), "{stderr}");
    assert!(stderr.contains("1 documents indexed"), "{stderr}");
}

/// A source that is missing as a whole — an unmounted drive, a folder renamed away, an empty mount point —
/// is reported and its documents kept; only files that vanished from a source sync can still see are
/// removed. (Before, sync emptied the library of an unplugged drive's documents.)
#[test]
fn sync_keeps_the_documents_of_a_source_that_is_missing_as_a_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let docs = tmp.path().join("drive");
    copy_dir(&sample_library().join("office"), &docs);
    let docs_arg = docs.to_string_lossy().into_owned();
    run(&data, &["library", "create", "lib"]);
    ingest(&data, &["add", &docs_arg, "--library", "lib", "--json"]);
    let indexed = count(&status(&data, "lib"), "indexed");
    assert!(indexed >= 2, "{indexed}");

    // Unplugged: the folder is gone.
    let away = tmp.path().join("elsewhere");
    std::fs::rename(&docs, &away).unwrap();
    let (events, synced) = ingest(&data, &["sync", "--library", "lib", "--json"]);
    assert_eq!(synced["removed"], 0, "{events:?}");
    assert_eq!(count(&status(&data, "lib"), "indexed"), indexed);
    let notice = events
        .iter()
        .find(|e| e["event"] == "unreadable" && e["path"] == docs_arg.as_str())
        .unwrap_or_else(|| panic!("no notice: {events:?}"));
    let message = notice["error"].as_str().unwrap();
    assert!(
        message.contains("source not reachable")
            && message.contains(&format!("kept its {indexed} documents"))
            && message.contains("quarry remove"),
        "{message}"
    );

    // An empty mount point: the folder is back but holds nothing.
    std::fs::create_dir(&docs).unwrap();
    let (events, synced) = ingest(&data, &["sync", "--library", "lib", "--json"]);
    assert_eq!(synced["removed"], 0, "{events:?}");
    assert!(
        events.iter().any(|e| e["event"] == "unreadable" && e["error"].as_str().unwrap().contains("holds no files")),
        "{events:?}"
    );

    // Plugged in again: nothing to do. Then one file deleted from a visible source is removed as before.
    std::fs::remove_dir(&docs).unwrap();
    std::fs::rename(&away, &docs).unwrap();
    let (_, synced) = ingest(&data, &["sync", "--library", "lib", "--json"]);
    assert_eq!((synced["indexed"].as_u64(), synced["removed"].as_u64()), (Some(0), Some(0)), "{synced}");
    let first = std::fs::read_dir(&docs).unwrap().flatten().map(|e| e.path()).find(|p| p.is_file()).unwrap();
    std::fs::remove_file(&first).unwrap();
    let (events, synced) = ingest(&data, &["sync", "--library", "lib", "--json"]);
    assert_eq!(synced["removed"], 1, "{events:?}");
    assert_eq!(count(&status(&data, "lib"), "indexed"), indexed - 1);
}

/// One folder holding a file of each format Quarry learnt to read for issue 39 — PowerPoint, EPUB,
/// OpenDocument text, RTF, Outlook and RFC 5322 e-mail (scans: the test below) — is added in one go:
/// every file is indexed, and a keyword search for words of each finds it cited by its slide, chapter,
/// heading or message subject.
#[test]
fn a_folder_of_slides_e_books_opendocument_rtf_and_mail_is_indexed_and_cited_by_slide_chapter_or_message() {
    let eval = crate::parse_command::eval_dir().join("B_documents");
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let docs = tmp.path().join("docs");
    let files = [
        "markitdown_test_files/test.pptx",
        "markitdown_test_files/test.epub",
        "unstructured_example-docs/simple.odt",
        "unstructured_example-docs/fake-doc.rtf",
        "unstructured_example-docs/fake-email.msg",
        "unstructured_example-docs/eml/family-day.eml",
    ];
    copy_into(files.map(|f| eval.join(f)), &docs);
    run(&data, &["library", "create", "formats"]);
    let (events, summary) = ingest(&data, &["add", docs.to_str().unwrap(), "--library", "formats", "--json"]);
    assert_eq!((summary["indexed"].as_u64(), summary["failed"].as_u64()), (Some(6), Some(0)), "{events:?}");
    for (query, citation) in [
        ("Nested Shape parsing", "test.pptx, Slide 5 > A Nested Shape parsing"),
        ("second chapter with a different style", "test.epub, Chapter 2: More Content"),
        ("favorite things Parrots Hockey", "simple.odt, These are a few of my favorite things:"),
        ("My first paragraph", "fake-doc.rtf"),
        ("Matthew Robinson", "fake-email.msg, Test Email"),
        ("Mallori Harrell", "family-day.eml, Family Day"),
    ] {
        let hits = search(&data, "formats", query, "bm25");
        let first = hits.first().unwrap_or_else(|| panic!("{query}: no hit"));
        assert_eq!(first["citation"].as_str(), Some(citation), "{query}: {hits:?}");
    }
}

/// Scanned pages become searchable: the C library's scan (a table set sideways) and docling's page on its
/// side are read by OCR in the parse workers, and a keyword search for words printed on them finds them
/// with their page, cited as recognised text ("p. 1, OCR"); a PDF with a text layer is cited without the
/// mark. With `--ocr off` the same files are refused as needing OCR.
#[test]
fn scanned_pages_are_read_by_ocr_and_found_by_keyword() {
    let eval = crate::parse_command::eval_dir();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let docs = tmp.path().join("docs");
    let files = [
        "C_private_library/docs/en_nih-clinical-trial-protocols/NCT06155240_Prot_SAP_000.pdf",
        "B_documents/docling_tests/ocr/sources/ocr_test_rotated_90.pdf",
    ];
    copy_into(files.map(|f| eval.join(f)), &docs);
    let docs_arg = docs.to_string_lossy().into_owned();
    run(&data, &["library", "create", "scans"]);
    let (events, summary) = ingest(&data, &["add", &docs_arg, "--library", "scans", "--json"]);
    assert_eq!((summary["indexed"].as_u64(), summary["failed"].as_u64()), (Some(2), Some(0)), "{events:?}");
    for (query, file) in [
        ("Study Protocol Class Procedures", "NCT06155240_Prot_SAP_000.pdf"),
        ("Docling bundles PDF document conversion", "ocr_test_rotated_90.pdf"),
    ] {
        let hits = search(&data, "scans", query, "bm25");
        let first = hits.first().unwrap_or_else(|| panic!("{query}: no hit"));
        assert!(first["path"].as_str().unwrap().ends_with(file), "{query}: {hits:?}");
        assert_eq!(first["page"].as_u64(), Some(1), "{query}: {first}");
        assert_eq!(first["citation"].as_str(), Some(format!("{file}, p. 1, OCR").as_str()), "{query}: {first}");
        assert_eq!(first["ocr"], true, "{query}: {first}");
    }
    // A page read from its text layer is cited without the mark.
    let handbook = sample_library().join("office/handbook-1p.docx");
    run(&data, &["add", handbook.to_str().unwrap(), "--library", "scans"]);
    let hits = search(&data, "scans", "handbook", "bm25");
    let docx = hits.iter().find(|h| h["path"].as_str().unwrap().ends_with("handbook-1p.docx")).unwrap();
    assert!(!docx["citation"].as_str().unwrap().contains("OCR"), "{docx}");

    run(&data, &["library", "create", "no-ocr"]);
    let (_, summary) = ingest(&data, &["add", &docs_arg, "--library", "no-ocr", "--ocr", "off", "--json"]);
    assert_eq!((summary["indexed"].as_u64(), summary["failed"].as_u64()), (Some(0), Some(2)), "{summary}");
    let failures = status(&data, "no-ocr")["failures"].to_string();
    assert!(failures.contains("no text layer (needs OCR)"), "{failures}");
}

/// `quarry status | head -1`: a command that only prints ends quietly when the program reading its
/// output goes away. Before, `println!` panicked on the closed pipe ("failed printing to stdout: Broken
/// pipe") and printed a backtrace.
#[test]
#[cfg(unix)]
fn a_printing_command_whose_reader_goes_away_ends_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    run(&data, &["library", "create", "lib"]);
    let note = tmp.path().join("note.md");
    std::fs::write(&note, "# Revenue\n\nRevenue for the quarter was $7.19 billion.\n").unwrap();
    run(&data, &["add", note.to_str().unwrap(), "--library", "lib"]);
    for args in [
        &["status", "--library", "lib"][..],
        &["search", "revenue", "--library", "lib"][..],
        &["library", "list"][..],
        &["ask", "What was revenue?", "--library", "lib", "--agent", "naive", "--answer-tokens", "16"][..],
    ] {
        let mut child = quarry(&data).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        // The reader goes away before anything is printed (the command takes far longer to start).
        drop(child.stdout.take());
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "quarry {args:?}: {stderr}");
        // Ended by SIGPIPE (13), as `cat` or `grep` would be, or done before it printed.
        assert!(output.status.success() || output.status.signal() == Some(13), "quarry {args:?}: {:?}", output.status);
    }
}
