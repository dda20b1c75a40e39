//! An OpenAI-compatible chat client: `POST {base_url}/chat/completions`, streamed as server-sent events
//! when the caller wants text as it arrives; retries with exponential backoff on 429, 5xx, timeouts and
//! connection failures (honouring `Retry-After`); JSON-schema `response_format`, dropped for the rest of
//! the session when a server refuses it.

use futures::StreamExt;
use quarry_core::{ChatError, ChatModel, ChatRequest, ChatResponse, TokenSink, TokenUsage};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Where and how to reach the server. `Debug` shows whether an API key is set, never the key.
#[derive(Clone)]
pub struct OpenAiConfig {
    /// Base URL including the API prefix, e.g. `http://127.0.0.1:11434/v1` (Ollama),
    /// `http://127.0.0.1:8080/v1` (llama.cpp server), `https://api.openai.com/v1`.
    pub base_url: String,
    /// Model name as the server knows it.
    pub model: String,
    /// Bearer token, if the server needs one.
    pub api_key: Option<String>,
    /// Longest a whole call may take, including the streamed answer (default 300 s).
    pub timeout: Duration,
    /// Longest wait for a connection (default 10 s).
    pub connect_timeout: Duration,
    /// Attempts after the first on 429 / 5xx / timeout / connection errors (default 4).
    pub max_retries: u32,
    /// First backoff; doubled per retry, capped at 30 s (default 500 ms).
    pub backoff: Duration,
}

impl std::fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set, not shown>"))
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_retries", &self.max_retries)
            .field("backoff", &self.backoff)
            .finish()
    }
}

impl OpenAiConfig {
    /// The endpoint `base_url` (its `/chat/completions` is called; a trailing `/` is dropped) serving
    /// `model`: no API key, 10 s to connect, 300 s a request, 4 retries 500 ms apart, doubling.
    pub fn new(base_url: &str, model: &str) -> Self {
        OpenAiConfig {
            base_url: base_url.trim_end_matches('/').to_string(),
            model: model.to_string(),
            api_key: None,
            timeout: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(10),
            max_retries: 4,
            backoff: Duration::from_millis(500),
        }
    }
}

/// A network refusal as a chat error: offline mode's refusal keeps its kind ([`ChatError::Offline`]);
/// anything else (a bad URL, a client that cannot be built) is configuration.
fn chat_error(error: quarry_net::NetError) -> ChatError {
    match error {
        quarry_net::NetError::Offline { .. } => ChatError::Offline(error.to_string()),
        other => ChatError::Config(other.to_string()),
    }
}

/// A chat model behind an OpenAI-compatible endpoint.
pub struct OpenAiChat {
    config: OpenAiConfig,
    client: quarry_net::HttpClient,
    /// Cleared when the server refuses `response_format` with a JSON schema.
    schema_supported: AtomicBool,
}

impl OpenAiChat {
    /// A client for `config`, reaching the network through `network` (in offline mode only a server on
    /// this computer). Errors, before any request: [`ChatError::Offline`] when offline mode refuses its
    /// host; [`ChatError::Config`] when the URL is not http(s), an API key would travel unencrypted (plain
    /// `http://` to a host other than this computer) or the HTTP client cannot be built.
    pub fn new(config: OpenAiConfig, network: &quarry_net::Network) -> Result<Self, ChatError> {
        if !(config.base_url.starts_with("http://") || config.base_url.starts_with("https://")) {
            return Err(ChatError::Config(format!(
                "LLM URL {:?} must start with http:// or https://",
                config.base_url
            )));
        }
        let url = network.check("the LLM server", &config.base_url).map_err(chat_error)?;
        if config.api_key.as_deref().is_some_and(|k| !k.is_empty())
            && url.scheme() == "http"
            && !quarry_net::is_local(&url)
        {
            return Err(ChatError::Config(format!(
                "LLM URL {}: an API key is not sent over plain http:// to another computer (anyone on the way could read it); use https://",
                shown_url(&config.base_url)
            )));
        }
        let options = quarry_net::ClientOptions {
            connect_timeout: config.connect_timeout,
            timeout: config.timeout,
            follow_redirects: true,
        };
        let client = network.client("the LLM server", options).map_err(chat_error)?;
        Ok(OpenAiChat { config, client, schema_supported: AtomicBool::new(true) })
    }

    fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.config.base_url)
    }

    fn body(&self, request: &ChatRequest, stream: bool, with_schema: bool) -> Value {
        let mut body = json!({
            "model": self.config.model,
            "messages": request.messages,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "stream": stream,
        });
        if stream {
            body["stream_options"] = json!({ "include_usage": true });
        }
        if let (Some(schema), true) = (&request.json_schema, with_schema) {
            body["response_format"] = json!({
                "type": "json_schema",
                "json_schema": { "name": request.step.replace(|c: char| !c.is_ascii_alphanumeric(), "_"), "schema": schema, "strict": true }
            });
        }
        body
    }

    /// Sends `body`, retrying what is worth retrying. Returns the successful response.
    async fn send(&self, body: &Value) -> Result<reqwest::Response, ChatError> {
        let endpoint = self.endpoint();
        let mut attempt = 0u32;
        loop {
            let mut builder = self.client.post(&endpoint).map_err(chat_error)?.json(body);
            if let Some(key) = &self.config.api_key {
                builder = builder.bearer_auth(key);
            }
            let (retry_after, error) = match builder.send().await {
                Ok(response) if response.status().is_success() => return Ok(response),
                Ok(response) => {
                    let status = response.status().as_u16();
                    let retry_after = response
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<f64>().ok())
                        .map(|s| Duration::from_secs_f64(s.clamp(0.0, 60.0)));
                    let message = response.text().await.unwrap_or_default();
                    let error =
                        ChatError::Http { endpoint: endpoint.clone(), status, message: server_message(&message) };
                    if !(status == 429 || status >= 500) {
                        return Err(error);
                    }
                    (retry_after, error)
                }
                Err(e) => {
                    (None, ChatError::Unreachable { endpoint: endpoint.clone(), message: describe_transport_error(&e) })
                }
            };
            if attempt >= self.config.max_retries {
                return Err(error);
            }
            let backoff = self.config.backoff.saturating_mul(1 << attempt.min(16)).min(Duration::from_secs(30));
            let wait = retry_after.unwrap_or(backoff);
            tracing::warn!(
                "{error}; retrying in {:.1} s ({}/{})",
                wait.as_secs_f64(),
                attempt + 1,
                self.config.max_retries
            );
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    async fn complete_once(
        &self,
        request: &ChatRequest,
        on_text: Option<TokenSink<'_>>,
        with_schema: bool,
    ) -> Result<ChatResponse, ChatError> {
        let endpoint = self.endpoint();
        let stream = on_text.is_some();
        let response = self.send(&self.body(request, stream, with_schema)).await?;
        if !stream {
            let value: Value = response.json().await.map_err(|e| ChatError::Unreachable {
                endpoint: endpoint.clone(),
                message: format!("reading the response: {e}"),
            })?;
            let text = value["choices"][0]["message"]["content"].as_str().unwrap_or_default().to_string();
            if value["choices"].as_array().is_none_or(|c| c.is_empty()) {
                return Err(ChatError::Model(format!(
                    "{endpoint}: no choices in the response: {}",
                    excerpt(&value.to_string())
                )));
            }
            let usage = usage_of(&value).unwrap_or_else(|| estimate(request, &text));
            return Ok(ChatResponse { text, usage, recorded_ms: None });
        }
        // Server-sent events: `data: {json}` lines, ending with `data: [DONE]`.
        let mut text = String::new();
        let mut usage = None;
        let mut pending = Vec::<u8>::new();
        let mut bytes = response.bytes_stream();
        'stream: while let Some(piece) = bytes.next().await {
            let piece = piece.map_err(|e| ChatError::Unreachable {
                endpoint: endpoint.clone(),
                message: describe_transport_error(&e),
            })?;
            pending.extend_from_slice(&piece);
            while let Some(newline) = pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = pending.drain(..=newline).collect();
                let line = String::from_utf8_lossy(&line);
                let Some(data) = line.trim().strip_prefix("data:") else { continue };
                let data = data.trim();
                if data == "[DONE]" {
                    break 'stream;
                }
                let Ok(event) = serde_json::from_str::<Value>(data) else { continue };
                if let Some(error) = event.get("error") {
                    return Err(ChatError::Model(format!("{endpoint}: {}", excerpt(&error.to_string()))));
                }
                if let Some(delta) = event["choices"][0]["delta"]["content"].as_str() {
                    if !delta.is_empty() {
                        text.push_str(delta);
                        if on_text.is_some_and(|sink| sink(delta).is_break()) {
                            // Dropping the connection ends the generation on the server.
                            break 'stream;
                        }
                    }
                }
                if let Some(u) = usage_of(&event) {
                    usage = Some(u);
                }
            }
        }
        let usage = usage.unwrap_or_else(|| estimate(request, &text));
        Ok(ChatResponse { text, usage, recorded_ms: None })
    }
}

