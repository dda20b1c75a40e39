//! End-to-end tests of the desktop app: the real `quarry-app` binary, in a real WebKitGTK window under
//! Xvfb, driven through tauri-driver + WebKitWebDriver like a person would — real files from
//! ../shared/eval, the real embedding model and the embedded SmolLM2 GGUF.
//!
//! Needs (installed by scripts/setup.sh): `xvfb-run`, `/usr/bin/WebKitWebDriver` (webkit2gtk-driver),
//! `tauri-driver` (in `~/.cache/quarry/tools/bin`, or `QUARRY_TAURI_DRIVER`), the model files, and ui/dist
//! (built by setup.sh; the binary embeds it). Screenshots of each main screen are saved in
//! `$CARGO_TARGET_TMPDIR/app-screenshots/`.
#![allow(clippy::unwrap_used)] // tests: a failed unwrap is the test failing

mod deb;
mod webdriver;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use webdriver::Session;

fn eval_dir() -> PathBuf {
    let dir = std::env::var_os("QUARRY_EVAL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/eval"));
    assert!(
        dir.join("C_private_library").is_dir(),
        "no evaluation documents at {} (set QUARRY_EVAL_DIR)",
        dir.display()
    );
    dir
}

fn tauri_driver() -> PathBuf {
    let path = std::env::var_os("QUARRY_TAURI_DRIVER").map(PathBuf::from).unwrap_or_else(|| {
        let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
        home.join(".cache/quarry/tools/bin/tauri-driver")
    });
    assert!(path.is_file(), "tauri-driver not found at {} (run scripts/setup.sh)", path.display());
    path
}

/// llama.cpp's server (the `xllamacpp` wheel, scripts/llm-server.py) serving SmolLM2 as `smollm2` on a
/// loopback port: a local LLM server for Settings to find. Killed on drop.
struct LlmServer {
    child: Child,
    url: String,
    port: String,
}

impl LlmServer {
    fn start() -> LlmServer {
        use std::io::BufRead;
        let python = std::env::var("QUARRY_PYTHON")
            .unwrap_or_else(|_| format!("{}/.cache/quarry/venv/bin/python", std::env::var("HOME").unwrap_or_default()));
        let model = quarry_core::models::find_model_file(quarry_gguf::LOW_MEMORY_MODEL_FILE).unwrap();
        let mut child = Command::new(&python)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/llm-server.py"))
            .args(["--model", model.to_str().unwrap(), "--threads", "2", "--alias", "smollm2"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{python}: {e} (scripts/setup.sh installs xllamacpp there)"));
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url = line.trim().strip_prefix("listening ").unwrap_or_else(|| panic!("no server: {line:?}")).to_string();
        let port = url.trim_end_matches("/v1").rsplit(':').next().unwrap().to_string();
        LlmServer { child, url, port }
    }
}

impl Drop for LlmServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// tauri-driver on a free port under its own Xvfb display; killed (with the display) on drop. What the
/// driver, the display and the app write to stderr goes to `log`, printed when the test fails: a helper
/// they start that outlives the process group (a session bus GTK launches) then holds no pipe of the
/// test's, which nextest flagged as a leaky test.
struct Driver {
    child: Child,
    url: String,
    log: tempfile::NamedTempFile,
}

impl Driver {
    /// `env` is set and `remove` taken out of the environment of the driver and the app it starts.
    fn start(env: &[(&str, &Path)], remove: &[&str]) -> Driver {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let native_port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let log = tempfile::NamedTempFile::new().expect("a log file for the driver");
        let mut command = Command::new("xvfb-run");
        command
            .args(["-a", "-s", "-screen 0 1280x860x24"])
            .arg(tauri_driver())
            .args([
                "--port",
                &port.to_string(),
                "--native-port",
                &native_port.to_string(),
                "--native-driver",
                "/usr/bin/WebKitWebDriver",
            ])
            .stdout(Stdio::null())
            .stderr(log.reopen().expect("the driver's log file"))
            // A new process group, so the whole tree (Xvfb, drivers, app) is killed together.
            .process_group(0);
        // The app answers with SmolLM2-135M unless a test says otherwise: the default model,
        // Qwen2.5-Coder-1.5B, takes a minute or so an answer on 2 cores, and these tests check the app
        // around the answer, not its wording. (The .deb test removes this to run what the package carries.)
        if let Ok(small) = quarry_core::models::find_model_file(quarry_gguf::LOW_MEMORY_MODEL_FILE) {
            command.env("QUARRY_LLM_MODEL_FILE", small);
        }
        for (name, value) in env {
            command.env(name, value);
        }
        for name in remove {
            command.env_remove(name);
        }
        let child = command.spawn().expect("starting xvfb-run tauri-driver");
        let url = format!("http://127.0.0.1:{port}");
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Driver { child, url, log }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // The whole process group: xvfb-run, Xvfb, tauri-driver, WebKitWebDriver and the app.
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-TERM", "--", &group]).status();
        std::thread::sleep(Duration::from_millis(500));
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let log = std::fs::read_to_string(self.log.path()).unwrap_or_default();
            eprintln!("driver, display and app stderr:\n{log}");
        }
    }
}

use std::os::unix::process::CommandExt;

async fn open_app(driver: &Driver) -> Session {
    open_app_at(driver, Path::new(env!("CARGO_BIN_EXE_quarry-app"))).await
}

/// Starts the app binary at `binary` through the driver and waits for its window.
async fn open_app_at(driver: &Driver, binary: &Path) -> Session {
    let session =
        Session::start(&driver.url, binary.to_str().unwrap()).await.expect("starting the app through tauri-driver");
    session
        .wait_until("return document.body.dataset.ready === 'true'", Duration::from_secs(60))
        .await
        .expect("the app shows its window");
    session
}

const MINUTE: Duration = Duration::from_secs(60);

/// The tests of this binary run one app at a time: two windows each running a model on 2 cores would
/// only make both slow. An async lock, held across the test's awaits (tokio's is not poisoned: after a
/// failed test the next one goes on).
async fn one_app_at_a_time() -> tokio::sync::MutexGuard<'static, ()> {
    static APP: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    APP.lock().await
}

/// Every command rejects with `{code, message}` (`commands::Failure`): the front end shows the message and
/// acts on the code (`ui/src/dom.ts`, `errorText`), never on the message's wording.
#[test]
fn a_command_failure_reaches_the_front_end_as_a_code_and_a_message() {
    use quarry_app_lib::commands::Failure;
    let busy = "library \"a\" is being changed by another Quarry process (pid 7); wait for it to finish";
    let failure = Failure::from(quarry_store::StoreError::Busy(busy.into()));
    assert_eq!(serde_json::to_value(&failure).unwrap(), serde_json::json!({"code": "library_busy", "message": busy}));
    let full = quarry_store::StoreError::io("/data/lance", std::io::Error::from_raw_os_error(28));
    assert_eq!(serde_json::to_value(Failure::from(full)).unwrap()["code"], "disk_full");
    // Through anyhow (what quarry_session returns), the code of the cause survives its context.
    let missing = anyhow::Error::new(quarry_core::ChatError::ModelFile("/m/x.gguf: no such model file".into()))
        .context("loading the language model");
    let failure = serde_json::to_value(Failure::from(missing)).unwrap();
    assert_eq!(failure["code"], "model_missing");
    assert_eq!(failure["message"], "loading the language model: /m/x.gguf: no such model file");
}

