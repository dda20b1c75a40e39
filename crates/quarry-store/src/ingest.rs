//! Filling a library: `add` (files, folders, ZIP archives) and `sync` (re-read changed files, drop vanished
//! ones), through isolated parse workers, the chunker and the embedding model, into LanceDB and tantivy in
//! the crash-safe order described in `crate::library`.
//!
//! Identity is the content hash: a file whose bytes are already in the library is not read again (a file
//! that only moved gets its path updated); a changed file is read again and its old documents removed
//! once the new ones are indexed. A file whose size and modification time match what the library recorded
//! is taken as unchanged without hashing it, unless `verify` is set.

use crate::library::Library;
use crate::manifest::now_ms;
use crate::store::{ChunkRecord, DocumentRecord, DocumentState};
use crate::StoreError;
use quarry_index::Embedder;
use quarry_ingest::isolate::{parse_isolated, IsolationConfig};
use quarry_ingest::{collect_inputs, ChunkSizer, Chunker, ChunkerConfig, FileOutcome, InputFile, Status};
use serde::Serialize;
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Settings of an `add` or `sync` run.
#[derive(Debug, Clone)]
pub struct IngestOptions {
    /// Parse workers, their time budget and memory cap.
    pub isolation: IsolationConfig,
    /// Chunks embedded and written per commit group (default 256). Smaller groups make progress durable
    /// sooner; larger ones make fewer LanceDB versions.
    pub batch_chunks: usize,
    /// Read files again whose earlier attempt failed (default: they are left as failed until they change).
    pub retry_failed: bool,
    /// Hash every file, even when size and modification time say it is unchanged.
    pub verify: bool,
    /// Build the ANN index (and a BTree on chunk ids) once `chunks` has this many rows (default
    /// [`VECTOR_INDEX_ROWS`]).
    pub vector_index_rows: usize,
    /// Old LanceDB versions younger than this are kept for readers that are mid-query (default 10 min).
    pub keep_versions: Duration,
    /// May this run pick the model of a library made without one (`EmbeddingInfo::automatic`) while it
    /// is still empty (default true)? The first documents read are held until [`MODEL_SAMPLE_CHARS`]
    /// characters are in; when more than half of their letters are CJK ideographs the library switches to
    /// multilingual-e5-small before anything is chunked or embedded. Set false when the person named a
    /// model for this run.
    pub choose_model: bool,
}

/// The text a chunk is embedded and keyword-indexed as: its document's context line
/// ([`quarry_ingest::document_context`]), a line break, then the chunk's own text (which is what is
/// stored and quoted). Without a context, the text alone.
pub fn indexed_text(context: Option<&str>, text: &str) -> String {
    match context.filter(|c| !c.is_empty()) {
        Some(context) => format!("{context}\n{text}"),
        None => text.to_string(),
    }
}

/// Chunks at which a library gets its ANN index: measured with `quarry eval latency` (docs/evaluation/retrieval.md,
/// "Retrieval at scale"), exact hybrid search takes 15 ms (p50) at 10k chunks, 35 ms at 30k and 108 ms
/// at 100k, growing with the row count, while with the index it stays at 9–13 ms; the index costs
/// recall (0.99 of exact search's top 10 at 10k, 0.91 at 100k) and a build of 1–20 s. 20,000 keeps
/// exact results wherever exact search is under about 25 ms.
pub const VECTOR_INDEX_ROWS: usize = 20_000;

/// Characters of parsed text (from the first documents read) that decide the model of an automatic
/// library: enough for a few pages, so one cover sheet in another language does not decide.
pub const MODEL_SAMPLE_CHARS: u64 = 20_000;

impl IngestOptions {
    /// Default options over `isolation`: commit groups of 256 chunks, failed files left alone, no re-hashing, the ANN index from [`VECTOR_INDEX_ROWS`] rows, old versions kept 10 min, automatic model choice on.
    pub fn new(isolation: IsolationConfig) -> Self {
        IngestOptions {
            isolation,
            batch_chunks: 256,
            retry_failed: false,
            verify: false,
            vector_index_rows: VECTOR_INDEX_ROWS,
            keep_versions: Duration::from_secs(600),
            choose_model: true,
        }
    }
}

/// What an ingest run reports as it goes (`quarry add --json` prints these, one per line).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum IngestEvent {
    /// A phase of the run starts (`scan`, `read`, `embed`, `optimize`, in that order; a phase with
    /// nothing to do is not announced).
    Phase {
        /// The phase starting.
        phase: IngestPhase,
    },
    /// Files found and how many must be read; `reread` of those are unchanged files read again because
    /// Quarry reads their format better than when they were added ([`quarry_ingest::extraction_version`]).
    Scanned {
        /// Files found under the paths given.
        files: usize,
        /// Of those, files to read (new, changed, failed before with `retry_failed`, or read again).
        to_read: usize,
        /// Of those, files already in the library as they are.
        unchanged: usize,
        /// Of `to_read`, unchanged files read again by a newer reading of their format.
        reread: usize,
    },
    /// A path given that cannot be read (missing, permission denied).
    Unreadable {
        /// The path as given.
        path: String,
        /// The operating system's reason.
        error: String,
    },
    /// A document was parsed and chunked.
    Read {
        /// The document's virtual path.
        path: String,
        /// The format it was read as (`pdf`, `docx`, …).
        format: String,
        /// Pages or sheets, for formats that have them.
        pages: Option<u32>,
        /// Chunks it was cut into.
        chunks: usize,
    },
    /// A document was not added: its content is already in the library under another path.
    Skipped {
        /// The document's virtual path.
        path: String,
        /// `same content as <path>`: the document already holding it.
        reason: String,
    },
    /// A document could not be read: `status` is the parse status (`failed`, `timeout`, `crashed`, …).
    Failed {
        /// The document's virtual path.
        path: String,
        /// The parse status.
        status: String,
        /// Why, in one line.
        error: String,
    },
    /// A file moved or was renamed: its documents now point at the new path (nothing re-embedded).
    Moved {
        /// The old path.
        from: String,
        /// The new path.
        to: String,
    },
    /// A group of documents is committed to both tables and the keyword index without embeddings:
    /// searchable by keyword (BM25) from now on.
    KeywordIndexed {
        /// Documents in the group.
        documents: usize,
        /// Their chunks.
        chunks: usize,
    },
    /// Every document read is searchable by keyword; embedding the waiting chunks starts (also sent,
    /// with `documents: 0`, when only chunks left waiting by an earlier run are embedded).
    KeywordReady {
        /// Documents this run made searchable by keyword.
        documents: usize,
        /// Chunks now waiting for their embeddings (this run's and any an earlier run left).
        waiting_chunks: usize,
        /// Seconds since the run started.
        seconds: f64,
    },
    /// A group of documents has all its embeddings: searchable both ways from now on.
    Indexed {
        /// Documents in the group.
        documents: usize,
        /// Their chunks.
        chunks: usize,
    },
    /// Chunks embedded so far in this run / chunks to embed (sent after each group's vectors are
    /// computed, before they are written).
    Embedding {
        /// Chunks embedded so far.
        done: usize,
        /// Chunks waiting when embedding started.
        known: usize,
    },
    /// A file given to the run is finished (all its documents read).
    FileDone {
        /// The file's path as reported.
        path: String,
    },
    /// A document was removed (its file vanished or changed, or `quarry remove` took it out).
    Removed {
        /// The document's virtual path.
        path: String,
    },
    /// The first documents of a library made without a model decided its model (recorded in
    /// `library.toml`): `model_id`; `cjk_share` of the letters in the `sampled_chars` characters read
    /// that were CJK ideographs.
    ModelChosen {
        /// The embedding model chosen.
        model_id: String,
        /// Share of the sampled letters that were CJK, 0–1.
        cjk_share: f64,
        /// Characters read to decide.
        sampled_chars: u64,
    },
    /// The run's totals, last.
    Finished(IngestSummary),
}

