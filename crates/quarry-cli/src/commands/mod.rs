pub mod ask;
pub mod eval;
pub mod eval_qa;
pub mod latency;
pub mod library;
pub mod parse;
pub mod progress;
pub mod report;
