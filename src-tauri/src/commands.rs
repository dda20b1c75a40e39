//! Tauri commands: each calls the library crates and returns their result; errors come back to the
//! webview as a [`Failure`]: a code it can act on and one readable line that names the file or library
//! involved.
//!
//! Long work (ingest, questions) runs on Tauri's async runtime, never the main thread, and reports
//! progress through throttled events ([`crate::batch`]): `ingest` (key = library) and `agent` (key =
//! conversation id).

use crate::batch::Batcher;
use crate::state::AppState;
use quarry_agents::{
    AgentConfig, AgentError, AgentKind, CancellationToken, Conversation, ConversationSummary, ReportOptions, Turn,
};
use quarry_core::{Coded, ErrorCode};
use quarry_store::{IngestOptions, IngestSummary, Library, SearchMode};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tauri::{AppHandle, State};

/// An error as the front end receives it: `{"code": "disk_full", "message": "…"}`. The code is a
/// [`quarry_core::ErrorCode`] (what the UI acts on: a hint for a full disk, a busy library, a missing
/// model); the message says what happened, naming the file or library.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    /// The kind of failure (`disk_full`, `library_busy`, `library_not_found`, `model_missing`,
    /// `offline`, `unreachable`, `cancelled`, `other`).
    pub code: ErrorCode,
    /// One readable line.
    pub message: String,
}

impl Failure {
    /// A failure of kind `code`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Failure { code, message: message.into() }
    }
}

macro_rules! coded_failure {
    ($($error:ty),*) => {$(
        impl From<$error> for Failure {
            fn from(error: $error) -> Self {
                Failure { code: error.code(), message: error.to_string() }
            }
        }
    )*};
}
coded_failure!(
    quarry_store::StoreError,
    quarry_agents::ConversationError,
    quarry_session::SettingsError,
    AgentError,
    quarry_core::ChatError
);

impl From<anyhow::Error> for Failure {
    /// The code of the first cause that has one ([`quarry_session::error_code`]); the whole chain as text.
    fn from(error: anyhow::Error) -> Self {
        Failure { code: quarry_session::error_code(&error), message: format!("{error:#}") }
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure::new(ErrorCode::Other, message)
    }
}

impl From<&str> for Failure {
    fn from(message: &str) -> Self {
        Failure::new(ErrorCode::Other, message)
    }
}

type Reply<T> = Result<T, Failure>;

/// A failure of a kind the front end does not act on (a poisoned lock, a task that panicked, the
/// keyring, the system opener), as text.
fn text(error: impl std::fmt::Display) -> Failure {
    Failure::new(ErrorCode::Other, error.to_string())
}

/// What the front end shows before anything else: the version, the formats ingestion reads, where the
/// data lives.
#[derive(Debug, Serialize)]
pub struct AppInfo {
    /// Quarry's version (`0.1.0`).
    pub version: String,
    /// The names of the formats ingestion reads (`PDF`, `DOCX`, …).
    pub formats: Vec<String>,
    /// The data folder: libraries and conversations.
    pub data_dir: String,
}

/// `app_info` command: static facts about this build.
#[tauri::command]
pub fn app_info(state: State<'_, AppState>) -> AppInfo {
    info(&state)
}

fn info(state: &AppState) -> AppInfo {
    use quarry_core::Format::*;
    let formats = [
        Pdf, Docx, Pptx, Odt, Epub, Xlsx, Xlsm, Xlsb, Xls, Ods, Zip, Eml, Msg, Mbox, Image, Rtf, Text, Markdown, Csv,
        Html, Json,
    ];
    AppInfo {
        version: env!("CARGO_PKG_VERSION").to_string(),
        formats: formats.iter().map(|f| f.name().to_string()).collect(),
        data_dir: state.data.root().display().to_string(),
    }
}

