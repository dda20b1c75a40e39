//! Quarry's domain types, shared by every crate: what a parsed document looks like, where a piece of text
//! sits inside its file, and the chunks that retrieval works on.
//!
//! This crate has no heavy dependencies on purpose: agents, the CLI and the desktop shell all depend on it,
//! and it must compile in seconds.

pub mod chat;
mod document;
mod error_code;
mod format;
pub mod models;
pub mod proc_info;
pub mod rank_fusion;
pub mod retrieval;
pub mod table_row;
mod text_stats;

pub use chat::{ChatError, ChatMessage, ChatModel, ChatRequest, ChatResponse, Role, TokenSink, TokenUsage};
pub use document::{Block, Chunk, Location, ParsedDocument, BLOCK_SEPARATOR};
pub use error_code::{is_disk_full_io, Coded, ErrorCode, ENOSPC_MESSAGE};
pub use format::Format;
pub use proc_info::proc_kib;
pub use retrieval::{citation_place, Passage, RetrievalError, Retriever, CONTEXT_SEPARATOR};
pub use text_stats::{count_cjk_chars, is_cjk_char, is_mostly_cjk, mostly_cjk};
