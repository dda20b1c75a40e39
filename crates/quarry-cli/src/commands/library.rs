//! Library commands: `quarry library create|list|rename|delete|reindex`, `quarry add`, `quarry sync`,
//! `quarry watch`, `quarry status`, `quarry search`.

use crate::commands::args::ModelArgs;
use crate::commands::progress::IngestProgress;
use anyhow::Context;
use quarry_index::Embedder;
use quarry_store::{ChunkingInfo, DataDir, EmbeddingInfo, IngestOptions, Library, SearchMode, WatchEvent};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

/// Parse worker settings shared by `add`, `sync` and `watch`.
#[derive(clap::Args, Debug, Clone)]
pub struct IngestArgs {
    #[command(flatten)]
    pub worker: crate::commands::args::WorkerArgs,
    /// Read again files whose earlier attempt failed.
    #[arg(long)]
    pub retry_failed: bool,
    /// Hash every file even when its size and modification time are unchanged.
    #[arg(long)]
    pub verify: bool,
    /// Chunks embedded and committed per group.
    #[arg(long, default_value_t = 256, hide = true)]
    pub batch_chunks: usize,
    /// Print one JSON event per line instead of progress bars.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub model: ModelArgs,
}

impl IngestArgs {
    fn options(&self) -> anyhow::Result<IngestOptions> {
        let mut isolation = self.worker.isolation()?;
        isolation.include_documents = true;
        let mut options = IngestOptions::new(isolation);
        options.retry_failed = self.retry_failed;
        options.verify = self.verify;
        options.batch_chunks = self.batch_chunks.max(1);
        options.choose_model = !self.model.settings().names_a_model();
        Ok(options)
    }
}

