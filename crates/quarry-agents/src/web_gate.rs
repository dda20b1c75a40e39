//! What goes to a web search provider. An agent writes queries of its own — DeepSearch's sub-queries
//! and gap queries, ChainOfRAG's follow-ups, "question + facts" — and those are often built from
//! passages of the person's documents. Sent to a web provider (a hosted API, or a SearXNG that forwards
//! them to outside engines), they would carry document text off the machine unannounced. So an
//! always-searched source (the web) sits behind a [`QueryGate`]: with [`WebQueryPolicy::Question`], the
//! default, it receives exactly the question the person typed and nothing the model wrote; with
//! [`WebQueryPolicy::Ask`] each query the model wrote is put to the person ([`QueryApprover`], the app's
//! "Send / Don't send") and sent only when they approve it (without an approver — the CLI — it is
//! withheld); with [`WebQueryPolicy::All`] it receives every query. Either way every query meant for it is recorded as
//! sent or withheld ([`WebQuery`]), shown in the trace as it happens and listed with the answer and in
//! the report.

use crate::events::{AgentEvent, EventSink};
use quarry_core::{Passage, RetrievalError, Retriever};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

/// Which queries an always-searched source (the web) receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WebQueryPolicy {
    /// Only the question as the person typed it (the default).
    #[default]
    Question,
    /// The question, and each query the model wrote once the person approves it.
    Ask,
    /// Every query the agent runs, including those the model wrote from document passages.
    All,
}

impl std::str::FromStr for WebQueryPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "question" => Ok(WebQueryPolicy::Question),
            "ask" => Ok(WebQueryPolicy::Ask),
            "all" => Ok(WebQueryPolicy::All),
            other => Err(format!("web queries {other:?}: expected question, ask or all")),
        }
    }
}

impl std::fmt::Display for WebQueryPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WebQueryPolicy::Question => "question",
            WebQueryPolicy::Ask => "ask",
            WebQueryPolicy::All => "all",
        })
    }
}

/// One query meant for an always-searched source: whether it was sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebQuery {
    /// The source's name (`web`).
    pub source: String,
    /// The query.
    pub query: String,
    /// False: withheld by the policy (written by the model, not typed by the person).
    pub sent: bool,
}

/// The queries of one run, in the order they were first meant for a gated source.
pub type WebQueryLog = Arc<Mutex<Vec<WebQuery>>>;

/// Puts a query the model wrote to the person under [`WebQueryPolicy::Ask`]: called with the source's
/// name and the query, it resolves to true when the person approves sending it. The app shows the query
/// with "Send" and "Don't send"; an unanswered prompt should resolve to false after a while.
#[derive(Clone)]
pub struct QueryApprover(pub Arc<dyn Fn(String, String) -> futures::future::BoxFuture<'static, bool> + Send + Sync>);

impl std::fmt::Debug for QueryApprover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("QueryApprover")
    }
}

/// A retriever that passes on only the queries its [`WebQueryPolicy`] allows (see the module docs);
/// a withheld query returns no passages. Each distinct query is recorded once in the log and reported
/// as an [`AgentEvent::WebQuery`].
pub struct QueryGate {
    inner: Arc<dyn Retriever>,
    source: String,
    question: String,
    policy: WebQueryPolicy,
    approver: Option<QueryApprover>,
    /// False: the question came from another program's model (an MCP host) and passes only as a
    /// model-written query would.
    question_typed_by_person: bool,
    log: WebQueryLog,
    events: EventSink,
}

impl QueryGate {
    /// `inner` (the web retriever, named `source`) behind `policy`: the person's `question` always
    /// passes; other queries pass or are withheld as the policy says, each recorded in `log` and
    /// reported to `events`.
    pub fn new(
        inner: Arc<dyn Retriever>,
        source: &str,
        question: &str,
        policy: WebQueryPolicy,
        log: WebQueryLog,
        events: EventSink,
    ) -> Self {
        QueryGate {
            inner,
            source: source.to_string(),
            question: question.to_string(),
            policy,
            approver: None,
            question_typed_by_person: true,
            log,
            events,
        }
    }

    /// Under [`WebQueryPolicy::Ask`], the model's queries are put to `approver`.
    pub fn with_approver(mut self, approver: Option<QueryApprover>) -> Self {
        self.approver = approver;
        self
    }

    /// `false`: the question was written by another program's model (an MCP host's), not typed by a
    /// person, so it is not exempt from the policy: under `Question` it is withheld, under `Ask` put to
    /// the approver (none in `quarry mcp`: withheld), under `All` sent.
    pub fn with_question_typed_by_person(mut self, typed: bool) -> Self {
        self.question_typed_by_person = typed;
        self
    }

    /// Whether `query` may go out without asking: always under `All`; otherwise only the question a
    /// person typed (compared with spacing normalised).
    pub fn allows(&self, query: &str) -> bool {
        let normal = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        self.policy == WebQueryPolicy::All || (self.question_typed_by_person && normal(query) == normal(&self.question))
    }

    /// Whether `query` goes out: [`QueryGate::allows`], else under `Ask` the approver's answer (no
    /// approver: withheld). A query already decided keeps its decision, so the person is asked once.
    async fn decide(&self, query: &str) -> bool {
        if self.allows(query) {
            return true;
        }
        let earlier = {
            let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
            log.iter().find(|q| q.source == self.source && q.query == query).map(|q| q.sent)
        };
        if let Some(sent) = earlier {
            return sent;
        }
        match (&self.policy, &self.approver) {
            (WebQueryPolicy::Ask, Some(approver)) => (approver.0)(self.source.clone(), query.to_string()).await,
            _ => false,
        }
    }
}

#[async_trait::async_trait]
impl Retriever for QueryGate {
    async fn retrieve(&self, query: &str, k: usize) -> Result<Vec<Passage>, RetrievalError> {
        let sent = self.decide(query).await;
        let first_time = {
            let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
            let seen = log.iter().any(|q| q.source == self.source && q.query == query);
            if !seen {
                log.push(WebQuery { source: self.source.clone(), query: query.to_string(), sent });
            }
            !seen
        };
        if first_time {
            (self.events)(AgentEvent::WebQuery { source: self.source.clone(), query: query.to_string(), sent });
        }
        if sent {
            self.inner.retrieve(query, k).await
        } else {
            Ok(Vec::new())
        }
    }
}
