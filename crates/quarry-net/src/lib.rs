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
//!
//! URLs that Quarry did not choose — web result pages, and every redirect they lead to — go through a
//! [`Network::public_client`] in either mode: it reaches only the public internet, never this computer
//! or the local network (server-side request forgery: a result or a redirect pointing at a router's admin
//! page, a cloud metadata service at 169.254.169.254 or a local database would otherwise be fetched and
//! its text shown to the model and the person). See [`is_public_ip`] for the ranges refused.

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
    Offline {
        /// What the request was for ("LLM server", "web search", …).
        purpose: String,
        /// The URL it would have reached.
        url: String,
    },
    /// The URL does not parse, or its scheme is not http or https.
    #[error("{purpose}: {url:?} is not an http(s) URL")]
    BadUrl {
        /// What the request was for.
        purpose: String,
        /// The URL as given.
        url: String,
    },
    /// The HTTP client could not be built (TLS backend) or the request failed before a response.
    #[error("{purpose}: HTTP client: {message}")]
    Client {
        /// What the request was for.
        purpose: String,
        /// reqwest's explanation.
        message: String,
    },
    /// A client for the public internet refused a destination on this computer or the local network;
    /// no socket was opened to it.
    #[error("{purpose} may not reach {url}: {reason} (only the public internet is fetched for web results)")]
    NotPublic {
        /// What the request was for.
        purpose: String,
        /// The URL refused.
        url: String,
        /// Which rule refused it ("127.0.0.1 is not a public internet address", …).
        reason: String,
    },
}

/// Timeouts of a client.
#[derive(Debug, Clone, Copy)]
pub struct ClientOptions {
    /// Longest wait for a connection.
    pub connect_timeout: Duration,
    /// Longest a whole request may take, body included.
    pub timeout: Duration,
    /// Follow redirects (at most 10, each hop checked as the first request is). False for requests that
    /// carry a key in a header the HTTP client would not strip on the way to another host (a search
    /// provider's `X-Subscription-Token`): a redirect is then an error.
    pub follow_redirects: bool,
}

impl Default for ClientOptions {
    /// 10 s to connect, 60 s in all, redirects followed.
    fn default() -> Self {
        ClientOptions {
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(60),
            follow_redirects: true,
        }
    }
}

/// The HTTP client factory: holds the network mode and makes clients that obey it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Network {
    mode: NetworkMode,
}

impl Network {
    /// A factory whose clients obey `mode`.
    pub fn new(mode: NetworkMode) -> Self {
        Network { mode }
    }

    /// The mode its clients obey.
    pub fn mode(&self) -> NetworkMode {
        self.mode
    }

    /// A client for `purpose` (named in errors: "LLM server", "web search", …).
    /// Errors: [`NetError::Client`] when the TLS backend cannot be set up.
    pub fn client(&self, purpose: &str, options: ClientOptions) -> Result<HttpClient, NetError> {
        self.build(purpose, options, None)
    }

    /// A client for URLs from outside (web result pages): it reaches only public internet addresses,
    /// in either mode (offline mode refuses those too, so offline it reaches only `trusted`). Refused,
    /// before any socket is opened to them: IP literals outside the public ranges ([`is_public_ip`]);
    /// the names `localhost`, `*.localhost`, `*.local`, `*.internal`, `*.home.arpa`; names that resolve
    /// only to non-public addresses (the resolver drops those addresses, so the address checked is the
    /// address connected to — a name cannot be re-pointed between check and connect); and each redirect
    /// hop to any of these. `trusted` is the one origin exempt (scheme, host and port, e.g. the local
    /// SearXNG the person configured, which may serve its own result pages).
    ///
    /// Not covered: with an environment proxy (`HTTPS_PROXY`, online only) the proxy resolves names, so
    /// a public name that the proxy resolves to a private address is its to refuse; literals and the
    /// names above are still refused here. Errors: as [`Network::client`].
    pub fn public_client(
        &self,
        purpose: &str,
        options: ClientOptions,
        trusted: Option<&str>,
    ) -> Result<HttpClient, NetError> {
        let trusted = trusted.and_then(|t| reqwest::Url::parse(t).ok()).map(|u| u.origin());
        self.build(purpose, options, Some(PublicOnly { trusted }))
    }

