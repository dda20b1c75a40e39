//! `quarry ask`: a research agent answers a question over one or more libraries with a cited answer. The
//! live trace goes to stderr, the answer streams to stdout, then its sources; `--json` prints the agent's
//! events and the final answer as JSON lines instead.

use super::library::ModelArgs;
use anyhow::Context;
use quarry_agents::{
    render_report, AgentConfig, AgentError, AgentEvent, AgentKind, Answer, CancellationToken, ReportOptions,
    SearchableLibrary,
};
use quarry_core::ChatModel;
use quarry_session::open_libraries;
use quarry_store::{DataDir, SearchMode};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

/// Which language model writes: the embedded GGUF model (default) or an OpenAI-compatible server.
#[derive(clap::Args, Debug, Clone)]
pub struct LlmArgs {
    /// A GGUF model file run in-process (default: $QUARRY_LLM_MODEL_FILE, else the set-up script's
    /// Qwen2.5-Coder-1.5B-Instruct; SmolLM2-135M-Instruct below 4 GiB of RAM or when Qwen is not installed,
    /// with a warning). The environment variable is read only when no server is named, so it never
    /// conflicts with --llm-url.
    #[arg(long, conflicts_with = "llm_url")]
    pub model: Option<PathBuf>,
    /// Base URL of an OpenAI-compatible server, with its API prefix: `http://127.0.0.1:11434/v1` (Ollama),
    /// `http://127.0.0.1:8080/v1` (llama.cpp server), `https://api.openai.com/v1` … `auto`: a server running
    /// on this computer if one answers on its usual port (Ollama, LM Studio, llama.cpp server, vLLM, Jan,
    /// or a port in $QUARRY_LLM_PORTS; see `quarry models`), serving --llm-model if given, else the embedded model.
    #[arg(long, env = "QUARRY_LLM_URL")]
    pub llm_url: Option<String>,
    /// Model name on that server.
    #[arg(long, env = "QUARRY_LLM_MODEL", requires = "llm_url")]
    pub llm_model: Option<String>,
    /// Environment variable that holds the server's API key; when it is unset the OS keyring's entry is used
    /// (`quarry secret set llm`).
    #[arg(long, default_value = "QUARRY_LLM_API_KEY")]
    pub llm_api_key_env: String,
    /// offline (the default): only this computer is reached — the embedded model, local files and servers
    /// on localhost; a remote --llm-url is refused before any connection. online: any host.
    #[arg(long, env = "QUARRY_NETWORK", default_value = "offline")]
    pub network: quarry_net::NetworkMode,
    /// CPU threads of the embedded model (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Context length of the embedded model, in tokens.
    #[arg(long, default_value_t = quarry_session::LlmSettings::default().context_tokens)]
    pub context_tokens: u32,
    /// Repetition control of the embedded model: the DRY sampler's multiplier (0 turns it off). It
    /// penalises extending a sequence the model already wrote, which stops small models' loops.
    #[arg(long, default_value_t = quarry_session::LlmSettings::default().dry_multiplier)]
    pub dry_multiplier: f32,
    /// Make the embedded model process every prompt whole, instead of skipping the prefix it shares with
    /// its previous call (for measuring what that reuse saves).
    #[arg(long)]
    pub no_prompt_reuse: bool,
}

impl LlmArgs {
    /// These flags as the settings [`quarry_session::LlmSettings::load`] reads (the API key from the
    /// environment variable named by `--llm-api-key-env`).
    pub fn settings(&self) -> quarry_session::LlmSettings {
        quarry_session::LlmSettings {
            model_file: self.model.clone(),
            url: self.llm_url.clone(),
            model: self.llm_model.clone(),
            api_key: std::env::var(&self.llm_api_key_env).ok().filter(|k| !k.is_empty()),
            network: self.network,
            threads: self.threads,
            context_tokens: self.context_tokens,
            dry_multiplier: self.dry_multiplier,
            reuse_prompt_prefix: !self.no_prompt_reuse,
        }
    }

    /// Loads the chosen model; with `--llm-url auto` says on stderr which one was found. Errors: a missing
    /// model file; a bad URL; `auto` with an --llm-model no local server serves.
    pub fn load(&self) -> anyhow::Result<Arc<dyn ChatModel>> {
        let (settings, note) = self.settings().resolve_auto()?;
        if let Some(note) = note {
            eprintln!("quarry: {note}");
        }
        settings.load()
    }
}

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

/// How NaiveRAG answers a question that several documents match alike, one document at a time
/// (`quarry_agents::per_document`); `ask` and `eval answers` take the same flags.
#[derive(clap::Args, Debug, Clone)]
pub struct PerDocumentArgs {
    /// When several documents match the question alike, NaiveRAG answers from each of at most this many
    /// in turn, one line per document; 1 answers from their passages together in one call.
    #[arg(long, default_value_t = AgentConfig::default().max_documents_per_answer)]
    pub max_documents: usize,
    /// Fewest passages each document reads when NaiveRAG answers per document.
    #[arg(long, default_value_t = AgentConfig::default().passages_per_document)]
    pub passages_per_document: usize,
    /// Most characters of one passage in the prompt of a per-document answer.
    #[arg(long, default_value_t = AgentConfig::default().document_passage_chars)]
    pub document_passage_chars: usize,
}

