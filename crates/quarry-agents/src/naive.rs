//! NaiveRAG: one hybrid search for the question (twice as deep as it reads, then the passages of the
//! document the question names first: [`crate::document_match`]), then an answer written from the
//! passages found — or, when several documents match the question alike, an answer per document
//! ([`crate::per_document`]).

use crate::answer::Answer;
use crate::events::AgentEvent;
use crate::prompts;
use crate::run::{AgentError, AnswerInputs, Run};

/// Retrieves `top_k` passages for `question` and answers from them (one model call).
pub async fn naive_rag(run: &Run, question: &str) -> Result<Answer, AgentError> {
    run.emit(AgentEvent::Started { agent: "naive".into(), question: question.into() });
    run.emit(AgentEvent::Queries { round: 1, queries: vec![question.to_string()] });
    // A wider search, then the passages of the document the question names first ([`document_match`]).
    let found = run.retrieve_top(question, run.config.top_k * crate::document_match::WIDENING).await?;
    let passages = match naive_reading(question, &found, &run.config) {
        NaiveReading::Decline(text) => {
            run.emit(AgentEvent::Retrieved { round: 1, query: question.into(), hits: found.len(), new: found.len() });
            run.emit(AgentEvent::AnswerDelta { text: text.clone() });
            let queries = vec![vec![question.to_string()]];
            return Ok(run.finish_answer("naive", question, text, Vec::new(), queries, found.len(), true));
        }
        NaiveReading::PerDocument(tied) => {
            let hits = tied.documents.iter().map(Vec::len).sum();
            run.emit(AgentEvent::Retrieved { round: 1, query: question.into(), hits, new: hits });
            let queries = vec![vec![question.to_string()]];
            return crate::per_document::answer_per_document(run, "naive", question, tied, queries, hits, false).await;
        }
        NaiveReading::Passages(passages) => passages,
    };
    run.emit(AgentEvent::Retrieved { round: 1, query: question.into(), hits: passages.len(), new: passages.len() });
    let retrieved = passages.len();
    let named = named_document(question, &passages);
    // The named filing's other candidates, search order: the quote may come from them, and from the rest
    // of that filing when the answer states no amount ([`Run::write_answer_quoting`]).
    let candidates: Vec<quarry_core::Passage> = match named {
        Some(named) => found
            .into_iter()
            .filter(|p| p.same_document(named) && !passages.iter().any(|r| r.key() == p.key()))
            .collect(),
        None => Vec::new(),
    };
    let named = named.cloned();
    let queries = vec![vec![question.to_string()]];
    let inputs =
        AnswerInputs { agent: "naive", prompt: prompts::ANSWER, question, passages, extra: &[], queries, retrieved };
    run.write_answer_quoting(inputs, &candidates, named.as_ref()).await
}

/// What NaiveRAG does with its search, before any model call ([`naive_reading`]).
#[derive(Debug, Clone, PartialEq)]
pub enum NaiveReading {
    /// The library holds nothing on the question — a subject no passage found is about, or a quarter no
    /// document is for ([`crate::document_match::decline_without_model`]): this message, no model call (a
    /// small model given other passages answers with their figures).
    Decline(String),
    /// Several documents match alike: one answer per document ([`crate::document_match::tied_documents`],
    /// [`crate::per_document`]).
    PerDocument(crate::document_match::TiedDocuments),
    /// One prompt of these passages, at most `top_k`, the named document's first
    /// ([`crate::document_match::select`]).
    Passages(Vec<quarry_core::Passage>),
}

/// What NaiveRAG reads of `found`, its search for `question` ([`crate::document_match::WIDENING`] ×
/// `config.top_k` deep, best first). [`naive_rag`] acts on it, and `quarry eval answers
/// --retrieval-only` scores it, so the two cannot drift apart.
pub fn naive_reading(question: &str, found: &[quarry_core::Passage], config: &crate::AgentConfig) -> NaiveReading {
    if let Some(text) = crate::document_match::decline_without_model(question, found) {
        return NaiveReading::Decline(text);
    }
    let tied = crate::document_match::tied_documents(
        question,
        found.to_vec(),
        config.max_documents_per_answer,
        config.top_k,
        config.passages_per_document,
    );
    match tied {
        Some(tied) => NaiveReading::PerDocument(tied),
        None => NaiveReading::Passages(crate::document_match::select(question, found.to_vec(), config.top_k)),
    }
}

/// The passage whose document `question` names among those read (`read`, best first): the first, when
/// its context line shares a word with the question ([`crate::document_match::context_overlap`]); none
/// named, `None`. Its document's unread passages are where the quote under the answer may find the table
/// row the search did not rank (an "inventory levels" question's balance-sheet line: [`crate::genre::financial::key_quote`]).
fn named_document<'a>(question: &str, read: &'a [quarry_core::Passage]) -> Option<&'a quarry_core::Passage> {
    read.first().filter(|p| crate::document_match::context_overlap(question, p) > 0)
}
