//! The OpenAI-compatible client against a loopback server that speaks the real wire format (one test
//! binary per crate).

mod openai;
