//! Quarry's embedded chat model: a GGUF file run in-process by llama.cpp (through `llama-cpp-2`), so
//! questions are answered with no server and no network. This is the one crate that compiles llama.cpp.
//!
//! - The chat template comes from the GGUF file (ChatML when the file has none).
//! - Structured steps are constrained: the request's JSON schema becomes a GBNF grammar (llama.cpp's
//!   `json_schema_to_grammar`) that the sampler must follow.
//! - The thread count is explicit (default: all cores), and llama.cpp's OpenMP threads should not spin on
//!   a busy machine: set `OMP_WAIT_POLICY=PASSIVE` (scripts/env.sh does) — see ../shared/MODELS.md.
//! - Prompts longer than the context are cut in the middle of their longest message (the passages), so
//!   the instructions at the start and the question at the end survive.
//! - Generation runs on one worker thread per loaded model, one call at a time; dropping the call's
//!   future stops it after the token in progress.
//! - The worker keeps up to [`PROMPT_CACHE_SLOTS`] llama.cpp contexts between calls, each with the
//!   tokens of the last call it ran, and runs a call in the one whose key/value cache shares the longest
//!   prefix with the new prompt (an agent's calls of one kind share their system prompt; a conversation
//!   shares its history): only the rest of the prompt is processed, which on 2 cores is ≈ 30 tokens a
//!   second for Qwen2.5-1.5B. With more than one context, steps of different kinds that alternate — the
//!   router and the answer, each question — keep their own prefixes. [`GgufConfig::reuse_prompt_prefix`]
//!   turns it off.
//! - Small models fall into loops (the same sentence again and again until the token limit) under greedy
//!   sampling; llama.cpp's DRY sampler is on by default against that for free text (see
//!   [`RepetitionControl`]); grammar-constrained steps are left to their grammar.

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use quarry_core::{ChatError, ChatMessage, ChatModel, ChatRequest, ChatResponse, Role, TokenSink, TokenUsage};
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Settings of the embedded model.
#[derive(Debug, Clone)]
pub struct GgufConfig {
    /// The `.gguf` file.
    pub path: PathBuf,
    /// CPU threads for generation and prompt processing (default: all cores).
    pub threads: usize,
    /// Context length in tokens (prompt + answer); default 4,096, never more than the model was trained on.
    pub context_tokens: u32,
    /// How repeating itself is discouraged; default [`RepetitionControl::default`] (DRY on).
    pub repetition: RepetitionControl,
    /// Keep the context between calls and skip the prompt prefix shared with the previous call (default
    /// true). Off, every call processes its whole prompt: for measuring what the reuse saves.
    pub reuse_prompt_prefix: bool,
}

/// The DRY ("Don't Repeat Yourself") sampler of llama.cpp, designed by p-e-w
/// (text-generation-webui #5677): a token that would extend a sequence the model has already generated
/// gets its logit lowered by `multiplier · base^(n − allowed_length)`, where `n` is the length of the
/// repeat it would extend. It looks only at generated tokens (the prompt is never fed to it), so copying
/// names and numbers from the passages is not penalised — a plain repetition penalty would also push the
/// model away from the words of its sources. Sequences restart at [`DRY_SEQUENCE_BREAKERS`] (newline,
/// `:`, `"`, `*` and the digits), so list markers repeat freely and numbers are never penalised.
/// Applied to free text only: requests with a JSON schema are bounded by their grammar, and there DRY
/// lowered DeepSearch's supporting-passage recall with SmolLM2 (HotpotQA, docs/evaluation/agents-qa.md,
/// "Measuring answers").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RepetitionControl {
    /// Penalty scale; 0 turns DRY off. Default 0.8 (the value DRY's author recommends).
    pub multiplier: f32,
    /// Growth of the penalty per extra repeated token. Default 1.75.
    pub base: f32,
    /// Repeats up to this many tokens are free. Default 2.
    pub allowed_length: i32,
    /// How many of the latest generated tokens are searched for repeats. Default 512.
    pub last_tokens: i32,
}

