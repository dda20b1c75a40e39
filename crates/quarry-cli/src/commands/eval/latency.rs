//! `quarry eval latency`: query latency of libraries built from sets' passages, or of an existing
//! library. The run and its tables are [`quarry_eval::latency_run`]; this module reads the arguments,
//! loads the library's embedding model and prints.

use crate::commands::args::parse_document_prior;
use quarry_eval::latency_run::{
    corpus_latency, library_ann_recall, library_latency, AnnGrid, LatencyPlan, MeasuredLibrary,
};
use quarry_session::{EmbedderCache, EmbeddingSettings};
use quarry_store::{DataDir, SearchMode};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct LatencyArgs {
    /// Folders of sets whose corpus.jsonl passages become the chunks and whose queries.jsonl are asked
    /// (repeat the flag for several sets).
    #[arg(long = "set", required_unless_present = "library")]
    pub sets: Vec<PathBuf>,
    /// Measure an existing library instead (built by `quarry add`), with the questions of `--queries`.
    #[arg(long, requires = "queries_file", conflicts_with = "sets")]
    pub library: Option<String>,
    /// A queries.jsonl (one `{"text": …}` per line) to ask the `--library`.
    #[arg(long = "queries")]
    pub queries_file: Option<PathBuf>,
    /// With `--library`: the search modes timed, in this order (comma-separated: bm25, dense, hybrid).
    /// Each mode asks the same questions, so what a search keeps (Lance's caches, the document prior's
    /// kept terms) favours the later modes; `--modes hybrid` times hybrid search on questions seen for
    /// the first time.
    #[arg(long, value_delimiter = ',', requires = "library")]
    pub modes: Vec<SearchMode>,
    /// Library sizes in chunks, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = vec![10_000usize, 100_000])]
    pub sizes: Vec<usize>,
    /// Queries measured per row (an equal share from each set, or the first N of `--queries`).
    #[arg(long = "query-count", default_value_t = 200)]
    pub queries: usize,
    /// Also measure BM25 and hybrid search with a document prior of this weight
    /// (`Library::set_document_prior`): rows `bm25, document prior W` and `hybrid, document prior W`.
    #[arg(long = "document-prior", value_parser = parse_document_prior)]
    pub document_prior: Option<f32>,
    /// Time searches with exact dense search (no ANN index) only up to this many chunks; larger sizes are
    /// measured with the ANN index alone (exact search reads every vector: about a second a query at 1M
    /// chunks on 2 cores, and no library of that size searches without the index). ANN recall is still
    /// scored against exact search at every size.
    #[arg(long = "exact-max-chunks", default_value_t = 100_000)]
    pub exact_max_chunks: usize,
    /// Build the libraries (`bench-<size>`) in this data folder and keep them, to measure one again in a
    /// process of its own: `quarry --data-dir DIR eval latency --library bench-N --queries FILE` (the
    /// resident memory of a process that only searches; this one's includes what building left behind).
    #[arg(long = "keep-data")]
    pub keep_data: Option<PathBuf>,
    /// With `--library`: also score the ANN index against exact search over the first N questions, for
    /// each `--nprobes` × `--ef` × `--refine-factors` (recall of the top 10 and top 50,
    /// and the milliseconds of a top-50 vector search, which is what hybrid search asks for). Exact
    /// search reads every vector: about a second a question at 1M chunks.
    #[arg(long = "ann-recall-queries", requires = "library")]
    pub ann_recall_queries: Option<usize>,
    /// HNSW `ef` values scored by `--ann-recall-queries`; 0 stands for Lance's default (1.5 × k × refine).
    #[arg(long = "ef", value_delimiter = ',', default_values_t = vec![0usize, 400])]
    pub ef: Vec<usize>,
    /// IVF partitions probed, scored by `--ann-recall-queries`; 0 stands for Lance's adaptive probing.
    #[arg(long = "nprobes", value_delimiter = ',', default_values_t = vec![0usize, 40])]
    pub nprobes: Vec<usize>,
    /// Refine factors scored by `--ann-recall-queries` (default: Quarry's, `quarry_store::store::ANN_REFINE_FACTOR`).
    #[arg(long = "refine-factors", value_delimiter = ',', default_values_t = vec![quarry_store::store::ANN_REFINE_FACTOR])]
    pub refine_factors: Vec<u32>,
}

/// Progress on stderr: a line starting with `\r` rewrites the current one.
fn show(line: &str) {
    if line.starts_with('\r') {
        eprint!("{line}");
    } else {
        eprintln!("{line}");
    }
}

pub fn latency(args: LatencyArgs, data: impl FnOnce() -> anyhow::Result<DataDir>) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    let mut out = std::io::stdout().lock();
    if let (Some(name), Some(file)) = (&args.library, &args.queries_file) {
        let data = data()?;
        let embedder = EmbedderCache::new(EmbeddingSettings::default()).for_library(&data, name)?;
        let measured = MeasuredLibrary { data: &data, name, queries_file: file, count: args.queries };
        runtime.block_on(library_latency(&measured, args.document_prior, &args.modes, &embedder, &mut out))?;
        if let Some(count) = args.ann_recall_queries {
            let grid = AnnGrid { nprobes: &args.nprobes, ef: &args.ef, refine_factors: &args.refine_factors };
            let measured = MeasuredLibrary { count, ..measured };
            runtime.block_on(library_ann_recall(&measured, &grid, &embedder, &mut out, &mut show))?;
        }
        return Ok(());
    }
    let plan = LatencyPlan {
        sizes: &args.sizes,
        queries: args.queries,
        document_prior: args.document_prior,
        exact_max_chunks: args.exact_max_chunks,
        keep_data: args.keep_data.as_deref(),
    };
    runtime.block_on(corpus_latency(&args.sets, &plan, &mut out, &mut show))?;
    Ok(())
}
