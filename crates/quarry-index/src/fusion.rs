//! Fusing rankings. Hybrid search merges BM25 and dense results with [`HybridFusion`] — by default the
//! min-max normalised scores with a dense weight set per query from how sure each ranking is of its first
//! hit ([`HybridFusion::ConfidenceMinMax`]), which measured better than rank fusion and than any fixed
//! weight on the benchmark sets (docs/evaluation/retrieval.md, "Hybrid fusion").
//! [`reciprocal_rank_fusion`] (Cormack, Clarke & Büttcher, "Reciprocal Rank Fusion outperforms Condorcet
//! and individual Rank Learning Methods", SIGIR 2009: score(d) = Σ over lists of 1 / (k + rank(d)), ranks
//! from 1) merges lists whose scores are not comparable at all: several libraries, several queries.

use quarry_core::rank_fusion::RankFusion;
use std::collections::{HashMap, HashSet};

/// The constant of the original paper ([`quarry_core::rank_fusion::RRF_K`]), as `f32` for the scores here.
pub const RRF_K: f32 = quarry_core::rank_fusion::RRF_K as f32;

/// How many candidates each ranking contributes to hybrid fusion when `k` results are wanted:
/// `max(5·k, 50)`. Measured with `quarry eval retrieval` (k = 10): depth 50 gives hybrid Recall@10 0.698 on
/// MuSiQue and 0.888 on HotpotQA, depth 100 gives 0.693 / 0.892; deeper lists let passages that one ranking
/// puts at 60–100 outvote the other ranking's top 10.
pub fn fusion_depth(k: usize) -> usize {
    (k * 5).max(50)
}

/// Fuses ranked lists of ids (best first) into one ranking of (id, fused score), best first, by
/// [`quarry_core::rank_fusion::RankFusion`] with constant `k`. Ties keep the order in which ids were
/// first seen.
pub fn reciprocal_rank_fusion(lists: &[Vec<u64>], k: f32) -> Vec<(u64, f32)> {
    let mut fusion = RankFusion::with_k(f64::from(k));
    for list in lists {
        fusion.add(list.iter().copied());
    }
    fusion.ranked().into_iter().map(|(id, score)| (id, score as f32)).collect()
}

/// How hybrid search merges the BM25 ranking and the dense ranking (each a list of (id, score), best
/// first, `depth` long). `quarry eval retrieval --fusion` compares them; the written form is
/// `<method>[:<dense weight>][@<depth>]`, e.g. `rrf`, `rrf:0.6@100`, `minmax:0.7`, `zscore`, `rrf-adaptive`.
///
/// - `Rrf`: weighted reciprocal rank fusion, Σ wᵢ / (60 + rankᵢ) with w_dense = `dense_weight` and
///   w_bm25 = 1 − `dense_weight` (0.5 = plain RRF up to a constant factor).
/// - `MinMax`: each list's scores scaled to [0, 1] by its own minimum and maximum over the `depth`
///   candidates, then w_bm25·bm25 + w_dense·dense; an id missing from a list gets 0 there.
/// - `ZScore`: as `MinMax` with (score − mean) / standard deviation; a missing id gets the list's lowest.
/// - `AdaptiveRrf`: RRF whose weights depend on the query: each list's weight is how far its best score
///   stands above the rest of its top 10 (the top score's z-score among them), so the side that is sure
///   of its first hit counts more (a query-dependent weight in the spirit of Bruch et al., "An Analysis
///   of Fusion Functions for Hybrid Retrieval", TOIS 2023, which compares the score-based fusions above).
/// - `AdaptiveMinMax`: `MinMax` with a dense weight chosen per query: each list's confidence is how far
///   its first hit stands above its next nine on the min-max scale (1 − their mean normalised score), and
///   w_dense = c_dense / (c_bm25 + c_dense) (0.5 when both are 0). A list whose top is a clear winner
///   outweighs one whose top ten are a plateau.
/// - `ConfidenceMinMax`: `MinMax` with a dense weight chosen per query from how far each list's first
///   score stands above that list: z = (top score − mean) / standard deviation over the `depth`
///   candidates, and w_dense = σ(0.5·(z_dense − z_bm25) + 0.4) (σ the logistic function), so 0.60 when
///   both lists are equally sure and mostly between 0.2 and 0.9 on the benchmark sets
///   ([`confidence_dense_weight`]). The slope and offset were chosen on four sets of
///   ../shared/eval/A_benchmarks with both embedding models (docs/evaluation/retrieval.md, "A query-dependent weight").
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HybridFusion {
    /// Weighted reciprocal rank fusion (above).
    Rrf {
        /// Weight of the dense ranking, 0–1 (BM25 gets the rest).
        dense_weight: f32,
        /// Candidates taken from each ranking (`None`: [`fusion_depth`] of the results asked).
        depth: Option<usize>,
    },
    /// Min-max scaled scores, weighted (above).
    MinMax {
        /// Weight of the dense ranking, 0–1.
        dense_weight: f32,
        /// Candidates taken from each ranking.
        depth: Option<usize>,
    },
    /// Z-scored scores, weighted (above).
    ZScore {
        /// Weight of the dense ranking, 0–1.
        dense_weight: f32,
        /// Candidates taken from each ranking.
        depth: Option<usize>,
    },
    /// RRF with per-query weights (above).
    AdaptiveRrf {
        /// Candidates taken from each ranking.
        depth: Option<usize>,
    },
    /// Min-max with a per-query dense weight from each list's confidence (above).
    AdaptiveMinMax {
        /// Candidates taken from each ranking.
        depth: Option<usize>,
    },
    /// Min-max with the logistic per-query dense weight (above): what search uses.
    ConfidenceMinMax {
        /// Candidates taken from each ranking.
        depth: Option<usize>,
    },
}

