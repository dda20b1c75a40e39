//! The network policy against real sockets: a loopback HTTP server that counts connections.

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
const REDIRECT_AWAY: &str = "HTTP/1.1 302 Found\r\nLocation: http://search.example.org/steal\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

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

    for remote in ["https://api.example.com/v1", "http://10.0.0.1:8080/", "http://192.168.1.2/", "http://localhost.example.org/", "http://[2001:db8::1]/"] {
        match client.get(remote) {
            Err(e @ NetError::Offline { .. }) => {
                let message = e.to_string();
                assert!(message.contains(remote) && message.contains("the test") && message.contains("--network online"), "{message}");
            }
            other => panic!("{remote}: {other:?}"),
        }
    }
    assert!(matches!(client.get("file:///etc/passwd"), Err(NetError::BadUrl { .. })));
    assert!(matches!(Network::default().check("x", "https://example.com"), Err(NetError::Offline { .. })), "offline is the default");
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
