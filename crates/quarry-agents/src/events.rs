//! What an agent reports while it works: one event per step, for the CLI's live trace and the app's
//! research panel. `quarry ask --json` prints them as JSON lines.

use quarry_core::TokenUsage;
use serde::Serialize;

/// A short view of a passage for traces.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PassageRef {
    pub library: String,
    pub chunk_id: u64,
    /// The citation form (`report.pdf, p. 3`).
    pub citation: String,
}

/// One step of a research run.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum AgentEvent {
    /// The router chose an agent (and libraries); `reason` says how (model, override, fallback).
    Routed { agent: String, libraries: Vec<String>, reason: String },
    /// A run started.
    Started { agent: String, question: String },
    /// Queries to run in `round` (1-based): the sub-queries of round 1, the gap queries of later rounds, the
    /// follow-up query of a chain step.
    Queries { round: usize, queries: Vec<String> },
    /// Passages retrieved for one query (`new` = not seen earlier in the run).
    Retrieved { round: usize, query: String, hits: usize, new: usize },
    /// The relevance filter's verdict on the new passages of a round.
    Judged { round: usize, kept: Vec<PassageRef>, rejected: Vec<PassageRef> },
    /// DeepSearch's reflection after `round`: the facts it took from the kept passages (short sentences,
    /// at most 4) and the gap queries it asks next (empty: it judged the passages enough).
    Reflected { round: usize, facts: Vec<String>, queries: Vec<String> },
    /// The agent ordered its `kept` passages by one more search, for `query` (the question followed by
    /// the facts DeepSearch's last reflection noted, or by ChainOfRAG's intermediate answers), before
    /// writing the answer.
    Ordered { query: String, kept: usize },
    /// An intermediate answer of a chain step, with the passages that support it.
    IntermediateAnswer { round: usize, query: String, answer: String, supporting: Vec<PassageRef> },
    /// Why the run stops searching (`no new relevant passages`, `no gaps left`, `enough to answer`,
    /// `max rounds`).
    Stopped { round: usize, reason: String },
    /// A structured step's output could not be used; the run went on with `fallback`.
    Degraded { step: String, problem: String, fallback: String },
    /// One model call finished.
    LlmCall { step: String, prompt_tokens: u64, completion_tokens: u64, seconds: f64 },
    /// Progress of a long-form report's section `index` of `count` (1-based; 0 for the introduction and
    /// conclusion): `planned`, `research`, `write`, `review`, `revise`, `done`.
    Section { index: usize, count: usize, title: String, stage: String },
    /// A piece of the final answer as it is generated.
    AnswerDelta { text: String },
    /// A query meant for an always-searched source (the web): `sent`, or withheld by the web query
    /// policy because the model wrote it (`crate::web_gate`).
    WebQuery { source: String, query: String, sent: bool },
    /// The run is done.
    Finished { llm_calls: usize, usage: TokenUsage, seconds: f64 },
}

/// Receives events; shared by concurrent steps.
pub type EventSink = std::sync::Arc<dyn Fn(AgentEvent) + Send + Sync>;

/// A sink that drops every event.
pub fn no_events() -> EventSink {
    std::sync::Arc::new(|_| {})
}