/// Where DRY's repeats restart: newline, `:`, `"` and `*` (so list items and Markdown repeat freely), and
/// the ten digits. Qwen and SmolLM2 write each digit as a token of its own; without the digits a year that
/// follows a repeated phrase ("… of fiscal year 2024 compared to the first quarter of fiscal year 2023")
/// extends a repeat, its digits lose logits growing with the phrase's length, and the model writes
/// "1923" (or "2023 Q9 MSFT.pdf" for "2023 Q3 MSFT.pdf"). A token that is itself a breaker is never
/// penalised, so with the digits a copied number is never changed by DRY, and no repeat runs through a
/// number (sentences that loop still repeat their words, which DRY still penalises).
pub const DRY_SEQUENCE_BREAKERS: [&str; 14] = ["\n", ":", "\"", "*", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];

impl Default for RepetitionControl {
    fn default() -> Self {
        RepetitionControl { multiplier: 0.8, base: 1.75, allowed_length: 2, last_tokens: 512 }
    }
}

impl RepetitionControl {
    /// No repetition control: plain greedy or temperature sampling.
    pub fn off() -> Self {
        RepetitionControl { multiplier: 0.0, ..RepetitionControl::default() }
    }
}

impl GgufConfig {
    /// The model file at `path`, with one thread per core, a 4,096-token context, the default
    /// repetition control and prompt-prefix reuse on. Nothing is loaded until the model is opened.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        GgufConfig {
            path: path.into(),
            threads: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2),
            context_tokens: 4096,
            repetition: RepetitionControl::default(),
            reuse_prompt_prefix: true,
        }
    }

    /// The embedded model used when none is named: `$QUARRY_LLM_MODEL_FILE` when set; else the set-up
    /// script's Qwen2.5-Coder-1.5B-Instruct ([`DEFAULT_MODEL_FILE`]) on a machine with at least
    /// [`DEFAULT_MODEL_MIN_RAM`] bytes of RAM; else SmolLM2-135M-Instruct ([`LOW_MEMORY_MODEL_FILE`]),
    /// with a warning saying why (Qwen not installed, or too little memory). Files are looked up under
    /// `$QUARRY_MODELS_DIR` and `assets/models/` (`quarry_core::models`). The choice is measured in
    /// docs/evaluation/decisions.md, 2026-11-26 (a): SmolLM2 stated 1 of 37 reference figures where Qwen 1.5B states most.
    ///
    /// Errors: neither model file is found (the message says where it looked).
    pub fn default_model() -> Result<Self, ChatError> {
        if let Some(path) = std::env::var_os("QUARRY_LLM_MODEL_FILE").filter(|v| !v.is_empty()) {
            return Ok(GgufConfig::new(path));
        }
        let choice = choose_default_model(
            quarry_core::models::find_model_file(DEFAULT_MODEL_FILE),
            quarry_core::models::find_model_file(LOW_MEMORY_MODEL_FILE),
            total_memory_bytes(),
        );
        if let Some(why) = &choice.note {
            tracing::warn!("{why}");
        }
        choice.path.map(GgufConfig::new).map_err(ChatError::ModelFile)
    }

    /// SmolLM2-135M-Instruct ([`LOW_MEMORY_MODEL_FILE`]): the small, fast model the tests use where the
    /// answer's wording does not matter. Errors: not found (the message says where it looked).
    pub fn low_memory_model() -> Result<Self, ChatError> {
        quarry_core::models::find_model_file(LOW_MEMORY_MODEL_FILE).map(GgufConfig::new).map_err(ChatError::ModelFile)
    }
}

/// GGUF files installed in the model folders (`quarry_core::models::model_search_dirs`), at most two
/// levels down (`qwen2.5-coder-1.5b-instruct/model.gguf`), each file once, in folder order then by path.
pub fn installed_models() -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for dir in quarry_core::models::model_search_dirs() {
        let mut here = Vec::new();
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                let Ok(inner) = std::fs::read_dir(&path) else { continue };
                here.extend(inner.flatten().map(|e| e.path()).filter(|p| is_gguf(p)));
            } else if is_gguf(&path) {
                here.push(path);
            }
        }
        here.sort();
        for path in here {
            if seen.insert(std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone())) {
                found.push(path);
            }
        }
    }
    found
}

