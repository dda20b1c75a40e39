//! quarry-web against a loopback server that speaks each provider's real JSON format and serves real
//! HTML pages (from ../shared/eval/B_documents: an e-mail newsletter, a Hebrew windows-1255 Word page, an
//! EPUB chapter).
#![allow(clippy::unwrap_used)] // tests: a failed unwrap is the test failing

mod server;
mod web;
