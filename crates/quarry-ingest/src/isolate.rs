//! Parsing in worker processes, so a parser that hangs, balloons or aborts costs one document, not the
//! batch or the app.
//!
//! The supervisor ([`parse_isolated`]) starts `workers` child processes (the `quarry` binary's hidden
//! `parse-worker` command, see [`WorkerCommand`]) and feeds them files one at a time over stdin as JSON
//! lines. A worker ([`run_worker`]) caps its own address space (RLIMIT_AS), parses, and answers with one
//! JSON line per [`ParseEvent`] and a final `End`. The supervisor waits at most `document_timeout` between
//! two lines: past that it kills the worker and reports `timeout` for the document being read; when a
//! worker dies it reports `too_large` (the allocator hit the memory cap) or `crashed` (any other death,
//! e.g. a stack overflow), and starts a fresh worker for the next file.

use crate::{parse_file, FileOutcome, IngestError, InputFile, ParseEvent, ParseOptions};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The program and arguments that start a worker, which must call [`run_worker`].
#[derive(Debug, Clone)]
pub struct WorkerCommand {
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

impl WorkerCommand {
    /// This very executable, with `args` (e.g. `["parse-worker"]`).
    ///
    /// Errors: the OS cannot tell the path of the running executable.
    pub fn current_exe(args: &[&str]) -> std::io::Result<Self> {
        Ok(WorkerCommand { program: std::env::current_exe()?, args: args.iter().map(OsString::from).collect() })
    }
}

/// Settings for [`parse_isolated`].
#[derive(Debug, Clone)]
pub struct IsolationConfig {
    pub worker: WorkerCommand,
    /// Worker processes run at once (default: available cores).
    pub workers: usize,
    /// Longest wait for a single document (default 60 s).
    pub document_timeout: Duration,
    /// Address space each worker may add to its start-up size, in bytes (default 3 GiB); see [`run_worker`].
    pub memory_limit_bytes: u64,
    pub options: ParseOptions,
    /// Send the parsed text back (for ingestion) or only the report figures (for `quarry parse`).
    pub include_documents: bool,
    /// Set it to stop: workers finish the file each is reading and take no new one (the app's Cancel).
    /// Shared by clones of this config.
    pub stop: Arc<AtomicBool>,
}

impl IsolationConfig {
    pub fn new(worker: WorkerCommand) -> Self {
        IsolationConfig {
            worker,
            workers: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2),
            document_timeout: Duration::from_secs(60),
            memory_limit_bytes: 3 << 30,
            options: ParseOptions::default(),
            include_documents: true,
            stop: Arc::new(AtomicBool::new(false)),
        }
    }
}

/// A request from supervisor to worker: one file.
#[derive(Debug, Serialize, Deserialize)]
struct Request {
    file: InputFile,
    options: ParseOptions,
    include_documents: bool,
}

/// A line from worker to supervisor.
#[derive(Debug, Serialize, Deserialize)]
enum Reply {
    Event(ParseEvent),
    End,
}

/// The worker's main loop: caps the address space at its size at start-up plus `memory_limit_bytes`
/// (0 = no cap), then answers requests from stdin until it closes. The cap is counted from the start-up
/// size because that depends on the executable (the `quarry` binary maps LanceDB and more, several
/// hundred MiB of address space in a debug build), not on the document. Parsing runs on a thread with a 64 MiB stack, because PDF and XML
/// parsers recurse deeply on hostile input.
///
/// Errors: stdin/stdout failures (the supervisor went away).
pub fn run_worker(memory_limit_bytes: u64) -> std::io::Result<()> {
    if memory_limit_bytes > 0 {
        // Failing to set the cap is not fatal: the worker still isolates crashes and hangs.
        let cap = address_space_bytes().unwrap_or(0).saturating_add(memory_limit_bytes);
        let _ = rlimit::setrlimit(rlimit::Resource::AS, cap, cap);
    }
    // Panics are caught per document and reported in its row; keep stderr to one line each.
    std::panic::set_hook(Box::new(|info| {
        let location = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        eprintln!("parser panic{location}");
    }));
    let handle = std::thread::Builder::new().stack_size(64 << 20).spawn(worker_loop)?;
    handle.join().unwrap_or_else(|_| Err(std::io::Error::other("worker thread panicked")))
}

/// This process's virtual address space in bytes (`VmSize` of /proc/self/status); `None` off Linux.
fn address_space_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmSize:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib << 10)
}