/// The fields of `export interface {name} { … }` in `ui/src/api.ts`, in order.
fn ts_interface_fields(source: &str, name: &str) -> Vec<String> {
    let start = source.find(&format!("export interface {name} {{")).unwrap_or_else(|| panic!("no interface {name}"));
    let body = &source[start..];
    let body = &body[body.find('{').unwrap() + 1..body.find("\n}").unwrap()];
    body.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("/**") && !l.starts_with('*') && l.contains(':'))
        .map(|l| l.split(':').next().unwrap().trim_end_matches('?').trim().to_string())
        .collect()
}

/// The members of `export type {name} = | { event: "…"; field: type; … } | …` in `ui/src/api.ts`: each
/// event name with its other fields (a `& Interface` member lists that interface's fields).
fn ts_event_union(source: &str, name: &str) -> Vec<(String, Vec<String>)> {
    let start = source.find(&format!("export type {name} =")).unwrap_or_else(|| panic!("no type {name}"));
    let body = &source[start..];
    let body = &body[..body.find(";\n").unwrap()];
    body.lines()
        .filter_map(|line| line.trim().strip_prefix("| "))
        .map(|member| {
            // The member's own `{ … }`, split at its top-level `;` (a field's type may be an object).
            let open = member.find('{').unwrap();
            let (mut depth, mut parts, mut start, mut close) = (0, Vec::new(), open + 1, member.len());
            for (i, c) in member.char_indices().skip_while(|(i, _)| *i < open) {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 1 => {
                        parts.push(&member[start..i]);
                        close = i;
                        break;
                    }
                    '}' => depth -= 1,
                    ';' if depth == 1 => {
                        parts.push(&member[start..i]);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            let member = &member[close..];
            let mut event = String::new();
            let mut fields = Vec::new();
            for part in parts.into_iter().map(str::trim).filter(|p| !p.is_empty()) {
                let (field, value) = part.split_once(':').unwrap();
                match field.trim() {
                    "event" => event = value.trim().trim_matches('"').to_string(),
                    other => fields.push(other.trim_end_matches('?').to_string()),
                }
            }
            if let Some(interface) = member.split("& ").nth(1) {
                fields.extend(ts_interface_fields(source, interface.trim_end_matches(')').trim()));
            }
            (event, fields)
        })
        .collect()
}

/// The front end's types in `ui/src/api.ts` are checked against what the backend sends: every ingest
/// and agent event the Rust side emits is a member of the TypeScript union with exactly its fields, and
/// every field the TypeScript `IngestSummary`, `LibraryView` and `Failure` read is one the backend
/// writes. (Adding an `IngestEvent` or `AgentEvent` variant fails to compile here until it is listed.)
#[test]
fn the_front_ends_event_and_view_types_match_what_the_backend_sends() {
    use quarry_store::{IngestEvent, IngestSummary};
    let source = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ui/src/api.ts")).unwrap();
    let s = String::new;
    let events = [
        IngestEvent::Scanned { files: 1, to_read: 1, unchanged: 0, reread: 0 },
        IngestEvent::Unreadable { path: s(), error: s() },
        IngestEvent::Read { path: s(), format: s(), pages: None, chunks: 0 },
        IngestEvent::Skipped { path: s(), reason: s() },
        IngestEvent::Failed { path: s(), status: s(), error: s() },
        IngestEvent::Moved { from: s(), to: s() },
        IngestEvent::KeywordIndexed { documents: 0, chunks: 0 },
        IngestEvent::KeywordReady { documents: 0, waiting_chunks: 0, seconds: 0.0 },
        IngestEvent::Indexed { documents: 0, chunks: 0 },
        IngestEvent::Embedding { done: 0, known: 0 },
        IngestEvent::FileDone { path: s() },
        IngestEvent::Removed { path: s() },
        IngestEvent::Phase { phase: quarry_store::IngestPhase::Optimize },
        IngestEvent::ModelChosen { model_id: s(), cjk_share: 0.0, sampled_chars: 0 },
        IngestEvent::Finished(IngestSummary::default()),
    ];
    // Exhaustive: a new variant must be added to `events` above (and to the TypeScript union).
    for event in &events {
        match event {
            IngestEvent::Phase { .. }
            | IngestEvent::Scanned { .. }
            | IngestEvent::Unreadable { .. }
            | IngestEvent::Read { .. }
            | IngestEvent::Skipped { .. }
            | IngestEvent::Failed { .. }
            | IngestEvent::Moved { .. }
            | IngestEvent::KeywordIndexed { .. }
            | IngestEvent::KeywordReady { .. }
            | IngestEvent::Indexed { .. }
            | IngestEvent::Embedding { .. }
            | IngestEvent::FileDone { .. }
            | IngestEvent::Removed { .. }
            | IngestEvent::ModelChosen { .. }
            | IngestEvent::Finished(_) => {}
        }
    }
    let union = ts_event_union(&source, "IngestEvent");
    for event in &events {
        let json = serde_json::to_value(event).unwrap();
        let name = json["event"].as_str().unwrap();
        let mut sent: Vec<&String> = json.as_object().unwrap().keys().filter(|k| *k != "event").collect();
        let (_, declared) = union.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("api.ts lacks {name:?}"));
        if name == "finished" {
            // The summary: the UI reads a subset of what is sent, never a field that is not.
            for field in declared {
                assert!(sent.contains(&field), "api.ts reads finished.{field}, which the backend does not send");
            }
        } else {
            let mut declared: Vec<&String> = declared.iter().collect();
            sent.sort();
            declared.sort();
            assert_eq!(sent, declared, "fields of the {name:?} event");
        }
    }
    // The app's own `error` event (commands.rs) is in the union too.
    assert!(union.iter().any(|(n, f)| n == "error" && f.contains(&"code".to_string())), "{union:?}");

    // The agent events, the same way (an exhaustive match again).
    use quarry_agents::{AgentEvent, PassageRef};
    let usage = quarry_core::TokenUsage::default();
    let refs = || vec![PassageRef { library: s(), chunk_id: 1, citation: s() }];
    let agent_events = [
        AgentEvent::Routed { agent: s(), libraries: vec![], reason: s() },
        AgentEvent::Started { agent: s(), question: s() },
        AgentEvent::Queries { round: 1, queries: vec![] },
        AgentEvent::Retrieved { round: 1, query: s(), hits: 0, new: 0 },
        AgentEvent::Judged { round: 1, kept: refs(), rejected: refs() },
        AgentEvent::Reflected { round: 1, facts: vec![], queries: vec![] },
        AgentEvent::Ordered { query: s(), kept: 0 },
        AgentEvent::IntermediateAnswer { round: 1, query: s(), answer: s(), supporting: refs() },
        AgentEvent::Stopped { round: 1, reason: s() },
        AgentEvent::Degraded { step: s(), problem: s(), fallback: s() },
        AgentEvent::LlmCall { step: s(), prompt_tokens: 0, completion_tokens: 0, seconds: 0.0 },
        AgentEvent::Section { index: 0, count: 1, title: s(), stage: s() },
        AgentEvent::AnswerDelta { text: s() },
        AgentEvent::WebQuery { source: s(), query: s(), sent: false },
        AgentEvent::Finished { llm_calls: 0, usage, seconds: 0.0 },
    ];
    for event in &agent_events {
        match event {
            AgentEvent::Routed { .. }
            | AgentEvent::Started { .. }
            | AgentEvent::Queries { .. }
            | AgentEvent::Retrieved { .. }
            | AgentEvent::Judged { .. }
            | AgentEvent::Reflected { .. }
            | AgentEvent::Ordered { .. }
            | AgentEvent::IntermediateAnswer { .. }
            | AgentEvent::Stopped { .. }
            | AgentEvent::Degraded { .. }
            | AgentEvent::LlmCall { .. }
            | AgentEvent::Section { .. }
            | AgentEvent::AnswerDelta { .. }
            | AgentEvent::WebQuery { .. }
            | AgentEvent::Finished { .. } => {}
        }
    }
    let union = ts_event_union(&source, "AgentEvent");
    for event in &agent_events {
        let json = serde_json::to_value(event).unwrap();
        let name = json["event"].as_str().unwrap();
        let mut sent: Vec<&String> = json.as_object().unwrap().keys().filter(|k| *k != "event").collect();
        let (_, declared) = union.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("api.ts lacks {name:?}"));
        let mut declared: Vec<&String> = declared.iter().collect();
        sent.sort();
        declared.sort();
        assert_eq!(sent, declared, "fields of the {name:?} agent event");
    }
    // The app's own events (src-tauri/src/commands.rs) are members too.
    for own in ["conversation", "web_notice", "web_query_approval", "error"] {
        assert!(union.iter().any(|(n, _)| n == own), "api.ts lacks the app's {own:?} event");
    }

    let view = quarry_app_lib::commands::LibraryView {
        name: s(),
        indexed: 0,
        failed: 0,
        pending: 0,
        keyword_only: 0,
        chunks: 0,
        waiting_chunks: 0,
        waiting_eta_seconds: None,
        failures: Vec::new(),
        ingesting: false,
        error: None,
    };
    let json = serde_json::to_value(&view).unwrap();
    for field in ts_interface_fields(&source, "LibraryView") {
        assert!(json.get(&field).is_some(), "api.ts reads LibraryView.{field}, which the backend does not send");
    }
    let failure =
        serde_json::to_value(quarry_app_lib::commands::Failure::new(quarry_core::ErrorCode::Other, "m")).unwrap();
    for field in ts_interface_fields(&source, "Failure") {
        assert!(failure.get(&field).is_some(), "api.ts reads Failure.{field}, which the backend does not send");
    }
}

