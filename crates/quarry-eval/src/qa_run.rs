//! The question-answering evaluation's run (`quarry eval qa`): each agent answers a benchmark's questions
//! over the set's passages ([`SetRetriever`]), and each run is scored — supporting-passage Recall@5 of
//! the passages the answer was written from, answer EM / F1 (SQuAD normalisation; characters for
//! Chinese) and "contains the reference answer", model calls, tokens and seconds per question. The CLI
//! loads the set, the retriever and the model, and prints what [`run_qa`] reports.

use crate::qa::{contains_answer, exact_match, token_f1, SetRetriever};
use crate::retrieval::{recall_at, EvalSet};
use crate::EvalError;
use quarry_agents::{AgentConfig, AgentEvent, AgentKind, CancellationToken, EventSink, LibraryInfo, SearchableLibrary};
use quarry_core::{ChatModel, Passage, RetrievalError, Retriever};
use serde::Serialize;
use std::io::Write;
use std::sync::{Arc, Mutex};

/// One agent's scores over the questions (`quarry eval qa --json` prints it as one object).
#[derive(Debug, Clone, Serialize)]
pub struct QaReport {
    /// The set's folder name.
    pub set: String,
    /// The agent's name.
    pub agent: String,
    /// The model, as it describes itself.
    pub model: String,
    /// Questions skipped at the start of the set (`--offset`).
    pub offset: usize,
    /// Questions asked.
    pub questions: usize,
    /// Mean share of a question's supporting passages among the first five the answer was written from.
    #[serde(rename = "support_recall@5")]
    pub support_recall_at_5: f64,
    /// Mean exact match against the reference answers (SQuAD normalisation).
    pub em: f64,
    /// Mean token F1 against the reference answers.
    pub f1: f64,
    /// Share of answers containing a reference answer.
    pub answer_contains: f64,
    /// Model calls a question.
    pub llm_calls_per_q: f64,
    /// Prompt and completion tokens a question.
    pub tokens_per_q: f64,
    /// Seconds a question.
    pub seconds_per_q: f64,
    /// Questions whose run failed (counted as 0 in every mean).
    pub failed: usize,
}

/// What [`run_qa`] tells its caller as it goes, for a progress bar and the printed reports.
#[derive(Debug)]
pub enum QaProgress<'a> {
    /// An agent starts.
    Agent {
        /// The agent (`None`: the router's choice).
        agent: Option<AgentKind>,
        /// How many questions it will be asked.
        questions: usize,
    },
    /// One question was answered or failed.
    Asked,
    /// A question's run failed.
    Failed {
        /// The question's id.
        qid: &'a str,
        /// Why.
        error: String,
    },
    /// An agent's run finished.
    Report(&'a QaReport),
}