impl Default for HybridFusion {
    /// [`HybridFusion::ConfidenceMinMax`], both lists [`fusion_depth`] deep. Until 2026-11-25 it was
    /// equal-weight min-max (`minmax`), which fell under dense on libraries embedded with
    /// multilingual-e5-small and on a real library of SEC filings; plain RRF fell under dense on MuSiQue
    /// (docs/evaluation/retrieval.md, "Hybrid fusion", "A query-dependent weight").
    fn default() -> Self {
        HybridFusion::ConfidenceMinMax { depth: None }
    }
}

impl HybridFusion {
    /// Candidates each list contributes for `k` results: the variant's own depth, else [`fusion_depth`].
    pub fn depth(&self, k: usize) -> usize {
        let own = match *self {
            HybridFusion::Rrf { depth, .. }
            | HybridFusion::MinMax { depth, .. }
            | HybridFusion::ZScore { depth, .. }
            | HybridFusion::AdaptiveRrf { depth }
            | HybridFusion::AdaptiveMinMax { depth }
            | HybridFusion::ConfidenceMinMax { depth } => depth,
        };
        own.unwrap_or_else(|| fusion_depth(k)).max(k)
    }

    /// The fused ranking of `bm25` and `dense` (each best first; only their first [`Self::depth`] count),
    /// as (id, fused score), best first; ties keep first-seen order (BM25's list first).
    pub fn fuse(&self, bm25: &[(u64, f32)], dense: &[(u64, f32)], k: usize) -> Vec<(u64, f32)> {
        self.fuse_partly_embedded(bm25, dense, k, &HashSet::new())
    }