/// What a script in the webview can do: emit the event Tauri emits for a drop (`tauri://drag-drop`) with
/// any `paths`, so the front end asks to add them. Only a drop the window system reports to Rust, or a
/// path picked in the file dialog, lets `add_to_library` read a path; this forged one must be refused.
async fn forge_drop(app: &Session, paths: &[String]) {
    forget_last_add(app).await;
    app.script(
        "window.__TAURI_INTERNALS__.invoke('plugin:event|emit_to', {target: {kind: 'AnyLabel', label: 'main'}, event: 'tauri://drag-drop', payload: {paths: arguments[0], position: {x: 400, y: 300}}}); return true;",
        vec![serde_json::json!(paths)],
    )
    .await
    .expect("emitting a drop");
    add_started(app).await;
}

/// Clears what the ingest panel shows of the last add (its title and its "finished" mark), so that a
/// wait for the next add's mark cannot see the last one's.
async fn forget_last_add(app: &Session) {
    app.script(
        "document.getElementById('ingest-title').textContent = ''; delete document.getElementById('ingest-summary').dataset.finished; return true;",
        vec![],
    )
    .await
    .unwrap();
}

/// Waits (up to 10 minutes) until the add under way has finished and the sidebar shows its counts, and
/// returns what the ingest panel says of it ("Done: 4 indexed, 1 failed, …", "Stopped: …" or the error).
async fn finished_add_summary(app: &Session) -> String {
    app.wait_until("return document.getElementById('ingest-summary').dataset.finished === 'true'", 10 * MINUTE)
        .await
        .unwrap();
    app.wait_for("#ingest-summary", MINUTE).await.unwrap().text().await.unwrap()
}

/// Waits until the front end has started an add (the ingest panel's title says so).
async fn add_started(app: &Session) {
    app.wait_until("return document.getElementById('ingest-title').textContent.startsWith('Adding')", MINUTE)
        .await
        .expect("the add started");
}

/// Adds `paths` to the selected library `library` as a person does with "Add files" (`folder` false) or
/// "Add folder": the native picker cannot be clicked through WebDriver, so the file `answers` (the app's
/// `QUARRY_APP_PICKED_PATHS`) holds what it returns.
async fn pick_and_add(app: &Session, answers: &Path, library: &str, paths: &[String], folder: bool) {
    std::fs::write(answers, paths.join("\n")).unwrap();
    forget_last_add(app).await;
    let button =
        format!("li[data-library='{library}'].selected .actions button:nth-child({})", if folder { 2 } else { 1 });
    app.wait_for(&button, MINUTE).await.unwrap().click().await.unwrap();
    add_started(app).await;
}

