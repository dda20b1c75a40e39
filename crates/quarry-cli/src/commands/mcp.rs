//! `quarry mcp`: Quarry's libraries for other tools — a Model Context Protocol server over stdio (or,
//! with `--http 127.0.0.1:PORT`, the streamable HTTP transport on loopback), built on the official Rust
//! SDK (`rmcp`). An MCP host (a desktop chat app, an editor, a coding agent) starts `quarry mcp` as a
//! child process, or connects to `http://127.0.0.1:PORT/mcp`, and calls its tools:
//!
//! - `list_libraries`: each library's name, embedding model, documents, chunks and sources;
//! - `search`: hybrid (or BM25, or dense) search over some or all libraries — passages with their
//!   citation, path, page, score and text; several libraries are fused by reciprocal rank fusion;
//! - `get_passage`: one passage (by library and chunk id) with the text before and after it;
//! - `ask`: a research agent's cited answer (NaiveRAG, DeepSearch, ChainOfRAG or the router's choice),
//!   with its citations, the claims the claim check found unsupported, and model calls and tokens. Each
//!   step of the run is sent as a progress notification when the host asks for progress; cancelling the
//!   request stops the run within the model call in progress.
//!
//! - `add` (only with `--allow-writes`): files, folders and ZIP archives on this computer read into a
//!   served library, with per-file progress and each failure's reason.
//!
//! Each indexed document is a resource, `quarry://LIBRARY/DOCUMENT_ID`, whose text (its chunks in order,
//! with page marks) a host can read whole.
//!
//! The flags of `quarry ask` apply as they do there: the network mode (offline by default: a remote
//! model server or web provider is refused before any connection), the web search settings (off unless
//! `--web`), the language and embedding models. The language model is loaded at the first `ask` and
//! kept. Libraries are opened read-only at each call, so a library being written by `quarry add` is
//! searchable meanwhile and new documents show up without a restart. Stdout carries the protocol only;
//! logs go to stderr. A call with bad arguments (a missing or empty query, an unknown agent, mode or
//! library) or one that fails (no model file) is a tool error whose text says why, which the host's model
//! can read and correct (the MCP specification's advice; `rmcp` reports arguments that do not
//! deserialize the same way); an unknown tool is a protocol error. Neither stops the server.

