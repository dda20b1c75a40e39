//! `quarry report`: a long-form research report on a topic (plan, DeepSearch per section, review,
//! introduction and conclusion) written as one Markdown file.

use crate::commands::answering::{cancel_on_ctrl_c, open_sources_and_model, report_folder, show_event, write_report};
use crate::commands::args::ModelArgs;
use crate::commands::args::{LlmArgs, WebArgs};
use anyhow::Context;
use quarry_agents::{render_research_report, AgentConfig, AgentError, ReportOptions, ResearchConfig};
use quarry_store::{DataDir, SearchMode};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(clap::Args)]
pub struct ReportArgs {
    /// The topic of the report, in any language.
    pub topic: String,
    /// Libraries to search (repeat the flag; default: every library).
    #[arg(long, short)]
    pub library: Vec<String>,
    /// Write the report to this file (links to cited files are relative to its folder); without it the
    /// report goes to stdout.
    #[arg(long, short, value_name = "FILE.md")]
    pub out: Option<PathBuf>,
    /// Most sections.
    #[arg(long, default_value_t = 4)]
    pub max_sections: usize,
    /// DeepSearch rounds per section.
    #[arg(long, default_value_t = quarry_agents::REPORT_ROUNDS)]
    pub max_rounds: usize,
    /// Seconds the DeepSearch search of one section may take before the section is written (0: no limit).
    #[arg(long, default_value_t = quarry_agents::DEFAULT_SEARCH_SECONDS)]
    pub search_seconds: f64,
    /// Follow-up queries a section review may ask for (0 turns the review off).
    #[arg(long, default_value_t = 2)]
    pub review_queries: usize,
    /// Passages retrieved per query.
    #[arg(short, default_value_t = quarry_agents::REPORT_TOP_K)]
    pub k: usize,
    /// How passages are found: bm25, dense or hybrid.
    #[arg(long, default_value = "hybrid")]
    pub mode: SearchMode,
    /// Most tokens of one section.
    #[arg(long, default_value_t = 700)]
    pub section_tokens: u32,
    /// Print progress events as JSON lines on stdout, then `{"event": "research_report", …}`.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub web: WebArgs,
    #[command(flatten)]
    pub llm: LlmArgs,
    #[command(flatten)]
    pub embedding: ModelArgs,
}

pub fn report(data: DataDir, args: ReportArgs) -> anyhow::Result<()> {
    // Checked before any work: a report that cannot be written should not cost a research run.
    let folder = args.out.as_deref().map(report_folder).transpose()?;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
    runtime.block_on(async {
        let json = args.json;
        let (libraries, model) = open_sources_and_model(&data, &args.library, args.mode, &args.embedding, &args.web, &args.llm, json).await?;
        let config = AgentConfig { max_rounds: args.max_rounds.max(1), top_k: args.k.max(1), search_seconds: quarry_agents::search_budget(args.search_seconds), web_queries: args.web.web_queries, ..AgentConfig::default() };
        let research = ResearchConfig { max_sections: args.max_sections.max(1), max_review_queries: args.review_queries, section_max_tokens: args.section_tokens.max(64), ..ResearchConfig::default() };
        let events: quarry_agents::EventSink = Arc::new(move |event| show_event(&event, json));
        let cancel = cancel_on_ctrl_c();
        let report = match quarry_agents::research_report(&args.topic, model, &libraries, config, research, events, cancel).await {
            Ok(report) => report,
            Err(AgentError::Cancelled) => anyhow::bail!("cancelled"),
            Err(e) => return Err(e.into()),
        };
        let options = ReportOptions { title: None, date: chrono::Local::now().format("%Y-%m-%d %H:%M").to_string(), link_base: folder.clone() };
        let markdown = render_research_report(&report, &options);
        match &args.out {
            Some(path) => {
                write_report(path, &markdown)?;
                if !json {
                    eprintln!("report: {}", path.display());
                }
            }
            None if !json => print!("{markdown}"),
            None => {}
        }
        if json {
            let value = serde_json::json!({
                "event": "research_report",
                "path": args.out,
                "sections": report.sections.iter().map(|s| serde_json::json!({"title": s.title, "focus": s.focus, "revised": s.revised, "queries": s.queries})).collect::<Vec<_>>(),
                "sources": report.sources.len(),
                "cited": report.cited,
                "llm_calls": report.llm_calls,
                "usage": report.usage,
                "seconds": report.seconds,
                "libraries": report.libraries,
                "markdown": if args.out.is_none() { Some(markdown) } else { None },
            });
            println!("{value}");
        } else {
            eprintln!(
                "\n{} sections, {} sources ({} cited), {} model calls, {} tokens, {:.1} s",
                report.sections.len(),
                report.sources.len(),
                report.cited.len(),
                report.llm_calls,
                report.usage.total(),
                report.seconds
            );
        }
        Ok(())
    })
}
