//! An open library: its LanceDB tables, its tantivy index and its manifest, kept consistent across crashes.
//!
//! # Consistency (docs/ARCHITECTURE.md, "Storage and crash safety")
//! LanceDB is the source of truth; every change is a sequence of LanceDB commits arranged so that a
//! `kill -9` between any two of them leaves a library that opens with every `keyword_only` document
//! whole in both tables and tantivy, and every `indexed` document whole with its embeddings:
//!
//! 1. document rows are written as `pending`;
//! 2. their chunks (text, zero vectors, `embedded = false`) are appended to `chunks`;
//! 3. the chunks go into tantivy, committed with the `chunks` table version as the commit payload;
//! 4. the rows are set to `keyword_only`: BM25 finds them from now on;
//! 5. later, a group of waiting chunks gets its embeddings in one merge-insert (`embedded = true`), and
//!    tantivy is committed again with the new `chunks` version (its documents are unchanged);
//! 6. the rows whose chunks are all embedded are set to `indexed`.
//!
//! Removing documents runs the other way: rows back to `pending`, chunks deleted, tantivy commit, rows
//! deleted. Opening a library for writing ([`Library::open_write`]) repairs whatever a crash left: chunks
//! of `pending` documents are deleted together with those rows (the next `add` or `sync` reads the files
//! again), and when tantivy's payload is not the current `chunks` version, tantivy is rebuilt from LanceDB.
//! `keyword_only` documents stay: the next write run embeds what they still wait for, and sets to
//! `indexed` those a kill between steps 5 and 6 left with nothing waiting.
//! Readers ([`Library::open_read`]) take no lock and change nothing: they only show chunks of
//! `keyword_only` and `indexed` documents, and dense search only chunks whose embedding is computed, so
//! a search during an ingest sees whole documents only.

use crate::manifest::{ChunkingInfo, DataDir, EmbeddingInfo, LibraryManifest, WriteLock};
use crate::store::{ChunkRecord, DocumentRecord, DocumentState, Store};
use crate::StoreError;
use quarry_index::{embedder_covers, Embedder, HybridFusion, SearchMode};
use quarry_index::{DocumentScores, KeywordIndex};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A library opened for searching, or for searching and changing.
pub struct Library {
    pub(crate) dir: PathBuf,
    pub(crate) manifest: LibraryManifest,
    pub(crate) store: Store,
    pub(crate) keyword: KeywordIndex,
    pub(crate) lock: Option<WriteLock>,
    /// Documents as of the last refresh, by id.
    documents: HashMap<String, DocumentRecord>,
    documents_version: u64,
    /// Weight of the document prior in keyword ranking ([`Library::set_document_prior`]); 0 = off.
    document_prior: f32,
    /// Where the last search spent its time ([`Library::last_search_timings`]).
    last_timings: SearchTimings,
    /// Fewest committed chunks at which hybrid search runs BM25 and the vector search side by side
    /// ([`Library::set_side_by_side_from`]).
    side_by_side_from: u64,
}

/// Fewest chunks at which a hybrid search runs BM25 and the vector search side by side (on a
/// multi-threaded runtime): where the ANN index begins ([`crate::ingest::VECTOR_INDEX_ROWS`]). Below it
/// BM25 takes under a millisecond and handing the vector search to another thread costs more than it
/// saves (998 chunks: hybrid p50 6.6–7.3 ms one after the other, 7.2–7.4 side by side).
pub const SIDE_BY_SIDE_MIN_CHUNKS: u64 = crate::ingest::VECTOR_INDEX_ROWS as u64;

/// Where one [`Library::search`] spent its time (wall clock). The parts run one after another, except
/// that a hybrid search on a multi-threaded Tokio runtime runs BM25 and the vector search side by side
/// (after the query's embedding), so their sum can exceed the whole.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct SearchTimings {
    /// BM25 over tantivy, with the document prior when it is on.
    pub keyword: Duration,
    /// The query's embedding (ONNX Runtime or the e5 engine).
    pub embedding: Duration,
    /// The nearest-neighbour search in LanceDB (ANN or exact).
    pub vector: Duration,
    /// Reading the rows (text, location) of the chunks the search returns that the vector search did not
    /// bring back with it.
    pub lookup: Duration,
    /// The whole search, from call to return.
    pub total: Duration,
}

/// Weight of the document prior every library searches with unless told otherwise
/// ([`Library::set_document_prior`]). Chosen on the 98 sec-10-q questions over the real 10-Q filings of
/// `C_private_library` (weights 0.25–2 measured; docs/evaluation/retrieval.md, "A document prior").
pub const DEFAULT_DOCUMENT_PRIOR: f32 = 1.0;

/// One search result: a chunk with where it comes from and how it ranked.
#[derive(Debug, Clone, Serialize)]
pub struct SearchHit {
    /// 1-based position in the results.
    pub rank: usize,
    /// The score of the mode used: BM25 score, cosine similarity, or fused reciprocal-rank score.
    pub score: f32,
    /// The document's virtual path (`/abs/report.pdf`, `/abs/archive.zip!/a.docx`).
    pub path: String,
    /// 1-based rank in the BM25 list and in the dense list, when the chunk was in them.
    pub bm25_rank: Option<usize>,
    /// See `bm25_rank`.
    pub dense_rank: Option<usize>,
    /// The document's context line (`DocumentRecord::context`), when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// The chunk's stored row: text, location, score.
    #[serde(flatten)]
    pub chunk: ChunkRecord,
}

impl SearchHit {
    /// "report.pdf, p. 3–4", "budget.xlsx, sheet Q3", "handbook.docx, Safety > Ladders": the citation form.
    pub fn citation(&self) -> String {
        self.passage("").citation()
    }

    /// The hit as a retrieved passage of library `library` (what the agents work with).
    pub fn passage(&self, library: &str) -> quarry_core::Passage {
        self.chunk.passage(library, &self.path, self.context.as_deref(), self.score)
    }
}

