//! What the commands that answer questions share (`ask`, `report`, `mcp`, the answer evaluation):
//! opening the sources a question is asked of, Ctrl-C as cancellation, printing the agent's events,
//! writing a report. Not a command.

use crate::commands::args::{LlmArgs, ModelArgs, WebArgs};
use quarry_agents::{AgentEvent, CancellationToken, SearchableLibrary};
use quarry_core::ChatModel;
use quarry_store::{DataDir, SearchMode};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

/// What a research run searches and writes with: the libraries (`names`, or all), the web when
/// `--web` is on (web notices go to stderr, or stdout as `web_notice` JSON lines), and the model.
pub async fn open_sources_and_model(
    data: &DataDir,
    names: &[String],
    mode: SearchMode,
    embedding: &ModelArgs,
    web: &WebArgs,
    llm: &LlmArgs,
    json: bool,
) -> anyhow::Result<(Vec<SearchableLibrary>, Arc<dyn ChatModel>)> {
    let libraries = open_searchable(data, names, mode, &embedding.cache(), web, llm.network, json).await?;
    let model = llm.load()?;
    if !json {
        eprintln!("model: {}", model.describe());
    }
    Ok((libraries, model))
}

/// The sources of a research run without its model ([`quarry_session::open_sources`]): the libraries
/// `names` (every library when empty), each with its own embedding model from `embedders` (none loaded
/// for BM25), and the web when `web` turns it on and `network` allows it, its pages read in a parse
/// worker of this executable. Web notices go to stderr, or to stdout as `web_notice` JSON lines with
/// `json`.
pub async fn open_searchable(
    data: &DataDir,
    names: &[String],
    mode: SearchMode,
    embedders: &Arc<quarry_session::EmbedderCache>,
    web: &WebArgs,
    network: quarry_net::NetworkMode,
    json: bool,
) -> anyhow::Result<Vec<SearchableLibrary>> {
    let notice: Arc<dyn Fn(&str) + Send + Sync> = Arc::new(move |message: &str| {
        if json {
            println!("{}", serde_json::json!({"event": "web_notice", "message": message}));
        } else {
            eprintln!("{message}");
        }
    });
    let worker = quarry_ingest::isolate::WorkerCommand::current_exe(&["parse-worker"]).ok();
    let scope = quarry_session::QuestionScope { names, mode, web: &web.settings(), network, worker };
    quarry_session::open_sources(data, scope, embedders, notice).await
}

/// A cancellation token that Ctrl-C cancels (the run stops within the model call in progress).
pub fn cancel_on_ctrl_c() -> CancellationToken {
    let cancel = CancellationToken::new();
    let on_ctrl_c = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("\nstopping…");
            on_ctrl_c.cancel();
        }
    });
    cancel
}

/// [`quarry_agents::report::report_folder`] with its error as an `anyhow` error.
pub fn report_folder(path: &std::path::Path) -> anyhow::Result<PathBuf> {
    Ok(quarry_agents::report::report_folder(path)?)
}

/// [`quarry_agents::report::write_report`] with its error as an `anyhow` error.
pub fn write_report(path: &std::path::Path, text: &str) -> anyhow::Result<()> {
    Ok(quarry_agents::report::write_report(path, text)?)
}

pub fn show_event(event: &AgentEvent, json: bool) {
    if json {
        println!("{}", serde_json::to_string(event).unwrap_or_default());
        return;
    }
    if let AgentEvent::AnswerDelta { text } = event {
        print!("{text}");
        let _ = std::io::stdout().flush();
    } else if let Some(line) = event_line(event) {
        eprintln!("{line}");
    }
}

/// What a person follows a run by: one event as the line(s) `quarry ask` prints on stderr (`quarry mcp`
/// sends the same text as progress messages). `None` for events with nothing to show (the streamed
/// answer text, start and finish).
pub fn event_line(event: &AgentEvent) -> Option<String> {
    let line = match event {
        AgentEvent::AnswerDelta { .. } | AgentEvent::Started { .. } | AgentEvent::Finished { .. } => return None,
        AgentEvent::Routed { agent, libraries, reason } => {
            format!("agent {agent} over {} ({reason})", libraries.join(", "))
        }
        AgentEvent::Queries { round, queries } => {
            format!("round {round}: {}", queries.iter().map(|q| format!("{q:?}")).collect::<Vec<_>>().join(", "))
        }
        AgentEvent::Retrieved { query, hits, new, .. } => format!("  {hits} passages ({new} new) for {query:?}"),
        AgentEvent::Judged { kept, rejected, .. } => {
            let mut text = format!("  kept {} of {} new passages", kept.len(), kept.len() + rejected.len());
            for p in kept {
                text.push_str(&format!("\n    + {}", p.citation));
            }
            text
        }
        AgentEvent::IntermediateAnswer { answer, supporting, .. } => {
            let mut text = format!("  answer: {answer}");
            for p in supporting {
                text.push_str(&format!("\n    + {}", p.citation));
            }
            text
        }
        AgentEvent::Reflected { facts, queries, .. } => {
            let mut lines: Vec<String> = facts.iter().map(|fact| format!("  fact: {fact}")).collect();
            if queries.is_empty() {
                lines.push("  reflection: nothing missing".into());
            }
            if lines.is_empty() {
                return None;
            }
            lines.join("\n")
        }
        AgentEvent::Stopped { reason, .. } => format!("  stop: {reason}"),
        AgentEvent::WebQuery { source, query, sent: true } => format!("  sent to {source}: {query:?}"),
        AgentEvent::WebQuery { source, query, sent: false } => {
            format!("  withheld from {source} (written by the model; --web-queries all sends such queries): {query:?}")
        }
        AgentEvent::Ordered { query, kept } => {
            format!("  {kept} passages for the answer ordered by a search for {query:?}")
        }
        AgentEvent::Section { index, count, title, stage } => {
            if *index == 0 {
                format!("{title}: {stage}")
            } else {
                format!("section {index}/{count} {title:?}: {stage}")
            }
        }
        AgentEvent::Degraded { step, problem, fallback } => format!("  {step}: {problem}; {fallback}"),
        AgentEvent::LlmCall { step, prompt_tokens, completion_tokens, seconds } => {
            format!("  [{step}: {prompt_tokens}+{completion_tokens} tokens, {seconds:.1} s]")
        }
    };
    Some(line)
}