use crate::commands::answering::{event_line, open_searchable};
use crate::commands::args::ModelArgs;
use crate::commands::args::{LlmArgs, WebArgs};
use anyhow::Context;
use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use quarry_agents::report::neutralise_links;
use quarry_agents::{AgentConfig, AgentError, AgentKind, Answer, EventSink, FusedRetriever};
use quarry_core::{ChatModel, Passage};
use quarry_store::{DataDir, Library, SearchMode};
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, ListResourcesResult, PaginatedRequestParams,
    ProgressNotificationParam, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{schemars, tool, tool_handler, tool_router, ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use std::sync::Arc;

/// The scheme of document resources: `quarry://LIBRARY/DOCUMENT_ID` (library name percent-encoded).
pub const DOCUMENT_URI_SCHEME: &str = "quarry://";

/// Most passages one `search` call returns.
pub const MAX_SEARCH_PASSAGES: usize = 50;

#[derive(clap::Args)]
pub struct McpArgs {
    /// Libraries the tools may reach (repeat the flag; default: every library, looked up at each call).
    #[arg(long, short)]
    pub library: Vec<String>,
    /// Serve the streamable HTTP transport at http://ADDRESS/mcp instead of stdio, on this computer only:
    /// `127.0.0.1:PORT`, `[::1]:PORT` or `localhost:PORT` (port 0 picks a free one; the address is
    /// printed on stderr). Ctrl-C or SIGTERM stops it.
    /// Requests from web pages (any Origin header) and for other host names are refused.
    #[arg(long, value_name = "ADDRESS", value_parser = http_address)]
    pub http: Option<std::net::SocketAddr>,
    /// Offer the `add` tool, which reads files, folders and ZIP archives on this computer into a served
    /// library. Off by default: with it, the host's model can put any file this user can read into a
    /// library, and so into what `search` returns.
    #[arg(long)]
    pub allow_writes: bool,
    /// With --web: the host's questions to `ask` may go to the web provider as they are. Off by default:
    /// a question from the host is written by its model (perhaps from your documents or another
    /// conversation), so, like any model-written query, it is withheld unless `--web-queries all`.
    #[arg(long)]
    pub web_host_questions: bool,
    #[command(flatten)]
    pub web: WebArgs,
    #[command(flatten)]
    pub llm: LlmArgs,
    #[command(flatten)]
    pub embedding: ModelArgs,
}

/// Serves the MCP tools on stdin/stdout until the host closes the connection, or with `--http` over
/// streamable HTTP on a loopback address until the process is stopped.
///
/// Errors: `--http` with an address other than this computer's loopback; the address cannot be bound.
pub fn mcp(data: DataDir, args: McpArgs) -> anyhow::Result<()> {
    if let Some(address) = args.http.filter(|a| !a.ip().is_loopback()) {
        anyhow::bail!(
            "--http {address}: quarry mcp serves this computer only; give 127.0.0.1:PORT or [::1]:PORT \
             (it has no authentication: anyone who can reach the port can read the libraries)"
        );
    }
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
    runtime.block_on(async {
        let http = args.http;
        let server = QuarryServer::new(data, args);
        match http {
            Some(address) => serve_http(server, address).await,
            None => {
                let service = server.serve(rmcp::transport::stdio()).await.context("starting the MCP session")?;
                service.waiting().await.context("serving MCP")?;
                Ok(())
            }
        }
    })
}

/// The streamable HTTP transport (rmcp's tower service, served by hyper, one task per connection) on a
/// loopback `address`; each MCP session gets its own handle on the one [`QuarryServer`] (libraries,
/// embedders and the loaded language model are shared). rmcp refuses a `Host` header other than
/// `localhost`, `127.0.0.1` or `::1` (DNS rebinding) and, with origin validation enforced and no origin
/// allowed, any request that carries an `Origin` header: a web page in a browser on this computer cannot
/// call the tools. Runs until the process is stopped.
async fn serve_http(server: QuarryServer, address: std::net::SocketAddr) -> anyhow::Result<()> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
    let config = StreamableHttpServerConfig::default().enforce_origin_validation();
    let service =
        StreamableHttpService::new(move || Ok(server.clone()), Arc::new(LocalSessionManager::default()), config);
    let listener = tokio::net::TcpListener::bind(address).await.with_context(|| format!("binding {address}"))?;
    let bound = listener.local_addr().context("reading the bound address")?;
    eprintln!("quarry mcp: serving http://{bound}/mcp (streamable HTTP, this computer only; Ctrl-C stops)");
    // Ctrl-C and SIGTERM (a service manager, `kill`) stop it alike: no new connection, exit status 0.
    let stop = shutdown_signal();
    tokio::pin!(stop);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            signal = &mut stop => {
                eprintln!("quarry mcp: stopped ({signal})");
                return Ok(());
            }
        };
        let (stream, _) = match accepted {
            Ok(connection) => connection,
            Err(error) => {
                tracing::warn!("accepting an MCP connection: {error}");
                continue;
            }
        };
        let service = hyper_util::service::TowerToHyperService::new(service.clone());
        tokio::spawn(async move {
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            if let Err(error) = connection.await {
                tracing::debug!("MCP connection closed: {error}");
            }
        });
    }
}

/// Resolves with the name of the first stop signal: Ctrl-C (SIGINT) or, on Unix, SIGTERM.
async fn shutdown_signal() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => tokio::select! {
                _ = tokio::signal::ctrl_c() => "Ctrl-C",
                _ = terminate.recv() => "SIGTERM",
            },
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                "Ctrl-C"
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        "Ctrl-C"
    }
}

