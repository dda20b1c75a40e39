//! Parsing in worker processes, so a parser that hangs, balloons or aborts costs one document, not the
//! batch or the app.
//!
//! The supervisor ([`parse_isolated`]) starts `workers` child processes (the `quarry` binary's hidden
//! `parse-worker` command, see [`WorkerCommand`]) and feeds them files one at a time over stdin as JSON
//! lines. A worker ([`run_worker`]) caps its own address space (RLIMIT_AS), parses, and answers with one
//! JSON line per [`ParseEvent`] and a final `End`. The supervisor waits at most `document_timeout` between
//! two lines and `file_timeout` for a whole input (an archive whose members each finish in time): past
//! either it kills the worker and reports `timeout` for the documents being read; a reply line longer
//! than `max_reply_bytes` is not read further (`too_large`); when a worker dies it reports `too_large`
//! (the allocator hit the memory cap) or `crashed` (any other death, e.g. a stack overflow), and starts a
//! fresh worker for the next file.
//!
//! A worker is confined as far as a parser needs: a cleared environment ([`WORKER_ENVIRONMENT`]: no API
//! keys, no D-Bus session), no network and no access to other processes (a seccomp filter installed
//! before the worker program starts), file access cut to what parsing needs (a Landlock ruleset: no
//! writes but a private temporary folder, reads of system, model and input files only; see `sandbox.rs`
//! and [`landlock_status`]), a memory cap it must set or refuse to work, and no core dump or
//! ptrace-style access to it (`PR_SET_DUMPABLE` 0).

