//! The document-recall run of `quarry eval library`: how well a real library built by `quarry add` finds
//! the documents that answer a question set. For sets such as
//! `../shared/eval/C_private_library/qna/sec-10-q`, whose qrels name documents by path
//! (`docs/en_sec-10-q/2023 Q1 AAPL.pdf`) rather than passages.
//!
//! Scoring follows that set's README: for each question, the documents of the top k chunks (k = 5, 10)
//! are compared with the question's relevant documents. `doc_recall@k` is the share of relevant documents
//! found, averaged over questions; `covered@k` the share of questions whose relevant documents are all
//! found. A relevant document matches a chunk when the chunk's document path ends with the qrels path
//! at a `/` boundary ([`crate::qrels::same_path`]), so the library may have been built from any parent
//! folder. The run is told how to search (a closure over the library), so this crate needs no store.

use crate::qrels::same_path;
use crate::retrieval::{recall_at, EvalSet};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Instant;

/// The chunks one ranking scores: the top 10 of a search, best first.
pub const DOCUMENT_RECALL_DEPTH: usize = 10;

/// One ranking's scores over a set's questions, each averaged over the questions.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DocumentRecall {
    /// Share of a question's relevant documents among the documents of the top 5 chunks.
    #[serde(rename = "doc_recall@5")]
    pub doc_recall_at_5: f64,
    /// The same over the top 10 chunks.
    #[serde(rename = "doc_recall@10")]
    pub doc_recall_at_10: f64,
    /// Share of questions whose relevant documents are all among the top 5 chunks' documents.
    #[serde(rename = "covered@5")]
    pub covered_at_5: f64,
    /// The same over the top 10 chunks.
    #[serde(rename = "covered@10")]
    pub covered_at_10: f64,
    /// Milliseconds a search took, averaged over the questions.
    pub ms_per_query: f64,
}

/// Scores each of `rankings` — (row name, what to search with) — over the questions of `set` (loaded with
/// [`crate::retrieval::load_queries`], so its qrels name documents by path). `search(question, settings)`
/// returns the document paths of the top [`DOCUMENT_RECALL_DEPTH`] chunks, best first; its time is what
/// `ms_per_query` measures. Returns one row per name, sorted by name; an empty set gives rows of zeros.
///
/// Errors: the first error `search` returns.
pub fn document_recall<S, E>(
    set: &EvalSet,
    rankings: impl IntoIterator<Item = (String, S)>,
    mut search: impl FnMut(&str, &S) -> Result<Vec<String>, E>,
) -> Result<BTreeMap<String, DocumentRecall>, E> {
    let n = set.queries.len().max(1) as f64;
    let mut rows = BTreeMap::new();
    for (name, settings) in rankings {
        let mut row = DocumentRecall::default();
        for (qid, text) in &set.queries {
            let relevant: Vec<&String> = set.relevant.get(qid).map(|r| r.iter().collect()).unwrap_or_default();
            let started = Instant::now();
            let paths = search(text, &settings)?;
            row.ms_per_query += started.elapsed().as_secs_f64() * 1000.0 / n;
            let recall = |k: usize| recall_at(&paths, &relevant, k, |path, r| same_path(path, r));
            let (at_5, at_10) = (recall(5), recall(10));
            row.doc_recall_at_5 += at_5 / n;
            row.doc_recall_at_10 += at_10 / n;
            row.covered_at_5 += f64::from(u8::from(at_5 == 1.0)) / n;
            row.covered_at_10 += f64::from(u8::from(at_10 == 1.0)) / n;
        }
        rows.insert(name, row);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};

    fn set() -> EvalSet {
        let relevant: HashMap<String, HashSet<String>> = [
            ("q1".to_string(), ["docs/a.pdf".to_string(), "docs/b.pdf".to_string()].into()),
            ("q2".to_string(), ["docs/c.pdf".to_string()].into()),
        ]
        .into();
        EvalSet {
            name: "set".into(),
            passages: Vec::new(),
            queries: vec![("q1".into(), "first".into()), ("q2".into(), "second".into())],
            relevant,
            answers: HashMap::new(),
        }
    }

    #[test]
    fn recall_and_coverage_count_documents_by_path_at_5_and_10() {
        let filler = |n: usize| (0..n).map(|i| format!("/lib/docs/other{i}.pdf"));
        let rows = document_recall(&set(), [("bm25".to_string(), ())], |question, _| {
            Ok::<_, ()>(match question {
                // a.pdf 1st, b.pdf 7th: half found at 5, all at 10.
                "first" => std::iter::once("/lib/docs/a.pdf".to_string())
                    .chain(filler(5))
                    .chain(["/lib/docs/b.pdf".to_string()])
                    .collect(),
                // c.pdf only as part of another name: not found.
                _ => vec!["/lib/docs/xc.pdf".to_string()],
            })
        })
        .unwrap();
        let row = &rows["bm25"];
        assert_eq!((row.doc_recall_at_5, row.doc_recall_at_10), (0.25, 0.5));
        assert_eq!((row.covered_at_5, row.covered_at_10), (0.0, 0.5));
        let json = serde_json::to_value(row).unwrap();
        assert_eq!(json["doc_recall@10"], 0.5, "the report's field names: {json}");
    }

    #[test]
    fn each_ranking_is_one_row_and_a_search_error_stops_the_run() {
        let rankings = [("hybrid".to_string(), 2usize), ("bm25".to_string(), 1usize)];
        let rows =
            document_recall(&set(), rankings.clone(), |_, &k| Ok::<_, ()>(vec!["docs/c.pdf".into(); k])).unwrap();
        assert_eq!(rows.keys().collect::<Vec<_>>(), ["bm25", "hybrid"]);
        assert_eq!(rows["bm25"].covered_at_5, 0.5);
        let failed = document_recall(&set(), rankings, |q, _| if q == "second" { Err("down") } else { Ok(vec![]) });
        assert_eq!(failed, Err("down"));
    }
}
