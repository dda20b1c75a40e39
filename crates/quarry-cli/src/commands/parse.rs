//! `quarry parse`: the ingestion layer on its own — walk the given paths, parse every file in isolated
//! worker processes, write a per-file TSV report and print a per-format summary.

use crate::commands::args::WorkerArgs;
use anyhow::Context;
use quarry_ingest::isolate::parse_isolated;
use quarry_ingest::{collect_inputs, report, FileOutcome, Status};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct ParseArgs {
    /// Files, folders (walked recursively) and ZIP archives.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Write one row per document here (TSV: path, format, status, pages, chars, cjk_chars, ms, error).
    #[arg(long)]
    pub report: Option<PathBuf>,
    #[command(flatten)]
    pub worker: WorkerArgs,
    /// Print the summary as one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: ParseArgs) -> anyhow::Result<()> {
    let (inputs, problems) = collect_inputs(&args.paths);
    for (path, reason) in &problems {
        eprintln!("quarry: skipping {}: {reason}", path.display());
    }
    if inputs.is_empty() {
        anyhow::bail!("no files found in the given paths");
    }
    let mut config = args.worker.isolation()?;
    config.include_documents = false;

    let progress = indicatif::ProgressBar::new(inputs.len() as u64);
    progress.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} parsing [{bar:30}] {pos}/{len} files {per_sec} eta {eta} {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    let started = Instant::now();
    let mut outcomes: Vec<(usize, usize, FileOutcome)> = Vec::new();
    let mut finished_inputs = std::collections::HashSet::new();
    parse_isolated(&inputs, &config, |index, outcome| {
        // A top-level file is done when its own row arrives (ZIP members carry `!/`).
        if !outcome.path.contains("!/") && finished_inputs.insert(index) {
            progress.inc(1);
            progress.set_message(truncate(&outcome.path, 40));
        }
        let order = outcomes.len();
        outcomes.push((index, order, outcome));
    });
    progress.finish_and_clear();
    let elapsed = started.elapsed();
    // Stable order: by input, then members in the order they were read.
    outcomes.sort_by_key(|(index, order, _)| (*index, *order));
    let outcomes: Vec<FileOutcome> = outcomes.into_iter().map(|(_, _, o)| o).collect();

    if let Some(path) = &args.report {
        let file = std::fs::File::create(path).with_context(|| format!("creating report {}", path.display()))?;
        report::write_tsv(std::io::BufWriter::new(file), &outcomes)
            .with_context(|| format!("writing report {}", path.display()))?;
    }
    let summary = Summary::of(&outcomes, inputs.len(), elapsed);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary.to_json())?);
    } else {
        print!("{}", summary.table());
        println!("{}", quarry_ingest::isolate::landlock_status());
        if let Some(path) = &args.report {
            println!("\nreport: {}", path.display());
        }
    }
    Ok(())
}

pub fn run_worker() -> anyhow::Result<()> {
    let limit = std::env::var("QUARRY_WORKER_MEMORY_LIMIT").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    quarry_ingest::isolate::run_worker(limit).context("parser worker")
}

fn truncate(s: &str, max: usize) -> String {
    let count = s.chars().count();
    if count <= max {
        s.to_string()
    } else {
        format!("…{}", s.chars().skip(count - max + 1).collect::<String>())
    }
}

#[derive(Default)]
struct FormatRow {
    documents: u64,
    by_status: BTreeMap<Status, u64>,
    pages: u64,
    chars: u64,
    cjk_chars: u64,
    ms: u64,
}

/// Per-format totals of a parse run.
struct Summary {
    inputs: usize,
    rows: BTreeMap<String, FormatRow>,
    failures: BTreeMap<String, u64>,
    elapsed: Duration,
}

impl Summary {
    fn of(outcomes: &[FileOutcome], inputs: usize, elapsed: Duration) -> Self {
        let mut rows: BTreeMap<String, FormatRow> = BTreeMap::new();
        let mut failures: BTreeMap<String, u64> = BTreeMap::new();
        for o in outcomes {
            let key = o.format.map(|f| f.name().to_string()).unwrap_or_else(|| "unknown".into());
            let row = rows.entry(key).or_default();
            row.documents += 1;
            *row.by_status.entry(o.status).or_default() += 1;
            row.pages += o.pages.unwrap_or(0) as u64;
            row.chars += o.chars;
            row.cjk_chars += o.cjk_chars;
            row.ms += o.ms;
            if let Some(error) = &o.error {
                // Group failures by reason kind: the text before the first colon.
                let text = error.to_string();
                let kind = text.split(':').next().unwrap_or(&text).to_string();
                *failures.entry(kind).or_default() += 1;
            }
        }
        Summary { inputs, rows, failures, elapsed }
    }

    fn table(&self) -> String {
        let mut out = String::new();
        out.push_str("| format | documents | ok | failed | timeout | too_large | crashed | pages/sheets | chars | cjk_chars | parse s |\n");
        out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        let mut total = FormatRow::default();
        for (format, row) in &self.rows {
            out.push_str(&Self::line(format, row));
            total.documents += row.documents;
            for (s, n) in &row.by_status {
                *total.by_status.entry(*s).or_default() += n;
            }
            total.pages += row.pages;
            total.chars += row.chars;
            total.cjk_chars += row.cjk_chars;
            total.ms += row.ms;
        }
        out.push_str(&Self::line("**all**", &total));
        out.push_str(&format!(
            "\n{} input files, {} documents, {:.1} s wall clock\n",
            self.inputs,
            total.documents,
            self.elapsed.as_secs_f64()
        ));
        if !self.failures.is_empty() {
            out.push_str("\nnot ok, by reason:\n");
            for (kind, n) in &self.failures {
                out.push_str(&format!("  {n:>5}  {kind}\n"));
            }
        }
        out
    }

    fn line(format: &str, row: &FormatRow) -> String {
        let n = |s: Status| row.by_status.get(&s).copied().unwrap_or(0);
        format!(
            "| {format} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} |\n",
            row.documents,
            n(Status::Ok),
            n(Status::Failed),
            n(Status::Timeout),
            n(Status::TooLarge),
            n(Status::Crashed),
            row.pages,
            row.chars,
            row.cjk_chars,
            row.ms as f64 / 1000.0
        )
    }

    fn to_json(&self) -> serde_json::Value {
        let formats: serde_json::Map<String, serde_json::Value> = self
            .rows
            .iter()
            .map(|(format, row)| {
                let statuses: serde_json::Map<String, serde_json::Value> =
                    row.by_status.iter().map(|(s, n)| (s.name().to_string(), (*n).into())).collect();
                (
                    format.clone(),
                    serde_json::json!({
                        "documents": row.documents, "status": statuses, "pages": row.pages,
                        "chars": row.chars, "cjk_chars": row.cjk_chars, "parse_ms": row.ms,
                    }),
                )
            })
            .collect();
        serde_json::json!({
            "inputs": self.inputs,
            "formats": formats,
            "failures": self.failures,
            "seconds": self.elapsed.as_secs_f64(),
            "sandbox": quarry_ingest::isolate::landlock_status(),
        })
    }
}
