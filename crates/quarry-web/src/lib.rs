//! Opt-in web search for Quarry's agents (off unless the person asks for it with `--web` or the app's
//! setting, and refused in offline mode).
//!
//! - [`SearchProvider`]: one trait over SearXNG (JSON API, self-hostable), Tavily and Brave Search
//!   ([`ProviderConfig::build`]); each speaks its service's real JSON format.
//! - [`fetch_page`]: downloads a result page (size-capped, charset-aware) and reduces it to readable text
//!   with `dom_smoothie` (a port of Mozilla's Readability), falling back to `html2text`.
//! - [`WebRetriever`]: a [`quarry_core::Retriever`] over the web for one question: search, fetch the top
//!   pages in parallel, chunk them as library documents are chunked, embed them in memory and rank the
//!   chunks by BM25 + dense, fused as library search fuses them. Passages carry the page's URL and title.
//!
//! Every request goes through a [`quarry_net::HttpClient`], so offline mode holds here too. Text from web
//! pages is data: it is only ever ranked and quoted; nothing in it is fetched or executed.

mod fetch;
mod providers;
mod readable;
mod retriever;

pub use fetch::{fetch_page, Page};
pub use providers::{ProviderConfig, ProviderKind, SearchProvider, WebResult};
pub use readable::readable_text;
pub use retriever::{WebProblemSink, WebRetriever, WebSettings, WEB_LIBRARY};

/// Why a web search or page fetch failed. Each message names the provider or URL.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error(transparent)]
    Network(#[from] quarry_net::NetError),
    #[error("{what}: no answer within {seconds} s")]
    Timeout { what: String, seconds: u64 },
    #[error("{what}: cannot connect: {message}")]
    Unreachable { what: String, message: String },
    #[error("{what}: too many requests (HTTP 429){}", retry_after.map(|s| format!("; the service asks to wait {s} s")).unwrap_or_default())]
    RateLimited { what: String, retry_after: Option<u64> },
    #[error("{what}: HTTP {status}: {message}")]
    Http { what: String, status: u16, message: String },
    #[error("{what}: the answer is not the JSON the service documents: {message}")]
    Malformed { what: String, message: String },
    #[error("{url}: not a readable page ({content_type})")]
    NotReadable { url: String, content_type: String },
    #[error("{what}: {message}")]
    Config { what: String, message: String },
}

impl WebError {
    /// Maps a transport error of a request for `what`.
    pub(crate) fn transport(what: &str, error: &quarry_net::reqwest::Error, timeout_seconds: u64) -> WebError {
        if error.is_timeout() {
            WebError::Timeout { what: what.to_string(), seconds: timeout_seconds }
        } else {
            let mut message = error.to_string();
            let mut source = std::error::Error::source(error);
            while let Some(inner) = source {
                message = format!("{message}: {inner}");
                source = inner.source();
            }
            WebError::Unreachable { what: what.to_string(), message }
        }
    }
}