#[cfg(target_os = "linux")]
pub use crate::sandbox::landlock_abi;
pub use crate::sandbox::landlock_status;
use crate::sandbox::FileSandbox;
use crate::{parse_file, FileOutcome, IngestError, InputFile, ParseEvent, ParseOptions};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The program and arguments that start a worker, which must call [`run_worker`].
#[derive(Debug, Clone)]
pub struct WorkerCommand {
    /// The executable.
    pub program: PathBuf,
    /// Its arguments (`parse-worker …`).
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

/// Least CPU time a worker must have used since the last look for [`starved_extension`] to count it as
/// running (two clock ticks): a worker stuck waiting (a deadlock, a blocked read) uses none and meets its
/// budget in wall-clock time as before.
pub const MIN_RUNNING_CPU: Duration = Duration::from_millis(20);

/// How much longer a worker past its document budget (`budget`, wall-clock) may run because the machine
/// starved it, not because its file stalled it: the budget left in CPU time (`budget − cpu_since_line`)
/// when the worker ran since the last look (`cpu_since_look ≥` [`MIN_RUNNING_CPU`]) and has used less
/// CPU time than `budget` since its last reply line; `None` otherwise (stuck, or its CPU budget spent:
/// the file is a `timeout`). A `quarry add` at nice 19 beside a build had legitimate PDFs fail with
/// "timed out after 60.0 s" having run for a fraction of that; a parser spinning on a hostile file
/// spends its CPU budget and is stopped.
pub fn starved_extension(cpu_since_line: Duration, cpu_since_look: Duration, budget: Duration) -> Option<Duration> {
    (cpu_since_look >= MIN_RUNNING_CPU && cpu_since_line < budget).then(|| budget - cpu_since_line)
}

/// The CPU time (user and system) process `pid` has used, from `/proc/<pid>/stat`; `None` where it
/// cannot be read (another system than Linux, a process gone).
pub fn cpu_time(pid: u32) -> Option<Duration> {
    #[cfg(target_os = "linux")]
    {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name (field 2) is in parentheses and may hold spaces: count from after its ")".
        // Field 3 (the state) is then the first; utime and stime, fields 14 and 15, the 12th and 13th.
        let fields: Vec<&str> = stat.get(stat.rfind(')')? + 1..)?.split_whitespace().collect();
        let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
        // SAFETY: sysconf reads a system constant and has no preconditions.
        let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        (per_second > 0).then(|| Duration::from_secs_f64(ticks as f64 / per_second as f64))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        None
    }
}

/// Settings for [`parse_isolated`].
#[derive(Debug, Clone)]
pub struct IsolationConfig {
    /// How to start a worker process.
    pub worker: WorkerCommand,
    /// Worker processes run at once (default: available cores).
    pub workers: usize,
    /// Longest wait for a single document (default 60 s): between two lines of a worker's reply. Counted
    /// in the worker's CPU time when the machine starves it: past it in wall-clock time, a worker that
    /// ran but got less CPU time than this is given the rest ([`starved_extension`]), up to
    /// `file_wall_timeout`.
    pub document_timeout: Duration,
    /// Longest one input file may take in all, every member of an archive together (default 10 min). A
    /// long reading that reports progress (OCR, page by page) is given one `document_timeout` more at each
    /// step, up to `file_wall_timeout`.
    pub file_timeout: Duration,
    /// Longest one input file may take however it progresses (default 60 min; time spent waiting for an
    /// OCR permit not counted): progress events cannot extend a file past it.
    pub file_wall_timeout: Duration,
    /// Longest reply line read from a worker, in bytes (default 1 GiB; a parsed document travels as one
    /// line), whatever the file. Each file's own limit is lower: what a file of its size could sensibly
    /// produce ([`reply_cap`]). A longer line is not read: its document is `too_large` and the worker is
    /// stopped, so a worker flooding its output cannot exhaust the supervisor's memory.
    pub max_reply_bytes: u64,
    /// Address space each worker may add to its start-up size, in bytes (default 3 GiB); see [`run_worker`].
    pub memory_limit_bytes: u64,
    /// How workers read documents (OCR mode, its models).
    pub options: ParseOptions,
    /// Send the parsed text back (for ingestion) or only the report figures (for `quarry parse`).
    pub include_documents: bool,
    /// Set it to stop (the app's Cancel, Ctrl-C): within a fraction of a second each worker is stopped in
    /// the middle of its file, which gets no outcome (read again by the next run), and no new file is
    /// taken. Shared by clones of this config.
    pub stop: Arc<AtomicBool>,
    /// How many workers may read pages by OCR at once (default [`OcrPermits::default_limit`]); shared by
    /// clones of this config, so batches started from one config share the limit.
    pub ocr_permits: Arc<OcrPermits>,
}

/// Permits to read by OCR, one per worker that has loaded the OCR models, shared by the supervisors of a
/// batch. OCR's models and ONNX Runtime's buffers over a 2,000-pixel page take up to about 1 GiB in a
/// worker (`cargo bench --bench ocr`), and each engine already runs on up to four cores, so a folder of
/// scans read by one worker per core held one engine per core at once (8 GiB on an 8-core laptop) while
/// the engines fought over the cores. A worker asks for a permit before it loads the models for a file
/// (`ocr::set_before_load`) and its supervisor returns it when the worker has finished that file (the
/// worker unloads the models then, `ocr::release_engine`) or died. Files without pages to read by OCR
/// never ask.
#[derive(Debug)]
pub struct OcrPermits {
    limit: usize,
    state: Mutex<PermitCounts>,
    freed: Condvar,
}

#[derive(Debug, Default)]
struct PermitCounts {
    held: usize,
    most_held: usize,
    granted: u64,
}

/// Memory one OCR engine may take at its peak, in bytes, for [`OcrPermits::default_limit`]: 1,002 MiB
/// measured over 2,000-pixel pages (`cargo bench --bench ocr`, docs/evaluation/ingest-and-search.md),
/// rounded up.
pub const OCR_ENGINE_BYTES: u64 = 1280 << 20;

impl OcrPermits {
    /// At most `limit` workers read by OCR at once (at least 1).
    pub fn new(limit: usize) -> Self {
        OcrPermits { limit: limit.max(1), state: Mutex::new(PermitCounts::default()), freed: Condvar::new() }
    }

    /// The limit for this machine and `workers` workers: as many engines as the cores keep busy (an engine
    /// runs on `min(cores, 4)` threads, so one per four cores, at least one) and as the memory available
    /// now holds ([`OCR_ENGINE_BYTES`] each, of /proc/meminfo's `MemAvailable`; not counted off Linux),
    /// at least 1 and at most `workers`.
    pub fn default_limit(workers: usize) -> usize {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
        let by_cores = cores.div_ceil(4).max(1);
        let by_memory = available_memory_bytes().map_or(usize::MAX, |bytes| (bytes / OCR_ENGINE_BYTES).max(1) as usize);
        by_cores.min(by_memory).min(workers.max(1))
    }

