//! Conversations: the questions a person asked, in order, with the answers (and their citations) the
//! agents gave, kept on disk so they survive a restart and can be reopened, renamed, exported or deleted.
//!
//! Layout: one JSON file per conversation, `<dir>/<id>.json`, written through a temporary file and a
//! rename, so a crash mid-write leaves the previous version intact. A file that cannot be read is reported
//! by name and never stops the others from listing.

use crate::Answer;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Errors of the [`ConversationStore`]; each names the file or id it is about.
#[derive(Debug, thiserror::Error)]
pub enum ConversationError {
    /// A conversation file or the folder could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A file is not a conversation as Quarry writes them.
    #[error("{path} is not a Quarry conversation: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// The JSON parser's explanation.
        message: String,
    },
    /// No conversation has this id.
    #[error("no conversation {0:?}")]
    NotFound(String),
    /// The id holds characters other than letters, digits and `-` (it would name another file).
    #[error("{0:?} is not a conversation id (letters, digits and '-' only)")]
    BadId(String),
}

impl quarry_core::Coded for ConversationError {
    fn code(&self) -> quarry_core::ErrorCode {
        match self {
            ConversationError::Io { source, .. } if quarry_core::is_disk_full_io(source) => {
                quarry_core::ErrorCode::DiskFull
            }
            _ => quarry_core::ErrorCode::Other,
        }
    }
}

/// One question and what came of it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Turn {
    /// The question as asked.
    pub question: String,
    /// What the person chose: `auto`, `naive`, `deep` or `chain`.
    pub agent: String,
    /// Libraries the person chose (empty: all).
    pub libraries: Vec<String>,
    /// The answer, when the run finished.
    pub answer: Option<Answer>,
    /// Why there is no answer (cancelled, model failed to load, …).
    pub error: Option<String>,
    /// The run's events except streamed answer text ([`crate::AgentEvent`] as JSON), for the trace view.
    #[serde(default)]
    pub trace: Vec<serde_json::Value>,
    /// When it was asked, milliseconds since the Unix epoch.
    pub asked_ms: i64,
}

/// A conversation: a title and its turns, oldest first.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Conversation {
    /// Its id: the file name without `.json`.
    pub id: String,
    /// Its title (the first question, until renamed).
    pub title: String,
    /// When it was started, milliseconds since the Unix epoch.
    pub created_ms: i64,
    /// When a turn was last added or it was renamed, likewise.
    pub updated_ms: i64,
    /// Its questions and answers, oldest first.
    pub turns: Vec<Turn>,
}

/// What a conversation list shows.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ConversationSummary {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// When it last changed, milliseconds since the Unix epoch.
    pub updated_ms: i64,
    /// How many questions it holds.
    pub turns: usize,
}

/// The folder of conversations.
#[derive(Debug, Clone)]
pub struct ConversationStore {
    dir: PathBuf,
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

impl Conversation {
    /// A new, empty conversation titled after its first question (cut to 80 characters).
    pub fn new(first_question: &str) -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let now = now_ms();
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let title: String = first_question.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(80).collect();
        Conversation {
            id: format!("c{now}-{}-{n}", std::process::id()),
            title: if title.is_empty() { "New conversation".into() } else { title },
            created_ms: now,
            updated_ms: now,
            turns: Vec::new(),
        }
    }
}

fn check_id(id: &str) -> Result<(), ConversationError> {
    if id.is_empty() || id.len() > 100 || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(ConversationError::BadId(id.to_string()));
    }
    Ok(())
}

