//! Showing an ingest run: three indicatif bars (files read, pages read, chunks embedded, each with rate and
//! ETA) on a terminal, problems as lines above them; or, with `--json`, one JSON event per line on stdout.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use quarry_store::{IngestEvent, IngestPhase, IngestSummary};

pub struct IngestProgress {
    json: bool,
    multi: MultiProgress,
    files: ProgressBar,
    pages: ProgressBar,
    chunks: ProgressBar,
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()).progress_chars("=> ")
}

impl IngestProgress {
    pub fn new(json: bool) -> Self {
        let multi = MultiProgress::with_draw_target(if json {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        });
        let files = multi.add(ProgressBar::new(0));
        files.set_style(style("files  [{bar:30}] {pos}/{len} {per_sec} eta {eta} {wide_msg}"));
        let pages = multi.add(ProgressBar::new_spinner());
        pages.set_style(style("pages  {pos} read, {per_sec}"));
        let chunks = multi.add(ProgressBar::new(0));
        chunks.set_style(style("chunks [{bar:30}] {pos}/{len} embedded {per_sec} eta {eta}"));
        IngestProgress { json, multi, files, pages, chunks }
    }

    pub fn event(&mut self, event: IngestEvent) {
        if self.json {
            println!("{}", serde_json::to_string(&event).unwrap_or_default());
            return;
        }
        match event {
            IngestEvent::Phase { phase: IngestPhase::Scan } => {
                self.files.set_message("looking for new and changed files")
            }
            IngestEvent::Phase { phase: IngestPhase::Optimize } => {
                self.files.set_message("compacting the library and its indexes")
            }
            IngestEvent::Phase { .. } => {}
            IngestEvent::Scanned { to_read, unchanged, files, reread } => {
                self.files.set_length(to_read as u64);
                if unchanged > 0 || reread > 0 {
                    self.line(format!("{files} files, {unchanged} unchanged, {to_read} to read"));
                }
                if reread > 0 {
                    self.line(format!(
                        "{reread} of them unchanged but read again: this Quarry reads their format better than the one that added them"
                    ));
                }
            }
            IngestEvent::Unreadable { path, error } => {
                self.line(format!("cannot read {path}: {error}"));
            }
            IngestEvent::Read { pages, chunks, .. } => {
                self.pages.inc(u64::from(pages.unwrap_or(0)));
                self.chunks.inc_length(chunks as u64);
            }
            IngestEvent::Skipped { path, reason } => {
                self.line(format!("skipped {path}: {reason}"));
            }
            IngestEvent::Failed { path, status, error } => {
                self.line(format!("{status}: {path}: {error}"));
            }
            IngestEvent::Moved { from, to } => {
                self.line(format!("moved {from} -> {to}"));
            }
            IngestEvent::KeywordIndexed { .. } | IngestEvent::Indexed { .. } => {}
            IngestEvent::KeywordReady { documents, waiting_chunks, seconds } => {
                // The bar counts what this phase embeds: this run's chunks and any left waiting before.
                self.chunks.set_length(waiting_chunks as u64);
                self.chunks.set_position(0);
                self.chunks.reset_eta();
                if documents > 0 {
                    self.line(format!(
                        "{documents} documents searchable by keyword after {seconds:.1} s; embedding {waiting_chunks} chunks for semantic search"
                    ));
                } else {
                    self.line(format!("embedding {waiting_chunks} chunks an earlier run left waiting"));
                }
            }
            IngestEvent::Embedding { done, .. } => self.chunks.set_position(done as u64),
            IngestEvent::FileDone { path } => {
                self.files.inc(1);
                let name = path.rsplit('/').next().unwrap_or(&path).to_string();
                self.files.set_message(name);
            }
            IngestEvent::Removed { path } => {
                self.line(format!("removed {path}"));
            }
            IngestEvent::ModelChosen { model_id, cjk_share, sampled_chars } => {
                self.line(format!(
                    "embedding model {model_id} (chosen from the first {sampled_chars} characters read: {:.0}% CJK)",
                    cjk_share * 100.0
                ));
            }
            IngestEvent::Finished(_) => {}
        }
    }

    /// A line above the bars; straight to stderr when the bars are hidden (stderr is not a terminal,
    /// e.g. `quarry add … 2> log`), where indicatif would drop it.
    fn line(&self, text: String) {
        if self.multi.is_hidden() {
            eprintln!("{text}");
        } else {
            let _ = self.multi.println(text);
        }
    }

    pub fn finish(&mut self, summary: &IngestSummary) {
        self.files.finish_and_clear();
        self.pages.finish_and_clear();
        self.chunks.finish_and_clear();
        if self.json {
            return;
        }
        eprintln!(
            "{} files: {} documents indexed ({} chunks, {} pages), {} failed, {} unchanged, {} skipped as duplicates, {} moved, {} removed in {:.1} s",
            summary.files,
            summary.indexed,
            summary.chunks,
            summary.pages,
            summary.failed,
            summary.unchanged,
            summary.skipped,
            summary.moved,
            summary.removed,
            summary.seconds
        );
        if summary.reread > 0 {
            eprintln!("{} unchanged files were read again with a newer reading of their format", summary.reread);
        }
        if summary.kept_embeddings > 0 {
            eprintln!(
                "{} of their chunks read as before kept their embeddings; {} were embedded",
                summary.kept_embeddings, summary.embedded_chunks
            );
        }
        if summary.waiting_chunks > 0 {
            eprintln!(
                "{} chunks are searchable by keyword and still wait for their embeddings; the next `quarry add` or `quarry sync` embeds them",
                summary.waiting_chunks
            );
        }
        if summary.cancelled {
            eprintln!("stopped: what was read is saved; `quarry sync` reads the rest");
        }
    }
}
