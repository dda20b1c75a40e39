//! Retrieval evaluation on BEIR-style sets: `corpus.jsonl` (`_id`, `title`?, `text`), `queries.jsonl`
//! (`_id`, `text`), `qrels.tsv` (query-id, corpus-id, score; tab-separated, header line). One passage = one chunk (as
//! deep-searcher loads its evaluation corpora), so hits map straight back to qrels.
//!
//! Metrics, averaged over queries that have at least one relevant passage:
//! - Recall@k = |relevant ∩ top k| / |relevant| (deep-searcher's `evaluation/evaluate.py`), k = 2, 5, 10;
//! - nDCG@10 with binary gains (Järvelin & Kekäläinen 2002);
//! - MRR@10 = 1 / rank of the first relevant passage within the top 10, else 0.
//!
//! Hybrid is what search will do: a fusion of the BM25 and dense rankings ([`HybridFusion`]; several can be
//! compared in one run), or BM25 alone for queries in a script the embedding model does not cover (see
//! [`quarry_index::embedder_covers`]).

use crate::EvalError;
use quarry_index::{embedder_covers, fusion_depth, Embedder, HybridFusion, KeywordIndex, VectorIndex};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

/// Candidates each retriever contributes before fusion: the same depth `Library::search` uses for k = 10.
fn eval_fusion_depth() -> usize {
    fusion_depth(10)
}

/// A loaded evaluation set.
#[derive(Debug)]
pub struct EvalSet {
    /// The set's folder name.
    pub name: String,
    /// (passage id, text to index: title and text).
    pub passages: Vec<(String, String)>,
    /// (query id, query text), only queries with qrels.
    pub queries: Vec<(String, String)>,
    /// The relevant passage (or document) ids of each query id, from qrels.tsv.
    pub relevant: HashMap<String, HashSet<String>>,
    /// Reference answers by query id (from `answers` in queries.jsonl; empty when the set has none).
    pub answers: HashMap<String, Vec<String>>,
}

/// Loads a set from `dir`. `limit` keeps the first N queries (the corpus stays whole).
///
/// Errors: a missing file or a line that is not the expected JSON/TSV, naming file and line.
pub fn load_set(dir: &Path, limit: Option<usize>) -> Result<EvalSet, EvalError> {
    load(dir, limit, true)
}

/// Loads only the questions of `dir` (queries.jsonl and qrels.tsv; `passages` stays empty): for sets
/// asked of a library whose documents are the corpus, where qrels name documents by path.
///
/// Errors: as [`load_set`].
pub fn load_queries(dir: &Path, limit: Option<usize>) -> Result<EvalSet, EvalError> {
    load(dir, limit, false)
}

fn load(dir: &Path, limit: Option<usize>, with_corpus: bool) -> Result<EvalSet, EvalError> {
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .map_err(|e| EvalError::Set(format!("{}: {e}", dir.join(name).display())))
    };
    let json_lines = |name: &str| -> Result<Vec<serde_json::Value>, EvalError> {
        read(name)?
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| serde_json::from_str(l).map_err(|e| EvalError::Set(format!("{name} line {}: {e}", i + 1))))
            .collect()
    };
    let field = |v: &serde_json::Value, key: &str| v.get(key).and_then(|x| x.as_str()).unwrap_or("").to_string();
    let corpus = if with_corpus { json_lines("corpus.jsonl")? } else { Vec::new() };
    let passages: Vec<(String, String)> = corpus
        .iter()
        .map(|v| {
            let (title, text) = (field(v, "title"), field(v, "text"));
            (field(v, "_id"), if title.is_empty() { text } else { format!("{title}\n{text}") })
        })
        .collect();
    let mut relevant: HashMap<String, HashSet<String>> = HashMap::new();
    for (i, line) in read("qrels.tsv")?.lines().enumerate().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() < 2 {
            continue;
        }
        let score: f64 = cols.get(2).and_then(|s| s.trim().parse().ok()).unwrap_or(1.0);
        if cols[0].is_empty() || cols[1].is_empty() {
            return Err(EvalError::Set(format!("qrels.tsv line {}: empty id", i + 1)));
        }
        if score > 0.0 {
            relevant.entry(cols[0].to_string()).or_default().insert(cols[1].to_string());
        }
    }
    let query_lines = json_lines("queries.jsonl")?;
    let answers: HashMap<String, Vec<String>> = query_lines
        .iter()
        .map(|v| {
            let list = match v.get("answers") {
                Some(serde_json::Value::Array(items)) => {
                    items.iter().filter_map(|a| a.as_str().map(str::to_string)).collect()
                }
                Some(serde_json::Value::String(one)) => vec![one.clone()],
                _ => Vec::new(),
            };
            (field(v, "_id"), list)
        })
        .collect();
    let mut queries: Vec<(String, String)> = query_lines
        .iter()
        .map(|v| (field(v, "_id"), field(v, "text")))
        .filter(|(id, _)| relevant.contains_key(id))
        .collect();
    if let Some(limit) = limit {
        queries.truncate(limit);
    }
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(EvalSet { name, passages, queries, relevant, answers })
}

