//! Where libraries live and what `library.toml` records.
//!
//! ```text
//! <data dir>/libraries/<name>/
//!     library.toml      name, embedding model id + dimension, chunk size, the paths the person added
//!     lance/            LanceDB tables `documents` and `chunks` (source of truth)
//!     tantivy/          BM25 index, derived from `chunks`
//!     write.lock        held by the one process allowed to change the library
//! ```
//!
//! The data dir is `--data-dir`, else `$QUARRY_DATA_DIR`, else the platform data folder from the
//! `directories` crate (`~/.local/share/quarry` on Linux).

use crate::StoreError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The embedding model a library was built with; another model cannot search or extend it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbeddingInfo {
    /// The model's id (`all-minilm-l6-v2-int8`, `multilingual-e5-small-q4`, or a folder model's).
    pub model_id: String,
    /// Length of each vector.
    pub dimension: usize,
    /// No model was asked for when the library was made, so its first ingest picks one from the text it
    /// reads: multilingual-e5-small when the documents are mostly Chinese, Japanese or Korean (see
    /// [`crate::IngestOptions::choose_model`]). False once documents are in; absent in older manifests.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub automatic: bool,
    /// Chunks a second the last ingest embedded (its embedding phase alone), on this machine: what
    /// `quarry status` estimates the time left from while chunks wait for embeddings. Absent until an
    /// ingest has embedded something.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunks_per_second: Option<f64>,
}

/// How documents were cut into chunks (see `quarry_ingest::ChunkerConfig`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkingInfo {
    /// Largest chunk, in tokens of the embedding model's tokenizer.
    pub max_tokens: usize,
    /// Overlap carried between neighbouring chunks, in tokens (an upper bound).
    pub overlap_tokens: usize,
    /// Whether each chunk is embedded and keyword-indexed with its document's context line
    /// (`quarry_ingest::document_context`: issuer, document type, period, file name). On for libraries
    /// created since 2026-11-26 (and for older ones' newly added documents); `quarry library create
    /// --no-document-context` turns it off, to measure what it changes.
    #[serde(default = "document_context_on")]
    pub document_context: bool,
}

fn document_context_on() -> bool {
    true
}

impl ChunkingInfo {
    /// `max_tokens` / `overlap_tokens` with the document context on.
    pub fn new(max_tokens: usize, overlap_tokens: usize) -> Self {
        ChunkingInfo { max_tokens, overlap_tokens, document_context: true }
    }
}

/// Largest chunk of a new library, in tokens: 256, the length all-MiniLM-L6-v2 was trained on. Chosen
/// on the passages the answering model reads (`quarry eval answers --retrieval-only`;
/// docs/evaluation/decisions.md, 2026-11-26 (a)):
/// with the document context line, 256-token chunks put a passage holding the reference figure in front
/// of the model for 13 of 13 single-document questions of the sample library, 512-token chunks for 11.
pub const DEFAULT_CHUNK_TOKENS: usize = 256;
/// Overlap between neighbouring chunks of a new library, in tokens (15 % of [`DEFAULT_CHUNK_TOKENS`]).
pub const DEFAULT_OVERLAP_TOKENS: usize = 38;

impl Default for ChunkingInfo {
    /// [`DEFAULT_CHUNK_TOKENS`] with at most [`DEFAULT_OVERLAP_TOKENS`] of overlap, with the document
    /// context: what `quarry library create` and the app use without options.
    fn default() -> Self {
        ChunkingInfo::new(DEFAULT_CHUNK_TOKENS, DEFAULT_OVERLAP_TOKENS)
    }
}

/// The contents of `library.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LibraryManifest {
    /// The library's name.
    pub name: String,
    /// Unix milliseconds.
    pub created_ms: i64,
    /// Its embedding model.
    pub embedding: EmbeddingInfo,
    /// How its documents are cut into chunks.
    pub chunking: ChunkingInfo,
    /// Absolute paths of the files and folders added, in the order first added: what `sync` and `watch`
    /// keep the library in step with.
    #[serde(default)]
    pub sources: Vec<PathBuf>,
    /// Absolute paths taken out with `quarry remove` that lie inside a source folder: `sync` and `watch`
    /// leave them (and everything under them) out until they are added again explicitly.
    #[serde(default)]
    pub excluded: Vec<PathBuf>,
}

pub(crate) const MANIFEST_FILE: &str = "library.toml";

impl LibraryManifest {
    /// Whether `path` is one of [`LibraryManifest::excluded`] or lies under one.
    pub fn is_excluded(&self, path: &Path) -> bool {
        self.excluded.iter().any(|e| path.starts_with(e))
    }

