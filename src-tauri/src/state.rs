//! What the app holds while it runs: where data lives, the person's settings, the models (loaded on first
//! use and kept until the settings change them), and the stop handles of runs in progress.

use crate::commands::Failure;
use quarry_agents::{CancellationToken, ConversationStore};
use quarry_core::{ChatModel, ErrorCode};
use quarry_session::{EmbedderCache, EmbeddingSettings, LlmSettings, Settings, SharedEmbedder};
use quarry_store::DataDir;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, RwLock};

/// The app's shared state (Tauri managed state).
pub struct AppState {
    /// The data folder: its libraries.
    pub data: DataDir,
    /// The saved conversations of the data folder.
    pub conversations: ConversationStore,
    /// `settings.toml` (see `quarry_session::Settings::default_path`).
    pub settings_path: PathBuf,
    /// The settings in force (changed by the settings screen).
    pub settings: RwLock<Settings>,
    /// Why the settings file could not be read at start (the defaults are used then).
    pub settings_problem: Option<String>,
    embedders: tokio::sync::Mutex<Option<(EmbeddingSettings, Arc<EmbedderCache>)>>,
    model: tokio::sync::Mutex<Option<(LlmSettings, Arc<dyn ChatModel>)>>,
    /// Stop flags of ingest runs, by library name.
    pub ingests: Mutex<HashMap<String, Arc<AtomicBool>>>,
    /// Cancellation of question runs, by conversation id.
    pub asks: Mutex<HashMap<String, CancellationToken>>,
    /// Where the parse workers come from: this executable with `parse-worker`.
    pub worker_program: PathBuf,
    /// Web queries waiting for the person's "Send" or "Don't send" (the "ask" web query policy), by id.
    pub web_query_approvals: WebQueryApprovals,
    /// Files and folders the person chose to add: picked in the system's file dialog or dropped on the
    /// window (as the window system reports the drop to Rust, not as the webview says). See
    /// [`AppState::check_chosen`].
    chosen: Mutex<HashSet<PathBuf>>,
}

/// Pending web query approvals: id → the answer's channel (see `commands::answer_web_query`).
pub type WebQueryApprovals = Arc<Mutex<HashMap<u64, tokio::sync::oneshot::Sender<bool>>>>;

impl AppState {
    /// State over the data folder `data` (conversations in `<data>/conversations`) with `settings` read
    /// from `settings_path`.
    pub fn new(
        data: DataDir,
        settings_path: PathBuf,
        settings: Settings,
        settings_problem: Option<String>,
        worker_program: PathBuf,
    ) -> Self {
        let conversations = ConversationStore::new(data.root().join("conversations"));
        AppState {
            data,
            conversations,
            settings_path,
            settings: RwLock::new(settings),
            settings_problem,
            embedders: tokio::sync::Mutex::new(None),
            model: tokio::sync::Mutex::new(None),
            ingests: Mutex::new(HashMap::new()),
            asks: Mutex::new(HashMap::new()),
            worker_program,
            web_query_approvals: Arc::default(),
            chosen: Mutex::new(HashSet::new()),
        }
    }

    /// Records `paths` as chosen by the person (the file dialog's answer, or a drop on the window that
    /// the window system reported). Each is kept as given and, when it exists, with symbolic links and
    /// `..` resolved.
    pub fn grant_chosen(&self, paths: &[PathBuf]) {
        if let Ok(mut chosen) = self.chosen.lock() {
            for path in paths {
                if let Ok(real) = std::fs::canonicalize(path) {
                    chosen.insert(real);
                }
                chosen.insert(path.clone());
            }
        }
    }