fn is_gguf(path: &Path) -> bool {
    path.is_file() && path.extension().is_some_and(|e| e.eq_ignore_ascii_case("gguf"))
}

/// The default embedded model, relative to a model folder: Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.04 GiB),
/// joined by scripts/setup.sh from PyPI packages (../shared/MODELS.md).
pub const DEFAULT_MODEL_FILE: &str = "qwen2.5-coder-1.5b-instruct/model.gguf";

/// The low-memory embedded model, relative to a model folder: SmolLM2-135M-Instruct (≈ 0.1 GiB).
pub const LOW_MEMORY_MODEL_FILE: &str = "smollm2-135m-instruct/model.gguf";

/// Below this much RAM (bytes) the default is the low-memory model: Qwen 1.5B needs ≈ 1.5 GiB (weights,
/// a 4,096-token KV cache, compute buffers) beside the embedder and the library.
pub const DEFAULT_MODEL_MIN_RAM: u64 = 4 << 30;

/// Which default model file to load: `path`, and `note` when it is not the default model, saying why.
#[derive(Debug, Clone, PartialEq)]
pub struct DefaultModelChoice {
    /// The model file to load, or why none can be (no model file installed).
    pub path: Result<PathBuf, String>,
    /// Why the low-memory model was chosen instead of the default one; `None` for the default.
    pub note: Option<String>,
}

/// The rule of [`GgufConfig::default_model`], on its inputs: the lookups of the default and the
/// low-memory model file and the machine's RAM in bytes (`None`: unknown, taken as enough).
pub fn choose_default_model(
    default: Result<PathBuf, String>,
    low_memory: Result<PathBuf, String>,
    ram_bytes: Option<u64>,
) -> DefaultModelChoice {
    const FALLBACK: &str = "answering with SmolLM2-135M-Instruct, which is fast but rarely states figures right";
    match (default, ram_bytes) {
        (Ok(_), Some(ram)) if ram < DEFAULT_MODEL_MIN_RAM => DefaultModelChoice {
            note: Some(format!(
                "this machine has {:.1} GiB of RAM, less than the {} GiB Qwen2.5-Coder-1.5B-Instruct needs beside a library; {FALLBACK} \
                 (name a model with --model to override)",
                ram as f64 / (1u64 << 30) as f64,
                DEFAULT_MODEL_MIN_RAM >> 30
            )),
            path: low_memory,
        },
        (Ok(path), _) => DefaultModelChoice { path: Ok(path), note: None },
        (Err(missing), _) => match low_memory {
            Ok(path) => DefaultModelChoice {
                note: Some(format!("the default model is not installed ({missing}); {FALLBACK}")),
                path: Ok(path),
            },
            Err(also_missing) => DefaultModelChoice { path: Err(format!("{missing}; {also_missing}")), note: None },
        },
    }
}

/// Total RAM in bytes (Linux: `MemTotal` of /proc/meminfo); `None` where it cannot be read.
pub fn total_memory_bytes() -> Option<u64> {
    quarry_core::proc_kib("/proc/meminfo", "MemTotal:").map(|kib| kib * 1024)
}

/// A GGUF chat model loaded in this process.
pub struct GgufChat {
    model: Arc<LlamaModel>,
    template: Option<LlamaChatTemplate>,
    config: GgufConfig,
    context_tokens: u32,
    name: String,
    /// Calls to the worker thread, which runs one generation at a time (two would only share the same
    /// cores) and keeps the context; it ends when this is dropped.
    jobs: Mutex<std::sync::mpsc::Sender<Job>>,
}

/// One call for the worker: the generation, where its text goes, where its result goes.
type Job = (
    Generation,
    tokio::sync::mpsc::UnboundedSender<String>,
    tokio::sync::oneshot::Sender<Result<ChatResponse, ChatError>>,
);

