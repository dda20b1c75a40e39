//! Integration tests of quarry-index with the real embedding model (one test binary per crate).
#![allow(clippy::unwrap_used)] // tests: a failed unwrap is the test failing

mod embeddings;
mod missing_runtime;
mod multilingual;

/// Held by every test that loads an embedding engine: the e5 C engine and ONNX Runtime loaded at once on
/// the test threads crashed the binary once (SIGSEGV, local CI of 35f7799), so they take turns.
pub static ENGINES: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Takes [`ENGINES`], also after another test panicked while holding it.
pub fn one_engine_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ENGINES.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