/// One line of the trace: what happened to one question's supporting passages. Passage ids are the set's.
#[derive(Debug, Serialize)]
struct QuestionTrace<'a> {
    qid: &'a str,
    agent: &'a str,
    question: &'a str,
    /// The qrels' supporting passages.
    supporting: Vec<&'a str>,
    /// The passages the answer was written from, in the order given to the model (Recall@5 takes the
    /// first five).
    used: Vec<&'a str>,
    /// Queries per round.
    queries: Vec<Vec<String>>,
    /// Per judged round: (kept, rejected) passage ids.
    judged: Vec<(Vec<&'a str>, Vec<&'a str>)>,
    /// Every search the agent ran, in the order the searches finished (round 1's run in parallel): the
    /// query and the passage ids it returned, best first.
    searches: Vec<(String, Vec<&'a str>)>,
    /// DeepSearch's reflections, per round: (facts, gap queries).
    reflections: Vec<(Vec<String>, Vec<String>)>,
    /// ChainOfRAG's steps: (follow-up query, intermediate answer, the passage ids it cites).
    steps: Vec<(String, String, Vec<&'a str>)>,
    /// Why the search stopped, and any degraded step (`step: problem; fallback`), in order.
    notes: Vec<String>,
    /// The ordering search (the question and DeepSearch's facts or ChainOfRAG's intermediate answers),
    /// when it ran; it is also the last entry of `searches`.
    ordered_by: Option<String>,
    answer: String,
    /// The agent that answered (with `--agent auto`, the router's choice).
    answered_by: String,
    /// The answer's scores against the set's references: (exact match, F1, contains), each 0–1.
    scores: (f64, f64, f64),
    /// The genre the answer was read and written with ([`quarry_agents::Answer::genre`]).
    genre: String,
    error: Option<String>,
}

/// The set's retriever, remembering every search (query, chunk ids best first) for the trace.
struct RecordingRetriever {
    inner: Arc<SetRetriever>,
    searches: Mutex<Vec<(String, Vec<u64>)>>,
}

#[async_trait::async_trait]
impl Retriever for RecordingRetriever {
    async fn retrieve(&self, query: &str, k: usize) -> Result<Vec<Passage>, RetrievalError> {
        let passages = self.inner.retrieve(query, k).await?;
        self.searches
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((query.to_string(), passages.iter().map(|p| p.chunk_id).collect()));
        Ok(passages)
    }
}

/// The steps of one question's run that the trace records, gathered from its events.
#[derive(Debug, Default)]
struct StepLog {
    /// Per judged round: (kept, rejected) chunk ids.
    judged: Vec<(Vec<u64>, Vec<u64>)>,
    /// Per reflection: (facts, gap queries).
    reflections: Vec<(Vec<String>, Vec<String>)>,
    /// Per ChainOfRAG step: (query, intermediate answer, cited chunk ids).
    steps: Vec<(String, String, Vec<u64>)>,
    /// Stop reasons and degraded steps, in order.
    notes: Vec<String>,
    /// The query that ordered the kept passages.
    ordered_by: Option<String>,
}

impl StepLog {
    fn record(&mut self, event: AgentEvent) {
        match event {
            AgentEvent::Judged { kept, rejected, .. } => {
                let ids = |refs: Vec<quarry_agents::PassageRef>| refs.into_iter().map(|r| r.chunk_id).collect();
                self.judged.push((ids(kept), ids(rejected)));
            }
            AgentEvent::Reflected { facts, queries, .. } => self.reflections.push((facts, queries)),
            AgentEvent::IntermediateAnswer { query, answer, supporting, .. } => {
                self.steps.push((query, answer, supporting.into_iter().map(|r| r.chunk_id).collect()))
            }
            AgentEvent::Stopped { round, reason } => self.notes.push(format!("stopped after round {round}: {reason}")),
            AgentEvent::Degraded { step, problem, fallback } => {
                self.notes.push(format!("{step}: {problem}; {fallback}"))
            }
            AgentEvent::Ordered { query, .. } => self.ordered_by = Some(query),
            _ => {}
        }
    }
}

/// An agent's name in reports and traces: `auto` for the router's choice (`None`).
pub fn agent_name(agent: Option<AgentKind>) -> &'static str {
    agent.map_or("auto", AgentKind::name)
}

