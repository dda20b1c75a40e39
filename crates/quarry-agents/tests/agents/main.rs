//! Agent control flow with a scripted fake model and an in-memory retriever (one test binary per crate).
#![allow(clippy::unwrap_used)] // tests: a failed unwrap is the test failing

mod fakes;
mod flows;
mod genre;
mod layers;
mod report;
mod research;