/// A context and the tokens its key/value cache holds (the prompt, then the answer, of the last call it
/// ran).
struct PromptCache<'model> {
    context: llama_cpp_2::context::LlamaContext<'model>,
    tokens: Vec<LlamaToken>,
}

/// Most llama.cpp contexts the worker keeps between calls (each call runs in the one sharing the longest
/// prompt prefix). Two: the default agent alternates a router call and an answer call per question, and
/// with one context each call evicted the other's prefix — 7 of 1,599 prompt tokens a question were reused
/// on sec-10-q questions 36–47, 400 with two (22.8 s a question instead of 29.9 s). Each context holds its
/// own key/value cache and compute buffers: +157 MB peak for Qwen2.5-1.5B at 4,096 tokens
/// (docs/evaluation/decisions.md, 2026-11-29 (b)).
pub const PROMPT_CACHE_SLOTS: usize = 2;

/// A new prompt sharing fewer tokens than this with every kept context is run in a fresh context while
/// fewer than [`PROMPT_CACHE_SLOTS`] exist, else in the least recently used one; a chat template's first
/// tokens (`<|im_start|>system\n`) are shared by every prompt and say nothing about its kind.
const MIN_SHARED_PREFIX: usize = 16;

/// The worker's contexts, most recently used first.
struct PromptCaches<'model> {
    slots: Vec<PromptCache<'model>>,
}

impl<'model> PromptCaches<'model> {
    /// Moves to the front the context for `tokens` — the kept one sharing the longest prefix with them
    /// (at least [`MIN_SHARED_PREFIX`]), else a new one while there is room (`None` is returned: the caller
    /// makes it), else the least recently used — and returns it.
    fn take_for(&mut self, tokens: &[LlamaToken]) -> Option<PromptCache<'model>> {
        // (shared prefix, most recent first on ties, index) of the best kept context.
        let best = self
            .slots
            .iter()
            .enumerate()
            .map(|(i, cache)| (shared_prefix(&cache.tokens, tokens), std::cmp::Reverse(i), i))
            .max();
        match best {
            Some((shared, _, i)) if shared >= MIN_SHARED_PREFIX => Some(self.slots.remove(i)),
            _ if self.slots.len() < PROMPT_CACHE_SLOTS => None,
            _ => self.slots.pop(),
        }
    }

    /// Puts `cache` back as the most recently used context.
    fn put_back(&mut self, cache: PromptCache<'model>) {
        self.slots.insert(0, cache);
        self.slots.truncate(PROMPT_CACHE_SLOTS);
    }
}

/// How many tokens `a` and `b` share from their start.
fn shared_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The worker thread of one loaded model: runs jobs in order, keeping the contexts of the last ones for
/// the next. Exits when every sender is gone.
fn worker(model: Arc<LlamaModel>, jobs: std::sync::mpsc::Receiver<Job>) {
    let mut cache = PromptCaches { slots: Vec::new() };
    while let Ok((job, out, reply)) = jobs.recv() {
        let result = job.run(&model, &mut cache, &out);
        drop(out); // ends the caller's stream before it reads the result
        let _ = reply.send(result);
    }
}

fn backend() -> Result<&'static LlamaBackend, ChatError> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            let mut backend = LlamaBackend::init().map_err(|e| e.to_string())?;
            backend.void_logs();
            Ok(backend)
        })
        .as_ref()
        .map_err(|e| ChatError::Model(format!("llama.cpp backend: {e}")))
}