/// What `quarry status` shows.
#[derive(Debug, Clone, Serialize)]
pub struct LibraryStatus {
    /// The library's name.
    pub name: String,
    /// Its embedding model.
    pub model_id: String,
    /// Length of its vectors.
    pub dimension: usize,
    /// The files and folders added to it (what `sync` reads again).
    pub sources: Vec<PathBuf>,
    /// Documents by state (`indexed`, `keyword_only`, `failed`, `pending`); ZIP archives themselves are
    /// not counted.
    pub documents: BTreeMap<String, usize>,
    /// Searchable (`indexed` and `keyword_only`) documents by format.
    pub formats: BTreeMap<String, usize>,
    /// ZIP archives and mbox files read whole (their members and messages are the documents).
    pub archives: usize,
    /// Rows in the LanceDB `chunks` table and documents in tantivy (equal when consistent).
    pub chunks: usize,
    /// See `chunks`.
    pub keyword_chunks: u64,
    /// Pages of the indexed documents that have pages (PDFs).
    pub pages: u64,
    /// Characters of text extracted from the indexed documents.
    pub text_chars: u64,
    /// Failed documents: (path, reason).
    pub failures: Vec<(String, String)>,
    /// Size of the library folder (both indexes, manifest), in bytes.
    pub disk_bytes: u64,
    /// Whether the `chunks` table has an ANN index (else dense search is exact).
    pub vector_index: bool,
    /// Chunks searchable by keyword only, waiting for their embeddings (an ingest under way, or one that
    /// was stopped: the next `add` or `sync` embeds them).
    pub waiting_chunks: usize,
    /// Seconds until the waiting chunks are embedded, at the speed the library's last ingest embedded
    /// (`library.toml`, `embedding.chunks_per_second`); `None` when nothing waits or no speed is known.
    pub waiting_eta_seconds: Option<f64>,
}

#[derive(Serialize, serde::Deserialize)]
struct KeywordPayload {
    chunks_version: u64,
}

/// Commits `keyword` with the current version of `store`'s `chunks` table as payload: the record of which
/// LanceDB version tantivy mirrors.
async fn commit_mirroring(keyword: &mut KeywordIndex, store: &Store) -> Result<(), StoreError> {
    let payload = serde_json::to_string(&KeywordPayload { chunks_version: store.chunks_version().await? })
        .map_err(|e| StoreError::Store(e.to_string()))?;
    Ok(keyword.commit_with_payload(&payload)?)
}

/// Creates empty LanceDB tables and an empty keyword index in the library folder `dir`, in step.
async fn create_indexes(dir: &Path, dimension: usize) -> Result<(), StoreError> {
    let store = Store::open(&dir.join("lance"), dimension, true).await?;
    let mut keyword = KeywordIndex::open_or_create(&dir.join("tantivy"))?;
    commit_mirroring(&mut keyword, &store).await
}

/// The parts of a library folder that [`Library::reset_for_model`] swaps, in the order it swaps them:
/// LanceDB (what a library holds) before tantivy (which mirrors it, and is rebuilt from it when not).
const TABLE_PARTS: [&str; 2] = ["lance", "tantivy"];

/// The folder in which [`Library::reset_for_model`] makes the empty tables before swapping them in.
const RESET_STAGING_PREFIX: &str = ".reset-";

/// How the names of the folders a reset sets `part` aside to begin (`.<part>-old-<stamp>`).
fn aside_prefix(part: &str) -> String {
    format!(".{part}-old-")
}

/// The newest folder a reset set `part` aside to (stamps are milliseconds of one width, so the greatest
/// name is the newest), if any.
fn newest_aside(dir: &Path, part: &str) -> Option<PathBuf> {
    let prefix = aside_prefix(part);
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with(&prefix)))
        .map(|e| e.path())
        .max()
}

/// Where `part` of library folder `dir` is: `dir/part`, or the aside a reset killed between its two
/// renames left when `dir/part` is missing.
fn part_dir(dir: &Path, part: &str) -> PathBuf {
    let current = dir.join(part);
    if current.exists() {
        return current;
    }
    newest_aside(dir, part).unwrap_or(current)
}

/// For a writer holding the library's lock: puts back a part a killed [`Library::reset_for_model`] left
/// aside with nothing in its place (the library is then as before the reset), and deletes what a reset
/// left behind once every part is in place (old parts, the staging folder).
fn finish_interrupted_reset(dir: &Path) -> Result<(), StoreError> {
    for part in TABLE_PARTS {
        let current = dir.join(part);
        if !current.exists() {
            if let Some(aside) = newest_aside(dir, part) {
                tracing::warn!("putting back {} that an interrupted reset left aside", aside.display());
                std::fs::rename(&aside, &current).map_err(|e| StoreError::io(&aside, e))?;
            }
        }
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(()) };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let leftover = name.starts_with(RESET_STAGING_PREFIX)
            || TABLE_PARTS.iter().any(|part| name.starts_with(&aside_prefix(part)));
        if leftover {
            let path = entry.path();
            std::fs::remove_dir_all(&path).map_err(|e| StoreError::io(&path, e))?;
        }
    }
    Ok(())
}

impl Library {
    /// Creates library `name` for documents embedded with `embedding`, with empty tables and keyword
    /// index. Errors: bad name, the library exists, storage errors.
    pub async fn create(
        data: &DataDir,
        name: &str,
        embedding: EmbeddingInfo,
        chunking: ChunkingInfo,
    ) -> Result<LibraryManifest, StoreError> {
        let manifest = data.create(name, embedding, chunking)?;
        let dir = data.existing(name)?;
        let _lock = WriteLock::acquire(&dir, name)?;
        create_indexes(&dir, manifest.embedding.dimension).await?;
        Ok(manifest)
    }