/// `--http`'s address: `127.0.0.1:PORT`, `[::1]:PORT`, or `localhost:PORT` (taken as 127.0.0.1, without
/// asking a resolver). Other hosts parse and are refused by [`mcp`] with the reason.
///
/// Errors: not `HOST:PORT` with an IP address or `localhost`.
pub fn http_address(text: &str) -> Result<std::net::SocketAddr, String> {
    if let Some(port) = text.trim().strip_prefix("localhost:") {
        let port: u16 = port.parse().map_err(|_| format!("{text:?}: the port is not a number from 0 to 65535"))?;
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.trim().parse().map_err(|_| format!("{text:?}: give 127.0.0.1:PORT, [::1]:PORT or localhost:PORT"))
}

/// Arguments of the `search` tool.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct SearchRequest {
    /// What to look for, in any language (words, a question, a figure).
    pub query: String,
    /// Libraries to search; empty or absent: every library this server reaches.
    #[serde(default)]
    pub libraries: Vec<String>,
    /// `hybrid` (BM25 and embeddings together; the default), `bm25` (keywords only) or `dense`
    /// (embeddings only).
    #[serde(default)]
    pub mode: Option<String>,
    /// How many passages to return, best first (default 8, at most 50).
    #[serde(default)]
    pub k: Option<usize>,
}

/// Arguments of the `get_passage` tool.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct PassageRequest {
    /// The library the passage came from (`library` of a search result).
    pub library: String,
    /// The passage's id in that library (`chunk_id` of a search result).
    pub chunk_id: ChunkId,
}

/// A chunk id as JSON carries it exactly: a string of digits, as `search` and `ask` give it — a chunk id
/// is a 64-bit number, and a JavaScript client's numbers hold integers exactly only up to 2^53 — or a
/// number, accepted for clients that send one.
#[derive(Debug, Clone, Copy)]
pub struct ChunkId(pub u64);

impl<'de> serde::Deserialize<'de> for ChunkId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Either {
            Digits(String),
            Number(u64),
        }
        match Either::deserialize(deserializer)? {
            Either::Number(id) => Ok(ChunkId(id)),
            Either::Digits(text) => text.trim().parse().map(ChunkId).map_err(|_| {
                serde::de::Error::custom(format!(
                    "chunk_id {text:?} is not a chunk id (a string of digits from search)"
                ))
            }),
        }
    }
}

impl schemars::JsonSchema for ChunkId {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ChunkId".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": ["string", "integer"],
            "pattern": "^[0-9]+$",
            "description": "The passage's id as search or ask gave it: a string of digits (a number is accepted)."
        })
    }
}

/// Arguments of the `add` tool (offered only with `--allow-writes`).
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct AddRequest {
    /// The library to add to; it must exist (`quarry library create`) and be served.
    pub library: String,
    /// Absolute paths of files, folders (read recursively) and ZIP archives on this computer.
    pub paths: Vec<String>,
}

/// Arguments of the `ask` tool.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct AskRequest {
    /// The question, in any language.
    pub question: String,
    /// `auto` (the router picks; the default), `naive` (one search, one answer: fastest), `deep`
    /// (sub-queries, reflection, several rounds) or `chain` (one follow-up question at a time).
    #[serde(default)]
    pub agent: Option<String>,
    /// Libraries to answer from; empty or absent: every library this server reaches.
    #[serde(default)]
    pub libraries: Vec<String>,
}

