//! `quarry`: every Quarry action from the command line, headless and scriptable.
//!
//! `main` parses arguments, runs the command and turns any error into one clear line on stderr with a
//! non-zero exit code (the ripgrep shape: the work lives in library crates, this is a thin shell).

mod commands;

use clap::{Parser, Subcommand};
use quarry_core::ErrorCode;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "quarry", version, about = "Quarry: a private research assistant over your own documents")]
struct Cli {
    /// Where libraries are kept (default: $QUARRY_DATA_DIR, else the platform data folder,
    /// ~/.local/share/quarry on Linux).
    #[arg(long, global = true, env = "QUARRY_DATA_DIR")]
    data_dir: Option<std::path::PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Read files, folders and ZIP archives and report, per file, what text could be extracted.
    Parse(commands::parse::ParseArgs),
    /// Create, list, rename, delete or re-index libraries (named collections of documents).
    #[command(subcommand)]
    Library(commands::library::LibraryCommand),
    /// Add files, folders and ZIP archives to a library: read, chunk, embed and index them.
    Add(commands::library::AddArgs),
    /// Take files or folders out of a library (their documents and chunks; the files stay on disk).
    Remove(commands::library::RemoveArgs),
    /// Bring a library in step with the files and folders it was given: read new and changed files,
    /// drop vanished ones.
    Sync(commands::library::SyncArgs),
    /// Keep a library in step with its folders as they change, until Ctrl-C.
    Watch(commands::library::WatchArgs),
    /// Documents by state, chunks, and failures with their reasons.
    Status(commands::library::StatusArgs),
    /// Search a library: ranked chunks with path, page and score.
    Search(commands::library::SearchArgs),
    /// Ask a question: a research agent searches the libraries and writes a cited answer.
    Ask(commands::ask::AskArgs),
    /// Write a long-form research report on a topic: planned sections, each researched with DeepSearch,
    /// reviewed once, with an introduction and conclusion, as one Markdown file.
    Report(commands::report::ReportArgs),
    /// Serve the libraries to other tools over the Model Context Protocol (stdio): search, get_passage,
    /// ask and list_libraries, for MCP hosts such as desktop chat apps, editors and coding agents.
    Mcp(commands::mcp::McpArgs),
    /// The language models Quarry can use: GGUF files installed for the embedded model, and
    /// OpenAI-compatible servers running on this computer (Ollama, LM Studio, llama.cpp server, vLLM, Jan).
    Models(commands::models::ModelsArgs),
    /// API keys (llm, tavily, brave) in the OS keyring: set (from stdin), delete, status.
    #[command(subcommand)]
    Secret(commands::secret::SecretCommand),
    /// Measure retrieval (and later answer) quality on evaluation sets.
    #[command(subcommand)]
    Eval(commands::eval::EvalCommand),
    /// Internal: the isolated parser process that `parse` and `add` start. Speaks JSON lines on stdin/stdout.
    #[command(hide = true)]
    ParseWorker,
}