    /// Empties library `name` and records `embedding` as its model; its sources stay, so a
    /// [`Library::sync`] afterwards reads everything again with the new model.
    ///
    /// Crash-safe: the empty tables are made first in a folder of their own (`.reset-<stamp>`); then
    /// each part — LanceDB first, then tantivy — is swapped by two renames (the old one aside to
    /// `.<part>-old-<stamp>`, the new one in), the manifest changes, and the old parts are deleted last.
    /// A kill at any moment leaves every part in place or set aside: [`Library::open_read`] reads a part
    /// a kill left aside, and [`Library::open_write`] puts it back and clears what a reset left behind,
    /// so the library opens as it was or empty, never half gone. (Until 2026-12-04 the empty tables were
    /// made after the old ones were moved aside, and a kill between left no table to open: found by
    /// `kill_minus_nine_during_sync_remove_and_reindex_never_leaves_a_half_indexed_library`.)
    pub async fn reset_for_model(data: &DataDir, name: &str, embedding: EmbeddingInfo) -> Result<(), StoreError> {
        let dir = data.existing(name)?;
        let lock = WriteLock::acquire(&dir, name)?;
        let mut manifest = LibraryManifest::load(&dir)?;
        finish_interrupted_reset(&dir)?;
        let stamp = crate::manifest::now_ms();
        let staging = dir.join(format!("{RESET_STAGING_PREFIX}{stamp}"));
        create_indexes(&staging, embedding.dimension).await?;
        let mut aside = Vec::new();
        for part in TABLE_PARTS {
            let current = dir.join(part);
            if current.exists() {
                let to = dir.join(format!("{}{stamp}", aside_prefix(part)));
                std::fs::rename(&current, &to).map_err(|e| StoreError::io(&current, e))?;
                aside.push(to);
            }
            let new = staging.join(part);
            std::fs::rename(&new, &current).map_err(|e| StoreError::io(&new, e))?;
        }
        manifest.embedding = embedding;
        manifest.save(&dir)?;
        for old in aside.into_iter().chain([staging]) {
            std::fs::remove_dir_all(&old).map_err(|e| StoreError::io(&old, e))?;
        }
        drop(lock);
        Ok(())
    }

    /// Opens library `name` for searching: no lock, no repair. Works while another process ingests.
    ///
    /// Errors: no such library; its tables cannot be opened.
    pub async fn open_read(data: &DataDir, name: &str) -> Result<Library, StoreError> {
        let dir = data.existing(name)?;
        let manifest = LibraryManifest::load(&dir)?;
        // A part a killed reset left aside is read where it is (a reader changes nothing).
        let store = Store::open(&part_dir(&dir, "lance"), manifest.embedding.dimension, false).await?;
        let tantivy_dir = part_dir(&dir, "tantivy");
        let keyword = match KeywordIndex::open_read_only(&tantivy_dir) {
            Ok(index) => index,
            Err(error) => {
                // No index yet (nothing added) is normal; anything else means BM25 finds nothing until a
                // writer (`add`, `sync`, `watch`, the app) rebuilds it from the chunks table.
                if tantivy_dir.join("meta.json").exists() {
                    tracing::warn!(
                        "the keyword index of library {name:?} cannot be read ({error}); keyword search finds nothing until `quarry sync --library {name}` rebuilds it"
                    );
                }
                KeywordIndex::in_memory()?
            }
        };
        let mut library = Library {
            dir,
            manifest,
            store,
            keyword,
            lock: None,
            documents: HashMap::new(),
            documents_version: 0,
            document_prior: DEFAULT_DOCUMENT_PRIOR,
            last_timings: SearchTimings::default(),
            side_by_side_from: SIDE_BY_SIDE_MIN_CHUNKS,
        };
        library.refresh_documents().await?;
        Ok(library)
    }

    /// Opens library `name` for changing: takes the write lock and repairs what a crash left (see the
    /// module docs). `model_id` is the embedding model of this run; a library built with another model is
    /// refused with the way to re-index.
    ///
    /// Errors: no such library; another process holds the lock; model mismatch; storage errors.
    pub async fn open_write(data: &DataDir, name: &str, model_id: &str) -> Result<Library, StoreError> {
        let dir = data.existing(name)?;
        let lock = WriteLock::acquire(&dir, name)?;
        let manifest = LibraryManifest::load(&dir)?;
        check_model(&manifest, model_id)?;
        finish_interrupted_reset(&dir)?;
        let store = Store::open(&dir.join("lance"), manifest.embedding.dimension, true).await?;
        let tantivy_dir = dir.join("tantivy");
        let keyword = match KeywordIndex::open_or_create(&tantivy_dir) {
            Ok(index) => index,
            Err(error) => {
                match error {
                    // An index from before a change of the keyword analyzer: expected after an upgrade.
                    quarry_index::IndexError::KeywordAnalyzerChanged(_) => {
                        tracing::info!("rebuilding the keyword index of {name:?}: {error}")
                    }
                    _ => tracing::warn!("rebuilding the keyword index of {name:?}: {error}"),
                }
                std::fs::remove_dir_all(&tantivy_dir).map_err(|e| StoreError::io(&tantivy_dir, e))?;
                KeywordIndex::open_or_create(&tantivy_dir)?
            }
        };
        let mut library = Library {
            dir,
            manifest,
            store,
            keyword,
            lock: Some(lock),
            documents: HashMap::new(),
            documents_version: 0,
            document_prior: DEFAULT_DOCUMENT_PRIOR,
            last_timings: SearchTimings::default(),
            side_by_side_from: SIDE_BY_SIDE_MIN_CHUNKS,
        };
        library.repair().await?;
        library.refresh_documents().await?;
        Ok(library)
    }

    /// Removes half-done work and brings tantivy in line with LanceDB. Returns (documents dropped,
    /// whether tantivy was rebuilt).
    async fn repair(&mut self) -> Result<(usize, bool), StoreError> {
        let pending: Vec<String> = self
            .store
            .documents_where(Some("state = 'pending'".into()))
            .await?
            .into_iter()
            .map(|d| d.document_id)
            .collect();
        if !pending.is_empty() {
            tracing::info!(
                "library {:?}: removing {} documents left pending by an interrupted run",
                self.manifest.name,
                pending.len()
            );
            self.store.delete_chunks_of(&pending).await?;
            self.store.delete_documents(&pending).await?;
        }
        let version = self.store.chunks_version().await?;
        let mirrored = self
            .keyword
            .payload()?
            .and_then(|p| serde_json::from_str::<KeywordPayload>(&p).ok())
            .map(|p| p.chunks_version);
        let rebuilt = mirrored != Some(version);
        if rebuilt {
            tracing::info!(
                "library {:?}: rebuilding the keyword index (mirrors {mirrored:?}, chunks at {version})",
                self.manifest.name
            );
            self.keyword.clear()?;
            // The same text an ingest indexes: the document's context line, then the chunk's text.
            let contexts: HashMap<String, String> =
                self.store.documents().await?.into_iter().filter_map(|d| Some((d.document_id, d.context?))).collect();
            let keyword = &mut self.keyword;
            self.store
                .scan_texts(|id, document, text| {
                    let indexed = crate::ingest::indexed_text(contexts.get(document).map(String::as_str), text);
                    keyword.add(id, document, &indexed).map_err(Into::into)
                })
                .await?;
            self.commit_keyword().await?;
        }
        Ok((pending.len(), rebuilt))
    }

