//! The question-answering run (`quarry_eval::qa_run`) on real HotpotQA questions, with a scripted model
//! in place of the language model: what is asked, scored and traced.

use crate::retrieval::{benchmarks, subset};
use crate::ScriptedModel;
use quarry_agents::{AgentConfig, AgentKind};
use quarry_eval::qa::SetRetriever;
use quarry_eval::qa_run::{run_qa, QaProgress};
use quarry_eval::retrieval::load_set;
use std::sync::Arc;

#[tokio::test]
async fn each_question_is_asked_scored_against_its_references_and_traced() {
    let set = subset(load_set(&benchmarks().join("hotpotqa_rpt_dev300"), Some(2)).unwrap(), 2, 20);
    let retriever = Arc::new(SetRetriever::build(&set, None, &mut |_, _| {}).unwrap());
    // Every question answered "Tulsa", the first HotpotQA question's answer.
    let model = Arc::new(ScriptedModel::new(|_| "Tulsa [1]."));
    let mut trace: Vec<u8> = Vec::new();
    let (mut asked, mut reported) = (0, 0);
    let mut progress = |step: QaProgress<'_>| match step {
        QaProgress::Asked => asked += 1,
        QaProgress::Report(_) => reported += 1,
        _ => {}
    };
    let reports = run_qa(
        &set,
        retriever,
        model.clone(),
        &[Some(AgentKind::Naive)],
        &AgentConfig::default(),
        0,
        Some(&mut trace),
        &mut progress,
    )
    .await
    .unwrap();
    assert_eq!((asked, reported), (2, 1));
    let report = &reports[0];
    assert_eq!((report.agent.as_str(), report.questions, report.failed), ("naive", 2, 0));
    // "Tulsa" is the first question's answer, not the second's.
    assert_eq!(report.em, 0.5, "{report:?}");
    assert_eq!(report.answer_contains, 0.5, "{report:?}");
    assert_eq!(report.llm_calls_per_q, 1.0, "NaiveRAG: one call a question");
    assert_eq!(model.calls(), 2);
    assert!(report.support_recall_at_5 > 0.0, "BM25 finds supporting passages: {report:?}");
    let lines: Vec<serde_json::Value> =
        String::from_utf8(trace).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    // Each question's own scores (exact match, F1, contains): "Tulsa" is the first one's answer only.
    assert_eq!(lines[0]["scores"][2], 1.0, "{}", lines[0]);
    assert_eq!(lines[1]["scores"][2], 0.0, "{}", lines[1]);
    for (line, (qid, _)) in lines.iter().zip(&set.queries) {
        assert_eq!(line["qid"], qid.as_str());
        // The model's words alone: a benchmark's passages list no documents to recognise a genre by, so
        // the pipeline reads them with none (no filing-style quote under a Wikipedia answer).
        assert_eq!(line["answer"], "Tulsa [1].", "{line}");
        assert_eq!(line["genre"], "general", "{line}");
        assert_eq!(line["answered_by"], "naive", "{line}");
        assert!(!line["supporting"].as_array().unwrap().is_empty() && !line["used"].as_array().unwrap().is_empty());
        assert_eq!(line["searches"].as_array().unwrap().len(), 1, "NaiveRAG searches once: {line}");
    }
}