    /// The one client builder behind [`Network::client`] and [`Network::public_client`]: timeouts and
    /// user agent; at most 10 redirects, each hop checked against offline mode (only this machine) and
    /// `public_only` when given; offline, no proxy and a resolver that answers only for this machine;
    /// online with `public_only`, a resolver that drops non-public addresses.
    fn build(
        &self,
        purpose: &str,
        options: ClientOptions,
        public_only: Option<PublicOnly>,
    ) -> Result<HttpClient, NetError> {
        let mode = self.mode;
        let hops = public_only.clone();
        let follow = options.follow_redirects;
        let mut builder = reqwest::Client::builder()
            .connect_timeout(options.connect_timeout)
            .timeout(options.timeout)
            .user_agent(concat!("Quarry/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::custom(move |attempt| {
                if !follow {
                    let url = attempt.url().to_string();
                    return attempt.error(format!("redirect to {url} not followed"));
                }
                if attempt.previous().len() >= 10 {
                    return attempt.error("too many redirects");
                }
                let url = attempt.url().clone();
                if mode == NetworkMode::Offline && !is_local(&url) {
                    return attempt.error(format!("offline mode: redirect to {url} refused"));
                }
                match hops.as_ref().and_then(|guard| guard.refusal(&url)) {
                    Some(reason) => attempt.error(format!("redirect to {url} refused: {reason}")),
                    None => attempt.follow(),
                }
            }));
        builder = match (mode, &public_only) {
            (NetworkMode::Offline, _) => builder.no_proxy().dns_resolver(Arc::new(LocalhostOnly)),
            (NetworkMode::Online, Some(guard)) => builder.dns_resolver(Arc::new(guard.clone())),
            (NetworkMode::Online, None) => builder,
        };
        let inner =
            builder.build().map_err(|e| NetError::Client { purpose: purpose.to_string(), message: e.to_string() })?;
        Ok(HttpClient { inner, mode, purpose: purpose.to_string(), public_only })
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
    /// Set for [`Network::public_client`]s.
    public_only: Option<PublicOnly>,
}

impl HttpClient {
    /// A request builder for `method` and `url`. Errors: the URL is not http(s)
    /// ([`NetError::BadUrl`]), or offline mode refuses its host ([`NetError::Offline`]); either way no
    /// socket is opened.
    pub fn request(&self, method: reqwest::Method, url: &str) -> Result<reqwest::RequestBuilder, NetError> {
        let parsed = check_url(self.mode, &self.purpose, url)?;
        if let Some(reason) = self.public_only.as_ref().and_then(|guard| guard.refusal(&parsed)) {
            return Err(NetError::NotPublic { purpose: self.purpose.clone(), url: url.to_string(), reason });
        }
        Ok(self.inner.request(method, parsed))
    }

    /// `GET url` (see [`HttpClient::request`]).
    pub fn get(&self, url: &str) -> Result<reqwest::RequestBuilder, NetError> {
        self.request(reqwest::Method::GET, url)
    }

    /// `POST url` (see [`HttpClient::request`]).
    pub fn post(&self, url: &str) -> Result<reqwest::RequestBuilder, NetError> {
        self.request(reqwest::Method::POST, url)
    }

    /// The network mode this client was made under.
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

/// What to do when the person asks to open `url` (a web citation) in their browser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrowserLink {
    /// Online mode: open it.
    Open(reqwest::Url),
    /// Offline mode and the URL leaves this computer: opening it is a network request Quarry promised not
    /// to make, so ask the person first.
    AskFirst(reqwest::Url),
}

/// How a web citation's `url` may be opened in the browser in `mode`. Only `http(s)` URLs with a host are
/// opened at all (a `file:`, `javascript:` or custom-scheme URL from a search result is refused); a
/// local URL (`localhost`, loopback) opens in either mode. Errors: [`NetError::BadUrl`].
pub fn browser_link(url: &str, mode: NetworkMode) -> Result<BrowserLink, NetError> {
    let parsed = reqwest::Url::parse(url).ok().filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
    let Some(parsed) = parsed else {
        return Err(NetError::BadUrl { purpose: "opening a web citation".into(), url: url.to_string() });
    };
    if mode == NetworkMode::Offline && !is_local(&parsed) {
        Ok(BrowserLink::AskFirst(parsed))
    } else {
        Ok(BrowserLink::Open(parsed))
    }
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

/// Whether `ip` is an address of the public internet: not loopback, unspecified, private (10/8,
/// 172.16/12, 192.168/16), shared address space (100.64/10), link-local (169.254/16 — cloud metadata
/// services live there — and fe80::/10), unique-local (fc00::/7), multicast, broadcast, reserved
/// (240/4, 0/8, 192.0.0/24), benchmarking (198.18/15) or documentation (192.0.2/24, 198.51.100/24,
/// 203.0.113/24, 2001:db8::/32). IPv4-mapped and NAT64 (64:ff9b::/96) IPv6 addresses are judged by the
/// IPv4 address they carry. Ranges from RFC 6890's special-purpose registries.
pub fn is_public_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || a >= 240
                || (a == 100 && (64..128).contains(&b))
                || (a == 192 && b == 0 && c == 0)
                || (a == 198 && (b == 18 || b == 19)))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_ip(IpAddr::V4(v4));
            }
            let s = v6.segments();
            if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
                let [a, b] = s[6].to_be_bytes();
                let [c, d] = s[7].to_be_bytes();
                return is_public_ip(IpAddr::V4(Ipv4Addr::new(a, b, c, d)));
            }
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0] & 0xffc0) == 0xfec0
                || (s[0] == 0x2001 && s[1] == 0x0db8)
                || s[..6] == [0, 0, 0, 0, 0, 0])
        }
    }
}