impl ConversationStore {
    /// Conversations kept in `dir` (created on first save).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        ConversationStore { dir: dir.into() }
    }

    /// The folder the conversations are kept in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, id: &str) -> Result<PathBuf, ConversationError> {
        check_id(id)?;
        Ok(self.dir.join(format!("{id}.json")))
    }

    /// Every conversation, most recently updated first, and one message for each file that could not be
    /// read (naming the file and the reason). A missing folder is an empty list.
    ///
    /// Errors: the folder exists but cannot be listed.
    pub fn list(&self) -> Result<(Vec<ConversationSummary>, Vec<String>), ConversationError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), Vec::new())),
            Err(source) => return Err(ConversationError::Io { path: self.dir.clone(), source }),
        };
        let (mut list, mut problems) = (Vec::new(), Vec::new());
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            match read(&path) {
                Ok(c) => list.push(ConversationSummary {
                    id: c.id,
                    title: c.title,
                    updated_ms: c.updated_ms,
                    turns: c.turns.len(),
                }),
                Err(e) => problems.push(e.to_string()),
            }
        }
        list.sort_by(|a, b| b.updated_ms.cmp(&a.updated_ms).then_with(|| a.id.cmp(&b.id)));
        Ok((list, problems))
    }

    /// Errors: no such conversation; unreadable or malformed file.
    pub fn load(&self, id: &str) -> Result<Conversation, ConversationError> {
        let path = self.path(id)?;
        if !path.exists() {
            return Err(ConversationError::NotFound(id.to_string()));
        }
        read(&path)
    }

    /// Writes `conversation` (replacing its earlier version atomically) after setting `updated_ms`.
    ///
    /// Errors: a bad id; the folder or file cannot be written.
    pub fn save(&self, conversation: &mut Conversation) -> Result<(), ConversationError> {
        let path = self.path(&conversation.id)?;
        conversation.updated_ms = now_ms().max(conversation.updated_ms);
        std::fs::create_dir_all(&self.dir)
            .map_err(|source| ConversationError::Io { path: self.dir.clone(), source })?;
        let text = serde_json::to_vec_pretty(conversation)
            .map_err(|e| ConversationError::Format { path: path.clone(), message: e.to_string() })?;
        let partial = self.dir.join(format!(".{}.json.part", conversation.id));
        let io = |source| ConversationError::Io { path: path.clone(), source };
        {
            use std::io::Write;
            let mut file = std::fs::File::create(&partial).map_err(io)?;
            file.write_all(&text).map_err(io)?;
            file.sync_all().map_err(io)?;
        }
        std::fs::rename(&partial, &path).map_err(io)
    }

    /// Errors: as [`load`](Self::load) and [`save`](Self::save).
    pub fn rename(&self, id: &str, title: &str) -> Result<Conversation, ConversationError> {
        let mut conversation = self.load(id)?;
        let title = title.trim();
        if !title.is_empty() {
            conversation.title = title.chars().take(200).collect();
        }
        self.save(&mut conversation)?;
        Ok(conversation)
    }

    /// Errors: no such conversation; the file cannot be removed.
    pub fn delete(&self, id: &str) -> Result<(), ConversationError> {
        let path = self.path(id)?;
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(ConversationError::NotFound(id.to_string())),
            Err(source) => Err(ConversationError::Io { path, source }),
        }
    }
}

fn read(path: &Path) -> Result<Conversation, ConversationError> {
    let bytes = std::fs::read(path).map_err(|source| ConversationError::Io { path: path.to_path_buf(), source })?;
    let mut conversation: Conversation = serde_json::from_slice(&bytes)
        .map_err(|e| ConversationError::Format { path: path.to_path_buf(), message: e.to_string() })?;
    // Answers stored before `Answer::markers` existed get theirs, so the app links their citations.
    for turn in &mut conversation.turns {
        turn.answer = turn.answer.take().map(crate::Answer::with_markers);
    }
    Ok(conversation)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversations_survive_a_reopen_and_a_bad_file_is_named_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let store = ConversationStore::new(dir.path().join("conversations"));
        assert!(store.list().unwrap().0.is_empty());
        let mut first = Conversation::new("  What caused   the accident?  ");
        assert_eq!(first.title, "What caused the accident?");
        first.turns.push(Turn {
            question: "What caused the accident?".into(),
            agent: "auto".into(),
            libraries: vec![],
            answer: None,
            error: Some("cancelled".into()),
            trace: vec![serde_json::json!({"event": "started"})],
            asked_ms: now_ms(),
        });
        store.save(&mut first).unwrap();
        let mut second = Conversation::new("Second");
        second.updated_ms = first.updated_ms + 10;
        store.save(&mut second).unwrap();
        std::fs::write(store.dir().join("broken.json"), b"{not json").unwrap();

        let reopened = ConversationStore::new(dir.path().join("conversations"));
        let (list, problems) = reopened.list().unwrap();
        assert_eq!(list.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), vec![second.id.as_str(), first.id.as_str()]);
        assert_eq!(problems.len(), 1);
        assert!(problems[0].contains("broken.json"), "{problems:?}");
        let loaded = reopened.load(&first.id).unwrap();
        assert_eq!(loaded.turns[0].error.as_deref(), Some("cancelled"));

        assert_eq!(reopened.rename(&first.id, "Accident causes").unwrap().title, "Accident causes");
        reopened.delete(&second.id).unwrap();
        assert!(matches!(reopened.load(&second.id), Err(ConversationError::NotFound(_))));
        assert!(matches!(reopened.load("../etc/passwd"), Err(ConversationError::BadId(_))));
        assert_eq!(reopened.list().unwrap().0.len(), 1);
        assert!(!store.dir().join(format!(".{}.json.part", first.id)).exists());
    }
}
