//! Integration tests of quarry-ingest on real documents from ../shared/eval (one test binary per crate:
//! each binary is a link of its own).
#![allow(clippy::unwrap_used)] // tests: a failed unwrap is the test failing

mod archives;
mod chunking;
mod common;
mod isolation;
mod mail_and_slides;
mod ocr;
mod office_documents;
mod pdfs;
