//! The latency benchmark's run (`quarry eval latency`): query latency of a library at given sizes (default ~10k and ~100k chunks), for
//! each search mode, with exact dense search and with the ANN index, plus the embedding throughput of the
//! default model, the size of the library on disk, the ANN index's recall against exact search and the
//! process's resident memory while it searches, as Markdown tables. Exact-search latency is skipped
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

use crate::retrieval::{load_set, passage_vectors, recall_at};
use crate::EvalError;
use quarry_index::{embedder_covers, Embedder, EmbedderConfig};
use quarry_store::manifest::{ChunkingInfo, EmbeddingInfo};
use quarry_store::store::{chunk_id, ChunkRecord, DocumentRecord, DocumentState, Store, VectorSearch};
use quarry_store::{folder_size, DataDir, Library, SearchMode, SearchTimings, StoreError};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// An existing library and the questions [`library_latency`] and [`library_ann_recall`] ask it.
#[derive(Debug, Clone, Copy)]
pub struct MeasuredLibrary<'a> {
    /// The data folder holding it.
    pub data: &'a DataDir,
    /// Its name.
    pub name: &'a str,
    /// A queries.jsonl (one `{"text": …}` per line).
    pub queries_file: &'a Path,
    /// How many of its first questions are asked.
    pub count: usize,
}

/// What [`corpus_latency`] builds and measures.
#[derive(Debug, Clone, Copy)]
pub struct LatencyPlan<'a> {
    /// Library sizes in chunks.
    pub sizes: &'a [usize],
    /// Questions timed per row: an equal share from each set, evenly spread within it.
    pub queries: usize,
    /// Also time BM25 and hybrid search with a document prior of this weight.
    pub document_prior: Option<f32>,
    /// Time exact dense search only up to this many chunks; larger libraries with the ANN index alone.
    pub exact_max_chunks: usize,
    /// Build the libraries (`bench-<size>`) in this data folder and keep them; `None`: a temporary folder.
    pub keep_data: Option<&'a Path>,
}

