//! Reciprocal rank fusion (Cormack, Clarke & Büttcher, "Reciprocal Rank Fusion outperforms Condorcet and
//! individual Rank Learning Methods", SIGIR 2009): score(d) = Σ over lists of 1 / (k + rank(d)), ranks
//! from 1. It needs no score calibration between BM25 and cosine similarity, which is why hybrid search
//! uses it.

use std::collections::HashMap;

/// The constant of the original paper, also the default of Elasticsearch, OpenSearch and Milvus.
pub const RRF_K: f32 = 60.0;

/// Fuses ranked lists of ids (best first) into one ranking of (id, fused score), best first.
/// Ties keep the order in which ids were first seen.
pub fn reciprocal_rank_fusion(lists: &[Vec<u64>], k: f32) -> Vec<(u64, f32)> {
    let mut scores: HashMap<u64, (f32, usize)> = HashMap::new();
    let mut seen = 0;
    for list in lists {
        for (rank, id) in list.iter().enumerate() {
            let entry = scores.entry(*id).or_insert_with(|| {
                seen += 1;
                (0.0, seen)
            });
            entry.0 += 1.0 / (k + rank as f32 + 1.0);
        }
    }
    let mut fused: Vec<(u64, f32, usize)> = scores.into_iter().map(|(id, (s, order))| (id, s, order)).collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
    fused.into_iter().map(|(id, s, _)| (id, s)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_beats_a_single_first_place() {
        // 7 is first in one list only; 3 is second in both: 2/62 > 1/61.
        let fused = reciprocal_rank_fusion(&[vec![7, 3, 1], vec![9, 3, 5]], RRF_K);
        assert_eq!(fused[0].0, 3);
        assert!((fused[0].1 - 2.0 / 62.0).abs() < 1e-6);
        assert_eq!(fused.len(), 5);
    }
}