/// The phases of an `add` or `sync` run, in order ([`IngestEvent::Phase`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IngestPhase {
    /// Listing the files under the paths given and deciding, against the library, which to read.
    Scan,
    /// Parsing the files in workers, chunking them, and committing them in groups searchable by
    /// keyword; then removing the documents they replace (and, for `sync`, those whose file vanished).
    Read,
    /// Embedding the chunks waiting for their vectors, group by group.
    Embed,
    /// Compacting the tables and keeping the indexes up to date.
    Optimize,
}

/// Totals of one run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct IngestSummary {
    /// Files found under the paths given.
    pub files: usize,
    /// Files already in the library as they are (not read).
    pub unchanged: usize,
    /// Unchanged files read again because their documents were read by an older reading of their format
    /// (counted in `indexed`/`failed` too, by what the new reading gave).
    pub reread: usize,
    /// Documents read and made searchable (by keyword at once; both ways once their chunks are embedded).
    pub indexed: usize,
    /// Documents that could not be read.
    pub failed: usize,
    /// Documents left out as duplicates of one already in the library.
    pub skipped: usize,
    /// Files found under a new path (nothing re-embedded).
    pub moved: usize,
    /// Documents taken out (file gone or changed).
    pub removed: usize,
    /// Chunks of the documents read, committed to both tables and the keyword index.
    pub chunks: usize,
    /// Chunks embedded by this run (this run's, and any an earlier stopped run left waiting).
    pub embedded_chunks: usize,
    /// Chunks whose text came out as in the library before — of files read again (by a newer reading
    /// of their format) and of changed files (the parts of them that did not change): they kept the
    /// embedding they had instead of being embedded again.
    pub kept_embeddings: usize,
    /// Chunks still waiting for their embeddings when the run ended (a stopped run leaves them; the
    /// next `add` or `sync` embeds them).
    pub waiting_chunks: usize,
    /// Seconds from the start of the run until every document read was searchable by keyword (scan,
    /// parse, chunk, commit to both tables and tantivy).
    pub keyword_seconds: f64,
    /// Seconds the embedding model computed vectors.
    pub embed_seconds: f64,
    /// Seconds spent writing the vectors (merge-inserts, tantivy commits, document states).
    pub embed_write_seconds: f64,
    /// Seconds of the closing compaction and index upkeep (`Library::optimize`).
    pub optimize_seconds: f64,
    /// Pages of the documents read.
    pub pages: u64,
    /// Wall-clock seconds of the run.
    pub seconds: f64,
    /// The run was stopped (`IngestOptions::isolation.stop`): what was read is committed, the rest is
    /// left for the next `add` or `sync` (the paths are already recorded as sources).
    pub cancelled: bool,
}

impl IngestSummary {
    /// Adds what one commit group wrote.
    fn add_flushed(&mut self, flushed: Flushed) {
        self.indexed += flushed.documents;
        self.chunks += flushed.chunks;
        self.kept_embeddings += flushed.kept_embeddings;
    }
}

/// What [`Library::remove`] took out.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RemoveSummary {
    /// Documents removed.
    pub documents: usize,
    /// Their chunks.
    pub chunks: usize,
    /// Paths of the removed documents (`a.zip!/b.pdf` for archive members), sorted.
    pub paths: Vec<String>,
}

/// A file to read, with what the scan learned about it.
struct Planned {
    input: InputFile,
    hash: String,
    byte_len: u64,
    modified_ms: i64,
}

/// One run's settings, running totals and progress sink, handed from phase to phase.
struct Run<'a> {
    options: &'a IngestOptions,
    /// `sync`: documents whose file vanished from a reachable source are removed.
    remove_vanished: bool,
    summary: IngestSummary,
    on_event: &'a mut (dyn FnMut(IngestEvent) + Send),
}

/// The library's documents before the run, looked up three ways.
struct KnownDocuments<'a> {
    /// A file's own row (not an archive member's), by file path.
    top_rows: HashMap<&'a str, &'a DocumentRecord>,
    /// Every row of a file's bytes, by origin (the file's hash).
    by_origin: HashMap<&'a str, Vec<&'a DocumentRecord>>,
    /// By document id (the document's content hash).
    by_id: HashMap<&'a str, &'a DocumentRecord>,
}

impl<'a> KnownDocuments<'a> {
    fn new(documents: &'a [DocumentRecord]) -> Self {
        let mut known = KnownDocuments { top_rows: HashMap::new(), by_origin: HashMap::new(), by_id: HashMap::new() };
        for d in documents {
            if d.path == d.file_path {
                known.top_rows.insert(&d.file_path, d);
            }
            known.by_origin.entry(&d.origin_id).or_default().push(d);
            known.by_id.insert(&d.document_id, d);
        }
        known
    }

    /// Did an older reading of its format make one of the documents `file_path` with these bytes
    /// (`origin`) gave? Such a file is read again.
    fn read_by_older_parser(&self, origin: &str, file_path: &str) -> bool {
        self.by_origin
            .get(origin)
            .is_some_and(|rows| rows.iter().any(|d| d.file_path == file_path && d.read_by_older_parser()))
    }
}