    /// Commits tantivy with the current `chunks` version as payload.
    pub(crate) async fn commit_keyword(&mut self) -> Result<(), StoreError> {
        commit_mirroring(&mut self.keyword, &self.store).await
    }

    /// Reloads the document rows when the `documents` table has changed.
    pub(crate) async fn refresh_documents(&mut self) -> Result<(), StoreError> {
        let version = self.store.documents.version().await?;
        if version != self.documents_version || self.documents.is_empty() {
            self.documents = self.store.documents().await?.into_iter().map(|d| (d.document_id.clone(), d)).collect();
            self.documents_version = version;
        }
        Ok(())
    }

    /// The library's name.
    pub fn name(&self) -> &str {
        &self.manifest.name
    }

    /// Its `library.toml`: name, embedding model, sources.
    pub fn manifest(&self) -> &LibraryManifest {
        &self.manifest
    }

    /// Its folder under the data folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The document rows as of the last refresh.
    pub fn documents(&self) -> impl Iterator<Item = &DocumentRecord> {
        self.documents.values()
    }

    /// Its LanceDB tables (chunks with vectors, documents).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Its tantivy keyword index.
    pub fn keyword(&self) -> &KeywordIndex {
        &self.keyword
    }

    /// Checks that `embedder` is the model this library was built with.
    pub fn check_embedder(&self, embedder: &Embedder) -> Result<(), StoreError> {
        check_model(&self.manifest, embedder.model_id())?;
        if embedder.dimension() != self.manifest.embedding.dimension {
            return Err(StoreError::ModelMismatch(format!(
                "library {:?} stores {}-dimensional vectors but model {} gives {}",
                self.manifest.name,
                self.manifest.embedding.dimension,
                embedder.model_id(),
                embedder.dimension()
            )));
        }
        Ok(())
    }

    /// The `k` best chunks for `query`, best first.
    ///
    /// - `Bm25`: tantivy BM25 ([`quarry_index::MixedTokenizer`] for Chinese and English).
    /// - `Dense`: cosine similarity of `embedder`'s vectors in LanceDB (ANN index when built).
    /// - `Hybrid`: [`HybridFusion::default`] of the two lists (min-max normalised BM25 score and cosine
    ///   similarity, the dense weight set per query from how far each list's first score stands above
    ///   the list), each `max(5k, 50)` deep; BM25 alone
    ///   for mostly-CJK queries when the model covers no CJK language ([`quarry_index::embedder_covers`]).
    ///   On a multi-threaded Tokio runtime, in a library of at least [`SIDE_BY_SIDE_MIN_CHUNKS`], the
    ///   vector search runs on a blocking-pool thread while BM25 runs on the caller's (at 1M chunks on 2
    ///   cores: hybrid p50 1–5 ms less, docs/evaluation/retrieval.md); elsewhere one after the other. The
    ///   hits are the same either way.
    ///
    /// Only chunks of `indexed` documents are returned. Errors: `Dense`/`Hybrid` without an embedder, or
    /// with one of another model; storage errors.
    pub async fn search(
        &mut self,
        query: &str,
        mode: SearchMode,
        k: usize,
        embedder: Option<&Arc<Mutex<Embedder>>>,
    ) -> Result<Vec<SearchHit>, StoreError> {
        self.search_with_fusion(query, mode, k, embedder, HybridFusion::default()).await
    }

    /// Re-ranks keyword hits (in `Bm25` and `Hybrid` search) by a document prior: each chunk's BM25 score,
    /// min-max scaled over the candidates, plus `weight` × its document's whole-document BM25 score
    /// ([`KeywordIndex::document_scores`]), min-max scaled over the library's documents. On by default
    /// ([`DEFAULT_DOCUMENT_PRIOR`]); 0 turns it off (negative weights count as 0). It helps libraries of
    /// long documents whose chunks rarely name what the document is about (a 10-Q filing's paragraphs say
    /// "the Company", not "Apple"); `quarry eval library --document-prior` measures it (docs/evaluation/retrieval.md, "A
    /// document prior"). A document made of one chunk gets its own score twice, so a library of one-chunk
    /// documents ranks as without it (up to tantivy's rounding of lengths).
    pub fn set_document_prior(&mut self, weight: f32) {
        self.document_prior = weight.max(0.0);
    }

    /// Sets the fewest committed chunks at which hybrid search runs BM25 and the vector search side by
    /// side ([`SIDE_BY_SIDE_MIN_CHUNKS`] unless set; 0 = always, for tests of that path on small libraries).
    pub fn set_side_by_side_from(&mut self, chunks: u64) {
        self.side_by_side_from = chunks;
    }

    /// The weight of the document prior in keyword ranking ([`Library::set_document_prior`]).
    pub fn document_prior(&self) -> f32 {
        self.document_prior
    }