/// One library in the sidebar.
#[derive(Debug, Serialize)]
pub struct LibraryView {
    /// The library's name.
    pub name: String,
    /// Documents searchable both ways (`indexed`).
    pub indexed: usize,
    /// Documents that could not be read (see `failures`).
    pub failed: usize,
    /// Documents added but not yet searchable.
    pub pending: usize,
    /// Documents searchable by keyword only: their chunks wait for embeddings.
    pub keyword_only: usize,
    /// Chunks in its indexes.
    pub chunks: usize,
    /// Chunks waiting for their embeddings (an ingest under way or stopped).
    pub waiting_chunks: usize,
    /// Estimated seconds until they are embedded, at the library's last measured speed.
    pub waiting_eta_seconds: Option<f64>,
    /// Failed documents: path and reason.
    pub failures: Vec<(String, String)>,
    /// True while an ingest into it runs.
    pub ingesting: bool,
    /// Why the library could not be opened (the rest of the fields are then zero).
    pub error: Option<String>,
}

/// `list_libraries`: every library with its counts and failures; a library that cannot be opened is
/// listed with its error, not dropped.
#[tauri::command]
pub async fn list_libraries(state: State<'_, AppState>) -> Reply<Vec<LibraryView>> {
    let manifests = state.data.list().map_err(Failure::from)?;
    let mut views = Vec::new();
    for manifest in manifests {
        let ingesting = state.ingests.lock().map(|m| m.contains_key(&manifest.name)).unwrap_or(false);
        let mut view = LibraryView {
            name: manifest.name.clone(),
            indexed: 0,
            failed: 0,
            pending: 0,
            keyword_only: 0,
            chunks: 0,
            waiting_chunks: 0,
            waiting_eta_seconds: None,
            failures: vec![],
            ingesting,
            error: None,
        };
        match Library::open_read(&state.data, &manifest.name).await {
            Ok(mut library) => match library.status().await {
                Ok(status) => {
                    let count = |state: &str| status.documents.get(state).copied().unwrap_or(0);
                    view.indexed = count("indexed");
                    view.failed = count("failed");
                    view.pending = count("pending");
                    view.keyword_only = count("keyword_only");
                    view.chunks = status.chunks;
                    view.waiting_chunks = status.waiting_chunks;
                    view.waiting_eta_seconds = status.waiting_eta_seconds;
                    view.failures = status.failures;
                }
                Err(e) => view.error = Some(e.to_string()),
            },
            Err(e) => view.error = Some(e.to_string()),
        }
        views.push(view);
    }
    Ok(views)
}

/// `create_library`: an empty library for the embedding model in the settings; when the settings name
/// none, the first documents added choose (multilingual-e5-small for mostly Chinese text).
#[tauri::command]
pub async fn create_library(state: State<'_, AppState>, name: String) -> Reply<()> {
    let embedder = state.embedder().await?;
    let automatic = !state.settings().embedding.names_a_model();
    let embedding = {
        let e = embedder.lock().map_err(text)?;
        quarry_store::EmbeddingInfo {
            model_id: e.model_id().to_string(),
            dimension: e.dimension(),
            automatic,
            chunks_per_second: None,
        }
    };
    Library::create(&state.data, name.trim(), embedding, quarry_store::ChunkingInfo::default())
        .await
        .map_err(Failure::from)?;
    Ok(())
}

/// `rename_library`.
#[tauri::command]
pub fn rename_library(state: State<'_, AppState>, from: String, to: String) -> Reply<()> {
    busy(&state, &from)?;
    state.data.rename(&from, to.trim()).map_err(Failure::from)
}

/// `delete_library`: the library and its index; the user's files are not touched.
#[tauri::command]
pub fn delete_library(state: State<'_, AppState>, name: String) -> Reply<()> {
    busy(&state, &name)?;
    state.data.delete(&name).map_err(Failure::from)
}

fn busy(state: &AppState, library: &str) -> Reply<()> {
    if state.ingests.lock().map(|m| m.contains_key(library)).unwrap_or(false) {
        return Err(Failure::new(
            ErrorCode::LibraryBusy,
            format!("library {library:?} is busy adding files; stop or wait for it first"),
        ));
    }
    Ok(())
}

