//! Local LLM servers found on this computer: the OpenAI-compatible servers people already run (Ollama, LM
//! Studio, llama.cpp's `llama-server`, vLLM, Jan), probed on their usual loopback ports so that choosing
//! one takes a click instead of a URL and a model name.
//!
//! Only `127.0.0.1` is asked, over plain HTTP, with a short timeout: nothing leaves the computer, and a
//! port where nothing listens is refused at once. A server counts when `GET /v1/models` answers with
//! OpenAI's model list (`{"data": [{"id": …}, …]}`); for Ollama, `GET /api/tags` is asked too when its
//! OpenAI list is empty or unavailable.

use serde::Serialize;
use serde_json::Value;
use std::time::Duration;

/// The usual loopback ports of local OpenAI-compatible servers, probed in this order, with the server
/// that uses the port by default.
pub const USUAL_PORTS: &[(u16, &str)] =
    &[(11434, "Ollama"), (1234, "LM Studio"), (8080, "llama.cpp server"), (8000, "vLLM"), (1337, "Jan")];

/// How long one probe may take (connection and answer); a port with nothing listening fails at once.
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(1500);

/// An OpenAI-compatible server that answered on this computer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LocalServer {
    /// Which server it is: named from the model list's `owned_by` where a server says who it is
    /// (`llamacpp`, `vllm`), else from the port's usual owner ([`USUAL_PORTS`]), else
    /// "OpenAI-compatible server".
    pub name: String,
    /// Base URL with the API prefix, as `--llm-url` takes it: `http://127.0.0.1:11434/v1`.
    pub url: String,
    /// The model names it serves, in the server's order (what `--llm-model` takes).
    pub models: Vec<String>,
}

/// Environment variable naming more loopback ports to probe, comma-separated (`QUARRY_LLM_PORTS=5001,9090`):
/// for a server on a port of its own, found by `--llm-url auto` and the app as the usual ones are.
pub const PORTS_VARIABLE: &str = "QUARRY_LLM_PORTS";

/// Probes the [`USUAL_PORTS`], the ports in [`PORTS_VARIABLE`] and `extra_ports` on `127.0.0.1` at once
/// and returns the servers that answered, in that order (duplicates asked once). Never fails: a port
/// that refuses, times out or answers something other than a model list is left out, and so is a
/// malformed entry of the variable.
pub async fn find_local_servers(extra_ports: &[u16], timeout: Duration) -> Vec<LocalServer> {
    let mut ports: Vec<u16> = USUAL_PORTS.iter().map(|(port, _)| *port).collect();
    let from_env: Vec<u16> =
        std::env::var(PORTS_VARIABLE).unwrap_or_default().split(',').filter_map(|p| p.trim().parse().ok()).collect();
    for port in from_env.iter().chain(extra_ports) {
        if !ports.contains(port) {
            ports.push(*port);
        }
    }
    // Offline mode: the client reaches only this computer, which is all that is asked.
    let options = quarry_net::ClientOptions { connect_timeout: timeout, timeout, follow_redirects: true };
    let Ok(client) = quarry_net::Network::new(quarry_net::NetworkMode::Offline).client("local LLM discovery", options)
    else {
        return Vec::new();
    };
    let probes = ports.iter().map(|&port| probe(&client, port));
    futures::future::join_all(probes).await.into_iter().flatten().collect()
}

/// [`find_local_servers`] from synchronous code, inside or outside a Tokio runtime (it runs on a thread
/// of its own with a runtime of its own).
pub fn find_local_servers_blocking(extra_ports: &[u16], timeout: Duration) -> Vec<LocalServer> {
    let extra = extra_ports.to_vec();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
        Some(runtime.block_on(find_local_servers(&extra, timeout)))
    })
    .join()
    .ok()
    .flatten()
    .unwrap_or_default()
}

async fn probe(client: &quarry_net::HttpClient, port: u16) -> Option<LocalServer> {
    let base = format!("http://127.0.0.1:{port}/v1");
    // Only OpenAI's model list counts: another program's JSON on a common port (8000, 8080) is no server.
    let listed = get_json(client, &format!("{base}/models")).await.filter(|list| list["data"].is_array());
    let usual = USUAL_PORTS.iter().find(|(p, _)| *p == port).map(|(_, name)| *name);
    let (mut models, mut name) = match &listed {
        Some(list) => (model_ids(list), owner_name(list)),
        None => (Vec::new(), None),
    };
    if models.is_empty() && usual == Some("Ollama") {
        // Ollama lists pulled models at /api/tags ({"models": [{"name": …}]}).
        let tags = get_json(client, &format!("http://127.0.0.1:{port}/api/tags")).await?;
        models = tags["models"].as_array()?.iter().filter_map(|m| m["name"].as_str().map(str::to_string)).collect();
        name = Some("Ollama");
    } else if listed.is_none() {
        return None;
    }
    let name = name.or(usual).unwrap_or("OpenAI-compatible server").to_string();
    Some(LocalServer { name, url: base, models })
}

async fn get_json(client: &quarry_net::HttpClient, url: &str) -> Option<Value> {
    let response = client.get(url).ok()?.send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    response.json::<Value>().await.ok()
}

/// Model ids of an OpenAI model list, in order; an answer that is not a model list gives none.
fn model_ids(list: &Value) -> Vec<String> {
    let Some(data) = list["data"].as_array() else { return Vec::new() };
    data.iter().filter_map(|m| m["id"].as_str().map(str::to_string)).collect()
}

/// The server's own name where its model list says who owns the models.
fn owner_name(list: &Value) -> Option<&'static str> {
    let owner = list["data"].as_array()?.first()?["owned_by"].as_str()?;
    match owner {
        "llamacpp" => Some("llama.cpp server"),
        "vllm" => Some("vLLM"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn model_lists_are_read_and_servers_named() {
        let llama = json!({"object": "list", "data": [{"id": "smollm2", "object": "model", "owned_by": "llamacpp"}]});
        assert_eq!(model_ids(&llama), ["smollm2"]);
        assert_eq!(owner_name(&llama), Some("llama.cpp server"));
        let ollama = json!({"data": [{"id": "qwen2.5:1.5b", "owned_by": "library"}, {"id": "llama3.2:3b", "owned_by": "library"}]});
        assert_eq!(model_ids(&ollama), ["qwen2.5:1.5b", "llama3.2:3b"]);
        assert_eq!(owner_name(&ollama), None, "named from its port");
        assert!(model_ids(&json!({"error": "not found"})).is_empty());
        assert!(model_ids(&json!("<html>")).is_empty());
    }

    #[tokio::test]
    async fn a_port_with_nothing_listening_is_left_out_at_once() {
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let started = std::time::Instant::now();
        let found = find_local_servers(&[free], PROBE_TIMEOUT).await;
        assert!(found.iter().all(|s| !s.url.contains(&format!(":{free}/"))), "{found:?}");
        assert!(started.elapsed() < PROBE_TIMEOUT * 2, "{:?}", started.elapsed());
    }
}
