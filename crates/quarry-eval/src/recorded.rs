//! A chat model whose answers are recorded to a file and answered from it when the same request comes
//! again: an answers eval run once with the embedded model (≈ 80 min for the 98 sec-10-q questions on 2
//! cores) can then be scored again, in seconds, after a change that does not alter what the model is asked
//! — the quote under an answer, the claim check, citation repair, the scoring itself — and after a change
//! that does, only the calls whose prompt changed go to the model. The model is deterministic for a
//! request (greedy sampling, one model file), so a recorded response is the response.
//!
//! The file is JSON lines, one call each: `{"key": …, "model": …, "step": …, "text": …, "usage": {…}}`;
//! `key` is the BLAKE3 hash (hex) of the model's description and the request (messages, token limit,
//! temperature, JSON schema; not the `step` label). A call is appended as soon as it returns, so a run
//! stopped part way keeps every finished call.
//!
//! Each line also keeps how long the call took (`ms`), and a replayed response carries it
//! ([`ChatResponse::recorded_ms`]): a run counts a replayed call as that long, so a search under a time
//! budget (`AgentConfig::search_seconds`) stops in a replay where it stopped when recorded (give or take
//! the search time around the calls), and a replay's seconds are the recorded run's. A recording made
//! before `ms` was kept replays in no time: a search its budget stopped would search on and ask for calls
//! the file lacks, which a replay only (`inner` None) reports as a failed question; such a run replays
//! with a budget that stops the searches where they stopped (e.g. `--search-seconds 0.001` when each
//! stopped after its first relevance call, as the reports of docs/evaluation/results.md did).

use async_trait::async_trait;
use quarry_core::chat::{ChatError, ChatModel, ChatRequest, ChatResponse, TokenSink, TokenUsage};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// One recorded call, as a line of the file.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Recorded {
    key: String,
    model: String,
    step: String,
    text: String,
    usage: TokenUsage,
    /// How long the call took when recorded, in milliseconds (absent in recordings made before it was
    /// kept: their replays take no time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ms: Option<u64>,
}

/// A [`ChatModel`] answering from a file of recorded calls, and recording the calls it passes on to the
/// model behind it. Without a model behind it (`inner` None, replay only), a request not in the file
/// fails with [`ChatError::Model`] naming its step.
pub struct RecordedModel {
    inner: Option<Arc<dyn ChatModel>>,
    model: String,
    path: PathBuf,
    calls: Mutex<HashMap<String, Recorded>>,
    counts: Mutex<(usize, usize)>,
}

/// Why a recording could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    /// The file could not be read or created.
    #[error("{path}: {source}")]
    Io {
        /// The recording's path.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// A line is not a recorded call.
    #[error("{path}, line {line}: not a recorded call: {message}")]
    Line {
        /// The recording's path.
        path: PathBuf,
        /// The line number, from 1.
        line: usize,
        /// The JSON error.
        message: String,
    },
    /// Replay only, and the file holds no call of a model.
    #[error("{0}: no recorded call to replay")]
    Empty(PathBuf),
}

impl RecordedModel {
    /// Opens (or starts) the recording at `path` in front of `inner`. With `inner` None, every call must
    /// be in the file; the model described is the one that recorded it. Errors: an unreadable file or a
    /// line that is not a recorded call ([`RecordingError`]); replay only from an empty file.
    pub fn open(path: &Path, inner: Option<Arc<dyn ChatModel>>) -> Result<RecordedModel, RecordingError> {
        let io = |source| RecordingError::Io { path: path.to_path_buf(), source };
        let mut calls = HashMap::new();
        let mut described = None;
        if path.exists() {
            let file = std::fs::File::open(path).map_err(io)?;
            for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
                let line = line.map_err(io)?;
                if line.trim().is_empty() {
                    continue;
                }
                let call: Recorded = serde_json::from_str(&line).map_err(|e| RecordingError::Line {
                    path: path.to_path_buf(),
                    line: i + 1,
                    message: e.to_string(),
                })?;
                described.get_or_insert_with(|| call.model.clone());
                calls.insert(call.key.clone(), call);
            }
        }
        let model = match (&inner, described) {
            (Some(inner), _) => inner.describe(),
            (None, Some(model)) => model,
            (None, None) => return Err(RecordingError::Empty(path.to_path_buf())),
        };
        Ok(RecordedModel {
            inner,
            model,
            path: path.to_path_buf(),
            calls: Mutex::new(calls),
            counts: Mutex::new((0, 0)),
        })
    }

    /// Calls answered from the recording and calls passed on to the model, so far.
    pub fn replayed_and_called(&self) -> (usize, usize) {
        *self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The key of `request` asked of `model`: BLAKE3 (hex) of both, the step label left out.
    fn key(model: &str, request: &ChatRequest) -> String {
        let asked = serde_json::json!({
            "model": model,
            "messages": request.messages,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "json_schema": request.json_schema,
        });
        blake3::hash(asked.to_string().as_bytes()).to_hex().to_string()
    }

    fn append(&self, call: &Recorded) -> Result<(), ChatError> {
        let failed = |e: std::io::Error| ChatError::Model(format!("recording {}: {e}", self.path.display()));
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&self.path).map_err(failed)?;
        let line = serde_json::to_string(call).map_err(|e| ChatError::Model(e.to_string()))?;
        writeln!(file, "{line}").map_err(failed)
    }
}

#[async_trait]
impl ChatModel for RecordedModel {
    fn describe(&self) -> String {
        self.model.clone()
    }

