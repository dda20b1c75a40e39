//! Searching several libraries as one: each library's ranking, fused by reciprocal rank fusion
//! ([`quarry_core::rank_fusion`], k = 60, as in hybrid search).

use quarry_core::rank_fusion::RankFusion;
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
        let mut fusion: RankFusion<(String, u64)> = RankFusion::default();
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

    /// The passages of the part that holds `library`'s document (the first that lists any).
    async fn document_passages(&self, library: &str, document_id: &str) -> Result<Vec<Passage>, RetrievalError> {
        for part in &self.parts {
            let passages = part.document_passages(library, document_id).await?;
            if !passages.is_empty() {
                return Ok(passages);
            }
        }
        Ok(Vec::new())
    }
}