    /// [`Self::fuse`] over a library some of whose chunks have no embedding yet (`unembedded`: ids of
    /// the BM25 list that dense search could not rank). Such a chunk is ranked by BM25 alone: its missing
    /// dense part is taken equal to its BM25 part (its normalised BM25 score in the score fusions, its
    /// BM25 rank in rank fusion), so it is neither pushed down for lacking a vector nor lifted above a
    /// chunk both rankings agree on. An empty set gives [`Self::fuse`] exactly.
    pub fn fuse_partly_embedded(
        &self,
        bm25: &[(u64, f32)],
        dense: &[(u64, f32)],
        k: usize,
        unembedded: &HashSet<u64>,
    ) -> Vec<(u64, f32)> {
        let depth = self.depth(k);
        let (bm25, dense) = (&bm25[..bm25.len().min(depth)], &dense[..dense.len().min(depth)]);
        match *self {
            HybridFusion::Rrf { dense_weight, .. } => {
                weighted_rrf(bm25, dense, 1.0 - dense_weight, dense_weight, unembedded)
            }
            HybridFusion::AdaptiveRrf { .. } => {
                let wd = dense_share(top_confidence(bm25), top_confidence(dense));
                weighted_rrf(bm25, dense, 1.0 - wd, wd, unembedded)
            }
            HybridFusion::MinMax { dense_weight, .. } => {
                combine(bm25, dense, 1.0 - dense_weight, dense_weight, min_max, unembedded)
            }
            HybridFusion::AdaptiveMinMax { .. } => {
                let wd = adaptive_dense_weight(bm25, dense);
                combine(bm25, dense, 1.0 - wd, wd, min_max, unembedded)
            }
            HybridFusion::ConfidenceMinMax { .. } => {
                let wd = confidence_dense_weight(bm25, dense);
                combine(bm25, dense, 1.0 - wd, wd, min_max, unembedded)
            }
            HybridFusion::ZScore { dense_weight, .. } => {
                combine(bm25, dense, 1.0 - dense_weight, dense_weight, z_scores, unembedded)
            }
        }
    }
}

impl std::fmt::Display for HybridFusion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (name, weight, depth) = match *self {
            HybridFusion::Rrf { dense_weight, depth } => ("rrf", Some(dense_weight), depth),
            HybridFusion::MinMax { dense_weight, depth } => ("minmax", Some(dense_weight), depth),
            HybridFusion::ZScore { dense_weight, depth } => ("zscore", Some(dense_weight), depth),
            HybridFusion::AdaptiveRrf { depth } => ("rrf-adaptive", None, depth),
            HybridFusion::AdaptiveMinMax { depth } => ("minmax-adaptive", None, depth),
            HybridFusion::ConfidenceMinMax { depth } => ("minmax-confidence", None, depth),
        };
        write!(f, "{name}")?;
        if let Some(w) = weight.filter(|w| (w - 0.5).abs() > 1e-6) {
            write!(f, ":{w}")?;
        }
        if let Some(d) = depth {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for HybridFusion {
    type Err = String;
    /// Parses `<method>[:<dense weight>][@<depth>]` (see the type's docs).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || {
            format!("unknown fusion {text:?}: expected rrf, minmax, zscore, rrf-adaptive, minmax-adaptive or minmax-confidence, optionally :<dense weight 0–1> and @<depth>, e.g. rrf:0.6@100")
        };
        let (rest, depth) = match text.trim().split_once('@') {
            Some((rest, d)) => (rest, Some(d.parse::<usize>().map_err(|_| bad())?.max(1))),
            None => (text.trim(), None),
        };
        let (name, weight) = match rest.split_once(':') {
            Some((name, w)) => (name, Some(w.parse::<f32>().ok().filter(|w| (0.0..=1.0).contains(w)).ok_or_else(bad)?)),
            None => (rest, None),
        };
        let dense_weight = weight.unwrap_or(0.5);
        match name {
            "rrf" => Ok(HybridFusion::Rrf { dense_weight, depth }),
            "minmax" => Ok(HybridFusion::MinMax { dense_weight, depth }),
            "zscore" => Ok(HybridFusion::ZScore { dense_weight, depth }),
            "rrf-adaptive" if weight.is_none() => Ok(HybridFusion::AdaptiveRrf { depth }),
            "minmax-adaptive" if weight.is_none() => Ok(HybridFusion::AdaptiveMinMax { depth }),
            "minmax-confidence" if weight.is_none() => Ok(HybridFusion::ConfidenceMinMax { depth }),
            _ => Err(bad()),
        }
    }
}

