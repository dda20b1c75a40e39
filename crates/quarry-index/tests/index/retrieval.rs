//! Retrieval on real benchmark sets from ../shared/eval/A_benchmarks, with the real embedding model.

use quarry_index::eval::{evaluate_retrieval, load_set, EvalSet};
use quarry_index::{Embedder, EmbedderConfig, HybridFusion};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

pub fn benchmarks() -> PathBuf {
    let dir = std::env::var_os("QUARRY_EVAL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/eval"))
        .join("A_benchmarks");
    assert!(dir.is_dir(), "benchmarks not found at {} (set QUARRY_EVAL_DIR)", dir.display());
    dir
}

#[test]
fn bm25_reads_simplified_and_traditional_chinese() {
    // CMRC 2018 is Simplified Chinese (jieba's dictionary), DRCD Traditional (bigrams carry it).
    for (name, limit) in [("cmrc2018_trial", 300), ("drcd_dev", 300)] {
        let set = load_set(&benchmarks().join(name), Some(limit)).unwrap();
        let report = evaluate_retrieval(&set, None, &[HybridFusion::default()], None, &mut |_, _, _| {}).unwrap();
        let bm25 = &report.results["bm25"];
        eprintln!("{name}: {bm25:?}");
        assert!(bm25.recall_at_5 >= 0.95, "{name}: BM25 Recall@5 {:.3}", bm25.recall_at_5);
        assert!(!report.results.contains_key("dense"), "no embedder, no dense mode");
    }
}

/// The first `queries` questions of a set with their relevant passages and `distractors` others.
fn subset(set: EvalSet, queries: usize, distractors: usize) -> EvalSet {
    let queries: Vec<(String, String)> = set.queries.into_iter().take(queries).collect();
    let needed: HashSet<&String> = queries.iter().flat_map(|(q, _)| set.relevant[q].iter()).collect();
    let mut others = 0;
    let passages = set
        .passages
        .iter()
        .filter(|(id, _)| {
            needed.contains(id) || {
                others += 1;
                others <= distractors
            }
        })
        .cloned()
        .collect();
    EvalSet { name: set.name.clone(), passages, queries, relevant: set.relevant.clone(), answers: set.answers.clone() }
}

#[test]
fn dense_and_hybrid_search_with_the_local_model() {
    let config = EmbedderConfig::default_model().expect("model files from scripts/setup.sh");
    let mut embedder = Embedder::new(&config).unwrap();
    assert_eq!(embedder.dimension(), 384);
    let set = subset(load_set(&benchmarks().join("musique_hipporag100"), None).unwrap(), 25, 400);
    let fusions: Vec<HybridFusion> =
        ["minmax-confidence", "minmax", "rrf", "rrf:0.7@100", "zscore"].iter().map(|f| f.parse().unwrap()).collect();
    let cache = tempfile::tempdir().unwrap();
    let report =
        evaluate_retrieval(&set, Some(&mut embedder), &fusions, Some(cache.path()), &mut |_, _, _| {}).unwrap();
    eprintln!("{:#?}", report.results);
    let modes: Vec<&str> = report.results.keys().map(String::as_str).collect();
    assert_eq!(
        modes,
        ["bm25", "dense", "hybrid", "hybrid minmax", "hybrid rrf", "hybrid rrf:0.7@100", "hybrid zscore"]
    );
    let (bm25, dense, hybrid) = (&report.results["bm25"], &report.results["dense"], &report.results["hybrid"]);
    // Multi-hop questions: the embedder finds more of the supporting passages than keywords do.
    assert!(dense.recall_at_10 > 0.5, "dense Recall@10 {:.3}", dense.recall_at_10);
    assert!(hybrid.recall_at_10 >= bm25.recall_at_10, "fusion must not fall below BM25");
    // Where dense is much the better side (MuSiQue), fusing scores keeps more of its lead than fusing ranks
    // (on these 25 questions: Recall@5 0.68 against 0.62, nDCG@10 0.70 against 0.66).
    let (minmax, rrf) = (&report.results["hybrid minmax"], &report.results["hybrid rrf"]);
    assert!(
        minmax.recall_at_5 > rrf.recall_at_5 && minmax.ndcg_at_10 > rrf.ndcg_at_10,
        "min-max {minmax:?} vs RRF {rrf:?}"
    );

    // Each query's rankings before fusion are kept, as deep as the deepest fusion (rrf:0.7@100).
    assert_eq!(report.rankings.len(), 25);
    assert!(report
        .rankings
        .iter()
        .all(|q| q.fused && q.dense.len() == 100 && q.dense.windows(2).all(|w| w[0].1 >= w[1].1)));
    // The passage vectors were cached: a second run reads them back and ranks the same (dense only: BM25's
    // order among tied scores may differ between two in-memory indexes).
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 1, "one vector file for this model and corpus");
    let again = evaluate_retrieval(&set, Some(&mut embedder), &fusions, Some(cache.path()), &mut |_, _, _| {}).unwrap();
    assert_eq!(again.results["dense"], report.results["dense"]);
}

#[test]
fn embeddings_keep_the_callers_order_and_reflect_meaning() {
    let config = EmbedderConfig::default_model().unwrap();
    let mut embedder = Embedder::new(&config).unwrap();
    let texts = [
        "The aircraft landed safely after the engine failure.",
        "Revenue",
        "Apple's quarterly revenue grew because iPhone sales increased in every region.",
        "The plane touched down without injuries following a loss of engine power.",
    ];
    let vectors = embedder.embed(&texts).unwrap();
    let one_by_one: Vec<Vec<f32>> = texts.iter().map(|t| embedder.embed(&[*t]).unwrap().remove(0)).collect();
    for (a, b) in vectors.iter().zip(&one_by_one) {
        let cos: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>() / (norm(a) * norm(b));
        assert!(cos > 0.999, "batching or sorting changed a vector: cos {cos}");
    }
    let cos = |i: usize, j: usize| {
        vectors[i].iter().zip(&vectors[j]).map(|(x, y)| x * y).sum::<f32>() / (norm(&vectors[i]) * norm(&vectors[j]))
    };
    assert!(cos(0, 3) > cos(0, 2) + 0.2, "paraphrase {} vs unrelated {}", cos(0, 3), cos(0, 2));
}

#[test]
fn a_token_budget_splits_calls_without_changing_vectors() {
    // A budget of 600 padded tokens per call: a 512-token text goes alone, short ones go together.
    let mut config = EmbedderConfig::default_model().unwrap();
    config.batch_tokens = 600;
    let mut embedder = Embedder::new(&config).unwrap();
    let long = "The board reviewed the quarterly results and the outlook for the next fiscal year. ".repeat(60);
    let mut texts: Vec<String> =
        (0..30).map(|i| format!("Passage {i} about engine failures and safe landings.")).collect();
    texts.insert(7, long.clone());
    texts.insert(19, long[..long.len() / 3].to_string());
    let vectors = embedder.embed(&texts).unwrap();
    assert_eq!(vectors.len(), texts.len());
    for (i, text) in texts.iter().enumerate() {
        let alone = embedder.embed(&[text.as_str()]).unwrap().remove(0);
        let cos: f32 =
            vectors[i].iter().zip(&alone).map(|(x, y)| x * y).sum::<f32>() / (norm(&vectors[i]) * norm(&alone));
        assert!(cos > 0.999, "text {i}: cos {cos}");
    }
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}
