//! `quarry eval qa`: an agent answers a benchmark's questions over the set's passages (one passage = one
//! chunk, hybrid retrieval in memory), and the run is scored ([`quarry_eval::qa_run`]): supporting-passage
//! Recall@5 of the passages the answer was written from, answer EM / F1 (SQuAD normalisation; characters
//! for Chinese) and "contains the reference answer", model calls, tokens and seconds per question. This
//! module reads the arguments, loads the set, the index and the model, and prints.

use crate::commands::args::LlmArgs;
use anyhow::Context;
use quarry_agents::AgentConfig;
use quarry_eval::qa::SetRetriever;
use quarry_eval::qa_run::{run_qa, QaProgress, QaReport};
use quarry_eval::retrieval::load_set;
use quarry_index::{Embedder, EmbedderConfig};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(clap::Args)]
pub struct QaArgs {
    /// Folder of the set (corpus.jsonl, queries.jsonl with `answers`, qrels.tsv).
    #[arg(long)]
    pub set: PathBuf,
    /// auto (the router's choice), naive, deep or chain; several separated by commas (`naive,deep,chain`)
    /// share one index of the passages and print one report each.
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

pub fn qa(args: QaArgs) -> anyhow::Result<()> {
    let agents = super::parse_agents(&args.agent)?;
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
    let mut printed: anyhow::Result<()> = Ok(());
    let mut progress = |step: QaProgress<'_>| match step {
        QaProgress::Agent { agent, questions } => {
            bar.set_length(questions as u64);
            bar.set_position(0);
            bar.set_message(format!("questions, {} agent", quarry_eval::qa_run::agent_name(agent)));
        }
        QaProgress::Asked => bar.inc(1),
        // A hidden bar (stderr not a terminal) prints nothing: the failure still goes to stderr.
        QaProgress::Failed { qid, error } if bar.is_hidden() => eprintln!("{qid}: {error}"),
        QaProgress::Failed { qid, error } => bar.println(format!("{qid}: {error}")),
        QaProgress::Report(report) => {
            if printed.is_ok() {
                printed = bar.suspend(|| print_report(report, args.json));
            }
        }
    };
    let trace_out = trace.as_mut().map(|t| t as &mut dyn std::io::Write);
    runtime.block_on(run_qa(&set, retriever, model, &agents, &config, args.offset, trace_out, &mut progress))?;
    bar.finish_and_clear();
    printed
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
