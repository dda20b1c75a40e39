//! The network policy against real sockets: a loopback HTTP server that counts connections.
#![allow(clippy::unwrap_used)] // tests: a failed unwrap is the test failing

use quarry_net::{ClientOptions, NetError, Network, NetworkMode};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A loopback server answering every request with `response`; returns its base URL and the number of
/// connections it has accepted.
fn serve(response: &'static str) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&count);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            seen.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(response.as_bytes());
        }
    });
    (url, count)
}

const OK: &str = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";
const REDIRECT_AWAY: &str =
    "HTTP/1.1 302 Found\r\nLocation: http://search.example.org/steal\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

#[tokio::test]
async fn offline_reaches_this_computer_and_refuses_everything_else_before_any_socket() {
    let (url, connections) = serve(OK);
    let client = Network::new(NetworkMode::Offline).client("the test", ClientOptions::default()).unwrap();
    let body = client.get(&url).unwrap().send().await.unwrap().text().await.unwrap();
    assert_eq!(body, "hello");
    let port = url.rsplit(':').next().unwrap();
    let body = client.get(&format!("http://localhost:{port}/x")).unwrap().send().await.unwrap().text().await.unwrap();
    assert_eq!(body, "hello", "localhost resolves without DNS");
    assert_eq!(connections.load(Ordering::SeqCst), 2);

    for remote in [
        "https://api.example.com/v1",
        "http://10.0.0.1:8080/",
        "http://192.168.1.2/",
        "http://localhost.example.org/",
        "http://[2001:db8::1]/",
    ] {
        match client.get(remote) {
            Err(e @ NetError::Offline { .. }) => {
                let message = e.to_string();
                assert!(
                    message.contains(remote) && message.contains("the test") && message.contains("--network online"),
                    "{message}"
                );
            }
            other => panic!("{remote}: {other:?}"),
        }
    }
    assert!(matches!(client.get("file:///etc/passwd"), Err(NetError::BadUrl { .. })));
    assert!(
        matches!(Network::default().check("x", "https://example.com"), Err(NetError::Offline { .. })),
        "offline is the default"
    );
}

