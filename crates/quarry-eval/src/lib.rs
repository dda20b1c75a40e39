//! Quarry's measurements, apart from the product: the CLI's `quarry eval …` commands link this crate, the
//! desktop app does not.
//!
//! - [`retrieval`]: Recall@k, nDCG@10 and MRR@10 over BEIR-style sets (corpus.jsonl, queries.jsonl,
//!   qrels.tsv), the one implementation every eval command scores rankings with ([`retrieval::score_ranking`]).
//! - [`qa`]: an in-memory hybrid retriever over a set's passages for the agents, and SQuAD answer scoring
//!   (exact match, token F1; characters for Chinese); [`qa_run`]: the agents' run over a set's questions
//!   with those (`quarry eval qa`).
//! - [`answers`]: what `quarry eval answers` scores in an answer a person reads — the reference's figures
//!   stated, the answer-bearing passage's position, the question's language; [`answers_run`]: the run
//!   over a library's questions with those (`quarry eval answers`: retrieval only, router only, agents).
//! - [`library_run`]: document recall of a real library's searches on a set whose qrels name documents
//!   (`quarry eval library`).
//! - [`embedder_run`]: the embedder's speed beside the Python onnxruntime reference on the same texts,
//!   and the agreement of their vectors (`quarry eval embedder`).
//! - [`latency_run`]: query latency, ANN recall and memory of libraries of given sizes built from sets'
//!   passages, or of an existing library (`quarry eval latency`); the one module that links LanceDB,
//!   through quarry-store.
//! - [`qrels`]: whether a library's document is the one a set's qrels name.
//! - [`recorded`]: a chat model answering from a file of recorded calls, so an answers eval is scored
//!   again without the model after a change that leaves the model's prompts as they were.

pub mod answers;
pub mod answers_run;
pub mod embedder_run;
pub mod latency_run;
pub mod library_run;
pub mod qa;
pub mod qa_run;
pub mod qrels;
pub mod recorded;
pub mod retrieval;

/// Errors of loading or running an evaluation. Messages name the file and line involved.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// An evaluation set is missing a file or has a malformed line.
    #[error("evaluation set: {0}")]
    Set(String),
    /// Embedding or indexing the set's passages failed.
    #[error(transparent)]
    Index(#[from] quarry_index::IndexError),
    /// A search of the library failed.
    #[error(transparent)]
    Retrieval(#[from] quarry_core::RetrievalError),
    /// An agent step failed outright (the router's call).
    #[error(transparent)]
    Agent(#[from] quarry_agents::AgentError),
    /// Writing a run's trace failed.
    #[error("writing the trace: {0}")]
    Trace(String),
    /// The Python reference of an embedder run could not run or wrote something else than expected.
    #[error("embedder reference: {0}")]
    Reference(String),
    /// A library could not be built, opened or searched (the latency run).
    #[error(transparent)]
    Store(#[from] quarry_store::StoreError),
    /// A folder or file of a run could not be made or written; the message names it.
    #[error("{0}")]
    Io(String),
    /// Writing a run's tables failed.
    #[error("writing the results: {0}")]
    Output(#[from] std::io::Error),
    /// The embedding model's lock was poisoned by a panic in another thread.
    #[error("the embedding model's lock was poisoned by a panic")]
    Poisoned,
}
