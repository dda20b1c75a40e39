//! The OpenAI-compatible client against a loopback server that speaks the real wire format (one test
//! binary per crate).
#![allow(clippy::unwrap_used)] // tests: a failed unwrap is the test failing

mod openai;
