pub mod ask;
pub mod eval;
pub mod latency;
pub mod library;
pub mod parse;
pub mod progress;