/// The ANN settings [`library_ann_recall`] scores, every combination: IVF partitions probed and HNSW
/// `ef` (0: Lance's default for either) and refine factors.
#[derive(Debug, Clone, Copy)]
pub struct AnnGrid<'a> {
    /// IVF `nprobes` values.
    pub nprobes: &'a [usize],
    /// HNSW `ef` values.
    pub ef: &'a [usize],
    /// Refine factors.
    pub refine_factors: &'a [u32],
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
async fn time_searches(
    library: &mut Library,
    queries: &[&String],
    mode: SearchMode,
    prior: Option<f32>,
    embedder: &Arc<Mutex<Embedder>>,
) -> Result<(f64, Vec<f64>, Vec<SearchTimings>), EvalError> {
    let own = library.document_prior();
    library.set_document_prior(prior.unwrap_or(own));
    let mut times = Vec::with_capacity(queries.len());
    let mut parts = Vec::with_capacity(queries.len());
    let started = Instant::now();
    library.search(queries[0], mode, 10, Some(embedder)).await?;
    let first = started.elapsed().as_secs_f64() * 1000.0;
    for q in queries {
        let started = Instant::now();
        library.search(q, mode, 10, Some(embedder)).await?;
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
    fn new(keep: Option<&std::path::Path>) -> Result<WorkDir, EvalError> {
        let dir = match keep {
            Some(dir) => dir.to_path_buf(),
            None => std::env::temp_dir().join(format!("quarry-latency-{}", std::process::id())),
        };
        std::fs::create_dir_all(&dir).map_err(|e| EvalError::Io(format!("creating {}: {e}", dir.display())))?;
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

/// p50/p95 of each search mode (`modes`, or all) over the `measured` library, through `Library::search`
/// (query embedding with `embedder`, the library's model; both indexes, fusion, reading the chunks back),
/// after one warm-up query per mode, for its first questions:
/// writes a table of milliseconds and one of where they go to `out`. With `prior`, BM25 and hybrid search
/// with that document prior too. Errors: the questions cannot be read; the library cannot be opened or
/// searched; writing to `out`.
pub async fn library_latency(
    measured: &MeasuredLibrary<'_>,
    prior: Option<f32>,
    modes: &[SearchMode],
    embedder: &Arc<Mutex<Embedder>>,
    out: &mut dyn Write,
) -> Result<(), EvalError> {
    let MeasuredLibrary { data, name, queries_file, count } = *measured;
    let queries = read_queries(queries_file, count)?;
    let mut library = Library::open_read(data, name).await?;
    let status = library.status().await?;
    writeln!(
        out,
        "library {name}: {} chunks; {} queries from {}\n",
        status.chunks,
        queries.len(),
        queries_file.display()
    )?;
    writeln!(out, "| mode | p50 ms | p95 ms | mean ms | first query ms |\n|---|---:|---:|---:|---:|")?;
    let queries: Vec<&String> = queries.iter().collect();
    let mut part_rows = Vec::new();
    for (label, mode, weight) in measured_searches(prior, modes) {
        let (first, mut times, parts) = time_searches(&mut library, &queries, mode, weight, embedder).await?;
        times.sort_by(f64::total_cmp);
        let mean = times.iter().sum::<f64>() / times.len() as f64;
        writeln!(
            out,
            "| {label} | {:.1} | {:.1} | {:.1} | {first:.1} |",
            percentile(&times, 0.5),
            percentile(&times, 0.95),
            mean
        )?;
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
    writeln!(
        out,
        "\nWhere the time goes, median ms of each part (one after another, but in hybrid search BM25 and the"
    )?;
    writeln!(out, "vector search run side by side, after the query's embedding; the rest of the whole is fusion and")?;
    writeln!(out, "bookkeeping):\n")?;
    writeln!(
        out,
        "| mode | BM25 (+ document prior) | query embedding | vector search | reading result rows | whole search |"
    )?;
    writeln!(out, "|---|---:|---:|---:|---:|---:|")?;
    for row in part_rows {
        writeln!(out, "{row}")?;
    }
    Ok(())
}

/// The first `count` questions of a queries.jsonl (one `{"text": …}` per line; other lines skipped).
/// Errors: the file cannot be read, or holds no question.
fn read_queries(queries_file: &Path, count: usize) -> Result<Vec<String>, EvalError> {
    let text = std::fs::read_to_string(queries_file)
        .map_err(|e| EvalError::Set(format!("reading {}: {e}", queries_file.display())))?;
    let queries: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["text"].as_str().map(str::to_string))
        .take(count)
        .collect();
    if queries.is_empty() {
        return Err(EvalError::Set(format!("{}: no queries", queries_file.display())));
    }
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

/// The ANN index of the `measured` library scored against exact search over its first questions, for
/// each IVF `nprobes` × HNSW `ef` (0: Lance's default for either) × refine factor:
/// writes a table of recall@10, recall@50 and milliseconds per top-50 vector search to `out`
/// (`embedder`: the library's model). Errors: as [`library_latency`].
pub async fn library_ann_recall(
    measured: &MeasuredLibrary<'_>,
    grid: &AnnGrid<'_>,
    embedder: &Arc<Mutex<Embedder>>,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(&str),
) -> Result<(), EvalError> {
    let MeasuredLibrary { data, name, queries_file, count } = *measured;
    let queries = read_queries(queries_file, count)?;
    let vectors = embedder.lock().map_err(|_| EvalError::Poisoned)?.embed_queries(&queries)?;
    let dimension = vectors.first().map(Vec::len).unwrap_or(0);
    let dir = data.existing(name)?;
    let store = Store::open(&dir.join("lance"), dimension, false).await?;
    let started = Instant::now();
    let exact = exact_top_50(&store, &vectors).await?;
    progress(&format!("exact top 50 of {} questions in {:.1} s", vectors.len(), started.elapsed().as_secs_f64()));
    writeln!(
        out,
        "\nANN recall against exact search, first {} questions (ef default: 1.5 × k × refine):\n",
        vectors.len()
    )?;
    writeln!(out, "| nprobes | HNSW ef | refine | recall@10 | recall@50 | ms per top-50 query |")?;
    writeln!(out, "|---|---|---:|---:|---:|---:|")?;
    let identity = |id: u64| id as usize;
    let label = |n: usize| if n > 0 { n.to_string() } else { "default".to_string() };
    for &nprobes in grid.nprobes {
        for &ef in grid.ef {
            for &refine in grid.refine_factors {
                let search = VectorSearch::Ann {
                    refine_factor: Some(refine),
                    ef: (ef > 0).then_some(ef),
                    nprobes: (nprobes > 0).then_some(nprobes),
                };
                let r = ann_recall(&store, search, &vectors, &exact, &identity).await?;
                writeln!(
                    out,
                    "| {} | {} | {refine} | {:.3} | {:.3} | {:.1} |",
                    label(nprobes),
                    label(ef),
                    r.at_10,
                    r.at_50,
                    r.ms_at_50
                )?;
            }
        }
    }
    Ok(())
}

/// Query latency of libraries built from the passages of `sets` (module docs), at each of
/// `plan.sizes` chunks: the embedding throughput of the default model, then per size the build time and
/// size on disk, p50/p95 of each search mode with exact dense search (up to `plan.exact_max_chunks`) and
/// with the ANN index, the ANN index's recall against exact search by refine factor, and the resident
/// memory while searching — Markdown tables written to `out`; progress lines to `progress` (a line
/// starting with `\r` rewrites the current one). Errors: a set cannot be loaded or holds nothing; the
/// embedding model; building or searching a library; writing to `out`.
pub async fn corpus_latency(
    sets: &[PathBuf],
    plan: &LatencyPlan<'_>,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(&str),
) -> Result<(), EvalError> {
    let mut passages = Vec::new();
    let mut queries: Vec<String> = Vec::new();
    // An equal share of the questions from each set, evenly spread within it: taking them evenly over
    // all sets together would ask mostly the large Chinese reading-comprehension sets.
    let share = plan.queries.div_ceil(sets.len().max(1));
    for dir in sets {
        let set = load_set(dir, None)?;
        passages.extend(set.passages);
        let step = (set.queries.len() / share.max(1)).max(1);
        queries.extend(set.queries.into_iter().step_by(step).take(share).map(|(_, q)| q));
    }
    queries.truncate(plan.queries);
    if passages.is_empty() || queries.is_empty() {
        return Err(EvalError::Set("the sets hold no passages or no queries".into()));
    }
    let config = EmbedderConfig::default_model()?;
    let mut embedder = Embedder::new(&config)?;

    // Embedding throughput, always measured (the cache below only spares the full corpus).
    let sample: Vec<&str> =
        passages.iter().step_by((passages.len() / 1000).max(1)).take(1000).map(|(_, t)| t.as_str()).collect();
    let started = Instant::now();
    embedder.embed(&sample)?;
    let seconds = started.elapsed().as_secs_f64();
    let chars: usize = sample.iter().map(|p| p.chars().count()).sum();
    writeln!(out,
        "embedding ({}): {} passages of {} characters on average in {seconds:.1} s = {:.1} passages/s, {:.0} characters/s\n",
        embedder.model_id(),
        sample.len(),
        chars / sample.len().max(1),
        sample.len() as f64 / seconds,
        chars as f64 / seconds
    )?;

    let started = Instant::now();
    let cache = std::env::temp_dir().join("quarry-eval-vectors");
    let vectors = passage_vectors(&mut embedder, &passages, Some(&cache), &mut |_, done, total| {
        progress(&format!("\rembedding passages {done}/{total}"))
    })?;
    progress(&format!(" in {:.1} s", started.elapsed().as_secs_f64()));
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
    let work = WorkDir::new(plan.keep_data)?;
    let data = DataDir::at(&work.dir);

    let query_vectors: Vec<Vec<f32>> = {
        let texts: Vec<&str> = queries.iter().map(|q| q.as_str()).collect();
        embedder.lock().map_err(|_| EvalError::Poisoned)?.embed_queries(&texts)?
    };
    let mut index_rows: Vec<String> = Vec::new();
    let mut recall_rows: Vec<String> = Vec::new();
    let mut first_queries: Vec<String> = Vec::new();
    let mut rss_rows: Vec<String> = Vec::new();
    writeln!(out, "| chunks | ANN index | mode | p50 ms | p95 ms | mean ms |")?;
    writeln!(out, "|---:|---|---|---:|---:|---:|")?;
    for &size in plan.sizes {
        let name = format!("bench-{size}");
        Library::create(&data, &name, embedding.clone(), ChunkingInfo::new(512, 0)).await?;
        let dir = data.existing(&name)?;
        let started = Instant::now();
        async {
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
        }
        .await?;
        let write_seconds = started.elapsed().as_secs_f64();
        progress(&format!("built {size} chunks in {write_seconds:.1} s"));
        let plain_mib = folder_size(&dir) as f64 / MIB;

        for ann in [false, true] {
            if !ann && size > plan.exact_max_chunks {
                continue;
            }
            if ann {
                let started = Instant::now();
                async {
                    let store = Store::open(&dir.join("lance"), dimension, false).await?;
                    quarry_store::store::ensure_vector_index(&store, 0).await?;
                    Ok::<_, StoreError>(())
                }
                .await?;
                let build_seconds = started.elapsed().as_secs_f64();
                progress(&format!("ANN and chunk-id indexes over {size} chunks built in {build_seconds:.1} s"));
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
                let store = Store::open(&dir.join("lance"), dimension, false).await?;
                // Exact search's top 50 once per query (it reads every vector), then each refine factor.
                let exact = exact_top_50(&store, &query_vectors).await?;
                for refine_factor in [None, Some(1), Some(2), Some(4)] {
                    let r = ann_recall(
                        &store,
                        VectorSearch::Ann { refine_factor, ef: None, nprobes: None },
                        &query_vectors,
                        &exact,
                        &source,
                    )
                    .await?;
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
            let mut library = Library::open_read(&data, &name).await?;
            for (label, mode, weight) in measured_searches(plan.document_prior, &[]) {
                let (first, times, _) = time_searches(&mut library, &queries, mode, weight, &embedder).await?;
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
                    writeln!(
                        out,
                        "| {size} | {} | {label} | {:.1} | {:.1} | {:.1} |",
                        if ann { "IVF-HNSW-SQ + id BTree" } else { "none (exact)" },
                        percentile(&times, 0.5),
                        percentile(&times, 0.95),
                        mean
                    )?;
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
    writeln!(out, "\n{} queries per row; chunk texts from {} passages.", queries.len(), passages.len())?;
    writeln!(
        out,
        "\nWriting the library (chunks with their vectors into LanceDB, the tantivy index built from it, compaction;"
    )?;
    writeln!(
        out,
        "embedding not included), its size on disk, and the ANN index (IVF-HNSW-SQ, cosine, LanceDB defaults):"
    )?;
    writeln!(
        out,
        "build time, size, and recall of its dense top 10 / top 50 against exact search over the same rows.\n"
    )?;
    writeln!(
        out,
        "| chunks | written in s | chunks/s | on disk MiB | ANN + id index build s | on disk with them MiB |"
    )?;
    writeln!(out, "|---:|---:|---:|---:|---:|---:|")?;
    for row in index_rows {
        writeln!(out, "{row}")?;
    }
    writeln!(out, "\nANN recall against exact search over the same rows, by refine factor (candidates per result")?;
    writeln!(
        out,
        "re-ranked by full vectors; none = the index's own order); passages@10 counts copies of a passage as one.\n"
    )?;
    writeln!(out, "| chunks | refine | recall@10 | recall@50 | passages@10 | ms per top-50 query |")?;
    writeln!(out, "|---:|---|---:|---:|---:|---:|")?;
    for row in recall_rows {
        writeln!(out, "{row}")?;
    }
    writeln!(
        out,
        "\nMemory of this process while it opens a library and runs the searches above (the embedding model"
    )?;
    writeln!(
        out,
        "and the query vectors included, as in the app): the peak resident set since just before the library"
    )?;
    writeln!(
        out,
        "was opened (the high-water mark is reset there through /proc/self/clear_refs) and the resident set"
    )?;
    writeln!(
        out,
        "after the searches. An upper bound: what building the library left resident counts too; for a process"
    )?;
    writeln!(
        out,
        "that only searches, keep the library (`--keep-data`) and measure it with `--library` under `time -v`.\n"
    )?;
    writeln!(out, "| chunks | ANN index | peak RSS while searching MiB | RSS after MiB |\n|---:|---|---:|---:|")?;
    for row in rss_rows {
        writeln!(out, "{row}")?;
    }
    if !first_queries.is_empty() {
        writeln!(
            out,
            "\nThe first query with a document prior after opening the library also reads which document owns each"
        )?;
        writeln!(out, "chunk (cached until the next commit); its time, not counted above:\n")?;
        writeln!(out, "| chunks | ANN index | search | first query ms |\n|---:|---|---|---:|")?;
        for row in first_queries {
            writeln!(out, "{row}")?;
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
