//! Pieces of the question-answering evaluation (`quarry eval qa`): an in-memory hybrid retriever over an
//! evaluation set's passages, for the agents, and answer scoring as in SQuAD (exact match and token F1
//! after normalisation; characters instead of words for Chinese).

use crate::retrieval::EvalSet;
use quarry_core::{Passage, RetrievalError, Retriever};
use quarry_index::{embedder_covers, Embedder, HybridFusion, IndexError, KeywordIndex, VectorIndex};
use std::sync::Mutex;

/// The passages of an evaluation set as one library (`library` name `eval`): BM25 + dense, fused by
/// [`HybridFusion::default`] exactly as library search does. A passage's `chunk_id` is its index in the set
/// and its `path` the passage id, so results map back to the qrels.
pub struct SetRetriever {
    passages: Vec<(String, String)>,
    keyword: KeywordIndex,
    vectors: Option<VectorIndex>,
    embedder: Option<Mutex<Embedder>>,
    languages: Vec<String>,
}

impl SetRetriever {
    /// Indexes `set`'s passages; with an embedder, embeds them too (`progress(done, total)` as it goes).
    /// Errors: the keyword index or the embedder fails.
    pub fn build(
        set: &EvalSet,
        embedder: Option<Embedder>,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Self, IndexError> {
        let mut keyword = KeywordIndex::in_memory()?;
        for (i, (_, text)) in set.passages.iter().enumerate() {
            keyword.add(i as u64, "", text)?;
        }
        keyword.commit()?;
        let mut vectors = None;
        let mut languages = Vec::new();
        let embedder = match embedder {
            Some(mut embedder) => {
                languages = embedder.languages().to_vec();
                let mut index = VectorIndex::new(embedder.dimension());
                for (batch_no, batch) in set.passages.chunks(1024).enumerate() {
                    let texts: Vec<&str> = batch.iter().map(|(_, t)| t.as_str()).collect();
                    for (j, v) in embedder.embed(&texts)?.into_iter().enumerate() {
                        index.add((batch_no * 1024 + j) as u64, &v);
                    }
                    progress((batch_no * 1024 + batch.len()).min(set.passages.len()), set.passages.len());
                }
                vectors = Some(index);
                Some(Mutex::new(embedder))
            }
            None => None,
        };
        Ok(SetRetriever { passages: set.passages.clone(), keyword, vectors, embedder, languages })
    }

    /// The passage id of a retrieved passage.
    pub fn passage_id(&self, passage: &Passage) -> &str {
        self.passage_id_of(passage.chunk_id)
    }

    /// The passage id of chunk `chunk_id` (its index in the set). Panics when out of range.
    pub fn passage_id_of(&self, chunk_id: u64) -> &str {
        &self.passages[chunk_id as usize].0
    }

    fn rank(&self, query: &str, k: usize) -> Result<Vec<(u64, f32)>, IndexError> {
        let depth = HybridFusion::default().depth(k);
        let bm25: Vec<(u64, f32)> = self.keyword.search(query, depth)?;
        let (Some(vectors), Some(embedder)) = (&self.vectors, &self.embedder) else { return Ok(bm25) };
        if !embedder_covers(&self.languages, query) {
            return Ok(bm25);
        }
        let vector = embedder
            .lock()
            .map_err(|_| IndexError::Embedding("embedder lock poisoned".into()))?
            .embed_queries(&[query])?
            .pop()
            .unwrap_or_default();
        let dense = vectors.search(&vector, depth);
        Ok(HybridFusion::default().fuse(&bm25, &dense, k))
    }
}

#[async_trait::async_trait]
impl Retriever for SetRetriever {
    async fn retrieve(&self, query: &str, k: usize) -> Result<Vec<Passage>, RetrievalError> {
        let ranked = self.rank(query, k).map_err(|e| RetrievalError(e.to_string()))?;
        Ok(ranked
            .into_iter()
            .take(k)
            .map(|(id, score)| {
                let (passage_id, text) = &self.passages[id as usize];
                Passage {
                    chunk_id: id,
                    chunk_index: None,
                    library: "eval".into(),
                    document_id: passage_id.clone(),
                    path: passage_id.clone(),
                    page_start: None,
                    page_end: None,
                    sheet: None,
                    heading_path: Vec::new(),
                    text: text.clone(),
                    context: String::new(),
                    score,
                    ocr: false,
                }
            })
            .collect())
    }
}

/// SQuAD's answer normalisation: lower case, no punctuation, no English articles, single spaces.
pub fn normalize_answer(text: &str) -> String {
    let lowered: String =
        text.to_lowercase().chars().map(|c| if c.is_alphanumeric() || c.is_whitespace() { c } else { ' ' }).collect();
    lowered.split_whitespace().filter(|w| !matches!(*w, "a" | "an" | "the")).collect::<Vec<_>>().join(" ")
}

/// Scoring units: words, or characters for text with CJK characters (as the Chinese sets score).
fn units(text: &str) -> Vec<String> {
    let normalized = normalize_answer(text);
    if quarry_core::count_cjk_chars(&normalized) > 0 {
        normalized.chars().filter(|c| !c.is_whitespace()).map(|c| c.to_string()).collect()
    } else {
        normalized.split_whitespace().map(str::to_string).collect()
    }
}

/// 1.0 when the normalised prediction equals a normalised reference, else 0.0 (best over `references`).
pub fn exact_match(prediction: &str, references: &[String]) -> f64 {
    let p = normalize_answer(prediction);
    references.iter().any(|r| normalize_answer(r) == p) as u8 as f64
}

/// Token-overlap F1 of SQuAD, best over `references` (0 when there are none).
pub fn token_f1(prediction: &str, references: &[String]) -> f64 {
    let predicted = units(prediction);
    references
        .iter()
        .map(|r| {
            let reference = units(r);
            let mut pool = reference.clone();
            let mut common = 0usize;
            for unit in &predicted {
                if let Some(i) = pool.iter().position(|x| x == unit) {
                    pool.swap_remove(i);
                    common += 1;
                }
            }
            if common == 0 {
                return 0.0;
            }
            let precision = common as f64 / predicted.len() as f64;
            let recall = common as f64 / reference.len() as f64;
            2.0 * precision * recall / (precision + recall)
        })
        .fold(0.0, f64::max)
}

/// 1.0 when a normalised reference occurs in the normalised prediction (RGB's "contains the answer").
pub fn contains_answer(prediction: &str, references: &[String]) -> f64 {
    let p = normalize_answer(prediction);
    references.iter().any(|r| {
        let r = normalize_answer(r);
        !r.is_empty() && p.contains(&r)
    }) as u8 as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squad_scoring() {
        let gold = vec!["The Tulsa".to_string(), "Tulsa, Oklahoma".to_string()];
        assert_eq!(exact_match("tulsa!", &gold), 1.0);
        assert_eq!(exact_match("in Tulsa", &gold), 0.0);
        assert!((token_f1("in Tulsa", &gold) - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(contains_answer("They first played in Tulsa, Oklahoma [1].", &gold), 1.0);
        assert!((token_f1("北京大学", &["北京".to_string()]) - 2.0 / 3.0).abs() < 1e-9, "characters for Chinese");
        assert_eq!(token_f1("anything", &[]), 0.0);
    }
}
