pub mod eval;
pub mod parse;
