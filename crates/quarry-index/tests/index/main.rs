//! Integration tests of quarry-index with the real embedding model (one test binary per crate).

mod missing_runtime;
mod multilingual;
mod retrieval;