/// `add_to_library`: adds files, folders and ZIP archives (dropped on the window or picked) and returns
/// the run's totals. Progress goes out as `ingest` events whose `events` are the library's
/// `IngestEvent`s (`scanned`, `read`, `failed`, `indexed`, `embedding`, `file_done`, `finished`, …).
/// One ingest per library at a time; [`cancel_ingest`] stops it after the files being read.
#[tauri::command]
pub async fn add_to_library(
    app: AppHandle,
    state: State<'_, AppState>,
    library: String,
    paths: Vec<PathBuf>,
) -> Reply<IngestSummary> {
    if paths.is_empty() {
        return Err("no files given".into());
    }
    state.check_chosen(&paths)?;
    let embedder = state.embedder_for_library(&library).await?;
    let model_id = embedder.lock().map_err(text)?.model_id().to_string();
    let mut isolation = quarry_ingest::isolate::IsolationConfig::new(state.parse_worker());
    isolation.include_documents = true;
    isolation.options.ocr = state.settings().ocr;
    let options = IngestOptions::new(isolation);
    {
        let mut running = state.ingests.lock().map_err(text)?;
        if running.contains_key(&library) {
            return Err(Failure::new(ErrorCode::LibraryBusy, format!("library {library:?} is already adding files")));
        }
        running.insert(library.clone(), options.isolation.stop.clone());
    }
    let batcher = Batcher::start(app, "ingest", &library);
    let result = async {
        let mut opened = Library::open_write(&state.data, &library, &model_id).await.map_err(Failure::from)?;
        let sink = batcher.clone();
        opened
            .add(&paths, &embedder, &options, &mut move |event| {
                sink.push(serde_json::to_value(&event).unwrap_or_default())
            })
            .await
            .map_err(Failure::from)
    }
    .await;
    if let Err(error) = &result {
        batcher.push(serde_json::json!({"event": "error", "error": error.message, "code": error.code}));
    }
    batcher.finish();
    if let Ok(mut running) = state.ingests.lock() {
        running.remove(&library);
    }
    result
}

/// `pick_files`: the system's file picker (files, or folders when `folders`); the chosen paths, empty
/// when cancelled. They become paths [`add_to_library`] takes; the webview gets no file-system access of
/// its own. `QUARRY_APP_PICKED_PATHS`, when set, names a file whose lines answer the picker (the
/// end-to-end tests cannot click a native dialog).
#[tauri::command]
pub async fn pick_files(app: AppHandle, state: State<'_, AppState>, folders: bool) -> Reply<Vec<PathBuf>> {
    let picked = match std::env::var_os("QUARRY_APP_PICKED_PATHS").filter(|p| !p.is_empty()) {
        Some(answers) => std::fs::read_to_string(&answers)
            .map_err(|e| text(format!("{}: {e}", PathBuf::from(&answers).display())))?
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(PathBuf::from)
            .collect(),
        None => show_file_picker(app, folders).await?,
    };
    state.grant_chosen(&picked);
    Ok(picked)
}

/// The system's file picker: files of the formats Quarry reads, or folders.
async fn show_file_picker(app: AppHandle, folders: bool) -> Reply<Vec<PathBuf>> {
    use tauri_plugin_dialog::DialogExt;
    let picked = tauri::async_runtime::spawn_blocking(move || {
        let dialog = app.dialog().file().set_title(if folders { "Add folders" } else { "Add files" });
        if folders {
            dialog.blocking_pick_folders()
        } else {
            dialog
                .add_filter(
                    "Documents",
                    &[
                        "pdf", "docx", "pptx", "odt", "odp", "epub", "xlsx", "xlsm", "xlsb", "xls", "ods", "zip",
                        "eml", "msg", "mbox", "rtf", "png", "jpg", "jpeg", "tif", "tiff", "txt", "md", "csv", "html",
                        "htm", "json",
                    ],
                )
                .blocking_pick_files()
        }
    })
    .await
    .map_err(text)?;
    Ok(picked.unwrap_or_default().into_iter().filter_map(|p| p.into_path().ok()).collect())
}

/// `cancel_ingest`: files being read finish and are committed; the rest waits for the next add.
#[tauri::command]
pub fn cancel_ingest(state: State<'_, AppState>, library: String) -> bool {
    match state.ingests.lock().ok().and_then(|m| m.get(&library).cloned()) {
        Some(stop) => {
            stop.store(true, Ordering::Relaxed);
            true
        }
        None => false,
    }
}

/// `list_conversations`: most recent first, and a message for each conversation file that is damaged.
#[tauri::command]
pub fn list_conversations(state: State<'_, AppState>) -> Reply<(Vec<ConversationSummary>, Vec<String>)> {
    state.conversations.list().map_err(Failure::from)
}

