//! A missing ONNX Runtime library is a clear error naming the path, never a panic inside ort.
//! (Its own test binary: ONNX Runtime binds once per process.)

use quarry_index::{Embedder, EmbedderConfig, IndexError};

#[test]
fn a_missing_onnx_runtime_is_a_clear_error() {
    let mut config = EmbedderConfig::default_model().expect("model files from scripts/setup.sh");
    config.onnx_runtime = "/nonexistent/libonnxruntime.so".into();
    match Embedder::new(&config) {
        Err(IndexError::ModelFiles(message)) => {
            assert!(message.contains("/nonexistent/libonnxruntime.so") && message.contains("scripts/setup.sh"), "{message}")
        }
        Err(other) => panic!("wrong error: {other}"),
        Ok(_) => panic!("loaded a library that does not exist"),
    }
}
