//! Parsing and chunking throughput per format, and peak memory, over a folder of real documents.
//!
//! `cargo bench -p quarry-ingest --bench parse_throughput -- [FOLDER]`
//! (default FOLDER: ../shared/eval/C_private_library/docs). Parses in this process, one file at a time,
//! so the figures are the parsers' own, without worker start-up; prints Markdown tables.

use quarry_ingest::{
    collect_inputs, parse_bytes, ChunkSizer, Chunker, ChunkerConfig, ParseEvent, ParseOptions, ParsedDocument, Status,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Default)]
struct Totals {
    files: u64,
    ok: u64,
    bytes: u64,
    pages: u64,
    chars: u64,
    time: Duration,
    slowest: (Duration, String),
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let folder = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("../shared/eval/C_private_library/docs"));
    // Parser panics are caught per file and counted as failures; keep their messages off the table.
    std::panic::set_hook(Box::new(|_| {}));
    let (inputs, _) = collect_inputs(std::slice::from_ref(&folder));
    assert!(!inputs.is_empty(), "no files under {}", folder.display());

    let limits = ParseOptions::default();
    let mut by_format: BTreeMap<String, Totals> = BTreeMap::new();
    let mut documents: Vec<ParsedDocument> = Vec::new();
    let started = Instant::now();
    for input in &inputs {
        let Ok(bytes) = std::fs::read(&input.path) else { continue };
        let t0 = Instant::now();
        let mut outcomes = Vec::new();
        parse_bytes(&input.display, &bytes, 0, &limits, &mut |e| {
            if let ParseEvent::Finished(o) = e {
                outcomes.push(*o)
            }
        });
        let elapsed = t0.elapsed();
        let top = outcomes.iter().find(|o| o.path == input.display);
        let format = top.and_then(|o| o.format).map(|f| f.name().to_string()).unwrap_or_else(|| "unknown".into());
        let totals = by_format.entry(format).or_default();
        totals.files += 1;
        totals.bytes += bytes.len() as u64;
        totals.time += elapsed;
        if elapsed > totals.slowest.0 {
            totals.slowest = (elapsed, input.display.clone());
        }
        for o in outcomes {
            totals.pages += o.pages.unwrap_or(0) as u64;
            totals.chars += o.chars;
            if o.status == Status::Ok {
                totals.ok += 1;
            }
            documents.extend(o.document);
        }
    }
    let parse_wall = started.elapsed();

    println!("## Parsing {} ({} files, one thread, in-process)\n", folder.display(), inputs.len());
    println!("| format | files | ok | MB | pages/sheets | chars | seconds | MB/s | pages/s | slowest file (s) |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    let mut all = Totals::default();
    for (format, t) in &by_format {
        print_row(format, t);
        all.files += t.files;
        all.ok += t.ok;
        all.bytes += t.bytes;
        all.pages += t.pages;
        all.chars += t.chars;
        all.time += t.time;
    }
    print_row("**all**", &all);
    println!("\nparse wall clock {:.1} s", parse_wall.as_secs_f64());

    let tokenizer = root.join("assets/models/all-minilm-l6-v2/tokenizer.json");
    match ChunkSizer::from_tokenizer_file(&tokenizer) {
        Ok(sizer) => {
            let chunker = Chunker::new(sizer, ChunkerConfig::default()).expect("valid config");
            let t0 = Instant::now();
            let (mut chunks, mut tokens) = (0u64, 0u64);
            for doc in &documents {
                for c in chunker.chunk(doc) {
                    chunks += 1;
                    tokens += c.token_count as u64;
                }
            }
            let secs = t0.elapsed().as_secs_f64();
            println!("\n## Chunking (all-MiniLM-L6-v2 tokenizer, 512 tokens, overlap 76)\n");
            println!("| documents | chunks | tokens | seconds | chunks/s | tokens/s |");
            println!("|---:|---:|---:|---:|---:|---:|");
            println!(
                "| {} | {chunks} | {tokens} | {secs:.1} | {:.0} | {:.0} |",
                documents.len(),
                chunks as f64 / secs,
                tokens as f64 / secs
            );
        }
        Err(e) => println!("\n(chunking skipped: {e}; run scripts/setup.sh)"),
    }
    println!("\npeak RSS {} MiB", peak_rss_kib() / 1024);
}

fn print_row(format: &str, t: &Totals) {
    let secs = t.time.as_secs_f64().max(1e-9);
    let mb = t.bytes as f64 / 1e6;
    println!(
        "| {format} | {} | {} | {mb:.1} | {} | {} | {secs:.2} | {:.1} | {} | {} |",
        t.files,
        t.ok,
        t.pages,
        t.chars,
        mb / secs,
        if t.pages > 0 { format!("{:.0}", t.pages as f64 / secs) } else { "–".into() },
        if t.slowest.1.is_empty() {
            String::new()
        } else {
            format!("{} ({:.2})", t.slowest.1, t.slowest.0.as_secs_f64())
        },
    );
}

/// Peak resident set size of this process (VmHWM), in KiB; 0 where /proc is not available.
fn peak_rss_kib() -> u64 {
    quarry_core::proc_kib("/proc/self/status", "VmHWM:").unwrap_or(0)
}
