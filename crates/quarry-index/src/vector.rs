//! Exact nearest-neighbour search by cosine similarity, in memory. Vectors are normalised on insert, so
//! a search is one dot product per vector: fine up to ~10^5 chunks of 384 dimensions (~150 MB).

/// Vectors with ids; all must have the dimension given at creation.
pub struct VectorIndex {
    dimension: usize,
    ids: Vec<u64>,
    data: Vec<f32>,
}

impl VectorIndex {
    /// An empty index of `dimension`-long vectors.
    pub fn new(dimension: usize) -> Self {
        VectorIndex { dimension, ids: Vec::new(), data: Vec::new() }
    }

    /// Adds a vector. Panics if its length is not the index's dimension (a programming error).
    pub fn add(&mut self, id: u64, vector: &[f32]) {
        assert_eq!(vector.len(), self.dimension, "vector dimension");
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
        self.ids.push(id);
        self.data.extend(vector.iter().map(|x| x / norm));
    }

    /// Vectors held.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The `k` most similar vectors to `query`, best first, as (id, cosine similarity).
    pub fn search(&self, query: &[f32], k: usize) -> Vec<(u64, f32)> {
        let norm = query.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
        let mut scored: Vec<(u64, f32)> = self
            .data
            .chunks_exact(self.dimension)
            .zip(&self.ids)
            .map(|(v, id)| (*id, v.iter().zip(query).map(|(a, b)| a * b).sum::<f32>() / norm))
            .collect();
        let k = k.min(scored.len());
        if k == 0 {
            return Vec::new();
        }
        scored.select_nth_unstable_by(k - 1, |a, b| b.1.total_cmp(&a.1));
        scored.truncate(k);
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        scored
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_by_angle_not_length() {
        let mut index = VectorIndex::new(2);
        index.add(1, &[10.0, 0.0]);
        index.add(2, &[0.0, 1.0]);
        index.add(3, &[1.0, 1.0]);
        let hits = index.search(&[0.1, 0.0], 2);
        assert_eq!(hits[0].0, 1);
        assert!((hits[0].1 - 1.0).abs() < 1e-6);
        assert_eq!(hits[1].0, 3);
    }
}
