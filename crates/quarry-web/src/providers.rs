//! Web search providers behind one trait. Each speaks its service's documented JSON:
//! - SearXNG: `GET {base}/search?q=…&format=json` → `{"results": [{"url", "title", "content"}]}` (the
//!   instance must allow the `json` format in `search.formats` of its settings.yml);
//! - Tavily: `POST {base}/search` with `{"query", "max_results"}` and `Authorization: Bearer KEY` →
//!   `{"results": [{"url", "title", "content"}]}`;
//! - Brave Search: `GET {base}/res/v1/web/search?q=…&count=N` with `X-Subscription-Token: KEY` →
//!   `{"web": {"results": [{"url", "title", "description"}]}}` (descriptions carry `<strong>` marks).

use crate::WebError;
use quarry_net::{reqwest, ClientOptions, HttpClient, Network};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebResult {
    /// The page's title as the provider gives it.
    pub title: String,
    /// The page's address.
    pub url: String,
    /// The provider's excerpt of the page, plain text.
    pub snippet: String,
}

/// A web search service.
#[async_trait::async_trait]
pub trait SearchProvider: Send + Sync {
    /// `searxng`, `tavily` or `brave`.
    fn name(&self) -> &'static str;
    /// The service's base URL, which the person configured: the one origin whose result pages may be on
    /// this computer or the local network (a local SearXNG serving its own pages). Default: none.
    fn base_url(&self) -> Option<&str> {
        None
    }
    /// Up to `count` results for `query`, best first. Errors: the service cannot be reached, refuses
    /// (HTTP status, 429 with its Retry-After), or answers with something that is not its JSON format.
    async fn search(&self, query: &str, count: usize) -> Result<Vec<WebResult>, WebError>;
}

/// Which service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// A SearXNG instance (often self-hosted; needs its base URL, no key).
    Searxng,
    /// Tavily's search API (needs an API key).
    Tavily,
    /// Brave Search's API (needs an API key).
    Brave,
}

impl std::str::FromStr for ProviderKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "searxng" => Ok(ProviderKind::Searxng),
            "tavily" => Ok(ProviderKind::Tavily),
            "brave" => Ok(ProviderKind::Brave),
            other => Err(format!("web search provider {other:?}: expected searxng, tavily or brave")),
        }
    }
}

impl ProviderKind {
    /// `searxng`, `tavily` or `brave`, as settings and the CLI write it.
    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::Searxng => "searxng",
            ProviderKind::Tavily => "tavily",
            ProviderKind::Brave => "brave",
        }
    }

    /// The service's own address; SearXNG has none (it is self-hosted: give its URL).
    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            ProviderKind::Searxng => None,
            ProviderKind::Tavily => Some("https://api.tavily.com"),
            ProviderKind::Brave => Some("https://api.search.brave.com"),
        }
    }

    /// The environment variable read for the API key when none is given.
    pub fn key_variable(self) -> Option<&'static str> {
        match self {
            ProviderKind::Searxng => None,
            ProviderKind::Tavily => Some("QUARRY_TAVILY_API_KEY"),
            ProviderKind::Brave => Some("QUARRY_BRAVE_API_KEY"),
        }
    }
}

/// How to reach a provider. `Debug` says whether a key is set, never the key.
#[derive(Clone)]
pub struct ProviderConfig {
    /// Which service.
    pub kind: ProviderKind,
    /// The service's base URL (required for SearXNG; tests point the others at a loopback server).
    pub base_url: Option<String>,
    /// The API key (Tavily, Brave); when `None`, read from [`ProviderKind::key_variable`].
    pub api_key: Option<String>,
    /// Longest a search may take (default 15 s).
    pub timeout: Duration,
}

impl std::fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set, not shown>"))
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl ProviderConfig {
    /// `kind` at its public address (none for SearXNG), the key from the environment, 15 s a search.
    pub fn new(kind: ProviderKind) -> Self {
        ProviderConfig { kind, base_url: None, api_key: None, timeout: Duration::from_secs(15) }
    }

    /// The provider, reaching the network through `network`. Errors ([`WebError::Config`] /
    /// [`WebError::Network`], before any request): no URL for SearXNG, no key for Tavily or Brave, or
    /// offline mode refuses the service's host.
    pub fn build(&self, network: &Network) -> Result<Box<dyn SearchProvider>, WebError> {
        let what = format!("web search ({})", self.kind.name());
        let base = match (&self.base_url, self.kind.default_base_url()) {
            (Some(url), _) => url.trim_end_matches('/').to_string(),
            (None, Some(url)) => url.to_string(),
            (None, None) => {
                return Err(WebError::Config { what, message: "give the SearXNG instance's URL (--web-url)".into() })
            }
        };
        network.check(&what, &base)?;
        let key = match self.kind.key_variable() {
            None => None,
            Some(variable) => {
                match self.api_key.clone().or_else(|| std::env::var(variable).ok()).filter(|k| !k.trim().is_empty()) {
                    Some(key) => Some(key),
                    None => return Err(WebError::Config { what, message: format!("no API key: set {variable}") }),
                }
            }
        };
        // A key travels only encrypted, unless the provider runs on this computer.
        if let (Some(_), Ok(url)) = (&key, reqwest::Url::parse(&base)) {
            if url.scheme() != "https" && !is_loopback(&url) {
                return Err(WebError::Config {
                    what,
                    message: format!("{base} is not https: an API key is sent only over https (or to this computer)"),
                });
            }
        }
        // No redirects: reqwest drops `Authorization` on the way to another host, but not Brave's
        // `X-Subscription-Token`; a search API has no reason to redirect.
        let options = ClientOptions {
            connect_timeout: Duration::from_secs(10).min(self.timeout),
            timeout: self.timeout,
            follow_redirects: false,
        };
        let client = network.client(&what, options)?;
        let seconds = self.timeout.as_secs();
        Ok(Box::new(Service { kind: self.kind, base, client, what, seconds, key: key.unwrap_or_default() }))
    }
}