#[derive(clap::Subcommand)]
pub enum LibraryCommand {
    /// Create an empty library.
    Create {
        name: String,
        /// Largest chunk, in tokens of the embedding model.
        #[arg(long, default_value_t = quarry_store::manifest::DEFAULT_CHUNK_TOKENS)]
        chunk_tokens: usize,
        /// Overlap between neighbouring chunks, in tokens (upper bound).
        #[arg(long, default_value_t = quarry_store::manifest::DEFAULT_OVERLAP_TOKENS)]
        overlap_tokens: usize,
        /// Index chunks without their document's context line (issuer, document type, period, file name),
        /// as libraries were before 2026-11-26: for measuring what the line changes.
        #[arg(long)]
        no_document_context: bool,
        #[command(flatten)]
        model: ModelArgs,
    },
    /// List libraries.
    List {
        /// Print the libraries as a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Rename a library.
    Rename { from: String, to: String },
    /// Delete a library and its index (your files are not touched).
    Delete {
        name: String,
        /// Confirm the deletion.
        #[arg(long)]
        yes: bool,
    },
    /// Rebuild a library with another embedding model: empties it and reads its sources again.
    Reindex {
        name: String,
        #[command(flatten)]
        ingest: IngestArgs,
    },
}

#[derive(clap::Args)]
pub struct AddArgs {
    /// Files, folders (walked recursively) and ZIP archives.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Name of the library (see `quarry library list`).
    #[arg(long, short)]
    pub library: String,
    #[command(flatten)]
    pub ingest: IngestArgs,
}

#[derive(clap::Args)]
pub struct RemoveArgs {
    /// Files or folders whose documents to take out (the files themselves are not touched).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Name of the library (see `quarry library list`).
    #[arg(long, short)]
    pub library: String,
    /// Print what was removed as one JSON object: {"documents", "chunks", "paths"}.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct SyncArgs {
    /// Name of the library (see `quarry library list`).
    #[arg(long, short)]
    pub library: String,
    #[command(flatten)]
    pub ingest: IngestArgs,
}

#[derive(clap::Args)]
pub struct WatchArgs {
    /// Name of the library (see `quarry library list`).
    #[arg(long, short)]
    pub library: String,
    /// Seconds without changes before a sync starts.
    #[arg(long, default_value_t = 2.0)]
    pub quiet_secs: f64,
    #[command(flatten)]
    pub ingest: IngestArgs,
}

#[derive(clap::Args)]
pub struct StatusArgs {
    /// The library (default: a line for each library).
    #[arg(long, short)]
    pub library: Option<String>,
    /// Print the status as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct SearchArgs {
    /// What to look for, in any words (Chinese and English are both tokenized).
    pub query: String,
    /// Name of the library (see `quarry library list`).
    #[arg(long, short)]
    pub library: String,
    /// bm25, dense or hybrid.
    #[arg(long, default_value = "hybrid")]
    pub mode: SearchMode,
    /// Number of chunks to return.
    #[arg(short, default_value_t = 10)]
    pub k: usize,
    /// Print one JSON object: {"query", "mode", "hits": [{"path", "page", "sheet", "heading_path", "score",
    /// "chunk_id", "text", "citation", "ocr" (text recognised by OCR), "bm25_rank", "dense_rank", …}]}.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub model: ModelArgs,
}

/// The model id and vector length of a loaded embedder, as a library records them.
fn embedding_info(embedder: &Mutex<Embedder>) -> anyhow::Result<EmbeddingInfo> {
    let e = embedder.lock().map_err(|_| anyhow::anyhow!("embedder lock poisoned"))?;
    Ok(EmbeddingInfo {
        model_id: e.model_id().to_string(),
        dimension: e.dimension(),
        automatic: false,
        chunks_per_second: None,
    })
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")
}

pub fn library(data: DataDir, command: LibraryCommand) -> anyhow::Result<()> {
    let rt = runtime()?;
    match command {
        LibraryCommand::Create { name, chunk_tokens, overlap_tokens, no_document_context, model } => {
            let embedder = model.load()?;
            let embedding =
                EmbeddingInfo { automatic: !model.settings().names_a_model(), ..embedding_info(&embedder)? };
            let chunking = ChunkingInfo {
                max_tokens: chunk_tokens.max(16),
                overlap_tokens: overlap_tokens.min(chunk_tokens / 2),
                document_context: !no_document_context,
            };
            let manifest = rt.block_on(Library::create(&data, &name, embedding, chunking))?;
            println!(
                "created library {:?} in {} (model {}, {} dimensions)",
                manifest.name,
                data.library_dir(&name)?.display(),
                manifest.embedding.model_id,
                manifest.embedding.dimension
            );
        }
        LibraryCommand::List { json } => {
            let libraries = data.list()?;
            if json {
                println!("{}", serde_json::to_string_pretty(&libraries)?);
            } else if libraries.is_empty() {
                println!("no libraries in {} (create one with `quarry library create NAME`)", data.root().display());
            } else {
                for m in libraries {
                    println!(
                        "{}\t{} ({} dims)\t{} sources",
                        m.name,
                        m.embedding.model_id,
                        m.embedding.dimension,
                        m.sources.len()
                    );
                }
            }
        }
        LibraryCommand::Rename { from, to } => {
            data.rename(&from, &to)?;
            println!("renamed library {from:?} to {to:?}");
        }
        LibraryCommand::Delete { name, yes } => {
            data.existing(&name)?;
            if !yes {
                anyhow::bail!(
                    "this deletes library {name:?} and its index (not your files); run again with --yes to confirm"
                );
            }
            data.delete(&name)?;
            println!("deleted library {name:?}");
        }
        LibraryCommand::Reindex { name, ingest } => {
            let embedder = ingest.model.load()?;
            // Without model options the re-read picks the model from the documents, as a new library does.
            let embedding =
                EmbeddingInfo { automatic: !ingest.model.settings().names_a_model(), ..embedding_info(&embedder)? };
            let options = ingest.options()?;
            rt.block_on(async {
                Library::reset_for_model(&data, &name, embedding.clone()).await?;
                let mut library = Library::open_write(&data, &name, &embedding.model_id).await?;
                let mut progress = IngestProgress::new(ingest.json);
                let summary = library.sync(&embedder, &options, &mut |e| progress.event(e)).await?;
                progress.finish(&summary);
                anyhow::Ok(())
            })?;
        }
    }
    Ok(())
}

/// The first Ctrl-C stops an ingest run gently: what was read is committed, the files being read are
/// stopped in the middle (within a second) and left with the rest for `quarry sync`. (A second Ctrl-C kills the process; the library stays consistent either way.)
fn stop_on_ctrl_c(options: &IngestOptions) {
    let stop = options.isolation.stop.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!(
                "\nstopping: what was read is kept, the rest is left for `quarry sync` (Ctrl-C again to quit now)…"
            );
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        }
    });
}

