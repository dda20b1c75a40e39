//! The web as a source for one question: the provider from [`WebSearchSettings`], pages fetched, chunked
//! like library documents and embedded in memory (see `quarry_web::WebRetriever`).

use quarry_agents::{LibraryInfo, SearchableLibrary};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

/// Web search choices (off unless `enabled`). `Debug` says whether a key is set, never the key.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WebSearchSettings {
    /// Whether agents may search the web at all (also needs the network mode online).
    pub enabled: bool,
    /// Which search service answers the queries: SearXNG, Tavily or Brave.
    pub provider: quarry_web::ProviderKind,
    /// The provider's base URL (required for SearXNG, e.g. `http://127.0.0.1:8888`).
    pub url: Option<String>,
    /// Result pages fetched per query.
    pub pages: usize,
    /// Which queries go to the provider: only the person's question (the default), or also the
    /// queries agents write from document passages (`quarry_agents::web_gate`).
    pub queries: quarry_agents::web_gate::WebQueryPolicy,
    /// The provider's API key (Tavily, Brave); never written to the settings file. `None`: the
    /// provider's environment variable (`QUARRY_TAVILY_API_KEY`, `QUARRY_BRAVE_API_KEY`), else the OS
    /// keyring's entry.
    #[serde(skip)]
    pub api_key: Option<String>,
}

impl std::fmt::Debug for WebSearchSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebSearchSettings")
            .field("enabled", &self.enabled)
            .field("provider", &self.provider)
            .field("url", &self.url)
            .field("pages", &self.pages)
            .field("queries", &self.queries)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set, not shown>"))
            .finish()
    }
}

impl Default for WebSearchSettings {
    fn default() -> Self {
        WebSearchSettings {
            enabled: false,
            provider: quarry_web::ProviderKind::Searxng,
            url: None,
            pages: 3,
            queries: quarry_agents::web_gate::WebQueryPolicy::Question,
            api_key: None,
        }
    }
}

/// The web as an always-searched source, or `None` when web search is off or offline mode refuses the
/// provider (then `notice` says so and the question goes on from the libraries). `embedder` (when given)
/// embeds the pages for hybrid search; without it pages are ranked by BM25 alone. `worker` (the program
/// that runs parse workers: `quarry parse-worker`, the app's `parse-worker`) reduces each page's HTML to
/// text in an isolated worker; without it pages are read in this process.
///
/// Errors: a provider without its URL or key; a bad chunker configuration.
pub(crate) fn web_source(
    web: &WebSearchSettings,
    network: quarry_net::NetworkMode,
    embedder: Option<Arc<Mutex<quarry_index::Embedder>>>,
    worker: Option<quarry_ingest::isolate::WorkerCommand>,
    notice: &dyn Fn(&str),
    problems: quarry_web::WebProblemSink,
) -> anyhow::Result<Option<SearchableLibrary>> {
    if !web.enabled {
        return Ok(None);
    }
    let network = quarry_net::Network::new(network);
    let mut config = quarry_web::ProviderConfig::new(web.provider);
    config.base_url = web.url.clone().filter(|u| !u.trim().is_empty());
    config.api_key = web.api_key.clone().or_else(|| {
        let secret = match web.provider {
            quarry_web::ProviderKind::Tavily => quarry_secrets::Secret::TavilyApiKey,
            quarry_web::ProviderKind::Brave => quarry_secrets::Secret::BraveApiKey,
            quarry_web::ProviderKind::Searxng => return None,
        };
        quarry_secrets::get(secret).ok().flatten()
    });
    let provider = match config.build(&network) {
        Ok(provider) => provider,
        Err(quarry_web::WebError::Network(e @ quarry_net::NetError::Offline { .. })) => {
            notice(&format!("web search is off: {e}; answering from the libraries only"));
            return Ok(None);
        }
        Err(e) => anyhow::bail!("{e}"),
    };
    let chunker = match &embedder {
        Some(model) => {
            let counter = model.lock().map_err(|_| anyhow::anyhow!("embedder lock poisoned"))?.token_counter();
            quarry_ingest::Chunker::new(
                quarry_ingest::ChunkSizer::TokenCounter(counter),
                quarry_ingest::ChunkerConfig::default(),
            )
        }
        None => quarry_ingest::Chunker::new(
            quarry_ingest::ChunkSizer::Characters,
            quarry_ingest::ChunkerConfig { max_size: 1500, overlap: 200 },
        ),
    }
    .map_err(anyhow::Error::msg)?;
    let settings = quarry_web::WebSettings { pages_per_query: web.pages.max(1), ..quarry_web::WebSettings::default() };
    let name = provider.name();
    let page_timeout = std::time::Duration::from_secs(settings.page_timeout_seconds.max(1));
    let mut retriever = quarry_web::WebRetriever::new(provider, &network, settings, chunker, embedder, problems)?;
    if let Some(worker) = worker {
        retriever = retriever.with_page_reader(quarry_web::isolated_reader(worker, page_timeout));
    }
    Ok(Some(SearchableLibrary {
        info: LibraryInfo {
            name: quarry_web::WEB_LIBRARY.into(),
            description: format!("web pages found by {name} for this question"),
        },
        retriever: Arc::new(retriever),
        always: true,
    }))
}
