//! What the `quarry` CLI and the desktop app share to run a question: open what it is asked of — the
//! libraries as the agents' retrievers and the web when it is on ([`open_sources`], the one way `ask`,
//! `report`, `mcp` and the app's questions open them) — and load the chosen language model
//! ([`LlmSettings::load`]). Both front ends are thin layers over this and the library crates.

use anyhow::Context;
use quarry_agents::{LibraryInfo, SearchableLibrary};
use quarry_core::ChatModel;
use quarry_store::{DataDir, Library, LibraryRetriever, SearchMode};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;

mod embedders;
mod error_code;
mod settings;
mod web;
pub use embedders::{EmbedderCache, SharedEmbedder};
pub use error_code::{cause_code, error_code};
pub use quarry_web::WebProblemSink;
pub use settings::{EmbeddingSettings, Settings, SettingsError};
use web::web_source;
pub use web::WebSearchSettings;

/// Which language model writes: the embedded GGUF model (default) or an OpenAI-compatible server.
/// `Debug` shows whether an API key is set, never the key.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LlmSettings {
    /// A GGUF model file run in-process; `None` with no `url`: `quarry_gguf::GgufConfig::default_model` (Qwen2.5-Coder-1.5B-Instruct; SmolLM2-135M-Instruct below 4 GiB of RAM).
    pub model_file: Option<PathBuf>,
    /// Base URL of an OpenAI-compatible server, with its API prefix (`http://127.0.0.1:11434/v1`).
    pub url: Option<String>,
    /// Model name on that server (required with `url`).
    pub model: Option<String>,
    /// The server's API key (never written to disk by Quarry); `None`: `QUARRY_LLM_API_KEY`, else the OS
    /// keyring's key when it was stored for this `url`'s origin (`quarry_secrets::get_for`), else no key
    /// (local servers need none).
    #[serde(skip)]
    pub api_key: Option<String>,
    /// Offline (default) reaches only this computer; online any host. Not stored with the LLM choice:
    /// [`Settings::network`] governs it.
    #[serde(skip)]
    pub network: quarry_net::NetworkMode,
    /// CPU threads of the embedded model (`None`: all cores).
    pub threads: Option<usize>,
    /// Context length of the embedded model, in tokens.
    pub context_tokens: u32,
    /// Strength of the embedded model's DRY repetition control (`quarry_gguf::RepetitionControl`);
    /// 0 turns it off. Default 0.8. Servers apply their own sampling settings.
    pub dry_multiplier: f32,
    /// The embedded model skips the prompt prefix it shares with its previous call
    /// (`quarry_gguf::GgufConfig::reuse_prompt_prefix`). Default true; off only to measure the saving.
    pub reuse_prompt_prefix: bool,
}

impl std::fmt::Debug for LlmSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmSettings")
            .field("model_file", &self.model_file)
            .field("url", &self.url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set, not shown>"))
            .field("network", &self.network)
            .field("threads", &self.threads)
            .field("context_tokens", &self.context_tokens)
            .field("dry_multiplier", &self.dry_multiplier)
            .field("reuse_prompt_prefix", &self.reuse_prompt_prefix)
            .finish()
    }
}

impl Default for LlmSettings {
    fn default() -> Self {
        LlmSettings {
            model_file: None,
            url: None,
            model: None,
            api_key: None,
            network: quarry_net::NetworkMode::Offline,
            threads: None,
            context_tokens: 4096,
            dry_multiplier: quarry_gguf::RepetitionControl::default().multiplier,
            reuse_prompt_prefix: true,
        }
    }
}

/// The server URL that means "a local server if one is running": `--llm-url auto`, or `auto` in the
/// settings (see [`LlmSettings::resolve_auto`]).
pub const AUTO_SERVER: &str = "auto";