impl GgufChat {
    /// Loads the model file. Errors: the file is missing or not a GGUF model llama.cpp can load.
    pub fn load(config: GgufConfig) -> Result<Self, ChatError> {
        if !config.path.is_file() {
            return Err(ChatError::ModelFile(format!(
                "{}: no such model file (a .gguf file is needed)",
                config.path.display()
            )));
        }
        // llama.cpp's own message for a file of another kind is a bare "failed to load"; say what is wrong.
        let mut magic = [0u8; 4];
        let read = std::fs::File::open(&config.path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic));
        if read.is_err() || &magic != b"GGUF" {
            return Err(ChatError::ModelFile(format!(
                "{}: not a GGUF model file (it does not start with the GGUF signature); Quarry's embedded model needs a .gguf file",
                config.path.display()
            )));
        }
        if let Some(missing) = missing_cpu_extensions() {
            return Err(ChatError::Config(format!(
                "this build of Quarry's embedded model uses CPU instructions this processor lacks ({missing}); \
                 rebuild it on this machine (scripts/env.sh picks the CPU's own) or use an OpenAI-compatible server"
            )));
        }
        #[cfg(target_arch = "x86_64")]
        if compiled_cpu_extensions().is_empty() && std::arch::is_x86_feature_detected!("avx2") {
            tracing::warn!(
                "llama.cpp was built for plain x86-64 although this CPU has AVX2: prompts are processed several \
                 times slower; build with scripts/env.sh sourced (it exports GGML_AVX2 & co.)"
            );
        }
        let backend = backend()?;
        let model = LlamaModel::load_from_file(backend, &config.path, &LlamaModelParams::default())
            .map_err(|e| ChatError::ModelFile(format!("{}: cannot load the model: {e}", config.path.display())))?;
        let template = model.chat_template(None).ok();
        let trained = model.n_ctx_train().max(512);
        let context_tokens = config.context_tokens.clamp(512, trained);
        let name = config.path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let name = match config.path.parent().and_then(Path::file_name) {
            Some(dir) if name == "model" => dir.to_string_lossy().into_owned(),
            _ => name,
        };
        let model = Arc::new(model);
        let (sender, receiver) = std::sync::mpsc::channel::<Job>();
        let worker_model = Arc::clone(&model);
        std::thread::Builder::new()
            .name(format!("gguf {name}"))
            .spawn(move || worker(worker_model, receiver))
            .map_err(|e| ChatError::Model(format!("starting the model's thread: {e}")))?;
        Ok(GgufChat { model, template, config, context_tokens, name, jobs: Mutex::new(sender) })
    }

    /// Context length in use, in tokens.
    pub fn context_tokens(&self) -> u32 {
        self.context_tokens
    }
}

#[async_trait::async_trait]
impl ChatModel for GgufChat {
    fn describe(&self) -> String {
        format!("{} (embedded llama.cpp, {} threads)", self.name, self.config.threads)
    }

    async fn complete(&self, request: &ChatRequest, on_text: Option<TokenSink<'_>>) -> Result<ChatResponse, ChatError> {
        let job = Generation {
            model: Arc::clone(&self.model),
            template: self.template.clone(),
            request: request.clone(),
            threads: self.config.threads.max(1) as i32,
            context_tokens: self.context_tokens,
            repetition: self.config.repetition,
            reuse_prompt_prefix: self.config.reuse_prompt_prefix,
            stop: Arc::new(AtomicBool::new(false)),
            finish: Arc::new(AtomicBool::new(false)),
        };
        let finish = Arc::clone(&job.finish);
        // Stops the blocking generation when this future is dropped (cancellation).
        struct StopOnDrop(Arc<AtomicBool>);
        impl Drop for StopOnDrop {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let _guard = StopOnDrop(Arc::clone(&job.stop));
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<String>();
        let (reply, result) = tokio::sync::oneshot::channel();
        self.jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send((job, sender, reply))
            .map_err(|_| ChatError::Model("the model's thread has stopped".into()))?;
        // What the sink received; after it asked to stop, the pieces still coming are left out.
        let mut streamed = String::new();
        let mut finished = false;
        while let Some(piece) = receiver.recv().await {
            if let (Some(sink), false) = (on_text, finished) {
                streamed.push_str(&piece);
                if sink(&piece).is_break() {
                    finished = true;
                    finish.store(true, Ordering::Relaxed);
                }
            }
        }
        let mut response =
            result.await.map_err(|_| ChatError::Model("the model's thread stopped during generation".into()))??;
        if finished {
            response.text = streamed;
        }
        Ok(response)
    }
}

/// One completion, run on a blocking thread.
struct Generation {
    model: Arc<LlamaModel>,
    template: Option<LlamaChatTemplate>,
    request: ChatRequest,
    threads: i32,
    context_tokens: u32,
    repetition: RepetitionControl,
    reuse_prompt_prefix: bool,
    /// Set when the call's future is dropped: the generation ends with [`ChatError::Cancelled`].
    stop: Arc<AtomicBool>,
    /// Set when the token sink asked to stop: the generation ends with the text so far.
    finish: Arc<AtomicBool>,
}

impl Generation {
    fn prompt(&self, messages: &[ChatMessage]) -> Result<String, ChatError> {
        if let Some(template) = &self.template {
            let chat: Result<Vec<LlamaChatMessage>, _> = messages
                .iter()
                .map(|m| LlamaChatMessage::new(role_name(m.role).to_string(), m.content.replace('\0', "")))
                .collect();
            let chat = chat.map_err(|e| ChatError::Model(format!("chat message: {e}")))?;
            if let Ok(prompt) = self.model.apply_chat_template(template, &chat, true) {
                return Ok(prompt);
            }
        }
        // ChatML, the format of most small instruct models.
        let mut prompt = String::new();
        for m in messages {
            prompt.push_str(&format!("<|im_start|>{}\n{}<|im_end|>\n", role_name(m.role), m.content));
        }
        prompt.push_str("<|im_start|>assistant\n");
        Ok(prompt)
    }