/// First run → create a library → drop real files on the window → see them indexed → ask a question with
/// the embedded model → a cited answer → a citation opens its panel → export a report and check the file →
/// restart the app and see the conversation again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_time_user_builds_a_library_asks_and_finds_the_conversation_after_a_restart() {
    let _one = one_app_at_a_time().await;
    let eval = eval_dir();
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("data");
    let report = work.path().join("reports/answer.md");
    std::fs::create_dir_all(report.parent().unwrap()).unwrap();
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("app-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let config = work.path().join("config");
    let picked = work.path().join("picked-paths.txt");
    // API keys go to a private GNOME Keyring on a private session bus, never the machine's own.
    let keyring = quarry_secrets::test_session::KeyringSession::start();
    let bus = PathBuf::from(keyring.address());
    // A local LLM server on a port of its own, named to the app in QUARRY_LLM_PORTS, for Settings to find.
    let server = LlmServer::start();
    let server_port = PathBuf::from(&server.port);
    let driver = Driver::start(
        &[
            ("QUARRY_DATA_DIR", &data),
            ("QUARRY_CONFIG_DIR", &config),
            ("QUARRY_APP_SAVE_PATH", &report),
            ("QUARRY_APP_PICKED_PATHS", &picked),
            ("DBUS_SESSION_BUS_ADDRESS", &bus),
            ("QUARRY_LLM_PORTS", &server_port),
        ],
        &[],
    );

    let app = open_app(&driver).await;
    let welcome = app.wait_for("#welcome", MINUTE).await.unwrap().text().await.unwrap();
    assert!(welcome.contains("Create a library"), "{welcome}");
    let formats = app.wait_for("#formats", MINUTE).await.unwrap().text().await.unwrap();
    assert!(formats.contains("pdf") && formats.contains(&data.display().to_string()), "{formats}");
    app.screenshot(&shots.join("1-first-run.png")).await.unwrap();

    // Create a library.
    app.wait_for("#new-library-name", MINUTE).await.unwrap().type_text("private").await.unwrap();
    app.wait_for("#create-library", MINUTE).await.unwrap().click().await.unwrap();
    app.wait_for("li[data-library='private']", 2 * MINUTE).await.unwrap();

    // Add real files (and a broken PDF) with "Add files".
    let docs = eval.join("C_private_library/docs");
    let files: Vec<String> = [
        "en_ntsb-aviation-reports/20080102X00002.pdf",
        "en_ntsb-aviation-reports/20080102X00005.pdf",
        "en_misc_office/handbook-1p.docx",
        "en_misc_office/2023-half-year-analyses-by-segment.xlsx",
    ]
    .iter()
    .map(|f| docs.join(f).display().to_string())
    .collect();
    let broken = work.path().join("broken.pdf");
    std::fs::write(&broken, b"%PDF-1.7\nthis is not a real PDF").unwrap();
    let mut chosen = files.clone();
    chosen.push(broken.display().to_string());
    pick_and_add(&app, &picked, "private", &chosen, false).await;
    let summary = finished_add_summary(&app).await;
    assert!(summary.contains("4 indexed") && summary.contains("1 failed"), "{summary}");
    let failed_row = app.wait_for("#ingest-files .state-failed", MINUTE).await.unwrap().text().await.unwrap();
    assert!(failed_row.contains("broken.pdf"), "{failed_row}");
    let counts = app
        .wait_until("return document.querySelector(\"li[data-library='private'] .counts\").textContent", MINUTE)
        .await
        .unwrap();
    assert!(counts.as_str().unwrap().starts_with("4 documents"), "{counts}");
    app.screenshot(&shots.join("2-library-indexed.png")).await.unwrap();
    app.wait_for("#close-ingest", MINUTE).await.unwrap().click().await.unwrap();
    app.wait_until("return document.getElementById('ingest').hidden", MINUTE).await.unwrap();

    // A script in the webview cannot widen what Quarry reads: a drop it forges, of a file the person
    // never chose, is refused and the library keeps its four documents.
    let not_chosen = work.path().join("not-chosen/notes.txt");
    std::fs::create_dir_all(not_chosen.parent().unwrap()).unwrap();
    std::fs::write(&not_chosen, "Private notes that nobody chose to add.").unwrap();
    forge_drop(&app, &[not_chosen.display().to_string()]).await;
    let refused = finished_add_summary(&app).await;
    assert!(refused.contains("notes.txt") && refused.contains("was not chosen"), "{refused}");
    let counts = app
        .wait_until("return document.querySelector(\"li[data-library='private'] .counts\").textContent", MINUTE)
        .await
        .unwrap();
    assert!(counts.as_str().unwrap().starts_with("4 documents"), "{counts}");
    app.wait_for("#close-ingest", MINUTE).await.unwrap().click().await.unwrap();
    app.wait_until("return document.getElementById('ingest').hidden", MINUTE).await.unwrap();

    // Ask with the embedded model (Naive RAG: one model call, so the test stays short).
    app.script("document.getElementById('agent').value = 'naive'; return true;", vec![]).await.unwrap();
    let question = app.wait_for("#question", MINUTE).await.unwrap();
    question.type_text("What caused the accident of the airplane?").await.unwrap();
    question.type_text("\u{E007}").await.unwrap(); // Enter sends
    app.wait_for(".turn.live", MINUTE).await.unwrap();
    app.wait_until(
        "return !document.querySelector('.turn.live') && document.querySelector('.turn .answer')",
        15 * MINUTE,
    )
    .await
    .unwrap();
    let answer = app.wait_for(".turn .answer", MINUTE).await.unwrap().text().await.unwrap();
    assert!(!answer.trim().is_empty());
    let trace = app.wait_for("details.trace summary", MINUTE).await.unwrap().text().await.unwrap();
    assert!(trace.contains("steps"), "{trace}");
    app.wait_for(".sources .cite", MINUTE).await.unwrap();
    app.screenshot(&shots.join("3-answer.png")).await.unwrap();

    // A citation opens its panel with the quoted passage.
    app.wait_for(".sources .cite", MINUTE).await.unwrap().click().await.unwrap();
    app.wait_until("return !document.getElementById('citation').hidden && document.querySelector('#citation-text mark')?.textContent.length > 20", MINUTE)
        .await
        .unwrap();
    let place = app.wait_for("#citation-place", MINUTE).await.unwrap().text().await.unwrap();
    assert!(place.contains("private"), "{place}");
    let title = app.wait_for("#citation-title", MINUTE).await.unwrap().text().await.unwrap();
    assert!(files.iter().any(|f| title.contains(Path::new(f).file_name().unwrap().to_str().unwrap())), "{title}");
    app.screenshot(&shots.join("4-citation.png")).await.unwrap();

    // Export a report (the save dialog is answered by QUARRY_APP_SAVE_PATH).
    app.wait_for(".turn .export", MINUTE).await.unwrap().click().await.unwrap();
    app.wait_until("return document.querySelector('.turn .exported').textContent.startsWith('Saved')", MINUTE)
        .await
        .unwrap();
    let markdown = std::fs::read_to_string(&report).unwrap();
    for heading in ["## Question", "## Answer", "## Sources", "## Method"] {
        assert!(markdown.contains(heading), "{heading} missing from\n{markdown}");
    }
    let links: Vec<String> = pulldown_cmark::Parser::new(&markdown)
        .filter_map(|e| match e {
            pulldown_cmark::Event::Start(pulldown_cmark::Tag::Link { dest_url, .. }) => Some(dest_url.to_string()),
            _ => None,
        })
        .filter(|l| !l.starts_with('#'))
        .collect();
    assert!(!links.is_empty(), "no file links in\n{markdown}");
    for link in &links {
        let decoded = link.replace("%20", " ");
        let target = report.parent().unwrap().join(decoded.split('#').next().unwrap());
        assert!(target.exists(), "report link {link} does not resolve from {}", report.display());
    }

    // Settings: the zero-configuration defaults, a working "test connection" with the embedded model, an
    // API key into the OS keyring, web search on (a SearXNG address where nothing listens).
    app.wait_for("#open-settings", MINUTE).await.unwrap().click().await.unwrap();
    app.wait_until("return !document.getElementById('settings').hidden", MINUTE).await.unwrap();
    let defaults = app.script("return [document.getElementById('llm-embedded').checked, document.getElementById('network').value, document.getElementById('web-enabled').checked]", vec![]).await.unwrap();
    assert_eq!(defaults, serde_json::json!([true, "offline", false]));
    app.wait_for("#test-connection", MINUTE).await.unwrap().click().await.unwrap();
    let connection = app.wait_until("const t = document.getElementById('connection-result').textContent; return (t.startsWith('OK') || t.includes('rror')) && t", 5 * MINUTE).await.unwrap();
    assert!(connection.as_str().unwrap().starts_with("OK: smollm2"), "{connection}");
    // The LLM server running on this computer is listed (Settings looks when it opens); one click fills
    // the form with it, and the connection test goes through it. Then back to the embedded model.
    let use_server = format!(".use-server[data-url='{}'][data-model='smollm2']", server.url);
    app.wait_for(&use_server, MINUTE).await.unwrap().click().await.unwrap();
    let chosen = app
        .script("return [document.getElementById('llm-server').checked, document.getElementById('llm-url').value, document.getElementById('llm-model').value]", vec![])
        .await
        .unwrap();
    assert_eq!(chosen, serde_json::json!([true, server.url, "smollm2"]));
    let listed = app.wait_for("#servers", MINUTE).await.unwrap().text().await.unwrap();
    assert!(listed.contains("llama.cpp server"), "{listed}");
    app.screenshot(&shots.join("settings-local-server.png")).await.unwrap();
    app.wait_for("#test-connection", MINUTE).await.unwrap().click().await.unwrap();
    let connection = app.wait_until("const t = document.getElementById('connection-result').textContent; return (t.startsWith('OK') || t.includes('rror')) && t", 5 * MINUTE).await.unwrap();
    assert!(
        connection.as_str().unwrap().starts_with("OK") && connection.as_str().unwrap().contains(&server.url),
        "{connection}"
    );
    // A key is the server's: saved with the server chosen it goes to the OS keyring for that server's
    // origin, and switching back to the embedded model keeps it there.
    app.wait_for("#llm-key", MINUTE).await.unwrap().type_text("sk-quarry-test-key").await.unwrap();
    app.wait_for("#save-settings", MINUTE).await.unwrap().click().await.unwrap();
    app.wait_until("return document.getElementById('settings-result').textContent.startsWith('Saved')", MINUTE)
        .await
        .unwrap();
    let key_note = app.script("return document.getElementById('llm-key').placeholder", vec![]).await.unwrap();
    assert!(key_note.as_str().unwrap().contains("OS keyring"), "{key_note}");
    app.script("document.getElementById('settings-result').textContent = ''; return true;", vec![]).await.unwrap();
    app.wait_for("#llm-embedded", MINUTE).await.unwrap().click().await.unwrap();
    app.wait_for("#web-enabled", MINUTE).await.unwrap().click().await.unwrap();
    app.wait_for("#web-url", MINUTE).await.unwrap().type_text("http://127.0.0.1:9").await.unwrap();
    let ocr = app.script("return document.getElementById('ocr').value", vec![]).await.unwrap();
    assert_eq!(ocr, serde_json::json!("auto"), "OCR reads scanned pages by default");
    app.wait_for("#save-settings", MINUTE).await.unwrap().click().await.unwrap();
    app.wait_until("return document.getElementById('settings-result').textContent.startsWith('Saved')", MINUTE)
        .await
        .unwrap();
    let key_note = app.script("return document.getElementById('llm-key').placeholder", vec![]).await.unwrap();
    assert!(key_note.as_str().unwrap().contains("OS keyring"), "{key_note}");
    let stored = std::fs::read_to_string(config.join("settings.toml")).unwrap();
    assert!(stored.contains("http://127.0.0.1:9") && !stored.contains("sk-quarry-test-key"), "{stored}");
    assert!(stored.contains("ocr = \"auto\""), "{stored}");
    app.screenshot(&shots.join("6-settings.png")).await.unwrap();
    app.wait_for("#close-settings", MINUTE).await.unwrap().click().await.unwrap();

    // With web search on and its provider unreachable, the question still gets an answer from the
    // library, and the trace says what happened to the web.
    let question = app.wait_for("#question", MINUTE).await.unwrap();
    question.type_text("Where did the accident happen?\u{E007}").await.unwrap();
    app.wait_until(
        "return document.querySelectorAll('.turn .answer').length === 2 && !document.querySelector('.turn.live')",
        15 * MINUTE,
    )
    .await
    .unwrap();
    let web_trace = app
        .script(
            "return [...document.querySelectorAll('.turn')].pop().querySelector('details.trace').textContent",
            vec![],
        )
        .await
        .unwrap();
    assert!(web_trace.as_str().unwrap().contains("Web:"), "{web_trace}");

    // Esc stops a running question within the model call in progress.
    app.script("document.getElementById('agent').value = 'deep'; return true;", vec![]).await.unwrap();
    let question = app.wait_for("#question", MINUTE).await.unwrap();
    question.type_text("Compare the two accidents in detail.\u{E007}").await.unwrap();
    app.wait_for(".turn.live details.trace li", 5 * MINUTE).await.unwrap();
    app.wait_for("#question", MINUTE).await.unwrap().type_text("\u{E00C}").await.unwrap(); // Esc
    app.wait_until(
        "return !document.querySelector('.turn.live') && document.querySelectorAll('.turn').length === 3",
        5 * MINUTE,
    )
    .await
    .unwrap();
    let stopped = app
        .script("return [...document.querySelectorAll('.turn')].pop().querySelector('.error')?.textContent", vec![])
        .await
        .unwrap();
    assert_eq!(stopped, serde_json::json!("stopped"));
    app.quit().await.unwrap();

    // Restart: the conversation is still there and reopens with its answer.
    let app = open_app(&driver).await;
    app.wait_for("#conversations li", MINUTE).await.unwrap().click().await.unwrap();
    app.wait_for(".turn .answer", MINUTE).await.unwrap();
    let reopened = app.wait_for(".turn .question", MINUTE).await.unwrap().text().await.unwrap();
    assert_eq!(reopened, "What caused the accident of the airplane?");
    assert_eq!(
        app.script("return document.querySelectorAll('.turn').length", vec![]).await.unwrap(),
        serde_json::json!(3)
    );
    let counts = app
        .wait_until("return document.querySelector(\"li[data-library='private'] .counts\")?.textContent", MINUTE)
        .await
        .unwrap();
    assert!(counts.as_str().unwrap().starts_with("4 documents"), "{counts}");
    app.screenshot(&shots.join("5-after-restart.png")).await.unwrap();
    // The settings survived the restart.
    app.wait_for("#open-settings", MINUTE).await.unwrap().click().await.unwrap();
    let kept = app.wait_until("return document.getElementById('web-url').value", MINUTE).await.unwrap();
    assert_eq!(kept, serde_json::json!("http://127.0.0.1:9"));
    app.wait_for("#close-settings", MINUTE).await.unwrap().click().await.unwrap();

    // Stop an ingest: a second library gets a folder of 20 clinical-trial PDFs; Stop after the first
    // file keeps what was read and says so. Then the library is deleted (with its confirmation).
    app.wait_for("#new-library-name", MINUTE).await.unwrap().type_text("scratch\u{E007}").await.unwrap();
    app.wait_for("li[data-library='scratch'].selected", 2 * MINUTE).await.unwrap();
    let folder = docs.join("en_nih-clinical-trial-protocols").display().to_string();
    pick_and_add(&app, &picked, "scratch", &[folder], true).await;
    app.wait_for("#ingest-files li", 5 * MINUTE).await.unwrap();
    app.wait_for("#cancel-ingest", MINUTE).await.unwrap().click().await.unwrap();
    let stopped = finished_add_summary(&app).await;
    assert!(stopped.starts_with("Stopped:"), "{stopped}");
    let indexed: usize = stopped.trim_start_matches("Stopped: ").split(' ').next().unwrap().parse().unwrap();
    assert!((1..20).contains(&indexed), "{stopped}");
    app.wait_for("li[data-library='scratch'] .actions .danger", MINUTE).await.unwrap().click().await.unwrap();
    app.wait_for("li[data-library='scratch'] .actions .danger", MINUTE).await.unwrap().click().await.unwrap(); // "Delete scratch and its index"
    app.wait_until("return !document.querySelector(\"li[data-library='scratch']\")", MINUTE).await.unwrap();
    assert!(
        data.join("libraries/private").is_dir() && !data.join("libraries/scratch").exists(),
        "the deleted library's folder is gone"
    );

    // Chinese names render and survive: rename the library and the conversation.
    // Selected by its name: a click on the middle of the row lands on its "Add folder" button.
    app.wait_for("li[data-library='private'] .name", MINUTE).await.unwrap().click().await.unwrap();
    app.wait_for("li[data-library='private'].selected .actions button:nth-child(3)", MINUTE)
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    app.wait_for("#libraries li input", MINUTE).await.unwrap().type_text("私人 资料\u{E007}").await.unwrap();
    app.wait_for("li[data-library='私人 资料']", MINUTE).await.unwrap();
    app.wait_for("#conversations li.selected .actions button", MINUTE).await.unwrap().click().await.unwrap();
    app.wait_for("#conversations li input", MINUTE)
        .await
        .unwrap()
        .type_text("事故调查：两份报告\u{E007}")
        .await
        .unwrap();
    let title = app
        .wait_until(
            "return document.querySelector('#conversations li .name')?.textContent === '事故调查：两份报告'",
            MINUTE,
        )
        .await;
    assert!(title.is_ok(), "{title:?}");
    app.screenshot(&shots.join("7-chinese-names.png")).await.unwrap();
    app.quit().await.unwrap();
}

