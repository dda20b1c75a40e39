//! The web as a retriever for one question: search, fetch, chunk, embed in memory, rank.

use crate::fetch::{fetch_page_read_by, Page};
use crate::providers::{SearchProvider, WebResult};
use crate::WebError;
use quarry_core::{Block, Format, Location, ParsedDocument, Passage, RetrievalError, Retriever};
use quarry_index::{embedder_covers, Embedder, HybridFusion, KeywordIndex, VectorIndex};
use quarry_ingest::Chunker;
use quarry_net::{ClientOptions, HttpClient, Network};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Receives every web problem (a failed search or page) as one line naming the provider or URL; the
/// question goes on from whatever else was found.
pub type WebProblemSink = Arc<dyn Fn(String) + Send + Sync>;

/// How much of the web one query takes in.
#[derive(Debug, Clone, Copy)]
pub struct WebSettings {
    /// Results asked of the provider per query (default 5).
    pub results_per_query: usize,
    /// Result pages fetched per query, best first (default 3); the rest contribute their snippets.
    pub pages_per_query: usize,
    /// Most bytes read of one page (default 2 MiB).
    pub max_page_bytes: usize,
    /// Longest a page fetch may take, in seconds (default 15).
    pub page_timeout_seconds: u64,
}

impl Default for WebSettings {
    fn default() -> Self {
        WebSettings { results_per_query: 5, pages_per_query: 3, max_page_bytes: 2 << 20, page_timeout_seconds: 15 }
    }
}

/// The library name web passages carry.
pub const WEB_LIBRARY: &str = "web";

/// A [`Retriever`] over web search results. Each page is fetched once per retriever (one per question)
/// and its chunks embedded once, also when parallel queries (DeepSearch's sub-queries) find it at the
/// same time; every query ranks the chunks of its own results by BM25 + dense
/// ([`HybridFusion::default`], as library search does). A passage's `path` is the page URL and its heading
/// path the page title; `chunk_id`s are unique within the retriever.
pub struct WebRetriever {
    provider: Box<dyn SearchProvider>,
    pages: HttpClient,
    settings: WebSettings,
    chunker: Chunker,
    embedder: Option<Arc<Mutex<Embedder>>>,
    on_problem: WebProblemSink,
    /// Reduces fetched HTML to text ([`crate::in_process_reader`] unless [`WebRetriever::with_page_reader`]).
    reader: crate::PageReader,
    /// URL → its chunks (with embeddings), each set once by whichever query reaches it first; later
    /// queries wait for that one instead of fetching again.
    pages_by_url: std::sync::Mutex<HashMap<String, Arc<PageCell>>>,
    /// The next passage `chunk_id`.
    next_id: AtomicU64,
}

/// A page's chunks with their embeddings (`None` without an embedder or when embedding failed).
type PageCell = tokio::sync::OnceCell<Vec<(Passage, Option<Vec<f32>>)>>;

impl WebRetriever {
    /// Result pages are fetched through `network` (give it the provider's network) with the settings'
    /// page timeout, by a client that reaches only the public internet (`Network::public_client`;
    /// the provider's own origin excepted), so a result or a redirect pointing at this computer or the
    /// local network is refused and its snippet used instead; `chunker` cuts pages as library
    /// documents are cut; without an embedder ranking is BM25 only. Errors: the HTTP client cannot be
    /// built.
    pub fn new(
        provider: Box<dyn SearchProvider>,
        network: &Network,
        settings: WebSettings,
        chunker: Chunker,
        embedder: Option<Arc<Mutex<Embedder>>>,
        on_problem: WebProblemSink,
    ) -> Result<Self, WebError> {
        let timeout = Duration::from_secs(settings.page_timeout_seconds.max(1));
        let options =
            ClientOptions { connect_timeout: timeout.min(Duration::from_secs(10)), timeout, follow_redirects: true };
        let pages = network.public_client("web pages", options, provider.base_url())?;
        Ok(WebRetriever {
            provider,
            pages,
            settings,
            chunker,
            embedder,
            on_problem,
            reader: crate::in_process_reader(),
            pages_by_url: Default::default(),
            next_id: AtomicU64::new(1),
        })
    }

    /// Pages are reduced to text by `reader` (e.g. [`crate::isolated_reader`], a parse worker).
    pub fn with_page_reader(mut self, reader: crate::PageReader) -> Self {
        self.reader = reader;
        self
    }

