//! `quarry eval embedder`: how fast Quarry's embedder turns a library's chunks into vectors, beside the
//! Python onnxruntime reference on the same texts (issue 40: the ingest's wall is the embedding, so
//! Quarry's embedder must run at least at ONNX Runtime's own speed).
//!
//! The texts are what an ingest embeds: chunks spread evenly over the library, each with its document's
//! context line (`quarry_store::indexed_text`). Quarry embeds them once (after an 8-text warm-up), then,
//! with `--python`, `scripts/embed-reference.py` embeds the same texts with the same model file, batched
//! the same way; the table gives both speeds, the ratio (reference seconds / Quarry seconds: ≥ 1 means
//! Quarry is as fast) and the cosine similarity of the two engines' vectors (they must agree).

use anyhow::{bail, Context};
use quarry_index::{Embedder, EmbedderConfig};
use quarry_store::{indexed_text, DataDir, Library};
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct EmbedderEvalArgs {
    /// The library whose chunks are embedded (built beforehand with `quarry add`).
    #[arg(long)]
    pub library: String,
    /// Chunks to embed, spread evenly over the library.
    #[arg(long, default_value_t = 300)]
    pub chunks: usize,
    /// A Python interpreter with onnxruntime, tokenizers and numpy: also run the reference
    /// (`scripts/bench-embedder.sh` makes one). MiniLM libraries only (e5 runs in its own engine).
    #[arg(long)]
    pub python: Option<PathBuf>,
    /// The reference script (default: `scripts/embed-reference.py` beside the current folder's `scripts`).
    #[arg(long, default_value = "scripts/embed-reference.py")]
    pub reference: PathBuf,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// One engine's run over the texts.
struct Run {
    engine: String,
    seconds: f64,
    tokens: usize,
}

pub fn embedder_eval(args: EmbedderEvalArgs, data: &DataDir) -> anyhow::Result<()> {
    let rt = tokio::runtime::Runtime::new()?;
    let library = rt.block_on(Library::open_read(data, &args.library))?;
    let model_id = library.manifest().embedding.model_id.clone();
    let contexts: HashMap<String, Option<String>> =
        library.documents().map(|d| (d.document_id.clone(), d.context.clone())).collect();
    let mut all: Vec<(String, String)> = Vec::new();
    rt.block_on(library.store().scan_texts(|_, document, text| {
        all.push((document.to_string(), text.to_string()));
        Ok(())
    }))?;
    if all.is_empty() {
        bail!("library {:?} has no chunks to embed: add documents first", args.library);
    }
    let step = (all.len() as f64 / args.chunks.max(1) as f64).max(1.0);
    let texts: Vec<String> = (0..args.chunks.min(all.len()))
        .map(|i| {
            let (document, text) = &all[((i as f64) * step) as usize];
            indexed_text(contexts.get(document).and_then(|c| c.as_deref()), text)
        })
        .collect();

    let config = EmbedderConfig::by_name(&model_id)?;
    let mut embedder =
        Embedder::new(&config).with_context(|| format!("loading the embedding model {}", config.model_id))?;
    let counter = embedder.token_counter();
    let tokens: usize = texts.iter().map(|t| counter(t)).sum();
    embedder.embed(&texts[..texts.len().min(8)])?;
    let started = Instant::now();
    let quarry_vectors = embedder.embed(&texts)?;
    let mut runs =
        vec![Run { engine: format!("Quarry ({model_id})"), seconds: started.elapsed().as_secs_f64(), tokens }];

    let mut agreement: Option<(f32, f32)> = None;
    if let Some(python) = &args.python {
        if model_id == quarry_index::MULTILINGUAL_E5_MODEL_ID {
            bail!("the Python reference runs ONNX models only; {model_id} runs in its own engine");
        }
        let dir = std::env::temp_dir().join(format!("quarry-eval-embedder-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let texts_file = dir.join("texts.jsonl");
        let mut out = std::io::BufWriter::new(std::fs::File::create(&texts_file)?);
        for text in &texts {
            writeln!(out, "{}", serde_json::json!({ "text": text }))?;
        }
        out.flush()?;
        drop(out);
        let vectors_file = dir.join("vectors.f32");
        let output = std::process::Command::new(python)
            .arg(&args.reference)
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
            .with_context(|| format!("running {} {}", python.display(), args.reference.display()))?;
        if !output.status.success() {
            bail!("the reference failed: {}", String::from_utf8_lossy(&output.stderr).trim());
        }
        let report: serde_json::Value = serde_json::from_slice(&output.stdout)
            .with_context(|| format!("reading the reference's report {:?}", String::from_utf8_lossy(&output.stdout)))?;
        runs.push(Run {
            engine: format!("Python onnxruntime {}", report["onnxruntime"].as_str().unwrap_or("?")),
            seconds: report["seconds"].as_f64().unwrap_or(f64::NAN),
            tokens: report["tokens"].as_u64().unwrap_or(0) as usize,
        });
        let bytes = std::fs::read(&vectors_file)?;
        let _ = std::fs::remove_dir_all(&dir);
        let floats: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        let dimension = embedder.dimension();
        if floats.len() != dimension * texts.len() {
            bail!("the reference wrote {} floats for {} texts of {dimension}", floats.len(), texts.len());
        }
        let cosines: Vec<f32> =
            quarry_vectors.iter().zip(floats.chunks(dimension)).map(|(a, b)| cosine(a, b)).collect();
        let lowest = cosines.iter().copied().fold(f32::INFINITY, f32::min);
        agreement = Some((cosines.iter().sum::<f32>() / cosines.len() as f32, lowest));
    }

    let ratio = (runs.len() == 2).then(|| runs[1].seconds / runs[0].seconds);
    if args.json {
        let rows: Vec<serde_json::Value> = runs
            .iter()
            .map(|r| {
                serde_json::json!({
                    "engine": r.engine, "seconds": r.seconds, "chunks": texts.len(), "tokens": r.tokens,
                    "chunks_per_second": texts.len() as f64 / r.seconds, "tokens_per_second": r.tokens as f64 / r.seconds,
                })
            })
            .collect();
        let value = serde_json::json!({
            "library": args.library, "model_id": model_id, "threads": config.threads, "runs": rows,
            "reference_seconds_over_quarry_seconds": ratio,
            "cosine_mean": agreement.map(|a| a.0), "cosine_min": agreement.map(|a| a.1),
        });
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(());
    }
    let sessions = config.side_sessions();
    println!(
        "{} chunks of library {} on {} cores, at most {} texts and {} padded tokens a call: Quarry runs its \
         calls side by side on {} sessions sharing the cores (each call then at most {} padded tokens); \
         the reference runs one session with {} intra-op threads\n",
        texts.len(),
        args.library,
        config.threads,
        config.batch_size,
        config.batch_tokens,
        sessions,
        config.batch_tokens / sessions,
        config.threads
    );
    println!("| engine | chunks | tokens | seconds | chunks/s | tokens/s |");
    println!("|---|---:|---:|---:|---:|---:|");
    for r in &runs {
        println!(
            "| {} | {} | {} | {:.1} | {:.1} | {:.0} |",
            r.engine,
            texts.len(),
            r.tokens,
            r.seconds,
            texts.len() as f64 / r.seconds,
            r.tokens as f64 / r.seconds
        );
    }
    if let (Some(ratio), Some((mean, lowest))) = (ratio, agreement) {
        println!("\nreference seconds / Quarry seconds: {ratio:.2} (≥ 1: Quarry is at least as fast)");
        println!("cosine of the two engines' vectors: mean {mean:.5}, lowest {lowest:.5}");
    }
    Ok(())
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b)).max(f32::EPSILON)
}
