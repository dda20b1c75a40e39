//! `quarry ask`: a research agent answers a question over one or more libraries with a cited answer. The
//! live trace goes to stderr, the answer streams to stdout, then its sources; `--json` prints the agent's
//! events and the final answer as JSON lines instead.

use crate::commands::answering::{cancel_on_ctrl_c, open_sources_and_model, report_folder, show_event, write_report};
use crate::commands::args::{LlmArgs, ModelArgs, PerDocumentArgs, WebArgs};
use anyhow::Context;
use quarry_agents::{render_report, AgentConfig, AgentError, AgentEvent, AgentKind, Answer, ReportOptions};
use quarry_store::{DataDir, SearchMode};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(clap::Args)]
pub struct AskArgs {
    /// The question, in any language.
    pub question: String,
    /// Libraries to search (repeat the flag; default: every library).
    #[arg(long, short)]
    pub library: Vec<String>,
    /// auto (the router decides), naive, deep or chain.
    #[arg(long, default_value = "auto")]
    pub agent: String,
    /// Most search rounds.
    #[arg(long, default_value_t = 3)]
    pub max_rounds: usize,
    /// Seconds a DeepSearch or ChainOfRAG search may take before the answer is written (0: no limit).
    #[arg(long, default_value_t = quarry_agents::DEFAULT_SEARCH_SECONDS)]
    pub search_seconds: f64,
    /// Passages retrieved per query.
    #[arg(short, default_value_t = 8)]
    pub k: usize,
    /// How passages are found: bm25, dense or hybrid.
    #[arg(long, default_value = "hybrid")]
    pub mode: SearchMode,
    /// Most tokens of the written answer.
    #[arg(long, default_value_t = 800)]
    pub answer_tokens: u32,
    #[command(flatten)]
    pub per_document: PerDocumentArgs,
    /// Print the agent's events and the answer as JSON lines on stdout.
    #[arg(long)]
    pub json: bool,
    /// Also write a Markdown research report (question, answer, sources with quotes, method) to this
    /// file; its links to the cited files are relative to the file's folder.
    #[arg(long, value_name = "FILE.md")]
    pub report: Option<PathBuf>,
    #[command(flatten)]
    pub web: WebArgs,
    #[command(flatten)]
    pub llm: LlmArgs,
    #[command(flatten)]
    pub embedding: ModelArgs,
}

pub fn ask(data: DataDir, args: AskArgs) -> anyhow::Result<()> {
    let agent: Option<AgentKind> = match args.agent.as_str() {
        "auto" => None,
        other => Some(other.parse().map_err(anyhow::Error::msg)?),
    };
    // Checked before any work: a report that cannot be written should not cost a research run.
    let report_folder = args.report.as_deref().map(report_folder).transpose()?;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
    runtime.block_on(async {
        let json = args.json;
        let (libraries, model) =
            open_sources_and_model(&data, &args.library, args.mode, &args.embedding, &args.web, &args.llm, json)
                .await?;
        let config = args.per_document.apply(AgentConfig {
            max_rounds: args.max_rounds.max(1),
            top_k: args.k.max(1),
            search_seconds: quarry_agents::search_budget(args.search_seconds),
            answer_max_tokens: args.answer_tokens.max(16),
            web_queries: args.web.web_queries,
            ..AgentConfig::default()
        });
        // The text streamed to the terminal, to tell whether the checked answer says something else.
        let streamed = Arc::new(std::sync::Mutex::new(String::new()));
        let events: quarry_agents::EventSink = {
            let streamed = Arc::clone(&streamed);
            Arc::new(move |event| {
                if let AgentEvent::AnswerDelta { text } = &event {
                    if let Ok(mut all) = streamed.lock() {
                        all.push_str(text);
                    }
                }
                show_event(&event, json)
            })
        };
        let cancel = cancel_on_ctrl_c();
        match quarry_agents::ask(&args.question, agent, model, &libraries, config, events, cancel).await {
            Ok(answer) => {
                // The report is written before the answer is printed, so with --json the answer stays
                // the last line; a report that fails to write still lets the answer print. Without
                // --json its path is said after the answer: the streamed answer's last line has no line
                // break yet, and "report: …" printed then ran on from it.
                let report = args.report.as_ref().map(|path| {
                    let options = ReportOptions {
                        title: None,
                        date: chrono::Local::now().format("%Y-%m-%d %H:%M").to_string(),
                        link_base: report_folder.clone(),
                    };
                    let written = write_report(path, &render_report(&answer, &options));
                    if written.is_ok() && json {
                        println!("{}", serde_json::json!({"event": "report", "path": path}));
                    }
                    written.map(|()| path)
                });
                let streamed = streamed.lock().map(|s| s.clone()).unwrap_or_default();
                print_answer(&answer, json, &streamed)?;
                match report.transpose()? {
                    Some(path) if !json => eprintln!("report: {}", path.display()),
                    _ => {}
                }
                Ok(())
            }
            Err(AgentError::Cancelled) => anyhow::bail!("cancelled"),
            Err(e) => Err(e.into()),
        }
    })
}