    /// [`Library::search`] with another fusion for `Hybrid` (`quarry eval library --fusion` compares them).
    pub async fn search_with_fusion(
        &mut self,
        query: &str,
        mode: SearchMode,
        k: usize,
        embedder: Option<&Arc<Mutex<Embedder>>>,
        fusion: HybridFusion,
    ) -> Result<Vec<SearchHit>, StoreError> {
        let started = Instant::now();
        self.last_timings = SearchTimings::default();
        if k == 0 || query.trim().is_empty() {
            return Ok(Vec::new());
        }
        self.refresh_documents().await?;
        self.keyword.reload()?;
        // Hybrid fuses deeper lists; a document prior re-ranks a deeper BM25 list too.
        let deep = mode == SearchMode::Hybrid || (mode == SearchMode::Bm25 && self.document_prior > 0.0);
        let depth = if deep { fusion.depth(k) } else { k };
        let use_dense = match mode {
            SearchMode::Bm25 => false,
            SearchMode::Dense => true,
            SearchMode::Hybrid => {
                let languages = match embedder {
                    Some(e) => e.lock().map(|e| e.languages().to_vec()).unwrap_or_default(),
                    None => Vec::new(),
                };
                embedder.is_some() && embedder_covers(&languages, query)
            }
        };
        let use_bm25 = mode != SearchMode::Dense;
        // Chunks of documents that are not (yet) searchable are skipped, so ask for a few more.
        let pending = self.documents.values().filter(|d| d.state == DocumentState::Pending).count();
        let fetch = depth + if pending > 0 { depth } else { 0 };
        // Documents searchable by keyword only: dense search leaves their waiting chunks out.
        let waiting = self.documents.values().any(|d| d.state == DocumentState::KeywordOnly);
        let mut timings = SearchTimings::default();

        // The query's embedding first: ONNX Runtime spreads it over every core. Then, in hybrid search,
        // LanceDB's vector search runs on a thread of its own beside BM25 and the document prior.
        let vector = if use_dense {
            let embedder = embedder
                .ok_or_else(|| StoreError::Embedding("dense and hybrid search need the embedding model".into()))?;
            let embedding_started = Instant::now();
            let vector = {
                let mut model = embedder.lock().map_err(|_| StoreError::Embedding("embedder lock poisoned".into()))?;
                self.check_embedder(&model)?;
                model.embed_queries(&[query])?.pop().unwrap_or_default()
            };
            timings.embedding = embedding_started.elapsed();
            Some(vector)
        } else {
            None
        };
        let search = crate::store::VectorSearch::DEFAULT;
        let this: &Self = self;
        let keyword_side = || -> Result<KeywordSide, StoreError> {
            let keyword_started = Instant::now();
            // Each hit's document comes from the keyword index itself: no row is read for candidates.
            let mut owner: HashMap<u64, String> = HashMap::new();
            let mut bm25: Vec<(u64, f32)> = Vec::new();
            for hit in this.keyword.search_with_documents(query, fetch)? {
                if bm25.len() < depth && this.visible(&hit.document_id) {
                    bm25.push((hit.chunk_id, hit.score));
                    owner.insert(hit.chunk_id, hit.document_id);
                }
            }
            if this.document_prior > 0.0 && !bm25.is_empty() {
                let documents = this.keyword.document_scores(query)?;
                bm25 = with_document_prior(&bm25, &owner, &documents, this.document_prior);
            }
            Ok(KeywordSide { bm25, owner, took: keyword_started.elapsed() })
        };

        let mut owner: HashMap<u64, String> = HashMap::new();
        let mut bm25: Vec<(u64, f32)> = Vec::new();
        let mut records: HashMap<u64, ChunkRecord> = HashMap::new();
        let mut dense: Vec<(u64, f32)> = Vec::new();
        match &vector {
            Some(vector) if use_bm25 => {
                // Fused: only ids and documents now; whole rows for the final list below.
                let runtime = tokio::runtime::Handle::try_current()
                    .ok()
                    .filter(|r| r.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
                    .filter(|_| this.keyword.len() >= this.side_by_side_from);
                let (keyword, nearest) = match runtime {
                    // LanceDB's search on a blocking-pool thread (the tasks it spawns go to the runtime's
                    // shared queue, which any worker takes), BM25 on this one. Nothing here waits on a
                    // worker another search holds: a worker busy with BM25 returns to the runtime after it.
                    Some(runtime) => {
                        let (store, vector) = (this.store.clone(), vector.clone());
                        let runs_on = runtime.clone();
                        let nearest = runtime.spawn_blocking(move || {
                            let started = Instant::now();
                            let found = runs_on.block_on(store.nearest_ids(&vector, fetch, search, waiting));
                            (found, started.elapsed())
                        });
                        let keyword = keyword_side();
                        let nearest =
                            nearest.await.map_err(|e| StoreError::Store(format!("vector search stopped: {e}")));
                        (keyword, nearest)
                    }
                    // A small library, or a single-threaded runtime (it runs LanceDB's tasks only where
                    // they are awaited): one after the other.
                    None => {
                        let keyword = keyword_side();
                        let started = Instant::now();
                        let found = this.store.nearest_ids(vector, fetch, search, waiting).await;
                        (keyword, Ok((found, started.elapsed())))
                    }
                };
                let keyword = keyword?;
                let (nearest, vector_time) = nearest?;
                (bm25, owner, timings.keyword) = (keyword.bm25, keyword.owner, keyword.took);
                timings.vector = vector_time;
                for (id, document, similarity) in nearest? {
                    if self.visible(&document) && dense.len() < depth {
                        dense.push((id, similarity));
                        owner.insert(id, document);
                    }
                }
            }
            Some(vector) => {
                let vector_started = Instant::now();
                for (chunk, similarity) in self.store.nearest_where(vector, fetch, search, waiting).await? {
                    if self.visible(&chunk.document_id) && dense.len() < depth {
                        dense.push((chunk.chunk_id, similarity));
                        records.insert(chunk.chunk_id, chunk);
                    }
                }
                timings.vector = vector_started.elapsed();
            }
            None => {
                let keyword = keyword_side()?;
                (bm25, owner, timings.keyword) = (keyword.bm25, keyword.owner, keyword.took);
            }
        }
        let ranked: Vec<(u64, f32)> = match (use_bm25, use_dense) {
            (true, true) if waiting => {
                // A chunk waiting for its embedding has no dense score: fusion ranks it by BM25 alone.
                let unembedded: std::collections::HashSet<u64> = bm25
                    .iter()
                    .filter(|(id, _)| {
                        owner.get(id).and_then(|d| self.documents.get(d)).map(|d| d.state)
                            == Some(DocumentState::KeywordOnly)
                    })
                    .map(|(id, _)| *id)
                    .collect();
                fusion.fuse_partly_embedded(&bm25, &dense, k, &unembedded)
            }
            (true, true) => fusion.fuse(&bm25, &dense, k),
            (true, false) => bm25.clone(),
            _ => dense.clone(),
        };
        let ranked: Vec<(u64, f32)> = ranked.into_iter().take(k).collect();
        let missing: Vec<u64> = ranked.iter().map(|h| h.0).filter(|id| !records.contains_key(id)).collect();
        if !missing.is_empty() {
            let lookup_started = Instant::now();
            for chunk in self.store.chunks_by_id(&missing).await? {
                records.insert(chunk.chunk_id, chunk);
            }
            timings.lookup = lookup_started.elapsed();
        }
        let rank_in = |list: &[(u64, f32)], id: u64| list.iter().position(|h| h.0 == id).map(|p| p + 1);
        let mut hits = Vec::new();
        for (id, score) in ranked {
            // A chunk deleted since the indexes were read is left out.
            let Some(chunk) = records.remove(&id) else { continue };
            let document = self.documents.get(&chunk.document_id);
            hits.push(SearchHit {
                rank: hits.len() + 1,
                score,
                path: document.map(|d| d.path.clone()).unwrap_or_default(),
                context: document.and_then(|d| d.context.clone()),
                bm25_rank: rank_in(&bm25, id),
                dense_rank: rank_in(&dense, id),
                chunk,
            });
        }
        timings.total = started.elapsed();
        self.last_timings = timings;
        Ok(hits)
    }

    /// Where the last [`Library::search`] spent its time (all zero before the first, and after one that
    /// returned early). For `quarry eval latency`.
    pub fn last_search_timings(&self) -> SearchTimings {
        self.last_timings
    }

    /// Whether search may return chunks of this document: it is `indexed` or `keyword_only`.
    fn visible(&self, document_id: &str) -> bool {
        self.documents.get(document_id).is_some_and(|d| d.state.searchable())
    }

    /// A chunk with its neighbours in the same document: (text of the chunk before, the chunk, text of the
    /// chunk after) — what a citation panel shows as surrounding text. `None` when the library has no chunk
    /// `chunk_id` (e.g. its document was removed since the answer was written).
    ///
    /// Errors: LanceDB I/O.
    pub async fn chunk_in_context(
        &self,
        chunk_id: u64,
    ) -> Result<Option<(Option<String>, ChunkRecord, Option<String>)>, StoreError> {
        let Some(chunk) = self.store.chunks_by_id(&[chunk_id]).await?.into_iter().next() else {
            return Ok(None);
        };
        let mut neighbours = vec![crate::store::chunk_id(&chunk.document_id, chunk.chunk_index + 1)];
        if chunk.chunk_index > 0 {
            neighbours.push(crate::store::chunk_id(&chunk.document_id, chunk.chunk_index - 1));
        }
        let found = self.store.chunks_by_id(&neighbours).await?;
        let text_at = |index: u32| {
            found.iter().find(|c| c.chunk_index == index && c.document_id == chunk.document_id).map(|c| c.text.clone())
        };
        let before = chunk.chunk_index.checked_sub(1).and_then(text_at);
        let after = text_at(chunk.chunk_index + 1);
        Ok(Some((before, chunk, after)))
    }

    /// Every chunk of document `document_id` as a passage of this library, in the document's order (chunk
    /// index), each with score 0 and the document's path and context line; empty when the library holds
    /// no searchable (`indexed` or `keyword_only`) document with that id.
    ///
    /// Errors: LanceDB I/O.
    pub async fn document_passages(&self, document_id: &str) -> Result<Vec<quarry_core::Passage>, StoreError> {
        let Some(document) = self.documents.get(document_id).filter(|d| d.state.searchable()) else {
            return Ok(Vec::new());
        };
        let filter = format!("document_id = {}", crate::store::sql_string(document_id));
        let mut chunks = self.store.chunks_where(Some(filter)).await?;
        chunks.sort_by_key(|c| c.chunk_index);
        Ok(chunks.iter().map(|c| c.passage(self.name(), &document.path, document.context.as_deref(), 0.0)).collect())
    }

    /// Counts and failures for `quarry status`.
    pub async fn status(&mut self) -> Result<LibraryStatus, StoreError> {
        self.refresh_documents().await?;
        self.keyword.reload()?;
        let mut documents: BTreeMap<String, usize> = BTreeMap::new();
        let mut formats: BTreeMap<String, usize> = BTreeMap::new();
        let mut failures = Vec::new();
        let mut archives = 0;
        let mut pages = 0u64;
        let mut text_chars = 0u64;
        for d in self.documents.values() {
            let container = matches!(d.format.as_str(), "zip" | "mbox");
            if container && d.chunk_count == 0 && d.state == DocumentState::Indexed {
                archives += 1;
                continue;
            }
            *documents.entry(d.state.name().to_string()).or_default() += 1;
            if d.state.searchable() {
                *formats.entry(d.format.clone()).or_default() += 1;
                pages += u64::from(d.page_count.unwrap_or(0));
                text_chars += d.char_count;
            }
            if d.state == DocumentState::Failed {
                failures.push((d.path.clone(), d.error.clone().unwrap_or_default()));
            }
        }
        failures.sort();
        let waiting_chunks = self.store.count_waiting_chunks().await?;
        let waiting_eta_seconds = self
            .manifest
            .embedding
            .chunks_per_second
            .filter(|rate| *rate > 0.0 && waiting_chunks > 0)
            .map(|rate| waiting_chunks as f64 / rate);
        Ok(LibraryStatus {
            name: self.manifest.name.clone(),
            model_id: self.manifest.embedding.model_id.clone(),
            dimension: self.manifest.embedding.dimension,
            sources: self.manifest.sources.clone(),
            documents,
            formats,
            archives,
            chunks: self.store.count_chunks(None).await?,
            keyword_chunks: self.keyword.len(),
            pages,
            text_chars,
            failures,
            disk_bytes: folder_size(&self.dir),
            vector_index: self.store.has_vector_index().await?,
            waiting_chunks,
            waiting_eta_seconds,
        })
    }

    /// Removes documents (and their chunks) in the crash-safe order of the module docs.
    pub(crate) async fn remove_documents(&mut self, ids: &[String]) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        self.store.set_state(ids, DocumentState::Pending).await?;
        self.store.delete_chunks_of(ids).await?;
        for id in ids {
            self.keyword.delete_document(id)?;
        }
        self.commit_keyword().await?;
        self.store.delete_documents(ids).await?;
        self.refresh_documents().await
    }

