//! The real `quarry` binary end to end (one test binary per crate: this one links LanceDB and llama.cpp).
#![allow(clippy::unwrap_used)] // tests: a failed unwrap is the test failing

mod ask_command;
mod library_command;
mod mcp_command;
mod parse_command;