    /// The provider's name, for descriptions.
    pub fn provider_name(&self) -> &'static str {
        self.provider.name()
    }

    /// The chunks of `result`'s page: fetched when it is among the first `pages_per_query`, otherwise
    /// (or when fetching fails) its snippet as one passage.
    fn passages_of(&self, result: &WebResult, page: Option<Page>) -> Vec<Passage> {
        let title = page
            .as_ref()
            .map(|p| p.title.clone())
            .filter(|t| !t.is_empty() && t != &result.url)
            .unwrap_or_else(|| result.title.clone());
        let text = match &page {
            Some(page) if !page.text.trim().is_empty() => page.text.clone(),
            _ => result.snippet.clone(),
        };
        if text.trim().is_empty() {
            return Vec::new();
        }
        let location = Location { heading_path: vec![title.clone()], ..Location::default() };
        let blocks: Vec<Block> = text
            .split("\n\n")
            .filter(|p| !p.trim().is_empty())
            .map(|p| Block { text: p.trim().to_string(), location: location.clone() })
            .collect();
        let document = ParsedDocument {
            path: result.url.clone(),
            format: Format::Html,
            content_hash: result.url.clone(),
            byte_len: text.len() as u64,
            page_count: None,
            blocks,
            warnings: Vec::new(),
        };
        self.chunker
            .chunk(&document)
            .into_iter()
            .map(|chunk| Passage {
                chunk_id: self.next_id.fetch_add(1, Ordering::Relaxed),
                chunk_index: None,
                library: WEB_LIBRARY.to_string(),
                document_id: result.url.clone(),
                path: result.url.clone(),
                page_start: None,
                page_end: None,
                sheet: None,
                heading_path: vec![title.clone()],
                text: chunk.text,
                context: String::new(),
                score: 0.0,
                ocr: false,
            })
            .collect()
    }

    /// The page of `result`, or `None` (reported) when it cannot be fetched.
    async fn fetch(&self, result: &WebResult) -> Option<Page> {
        let settings = &self.settings;
        match fetch_page_read_by(
            &self.pages,
            &result.url,
            settings.max_page_bytes,
            settings.page_timeout_seconds,
            &self.reader,
        )
        .await
        {
            Ok(page) => {
                if page.truncated {
                    (self.on_problem)(format!(
                        "page {} is larger than {} MiB: only its start was read",
                        page.url,
                        self.settings.max_page_bytes >> 20
                    ));
                }
                Some(page)
            }
            Err(e) => {
                (self.on_problem)(format!("{e}; using the search snippet instead"));
                None
            }
        }
    }

    /// Vectors of page chunks (`queries` false) or of a query.
    fn embed(&self, texts: &[&str], queries: bool) -> Option<Vec<Vec<f32>>> {
        let embedder = self.embedder.as_ref()?;
        let mut model = embedder.lock().ok()?;
        match if queries { model.embed_queries(texts) } else { model.embed(texts) } {
            Ok(vectors) => Some(vectors),
            Err(e) => {
                (self.on_problem)(format!("web: embedding page text failed ({e}); ranking by keywords only"));
                None
            }
        }
    }

    fn covers(&self, query: &str) -> bool {
        self.embedder
            .as_ref()
            .and_then(|e| e.lock().ok().map(|m| embedder_covers(m.languages(), query)))
            .unwrap_or(false)
    }
}

#[async_trait::async_trait]
impl Retriever for WebRetriever {
    /// Never fails: a failed search or page is reported to the problem sink and contributes nothing.
    async fn retrieve(&self, query: &str, k: usize) -> Result<Vec<Passage>, RetrievalError> {
        let results = match self.provider.search(query, self.settings.results_per_query).await {
            Ok(results) => results,
            Err(e) => {
                (self.on_problem)(format!("web search for {query:?} failed: {e}"));
                return Ok(Vec::new());
            }
        };
        // Each result's chunks: the top pages fetched (in parallel, each page once), the rest their snippets.
        let cells: Vec<Arc<PageCell>> = {
            let mut by_url = self.pages_by_url.lock().unwrap_or_else(|e| e.into_inner());
            results.iter().map(|r| Arc::clone(by_url.entry(r.url.clone()).or_default())).collect()
        };
        let fetch_page_of = self.settings.pages_per_query;
        let chunked = futures::future::join_all(results.iter().zip(&cells).enumerate().map(|(i, (result, cell))| {
            cell.get_or_init(move || async move {
                let page = if i < fetch_page_of { self.fetch(result).await } else { None };
                let passages = self.passages_of(result, page);
                let texts: Vec<&str> = passages.iter().map(|p| p.text.as_str()).collect();
                match if texts.is_empty() { None } else { self.embed(&texts, false) } {
                    Some(vectors) => passages.into_iter().zip(vectors).map(|(p, v)| (p, Some(v))).collect(),
                    None => passages.into_iter().map(|p| (p, None)).collect(),
                }
            })
        }))
        .await;

        // Rank this query's chunks: BM25 and dense, fused.
        let candidates: Vec<&(Passage, Option<Vec<f32>>)> = chunked.into_iter().flatten().collect();
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let mut keyword = KeywordIndex::in_memory().map_err(|e| RetrievalError(format!("web: {e}")))?;
        for (i, (passage, _)) in candidates.iter().enumerate() {
            keyword
                .add(i as u64, &passage.document_id, &passage.text)
                .map_err(|e| RetrievalError(format!("web: {e}")))?;
        }
        keyword.commit().map_err(|e| RetrievalError(format!("web: {e}")))?;
        let bm25 = keyword.search(query, candidates.len()).map_err(|e| RetrievalError(format!("web: {e}")))?;
        let mut dense = None;
        if self.covers(query) && candidates.iter().all(|c| c.1.is_some()) {
            if let Some(q) = self.embed(&[query], true).and_then(|mut v| v.pop()) {
                let mut vectors = VectorIndex::new(q.len());
                for (i, (_, v)) in candidates.iter().enumerate() {
                    vectors.add(i as u64, v.as_deref().unwrap_or_default());
                }
                dense = Some(vectors.search(&q, candidates.len()));
            }
        }
        let ranked = match dense {
            Some(dense) => HybridFusion::default().fuse(&bm25, &dense, candidates.len()),
            None => bm25,
        };
        Ok(ranked.into_iter().take(k).map(|(i, score)| Passage { score, ..candidates[i as usize].0.clone() }).collect())
    }
}
