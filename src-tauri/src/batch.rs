//! Throttled events to the webview: a long run reports thousands of steps (every file of an ingest, every
//! token of an answer), and one IPC message each would flood the webview. A [`Batcher`] collects JSON
//! events and sends them as one message — `{ "key": …, "events": [ … ] }` — at most every
//! [`FLUSH_EVERY`], merging consecutive streamed-text events into one.

use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tauri::{AppHandle, Emitter};

/// The longest an event waits before it is sent.
pub const FLUSH_EVERY: Duration = Duration::from_millis(150);

/// Collects the events of one run (`key`: a library name or conversation id) for the webview event
/// `name`; a background task flushes them every [`FLUSH_EVERY`] until [`Batcher::finish`].
pub struct Batcher {
    app: AppHandle,
    name: &'static str,
    key: String,
    pending: Mutex<Vec<Value>>,
}

impl Batcher {
    /// Starts the flushing task on Tauri's async runtime.
    pub fn start(app: AppHandle, name: &'static str, key: &str) -> Arc<Batcher> {
        let batcher = Arc::new(Batcher { app, name, key: key.to_string(), pending: Mutex::new(Vec::new()) });
        let weak = Arc::downgrade(&batcher);
        tauri::async_runtime::spawn(async move {
            loop {
                tokio::time::sleep(FLUSH_EVERY).await;
                match weak.upgrade() {
                    Some(batcher) => batcher.flush(),
                    None => break,
                }
            }
        });
        batcher
    }

    /// Queues one event; `answer_delta` events (`{"event": "answer_delta", "text": …}`) following one
    /// another are merged.
    pub fn push(&self, event: Value) {
        let Ok(mut pending) = self.pending.lock() else { return };
        if event["event"] == "answer_delta" {
            if let Some(last) = pending.last_mut().filter(|l| l["event"] == "answer_delta") {
                let text = format!("{}{}", last["text"].as_str().unwrap_or(""), event["text"].as_str().unwrap_or(""));
                last["text"] = Value::String(text);
                return;
            }
        }
        pending.push(event);
    }

    /// Sends what is queued (nothing when the queue is empty).
    pub fn flush(&self) {
        let events = match self.pending.lock() {
            Ok(mut pending) if !pending.is_empty() => std::mem::take(&mut *pending),
            _ => return,
        };
        let _ = self.app.emit(self.name, serde_json::json!({ "key": self.key, "events": events }));
    }

    /// Sends the rest; the flushing task ends once the last handle is dropped.
    pub fn finish(&self) {
        self.flush();
    }
}
