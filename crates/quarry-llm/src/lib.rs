//! Chat-model backends for Quarry's agents (the [`quarry_core::ChatModel`] trait).
//!
//! - [`OpenAiChat`]: any server that speaks OpenAI's `/v1/chat/completions` — Ollama, llama.cpp's
//!   `llama-server`, LM Studio, vLLM, hosted APIs.
//!
//! The embedded GGUF backend (llama.cpp in-process) lives in its own crate so that only the binaries that
//! need it compile llama.cpp.

mod openai;

pub use openai::{OpenAiChat, OpenAiConfig};