impl LlmSettings {
    /// Resolves [`AUTO_SERVER`]: the first OpenAI-compatible server answering on this computer's usual
    /// ports ([`quarry_llm::find_local_servers`]; Ollama, LM Studio, llama.cpp server, vLLM, Jan, then the
    /// ports in `QUARRY_LLM_PORTS`) that serves `model` — any model, its first, when `model` is `None` — else the embedded
    /// model (`model_file`, or the default). No stored API key is sent to a server found this way. Returns
    /// the settings to load and, for `auto`, one sentence saying what was chosen and why; other settings
    /// come back unchanged with no note.
    ///
    /// Errors: `model` is named but no server found serves it (the message lists what was found).
    pub fn resolve_auto(&self) -> anyhow::Result<(LlmSettings, Option<String>)> {
        if self.url.as_deref().map(str::trim) != Some(AUTO_SERVER) {
            return Ok((self.clone(), None));
        }
        let servers = quarry_llm::find_local_servers_blocking(&[], quarry_llm::PROBE_TIMEOUT);
        let offline = self.network == quarry_net::NetworkMode::Offline;
        let mut skipped: Vec<String> = Vec::new();
        let chosen = servers.iter().find_map(|server| {
            let model = match &self.model {
                Some(wanted) => server.models.iter().find(|m| *m == wanted)?,
                None => {
                    // Offline, a model the local server only relays to its vendor's computers is no choice.
                    let (remote, local): (Vec<&String>, Vec<&String>) =
                        server.models.iter().partition(|m| offline && runs_elsewhere(m));
                    skipped.extend(remote.into_iter().cloned());
                    *local.first()?
                }
            };
            Some((server, model.clone()))
        });
        let skipped_note = if skipped.is_empty() {
            String::new()
        } else {
            format!(
                "; skipped {} (run on the server vendor's computers, not this one: offline mode)",
                skipped.join(", ")
            )
        };
        let mut settings = self.clone();
        match (chosen, &self.model) {
            (Some((server, model)), _) => {
                let note = format!(
                    "using {} at {} with model {model} (found on this computer){skipped_note}",
                    server.name, server.url
                );
                settings.url = Some(server.url.clone());
                settings.model = Some(model);
                settings.api_key = Some(String::new());
                Ok((settings, Some(note)))
            }
            (None, Some(wanted)) => {
                let found: Vec<String> =
                    servers.iter().map(|s| format!("{} at {}: {}", s.name, s.url, s.models.join(", "))).collect();
                anyhow::bail!(
                    "no local LLM server serves model {wanted:?} ({})",
                    if found.is_empty() { "none answered".to_string() } else { format!("found {}", found.join("; ")) }
                )
            }
            (None, None) => {
                settings.url = None;
                let ports: Vec<String> = quarry_llm::USUAL_PORTS.iter().map(|(port, _)| port.to_string()).collect();
                let note = format!(
                    "no local LLM server with a model answered (127.0.0.1 ports {} and {}){skipped_note}; using the embedded model",
                    ports.join(", "),
                    quarry_llm::PORTS_VARIABLE
                );
                Ok((settings, Some(note)))
            }
        }
    }

    /// Loads the chosen model ([`AUTO_SERVER`] resolved first, see [`resolve_auto`](Self::resolve_auto)).
    /// Errors: a missing or unreadable model file; a server URL without a model name; a remote URL in
    /// offline mode; `auto` with a model name no local server serves.
    pub fn load(&self) -> anyhow::Result<Arc<dyn ChatModel>> {
        if self.url.as_deref().map(str::trim) == Some(AUTO_SERVER) {
            let (settings, note) = self.resolve_auto()?;
            if let Some(note) = note {
                tracing::info!("{note}");
            }
            return settings.load();
        }
        if let Some(url) = &self.url {
            let model = self.model.clone().context("an OpenAI-compatible server needs a model name (--llm-model)")?;
            let mut config = quarry_llm::OpenAiConfig::new(url, &model);
            config.api_key = self
                .api_key
                .clone()
                // The keyring's key only when it was stored for this server (a changed URL gets none).
                .or_else(|| quarry_secrets::get_for(quarry_secrets::Secret::LlmApiKey, url).ok().flatten())
                .filter(|k| !k.is_empty());
            return Ok(Arc::new(quarry_llm::OpenAiChat::new(config, &quarry_net::Network::new(self.network))?));
        }
        let mut config = match &self.model_file {
            Some(path) => quarry_gguf::GgufConfig::new(path),
            None => quarry_gguf::GgufConfig::default_model()?,
        };
        if let Some(threads) = self.threads {
            config.threads = threads.max(1);
        }
        config.context_tokens = self.context_tokens;
        config.repetition.multiplier = self.dry_multiplier.max(0.0);
        config.reuse_prompt_prefix = self.reuse_prompt_prefix;
        Ok(Arc::new(quarry_gguf::GgufChat::load(config)?))
    }
}

/// Whether a model a local server lists runs somewhere else: Ollama's cloud models (`gpt-oss:120b-cloud`,
/// names ending in `-cloud` or `:cloud`) are relayed to Ollama's servers, so a question sent to them
/// leaves the machine although the URL is this computer's.
pub fn runs_elsewhere(model: &str) -> bool {
    let name = model.trim().to_ascii_lowercase();
    name.ends_with("-cloud") || name.ends_with(":cloud")
}

impl LlmSettings {
    /// The settings a "test connection" button should try: `typed` (the form as it stands) with
    /// `typed_key` when one was typed; otherwise the stored key only when the server URL is the one it
    /// was saved for (`saved_url`) — typing another URL and pressing Test must not send the stored key
    /// to that URL. `None` stored key use is expressed as an empty key (no key is sent).
    pub fn for_connection_test(
        mut typed: LlmSettings,
        typed_key: Option<String>,
        saved_url: Option<&str>,
    ) -> LlmSettings {
        let normalise = |u: &str| u.trim().trim_end_matches('/').to_string();
        typed.api_key = match typed_key.filter(|k| !k.trim().is_empty()) {
            Some(key) => Some(key),
            None if typed.url.as_deref().map(normalise) == saved_url.map(normalise) => None,
            None => Some(String::new()),
        };
        typed
    }