    /// Reads `dir/library.toml`. Errors: missing or malformed file, naming it.
    pub fn load(dir: &Path) -> Result<Self, StoreError> {
        let path = dir.join(MANIFEST_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| StoreError::io(&path, e))?;
        toml::from_str(&text).map_err(|e| StoreError::Library(format!("{}: {e}", path.display())))
    }

    /// Writes `dir/library.toml` atomically (a temporary file renamed over the old one), so a crash
    /// leaves either the old or the new manifest.
    pub fn save(&self, dir: &Path) -> Result<(), StoreError> {
        let path = dir.join(MANIFEST_FILE);
        let tmp = dir.join(".library.toml.tmp");
        let text = toml::to_string_pretty(self).map_err(|e| StoreError::Library(format!("{}: {e}", path.display())))?;
        std::fs::write(&tmp, text).map_err(|e| StoreError::io(&tmp, e))?;
        std::fs::File::open(&tmp).and_then(|f| f.sync_all()).map_err(|e| StoreError::io(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| StoreError::io(&path, e))
    }
}

/// The folder that holds all libraries.
#[derive(Debug, Clone)]
pub struct DataDir {
    root: PathBuf,
}

impl DataDir {
    /// `explicit` (from `--data-dir`), else `$QUARRY_DATA_DIR`, else the platform data folder.
    ///
    /// Errors: no home folder can be found for the platform default.
    pub fn resolve(explicit: Option<PathBuf>) -> Result<Self, StoreError> {
        if let Some(root) =
            explicit.or_else(|| std::env::var_os("QUARRY_DATA_DIR").filter(|v| !v.is_empty()).map(PathBuf::from))
        {
            return Ok(DataDir { root });
        }
        let dirs = directories::ProjectDirs::from("", "", "quarry").ok_or_else(|| {
            StoreError::Library("no home folder found; pass --data-dir or set QUARRY_DATA_DIR".into())
        })?;
        Ok(DataDir { root: dirs.data_dir().to_path_buf() })
    }

    /// A data dir at `root` (tests, the app's own settings).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        DataDir { root: root.into() }
    }

    /// The data folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn libraries(&self) -> PathBuf {
        self.root.join("libraries")
    }

    /// The folder of library `name`. Errors: a name that is not allowed (see [`check_name`]).
    pub fn library_dir(&self, name: &str) -> Result<PathBuf, StoreError> {
        check_name(name)?;
        Ok(self.libraries().join(name))
    }

    /// The folder of an existing library. Errors: bad name; no such library (the message lists the
    /// libraries there are).
    pub fn existing(&self, name: &str) -> Result<PathBuf, StoreError> {
        let dir = self.library_dir(name)?;
        if dir.join(MANIFEST_FILE).is_file() {
            return Ok(dir);
        }
        let names: Vec<String> = self.list()?.into_iter().map(|m| m.name).collect();
        let known = if names.is_empty() {
            "there are none yet".to_string()
        } else {
            format!("there are: {}", names.join(", "))
        };
        Err(StoreError::NotFound(format!(
            "no library named {name:?} in {} ({known}); create it with `quarry library create {name}`",
            self.root.display()
        )))
    }

    /// Creates library `name`. Errors: bad name; it exists already; the folder cannot be written.
    pub fn create(
        &self,
        name: &str,
        embedding: EmbeddingInfo,
        chunking: ChunkingInfo,
    ) -> Result<LibraryManifest, StoreError> {
        let dir = self.library_dir(name)?;
        if dir.join(MANIFEST_FILE).exists() {
            return Err(StoreError::Library(format!("library {name:?} exists already in {}", self.root.display())));
        }
        std::fs::create_dir_all(&dir).map_err(|e| StoreError::io(&dir, e))?;
        let manifest = LibraryManifest {
            name: name.to_string(),
            created_ms: now_ms(),
            embedding,
            chunking,
            sources: Vec::new(),
            excluded: Vec::new(),
        };
        manifest.save(&dir)?;
        Ok(manifest)
    }

    /// Every library, sorted by name. Folders without a readable `library.toml` are skipped.
    pub fn list(&self) -> Result<Vec<LibraryManifest>, StoreError> {
        let dir = self.libraries();
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StoreError::io(&dir, e)),
        };
        let mut out: Vec<LibraryManifest> =
            entries.filter_map(Result::ok).filter_map(|e| LibraryManifest::load(&e.path()).ok()).collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Renames library `from` to `to` (its folder and manifest). Errors: either name is bad, `from` is
    /// missing, `to` exists, or another process is writing to `from`.
    pub fn rename(&self, from: &str, to: &str) -> Result<(), StoreError> {
        let old = self.existing(from)?;
        let new = self.library_dir(to)?;
        if new.exists() {
            return Err(StoreError::Library(format!("library {to:?} exists already")));
        }
        let _lock = WriteLock::acquire(&old, from)?;
        std::fs::rename(&old, &new).map_err(|e| StoreError::io(&old, e))?;
        let mut manifest = LibraryManifest::load(&new)?;
        manifest.name = to.to_string();
        manifest.save(&new)
    }

    /// Deletes library `name` and everything indexed in it (never the person's own files). Errors: missing
    /// library, or another process is writing to it.
    pub fn delete(&self, name: &str) -> Result<(), StoreError> {
        let dir = self.existing(name)?;
        let lock = WriteLock::acquire(&dir, name)?;
        // Move it out of the way first so that a crash mid-delete never leaves a half library behind.
        let trash = self.libraries().join(format!(".deleting-{name}-{}", now_ms()));
        std::fs::rename(&dir, &trash).map_err(|e| StoreError::io(&dir, e))?;
        drop(lock);
        std::fs::remove_dir_all(&trash).map_err(|e| StoreError::io(&trash, e))
    }
}

