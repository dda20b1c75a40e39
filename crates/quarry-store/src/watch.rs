//! Keeping a library in step with its folders while it is open: file-system notifications (the `notify`
//! crate: inotify on Linux, FSEvents on macOS, ReadDirectoryChangesW on Windows) trigger a
//! [`Library::sync`] once changes have been quiet for a moment, so a folder being copied in is read once,
//! not file by file.

use crate::ingest::{IngestEvent, IngestOptions};
use crate::library::Library;
use crate::StoreError;
use notify::{RecursiveMode, Watcher};
use quarry_index::Embedder;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the watcher reports besides ingest events.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum WatchEvent {
    /// Watching these paths now.
    Watching {
        /// The library's sources.
        paths: Vec<String>,
    },
    /// Changes seen; a sync starts.
    Changed {
        /// How many paths changed.
        paths: usize,
    },
    /// An event of the sync that follows.
    Ingest(IngestEvent),
}

impl Library {
    /// Syncs once, then watches every source and syncs again after each burst of changes (`quiet`
    /// without further changes, e.g. 2 s), until `stop` completes (Ctrl-C in the CLI, closing in the app).
    ///
    /// Errors: the library is read-only; a source cannot be watched; a sync fails.
    pub async fn watch(
        &mut self,
        embedder: &Arc<Mutex<Embedder>>,
        options: &IngestOptions,
        quiet: Duration,
        on_event: &mut (dyn FnMut(WatchEvent) + Send),
        stop: impl Future<Output = ()>,
    ) -> Result<(), StoreError> {
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<usize>();
        let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            if let Ok(event) = event {
                if !matches!(event.kind, notify::EventKind::Access(_)) {
                    let _ = sender.send(event.paths.len());
                }
            }
        })
        .map_err(|e| StoreError::Library(format!("cannot watch files: {e}")))?;
        let mut watched = Vec::new();
        for source in self.manifest.sources.clone() {
            // A single file is watched through its folder, so that replacing it (save = write new + rename)
            // is seen too.
            let (target, mode) = if source.is_dir() {
                (source.clone(), RecursiveMode::Recursive)
            } else {
                (source.parent().map(|p| p.to_path_buf()).unwrap_or(source.clone()), RecursiveMode::NonRecursive)
            };
            watcher
                .watch(&target, mode)
                .map_err(|e| StoreError::Library(format!("cannot watch {}: {e}", target.display())))?;
            watched.push(target.display().to_string());
        }
        on_event(WatchEvent::Watching { paths: watched });
        self.sync(embedder, options, &mut |e| on_event(WatchEvent::Ingest(e))).await?;
        tokio::pin!(stop);
        loop {
            let first = tokio::select! {
                _ = &mut stop => return Ok(()),
                n = receiver.recv() => match n { Some(n) => n, None => return Ok(()) },
            };
            let mut changed = first;
            // Wait until the changes stop for `quiet`.
            loop {
                tokio::select! {
                    _ = &mut stop => return Ok(()),
                    n = tokio::time::timeout(quiet, receiver.recv()) => match n {
                        Ok(Some(n)) => changed += n,
                        Ok(None) | Err(_) => break,
                    },
                }
            }
            on_event(WatchEvent::Changed { paths: changed });
            // Changes made during the sync stay queued and lead to one more (cheap) sync.
            self.sync(embedder, options, &mut |e| on_event(WatchEvent::Ingest(e))).await?;
        }
    }
}