/// `load_conversation` command: the conversation `id`, its questions and answers.
#[tauri::command]
pub fn load_conversation(state: State<'_, AppState>, id: String) -> Reply<Conversation> {
    state.conversations.load(&id).map_err(Failure::from)
}

/// `rename_conversation` command: gives conversation `id` the title `title`; returns it renamed.
#[tauri::command]
pub fn rename_conversation(state: State<'_, AppState>, id: String, title: String) -> Reply<Conversation> {
    state.conversations.rename(&id, &title).map_err(Failure::from)
}

/// `delete_conversation` command: removes conversation `id` from the data folder.
#[tauri::command]
pub fn delete_conversation(state: State<'_, AppState>, id: String) -> Reply<()> {
    state.conversations.delete(&id).map_err(Failure::from)
}

/// `ask`: runs a research agent (`agent`: auto, naive, deep or chain) over `libraries` (empty: all)
/// and appends the turn to conversation `conversation` (a new one when `None`), which is saved before
/// the run starts and again when it ends — a crash never loses the question. The trace and the
/// streamed answer go out as `agent` events keyed by the conversation id; [`stop_ask`] cancels within
/// the model call in progress. Returns the saved conversation.
#[tauri::command]
pub async fn ask(
    app: AppHandle,
    state: State<'_, AppState>,
    conversation: Option<String>,
    question: String,
    agent: String,
    libraries: Vec<String>,
) -> Reply<Conversation> {
    let question = question.trim().to_string();
    if question.is_empty() {
        return Err("the question is empty".into());
    }
    let kind: Option<AgentKind> = match agent.as_str() {
        "auto" | "" => None,
        other => Some(other.parse()?),
    };
    let mut record = match &conversation {
        Some(id) => state.conversations.load(id).map_err(Failure::from)?,
        None => Conversation::new(&question),
    };
    record.turns.push(Turn {
        question: question.clone(),
        agent: agent.clone(),
        libraries: libraries.clone(),
        answer: None,
        error: Some("interrupted: the app closed before the answer was finished".into()),
        trace: Vec::new(),
        asked_ms: quarry_agents::conversation::now_ms(),
    });
    state.conversations.save(&mut record).map_err(Failure::from)?;
    let id = record.id.clone();
    let cancel = CancellationToken::new();
    state.asks.lock().map_err(text)?.insert(id.clone(), cancel.clone());
    let batcher = Batcher::start(app, "agent", &id);
    batcher.push(serde_json::json!({"event": "conversation", "id": id, "title": record.title}));
    let trace = Arc::new(std::sync::Mutex::new(Vec::new()));
    let result = run_question(&state, &question, kind, &libraries, &batcher, trace.clone(), cancel).await;
    if let Ok(mut asks) = state.asks.lock() {
        asks.remove(&id);
    }
    let Some(turn) = record.turns.last_mut() else { return Err("the conversation lost its last question".into()) };
    turn.trace = trace.lock().map(|t| t.clone()).unwrap_or_default();
    match result {
        Ok(answer) => {
            turn.answer = Some(answer);
            turn.error = None;
        }
        Err(error) => {
            batcher.push(serde_json::json!({"event": "error", "error": error.message, "code": error.code}));
            turn.error = Some(error.message);
        }
    }
    batcher.finish();
    state.conversations.save(&mut record).map_err(Failure::from)?;
    Ok(record)
}