/// The rules of a [`Network::public_client`].
#[derive(Debug, Clone)]
struct PublicOnly {
    trusted: Option<url::Origin>,
}

impl PublicOnly {
    /// Why `url` may not be fetched, or `None` when it may (its address is checked again at connect
    /// time, by the resolver).
    fn refusal(&self, url: &reqwest::Url) -> Option<String> {
        if self.trusted.as_ref().is_some_and(|t| *t == url.origin()) {
            return None;
        }
        // The provider's host is trusted to resolve to a private address (a SearXNG on the local network)
        // only at its own origin: another port or scheme of that name would reach whatever else runs
        // there (the resolver, which sees names alone, cannot tell them apart).
        if let Some(trusted @ url::Origin::Tuple(_, url::Host::Domain(host), _)) = &self.trusted {
            if matches!(url.host(), Some(url::Host::Domain(name)) if name.eq_ignore_ascii_case(host)) {
                return Some(format!(
                    "{host} is reached only at the search provider's own address {}",
                    trusted.ascii_serialization()
                ));
            }
        }
        match url.host()? {
            url::Host::Ipv4(ip) if !is_public_ip(IpAddr::V4(ip)) => {
                Some(format!("{ip} is not a public internet address"))
            }
            url::Host::Ipv6(ip) if !is_public_ip(IpAddr::V6(ip)) => {
                Some(format!("{ip} is not a public internet address"))
            }
            url::Host::Domain(name) if is_local_name(name) => {
                Some(format!("{name} names this computer or the local network"))
            }
            _ => None,
        }
    }

    /// Whether `name` may resolve to non-public addresses: only the trusted origin's host.
    fn trusts_host(&self, name: &str) -> bool {
        matches!(&self.trusted, Some(url::Origin::Tuple(_, url::Host::Domain(host), _)) if host.eq_ignore_ascii_case(name))
    }
}

/// `localhost`, `*.localhost`, `*.local` (mDNS), `*.internal`, `*.home.arpa`, and single-label names
/// (resolved by the local network's search domains).
fn is_local_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost"
        || !name.contains('.')
        || [".localhost", ".local", ".internal", ".home.arpa", ".lan"].iter().any(|suffix| name.ends_with(suffix))
}

/// Online name resolution for public clients: the system resolver, keeping only public addresses.
impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let name = name.as_str().to_string();
        let trusted = self.trusts_host(&name);
        Box::pin(async move {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            let public = public_addresses(&name, found, trusted)?;
            Ok(Box::new(public.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// `found` (what `name` resolved to) without the non-public addresses, unless `trusted`. Errors: none
/// left (the message names the addresses refused).
pub fn public_addresses(
    name: &str,
    found: Vec<SocketAddr>,
    trusted: bool,
) -> Result<Vec<SocketAddr>, Box<dyn std::error::Error + Send + Sync>> {
    if trusted {
        return Ok(found);
    }
    let (public, refused): (Vec<SocketAddr>, Vec<SocketAddr>) = found.into_iter().partition(|a| is_public_ip(a.ip()));
    if public.is_empty() {
        let refused: Vec<String> = refused.iter().map(|a| a.ip().to_string()).collect();
        return Err(format!(
            "{name} resolves to {} — not a public internet address; refused",
            if refused.is_empty() { "nothing".into() } else { refused.join(", ") }
        )
        .into());
    }
    Ok(public)
}

/// Offline name resolution: `localhost` only, never DNS.
struct LocalhostOnly;

impl reqwest::dns::Resolve for LocalhostOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let local = name.as_str().eq_ignore_ascii_case("localhost");
        let name = name.as_str().to_string();
        Box::pin(async move {
            if local {
                let addrs: Vec<SocketAddr> = vec![
                    SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
                    SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), 0),
                ];
                Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
            } else {
                Err(format!("offline mode: {name} is not looked up").into())
            }
        })
    }
}
