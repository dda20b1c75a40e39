//! The person's settings, kept as TOML in `settings.toml` of the config folder (`QUARRY_CONFIG_DIR`, else
//! the platform's: `~/.config/quarry` on Linux). Missing file: the zero-configuration defaults (embedded
//! models, offline, web search off). Secrets (API keys) are never written here.

use crate::{LlmSettings, WebSearchSettings};
use quarry_index::EmbedderConfig;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Errors reading or writing the settings file; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The file or its folder could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The settings file (or its folder).
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The file is not TOML of the settings' shape.
    #[error("{path} is not a valid settings file: {message}")]
    Format {
        /// The settings file.
        path: PathBuf,
        /// The TOML parser's explanation, with line and column.
        message: String,
    },
    /// Neither `QUARRY_CONFIG_DIR` nor a home folder says where the settings live.
    #[error("no home folder found; set QUARRY_CONFIG_DIR")]
    NoHome,
}

impl quarry_core::Coded for SettingsError {
    fn code(&self) -> quarry_core::ErrorCode {
        match self {
            SettingsError::Io { source, .. } if quarry_core::is_disk_full_io(source) => {
                quarry_core::ErrorCode::DiskFull
            }
            _ => quarry_core::ErrorCode::Other,
        }
    }
}

/// Which embedding model new libraries use (`None` fields: the set-up script's all-MiniLM-L6-v2). An
/// existing library keeps the model it was made with (see [`crate::EmbedderCache`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EmbeddingSettings {
    /// A built-in model by name: `minilm` (all-MiniLM-L6-v2, English) or `e5` (multilingual-e5-small:
    /// Chinese and ~100 other languages). Ignored when `model_dir` is set.
    pub model: Option<String>,
    /// Folder of an ONNX sentence-embedding model: model.onnx, tokenizer.json, config.json,
    /// special_tokens_map.json, tokenizer_config.json.
    pub model_dir: Option<PathBuf>,
    /// Name recorded with each library for that model (default: the folder name).
    pub model_id: Option<String>,
    /// ISO 639-1 codes of the languages the model was trained on (default `en`).
    pub languages: Option<Vec<String>>,
    /// The ONNX Runtime library (default: the set-up script's copy).
    pub onnx_runtime: Option<PathBuf>,
}

impl EmbeddingSettings {
    /// Whether a model was asked for (by name or folder). When not, a new library is made
    /// `automatic` and its first ingest picks the model from its documents' language.
    pub fn names_a_model(&self) -> bool {
        self.model.as_deref().is_some_and(|m| !m.trim().is_empty()) || self.model_dir.is_some()
    }

    /// The embedder configuration. Errors: the default model or ONNX Runtime is not installed.
    pub fn config(&self) -> Result<EmbedderConfig, quarry_index::IndexError> {
        let mut config = match &self.model_dir {
            Some(dir) => {
                let runtime = match &self.onnx_runtime {
                    Some(runtime) => runtime.clone(),
                    None => EmbedderConfig::default_onnx_runtime()?,
                };
                let id = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "custom".into());
                EmbedderConfig::with_files(runtime, dir.clone(), &id)
            }
            None => match self.model.as_deref().map(str::trim).filter(|m| !m.is_empty()) {
                Some(name) => EmbedderConfig::by_name(name)?,
                None => EmbedderConfig::default_model()?,
            },
        };
        if let Some(runtime) = &self.onnx_runtime {
            config.onnx_runtime = runtime.clone();
        }
        if let Some(id) = self.model_id.as_ref().filter(|id| !id.trim().is_empty()) {
            config.model_id = id.clone();
        }
        if let Some(languages) = &self.languages {
            config.languages = languages.clone();
        }
        Ok(config)
    }
}