/// The server: where libraries live, which ones it serves, the models and web settings of the flags.
#[derive(Clone)]
pub struct QuarryServer {
    data: DataDir,
    /// Libraries named with `--library`; empty: all.
    served: Vec<String>,
    web: WebArgs,
    /// `--web-host-questions`: the host's questions count as typed by a person.
    web_host_questions: bool,
    llm: LlmArgs,
    embedders: Arc<quarry_session::EmbedderCache>,
    /// The language model, loaded by the first `ask`.
    model: Arc<tokio::sync::Mutex<Option<Arc<dyn ChatModel>>>>,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl QuarryServer {
    pub fn new(data: DataDir, args: McpArgs) -> QuarryServer {
        QuarryServer {
            data,
            served: args.library,
            embedders: args.embedding.cache(),
            web: args.web,
            web_host_questions: args.web_host_questions,
            llm: args.llm,
            model: Arc::new(tokio::sync::Mutex::new(None)),
            tool_router: {
                let mut router = Self::tool_router();
                if !args.allow_writes {
                    router.remove_route("add");
                }
                router
            },
        }
    }

    #[tool(description = "The libraries of documents this server can search: for each, its name, \
        embedding model, number of indexed documents and chunks, failed documents, and the folders \
        and files it was made from.")]
    async fn list_libraries(&self) -> Result<CallToolResult, ErrorData> {
        Ok(tool_result(self.libraries_listed().await, None))
    }

    #[tool(description = "Search the person's document libraries. Returns the best passages, best first, \
        each with `citation` (file and page), `path`, `library`, `chunk_id` (for get_passage), `score` \
        and `text`. Cite passages by their `citation`.")]
    async fn search(&self, Parameters(request): Parameters<SearchRequest>) -> Result<CallToolResult, ErrorData> {
        let k = request.k.unwrap_or(8).clamp(1, MAX_SEARCH_PASSAGES);
        let outcome = async {
            if request.query.trim().is_empty() {
                anyhow::bail!("`query` is empty: give words or a question to search for");
            }
            let mode: SearchMode = match request.mode.as_deref() {
                None | Some("") => SearchMode::Hybrid,
                Some(mode) => mode.parse().map_err(anyhow::Error::msg)?,
            };
            let names = self.chosen(&request.libraries)?;
            let embedders = (mode != SearchMode::Bm25).then_some(&self.embedders);
            let libraries = quarry_session::open_libraries(&self.data, &names, mode, embedders, None).await?;
            let retriever = FusedRetriever::over(libraries.iter().map(|l| Arc::clone(&l.retriever)).collect());
            let passages = retriever.retrieve(&request.query, k).await?;
            let text = passages
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    format!("{}. {} ({}, chunk {})\n{}", i + 1, p.citation(), p.library, p.chunk_id, p.text.trim())
                })
                .collect::<Vec<_>>()
                .join("\n\n");
            let value = json!({
                "query": request.query,
                "mode": mode.name(),
                "passages": passages.iter().map(passage_value).collect::<Vec<_>>(),
            });
            anyhow::Ok((value, if text.is_empty() { "no passages found".to_string() } else { text }))
        }
        .await;
        Ok(match outcome {
            Ok((value, text)) => tool_result(Ok(value), Some(text)),
            Err(e) => tool_result(Err(e), None),
        })
    }

    #[tool(description = "One passage of a library by its chunk id (from search or ask), with the text \
        just before and after it in the same document, and its citation.")]
    async fn get_passage(&self, Parameters(request): Parameters<PassageRequest>) -> Result<CallToolResult, ErrorData> {
        let outcome = async {
            let names = self.chosen(std::slice::from_ref(&request.library))?;
            let name = &names[0];
            let library = Library::open_read(&self.data, name).await?;
            let Some((before, chunk, after)) = library.chunk_in_context(request.chunk_id.0).await? else {
                anyhow::bail!(
                    "library {name:?} has no passage {} (its document may have been removed or re-read since)",
                    request.chunk_id.0
                );
            };
            let document = library.documents().find(|d| d.document_id == chunk.document_id);
            let path = document.map(|d| d.path.as_str()).unwrap_or_default();
            let passage = chunk.passage(name, path, document.and_then(|d| d.context.as_deref()), 0.0);
            let mut value = passage_value(&passage);
            value["before"] = json!(before);
            value["after"] = json!(after);
            Ok(value)
        }
        .await;
        Ok(tool_result(outcome, None))
    }

    #[tool(description = "Add files, folders (read recursively) and ZIP archives on this computer to a \
        library: each file is read, chunked, embedded and indexed, and searchable when the call returns. \
        Paths must be absolute. Unchanged files are not read again; a file that cannot be read is listed \
        with its reason and never stops the others. Returns the run's totals and the failures. Progress is \
        reported per file; cancelling stops after the files being read (what was read stays indexed).")]
    async fn add(
        &self,
        Parameters(request): Parameters<AddRequest>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let (sender, progress) = progress_reporter(&context);
        let outcome = async {
            let name = self.chosen(std::slice::from_ref(&request.library))?.remove(0);
            if request.paths.is_empty() {
                anyhow::bail!("`paths` is empty: give absolute paths of files, folders or ZIP archives");
            }
            let mut paths = Vec::new();
            for path in &request.paths {
                let path = std::path::PathBuf::from(path);
                if !path.is_absolute() {
                    anyhow::bail!("{:?} is not an absolute path", path.display().to_string());
                }
                if !path.exists() {
                    anyhow::bail!("{}: not found", path.display());
                }
                paths.push(path);
            }
            let embedder = self.embedders.for_library(&self.data, &name)?;
            let model_id =
                embedder.lock().map_err(|_| anyhow::anyhow!("embedder lock poisoned"))?.model_id().to_string();
            let worker = quarry_ingest::isolate::WorkerCommand::current_exe(&["parse-worker"])
                .context("locating the quarry executable")?;
            let mut isolation = quarry_ingest::isolate::IsolationConfig::new(worker);
            isolation.include_documents = true;
            let options = quarry_store::IngestOptions::new(isolation);
            // Cancelling the request stops the run gently, as Ctrl-C does for `quarry add`.
            let (stop, cancelled) = (options.isolation.stop.clone(), context.ct.clone());
            let watcher = tokio::spawn(async move {
                cancelled.cancelled().await;
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
            });
            let mut library = Library::open_write(&self.data, &name, &model_id).await?;
            let mut failures = Vec::new();
            let summary = library
                .add(&paths, &embedder, &options, &mut |event| {
                    let line = match &event {
                        quarry_store::IngestEvent::Read { path, chunks, .. } => format!("read {path}: {chunks} chunks"),
                        quarry_store::IngestEvent::Failed { path, status, error } => {
                            failures.push(json!({ "path": path, "status": status, "error": error }));
                            format!("{status} {path}: {error}")
                        }
                        quarry_store::IngestEvent::KeywordIndexed { documents, chunks } => {
                            format!("{documents} documents ({chunks} chunks) searchable by keyword")
                        }
                        quarry_store::IngestEvent::Indexed { documents, chunks } => {
                            format!("embedded {documents} documents ({chunks} chunks)")
                        }
                        _ => return,
                    };
                    let _ = sender.send(line);
                })
                .await;
            watcher.abort();
            let summary = summary?;
            anyhow::Ok(json!({ "library": name, "summary": summary, "failures": failures }))
        }
        .await;
        drop(sender);
        let _ = progress.await;
        Ok(tool_result(outcome, None))
    }

    #[tool(description = "Answer a question from the person's documents with a research agent. Returns \
        the answer in Markdown with [n] citation markers, the cited passages (citation, path, page, text), \
        claims the claim check found unsupported by their citations, and the model calls and tokens used. \
        Takes from half a minute to several minutes with a local model; progress is reported.")]
    async fn ask(
        &self,
        Parameters(request): Parameters<AskRequest>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let prepared = async {
            if request.question.trim().is_empty() {
                anyhow::bail!("`question` is empty");
            }
            let agent: Option<AgentKind> = match request.agent.as_deref() {
                None | Some("") | Some("auto") => None,
                Some(name) => Some(name.parse().map_err(anyhow::Error::msg)?),
            };
            let names = self.chosen(&request.libraries)?;
            let libraries = open_searchable(
                &self.data,
                &names,
                SearchMode::Hybrid,
                &self.embedders,
                &self.web,
                self.llm.network,
                false,
            )
            .await?;
            anyhow::Ok((agent, libraries, self.model().await?))
        }
        .await;
        let (agent, libraries, model) = match prepared {
            Ok(prepared) => prepared,
            Err(e) => return Ok(tool_result(Err(e), None)),
        };

        // Each step the CLI prints on stderr goes to the host as a progress notification.
        let (sender, progress) = progress_reporter(&context);
        let events: EventSink = Arc::new(move |event| {
            if let Some(line) = event_line(&event) {
                let _ = sender.send(line.trim().to_string());
            }
        });
        // As `quarry ask` with its defaults; the web query policy of the flags (`ask` withholds: no one
        // is there to approve a query one by one).
        // The host's question is model-written: it goes to the web only when the server was started with
        // `--web-host-questions` (or `--web-queries all`).
        let config = AgentConfig {
            web_queries: self.web.web_queries,
            question_typed_by_person: self.web_host_questions,
            ..AgentConfig::default()
        };
        let cancel = context.ct.child_token();
        let result = quarry_agents::ask(&request.question, agent, model, &libraries, config, events, cancel).await;
        // The sender went with the run; the last notifications go out before the result.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), progress).await;
        Ok(match result {
            Ok(answer) => tool_result(Ok(answer_value(&answer)), Some(answer_text(&answer))),
            Err(AgentError::Cancelled) => tool_result(Err(anyhow::anyhow!("cancelled")), None),
            Err(e) => tool_result(Err(e.into()), None),
        })
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for QuarryServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build())
            .with_server_info(Implementation::new("quarry", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Quarry searches the person's own documents (PDF, Word, spreadsheets, ZIP archives …) on \
                 this computer. Use `search` for passages and `ask` for a cited answer; cite what you use \
                 by the passage's `citation` (file and page). Each indexed document is also a resource \
                 (`quarry://LIBRARY/DOCUMENT_ID`) whose text can be read whole.",
            )
    }

    /// Every indexed document of the served libraries, as `quarry://LIBRARY/DOCUMENT_ID`.
    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let documents = self.documents().await.map_err(|e| ErrorData::internal_error(format!("{e:#}"), None))?;
        Ok(ListResourcesResult::with_all_items(documents))
    }

    /// The text of one document: its chunks in order, overlaps removed, with a `[p. N]` line where a
    /// new page starts. Errors: a URI that is not a document of a served library (`resource not found`).
    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let not_found = |why: String| ErrorData::resource_not_found(format!("{}: {why}", request.uri), None);
        let (library, document_id) = parse_document_uri(&request.uri).ok_or_else(|| {
            not_found("not a Quarry document (quarry://LIBRARY/DOCUMENT_ID, as resources/list gives)".into())
        })?;
        let text = self.document_text(&library, &document_id).await.map_err(|e| not_found(format!("{e:#}")))?;
        Ok(ReadResourceResult::new(vec![ResourceContents::text(text, request.uri.clone())]).into())
    }
}

