//! Test doubles: a chat model that replays scripted outputs per step, and a retriever over a fixed set of
//! passages that scores by shared words and records every query.

use quarry_core::{
    ChatError, ChatModel, ChatRequest, ChatResponse, Passage, RetrievalError, Retriever, TokenSink, TokenUsage,
};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// What the scripted model does for one call.
pub enum Reply {
    Text(String),
    Fail(String),
    /// Never answers (until cancelled).
    Hang,
}

pub fn text(s: &str) -> Reply {
    Reply::Text(s.to_string())
}

/// Replays replies per step in order; a step without replies left fails with "unscripted".
#[derive(Default)]
pub struct ScriptedModel {
    script: Mutex<HashMap<String, VecDeque<Reply>>>,
    /// (step, user message) of every call, in order.
    pub calls: Mutex<Vec<(String, String)>>,
}

impl ScriptedModel {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn on(self, step: &str, reply: Reply) -> Self {
        self.script.lock().unwrap().entry(step.to_string()).or_default().push_back(reply);
        self
    }

    pub fn steps(&self) -> Vec<String> {
        self.calls.lock().unwrap().iter().map(|c| c.0.clone()).collect()
    }

    pub fn prompts_of(&self, step: &str) -> Vec<String> {
        self.calls.lock().unwrap().iter().filter(|c| c.0 == step).map(|c| c.1.clone()).collect()
    }
}

#[async_trait::async_trait]
impl ChatModel for ScriptedModel {
    fn describe(&self) -> String {
        "scripted".into()
    }

    async fn complete(&self, request: &ChatRequest, on_text: Option<TokenSink<'_>>) -> Result<ChatResponse, ChatError> {
        let user = request.messages.last().map(|m| m.content.clone()).unwrap_or_default();
        self.calls.lock().unwrap().push((request.step.clone(), user));
        let reply = self.script.lock().unwrap().get_mut(&request.step).and_then(|q| q.pop_front());
        match reply {
            Some(Reply::Text(t)) => {
                // Streamed word by word; when the sink asks to stop, the reply ends there, as a model's does.
                let mut text = String::new();
                for piece in t.split_inclusive(' ') {
                    text.push_str(piece);
                    if on_text.is_some_and(|sink| sink(piece).is_break()) {
                        break;
                    }
                }
                Ok(ChatResponse {
                    text,
                    usage: TokenUsage { prompt_tokens: 100, completion_tokens: 10, cached_prompt_tokens: 0 },
                    recorded_ms: None,
                })
            }
            Some(Reply::Fail(message)) => Err(ChatError::Unreachable { endpoint: "fake".into(), message }),
            Some(Reply::Hang) => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Err(ChatError::Model("woke up".into()))
            }
            None => Err(ChatError::Model(format!("unscripted step {}", request.step))),
        }
    }
}

/// Passages in memory; a passage matches a query by the words (3+ letters) they share.
pub struct MemoryRetriever {
    pub library: String,
    passages: Vec<Passage>,
    pub queries: Mutex<Vec<String>>,
    /// Searches whose query contains this text fail (an index that cannot be read).
    pub fail_when: Mutex<Option<String>>,
    in_flight: AtomicUsize,
    pub max_in_flight: AtomicUsize,
}

impl MemoryRetriever {
    /// One passage a text, each file's in the order given (its chunk index: its place among them).
    pub fn new(library: &str, texts: &[(&str, u32, &str)]) -> Self {
        let passages = texts
            .iter()
            .enumerate()
            .map(|(i, (file, page, text))| Passage {
                chunk_id: i as u64 + 1,
                chunk_index: Some(texts[..i].iter().filter(|(other, _, _)| other == file).count() as u32),
                library: library.to_string(),
                document_id: format!("doc-{file}"),
                path: format!("/docs/{file}"),
                page_start: Some(*page),
                page_end: Some(*page),
                sheet: None,
                heading_path: vec![],
                text: text.to_string(),
                context: String::new(),
                score: 0.0,
                ocr: false,
            })
            .collect();
        MemoryRetriever {
            library: library.into(),
            passages,
            queries: Mutex::default(),
            fail_when: Mutex::default(),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
        }
    }

    /// Gives every passage of `file` the document context line `context` (issuer, type, period).
    pub fn with_context(mut self, file: &str, context: &str) -> Self {
        for p in self.passages.iter_mut().filter(|p| p.path.ends_with(&format!("/{file}"))) {
            p.context = context.to_string();
        }
        self
    }

    pub fn queries(&self) -> Vec<String> {
        self.queries.lock().unwrap().clone()
    }
}

fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() >= 3).map(|w| w.to_lowercase()).collect()
}

#[async_trait::async_trait]
impl Retriever for MemoryRetriever {
    async fn retrieve(&self, query: &str, k: usize) -> Result<Vec<Passage>, RetrievalError> {
        self.queries.lock().unwrap().push(query.to_string());
        if self.fail_when.lock().unwrap().as_deref().is_some_and(|text| query.contains(text)) {
            return Err(RetrievalError(format!("cannot read the index for {query:?}")));
        }
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(30)).await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        let q = words(query);
        let mut scored: Vec<(usize, &Passage)> = self
            .passages
            .iter()
            .map(|p| (words(&p.text).iter().filter(|w| q.contains(w)).count(), p))
            .filter(|(s, _)| *s > 0)
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.chunk_id.cmp(&b.1.chunk_id)));
        Ok(scored.into_iter().take(k).map(|(s, p)| Passage { score: s as f32, ..p.clone() }).collect())
    }

    async fn passage_count(&self) -> Option<u64> {
        Some(self.passages.len() as u64)
    }

    /// The document's passages in the order they were given.
    async fn document_passages(&self, library: &str, document_id: &str) -> Result<Vec<Passage>, RetrievalError> {
        if library != self.library {
            return Ok(Vec::new());
        }
        Ok(self.passages.iter().filter(|p| p.document_id == document_id).cloned().collect())
    }
}

/// A small corpus about two companies, for multi-hop questions.
pub fn corpus(library: &str) -> MemoryRetriever {
    MemoryRetriever::new(
        library,
        &[
            ("acme.pdf", 1, "Acme Corporation was founded in 1952 by Jane Miller in Dayton."),
            ("acme.pdf", 2, "Acme Corporation revenue in 2023 was 4.2 billion dollars."),
            ("acme.pdf", 3, "Acme Corporation acquired Globex in 2019."),
            ("globex.pdf", 1, "Globex was founded in Springfield; its chief executive is Hank Scorpio."),
            ("globex.pdf", 2, "Globex revenue in 2023 was 1.1 billion dollars."),
            ("weather.md", 1, "The weather in Dayton was mild in 2023 with little revenue impact."),
            ("misc.md", 1, "Unrelated notes about gardening and tomatoes."),
        ],
    )
}