/// Everything a person can set. `Default` is the zero-configuration first run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Offline (the default) reaches only this computer: the embedded model, local files, servers on
    /// localhost. Online lets the LLM client and web search reach other hosts.
    pub network: quarry_net::NetworkMode,
    /// Which language model answers: the embedded GGUF model (the default) or an OpenAI-compatible server.
    pub llm: LlmSettings,
    /// Which embedding model new libraries use.
    pub embedding: EmbeddingSettings,
    /// Web search as a source (off by default).
    pub web: WebSearchSettings,
    /// When PDF pages are read by OCR (`auto`: pages without a text layer; `off`; `force`: every page).
    /// Pictures are read by OCR unless `off`. The CLI's `--ocr` sets it for one command.
    pub ocr: quarry_ingest::OcrMode,
    /// Where libraries and conversations live (`None`: `QUARRY_DATA_DIR`, else the platform's data
    /// folder). Takes effect at the next start.
    pub data_dir: Option<PathBuf>,
}

impl Settings {
    /// `settings.toml` in `QUARRY_CONFIG_DIR`, else in the platform's config folder.
    pub fn default_path() -> Result<PathBuf, SettingsError> {
        if let Some(dir) = std::env::var_os("QUARRY_CONFIG_DIR").filter(|v| !v.is_empty()) {
            return Ok(PathBuf::from(dir).join("settings.toml"));
        }
        let dirs = directories::ProjectDirs::from("", "", "quarry").ok_or(SettingsError::NoHome)?;
        Ok(dirs.config_dir().join("settings.toml"))
    }

    /// Reads `path`; a missing file gives the defaults. Errors: unreadable or malformed file.
    pub fn load(path: &Path) -> Result<Settings, SettingsError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Settings::default()),
            Err(source) => return Err(SettingsError::Io { path: path.to_path_buf(), source }),
        };
        toml::from_str(&text).map_err(|e| SettingsError::Format { path: path.to_path_buf(), message: e.to_string() })
    }

    /// Writes the settings to `path` (through a temporary file: a crash never leaves half a file).
    pub fn save(&self, path: &Path) -> Result<(), SettingsError> {
        let io = |source| SettingsError::Io { path: path.to_path_buf(), source };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let text = toml::to_string_pretty(self)
            .map_err(|e| SettingsError::Format { path: path.to_path_buf(), message: e.to_string() })?;
        let partial = path.with_extension("toml.part");
        std::fs::write(&partial, text).map_err(io)?;
        std::fs::rename(&partial, path).map_err(io)
    }

    /// The same settings with blank text fields (URLs, model names, paths) as `None`, which is what a
    /// form's empty field means.
    pub fn without_blanks(mut self) -> Settings {
        let text = |v: Option<String>| v.filter(|s| !s.trim().is_empty());
        let path = |v: Option<PathBuf>| v.filter(|p| !p.as_os_str().is_empty());
        self.llm.url = text(self.llm.url);
        self.llm.model = text(self.llm.model);
        self.llm.model_file = path(self.llm.model_file);
        self.web.url = text(self.web.url);
        self.embedding.model_dir = path(self.embedding.model_dir);
        self.embedding.model = text(self.embedding.model);
        self.data_dir = path(self.data_dir);
        self
    }

    /// The LLM choice with this settings' network mode applied.
    pub fn llm_settings(&self) -> LlmSettings {
        LlmSettings { network: self.network, ..self.llm.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ocr_setting_defaults_to_auto_and_is_kept() {
        let dir = std::env::temp_dir().join(format!("quarry-settings-{}", std::process::id()));
        let path = dir.join("settings.toml");
        std::fs::create_dir_all(&dir).unwrap();
        // A settings file from before OCR: no `ocr` key.
        std::fs::write(&path, "network = \"offline\"\n").unwrap();
        assert_eq!(Settings::load(&path).unwrap().ocr, quarry_ingest::OcrMode::Auto);
        let settings = Settings { ocr: quarry_ingest::OcrMode::Off, ..Settings::default() };
        settings.save(&path).unwrap();
        assert!(std::fs::read_to_string(&path).unwrap().contains("ocr = \"off\""));
        assert_eq!(Settings::load(&path).unwrap().ocr, quarry_ingest::OcrMode::Off);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
