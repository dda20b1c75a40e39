//! The embedder run of `quarry eval embedder`: how fast Quarry's embedder turns texts into vectors,
//! beside the Python onnxruntime reference on the same texts (the ingest's wall is the embedding, so
//! Quarry's embedder must run at least at ONNX Runtime's own speed).
//!
//! Quarry embeds the texts once (after an 8-text warm-up); then, when asked, the reference script
//! (`scripts/embed-reference.py`) embeds the same texts with the same model file, batched the same way
//! (the configuration's threads, batch size, padded-token cap and maximum length). The result gives both
//! speeds and the cosine similarity of the two engines' vectors (they must agree). The CLI picks the
//! texts (a library's chunks as an ingest embeds them) and prints.

use crate::EvalError;
use quarry_index::{Embedder, EmbedderConfig};
use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// One engine's pass over the texts.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineRun {
    /// "Quarry (model id)" or "Python onnxruntime (version)".
    pub engine: String,
    /// Wall-clock seconds of the pass (the warm-up not counted).
    pub seconds: f64,
    /// Word pieces the engine counted over the texts.
    pub tokens: usize,
}

/// What [`compare_embedders`] measured.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbedderComparison {
    /// Quarry's pass, then the reference's when it ran.
    pub runs: Vec<EngineRun>,
    /// Mean and lowest cosine of the two engines' vectors of each text, when the reference ran.
    pub agreement: Option<(f32, f32)>,
}

impl EmbedderComparison {
    /// Reference seconds / Quarry seconds (≥ 1: Quarry is at least as fast), when the reference ran.
    pub fn ratio(&self) -> Option<f64> {
        (self.runs.len() == 2).then(|| self.runs[1].seconds / self.runs[0].seconds)
    }
}

/// The Python side of a comparison: an interpreter with onnxruntime, tokenizers and numpy
/// (`scripts/bench-embedder.sh` makes one) and the reference script.
#[derive(Debug, Clone, Copy)]
pub struct PythonReference<'a> {
    /// The interpreter.
    pub python: &'a Path,
    /// `scripts/embed-reference.py` or a script with its arguments and report.
    pub script: &'a Path,
}

/// Embeds `texts` with the model `config` names and, with `reference`, with the Python reference too.
///
/// Errors: the model cannot be loaded or embedding fails ([`EvalError::Index`]); the reference is asked
/// for a model that is not ONNX (e5 runs in its own engine), cannot be started, fails, or writes a
/// report or vectors of the wrong shape ([`EvalError::Reference`], naming what went wrong).
pub fn compare_embedders(
    texts: &[String],
    config: &EmbedderConfig,
    reference: Option<PythonReference<'_>>,
) -> Result<EmbedderComparison, EvalError> {
    let failed = |what: String| EvalError::Reference(what);
    if reference.is_some() && config.model_id == quarry_index::MULTILINGUAL_E5_MODEL_ID {
        return Err(failed(format!(
            "the Python reference runs ONNX models only; {} runs in its own engine",
            config.model_id
        )));
    }
    let mut embedder = Embedder::new(config)?;
    let counter = embedder.token_counter();
    let tokens: usize = texts.iter().map(|t| counter(t)).sum();
    embedder.embed(&texts[..texts.len().min(8)])?;
    let started = Instant::now();
    let quarry_vectors = embedder.embed(texts)?;
    let mut runs = vec![EngineRun {
        engine: format!("Quarry ({})", config.model_id),
        seconds: started.elapsed().as_secs_f64(),
        tokens,
    }];
    let Some(reference) = reference else {
        return Ok(EmbedderComparison { runs, agreement: None });
    };
    // Removed when it goes out of scope, whether the reference succeeds or fails.
    let folder = tempfile::Builder::new()
        .prefix("quarry-eval-embedder-")
        .tempdir()
        .map_err(|e| failed(format!("a temporary folder: {e}")))?;
    let dir = folder.path();
    let io = |e: std::io::Error| failed(format!("{}: {e}", dir.display()));
    let texts_file = dir.join("texts.jsonl");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&texts_file).map_err(io)?);
    for text in texts {
        writeln!(out, "{}", serde_json::json!({ "text": text })).map_err(io)?;
    }
    out.flush().map_err(io)?;
    drop(out);
    let vectors_file = dir.join("vectors.f32");
    let output = std::process::Command::new(reference.python)
        .arg(reference.script)
        .arg("--model-dir")
        .arg(embedder.model_dir())
        .arg("--texts")
        .arg(&texts_file)
        .arg("--threads")
        .arg(config.threads.to_string())
        .arg("--batch-size")
        .arg(config.batch_size.to_string())
        .arg("--batch-tokens")
        .arg(config.batch_tokens.to_string())
        .arg("--max-length")
        .arg(config.max_length.to_string())
        .arg("--vectors-out")
        .arg(&vectors_file)
        .output()
        .map_err(|e| failed(format!("running {} {}: {e}", reference.python.display(), reference.script.display())))?;
    if !output.status.success() {
        return Err(failed(format!("the reference failed: {}", String::from_utf8_lossy(&output.stderr).trim())));
    }
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).map_err(|e| {
        failed(format!("reading the reference's report {:?}: {e}", String::from_utf8_lossy(&output.stdout)))
    })?;
    runs.push(EngineRun {
        engine: format!("Python onnxruntime {}", report["onnxruntime"].as_str().unwrap_or("?")),
        seconds: report["seconds"].as_f64().unwrap_or(f64::NAN),
        tokens: report["tokens"].as_u64().unwrap_or(0) as usize,
    });
    let bytes = std::fs::read(&vectors_file).map_err(io)?;
    drop(folder);
    let floats: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    let dimension = embedder.dimension();
    if floats.len() != dimension * texts.len() {
        return Err(failed(format!(
            "the reference wrote {} floats for {} texts of {dimension}",
            floats.len(),
            texts.len()
        )));
    }
    let cosines: Vec<f32> = quarry_vectors.iter().zip(floats.chunks(dimension)).map(|(a, b)| cosine(a, b)).collect();
    let lowest = cosines.iter().copied().fold(f32::INFINITY, f32::min);
    let mean = cosines.iter().sum::<f32>() / cosines.len().max(1) as f32;
    Ok(EmbedderComparison { runs, agreement: Some((mean, lowest)) })
}

/// The cosine of the angle between `a` and `b` (0 when either is all zeros).
fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b)).max(f32::EPSILON)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_is_one_for_the_same_direction_and_zero_for_a_zero_vector() {
        assert!((cosine(&[1.0, 2.0], &[2.0, 4.0]) - 1.0).abs() < 1e-6);
        assert!(cosine(&[1.0, 0.0], &[0.0, 1.0]).abs() < 1e-6);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 1.0]), 0.0);
    }

    #[test]
    fn the_ratio_is_reference_seconds_over_quarry_seconds() {
        let run = |seconds| EngineRun { engine: String::new(), seconds, tokens: 0 };
        let one = EmbedderComparison { runs: vec![run(2.0)], agreement: None };
        assert_eq!(one.ratio(), None);
        let two = EmbedderComparison { runs: vec![run(2.0), run(3.0)], agreement: Some((1.0, 1.0)) };
        assert_eq!(two.ratio(), Some(1.5));
    }
}
