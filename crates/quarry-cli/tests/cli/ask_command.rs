//! `quarry ask` end to end with the embedded SmolLM2 GGUF model on real documents from the sample library:
//! every agent finishes, stays within its limits and cites passages that exist in the library. The
//! answers' quality is not asserted (a 135M model); the evaluation measures that.

use crate::library_command::{copy_dir, copy_into, quarry, run, sample_library};
use crate::parse_command::eval_dir;
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
        let chunk =
            stored.iter().find(|c| c.chunk_id == id).unwrap_or_else(|| panic!("source {id} is not in the library"));
        assert_eq!(source["passage"]["text"].as_str().unwrap(), chunk.text);
        assert!(source["passage"]["path"].as_str().unwrap().contains(".pdf"));
        assert!(source["passage"]["page_start"].as_u64().is_some(), "PDF passages carry their page");
    }
    for citation in answer["citations"].as_array().unwrap() {
        assert!(
            sources.iter().any(|s| s["number"] == citation["number"]),
            "citation [{}] resolves to a source",
            citation["number"]
        );
    }
}

/// The report of `answer` parses as CommonMark with the four sections, an anchor for every citation, and
/// links that open the cited files relative to the report's folder.
fn check_report(report: &Path, answer: &Value) {
    let text = std::fs::read_to_string(report).unwrap_or_else(|e| panic!("{}: {e}", report.display()));
    let (headings, links) = headings_and_links(&text);
    assert_eq!(headings, ["Question", "Answer", "Sources", "Method"], "{text}");
    let folder = report.parent().unwrap();
    // (A link the model wrote into its answer is its own business; the report's are relative.)
    let files: Vec<&String> = links.iter().filter(|l| l.starts_with("../")).collect();
    assert_eq!(files.len(), answer["sources"].as_array().unwrap().len(), "a link per source: {text}");
    for link in files {
        let path = link.split('#').next().unwrap().replace("%20", " ");
        assert!(path.starts_with("../ntsb/"), "{link}");
        assert!(folder.join(&path).is_file(), "{link} opens a file");
    }
    for citation in answer["citations"].as_array().unwrap() {
        assert!(
            text.contains(&format!("<a id=\"source-{}\">", citation["number"])),
            "anchor for [{}]",
            citation["number"]
        );
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
    // The answer streams as the model writes it; the final text turns the passage headers the model
    // copied into their markers (or drops them when it changed their file name: "20080117X02009.pdf,
    // p. 3 (… · 20080130X02009)"), cuts a loop of lines alike to its first lines, puts back the numbers
    // it changed in words copied from a passage, and adds the markers the citation repair found (a line
    // copied from a passage cites it), nothing else.
    let streamed: String = of(&events, "answer_delta").iter().map(|e| e["text"].as_str().unwrap()).collect();
    let sources: Vec<quarry_agents::answer::Citation> = serde_json::from_value(answer["sources"].clone()).unwrap();
    let passages: Vec<quarry_core::Passage> = sources.into_iter().map(|c| c.passage).collect();
    let streamed = quarry_agents::answer::replace_copied_headers(streamed.trim(), &passages);
    let (streamed, _) = quarry_agents::answer::cut_repeated_lines(&streamed);
    let (streamed, _) = quarry_agents::copied::restore_copied_figures(&streamed, &passages);
    let strip = quarry_agents::answer::strip_citations;
    assert_eq!(strip(streamed.trim()), strip(answer["markdown"].as_str().unwrap()));

    // Without --json, on one terminal (stdout and stderr into one file): the report's path is the last
    // line. Before, "report: …" went to stderr while the streamed answer's last line still waited for its
    // line break, and printed ahead of it ("… [3].report: /…/sample-report.md" in the quick start).
    let plain = tmp.path().join("plain.txt");
    let out = std::fs::File::create(&plain).unwrap();
    let report = tmp.path().join("plain report.md");
    let status = quarry(&data)
        .args(["ask", question, "--agent", "naive", "--library", "ntsb", "--answer-tokens", "48", "--threads", "2"])
        .arg("--report")
        .arg(&report)
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .status()
        .unwrap();
    assert!(status.success());
    let text = std::fs::read_to_string(&plain).unwrap();
    let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
    assert_eq!(last, format!("report: {}", report.display()), "{text}");
    sources_exist(&data, &answer);

    // A question in Chinese over English reports: one clear line, no model call, no made-up answer
    // (keyword search finds "NTSB" in every report, so passages are found).
    let (_, answer) = ask(&data, &["根据 NTSB 报告，事故的可能原因是什么？", "--agent", "naive"]);
    assert_eq!(answer["llm_calls"], 0, "{answer}");
    let text = answer["markdown"].as_str().unwrap();
    assert!(text.contains("ask in the language of your documents") && !text.contains('\n'), "{text}");

    // DeepSearch: the question and ≤ 4 sub-queries, ≤ 3 gap queries a round, ≤ 2 rounds; its sources are kept passages.
    // It also writes a Markdown report next to the documents' folder.
    let report = tmp.path().join("reports/deep search.md");
    std::fs::create_dir_all(report.parent().unwrap()).unwrap();
    let (events, answer) =
        ask(&data, &[question, "--agent", "deep", "--max-rounds", "2", "--report", report.to_str().unwrap()]);
    check_report(&report, &answer);
    assert_eq!(of(&events, "report").len(), 1, "a report event names the file");
    let rounds = of(&events, "queries");
    assert!(!rounds.is_empty() && rounds.len() <= 2, "{rounds:?}");
    let first = rounds[0]["queries"].as_array().unwrap();
    assert!(first.len() <= 5 && first[0] == question, "{first:?}");
    for later in &rounds[1..] {
        assert!(later["queries"].as_array().unwrap().len() <= 3);
    }
    let kept: Vec<u64> = of(&events, "judged")
        .iter()
        .flat_map(|j| j["kept"].as_array().unwrap().iter().map(|p| p["chunk_id"].as_u64().unwrap()))
        .collect();
    for source in answer["sources"].as_array().unwrap() {
        assert!(kept.contains(&source["passage"]["chunk_id"].as_u64().unwrap()), "sources come from kept passages");
    }
    assert_eq!(answer["llm_calls"].as_u64().unwrap() as usize, of(&events, "llm_call").len());
    sources_exist(&data, &answer);

    // ChainOfRAG: the question's own search, then ≤ 2 steps of one query each.
    let (events, answer) = ask(&data, &[question, "--agent", "chain", "--max-rounds", "2"]);
    let searches = of(&events, "queries");
    assert!(
        searches.len() <= 3 && searches.iter().all(|s| s["queries"].as_array().unwrap().len() == 1),
        "{searches:?}"
    );
    assert_eq!(searches[0]["queries"][0], question);
    let steps = of(&events, "intermediate_answer");
    assert!(!steps.is_empty() && steps.len() <= 2, "{steps:?}");
    assert_eq!(answer["agent"], "chain");
    sources_exist(&data, &answer);

    // The router decides (or falls back to DeepSearch) and says which.
    let (events, answer) = ask(&data, &[question, "--max-rounds", "1"]);
    let routed = of(&events, "routed");
    assert_eq!(routed.len(), 1);
    assert_eq!(routed[0]["agent"], answer["agent"]);
    assert_eq!(routed[0]["libraries"], serde_json::json!(["ntsb"]));

    // A library that holds nothing on the question says so, without a model call.
    let output = quarry(&data)
        .args(["ask", "zzzqqq xxyyzz", "--library", "ntsb", "--agent", "naive", "--mode", "bm25", "--json"])
        .output()
        .unwrap();
    let last: Value = serde_json::from_str(String::from_utf8_lossy(&output.stdout).lines().last().unwrap()).unwrap();
    assert_eq!((last["nothing_found"].as_bool(), last["llm_calls"].as_u64()), (Some(true), Some(0)), "{last}");
}

#[test]
fn a_missing_model_file_or_library_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().to_path_buf();
    let output = quarry(&data).args(["ask", "anything"]).output().unwrap();
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("no libraries"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    run(&data, &["library", "create", "empty"]);
    // An empty library, with the default agent (the router) or a chosen one: one line saying so, no
    // model call, no answer.
    for agent in ["auto", "naive"] {
        let output = quarry(&data)
            .args(["ask", "What was the revenue?", "--library", "empty", "--agent", agent])
            .output()
            .unwrap();
        assert!(!output.status.success());
        assert!(!String::from_utf8_lossy(&output.stdout).contains("tokens"), "no model call");
        let message = String::from_utf8_lossy(&output.stderr);
        let errors: Vec<&str> = message.lines().filter(|l| l.starts_with("quarry:")).collect();
        assert_eq!(
            errors,
            vec!["quarry: library \"empty\" holds no documents yet: add files to it, then ask again"],
            "{message}"
        );
    }
    let output = quarry(&data)
        .args(["ask", "anything", "--model", "/nonexistent/model.gguf", "--agent", "naive"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(message.contains("/nonexistent/model.gguf"), "{message}");
    // A missing model is told apart from other failures (its error code) and the advice says where to look.
    assert!(message.contains("`quarry models` lists the models installed"), "{message}");
    // A report that cannot be written is refused before any work.
    let output = quarry(&data)
        .args(["ask", "anything", "--agent", "naive", "--report", "/nonexistent/folder/r.md"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(message.contains("cannot write the report to /nonexistent/folder/r.md"), "{message}");
    // A genre layer Quarry does not have is refused, naming those it has.
    let output = quarry(&data).args(["ask", "anything", "--genre", "poetry"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "a usage error");
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(message.contains("unknown genre \"poetry\" (auto, general or financial)"), "{message}");
}

/// The default answer model, Qwen2.5-Coder-1.5B-Instruct (installed by scripts/setup.sh).
pub fn qwen_model() -> std::path::PathBuf {
    quarry_core::models::find_model_file("qwen2.5-coder-1.5b-instruct/model.gguf")
        .expect("Qwen2.5-Coder-1.5B (scripts/setup.sh installs it)")
}

/// A data folder under `tmp` with library `sec` of the quick start's two NVIDIA filings (copied to
/// `tmp/sec-10-q`): the first and second quarters of fiscal 2024.
pub fn quick_start_library(tmp: &Path) -> std::path::PathBuf {
    let data = tmp.join("data");
    let docs = tmp.join("sec-10-q");
    copy_into(["2023 Q1 NVDA.pdf", "2023 Q2 NVDA.pdf"].map(|n| sample_library().join("sec-10-q").join(n)), &docs);
    run(&data, &["library", "create", "sec"]);
    run(&data, &["add", docs.to_str().unwrap(), "--library", "sec", "--json"]);
    data
}

/// A data folder under `tmp` with the library `sample` made as `scripts/quickstart.sh` makes it: all of
/// `assets/sample-library` added (filings, NTSB reports and their ZIP, office files, Chinese text).
fn sample_library_as_the_quick_start_adds_it(tmp: &Path) -> std::path::PathBuf {
    let data = tmp.join("data");
    run(&data, &["library", "create", "sample"]);
    run(&data, &["add", sample_library().to_str().unwrap(), "--library", "sample", "--json"]);
    data
}

/// The test venv's Python (scripts/setup.sh: xllamacpp and the MCP SDK): `$QUARRY_PYTHON`, else the
/// set-up script's default place.
pub fn test_python() -> String {
    std::env::var("QUARRY_PYTHON")
        .unwrap_or_else(|_| format!("{}/.cache/quarry/venv/bin/python", std::env::var("HOME").unwrap()))
}

/// A data folder under `tmp` with a library `ntsb` of the named sample NTSB reports (copied to `tmp/ntsb`).
fn ntsb_library(tmp: &Path, names: &[&str]) -> std::path::PathBuf {
    let data = tmp.join("data");
    let docs = tmp.join("ntsb");
    copy_into(names.iter().map(|n| sample_library().join("ntsb").join(n)), &docs);
    run(&data, &["library", "create", "ntsb"]);
    run(&data, &["add", docs.to_str().unwrap(), "--library", "ntsb", "--json"]);
    data
}

/// The `##` headings and the link destinations of a Markdown report, parsed with pulldown-cmark.
fn headings_and_links(text: &str) -> (Vec<String>, Vec<String>) {
    use pulldown_cmark::{Event, HeadingLevel, Parser, Tag, TagEnd};
    let (mut headings, mut links, mut in_h2) = (Vec::new(), Vec::new(), false);
    for event in Parser::new(text) {
        match event {
            Event::Start(Tag::Heading { level: HeadingLevel::H2, .. }) => {
                in_h2 = true;
                headings.push(String::new());
            }
            Event::End(TagEnd::Heading(_)) => in_h2 = false,
            Event::Text(t) if in_h2 => headings.last_mut().unwrap().push_str(&t),
            Event::Start(Tag::Link { dest_url, .. }) => links.push(dest_url.to_string()),
            _ => {}
        }
    }
    (headings, links)
}

/// Every network connection a command attempts, from `strace -f --seccomp-bpf -e
/// trace=connect,sendto,sendmsg,openat` (the seccomp filter stops the command only at those calls):
/// the AF_INET / AF_INET6 addresses of connects and of datagrams sent without one (a DNS lookup is one
/// or the other; Unix sockets are local by nature and not listed), and every file it opens that a
/// telemetry queue would use (`…/Microsoft/…`). The command runs as `quarry(data)` runs it (SmolLM2
/// answers), in offline mode (the default).
fn connects_of(data: &Path, args: &[&str]) -> (std::process::Output, Vec<String>) {
    std::fs::create_dir_all(data).unwrap();
    let trace = data.join("connect.trace");
    let quarry_bin = quarry(data).get_program().to_owned();
    let mut command = std::process::Command::new("strace");
    command
        .args(["-f", "--seccomp-bpf", "-qq", "-e", "trace=connect,sendto,sendmsg,openat", "-o"])
        .arg(&trace)
        .arg(quarry_bin)
        .args(args);
    for (name, value) in quarry(data).get_envs() {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    command.env_remove("QUARRY_NETWORK").env_remove("ORT_DISABLE_TELEMETRY");
    let output = command.output().expect("strace (scripts/setup.sh installs it)");
    let text = std::fs::read_to_string(&trace)
        .unwrap_or_else(|e| panic!("no strace output ({e}): {}", String::from_utf8_lossy(&output.stderr)));
    let connects = text
        .lines()
        .filter(|l| {
            (["connect(", "sendto(", "sendmsg("].iter().any(|call| l.contains(call)) && l.contains("AF_INET"))
                || (l.contains("openat(") && l.contains("/Microsoft/"))
        })
        .map(str::to_string)
        .collect();
    (output, connects)
}

/// Offline, every command that reads documents or asks a model stays on this computer — not only
/// `ask --agent naive` (the test above): creating a library, adding and syncing files (parse workers,
/// the embedding model), search, DeepSearch and ChainOfRAG, a research report, removing a file,
/// re-indexing and `eval qa`. Each runs whole under `strace -f`; none may connect or send anywhere.
#[test]
fn offline_every_command_that_reads_documents_or_asks_a_model_opens_no_network_connection() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let docs = tmp.path().join("ntsb");
    copy_into(["20080102X00002.pdf", "20080102X00005.pdf"].map(|n| sample_library().join("ntsb").join(n)), &docs);
    let docs_arg = docs.to_string_lossy().into_owned();
    let removed = docs.join("20080102X00005.pdf").to_string_lossy().into_owned();
    let report = tmp.path().join("report.md").to_string_lossy().into_owned();
    let hotpot = eval_dir().join("A_benchmarks/hotpotqa_rpt_dev300");
    let hotpot = hotpot.to_string_lossy().into_owned();
    let question = "What was the probable cause of the accident?";
    let small = ["--answer-tokens", "32", "--threads", "2", "--max-rounds", "1"];
    let mut steps: Vec<Vec<&str>> = vec![
        vec!["library", "create", "ntsb"],
        vec!["add", &docs_arg, "--library", "ntsb", "--json"],
        vec!["sync", "--library", "ntsb", "--json"],
        vec!["search", question, "--library", "ntsb", "--json"],
        vec!["ask", question, "--library", "ntsb", "--agent", "deep", "--json"],
        vec!["ask", question, "--library", "ntsb", "--agent", "chain", "--json"],
        vec![
            "report",
            "The probable cause of the accident",
            "--library",
            "ntsb",
            "--max-sections",
            "1",
            "--max-rounds",
            "1",
            "--review-queries",
            "0",
            "--section-tokens",
            "48",
            "--out",
            &report,
        ],
        vec!["remove", &removed, "--library", "ntsb"],
        vec!["library", "reindex", "ntsb"],
        vec!["eval", "qa", "--set", &hotpot, "--agent", "naive", "--limit", "1", "--bm25-only", "--json"],
    ];
    for step in steps.iter_mut().filter(|s| s[0] == "ask" || s[0] == "eval") {
        step.extend_from_slice(&small);
    }
    for step in &steps {
        let (output, connects) = connects_of(&data, step);
        assert!(output.status.success(), "quarry {step:?} failed: {}", String::from_utf8_lossy(&output.stderr));
        assert_eq!(connects, Vec::<String>::new(), "offline `quarry {step:?}` reached the network");
    }
    assert!(std::fs::read_to_string(&report).unwrap().contains("## "), "the report was written");
}

#[test]
fn offline_mode_the_default_opens_no_network_connection() {
    let tmp = tempfile::tempdir().unwrap();
    let data = ntsb_library(tmp.path(), &["20080102X00002.pdf"]);

    // A whole question with the embedded model: no connection at all, not even a DNS lookup (ONNX Runtime's
    // telemetry made four, to mobile.events.data.microsoft.com, until Quarry turned it off).
    let question = "What was the probable cause of the accident?";
    let (output, connects) = connects_of(
        &data,
        &[
            "ask",
            question,
            "--library",
            "ntsb",
            "--agent",
            "naive",
            "--json",
            "--answer-tokens",
            "32",
            "--threads",
            "2",
        ],
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stdout).lines().last().unwrap().contains("\"event\":\"answer\""));
    assert_eq!(connects, Vec::<String>::new(), "offline ask connected somewhere");

    // A remote-looking LLM server is refused with a clear error before any connection or lookup.
    let (output, connects) = connects_of(
        &data,
        &[
            "ask",
            question,
            "--library",
            "ntsb",
            "--agent",
            "naive",
            "--llm-url",
            "https://llm.example.com/v1",
            "--llm-model",
            "m",
        ],
    );
    assert!(!output.status.success());
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(
        message.contains("offline mode")
            && message.contains("https://llm.example.com/v1")
            && message.contains("--network online"),
        "{message}"
    );
    assert!(connects.is_empty(), "{connects:?}");

    // Web search with a provider on another machine: turned off with a notice, the question is answered
    // from the library, and nothing is looked up.
    let (output, connects) = connects_of(
        &data,
        &[
            "ask",
            question,
            "--library",
            "ntsb",
            "--agent",
            "naive",
            "--json",
            "--answer-tokens",
            "32",
            "--threads",
            "2",
            "--web",
            "--web-url",
            "http://search.example.org",
        ],
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let notice: Value = stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["event"] == "web_notice")
        .expect("a web notice");
    assert!(notice["message"].as_str().unwrap().contains("web search is off: offline mode"), "{notice}");
    let answer: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(answer["libraries"], serde_json::json!(["ntsb"]));
    assert_eq!(connects, Vec::<String>::new(), "offline --web connected somewhere");
}

/// The HTML part of a real e-mail newsletter from shared/eval (unstructured's example documents).
fn newsletter_html() -> Vec<u8> {
    let path = eval_dir().join("B_documents/unstructured_example-docs/eml/email-replace-mime-encodings-error-3.eml");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mail = mailparse::parse_mail(&bytes).unwrap();
    fn find(part: &mailparse::ParsedMail) -> Option<Vec<u8>> {
        if part.ctype.mimetype == "text/html" {
            return part.get_body_raw().ok();
        }
        part.subparts.iter().find_map(find)
    }
    find(&mail).expect("an HTML part")
}

/// A SearXNG stand-in on loopback: `/search?format=json` lists the newsletter page, a missing page and a
/// hostile one; `/aws` serves the newsletter, `/deep` 150,000 nested `<div>`s (HTML a text renderer takes
/// minutes over). Returns the base URL.
fn searxng_on_loopback() -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let page = newsletter_html();
    let results = serde_json::json!({"query": "q", "number_of_results": 2, "results": [
        {"url": format!("{base}/aws"), "title": "AWS Innovate", "content": "Every Application Edition", "engine": "test"},
        {"url": format!("{base}/gone"), "title": "Gone", "content": "moved", "engine": "test"},
        {"url": format!("{base}/deep"), "title": "Deep", "content": "nested", "engine": "test"}]})
    .to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 8192];
            let n = stream.read(&mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).to_string();
            let target = head.split_whitespace().nth(1).unwrap_or("").to_string();
            let (status, kind, body): (&str, &str, Vec<u8>) = if target.starts_with("/search") {
                ("200 OK", "application/json", results.clone().into_bytes())
            } else if target == "/aws" {
                ("200 OK", "text/html; charset=utf-8", page.clone())
            } else if target == "/deep" {
                let depth = 150_000;
                let html =
                    format!("<html><body>{}<p>deep</p>{}</body></html>", "<div>".repeat(depth), "</div>".repeat(depth));
                ("200 OK", "text/html", html.into_bytes())
            } else {
                ("404 Not Found", "text/plain", b"missing".to_vec())
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(&body);
        }
    });
    base
}

#[test]
fn web_search_through_a_local_searxng_adds_pages_cited_by_url() {
    let tmp = tempfile::tempdir().unwrap();
    let data = ntsb_library(tmp.path(), &["20080102X00002.pdf"]);
    let base = searxng_on_loopback();
    let report = tmp.path().join("web.md");
    // A SearXNG on this computer works in offline mode (the default): only loopback is reached.
    let (events, answer) = ask(
        &data,
        &[
            "When is AWS Innovate Every Application Edition?",
            "--agent",
            "naive",
            "--web",
            "--web-url",
            &base,
            "--report",
            report.to_str().unwrap(),
        ],
    );
    assert_eq!(answer["libraries"], serde_json::json!(["ntsb", "web"]));
    // The provider received the typed question and nothing else (the default web query policy).
    assert_eq!(
        answer["web_queries"],
        serde_json::json!([{"source": "web", "query": "When is AWS Innovate Every Application Edition?", "sent": true}])
    );
    let sources = answer["sources"].as_array().unwrap();
    let web: Vec<&Value> = sources.iter().filter(|s| s["passage"]["library"] == "web").collect();
    assert!(!web.is_empty(), "web passages are among the sources: {sources:?}");
    assert!(
        web.iter().any(|s| s["passage"]["path"] == format!("{base}/aws")
            && s["passage"]["text"].as_str().unwrap().contains("October 06, 2022")),
        "{web:?}"
    );
    let notices: Vec<&str> = of(&events, "web_notice").iter().map(|e| e["message"].as_str().unwrap()).collect();
    assert!(notices.iter().any(|m| m.contains("/gone") && m.contains("HTTP 404")), "{notices:?}");
    // The hostile page is read in a parse worker, which its time budget stops (before, it was read in the
    // question's own process, with no budget).
    assert!(
        notices.iter().any(|m| m.contains("/deep") && m.contains("cannot read the page: timed out")),
        "{notices:?}"
    );
    let text = std::fs::read_to_string(&report).unwrap();
    if answer["citations"].as_array().unwrap().iter().any(|c| c["passage"]["library"] == "web") {
        assert!(text.contains(&format!("](<{base}/aws>) · web")), "{text}");
    }
}

/// `quarry eval retrieval` scores, by default, the fusion search uses (`hybrid`), not another one.
/// Until 2026-11-27 its default was equal-weight min-max, labelled "what search uses" while search had
/// moved to minmax-confidence (issue 38).
#[test]
fn eval_retrieval_scores_the_fusion_search_uses_by_default() {
    let set = eval_dir().join("A_benchmarks/cmrc2018_trial");
    let tmp = tempfile::tempdir().unwrap();
    let output = run(tmp.path(), &["eval", "retrieval", "--set", set.to_str().unwrap(), "--limit", "5", "--json"]);
    let report: Value = serde_json::from_str(String::from_utf8_lossy(&output.stdout).trim()).unwrap();
    let modes: Vec<&String> = report["results"].as_object().unwrap().keys().collect();
    assert_eq!(modes, ["bm25", "dense", "hybrid"], "{report}");
    assert_eq!(quarry_index::HybridFusion::default().to_string(), "minmax-confidence");
}

/// `quarry eval latency` at a size above `--exact-max-chunks` times only ANN searches (still scoring ANN
/// recall against exact search), prints the memory table, and with `--keep-data` leaves its library
/// where a second process, `--library … --queries …`, opens and measures it (issue 40's 1M-chunk run).
#[test]
fn eval_latency_skips_exact_timing_above_its_limit_and_keeps_the_library_for_a_search_only_run() {
    let set = eval_dir().join("A_benchmarks/rgb_part1/en");
    let tmp = tempfile::tempdir().unwrap();
    let kept = tmp.path().join("kept");
    let output = run(
        tmp.path(),
        &[
            "eval",
            "latency",
            "--set",
            set.to_str().unwrap(),
            "--sizes",
            "300,1000",
            "--query-count",
            "6",
            "--exact-max-chunks",
            "500",
            "--keep-data",
            kept.to_str().unwrap(),
        ],
    );
    let table = String::from_utf8_lossy(&output.stdout);
    let rows =
        |size: &str, index: &str| table.lines().filter(|l| l.starts_with(&format!("| {size} | {index} |"))).count();
    assert!(rows("300", "none (exact)") >= 3, "exact search timed at 300 chunks:\n{table}");
    assert!(rows("300", "IVF-HNSW-SQ + id BTree") >= 3, "{table}");
    assert_eq!(rows("1000", "none (exact)"), 0, "exact search timed above the limit:\n{table}");
    assert!(rows("1000", "IVF-HNSW-SQ + id BTree") >= 4, "ANN timing and memory at 1000 chunks:\n{table}");
    // Recall rows for each refine factor at both sizes, against exact search.
    for size in ["300", "1000"] {
        for refine in ["none", "1", "2", "4"] {
            assert_eq!(rows(size, refine), 1, "recall at {size} chunks, refine {refine}:\n{table}");
        }
    }
    assert!(table.contains("peak RSS while searching MiB"), "{table}");
    assert!(kept.join("libraries/bench-1000").is_dir() && kept.join("libraries/bench-300").is_dir());

    let queries = set.join("queries.jsonl");
    let output = run(
        &kept,
        &[
            "eval",
            "latency",
            "--library",
            "bench-1000",
            "--queries",
            queries.to_str().unwrap(),
            "--query-count",
            "5",
            "--ann-recall-queries",
            "5",
            "--ef",
            "0,400",
            "--nprobes",
            "0",
            "--refine-factors",
            "4",
        ],
    );
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(table.starts_with("library bench-1000: 1000 chunks; 5 queries"), "{table}");
    for mode in ["bm25", "dense", "hybrid"] {
        assert!(table.lines().any(|l| l.starts_with(&format!("| {mode} |"))), "no {mode} row:\n{table}");
    }
    // Where each mode's time goes: a row per mode, BM25 time only where BM25 runs.
    let parts = table.split("Where the time goes").nth(1).unwrap_or_else(|| panic!("no breakdown:\n{table}"));
    let cells = |mode: &str| -> Vec<f64> {
        let line = parts.lines().find(|l| l.starts_with(&format!("| {mode} |"))).unwrap_or_else(|| panic!("{table}"));
        line.split('|').skip(2).filter_map(|c| c.trim().parse().ok()).collect()
    };
    assert_eq!(cells("dense")[0], 0.0, "dense search runs no BM25:\n{table}");
    assert!(cells("hybrid").iter().all(|&ms| ms > 0.0), "hybrid runs every part:\n{table}");
    // A wider graph search (ef 400) finds at least what the default finds.
    let recall = table.split("ANN recall against exact search").nth(1).unwrap_or_else(|| panic!("{table}"));
    let at_10 = |ef: &str| -> f64 {
        let row = format!("| default | {ef} | 4 |");
        let line = recall.lines().find(|l| l.starts_with(&row)).unwrap_or_else(|| panic!("{table}"));
        line.split('|').nth(4).unwrap().trim().parse().unwrap()
    };
    assert!(at_10("400") >= at_10("default") && at_10("400") >= 0.9, "{table}");

    // Only the modes asked for are timed (a mode's questions seen for the first time).
    let args = ["eval", "latency", "--library", "bench-1000", "--queries", queries.to_str().unwrap()];
    let output = run(&kept, &[&args[..], &["--query-count", "3", "--modes", "hybrid"]].concat());
    let table = String::from_utf8_lossy(&output.stdout);
    let timed: Vec<&str> = table.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| mode")).collect();
    assert_eq!(timed.len(), 2, "one latency row and one breakdown row:\n{table}");
    assert!(timed.iter().all(|l| l.starts_with("| hybrid |")), "{table}");
}

#[test]
fn eval_qa_scores_agents_on_a_benchmark_set() {
    let set = eval_dir().join("A_benchmarks/hotpotqa_rpt_dev300");
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("trace.jsonl");
    // Two agents share one index of the passages and print one JSON line each.
    let output = run(
        tmp.path(),
        &[
            "eval",
            "qa",
            "--set",
            set.to_str().unwrap(),
            "--agent",
            "naive,deep",
            "--max-rounds",
            "1",
            "--limit",
            "2",
            "--bm25-only",
            "--answer-tokens",
            "48",
            "--threads",
            "2",
            "--json",
            "--trace",
            trace.to_str().unwrap(),
        ],
    );
    let reports: Vec<Value> =
        String::from_utf8_lossy(&output.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(reports.len(), 2, "{reports:?}");
    let report = &reports[0];
    for key in [
        "set",
        "agent",
        "questions",
        "support_recall@5",
        "em",
        "f1",
        "llm_calls_per_q",
        "tokens_per_q",
        "seconds_per_q",
    ] {
        assert!(report.get(key).is_some(), "no {key} in {report}");
    }
    assert_eq!(
        (report["questions"].as_u64(), report["agent"].as_str(), report["failed"].as_u64()),
        (Some(2), Some("naive"), Some(0))
    );
    assert_eq!(report["llm_calls_per_q"], 1.0, "NaiveRAG: one call a question");
    let recall = report["support_recall@5"].as_f64().unwrap();
    assert!(recall > 0.0 && recall <= 1.0, "BM25 finds some supporting passages of HotpotQA: {recall}");
    let deep = &reports[1];
    assert_eq!(
        (deep["questions"].as_u64(), deep["agent"].as_str(), deep["failed"].as_u64()),
        (Some(2), Some("deep"), Some(0))
    );
    assert!(deep["llm_calls_per_q"].as_f64().unwrap() > 1.0, "DeepSearch plans, judges and answers: {deep}");

    // --trace: one line per question and agent, saying where each supporting passage went.
    let lines: Vec<Value> =
        std::fs::read_to_string(&trace).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(
        lines.iter().map(|l| l["agent"].as_str().unwrap()).collect::<Vec<_>>(),
        ["naive", "naive", "deep", "deep"]
    );
    let mut found = 0.0;
    for line in &lines[..2] {
        let ids = |v: &Value| v.as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect::<Vec<_>>();
        let (supporting, used) = (ids(&line["supporting"]), ids(&line["used"]));
        assert_eq!(supporting.len(), 2, "HotpotQA: two supporting passages: {line}");
        let searches = line["searches"].as_array().unwrap();
        assert_eq!(searches.len(), 1, "NaiveRAG searches once: {line}");
        assert_eq!(searches[0][0], line["question"]);
        assert_eq!(ids(&searches[0][1])[..used.len()], used[..], "NaiveRAG answers from its search, in order");
        found += used.iter().take(5).filter(|id| supporting.contains(id)).count() as f64 / 2.0;
    }
    assert!((found / 2.0 - recall).abs() < 1e-9, "the trace agrees with the reported recall");
    for line in &lines[2..] {
        let judged = line["judged"].as_array().unwrap();
        assert_eq!(judged.len(), 1, "one round: {line}");
        assert!(
            !line["searches"].as_array().unwrap().is_empty() && !line["queries"][0].as_array().unwrap().is_empty(),
            "{line}"
        );
    }
}

/// A real OpenAI-compatible server on loopback: llama.cpp's server engine from the `xllamacpp` wheel
/// (scripts/setup.sh), serving the same GGUF. Stops when dropped.
struct LlmServer {
    child: std::process::Child,
    url: String,
}

impl LlmServer {
    fn start() -> LlmServer {
        use std::io::BufRead;
        let python = test_python();
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let model = quarry_core::models::find_model_file("smollm2-135m-instruct/model.gguf").unwrap();
        let mut child = std::process::Command::new(&python)
            .arg(root.join("scripts/llm-server.py"))
            .args(["--model", model.to_str().unwrap(), "--threads", "2", "--alias", "smollm2"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{python}: {e} (scripts/setup.sh installs xllamacpp there)"));
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url = line
            .trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("server did not start: {line:?}"))
            .to_string();
        LlmServer { child, url }
    }
}

impl Drop for LlmServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn deep_search_through_a_real_openai_compatible_server() {
    let tmp = tempfile::tempdir().unwrap();
    let data = ntsb_library(tmp.path(), &["20080102X00002.pdf", "20080108X00029.pdf"]);
    let server = LlmServer::start();
    let (events, answer) = ask(
        &data,
        &[
            "What was the probable cause of the accident?",
            "--agent",
            "deep",
            "--max-rounds",
            "2",
            "--llm-url",
            &server.url,
            "--llm-model",
            "smollm2",
        ],
    );
    assert!(answer["model"].as_str().unwrap().contains(&server.url), "{}", answer["model"]);
    let calls = of(&events, "llm_call");
    let steps: Vec<&str> = calls.iter().map(|c| c["step"].as_str().unwrap()).collect();
    assert_eq!(steps[..2], ["sub_queries", "relevance"], "{steps:?}");
    assert!(calls.iter().all(|c| c["prompt_tokens"].as_u64().unwrap() > 0), "the server reports token usage");
    assert_eq!(answer["llm_calls"].as_u64().unwrap() as usize, calls.len());
    // The 135M model's relevance judge may reject every passage; then the answer says the library holds
    // nothing on it, without an answer call. Otherwise the last call writes the answer.
    if answer["nothing_found"] == false {
        assert_eq!(steps.last(), Some(&"answer"));
    }
    assert!(!answer["markdown"].as_str().unwrap().trim().is_empty());
    sources_exist(&data, &answer);
}

#[test]
fn a_local_server_is_found_listed_and_chosen_by_llm_url_auto() {
    let tmp = tempfile::tempdir().unwrap();
    let data = ntsb_library(tmp.path(), &["20080102X00002.pdf"]);
    let server = LlmServer::start();
    let port = server.url.trim_end_matches("/v1").rsplit(':').next().unwrap().to_string();
    // `quarry models` lists the installed GGUF files and the server, with the model it serves.
    let listed: Value = serde_json::from_slice(&run(&data, &["models", "--port", &port, "--json"]).stdout).unwrap();
    let servers = listed["servers"].as_array().unwrap();
    let found = servers.iter().find(|s| s["url"] == server.url.as_str()).unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(found["name"], "llama.cpp server", "{found}");
    assert_eq!(found["models"], serde_json::json!(["smollm2"]), "{found}");
    let embedded = listed["embedded"].as_array().unwrap();
    assert!(embedded.iter().any(|m| m["path"].as_str().unwrap().ends_with(quarry_gguf::LOW_MEMORY_MODEL_FILE)));
    assert_eq!(embedded.iter().filter(|m| m["default"] == true).count(), 1, "{listed}");
    let text = String::from_utf8(run(&data, &["models", "--port", &port]).stdout).unwrap();
    assert!(text.contains(&format!("llama.cpp server  {}  models: smollm2", server.url)), "{text}");

    // `--llm-url auto` answers through the server found (its port named in QUARRY_LLM_PORTS) and says so.
    let question = "What was the probable cause of the accident?";
    let args = ["ask", question, "--library", "ntsb", "--agent", "naive", "--json", "--answer-tokens", "60"];
    let auto = |extra: &[&str]| {
        let mut command = quarry(&data);
        command.args(args).args(extra).env("QUARRY_LLM_PORTS", &port).env_remove("QUARRY_LLM_URL");
        command.output().unwrap()
    };
    let output = auto(&["--llm-url", "auto", "--llm-model", "smollm2"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains(&format!("using llama.cpp server at {} with model smollm2", server.url)), "{stderr}");
    let answer: Value = serde_json::from_str(String::from_utf8_lossy(&output.stdout).lines().last().unwrap()).unwrap();
    assert!(answer["model"].as_str().unwrap().contains(&server.url), "{}", answer["model"]);
    // A model no server serves is an error that says what was found, not a silent switch.
    let output = auto(&["--llm-url", "auto", "--llm-model", "no-such-model"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("no local LLM server serves model \"no-such-model\"") && stderr.contains("smollm2"),
        "{stderr}"
    );
}

#[test]
fn a_long_form_report_with_the_embedded_model_has_planned_sections_and_working_links() {
    let tmp = tempfile::tempdir().unwrap();
    let data = ntsb_library(tmp.path(), &["20080102X00002.pdf", "20080108X00029.pdf"]);
    let out = tmp.path().join("reports/accidents.md");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let output = run(
        &data,
        &[
            "report",
            "Causes of the aviation accidents investigated by the NTSB",
            "--library",
            "ntsb",
            "--out",
            out.to_str().unwrap(),
            "--max-sections",
            "2",
            "--max-rounds",
            "1",
            "--review-queries",
            "1",
            "-k",
            "4",
            "--section-tokens",
            "120",
            "--threads",
            "2",
            "--json",
        ],
    );
    let lines: Vec<Value> =
        String::from_utf8_lossy(&output.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let last = lines.last().unwrap();
    assert_eq!(last["event"], "research_report", "{last}");
    let sections = last["sections"].as_array().unwrap();
    assert!((1..=2).contains(&sections.len()), "{last}");
    let stages: Vec<&str> = of(&lines, "section").iter().map(|e| e["stage"].as_str().unwrap()).collect();
    assert_eq!(stages.iter().filter(|s| **s == "done").count(), sections.len(), "{stages:?}");
    assert_eq!(last["llm_calls"].as_u64().unwrap() as usize, of(&lines, "llm_call").len());

    let text = std::fs::read_to_string(&out).unwrap();
    let (headings, links) = headings_and_links(&text);
    assert_eq!(headings.first().map(String::as_str), Some("Introduction"), "{text}");
    assert_eq!(headings[headings.len() - 3..], ["Conclusion", "Sources", "Method"], "{text}");
    assert_eq!(headings.len(), sections.len() + 4, "{text}");
    for link in &links {
        if let Some(anchor) = link.strip_prefix('#') {
            assert!(text.contains(&format!("<a id=\"{anchor}\"></a>")), "citation {link} has its source");
        } else {
            let file = link.split('#').next().unwrap();
            let path = out.parent().unwrap().join(percent_decode(file));
            assert!(path.exists(), "{link} opens a file ({})", path.display());
        }
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `quarry secret`: a key read from stdin goes to the OS keyring (a private GNOME Keyring here), `status`
/// says where each key comes from without printing it, the environment variable wins, `delete` removes it.
#[test]
fn api_keys_go_to_the_os_keyring_from_stdin_and_never_show() {
    let session = quarry_secrets::test_session::KeyringSession::start();
    let tmp = tempfile::tempdir().unwrap();
    let secret = |args: &[&str], stdin: Option<&str>, env: Option<&str>| {
        let mut command = super::library_command::quarry(&tmp.path().join("data"));
        command
            .arg("secret")
            .args(args)
            .env("DBUS_SESSION_BUS_ADDRESS", session.address())
            .env_remove("QUARRY_BRAVE_API_KEY");
        command.env_remove("QUARRY_TAVILY_API_KEY").env_remove("QUARRY_LLM_API_KEY");
        if let Some(value) = env {
            command.env("QUARRY_BRAVE_API_KEY", value);
        }
        command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = command.spawn().unwrap();
        {
            use std::io::Write;
            let mut input = child.stdin.take().unwrap();
            input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
        }
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "quarry secret {args:?}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    secret(&["set", "tavily"], Some("tvly-cli-secret\n"), None);
    let status = secret(&["status"], None, None);
    assert!(status.contains("tavily-api-key\tin the OS keyring"), "{status}");
    assert!(status.contains("brave-api-key\tnot set"), "{status}");
    assert!(!status.contains("tvly-cli-secret"), "a key is never printed: {status}");
    let status = secret(&["status"], None, Some("from-env"));
    assert!(status.contains("brave-api-key\tfrom QUARRY_BRAVE_API_KEY"), "{status}");
    secret(&["delete", "tavily"], None, None);
    assert!(secret(&["status"], None, None).contains("tavily-api-key\tnot set"));
    // The llm key is kept for one server, named with --url, and status says which (never the key).
    secret(&["set", "llm", "--url", "https://API.example.com:443/v1/"], Some("sk-llm-secret\n"), None);
    let status = secret(&["status"], None, None);
    assert!(status.contains("llm-api-key\tin the OS keyring, for https://api.example.com\n"), "{status}");
    assert!(!status.contains("sk-llm-secret"), "{status}");
}

/// The quick start's question over the sample library as the quick start adds it, asked with
/// Qwen2.5-Coder-1.5B-Instruct (what `scripts/quickstart.sh` asks with) and the default agent, which the
/// router makes NaiveRAG (docs/evaluation/decisions.md, 2026-11-28 (c)): the answer states
/// the first quarter's revenue ($7.19 billion, written in any form the figures module reads: $7,192
/// million, 7,192) and cites the first quarter's filing — not the second quarter's $13.51 billion, which
/// is what Quarry answered before documents carried their context line — among it p. 25, the page the
/// issue names (the quarter's summary table, read as rows since PDF extraction version 8;
/// docs/evaluation/decisions.md, 2026-12-04 (f)). `quarry eval answers
/// --retrieval-only` over the same library finds the answer passage among what NaiveRAG reads.
#[test]
fn the_quick_start_question_is_answered_right_and_cited_to_the_first_quarter_filing() {
    let qwen = qwen_model();
    let tmp = tempfile::tempdir().unwrap();
    let data = sample_library_as_the_quick_start_adds_it(tmp.path());

    let set = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/eval/quickstart");
    let output = run(
        &data,
        &["eval", "answers", "--library", "sample", "--set", set.to_str().unwrap(), "--retrieval-only", "--json"],
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        report["answer_passage_found"].as_f64(),
        Some(1.0),
        "the answer passage is among what NaiveRAG reads: {report}"
    );
    assert_eq!(report["relevant_document_read"].as_f64(), Some(1.0), "{report}");

    let question = "What was NVIDIA's revenue in the first quarter of fiscal 2024?";
    let output = run(
        &data,
        &["ask", question, "--library", "sample", "--model", qwen.to_str().unwrap(), "--threads", "2", "--json"],
    );
    let answer: Value =
        String::from_utf8_lossy(&output.stdout).lines().last().map(|l| serde_json::from_str(l).unwrap()).unwrap();
    assert_eq!(answer["agent"], "naive", "the router sends a lookup to NaiveRAG");
    let markdown = answer["markdown"].as_str().unwrap();
    let stated = quarry_agents::figures::figures(&quarry_agents::answer::strip_citations(markdown));
    let revenue = &quarry_agents::figures::figures("$7.19 billion")[0];
    assert!(quarry_agents::figures::states(&stated, revenue), "the answer states $7.19 billion: {markdown}");
    let cited: Vec<&str> =
        answer["citations"].as_array().unwrap().iter().map(|c| c["passage"]["path"].as_str().unwrap()).collect();
    assert!(
        !cited.is_empty() && cited.iter().all(|p| p.ends_with("2023 Q1 NVDA.pdf")),
        "cites the first quarter's filing only: {cited:?}\n{markdown}"
    );
    let pages: Vec<u64> =
        answer["citations"].as_array().unwrap().iter().filter_map(|c| c["passage"]["page_start"].as_u64()).collect();
    assert!(pages.contains(&25), "cites p. 25, the quarter's summary: {pages:?}\n{markdown}");
    let claims = answer["claims"].as_array().unwrap();
    assert!(
        claims.iter().any(|c| c["supported"] == true),
        "the claim check finds the figure in the cited passage: {claims:?}"
    );
}

/// The app's "Test connection" (quarry_session::LlmSettings::for_connection_test): the stored API key
/// goes only to the URL it was saved with — typing another URL and pressing Test sends no key unless one
/// is typed — and `Debug` never prints a key. (Before, the stored key was sent to whatever URL was typed.)
#[test]
fn a_connection_test_sends_the_stored_key_only_to_the_url_it_was_saved_for() {
    use quarry_session::LlmSettings;
    let typed = |url: &str| LlmSettings { url: Some(url.into()), model: Some("m".into()), ..LlmSettings::default() };
    let saved = Some("https://api.example.com/v1");
    // Same server (spelling aside): the stored key is used (None = look it up).
    assert_eq!(LlmSettings::for_connection_test(typed("https://api.example.com/v1/"), None, saved).api_key, None);
    // Another server: no key at all (an empty key is never sent), unless one is typed.
    assert_eq!(
        LlmSettings::for_connection_test(typed("https://attacker.example.net/v1"), None, saved).api_key,
        Some(String::new())
    );
    assert_eq!(
        LlmSettings::for_connection_test(typed("https://other.example.net/v1"), Some("typed".into()), saved).api_key,
        Some("typed".into())
    );
    assert_eq!(
        LlmSettings::for_connection_test(typed("https://api.example.com/v1"), None, None).api_key,
        Some(String::new()),
        "nothing saved yet"
    );
    let mut with_key = typed("https://api.example.com/v1");
    with_key.api_key = Some("sk-very-secret".into());
    let shown = format!("{with_key:?}");
    assert!(!shown.contains("sk-very-secret") && shown.contains("api_key"), "{shown}");
}

/// A question that names a company and no period, over that company's four filings of the sample
/// library, with the embedded model the tests use (SmolLM2): NaiveRAG asks about one filing at a time —
/// four `document_answer` calls (a fifth, `answer`, only when every filing's answer declines) — and the
/// answer lists the filings in order of period, each under the period its first page names; every source
/// is one of the four filings, grouped by filing in that order.
#[test]
fn a_question_over_four_filings_is_answered_one_filing_at_a_time_with_the_embedded_model() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let docs = tmp.path().join("apple");
    let filings = [
        ("2022 Q3 AAPL.pdf", "June 25, 2022"),
        ("2023 Q1 AAPL.pdf", "December 31, 2022"),
        ("2023 Q2 AAPL.pdf", "April 1, 2023"),
        ("2023 Q3 AAPL.pdf", "July 1, 2023"),
    ];
    copy_into(filings.map(|(name, _)| sample_library().join("sec-10-q").join(name)), &docs);
    run(&data, &["library", "create", "apple"]);
    run(&data, &["add", docs.to_str().unwrap(), "--library", "apple", "--json"]);
    let output = run(
        &data,
        &[
            "ask",
            "How has Apple's total net sales changed over time?",
            "--library",
            "apple",
            "--agent",
            "naive",
            "--answer-tokens",
            "160",
            "--threads",
            "2",
            "--json",
        ],
    );
    let lines: Vec<Value> =
        String::from_utf8_lossy(&output.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let answer = lines.last().unwrap();
    let steps: Vec<&str> = of(&lines, "llm_call").iter().map(|e| e["step"].as_str().unwrap()).collect();
    assert_eq!(steps[..4], ["document_answer"; 4], "{steps:?}");
    assert!(steps.len() == 4 || steps[4..] == ["answer"], "{steps:?}");
    let markdown = answer["markdown"].as_str().unwrap();
    let items: Vec<&str> = markdown.lines().filter(|l| l.starts_with("- **")).collect();
    assert_eq!(items.len(), 4, "{markdown}");
    for (item, (name, ended)) in items.iter().zip(filings) {
        assert!(item.starts_with(&format!("- **{name}** (quarterly period ended {ended}): ")), "{item}");
    }
    let order: Vec<usize> = answer["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let path = s["passage"]["path"].as_str().unwrap();
            filings.iter().position(|(name, _)| path.ends_with(name)).expect("a source from the four filings")
        })
        .collect();
    // The passages read come in period order; a passage only a quote under a filing's line cites follows
    // them, numbered after every passage read (in the order of the lines that quote them).
    let split = order.windows(2).position(|w| w[0] > w[1]).map_or(order.len(), |i| i + 1);
    let (read, quoted_only) = order.split_at(split);
    assert!(read.windows(2).all(|w| w[0] <= w[1]) && read.contains(&0) && read.contains(&3), "{order:?}");
    assert!(quoted_only.windows(2).all(|w| w[0] <= w[1]), "{order:?}");
}

/// A loopback stand-in for an OpenAI-compatible server that records each request's head and answers 401.
/// Returns its base URL (`http://127.0.0.1:PORT/v1`) and the heads received.
fn recording_llm_server() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let heads = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&heads);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 16384];
            let n = stream.read(&mut buf).unwrap_or(0);
            seen.lock().unwrap().push(String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase());
            let body = r#"{"error":{"message":"no"}}"#;
            let _ = write!(
                stream,
                "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (base, heads)
}

/// The LLM key in the keyring is bound to the server it was stored for: a model loaded for another URL
/// (a settings file changed behind the person's back, a typo, a discovered server) is sent no key; the
/// server it was stored for gets it. Before, the keyring's key went to whatever URL the settings named.
#[test]
fn the_stored_llm_key_goes_only_to_the_server_it_was_stored_for() {
    let session = quarry_secrets::test_session::KeyringSession::start();
    // This process talks to the private keyring (children spawned by other tests name their own).
    std::env::set_var("DBUS_SESSION_BUS_ADDRESS", session.address());
    std::env::remove_var("QUARRY_LLM_API_KEY");
    let (saved, saved_heads) = recording_llm_server();
    let (other, other_heads) = recording_llm_server();
    quarry_secrets::set_for(quarry_secrets::Secret::LlmApiKey, &saved, "sk-bound-to-saved").unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let ask = |url: &str| {
        let settings = quarry_session::LlmSettings {
            url: Some(url.to_string()),
            model: Some("m".into()),
            ..quarry_session::LlmSettings::default()
        };
        let _ = runtime.block_on(settings.check());
    };
    ask(&other);
    ask(&saved);
    let other_heads = other_heads.lock().unwrap().clone();
    let saved_heads = saved_heads.lock().unwrap().clone();
    assert!(!other_heads.is_empty() && !saved_heads.is_empty(), "both servers were asked");
    assert!(
        other_heads.iter().all(|h| !h.contains("sk-bound-to-saved")),
        "the key went to another server: {other_heads:?}"
    );
    assert!(saved_heads.iter().any(|h| h.contains("authorization: bearer sk-bound-to-saved")), "{saved_heads:?}");
    // An unbound key (stored before keys were bound) is sent nowhere.
    quarry_secrets::set(quarry_secrets::Secret::LlmApiKey, "sk-unbound").unwrap();
    assert_eq!(quarry_secrets::get_for(quarry_secrets::Secret::LlmApiKey, &saved).unwrap(), None);
    quarry_secrets::delete(quarry_secrets::Secret::LlmApiKey).unwrap();
}

/// A stand-in OpenAI-compatible server on loopback whose model list is `models`; returns its port.
fn server_listing_models(models: &'static [&'static str]) -> u16 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let data: Vec<String> = models.iter().map(|m| format!(r#"{{"id":"{m}","owned_by":"library"}}"#)).collect();
            let body = format!(r#"{{"object":"list","data":[{}]}}"#, data.join(","));
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

/// Offline, `--llm-url auto` does not pick a model the local server relays to its vendor (Ollama's
/// `…-cloud` models) and says it skipped it; online it may. Before, the first model listed was taken,
/// and a question went to Ollama's servers while Quarry said "offline".
#[test]
fn offline_auto_skips_models_that_run_elsewhere_and_says_so() {
    let port = server_listing_models(&["gpt-oss:120b-cloud", "qwen2.5:1.5b"]);
    std::env::set_var("QUARRY_LLM_PORTS", port.to_string());
    use quarry_session::{runs_elsewhere, LlmSettings, AUTO_SERVER};
    let auto = LlmSettings { url: Some(AUTO_SERVER.into()), ..LlmSettings::default() };
    let (chosen, note) = auto.resolve_auto().unwrap();
    assert_eq!(chosen.model.as_deref(), Some("qwen2.5:1.5b"));
    let note = note.unwrap();
    assert!(note.contains("skipped gpt-oss:120b-cloud"), "{note}");

    let online = LlmSettings { network: quarry_net::NetworkMode::Online, ..auto };
    let (chosen, _) = online.resolve_auto().unwrap();
    assert_eq!(chosen.model.as_deref(), Some("gpt-oss:120b-cloud"), "online, the person's first model");
    assert!(runs_elsewhere("deepseek-v3.1:671b-cloud") && runs_elsewhere("x:cloud") && !runs_elsewhere("cloudy"));
}