/// A channel whose lines go to the host as progress notifications of the request in `context`, numbered
/// 1, 2, … (dropped when the host asked for no progress). The task ends once every sender is dropped.
fn progress_reporter(
    context: &RequestContext<RoleServer>,
) -> (tokio::sync::mpsc::UnboundedSender<String>, tokio::task::JoinHandle<()>) {
    let (sender, mut lines) = tokio::sync::mpsc::unbounded_channel::<String>();
    let (token, peer) = (context.meta.get_progress_token(), context.peer.clone());
    let task = tokio::spawn(async move {
        let mut step = 0u32;
        while let Some(line) = lines.recv().await {
            if let Some(token) = &token {
                step += 1;
                let param = ProgressNotificationParam::new(token.clone(), f64::from(step)).with_message(line);
                let _ = peer.notify_progress(param).await;
            }
        }
    });
    (sender, task)
}

/// (library, document id) of a `quarry://LIBRARY/DOCUMENT_ID` URI; `None` unless the id is lowercase
/// hex (document ids are BLAKE3 hashes), so nothing else reaches a LanceDB filter.
fn parse_document_uri(uri: &str) -> Option<(String, String)> {
    let rest = uri.strip_prefix(DOCUMENT_URI_SCHEME)?;
    let (library, id) = rest.rsplit_once('/')?;
    let library = percent_decode_str(library).decode_utf8().ok()?.into_owned();
    let valid =
        !library.is_empty() && !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    valid.then(|| (library, id.to_string()))
}

