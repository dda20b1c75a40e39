//! The real `quarry` binary end to end (one test binary per crate: this one links LanceDB and llama.cpp).

mod ask_command;
mod library_command;
mod mcp_command;
mod parse_command;
