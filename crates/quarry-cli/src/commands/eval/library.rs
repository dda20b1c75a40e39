//! `quarry eval library`: how well a real library built by `quarry add` finds the documents that answer a
//! question set ([`quarry_eval::library_run`] scores it); this module reads the arguments, opens the
//! library and the embedder, searches, and prints.

use crate::commands::args::parse_document_prior;
use anyhow::Context;
use quarry_eval::library_run::{document_recall, DOCUMENT_RECALL_DEPTH};
use quarry_eval::retrieval::load_queries;
use quarry_index::{HybridFusion, SearchMode};
use quarry_session::{EmbedderCache, EmbeddingSettings};
use quarry_store::{DataDir, Library, DEFAULT_DOCUMENT_PRIOR};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct LibraryEvalArgs {
    /// The library to ask (built beforehand with `quarry add`).
    #[arg(long)]
    pub library: String,
    /// Folder with queries.jsonl and qrels.tsv whose corpus ids are document paths.
    #[arg(long)]
    pub set: PathBuf,
    /// Only the first N questions.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Also rank by these hybrid fusions, comma-separated (`minmax:0.6,minmax-adaptive`; see `quarry eval
    /// retrieval --fusion`): one more `hybrid <fusion>` row each.
    #[arg(long, value_delimiter = ',')]
    pub fusion: Vec<HybridFusion>,
    /// Also rank with a document prior of these weights, comma-separated (`0,0.5,2`; 0 = without it): one
    /// `bm25, document prior W` and one `hybrid, document prior W` row each (`Library::set_document_prior`).
    /// The plain `bm25` and `hybrid` rows use the default weight (`DEFAULT_DOCUMENT_PRIOR`).
    #[arg(long, value_delimiter = ',', value_parser = parse_document_prior)]
    pub document_prior: Vec<f32>,
    /// Write each question's BM25 (with the default document prior) and dense rankings before fusion to
    /// this file, one JSON object a line:
    /// `{"query_id", "fused", "bm25": [[chunk id, score, document path], …], "dense": […], "relevant":
    /// [paths]}`, 50 chunks a side (what hybrid search fuses for k ≤ 10; `fused` is false when hybrid
    /// search would use BM25 alone), for studying fusions offline (`scripts/studies/fusion-study.py`).
    #[arg(long)]
    pub rankings: Option<PathBuf>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn library_eval(args: LibraryEvalArgs, data: &DataDir) -> anyhow::Result<()> {
    let set = load_queries(&args.set, args.limit).with_context(|| format!("loading {}", args.set.display()))?;
    anyhow::ensure!(!set.queries.is_empty(), "{}: no questions with qrels", args.set.display());
    let rt = tokio::runtime::Runtime::new()?;
    let mut library = rt.block_on(Library::open_read(data, &args.library))?;
    let model_id = library.manifest().embedding.model_id.clone();
    let embedder = EmbedderCache::new(EmbeddingSettings::default()).for_library(data, &args.library)?;
    let status = rt.block_on(library.status())?;

    let rankings = SearchMode::ALL
        .into_iter()
        .map(|mode| (mode.name().to_string(), (mode, HybridFusion::default(), DEFAULT_DOCUMENT_PRIOR)))
        .chain(args.fusion.iter().map(|f| (format!("hybrid {f}"), (SearchMode::Hybrid, *f, DEFAULT_DOCUMENT_PRIOR))))
        .chain(args.document_prior.iter().flat_map(|&w| {
            [SearchMode::Bm25, SearchMode::Hybrid]
                .map(|mode| (format!("{}, document prior {w}", mode.name()), (mode, HybridFusion::default(), w)))
        }));
    let rows = document_recall(&set, rankings, |text, &(mode, fusion, prior)| {
        library.set_document_prior(prior);
        let hits =
            rt.block_on(library.search_with_fusion(text, mode, DOCUMENT_RECALL_DEPTH, Some(&embedder), fusion))?;
        anyhow::Ok(hits.into_iter().map(|h| h.path).collect())
    })?;
    library.set_document_prior(DEFAULT_DOCUMENT_PRIOR);
    if let Some(path) = &args.rankings {
        let languages = embedder.lock().map(|e| e.languages().to_vec()).unwrap_or_default();
        let mut lines = String::new();
        for (qid, text) in &set.queries {
            let mut line = serde_json::json!({
                "query_id": qid, "fused": quarry_index::embedder_covers(&languages, text), "relevant": set.relevant[qid],
            });
            for mode in [SearchMode::Bm25, SearchMode::Dense] {
                let hits = rt.block_on(library.search(text, mode, quarry_index::fusion_depth(10), Some(&embedder)))?;
                line[mode.name()] =
                    hits.iter().map(|h| serde_json::json!([h.chunk.chunk_id, h.score, h.path])).collect();
            }
            lines.push_str(&line.to_string());
            lines.push('\n');
        }
        std::fs::write(path, lines).with_context(|| format!("writing {}", path.display()))?;
    }
    if args.json {
        let out = serde_json::json!({
            "library": args.library, "set": set.name, "questions": set.queries.len(), "chunks": status.chunks,
            "embedding_model": model_id, "chunk_tokens": library.manifest().chunking.max_tokens, "results": rows,
        });
        println!("{out}");
    } else {
        println!(
            "library {} ({} chunks of ≤ {} tokens, {model_id}); {} questions of {}\n",
            args.library,
            status.chunks,
            library.manifest().chunking.max_tokens,
            set.queries.len(),
            args.set.display()
        );
        println!("| mode | doc recall@5 | doc recall@10 | all covered@5 | all covered@10 | ms/query |\n|---|---:|---:|---:|---:|---:|");
        for (mode, r) in &rows {
            println!(
                "| {mode} | {:.3} | {:.3} | {:.3} | {:.3} | {:.1} |",
                r.doc_recall_at_5, r.doc_recall_at_10, r.covered_at_5, r.covered_at_10, r.ms_per_query
            );
        }
    }
    Ok(())
}