/// Prints the final answer after `streamed`, the text the terminal already shows: with `--json` one
/// `answer` line; else the answer again when the checked text says something else (a copied header or a
/// loop left out, [`quarry_agents::answer::checked_text_differs`]), then its sources, corrected citations
/// and unsupported claims.
fn print_answer(answer: &Answer, json: bool, streamed: &str) -> anyhow::Result<()> {
    if json {
        let mut value = serde_json::to_value(answer)?;
        value["event"] = "answer".into();
        println!("{}", serde_json::to_string(&value)?);
        return Ok(());
    }
    println!("\n");
    if quarry_agents::answer::checked_text_differs(streamed, &answer.markdown) {
        println!("The answer as checked (what the model copied from the prompt, or repeated, left out):\n");
        println!("{}\n", answer.markdown.trim());
    }
    let (title, list) = if answer.citations.is_empty() && !answer.sources.is_empty() {
        ("Sources (the model cited none; the answer was written from these passages)", &answer.sources)
    } else {
        ("Sources", &answer.citations)
    };
    if !list.is_empty() {
        println!("{title}:");
        for c in list {
            // The line stating what the answer cites the passage for, else the passage's start.
            let quote = match quarry_agents::claims::stating_line(&c.passage.text, c.number, &answer.claims) {
                Some(line) => format!("…{}…", line.chars().take(200).collect::<String>()),
                None => {
                    let start: String =
                        c.passage.text.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(200).collect();
                    format!("{start}…")
                }
            };
            println!("[{}] {}\n    {}\n    \"{quote}\"", c.number, c.passage.citation(), c.passage.path);
        }
    }
    if !answer.web_queries.is_empty() {
        println!("\nWeb queries:");
        for q in &answer.web_queries {
            let what = if q.sent {
                format!("sent to {}", q.source)
            } else {
                format!("withheld from {} (written by the model)", q.source)
            };
            println!("  {what}: \"{}\"", q.query);
        }
    }
    if !answer.citation_repairs.is_empty() {
        println!("\nCitations corrected by the claim check (the passage cited did not state the figure; the one now cited does):");
        for r in &answer.citation_repairs {
            let from = if r.from.is_empty() {
                "no citation".to_string()
            } else {
                r.from.iter().map(|n| format!("[{n}]")).collect::<Vec<_>>().join("")
            };
            let to: String = std::iter::once(&r.to).chain(&r.also).map(|n| format!("[{n}]")).collect();
            println!("  {from} → {to}: \"{}\"", r.text);
        }
    }
    let unsupported: Vec<_> = answer.unsupported_claims().collect();
    if !unsupported.is_empty() {
        println!(
            "\nUnsupported by the cited passages ({} of {} claims; check before relying on them):",
            unsupported.len(),
            answer.claims.len()
        );
        for claim in unsupported {
            println!("  ! \"{}\" — {}", claim.sentence, claim.problem);
        }
    }
    eprintln!(
        "\n{} agent, {} model calls, {} tokens ({} prompt + {} generated), {:.1} s",
        answer.agent,
        answer.llm_calls,
        answer.usage.total(),
        answer.usage.prompt_tokens,
        answer.usage.completion_tokens,
        answer.seconds
    );
    Ok(())
}
