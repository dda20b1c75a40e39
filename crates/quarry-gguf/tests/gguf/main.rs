//! The embedded model with the real SmolLM2-135M-Instruct GGUF (`scripts/setup.sh` unpacks it into
//! assets/models, or `QUARRY_MODELS_DIR`): generation, and the repetition control that keeps a small model
//! from looping under greedy sampling.
#![allow(clippy::unwrap_used)] // tests: a failed unwrap is the test failing

use quarry_core::{ChatModel, ChatRequest};
use quarry_gguf::{GgufChat, GgufConfig, RepetitionControl, PROMPT_CACHE_SLOTS};

/// Page 1 of the NTSB report 20080102X00002.pdf (C_private_library and assets/sample-library; a US
/// government work, public domain), as Quarry's PDF reader extracts it.
const PASSAGE: &str = "On December 17, 2007, at 1045 coordinated universal time, a Reims F172 M, French registered \
FBVIF, owned by Airclub Besancon la Veze and piloted by the accident pilot, was destroyed when it impacted terrain \
under unknown circumstances near Chevroux, France. A postimpact fire ensued. Instrument meteorological conditions \
prevailed at the time of the accident. The pilot was fatally injured. The flight originated from Chalon (LFLH) and \
was en route to Bourg (LFHS), France. The French investigators reported that the airplane collided with the ground \
in \"bad weather conditions.\" The accident investigation is under the jurisdiction and control of the French \
government.";

fn model(repetition: RepetitionControl) -> GgufChat {
    let mut config = GgufConfig::low_memory_model().expect("the SmolLM2 GGUF (run scripts/setup.sh)");
    config.threads = 2;
    config.repetition = repetition;
    GgufChat::load(config).expect("loading SmolLM2")
}

/// The most times one sentence (≥ 12 characters, compared without case and spacing) occurs in `text`.
fn most_repeated_sentence(text: &str) -> (usize, String) {
    let mut counts = std::collections::HashMap::<String, usize>::new();
    for sentence in text.split(['.', '\n', '!', '?']) {
        let key: String = sentence.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
        if key.chars().count() >= 12 {
            *counts.entry(key).or_default() += 1;
        }
    }
    counts.into_iter().map(|(s, n)| (n, s)).max().unwrap_or_default()
}

async fn answer(model: &GgufChat, question: &str) -> String {
    let request = ChatRequest::new(
        "answer",
        "You answer questions using only the passage you are given.",
        format!("Passage:\n{PASSAGE}\n\nQuestion: {question}"),
        256,
    );
    model.complete(&request, None).await.expect("a completion").text
}

/// Greedy SmolLM2 loops on these questions without repetition control (the same sentences until the
/// token limit: "1. The pilot was fatally injured. 2. … 5. The pilot was fatally injured. …"); with DRY on
/// (the default) no sentence comes back three times. Threads are fixed, so the greedy output is the same
/// on every run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_keeps_the_small_model_from_looping_and_json_steps_stay_valid() {
    let plain = model(RepetitionControl::off());
    let controlled = model(RepetitionControl::default());
    for question in [
        "List every fact about the pilot and the airplane.",
        "Describe the weather and the flight in detail, step by step.",
    ] {
        let looped = answer(&plain, question).await;
        let (times, sentence) = most_repeated_sentence(&looped);
        assert!(
            times >= 3,
            "the control case no longer loops ({times}× {sentence:?}); pick another question:\n{looped}"
        );
        let text = answer(&controlled, question).await;
        let (times, sentence) = most_repeated_sentence(&text);
        assert!(times < 3, "{times}× {sentence:?} with DRY on:\n{text}");
        assert!(
            text.contains("Chalon") || text.contains("F172") || text.contains("weather"),
            "the answer lost the passage:\n{text}"
        );
    }

    // A grammar-constrained step (as the agents' sub-query step) from the same model: schema-valid JSON
    // (DRY leaves structured steps to their grammar).
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"sub_queries": {"type": "array", "items": {"type": "string"}, "maxItems": 4}},
        "required": ["sub_queries"]
    });
    let request = ChatRequest::new(
        "sub_queries",
        "Split the question into up to four search queries. Reply with JSON.",
        format!("Passage:\n{PASSAGE}\n\nQuestion: Where did the flight start and end, and what was the weather?"),
        200,
    )
    .with_schema(schema);
    let reply = controlled.complete(&request, None).await.unwrap().text;
    let parsed: serde_json::Value = serde_json::from_str(&reply).unwrap_or_else(|e| panic!("not JSON ({e}): {reply}"));
    let queries = parsed["sub_queries"].as_array().unwrap_or_else(|| panic!("no sub_queries: {reply}"));
    assert!(
        (1..=4).contains(&queries.len()) && queries.iter().all(|q| q.as_str().is_some_and(|q| !q.trim().is_empty())),
        "{reply}"
    );
}

