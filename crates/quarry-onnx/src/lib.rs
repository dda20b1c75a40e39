//! ONNX Runtime for every model Quarry runs through it (the MiniLM embedder in `quarry-index`, the OCR
//! models in `quarry-ingest`): loaded from a file path (`libonnxruntime.so` from the PyPI package
//! `onnxruntime`, unpacked by `scripts/setup.sh`), once per process, with its telemetry off.
//!
//! ort binds the library process-wide; the first path asked for wins, and later calls get the same
//! [`Environment`] (or the same error).

use std::path::Path;
use std::sync::OnceLock;

pub use ort;
pub use ort::environment::Environment;

/// Where the library sits under the model folders (see `quarry_core::models::find_model_file`).
pub const LIBRARY_FILE: &str = "onnxruntime/libonnxruntime.so";

/// Turns ONNX Runtime's own telemetry off for this process: sets `ORT_DISABLE_TELEMETRY=1`.
///
/// ONNX Runtime 1.31 on Linux (the PyPI build scripts/setup.sh unpacks) sends usage events to
/// `mobile.events.data.microsoft.com` from a thread of its own, and queues them in
/// `~/.cache/Microsoft/DeveloperTools/.onnxruntime/onnxruntime.db` — seen with `strace` during
/// `quarry ask`. `DisableTelemetryEvents` (ort's `with_telemetry(false)`) does not stop it; this variable,
/// read when the library starts, does. Call it first thing in `main`, before other threads exist (setting
/// the environment is not thread-safe for C code reading it); [`runtime`] calls it again before it loads
/// ONNX Runtime, for programs that did not.
pub fn disable_telemetry() {
    if std::env::var_os("ORT_DISABLE_TELEMETRY").is_none_or(|v| v != "1") {
        std::env::set_var("ORT_DISABLE_TELEMETRY", "1");
    }
}

static RUNTIME: OnceLock<Result<Environment, String>> = OnceLock::new();

/// Loads ONNX Runtime from `library` (checking the file first: ort panics on a missing library) and
/// returns its environment, telemetry off. Errors: a missing file or one ONNX Runtime cannot start from,
/// as a message naming the path.
pub fn runtime(library: &Path) -> Result<Environment, String> {
    RUNTIME
        .get_or_init(|| {
            disable_telemetry();
            if !library.is_file() {
                return Err(format!("ONNX Runtime library not found at {} (run scripts/setup.sh)", library.display()));
            }
            ort::init_from(library)
                .map_err(|e| format!("cannot load ONNX Runtime from {}: {e}", library.display()))?
                .with_name("quarry")
                .with_telemetry(false)
                .build()
                .map_err(|e| format!("cannot start ONNX Runtime from {}: {e}", library.display()))
        })
        .clone()
}