/// What a library name keeps unescaped in a document URI: letters, digits and `-_.~` (RFC 3986's
/// unreserved characters); everything else is percent-encoded.
const NAME_ESCAPES: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

impl QuarryServer {
    /// The libraries a call reaches: those it names (each must be served), else every served library
    /// (every library when `--library` was not given). Errors: a name this server does not serve.
    fn chosen(&self, asked: &[String]) -> anyhow::Result<Vec<String>> {
        if let Some(name) = asked.iter().find(|n| !self.served.is_empty() && !self.served.contains(n)) {
            anyhow::bail!("library {name:?} is not served here (this server reaches: {})", self.served.join(", "));
        }
        Ok(if asked.is_empty() { self.served.clone() } else { asked.to_vec() })
    }

    /// The language model of the flags, loaded once (a GGUF file takes seconds to map).
    async fn model(&self) -> anyhow::Result<Arc<dyn ChatModel>> {
        let mut slot = self.model.lock().await;
        if let Some(model) = slot.as_ref() {
            return Ok(Arc::clone(model));
        }
        let llm = self.llm.clone();
        let model = tokio::task::spawn_blocking(move || llm.load()).await??;
        tracing::info!("model: {}", model.describe());
        *slot = Some(Arc::clone(&model));
        Ok(model)
    }

