//! The embedder run (`quarry eval embedder`) with the real all-MiniLM-L6-v2 files from scripts/setup.sh.

use crate::retrieval::benchmarks;
use quarry_eval::embedder_run::{compare_embedders, PythonReference};
use quarry_eval::retrieval::load_set;
use quarry_eval::EvalError;
use quarry_index::EmbedderConfig;
use std::path::Path;

/// Quarry's pass over 24 HotpotQA passages: one run, its word pieces counted, no reference asked.
/// A reference that cannot start is an error naming the interpreter; one asked for e5 is refused before
/// anything is embedded.
#[test]
fn quarry_embeds_the_texts_and_a_reference_that_cannot_run_is_named() {
    let set = load_set(&benchmarks().join("hotpotqa_rpt_dev300"), Some(1)).unwrap();
    let texts: Vec<String> = set.passages.iter().take(24).map(|(_, text)| text.clone()).collect();
    let config = EmbedderConfig::default_model().expect("MiniLM files from scripts/setup.sh");
    let alone = compare_embedders(&texts, &config, None).unwrap();
    assert_eq!(alone.runs.len(), 1);
    assert!(alone.runs[0].engine.starts_with("Quarry (") && alone.runs[0].engine.contains(&config.model_id));
    assert!(alone.runs[0].tokens > texts.len() * 10 && alone.runs[0].seconds > 0.0, "{alone:?}");
    assert_eq!((alone.agreement, alone.ratio()), (None, None));

    let missing = Path::new("/nonexistent/python3");
    let reference = PythonReference { python: missing, script: Path::new("scripts/embed-reference.py") };
    match compare_embedders(&texts, &config, Some(reference)) {
        Err(EvalError::Reference(message)) => assert!(message.contains("/nonexistent/python3"), "{message}"),
        other => panic!("expected a reference error, got {other:?}"),
    }
    if let Ok(e5) = EmbedderConfig::multilingual_e5() {
        match compare_embedders(&texts, &e5, Some(reference)) {
            Err(EvalError::Reference(message)) => assert!(message.contains("ONNX models only"), "{message}"),
            other => panic!("expected e5 to be refused, got {other:?}"),
        }
    }
}