/// Whether `url` names this computer: `localhost` or a loopback address.
fn is_loopback(url: &reqwest::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Most bytes of a search answer read (a search answer is a few kB; anything far larger is not one).
const MAX_ANSWER_BYTES: usize = 4 << 20;

/// Sends a request and reads its JSON answer, mapping every failure to a clear [`WebError`].
async fn json_answer(what: &str, seconds: u64, request: reqwest::RequestBuilder) -> Result<Value, WebError> {
    let mut response = request.send().await.map_err(|e| WebError::transport(what, &e, seconds))?;
    let status = response.status();
    let mut body = Vec::new();
    while let Some(piece) = response.chunk().await.map_err(|e| WebError::transport(what, &e, seconds))? {
        body.extend_from_slice(&piece);
        if body.len() > MAX_ANSWER_BYTES {
            return Err(WebError::Malformed {
                what: what.into(),
                message: format!("answer larger than {} MiB", MAX_ANSWER_BYTES >> 20),
            });
        }
    }
    if status.as_u16() == 429 {
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok());
        return Err(WebError::RateLimited { what: what.into(), retry_after });
    }
    if !status.is_success() {
        let text = String::from_utf8_lossy(&body);
        let mut message: String = text.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(200).collect();
        if matches!(status.as_u16(), 401 | 403) {
            message = format!("{message} (check the API key, or for SearXNG that `json` is in search.formats)");
        }
        return Err(WebError::Http { what: what.into(), status: status.as_u16(), message });
    }
    serde_json::from_slice(&body).map_err(|e| WebError::Malformed { what: what.into(), message: e.to_string() })
}

/// The `results` array at `pointer`, each item's title, url and the snippet under `snippet_key`.
fn results_at(
    what: &str,
    answer: &Value,
    pointer: &str,
    snippet_key: &str,
    count: usize,
) -> Result<Vec<WebResult>, WebError> {
    let items = answer
        .pointer(pointer)
        .and_then(Value::as_array)
        .ok_or_else(|| WebError::Malformed { what: what.into(), message: format!("no {pointer} array") })?;
    Ok(items
        .iter()
        .filter_map(|item| {
            let url = item.get("url")?.as_str()?.trim();
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return None;
            }
            let text = |key: &str| item.get(key).and_then(Value::as_str).map(strip_tags).unwrap_or_default();
            Some(WebResult { title: text("title"), url: url.to_string(), snippet: text(snippet_key) })
        })
        .take(count)
        .collect())
}

/// Plain text of a short HTML fragment (Brave marks query words with `<strong>`).
fn strip_tags(fragment: &str) -> String {
    let mut out = String::with_capacity(fragment.len());
    let mut in_tag = false;
    for c in fragment.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&amp;", "&")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .trim()
        .to_string()
}

/// One provider: the service's kind and how to reach it (`key` is empty for SearXNG).
struct Service {
    kind: ProviderKind,
    base: String,
    client: HttpClient,
    what: String,
    seconds: u64,
    key: String,
}

#[async_trait::async_trait]
impl SearchProvider for Service {
    fn name(&self) -> &'static str {
        self.kind.name()
    }

    fn base_url(&self) -> Option<&str> {
        Some(&self.base)
    }

    async fn search(&self, query: &str, count: usize) -> Result<Vec<WebResult>, WebError> {
        let (request, pointer, snippet) = match self.kind {
            ProviderKind::Searxng => (
                self.client.get(&format!("{}/search", self.base))?.query(&[("q", query), ("format", "json")]),
                "/results",
                "content",
            ),
            ProviderKind::Tavily => {
                let body = serde_json::json!({ "query": query, "max_results": count, "search_depth": "basic" });
                (
                    self.client.post(&format!("{}/search", self.base))?.bearer_auth(&self.key).json(&body),
                    "/results",
                    "content",
                )
            }
            ProviderKind::Brave => {
                let count_text = count.clamp(1, 20).to_string();
                let request = self
                    .client
                    .get(&format!("{}/res/v1/web/search", self.base))?
                    .query(&[("q", query), ("count", count_text.as_str())])
                    .header("Accept", "application/json")
                    .header("X-Subscription-Token", &self.key);
                (request, "/web/results", "description")
            }
        };
        let answer = json_answer(&self.what, self.seconds, request).await?;
        results_at(&self.what, &answer, pointer, snippet, count)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tags_and_entities_are_stripped_from_snippets() {
        assert_eq!(super::strip_tags("The <strong>AWS</strong> Innovate &amp; more"), "The AWS Innovate & more");
    }
}
