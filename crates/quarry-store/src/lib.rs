//! Quarry libraries on disk — the one crate that links LanceDB.
//!
//! - [`Library`]: a named collection of documents — LanceDB tables `documents` and `chunks` (the source of
//!   truth) with a tantivy BM25 index derived from them — filled by [`Library::add`] / [`Library::sync`] /
//!   [`Library::watch`], emptied by [`Library::remove`] and searched by [`Library::search`] (bm25, dense or hybrid: both
//!   fused by [`quarry_index::HybridFusion`]); crash-safe as described in the `library` module.
//! - [`DataDir`] / [`LibraryManifest`]: where libraries live and what `library.toml` records.
//! - [`store::Store`]: the two LanceDB tables and their row types.
//!
//! - [`LibraryRetriever`]: a library as the agents' `Retriever`.
//! - [`file_to_open`]: whether a cited file may be handed to the system's default program.
//!
//! Embedding, BM25 and rank fusion come from `quarry-index`, which builds without LanceDB.

mod error;
mod ingest;
mod library;
pub mod manifest;
mod open_file;
mod retriever;
pub mod store;
mod watch;

pub use error::{is_disk_full_io, StoreError};
pub use ingest::{
    hash_file, indexed_text, IngestEvent, IngestOptions, IngestPhase, IngestSummary, RemoveSummary, MODEL_SAMPLE_CHARS,
    VECTOR_INDEX_ROWS,
};
pub use library::{
    folder_size, Library, LibraryStatus, SearchHit, SearchTimings, DEFAULT_DOCUMENT_PRIOR, SIDE_BY_SIDE_MIN_CHUNKS,
};
pub use manifest::{ChunkingInfo, DataDir, EmbeddingInfo, LibraryManifest};
pub use open_file::{file_to_open, OPENABLE_EXTENSIONS};
pub use quarry_index::SearchMode;
pub use retriever::LibraryRetriever;
pub use store::{ChunkRecord, DocumentRecord, DocumentState, VectorSearch};
pub use watch::WatchEvent;
