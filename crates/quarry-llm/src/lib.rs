//! Chat-model backends for Quarry's agents (the [`quarry_core::ChatModel`] trait).
//!
//! - [`OpenAiChat`]: any server that speaks OpenAI's `/v1/chat/completions` — Ollama, llama.cpp's
//!   `llama-server`, LM Studio, vLLM, hosted APIs.
//! - [`find_local_servers`]: such servers already running on this computer, found on their usual ports.
//!
//! The embedded GGUF backend (llama.cpp in-process) lives in its own crate so that only the binaries that
//! need it compile llama.cpp.

mod discover;
mod openai;

pub use discover::{
    find_local_servers, find_local_servers_blocking, LocalServer, PORTS_VARIABLE, PROBE_TIMEOUT, USUAL_PORTS,
};

pub use openai::{OpenAiChat, OpenAiConfig};
