//! `quarry eval`: measurements that decide between designs. `retrieval` scores bm25, dense and hybrid
//! search on a BEIR-style set (see `quarry_eval::retrieval`).

pub mod answers;
pub mod embedder;
pub mod latency;
pub mod library;
pub mod qa;

use anyhow::Context;
use quarry_eval::retrieval::{evaluate_retrieval, load_set, RetrievalReport};
use quarry_index::{Embedder, EmbedderConfig, HybridFusion};
use std::path::PathBuf;

#[derive(clap::Subcommand)]
pub enum EvalCommand {
    /// Recall@2/5/10, nDCG@10 and MRR@10 of bm25, dense and hybrid search on a set with corpus.jsonl,
    /// queries.jsonl and qrels.tsv (one passage = one chunk).
    Retrieval(RetrievalArgs),
    /// Query latency (p50/p95 per mode, exact and ANN) of libraries of given sizes built from sets'
    /// passages, and the embedding throughput.
    Latency(latency::LatencyArgs),
    /// Document-level recall of a library built with `quarry add` on a question set whose qrels name
    /// documents by path (e.g. ../shared/eval/C_private_library/qna/sec-10-q), for each search mode.
    Library(library::LibraryEvalArgs),
    /// Answer a set's questions with an agent over its passages: supporting-passage Recall@5, EM/F1,
    /// model calls, tokens and seconds per question.
    Qa(qa::QaArgs),
    /// Answer a question set over a library and score what a person reads: the reference's key figures
    /// stated, citations, claims supported by the cited passages, abstention on questions the library
    /// cannot answer, seconds per question (`--retrieval-only`: the passages the answer would be written
    /// from, no model).
    Answers(Box<answers::AnswersArgs>),
    /// Embedding speed on a library's chunks (as an ingest embeds them), beside the Python onnxruntime
    /// reference on the same texts with `--python` (`scripts/bench-embedder.sh`): chunks/s, tokens/s,
    /// their ratio and the cosine of the two engines' vectors.
    Embedder(embedder::EmbedderEvalArgs),
}

#[derive(clap::Args)]
pub struct RetrievalArgs {
    /// Folder of the set (e.g. ../shared/eval/A_benchmarks/hotpotqa_rpt_dev300).
    #[arg(long)]
    pub set: PathBuf,
    /// Only the first N queries (the whole corpus is still indexed).
    #[arg(long)]
    pub limit: Option<usize>,
    /// BM25 only: skip embedding (no model files needed).
    #[arg(long)]
    pub bm25_only: bool,
    /// Hybrid fusions to compare, comma-separated, each `<method>[:<dense weight>][@<depth>]` with method
    /// rrf, minmax, zscore, rrf-adaptive, minmax-adaptive or minmax-confidence (e.g.
    /// `minmax-confidence,rrf,zscore:0.6@100`); one row each, `hybrid` for what search uses
    /// (`HybridFusion::default()`, minmax-confidence) and `hybrid <fusion>` for the others.
    #[arg(long, default_value = "minmax-confidence", value_delimiter = ',')]
    pub fusion: Vec<HybridFusion>,
    /// Embedding model: `minilm` (all-MiniLM-L6-v2, English) or `e5` (multilingual-e5-small, Chinese and
    /// ~100 other languages).
    #[arg(long, default_value = "minilm")]
    pub embedder: String,
    /// Keep passage vectors between runs in the system temp folder (`quarry-eval-vectors/`, keyed by
    /// model and corpus), so comparing fusions does not embed the corpus again; `index_dense` then times
    /// the cache read.
    #[arg(long)]
    pub vector_cache: bool,
    /// Write each query's BM25 and dense rankings (ids and raw scores, before fusion) to this file, one
    /// JSON object per line: `{"query_id", "fused", "relevant", "bm25": [[id, score]…], "dense": […]}`.
    #[arg(long)]
    pub rankings: Option<PathBuf>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The agents a comma-separated `--agent` list names: `auto` (the router's choice) as `None`, `naive`,
/// `deep`, `chain`. Errors: an unknown name, with the names there are.
pub fn parse_agents(list: &str) -> anyhow::Result<Vec<Option<quarry_agents::AgentKind>>> {
    list.split(',')
        .map(|a| match a.trim() {
            "auto" => Ok(None),
            other => other.parse().map(Some).map_err(anyhow::Error::msg),
        })
        .collect()
}

pub fn run(command: EvalCommand, data: impl FnOnce() -> anyhow::Result<quarry_store::DataDir>) -> anyhow::Result<()> {
    match command {
        EvalCommand::Retrieval(args) => retrieval(args),
        EvalCommand::Latency(args) => latency::latency(args, data),
        EvalCommand::Qa(args) => qa::qa(args),
        EvalCommand::Library(args) => library::library_eval(args, &data()?),
        EvalCommand::Answers(args) => answers::answers_eval(*args, &data()?),
        EvalCommand::Embedder(args) => embedder::embedder_eval(args, &data()?),
    }
}

fn retrieval(args: RetrievalArgs) -> anyhow::Result<()> {
    let set = load_set(&args.set, args.limit).with_context(|| format!("loading {}", args.set.display()))?;
    let mut embedder = if args.bm25_only {
        None
    } else {
        let config = EmbedderConfig::by_name(&args.embedder)?;
        Some(Embedder::new(&config).with_context(|| format!("loading the embedding model {}", config.model_id))?)
    };
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} eta {eta}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let cache = args.vector_cache.then(|| std::env::temp_dir().join("quarry-eval-vectors"));
    let report =
        evaluate_retrieval(&set, embedder.as_mut(), &args.fusion, cache.as_deref(), &mut |step, done, total| {
            bar.set_message(step.to_string());
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        })?;
    bar.finish_and_clear();
    if let Some(path) = &args.rankings {
        let mut lines = String::new();
        for query in &report.rankings {
            let mut value = serde_json::to_value(query)?;
            value["relevant"] = serde_json::json!(set.relevant.get(&query.query_id));
            lines.push_str(&serde_json::to_string(&value)?);
            lines.push('\n');
        }
        std::fs::write(path, lines).with_context(|| format!("writing {}", path.display()))?;
    }
    if args.json {
        let model = embedder.as_ref().map(|e| e.model_id().to_string());
        let mut value = serde_json::to_value(&report)?;
        value["embedding_model"] = serde_json::json!(model);
        println!("{}", serde_json::to_string(&value)?);
    } else {
        print!("{}", table(&report, embedder.as_ref().map(|e| e.model_id())));
    }
    Ok(())
}

fn table(report: &RetrievalReport, model: Option<&str>) -> String {
    let mut out = format!(
        "## {} ({} queries, {} passages{})\n\n",
        report.set,
        report.queries,
        report.passages,
        model.map(|m| format!(", {m}")).unwrap_or_default()
    );
    out.push_str("| mode | Recall@2 | Recall@5 | Recall@10 | nDCG@10 | MRR@10 |\n|---|---:|---:|---:|---:|---:|\n");
    for (mode, m) in &report.results {
        out.push_str(&format!(
            "| {mode} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |\n",
            m.recall_at_2, m.recall_at_5, m.recall_at_10, m.ndcg_at_10, m.mrr_at_10
        ));
    }
    out.push_str(&format!(
        "\nseconds: {}\n",
        report.seconds.iter().map(|(k, v)| format!("{k} {v:.1}")).collect::<Vec<_>>().join(", ")
    ));
    out
}