    /// The searchable documents of the served libraries as resources.
    async fn documents(&self) -> anyhow::Result<Vec<Resource>> {
        let mut resources = Vec::new();
        for name in self.served_names()? {
            let library = Library::open_read(&self.data, &name).await?;
            let mut documents: Vec<_> =
                library.documents().filter(|d| d.state.searchable() && d.chunk_count > 0).collect();
            documents.sort_by(|a, b| a.path.cmp(&b.path));
            for d in documents {
                let file_name = d.path.rsplit(['/', '!']).next().unwrap_or(&d.path).to_string();
                let pages = d.page_count.map(|n| format!(", {n} pages")).unwrap_or_default();
                let about = d.context.as_deref().map(|c| format!(" — {c}")).unwrap_or_default();
                resources.push(
                    Resource::new(
                        format!("{DOCUMENT_URI_SCHEME}{}/{}", utf8_percent_encode(&name, NAME_ESCAPES), d.document_id),
                        file_name,
                    )
                    .with_description(format!("{} in library {name} ({}{pages}){about}", d.path, d.format))
                    .with_mime_type("text/plain"),
                );
            }
        }
        Ok(resources)
    }

    /// Every library this server reaches: the `--library` names, else all in the data folder.
    fn served_names(&self) -> anyhow::Result<Vec<String>> {
        if !self.served.is_empty() {
            return Ok(self.served.clone());
        }
        Ok(self.data.list()?.into_iter().map(|m| m.name).collect())
    }

    /// A document's text from its chunks (see [`ServerHandler::read_resource`]). Errors: a library that
    /// is not served, or no indexed document with that id.
    async fn document_text(&self, library: &str, document_id: &str) -> anyhow::Result<String> {
        let name = self.chosen(&[library.to_string()])?.remove(0);
        let library = Library::open_read(&self.data, &name).await?;
        let indexed = library.documents().any(|d| d.document_id == document_id && d.state.searchable());
        anyhow::ensure!(indexed, "library {name:?} has no indexed document {document_id}");
        let mut chunks = library.store().chunks_where(Some(format!("document_id = '{document_id}'"))).await?;
        chunks.sort_by_key(|c| c.chunk_index);
        let (mut text, mut covered, mut page) = (String::new(), 0u64, None);
        for chunk in &chunks {
            if chunk.page_start.is_some() && chunk.page_start != page {
                page = chunk.page_start;
                text.push_str(&format!("\n[p. {}]\n", page.unwrap_or_default()));
            }
            // Chunks overlap: skip what the previous one already gave, when the offsets describe the text.
            let length = chunk.text.chars().count() as u64;
            let skip = if chunk.char_end.saturating_sub(chunk.char_start) == length {
                covered.saturating_sub(chunk.char_start).min(length)
            } else {
                0
            };
            if skip == 0 && !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.extend(chunk.text.chars().skip(skip as usize));
            covered = covered.max(chunk.char_end);
        }
        Ok(text.trim().to_string())
    }

