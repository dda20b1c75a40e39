//! Searching several libraries as one: each library's ranking, fused by reciprocal rank fusion (Cormack,
//! Clarke & Büttcher, SIGIR 2009; k = 60, as in hybrid search).

use quarry_core::{Passage, RetrievalError, Retriever};
use std::collections::HashMap;
use std::sync::Arc;

/// A retriever over several retrievers (one per library).
pub struct FusedRetriever {
    parts: Vec<Arc<dyn Retriever>>,
}

impl FusedRetriever {
    /// One retriever over `parts`; a single part is returned as it is.
    pub fn over(mut parts: Vec<Arc<dyn Retriever>>) -> Arc<dyn Retriever> {
        if parts.len() == 1 {
            return parts.remove(0);
        }
        Arc::new(FusedRetriever { parts })
    }
}

#[async_trait::async_trait]
impl Retriever for FusedRetriever {
    async fn retrieve(&self, query: &str, k: usize) -> Result<Vec<Passage>, RetrievalError> {
        let lists = futures::future::join_all(self.parts.iter().map(|p| p.retrieve(query, k))).await;
        let mut fusion = RankFusion::default();
        let mut passages: HashMap<(String, u64), Passage> = HashMap::new();
        for list in lists {
            let list = list?;
            fusion.add(list.iter().map(Passage::key));
            for passage in list {
                passages.entry(passage.key()).or_insert(passage);
            }
        }
        Ok(fusion
            .ranked()
            .into_iter()
            .take(k)
            .filter_map(|(key, score)| {
                let mut p = passages.remove(&key)?;
                p.score = score as f32;
                Some(p)
            })
            .collect())
    }
}

/// Reciprocal rank fusion over any number of ranked lists of passage keys: each list adds
/// `1 / (60 + rank)` (rank from 1) to the score of every key it holds. Ties keep the order in which keys
/// were first seen.
#[derive(Debug, Default, Clone)]
pub struct RankFusion {
    scores: HashMap<(String, u64), (f64, usize)>,
}

impl RankFusion {
    /// Adds one ranked list (best first).
    pub fn add(&mut self, keys: impl IntoIterator<Item = (String, u64)>) {
        for (rank, key) in keys.into_iter().enumerate() {
            let order = self.scores.len();
            self.scores.entry(key).or_insert((0.0, order)).0 += 1.0 / (60.0 + rank as f64 + 1.0);
        }
    }

    /// The fused score of `key` (0 when no list held it).
    pub fn score(&self, key: &(String, u64)) -> f64 {
        self.scores.get(key).map_or(0.0, |s| s.0)
    }

    /// Every key with its score, best first.
    pub fn ranked(&self) -> Vec<((String, u64), f64)> {
        let mut all: Vec<(&(String, u64), &(f64, usize))> = self.scores.iter().collect();
        all.sort_by(|a, b| b.1 .0.total_cmp(&a.1 .0).then(a.1 .1.cmp(&b.1 .1)));
        all.into_iter().map(|(k, s)| (k.clone(), s.0)).collect()
    }

    /// `passages` in fused order, best first (stable for equal scores).
    pub fn sort(&self, passages: &mut [Passage]) {
        passages.sort_by(|a, b| self.score(&b.key()).total_cmp(&self.score(&a.key())));
    }
}

#[cfg(test)]
mod tests {
    use super::RankFusion;

    #[test]
    fn keys_found_by_several_lists_rise_and_ties_keep_first_seen_order() {
        let key = |n: u64| ("lib".to_string(), n);
        let mut fusion = RankFusion::default();
        fusion.add([key(1), key(2), key(3)]);
        fusion.add([key(3), key(4)]);
        let order: Vec<u64> = fusion.ranked().into_iter().map(|(k, _)| k.1).collect();
        assert_eq!(order, vec![3, 1, 2, 4], "2 and 4 tie at 1/62; 2 was seen first");
        assert!((fusion.score(&key(3)) - (1.0 / 63.0 + 1.0 / 61.0)).abs() < 1e-12);
        assert_eq!(fusion.score(&key(9)), 0.0);
    }
}