pub fn add(data: DataDir, args: AddArgs) -> anyhow::Result<()> {
    let embedder = args.ingest.model.load_for_library(&data, &args.library)?;
    let options = args.ingest.options()?;
    let model_id = embedding_info(&embedder)?.model_id;
    let missing: Vec<&PathBuf> = args.paths.iter().filter(|p| !p.exists()).collect();
    runtime()?.block_on(async {
        let mut library = Library::open_write(&data, &args.library, &model_id).await?;
        stop_on_ctrl_c(&options);
        let mut progress = IngestProgress::new(args.ingest.json);
        let summary = library.add(&args.paths, &embedder, &options, &mut |e| progress.event(e)).await?;
        progress.finish(&summary);
        anyhow::Ok(())
    })?;
    if !missing.is_empty() {
        let names: Vec<String> = missing.iter().map(|p| p.display().to_string()).collect();
        anyhow::bail!("not found: {}", names.join(", "));
    }
    Ok(())
}

pub fn remove(data: DataDir, args: RemoveArgs) -> anyhow::Result<()> {
    let model_id = quarry_store::LibraryManifest::load(&data.existing(&args.library)?)?.embedding.model_id;
    let summary = runtime()?.block_on(async {
        let mut library = Library::open_write(&data, &args.library, &model_id).await?;
        anyhow::Ok(library.remove(&args.paths).await?)
    })?;
    if args.json {
        println!("{}", serde_json::to_string(&summary)?);
    } else {
        for path in &summary.paths {
            println!("removed {path}");
        }
        println!("{} documents ({} chunks) removed from library {:?}", summary.documents, summary.chunks, args.library);
    }
    Ok(())
}

pub fn sync(data: DataDir, args: SyncArgs) -> anyhow::Result<()> {
    let embedder = args.ingest.model.load_for_library(&data, &args.library)?;
    let options = args.ingest.options()?;
    let model_id = embedding_info(&embedder)?.model_id;
    runtime()?.block_on(async {
        let mut library = Library::open_write(&data, &args.library, &model_id).await?;
        stop_on_ctrl_c(&options);
        let mut progress = IngestProgress::new(args.ingest.json);
        let summary = library.sync(&embedder, &options, &mut |e| progress.event(e)).await?;
        progress.finish(&summary);
        anyhow::Ok(())
    })
}

pub fn watch(data: DataDir, args: WatchArgs) -> anyhow::Result<()> {
    let embedder = args.ingest.model.load_for_library(&data, &args.library)?;
    let options = args.ingest.options()?;
    let model_id = embedding_info(&embedder)?.model_id;
    let json = args.ingest.json;
    runtime()?.block_on(async {
        let mut library = Library::open_write(&data, &args.library, &model_id).await?;
        let mut progress = IngestProgress::new(json);
        let stop = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        let quiet = Duration::from_secs_f64(args.quiet_secs.max(0.1));
        library
            .watch(
                &embedder,
                &options,
                quiet,
                &mut |event| match event {
                    WatchEvent::Ingest(e) => progress.event(e),
                    other if json => println!("{}", serde_json::to_string(&other).unwrap_or_default()),
                    WatchEvent::Watching { paths } => eprintln!("watching {} (Ctrl-C to stop)", paths.join(", ")),
                    WatchEvent::Changed { paths } => eprintln!("{paths} changes seen; syncing"),
                },
                stop,
            )
            .await?;
        anyhow::Ok(())
    })
}

