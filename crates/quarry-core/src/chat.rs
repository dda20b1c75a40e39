//! The language-model interface the agents are written against: a chat completion with optional
//! JSON-schema constrained output and token streaming. Backends (OpenAI-compatible HTTP, embedded GGUF)
//! live in their own crates; tests use a scripted fake.

use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The instructions (a prompt's system part).
    System,
    /// The person's or the agent's request.
    User,
    /// The model's reply.
    Assistant,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Who wrote it.
    pub role: Role,
    /// Its text.
    pub content: String,
}

impl ChatMessage {
    /// A system message (instructions).
    pub fn system(content: impl Into<String>) -> Self {
        ChatMessage { role: Role::System, content: content.into() }
    }
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        ChatMessage { role: Role::User, content: content.into() }
    }
}

/// A chat completion request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatRequest {
    /// What the call is for (`sub_queries`, `relevance`, `answer`, …): shown in traces, used by test fakes.
    pub step: String,
    /// The conversation so far, system message first.
    pub messages: Vec<ChatMessage>,
    /// Most tokens to generate.
    pub max_tokens: u32,
    /// Sampling temperature; 0 means greedy.
    pub temperature: f32,
    /// When set, the output must be JSON matching this schema (JSON Schema draft 7 subset: object, array,
    /// string, integer, boolean, enum). Backends enforce it where they can (`response_format` over HTTP, a
    /// grammar in llama.cpp); callers still parse leniently.
    pub json_schema: Option<serde_json::Value>,
}

impl ChatRequest {
    /// A request for `step` with a system and a user message, greedy sampling.
    pub fn new(step: &str, system: impl Into<String>, user: impl Into<String>, max_tokens: u32) -> Self {
        ChatRequest {
            step: step.to_string(),
            messages: vec![ChatMessage::system(system), ChatMessage::user(user)],
            max_tokens,
            temperature: 0.0,
            json_schema: None,
        }
    }

    /// The same request, constrained to JSON matching `schema`.
    pub fn with_schema(mut self, schema: serde_json::Value) -> Self {
        self.json_schema = Some(schema);
        self
    }
}

/// Tokens a call consumed, as the backend counted them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Tokens of the prompt (the messages as the backend's chat template laid them out).
    pub prompt_tokens: u64,
    /// Tokens generated.
    pub completion_tokens: u64,
    /// Of `prompt_tokens`, those the backend did not process again because its cache held them from an
    /// earlier call (the embedded model's shared prompt prefix; OpenAI's `cached_tokens`).
    #[serde(default)]
    pub cached_prompt_tokens: u64,
}

impl TokenUsage {
    /// Prompt and generated tokens together.
    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }

    /// Adds `other`'s counts to these (a run's total over its calls).
    pub fn add(&mut self, other: TokenUsage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cached_prompt_tokens += other.cached_prompt_tokens;
    }
}

/// A finished completion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChatResponse {
    /// The generated text.
    pub text: String,
    /// What the call consumed.
    pub usage: TokenUsage,
    /// For a response answered from a recording of earlier calls: how long the recorded call took, in
    /// milliseconds. A run's clock counts that instead of the replay's own instant, so a search under a
    /// time budget stops in a replay where it stopped when recorded. `None` for a call a model ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded_ms: Option<u64>,
}

/// Why a completion failed. Messages name the endpoint or model file.
#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    /// The backend is misconfigured (a bad URL, an API key that would travel unencrypted, a build for
    /// another CPU).
    #[error("{0}")]
    Config(String),
    /// The model file is missing, unreadable or not a model the backend loads (a file that is not GGUF).
    #[error("{0}")]
    ModelFile(String),
    /// Offline mode refused the server's address; no request was sent.
    #[error("{0}")]
    Offline(String),
    /// The server answered with an error status after the retries.
    #[error("{endpoint}: HTTP {status}: {message}")]
    Http {
        /// The URL called.
        endpoint: String,
        /// The HTTP status code.
        status: u16,
        /// The server's error message, or the start of its body.
        message: String,
    },
    /// No answer in time, or the connection failed, after the retries.
    #[error("{endpoint}: {message}")]
    Unreachable {
        /// The URL called.
        endpoint: String,
        /// What failed (timeout, refused connection, DNS).
        message: String,
    },
    /// The model itself failed (decode error, context overflow that could not be truncated, …).
    #[error("model: {0}")]
    Model(String),
    /// The caller cancelled.
    #[error("cancelled")]
    Cancelled,
}

impl crate::Coded for ChatError {
    fn code(&self) -> crate::ErrorCode {
        use crate::ErrorCode;
        match self {
            ChatError::ModelFile(_) => ErrorCode::ModelMissing,
            ChatError::Offline(_) => ErrorCode::Offline,
            ChatError::Http { .. } | ChatError::Unreachable { .. } => ErrorCode::Unreachable,
            ChatError::Cancelled => ErrorCode::Cancelled,
            ChatError::Config(_) | ChatError::Model(_) => ErrorCode::Other,
        }
    }
}

/// Receives generated text as it arrives (pieces of any length, in order), and says whether the
/// generation goes on: `ControlFlow::Break(())` ends it after that piece — the model generates at most
/// the token in progress more, and the response holds the text streamed so far (the agents stop a
/// model caught in a loop of lines this way: `quarry_agents::answer::loop_runs_on`).
pub type TokenSink<'a> = &'a (dyn Fn(&str) -> std::ops::ControlFlow<()> + Send + Sync);

/// A chat model: one completion at a time per call; implementations are shared across tasks.
#[async_trait::async_trait]
pub trait ChatModel: Send + Sync {
    /// A short description for traces and reports: backend and model (`llama.cpp smollm2-135m…`).
    fn describe(&self) -> String;

    /// Runs `request` to completion. With `on_text`, generated text is streamed to it as it arrives; the
    /// response still carries the whole text — up to the piece after which `on_text` asked to stop.
    ///
    /// Errors: see [`ChatError`]. Dropping the future cancels the call.
    async fn complete(&self, request: &ChatRequest, on_text: Option<TokenSink<'_>>) -> Result<ChatResponse, ChatError>;
}
