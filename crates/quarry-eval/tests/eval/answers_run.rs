//! The answers evaluation's run (`quarry_eval::answers_run`) with a scripted model over a small library
//! of filing passages held in memory: which questions are answerable, and how an answer is scored.

use crate::ScriptedModel;
use quarry_agents::{AgentConfig, AgentKind, LibraryInfo, ResearchConfig, SearchableLibrary};
use quarry_core::chat::ChatRequest;
use quarry_eval::answers_run::{answer_all, report_all, select_questions, AnswersProgress, Only, RunSetup};
use quarry_eval::qa::SetRetriever;
use quarry_eval::retrieval::EvalSet;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Answers a revenue question with the figure the passage states, and declines anything else.
fn revenue_or_decline(request: &ChatRequest) -> &'static str {
    let asked = request.messages.last().map(|m| m.content.as_str()).unwrap_or_default();
    if asked.contains("revenue") {
        "Acme's revenue for the first quarter was $7,192 million [1]."
    } else {
        "The documents do not state it."
    }
}

fn set() -> EvalSet {
    let q = |id: &str, text: &str| (id.to_string(), text.to_string());
    let docs = |paths: &[&str]| paths.iter().map(|p| p.to_string()).collect::<HashSet<String>>();
    EvalSet {
        name: "acme".into(),
        passages: vec![
            ("docs/2023 Q1 ACME.pdf".into(), "Acme Corp. revenue for the first quarter was $7,192 million.".into()),
            ("docs/2023 Q2 ACME.pdf".into(), "Acme Corp. opened two plants in the second quarter.".into()),
        ],
        queries: vec![
            q("q1", "What was Acme's revenue in the first quarter?"),
            q("q2", "How many employees does Globex have?"),
            q("q3", "Compare Acme and Initech revenue."),
        ],
        relevant: HashMap::from([
            ("q1".to_string(), docs(&["docs/2023 Q1 ACME.pdf"])),
            ("q2".to_string(), docs(&["docs/2023 Q1 GLOBEX.pdf"])),
            ("q3".to_string(), docs(&["docs/2023 Q1 ACME.pdf", "docs/2023 Q1 INITECH.pdf"])),
        ]),
        answers: HashMap::from([
            ("q1".to_string(), vec!["Revenue was $7,192 million (SOURCE: 2023 Q1 ACME.pdf).".to_string()]),
            ("q2".to_string(), vec!["Globex has 1,200 employees.".to_string()]),
        ]),
    }
}

/// Every question of [`set`] over a library of its two Acme passages (held in memory), and that library.
fn acme_questions_and_library() -> (Vec<quarry_eval::answers_run::Question>, SearchableLibrary) {
    let set = set();
    let paths = vec!["/lib/2023 Q1 ACME.pdf".to_string(), "/lib/2023 Q2 ACME.pdf".to_string()];
    let questions = select_questions(&set, &paths, Only::All);
    let retriever = Arc::new(SetRetriever::build(&set, None, &mut |_, _| {}).unwrap());
    let library = SearchableLibrary {
        info: LibraryInfo { name: "acme".into(), description: String::new() },
        retriever,
        always: false,
    };
    (questions, library)
}

#[test]
fn a_question_is_answerable_when_the_library_holds_all_its_documents_unanswerable_when_none() {
    let set = set();
    let paths = vec!["/lib/2023 Q1 ACME.pdf".to_string(), "/lib/2023 Q2 ACME.pdf".to_string()];
    let all = select_questions(&set, &paths, Only::All);
    // q3 names one document the library holds and one it lacks: left out.
    let ids: Vec<(&str, bool)> = all.iter().map(|q| (q.id.as_str(), q.answerable)).collect();
    assert_eq!(ids, [("q1", true), ("q2", false)]);
    assert_eq!(all[0].figures.len(), 1, "$7,192 million");
    assert_eq!(select_questions(&set, &paths, Only::Unanswerable).len(), 1);
    assert!("some".parse::<Only>().unwrap_err().contains("all, answerable or unanswerable"));
}