/// What the scan decided.
#[derive(Default)]
struct Scan {
    /// The files to read, in order.
    plan: Vec<Planned>,
    /// Origins whose documents a changed file replaces: removed once the run's documents are in.
    replaced_origins: HashSet<String>,
    /// (old origin, index in `plan` of the file that replaces it): a stopped run keeps the old version
    /// of a changed file it did not get to.
    replaced_by: Vec<(String, usize)>,
    /// Every file found on disk.
    present_files: HashSet<String>,
    /// Origins read again, same bytes, because an older reading of their format made them: their
    /// documents are written again under the same ids (`flush` replaces the old rows).
    rereading: HashSet<String>,
    /// Sources of a `sync` not reachable as a whole, with why: their documents are kept.
    unreachable: Vec<(PathBuf, &'static str)>,
}

/// What the read phase carries from file to file.
#[derive(Default)]
struct ReadPhase {
    batch: Batch,
    /// Documents written by this run, by id: a second file with the same content is skipped.
    seen: HashSet<String>,
    /// Indexes in the plan of the files whose documents are all read.
    finished_inputs: HashSet<usize>,
    /// Unchanged members of changed archives, to move under the new archive: (document id, new origin,
    /// new path, new file path).
    rehome: Vec<(String, String, String, String)>,
}

/// Sources of a `sync` missing as a whole, with why: gone, unreadable, or a folder with no file left
/// (an unmounted drive often leaves its empty mount point). Their documents are kept and reported.
fn unreachable_sources(roots: &[PathBuf], inputs: &[InputFile]) -> Vec<(PathBuf, &'static str)> {
    roots
        .iter()
        .filter_map(|root| {
            let why = if !root.exists() {
                "it does not exist"
            } else if root.is_dir() && std::fs::read_dir(root).is_err() {
                "it cannot be read"
            } else if root.is_dir() && !inputs.iter().any(|i| i.path.starts_with(root)) {
                "it holds no files"
            } else {
                return None;
            };
            Some((root.clone(), why))
        })
        .collect()
}

/// The library row of a document read from `planned` (`outcome.path`: the file itself when `top`, else
/// an archive member; only a top row carries the file's size), with no chunks counted yet.
fn document_row(
    planned: &Planned,
    outcome: &FileOutcome,
    top: bool,
    document_id: String,
    format: &str,
    state: DocumentState,
) -> DocumentRecord {
    DocumentRecord {
        document_id,
        origin_id: planned.hash.clone(),
        path: outcome.path.clone(),
        file_path: planned.input.display.clone(),
        format: format.to_string(),
        byte_len: if top { planned.byte_len } else { 0 },
        page_count: outcome.pages,
        chunk_count: 0,
        char_count: outcome.chars,
        state,
        error: None,
        warnings: (!outcome.warnings.is_empty()).then(|| outcome.warnings.join("\n")),
        added_ms: now_ms(),
        modified_ms: planned.modified_ms,
        context: None,
        extraction_version: Some(quarry_ingest::extraction_version(format)),
    }
}

/// Documents waiting to be committed together.
#[derive(Default)]
struct Batch {
    /// Parsed documents (written pending → keyword_only) with their chunks.
    documents: Vec<(DocumentRecord, Vec<ChunkRecord>)>,
    /// Rows written in their final state after the documents: failures and archive rows (an archive row
    /// says "all members are in", so it must come last).
    finals: Vec<DocumentRecord>,
    chunks: usize,
}

impl Library {
    /// Adds files, folders and ZIP archives: records them as sources of the library, reads what is new or
    /// changed, and commits in groups. `on_event` sees progress. One bad file never stops the run; it
    /// becomes a `failed` document with its reason.
    ///
    /// Errors: the library was opened read-only; storage errors (the library stays consistent, and a
    /// re-run completes the rest).
    pub async fn add(
        &mut self,
        paths: &[PathBuf],
        embedder: &Arc<Mutex<Embedder>>,
        options: &IngestOptions,
        on_event: &mut (dyn FnMut(IngestEvent) + Send),
    ) -> Result<IngestSummary, StoreError> {
        self.require_write()?;
        let absolute: Vec<PathBuf> =
            paths.iter().map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone())).collect();
        let mut changed = false;
        for path in &absolute {
            if path.exists() && !self.manifest.sources.contains(path) {
                self.manifest.sources.push(path.clone());
                changed = true;
            }
            // Adding a removed path again explicitly takes it back in.
            let before = self.manifest.excluded.len();
            self.manifest.excluded.retain(|e| !e.starts_with(path));
            changed |= self.manifest.excluded.len() != before;
        }
        if changed {
            self.manifest.save(&self.dir)?;
        }
        self.ingest(&absolute, embedder, options, on_event, false).await
    }

    /// Brings the library in step with its sources: new and changed files are read, moved files get their
    /// new path, documents whose file is gone are removed.
    pub async fn sync(
        &mut self,
        embedder: &Arc<Mutex<Embedder>>,
        options: &IngestOptions,
        on_event: &mut (dyn FnMut(IngestEvent) + Send),
    ) -> Result<IngestSummary, StoreError> {
        self.require_write()?;
        let sources = self.manifest.sources.clone();
        self.ingest(&sources, embedder, options, on_event, true).await
    }

    /// Takes files and folders out of the library: every document whose file is `path` or lies under it
    /// (archive members go with their archive), with its chunks, from both indexes. Paths that were
    /// sources stop being sources; a path inside a source folder is recorded as excluded, so `sync` and
    /// `watch` do not bring it back (an explicit `add` does). The files themselves are not touched.
    ///
    /// The manifest is saved first and the documents removed after, in the crash-safe order of the
    /// `library` module, so a crash in between leaves documents a second `remove` finds again.
    ///
    /// Errors: a path that is neither a document nor a source of the library (the message names it;
    /// nothing is removed then); read-only library; storage errors.
    pub async fn remove(&mut self, paths: &[PathBuf]) -> Result<RemoveSummary, StoreError> {
        self.require_write()?;
        self.refresh_documents().await?;
        let absolute: Vec<PathBuf> =
            paths.iter().map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone())).collect();
        let mut summary = RemoveSummary::default();
        let mut ids: Vec<String> = Vec::new();
        for path in &absolute {
            let documents: Vec<&DocumentRecord> =
                self.documents().filter(|d| Path::new(&d.file_path).starts_with(path)).collect();
            let is_source = self.manifest.sources.iter().any(|s| s.starts_with(path));
            if documents.is_empty() && !is_source {
                return Err(StoreError::NotFound(format!(
                    "library {:?} has no document at {} (see `quarry status --library {}`)",
                    self.manifest.name,
                    path.display(),
                    self.manifest.name
                )));
            }
            for d in documents {
                if !ids.contains(&d.document_id) {
                    ids.push(d.document_id.clone());
                    summary.chunks += d.chunk_count as usize;
                    summary.paths.push(d.path.clone());
                }
            }
        }
        let mut manifest = self.manifest.clone();
        for path in &absolute {
            manifest.sources.retain(|s| !s.starts_with(path));
            if manifest.sources.iter().any(|s| path.starts_with(s)) && !manifest.is_excluded(path) {
                manifest.excluded.push(path.clone());
            }
        }
        if manifest != self.manifest {
            manifest.save(&self.dir)?;
            self.manifest = manifest;
        }
        self.remove_documents(&ids).await?;
        summary.documents = ids.len();
        summary.paths.sort();
        Ok(summary)
    }

    fn require_write(&self) -> Result<(), StoreError> {
        if self.lock.is_none() {
            return Err(StoreError::Library(format!("library {:?} was opened read-only", self.manifest.name)));
        }
        Ok(())
    }

    /// One `add` or `sync` run over `roots`, in the phases [`IngestEvent::Phase`] names as each starts:
    /// [`Library::scan`] decides what to read; [`Library::read_and_commit`] parses, chunks and commits the
    /// files in groups searchable by keyword, then [`Library::remove_superseded`] takes out what they
    /// replace and, for `sync` (`remove_vanished`), what vanished; [`Library::embed_waiting`] embeds the
    /// waiting chunks; [`Library::optimize`] compacts. A stop request (`options.isolation.stop`) ends the
    /// run between files or embedding groups with what is done committed.
    ///
    /// Errors: `embedder` is not the library's model; storage errors (the library stays consistent).
    async fn ingest(
        &mut self,
        roots: &[PathBuf],
        embedder: &Arc<Mutex<Embedder>>,
        options: &IngestOptions,
        on_event: &mut (dyn FnMut(IngestEvent) + Send),
        remove_vanished: bool,
    ) -> Result<IngestSummary, StoreError> {
        let started = Instant::now();
        let mut embedder = embedder.clone();
        let chunker = self.chunker_for(&embedder)?;
        let mut run = Run { options, remove_vanished, summary: IngestSummary::default(), on_event };

        (run.on_event)(IngestEvent::Phase { phase: IngestPhase::Scan });
        self.refresh_documents().await?;
        let documents: Vec<DocumentRecord> = self.documents().cloned().collect();
        let known = KnownDocuments::new(&documents);
        let mut scan = self.scan(roots, &known, &mut run).await?;

        (run.on_event)(IngestEvent::Phase { phase: IngestPhase::Read });
        let read = self.read_and_commit(&scan, &known, &mut embedder, chunker, &mut run).await?;
        self.remove_superseded(&mut scan, &read, &mut run).await?;
        // Every document read is searchable by keyword now; then the embeddings, this run's and any a
        // stopped run left waiting.
        run.summary.keyword_seconds = started.elapsed().as_secs_f64();
        let waiting = self.store.count_waiting_chunks().await?;
        if waiting > 0 || run.summary.indexed > 0 {
            (run.on_event)(IngestEvent::KeywordReady {
                documents: run.summary.indexed,
                waiting_chunks: waiting,
                seconds: run.summary.keyword_seconds,
            });
        }
        let stopped = || options.isolation.stop.load(Ordering::Relaxed);
        // A run killed after a group's vectors were written but before its documents were marked
        // `indexed` leaves `keyword_only` documents with nothing waiting: they are finished here too.
        let unfinished = self.documents().any(|d| d.state == DocumentState::KeywordOnly);
        if (waiting > 0 || unfinished) && !stopped() {
            (run.on_event)(IngestEvent::Phase { phase: IngestPhase::Embed });
            let timing = self.embed_waiting(&embedder, options, waiting, run.on_event).await?;
            run.summary.embedded_chunks = timing.chunks;
            run.summary.embed_seconds = timing.embed_seconds;
            run.summary.embed_write_seconds = timing.write_seconds;
        }
        let mut summary = run.summary;
        summary.waiting_chunks = self.store.count_waiting_chunks().await?;
        summary.cancelled |= stopped() && summary.waiting_chunks > 0;
        if summary.indexed + summary.removed + summary.failed + summary.moved + summary.embedded_chunks > 0 {
            (run.on_event)(IngestEvent::Phase { phase: IngestPhase::Optimize });
            let optimizing = Instant::now();
            self.optimize(options.keep_versions, options.vector_index_rows).await?;
            summary.optimize_seconds = optimizing.elapsed().as_secs_f64();
        }
        summary.seconds = started.elapsed().as_secs_f64();
        (run.on_event)(IngestEvent::Finished(summary.clone()));
        Ok(summary)
    }

    /// The scan phase: lists the files under `roots` (less the excluded paths), reports paths it cannot
    /// read and, for `sync`, sources that cannot be reached as a whole (their documents are kept), and
    /// decides each file against the library's documents ([`Library::plan_file`]). Ends with
    /// [`IngestEvent::Scanned`]; an archive to be read again then loses its own row, so a run killed
    /// between its members leaves it not whole and the next run reads it again.
    ///
    /// Errors: storage errors (renaming a moved file's rows, deleting an archive's row).
    async fn scan(
        &mut self,
        roots: &[PathBuf],
        known: &KnownDocuments<'_>,
        run: &mut Run<'_>,
    ) -> Result<Scan, StoreError> {
        let (mut inputs, problems) = collect_inputs(roots);
        inputs.retain(|input| !self.manifest.is_excluded(&input.path));
        let unreachable = if run.remove_vanished { unreachable_sources(roots, &inputs) } else { Vec::new() };
        for (path, error) in problems {
            if !unreachable.iter().any(|(root, _)| *root == path) {
                (run.on_event)(IngestEvent::Unreadable { path: path.display().to_string(), error });
            }
        }
        for (root, why) in &unreachable {
            let kept = self.documents().filter(|d| Path::new(&d.file_path).starts_with(root)).count();
            if kept > 0 {
                (run.on_event)(IngestEvent::Unreadable {
                    path: root.display().to_string(),
                    error: format!(
                        "source not reachable ({why}); kept its {kept} document{} — `quarry remove {}` takes them out",
                        if kept == 1 { "" } else { "s" },
                        root.display()
                    ),
                });
            }
        }
        let mut scan = Scan { unreachable, ..Scan::default() };
        run.summary.files = inputs.len();
        for input in inputs {
            self.plan_file(input, known, &mut scan, run).await?;
        }
        (run.on_event)(IngestEvent::Scanned {
            files: run.summary.files,
            to_read: scan.plan.len(),
            unchanged: run.summary.unchanged,
            reread: run.summary.reread,
        });
        let archives_reread: Vec<String> = scan
            .rereading
            .iter()
            .filter(|origin| {
                known.by_origin.get(origin.as_str()).is_some_and(|rows| rows.iter().any(|d| d.path != d.file_path))
            })
            .cloned()
            .collect();
        if !archives_reread.is_empty() {
            self.store.delete_documents(&archives_reread).await?;
        }
        Ok(scan)
    }

    /// Decides what the run does with one file and records it in `scan`: unchanged (its size and
    /// modification time match the library's row, or its hash does — unless `verify`, a failure to retry,
    /// or a reading by an older parser says otherwise), moved (the same bytes at a new path, the old
    /// one gone: its rows are renamed now), a duplicate of a document the library has (skipped), or to
    /// read (new, changed — its old origin is then replaced — or read again by a newer parser).
    ///
    /// Errors: storage errors from renaming a moved file's rows. An unreadable file is an event.
    async fn plan_file(
        &mut self,
        input: InputFile,
        known: &KnownDocuments<'_>,
        scan: &mut Scan,
        run: &mut Run<'_>,
    ) -> Result<(), StoreError> {
        let options = run.options;
        let file_path = input.path.to_string_lossy().into_owned();
        scan.present_files.insert(file_path.clone());
        let (byte_len, modified_ms) = match std::fs::metadata(&input.path) {
            Ok(meta) => (meta.len(), modified_ms(&meta)),
            Err(e) => {
                (run.on_event)(IngestEvent::Unreadable { path: file_path, error: e.to_string() });
                return Ok(());
            }
        };
        let previous = known.top_rows.get(file_path.as_str()).copied();
        let retry = |d: &DocumentRecord| options.retry_failed && d.state == DocumentState::Failed;
        if let Some(prev) = previous {
            if !options.verify
                && prev.byte_len == byte_len
                && prev.modified_ms == modified_ms
                && !retry(prev)
                && !known.read_by_older_parser(&prev.origin_id, &file_path)
            {
                run.summary.unchanged += 1;
                return Ok(());
            }
        }
        let hash = match hash_file(&input.path) {
            Ok(hash) => hash,
            Err(e) => {
                (run.on_event)(IngestEvent::Unreadable { path: file_path, error: e.to_string() });
                return Ok(());
            }
        };
        if let Some(rows) = known.by_origin.get(hash.as_str()) {
            // A file is whole in the library once its own row is there. An archive's row is written
            // after all its members, so members without it are what a killed run left: the archive
            // is read again, and the members already indexed are kept as they are.
            let whole_here = rows.iter().any(|d| d.file_path == file_path && d.path == d.file_path);
            let partly_here = rows.iter().any(|d| d.file_path == file_path);
            let failed_retry = rows.iter().any(|d| d.path == d.file_path && retry(d));
            let reread = known.read_by_older_parser(&hash, &file_path);
            if whole_here && !failed_retry && !reread {
                run.summary.unchanged += 1;
                return Ok(());
            }
            if !partly_here {
                let old = rows[0].file_path.clone();
                if !Path::new(&old).exists() {
                    self.store.rename_origin(&hash, &old, &file_path, modified_ms).await?;
                    (run.on_event)(IngestEvent::Moved { from: old, to: file_path });
                    run.summary.moved += 1;
                } else {
                    let reason = format!("same content as {old}");
                    (run.on_event)(IngestEvent::Skipped { path: file_path, reason });
                    run.summary.skipped += 1;
                }
                return Ok(());
            }
            if reread {
                scan.rereading.insert(hash.clone());
                run.summary.reread += 1;
            }
        } else if let Some(other) = known.by_id.get(hash.as_str()) {
            let reason = format!("same content as {}", other.path);
            (run.on_event)(IngestEvent::Skipped { path: file_path, reason });
            run.summary.skipped += 1;
            return Ok(());
        }
        if let Some(prev) = previous.filter(|prev| prev.origin_id != hash) {
            scan.replaced_origins.insert(prev.origin_id.clone());
            scan.replaced_by.push((prev.origin_id.clone(), scan.plan.len()));
        }
        let display = file_path;
        scan.plan.push(Planned { input: InputFile { path: input.path, display }, hash, byte_len, modified_ms });
        Ok(())
    }

    /// The read phase: parses the scan's files in isolated worker processes (on a thread of their own,
    /// results through a bounded channel, so memory stays flat however large the batch), chunks them on
    /// a thread per core ([`chunk_in_parallel`]), takes each into a batch ([`Library::admit`]) and
    /// commits a batch of about `options.batch_chunks` chunks at a time, searchable by keyword
    /// ([`Library::flush`]). An empty library made without a model first lets its first documents
    /// choose it ([`Library::sample_and_choose_model`]; `embedder` is then replaced).
    ///
    /// Errors: storage errors; a model that cannot be switched to.
    async fn read_and_commit(
        &mut self,
        scan: &Scan,
        known: &KnownDocuments<'_>,
        embedder: &mut Arc<Mutex<Embedder>>,
        mut chunker: Chunker,
        run: &mut Run<'_>,
    ) -> Result<ReadPhase, StoreError> {
        let inputs: Vec<InputFile> = scan.plan.iter().map(|p| p.input.clone()).collect();
        let (sender, mut receiver) = tokio::sync::mpsc::channel::<(usize, FileOutcome)>(16);
        let isolation = run.options.isolation.clone();
        let parser = std::thread::spawn(move || {
            parse_isolated(&inputs, &isolation, |index, outcome| {
                let _ = sender.blocking_send((index, outcome));
            });
        });
        let mut held = VecDeque::new();
        if run.options.choose_model && self.manifest.embedding.automatic && known.by_id.is_empty() {
            held = self.sample_and_choose_model(&mut receiver, embedder, &mut chunker, run.on_event).await?;
        }
        let chunker = Arc::new(chunker);
        let mut chunked = chunk_in_parallel(receiver, Arc::clone(&chunker));
        let mut read = ReadPhase::default();
        loop {
            let item = match held.pop_front() {
                Some((index, outcome)) => (index, outcome, None),
                None => match chunked.recv().await {
                    Some(item) => item,
                    None => break,
                },
            };
            self.admit(item, scan, known, &chunker, &mut read, run);
            if read.batch.chunks >= run.options.batch_chunks.max(1) {
                let flushed = self.flush(&mut read.batch, &known.by_id, run.on_event).await?;
                run.summary.add_flushed(flushed);
            }
        }
        let _ = parser.join();
        let flushed = self.flush(&mut read.batch, &known.by_id, run.on_event).await?;
        run.summary.add_flushed(flushed);
        Ok(read)
    }

    /// Holds the first parsed documents until [`MODEL_SAMPLE_CHARS`] characters are in, and lets their
    /// letters choose the library's model ([`Library::choose_model`]); `embedder` and `chunker` become
    /// the chosen model's. Returns the held documents, to be read first.
    ///
    /// Errors: the manifest cannot be saved; the chosen model's chunker cannot be made.
    async fn sample_and_choose_model(
        &mut self,
        receiver: &mut tokio::sync::mpsc::Receiver<(usize, FileOutcome)>,
        embedder: &mut Arc<Mutex<Embedder>>,
        chunker: &mut Chunker,
        on_event: &mut (dyn FnMut(IngestEvent) + Send),
    ) -> Result<VecDeque<(usize, FileOutcome)>, StoreError> {
        let mut held = VecDeque::new();
        let (mut chars, mut letters, mut cjk) = (0u64, 0u64, 0u64);
        while chars < MODEL_SAMPLE_CHARS {
            let Some(item) = receiver.recv().await else { break };
            if let Some(document) = &item.1.document {
                chars += item.1.chars;
                letters += document.letter_count() as u64;
                cjk += item.1.cjk_chars;
            }
            held.push_back(item);
        }
        if letters > 0 {
            if let Some(chosen) = self.choose_model(letters, cjk, embedder)? {
                *embedder = chosen;
                *chunker = self.chunker_for(embedder)?;
            }
            on_event(IngestEvent::ModelChosen {
                model_id: self.manifest.embedding.model_id.clone(),
                cjk_share: cjk as f64 / letters as f64,
                sampled_chars: chars,
            });
        }
        Ok(held)
    }

    /// Takes one parsed file (or archive member) into the read phase's batch: a document new to the
    /// library, with its chunks (from the chunking threads, or chunked here); an archive's own row; or
    /// a failure row with its reason. A document whose content the library or this run already has is
    /// skipped — unless it is an unchanged member of a changed archive, which is kept and moved under
    /// the new archive when the phase ends, or a member a killed run indexed already.
    fn admit(
        &self,
        (index, outcome, mut prechunked): Chunked,
        scan: &Scan,
        known: &KnownDocuments<'_>,
        chunker: &Chunker,
        read: &mut ReadPhase,
        run: &mut Run<'_>,
    ) {
        let planned = &scan.plan[index];
        let top = outcome.path == planned.input.display;
        if top {
            read.finished_inputs.insert(index);
        }
        let format = outcome.format.map(|f| f.to_string()).unwrap_or_else(|| "unknown".into());
        let row = |document_id: String, state: DocumentState| {
            document_row(planned, &outcome, top, document_id, &format, state)
        };
        let fallback_id = if top {
            planned.hash.clone()
        } else {
            blake3::hash(format!("{}\n{}", planned.hash, outcome.path).as_bytes()).to_hex().to_string()
        };
        match (&outcome.status, &outcome.document) {
            (Status::Ok, Some(document)) => {
                let id = document.content_hash.clone();
                // A document of a file read again for a newer reading is written anew, not kept.
                let superseded = |d: &&&DocumentRecord| {
                    scan.rereading.contains(&planned.hash) && d.origin_id == planned.hash && d.read_by_older_parser()
                };
                let existing = known
                    .by_id
                    .get(id.as_str())
                    .filter(|d| d.state == DocumentState::Indexed)
                    .filter(|d| !superseded(d));
                let skipped = |reason: String, run: &mut Run<'_>| {
                    (run.on_event)(IngestEvent::Skipped { path: outcome.path.clone(), reason });
                    run.summary.skipped += 1;
                };
                if let Some(existing) = existing {
                    if existing.path == outcome.path && existing.origin_id == planned.hash {
                        // A member indexed before a run was killed, its archive being read again.
                    } else if scan.replaced_origins.contains(&existing.origin_id) {
                        // An unchanged member of a changed archive: keep it, under the new archive.
                        let (origin, file_path) = (planned.hash.clone(), planned.input.display.clone());
                        read.rehome.push((id, origin, outcome.path.clone(), file_path));
                    } else {
                        skipped(format!("same content as {}", existing.path), run);
                    }
                } else if !read.seen.insert(id.clone()) {
                    skipped("same content as another file of this run".into(), run);
                } else {
                    let mut document_row = row(id, DocumentState::Pending);
                    document_row.byte_len = document.byte_len;
                    document_row.context =
                        self.manifest.chunking.document_context.then(|| quarry_ingest::document_context(document));
                    let chunks: Vec<ChunkRecord> = prechunked
                        .take()
                        .unwrap_or_else(|| chunker.chunk(document))
                        .into_iter()
                        .map(ChunkRecord::from)
                        .collect();
                    document_row.chunk_count = chunks.len() as u32;
                    (run.on_event)(IngestEvent::Read {
                        path: outcome.path.clone(),
                        format: format.clone(),
                        pages: outcome.pages,
                        chunks: chunks.len(),
                    });
                    run.summary.pages += u64::from(outcome.pages.unwrap_or(0));
                    read.batch.chunks += chunks.len();
                    read.batch.documents.push((document_row, chunks));
                }
            }
            (Status::Ok, None) => {
                // An archive: its row is written once all its members are in.
                read.batch.finals.push(row(fallback_id, DocumentState::Indexed));
            }
            (status, _) => {
                let error = outcome.error.as_ref().map(|e| e.to_string()).unwrap_or_else(|| status.name().to_string());
                let mut failed = row(fallback_id, DocumentState::Failed);
                failed.error = Some(format!("{}: {error}", status.name()));
                failed.extraction_version = Some(quarry_ingest::failure_version(&format));
                (run.on_event)(IngestEvent::Failed { path: outcome.path.clone(), status: status.name().into(), error });
                run.summary.failed += 1;
                read.batch.finals.push(failed);
            }
        }
        if top {
            (run.on_event)(IngestEvent::FileDone { path: outcome.path.clone() });
        }
    }

    /// The end of the read phase. When the run was stopped before every file was read, the old versions
    /// of changed files it did not get to stay. Unchanged members of changed archives move under their
    /// new archive; then the documents that changed files replace, and, for `sync`, those whose file
    /// vanished from a source it can still reach, are removed ([`IngestEvent::Removed`]). Sync never
    /// removes a whole source that is not reachable: `quarry remove` does that on request.
    ///
    /// Errors: storage errors.
    async fn remove_superseded(
        &mut self,
        scan: &mut Scan,
        read: &ReadPhase,
        run: &mut Run<'_>,
    ) -> Result<(), StoreError> {
        let stopped = run.options.isolation.stop.load(Ordering::Relaxed);
        run.summary.cancelled = stopped && read.finished_inputs.len() < scan.plan.len();
        if run.summary.cancelled {
            for (old_origin, index) in &scan.replaced_by {
                if !read.finished_inputs.contains(index) {
                    scan.replaced_origins.remove(old_origin);
                }
            }
        }
        for (id, origin, path, file_path) in &read.rehome {
            self.store.move_document(id, origin, path, file_path).await?;
        }
        self.refresh_documents().await?;
        let rehomed: HashSet<&str> = read.rehome.iter().map(|r| r.0.as_str()).collect();
        let mut doomed: Vec<(String, String)> = Vec::new();
        for d in self.documents() {
            let replaced = scan.replaced_origins.contains(&d.origin_id) && !rehomed.contains(d.document_id.as_str());
            let vanished = run.remove_vanished
                && !scan.present_files.contains(&d.file_path)
                && !Path::new(&d.file_path).exists()
                && !scan.unreachable.iter().any(|(root, _)| Path::new(&d.file_path).starts_with(root));
            if replaced || vanished {
                doomed.push((d.document_id.clone(), d.path.clone()));
            }
        }
        if !doomed.is_empty() {
            let ids: Vec<String> = doomed.iter().map(|d| d.0.clone()).collect();
            self.remove_documents(&ids).await?;
            for (_, path) in doomed {
                (run.on_event)(IngestEvent::Removed { path });
                run.summary.removed += 1;
            }
        }
        self.refresh_documents().await
    }

    /// The chunker for this library's chunk size, counting tokens with `embedder`'s tokenizer, after
    /// checking that the embedder is the library's model.
    fn chunker_for(&self, embedder: &Arc<Mutex<Embedder>>) -> Result<Chunker, StoreError> {
        let sizer = {
            let model = embedder.lock().map_err(|_| StoreError::Embedding("embedder lock poisoned".into()))?;
            self.check_embedder(&model)?;
            ChunkSizer::TokenCounter(model.token_counter())
        };
        Chunker::new(
            sizer,
            ChunkerConfig {
                max_size: self.manifest.chunking.max_tokens,
                overlap: self.manifest.chunking.overlap_tokens,
            },
        )
        .map_err(StoreError::Library)
    }

    /// Settles the model of an empty automatic library from a sample of `letters` letters with `cjk`
    /// CJK ideographs: mostly CJK → multilingual-e5-small (returned, to embed with), else the model it
    /// has (None). Either way the choice is saved in `library.toml` and the library stops being
    /// automatic. When e5's files are not installed the library keeps its model, with a warning in the
    /// log. The vectors table is made for the library's dimension, so only a model of the same
    /// dimension is switched to (both built-in models give 384).
    fn choose_model(
        &mut self,
        letters: u64,
        cjk: u64,
        current: &Arc<Mutex<Embedder>>,
    ) -> Result<Option<Arc<Mutex<Embedder>>>, StoreError> {
        let mut chosen = None;
        let current_id =
            current.lock().map_err(|_| StoreError::Embedding("embedder lock poisoned".into()))?.model_id().to_string();
        if quarry_core::mostly_cjk(letters, cjk) && current_id != quarry_index::MULTILINGUAL_E5_MODEL_ID {
            match quarry_index::EmbedderConfig::multilingual_e5().and_then(|config| Embedder::new(&config)) {
                Ok(e5) if e5.dimension() == self.manifest.embedding.dimension => {
                    self.manifest.embedding.model_id = e5.model_id().to_string();
                    chosen = Some(Arc::new(Mutex::new(e5)));
                }
                Ok(e5) => tracing::warn!("library {:?} keeps its model: {} gives {} dimensions", self.manifest.name, e5.model_id(), e5.dimension()),
                Err(error) => tracing::warn!(
                    "library {:?} is mostly CJK text but keeps {current_id}: the multilingual model cannot be loaded ({error})",
                    self.manifest.name
                ),
            }
        }
        self.manifest.embedding.automatic = false;
        self.manifest.save(&self.dir)?;
        Ok(chosen)
    }

    /// Commits a batch in the crash-safe order, without embeddings: rows `pending` → chunks (zero
    /// vectors, `embedded = false`) → tantivy (payload = chunks version) → rows `keyword_only` → failure
    /// and archive rows. Returns what was committed. [`Library::embed_waiting`] embeds the chunks — but
    /// for a document written again (read again by a newer reading of its format) or one that replaces
    /// the document at its path (a changed file), a chunk whose text and context line come out as in
    /// the old document gets the embedding the old chunk had, in the same step as the chunks are added:
    /// a reading that changes a few tables of a filing, or an edit to one section of a report,
    /// re-embeds those chunks, not the whole document. The embedding is a function of the embedded text
    /// and the library's model, so the vector is the one embedding would compute again.
    async fn flush(
        &mut self,
        batch: &mut Batch,
        known: &HashMap<&str, &DocumentRecord>,
        on_event: &mut (dyn FnMut(IngestEvent) + Send),
    ) -> Result<Flushed, StoreError> {
        let taken = std::mem::take(batch);
        // Rows being written again (a retried failure, a file read again for a newer reading of its
        // format): the old rows go first. A kill between here and the new rows leaves the file not whole
        // in the library, so the next `sync` reads it again.
        let rewrite: Vec<String> = taken
            .documents
            .iter()
            .map(|(d, _)| &d.document_id)
            .chain(taken.finals.iter().map(|d| &d.document_id))
            .filter(|id| known.contains_key(id.as_str()))
            .cloned()
            .collect();
        // The embeddings the library holds for the documents written now, by the text they were embedded
        // from: the old chunks of documents written again, and of the documents at the same path that
        // these replace (a changed file: new bytes, so a new id; the old document is removed after the
        // run's documents are written).
        let written_paths: HashSet<&str> = taken.documents.iter().map(|(d, _)| d.path.as_str()).collect();
        let replaced: Vec<String> = known
            .values()
            .filter(|d| written_paths.contains(d.path.as_str()) && !rewrite.contains(&d.document_id))
            .map(|d| d.document_id.clone())
            .collect();
        let mut previous: HashMap<String, Vec<f32>> = HashMap::new();
        let earlier: Vec<String> = rewrite.iter().chain(&replaced).cloned().collect();
        if !earlier.is_empty() {
            for (chunk, vector) in self.store.embedded_chunks_of(&earlier).await? {
                let context = known.get(chunk.document_id.as_str()).and_then(|d| d.context.as_deref());
                previous.insert(indexed_text(context, &chunk.text), vector);
            }
        }
        if !rewrite.is_empty() {
            self.store.delete_chunks_of(&rewrite).await?;
            self.store.delete_documents(&rewrite).await?;
            for id in &rewrite {
                // Deletes apply to what was added before them, so the re-added chunks below stay.
                self.keyword.delete_document(id)?;
            }
        }
        let mut committed = Flushed::default();
        if !taken.documents.is_empty() {
            let rows: Vec<DocumentRecord> = taken.documents.iter().map(|(d, _)| d.clone()).collect();
            let contexts: HashMap<&str, &str> =
                rows.iter().filter_map(|d| Some((d.document_id.as_str(), d.context.as_deref()?))).collect();
            let chunks: Vec<ChunkRecord> = taken.documents.iter().flat_map(|(_, c)| c.iter().cloned()).collect();
            self.store.add_documents(&rows).await?;
            self.store.add_chunks_waiting(&chunks).await?;
            if !previous.is_empty() {
                let (kept, vectors): (Vec<ChunkRecord>, Vec<Vec<f32>>) = chunks
                    .iter()
                    .filter_map(|c| {
                        let text = indexed_text(contexts.get(c.document_id.as_str()).copied(), &c.text);
                        previous.get(&text).map(|v| (c.clone(), v.clone()))
                    })
                    .unzip();
                self.store.set_vectors(&kept, &vectors).await?;
                committed.kept_embeddings = kept.len();
            }
            for chunk in &chunks {
                // Each chunk is keyword-indexed (and later embedded) with its document's context line.
                self.keyword.add(
                    chunk.chunk_id,
                    &chunk.document_id,
                    &indexed_text(contexts.get(chunk.document_id.as_str()).copied(), &chunk.text),
                )?;
            }
            self.commit_keyword().await?;
            let ids: Vec<String> = rows.iter().map(|d| d.document_id.clone()).collect();
            self.store.set_state(&ids, DocumentState::KeywordOnly).await?;
            committed.documents = rows.len();
            committed.chunks = chunks.len();
        }
        self.store.add_documents(&taken.finals).await?;
        if committed.documents > 0 {
            on_event(IngestEvent::KeywordIndexed { documents: committed.documents, chunks: committed.chunks });
        }
        Ok(committed)
    }

    /// Embeds the chunks of every `keyword_only` document, `waiting` of them in all, in groups of about
    /// `options.batch_chunks`: each group's vectors are computed, written in one merge-insert, tantivy is
    /// committed with the new `chunks` version, and documents whose chunks are all embedded become
    /// `indexed`. Stops between groups when `options.isolation.stop` is set (the rest waits for the next
    /// run). Records the speed in `library.toml` for `status`'s estimate. Returns the chunks embedded
    /// and where the time went.
    async fn embed_waiting(
        &mut self,
        embedder: &Arc<Mutex<Embedder>>,
        options: &IngestOptions,
        waiting: usize,
        on_event: &mut (dyn FnMut(IngestEvent) + Send),
    ) -> Result<EmbedTiming, StoreError> {
        let started = Instant::now();
        let mut timing = EmbedTiming::default();
        let group_size = options.batch_chunks.max(1);
        let mut documents: Vec<(String, Option<String>, u32, i64, String)> = self
            .documents()
            .filter(|d| d.state == DocumentState::KeywordOnly)
            .map(|d| (d.document_id.clone(), d.context.clone(), d.chunk_count, d.added_ms, d.path.clone()))
            .collect();
        // In the order they were read, so the first documents read are the first searchable both ways.
        documents.sort_by(|a, b| a.3.cmp(&b.3).then(a.4.cmp(&b.4)));
        let mut done = 0usize;
        let mut start = 0;
        while start < documents.len() {
            if options.isolation.stop.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
            // Whole documents, about one group's worth of chunks.
            let mut end = start;
            let mut planned = 0usize;
            while end < documents.len() && (end == start || planned < group_size) {
                planned += documents[end].2 as usize;
                end += 1;
            }
            let group = &documents[start..end];
            start = end;
            let ids: Vec<String> = group.iter().map(|d| d.0.clone()).collect();
            let contexts: HashMap<&str, Option<&str>> = group.iter().map(|d| (d.0.as_str(), d.1.as_deref())).collect();
            let chunks = self.store.waiting_chunks_of(&ids).await?;
            let mut finished = true;
            for part in chunks.chunks(group_size) {
                if options.isolation.stop.load(std::sync::atomic::Ordering::Relaxed) {
                    finished = false;
                    break;
                }
                let texts: Vec<String> = part
                    .iter()
                    .map(|c| indexed_text(contexts.get(c.document_id.as_str()).copied().flatten(), &c.text))
                    .collect();
                let model = Arc::clone(embedder);
                let computing = Instant::now();
                let vectors = tokio::task::spawn_blocking(move || -> Result<Vec<Vec<f32>>, StoreError> {
                    let mut model = model.lock().map_err(|_| StoreError::Embedding("embedder lock poisoned".into()))?;
                    Ok(model.embed(&texts)?)
                })
                .await
                .map_err(|e| StoreError::Embedding(e.to_string()))??;
                timing.embed_seconds += computing.elapsed().as_secs_f64();
                done += vectors.len();
                on_event(IngestEvent::Embedding { done, known: waiting });
                let writing = Instant::now();
                self.store.set_vectors(part, &vectors).await?;
                self.commit_keyword().await?;
                timing.write_seconds += writing.elapsed().as_secs_f64();
            }
            if !finished {
                break;
            }
            let writing = Instant::now();
            self.store.set_state(&ids, DocumentState::Indexed).await?;
            timing.write_seconds += writing.elapsed().as_secs_f64();
            on_event(IngestEvent::Indexed { documents: ids.len(), chunks: chunks.len() });
        }
        embedder.lock().map_err(|_| StoreError::Embedding("embedder lock poisoned".into()))?.release_side_sessions();
        let seconds = started.elapsed().as_secs_f64();
        // A speed from a few chunks says little; keep the last one measured on a real group.
        if done >= group_size.min(64) && seconds > 0.0 {
            self.manifest.embedding.chunks_per_second = Some(done as f64 / seconds);
            self.manifest.save(&self.dir)?;
        }
        self.refresh_documents().await?;
        timing.chunks = done;
        Ok(timing)
    }
}

