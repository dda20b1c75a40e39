//! `quarry`: every Quarry action from the command line, headless and scriptable.
//!
//! `main` parses arguments, runs the command and turns any error into one clear line on stderr with a
//! non-zero exit code (the ripgrep shape: the work lives in library crates, this is a thin shell).

mod commands;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "quarry", version, about = "Quarry: a private research assistant over your own documents")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Read files, folders and ZIP archives and report, per file, what text could be extracted.
    Parse(commands::parse::ParseArgs),
    /// Measure retrieval (and later answer) quality on evaluation sets.
    #[command(subcommand)]
    Eval(commands::eval::EvalCommand),
    /// Internal: the isolated parser process that `parse` and `add` start. Speaks JSON lines on stdin/stdout.
    #[command(hide = true)]
    ParseWorker,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !matches!(cli.command, Command::ParseWorker) {
        init_logging();
    }
    let result = match cli.command {
        Command::Parse(args) => commands::parse::run(args),
        Command::Eval(command) => commands::eval::run(command),
        Command::ParseWorker => commands::parse::run_worker(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("quarry: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr, filtered by `QUARRY_LOG` (e.g. `QUARRY_LOG=debug`); warnings by default.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("QUARRY_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
}
