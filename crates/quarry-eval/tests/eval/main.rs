//! Integration tests of quarry-eval on the shared benchmark sets with the real embedding models (one test
//! binary per crate).
#![allow(clippy::unwrap_used)] // tests: a failed unwrap is the test failing

mod answers_run;
mod embedder_run;
mod qa_run;
mod retrieval;

use quarry_core::chat::{ChatError, ChatRequest, ChatResponse, TokenSink, TokenUsage};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A chat model whose reply `reply` chooses from the request, streamed when asked; counts its calls.
pub struct ScriptedModel {
    reply: fn(&ChatRequest) -> &'static str,
    calls: AtomicUsize,
}

impl ScriptedModel {
    /// A model answering `reply(request)` to every request.
    pub fn new(reply: fn(&ChatRequest) -> &'static str) -> Self {
        ScriptedModel { reply, calls: AtomicUsize::new(0) }
    }

    /// Calls so far.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::Relaxed)
    }
}

#[async_trait::async_trait]
impl quarry_core::ChatModel for ScriptedModel {
    fn describe(&self) -> String {
        "scripted".into()
    }

    async fn complete(&self, request: &ChatRequest, on_text: Option<TokenSink<'_>>) -> Result<ChatResponse, ChatError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let text = (self.reply)(request).to_string();
        if let Some(sink) = on_text {
            let _ = sink(&text);
        }
        Ok(ChatResponse {
            text,
            usage: TokenUsage { prompt_tokens: 10, completion_tokens: 2, ..TokenUsage::default() },
            recorded_ms: None,
        })
    }
}
