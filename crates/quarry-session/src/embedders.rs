//! Embedding models loaded once per process, one per model id: each library is searched and filled with
//! the model it was made with (recorded in its manifest), so an English library on all-MiniLM-L6-v2 and a
//! Chinese one on multilingual-e5-small can be asked together.

use crate::EmbeddingSettings;
use anyhow::Context;
use quarry_index::{Embedder, EmbedderConfig};
use quarry_store::{DataDir, LibraryManifest};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A loaded embedder, shared by the retrievers and ingest runs that use it.
pub type SharedEmbedder = Arc<Mutex<Embedder>>;

/// The embedders of one process: the configured model (for new libraries) and the models existing
/// libraries were made with, each loaded on first use and kept. Loading is blocking (up to seconds);
/// async callers wrap calls in `spawn_blocking`.
pub struct EmbedderCache {
    settings: EmbeddingSettings,
    loaded: Mutex<HashMap<String, SharedEmbedder>>,
}

impl EmbedderCache {
    /// A cache for `settings` (the configured model); nothing is loaded yet.
    pub fn new(settings: EmbeddingSettings) -> Self {
        EmbedderCache { settings, loaded: Mutex::new(HashMap::new()) }
    }

    /// The settings this cache was made for.
    pub fn settings(&self) -> &EmbeddingSettings {
        &self.settings
    }

    /// The configured model: what new libraries are made with, and what web pages are embedded with.
    ///
    /// Errors: its files are missing (the message names them) or the engine rejects them.
    pub fn configured(&self) -> anyhow::Result<SharedEmbedder> {
        let config = self.settings.config()?;
        self.load(config)
    }

    /// The model a library made with `model_id` needs: the configured model when it has that id, else the
    /// built-in model of that id ([`EmbedderConfig::for_model_id`]).
    ///
    /// Errors: `model_id` is neither (the message says how to configure it); missing model files.
    pub fn for_model_id(&self, model_id: &str) -> anyhow::Result<SharedEmbedder> {
        if let Some(loaded) = self.loaded.lock().map_err(|_| anyhow::anyhow!("embedder cache poisoned"))?.get(model_id)
        {
            return Ok(loaded.clone());
        }
        let config = match self.settings.config() {
            Ok(config) if config.model_id == model_id => config,
            _ => match EmbedderConfig::for_model_id(model_id) {
                Some(config) => config?,
                None => anyhow::bail!(
                    "embedding model {model_id:?} is not built in; point the embedding settings (or --model-dir and \
                     --model-id) at that model's folder to use this library"
                ),
            },
        };
        self.load(config)
    }

    /// The model library `name` was made with (see [`EmbedderCache::for_model_id`]).
    ///
    /// Errors: no such library, an unreadable manifest, or as `for_model_id`.
    pub fn for_library(&self, data: &DataDir, name: &str) -> anyhow::Result<SharedEmbedder> {
        let manifest = LibraryManifest::load(&data.existing(name)?)?;
        let model_id = &manifest.embedding.model_id;
        if !self.knows(model_id) {
            anyhow::bail!(
                "library {name:?} was built with embedding model {model_id:?}, which is not built in: point the embedding \
                 settings (or --model-dir and --model-id) at that model's folder, or rebuild the library with a built-in \
                 model: `quarry library reindex {name}`"
            );
        }
        self.for_model_id(model_id).with_context(|| format!("library {name:?}"))
    }

    /// Whether `model_id` can be loaded: already loaded, the configured model, or built in.
    fn knows(&self, model_id: &str) -> bool {
        self.loaded.lock().is_ok_and(|loaded| loaded.contains_key(model_id))
            || self.settings.config().is_ok_and(|config| config.model_id == model_id)
            || EmbedderConfig::for_model_id(model_id).is_some()
    }

    fn load(&self, config: EmbedderConfig) -> anyhow::Result<SharedEmbedder> {
        let mut loaded = self.loaded.lock().map_err(|_| anyhow::anyhow!("embedder cache poisoned"))?;
        if let Some(embedder) = loaded.get(&config.model_id) {
            return Ok(embedder.clone());
        }
        let embedder =
            Embedder::new(&config).with_context(|| format!("loading embedding model {}", config.model_id))?;
        let embedder = Arc::new(Mutex::new(embedder));
        loaded.insert(config.model_id.clone(), embedder.clone());
        Ok(embedder)
    }
}
