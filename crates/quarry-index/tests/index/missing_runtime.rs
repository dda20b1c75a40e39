//! A missing ONNX Runtime library is a clear error naming the path, never a panic inside ort.
//! ONNX Runtime binds once per process, so the check runs in a fresh copy of this test binary.

use quarry_index::{Embedder, EmbedderConfig, IndexError};
use std::process::Command;

const CHILD: &str = "QUARRY_TEST_MISSING_RUNTIME_CHILD";

#[test]
fn a_missing_onnx_runtime_is_a_clear_error() {
    if std::env::var_os(CHILD).is_some() {
        check_missing_runtime();
        return;
    }
    let output = Command::new(std::env::current_exe().expect("test binary path"))
        .args([
            "--exact",
            "missing_runtime::a_missing_onnx_runtime_is_a_clear_error",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .output()
        .expect("the test binary runs again");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "child run failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn check_missing_runtime() {
    let mut config = EmbedderConfig::default_model().expect("model files from scripts/setup.sh");
    config.onnx_runtime = "/nonexistent/libonnxruntime.so".into();
    match Embedder::new(&config) {
        Err(IndexError::ModelFiles(message)) => {
            assert!(
                message.contains("/nonexistent/libonnxruntime.so") && message.contains("scripts/setup.sh"),
                "{message}"
            )
        }
        Err(other) => panic!("wrong error: {other}"),
        Ok(_) => panic!("loaded a library that does not exist"),
    }
}
