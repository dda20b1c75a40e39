//! `quarry mcp` driven by an MCP client written by others: the official Python SDK (`mcp` on PyPI,
//! installed into the test venv by scripts/setup.sh), through `mcp_client.py` beside this file.

use crate::ask_command::{quick_start_library, qwen_model, test_python};
use crate::library_command::{quarry, run};
use serde_json::Value;
use std::path::Path;

/// The quick start's library and question over MCP: the tools are listed; `list_libraries`, `search` and
/// `get_passage` return the library's real passages; each document is a resource that reads whole; calls with bad arguments are tool errors that say
/// why, an unknown tool a protocol error, and the server keeps serving after them; `ask` (NaiveRAG, the embedded
/// Qwen2.5-Coder-1.5B) states $7.19 billion, cites the first quarter's filing, and reports its steps as
/// progress notifications. The server runs under `strace`: offline, it opens no network connection. Then
/// the same over streamable HTTP on loopback, and what that transport refuses.
#[test]
fn an_mcp_client_lists_searches_and_asks_over_stdio_and_http() {
    let qwen = qwen_model();
    let tmp = tempfile::tempdir().unwrap();
    let data = quick_start_library(tmp.path());
    run(&data, &["library", "create", "other"]);

    let python = test_python();
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/mcp_client.py");
    let question = "What was NVIDIA's revenue in the first quarter of fiscal 2024?";
    // The server runs under `strace`, which lists every connection it attempts (there must be none).
    let trace = tmp.path().join("mcp.trace");
    let output = std::process::Command::new(&python)
        .arg(&client)
        .args([
            "sec",
            question,
            "--",
            "strace",
            "-f",
            "--seccomp-bpf",
            "-qq",
            "-e",
            "trace=connect,sendto,sendmsg",
            "-o",
        ])
        .arg(&trace)
        .args([env!("CARGO_BIN_EXE_quarry"), "--data-dir", data.to_str().unwrap(), "mcp"])
        // The server serves `sec` only: `other` must not be reachable.
        .args(["--library", "sec", "--model", qwen.to_str().unwrap(), "--threads", "2"])
        .env_remove("QUARRY_NETWORK")
        .output()
        .unwrap_or_else(|e| panic!("{python}: {e} (scripts/setup.sh installs the mcp package there)"));
    assert!(
        output.status.success(),
        "the MCP client failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap();
    let trace = std::fs::read_to_string(&trace).expect("the server ran under strace");
    let connects: Vec<&str> = trace.lines().filter(|l| l.contains("AF_INET")).collect();
    assert_eq!(connects, Vec::<&str>::new(), "offline (the default), the MCP server reaches no other computer");

    assert_eq!(seen["server"], "quarry");
    assert_eq!(seen["tools"], serde_json::json!(["ask", "get_passage", "list_libraries", "search"]));
    let libraries = seen["list_libraries"]["structured"]["libraries"].as_array().unwrap();
    assert_eq!(libraries.len(), 1, "only the served library is listed: {libraries:?}");
    assert_eq!((libraries[0]["name"].as_str(), libraries[0]["documents"].as_u64()), (Some("sec"), Some(2)));

    let passages = seen["search"]["structured"]["passages"].as_array().unwrap();
    assert_eq!(passages.len(), 5, "{}", seen["search"]);
    for p in passages {
        assert_eq!(p["library"], "sec");
        assert!(p["path"].as_str().unwrap().ends_with("NVDA.pdf") && p["page_start"].as_u64().is_some(), "{p}");
        assert!(p["citation"].as_str().unwrap().contains("NVDA.pdf, p"), "{p}");
    }
    // Ids are strings of digits: a chunk id is a 64-bit number, above the 2^53 a JavaScript client's
    // numbers hold exactly (it rounded 662310089015984983 to …5000, and get_passage then failed).
    for p in passages {
        let id = p["chunk_id"].as_str().unwrap_or_else(|| panic!("chunk_id is not a string: {p}"));
        assert!(id.parse::<u64>().is_ok(), "{p}");
    }
    let passage = &seen["get_passage"]["structured"];
    assert_eq!(passage["chunk_id"], passages[0]["chunk_id"]);
    assert_eq!(seen["get_passage_by_number"]["structured"]["text"], passages[0]["text"], "a number is accepted too");
    assert_eq!(passage["text"], passages[0]["text"], "get_passage returns the passage search found");
    assert!(passage["before"].is_string() || passage["after"].is_string(), "with its neighbours: {passage}");

    // Each document is a resource whose text reads whole: pages marked, chunk overlaps not repeated.
    let resources = seen["resources"].as_array().unwrap();
    let names: Vec<&str> = resources.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["2023 Q1 NVDA.pdf", "2023 Q2 NVDA.pdf"], "{resources:?}");
    assert!(resources.iter().all(|r| r["uri"].as_str().unwrap().starts_with("quarry://sec/")), "{resources:?}");
    let document = seen["resource_text"].as_str().unwrap();
    assert!(
        document.contains("\n[p. 22]\n") && document.contains("Total revenue: $7,192 million"),
        "{}",
        &document[..2000]
    );
    let sentence = "Revenue for the first quarter of fiscal year 2024 was $7.19 billion";
    assert_eq!(document.matches(sentence).count(), 1, "overlapping chunks are not repeated");
    for refused in ["bad_uri", "other_library"] {
        assert!(seen[refused]["protocol_error"].is_string(), "{refused}: {}", seen[refused]);
    }

    // Bad arguments are tool errors that say what is wrong (the host's model can correct them); an
    // unknown tool is a protocol error.
    for (call, says) in [
        ("empty_query", "`query` is empty"),
        ("missing_query", "missing field `query`"),
        ("bad_mode", "fuzzy"),
        ("unknown_library", "\"nope\" is not served here"),
    ] {
        assert_eq!(seen[call]["is_error"], true, "{call}: {}", seen[call]);
        assert!(seen[call]["text"].as_str().unwrap().contains(says), "{call}: {}", seen[call]);
    }
    assert_eq!(seen["unknown_tool"]["protocol_error"], "tool not found", "{}", seen["unknown_tool"]);
    assert_eq!(seen["after_errors"]["is_error"], false, "the server keeps serving: {}", seen["after_errors"]);

    let ask = &seen["ask"];
    assert_eq!(ask["is_error"], false, "{ask}");
    let answer = &ask["structured"];
    let markdown = answer["answer"].as_str().unwrap();
    let stated = quarry_agents::figures::figures(&quarry_agents::answer::strip_citations(markdown));
    let revenue = &quarry_agents::figures::figures("$7.19 billion")[0];
    assert!(quarry_agents::figures::states(&stated, revenue), "the answer states $7.19 billion: {markdown}");
    let citations = answer["citations"].as_array().unwrap();
    assert!(
        !citations.is_empty() && citations.iter().all(|c| c["path"].as_str().unwrap().ends_with("2023 Q1 NVDA.pdf")),
        "cites the first quarter's filing: {citations:?}\n{markdown}"
    );
    let text = ask["text"].as_str().unwrap();
    let first = citations[0]["number"].as_u64().unwrap();
    assert!(text.contains(&format!("\n\nSources:\n[{first}] 2023 Q1 NVDA.pdf, p")), "{text}");
    assert!(answer["llm_calls"].as_u64().unwrap() >= 1 && answer["prompt_tokens"].as_u64().unwrap() > 0, "{answer}");
    let progress: Vec<&str> = seen["progress"].as_array().unwrap().iter().filter_map(|m| m.as_str()).collect();
    assert!(progress.iter().any(|m| m.contains("passages")), "progress names the retrieval: {progress:?}");
    assert!(progress.iter().any(|m| m.contains("tokens")), "and the model call: {progress:?}");

    // The official TypeScript SDK (a JavaScript host's client): the chunk id search gives goes back to
    // get_passage exactly (as a number above 2^53 it was rounded, and get_passage failed), and a document
    // resource reads whole.
    let js_client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/mcp-js/client.mjs");
    let output = std::process::Command::new("node")
        .arg(&js_client)
        .args([question, "--", env!("CARGO_BIN_EXE_quarry"), "--data-dir", data.to_str().unwrap(), "mcp"])
        .args(["--library", "sec"])
        .output()
        .unwrap_or_else(|e| panic!("node: {e} (scripts/setup.sh installs the SDK beside client.mjs)"));
    assert!(output.status.success(), "the JavaScript MCP client failed:\n{}", String::from_utf8_lossy(&output.stderr));
    let js: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(js["chunk_id"].as_str().is_some_and(|id| id.parse::<u64>().is_ok()), "{js}");
    assert_eq!(js["get_passage"]["is_error"], false, "{js}");
    assert_eq!(js["get_passage"]["structured"]["text"], js["search"]["passages"][0]["text"], "{js}");
    assert!(js["resource_text"].as_str().is_some_and(|t| t.contains("[p. ")), "{js}");

    // The same tools over streamable HTTP on loopback (`--http localhost:0`), through the SDK's client;
    // a request from a web page (an Origin header) or for another host name (DNS rebinding) is refused,
    // and an address other than loopback is refused before anything is bound.
    let refused = quarry(&data).args(["mcp", "--http", "0.0.0.0:0"]).output().unwrap();
    let says = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && says.contains("serves this computer only"), "{says}");
    let mut server = quarry(&data)
        .args(["mcp", "--http", "localhost:0", "--library", "sec", "--allow-writes"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(server.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
    // Keep reading the server's log (a closed pipe would fail its next log line).
    let log = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let url = line.split_whitespace().find(|w| w.starts_with("http://127.0.0.1:")).unwrap_or_else(|| panic!("{line}"));
    // With --allow-writes the `add` tool is offered: a real NTSB report and a broken PDF go into `sec`.
    let report = crate::library_command::sample_library().join("ntsb/20080102X00002.pdf");
    let broken = tmp.path().join("broken.pdf");
    std::fs::write(&broken, b"%PDF-1.7\nnot really a PDF").unwrap();
    let output = std::process::Command::new(&python)
        .arg(&client)
        .args(["sec", question, "--url", url, "--add"])
        .args([&report, &broken])
        .output()
        .unwrap();
    // SIGTERM (a service manager's stop) ends the server as Ctrl-C does: cleanly, exit status 0.
    let terminated = std::process::Command::new("kill").args(["-TERM", &server.id().to_string()]).status().unwrap();
    assert!(terminated.success());
    let status = server.wait().unwrap();
    let log = log.join().unwrap();
    assert!(status.success() && log.contains("quarry mcp: stopped (SIGTERM)"), "{status:?}: {log}");
    assert!(!log.contains('\u{1b}'), "no colour codes on a stderr that is not a terminal: {log}");
    assert!(
        output.status.success(),
        "the HTTP client failed:\n{}\nserver:\n{log}",
        String::from_utf8_lossy(&output.stderr)
    );
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!((seen["with_origin"].as_u64(), seen["with_other_host"].as_u64()), (Some(403), Some(403)), "{seen}");
    assert_eq!(seen["tools"], serde_json::json!(["add", "ask", "get_passage", "list_libraries", "search"]));
    let passages = seen["search"]["structured"]["passages"].as_array().unwrap();
    assert_eq!(passages.len(), 5, "{}", seen["search"]);
    assert_eq!(seen["add_relative"]["is_error"], true, "{}", seen["add_relative"]);
    assert!(
        seen["add_relative"]["text"].as_str().unwrap().contains("not an absolute path"),
        "{}",
        seen["add_relative"]
    );
    let added = &seen["add"]["structured"];
    assert_eq!(
        (added["summary"]["indexed"].as_u64(), added["summary"]["failed"].as_u64()),
        (Some(1), Some(1)),
        "{added}"
    );
    let failure = &added["failures"][0];
    assert!(
        failure["path"].as_str().unwrap().ends_with("broken.pdf") && !failure["error"].as_str().unwrap().is_empty(),
        "{added}"
    );
    let found = seen["search_added"]["structured"]["passages"].as_array().unwrap();
    assert!(found.iter().any(|p| p["path"].as_str().unwrap().ends_with("20080102X00002.pdf")), "{found:?}");
    assert!(seen["resource_text"].as_str().unwrap().contains("Total revenue: $7,192 million"));
    assert_eq!(seen["unknown_library"]["is_error"], true, "{}", seen["unknown_library"]);
    assert_eq!(seen["after_errors"]["is_error"], false, "{}", seen["after_errors"]);
}

/// `--http` takes this computer's address by IP or as `localhost:PORT`; anything else is refused with
/// what to give, before anything is bound.
#[test]
fn mcp_http_addresses_name_this_computer() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    for (address, says) in
        [("example.com:80", "localhost:PORT"), ("localhost:http", "port"), ("10.0.0.2:80", "serves this computer only")]
    {
        let output = quarry(&data).args(["mcp", "--http", address]).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success() && stderr.contains(says), "{address}: {stderr}");
    }
}