/// A stored answer carrying hostile markup (what a model can be made to write by a document) is shown
/// without `style` attributes and without SVG links, and its citation of a launcher file outside the
/// library's sources is refused when the person clicks "Open file"; brackets that are no marker of its
/// passages stay text. Before: the overlay's `style` and the SVG `xlink:href` reached the page, the app
/// handed any cited path to the system's default program, and "[2023]" became a citation link.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_stored_answer_is_shown_inert_and_its_launcher_citation_is_not_opened() {
    let _one = one_app_at_a_time().await;
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("data");
    let config = work.path().join("config");
    let sources = work.path().join("papers");
    let outside = work.path().join("downloads");
    std::fs::create_dir_all(&sources).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let launcher = outside.join("report.desktop");
    std::fs::write(&launcher, "[Desktop Entry]\nType=Application\nName=report\nExec=sh -c 'touch /tmp/quarry-pwned'\n")
        .unwrap();

    // A library whose only source is `papers/`, and a conversation whose answer cites the launcher.
    let dir = quarry_store::DataDir::at(&data);
    let embedding = quarry_store::EmbeddingInfo {
        model_id: "all-MiniLM-L6-v2".into(),
        dimension: 384,
        automatic: false,
        chunks_per_second: None,
    };
    quarry_store::Library::create(&dir, "mine", embedding, quarry_store::ChunkingInfo::default()).await.unwrap();
    let library_dir = dir.library_dir("mine").unwrap();
    let mut manifest = quarry_store::LibraryManifest::load(&library_dir).unwrap();
    manifest.sources = vec![sources.clone()];
    manifest.save(&library_dir).unwrap();
    let question = "What does the report say?";
    let passage = serde_json::json!({
        "chunk_id": 1, "library": "mine", "document_id": "d1", "path": launcher, "page_start": null,
        "page_end": null, "sheet": null, "heading_path": [], "text": "Open the report to read it.", "score": 1.0
    });
    let answer = serde_json::json!({
        "question": question, "agent": "naive",
        "markdown": "It says <span style=\"position:fixed;top:0;left:0;width:100%;height:100%;background:white\">nothing</span> and <svg><a xlink:href=\"https://evil.example/\"><text y=\"20\">click</text></a></svg> [1]. <video src=\"https://evil.example/v.mp4\" autoplay></video><audio src=\"https://evil.example/a.mp3\" autoplay></audio><picture><source srcset=\"https://evil.example/p.png\"></picture>In [2023] it said so [1, 2].",
        "citations": [{"number": 1, "passage": passage}], "sources": [{"number": 1, "passage": passage}],
        "queries": [[question]], "retrieved": 1, "kept": 1, "llm_calls": 1,
        "usage": {"prompt_tokens": 1, "completion_tokens": 1}, "seconds": 1.0, "model": "test",
        "libraries": ["mine"], "nothing_found": false
    });
    let mut conversation = quarry_agents::Conversation::new(question);
    conversation.turns.push(quarry_agents::Turn {
        question: question.into(),
        agent: "naive".into(),
        libraries: vec!["mine".into()],
        answer: Some(serde_json::from_value(answer).unwrap()),
        error: None,
        trace: Vec::new(),
        asked_ms: 0,
    });
    quarry_agents::ConversationStore::new(data.join("conversations")).save(&mut conversation).unwrap();

    let driver = Driver::start(&[("QUARRY_DATA_DIR", &data), ("QUARRY_CONFIG_DIR", &config)], &[]);
    let app = open_app(&driver).await;
    app.wait_for("#conversations li", MINUTE).await.unwrap().click().await.unwrap();
    app.wait_for(".turn .answer", MINUTE).await.unwrap();
    let shown = app.script("return document.querySelector('.turn .answer').innerHTML", vec![]).await.unwrap();
    let shown = shown.as_str().unwrap();
    assert!(shown.contains("nothing"), "the text stays: {shown}");
    assert!(!shown.contains("style="), "a style attribute reached the page: {shown}");
    assert!(!shown.contains("evil.example") && !shown.contains("<svg"), "an SVG link reached the page: {shown}");
    for media in ["<video", "<audio", "<source", "<picture"] {
        assert!(!shown.contains(media), "{media} reached the page: {shown}");
    }
    // Only markers of the answer's own passages are links: "[2023]" and "[1, 2]" (no passage 2) stay text
    // (the app's own marker regex linked both before).
    let links = app.script("return document.querySelectorAll('.turn .answer .cite').length", vec![]).await.unwrap();
    assert_eq!(links.as_u64(), Some(1), "{shown}");
    assert!(shown.contains("In [2023] it said so [1, 2]."), "{shown}");

    app.wait_for(".sources .cite", MINUTE).await.unwrap().click().await.unwrap();
    // Clicked once the panel has its passage context (the library is empty, so the note that the passage
    // is no longer in it): the context arrives after the panel opens and moves "Open file" down, and a
    // click aimed before that landed beside the button (CI of a3de6a9: no error shown after 60 s).
    app.wait_until(
        "return !document.getElementById('citation').hidden && document.querySelector('#citation-text .muted') !== null",
        MINUTE,
    )
    .await
    .unwrap();
    app.wait_for("#open-source", MINUTE).await.unwrap().click().await.unwrap();
    let refused = app
        .wait_until("const e = document.getElementById('citation-error'); return !e.hidden && e.textContent", MINUTE)
        .await
        .unwrap();
    assert!(refused.as_str().unwrap().contains("not inside the library's sources"), "{refused}");
    app.quit().await.unwrap();
}