/// Weighted reciprocal rank fusion of the two rankings ([`quarry_core::rank_fusion`]): Σ w / (60 + rank);
/// an `unembedded` id absent from `dense` gets its BM25 rank there.
fn weighted_rrf(
    bm25: &[(u64, f32)],
    dense: &[(u64, f32)],
    wb: f32,
    wd: f32,
    unembedded: &HashSet<u64>,
) -> Vec<(u64, f32)> {
    let mut fusion = RankFusion::default();
    for (list, weight) in [(bm25, wb), (dense, wd)] {
        fusion.add_weighted(list.iter().map(|(id, _)| *id), f64::from(weight));
    }
    if unembedded.is_empty() {
        return fusion.ranked().into_iter().map(|(id, score)| (id, score as f32)).collect();
    }
    let mut fused: HashMap<u64, f64> = fusion.ranked().into_iter().collect();
    let in_dense: HashSet<u64> = dense.iter().map(|h| h.0).collect();
    for (rank, (id, _)) in bm25.iter().enumerate() {
        if unembedded.contains(id) && !in_dense.contains(id) {
            *fused.entry(*id).or_default() += f64::from(wd) / (quarry_core::rank_fusion::RRF_K + (rank + 1) as f64);
        }
    }
    // First-seen order (BM25's list, then dense) breaks ties, as in `RankFusion`.
    let mut order: HashMap<u64, usize> = HashMap::new();
    for (i, (id, _)) in bm25.iter().chain(dense.iter()).enumerate() {
        order.entry(*id).or_insert(i);
    }
    sorted(fused.into_iter().map(|(id, s)| (id, (s as f32, order.get(&id).copied().unwrap_or(usize::MAX)))).collect())
}

/// How far the best score stands above the list's top 10: (top − mean) / standard deviation, ≥ 0.
fn top_confidence(list: &[(u64, f32)]) -> f32 {
    top_score_z(&list[..list.len().min(10)]).max(0.0)
}

/// The dense weight of [`HybridFusion::ConfidenceMinMax`] for one query, in (0, 1): the logistic
/// function of 0.5·(z_dense − z_bm25) + 0.4, where z is how many standard deviations a list's first
/// score stands above the mean of the list (0 for a list of fewer than two hits or equal scores). An
/// empty BM25 list (no keyword matched) has z = 0, so dense leads.
pub fn confidence_dense_weight(bm25: &[(u64, f32)], dense: &[(u64, f32)]) -> f32 {
    let z = top_score_z(dense) - top_score_z(bm25);
    1.0 / (1.0 + (-(0.5 * z + 0.4)).exp())
}

/// (first score − mean) / standard deviation over the whole list; 0 for fewer than two hits or no spread.
fn top_score_z(list: &[(u64, f32)]) -> f32 {
    if list.len() < 2 {
        return 0.0;
    }
    let n = list.len() as f32;
    let mean = list.iter().map(|h| h.1).sum::<f32>() / n;
    let sd = (list.iter().map(|h| (h.1 - mean) * (h.1 - mean)).sum::<f32>() / n).sqrt();
    if sd <= f32::EPSILON {
        0.0
    } else {
        (list[0].1 - mean) / sd
    }
}

/// The dense weight of [`HybridFusion::AdaptiveMinMax`] for one query, in [0, 1].
pub fn adaptive_dense_weight(bm25: &[(u64, f32)], dense: &[(u64, f32)]) -> f32 {
    dense_share(min_max_confidence(bm25), min_max_confidence(dense))
}

/// The dense side's share of two non-negative confidences, 0.5 when both are 0: the weight of both
/// adaptive fusions.
fn dense_share(bm25_confidence: f32, dense_confidence: f32) -> f32 {
    let total = bm25_confidence + dense_confidence;
    if total > 0.0 {
        dense_confidence / total
    } else {
        0.5
    }
}

/// 1 − the mean min-max-normalised score of ranks 2–10 (normalised over the whole list): 1 when the first
/// hit stands alone, 0 when the top ten tie; 0 for fewer than two hits.
fn min_max_confidence(list: &[(u64, f32)]) -> f32 {
    if list.len() < 2 {
        return 0.0;
    }
    let (normalised, _) = min_max(list);
    let next = &normalised[1..normalised.len().min(10)];
    1.0 - next.iter().sum::<f32>() / next.len() as f32
}

/// Normalises one ranking's scores: (each score normalised, in the ranking's order; the value an id the
/// ranking lacks gets).
type Normaliser = fn(&[(u64, f32)]) -> (Vec<f32>, f32);