fn worker_loop() -> std::io::Result<()> {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    for line in stdin.lock().lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let request: Request = serde_json::from_str(&line).map_err(std::io::Error::other)?;
        let mut out = stdout.lock();
        let mut io_error = None;
        let include = request.include_documents;
        parse_file(&request.file.path, &request.file.display, &request.options, &mut |mut event| {
            if !include {
                if let ParseEvent::Finished(outcome) = &mut event {
                    outcome.document = None;
                }
            }
            if io_error.is_none() {
                io_error = write_line(&mut out, &Reply::Event(event)).err();
            }
        });
        if let Some(e) = io_error {
            return Err(e);
        }
        write_line(&mut out, &Reply::End)?;
    }
    Ok(())
}

fn write_line<W: Write>(out: &mut W, reply: &Reply) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, reply).map_err(std::io::Error::other)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Parses `inputs` in isolated worker processes and calls `on_outcome(input_index, outcome)` for every
/// document as it finishes (a ZIP gives several outcomes for one input). Outcomes of different inputs
/// arrive in completion order; sort by `input_index` for a stable order.
///
/// Never fails as a whole: a worker that cannot start turns into `crashed` rows naming the reason. Once
/// `config.stop` is set, files not yet started get no outcome.
pub fn parse_isolated(inputs: &[InputFile], config: &IsolationConfig, mut on_outcome: impl FnMut(usize, FileOutcome)) {
    let queue: Arc<Mutex<VecDeque<(usize, InputFile)>>> =
        Arc::new(Mutex::new(inputs.iter().cloned().enumerate().collect()));
    let (sender, receiver) = mpsc::channel::<(usize, FileOutcome)>();
    std::thread::scope(|scope| {
        for _ in 0..config.workers.max(1).min(inputs.len().max(1)) {
            let queue = Arc::clone(&queue);
            let sender = sender.clone();
            scope.spawn(move || {
                let mut supervisor = Supervisor { config, worker: None };
                loop {
                    if config.stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let next = queue.lock().map(|mut q| q.pop_front()).unwrap_or(None);
                    let Some((index, file)) = next else { break };
                    supervisor.parse(&file, &mut |outcome| {
                        let _ = sender.send((index, outcome));
                    });
                }
                supervisor.stop();
            });
        }
        drop(sender);
        for (index, outcome) in receiver {
            on_outcome(index, outcome);
        }
    });
}

/// The environment variables a parse worker inherits; every other one is cleared, so a parser exploited
/// by a crafted file finds no API key (`QUARRY_*_API_KEY`), no D-Bus session address (the way to the
/// OS keyring), no proxy settings and no other process's secrets. Kept: what locating model files and
/// libraries (PDFium), locale, temporary files, logging and OpenMP/ONNX settings need.
pub const WORKER_ENVIRONMENT: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "XDG_DATA_HOME",
    "LD_LIBRARY_PATH",
    "QUARRY_MODELS_DIR",
    "QUARRY_BUNDLED_MODELS_DIR",
    "QUARRY_LOG",
    "RUST_BACKTRACE",
    "OMP_WAIT_POLICY",
    "ORT_DISABLE_TELEMETRY",
];

struct Worker {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

struct Supervisor<'a> {
    config: &'a IsolationConfig,
    worker: Option<Worker>,
}