    /// Loads the model and asks it for one short reply: what a "test connection" button does. Returns
    /// the model's description and its reply.
    ///
    /// Errors: as [`load`](Self::load); the server is unreachable, refuses the key or the model name.
    pub async fn check(&self) -> anyhow::Result<(String, String)> {
        let settings = self.clone();
        let model = tokio::task::spawn_blocking(move || settings.load()).await??;
        let request = quarry_core::ChatRequest::new(
            "connection_check",
            "You are a connection check.",
            "Reply with the single word: ready",
            8,
        );
        let response = model.complete(&request, None).await?;
        Ok((model.describe(), response.text.trim().to_string()))
    }
}

/// Opens `names` (every library when empty) read-only as retrievers for the agents, each with the
/// embedding model it was made with, from `embedders` (needed unless `mode` is BM25). `document_prior`
/// overrides the weight of the document prior in keyword ranking (`Library::set_document_prior`; `None`
/// keeps the default), for measuring it (`quarry eval answers --document-prior`).
///
/// Errors: no libraries at all (the message says how to make one); a name that is not a library; a
/// library whose embedding model cannot be loaded.
pub async fn open_libraries(
    data: &DataDir,
    names: &[String],
    mode: SearchMode,
    embedders: Option<&Arc<EmbedderCache>>,
    document_prior: Option<f32>,
) -> anyhow::Result<Vec<SearchableLibrary>> {
    let names: Vec<String> =
        if names.is_empty() { data.list()?.into_iter().map(|m| m.name).collect() } else { names.to_vec() };
    if names.is_empty() {
        anyhow::bail!(
            "no libraries in {} (create one with `quarry library create NAME` and `quarry add`)",
            data.root().display()
        );
    }
    let mut libraries = Vec::new();
    for name in names {
        let mut library = Library::open_read(data, &name).await?;
        if let Some(weight) = document_prior {
            library.set_document_prior(weight);
        }
        let embedder = match embedders {
            Some(cache) => {
                let (cache, model_id) = (Arc::clone(cache), library.manifest().embedding.model_id.clone());
                let embedder = tokio::task::spawn_blocking(move || cache.for_model_id(&model_id)).await?;
                Some(embedder.with_context(|| format!("library {name:?}"))?)
            }
            None => None,
        };
        let retriever = LibraryRetriever::new(library, embedder, mode)?;
        let description = retriever.describe().await;
        libraries.push(SearchableLibrary {
            info: LibraryInfo { name, description },
            retriever: Arc::new(retriever),
            always: false,
        });
    }
    Ok(libraries)
}

/// Where one question is asked: the libraries `names` (every library when empty) searched by `mode`, and
/// the web when `web` turns it on and `network` allows it.
pub struct QuestionScope<'a> {
    /// Library names; empty: every library of the data folder.
    pub names: &'a [String],
    /// How the libraries are searched (BM25 needs no embedding model).
    pub mode: SearchMode,
    /// Web search settings (off unless `enabled`).
    pub web: &'a WebSearchSettings,
    /// Offline reaches only this computer; a provider elsewhere is then left out with a notice.
    pub network: quarry_net::NetworkMode,
    /// The program that reads web pages in an isolated parse worker (`quarry parse-worker`, the app's
    /// `parse-worker`); `None` reads them in this process.
    pub worker: Option<quarry_ingest::isolate::WorkerCommand>,
}

/// The sources a question is asked of, in the order agents search them: the libraries of `scope`, each
/// with the embedding model it was made with (from `embedders`), then the web as an always-searched
/// source when it is on, its pages embedded with the configured model. `notice` hears what the person
/// should know about the web (offline mode left it out, a page could not be read). The CLI's `ask`,
/// `report` and `mcp` and the app's questions all open their sources here.
///
/// Errors: as [`open_libraries`]; a web provider without its URL or key, a bad chunker configuration;
/// the configured embedding model cannot be loaded when the web is on.
pub async fn open_sources(
    data: &DataDir,
    scope: QuestionScope<'_>,
    embedders: &Arc<EmbedderCache>,
    notice: Arc<dyn Fn(&str) + Send + Sync>,
) -> anyhow::Result<Vec<SearchableLibrary>> {
    let embedders = (scope.mode != SearchMode::Bm25).then_some(embedders);
    let mut sources = open_libraries(data, scope.names, scope.mode, embedders, None).await?;
    // Web pages are embedded with the configured model, loaded only when the web is searched.
    let embedder = match embedders {
        Some(cache) if scope.web.enabled => {
            let cache = Arc::clone(cache);
            Some(tokio::task::spawn_blocking(move || cache.configured()).await??)
        }
        _ => None,
    };
    let problems: WebProblemSink = {
        let notice = Arc::clone(&notice);
        Arc::new(move |message: String| notice(&message))
    };
    if let Some(web) = web_source(scope.web, scope.network, embedder, scope.worker, &*notice, problems)? {
        sources.push(web);
    }
    Ok(sources)
}
