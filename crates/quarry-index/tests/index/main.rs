//! Integration tests of quarry-index with the real embedding model (one test binary per crate).
#![allow(clippy::unwrap_used)] // tests: a failed unwrap is the test failing

mod embeddings;
mod missing_runtime;
mod multilingual;