impl Supervisor<'_> {
    fn spawn(&self) -> std::io::Result<Worker> {
        let mut command = Command::new(&self.config.worker.program);
        command.args(&self.config.worker.args).env_clear();
        for name in WORKER_ENVIRONMENT {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        let mut child = command
            .env("QUARRY_WORKER_MEMORY_LIMIT", self.config.memory_limit_bytes.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let stdin = child.stdin.take().ok_or_else(|| std::io::Error::other("worker has no stdin"))?;
        let stdout = child.stdout.take().ok_or_else(|| std::io::Error::other("worker has no stdout"))?;
        let stderr = child.stderr.take().ok_or_else(|| std::io::Error::other("worker has no stderr"))?;
        let (line_sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line_sender.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let tail = Arc::clone(&stderr_tail);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Ok(mut tail) = tail.lock() {
                    if tail.len() == 8 {
                        tail.pop_front();
                    }
                    tail.push_back(line);
                }
            }
        });
        Ok(Worker { child, stdin, lines, stderr_tail })
    }

    /// Parses one file, emitting every outcome, whatever happens to the worker.
    fn parse(&mut self, file: &InputFile, emit: &mut dyn FnMut(FileOutcome)) {
        let request = Request {
            file: file.clone(),
            options: self.config.options.clone(),
            include_documents: self.config.include_documents,
        };
        let line = match serde_json::to_string(&request) {
            Ok(line) => line,
            Err(e) => return emit(failed(&file.display, IngestError::Io(e.to_string()))),
        };
        // A worker that died between files shows up as a broken pipe: start a new one and retry once.
        let mut sent = false;
        for _ in 0..2 {
            if self.worker.is_none() {
                match self.spawn() {
                    Ok(worker) => self.worker = Some(worker),
                    Err(e) => {
                        return emit(failed(
                            &file.display,
                            IngestError::Crashed(format!("cannot start parser worker: {e}")),
                        ))
                    }
                }
            }
            let Some(worker) = self.worker.as_mut() else { break };
            if writeln!(worker.stdin, "{line}").and_then(|_| worker.stdin.flush()).is_ok() {
                sent = true;
                break;
            }
            self.kill();
        }
        if !sent {
            return emit(failed(&file.display, IngestError::Crashed("parser worker does not accept work".into())));
        }
        // Paths started but not yet finished, innermost last (a ZIP member sits above its archive).
        let mut open: Vec<String> = Vec::new();
        loop {
            let Some(worker) = self.worker.as_mut() else { return };
            match worker.lines.recv_timeout(self.config.document_timeout) {
                Ok(line) => match serde_json::from_str::<Reply>(&line) {
                    Ok(Reply::Event(ParseEvent::Started { path })) => open.push(path),
                    Ok(Reply::Event(ParseEvent::Finished(outcome))) => {
                        open.retain(|p| p != &outcome.path);
                        emit(*outcome);
                    }
                    Ok(Reply::End) => return,
                    Err(_) => {} // Stray output (a library printing to stdout): not ours, skip it.
                },
                Err(RecvTimeoutError::Timeout) => {
                    self.kill();
                    let error = IngestError::Timeout(self.config.document_timeout.as_millis() as u64);
                    return report_unfinished(open, &file.display, error, emit);
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let error = self.death_reason();
                    self.kill();
                    return report_unfinished(open, &file.display, error, emit);
                }
            }
        }
    }

    /// Why the worker died: the memory cap (allocation failure) or anything else.
    fn death_reason(&mut self) -> IngestError {
        let Some(worker) = self.worker.as_mut() else { return IngestError::Crashed("worker gone".into()) };
        let status = worker.child.wait().ok();
        // Give the stderr reader a moment to collect the last words.
        std::thread::sleep(Duration::from_millis(50));
        let tail: Vec<String> = worker.stderr_tail.lock().map(|t| t.iter().cloned().collect()).unwrap_or_default();
        let last_words = tail.iter().rev().find(|l| !l.trim().is_empty()).cloned().unwrap_or_default();
        if tail.iter().any(|l| l.contains("memory allocation of")) {
            let cap = self.config.memory_limit_bytes >> 20;
            return IngestError::TooLarge(format!("parser needed more than the {cap} MiB memory cap"));
        }
        let how = match status {
            Some(s) => describe_exit(s),
            None => "unknown status".to_string(),
        };
        if last_words.is_empty() {
            IngestError::Crashed(format!("parser worker died ({how})"))
        } else {
            IngestError::Crashed(format!("parser worker died ({how}): {}", crate::error::one_line(&last_words)))
        }
    }

    fn kill(&mut self) {
        if let Some(mut worker) = self.worker.take() {
            let _ = worker.child.kill();
            let _ = worker.child.wait();
        }
    }

    fn stop(&mut self) {
        if let Some(mut worker) = self.worker.take() {
            drop(worker.stdin); // EOF: the worker's loop ends.
            let _ = worker.child.wait();
        }
    }
}

impl Drop for Supervisor<'_> {
    fn drop(&mut self) {
        self.kill();
    }
}

fn describe_exit(status: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            let name = match signal {
                6 => "SIGABRT",
                9 => "SIGKILL",
                11 => "SIGSEGV",
                7 => "SIGBUS",
                _ => "signal",
            };
            return format!("{name} {signal}");
        }
    }
    match status.code() {
        Some(code) => format!("exit code {code}"),
        None => "unknown status".into(),
    }
}

/// Rows for every document left unfinished; the input file itself when nothing had started.
fn report_unfinished(mut open: Vec<String>, display: &str, error: IngestError, emit: &mut dyn FnMut(FileOutcome)) {
    if open.is_empty() {
        open.push(display.to_string());
    }
    while let Some(path) = open.pop() {
        emit(failed(&path, error.clone()));
    }
}

fn failed(path: &str, error: IngestError) -> FileOutcome {
    FileOutcome {
        path: path.to_string(),
        format: None,
        status: error.status(),
        pages: None,
        chars: 0,
        cjk_chars: 0,
        ms: 0,
        error: Some(error),
        warnings: Vec::new(),
        document: None,
    }
}
