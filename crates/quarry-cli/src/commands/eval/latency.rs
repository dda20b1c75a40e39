//! `quarry eval latency`: query latency of a library at given sizes (default ~10k and ~100k chunks), for
//! each search mode, with exact dense search and with the ANN index, plus the embedding throughput of the
//! default model, the size of the library on disk, the ANN index's recall against exact search and the
//! process's resident memory while it searches. Prints Markdown tables. Exact-search latency is skipped
//! above `--exact-max-chunks` (100k by default; a 1M-chunk run measures the ANN index only).
//!
//! The chunks are the passages of the given sets (e.g. every set of ../shared/eval/A_benchmarks, 13k
//! passages in English and Chinese), embedded once with the default model; the vectors are cached in the
//! system temp folder (`quarry-eval-vectors/`, shared with `quarry eval retrieval --vector-cache`).
//! Sizes beyond the corpus repeat it with a copy number appended to the text and a little noise on the
//! vector, so BM25 and ANN see distinct rows. Queries are the sets' own questions.
//! Latency is measured through `Library::search` as the CLI and the app call it: query embedding, both
//! indexes, fusion, reading the chunks back. It is a command rather than a `cargo bench` target so that
//! it runs on the release binary that is already built (a separate bench build recompiles LanceDB).

use crate::commands::args::parse_document_prior;
use anyhow::Context;
use quarry_eval::retrieval::{load_set, passage_vectors, recall_at};
use quarry_index::{embedder_covers, Embedder, EmbedderConfig};
use quarry_session::{EmbedderCache, EmbeddingSettings};
use quarry_store::manifest::{ChunkingInfo, EmbeddingInfo};
use quarry_store::store::{chunk_id, ChunkRecord, DocumentRecord, DocumentState, Store, VectorSearch};
use quarry_store::{folder_size, DataDir, Library, SearchMode, SearchTimings, StoreError};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

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

/// The searches one latency table measures: each mode as the library is set up, then BM25 and hybrid
/// with the document prior `prior` when given. Yields (label, mode, prior weight or `None` for the
/// library's own).
fn measured_searches(prior: Option<f32>, modes: &[SearchMode]) -> Vec<(String, SearchMode, Option<f32>)> {
    let modes = if modes.is_empty() { SearchMode::ALL.as_slice() } else { modes };
    let mut searches: Vec<(String, SearchMode, Option<f32>)> =
        modes.iter().map(|&mode| (mode.name().to_string(), mode, None)).collect();
    if let Some(weight) = prior {
        for mode in modes.iter().copied().filter(|m| *m != SearchMode::Dense) {
            searches.push((format!("{}, document prior {weight}", mode.name()), mode, Some(weight)));
        }
    }
    searches
}

/// Milliseconds of the first query (a warm-up, not counted; with a document prior it also reads the
/// chunk → document map) and of each of `queries` after it, with the document prior `prior` (`None`:
/// the library's own setting, which is restored afterwards); and where each of those searches spent its
/// time ([`Library::last_search_timings`]).
fn time_searches(
    rt: &tokio::runtime::Runtime,
    library: &mut Library,
    queries: &[&String],
    mode: SearchMode,
    prior: Option<f32>,
    embedder: &Arc<Mutex<Embedder>>,
) -> anyhow::Result<(f64, Vec<f64>, Vec<SearchTimings>)> {
    let own = library.document_prior();
    library.set_document_prior(prior.unwrap_or(own));
    let mut times = Vec::with_capacity(queries.len());
    let mut parts = Vec::with_capacity(queries.len());
    let started = Instant::now();
    rt.block_on(library.search(queries[0], mode, 10, Some(embedder)))?;
    let first = started.elapsed().as_secs_f64() * 1000.0;
    for q in queries {
        let started = Instant::now();
        rt.block_on(library.search(q, mode, 10, Some(embedder)))?;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        parts.push(library.last_search_timings());
    }
    library.set_document_prior(own);
    Ok((first, times, parts))
}

