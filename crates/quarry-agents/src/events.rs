//! What an agent reports while it works: one event per step, for the CLI's live trace and the app's
//! research panel. `quarry ask --json` prints them as JSON lines.

use quarry_core::TokenUsage;
use serde::Serialize;

/// A short view of a passage for traces.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PassageRef {
    /// The library it came from.
    pub library: String,
    /// The chunk's id in that library.
    pub chunk_id: u64,
    /// The citation form (`report.pdf, p. 3`).
    pub citation: String,
}

/// One step of a research run.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum AgentEvent {
    /// The router chose an agent (and libraries); `reason` says how (model, override, fallback).
    Routed {
        /// `naive`, `deep` or `chain`.
        agent: String,
        /// The libraries searched.
        libraries: Vec<String>,
        /// How the choice was made.
        reason: String,
    },
    /// A run started.
    Started {
        /// The agent running.
        agent: String,
        /// The question as asked.
        question: String,
    },
    /// Queries to run in `round` (1-based): the sub-queries of round 1, the gap queries of later rounds, the
    /// follow-up query of a chain step.
    Queries {
        /// The round, 1-based.
        round: usize,
        /// The queries.
        queries: Vec<String>,
    },
    /// Passages retrieved for one query (`new` = not seen earlier in the run).
    Retrieved {
        /// The round, 1-based.
        round: usize,
        /// The query searched.
        query: String,
        /// Passages found.
        hits: usize,
        /// Of those, passages not seen earlier in the run.
        new: usize,
    },
    /// The relevance filter's verdict on the new passages of a round.
    Judged {
        /// The round, 1-based.
        round: usize,
        /// Passages judged relevant.
        kept: Vec<PassageRef>,
        /// Passages judged not relevant.
        rejected: Vec<PassageRef>,
    },
    /// DeepSearch's reflection after `round`: the facts it took from the kept passages (short sentences,
    /// at most 4) and the gap queries it asks next (empty: it judged the passages enough).
    Reflected {
        /// The round reflected on, 1-based.
        round: usize,
        /// The facts noted.
        facts: Vec<String>,
        /// The gap queries for the next round.
        queries: Vec<String>,
    },
    /// The agent ordered its `kept` passages by one more search, for `query` (the question followed by
    /// the facts DeepSearch's last reflection noted, or by ChainOfRAG's intermediate answers), before
    /// writing the answer.
    Ordered {
        /// The query the passages were ordered by.
        query: String,
        /// Passages ordered.
        kept: usize,
    },
    /// An intermediate answer of a chain step, with the passages that support it.
    IntermediateAnswer {
        /// The chain step, 1-based.
        round: usize,
        /// The step's follow-up query.
        query: String,
        /// Its answer.
        answer: String,
        /// The passages it rests on.
        supporting: Vec<PassageRef>,
    },
    /// Why the run stops searching (`no new relevant passages`, `no gaps left`, `enough to answer`,
    /// `max rounds`).
    Stopped {
        /// The last round, 1-based.
        round: usize,
        /// Why.
        reason: String,
    },
    /// A structured step's output could not be used; the run went on with `fallback`.
    Degraded {
        /// The step (`sub_queries`, `reflection`, …).
        step: String,
        /// What was wrong with the model's output.
        problem: String,
        /// What the run did instead.
        fallback: String,
    },
    /// One model call finished.
    LlmCall {
        /// The step it was for.
        step: String,
        /// Tokens of its prompt.
        prompt_tokens: u64,
        /// Tokens generated.
        completion_tokens: u64,
        /// Its wall-clock seconds.
        seconds: f64,
    },
    /// Progress of a long-form report's section `index` of `count` (1-based; 0 for the introduction and
    /// conclusion): `planned`, `research`, `write`, `review`, `revise`, `done`.
    Section {
        /// The section, 1-based (0: introduction or conclusion).
        index: usize,
        /// Sections in the plan.
        count: usize,
        /// The section's title.
        title: String,
        /// The stage it reached.
        stage: String,
    },
    /// A piece of the final answer as it is generated.
    AnswerDelta {
        /// The new text.
        text: String,
    },
    /// A query meant for an always-searched source (the web): `sent`, or withheld by the web query
    /// policy because the model wrote it (`crate::web_gate`).
    WebQuery {
        /// The source's name.
        source: String,
        /// The query.
        query: String,
        /// Whether it was sent.
        sent: bool,
    },
    /// The run is done.
    Finished {
        /// Model calls made.
        llm_calls: usize,
        /// Tokens they consumed.
        usage: TokenUsage,
        /// Wall-clock seconds of the run.
        seconds: f64,
    },
}

/// Receives events; shared by concurrent steps.
pub type EventSink = std::sync::Arc<dyn Fn(AgentEvent) + Send + Sync>;

/// A sink that drops every event.
pub fn no_events() -> EventSink {
    std::sync::Arc::new(|_| {})
}