#[async_trait::async_trait]
impl ChatModel for OpenAiChat {
    fn describe(&self) -> String {
        format!("{} at {}", self.config.model, shown_url(&self.config.base_url))
    }

    async fn complete(&self, request: &ChatRequest, on_text: Option<TokenSink<'_>>) -> Result<ChatResponse, ChatError> {
        let with_schema = request.json_schema.is_some() && self.schema_supported.load(Ordering::Relaxed);
        match self.complete_once(request, on_text, with_schema).await {
            // Servers without structured output answer 400/422 to `response_format`: ask again without it
            // (the agents parse leniently) and stop sending it.
            Err(ChatError::Http { status: 400 | 422, message, .. }) if with_schema => {
                tracing::info!(
                    "{} refused response_format ({message}); continuing without JSON schemas",
                    shown_url(&self.config.base_url)
                );
                self.schema_supported.store(false, Ordering::Relaxed);
                self.complete_once(request, on_text, false).await
            }
            other => other,
        }
    }
}

fn usage_of(value: &Value) -> Option<TokenUsage> {
    let usage = value.get("usage")?;
    Some(TokenUsage {
        prompt_tokens: usage["prompt_tokens"].as_u64()?,
        completion_tokens: usage["completion_tokens"].as_u64().unwrap_or(0),
        cached_prompt_tokens: usage["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap_or(0),
    })
}

/// When a server reports no usage: about four characters a token.
fn estimate(request: &ChatRequest, text: &str) -> TokenUsage {
    let prompt: usize = request.messages.iter().map(|m| m.content.chars().count()).sum();
    TokenUsage {
        prompt_tokens: (prompt / 4) as u64,
        completion_tokens: (text.chars().count() / 4) as u64,
        cached_prompt_tokens: 0,
    }
}

fn server_message(body: &str) -> String {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().or_else(|| v["error"].as_str()).map(str::to_string))
        .unwrap_or_else(|| excerpt(body))
}

/// `url` as Quarry shows it (the model's description in answers, reports and conversation files; log
/// lines): its user name and password, if the person put them in the URL, left out.
pub fn shown_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) if !parsed.username().is_empty() || parsed.password().is_some() => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.as_str().trim_end_matches('/').to_string()
        }
        _ => url.to_string(),
    }
}

fn describe_transport_error(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        format!("cannot connect ({e})")
    } else {
        e.to_string()
    }
}

fn excerpt(s: &str) -> String {
    let mut out: String = s.chars().take(300).collect();
    if s.chars().count() > 300 {
        out.push('…');
    }
    out
}
