//! Argument groups several commands share (clap `Args`): the embedding model, the language model, the
//! web as a source, per-document answers, the parse workers, the document prior. Not a command.

use anyhow::Context;
use quarry_agents::AgentConfig;
use quarry_core::ChatModel;
use quarry_index::{Embedder, EmbedderConfig};
use quarry_ingest::isolate::{IsolationConfig, OcrPermits, WorkerCommand};
use quarry_store::DataDir;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Which embedding model new libraries are made with. Without options: the set-up script's
/// all-MiniLM-L6-v2 (int8). An existing library always uses the model it was made with.
#[derive(clap::Args, Debug, Clone)]
pub struct ModelArgs {
    /// A built-in embedding model: `minilm` (all-MiniLM-L6-v2, English; the default) or `e5`
    /// (multilingual-e5-small: Chinese and ~100 other languages).
    #[arg(long, env = "QUARRY_EMBEDDER")]
    pub embedder: Option<String>,
    /// Folder of an ONNX sentence-embedding model: model.onnx, tokenizer.json, config.json,
    /// special_tokens_map.json, tokenizer_config.json (mean pooling is applied).
    #[arg(long, env = "QUARRY_EMBED_MODEL_DIR")]
    pub model_dir: Option<PathBuf>,
    /// Name recorded with the library for that model (default: the folder name).
    #[arg(long, env = "QUARRY_EMBED_MODEL_ID")]
    pub model_id: Option<String>,
    /// Languages the model was trained on, comma-separated ISO 639-1 codes (default `en`; give `zh` for a
    /// Chinese model so hybrid search uses it for Chinese queries).
    #[arg(long, value_delimiter = ',')]
    pub model_languages: Option<Vec<String>>,
    /// The ONNX Runtime library (libonnxruntime.so, version ≥ 1.24; default: the set-up script's copy).
    #[arg(long, env = "QUARRY_ONNX_RUNTIME")]
    pub onnx_runtime: Option<PathBuf>,
}

impl ModelArgs {
    /// These flags as [`quarry_session::EmbeddingSettings`].
    pub fn settings(&self) -> quarry_session::EmbeddingSettings {
        quarry_session::EmbeddingSettings {
            model: self.embedder.clone(),
            model_dir: self.model_dir.clone(),
            model_id: self.model_id.clone(),
            languages: self.model_languages.clone(),
            onnx_runtime: self.onnx_runtime.clone(),
        }
    }

    pub fn config(&self) -> anyhow::Result<EmbedderConfig> {
        Ok(self.settings().config()?)
    }

    /// The configured model (for a new library).
    pub fn load(&self) -> anyhow::Result<Arc<Mutex<Embedder>>> {
        let config = self.config()?;
        let embedder =
            Embedder::new(&config).with_context(|| format!("loading embedding model {}", config.model_id))?;
        Ok(Arc::new(Mutex::new(embedder)))
    }

    /// Embedders for these options: the configured one, and each library's own.
    pub fn cache(&self) -> Arc<quarry_session::EmbedderCache> {
        Arc::new(quarry_session::EmbedderCache::new(self.settings()))
    }

    /// The model for library `name`: without model options the one it was made with; with them the
    /// model they name, which the library then refuses if it was made with another (the error says how
    /// to re-index).
    pub fn load_for_library(&self, data: &DataDir, name: &str) -> anyhow::Result<Arc<Mutex<Embedder>>> {
        if self.embedder.is_some() || self.model_dir.is_some() {
            return self.load();
        }
        self.cache().for_library(data, name)
    }
}

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
    /// penalises extending a sequence the model already wrote, which stops small models' loops (digits
    /// never extend one, so numbers are copied unchanged).
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

