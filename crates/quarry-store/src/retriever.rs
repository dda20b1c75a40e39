//! A library as a [`quarry_core::Retriever`] for the agents: hybrid search (or another mode) over one
//! library opened read-only, so asking works while an ingest runs in another process.

use crate::library::Library;
use crate::SearchMode;
use quarry_core::{Passage, RetrievalError, Retriever};
use quarry_index::Embedder;
use std::sync::{Arc, Mutex};

/// Searches one library with `mode`; the embedder is needed for `dense` and `hybrid`.
pub struct LibraryRetriever {
    name: String,
    library: tokio::sync::Mutex<Library>,
    embedder: Option<Arc<Mutex<Embedder>>>,
    mode: SearchMode,
}

impl LibraryRetriever {
    /// Wraps an open library. Errors: `dense`/`hybrid` without an embedder, or with one of another model
    /// than the library was built with.
    pub fn new(
        library: Library,
        embedder: Option<Arc<Mutex<Embedder>>>,
        mode: SearchMode,
    ) -> Result<Self, crate::StoreError> {
        if mode != SearchMode::Bm25 {
            let embedder = embedder.as_ref().ok_or_else(|| {
                crate::StoreError::Embedding("dense and hybrid search need the embedding model".into())
            })?;
            let model = embedder.lock().map_err(|_| crate::StoreError::Embedding("embedder lock poisoned".into()))?;
            library.check_embedder(&model)?;
        }
        Ok(LibraryRetriever {
            name: library.name().to_string(),
            library: tokio::sync::Mutex::new(library),
            embedder,
            mode,
        })
    }

    /// The library's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A one-line description for the router: document count and the most common file names' formats.
    pub async fn describe(&self) -> String {
        let library = self.library.lock().await;
        let mut formats: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
        let mut names = Vec::new();
        for d in library.documents().filter(|d| d.state.searchable() && d.chunk_count > 0) {
            *formats.entry(d.format.clone()).or_default() += 1;
            if names.len() < 8 {
                names.push(d.path.rsplit(['/', '\\']).next().unwrap_or(&d.path).to_string());
            }
        }
        let total: usize = formats.values().sum();
        let formats: Vec<String> = formats.iter().map(|(f, n)| format!("{n} {f}")).collect();
        format!("{total} documents ({}), e.g. {}", formats.join(", "), names.join(", "))
    }
}

#[async_trait::async_trait]
impl Retriever for LibraryRetriever {
    async fn retrieve(&self, query: &str, k: usize) -> Result<Vec<Passage>, RetrievalError> {
        let mut library = self.library.lock().await;
        let hits = library
            .search(query, self.mode, k, self.embedder.as_ref())
            .await
            .map_err(|e| RetrievalError(format!("library {:?}: {e}", self.name)))?;
        Ok(hits.iter().map(|h| h.passage(&self.name)).collect())
    }

    /// The chunks of document `document_id` when `library` is this library ([`Library::document_passages`]).
    async fn document_passages(&self, library: &str, document_id: &str) -> Result<Vec<Passage>, RetrievalError> {
        if library != self.name {
            return Ok(Vec::new());
        }
        let opened = self.library.lock().await;
        opened.document_passages(document_id).await.map_err(|e| RetrievalError(format!("library {:?}: {e}", self.name)))
    }

    /// The chunks of its searchable documents (fully indexed or keyword-only), from the document list
    /// the library read last: when it was opened, or at its last search.
    async fn passage_count(&self) -> Option<u64> {
        let library = self.library.lock().await;
        Some(library.documents().filter(|d| d.state.searchable()).map(|d| u64::from(d.chunk_count)).sum())
    }
}
