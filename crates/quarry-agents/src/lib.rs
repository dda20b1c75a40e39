//! Quarry's research agents, after Zilliz's deep-searcher: [`naive_rag`], [`deep_search()`],
//! [`chain_of_rag()`] and a [`route`]r that picks one, all written against the [`ChatModel`] and
//! [`Retriever`] traits of `quarry-core` — no LanceDB, no llama.cpp — so their control flow is tested with
//! a scripted model in seconds.
//!
//! Every step reports an [`AgentEvent`]; structured steps (sub-queries, relevance, reflection, routing,
//! follow-ups) ask for a JSON schema, read the output leniently ([`structured`]) and degrade — never fail —
//! when it is unusable. A [`CancellationToken`] stops a run within the model call in progress. Prompts are
//! files in `prompts/` ([`prompts`]).
//!
//! Entry point: [`ask`].

pub mod answer;
mod chain_of_rag;
pub mod claims;
pub mod conversation;
pub mod copied;
mod deep_search;
pub mod document_match;
pub mod document_plan;
pub mod events;
pub mod figures;
mod fused;
pub mod genre;
mod naive;
pub mod per_document;
pub mod period;
pub mod prompts;
pub mod quarter;
pub mod report;
mod research;
mod router;
mod run;
pub mod structured;
pub mod text;
pub mod web_gate;

pub use answer::{Answer, Citation};
pub use chain_of_rag::chain_of_rag;
pub use conversation::{Conversation, ConversationError, ConversationStore, ConversationSummary, Turn};
pub use deep_search::deep_search;
pub use deep_search::{deep_search_evidence, Evidence};
pub use events::{no_events, AgentEvent, EventSink, PassageRef};
pub use fused::FusedRetriever;
pub use genre::{Genre, GenreKind};
pub use naive::{naive_rag, naive_reading, NaiveReading};
pub use quarry_core::rank_fusion::RankFusion;
pub use report::{render_report, ReportOptions};
pub use research::{
    render_research_report, write_research_report, ReportSection, ResearchConfig, ResearchReport, NOTHING_NEW,
    REPORT_ROUNDS, REPORT_TOP_K,
};
pub use router::{multi_hop_form, route, LibraryInfo, Route, MULTI_HOP_REASON};
pub use run::{search_budget, AgentConfig, AgentError, AnswerInputs, Run, DEFAULT_SEARCH_SECONDS};
pub use tokio_util::sync::CancellationToken;

use quarry_core::{ChatModel, Retriever};
use std::sync::Arc;

/// The research agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentKind {
    /// NaiveRAG: one search, one answer call (per document when several match alike).
    Naive,
    /// DeepSearch: sub-queries, a relevance filter and reflection over rounds.
    Deep,
    /// ChainOfRAG: a chain of follow-up queries, each answered before the next.
    Chain,
}

impl AgentKind {
    /// `naive`, `deep` or `chain`.
    pub fn name(self) -> &'static str {
        match self {
            AgentKind::Naive => "naive",
            AgentKind::Deep => "deep",
            AgentKind::Chain => "chain",
        }
    }
}

impl std::str::FromStr for AgentKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "naive" => Ok(AgentKind::Naive),
            "deep" => Ok(AgentKind::Deep),
            "chain" => Ok(AgentKind::Chain),
            other => Err(format!("unknown agent {other:?} (auto, naive, deep or chain)")),
        }
    }
}

/// A library an agent can search: what the router is told about it, and its retriever.
#[derive(Clone)]
pub struct SearchableLibrary {
    /// Its name and description, for the router.
    pub info: LibraryInfo,
    /// How to search it.
    pub retriever: Arc<dyn Retriever>,
    /// Searched whichever libraries the router picks (the web, when the person turned it on); the router
    /// is not asked about it.
    pub always: bool,
}

