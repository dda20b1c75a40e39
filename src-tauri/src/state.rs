//! What the app holds while it runs: where data lives, the models (loaded on first use and kept), and
//! the stop handles of runs in progress.

use quarry_agents::{CancellationToken, ConversationStore};
use quarry_core::ChatModel;
use quarry_index::{Embedder, EmbedderConfig};
use quarry_store::DataDir;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use tokio::sync::OnceCell;

/// The app's shared state (Tauri managed state).
pub struct AppState {
    pub data: DataDir,
    pub conversations: ConversationStore,
    embedder: OnceCell<Arc<Mutex<Embedder>>>,
    model: OnceCell<Arc<dyn ChatModel>>,
    /// Stop flags of ingest runs, by library name.
    pub ingests: Mutex<HashMap<String, Arc<AtomicBool>>>,
    /// Cancellation of question runs, by conversation id.
    pub asks: Mutex<HashMap<String, CancellationToken>>,
    /// Where the parse workers come from: this executable with `parse-worker`.
    pub worker_program: PathBuf,
}

impl AppState {
    /// State over the data folder `data` (conversations in `<data>/conversations`).
    pub fn new(data: DataDir, worker_program: PathBuf) -> Self {
        let conversations = ConversationStore::new(data.root().join("conversations"));
        AppState {
            data,
            conversations,
            embedder: OnceCell::new(),
            model: OnceCell::new(),
            ingests: Mutex::new(HashMap::new()),
            asks: Mutex::new(HashMap::new()),
            worker_program,
        }
    }

    /// The embedding model (the set-up script's all-MiniLM-L6-v2), loaded once.
    ///
    /// Errors: the model files or ONNX Runtime are missing (the message names the file).
    pub async fn embedder(&self) -> Result<Arc<Mutex<Embedder>>, String> {
        self.embedder
            .get_or_try_init(|| async {
                tokio::task::spawn_blocking(|| {
                    let config = EmbedderConfig::default_model().map_err(|e| e.to_string())?;
                    Embedder::new(&config).map(|e| Arc::new(Mutex::new(e))).map_err(|e| format!("loading the embedding model {}: {e}", config.model_id))
                })
                .await
                .map_err(|e| e.to_string())?
            })
            .await
            .cloned()
    }

    /// The language model (the embedded SmolLM2 GGUF by default), loaded once.
    ///
    /// Errors: the model file is missing or unreadable.
    pub async fn model(&self) -> Result<Arc<dyn ChatModel>, String> {
        self.model
            .get_or_try_init(|| async {
                tokio::task::spawn_blocking(|| quarry_session::LlmSettings::default().load().map_err(|e| format!("loading the language model: {e:#}")))
                    .await
                    .map_err(|e| e.to_string())?
            })
            .await
            .cloned()
    }
}