async fn run_question(
    state: &AppState,
    question: &str,
    kind: Option<AgentKind>,
    libraries: &[String],
    batcher: &Arc<Batcher>,
    trace: Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
    cancel: CancellationToken,
) -> Reply<quarry_agents::Answer> {
    let settings = state.settings();
    // Every event goes to the webview; all but streamed text also to the trace kept with the turn.
    let record: Arc<dyn Fn(serde_json::Value) + Send + Sync> = {
        let batcher = batcher.clone();
        Arc::new(move |value: serde_json::Value| {
            if value["event"] != "answer_delta" {
                if let Ok(mut t) = trace.lock() {
                    t.push(value.clone());
                }
            }
            batcher.push(value);
        })
    };
    let web_notice: Arc<dyn Fn(&str) + Send + Sync> = {
        let record = record.clone();
        Arc::new(move |message: &str| record(serde_json::json!({"event": "web_notice", "message": message})))
    };
    let scope = quarry_session::QuestionScope {
        names: libraries,
        mode: SearchMode::Hybrid,
        web: &settings.web,
        network: settings.network,
        worker: Some(state.parse_worker()),
    };
    let sources = quarry_session::open_sources(&state.data, scope, &state.embedders().await, web_notice)
        .await
        .map_err(Failure::from)?;
    let model = state.model().await?;
    let events: quarry_agents::EventSink =
        Arc::new(move |event| record(serde_json::to_value(&event).unwrap_or_default()));
    let approver = (settings.web.queries == quarry_agents::web_gate::WebQueryPolicy::Ask)
        .then(|| web_query_approver(batcher.clone(), state.web_query_approvals.clone()));
    let config =
        AgentConfig { web_queries: settings.web.queries, web_query_approver: approver, ..AgentConfig::default() };
    match quarry_agents::ask(question, kind, model, &sources, config, events, cancel).await {
        Ok(answer) => Ok(answer),
        Err(AgentError::Cancelled) => Err(Failure::new(ErrorCode::Cancelled, "stopped")),
        Err(e) => Err(e.into()),
    }
}

/// Longest the app waits for "Send" or "Don't send" on a web query before withholding it.
const WEB_QUERY_APPROVAL_WAIT: std::time::Duration = std::time::Duration::from_secs(300);

/// Under the "ask" web query policy: each query the model wrote goes to the webview as a
/// `web_query_approval` event (`id`, `source`, `query`) and waits for [`answer_web_query`]; no answer
/// within [`WEB_QUERY_APPROVAL_WAIT`], or the question stopped, withholds it.
fn web_query_approver(
    batcher: Arc<Batcher>,
    pending: crate::state::WebQueryApprovals,
) -> quarry_agents::web_gate::QueryApprover {
    let next = Arc::new(std::sync::atomic::AtomicU64::new(1));
    quarry_agents::web_gate::QueryApprover(Arc::new(move |source: String, query: String| {
        let id = next.fetch_add(1, Ordering::Relaxed);
        let (answer, answered) = tokio::sync::oneshot::channel();
        if let Ok(mut waiting) = pending.lock() {
            waiting.insert(id, answer);
        }
        batcher.push(serde_json::json!({"event": "web_query_approval", "id": id, "source": source, "query": query}));
        let pending = pending.clone();
        Box::pin(async move {
            let approved = matches!(tokio::time::timeout(WEB_QUERY_APPROVAL_WAIT, answered).await, Ok(Ok(true)));
            if let Ok(mut waiting) = pending.lock() {
                waiting.remove(&id);
            }
            approved
        })
    }))
}

/// `answer_web_query`: the person's answer to web query approval `id` (true: send it). False when no
/// such question waits (answered already, timed out, or the question stopped).
#[tauri::command]
pub fn answer_web_query(state: State<'_, AppState>, id: u64, send: bool) -> bool {
    let waiting = state.web_query_approvals.lock().ok().and_then(|mut w| w.remove(&id));
    waiting.is_some_and(|answer| answer.send(send).is_ok())
}

/// `stop_ask`: cancels the question running in `conversation`; false when none runs.
#[tauri::command]
pub fn stop_ask(state: State<'_, AppState>, conversation: String) -> bool {
    match state.asks.lock().ok().and_then(|m| m.get(&conversation).cloned()) {
        Some(cancel) => {
            cancel.cancel();
            true
        }
        None => false,
    }
}

/// A cited passage with the text around it, for the citation panel.
#[derive(Debug, Serialize)]
pub struct PassageContext {
    /// Text of the chunk before and after (same document); `None` at the document's edges.
    pub before: Option<String>,
    /// The cited chunk's text.
    pub text: String,
    /// Text of the chunk after it; `None` at the document's end.
    pub after: Option<String>,
    /// False when the library no longer holds the chunk (then `text` is the quote kept with the answer).
    pub in_library: bool,
}