/// Averages of the metrics over a set's queries.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Metrics {
    /// Share of a query's relevant passages among the first 2, averaged.
    #[serde(rename = "recall@2")]
    pub recall_at_2: f64,
    /// The same among the first 5.
    #[serde(rename = "recall@5")]
    pub recall_at_5: f64,
    /// The same among the first 10.
    #[serde(rename = "recall@10")]
    pub recall_at_10: f64,
    /// Normalised discounted cumulative gain of the first 10 (binary relevance).
    #[serde(rename = "ndcg@10")]
    pub ndcg_at_10: f64,
    /// Reciprocal rank of the first relevant passage within the first 10 (0 beyond).
    #[serde(rename = "mrr@10")]
    pub mrr_at_10: f64,
}

/// Recall@k: the share of the `relevant` items that `matches` one of the first `k` items of `ranking`
/// (best first); 0 when nothing is relevant. As deep-searcher's `evaluation/evaluate.py` defines it, and
/// the one definition every eval command uses: passages by id ([`score_ranking`]), documents by path
/// (`quarry eval library`), supporting passages an answer cites (`quarry eval qa`), exact search's
/// neighbours among ANN search's (`quarry eval latency`).
pub fn recall_at<T, R>(ranking: &[T], relevant: &[R], k: usize, matches: impl Fn(&T, &R) -> bool) -> f64 {
    let top = &ranking[..k.min(ranking.len())];
    let found = relevant.iter().filter(|r| top.iter().any(|item| matches(item, r))).count();
    found as f64 / relevant.len().max(1) as f64
}

/// Metrics of one ranking (passage ids, best first) against the relevant ids.
pub fn score_ranking(ranking: &[String], relevant: &HashSet<String>) -> Metrics {
    let relevant_ids: Vec<&String> = relevant.iter().collect();
    let recall = |k: usize| recall_at(ranking, &relevant_ids, k, |id, r| id == *r);
    let dcg: f64 = ranking
        .iter()
        .take(10)
        .enumerate()
        .filter(|(_, id)| relevant.contains(*id))
        .map(|(i, _)| 1.0 / (i as f64 + 2.0).log2())
        .sum();
    let ideal: f64 = (0..relevant.len().min(10)).map(|i| 1.0 / (i as f64 + 2.0).log2()).sum();
    let mrr =
        ranking.iter().take(10).position(|id| relevant.contains(id)).map(|p| 1.0 / (p as f64 + 1.0)).unwrap_or(0.0);
    Metrics {
        recall_at_2: recall(2),
        recall_at_5: recall(5),
        recall_at_10: recall(10),
        ndcg_at_10: if ideal > 0.0 { dcg / ideal } else { 0.0 },
        mrr_at_10: mrr,
    }
}

fn mean(all: &[Metrics]) -> Metrics {
    let n = all.len().max(1) as f64;
    let sum = |f: fn(&Metrics) -> f64| all.iter().map(f).sum::<f64>() / n;
    Metrics {
        recall_at_2: sum(|m| m.recall_at_2),
        recall_at_5: sum(|m| m.recall_at_5),
        recall_at_10: sum(|m| m.recall_at_10),
        ndcg_at_10: sum(|m| m.ndcg_at_10),
        mrr_at_10: sum(|m| m.mrr_at_10),
    }
}

/// The result of [`evaluate_retrieval`], shaped as `quarry eval retrieval --json` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct RetrievalReport {
    /// The set's name.
    pub set: String,
    /// Queries scored.
    pub queries: usize,
    /// Passages indexed.
    pub passages: usize,
    /// Metrics by search mode or fusion (`bm25`, `dense`, `hybrid`, `rrf:0.6`, …).
    pub results: BTreeMap<String, Metrics>,
    /// Seconds spent indexing (`index_bm25`, `index_dense`, embedding included) and ranking all queries
    /// both ways (`query_rankings`).
    pub seconds: BTreeMap<String, f64>,
    /// Each query's two rankings before fusion, in query order (`quarry eval retrieval --rankings`
    /// writes them out so that fusions can be studied offline).
    #[serde(skip)]
    pub rankings: Vec<QueryRankings>,
}

/// One query's BM25 and dense rankings, each (passage id, raw score) best first, as deep as the deepest
/// fusion asked. `fused` is false when hybrid search ranks this query by BM25 alone (a mostly-CJK query
/// and a model without CJK, see [`embedder_covers`]).
#[derive(Debug, Clone, Serialize)]
pub struct QueryRankings {
    /// The query's id.
    pub query_id: String,
    /// Whether hybrid search fuses both rankings for it (false: BM25 alone).
    pub fused: bool,
    /// The BM25 ranking.
    pub bm25: Vec<(String, f32)>,
    /// The dense ranking.
    pub dense: Vec<(String, f32)>,
}

