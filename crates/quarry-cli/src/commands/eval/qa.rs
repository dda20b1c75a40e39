//! `quarry eval qa`: an agent answers a benchmark's questions over the set's passages (one passage = one
//! chunk, hybrid retrieval in memory), and the run is scored: supporting-passage Recall@5 of the passages
//! the answer was written from, answer EM / F1 (SQuAD normalisation; characters for Chinese) and
//! "contains the reference answer", model calls, tokens and seconds per question.

use crate::commands::args::LlmArgs;
use anyhow::Context;
use quarry_agents::{AgentConfig, AgentEvent, AgentKind, CancellationToken, EventSink, LibraryInfo, SearchableLibrary};
use quarry_core::{Passage, RetrievalError, Retriever};
use quarry_eval::qa::{contains_answer, exact_match, token_f1, SetRetriever};
use quarry_eval::retrieval::{load_set, recall_at};
use quarry_index::{Embedder, EmbedderConfig};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

#[derive(clap::Args)]
pub struct QaArgs {
    /// Folder of the set (corpus.jsonl, queries.jsonl with `answers`, qrels.tsv).
    #[arg(long)]
    pub set: PathBuf,
    /// naive, deep or chain; several separated by commas (`naive,deep,chain`) share one index of the
    /// passages and print one report each.
    #[arg(long)]
    pub agent: String,
    /// Only the first N questions (after `--offset`).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Skip the first N questions: `--offset 15 --limit 15` asks questions 16–30, a held-out check for a
    /// change studied on the first 15.
    #[arg(long, default_value_t = 0)]
    pub offset: usize,
    /// Most search rounds.
    #[arg(long, default_value_t = 3)]
    pub max_rounds: usize,
    /// Seconds a DeepSearch or ChainOfRAG search may take before the answer is written (0: no limit).
    #[arg(long, default_value_t = quarry_agents::DEFAULT_SEARCH_SECONDS)]
    pub search_seconds: f64,
    /// Passages retrieved per query.
    #[arg(short, default_value_t = 8)]
    pub k: usize,
    /// Most tokens of each answer.
    #[arg(long, default_value_t = 256)]
    pub answer_tokens: u32,
    /// DeepSearch: how many of the whole question's best hits are kept without the relevance judge.
    #[arg(long, default_value_t = AgentConfig::default().protected_question_hits)]
    pub protected_hits: usize,
    /// BM25 only (no embedding model).
    #[arg(long)]
    pub bm25_only: bool,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also write one JSON line per question and agent to this file: the supporting passage ids, the
    /// passages the answer was written from (in order), every query asked and, per round, which
    /// retrieved passages the relevance judge kept or rejected — to see where supporting passages are lost.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    #[command(flatten)]
    pub llm: LlmArgs,
}

/// One line of `--trace`: what happened to one question's supporting passages. Passage ids are the set's.
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
    error: Option<String>,
}

/// The set's retriever, remembering every search (query, chunk ids best first) for `--trace`.
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

/// The steps of one question's run that `--trace` records, gathered from its events.
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

/// `quarry eval qa --json` prints this object.
#[derive(Debug, Serialize)]
struct QaReport {
    set: String,
    agent: String,
    model: String,
    /// Questions skipped at the start of the set (`--offset`).
    offset: usize,
    questions: usize,
    #[serde(rename = "support_recall@5")]
    support_recall_at_5: f64,
    em: f64,
    f1: f64,
    answer_contains: f64,
    llm_calls_per_q: f64,
    tokens_per_q: f64,
    seconds_per_q: f64,
    failed: usize,
}