    /// Most permits held at once so far.
    pub fn most_held(&self) -> usize {
        self.counts().most_held
    }

    /// Permits granted so far (one per file a worker read by OCR).
    pub fn granted(&self) -> u64 {
        self.counts().granted
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, PermitCounts> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Waits until fewer than the limit are held, then holds one.
    fn acquire(&self) {
        let mut counts = self.counts();
        while counts.held >= self.limit {
            counts = self.freed.wait(counts).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        counts.held += 1;
        counts.granted += 1;
        counts.most_held = counts.most_held.max(counts.held);
    }

    fn release(&self) {
        let mut counts = self.counts();
        counts.held = counts.held.saturating_sub(1);
        drop(counts);
        self.freed.notify_one();
    }
}

/// `MemAvailable` of /proc/meminfo in bytes; `None` off Linux or when it cannot be read.
fn available_memory_bytes() -> Option<u64> {
    quarry_core::proc_kib("/proc/meminfo", "MemAvailable:").map(|kib| kib << 10)
}

impl IsolationConfig {
    /// Workers started by `worker`, one per core, with the default limits above and parse options.
    pub fn new(worker: WorkerCommand) -> Self {
        let workers = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
        IsolationConfig {
            worker,
            workers,
            document_timeout: Duration::from_secs(60),
            file_timeout: Duration::from_secs(600),
            file_wall_timeout: Duration::from_secs(3600),
            max_reply_bytes: 1 << 30,
            memory_limit_bytes: 3 << 30,
            options: ParseOptions::default(),
            include_documents: true,
            stop: Arc::new(AtomicBool::new(false)),
            ocr_permits: Arc::new(OcrPermits::new(OcrPermits::default_limit(workers))),
        }
    }
}

/// A request from supervisor to worker.
#[derive(Debug, Serialize, Deserialize)]
enum Request {
    /// Parse one file: answered by `Event`s and `End`.
    File { file: InputFile, options: ParseOptions, include_documents: bool },
    /// Reduce a web page's HTML to readable text ([`crate::readable_text`]): answered by `Page`.
    Page { html: String, url: String },
    /// The answer to `OcrWanted`: the worker may load the OCR models now.
    OcrGranted,
}

/// A line from worker to supervisor.
#[derive(Debug, Serialize, Deserialize)]
enum Reply {
    Event(ParseEvent),
    End,
    Page {
        title: String,
        text: String,
    },
    /// The worker is about to load the OCR models for the file it reads and waits for `OcrGranted`.
    OcrWanted,
}

/// The worker's main loop: caps the address space at its size at start-up plus `memory_limit_bytes`
/// (0 = no cap), then answers requests from stdin until it closes. The cap is counted from the start-up
/// size because that depends on the executable (the `quarry` binary maps LanceDB and more, several
/// hundred MiB of address space in a debug build), not on the document. Parsing runs on a thread with a 64 MiB stack, because PDF and XML
/// parsers recurse deeply on hostile input.
///
/// Errors: the memory cap cannot be set (e.g. it is above the hard limit the worker was started with;
/// the worker then parses nothing, so no file is read without its cap), or stdin/stdout failures (the
/// supervisor went away).
pub fn run_worker(memory_limit_bytes: u64) -> std::io::Result<()> {
    // Not dumpable: no core file of a document's text, and another worker of the same user cannot open
    // this one's /proc/<pid>/mem or environ (exec reset the flag the supervisor could have set).
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with integer arguments only.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
    if memory_limit_bytes > 0 {
        let cap = address_space_bytes().unwrap_or(0).saturating_add(memory_limit_bytes);
        rlimit::setrlimit(rlimit::Resource::AS, cap, cap).map_err(|e| {
            std::io::Error::other(format!(
                "cannot cap the parser's address space at {} MiB ({} MiB for documents): {e}",
                cap >> 20,
                memory_limit_bytes >> 20
            ))
        })?;
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
    quarry_core::proc_kib("/proc/self/status", "VmSize:").map(|kib| kib << 10)
}

fn worker_loop() -> std::io::Result<()> {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    // OCR waits for its supervisor's permit (`OcrPermits`): one line out, one line back, on this thread.
    crate::ocr::set_before_load(Box::new(|| {
        let refused = |e: &dyn std::fmt::Display| format!("no permit to read by OCR from the parse supervisor: {e}");
        write_line(&mut std::io::stdout().lock(), &Reply::OcrWanted).map_err(|e| refused(&e))?;
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) => Err(refused(&"it went away")),
            Ok(_) => match serde_json::from_str::<Request>(&line) {
                Ok(Request::OcrGranted) => Ok(()),
                _ => Err(refused(&"it answered something else")),
            },
            Err(e) => Err(refused(&e)),
        }
    }));
    loop {
        // One line at a time, the lock let go in between: the OCR hook above reads its answer too.
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        let request: Request = serde_json::from_str(&line).map_err(std::io::Error::other)?;
        let mut out = stdout.lock();
        let (file, options, include) = match request {
            Request::File { file, options, include_documents } => (file, options, include_documents),
            Request::Page { html, url } => {
                let (title, text) = crate::readable_text(&html, Some(&url));
                write_line(&mut out, &Reply::Page { title, text })?;
                continue;
            }
            // Not asked for: nothing to do.
            Request::OcrGranted => continue,
        };
        let mut io_error = None;
        parse_file(&file.path, &file.display, &options, &mut |mut event| {
            if !include {
                if let ParseEvent::Finished(outcome) = &mut event {
                    outcome.document = None;
                }
            }
            if io_error.is_none() {
                io_error = write_line(&mut out, &Reply::Event(event)).err();
            }
        });
        // A scan's OCR memory is not kept for the files after it.
        crate::ocr::release_engine();
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
    let sandbox = batch_sandbox(config, inputs.iter().map(|input| input.path.as_path()));
    let sandbox = &sandbox;
    std::thread::scope(|scope| {
        for _ in 0..config.workers.max(1).min(inputs.len().max(1)) {
            let queue = Arc::clone(&queue);
            let sender = sender.clone();
            scope.spawn(move || {
                let mut supervisor =
                    Supervisor { config, sandbox, worker: None, ocr_permit: false, reply_cap: config.max_reply_bytes };
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

/// The file sandbox for workers that read `inputs`: they may read those, the model folders
/// (`quarry_core::models::model_search_dirs`) and the files `config.options` names (PDFium, the OCR
/// models and ONNX Runtime). Errors: as [`FileSandbox::new`], as text for the rows of the batch.
fn batch_sandbox<'a>(
    config: &IsolationConfig,
    inputs: impl Iterator<Item = &'a std::path::Path>,
) -> Result<FileSandbox, String> {
    let options = &config.options;
    let mut reads = quarry_core::models::model_search_dirs();
    reads.extend(options.pdfium_library.iter().cloned());
    if let Some(models) = &options.ocr_models {
        reads
            .extend([&models.onnx_runtime, &models.detector, &models.recogniser, &models.classifier].map(Clone::clone));
    }
    reads.extend(inputs.map(std::path::Path::to_path_buf));
    FileSandbox::new(&config.worker.program, reads.iter().map(PathBuf::as_path))
}

/// How often a supervisor waiting for its worker looks at [`IsolationConfig::stop`]: a stopped run ends the
/// files being read within this (plus killing the worker), not when they finish.
const STOP_POLL: Duration = Duration::from_millis(200);

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
    lines: Receiver<WorkerLine>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    /// The longest reply line its stdout reader accepts now, in bytes ([`reply_cap`] of the input it
    /// reads), read again as a line grows.
    reply_cap: Arc<AtomicU64>,
}

/// Fewest bytes a reply line may hold whatever the input's size: a small picture's OCR text, an e-mail
/// with its headers, a page's events.
pub const MIN_REPLY_BYTES: u64 = 64 << 20;

/// Reply bytes allowed per byte of input: a parsed document's JSON is its text (escaped: at most six
/// bytes a character, rarely more than one) plus its locations. Compressed inputs give more text than
/// they weigh — an office file's XML or a PDF's Flate streams 10–100×, and the archive guard refuses
/// members above 200:1 — so the factor leaves room for a dense spreadsheet while a 1 KiB file can
/// never make the supervisor hold a gigabyte.
pub const REPLY_BYTES_PER_INPUT_BYTE: u64 = 64;

/// The longest reply line a worker reading an input of `input_bytes` may send, in bytes:
/// `input_bytes` × [`REPLY_BYTES_PER_INPUT_BYTE`], at least [`MIN_REPLY_BYTES`], at most `max_reply_bytes`
/// (`IsolationConfig::max_reply_bytes`). With two workers the supervisor holds at most twice that.
pub fn reply_cap(input_bytes: u64, max_reply_bytes: u64) -> u64 {
    input_bytes.saturating_mul(REPLY_BYTES_PER_INPUT_BYTE).max(MIN_REPLY_BYTES).min(max_reply_bytes)
}

/// `bytes` as the too-large message writes it: `64 MiB`, or `1000 bytes` below a MiB.
fn size_text(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// What the stdout reader hands the supervisor.
enum WorkerLine {
    Line(String),
    /// A line longer than `max_reply_bytes`; nothing more is read from this worker.
    Overlong,
}

/// Bytes of a reply line read at a time before the cap is looked at again.
const REPLY_PIECE_BYTES: u64 = 64 << 10;

/// Reads `source` line by line into `lines`, never holding more than `max_bytes` (read again every
/// [`REPLY_PIECE_BYTES`], so a cap lowered for the next file applies to a line already begun) and one
/// piece of one line: a longer line is reported as [`WorkerLine::Overlong`] and reading stops.
fn read_bounded_lines(source: impl std::io::Read, max_bytes: &AtomicU64, lines: mpsc::Sender<WorkerLine>) {
    use std::io::Read;
    let mut reader = BufReader::new(source);
    loop {
        let mut line = Vec::new();
        let ended = loop {
            match (&mut reader).take(REPLY_PIECE_BYTES).read_until(b'\n', &mut line) {
                Ok(0) | Err(_) if line.is_empty() => return,
                Ok(0) | Err(_) => break false,
                Ok(_) => {}
            }
            let ended = line.last() == Some(&b'\n');
            if ended {
                line.pop();
            }
            // Checked after every piece, so a line that ends at EOF was checked with its last piece.
            if line.len() as u64 > max_bytes.load(Ordering::Relaxed) {
                let _ = lines.send(WorkerLine::Overlong);
                return;
            }
            if ended {
                break true;
            }
        };
        if lines.send(WorkerLine::Line(String::from_utf8_lossy(&line).into_owned())).is_err() || !ended {
            return;
        }
    }
}

struct Supervisor<'a> {
    config: &'a IsolationConfig,
    /// The reply cap of the input being read ([`reply_cap`]); a worker started for it starts with it.
    reply_cap: u64,
    /// The file sandbox every worker it starts runs in; a batch whose sandbox could not be built starts
    /// no worker (its rows say why).
    sandbox: &'a Result<FileSandbox, String>,
    worker: Option<Worker>,
    /// Whether its worker holds one of `config.ocr_permits` (until the end of the file it reads).
    ocr_permit: bool,
}

impl Supervisor<'_> {
    fn spawn(&self) -> std::io::Result<Worker> {
        let sandbox = self.sandbox.as_ref().map_err(|e| std::io::Error::other(e.clone()))?;
        let mut command = Command::new(&self.config.worker.program);
        command.args(&self.config.worker.args).env_clear();
        for name in WORKER_ENVIRONMENT {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        command.env("TMPDIR", sandbox.scratch());
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::process::CommandExt;
            let filter = crate::sandbox::worker_filter().map_err(std::io::Error::other)?;
            let ruleset = sandbox.ruleset_fd();
            let proc_guard = sandbox.proc_guard().to_vec();
            // SAFETY: the hook runs in the forked child before exec; it only makes the prctl, Landlock and
            // seccomp system calls and allocates nothing (see `sandbox::restrict_to`, `sandbox::install`).
            unsafe {
                command.pre_exec(move || {
                    if let Some(ruleset) = ruleset {
                        crate::sandbox::restrict_to(ruleset, &proc_guard)?;
                    }
                    crate::sandbox::install(filter)
                });
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
        let reply_cap = Arc::new(AtomicU64::new(self.reply_cap));
        let cap = Arc::clone(&reply_cap);
        std::thread::spawn(move || read_bounded_lines(stdout, &cap, line_sender));
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let tail = Arc::clone(&stderr_tail);
        std::thread::spawn(move || {
            // The last 8 lines, each cut into pieces of at most 4 KiB, so a flood of stderr costs nothing.
            use std::io::Read;
            let mut reader = BufReader::new(stderr);
            loop {
                let mut piece = Vec::new();
                match (&mut reader).take(4096).read_until(b'\n', &mut piece) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let line = String::from_utf8_lossy(&piece).trim_end_matches('\n').to_string();
                if let Ok(mut tail) = tail.lock() {
                    if tail.len() == 8 {
                        tail.pop_front();
                    }
                    tail.push_back(line);
                }
            }
        });
        Ok(Worker { child, stdin, lines, stderr_tail, reply_cap })
    }

    /// Parses one file, emitting every outcome, whatever happens to the worker; an OCR permit its worker
    /// took for the file is returned when the file is done, or the worker dead.
    fn parse(&mut self, file: &InputFile, emit: &mut dyn FnMut(FileOutcome)) {
        self.parse_file(file, emit);
        self.return_ocr_permit();
    }

    fn return_ocr_permit(&mut self) {
        if std::mem::take(&mut self.ocr_permit) {
            self.config.ocr_permits.release();
        }
    }

    /// Sets the reply cap for an input of `input_bytes`, on the worker too when there is one.
    fn cap_replies(&mut self, input_bytes: u64) {
        self.reply_cap = reply_cap(input_bytes, self.config.max_reply_bytes);
        if let Some(worker) = &self.worker {
            worker.reply_cap.store(self.reply_cap, Ordering::Relaxed);
        }
    }

    fn parse_file(&mut self, file: &InputFile, emit: &mut dyn FnMut(FileOutcome)) {
        let input_bytes = std::fs::metadata(&file.path).map(|m| m.len()).unwrap_or(0);
        self.cap_replies(input_bytes);
        let request = Request::File {
            file: file.clone(),
            options: self.config.options.clone(),
            include_documents: self.config.include_documents,
        };
        if let Err(error) = self.send(&request) {
            return emit(failed(&file.display, error));
        }
        // Paths started but not yet finished, innermost last (a ZIP member sits above its archive).
        let mut open: Vec<String> = Vec::new();
        let started = Instant::now();
        // No progress extends a file past this (moved on by the time spent waiting for an OCR permit).
        let mut wall = started + self.config.file_wall_timeout.max(self.config.file_timeout);
        let mut deadline = (started + self.config.file_timeout).min(wall);
        let mut line_deadline = started + self.config.document_timeout;
        // The worker's CPU time at its last reply line and at the last look: the document budget counts
        // the CPU time a worker gets, so a machine too busy to run it does not fail its file
        // ([`starved_extension`]).
        let pid = self.worker.as_ref().map(|w| w.child.id());
        let mut cpu_at_line = pid.and_then(cpu_time);
        let mut cpu_at_look = cpu_at_line;
        loop {
            let Some(worker) = self.worker.as_mut() else { return };
            let whole_file_budget = deadline <= line_deadline;
            let at_the_wall = deadline >= wall;
            let until = deadline.min(line_deadline);
            // Woken at least every STOP_POLL to see whether the run was stopped (Cancel, Ctrl-C).
            let wait = until.saturating_duration_since(Instant::now()).min(STOP_POLL);
            let received = worker.lines.recv_timeout(wait);
            if received.is_ok() {
                line_deadline = Instant::now() + self.config.document_timeout;
                cpu_at_line = pid.and_then(cpu_time);
                cpu_at_look = cpu_at_line;
            }
            match received {
                Ok(WorkerLine::Overlong) => {
                    self.kill();
                    let error = IngestError::TooLarge(format!(
                        "the parser's output for one document is over {} (the limit for a file of {})",
                        size_text(self.reply_cap),
                        size_text(input_bytes)
                    ));
                    return report_unfinished(open, &file.display, error, emit);
                }
                Ok(WorkerLine::Line(line)) => match serde_json::from_str::<Reply>(&line) {
                    Ok(Reply::Event(ParseEvent::Started { path })) => open.push(path),
                    // A long reading (OCR) that moves on gets one more document timeout each step, past
                    // the whole file's budget if need be: it is slow, not stuck.
                    Ok(Reply::Event(ParseEvent::Progress { .. })) => {
                        deadline = deadline.max(Instant::now() + self.config.document_timeout).min(wall);
                    }
                    Ok(Reply::Event(ParseEvent::Finished(outcome))) => {
                        open.retain(|p| p != &outcome.path);
                        emit(*outcome);
                    }
                    Ok(Reply::End) => return,
                    // The worker waits (no timeout runs meanwhile) until fewer workers read by OCR than
                    // the limit; then it has its full budgets again.
                    Ok(Reply::OcrWanted) => {
                        if !self.ocr_permit {
                            let waiting = Instant::now();
                            self.config.ocr_permits.acquire();
                            self.ocr_permit = true;
                            wall += waiting.elapsed();
                        }
                        deadline = deadline.max(Instant::now() + self.config.document_timeout).min(wall);
                        line_deadline = Instant::now() + self.config.document_timeout;
                        let granted = serde_json::to_string(&Request::OcrGranted).unwrap_or_default();
                        let Some(worker) = self.worker.as_mut() else { return };
                        if writeln!(worker.stdin, "{granted}").and_then(|_| worker.stdin.flush()).is_err() {
                            let error = self.death_reason();
                            self.kill();
                            return report_unfinished(open, &file.display, error, emit);
                        }
                    }
                    // Stray output (a library printing to stdout): not ours, skip it.
                    Ok(Reply::Page { .. }) | Err(_) => {}
                },
                Err(RecvTimeoutError::Timeout) if self.config.stop.load(Ordering::Relaxed) => {
                    // Stopped in the middle: the file gets no row (as a file not started), so the next
                    // run reads it again; members already finished keep theirs.
                    self.kill();
                    return;
                }
                Err(RecvTimeoutError::Timeout) if Instant::now() < until => {}
                Err(RecvTimeoutError::Timeout) => {
                    // Past the document budget in wall-clock time: a worker the machine starved (it ran,
                    // but got less CPU time than its budget) is given the CPU time it has left.
                    let now_cpu = pid.and_then(cpu_time);
                    let extension = match (whole_file_budget, cpu_at_line, cpu_at_look, now_cpu) {
                        (false, Some(at_line), Some(at_look), Some(now)) => starved_extension(
                            now.saturating_sub(at_line),
                            now.saturating_sub(at_look),
                            self.config.document_timeout,
                        ),
                        _ => None,
                    };
                    if let Some(extra) = extension {
                        cpu_at_look = now_cpu;
                        line_deadline = Instant::now() + extra;
                        deadline = deadline.max(line_deadline).min(wall);
                        continue;
                    }
                    self.kill();
                    let budget = if at_the_wall && whole_file_budget {
                        self.config.file_wall_timeout.max(self.config.file_timeout)
                    } else if whole_file_budget {
                        self.config.file_timeout
                    } else {
                        self.config.document_timeout
                    };
                    let error = IngestError::Timeout(budget.as_millis() as u64);
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

    /// Sends `request` to the worker, starting one when none runs. A worker that died between files shows
    /// up as a broken pipe: a new one is started and the request sent once more. Errors: no worker can
    /// be started, or it refuses work (its last words say why, e.g. it could not set its memory cap).
    fn send(&mut self, request: &Request) -> Result<(), IngestError> {
        let line = serde_json::to_string(request).map_err(|e| IngestError::Io(e.to_string()))?;
        let mut refusal = None;
        for _ in 0..2 {
            if self.worker.is_none() {
                let worker =
                    self.spawn().map_err(|e| IngestError::Crashed(format!("cannot start parser worker: {e}")))?;
                self.worker = Some(worker);
            }
            let Some(worker) = self.worker.as_mut() else { break };
            if writeln!(worker.stdin, "{line}").and_then(|_| worker.stdin.flush()).is_ok() {
                return Ok(());
            }
            refusal = Some(self.death_reason());
            self.kill();
        }
        Err(refusal.unwrap_or_else(|| IngestError::Crashed("parser worker does not accept work".into())))
    }

    /// Reduces a web page to (title, readable text) in the worker, waiting at most `document_timeout`.
    /// Errors: as [`PageReader::read`].
    fn read_page(&mut self, html: &str, url: &str) -> Result<(String, String), IngestError> {
        self.cap_replies(html.len() as u64);
        self.send(&Request::Page { html: html.to_string(), url: url.to_string() })?;
        loop {
            let Some(worker) = self.worker.as_mut() else {
                return Err(IngestError::Crashed("worker gone".into()));
            };
            match worker.lines.recv_timeout(self.config.document_timeout) {
                Ok(WorkerLine::Line(line)) => {
                    if let Ok(Reply::Page { title, text }) = serde_json::from_str::<Reply>(&line) {
                        return Ok((title, text));
                    } // Anything else is stray output.
                }
                Ok(WorkerLine::Overlong) => {
                    self.kill();
                    return Err(IngestError::TooLarge(format!(
                        "the reader's output is over {}",
                        size_text(self.reply_cap)
                    )));
                }
                Err(RecvTimeoutError::Timeout) => {
                    self.kill();
                    return Err(IngestError::Timeout(self.config.document_timeout.as_millis() as u64));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let error = self.death_reason();
                    self.kill();
                    return Err(error);
                }
            }
        }
    }

    /// Why the worker died: the memory cap (allocation failure) or anything else.
    fn death_reason(&mut self) -> IngestError {
        let Some(worker) = self.worker.as_mut() else { return IngestError::Crashed("worker gone".into()) };
        // A worker that closed its pipes but lives on is given a second to exit, then killed: waiting
        // for it would hang the batch.
        let mut status = None;
        for _ in 0..20 {
            match worker.child.try_wait() {
                Ok(Some(exited)) => {
                    status = Some(exited);
                    break;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(50)),
                Err(_) => break,
            }
        }
        if status.is_none() {
            let _ = worker.child.kill();
            status = worker.child.wait().ok();
        }
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
        self.return_ocr_permit();
    }

    fn stop(&mut self) {
        if let Some(mut worker) = self.worker.take() {
            drop(worker.stdin); // EOF: the worker's loop ends.
            let _ = worker.child.wait();
        }
    }
}

/// Web pages reduced to readable text in a parse worker, under the same guard as documents (cleared
/// environment, no sockets, memory cap, time budget): HTML from the web is hostile input, and a parser
/// that overflows its stack on a deeply nested page then costs one page, not the app. One worker is kept
/// between pages and started again after a failure; pages are read one at a time.
pub struct PageReader {
    config: IsolationConfig,
    /// Reads no file but the system's and the models': a page arrives over stdin.
    sandbox: Result<FileSandbox, String>,
    worker: Mutex<Option<Worker>>,
}

impl PageReader {
    /// A reader whose worker is `config.worker`, with `config`'s memory cap, reply cap and
    /// `document_timeout` (the longest one page may take).
    pub fn new(config: IsolationConfig) -> Self {
        let sandbox = batch_sandbox(&config, std::iter::empty());
        PageReader { config, sandbox, worker: Mutex::new(None) }
    }

    /// (title, readable text) of `html`, the page at `url` ([`crate::readable_text`] in the worker).
    /// Errors: the worker cannot start, crashes (`Crashed`, `TooLarge` at the memory cap), takes longer
    /// than `document_timeout` (`Timeout`) or replies more than `max_reply_bytes` (`TooLarge`).
    pub fn read(&self, html: &str, url: &str) -> Result<(String, String), IngestError> {
        let mut kept = self.worker.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut supervisor = Supervisor {
            config: &self.config,
            sandbox: &self.sandbox,
            worker: kept.take(),
            ocr_permit: false,
            reply_cap: self.config.max_reply_bytes,
        };
        let result = supervisor.read_page(html, url);
        *kept = supervisor.worker.take();
        result
    }
}

impl Drop for PageReader {
    fn drop(&mut self) {
        let worker = self.worker.get_mut().map(Option::take).unwrap_or_else(|poisoned| poisoned.into_inner().take());
        drop(Supervisor {
            config: &self.config,
            sandbox: &self.sandbox,
            worker,
            ocr_permit: false,
            reply_cap: self.config.max_reply_bytes,
        });
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
