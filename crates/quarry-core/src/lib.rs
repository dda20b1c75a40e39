//! Quarry's domain types, shared by every crate: what a parsed document looks like, where a piece of text
//! sits inside its file, and the chunks that retrieval works on.
//!
//! This crate has no heavy dependencies on purpose: agents, the CLI and the desktop shell all depend on it,
//! and it must compile in seconds.

mod document;
mod format;
pub mod models;
mod text_stats;

pub use document::{Block, Chunk, Location, ParsedDocument, BLOCK_SEPARATOR};
pub use format::Format;
pub use text_stats::{count_cjk_chars, is_cjk_char};
