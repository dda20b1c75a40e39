//! Retries, streaming, JSON-schema fallback and errors of `OpenAiChat`, against a scripted loopback HTTP
//! server that records what it was sent.

use quarry_core::{ChatError, ChatModel, ChatRequest};
use quarry_llm::{OpenAiChat, OpenAiConfig};
use quarry_net::{Network, NetworkMode};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One scripted HTTP reply.
struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
}

fn json_reply(status: u16, body: Value) -> Reply {
    Reply { status, headers: vec![("Content-Type", "application/json".into())], body: body.to_string() }
}

fn completion(text: &str) -> Reply {
    json_reply(
        200,
        serde_json::json!({
            "choices": [{ "index": 0, "message": { "role": "assistant", "content": text }, "finish_reason": "stop" }],
            "usage": { "prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49 }
        }),
    )
}

/// Serves the replies in order, one per connection, and records each request's JSON body.
async fn serve(replies: Vec<Reply>) -> (String, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    tokio::spawn(async move {
        for reply in replies {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buffer = Vec::new();
            let mut chunk = [0u8; 4096];
            let body_start = loop {
                let n = socket.read(&mut chunk).await.unwrap();
                buffer.extend_from_slice(&chunk[..n]);
                if let Some(i) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                    break i + 4;
                }
            };
            let head = String::from_utf8_lossy(&buffer[..body_start]).to_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map(|v| v.trim().parse().unwrap())
                .unwrap_or(0);
            while buffer.len() < body_start + length {
                let n = socket.read(&mut chunk).await.unwrap();
                buffer.extend_from_slice(&chunk[..n]);
            }
            record.lock().unwrap().push(serde_json::from_slice(&buffer[body_start..body_start + length]).unwrap());
            let mut response = format!(
                "HTTP/1.1 {} Scripted\r\nContent-Length: {}\r\nConnection: close\r\n",
                reply.status,
                reply.body.len()
            );
            for (name, value) in &reply.headers {
                response.push_str(&format!("{name}: {value}\r\n"));
            }
            response.push_str("\r\n");
            response.push_str(&reply.body);
            socket.write_all(response.as_bytes()).await.unwrap();
            socket.shutdown().await.ok();
        }
    });
    (url, seen)
}

fn client(url: &str) -> OpenAiChat {
    let mut config = OpenAiConfig::new(url, "test-model");
    config.backoff = Duration::from_millis(10);
    config.max_retries = 3;
    OpenAiChat::new(config, &Network::new(NetworkMode::Offline)).unwrap()
}

fn request() -> ChatRequest {
    ChatRequest::new("answer", "be brief", "What is Quarry?", 64)
}

#[tokio::test]
async fn retries_on_5xx_and_429_then_returns_the_text_and_usage() {
    let (url, seen) = serve(vec![
        json_reply(503, serde_json::json!({"error": {"message": "loading model"}})),
        Reply { status: 429, headers: vec![("Retry-After", "0".into())], body: "slow down".into() },
        completion("A research assistant."),
    ])
    .await;
    let response = client(&url).complete(&request(), None).await.unwrap();
    assert_eq!(response.text, "A research assistant.");
    assert_eq!((response.usage.prompt_tokens, response.usage.completion_tokens), (42, 7));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0]["model"], "test-model");
    assert_eq!(seen[0]["messages"][1]["content"], "What is Quarry?");
    assert_eq!(seen[0]["stream"], false);
}

#[tokio::test]
async fn streams_server_sent_events_to_the_sink() {
    let events = [
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"Cited "}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"answer [1]."}}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":120,"completion_tokens":5}}"#,
    ];
    let mut body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    let (url, seen) =
        serve(vec![Reply { status: 200, headers: vec![("Content-Type", "text/event-stream".into())], body }]).await;
    let pieces = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink_pieces = Arc::clone(&pieces);
    let sink = move |t: &str| {
        sink_pieces.lock().unwrap().push(t.to_string());
        std::ops::ControlFlow::Continue(())
    };
    let response = client(&url).complete(&request(), Some(&sink)).await.unwrap();
    assert_eq!(response.text, "Cited answer [1].");
    assert_eq!(*pieces.lock().unwrap(), vec!["Cited ", "answer [1]."]);
    assert_eq!(response.usage.prompt_tokens, 120);
    assert_eq!(seen.lock().unwrap()[0]["stream_options"]["include_usage"], true);
}

/// A sink that asks to stop after its first piece: the stream is left there and the response holds
/// what was streamed (the usage estimated, as the server's report comes last).
#[tokio::test]
async fn a_sink_that_asks_to_stop_ends_the_stream_with_the_text_so_far() {
    let events = [
        r#"{"choices":[{"index":0,"delta":{"content":"- Inventory levels were higher. "}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"- Inventory levels were lower. "}}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":120,"completion_tokens":20}}"#,
    ];
    let mut body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    let (url, _) =
        serve(vec![Reply { status: 200, headers: vec![("Content-Type", "text/event-stream".into())], body }]).await;
    let pieces = Arc::new(Mutex::new(0usize));
    let counted = Arc::clone(&pieces);
    let sink = move |_: &str| {
        *counted.lock().unwrap() += 1;
        std::ops::ControlFlow::Break(())
    };
    let response = client(&url).complete(&request(), Some(&sink)).await.unwrap();
    assert_eq!(response.text, "- Inventory levels were higher. ");
    assert_eq!(*pieces.lock().unwrap(), 1, "nothing streamed after the stop");
    assert_ne!(response.usage.completion_tokens, 20, "the server's count of the whole answer was not read");
}