/// What one [`Library::flush`] committed.
#[derive(Debug, Default, Clone, Copy)]
struct Flushed {
    /// Documents written (searchable by keyword).
    documents: usize,
    /// Their chunks.
    chunks: usize,
    /// Of those, chunks that kept the embedding of the same text written before ([`IngestSummary::kept_embeddings`]).
    kept_embeddings: usize,
}

/// A parsed file with its document's chunks when it has one (`None`: no document, or chunk it yourself).
type Chunked = (usize, FileOutcome, Option<Vec<quarry_core::Chunk>>);

/// Chunks the documents coming from `parsed` on one thread per core (at most 4) and hands them on in
/// the order they came (item i goes to thread i mod n, and is taken back from it in turn), so the
/// ingest loop sees files in the parser's order: an archive's members before its own row.
fn chunk_in_parallel(
    mut parsed: tokio::sync::mpsc::Receiver<(usize, FileOutcome)>,
    chunker: Arc<Chunker>,
) -> tokio::sync::mpsc::Receiver<Chunked> {
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).clamp(1, 4);
    let (out_sender, out_receiver) = tokio::sync::mpsc::channel::<Chunked>(16);
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    for _ in 0..threads {
        let (to_worker, from_dispatcher) = std::sync::mpsc::sync_channel::<(usize, FileOutcome)>(2);
        let (to_merger, from_worker) = std::sync::mpsc::sync_channel::<Chunked>(2);
        let chunker = Arc::clone(&chunker);
        std::thread::spawn(move || {
            for (index, outcome) in from_dispatcher {
                // A chunker panic leaves the document to the ingest loop, which chunks it again and
                // fails as it always did, rather than ending this stage and losing the files after it.
                let chunks = match (&outcome.status, &outcome.document) {
                    (Status::Ok, Some(document)) => {
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| chunker.chunk(document))).ok()
                    }
                    _ => None,
                };
                if to_merger.send((index, outcome, chunks)).is_err() {
                    break;
                }
            }
        });
        inputs.push(to_worker);
        outputs.push(from_worker);
    }
    std::thread::spawn(move || {
        let mut turn = 0;
        while let Some(item) = parsed.blocking_recv() {
            if inputs[turn % inputs.len()].send(item).is_err() {
                break;
            }
            turn += 1;
        }
        // Dropping `inputs` ends the workers once they are through.
    });
    std::thread::spawn(move || {
        let mut turn = 0;
        // Each worker's results come in its own order; taking them in turn restores the overall order.
        while let Ok(item) = outputs[turn % outputs.len()].recv() {
            if out_sender.blocking_send(item).is_err() {
                break;
            }
            turn += 1;
        }
    });
    out_receiver
}