pub fn status(data: DataDir, args: StatusArgs) -> anyhow::Result<()> {
    let rt = runtime()?;
    let names: Vec<String> = match &args.library {
        Some(name) => vec![name.clone()],
        None => data.list()?.into_iter().map(|m| m.name).collect(),
    };
    if names.is_empty() {
        println!("no libraries in {} (create one with `quarry library create NAME`)", data.root().display());
        return Ok(());
    }
    let mut all = Vec::new();
    for name in names {
        let status = rt.block_on(async {
            let mut library = Library::open_read(&data, &name).await?;
            library.status().await
        })?;
        all.push(status);
    }
    if args.json {
        let value = if args.library.is_some() { serde_json::to_value(&all[0])? } else { serde_json::to_value(&all)? };
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(());
    }
    for s in all {
        let count = |state: &str| s.documents.get(state).copied().unwrap_or(0);
        println!("library {}  ({}, {} dims)", s.name, s.model_id, s.dimension);
        println!(
            "  documents: {} indexed, {} failed, {} pending; {} archives; {} pages; {:.2} M characters of text; {} chunks (keyword index {}); {:.1} MiB on disk{}",
            count("indexed"),
            count("failed"),
            count("pending"),
            s.archives,
            s.pages,
            s.text_chars as f64 / 1e6,
            s.chunks,
            s.keyword_chunks,
            s.disk_bytes as f64 / (1 << 20) as f64,
            if s.vector_index { "; ANN index" } else { "" }
        );
        if s.waiting_chunks > 0 {
            let eta = match s.waiting_eta_seconds {
                Some(seconds) if seconds >= 90.0 => format!(", about {:.0} min left", seconds / 60.0),
                Some(seconds) => format!(", about {seconds:.0} s left"),
                None => String::new(),
            };
            println!(
                "  {} documents searchable by keyword only: {} chunks waiting for embeddings{eta} (an ingest running, or the next `quarry add`/`sync`)",
                count("keyword_only"),
                s.waiting_chunks
            );
        }
        if !s.formats.is_empty() {
            let formats: Vec<String> = s.formats.iter().map(|(f, n)| format!("{f} {n}")).collect();
            println!("  formats: {}", formats.join(", "));
        }
        for source in &s.sources {
            println!("  source: {}", source.display());
        }
        if !s.failures.is_empty() {
            println!("  failed:");
            for (path, reason) in &s.failures {
                println!("    {path}\t{reason}");
            }
        }
    }
    Ok(())
}

pub fn search(data: DataDir, args: SearchArgs) -> anyhow::Result<()> {
    let embedder =
        if args.mode == SearchMode::Bm25 { None } else { Some(args.model.load_for_library(&data, &args.library)?) };
    let hits = runtime()?.block_on(async {
        let mut library = Library::open_read(&data, &args.library).await?;
        library.search(&args.query, args.mode, args.k, embedder.as_ref()).await
    })?;
    if args.json {
        // Scripts depend on this shape: {"query", "mode", "hits": [{"path", "page", "sheet", "heading_path",
        // "score", "chunk_id", "text", …}]}.
        let hits: Vec<serde_json::Value> = hits
            .iter()
            .map(|hit| {
                serde_json::json!({
                    "rank": hit.rank,
                    "path": hit.path,
                    "page": hit.chunk.page_start,
                    "page_end": hit.chunk.page_end,
                    "sheet": hit.chunk.sheet,
                    "heading_path": hit.chunk.heading_path,
                    "score": hit.score,
                    "chunk_id": hit.chunk.chunk_id,
                    "document_id": hit.chunk.document_id,
                    "citation": hit.citation(),
                    "ocr": hit.chunk.ocr,
                    "bm25_rank": hit.bm25_rank,
                    "dense_rank": hit.dense_rank,
                    "char_start": hit.chunk.char_start,
                    "char_end": hit.chunk.char_end,
                    "text": hit.chunk.text,
                })
            })
            .collect();
        let output = serde_json::json!({ "query": args.query, "mode": args.mode.name(), "hits": hits });
        println!("{}", serde_json::to_string_pretty(&output)?);
        return Ok(());
    }
    if hits.is_empty() {
        println!("no results");
    }
    for hit in hits {
        let snippet: String =
            hit.chunk.text.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(240).collect();
        println!("{:>2}. [{:.4}] {}\n    {}\n    {snippet}\n", hit.rank, hit.score, hit.citation(), hit.path);
    }
    Ok(())
}