/// The passage cited as `[number]` in answer `turn` (0-based) of `conversation`. Citations are looked up
/// here, not sent from the webview: chunk ids are 64-bit and would lose precision as JavaScript numbers,
/// and only a cited file can be opened.
fn cited_passage(state: &AppState, conversation: &str, turn: usize, number: usize) -> Reply<quarry_core::Passage> {
    let record = state.conversations.load(conversation).map_err(Failure::from)?;
    let answer = record
        .turns
        .get(turn)
        .and_then(|t| t.answer.as_ref())
        .ok_or_else(|| format!("no answer number {} in {:?}", turn + 1, record.title))?;
    answer
        .citations
        .iter()
        .chain(&answer.sources)
        .find(|c| c.number == number)
        .map(|c| c.passage.clone())
        .ok_or_else(|| format!("the answer has no source [{number}]").into())
}

/// `passage_context`: the passage cited as `[number]` with its neighbouring chunks.
#[tauri::command]
pub async fn passage_context(
    state: State<'_, AppState>,
    conversation: String,
    turn: usize,
    number: usize,
) -> Reply<PassageContext> {
    let passage = cited_passage(&state, &conversation, turn, number)?;
    let quoted = PassageContext { before: None, text: passage.text.clone(), after: None, in_library: false };
    if passage.url().is_some() {
        return Ok(quoted);
    }
    let opened = Library::open_read(&state.data, &passage.library).await.map_err(Failure::from)?;
    Ok(match opened.chunk_in_context(passage.chunk_id).await.map_err(Failure::from)? {
        Some((before, chunk, after)) => PassageContext { before, text: chunk.text, after, in_library: true },
        None => quoted,
    })
}

/// `open_source`: opens the file cited as `[number]` in the system viewer (a ZIP member opens its
/// archive; a web page its URL in the browser). Only cited sources can be opened, so the webview cannot
/// launch arbitrary programs: a file only when it lies inside its library's sources and is not a program
/// or launcher (`quarry_store::file_to_open`); a URL only when it is http(s), and in offline mode only
/// after the person agrees in a native dialog (`quarry_net::browser_link`), since opening it reaches
/// another computer. Errors: the reason, naming the file or URL; "not opened" when the person declined.
#[tauri::command]
pub async fn open_source(
    app: AppHandle,
    state: State<'_, AppState>,
    conversation: String,
    turn: usize,
    number: usize,
) -> Reply<()> {
    let passage = cited_passage(&state, &conversation, turn, number)?;
    if let Some(url) = passage.url() {
        let url = match quarry_net::browser_link(url, state.settings().network).map_err(text)? {
            quarry_net::BrowserLink::Open(url) => url,
            quarry_net::BrowserLink::AskFirst(url) => {
                use tauri_plugin_dialog::{DialogExt, MessageDialogButtons, MessageDialogKind};
                let agreed = app
                    .dialog()
                    .message(format!(
                        "Quarry is in offline mode. Opening {url} in your browser connects to {}. Open it?",
                        url.host_str().unwrap_or("another computer")
                    ))
                    .title("Open a web page?")
                    .kind(MessageDialogKind::Warning)
                    .buttons(MessageDialogButtons::OkCancelCustom("Open in browser".into(), "Cancel".into()))
                    .blocking_show();
                if !agreed {
                    return Err(Failure::new(ErrorCode::Offline, format!("not opened: {url} (offline mode)")));
                }
                url
            }
        };
        return tauri_plugin_opener::open_url(url.as_str(), None::<&str>)
            .map_err(|e| text(format!("opening {url}: {e}")));
    }
    let file = passage.path.split("!/").next().unwrap_or(&passage.path).to_string();
    let sources = state
        .data
        .list()
        .map_err(Failure::from)?
        .into_iter()
        .find(|m| m.name == passage.library)
        .map(|m| m.sources)
        .ok_or_else(|| {
            Failure::new(ErrorCode::LibraryNotFound, format!("library {:?} no longer exists", passage.library))
        })?;
    let real = quarry_store::file_to_open(std::path::Path::new(&file), &sources)?;
    tauri_plugin_opener::open_path(&real, None::<&str>).map_err(|e| text(format!("opening {}: {e}", real.display())))
}