/// How the answer pipeline reads documents: NaiveRAG's and DeepSearch's answers one document at a time
/// when several match a question alike (`quarry_agents::per_document`, `quarry_agents::document_plan`),
/// and the genre layer (`quarry_agents::genre`); `ask` and `eval answers` take the same flags.
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
    /// Passages each document's call reads when DeepSearch answers per document (its best passage of the
    /// question's search, then its hits for the document's own sub-question).
    #[arg(long, default_value_t = AgentConfig::default().deep_passages_per_document)]
    pub deep_passages_per_document: usize,
    /// What the pipeline knows of the documents' genre: auto (chosen per question from the documents its
    /// first search finds: financial when at least half of them hold statement tables), financial
    /// (filings: table rows cut to the asked period, the row that answers quoted under the answer, line
    /// items in the claim check) or general (passages shown as ingested, nothing quoted, for papers,
    /// reports, mail).
    #[arg(long, default_value = "auto")]
    pub genre: quarry_agents::GenreKind,
}

impl PerDocumentArgs {
    /// `config` with these settings: at least one document, at least 100 characters a passage.
    pub fn apply(&self, config: AgentConfig) -> AgentConfig {
        AgentConfig {
            max_documents_per_answer: self.max_documents.max(1),
            passages_per_document: self.passages_per_document,
            document_passage_chars: self.document_passage_chars.max(100),
            deep_passages_per_document: self.deep_passages_per_document.max(1),
            genre: self.genre,
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
}

/// Parser worker settings shared by `parse`, `add`, `sync`, `watch` and `library reindex`.
#[derive(clap::Args, Debug, Clone)]
pub struct WorkerArgs {
    /// Parser worker processes run at once (default: number of cores).
    #[arg(long)]
    pub workers: Option<usize>,
    /// Longest time one document may take, in seconds, before it is reported as `timeout` (counted in CPU time for a worker a busy machine starves).
    #[arg(long, default_value_t = 60)]
    pub timeout_secs: u64,
    /// Memory each parser worker may use beyond its start-up size, in MiB; a document that needs more is reported as `too_large`.
    #[arg(long, default_value_t = 3072)]
    pub memory_limit_mb: u64,
    /// When PDF pages are read by OCR: `auto` (pages without a text layer: scans), `off` (scans are
    /// refused as `no text layer`), `force` (every page; for PDFs whose text layer is wrong). Pictures
    /// (PNG, JPEG, TIFF) are read by OCR unless `off`.
    #[arg(long, default_value = "auto")]
    pub ocr: quarry_ingest::OcrMode,
    /// Parser workers that may read pages by OCR at once, each holding up to about 1 GiB while it does
    /// (default: one per four cores, as many as the free memory holds, at most --workers).
    #[arg(long)]
    pub ocr_at_once: Option<usize>,
}

impl WorkerArgs {
    /// Worker isolation settings that run this executable's hidden `parse-worker` command.
    pub fn isolation(&self) -> anyhow::Result<IsolationConfig> {
        let mut config = IsolationConfig::new(
            WorkerCommand::current_exe(&["parse-worker"]).context("locating the quarry executable")?,
        );
        if let Some(workers) = self.workers {
            config.workers = workers.max(1);
        }
        // Unset: IsolationConfig::new's default; a limit above --workers gates nothing, as one equal to it.
        if let Some(at_once) = self.ocr_at_once {
            config.ocr_permits = Arc::new(OcrPermits::new(at_once));
        }
        config.document_timeout = Duration::from_secs(self.timeout_secs.max(1));
        config.memory_limit_bytes = self.memory_limit_mb << 20;
        config.options.ocr = self.ocr;
        Ok(config)
    }
}

/// A `--document-prior` weight (`eval library`, `eval latency`, `eval answers`): a finite number ≥ 0
/// (`Library::set_document_prior`).
pub(super) fn parse_document_prior(text: &str) -> Result<f32, String> {
    match text.parse::<f32>() {
        Ok(w) if w.is_finite() && w >= 0.0 => Ok(w),
        _ => Err(format!("a weight must be a number ≥ 0, got {text}")),
    }
}