/// Asks every question of `set` with each of `agents` in turn, over `retriever` (one library named
/// `eval`) with `model` and `config`, and scores the answers; returns one report per agent, in order.
/// `offset` is recorded in the reports (the caller has dropped those questions from `set`). With
/// `trace`, one JSON line per question and agent is written and flushed as it finishes (a run stopped
/// part way keeps every finished question). `progress` hears of each agent, question and report.
///
/// A question whose run fails counts 0 in every mean and is reported through `progress`. Errors: only
/// writing the trace.
#[allow(clippy::too_many_arguments)] // what one run is: set, index, model, agents, settings, outputs
pub async fn run_qa(
    set: &EvalSet,
    retriever: Arc<SetRetriever>,
    model: Arc<dyn ChatModel>,
    agents: &[Option<AgentKind>],
    config: &AgentConfig,
    offset: usize,
    mut trace: Option<&mut dyn Write>,
    progress: &mut dyn FnMut(QaProgress<'_>),
) -> Result<Vec<QaReport>, EvalError> {
    let recorder = Arc::new(RecordingRetriever { inner: Arc::clone(&retriever), searches: Mutex::default() });
    let libraries = vec![SearchableLibrary {
        info: LibraryInfo { name: "eval".into(), description: format!("{} passages", set.passages.len()) },
        retriever: Arc::clone(&recorder) as _,
        always: false,
    }];
    let mut reports = Vec::with_capacity(agents.len());
    for &agent in agents {
        progress(QaProgress::Agent { agent, questions: set.queries.len() });
        let (mut recall, mut em, mut f1, mut contains, mut calls, mut tokens, mut seconds, mut failed) =
            (0.0, 0.0, 0.0, 0.0, 0usize, 0u64, 0.0, 0usize);
        for (qid, question) in &set.queries {
            let steps: Arc<Mutex<StepLog>> = Arc::default();
            recorder.searches.lock().unwrap_or_else(|e| e.into_inner()).clear();
            let events: EventSink = {
                let steps = Arc::clone(&steps);
                Arc::new(move |event| steps.lock().unwrap_or_else(|e| e.into_inner()).record(event))
            };
            let result = quarry_agents::ask(
                question,
                agent,
                Arc::clone(&model),
                &libraries,
                config.clone(),
                events,
                CancellationToken::new(),
            )
            .await;
            progress(QaProgress::Asked);
            let empty = std::collections::HashSet::new();
            let relevant = set.relevant.get(qid).unwrap_or(&empty);
            let references = set.answers.get(qid).cloned().unwrap_or_default();
            let scores = result.as_ref().map_or((0.0, 0.0, 0.0), |answer| {
                let text = quarry_agents::answer::strip_citations(&answer.markdown);
                (exact_match(&text, &references), token_f1(&text, &references), contains_answer(&text, &references))
            });
            if let Some(out) = trace.as_mut() {
                let ids = |chunks: &[u64]| chunks.iter().map(|&c| retriever.passage_id_of(c)).collect::<Vec<&str>>();
                let steps = std::mem::take(&mut *steps.lock().unwrap_or_else(|e| e.into_inner()));
                let line = QuestionTrace {
                    qid,
                    agent: agent_name(agent),
                    question,
                    supporting: relevant.iter().map(String::as_str).collect(),
                    used: result
                        .as_ref()
                        .map(|a| a.sources.iter().map(|c| retriever.passage_id(&c.passage)).collect())
                        .unwrap_or_default(),
                    queries: result.as_ref().map(|a| a.queries.clone()).unwrap_or_default(),
                    judged: steps.judged.iter().map(|(k, r)| (ids(k), ids(r))).collect(),
                    searches: recorder
                        .searches
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .iter()
                        .map(|(q, c)| (q.clone(), ids(c)))
                        .collect(),
                    reflections: steps.reflections,
                    steps: steps.steps.iter().map(|(q, a, cited)| (q.clone(), a.clone(), ids(cited))).collect(),
                    notes: steps.notes,
                    ordered_by: steps.ordered_by,
                    answer: result.as_ref().map(|a| a.markdown.clone()).unwrap_or_default(),
                    answered_by: result.as_ref().map(|a| a.agent.clone()).unwrap_or_default(),
                    scores,
                    genre: result.as_ref().map(|a| a.genre.clone()).unwrap_or_default(),
                    error: result.as_ref().err().map(|e| e.to_string()),
                };
                let mut text = serde_json::to_string(&line).map_err(|e| EvalError::Trace(e.to_string()))?;
                text.push('\n');
                out.write_all(text.as_bytes())
                    .and_then(|()| out.flush())
                    .map_err(|e| EvalError::Trace(e.to_string()))?;
            }
            let answer = match result {
                Ok(answer) => answer,
                Err(e) => {
                    progress(QaProgress::Failed { qid, error: e.to_string() });
                    failed += 1;
                    continue;
                }
            };
            let used: Vec<&str> = answer.sources.iter().take(5).map(|c| retriever.passage_id(&c.passage)).collect();
            let supporting: Vec<&String> = relevant.iter().collect();
            recall += recall_at(&used, &supporting, 5, |id, r| *id == r.as_str());
            em += scores.0;
            f1 += scores.1;
            contains += scores.2;
            calls += answer.llm_calls;
            tokens += answer.usage.total();
            seconds += answer.seconds;
        }
        let n = set.queries.len().max(1) as f64;
        let report = QaReport {
            set: set.name.clone(),
            agent: agent_name(agent).into(),
            model: model.describe(),
            offset,
            questions: set.queries.len(),
            support_recall_at_5: recall / n,
            em: em / n,
            f1: f1 / n,
            answer_contains: contains / n,
            llm_calls_per_q: calls as f64 / n,
            tokens_per_q: tokens as f64 / n,
            seconds_per_q: seconds / n,
            failed,
        };
        progress(QaProgress::Report(&report));
        reports.push(report);
    }
    Ok(reports)
}