/// `export_report`: asks where to save (the system save dialog) and writes the Markdown report of turn
/// `turn` (0-based) of `conversation`, with links relative to the chosen folder. Returns the path, or
/// `None` when the dialog was cancelled. `QUARRY_APP_SAVE_PATH`, when set, answers the dialog (the
/// end-to-end tests cannot click a native dialog).
#[tauri::command]
pub async fn export_report(
    app: AppHandle,
    state: State<'_, AppState>,
    conversation: String,
    turn: usize,
) -> Reply<Option<PathBuf>> {
    use tauri_plugin_dialog::DialogExt;
    let record = state.conversations.load(&conversation).map_err(Failure::from)?;
    let answer = record
        .turns
        .get(turn)
        .and_then(|t| t.answer.clone())
        .ok_or_else(|| format!("conversation {:?} has no answer number {}", record.title, turn + 1))?;
    let path = match std::env::var_os("QUARRY_APP_SAVE_PATH").filter(|p| !p.is_empty()) {
        Some(path) => Some(PathBuf::from(path)),
        None => {
            let name = format!("{}.md", file_stem(&record.title));
            let picked = tauri::async_runtime::spawn_blocking(move || {
                app.dialog().file().add_filter("Markdown", &["md"]).set_file_name(name).blocking_save_file()
            })
            .await
            .map_err(text)?;
            picked.and_then(|p| p.into_path().ok())
        }
    };
    let Some(path) = path else { return Ok(None) };
    let options = ReportOptions {
        title: None,
        date: chrono::Local::now().format("%Y-%m-%d %H:%M").to_string(),
        link_base: Some(quarry_agents::report::report_folder(&path).map_err(text)?),
    };
    quarry_agents::report::write_report(&path, &quarry_agents::render_report(&answer, &options)).map_err(text)?;
    Ok(Some(path))
}

/// A file name made from a title: letters, digits, spaces and dashes, at most 60 characters.
fn file_stem(title: &str) -> String {
    let stem: String =
        title.chars().map(|c| if c.is_alphanumeric() || c == ' ' || c == '-' { c } else { ' ' }).collect();
    let stem = stem.split_whitespace().collect::<Vec<_>>().join(" ");
    let stem: String = stem.chars().take(60).collect();
    if stem.is_empty() {
        "report".into()
    } else {
        stem
    }
}

/// Where each API key comes from, for the settings screen (the key itself is never sent to the webview).
#[derive(Debug, Serialize)]
pub struct KeyState {
    /// `llm`, `tavily`, `brave`.
    pub name: &'static str,
    /// `environment`, `keyring` or `none`.
    pub source: &'static str,
    /// The environment variable that overrides the keyring.
    pub variable: &'static str,
}

/// The settings screen's data.
#[derive(Debug, Serialize)]
pub struct SettingsView {
    /// The settings as saved (the defaults when there is no file).
    pub settings: quarry_session::Settings,
    /// The settings file.
    pub path: String,
    /// The data folder in use now (a changed `data_dir` takes effect at the next start).
    pub data_dir_in_use: String,
    /// Which API keys are stored, and where from.
    pub keys: Vec<KeyState>,
    /// Why the keyring cannot be used, if it cannot.
    pub keyring_problem: Option<String>,
    /// Why the settings file could not be read at start.
    pub settings_problem: Option<String>,
}

const KEYS: [(&str, quarry_secrets::Secret); 3] = [
    ("llm", quarry_secrets::Secret::LlmApiKey),
    ("tavily", quarry_secrets::Secret::TavilyApiKey),
    ("brave", quarry_secrets::Secret::BraveApiKey),
];

/// `get_settings`.
#[tauri::command]
pub async fn get_settings(state: State<'_, AppState>) -> Reply<SettingsView> {
    let settings = state.settings();
    let (keys, keyring_problem) = tauri::async_runtime::spawn_blocking(|| {
        let mut problem = None;
        let keys = KEYS
            .iter()
            .map(|(name, secret)| {
                let source = if std::env::var(secret.variable()).is_ok_and(|v| !v.trim().is_empty()) {
                    "environment"
                } else {
                    match quarry_secrets::is_stored(*secret) {
                        Ok(true) => "keyring",
                        Ok(false) => "none",
                        Err(e) => {
                            problem = Some(e.to_string());
                            "none"
                        }
                    }
                };
                KeyState { name, source, variable: secret.variable() }
            })
            .collect::<Vec<_>>();
        (keys, problem)
    })
    .await
    .map_err(text)?;
    Ok(SettingsView {
        settings,
        path: state.settings_path.display().to_string(),
        data_dir_in_use: state.data.root().display().to_string(),
        keys,
        keyring_problem,
        settings_problem: state.settings_problem.clone(),
    })
}