    async fn libraries_listed(&self) -> anyhow::Result<Value> {
        let mut listed = Vec::new();
        for manifest in self.data.list()? {
            if !self.served.is_empty() && !self.served.contains(&manifest.name) {
                continue;
            }
            let mut library = Library::open_read(&self.data, &manifest.name).await?;
            let status = library.status().await?;
            let searchable: usize = ["indexed", "keyword_only"].iter().filter_map(|s| status.documents.get(*s)).sum();
            listed.push(json!({
                "name": manifest.name,
                "embedding_model": manifest.embedding.model_id,
                "documents": searchable,
                "failed_documents": status.documents.get("failed").copied().unwrap_or(0),
                "chunks": status.chunks,
                "formats": status.formats,
                "sources": manifest.sources,
            }));
        }
        Ok(json!({ "libraries": listed }))
    }
}

/// A passage as the tools return it.
fn passage_value(p: &Passage) -> Value {
    json!({
        "library": p.library,
        // A string: 64-bit ids lose their last digits as JavaScript numbers.
        "chunk_id": p.chunk_id.to_string(),
        "citation": p.citation(),
        "path": p.path,
        "page_start": p.page_start,
        "page_end": p.page_end,
        "sheet": p.sheet,
        "heading_path": p.heading_path,
        "context": p.context,
        "score": p.score,
        "text": p.text,
    })
}

/// An answer as `ask` returns it (structured content).
fn answer_value(answer: &Answer) -> Value {
    json!({
        "answer": neutralise_links(&answer.markdown),
        "agent": answer.agent,
        "model": answer.model,
        "libraries": answer.libraries,
        "nothing_found": answer.nothing_found,
        "citations": answer.citations.iter().map(|c| {
            let mut value = passage_value(&c.passage);
            value["number"] = json!(c.number);
            value
        }).collect::<Vec<_>>(),
        "unsupported_claims": answer.unsupported_claims().map(|c| json!({
            "sentence": c.sentence,
            "problem": c.problem,
        })).collect::<Vec<_>>(),
        "llm_calls": answer.llm_calls,
        "prompt_tokens": answer.usage.prompt_tokens,
        "completion_tokens": answer.usage.completion_tokens,
        "seconds": answer.seconds,
    })
}

/// An answer as text for the host's model: the Markdown, its sources, the unsupported claims.
fn answer_text(answer: &Answer) -> String {
    // The host may render Markdown (images load by themselves): the model's links and images are inert.
    let mut text = neutralise_links(answer.markdown.trim());
    if !answer.citations.is_empty() {
        text.push_str("\n\nSources:");
        for c in &answer.citations {
            text.push_str(&format!("\n[{}] {} — {}", c.number, c.passage.citation(), c.passage.path));
        }
    }
    let unsupported: Vec<_> = answer.unsupported_claims().collect();
    if !unsupported.is_empty() {
        text.push_str("\n\nNot supported by the cited passages (check before relying on them):");
        for claim in unsupported {
            text.push_str(&format!("\n- \"{}\" — {}", claim.sentence, claim.problem));
        }
    }
    text
}

/// A tool's outcome as a result: JSON as structured content (and as text, unless `text` is given), or
/// a tool error whose text is the error with its causes.
fn tool_result(outcome: anyhow::Result<Value>, text: Option<String>) -> CallToolResult {
    match outcome {
        Ok(value) => {
            let mut result = CallToolResult::structured(value);
            if let Some(text) = text {
                result.content = vec![ContentBlock::text(text)];
            }
            result
        }
        Err(error) => CallToolResult::error(vec![ContentBlock::text(format!("{error:#}"))]),
    }
}