    fn tokenize(&self, prompt: &str) -> Vec<LlamaToken> {
        self.model.vocab().tokenize(prompt.as_bytes(), true, true)
    }

    /// The prompt's tokens, cut to fit `budget` tokens: the longest message loses its middle first.
    fn fitted_tokens(&self, budget: usize) -> Result<Vec<LlamaToken>, ChatError> {
        let mut messages = self.request.messages.clone();
        // The whole prompt, for `QUARRY_LOG=quarry_gguf=trace`: what the model was given.
        tracing::trace!(step = %self.request.step, "prompt:\n{}", self.prompt(&messages)?);
        for _ in 0..6 {
            let tokens = self.tokenize(&self.prompt(&messages)?);
            if tokens.len() <= budget {
                return Ok(tokens);
            }
            let excess = tokens.len() - budget;
            let Some(longest) = messages.iter_mut().max_by_key(|m| m.content.len()) else { break };
            let chars: Vec<char> = longest.content.chars().collect();
            let cut = (excess * 4 + 64).min(chars.len().saturating_sub(64));
            if cut == 0 {
                break;
            }
            let head = chars.len() * 3 / 5 - cut.min(chars.len() * 3 / 5);
            let tail = head + cut;
            let mut content: String = chars[..head].iter().collect();
            content.push_str("\n[…]\n");
            content.extend(chars[tail.min(chars.len())..].iter());
            longest.content = content;
            tracing::debug!("prompt {} tokens over the context budget; cut {cut} characters", excess);
        }
        let tokens = self.tokenize(&self.prompt(&messages)?);
        Ok(tokens[tokens.len().saturating_sub(budget)..].to_vec())
    }

    fn sampler(&self) -> LlamaSampler {
        let mut chain = Vec::new();
        if let Some(schema) = &self.request.json_schema {
            match llama_cpp_2::json_schema_to_grammar(&schema.to_string())
                .map_err(|e| e.to_string())
                .and_then(|grammar| LlamaSampler::grammar(&self.model, &grammar, "root").map_err(|e| e.to_string()))
            {
                Ok(grammar) => chain.push(grammar),
                Err(e) => {
                    tracing::warn!("step {}: no grammar for its JSON schema ({e}); sampling freely", self.request.step)
                }
            }
        }
        // Prose only: a grammar already bounds a structured step, and DRY there would push a sub-query list
        // away from the question's own words (each query restarts after a quote, then repeats them).
        let dry = self.repetition;
        if dry.multiplier > 0.0 && self.request.json_schema.is_none() {
            chain.push(LlamaSampler::dry(
                &self.model,
                dry.multiplier,
                dry.base,
                dry.allowed_length,
                dry.last_tokens,
                DRY_SEQUENCE_BREAKERS,
            ));
        }
        if self.request.temperature > 0.0 {
            chain.push(LlamaSampler::temp(self.request.temperature));
            chain.push(LlamaSampler::dist(0x5eed));
        } else {
            chain.push(LlamaSampler::greedy());
        }
        LlamaSampler::chain_simple(chain)
    }