/// `save_settings`: checks and writes the settings (the next question uses them; a new data folder
/// takes effect at the next start) and stores the API keys given in `keys` (`[name, value]`; an empty
/// value deletes the key) in the OS keyring.
///
/// Errors: an OpenAI-compatible URL without a model name, an LLM API key with no server URL (the
/// embedded model chosen), a model file or folder that does not exist, the settings file cannot be
/// written, the keyring refuses a key.
#[tauri::command]
pub async fn save_settings(
    state: State<'_, AppState>,
    settings: quarry_session::Settings,
    keys: Vec<(String, String)>,
) -> Reply<SettingsView> {
    let settings = settings.without_blanks();
    if settings.llm.url.is_some() && settings.llm.model.is_none() {
        return Err("an OpenAI-compatible server needs a model name".into());
    }
    for (what, path) in
        [("model file", &settings.llm.model_file), ("embedding model folder", &settings.embedding.model_dir)]
    {
        if let Some(path) = path.as_ref().filter(|p| !p.exists()) {
            return Err(format!("the {what} {} does not exist", path.display()).into());
        }
    }
    let llm_url = settings.llm.url.clone();
    tauri::async_runtime::spawn_blocking(move || {
        let llm = quarry_secrets::Secret::LlmApiKey;
        let mut llm_key_given = false;
        for (name, value) in keys {
            let secret = quarry_secrets::Secret::parse(&name).ok_or_else(|| format!("unknown key {name:?}"))?;
            if secret == llm {
                // The LLM key is kept for the server it was entered with, and sent to no other.
                llm_key_given = true;
                match llm_url.as_deref() {
                    Some(url) => quarry_secrets::set_for(secret, url, &value).map_err(text)?,
                    None if value.trim().is_empty() => quarry_secrets::delete(secret).map_err(text)?,
                    None => return Err(Failure::from("an API key for the language model needs its server's URL")),
                }
            } else {
                quarry_secrets::set(secret, &value).map_err(text)?;
            }
        }
        // Another server URL (typed, or a discovered server's "Use") drops the key stored for the old one
        // unless it was entered again. Choosing the embedded model keeps it: it goes to no server then, and
        // to its own server again when the person switches back.
        if !llm_key_given {
            let bound = quarry_secrets::bound_origin(llm).ok().flatten();
            let now = llm_url.as_deref().and_then(quarry_secrets::origin);
            if bound.is_some() && now.is_some() && bound != now {
                quarry_secrets::delete(llm).map_err(text)?;
            }
        }
        Ok::<(), Failure>(())
    })
    .await
    .map_err(text)??;
    settings.save(&state.settings_path).map_err(Failure::from)?;
    *state.settings.write().map_err(text)? = settings;
    get_settings(state).await
}

/// `test_connection`: loads the model `settings` describe (with `llm_key` when given, else the stored
/// key — only when the URL is the one the key was saved with) and asks it for a one-word reply.
/// Returns "model — reply".
#[tauri::command]
pub async fn test_connection(
    state: State<'_, AppState>,
    settings: quarry_session::Settings,
    llm_key: Option<String>,
) -> Reply<String> {
    let saved_url = state.settings().llm.url;
    let llm = quarry_session::LlmSettings::for_connection_test(
        settings.without_blanks().llm_settings(),
        llm_key,
        saved_url.as_deref(),
    );
    let (model, reply) = llm.check().await.map_err(Failure::from)?;
    Ok(format!("{model} — replied {reply:?}"))
}

/// `find_llm_servers`: the OpenAI-compatible servers answering on this computer's usual ports (Ollama,
/// LM Studio, llama.cpp server, vLLM, Jan, and `$QUARRY_LLM_PORTS`), each with the models it serves, for
/// Settings to offer in one click. Asks `127.0.0.1` only, 1.5 s at most; never fails (an empty list).
#[tauri::command]
pub async fn find_llm_servers() -> Reply<Vec<quarry_llm::LocalServer>> {
    Ok(quarry_llm::find_local_servers(&[], quarry_llm::PROBE_TIMEOUT).await)
}
