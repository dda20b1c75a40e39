//! quarry-web against a loopback server that speaks each provider's real JSON format and serves real
//! HTML pages (from ../shared/eval/B_documents: an e-mail newsletter, a Hebrew windows-1255 Word page, an
//! EPUB chapter).

mod server;
mod web;