/// Copying figures: an answer states the year, the date or the file name its passages state, as often as
/// it needs them. Qwen and SmolLM2 write each digit as a token of its own, so under DRY a year repeated
/// after a repeated phrase ("… fiscal year 2024 compared to the first quarter of fiscal year 2023") was
/// a repeat to penalise: its first digit lost up to 7 logits and the model wrote "1923", and "2023 Q3
/// MSFT.pdf" became "2023 Q9 MSFT.pdf" (sec-10-q answers, docs/evaluation/decisions.md, 2026-12-07 (e)).
/// Digits break DRY's sequences, so a number is never penalised and no repeat runs through one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_never_changes_a_copied_number() {
    let model = model(RepetitionControl::default());
    let sentences = "Revenue rose in fiscal year 2023. Costs fell in fiscal year 2023. Margins grew in fiscal year \
                     2023. Staff grew in fiscal year 2023. Cash rose in fiscal year 2023.";
    let request = ChatRequest::new(
        "answer",
        "You copy text exactly as it is given, word for word.",
        format!("Copy this text exactly:\n{sentences}"),
        80,
    );
    let text = model.complete(&request, None).await.unwrap().text;
    let years: Vec<&str> = text.split(|c: char| !c.is_ascii_digit()).filter(|w| w.len() == 4).collect();
    assert!(years.len() >= 4 && years.iter().all(|y| *y == "2023"), "years changed in copying: {years:?}\n{text}");
}

/// Two kinds of call that alternate — a router's and an answer's, each question — keep their own
/// prefixes: the third call reuses what it shares with the first although another prompt ran between.
/// (With one kept context the router's call evicted the answer's prefix: 7 of 1,599 prompt tokens a
/// question were reused on sec-10-q questions 36–47, docs/evaluation/decisions.md, 2026-11-29 (b).)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_of_two_kinds_that_alternate_each_reuse_their_own_prompt_prefix() {
    let answer = |question: &str| {
        ChatRequest::new(
            "answer",
            "You answer questions using only the passage you are given.",
            format!("Passage:\n{PASSAGE}\n\nQuestion: {question}"),
            16,
        )
    };
    let route = |question: &str| {
        ChatRequest::new(
            "route",
            "Choose how to research a question: lookup for one fact, deep for a question that needs several \
             searches, chain for a question whose each step depends on the one before. Answer with one word.",
            format!("Question: {question}"),
            4,
        )
    };
    let model = model(RepetitionControl::default());
    model.complete(&route("Where was the flight going?"), None).await.unwrap();
    model.complete(&answer("Where was the flight going?"), None).await.unwrap();
    let routed = model.complete(&route("Who owned the airplane?"), None).await.unwrap();
    assert!(routed.usage.cached_prompt_tokens >= 30, "router reused {}", routed.usage.cached_prompt_tokens);
    let answered = model.complete(&answer("Who owned the airplane?"), None).await.unwrap();
    assert!(
        answered.usage.cached_prompt_tokens >= 150,
        "answer reused {} of {} prompt tokens",
        answered.usage.cached_prompt_tokens,
        answered.usage.prompt_tokens
    );
    assert_eq!(PROMPT_CACHE_SLOTS, 2);
}