/// A wrapper script in `work` that starts `binary` under `strace -f` (the driver launches it as the app),
/// and the file the trace goes to. Only `connect`, `sendto` and `sendmsg` are traced, through strace's
/// seccomp filter (`--seccomp-bpf`), so the app runs at nearly its own speed.
fn under_strace(work: &Path, binary: &Path) -> (PathBuf, PathBuf) {
    let trace = work.join("app.trace");
    let wrapper = work.join("quarry-app-under-strace");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec strace -f --seccomp-bpf -qq -e trace=connect,sendto,sendmsg -o '{}' '{}' \"$@\"\n",
            trace.display(),
            binary.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    (wrapper, trace)
}

/// The lines of an app's `strace` output (see [`under_strace`]) that reach the network: a connect or
/// datagram to an address other than loopback, or to a DNS port (a lookup through a local resolver at
/// 127.0.0.53 counts too). Loopback is how the WebDriver session and the app's own processes talk.
fn network_reached(trace: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(trace).expect("the app ran under strace");
    // The trace is the app's: it talks to the X server and the session over Unix sockets.
    assert!(text.contains("AF_UNIX"), "strace saw no socket of the app: {}", &text[..text.len().min(2000)]);
    text.lines()
        .filter(|l| ["connect(", "sendto(", "sendmsg("].iter().any(|call| l.contains(call)))
        .filter(|l| l.contains("AF_INET"))
        .filter(|l| {
            let loopback = l.contains("inet_addr(\"127.") || l.contains("inet_pton(AF_INET6, \"::1\"");
            !loopback || l.contains("htons(53)")
        })
        .map(str::to_string)
        .collect()
}