    /// Runs the generation on the worker's `model` in the kept context that shares the longest prefix
    /// with its prompt (or a new one), and keeps that context for the next calls.
    fn run<'m>(
        self,
        model: &'m LlamaModel,
        caches: &mut PromptCaches<'m>,
        out: &tokio::sync::mpsc::UnboundedSender<String>,
    ) -> Result<ChatResponse, ChatError> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(ChatError::Cancelled);
        }
        if !self.reuse_prompt_prefix {
            caches.slots.clear();
        }
        let max_new = (self.request.max_tokens as usize).clamp(1, self.context_tokens as usize / 2);
        let budget = self.context_tokens as usize - max_new - 4;
        let tokens = self.fitted_tokens(budget)?;
        if tokens.is_empty() {
            return Err(ChatError::Model("empty prompt".into()));
        }
        let mut cache = caches.take_for(&tokens);
        let result = self.generate(model, &tokens, max_new, &mut cache, out);
        // A failed or cancelled call may leave its context part-written: it is dropped, the next call in
        // that slot starts afresh.
        if let (Ok(_), Some(cache)) = (&result, cache) {
            caches.put_back(cache);
        }
        result
    }

    /// Processes `tokens` (reusing what `cache` shares with them; a new context when it is `None`) and
    /// generates at most `max_new` tokens.
    fn generate<'m>(
        &self,
        model: &'m LlamaModel,
        tokens: &[LlamaToken],
        max_new: usize,
        cache: &mut Option<PromptCache<'m>>,
        out: &tokio::sync::mpsc::UnboundedSender<String>,
    ) -> Result<ChatResponse, ChatError> {
        let backend = backend()?;
        let n_batch = 512u32;
        if cache.is_none() {
            let params = LlamaContextParams::default()
                .with_n_ctx(NonZeroU32::new(self.context_tokens))
                .with_n_batch(n_batch)
                .with_n_threads(self.threads)
                .with_n_threads_batch(self.threads);
            let context = model.new_context(backend, params).map_err(|e| ChatError::Model(format!("context: {e}")))?;
            *cache = Some(PromptCache { context, tokens: Vec::new() });
        }
        let PromptCache { context, tokens: cached } = cache.as_mut().expect("set above");
        // The shared prefix stays in the key/value cache; at least the prompt's last token is processed
        // again, for its logits.
        let mut reused = shared_prefix(cached, tokens).min(tokens.len() - 1);
        if reused == 0 || !context.clear_kv_cache_seq(Some(0), Some(reused as u32), None).unwrap_or(false) {
            context.clear_kv_cache();
            reused = 0;
        }
        cached.clear();
        if reused > 0 {
            tracing::debug!(
                "step {}: {reused} of {} prompt tokens reused from the previous call",
                self.request.step,
                tokens.len()
            );
        }
        // The rest of the prompt, in pieces of at most one batch; logits only for its last token.
        let mut batch = LlamaBatch::new(n_batch as usize, 1);
        for (start, piece) in
            tokens[reused..].chunks(n_batch as usize).enumerate().map(|(i, p)| (reused + i * n_batch as usize, p))
        {
            if self.stop.load(Ordering::Relaxed) {
                return Err(ChatError::Cancelled);
            }
            batch.clear();
            for (offset, token) in piece.iter().enumerate() {
                let position = start + offset;
                batch
                    .add(*token, position as i32, &[0], position + 1 == tokens.len())
                    .map_err(|e| ChatError::Model(format!("batch: {e}")))?;
            }
            context.decode(&mut batch).map_err(|e| ChatError::Model(format!("prompt decode: {e}")))?;
        }
        cached.extend_from_slice(tokens);
        let mut sampler = self.sampler();
        let vocab = self.model.vocab();
        let mut text = String::new();
        let mut pending: Vec<u8> = Vec::new();
        let mut position = tokens.len();
        let mut generated = 0u64;
        while (generated as usize) < max_new {
            if self.stop.load(Ordering::Relaxed) {
                return Err(ChatError::Cancelled);
            }
            if self.finish.load(Ordering::Relaxed) {
                break;
            }
            let token = sampler.sample(context, batch.n_tokens() - 1);
            if vocab.is_eog(token) {
                break;
            }
            generated += 1;
            pending.extend(vocab.token_to_piece(token, false, None));
            // Hand out only whole UTF-8 characters.
            let valid = match std::str::from_utf8(&pending) {
                Ok(s) => s.len(),
                Err(e) => e.valid_up_to(),
            };
            if valid > 0 {
                let piece = String::from_utf8_lossy(&pending[..valid]).into_owned();
                pending.drain(..valid);
                text.push_str(&piece);
                let _ = out.send(piece);
            }
            batch.clear();
            batch.add(token, position as i32, &[0], true).map_err(|e| ChatError::Model(format!("batch: {e}")))?;
            position += 1;
            context.decode(&mut batch).map_err(|e| ChatError::Model(format!("decode: {e}")))?;
            cached.push(token);
        }
        if !pending.is_empty() {
            let piece = String::from_utf8_lossy(&pending).into_owned();
            text.push_str(&piece);
            let _ = out.send(piece);
        }
        Ok(ChatResponse {
            text,
            usage: TokenUsage {
                prompt_tokens: tokens.len() as u64,
                completion_tokens: generated,
                cached_prompt_tokens: reused as u64,
            },
            recorded_ms: None,
        })
    }
}