/// FNV-1a (64 bit) over the model id and every passage, a stable key for cached passage vectors.
fn corpus_key(model_id: &str, passages: &[(String, String)]) -> u64 {
    let mut hash: u64 = 0xcbf29ce484222325;
    for bytes in std::iter::once(model_id.as_bytes())
        .chain(passages.iter().flat_map(|(id, text)| [id.as_bytes(), text.as_bytes()]))
    {
        for b in bytes.iter().chain(&[0xff]) {
            hash ^= *b as u64;
            hash = hash.wrapping_mul(0x100000001b3);
        }
    }
    hash
}

/// Embeddings of `passages` (their text; one vector of [`Embedder::dimension`] each, in order), read from
/// `cache` (a folder) when it holds this model's vectors of exactly these passages, else embedded in
/// slices of 1,024 and written there as little-endian f32 (a cache that cannot be written is only
/// logged). `progress("embedding passages", done, total)` follows the embedding.
///
/// Errors: the embedder's.
pub fn passage_vectors(
    embedder: &mut Embedder,
    passages: &[(String, String)],
    cache: Option<&Path>,
    progress: &mut dyn FnMut(&str, usize, usize),
) -> Result<Vec<Vec<f32>>, EvalError> {
    let dimension = embedder.dimension();
    let file = cache.map(|dir| {
        dir.join(format!(
            "{}-{:016x}.f32",
            embedder.model_id().replace('/', "_"),
            corpus_key(embedder.model_id(), passages)
        ))
    });
    if let Some(bytes) = file.as_ref().and_then(|f| std::fs::read(f).ok()) {
        if bytes.len() == passages.len() * dimension * 4 {
            let floats: Vec<f32> =
                bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
            return Ok(floats.chunks(dimension).map(<[f32]>::to_vec).collect());
        }
    }
    let mut vectors = Vec::with_capacity(passages.len());
    // Large slices, so that sorting by length (see `Embedder::embed`) has room to work.
    for batch in passages.chunks(1024) {
        let texts: Vec<&str> = batch.iter().map(|(_, t)| t.as_str()).collect();
        vectors.extend(embedder.embed(&texts)?);
        progress("embedding passages", vectors.len(), passages.len());
    }
    if let Some(file) = file {
        let bytes: Vec<u8> = vectors.iter().flatten().flat_map(|f| f.to_le_bytes()).collect();
        let written = file.parent().map(std::fs::create_dir_all).transpose().and_then(|_| std::fs::write(&file, bytes));
        if let Err(e) = written {
            tracing::warn!("could not cache passage vectors in {}: {e}", file.display());
        }
    }
    Ok(vectors)
}