    /// Compacts LanceDB files, drops table versions older than `keep` (readers that are mid-query keep
    /// working for that long), folds new rows into the ANN index or builds it once the table has
    /// `vector_index_rows` rows, and re-commits tantivy with the new version. `add` and `sync` call it at the
    /// end of a run. Errors: LanceDB or tantivy I/O.
    pub async fn optimize(&mut self, keep: std::time::Duration, vector_index_rows: usize) -> Result<(), StoreError> {
        use lancedb::table::OptimizeAction;
        let older_than = lancedb::table::optimize::Duration::from_std(keep).ok();
        for table in [&self.store.documents, &self.store.chunks] {
            table.optimize(OptimizeAction::Compact { options: Default::default(), remap_options: None }).await?;
            table
                .optimize(OptimizeAction::Prune {
                    older_than,
                    delete_unverified: Some(false),
                    error_if_tagged_old_versions: None,
                })
                .await?;
        }
        // An ANN index is trained on the vectors there are: never on placeholders of waiting chunks.
        let waiting = self.store.count_waiting_chunks().await? > 0;
        if !waiting && crate::store::ensure_vector_index(&self.store, vector_index_rows).await? {
            self.store.chunks.optimize(OptimizeAction::Index(Default::default())).await?;
        }
        self.commit_keyword().await
    }
}