/// Each list's scores normalised by `normalise` (which also gives the value for a missing id), then
/// summed with weights; an `unembedded` id absent from `dense` takes its normalised BM25 score there.
fn combine(
    bm25: &[(u64, f32)],
    dense: &[(u64, f32)],
    wb: f32,
    wd: f32,
    normalise: Normaliser,
    unembedded: &HashSet<u64>,
) -> Vec<(u64, f32)> {
    let (nb, missing_b) = normalise(bm25);
    let (nd, missing_d) = normalise(dense);
    // Per chunk: its normalised BM25 and dense scores (absent from a list: None) and first-seen order.
    type Parts = (Option<f32>, Option<f32>, usize);
    let mut parts: HashMap<u64, Parts> = HashMap::new();
    for (i, (id, _)) in bm25.iter().enumerate() {
        let order = parts.len();
        parts.entry(*id).or_insert((None, None, order)).0 = Some(nb[i]);
    }
    for (i, (id, _)) in dense.iter().enumerate() {
        let order = parts.len();
        parts.entry(*id).or_insert((None, None, order)).1 = Some(nd[i]);
    }
    sorted(
        parts
            .into_iter()
            .map(|(id, (b, d, order))| {
                let d = match (d, b) {
                    (None, Some(b)) if unembedded.contains(&id) => b,
                    (d, _) => d.unwrap_or(missing_d),
                };
                (id, (wb * b.unwrap_or(missing_b) + wd * d, order))
            })
            .collect(),
    )
}

fn min_max(list: &[(u64, f32)]) -> (Vec<f32>, f32) {
    let (lo, hi) = list.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), h| (lo.min(h.1), hi.max(h.1)));
    let span = hi - lo;
    (list.iter().map(|h| if span > f32::EPSILON { (h.1 - lo) / span } else { 1.0 }).collect(), 0.0)
}

fn z_scores(list: &[(u64, f32)]) -> (Vec<f32>, f32) {
    if list.is_empty() {
        return (Vec::new(), 0.0);
    }
    let n = list.len() as f32;
    let mean = list.iter().map(|h| h.1).sum::<f32>() / n;
    let sd = (list.iter().map(|h| (h.1 - mean) * (h.1 - mean)).sum::<f32>() / n).sqrt();
    let z: Vec<f32> = list.iter().map(|h| if sd > f32::EPSILON { (h.1 - mean) / sd } else { 0.0 }).collect();
    let lowest = z.iter().copied().fold(f32::INFINITY, f32::min);
    (z, lowest)
}

fn sorted(scores: HashMap<u64, (f32, usize)>) -> Vec<(u64, f32)> {
    let mut fused: Vec<(u64, f32, usize)> = scores.into_iter().map(|(id, (s, order))| (id, s, order)).collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
    fused.into_iter().map(|(id, s, _)| (id, s)).collect()
}