#[tokio::test]
async fn answers_are_scored_by_the_reference_figures_they_state_their_citations_and_declines() {
    let (questions, library) = acme_questions_and_library();
    let config = AgentConfig::default();
    let setup = RunSetup { set: "acme", library: "acme", offset: 0, config: &config };
    let mut trace: Vec<u8> = Vec::new();
    let mut started = Vec::new();
    let mut progress = |step: AnswersProgress<'_>| {
        if let AnswersProgress::Started(what) = step {
            started.push(what);
        }
    };
    let reports = answer_all(
        &setup,
        &questions,
        std::slice::from_ref(&library),
        Arc::new(ScriptedModel::new(revenue_or_decline)),
        &[Some(AgentKind::Naive)],
        Some(&mut trace),
        &mut progress,
    )
    .await
    .unwrap();
    assert_eq!(started, ["naive agent"]);
    let report = &reports[0];
    assert_eq!((report.answerable, report.unanswerable, report.failed), (1, 1, 0));
    assert_eq!(report.key_fact_score, Some(1.0), "the one reference figure stated: {report:?}");
    assert_eq!(report.cited_rate, Some(1.0));
    assert_eq!(report.abstention, Some(1.0), "the unanswerable question declined: {report:?}");
    assert_eq!(report.false_decline, Some(0.0));
    let lines: Vec<serde_json::Value> =
        String::from_utf8(trace).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["stated"], serde_json::json!(["$7,192 million"]));
    assert_eq!(lines[1]["declined"], true);
}

/// Writes a report of two sections that say the same two things, one of them in no passage.
fn report_of_two_alike_sections(request: &ChatRequest) -> &'static str {
    match request.step.as_str() {
        "report_plan" => {
            r#"{"sections": [{"title": "Revenue", "focus": "Acme revenue"}, {"title": "Results", "focus": "Acme results"}]}"#
        }
        "sub_queries" => r#"{"queries": ["Acme revenue first quarter"]}"#,
        "report_section" => {
            "Acme's revenue for the first quarter was $7,192 million [1][2]. Acme had 9,999 employees at the end of it [1][2]."
        }
        "report_review" => r#"{"pass": true, "queries": []}"#,
        "report_introduction" => "This report covers Acme's revenue.",
        "report_conclusion" => "Acme's first quarter was a good one.",
        _ => "{}",
    }
}

#[tokio::test]
async fn reports_are_scored_by_the_reference_figures_they_state_their_supported_claims_and_repeats() {
    let (questions, library) = acme_questions_and_library();
    let config = AgentConfig { max_rounds: 1, ..AgentConfig::default() };
    let setup = RunSetup { set: "acme", library: "acme", offset: 0, config: &config };
    let mut trace: Vec<u8> = Vec::new();
    let model = Arc::new(ScriptedModel::new(report_of_two_alike_sections));
    let report = report_all(
        &setup,
        &questions,
        std::slice::from_ref(&library),
        Arc::clone(&model) as _,
        ResearchConfig::default(),
        Some(&mut trace),
        &mut |_| {},
    )
    .await
    .unwrap();
    // Only the answerable question is written up: plan, per section sub-queries + write + review (two
    // passages found: kept without a relevance call), introduction, conclusion.
    assert_eq!((report.agent.as_str(), report.failed), ("report", 0));
    assert_eq!(report.answered_by.get("report"), Some(&1));
    assert_eq!(model.calls(), 1 + 2 * 3 + 2);
    assert_eq!(report.key_fact_score, Some(1.0), "$7,192 million stated: {report:?}");
    // The second section said only what the first said, so the report keeps the first's two claims and
    // says the second found nothing new: both claims cited, the revenue supported, the head count not.
    assert_eq!(report.cited_sentence_rate, Some(1.0), "{report:?}");
    assert_eq!(report.supported_claim_rate, Some(0.5), "{report:?}");
    assert_eq!(report.repeated_sentence_rate, Some(0.0), "{report:?}");
    assert_eq!(report.cited_rate, None, "an answers-only score");
    let lines: Vec<serde_json::Value> =
        String::from_utf8(trace).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["stated"], serde_json::json!(["$7,192 million"]));
    assert_eq!(lines[0]["repeated"], serde_json::json!([]));
    let markdown = lines[0]["report"].as_str().unwrap();
    assert!(markdown.contains(&format!("## Results\n\n{}", quarry_agents::NOTHING_NEW)), "{markdown}");
    // The reader sees which claim its passages do not support, under its section.
    assert!(markdown.contains("**Unsupported by the cited passages** (1 of 2 claims"), "{markdown}");
    assert!(markdown.contains("figures not in the cited passages: 9,999"), "{markdown}");

    // The sections as the model wrote them: four claims, the second section's two said before.
    let as_written = ResearchConfig { finish_sections: false, ..ResearchConfig::default() };
    let model = Arc::new(ScriptedModel::new(report_of_two_alike_sections));
    let report = report_all(&setup, &questions, std::slice::from_ref(&library), model, as_written, None, &mut |_| {})
        .await
        .unwrap();
    assert_eq!(report.cited_sentence_rate, Some(1.0), "{report:?}");
    assert_eq!(report.supported_claim_rate, Some(0.5), "{report:?}");
    assert_eq!(report.repeated_sentence_rate, Some(0.5), "{report:?}");
}
