//! Integration tests of quarry-eval on the shared benchmark sets with the real embedding models (one test
//! binary per crate).
#![allow(clippy::unwrap_used)] // tests: a failed unwrap is the test failing

mod answers_run;
mod qa_run;
mod retrieval;
