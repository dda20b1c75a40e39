//! Opt-in web search for Quarry's agents (off unless the person asks for it with `--web` or the app's
//! setting, and refused in offline mode).
//!
//! - [`SearchProvider`]: one trait over SearXNG (JSON API, self-hostable), Tavily and Brave Search
//!   ([`ProviderConfig::build`]); each speaks its service's real JSON format.
//! - [`fetch_page`]: downloads a result page (size-capped, charset-aware) and reduces it to readable text
//!   with `dom_smoothie` (a port of Mozilla's Readability), falling back to `html2text` — through a
//!   [`PageReader`], in a parse worker ([`isolated_reader`]) when the caller has one.
//! - [`WebRetriever`]: a [`quarry_core::Retriever`] over the web for one question: search, fetch the top
//!   pages in parallel, chunk them as library documents are chunked, embed them in memory and rank the
//!   chunks by BM25 + dense, fused as library search fuses them. Passages carry the page's URL and title.
//!
//! Every request goes through a [`quarry_net::HttpClient`], so offline mode holds here too. Text from web
//! pages is data: it is only ever ranked and quoted; nothing in it is fetched or executed.

mod fetch;
mod providers;
mod retriever;

pub use fetch::{fetch_page, fetch_page_read_by, Page};
pub use providers::{ProviderConfig, ProviderKind, SearchProvider, WebResult};
pub use quarry_ingest::readable_text;

/// Turns a fetched HTML page into (title, readable text), given its HTML and URL; errors are one line
/// for the person. [`in_process_reader`] reads in this process; the CLI and the app pass
/// [`isolated_reader`], which reads in a parse worker under the ingestion guard.
pub type PageReader = std::sync::Arc<dyn Fn(String, String) -> Result<(String, String), String> + Send + Sync>;

/// [`readable_text`] in this process (tests, and callers without a worker program).
pub fn in_process_reader() -> PageReader {
    std::sync::Arc::new(|html: String, url: String| Ok(readable_text(&html, Some(&url))))
}

/// [`readable_text`] in a parse worker (`quarry_ingest::isolate::PageReader`): `worker` is the program
/// that runs `run_worker` (the `quarry` binary's `parse-worker`); `timeout` bounds one page.
pub fn isolated_reader(worker: quarry_ingest::isolate::WorkerCommand, timeout: std::time::Duration) -> PageReader {
    let mut config = quarry_ingest::isolate::IsolationConfig::new(worker);
    config.workers = 1;
    config.document_timeout = timeout;
    let reader = quarry_ingest::isolate::PageReader::new(config);
    std::sync::Arc::new(move |html: String, url: String| reader.read(&html, &url).map_err(|e| e.to_string()))
}
pub use retriever::{WebProblemSink, WebRetriever, WebSettings, WEB_LIBRARY};

/// Why a web search or page fetch failed. Each message names the provider or URL.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    /// The network mode or the public-internet guard refused the request (`quarry_net`).
    #[error(transparent)]
    Network(#[from] quarry_net::NetError),
    /// No answer in time.
    #[error("{what}: no answer within {seconds} s")]
    Timeout {
        /// The provider or URL asked.
        what: String,
        /// The time allowed, in seconds.
        seconds: u64,
    },
    /// No connection (DNS, refused, TLS).
    #[error("{what}: cannot connect: {message}")]
    Unreachable {
        /// The provider or URL asked.
        what: String,
        /// The transport's explanation.
        message: String,
    },
    /// HTTP 429 after the retries.
    #[error("{what}: too many requests (HTTP 429){}", retry_after.map(|s| format!("; the service asks to wait {s} s")).unwrap_or_default())]
    RateLimited {
        /// The provider asked.
        what: String,
        /// The service's `Retry-After`, in seconds, when it sent one.
        retry_after: Option<u64>,
    },
    /// Any other HTTP error status.
    #[error("{what}: HTTP {status}: {message}")]
    Http {
        /// The provider or URL asked.
        what: String,
        /// The HTTP status code.
        status: u16,
        /// The start of the response body, or the status's reason.
        message: String,
    },
    /// The provider's answer is not the JSON its API documents.
    #[error("{what}: the answer is not the JSON the service documents: {message}")]
    Malformed {
        /// The provider asked.
        what: String,
        /// The JSON parser's explanation.
        message: String,
    },
    /// The URL answered with something that is not a page (an image, a PDF, a binary).
    #[error("{url}: not a readable page ({content_type})")]
    NotReadable {
        /// The page's URL.
        url: String,
        /// Its `Content-Type`.
        content_type: String,
    },
    /// The page's HTML could not be reduced to text (its reader crashed, ran out of time or memory).
    #[error("{url}: cannot read the page: {reason}")]
    Unreadable {
        /// The page's URL.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// The provider is not set up: a missing base URL or API key.
    #[error("{what}: {message}")]
    Config {
        /// The provider.
        what: String,
        /// What is missing and where to set it.
        message: String,
    },
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
