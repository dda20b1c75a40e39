//! Agent control flow with a scripted fake model and an in-memory retriever (one test binary per crate).

mod fakes;
mod flows;
mod report;
mod research;
