//! The default embedding model (all-MiniLM-L6-v2) on real text: batching keeps the caller's order and
//! each text's vector, and vectors reflect meaning.

use quarry_index::{Embedder, EmbedderConfig};

#[test]
fn embeddings_keep_the_callers_order_and_reflect_meaning() {
    let _engines = crate::one_engine_at_a_time();
    let config = EmbedderConfig::default_model().unwrap();
    let mut embedder = Embedder::new(&config).unwrap();
    let texts = [
        "The aircraft landed safely after the engine failure.",
        "Revenue",
        "Apple's quarterly revenue grew because iPhone sales increased in every region.",
        "The plane touched down without injuries following a loss of engine power.",
    ];
    let vectors = embedder.embed(&texts).unwrap();
    let one_by_one: Vec<Vec<f32>> = texts.iter().map(|t| embedder.embed(&[*t]).unwrap().remove(0)).collect();
    for (a, b) in vectors.iter().zip(&one_by_one) {
        let cos: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>() / (norm(a) * norm(b));
        assert!(cos > 0.999, "batching or sorting changed a vector: cos {cos}");
    }
    let cos = |i: usize, j: usize| {
        vectors[i].iter().zip(&vectors[j]).map(|(x, y)| x * y).sum::<f32>() / (norm(&vectors[i]) * norm(&vectors[j]))
    };
    assert!(cos(0, 3) > cos(0, 2) + 0.2, "paraphrase {} vs unrelated {}", cos(0, 3), cos(0, 2));
}

#[test]
fn a_token_budget_splits_calls_without_changing_vectors() {
    let _engines = crate::one_engine_at_a_time();
    // A budget of 600 padded tokens per call: a 512-token text goes alone, short ones go together.
    let mut config = EmbedderConfig::default_model().unwrap();
    config.batch_tokens = 600;
    let mut embedder = Embedder::new(&config).unwrap();
    let long = "The board reviewed the quarterly results and the outlook for the next fiscal year. ".repeat(60);
    let mut texts: Vec<String> =
        (0..30).map(|i| format!("Passage {i} about engine failures and safe landings.")).collect();
    texts.insert(7, long.clone());
    texts.insert(19, long[..long.len() / 3].to_string());
    let vectors = embedder.embed(&texts).unwrap();
    assert_eq!(vectors.len(), texts.len());
    for (i, text) in texts.iter().enumerate() {
        let alone = embedder.embed(&[text.as_str()]).unwrap().remove(0);
        let cos: f32 =
            vectors[i].iter().zip(&alone).map(|(x, y)| x * y).sum::<f32>() / (norm(&vectors[i]) * norm(&alone));
        assert!(cos > 0.999, "text {i}: cos {cos}");
    }
}

#[test]
fn calls_run_side_by_side_give_the_vectors_of_one_session() {
    let _engines = crate::one_engine_at_a_time();
    // 40 texts at 64 padded tokens a call: a dozen calls, shared by two one-thread sessions.
    let mut side_by_side = EmbedderConfig::default_model().unwrap();
    side_by_side.threads = 2;
    side_by_side.batch_tokens = 64;
    let mut one_session = side_by_side.clone();
    one_session.threads = 1;
    let texts: Vec<String> = (0..40)
        .map(|i| {
            format!(
                "Note {i}: revenue for the quarter rose {i} percent on data center demand{}.",
                " again".repeat(i % 5)
            )
        })
        .collect();
    let mut embedder = Embedder::new(&side_by_side).unwrap();
    let parallel = embedder.embed(&texts).unwrap();
    // Released sessions are made again by the next call that needs them.
    embedder.release_side_sessions();
    let again = embedder.embed(&texts).unwrap();
    let serial = Embedder::new(&one_session).unwrap().embed(&texts).unwrap();
    // More cores than sessions: at most MAX_SIDE_SESSIONS sessions share them.
    let mut many_cores = side_by_side.clone();
    many_cores.threads = quarry_index::MAX_SIDE_SESSIONS + 2;
    let shared_out = Embedder::new(&many_cores).unwrap().embed(&texts).unwrap();
    assert_eq!(shared_out.len(), texts.len());
    for (i, (a, b)) in shared_out.iter().zip(&serial).enumerate() {
        let cos: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>() / (norm(a) * norm(b));
        assert!(cos > 0.99999, "text {i}: cos {cos} with the cores shared out over the side sessions");
    }
    assert_eq!(parallel.len(), texts.len());
    for (i, ((a, b), c)) in parallel.iter().zip(&serial).zip(&again).enumerate() {
        let cos: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>() / (norm(a) * norm(b));
        assert!(cos > 0.99999, "text {i}: cos {cos} between the side-by-side and the one-session vectors");
        assert_eq!(a, c, "text {i}: the sessions made again gave another vector");
    }
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}