#[tokio::test]
async fn offline_refuses_a_redirect_off_the_machine() {
    let (url, connections) = serve(REDIRECT_AWAY);
    let client = Network::new(NetworkMode::Offline).client("web search", ClientOptions::default()).unwrap();
    let error = client.get(&url).unwrap().send().await.unwrap_err();
    let message = format!("{error:?}");
    assert!(message.contains("offline mode: redirect to http://search.example.org/steal refused"), "{message}");
    assert_eq!(connections.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn online_allows_any_host_and_still_reaches_loopback() {
    let network = Network::new(NetworkMode::Online);
    assert!(network.check("x", "https://api.example.com/v1").is_ok());
    let (url, _) = serve(OK);
    let client = network.client("the test", ClientOptions::default()).unwrap();
    assert_eq!(client.get(&url).unwrap().send().await.unwrap().status(), 200);
    assert_eq!("online".parse::<NetworkMode>().unwrap(), NetworkMode::Online);
    assert!("sometimes".parse::<NetworkMode>().is_err());
}

const REDIRECT_TO: &str = "HTTP/1.1 302 Found\r\nLocation: LOCATION\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

/// Server-side request forgery: a web result page (a URL Quarry did not choose) may not point at this
/// computer or the local network, in online mode too — not by IP literal, not by a local name, not by a
/// redirect. Before `public_client` the online page client fetched all of these.
#[tokio::test]
async fn a_public_client_refuses_this_computer_and_the_local_network_before_any_socket() {
    let (internal, internal_hits) = serve(OK);
    let port = internal.rsplit(':').next().unwrap().to_string();
    let network = Network::new(NetworkMode::Online);
    let pages = network.public_client("web pages", ClientOptions::default(), None).unwrap();
    for url in [
        internal.clone(),
        format!("http://localhost:{port}/"),
        format!("http://[::1]:{port}/"),
        format!("http://[::ffff:127.0.0.1]:{port}/"),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "http://10.1.2.3/".to_string(),
        "http://172.20.0.1/".to_string(),
        "http://192.168.1.1/admin".to_string(),
        "http://100.64.0.1/".to_string(),
        "http://0.0.0.0/".to_string(),
        "http://[fd00::1]/".to_string(),
        "http://[fe80::1]/".to_string(),
        "http://printer.local/".to_string(),
        "http://db.internal/".to_string(),
        "http://router/".to_string(),
    ] {
        match pages.get(&url) {
            Err(e @ NetError::NotPublic { .. }) => assert!(e.to_string().contains(&url), "{e}"),
            other => panic!("{url} was not refused: {other:?}"),
        }
    }
    assert_eq!(internal_hits.load(Ordering::SeqCst), 0, "no connection to the internal server");

    // The provider's own origin, configured by the person, is the one exception.
    let trusted = network.public_client("web pages", ClientOptions::default(), Some(&internal)).unwrap();
    assert_eq!(trusted.get(&format!("{internal}/page")).unwrap().send().await.unwrap().text().await.unwrap(), "hello");
    assert!(
        matches!(
            trusted.get(&format!("http://127.0.0.1:{}/", port.parse::<u16>().unwrap() ^ 1)),
            Err(NetError::NotPublic { .. })
        ),
        "another port is another origin"
    );
    // Trust is the origin, not the host name: another port of the provider's host (which the resolver
    // would let resolve to a private address) is refused before any socket. Before, only the name was
    // compared at connect time, so `searx.example:6379` was trusted like `searx.example:8888`.
    let by_name =
        network.public_client("web pages", ClientOptions::default(), Some("http://searx.example:8888")).unwrap();
    for url in ["http://searx.example:6379/", "https://searx.example:8888/", "http://SEARX.example/"] {
        match by_name.get(url) {
            Err(e @ NetError::NotPublic { .. }) => assert!(e.to_string().contains("searx.example"), "{e}"),
            other => panic!("{url} was not refused: {other:?}"),
        }
    }
    assert!(by_name.get("http://searx.example:8888/page").is_ok(), "the provider's own origin");

    // A redirect from the trusted origin to another local server is refused at that hop.
    let redirect: &'static str =
        Box::leak(REDIRECT_TO.replace("LOCATION", &format!("{internal}/secret")).into_boxed_str());
    let (provider, _) = serve(redirect);
    let from_provider = network.public_client("web pages", ClientOptions::default(), Some(&provider)).unwrap();
    let before = internal_hits.load(Ordering::SeqCst);
    let error = from_provider.get(&format!("{provider}/result")).unwrap().send().await.unwrap_err();
    let message = format!("{error:?}");
    assert!(message.contains("refused") && message.contains("not a public internet address"), "{message}");
    assert_eq!(internal_hits.load(Ordering::SeqCst), before, "the redirect target was not contacted");

    // Offline, a public client reaches nothing but the trusted origin.
    let offline = Network::new(NetworkMode::Offline)
        .public_client("web pages", ClientOptions::default(), Some(&provider))
        .unwrap();
    assert!(matches!(offline.get("https://example.com/"), Err(NetError::Offline { .. })));
    assert!(matches!(offline.get(&internal), Err(NetError::NotPublic { .. })));
}

/// What a name resolves to is checked at connect time: only public addresses are handed to the
/// connection, so a public-looking name pointing at a private address is refused.
#[test]
fn names_resolving_only_to_private_addresses_are_refused() {
    use quarry_net::{is_public_ip, public_addresses};
    use std::net::{IpAddr, SocketAddr};
    let at = |ip: &str| SocketAddr::new(ip.parse::<IpAddr>().unwrap(), 0);
    let error =
        public_addresses("rebind.example.com", vec![at("127.0.0.1"), at("10.0.0.7")], false).unwrap_err().to_string();
    assert!(error.contains("rebind.example.com") && error.contains("127.0.0.1, 10.0.0.7"), "{error}");
    assert_eq!(
        public_addresses("mixed.example.com", vec![at("192.168.0.2"), at("93.184.215.14")], false).unwrap(),
        vec![at("93.184.215.14")]
    );
    assert_eq!(
        public_addresses("searx", vec![at("127.0.0.1")], true).unwrap(),
        vec![at("127.0.0.1")],
        "the trusted host"
    );
    for public in ["93.184.215.14", "8.8.8.8", "2606:4700::1111", "64:ff9b::808:808"] {
        assert!(is_public_ip(public.parse().unwrap()), "{public}");
    }
    for private in [
        "127.0.0.2",
        "::1",
        "::",
        "169.254.169.254",
        "198.18.0.1",
        "192.0.2.1",
        "240.0.0.1",
        "255.255.255.255",
        "224.0.0.1",
        "fc00::1",
        "2001:db8::1",
        "::ffff:10.0.0.1",
        "64:ff9b::7f00:1",
    ] {
        assert!(!is_public_ip(private.parse().unwrap()), "{private}");
    }
}

/// A web citation opens in the browser only as an http(s) URL, and offline only after the person agrees
/// when it leaves this computer (before, the app opened any cited URL in any mode).
#[test]
fn web_citations_open_in_the_browser_only_as_http_and_offline_only_when_asked() {
    use quarry_net::{browser_link, BrowserLink};
    let page = "https://www.example.org/report.html";
    assert!(matches!(browser_link(page, NetworkMode::Online), Ok(BrowserLink::Open(_))));
    assert!(matches!(browser_link(page, NetworkMode::Offline), Ok(BrowserLink::AskFirst(_))));
    assert!(matches!(browser_link("http://localhost:8888/search", NetworkMode::Offline), Ok(BrowserLink::Open(_))));
    for bad in ["file:///home/me/.ssh/id_rsa", "javascript:alert(1)", "steam://run/1", "https://", "not a url"] {
        let error = browser_link(bad, NetworkMode::Online).unwrap_err();
        assert!(matches!(error, NetError::BadUrl { .. }), "{bad}: {error}");
    }
}