fn check_model(manifest: &LibraryManifest, model_id: &str) -> Result<(), StoreError> {
    if manifest.embedding.model_id == model_id {
        return Ok(());
    }
    Err(StoreError::ModelMismatch(format!(
        "library {:?} was indexed with embedding model {} ({} dimensions), but this run uses {model_id}. \
         Use that model again, or re-index the library with the new one: `quarry library reindex {}` \
         (with the same model options as this run)",
        manifest.name, manifest.embedding.model_id, manifest.embedding.dimension, manifest.name
    )))
}

/// Bytes of every file below `dir` (symbolic links not followed; what cannot be read counts 0).
pub fn folder_size(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

/// The keyword side of a search: BM25's (chunk id, score) list best first (re-ranked by the document
/// prior where the library has one), each hit's document id, and the time it took.
struct KeywordSide {
    bm25: Vec<(u64, f32)>,
    owner: HashMap<u64, String>,
    took: Duration,
}

/// `bm25` (chunk id, BM25 score) re-scored as min-max(chunk score) + `weight` × min-max(its document's
/// score in `documents`, scaled over every scored document), best first; ties keep BM25's order.
fn with_document_prior(
    bm25: &[(u64, f32)],
    owner: &HashMap<u64, String>,
    documents: &DocumentScores,
    weight: f32,
) -> Vec<(u64, f32)> {
    let scale = |value: f32, lo: f32, hi: f32| if hi - lo > f32::EPSILON { (value - lo) / (hi - lo) } else { 0.0 };
    let (lo, hi) = bm25.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), h| (lo.min(h.1), hi.max(h.1)));
    let (doc_lo, doc_hi) = documents.range();
    let mut scored: Vec<(u64, f32)> = bm25
        .iter()
        .map(|&(id, score)| {
            let document = owner.get(&id).and_then(|d| documents.get(d)).unwrap_or(doc_lo);
            (id, scale(score, lo, hi) + weight * scale(document, doc_lo, doc_hi))
        })
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    scored
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::chunk_id;

    /// A document row as an ingest writes it (10 bytes and characters, one chunk).
    fn document_row(id: &str, path: &str, format: &str, context: &str, state: DocumentState) -> DocumentRecord {
        DocumentRecord {
            document_id: id.into(),
            origin_id: id.into(),
            path: path.into(),
            file_path: path.into(),
            format: format.into(),
            byte_len: 10,
            page_count: None,
            chunk_count: 1,
            char_count: 10,
            state,
            error: None,
            warnings: None,
            added_ms: 1,
            modified_ms: 1,
            context: Some(context.into()),
            extraction_version: None,
        }
    }

    /// Chunk `index` of document `id`, on page `page` when it has one.
    fn chunk_row(id: &str, index: u32, text: &str, page: Option<u32>) -> ChunkRecord {
        ChunkRecord {
            chunk_id: chunk_id(id, index),
            document_id: id.into(),
            chunk_index: index,
            text: text.into(),
            page_start: page,
            page_end: page,
            sheet: None,
            heading_path: Vec::new(),
            char_start: 0,
            char_end: text.len() as u64,
            token_count: 3,
            ocr: false,
        }
    }

    #[tokio::test]
    async fn a_document_s_passages_are_its_chunks_in_order_with_its_path_and_context() {
        let tmp = tempfile::tempdir().unwrap();
        let data = DataDir::at(tmp.path());
        let embedding = EmbeddingInfo { model_id: "m".into(), dimension: 3, automatic: false, chunks_per_second: None };
        Library::create(&data, "filings", embedding, ChunkingInfo::default()).await.unwrap();
        let dir = data.existing("filings").unwrap();
        let document = |id: &str, state: DocumentState| {
            document_row(id, &format!("/docs/{id}.pdf"), "pdf", &format!("{id} Inc. · Form 10-Q"), state)
        };
        let chunk = |id: &str, index: u32, text: &str| chunk_row(id, index, text, Some(index + 1));
        {
            let store = Store::open(&dir.join("lance"), 3, true).await.unwrap();
            store
                .add_documents(&[document("acme", DocumentState::Indexed), document("gone", DocumentState::Failed)])
                .await
                .unwrap();
            // Written out of order, and another document's chunk between them.
            let chunks =
                [chunk("acme", 1, "Inventories: 5,433 million"), chunk("gone", 0, "x"), chunk("acme", 0, "Cover")];
            store.add_chunks(&chunks, &vec![vec![1.0, 0.0, 0.0]; 3]).await.unwrap();
        }
        let library = Library::open_read(&data, "filings").await.unwrap();
        let passages = library.document_passages("acme").await.unwrap();
        let texts: Vec<&str> = passages.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(texts, ["Cover", "Inventories: 5,433 million"], "the document's order");
        assert!(passages.iter().all(|p| p.path == "/docs/acme.pdf" && p.context == "acme Inc. · Form 10-Q"));
        assert!(passages.iter().all(|p| p.library == "filings" && p.document_id == "acme"));
        assert_eq!(passages[1].citation(), "acme.pdf, p. 2");
        assert!(library.document_passages("gone").await.unwrap().is_empty(), "a failed document is not searchable");
        assert!(library.document_passages("nobody's").await.unwrap().is_empty(), "no such document (quote escaped)");
    }

    #[tokio::test]
    async fn a_reset_killed_between_its_renames_leaves_the_library_readable_and_a_writer_puts_it_back() {
        let tmp = tempfile::tempdir().unwrap();
        let data = DataDir::at(tmp.path());
        let embedding = EmbeddingInfo { model_id: "m".into(), dimension: 3, automatic: false, chunks_per_second: None };
        Library::create(&data, "filings", embedding.clone(), ChunkingInfo::default()).await.unwrap();
        let dir = data.existing("filings").unwrap();
        {
            let store = Store::open(&dir.join("lance"), 3, true).await.unwrap();
            let row = document_row("acme", "/docs/acme.pdf", "pdf", "Acme · Form 10-Q", DocumentState::Indexed);
            store.add_documents(&[row]).await.unwrap();
            store
                .add_chunks(&[chunk_row("acme", 0, "Revenue: 7,192 million", None)], &[vec![1.0, 0.0, 0.0]])
                .await
                .unwrap();
        }
        // A kill after the old tables were moved aside and before the new ones were moved in.
        std::fs::rename(dir.join("lance"), dir.join(".lance-old-1764800000000")).unwrap();
        std::fs::create_dir_all(dir.join(".reset-1764800000000/lance")).unwrap();
        let reader = Library::open_read(&data, "filings").await.expect("a reader reads the part set aside");
        assert_eq!(reader.documents().count(), 1);
        drop(reader);
        let writer = Library::open_write(&data, "filings", "m").await.unwrap();
        assert_eq!(writer.documents().count(), 1, "the writer put the old tables back");
        drop(writer);
        let names: Vec<String> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert!(names.contains(&"lance".to_string()), "{names:?}");
        assert!(!names.iter().any(|n| n.starts_with(".lance-old-") || n.starts_with(".reset-")), "{names:?}");
        // A whole reset empties it, and leaves nothing behind.
        Library::reset_for_model(&data, "filings", embedding).await.unwrap();
        assert_eq!(Library::open_read(&data, "filings").await.unwrap().documents().count(), 0);
        let names: Vec<String> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert!(!names.iter().any(|n| n.starts_with('.') && n != ".write.lock" && n != ".lock"), "{names:?}");
    }

    #[tokio::test]
    async fn a_keyword_index_from_before_ascii_folding_is_searched_as_built_then_rebuilt_by_a_writer() {
        let tmp = tempfile::tempdir().unwrap();
        let data = DataDir::at(tmp.path());
        let embedding = EmbeddingInfo { model_id: "m".into(), dimension: 3, automatic: false, chunks_per_second: None };
        Library::create(&data, "old", embedding, ChunkingInfo::default()).await.unwrap();
        let dir = data.existing("old").unwrap();
        // Rows as an ingest writes them, and a tantivy index as Quarry built it before folding.
        let text = "Aschenbrödel is a ballet written by Johann Strauss II";
        let document =
            document_row("d1", "/docs/ballets.txt", "text", "Vienna Court Opera · programme", DocumentState::Indexed);
        let chunk = chunk_row("d1", 0, text, None);
        {
            let store = Store::open(&dir.join("lance"), 3, true).await.unwrap();
            store.add_documents(&[document]).await.unwrap();
            store.add_chunks(std::slice::from_ref(&chunk), &[vec![1.0, 0.0, 0.0]]).await.unwrap();
            std::fs::remove_dir_all(dir.join("tantivy")).unwrap();
            let mut legacy = KeywordIndex::create_legacy(&dir.join("tantivy")).unwrap();
            legacy.add(chunk.chunk_id, "d1", text).unwrap();
            commit_mirroring(&mut legacy, &store).await.unwrap();
        }
        let paths = |hits: Vec<SearchHit>| hits.into_iter().map(|h| h.path).collect::<Vec<_>>();

        let mut reader = Library::open_read(&data, "old").await.unwrap();
        assert_eq!(
            paths(reader.search("Aschenbrödel", SearchMode::Bm25, 3, None).await.unwrap()),
            ["/docs/ballets.txt"],
            "an old index still answers"
        );
        assert!(reader.search("Aschenbrodel", SearchMode::Bm25, 3, None).await.unwrap().is_empty(), "without folding");
        drop(reader);

        let mut writer = Library::open_write(&data, "old", "m").await.unwrap();
        assert_eq!(
            paths(writer.search("Aschenbrodel", SearchMode::Bm25, 3, None).await.unwrap()),
            ["/docs/ballets.txt"],
            "rebuilt with folding"
        );
        assert_eq!(writer.keyword().count_document("d1").unwrap(), 1, "every chunk is back");
        // Rebuilt with the text an ingest indexes: the document's context line before the chunk's text.
        assert_eq!(
            paths(writer.search("Vienna Court Opera", SearchMode::Bm25, 3, None).await.unwrap()),
            ["/docs/ballets.txt"],
            "words only the context line holds"
        );
    }
}