/// What [`Library::embed_waiting`] did: chunks embedded, seconds computing vectors, seconds writing them.
#[derive(Default)]
struct EmbedTiming {
    chunks: usize,
    embed_seconds: f64,
    write_seconds: f64,
}

fn modified_ms(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// BLAKE3 of a file's bytes, lowercase hex, read in 1 MiB pieces.
pub fn hash_file(path: &Path) -> std::io::Result<String> {
    let mut hasher = blake3::Hasher::new();
    let mut file = std::fs::File::open(path)?;
    std::io::copy(&mut std::io::BufReader::with_capacity(1 << 20, &mut file), &mut hasher)?;
    Ok(hasher.finalize().to_hex().to_string())
}

#[cfg(test)]
mod tests {
    fn share(text: &str) -> bool {
        quarry_core::is_mostly_cjk(text)
    }

    #[test]
    fn figures_and_punctuation_do_not_hide_a_chinese_document() {
        // A line of a Chinese annual report: more digits and punctuation than ideographs.
        assert!(share("2022年营业收入3,549.44亿元，同比增长8.3%；每股派发0.109元（含税）。"));
        assert!(share("中国联通（China Unicom）2022年度报告：5G套餐用户达到2.13亿户。"));
        assert!(!share("NVIDIA revenue for Q1 FY2024 was $7.19 billion, 英伟达."));
        assert!(!share("12,345.67 — 2023-01-01"), "no letters decides nothing");
    }
}