impl PerDocumentArgs {
    /// `config` with these settings: at least one document, at least 100 characters a passage.
    pub fn apply(&self, config: AgentConfig) -> AgentConfig {
        AgentConfig {
            max_documents_per_answer: self.max_documents.max(1),
            passages_per_document: self.passages_per_document,
            document_passage_chars: self.document_passage_chars.max(100),
            ..config
        }
    }
}

/// Web search as another source, off unless asked for; offline mode (the default) turns it off again.
#[derive(clap::Args, Debug, Clone)]
pub struct WebArgs {
    /// Also search the web: result pages are fetched, chunked and embedded for this question and cited by
    /// URL. Needs --network online (or a provider on this computer, e.g. a local SearXNG).
    #[arg(long)]
    pub web: bool,
    /// searxng (self-hosted; give --web-url), tavily (key in QUARRY_TAVILY_API_KEY) or brave (key in
    /// QUARRY_BRAVE_API_KEY).
    #[arg(long, env = "QUARRY_WEB_PROVIDER", default_value = "searxng")]
    pub web_provider: quarry_web::ProviderKind,
    /// The provider's base URL (required for SearXNG, e.g. http://127.0.0.1:8888).
    #[arg(long, env = "QUARRY_WEB_URL")]
    pub web_url: Option<String>,
    /// Result pages fetched per query.
    #[arg(long, default_value_t = 3)]
    pub web_pages: usize,
    /// Which queries go to the web provider: `question` (the default) sends exactly the question you
    /// typed; `all` also sends the queries the agent writes (DeepSearch's sub-queries and gap queries,
    /// ChainOfRAG's follow-ups), which are often built from passages of your documents; `ask` sends
    /// those only when approved one by one, which the app does and the command line cannot (here they
    /// are withheld). Withheld queries are listed with the answer.
    #[arg(long, default_value = "question")]
    pub web_queries: quarry_agents::web_gate::WebQueryPolicy,
}

impl WebArgs {
    /// These flags as [`quarry_session::WebSearchSettings`] (keys from the providers' environment variables).
    pub fn settings(&self) -> quarry_session::WebSearchSettings {
        quarry_session::WebSearchSettings {
            enabled: self.web,
            provider: self.web_provider,
            url: self.web_url.clone(),
            pages: self.web_pages,
            queries: self.web_queries,
            api_key: None,
        }
    }

    /// The web as an always-searched source: see [`quarry_session::web_source`].
    pub fn source(
        &self,
        network: quarry_net::NetworkMode,
        embedder: Option<quarry_session::SharedEmbedder>,
        notice: &dyn Fn(&str),
        problems: quarry_web::WebProblemSink,
    ) -> anyhow::Result<Option<SearchableLibrary>> {
        // Pages are read in a parse worker of this executable, under the ingestion guard.
        let worker = quarry_ingest::isolate::WorkerCommand::current_exe(&["parse-worker"]).ok();
        quarry_session::web_source(&self.settings(), network, embedder, worker, notice, problems)
    }
}

/// What a research run searches and writes with: the libraries (`names`, or all), the web when
/// `--web` is on (web notices go to stderr, or stdout as `web_notice` JSON lines), and the model.
pub async fn open_sources(
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

/// The sources of a research run without its model: the libraries `names` (every library when empty),
/// each with its own embedding model from `embedders` (none loaded for BM25), and the web when `web`
/// turns it on and `network` allows it. Web notices go to stderr, or to stdout as `web_notice` JSON
/// lines with `json`. Errors: as [`open_libraries`] and [`WebArgs::source`].
pub async fn open_searchable(
    data: &DataDir,
    names: &[String],
    mode: SearchMode,
    embedders: &Arc<quarry_session::EmbedderCache>,
    web: &WebArgs,
    network: quarry_net::NetworkMode,
    json: bool,
) -> anyhow::Result<Vec<SearchableLibrary>> {
    let embedders = if mode == SearchMode::Bm25 { None } else { Some(embedders) };
    let mut libraries = open_libraries(data, names, mode, embedders, None).await?;
    // Web pages are embedded with the configured model, loaded only when the web is searched.
    let embedder = match embedders {
        Some(cache) if web.web => Some(cache.configured()?),
        _ => None,
    };
    let notice = move |message: &str| {
        if json {
            println!("{}", serde_json::json!({"event": "web_notice", "message": message}));
        } else {
            eprintln!("{message}");
        }
    };
    let problems: quarry_web::WebProblemSink = Arc::new(move |message: String| notice(&message));
    if let Some(source) = web.source(network, embedder, &notice, problems)? {
        libraries.push(source);
    }
    Ok(libraries)
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
            open_sources(&data, &args.library, args.mode, &args.embedding, &args.web, &args.llm, json).await?;
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