#[tokio::test]
async fn a_server_without_json_schema_support_is_asked_again_without_it() {
    let (url, seen) = serve(vec![
        json_reply(400, serde_json::json!({"error": {"message": "response_format is not supported"}})),
        completion(r#"{"queries": ["a"]}"#),
        completion(r#"{"queries": ["b"]}"#),
    ])
    .await;
    let chat = client(&url);
    let structured = request().with_schema(serde_json::json!({"type": "object"}));
    assert_eq!(chat.complete(&structured, None).await.unwrap().text, r#"{"queries": ["a"]}"#);
    chat.complete(&structured, None).await.unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0]["response_format"]["type"], "json_schema");
    assert_eq!(seen[0]["response_format"]["json_schema"]["schema"]["type"], "object");
    assert!(seen[1].get("response_format").is_none() && seen[2].get("response_format").is_none());
}

#[tokio::test]
async fn client_errors_are_not_retried_and_unreachable_servers_are_named() {
    let (url, seen) = serve(vec![json_reply(401, serde_json::json!({"error": {"message": "invalid api key"}}))]).await;
    match client(&url).complete(&request(), None).await {
        Err(ChatError::Http { status: 401, message, endpoint }) => {
            assert_eq!(message, "invalid api key");
            assert!(endpoint.ends_with("/v1/chat/completions"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(seen.lock().unwrap().len(), 1);

    // A port nobody listens on: connection refused, retried, then a clear error naming the endpoint.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    match client(&url).complete(&request(), None).await {
        Err(e @ ChatError::Unreachable { .. }) => assert!(e.to_string().contains(&url), "{e}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        OpenAiChat::new(OpenAiConfig::new("localhost:8080", "m"), &Network::default()),
        Err(ChatError::Config(_))
    ));
}

#[tokio::test]
async fn offline_mode_refuses_a_remote_server_before_any_request_and_online_mode_allows_it() {
    // Its own kind (ErrorCode::Offline), so the CLI and the app can say how to allow the network.
    match OpenAiChat::new(OpenAiConfig::new("https://api.example.com/v1", "m"), &Network::new(NetworkMode::Offline)) {
        Err(error @ ChatError::Offline(_)) => {
            let message = error.to_string();
            assert!(message.contains("offline mode") && message.contains("https://api.example.com/v1"), "{message}");
            assert_eq!(quarry_core::Coded::code(&error), quarry_core::ErrorCode::Offline);
        }
        other => panic!("{:?}", other.err()),
    }
    assert!(OpenAiChat::new(OpenAiConfig::new("https://api.example.com/v1", "m"), &Network::new(NetworkMode::Online))
        .is_ok());
}

/// An API key never travels unencrypted to another computer: plain http:// with a key is refused unless
/// the server is this computer; https:// is fine, and so is http:// without a key. The key is never
/// printed by `Debug`. (Before, the key went out in the clear and `Debug` showed it.)
#[tokio::test]
async fn an_api_key_is_not_sent_over_plain_http_to_another_host_nor_printed() {
    let online = Network::new(NetworkMode::Online);
    let with_key = |url: &str| {
        let mut config = OpenAiConfig::new(url, "m");
        config.api_key = Some("sk-very-secret".into());
        config
    };
    match OpenAiChat::new(with_key("http://llm.example.com/v1"), &online) {
        Err(ChatError::Config(message)) => {
            assert!(message.contains("plain http://") && message.contains("https://"), "{message}")
        }
        other => panic!("a key over plain http was accepted: {:?}", other.err()),
    }
    assert!(OpenAiChat::new(with_key("https://llm.example.com/v1"), &online).is_ok());
    assert!(OpenAiChat::new(with_key("http://127.0.0.1:11434/v1"), &online).is_ok(), "this computer");
    assert!(
        OpenAiChat::new(OpenAiConfig::new("http://llm.example.com/v1", "m"), &online).is_ok(),
        "no key, nothing to leak"
    );
    let shown = format!("{:?}", with_key("https://llm.example.com/v1"));
    assert!(!shown.contains("sk-very-secret") && shown.contains("api_key"), "{shown}");
    // A password in the URL never reaches the model's description, which answers, reports and saved
    // conversations carry (before, the description was "m at https://me:hunter2@…").
    let chat = OpenAiChat::new(OpenAiConfig::new("https://me:hunter2@llm.example.com/v1", "m"), &online).unwrap();
    let described = quarry_core::ChatModel::describe(&chat);
    assert_eq!(described, "m at https://llm.example.com/v1");
}