/// A second call whose prompt shares the first one's system prompt and passage processes only what
/// differs (its usage says how many prompt tokens were reused), and answers exactly as a model that
/// processes the whole prompt does; a cancelled call leaves nothing half-written behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_reuses_the_prompt_prefix_it_shares_with_the_previous_one_and_answers_the_same() {
    let request = |question: &str| {
        ChatRequest::new(
            "answer",
            "You answer questions using only the passage you are given.",
            format!("Passage:\n{PASSAGE}\n\nQuestion: {question}"),
            48,
        )
    };
    let reusing = model(RepetitionControl::default());
    let first = reusing.complete(&request("Where was the flight going?"), None).await.unwrap();
    assert_eq!(first.usage.cached_prompt_tokens, 0, "nothing to reuse on the first call");
    let second = reusing.complete(&request("Who owned the airplane?"), None).await.unwrap();
    let shared = second.usage.cached_prompt_tokens;
    assert!(
        shared >= 150 && shared < second.usage.prompt_tokens,
        "reused {shared} of {} prompt tokens",
        second.usage.prompt_tokens
    );

    let mut config = GgufConfig::low_memory_model().unwrap();
    config.threads = 2;
    config.reuse_prompt_prefix = false;
    let whole = GgufChat::load(config).unwrap();
    whole.complete(&request("Where was the flight going?"), None).await.unwrap();
    let fresh = whole.complete(&request("Who owned the airplane?"), None).await.unwrap();
    assert_eq!(fresh.usage.cached_prompt_tokens, 0);
    assert_eq!(fresh.text, second.text, "reusing the prefix changed the answer");

    // Cancelled part way (the future dropped after its first token): the next call starts afresh and
    // still answers as before.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let sink = move |_: &str| {
        let _ = tx.send(());
        std::ops::ControlFlow::Continue(())
    };
    let long = request("List every fact about the pilot and the airplane.");
    tokio::select! {
        _ = reusing.complete(&long, Some(&sink)) => panic!("the call should have been cancelled"),
        _ = rx.recv() => {}
    }
    let after = reusing.complete(&request("Who owned the airplane?"), None).await.unwrap();
    assert_eq!(after.text, second.text);

    // A sink that asks to stop after its first piece: the call ends, with that piece as its text.
    let first_piece = std::sync::Mutex::new(String::new());
    let stop_after_one = |piece: &str| {
        first_piece.lock().unwrap().push_str(piece);
        std::ops::ControlFlow::Break(())
    };
    let stopped = reusing.complete(&long, Some(&stop_after_one)).await.unwrap();
    assert_eq!(stopped.text, *first_piece.lock().unwrap());
    assert!(!stopped.text.is_empty() && stopped.usage.completion_tokens < 48, "{stopped:?}");
    let after_stop = reusing.complete(&request("Who owned the airplane?"), None).await.unwrap();
    assert_eq!(after_stop.text, second.text, "the next call answers as before");
}

#[test]
fn a_file_that_is_not_gguf_is_refused_with_a_one_line_reason() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.gguf");
    std::fs::write(&path, b"PK\x03\x04 a zip, not a model").unwrap();
    let error = GgufChat::load(GgufConfig::new(&path)).err().expect("a zip is not a model").to_string();
    assert!(
        error.contains("not a GGUF model file") && error.contains("model.gguf") && !error.contains('\n'),
        "{error}"
    );
    let missing = GgufChat::load(GgufConfig::new(dir.path().join("none.gguf"))).err().unwrap().to_string();
    assert!(missing.contains("no such model file"), "{missing}");
}

/// The default model is Qwen2.5-Coder-1.5B when it is installed and the machine has ≥ 4 GiB; otherwise
/// SmolLM2, with a note that says why — never a silent switch.
#[test]
fn the_default_model_falls_back_to_smollm2_below_4_gib_or_when_qwen_is_missing_and_says_so() {
    use quarry_gguf::choose_default_model;
    let qwen = || Ok(std::path::PathBuf::from("/m/qwen2.5-coder-1.5b-instruct/model.gguf"));
    let smol = || Ok(std::path::PathBuf::from("/m/smollm2-135m-instruct/model.gguf"));
    let gib = 1u64 << 30;

    let roomy = choose_default_model(qwen(), smol(), Some(24 * gib));
    assert_eq!(roomy.path, qwen());
    assert_eq!(roomy.note, None);
    assert_eq!(choose_default_model(qwen(), smol(), None).path, qwen(), "unknown RAM is taken as enough");

    let small = choose_default_model(qwen(), smol(), Some(3 * gib));
    assert_eq!(small.path, smol());
    let note = small.note.expect("the fallback is announced");
    assert!(note.contains("3.0 GiB of RAM") && note.contains("SmolLM2"), "{note}");

    let missing = choose_default_model(Err("model file qwen… not found".into()), smol(), Some(24 * gib));
    assert_eq!(missing.path, smol());
    assert!(missing.note.unwrap().contains("not installed"));

    let none = choose_default_model(Err("no qwen".into()), Err("no smollm2".into()), Some(24 * gib));
    assert_eq!(none.path, Err("no qwen; no smollm2".to_string()));
}

/// scripts/env.sh builds llama.cpp with this CPU's vector extensions (a plain x86-64 build processed
/// prompts several times slower), and a build this CPU cannot run is refused before it is loaded.
#[test]
#[cfg(target_arch = "x86_64")]
fn llama_cpp_is_built_with_the_cpus_vector_extensions() {
    assert_eq!(quarry_gguf::missing_cpu_extensions(), None);
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        let compiled = quarry_gguf::compiled_cpu_extensions();
        assert!(
            compiled.contains(&"AVX2") && compiled.contains(&"FMA"),
            "llama.cpp built with {compiled:?}: source scripts/env.sh"
        );
    }
}