/// The x86 vector extensions llama.cpp was compiled to use, e.g. `["AVX", "AVX2", "FMA", "F16C", "BMI2"]`
/// (scripts/env.sh exports `GGML_AVX2` & co. for the building CPU); empty for a plain x86-64 (SSE2)
/// build, whose prompt processing is several times slower.
pub fn compiled_cpu_extensions() -> Vec<&'static str> {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: these ggml functions take no arguments and only report compile-time flags.
        let compiled = unsafe {
            [
                ("AVX", llama_cpp_sys_2::ggml_cpu_has_avx() != 0),
                ("AVX2", llama_cpp_sys_2::ggml_cpu_has_avx2() != 0),
                ("FMA", llama_cpp_sys_2::ggml_cpu_has_fma() != 0),
                ("F16C", llama_cpp_sys_2::ggml_cpu_has_f16c() != 0),
                ("BMI2", llama_cpp_sys_2::ggml_cpu_has_bmi2() != 0),
            ]
        };
        compiled.iter().filter(|(_, built)| *built).map(|(name, _)| *name).collect()
    }
    #[cfg(not(target_arch = "x86_64"))]
    Vec::new()
}

/// Those of [`compiled_cpu_extensions`] the running CPU lacks, comma-separated; `None` when it has them
/// all. Running such a build would stop the process with an illegal instruction instead of an error.
pub fn missing_cpu_extensions() -> Option<String> {
    #[cfg(target_arch = "x86_64")]
    let has = |name: &str| match name {
        "AVX" => std::arch::is_x86_feature_detected!("avx"),
        "AVX2" => std::arch::is_x86_feature_detected!("avx2"),
        "FMA" => std::arch::is_x86_feature_detected!("fma"),
        "F16C" => std::arch::is_x86_feature_detected!("f16c"),
        "BMI2" => std::arch::is_x86_feature_detected!("bmi2"),
        _ => true,
    };
    #[cfg(not(target_arch = "x86_64"))]
    let has = |_: &str| true;
    let missing: Vec<&str> = compiled_cpu_extensions().into_iter().filter(|name| !has(name)).collect();
    (!missing.is_empty()).then(|| missing.join(", "))
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}