/// Answers `question` over `libraries` with `agent`, or with the agent (and libraries) the router picks
/// when `agent` is `None`. Events go to `events`; `cancel` stops the run.
///
/// Libraries that hold no passages are left out before the router is asked (see [`skip_empty`]).
///
/// Errors: no library given; every library empty ([`AgentError::NothingToSearch`], before any model
/// call); cancellation; a retrieval failure; the model failing to write the answer (structured steps
/// degrade instead).
pub async fn ask(
    question: &str,
    agent: Option<AgentKind>,
    model: Arc<dyn ChatModel>,
    libraries: &[SearchableLibrary],
    config: AgentConfig,
    events: EventSink,
    cancel: CancellationToken,
) -> Result<Answer, AgentError> {
    let web_log = web_gate::WebQueryLog::default();
    let gated = skip_empty(gate_always_sources(libraries, question, &config, &web_log, &events)).await?;
    let libraries = &gated[..];
    let mut run = run_over_all(libraries, model, config, events, cancel)?;
    let mut searched: Vec<String> = libraries.iter().map(|l| l.info.name.clone()).collect();
    let agent = match agent {
        Some(agent) => {
            run.emit(AgentEvent::Routed {
                agent: agent.name().into(),
                libraries: searched.clone(),
                reason: "chosen by the user".into(),
            });
            agent
        }
        None => {
            let infos: Vec<LibraryInfo> = libraries.iter().filter(|l| !l.always).map(|l| l.info.clone()).collect();
            let route = if infos.is_empty() {
                // Only always-searched sources: no library to pick; DeepSearch, the router's own fallback.
                run.emit(AgentEvent::Routed {
                    agent: "deep".into(),
                    libraries: searched.clone(),
                    reason: "no library to choose from".into(),
                });
                Route { agent: AgentKind::Deep, libraries: Vec::new(), reason: String::new() }
            } else {
                route(&run, question, &infos).await?
            };
            let picked = |l: &SearchableLibrary| l.always || route.libraries.contains(&l.info.name);
            let chosen: Vec<Arc<dyn Retriever>> =
                libraries.iter().filter(|l| picked(l)).map(|l| Arc::clone(&l.retriever)).collect();
            run.retriever = FusedRetriever::over(chosen);
            searched = libraries.iter().filter(|l| picked(l)).map(|l| l.info.name.clone()).collect();
            route.agent
        }
    };
    let mut answer = match agent {
        AgentKind::Naive => naive_rag(&run, question).await,
        AgentKind::Deep => deep_search(&run, question).await,
        AgentKind::Chain => chain_of_rag(&run, question).await,
    }?;
    answer.libraries = searched;
    answer.web_queries = web_log.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Ok(answer)
}

/// `libraries` without those whose retriever holds no passages ([`Retriever::passage_count`] is
/// `Some(0)`: a library no document has been read into yet), so the router never picks one. Sources that
/// cannot tell (the web) are kept.
///
/// Errors: [`AgentError::NothingToSearch`] naming the empty libraries when no source is left.
async fn skip_empty(libraries: Vec<SearchableLibrary>) -> Result<Vec<SearchableLibrary>, AgentError> {
    let (mut kept, mut empty) = (Vec::new(), Vec::new());
    for library in libraries {
        if library.retriever.passage_count().await == Some(0) {
            empty.push(library.info.name.clone());
        } else {
            kept.push(library);
        }
    }
    if kept.is_empty() && !empty.is_empty() {
        return Err(AgentError::NothingToSearch(empty));
    }
    Ok(kept)
}

/// `libraries` with each always-searched source (the web) behind a [`web_gate::QueryGate`] for
/// `question` under `config`'s web query policy and approver, recording into `log`.
fn gate_always_sources(
    libraries: &[SearchableLibrary],
    question: &str,
    config: &AgentConfig,
    log: &web_gate::WebQueryLog,
    events: &EventSink,
) -> Vec<SearchableLibrary> {
    libraries
        .iter()
        .map(|l| {
            if !l.always {
                return l.clone();
            }
            let gate = web_gate::QueryGate::new(
                Arc::clone(&l.retriever),
                &l.info.name,
                question,
                config.web_queries,
                Arc::clone(log),
                Arc::clone(events),
            )
            .with_approver(config.web_query_approver.clone())
            .with_question_typed_by_person(config.question_typed_by_person);
            SearchableLibrary { info: l.info.clone(), retriever: Arc::new(gate), always: true }
        })
        .collect()
}

/// Writes a long-form research report on `topic` over every library in `libraries` (see
/// [`write_research_report`]); events go to `events`, `cancel` stops it.
///
/// Errors: no library given; cancellation; retrieval failures; the model failing on a writing step.
pub async fn research_report(
    topic: &str,
    model: Arc<dyn ChatModel>,
    libraries: &[SearchableLibrary],
    config: AgentConfig,
    research: ResearchConfig,
    events: EventSink,
    cancel: CancellationToken,
) -> Result<ResearchReport, AgentError> {
    let web_log = web_gate::WebQueryLog::default();
    let gated = skip_empty(gate_always_sources(libraries, topic, &config, &web_log, &events)).await?;
    let run = run_over_all(&gated, model, config, events, cancel)?;
    let mut report = write_research_report(&run, topic, research).await?;
    report.libraries = gated.iter().map(|l| l.info.name.clone()).collect();
    Ok(report)
}

/// A run whose retriever searches every one of `libraries` (fused). Errors: no library given.
fn run_over_all(
    libraries: &[SearchableLibrary],
    model: Arc<dyn ChatModel>,
    config: AgentConfig,
    events: EventSink,
    cancel: CancellationToken,
) -> Result<Run, AgentError> {
    if libraries.is_empty() {
        return Err(AgentError::Retrieval("no library to search".into()));
    }
    let all: Arc<dyn Retriever> = FusedRetriever::over(libraries.iter().map(|l| Arc::clone(&l.retriever)).collect());
    Ok(Run::new(model, all, config, events, cancel))
}