pub fn qa(args: QaArgs) -> anyhow::Result<()> {
    let agents: Vec<AgentKind> =
        args.agent.split(',').map(|a| a.trim().parse().map_err(anyhow::Error::msg)).collect::<anyhow::Result<_>>()?;
    let mut set = load_set(&args.set, args.limit.map(|n| n + args.offset))
        .with_context(|| format!("loading {}", args.set.display()))?;
    set.queries.drain(..args.offset.min(set.queries.len()));
    let embedder = if args.bm25_only {
        None
    } else {
        Some(Embedder::new(&EmbedderConfig::default_model()?).context("loading the embedding model")?)
    };
    let bar = indicatif::ProgressBar::new(set.passages.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} eta {eta}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_message("embedding passages");
    let retriever = Arc::new(SetRetriever::build(&set, embedder, &mut |done, _| bar.set_position(done as u64))?);
    let model = args.llm.load()?;
    let recorder = Arc::new(RecordingRetriever { inner: Arc::clone(&retriever), searches: Mutex::default() });
    let libraries = vec![SearchableLibrary {
        info: LibraryInfo { name: "eval".into(), description: format!("{} passages", set.passages.len()) },
        retriever: Arc::clone(&recorder) as _,
        always: false,
    }];
    let config = AgentConfig {
        max_rounds: args.max_rounds.max(1),
        top_k: args.k.max(1),
        search_seconds: quarry_agents::search_budget(args.search_seconds),
        answer_max_tokens: args.answer_tokens.max(16),
        protected_question_hits: args.protected_hits,
        ..AgentConfig::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let mut trace = match &args.trace {
        Some(path) => Some(std::io::BufWriter::new(
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
        )),
        None => None,
    };
    for agent in agents {
        bar.set_length(set.queries.len() as u64);
        bar.set_position(0);
        bar.set_message(format!("questions, {} agent", agent.name()));
        let (mut recall, mut em, mut f1, mut contains, mut calls, mut tokens, mut seconds, mut failed) =
            (0.0, 0.0, 0.0, 0.0, 0usize, 0u64, 0.0, 0usize);
        for (qid, question) in &set.queries {
            let steps: Arc<Mutex<StepLog>> = Arc::default();
            recorder.searches.lock().unwrap_or_else(|e| e.into_inner()).clear();
            let events: EventSink = {
                let steps = Arc::clone(&steps);
                Arc::new(move |event| steps.lock().unwrap_or_else(|e| e.into_inner()).record(event))
            };
            let result = runtime.block_on(quarry_agents::ask(
                question,
                Some(agent),
                Arc::clone(&model),
                &libraries,
                config.clone(),
                events,
                CancellationToken::new(),
            ));
            bar.inc(1);
            let relevant = &set.relevant[qid];
            if let Some(out) = trace.as_mut() {
                let ids = |chunks: &[u64]| chunks.iter().map(|&c| retriever.passage_id_of(c)).collect::<Vec<&str>>();
                let steps = std::mem::take(&mut *steps.lock().unwrap_or_else(|e| e.into_inner()));
                let line = QuestionTrace {
                    qid,
                    agent: agent.name(),
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
                    error: result.as_ref().err().map(|e| e.to_string()),
                };
                serde_json::to_writer(&mut *out, &line)?;
                writeln!(out)?;
                out.flush()?; // a run stopped part way keeps every finished question
            }
            let answer = match result {
                Ok(answer) => answer,
                Err(e) => {
                    bar.println(format!("{qid}: {e}"));
                    failed += 1;
                    continue;
                }
            };
            let used: Vec<&str> = answer.sources.iter().take(5).map(|c| retriever.passage_id(&c.passage)).collect();
            let supporting: Vec<&String> = relevant.iter().collect();
            recall += recall_at(&used, &supporting, 5, |id, r| *id == r.as_str());
            let references = set.answers.get(qid).cloned().unwrap_or_default();
            let text = quarry_agents::answer::strip_citations(&answer.markdown);
            em += exact_match(&text, &references);
            f1 += token_f1(&text, &references);
            contains += contains_answer(&text, &references);
            calls += answer.llm_calls;
            tokens += answer.usage.total();
            seconds += answer.seconds;
        }
        let n = set.queries.len().max(1) as f64;
        let report = QaReport {
            set: set.name.clone(),
            agent: agent.name().into(),
            model: model.describe(),
            offset: args.offset,
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
        bar.suspend(|| print_report(&report, args.json))?;
    }
    bar.finish_and_clear();
    if let Some(mut out) = trace {
        out.flush()?;
    }
    Ok(())
}

/// One report: a JSON line with `--json`, else a Markdown heading and table.
fn print_report(report: &QaReport, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(report)?);
    } else {
        let failed = if report.failed > 0 { format!(", {} failed", report.failed) } else { String::new() };
        println!(
            "## {} — {} agent, {} ({} questions{failed})\n",
            report.set, report.agent, report.model, report.questions
        );
        println!("| support R@5 | EM | F1 | contains answer | LLM calls/q | tokens/q | s/q |\n|---:|---:|---:|---:|---:|---:|---:|");
        println!(
            "| {:.3} | {:.3} | {:.3} | {:.3} | {:.1} | {:.0} | {:.1} |\n",
            report.support_recall_at_5,
            report.em,
            report.f1,
            report.answer_contains,
            report.llm_calls_per_q,
            report.tokens_per_q,
            report.seconds_per_q
        );
    }
    Ok(())
}