    /// Whether every one of `paths` is a file or folder the person chose (see [`AppState::grant_chosen`]),
    /// or lies inside a folder they chose. The webview cannot widen what Quarry reads: a script running
    /// in it (a hostile answer's markup, say) that calls `add_to_library` with `~/.ssh` is refused.
    ///
    /// Errors: the first path that was never chosen, named, with why it is refused.
    pub fn check_chosen(&self, paths: &[PathBuf]) -> Result<(), Failure> {
        let chosen = self.chosen.lock().map_err(|e| Failure::new(ErrorCode::Other, e.to_string()))?;
        let inside = |path: &Path| chosen.iter().any(|c| path == c || path.starts_with(c));
        for path in paths {
            // A path that exists is judged by where it really is; one that does not is judged as given
            // (a chosen file deleted since is then reported by the add itself).
            let allowed = match std::fs::canonicalize(path) {
                Ok(real) => inside(&real),
                Err(_) => {
                    path.is_absolute()
                        && !path.components().any(|c| c == std::path::Component::ParentDir)
                        && inside(path)
                }
            };
            if !allowed {
                return Err(Failure::new(
                    ErrorCode::Other,
                    format!(
                        "{} was not chosen in the file dialog or dropped on the window; Quarry adds only files you pick",
                        path.display()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The command that starts one parse worker (this executable with `parse-worker`): documents added
    /// to a library and web pages are both read in one.
    pub fn parse_worker(&self) -> quarry_ingest::isolate::WorkerCommand {
        quarry_ingest::isolate::WorkerCommand {
            program: self.worker_program.clone(),
            args: vec!["parse-worker".into()],
        }
    }

    /// A copy of the current settings.
    pub fn settings(&self) -> Settings {
        self.settings.read().map(|s| s.clone()).unwrap_or_default()
    }

    /// The embedding models: the one of the settings (default all-MiniLM-L6-v2) for new libraries and
    /// web pages, and each library's own; each loaded on first use, all again when the embedding settings
    /// change.
    pub async fn embedders(&self) -> Arc<EmbedderCache> {
        let wanted = self.settings().embedding;
        let mut slot = self.embedders.lock().await;
        match slot.as_ref() {
            Some((made_for, cache)) if *made_for == wanted => cache.clone(),
            _ => {
                let cache = Arc::new(EmbedderCache::new(wanted.clone()));
                *slot = Some((wanted, cache.clone()));
                cache
            }
        }
    }

    /// The embedding model of the settings, loaded off the async threads.
    ///
    /// Errors: the model files or ONNX Runtime are missing (the message names the file).
    pub async fn embedder(&self) -> Result<SharedEmbedder, Failure> {
        let cache = self.embedders().await;
        tokio::task::spawn_blocking(move || cache.configured().map_err(Failure::from))
            .await
            .map_err(|e| Failure::new(ErrorCode::Other, e.to_string()))?
    }

    /// The embedding model library `name` was made with.
    ///
    /// Errors: no such library; its model files are missing.
    pub async fn embedder_for_library(&self, name: &str) -> Result<SharedEmbedder, Failure> {
        let cache = self.embedders().await;
        let (data, name) = (self.data.clone(), name.to_string());
        tokio::task::spawn_blocking(move || cache.for_library(&data, &name).map_err(Failure::from))
            .await
            .map_err(|e| Failure::new(ErrorCode::Other, e.to_string()))?
    }

    /// The language model of the settings (default: the embedded Qwen2.5-Coder-1.5B GGUF, SmolLM2 below 4 GiB of RAM), loaded once and again
    /// only when the LLM or network settings change.
    ///
    /// Errors: the model file is missing or unreadable; a remote server in offline mode.
    pub async fn model(&self) -> Result<Arc<dyn ChatModel>, Failure> {
        let wanted = self.settings().llm_settings();
        let mut slot = self.model.lock().await;
        if let Some((loaded_for, model)) = slot.as_ref() {
            if *loaded_for == wanted {
                return Ok(model.clone());
            }
        }
        let settings = wanted.clone();
        let model = tokio::task::spawn_blocking(move || {
            settings
                .load()
                .map_err(|e| Failure::new(quarry_session::error_code(&e), format!("loading the language model: {e:#}")))
        })
        .await
        .map_err(|e| Failure::new(ErrorCode::Other, e.to_string()))??;
        *slot = Some((wanted, model.clone()));
        Ok(model)
    }
}
