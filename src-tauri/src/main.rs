//! The `quarry-app` executable: starts the desktop app, or, started as a parse worker, reads documents.

// No console window on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    // Documents are parsed in child processes of this same executable (crash and memory isolation).
    if std::env::args().nth(1).as_deref() == Some("parse-worker") {
        let limit = std::env::var("QUARRY_WORKER_MEMORY_LIMIT").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
        if let Err(error) = quarry_ingest::isolate::run_worker(limit) {
            eprintln!("quarry parser worker: {error}");
            std::process::exit(1);
        }
        return;
    }
    // Before any thread exists: ONNX Runtime would otherwise send telemetry.
    quarry_index::disable_onnx_runtime_telemetry();
    quarry_app_lib::run();
}
