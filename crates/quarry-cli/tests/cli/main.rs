//! The real `quarry` binary end to end (one test binary per crate: this one links LanceDB and llama.cpp).
#![allow(clippy::unwrap_used)] // tests: a failed unwrap is the test failing

mod ask_command;
mod library_command;
mod mcp_command;
mod parse_command;

/// A number that differs from run to run, so repeated CI runs cover more random moments and samples:
/// the environment variable `var` when it is set (to replay a failed run, whose test prints the number),
/// else the clock's nanoseconds, made odd (an xorshift seeded with it never sticks at 0).
pub fn run_seed(var: &str) -> u64 {
    std::env::var(var).ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1
    })
}