fn main() -> ExitCode {
    // Before any thread exists: ONNX Runtime would otherwise send telemetry (see the function's docs).
    quarry_index::disable_onnx_runtime_telemetry();
    let cli = Cli::parse();
    if only_prints(&cli.command) {
        stop_quietly_when_the_output_is_closed();
    }
    if !matches!(cli.command, Command::ParseWorker) {
        init_logging();
    }
    let data = || quarry_store::DataDir::resolve(cli.data_dir.clone());
    let result = match cli.command {
        Command::Parse(args) => commands::parse::run(args),
        Command::Library(command) => data().map_err(Into::into).and_then(|d| commands::library::library(d, command)),
        Command::Add(args) => data().map_err(Into::into).and_then(|d| commands::library::add(d, args)),
        Command::Remove(args) => data().map_err(Into::into).and_then(|d| commands::library::remove(d, args)),
        Command::Sync(args) => data().map_err(Into::into).and_then(|d| commands::library::sync(d, args)),
        Command::Watch(args) => data().map_err(Into::into).and_then(|d| commands::library::watch(d, args)),
        Command::Status(args) => data().map_err(Into::into).and_then(|d| commands::library::status(d, args)),
        Command::Search(args) => data().map_err(Into::into).and_then(|d| commands::library::search(d, args)),
        Command::Ask(args) => data().map_err(Into::into).and_then(|d| commands::ask::ask(d, args)),
        Command::Report(args) => data().map_err(Into::into).and_then(|d| commands::report::report(d, args)),
        Command::Mcp(args) => data().map_err(Into::into).and_then(|d| commands::mcp::mcp(d, args)),
        Command::Eval(command) => commands::eval::run(command, || data().map_err(Into::into)),
        Command::Models(args) => commands::models::run(args),
        Command::Secret(command) => commands::secret::run(command),
        Command::ParseWorker => commands::parse::run_worker(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("quarry: {error:#}");
            if let Some(advice) = advice(quarry_session::error_code(&error)) {
                eprintln!("quarry: {advice}");
            }
            ExitCode::FAILURE
        }
    }
}

/// Whether `command` only prints what it reads or computes and starts no child process whose pipe it
/// writes (see [`stop_quietly_when_the_output_is_closed`]): `status`, `search`, `models`, `library list`,
/// the evaluations that read sets or libraries, and `ask` and `report` without `--web`. Not `eval
/// embedder` (it runs Python beside it), `mcp`, or `ask` and `report` with `--web` (web pages are read in
/// a parser worker).
fn only_prints(command: &Command) -> bool {
    use commands::eval::EvalCommand;
    use commands::library::LibraryCommand;
    match command {
        Command::Status(_) | Command::Search(_) | Command::Models(_) => true,
        Command::Library(LibraryCommand::List { .. }) => true,
        Command::Ask(args) => !args.web.web,
        Command::Report(args) => !args.web.web,
        Command::Eval(eval) => matches!(
            eval,
            EvalCommand::Retrieval(_)
                | EvalCommand::Latency(_)
                | EvalCommand::Library(_)
                | EvalCommand::Qa(_)
                | EvalCommand::Answers(_)
        ),
        _ => false,
    }
}

/// Lets a command that only prints what it read end quietly, as Unix command-line tools do, when the
/// program reading its output stops (`quarry status | head -3`): SIGPIPE's default action, which Rust's
/// runtime sets aside — each `println!` then panics on the closed pipe and prints a backtrace. Only for
/// commands that start no child process: `add`, `sync` and `parse` write to their parser workers'
/// pipes, and a worker that crashed must not take the whole run with it. (Sockets are written with
/// `MSG_NOSIGNAL` by Rust's standard library and raise no SIGPIPE.)
#[cfg(unix)]
fn stop_quietly_when_the_output_is_closed() {
    // SAFETY: `signal` only sets SIGPIPE's disposition back to its default; no handler runs our code.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// See the Unix version: elsewhere a closed pipe is an error like any other.
#[cfg(not(unix))]
fn stop_quietly_when_the_output_is_closed() {}

/// What to do about a failure of kind `code`, when there is more to say than its message.
fn advice(code: ErrorCode) -> Option<&'static str> {
    match code {
        ErrorCode::DiskFull => Some(
            "the disk is full: free some space and run the command again (libraries keep what they had; anything \
             half-written is cleared by the next add or sync)",
        ),
        ErrorCode::ModelMissing => Some(
            "a model file is missing or unusable: `quarry models` lists the models installed and where Quarry \
             looks for them (a source checkout installs them with scripts/setup.sh)",
        ),
        ErrorCode::LibraryNotFound => Some("`quarry library list` shows the libraries there are"),
        _ => None,
    }
}

/// Logs go to stderr, filtered by `QUARRY_LOG` (e.g. `QUARRY_LOG=debug`); warnings by default.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("QUARRY_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // Colour codes only on a terminal: a log file, an MCP host or the app reading stderr gets plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi).try_init();
}
