//! Reciprocal rank fusion (Cormack, Clarke & Büttcher, "Reciprocal Rank Fusion outperforms Condorcet and
//! individual Rank Learning Methods", SIGIR 2009): score(d) = Σ over ranked lists of w / (k + rank(d)),
//! ranks from 1, w = 1 unless a list is weighted. The one implementation: hybrid search's weighted RRF
//! (`quarry_index::HybridFusion::Rrf`) and the fusion of several libraries' or queries' rankings
//! (`quarry_agents::FusedRetriever`) both use it.

use std::collections::HashMap;
use std::hash::Hash;

/// The constant of the original paper, also the default of Elasticsearch, OpenSearch and Milvus.
pub const RRF_K: f64 = 60.0;

/// Scores of keys (any id: a chunk id, a (library, chunk id) pair) over ranked lists added one by one.
/// Ties keep the order in which keys were first seen.
#[derive(Debug, Clone)]
pub struct RankFusion<K> {
    scores: HashMap<K, (f64, usize)>,
    k: f64,
}

impl<K> Default for RankFusion<K> {
    /// Fusion with the paper's constant [`RRF_K`].
    fn default() -> Self {
        RankFusion { scores: HashMap::new(), k: RRF_K }
    }
}

impl<K: Hash + Eq + Clone> RankFusion<K> {
    /// Fusion with the constant `k` instead of [`RRF_K`] (larger: lower ranks count relatively more).
    pub fn with_k(k: f64) -> Self {
        RankFusion { scores: HashMap::new(), k }
    }

    /// Adds one ranked list (best first): each key gains `1 / (k + rank)`.
    pub fn add(&mut self, keys: impl IntoIterator<Item = K>) {
        self.add_weighted(keys, 1.0);
    }

    /// Adds one ranked list (best first) with weight `weight`: each key gains `weight / (k + rank)`.
    pub fn add_weighted(&mut self, keys: impl IntoIterator<Item = K>, weight: f64) {
        for (rank, key) in keys.into_iter().enumerate() {
            let order = self.scores.len();
            self.scores.entry(key).or_insert((0.0, order)).0 += weight / (self.k + rank as f64 + 1.0);
        }
    }

    /// The fused score of `key` (0 when no list held it).
    pub fn score(&self, key: &K) -> f64 {
        self.scores.get(key).map_or(0.0, |s| s.0)
    }

    /// Every key with its score, best first; equal scores in the order keys were first seen.
    pub fn ranked(&self) -> Vec<(K, f64)> {
        let mut all: Vec<(&K, &(f64, usize))> = self.scores.iter().collect();
        all.sort_by(|a, b| b.1 .0.total_cmp(&a.1 .0).then(a.1 .1.cmp(&b.1 .1)));
        all.into_iter().map(|(k, s)| (k.clone(), s.0)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_found_by_several_lists_rise_and_ties_keep_first_seen_order() {
        let mut fusion = RankFusion::default();
        fusion.add([1u64, 2, 3]);
        fusion.add([3, 4]);
        let order: Vec<u64> = fusion.ranked().into_iter().map(|(k, _)| k).collect();
        assert_eq!(order, vec![3, 1, 2, 4], "2 and 4 tie at 1/62; 2 was seen first");
        assert!((fusion.score(&3) - (1.0 / 63.0 + 1.0 / 61.0)).abs() < 1e-12);
        assert_eq!(fusion.score(&9), 0.0);
    }

    #[test]
    fn a_weighted_list_counts_in_proportion() {
        let mut fusion = RankFusion::with_k(60.0);
        fusion.add_weighted([1u64, 2], 0.25);
        fusion.add_weighted([2u64, 1], 0.75);
        let ranked = fusion.ranked();
        assert_eq!(ranked[0].0, 2);
        assert!((ranked[0].1 - (0.25 / 62.0 + 0.75 / 61.0)).abs() < 1e-12);
    }
}