/// The data folder the libraries are built in: a temporary one, removed when dropped, or the folder of
/// `--keep-data`, kept.
struct WorkDir {
    dir: PathBuf,
    keep: bool,
}

impl WorkDir {
    fn new(keep: Option<&std::path::Path>) -> anyhow::Result<WorkDir> {
        let dir = match keep {
            Some(dir) => dir.to_path_buf(),
            None => std::env::temp_dir().join(format!("quarry-latency-{}", std::process::id())),
        };
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(WorkDir { dir, keep: keep.is_some() })
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Resets this process's peak resident set (`VmHWM`) to its current one by writing `5` to
/// `/proc/self/clear_refs` (Linux ≥ 4.0). Returns whether it could.
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// This process's peak and current resident set (`VmHWM`, `VmRSS` in /proc/self/status), in KiB; zeros where
/// /proc is not available.
fn rss_kib() -> (u64, u64) {
    let field = |name: &str| quarry_core::proc_kib("/proc/self/status", name).unwrap_or(0);
    (field("VmHWM:"), field("VmRSS:"))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// p50/p95 of each search mode over an existing library, through `Library::search` (query embedding,
/// both indexes, fusion, reading the chunks back), after one warm-up query per mode.
fn library_latency(
    data: &DataDir,
    name: &str,
    queries_file: &std::path::Path,
    count: usize,
    prior: Option<f32>,
    modes: &[SearchMode],
) -> anyhow::Result<()> {
    let queries = read_queries(queries_file, count)?;
    let rt = tokio::runtime::Runtime::new()?;
    let mut library = rt.block_on(Library::open_read(data, name))?;
    let embedder = EmbedderCache::new(EmbeddingSettings::default()).for_library(data, name)?;
    let status = rt.block_on(library.status())?;
    println!("library {name}: {} chunks; {} queries from {}\n", status.chunks, queries.len(), queries_file.display());
    println!("| mode | p50 ms | p95 ms | mean ms | first query ms |\n|---|---:|---:|---:|---:|");
    let queries: Vec<&String> = queries.iter().collect();
    let mut part_rows = Vec::new();
    for (label, mode, weight) in measured_searches(prior, modes) {
        let (first, mut times, parts) = time_searches(&rt, &mut library, &queries, mode, weight, &embedder)?;
        times.sort_by(f64::total_cmp);
        let mean = times.iter().sum::<f64>() / times.len() as f64;
        println!(
            "| {label} | {:.1} | {:.1} | {:.1} | {first:.1} |",
            percentile(&times, 0.5),
            percentile(&times, 0.95),
            mean
        );
        let median = |part: fn(&SearchTimings) -> std::time::Duration| {
            let mut ms: Vec<f64> = parts.iter().map(|t| part(t).as_secs_f64() * 1000.0).collect();
            ms.sort_by(f64::total_cmp);
            percentile(&ms, 0.5)
        };
        part_rows.push(format!(
            "| {label} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
            median(|t| t.keyword),
            median(|t| t.embedding),
            median(|t| t.vector),
            median(|t| t.lookup),
            median(|t| t.total)
        ));
    }
    println!("\nWhere the time goes, median ms of each part (one after another, but in hybrid search BM25 and the");
    println!("vector search run side by side, after the query's embedding; the rest of the whole is fusion and");
    println!("bookkeeping):\n");
    println!(
        "| mode | BM25 (+ document prior) | query embedding | vector search | reading result rows | whole search |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for row in part_rows {
        println!("{row}");
    }
    Ok(())
}

/// The first `count` questions of a queries.jsonl (one `{"text": …}` per line; other lines skipped).
/// Errors: the file cannot be read, or holds no question.
fn read_queries(queries_file: &std::path::Path, count: usize) -> anyhow::Result<Vec<String>> {
    let text = std::fs::read_to_string(queries_file).with_context(|| format!("reading {}", queries_file.display()))?;
    let queries: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["text"].as_str().map(str::to_string))
        .take(count)
        .collect();
    anyhow::ensure!(!queries.is_empty(), "{}: no queries", queries_file.display());
    Ok(queries)
}

/// Exact search's top 50 chunk ids for each query vector, in order: the ground truth ANN recall is
/// scored against (it reads every vector, so it is computed once per query).
async fn exact_top_50(store: &Store, vectors: &[Vec<f32>]) -> Result<Vec<Vec<u64>>, StoreError> {
    let mut lists = Vec::with_capacity(vectors.len());
    for vector in vectors {
        lists.push(store.nearest_exact(vector, 50).await?.iter().map(|(c, _)| c.chunk_id).collect());
    }
    Ok(lists)
}

/// The ANN index of library `name` scored against exact search over the first `count` questions of
/// `queries_file`, for each IVF `nprobes` × HNSW `ef` (0: Lance's default for either) × refine factor:
/// prints a table of recall@10, recall@50 and milliseconds per top-50 vector search.
fn library_ann_recall(
    data: &DataDir,
    name: &str,
    queries_file: &std::path::Path,
    count: usize,
    ef_values: &[usize],
    nprobes_values: &[usize],
    refine_factors: &[u32],
) -> anyhow::Result<()> {
    let queries = read_queries(queries_file, count)?;
    let embedder = EmbedderCache::new(EmbeddingSettings::default()).for_library(data, name)?;
    let vectors = {
        let mut model = embedder.lock().map_err(|_| anyhow::anyhow!("embedder lock poisoned"))?;
        model.embed_queries(&queries)?
    };
    let dimension = vectors.first().map(Vec::len).unwrap_or(0);
    let dir = data.existing(name)?;
    let rt = tokio::runtime::Runtime::new()?;
    let store = rt.block_on(Store::open(&dir.join("lance"), dimension, false))?;
    let started = Instant::now();
    let exact = rt.block_on(exact_top_50(&store, &vectors))?;
    eprintln!("exact top 50 of {} questions in {:.1} s", vectors.len(), started.elapsed().as_secs_f64());
    println!("\nANN recall against exact search, first {} questions (ef default: 1.5 × k × refine):\n", vectors.len());
    println!("| nprobes | HNSW ef | refine | recall@10 | recall@50 | ms per top-50 query |");
    println!("|---|---|---:|---:|---:|---:|");
    let identity = |id: u64| id as usize;
    let label = |n: usize| if n > 0 { n.to_string() } else { "default".to_string() };
    for &nprobes in nprobes_values {
        for &ef in ef_values {
            for &refine in refine_factors {
                let search = VectorSearch::Ann {
                    refine_factor: Some(refine),
                    ef: (ef > 0).then_some(ef),
                    nprobes: (nprobes > 0).then_some(nprobes),
                };
                let r = rt.block_on(ann_recall(&store, search, &vectors, &exact, &identity))?;
                println!(
                    "| {} | {} | {refine} | {:.3} | {:.3} | {:.1} |",
                    label(nprobes),
                    label(ef),
                    r.at_10,
                    r.at_50,
                    r.ms_at_50
                );
            }
        }
    }
    Ok(())
}

pub fn latency(args: LatencyArgs, data: impl FnOnce() -> anyhow::Result<DataDir>) -> anyhow::Result<()> {
    if let (Some(name), Some(file)) = (&args.library, &args.queries_file) {
        let data = data()?;
        library_latency(&data, name, file, args.queries, args.document_prior, &args.modes)?;
        if let Some(count) = args.ann_recall_queries {
            library_ann_recall(&data, name, file, count, &args.ef, &args.nprobes, &args.refine_factors)?;
        }
        return Ok(());
    }
    let mut passages = Vec::new();
    let mut queries: Vec<String> = Vec::new();
    // An equal share of the questions from each set, evenly spread within it: taking them evenly over
    // all sets together would ask mostly the large Chinese reading-comprehension sets.
    let share = args.queries.div_ceil(args.sets.len().max(1));
    for dir in &args.sets {
        let set = load_set(dir, None).with_context(|| format!("loading {}", dir.display()))?;
        passages.extend(set.passages);
        let step = (set.queries.len() / share.max(1)).max(1);
        queries.extend(set.queries.into_iter().step_by(step).take(share).map(|(_, q)| q));
    }
    queries.truncate(args.queries);
    anyhow::ensure!(!passages.is_empty() && !queries.is_empty(), "the sets hold no passages or no queries");
    let config = EmbedderConfig::default_model()?;
    let mut embedder = Embedder::new(&config).context("loading the embedding model")?;

    // Embedding throughput, always measured (the cache below only spares the full corpus).
    let sample: Vec<&str> =
        passages.iter().step_by((passages.len() / 1000).max(1)).take(1000).map(|(_, t)| t.as_str()).collect();
    let started = Instant::now();
    embedder.embed(&sample)?;
    let seconds = started.elapsed().as_secs_f64();
    let chars: usize = sample.iter().map(|p| p.chars().count()).sum();
    println!(
        "embedding ({}): {} passages of {} characters on average in {seconds:.1} s = {:.1} passages/s, {:.0} characters/s\n",
        embedder.model_id(),
        sample.len(),
        chars / sample.len().max(1),
        sample.len() as f64 / seconds,
        chars as f64 / seconds
    );

    let started = Instant::now();
    let cache = std::env::temp_dir().join("quarry-eval-vectors");
    let vectors = passage_vectors(&mut embedder, &passages, Some(&cache), &mut |_, done, total| {
        eprint!("\rembedding passages {done}/{total}")
    })?;
    eprintln!(" in {:.1} s", started.elapsed().as_secs_f64());
    let dimension = embedder.dimension();
    let embedding = EmbeddingInfo {
        model_id: embedder.model_id().to_string(),
        dimension,
        automatic: false,
        chunks_per_second: None,
    };
    let languages = embedder.languages().to_vec();
    let embedder = Arc::new(Mutex::new(embedder));
    let queries: Vec<&String> = queries.iter().collect();
    // Hybrid search runs both sides only for queries the model covers (a mostly-CJK question and the
    // English MiniLM: BM25 alone), so hybrid is also reported for each kind of query on its own.
    let fused: Vec<bool> = queries.iter().map(|q| embedder_covers(&languages, q)).collect();
    let rt = tokio::runtime::Runtime::new()?;
    let work = WorkDir::new(args.keep_data.as_deref())?;
    let data = DataDir::at(&work.dir);

    let query_vectors: Vec<Vec<f32>> = {
        let texts: Vec<&str> = queries.iter().map(|q| q.as_str()).collect();
        embedder.lock().map_err(|_| anyhow::anyhow!("embedder lock poisoned"))?.embed_queries(&texts)?
    };
    let mut index_rows: Vec<String> = Vec::new();
    let mut recall_rows: Vec<String> = Vec::new();
    let mut first_queries: Vec<String> = Vec::new();
    let mut rss_rows: Vec<String> = Vec::new();
    println!("| chunks | ANN index | mode | p50 ms | p95 ms | mean ms |");
    println!("|---:|---|---|---:|---:|---:|");
    for &size in &args.sizes {
        let name = format!("bench-{size}");
        rt.block_on(Library::create(&data, &name, embedding.clone(), ChunkingInfo::new(512, 0)))?;
        let dir = data.existing(&name)?;
        let started = Instant::now();
        rt.block_on(async {
            let store = Store::open(&dir.join("lance"), dimension, false).await?;
            let mut state: u64 = 0x9e3779b97f4a7c15;
            let per_document = 100;
            // Written in groups of 2,000 chunks, as an ingest commits them (about 256 at a time, then compacted).
            let per_write = 2_000;
            let mut row = 0;
            while row < size {
                let n = per_write.min(size - row);
                let mut chunks = Vec::with_capacity(n);
                let mut batch_vectors = Vec::with_capacity(n);
                let mut documents = Vec::new();
                for i in 0..n {
                    let document_id = format!("doc-{}", (row + i) / per_document);
                    let chunk_index = ((row + i) % per_document) as u32;
                    let source = (row + i) % passages.len();
                    let copy = (row + i) / passages.len();
                    let text = if copy == 0 {
                        passages[source].1.clone()
                    } else {
                        format!("{} [copy {copy}]", passages[source].1)
                    };
                    let mut vector = vectors[source].clone();
                    if copy > 0 {
                        for x in vector.iter_mut() {
                            state ^= state << 13;
                            state ^= state >> 7;
                            state ^= state << 17;
                            *x += ((state % 1000) as f32 / 1000.0 - 0.5) * 0.02;
                        }
                    }
                    chunks.push(ChunkRecord {
                        chunk_id: chunk_id(&document_id, chunk_index),
                        document_id: document_id.clone(),
                        chunk_index,
                        text,
                        page_start: Some(1),
                        page_end: Some(1),
                        sheet: None,
                        heading_path: Vec::new(),
                        char_start: 0,
                        char_end: 0,
                        token_count: 0,
                        ocr: false,
                    });
                    batch_vectors.push(vector);
                    if chunk_index != 0 {
                        continue;
                    }
                    documents.push(DocumentRecord {
                        document_id: document_id.clone(),
                        origin_id: document_id.clone(),
                        path: format!("/bench/{document_id}.txt"),
                        file_path: format!("/bench/{document_id}.txt"),
                        format: "text".into(),
                        byte_len: 0,
                        page_count: None,
                        chunk_count: per_document.min(size - (row + i)) as u32,
                        char_count: 0,
                        state: DocumentState::Indexed,
                        error: None,
                        warnings: None,
                        added_ms: 0,
                        modified_ms: 0,
                        context: None,
                        extraction_version: Some(quarry_ingest::extraction_version("text")),
                    });
                }
                store.add_chunks(&chunks, &batch_vectors).await?;
                store.add_documents(&documents).await?;
                row += n;
            }
            // Opening for writing builds the keyword index from LanceDB (its repair path); then compact.
            let mut library = Library::open_write(&data, &name, &embedding.model_id).await?;
            library.optimize(std::time::Duration::ZERO, usize::MAX).await?;
            Ok::<_, StoreError>(())
        })?;
        let write_seconds = started.elapsed().as_secs_f64();
        eprintln!("built {size} chunks in {write_seconds:.1} s");
        let plain_mib = folder_size(&dir) as f64 / MIB;

        for ann in [false, true] {
            if !ann && size > args.exact_max_chunks {
                continue;
            }
            if ann {
                let started = Instant::now();
                rt.block_on(async {
                    let store = Store::open(&dir.join("lance"), dimension, false).await?;
                    quarry_store::store::ensure_vector_index(&store, 0).await?;
                    Ok::<_, StoreError>(())
                })?;
                let build_seconds = started.elapsed().as_secs_f64();
                eprintln!("ANN and chunk-id indexes over {size} chunks built in {build_seconds:.1} s");
                index_rows.push(format!(
                    "| {size} | {write_seconds:.1} | {:.0} | {:.1} | {build_seconds:.1} | {:.1} |",
                    size as f64 / write_seconds,
                    plain_mib,
                    folder_size(&dir) as f64 / MIB
                ));
                // Rows were made as document `doc-{row / 100}`, chunk `row % 100`, from passage `row % len`.
                let by_id: std::collections::HashMap<u64, usize> = (0..size)
                    .map(|row| (chunk_id(&format!("doc-{}", row / 100), (row % 100) as u32), row % passages.len()))
                    .collect();
                let source = |id: u64| by_id.get(&id).copied().unwrap_or(usize::MAX);
                let store = rt.block_on(Store::open(&dir.join("lance"), dimension, false))?;
                // Exact search's top 50 once per query (it reads every vector), then each refine factor.
                let exact = rt.block_on(exact_top_50(&store, &query_vectors))?;
                for refine_factor in [None, Some(1), Some(2), Some(4)] {
                    let r = rt.block_on(ann_recall(
                        &store,
                        VectorSearch::Ann { refine_factor, ef: None, nprobes: None },
                        &query_vectors,
                        &exact,
                        &source,
                    ))?;
                    recall_rows.push(format!(
                        "| {size} | {} | {:.3} | {:.3} | {:.3} | {:.2} |",
                        refine_factor.map_or("none".to_string(), |f| f.to_string()),
                        r.at_10,
                        r.at_50,
                        r.passages_at_10,
                        r.ms_at_50
                    ));
                }
            }
            // The peak resident set of the searching process: reset the high-water mark, open, search.
            let reset = reset_peak_rss();
            let mut library = rt.block_on(Library::open_read(&data, &name))?;
            for (label, mode, weight) in measured_searches(args.document_prior, &[]) {
                let (first, times, _) = time_searches(&rt, &mut library, &queries, mode, weight, &embedder)?;
                let mut rows = vec![(label.clone(), times.clone())];
                if mode == SearchMode::Hybrid {
                    for (kind, want) in [("both sides", true), ("BM25 only", false)] {
                        let subset: Vec<f64> =
                            times.iter().zip(&fused).filter(|(_, f)| **f == want).map(|(t, _)| *t).collect();
                        rows.push((format!("{label}, {} queries ({kind})", subset.len()), subset));
                    }
                }
                for (label, mut times) in rows {
                    if times.is_empty() {
                        continue;
                    }
                    times.sort_by(f64::total_cmp);
                    let mean = times.iter().sum::<f64>() / times.len() as f64;
                    println!(
                        "| {size} | {} | {label} | {:.1} | {:.1} | {:.1} |",
                        if ann { "IVF-HNSW-SQ + id BTree" } else { "none (exact)" },
                        percentile(&times, 0.5),
                        percentile(&times, 0.95),
                        mean
                    );
                }
                if weight.is_some_and(|w| w > 0.0) {
                    first_queries.push(format!(
                        "| {size} | {} | {label} | {first:.1} |",
                        if ann { "IVF-HNSW-SQ + id BTree" } else { "none (exact)" }
                    ));
                }
            }
            drop(library);
            let (peak, now) = rss_kib();
            rss_rows.push(format!(
                "| {size} | {} | {} | {:.0} |",
                if ann { "IVF-HNSW-SQ + id BTree" } else { "none (exact)" },
                if reset { format!("{:.0}", peak as f64 / 1024.0) } else { "(not measurable here)".into() },
                now as f64 / 1024.0
            ));
        }
    }
    println!("\n{} queries per row; chunk texts from {} passages.", queries.len(), passages.len());
    println!(
        "\nWriting the library (chunks with their vectors into LanceDB, the tantivy index built from it, compaction;"
    );
    println!("embedding not included), its size on disk, and the ANN index (IVF-HNSW-SQ, cosine, LanceDB defaults):");
    println!("build time, size, and recall of its dense top 10 / top 50 against exact search over the same rows.\n");
    println!("| chunks | written in s | chunks/s | on disk MiB | ANN + id index build s | on disk with them MiB |");
    println!("|---:|---:|---:|---:|---:|---:|");
    for row in index_rows {
        println!("{row}");
    }
    println!("\nANN recall against exact search over the same rows, by refine factor (candidates per result");
    println!(
        "re-ranked by full vectors; none = the index's own order); passages@10 counts copies of a passage as one.\n"
    );
    println!("| chunks | refine | recall@10 | recall@50 | passages@10 | ms per top-50 query |");
    println!("|---:|---|---:|---:|---:|---:|");
    for row in recall_rows {
        println!("{row}");
    }
    println!("\nMemory of this process while it opens a library and runs the searches above (the embedding model");
    println!("and the query vectors included, as in the app): the peak resident set since just before the library");
    println!("was opened (the high-water mark is reset there through /proc/self/clear_refs) and the resident set");
    println!("after the searches. An upper bound: what building the library left resident counts too; for a process");
    println!("that only searches, keep the library (`--keep-data`) and measure it with `--library` under `time -v`.\n");
    println!("| chunks | ANN index | peak RSS while searching MiB | RSS after MiB |\n|---:|---|---:|---:|");
    for row in rss_rows {
        println!("{row}");
    }
    if !first_queries.is_empty() {
        println!(
            "\nThe first query with a document prior after opening the library also reads which document owns each"
        );
        println!("chunk (cached until the next commit); its time, not counted above:\n");
        println!("| chunks | ANN index | search | first query ms |\n|---:|---|---|---:|");
        for row in first_queries {
            println!("{row}");
        }
    }
    Ok(())
}

const MIB: f64 = 1024.0 * 1024.0;

/// Share of `exact` that is also in `found` (0 when `exact` is empty).
/// Recall of ANN search against exact search, for one way of searching the index.
struct AnnRecall {
    /// Mean share of exact search's top 10 / top 50 that the ANN search also returns in its top 10 / 50.
    at_10: f64,
    at_50: f64,
    /// As `at_10`, counting passages rather than rows: the copies of one passage (see the module doc)
    /// differ only by noise, so which of them fills a slot is arbitrary.
    passages_at_10: f64,
    /// Mean milliseconds of one top-50 ANN query (vectors given, so no embedding).
    ms_at_50: f64,
}

/// [`AnnRecall`] of `search` over `queries` (query embeddings), against `exact` (each query's exact top-50
/// chunk ids, in order); `source(chunk_id)` names the passage a row was made from.
async fn ann_recall(
    store: &Store,
    search: VectorSearch,
    queries: &[Vec<f32>],
    exact: &[Vec<u64>],
    source: &dyn Fn(u64) -> usize,
) -> Result<AnnRecall, StoreError> {
    let mut sums = [0.0f64; 4];
    for (vector, exact_50) in queries.iter().zip(exact) {
        let started = Instant::now();
        let approximate_50 = store.nearest_by(vector, 50, search).await?;
        sums[3] += started.elapsed().as_secs_f64() * 1000.0;
        let approximate_10 = store.nearest_by(vector, 10, search).await?;
        let ids = |list: &[(ChunkRecord, f32)]| list.iter().map(|(c, _)| c.chunk_id).collect::<Vec<u64>>();
        let (approximate_10, exact_10) = (ids(&approximate_10), &exact_50[..exact_50.len().min(10)]);
        // Passages: the distinct passages of exact search's top 10, found among ANN search's top 10.
        let passages = |list: &[u64]| {
            let mut seen: Vec<usize> = list.iter().take(10).map(|&id| source(id)).collect();
            seen.sort_unstable();
            seen.dedup();
            seen
        };
        sums[0] += recall_at(&approximate_10, exact_10, 10, PartialEq::eq);
        sums[1] += recall_at(&ids(&approximate_50), exact_50, 50, PartialEq::eq);
        let approximate_passages = passages(&approximate_10);
        sums[2] += recall_at(&approximate_passages, &passages(exact_10), approximate_passages.len(), PartialEq::eq);
    }
    let n = queries.len().max(1) as f64;
    Ok(AnnRecall { at_10: sums[0] / n, at_50: sums[1] / n, passages_at_10: sums[2] / n, ms_at_50: sums[3] / n })
}
