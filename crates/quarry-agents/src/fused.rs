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
        let mut scored: HashMap<(String, u64), (f32, usize, Passage)> = HashMap::new();
        let mut order = 0;
        for list in lists {
            for (rank, passage) in list?.into_iter().enumerate() {
                let entry = scored.entry(passage.key()).or_insert_with(|| {
                    order += 1;
                    (0.0, order, passage)
                });
                entry.0 += 1.0 / (60.0 + rank as f32 + 1.0);
            }
        }
        let mut fused: Vec<(f32, usize, Passage)> = scored.into_values().collect();
        fused.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        Ok(fused.into_iter().take(k).map(|(score, _, mut p)| {
            p.score = score;
            p
        }).collect())
    }
}