/// Every command the app registers is in the build's permission manifest and granted to the main
/// window: a command left out is refused in the webview with no error in Rust. (The web query
/// approval's `answer_web_query` was left out, so no approval ever reached the backend.)
#[test]
fn every_registered_command_is_granted_to_the_window() {
    let lib = include_str!("../../src-tauri/src/lib.rs");
    let build = include_str!("../../src-tauri/build.rs");
    let capability = include_str!("../../src-tauri/capabilities/default.json");
    let start = lib.find("generate_handler![").expect("the handler list");
    let end = start + lib[start..].find(']').expect("its end");
    let names: Vec<&str> =
        lib[start..end].split([',', '[', '\n']).filter_map(|s| s.trim().strip_prefix("commands::")).collect();
    assert!(names.len() > 10, "{names:?}");
    for name in names {
        assert!(build.contains(&format!("\"{name}\"")), "{name} is not in build.rs COMMANDS");
        let permission = format!("\"allow-{}\"", name.replace('_', "-"));
        assert!(capability.contains(&permission), "{permission} is not in capabilities/default.json");
    }
}

/// `add_to_library` reads only what the person chose: a path picked or dropped, or one inside a chosen
/// folder. A path reached by `..` or a symbolic link out of a chosen folder, or never chosen at all, is
/// refused with its name. (Before, the command took any path the webview sent.)
#[test]
fn only_chosen_files_and_folders_can_be_added() {
    let work = tempfile::tempdir().unwrap();
    let root = work.path().canonicalize().unwrap();
    let chosen = root.join("chosen");
    let secret = root.join("secret");
    std::fs::create_dir_all(chosen.join("sub")).unwrap();
    std::fs::create_dir_all(&secret).unwrap();
    std::fs::write(chosen.join("sub/a.txt"), "a").unwrap();
    std::fs::write(secret.join("key.txt"), "k").unwrap();
    std::os::unix::fs::symlink(&secret, chosen.join("link-out")).unwrap();
    let state = quarry_app_lib::state::AppState::new(
        quarry_store::DataDir::at(root.join("data")),
        root.join("settings.toml"),
        quarry_session::Settings::default(),
        None,
        PathBuf::from("quarry-app"),
    );
    let refused = |path: PathBuf| {
        let failure = state.check_chosen(std::slice::from_ref(&path)).expect_err(&path.display().to_string());
        assert!(failure.message.contains(&path.display().to_string()) && failure.message.contains("not chosen"));
    };
    refused(chosen.join("sub/a.txt"));
    state.grant_chosen(std::slice::from_ref(&chosen));
    assert!(state.check_chosen(&[chosen.clone(), chosen.join("sub/a.txt"), chosen.join("sub")]).is_ok());
    // A chosen file deleted since is the add's to report, not a refusal.
    assert!(state.check_chosen(&[chosen.join("gone.pdf")]).is_ok());
    refused(secret.join("key.txt"));
    refused(chosen.join("../secret/key.txt"));
    refused(chosen.join("link-out/key.txt"));
    refused(chosen.join("../secret/missing.txt"));
    refused(PathBuf::from("relative.pdf"));
    // One path not chosen refuses the whole add.
    assert!(state.check_chosen(&[chosen.join("sub/a.txt"), secret.join("key.txt")]).is_err());
}

/// What the scripted loopback server (LLM and SearXNG in one) received: the web search queries, decoded.
#[derive(Default)]
struct Received {
    web_queries: Vec<String>,
    chat_calls: usize,
}

/// A loopback server that answers as an OpenAI-compatible LLM (`POST /v1/chat/completions`, each reply
/// chosen by what the request's system prompt asks for, streamed when asked) and as a SearXNG instance
/// (`GET /search?q=…`, one result page at `/page`), recording what it receives. Returns its base URL.
fn scripted_llm_and_searxng(received: std::sync::Arc<std::sync::Mutex<Received>>) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let page_url = format!("{base}/page");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buffer = Vec::new();
            let mut chunk = [0u8; 8192];
            let body_start = loop {
                let n = stream.read(&mut chunk).unwrap_or(0);
                if n == 0 {
                    break None;
                }
                buffer.extend_from_slice(&chunk[..n]);
                if let Some(i) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                    break Some(i + 4);
                }
            };
            let Some(body_start) = body_start else { continue };
            let head = String::from_utf8_lossy(&buffer[..body_start]).to_string();
            let length: usize = head
                .lines()
                .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_string()))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            while buffer.len() < body_start + length {
                let n = stream.read(&mut chunk).unwrap_or(0);
                if n == 0 {
                    break;
                }
                buffer.extend_from_slice(&chunk[..n]);
            }
            let target = head.split_whitespace().nth(1).unwrap_or("").to_string();
            let (kind, body) = if let Some(query) = target.strip_prefix("/search?") {
                let url = reqwest::Url::parse(&format!("http://loopback/search?{query}")).unwrap();
                let q = url.query_pairs().find(|(k, _)| k == "q").map(|(_, v)| v.into_owned()).unwrap_or_default();
                received.lock().unwrap().web_queries.push(q);
                let results = serde_json::json!({"query": "q", "results": [
                    {"url": page_url, "title": "Globex annual report", "content": "Globex revenue in 2023 was 3.1 billion dollars.", "engine": "test"}]});
                ("application/json", results.to_string())
            } else if target == "/page" {
                ("text/html", "<html><body><p>Globex revenue in 2023 was 3.1 billion dollars.</p></body></html>".into())
            } else {
                received.lock().unwrap().chat_calls += 1;
                let request: serde_json::Value =
                    serde_json::from_slice(&buffer[body_start..(body_start + length).min(buffer.len())])
                        .unwrap_or_default();
                let prompt = request["messages"][0]["content"].as_str().unwrap_or_default().to_string();
                let reply = if prompt.starts_with("You plan searches") {
                    r#"{"queries": ["Globex revenue 2023", "Jane Miller Dayton biography"]}"#
                } else if prompt.starts_with("You judge search results") {
                    r#"{"relevant": [1]}"#
                } else if prompt.starts_with("You review research in progress") {
                    r#"{"facts": [], "queries": []}"#
                } else if prompt.starts_with("Decide whether the steps") {
                    r#"{"enough": true}"#
                } else {
                    "Globex reported revenue of 3.1 billion dollars for 2023 [1]."
                };
                if request["stream"] == serde_json::json!(true) {
                    let delta = serde_json::json!({"choices": [{"index": 0, "delta": {"content": reply}}]});
                    ("text/event-stream", format!("data: {delta}\n\ndata: [DONE]\n\n"))
                } else {
                    let message = serde_json::json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}});
                    ("application/json", message.to_string())
                }
            };
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    base
}

/// A window asking over one document with a scripted model: what [`ask_over_the_handbook`] leaves
/// running (fields drop in order: the window, then its driver, then the folders).
struct HandbookQuestion {
    app: Session,
    _driver: Driver,
    data: PathBuf,
    config: PathBuf,
    /// The scripted server's base URL.
    base: String,
    received: std::sync::Arc<std::sync::Mutex<Received>>,
    _work: tempfile::TempDir,
}