/// Library names: 1–64 characters of letters, digits, space, `-`, `_`, `.`; not starting with `.` or a
/// space. They become folder names, so anything else (slashes, `..`) is refused.
pub fn check_name(name: &str) -> Result<(), StoreError> {
    let ok = !name.is_empty()
        && name.chars().count() <= 64
        && !name.starts_with(['.', ' '])
        && !name.ends_with(' ')
        && name.chars().all(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(StoreError::Library(format!(
            "{name:?} is not a valid library name (1–64 letters, digits, spaces, '-', '_', '.'; not starting with '.')"
        )))
    }
}

/// An exclusive lock on `write.lock` in a library folder: only one process changes a library at a time
/// (readers never take it). Released when dropped or when the process dies.
pub struct WriteLock {
    _file: std::fs::File,
}

impl WriteLock {
    /// Errors: another process holds the lock (named in the message with its pid), or the file cannot be
    /// opened.
    pub fn acquire(dir: &Path, name: &str) -> Result<Self, StoreError> {
        use std::io::{Read, Seek, Write};
        let path = dir.join("write.lock");
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| StoreError::io(&path, e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                return Err(StoreError::Busy(format!(
                    "library {name:?} is being changed by another Quarry process (pid {}); wait for it to finish",
                    holder.trim()
                )));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(StoreError::io(&path, e)),
        }
        let _ = file.set_len(0);
        let _ = file.seek(std::io::SeekFrom::Start(0));
        let _ = write!(file, "{}", std::process::id());
        Ok(WriteLock { _file: file })
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> (EmbeddingInfo, ChunkingInfo) {
        (
            EmbeddingInfo { model_id: "m".into(), dimension: 4, automatic: false, chunks_per_second: None },
            ChunkingInfo::new(512, 76),
        )
    }

    #[test]
    fn create_list_rename_delete() {
        let tmp = tempfile::tempdir().unwrap();
        let data = DataDir::at(tmp.path());
        let (e, c) = info();
        data.create("papers", e.clone(), c.clone()).unwrap();
        data.create("Notes 2024", e.clone(), c.clone()).unwrap();
        assert!(data.create("papers", e.clone(), c.clone()).unwrap_err().to_string().contains("exists already"));
        for bad in ["", "../x", "a/b", ".hidden", &"x".repeat(65)] {
            assert!(data.create(bad, e.clone(), c.clone()).is_err(), "{bad:?} must be refused");
        }
        let names: Vec<String> = data.list().unwrap().into_iter().map(|m| m.name).collect();
        assert_eq!(names, ["Notes 2024", "papers"]);
        data.rename("papers", "research").unwrap();
        assert_eq!(LibraryManifest::load(&data.existing("research").unwrap()).unwrap().name, "research");
        let missing = data.existing("papers").unwrap_err().to_string();
        assert!(missing.contains("research") && missing.contains("quarry library create"), "{missing}");
        {
            let _held = WriteLock::acquire(&data.existing("research").unwrap(), "research").unwrap();
            let busy = data.delete("research").unwrap_err().to_string();
            assert!(busy.contains("another Quarry process"), "{busy}");
        }
        data.delete("research").unwrap();
        assert_eq!(data.list().unwrap().len(), 1);
    }
}