/// Indexes the set's passages (BM25, and embeddings when `embedder` is given) and scores `bm25`, `dense`
/// and one hybrid mode per entry of `fusions` (named `hybrid` for the default fusion, `hybrid <fusion>`
/// otherwise). Each query's two rankings are computed once, as deep as the deepest fusion asks, and every
/// fusion reads its own depth from them. Without an embedder only `bm25` is reported.
/// `vector_cache`: a folder where passage vectors are kept between runs, keyed by model and corpus (so
/// `index_dense` then times a file read, not embedding). `progress(step, done, total)` is called as work
/// advances.
pub fn evaluate_retrieval(
    set: &EvalSet,
    embedder: Option<&mut Embedder>,
    fusions: &[HybridFusion],
    vector_cache: Option<&Path>,
    progress: &mut dyn FnMut(&str, usize, usize),
) -> Result<RetrievalReport, EvalError> {
    let mut seconds = BTreeMap::new();
    let started = std::time::Instant::now();
    let mut keyword = KeywordIndex::in_memory()?;
    for (i, (_, text)) in set.passages.iter().enumerate() {
        keyword.add(i as u64, "", text)?;
    }
    keyword.commit()?;
    seconds.insert("index_bm25".to_string(), started.elapsed().as_secs_f64());

    let mut vectors = None;
    let mut query_vectors = Vec::new();
    let mut languages: Vec<String> = Vec::new();
    if let Some(embedder) = embedder {
        languages = embedder.languages().to_vec();
        let started = std::time::Instant::now();
        let mut index = VectorIndex::new(embedder.dimension());
        for (i, v) in passage_vectors(embedder, &set.passages, vector_cache, progress)?.iter().enumerate() {
            index.add(i as u64, v);
        }
        let texts: Vec<&str> = set.queries.iter().map(|(_, t)| t.as_str()).collect();
        query_vectors = embedder.embed_queries(&texts)?;
        seconds.insert("index_dense".to_string(), started.elapsed().as_secs_f64());
        vectors = Some(index);
    }

    let id_of = |i: u64| set.passages[i as usize].0.clone();
    let mut per_mode: BTreeMap<String, Vec<Metrics>> = BTreeMap::new();
    let depth = fusions.iter().map(|f| f.depth(10)).chain([eval_fusion_depth()]).max().unwrap_or(eval_fusion_depth());
    // (BM25, dense) of each query: (passage id, raw score), best first.
    type Ranking = Vec<(u64, f32)>;
    let mut rankings: Vec<(Ranking, Ranking)> = Vec::with_capacity(set.queries.len());
    let started = std::time::Instant::now();
    for (qi, (_, text)) in set.queries.iter().enumerate() {
        let bm25 = keyword.search(text, depth)?;
        let dense = vectors.as_ref().map(|v| v.search(&query_vectors[qi], depth)).unwrap_or_default();
        rankings.push((bm25, dense));
    }
    seconds.insert("query_rankings".to_string(), started.elapsed().as_secs_f64());
    let named = |list: &[(u64, f32)]| list.iter().map(|&(i, score)| (id_of(i), score)).collect::<Vec<_>>();
    let query_rankings = set
        .queries
        .iter()
        .zip(&rankings)
        .map(|((qid, text), (bm25, dense))| QueryRankings {
            query_id: qid.clone(),
            fused: vectors.is_some() && embedder_covers(&languages, text),
            bm25: named(bm25),
            dense: named(dense),
        })
        .collect();
    let mut modes: Vec<(String, Option<HybridFusion>)> = vec![("bm25".into(), None)];
    if vectors.is_some() {
        modes.push(("dense".into(), None));
        for fusion in fusions {
            let name =
                if *fusion == HybridFusion::default() { "hybrid".to_string() } else { format!("hybrid {fusion}") };
            if !modes.iter().any(|(n, _)| *n == name) {
                modes.push((name, Some(*fusion)));
            }
        }
    }
    for (name, fusion) in modes {
        let mut all = Vec::with_capacity(set.queries.len());
        for ((qid, text), (bm25, dense)) in set.queries.iter().zip(&rankings) {
            let ranked: Vec<u64> = match (name.as_str(), fusion) {
                ("dense", _) => dense.iter().map(|h| h.0).collect(),
                (_, Some(fusion)) if embedder_covers(&languages, text) => {
                    fusion.fuse(bm25, dense, 10).into_iter().map(|h| h.0).collect()
                }
                _ => bm25.iter().map(|h| h.0).collect(),
            };
            let ranking: Vec<String> = ranked.into_iter().take(10).map(id_of).collect();
            all.push(score_ranking(&ranking, &set.relevant[qid]));
        }
        per_mode.insert(name, all);
    }
    progress("queries", set.queries.len(), set.queries.len());
    Ok(RetrievalReport {
        set: set.name.clone(),
        queries: set.queries.len(),
        passages: set.passages.len(),
        results: per_mode.iter().map(|(mode, all)| (mode.clone(), mean(all))).collect(),
        seconds,
        rankings: query_rankings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn questions_load_without_a_corpus() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("queries.jsonl"),
            "{\"_id\": \"q1\", \"text\": \"Apple revenue?\"}\n{\"_id\": \"q2\", \"text\": \"no qrels\"}\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("qrels.tsv"),
            "query-id\tcorpus-id\tscore\nq1\tdocs/a b.pdf\t1\nq1\tdocs/c.pdf\t1\n",
        )
        .unwrap();
        let set = load_queries(dir.path(), None).unwrap();
        assert!(set.passages.is_empty());
        assert_eq!(set.queries, vec![("q1".to_string(), "Apple revenue?".to_string())], "only questions with qrels");
        assert_eq!(set.relevant["q1"].len(), 2);
        let missing = load_set(dir.path(), None).unwrap_err().to_string();
        assert!(missing.contains("corpus.jsonl"), "{missing}");
    }

    #[test]
    fn metrics_on_a_known_ranking() {
        let relevant: HashSet<String> = ["a", "b"].iter().map(|s| s.to_string()).collect();
        let m = score_ranking(&ids(&["x", "a", "y", "z", "w", "b"]), &relevant);
        assert_eq!(m.recall_at_2, 0.5);
        assert_eq!(m.recall_at_5, 0.5);
        assert_eq!(m.recall_at_10, 1.0);
        assert_eq!(m.mrr_at_10, 0.5);
        let dcg = 1.0 / 3f64.log2() + 1.0 / 7f64.log2();
        let ideal = 1.0 + 1.0 / 3f64.log2();
        assert!((m.ndcg_at_10 - dcg / ideal).abs() < 1e-12);
    }
}