/// Opens the app with the scripted LLM (and, with `web_ask`, the scripted SearXNG under the "ask" web
/// query policy) as its settings, builds a library `work` of the 1-page handbook through "Add files",
/// chooses `agent` and asks `question`; returns as soon as it is asked.
async fn ask_over_the_handbook(web_ask: bool, agent: &str, question: &str) -> HandbookQuestion {
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("data");
    let config = work.path().join("config");
    let picked = work.path().join("picked-paths.txt");
    let received = std::sync::Arc::new(std::sync::Mutex::new(Received::default()));
    let base = scripted_llm_and_searxng(received.clone());
    std::fs::create_dir_all(&config).unwrap();
    let mut settings = format!("[llm]\nurl = \"{base}/v1\"\nmodel = \"scripted\"\n");
    if web_ask {
        settings.push_str(&format!(
            "\n[web]\nenabled = true\nprovider = \"searxng\"\nurl = \"{base}\"\nqueries = \"ask\"\n"
        ));
    }
    std::fs::write(config.join("settings.toml"), settings).unwrap();
    let driver = Driver::start(
        &[("QUARRY_DATA_DIR", &data), ("QUARRY_CONFIG_DIR", &config), ("QUARRY_APP_PICKED_PATHS", &picked)],
        &[],
    );
    let app = open_app(&driver).await;
    app.wait_for("#new-library-name", MINUTE).await.unwrap().type_text("work\u{E007}").await.unwrap();
    app.wait_for("li[data-library='work'].selected", 2 * MINUTE).await.unwrap();
    let docx = eval_dir().join("C_private_library/docs/en_misc_office/handbook-1p.docx");
    pick_and_add(&app, &picked, "work", &[docx.display().to_string()], false).await;
    finished_add_summary(&app).await;
    app.wait_for("#close-ingest", MINUTE).await.unwrap().click().await.unwrap();
    app.script(&format!("document.getElementById('agent').value = '{agent}'; return true;"), vec![]).await.unwrap();
    app.wait_for("#question", MINUTE).await.unwrap().type_text(&format!("{question}\u{E007}")).await.unwrap();
    HandbookQuestion { app, _driver: driver, data, config, base, received, _work: work }
}

/// The "ask" web query policy in the window: each query the model writes for the web is put to the
/// person with Send / Don't send; the web provider receives the typed question and the approved query,
/// never the refused one. The model is a scripted server writing two sub-queries (one names a person
/// from the documents); the provider is a SearXNG stand-in on loopback that records what it gets.
/// (Before, no approval reached the backend: `answer_web_query` was not granted to the window.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_person_approves_one_web_query_and_refuses_another_and_the_provider_gets_only_the_approved() {
    let _one = one_app_at_a_time().await;
    let question = "Compare the 2023 revenue of Acme Corporation and Globex";
    let HandbookQuestion { app, received, _driver, _work, .. } = ask_over_the_handbook(true, "deep", question).await;

    // Answer each approval as it appears, as a person would: send the query about Globex's revenue,
    // refuse the one naming a person from the documents.
    let mut asked: Vec<String> = Vec::new();
    let started = std::time::Instant::now();
    loop {
        let step = app
            .script(
                "const answered = [];
                 for (const box of document.querySelectorAll('.web-approval')) {
                   const query = box.querySelector('q').textContent;
                   box.querySelector(query.includes('Globex') ? '.send-query' : '.withhold-query').click();
                   answered.push(query);
                 }
                 const done = !document.querySelector('.turn.live') && document.querySelector('.turn .answer') !== null;
                 return {answered, done};",
                vec![],
            )
            .await
            .unwrap();
        asked.extend(step["answered"].as_array().unwrap().iter().map(|q| q.as_str().unwrap().to_string()));
        if step["done"] == serde_json::json!(true) {
            break;
        }
        assert!(started.elapsed() < 10 * MINUTE, "no answer after 10 minutes; asked {asked:?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let answer = app.wait_for(".turn .answer", MINUTE).await.unwrap().text().await.unwrap();
    app.quit().await.unwrap();

    asked.sort();
    asked.dedup();
    assert_eq!(
        asked,
        ["Globex revenue 2023", "Jane Miller Dayton biography"],
        "each model-written query is put to the person"
    );
    let received = received.lock().unwrap();
    assert!(received.chat_calls > 0, "the scripted model answered");
    let mut sent = received.web_queries.clone();
    sent.sort();
    sent.dedup();
    assert_eq!(
        sent,
        [question, "Globex revenue 2023"],
        "the typed question and the approved query only; answer: {answer}"
    );
}

/// The app and the CLI ask through one path (`quarry_session::open_sources`, then
/// `quarry_agents::ask`): the same question over the same library with the same scripted model gets the
/// same answer — words, citations and claim checks — from the window and from `quarry ask`. The CLI
/// binary is the one `cargo test --workspace` builds beside the app's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_and_the_cli_give_the_same_answer_to_the_same_question() {
    let _one = one_app_at_a_time().await;
    let question = "What does the employee handbook ask of new employees?";
    let HandbookQuestion { app, _driver, data, config, base, received, _work } =
        ask_over_the_handbook(false, "naive", question).await;
    app.wait_until(
        "return !document.querySelector('.turn.live') && document.querySelector('.turn .answer') !== null",
        10 * MINUTE,
    )
    .await
    .expect("the app answers");
    app.quit().await.unwrap();

    // The app's answer, as it kept it with the conversation.
    let conversations: Vec<PathBuf> = std::fs::read_dir(data.join("conversations"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert_eq!(conversations.len(), 1, "{conversations:?}");
    let kept: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&conversations[0]).unwrap()).unwrap();
    let from_app = kept["turns"][0]["answer"].clone();
    assert!(from_app.is_object(), "the app answered: {kept}");

    // The CLI's, asked of the same data folder and model.
    let cli = Path::new(env!("CARGO_BIN_EXE_quarry-app")).with_file_name("quarry");
    assert!(cli.exists(), "{} is built by `cargo test --workspace`", cli.display());
    let output = Command::new(&cli)
        .args(["--data-dir", data.to_str().unwrap(), "ask", question, "--library", "work", "--agent", "naive"])
        .args(["--llm-url", &format!("{base}/v1"), "--llm-model", "scripted", "--json"])
        .env("QUARRY_CONFIG_DIR", &config)
        .output()
        .unwrap();
    assert!(output.status.success(), "quarry ask: {}", String::from_utf8_lossy(&output.stderr));
    let from_cli: serde_json::Value = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["event"] == "answer")
        .expect("an answer line");

    assert!(from_app["markdown"].as_str().is_some_and(|m| m.contains("[1]")), "{from_app}");
    for field in ["agent", "markdown", "citations", "claims", "sources", "libraries", "queries", "llm_calls"] {
        assert_eq!(
            single_precision(&from_app[field]),
            single_precision(&from_cli[field]),
            "{field} differs between the app and the CLI"
        );
    }
    assert!(received.lock().unwrap().chat_calls >= 2, "both asked the scripted model");
}

/// `value` with every number that is not an integer rounded to single precision: a passage's score is an
/// `f32`, written as such in the app's stored conversation ("0.33387178") and widened to `f64` in the
/// CLI's JSON line ("0.3338717818260193") — the same score.
fn single_precision(value: &serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Number(n) if !(n.is_i64() || n.is_u64()) => {
            serde_json::json!(n.as_f64().map(|f| f as f32).unwrap_or_default())
        }
        serde_json::Value::Array(items) => items.iter().map(single_precision).collect(),
        serde_json::Value::Object(fields) => {
            fields.iter().map(|(k, v)| (k.clone(), single_precision(v))).collect::<serde_json::Map<_, _>>().into()
        }
        other => other.clone(),
    }
}
