//! The one way any Quarry crate reaches the network.
//!
//! Every HTTP request Quarry makes — to an OpenAI-compatible LLM server, a web search provider or a web
//! page — goes through an [`HttpClient`] made by [`Network::client`]. In [`NetworkMode::Offline`], the
//! default for a new install, a client reaches only this computer:
//!
//! - a request is refused before any socket is opened unless its host is `localhost` or a loopback IP
//!   literal (`127.0.0.0/8`, `::1`), with an [`NetError::Offline`] that names the URL and the purpose;
//! - name resolution is replaced by one that answers only `localhost`, so nothing is looked up in DNS;
//! - proxies from the environment (`HTTP_PROXY`, …) are ignored, so a loopback request cannot be routed
//!   off the machine;
//! - a redirect to any other host is refused.
//!
//! So a local Ollama or llama.cpp server keeps working offline, and nothing else is reached. In
//! [`NetworkMode::Online`] clients are ordinary `reqwest` clients (system DNS, environment proxies).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

pub use reqwest;

/// Whether Quarry may reach other machines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetworkMode {
    /// Only this computer (loopback): the default.
    #[default]
    Offline,
    /// Any host.
    Online,
}

impl std::str::FromStr for NetworkMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "offline" => Ok(NetworkMode::Offline),
            "online" => Ok(NetworkMode::Online),
            other => Err(format!("network mode {other:?}: expected offline or online")),
        }
    }
}

impl std::fmt::Display for NetworkMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NetworkMode::Offline => "offline",
            NetworkMode::Online => "online",
        })
    }
}

/// Why a request could not be made or sent.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// Offline mode refused a request to another machine; no socket was opened.
    #[error("offline mode: {purpose} may not reach {url} (only this computer is reachable); allow the network with --network online or QUARRY_NETWORK=online")]
    Offline { purpose: String, url: String },
    #[error("{purpose}: {url:?} is not an http(s) URL")]
    BadUrl { purpose: String, url: String },
    #[error("{purpose}: HTTP client: {message}")]
    Client { purpose: String, message: String },
}

/// Timeouts of a client.
#[derive(Debug, Clone, Copy)]
pub struct ClientOptions {
    /// Longest wait for a connection.
    pub connect_timeout: Duration,
    /// Longest a whole request may take, body included.
    pub timeout: Duration,
}

impl Default for ClientOptions {
    /// 10 s to connect, 60 s in all.
    fn default() -> Self {
        ClientOptions { connect_timeout: Duration::from_secs(10), timeout: Duration::from_secs(60) }
    }
}

/// The HTTP client factory: holds the network mode and makes clients that obey it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Network {
    mode: NetworkMode,
}

impl Network {
    pub fn new(mode: NetworkMode) -> Self {
        Network { mode }
    }

    pub fn mode(&self) -> NetworkMode {
        self.mode
    }

    /// A client for `purpose` (named in errors: "LLM server", "web search", …).
    /// Errors: [`NetError::Client`] when the TLS backend cannot be set up.
    pub fn client(&self, purpose: &str, options: ClientOptions) -> Result<HttpClient, NetError> {
        let mut builder = reqwest::Client::builder()
            .connect_timeout(options.connect_timeout)
            .timeout(options.timeout)
            .user_agent(concat!("Quarry/", env!("CARGO_PKG_VERSION")));
        if self.mode == NetworkMode::Offline {
            builder = builder
                .no_proxy()
                .dns_resolver(Arc::new(LocalhostOnly))
                .redirect(reqwest::redirect::Policy::custom(|attempt| {
                    if attempt.previous().len() >= 10 {
                        attempt.error("too many redirects")
                    } else if is_local(attempt.url()) {
                        attempt.follow()
                    } else {
                        let url = attempt.url().to_string();
                        attempt.error(format!("offline mode: redirect to {url} refused"))
                    }
                }));
        }
        let inner = builder.build().map_err(|e| NetError::Client { purpose: purpose.to_string(), message: e.to_string() })?;
        Ok(HttpClient { inner, mode: self.mode, purpose: purpose.to_string() })
    }

    /// Checks that `url` may be reached in this mode without making a request (e.g. to refuse a
    /// configuration before any work). Errors as [`HttpClient::request`].
    pub fn check(&self, purpose: &str, url: &str) -> Result<reqwest::Url, NetError> {
        check_url(self.mode, purpose, url)
    }
}

/// An HTTP client that obeys its [`Network`]'s mode. Cheap to clone.
#[derive(Debug, Clone)]
pub struct HttpClient {
    inner: reqwest::Client,
    mode: NetworkMode,
    purpose: String,
}

impl HttpClient {
    /// A request builder for `method` and `url`. Errors: the URL is not http(s)
    /// ([`NetError::BadUrl`]), or offline mode refuses its host ([`NetError::Offline`]); either way no
    /// socket is opened.
    pub fn request(&self, method: reqwest::Method, url: &str) -> Result<reqwest::RequestBuilder, NetError> {
        let url = check_url(self.mode, &self.purpose, url)?;
        Ok(self.inner.request(method, url))
    }

    /// `GET url` (see [`HttpClient::request`]).
    pub fn get(&self, url: &str) -> Result<reqwest::RequestBuilder, NetError> {
        self.request(reqwest::Method::GET, url)
    }

    /// `POST url` (see [`HttpClient::request`]).
    pub fn post(&self, url: &str) -> Result<reqwest::RequestBuilder, NetError> {
        self.request(reqwest::Method::POST, url)
    }

    pub fn mode(&self) -> NetworkMode {
        self.mode
    }
}

fn check_url(mode: NetworkMode, purpose: &str, url: &str) -> Result<reqwest::Url, NetError> {
    let parsed = reqwest::Url::parse(url).ok().filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
    let Some(parsed) = parsed else {
        return Err(NetError::BadUrl { purpose: purpose.to_string(), url: url.to_string() });
    };
    if mode == NetworkMode::Offline && !is_local(&parsed) {
        return Err(NetError::Offline { purpose: purpose.to_string(), url: url.to_string() });
    }
    Ok(parsed)
}

/// True for `localhost` and loopback IP literals.
pub fn is_local(url: &reqwest::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Offline name resolution: `localhost` only, never DNS.
struct LocalhostOnly;

impl reqwest::dns::Resolve for LocalhostOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let local = name.as_str().eq_ignore_ascii_case("localhost");
        let name = name.as_str().to_string();
        Box::pin(async move {
            if local {
                let addrs: Vec<SocketAddr> =
                    vec![SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0), SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), 0)];
                Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
            } else {
                Err(format!("offline mode: {name} is not looked up").into())
            }
        })
    }
}