    async fn complete(&self, request: &ChatRequest, on_text: Option<TokenSink<'_>>) -> Result<ChatResponse, ChatError> {
        let key = Self::key(&self.model, request);
        let recorded = self.calls.lock().unwrap_or_else(|e| e.into_inner()).get(&key).cloned();
        if let Some(call) = recorded {
            self.counts.lock().unwrap_or_else(|e| e.into_inner()).0 += 1;
            // Streamed line by line, so a sink that stops a loop stops the replay where it would have
            // stopped the model (generation is deterministic: the text before the stop is the same).
            let mut text = call.text.clone();
            if let Some(on_text) = on_text {
                let mut streamed = 0;
                for line in call.text.split_inclusive('\n') {
                    streamed += line.len();
                    if on_text(line).is_break() {
                        text.truncate(streamed);
                        break;
                    }
                }
            }
            return Ok(ChatResponse { text, usage: call.usage, recorded_ms: call.ms });
        }
        let Some(inner) = &self.inner else {
            return Err(ChatError::Model(format!(
                "a {} call not in the recording {} (replay only)",
                request.step,
                self.path.display()
            )));
        };
        let started = std::time::Instant::now();
        let response = inner.complete(request, on_text).await?;
        let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.counts.lock().unwrap_or_else(|e| e.into_inner()).1 += 1;
        let call = Recorded {
            key: key.clone(),
            model: self.model.clone(),
            step: request.step.clone(),
            text: response.text.clone(),
            usage: response.usage,
            ms: Some(ms),
        };
        self.append(&call)?;
        self.calls.lock().unwrap_or_else(|e| e.into_inner()).insert(key, call);
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers every request with its step and a counter, so a second answer shows a second call.
    struct Counting(Mutex<usize>);

    #[async_trait]
    impl ChatModel for Counting {
        fn describe(&self) -> String {
            "counting".into()
        }
        async fn complete(&self, request: &ChatRequest, _: Option<TokenSink<'_>>) -> Result<ChatResponse, ChatError> {
            let mut n = self.0.lock().unwrap();
            *n += 1;
            Ok(ChatResponse { text: format!("{} {n}", request.step), usage: TokenUsage::default(), recorded_ms: None })
        }
    }

    /// Answers every request with three lines; named as `Counting` is, since one recording holds one
    /// model's calls.
    struct Lines;

    #[async_trait]
    impl ChatModel for Lines {
        fn describe(&self) -> String {
            "counting".into()
        }
        async fn complete(&self, _: &ChatRequest, _: Option<TokenSink<'_>>) -> Result<ChatResponse, ChatError> {
            Ok(ChatResponse { text: "one\ntwo\nthree\n".into(), usage: TokenUsage::default(), recorded_ms: None })
        }
    }

    #[tokio::test]
    async fn a_recorded_call_is_answered_from_the_file_and_a_new_one_goes_to_the_model() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("calls.jsonl");
        let question = ChatRequest::new("answer", "system", "What was revenue?", 100);
        let other = ChatRequest::new("answer", "system", "What was net income?", 100);
        let recording = RecordedModel::open(&path, Some(Arc::new(Counting(Mutex::new(0))))).unwrap();
        let asked = recording.complete(&question, None).await.unwrap();
        assert_eq!((asked.text.as_str(), asked.recorded_ms), ("answer 1", None), "the model's own call");
        let again = recording.complete(&question, None).await.unwrap();
        assert_eq!(again.text, "answer 1", "answered from the file");
        assert!(again.recorded_ms.is_some(), "with the time the call took when recorded");
        assert_eq!(recording.replayed_and_called(), (1, 1));

        // Opened again without a model: the recorded call replays, streamed; another fails.
        let replay = RecordedModel::open(&path, None).unwrap();
        assert_eq!(replay.describe(), "counting");
        let streamed = Mutex::new(String::new());
        let sink = |text: &str| {
            streamed.lock().unwrap().push_str(text);
            std::ops::ControlFlow::Continue(())
        };
        let replayed = replay.complete(&question, Some(&sink)).await.unwrap();
        assert_eq!(replayed.text, "answer 1");
        assert_eq!(replayed.recorded_ms, again.recorded_ms);
        assert_eq!(*streamed.lock().unwrap(), "answer 1");
        // A sink that stops after the first line ends the replay there, as it would have ended the model.
        let lines = ChatRequest::new("answer", "system", "List the filings.", 100);
        let recording = RecordedModel::open(&path, Some(Arc::new(Lines))).unwrap();
        assert_eq!(recording.complete(&lines, None).await.unwrap().text, "one\ntwo\nthree\n");
        let first_line = |_: &str| std::ops::ControlFlow::Break(());
        let replay = RecordedModel::open(&path, None).unwrap();
        assert_eq!(replay.complete(&lines, Some(&first_line)).await.unwrap().text, "one\n");
        let missing = replay.complete(&other, None).await.unwrap_err().to_string();
        assert!(missing.contains("not in the recording"), "{missing}");

        // The same words with another token limit are another request.
        let longer = ChatRequest::new("answer", "system", "What was revenue?", 200);
        assert!(replay.complete(&longer, None).await.is_err());
    }

    #[test]
    fn a_line_that_is_not_a_call_and_an_empty_replay_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("calls.jsonl");
        let empty = RecordedModel::open(&path, None).err().unwrap().to_string();
        assert!(empty.contains("no recorded call"), "{empty}");
        // A line recorded before the call's time was kept replays with none.
        let old = r#"{"key":"k","model":"m","step":"s","text":"t","usage":{"prompt_tokens":1,"completion_tokens":1}}"#;
        std::fs::write(&path, format!("{old}\n")).unwrap();
        assert!(RecordedModel::open(&path, None).is_ok());
        std::fs::write(&path, "{\"key\": 1}\n").unwrap();
        let bad = RecordedModel::open(&path, None).err().unwrap().to_string();
        assert!(bad.contains("line 1") && bad.contains("calls.jsonl"), "{bad}");
    }
}
