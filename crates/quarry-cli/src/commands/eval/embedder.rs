//! `quarry eval embedder`: the embedder's speed on a library's chunks beside the Python onnxruntime
//! reference ([`quarry_eval::embedder_run`] runs both); this module picks the texts and prints.
//!
//! The texts are what an ingest embeds: chunks spread evenly over the library, each with its document's
//! context line (`quarry_store::indexed_text`).

use anyhow::{bail, Context};
use quarry_eval::embedder_run::{compare_embedders, PythonReference};
use quarry_index::EmbedderConfig;
use quarry_store::{indexed_text, DataDir, Library};
use std::collections::HashMap;
use std::path::PathBuf;

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
    let reference = args.python.as_deref().map(|python| PythonReference { python, script: &args.reference });
    let comparison = compare_embedders(&texts, &config, reference)
        .with_context(|| format!("embedding {} chunks with {}", texts.len(), config.model_id))?;
    let (runs, agreement, ratio) = (&comparison.runs, comparison.agreement, comparison.ratio());
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
    for r in runs {
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
