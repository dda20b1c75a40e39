//! DeepSearch's plan for a question that several documents match alike: one sub-question per
//! document, searched and answered within that document with its citations, then a synthesis across
//! the documents' answers.
//!
//! "How has Intel's total net sales fluctuated over historical periods?" over four quarterly filings is
//! a question about each filing in turn, then about all of them together. DeepSearch's free
//! decomposition (sub-queries over the whole library, relevance judging, one answer from every kept
//! passage) lost the periods: on multi-document sec-10-q questions 1–20 it stated 0.30 of the reference
//! figures against 0.50 for NaiveRAG's answer per document (docs/evaluation/results.md). The plan here
//! is filled without a model call, from the search for the question
//! ([`crate::document_match::tied_documents`]):
//!
//! 1. **A sub-question per document**: the question with the document's period (or, when its context
//!    line names none, its file name) — "… (quarterly period ended October 1, 2022)" — searched over the
//!    library as deep as NaiveRAG searches ([`crate::document_match::WIDENING`] × `top_k`). Of its hits,
//!    those of that document are the document's evidence, after the document's best passage of the
//!    question's own search: each document reads
//!    [`crate::AgentConfig::deep_passages_per_document`] passages (default 3; NaiveRAG's share is 2),
//!    chosen for its own period rather than by a search that four filings split among them.
//! 2. **A cited answer per document** ([`crate::per_document::answer_per_document`], the prompt NaiveRAG's
//!    per-document answer uses), with its quote under the line when its words leave the document's figures
//!    out; the passages are numbered across the documents, so every line cites the final answer's numbers.
//! 3. **A synthesis**: one call reads the documents' lines and writes two or three sentences across them,
//!    citing the lines' numbers (`prompts/synthesis.md`); the claim check then reads them against the
//!    passages they cite like any other sentence.
//!
//! Model calls: one per document, one for the synthesis. Searches: one per document besides the
//! question's.

use crate::answer::Answer;
use crate::document_match::{TiedDocuments, WIDENING};
use crate::events::AgentEvent;
use crate::run::{AgentError, Run};
use quarry_core::Passage;

/// The sub-question for one document: `question` followed, in brackets, by the period `document`'s
/// context line names ("quarterly period ended October 1, 2022"), or by its file name without the
/// extension when it names none (`2023 Q1 call`), or `question` alone when there is neither.
pub fn sub_question(question: &str, document: &Passage) -> String {
    let label = crate::period::period_phrase(&document.context)
        .map(str::to_string)
        .unwrap_or_else(|| crate::period::file_stem(document).to_string());
    if label.is_empty() {
        question.to_string()
    } else {
        format!("{question} ({label})")
    }
}

/// The passages one document's call reads, at most `read` of them, then the rest (the quote under its
/// line may come from them): `tied_read[0]` (the document's best passage of the question's search), then
/// `own_search` (that document's hits for its sub-question, best first), then the rest of `tied_read`
/// and `tied_further`; each passage once.
pub fn document_evidence(
    tied_read: &[Passage],
    tied_further: &[Passage],
    own_search: &[Passage],
    read: usize,
) -> (Vec<Passage>, Vec<Passage>) {
    let mut ordered: Vec<Passage> = Vec::new();
    let candidates = tied_read.iter().take(1).chain(own_search).chain(tied_read.iter().skip(1)).chain(tied_further);
    for p in candidates {
        if !ordered.iter().any(|q| q.key() == p.key()) {
            ordered.push(p.clone());
        }
    }
    let rest = ordered.split_off(read.max(1).min(ordered.len()));
    (ordered, rest)
}

/// Answers `question` by the plan in the module docs, `tied` being what the question's own search
/// (`retrieved` distinct passages) found of each document. Errors: those of the searches and model calls
/// ([`AgentError`]).
pub async fn deep_per_document(
    run: &Run,
    question: &str,
    tied: TiedDocuments,
    retrieved: usize,
) -> Result<Answer, AgentError> {
    let subs: Vec<String> = tied.documents.iter().map(|d| sub_question(question, &d[0])).collect();
    let mut round = vec![question.to_string()];
    round.extend(subs.iter().cloned());
    run.emit(AgentEvent::Queries { round: 1, queries: round.clone() });
    let depth = run.config.top_k * WIDENING;
    let searches = futures::future::join_all(subs.iter().map(|q| run.retrieve_top(q, depth))).await;
    let mut documents = Vec::with_capacity(tied.documents.len());
    let mut further = Vec::with_capacity(tied.documents.len());
    let mut retrieved = retrieved;
    for (((document, tied_further), found), sub) in tied.documents.iter().zip(&tied.further).zip(searches).zip(&subs) {
        let found = found?;
        let own: Vec<Passage> = found.iter().filter(|p| p.same_document(&document[0])).cloned().collect();
        let new = own.iter().filter(|p| !document.iter().chain(tied_further).any(|q| q.key() == p.key())).count();
        retrieved += new;
        run.emit(AgentEvent::Retrieved { round: 1, query: sub.clone(), hits: found.len(), new });
        let (read, rest) = document_evidence(document, tied_further, &own, run.config.deep_passages_per_document);
        documents.push(read);
        further.push(rest);
    }
    let planned = TiedDocuments { documents, further, left_out: tied.left_out };
    crate::per_document::answer_per_document(run, "deep", question, planned, vec![round], retrieved, true).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passage(document: &str, chunk: u64, context: &str) -> Passage {
        Passage {
            library: "lib".into(),
            document_id: document.into(),
            chunk_id: chunk,
            chunk_index: None,
            path: format!("/docs/{document}.pdf"),
            page_start: Some(1),
            page_end: Some(1),
            sheet: None,
            heading_path: Vec::new(),
            text: String::new(),
            context: context.into(),
            score: 0.0,
            ocr: false,
        }
    }

    #[test]
    fn a_sub_question_names_the_documents_period_or_else_its_file() {
        let filing = passage(
            "2022 Q3 INTC",
            1,
            "Intel Corporation · Form 10-Q · quarterly period ended October 1, 2022 · 2022 Q3 INTC",
        );
        assert_eq!(
            sub_question("How have net sales changed?", &filing),
            "How have net sales changed? (quarterly period ended October 1, 2022)"
        );
        let call = passage("2023 Q1 call", 1, "");
        assert_eq!(sub_question("What was said on margins?", &call), "What was said on margins? (2023 Q1 call)");
    }

    #[test]
    fn a_document_reads_its_best_question_hit_then_its_own_searchs_hits_each_once() {
        let p = |chunk| passage("a", chunk, "");
        let (read, rest) = document_evidence(&[p(1), p(2)], &[p(3)], &[p(4), p(1), p(5)], 3);
        let chunks = |v: &[Passage]| v.iter().map(|p| p.chunk_id).collect::<Vec<_>>();
        assert_eq!(chunks(&read), [1, 4, 5]);
        assert_eq!(chunks(&rest), [2, 3]);
        let (read, rest) = document_evidence(&[p(1)], &[], &[], 3);
        assert_eq!((chunks(&read), chunks(&rest)), (vec![1], vec![]));
    }
}
