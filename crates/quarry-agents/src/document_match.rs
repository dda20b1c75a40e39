//! Passages from the document the question names come first. A question such as "NVIDIA's revenue in
//! the first quarter of fiscal 2024" names a company and a period; the chunks of four NVIDIA filings all
//! talk about revenue, and search ranks the second quarter's as high as the first's. Each passage carries
//! its document's context line (issuer, document type, period; `quarry_ingest::document_context`), so the
//! question's words can be matched against it: passages whose context shares the most of the question's
//! words move ahead of the others, each group keeping the search's order. A question that names no
//! document (no context word shared, or every passage sharing as many) leaves the order as it was.
//!
//! This is metadata matching, not a model call: microseconds, and it cannot invent a match. It only
//! reorders what search returned, so the search should return more than the answer will read
//! ([`WIDENING`]).

use crate::answer::stems;
use quarry_core::Passage;

/// How many times `top_k` passages NaiveRAG asks search for before preferring the matching documents'
/// passages and keeping `top_k`.
pub const WIDENING: usize = 4;

/// How many of `question`'s words (stems, stop words left out) the passage's document context shares.
pub fn context_overlap(question: &str, passage: &Passage) -> usize {
    if passage.context.is_empty() {
        return 0;
    }
    stems(question).intersection(&stems(&passage.context)).count()
}

/// `passages` (in search order) with those whose document context shares the most words with
/// `question` first; ties and the rest keep their order. Unchanged when no context shares a word or all
/// share the same number.
pub fn prefer_matching_documents(question: &str, passages: Vec<Passage>) -> Vec<Passage> {
    let overlaps: Vec<usize> = passages.iter().map(|p| context_overlap(question, p)).collect();
    let best = overlaps.iter().copied().max().unwrap_or(0);
    if best == 0 || overlaps.iter().all(|&o| o == best) {
        return passages;
    }
    let (mut first, mut rest) = (Vec::new(), Vec::new());
    for (p, o) in passages.into_iter().zip(overlaps) {
        if o == best { first.push(p) } else { rest.push(p) }
    }
    first.extend(rest);
    first
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passage(id: u64, context: &str) -> Passage {
        Passage {
            chunk_id: id,
            library: "l".into(),
            document_id: format!("d{id}"),
            path: format!("/d{id}.pdf"),
            page_start: None,
            page_end: None,
            sheet: None,
            heading_path: vec![],
            text: String::new(),
            context: context.into(),
            score: 0.0,
        }
    }

    #[test]
    fn the_named_period_comes_first_and_a_question_naming_nothing_keeps_the_order() {
        let q1 = "NVIDIA CORPORATION · Form 10-Q · quarterly period ended April 30, 2023 · first quarter of fiscal 2024 · 2023 Q1 NVDA";
        let q2 = "NVIDIA CORPORATION · Form 10-Q · quarterly period ended July 30, 2023 · second quarter of fiscal 2024 · 2023 Q2 NVDA";
        let apple = "Apple Inc. · Form 10-Q · quarterly period ended July 1, 2023 · 2023 Q3 AAPL";
        let found = vec![passage(1, q2), passage(2, apple), passage(3, q1), passage(4, q2), passage(5, q1)];
        let ids = |ps: &[Passage]| ps.iter().map(|p| p.chunk_id).collect::<Vec<_>>();
        let ordered = prefer_matching_documents("What was NVIDIA's revenue in the first quarter of fiscal 2024?", found.clone());
        assert_eq!(ids(&ordered), [3, 5, 1, 2, 4]);
        let unchanged = prefer_matching_documents("Which risks were named?", found.clone());
        assert_eq!(ids(&unchanged), [1, 2, 3, 4, 5]);
        let apple_first = prefer_matching_documents("How have Apple's net sales changed?", found);
        assert_eq!(ids(&apple_first), [2, 1, 3, 4, 5]);
    }
}