/// Whether an embedding model trained on `languages` (ISO 639-1 codes) should rank `query`: false when
/// most of the query's letters (digits do not count: "美国2021年GDP增长多少" is a Chinese question) are
/// Chinese, Japanese or Korean and the model covers none of those languages. Hybrid search then fuses only the keyword ranking, because an English-only model's
/// neighbours for a Chinese query are noise that fusion would mix in (measured on CMRC 2018: Recall@10
/// 0.997 for BM25, 0.79 when fused with such noise).
pub fn embedder_covers(languages: &[String], query: &str) -> bool {
    !quarry_core::is_mostly_cjk(query)
        || languages.iter().any(|l| matches!(l.as_str(), "zh" | "ja" | "ko" | "multilingual"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fusion_names_round_trip_and_bad_ones_are_refused() {
        for text in [
            "rrf",
            "rrf:0.7@100",
            "minmax:0.3",
            "zscore@20",
            "rrf-adaptive@80",
            "minmax-adaptive",
            "minmax-adaptive@60",
            "minmax-confidence",
            "minmax-confidence@100",
        ] {
            let fusion: HybridFusion = text.parse().unwrap();
            assert_eq!(fusion.to_string(), text);
        }
        assert_eq!("minmax-confidence".parse::<HybridFusion>().unwrap(), HybridFusion::default());
        assert_eq!("minmax".parse::<HybridFusion>().unwrap(), HybridFusion::MinMax { dense_weight: 0.5, depth: None });
        for bad in ["borda", "rrf:1.5", "rrf@x", "rrf-adaptive:0.6", "minmax-adaptive:0.6", "minmax-confidence:0.7"] {
            assert!(bad.parse::<HybridFusion>().unwrap_err().contains(bad), "{bad}");
        }
    }

    #[test]
    fn plain_rrf_orders_as_reciprocal_rank_fusion() {
        let bm25 = [(7, 9.0), (3, 5.0), (1, 1.0)];
        let dense = [(9, 0.9), (3, 0.8), (5, 0.1)];
        let ids = |l: Vec<(u64, f32)>| l.into_iter().map(|h| h.0).collect::<Vec<_>>();
        let plain = reciprocal_rank_fusion(&[vec![7, 3, 1], vec![9, 3, 5]], RRF_K);
        assert_eq!(ids("rrf".parse::<HybridFusion>().unwrap().fuse(&bm25, &dense, 10)), ids(plain));
    }

    #[test]
    fn weights_and_scores_move_the_order() {
        let bm25 = [(1, 20.0), (2, 19.0), (3, 1.0)];
        let dense = [(3, 0.9), (4, 0.5), (1, 0.1)];
        let first = |f: &str| f.parse::<HybridFusion>().unwrap().fuse(&bm25, &dense, 10)[0].0;
        assert_eq!(first("rrf:0.9"), 3, "dense-heavy RRF follows dense's first");
        assert_eq!(first("rrf:0.1"), 1, "BM25-heavy RRF follows BM25's first");
        // min-max: 1 = 0.5·1 + 0.5·0 = 0.5; 3 = 0.5·0 + 0.5·1 = 0.5; 2 = 0.5·(18/19) ≈ 0.47 — tie kept in
        // first-seen order, so 1 wins.
        assert_eq!(first("minmax"), 1);
        assert_eq!(first("minmax:0.6"), 3);
        // Depth 1 keeps only each list's first: 1 and 3.
        assert_eq!("rrf@1".parse::<HybridFusion>().unwrap().fuse(&bm25, &dense, 1).len(), 2);
    }

    #[test]
    fn a_chunk_without_an_embedding_is_ranked_by_bm25_alone() {
        // Chunk 2 waits for its embedding: dense search cannot rank it. BM25 puts it second.
        let bm25 = [(1, 20.0), (2, 19.0), (3, 1.0)];
        let dense = [(3, 0.9), (4, 0.5), (1, 0.1)];
        let waiting: HashSet<u64> = [2].into_iter().collect();
        for name in ["minmax", "minmax-confidence", "zscore", "rrf", "rrf-adaptive"] {
            let fusion: HybridFusion = name.parse().unwrap();
            let plain = fusion.fuse(&bm25, &dense, 10);
            let partly = fusion.fuse_partly_embedded(&bm25, &dense, 10, &waiting);
            let score = |list: &[(u64, f32)], id: u64| list.iter().find(|h| h.0 == id).unwrap().1;
            assert!(score(&partly, 2) > score(&plain, 2), "{name}: the missing dense part is not held against it");
            for id in [1, 3, 4] {
                assert_eq!(score(&partly, id), score(&plain, id), "{name}: embedded chunks keep their scores");
            }
            assert_eq!(fusion.fuse_partly_embedded(&bm25, &dense, 10, &HashSet::new()), plain, "{name}");
        }
        // Min-max: chunk 2's BM25 part is 18/19 of the top, and so is its dense part now, so its fused
        // score is its BM25 score alone; chunk 1, which dense ranked last, falls to 0.5.
        let partly = "minmax".parse::<HybridFusion>().unwrap().fuse_partly_embedded(&bm25, &dense, 10, &waiting);
        assert_eq!(partly[0].0, 2, "{partly:?}");
        assert!((partly[0].1 - 18.0 / 19.0).abs() < 1e-6, "BM25 alone: {partly:?}");
    }

    #[test]
    fn adaptive_rrf_trusts_the_list_whose_first_hit_stands_out() {
        // BM25's first stands far above the rest; dense's scores are flat.
        let bm25: Vec<(u64, f32)> = [(1, 30.0)].into_iter().chain((10..19).map(|i| (i, 5.0))).collect();
        let dense: Vec<(u64, f32)> = (20..30).map(|i| (i, 0.50 - i as f32 * 0.001)).collect();
        let fused = "rrf-adaptive".parse::<HybridFusion>().unwrap().fuse(&bm25, &dense, 10);
        assert_eq!(fused[0].0, 1);
        assert_eq!(fused[1].0, 10, "BM25's second outranks dense's first too");
    }

    #[test]
    fn adaptive_min_max_weights_the_list_whose_first_hit_stands_out() {
        // Dense's first stands far above a plateau; BM25's top ten fall off evenly.
        let dense: Vec<(u64, f32)> =
            [(1, 0.9)].into_iter().chain((10..19).map(|i| (i, 0.30))).chain([(99, 0.29)]).collect();
        let bm25: Vec<(u64, f32)> = (20..30).map(|i| (i, 30.0 - i as f32)).collect();
        let wd = adaptive_dense_weight(&bm25, &dense);
        // dense: ranks 2–10 normalise to 0.01/0.61 ≈ 0.016 → confidence ≈ 0.98; BM25: (8..0)/9 → mean 4/9 → 0.56.
        assert!((wd - 0.98 / (0.98 + 5.0 / 9.0)).abs() < 0.01, "{wd}");
        let fused = "minmax-adaptive".parse::<HybridFusion>().unwrap().fuse(&bm25, &dense, 10);
        assert_eq!(fused[0].0, 1);
        assert_eq!(fused[1].0, 20, "BM25's first (0.36) still outranks dense's plateau (≈ 0.01)");
        assert_eq!(adaptive_dense_weight(&[], &[]), 0.5, "nothing to go by");
        assert_eq!(adaptive_dense_weight(&[], &dense), 1.0, "no keyword match: dense alone");
    }

    #[test]
    fn the_confidence_weight_follows_the_list_whose_first_score_stands_out() {
        // Equal confidence: σ(0.4) ≈ 0.599.
        let flat: Vec<(u64, f32)> = (0..10).map(|i| (i, 10.0 - i as f32)).collect();
        assert!((confidence_dense_weight(&flat, &flat) - 0.5987).abs() < 1e-3);
        // BM25's first stands 3 standard deviations above a plateau of 9 (z = 3); dense falls off evenly
        // (z = 1.567): σ(0.5·(1.567 − 3) + 0.4) ≈ 0.42, so BM25 leads.
        let peaked: Vec<(u64, f32)> = [(100, 40.0)].into_iter().chain((101..110).map(|i| (i, 10.0))).collect();
        let wd = confidence_dense_weight(&peaked, &flat);
        assert!((wd - 0.4212).abs() < 1e-3, "{wd}");
        let fused = "minmax-confidence".parse::<HybridFusion>().unwrap().fuse(&peaked, &flat, 10);
        assert_eq!(fused[0].0, 100, "BM25's clear first wins");
        assert_eq!(fused[1].0, 0, "dense's first (0.42) beats BM25's plateau (0)");
        // No keyword match: dense alone decides.
        assert_eq!("minmax-confidence".parse::<HybridFusion>().unwrap().fuse(&[], &flat, 3)[0].0, 0);
        assert_eq!(confidence_dense_weight(&[], &[]), confidence_dense_weight(&flat, &flat));
    }

    #[test]
    fn english_models_do_not_rank_chinese_queries() {
        let english = vec!["en".to_string()];
        assert!(!embedder_covers(&english, "中国联通2022年的资本开支是多少？"));
        assert!(embedder_covers(&english, "What was Apple's revenue in 2023 Q3?"));
        assert!(embedder_covers(&english, "iPhone 在中国 sales"), "mixed, mostly Latin letters");
        assert!(!embedder_covers(&english, "美国2021年GDP增长多少"), "digits are not letters");
        assert!(embedder_covers(&english, "2021 GDP 美国"), "3 Latin letters against 2 Chinese");
        assert!(embedder_covers(&["zh".to_string()], "资本开支"));
    }

    #[test]
    fn agreement_beats_a_single_first_place() {
        // 7 is first in one list only; 3 is second in both: 2/62 > 1/61.
        let fused = reciprocal_rank_fusion(&[vec![7, 3, 1], vec![9, 3, 5]], RRF_K);
        assert_eq!(fused[0].0, 3);
        assert!((fused[0].1 - 2.0 / 62.0).abs() < 1e-6);
        assert_eq!(fused.len(), 5);
    }
}
