//! `quarry ask` end to end with the embedded SmolLM2 GGUF model on real documents from the sample library:
//! every agent finishes, stays within its limits and cites passages that exist in the library. The
//! answers' quality is not asserted (a 135M model); the evaluation measures that.

use crate::library_command::{copy_dir, quarry, run, sample_library};
use serde_json::Value;
use std::path::Path;

/// Runs `quarry ask … --json` and returns (events, answer).
fn ask(data: &Path, args: &[&str]) -> (Vec<Value>, Value) {
    let mut all = vec!["ask"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--library", "ntsb", "--json", "--answer-tokens", "160", "--threads", "2"]);
    let output = run(data, &all);
    let lines: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let answer = lines.last().cloned().expect("output");
    assert_eq!(answer["event"], "answer", "the last line is the answer: {answer}");
    (lines, answer)
}

fn of<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event"] == kind).collect()
}

/// Every source of the answer is a chunk of the library, with the same text.
fn sources_exist(data: &Path, answer: &Value) {
    let sources = answer["sources"].as_array().unwrap();
    let ids: Vec<u64> = sources.iter().map(|s| s["passage"]["chunk_id"].as_u64().unwrap()).collect();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let stored = rt.block_on(async {
        let data = quarry_store::DataDir::at(data);
        let library = quarry_store::Library::open_read(&data, "ntsb").await.unwrap();
        library.store().chunks_by_id(&ids).await.unwrap()
    });
    for source in sources {
        let id = source["passage"]["chunk_id"].as_u64().unwrap();
        let chunk = stored.iter().find(|c| c.chunk_id == id).unwrap_or_else(|| panic!("source {id} is not in the library"));
        assert_eq!(source["passage"]["text"].as_str().unwrap(), chunk.text);
        assert!(source["passage"]["path"].as_str().unwrap().contains(".pdf"));
        assert!(source["passage"]["page_start"].as_u64().is_some(), "PDF passages carry their page");
    }
    for citation in answer["citations"].as_array().unwrap() {
        assert!(sources.iter().any(|s| s["number"] == citation["number"]), "citation [{}] resolves to a source", citation["number"]);
    }
}

#[test]
fn every_agent_answers_with_the_embedded_model_and_cites_real_chunks() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let docs = tmp.path().join("ntsb");
    copy_dir(&sample_library().join("ntsb"), &docs);
    run(&data, &["library", "create", "ntsb"]);
    run(&data, &["add", docs.to_str().unwrap(), "--library", "ntsb", "--json"]);
    let question = "What was the probable cause of the accident, according to the NTSB?";

    // NaiveRAG: one search, one model call.
    let (events, answer) = ask(&data, &[question, "--agent", "naive"]);
    assert_eq!(answer["agent"], "naive");
    assert_eq!(answer["llm_calls"], 1);
    assert_eq!(of(&events, "llm_call").len(), 1);
    assert!(!answer["markdown"].as_str().unwrap().trim().is_empty());
    let streamed: String = of(&events, "answer_delta").iter().map(|e| e["text"].as_str().unwrap()).collect();
    assert_eq!(streamed.trim(), answer["markdown"].as_str().unwrap());
    sources_exist(&data, &answer);

    // DeepSearch: ≤ 4 sub-queries, ≤ 3 gap queries a round, ≤ 2 rounds; its sources are kept passages.
    let (events, answer) = ask(&data, &[question, "--agent", "deep", "--max-rounds", "2"]);
    let rounds = of(&events, "queries");
    assert!(!rounds.is_empty() && rounds.len() <= 2, "{rounds:?}");
    assert!(rounds[0]["queries"].as_array().unwrap().len() <= 4);
    for later in &rounds[1..] {
        assert!(later["queries"].as_array().unwrap().len() <= 3);
    }
    let kept: Vec<u64> = of(&events, "judged").iter().flat_map(|j| j["kept"].as_array().unwrap().iter().map(|p| p["chunk_id"].as_u64().unwrap())).collect();
    for source in answer["sources"].as_array().unwrap() {
        assert!(kept.contains(&source["passage"]["chunk_id"].as_u64().unwrap()), "sources come from kept passages");
    }
    assert_eq!(answer["llm_calls"].as_u64().unwrap() as usize, of(&events, "llm_call").len());
    sources_exist(&data, &answer);

    // ChainOfRAG: ≤ 2 steps of one query each.
    let (events, answer) = ask(&data, &[question, "--agent", "chain", "--max-rounds", "2"]);
    let steps = of(&events, "queries");
    assert!(!steps.is_empty() && steps.len() <= 2 && steps.iter().all(|s| s["queries"].as_array().unwrap().len() == 1));
    assert_eq!(answer["agent"], "chain");
    sources_exist(&data, &answer);

    // The router decides (or falls back to DeepSearch) and says which.
    let (events, answer) = ask(&data, &[question, "--max-rounds", "1"]);
    let routed = of(&events, "routed");
    assert_eq!(routed.len(), 1);
    assert_eq!(routed[0]["agent"], answer["agent"]);
    assert_eq!(routed[0]["libraries"], serde_json::json!(["ntsb"]));

    // A library that holds nothing on the question says so, without a model call.
    let output = quarry(&data).args(["ask", "zzzqqq xxyyzz", "--library", "ntsb", "--agent", "naive", "--mode", "bm25", "--json"]).output().unwrap();
    let last: Value = serde_json::from_str(String::from_utf8_lossy(&output.stdout).lines().last().unwrap()).unwrap();
    assert_eq!((last["nothing_found"].as_bool(), last["llm_calls"].as_u64()), (Some(true), Some(0)), "{last}");
}

#[test]
fn a_missing_model_file_or_library_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().to_path_buf();
    let output = quarry(&data).args(["ask", "anything"]).output().unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("no libraries"), "{}", String::from_utf8_lossy(&output.stderr));
    run(&data, &["library", "create", "empty"]);
    let output = quarry(&data).args(["ask", "anything", "--model", "/nonexistent/model.gguf", "--agent", "naive"]).output().unwrap();
    assert!(!output.status.success());
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(message.contains("/nonexistent/model.gguf"), "{message}");
}
