//! The supervisor's handling of workers that hang or die. The workers here are shell one-liners that read
//! a request and then misbehave, which exercises exactly the supervisor's paths (the real worker is
//! tested through the `quarry` binary in quarry-cli's tests, including the memory cap).

use quarry_ingest::isolate::{
    cpu_time, parse_isolated, reply_cap, starved_extension, IsolationConfig, OcrPermits, PageReader, WorkerCommand,
    MIN_REPLY_BYTES, MIN_RUNNING_CPU,
};
use quarry_ingest::{IngestError, InputFile, Status};
use std::time::{Duration, Instant};

fn shell_worker(script: &str) -> IsolationConfig {
    let mut config =
        IsolationConfig::new(WorkerCommand { program: "sh".into(), args: vec!["-c".into(), script.into()] });
    config.workers = 1;
    config.document_timeout = Duration::from_millis(500);
    config
}

/// A worker that reads its request, then writes one line that never ends.
const FLOODING_WORKER: &str = "read line; yes aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa | tr -d '\\n'";

fn inputs(n: usize) -> Vec<InputFile> {
    (0..n).map(|i| InputFile { path: format!("/tmp/file{i}.pdf").into(), display: format!("file{i}.pdf") }).collect()
}

#[test]
fn a_hanging_parser_times_out_and_the_batch_goes_on() {
    let config = shell_worker("read line; sleep 30");
    let started = Instant::now();
    let mut outcomes = Vec::new();
    parse_isolated(&inputs(3), &config, |i, o| outcomes.push((i, o)));
    assert_eq!(outcomes.len(), 3, "one row per input");
    for (_, o) in &outcomes {
        assert_eq!(o.status, Status::Timeout);
        assert_eq!(o.error, Some(IngestError::Timeout(500)));
        assert_eq!(o.error.as_ref().unwrap().to_string(), "timed out after 0.5 s");
    }
    assert!(started.elapsed() < Duration::from_secs(20), "timeouts must not wait for the sleeping worker");
}

#[test]
fn a_crashing_parser_is_reported_with_its_signal_and_the_next_file_gets_a_new_worker() {
    let config = shell_worker("read line; echo 'thread main has overflowed its stack' >&2; kill -SEGV $$");
    let mut outcomes = Vec::new();
    parse_isolated(&inputs(2), &config, |i, o| outcomes.push((i, o)));
    assert_eq!(outcomes.len(), 2);
    for (_, o) in &outcomes {
        assert_eq!(o.status, Status::Crashed);
        let message = o.error.as_ref().unwrap().to_string();
        assert!(message.contains("SIGSEGV") && message.contains("overflowed its stack"), "{message}");
    }
}

#[test]
fn an_allocation_failure_is_reported_as_too_large() {
    let config = shell_worker("read line; echo 'memory allocation of 4294967296 bytes failed' >&2; kill -ABRT $$");
    let mut outcomes = Vec::new();
    parse_isolated(&inputs(1), &config, |i, o| outcomes.push((i, o)));
    assert_eq!(outcomes[0].1.status, Status::TooLarge);
}

#[test]
fn a_worker_that_cannot_start_gives_crashed_rows_not_a_panic() {
    let config = IsolationConfig::new(WorkerCommand { program: "/no/such/quarry".into(), args: vec![] });
    let mut outcomes = Vec::new();
    parse_isolated(&inputs(2), &config, |i, o| outcomes.push((i, o)));
    assert_eq!(outcomes.len(), 2);
    assert!(outcomes.iter().all(|(_, o)| o.status == Status::Crashed));
    assert!(outcomes[0].1.error.as_ref().unwrap().to_string().contains("cannot start parser worker"));
}

#[test]
fn members_finished_before_a_hang_are_kept_and_the_hanging_member_is_named() {
    // A worker that reads a ZIP, finishes its first member and hangs in the second.
    let script = r#"read line
echo '{"Event":{"Started":{"path":"a.zip"}}}'
echo '{"Event":{"Started":{"path":"a.zip!/one.txt"}}}'
echo '{"Event":{"Finished":{"path":"a.zip!/one.txt","format":"text","status":"ok","pages":null,"chars":3,"cjk_chars":0,"ms":1,"error":null,"warnings":[],"document":null}}}'
echo '{"Event":{"Started":{"path":"a.zip!/two.pdf"}}}'
sleep 30"#;
    let config = shell_worker(script);
    let mut outcomes = Vec::new();
    let input = vec![InputFile { path: "/tmp/a.zip".into(), display: "a.zip".into() }];
    parse_isolated(&input, &config, |_, o| outcomes.push(o));
    let status: Vec<(&str, Status)> = outcomes.iter().map(|o| (o.path.as_str(), o.status)).collect();
    assert_eq!(
        status,
        vec![("a.zip!/one.txt", Status::Ok), ("a.zip!/two.pdf", Status::Timeout), ("a.zip", Status::Timeout)]
    );
}

/// A worker the machine starves (it runs an eighth of the time, as a `quarry add` at nice 19 beside a
/// build did) is given its budget in CPU time: its file is read, though it took nearly twice its budget in
/// wall-clock time. (Before, it was a `timeout` after 1 s, as a stuck worker is: above.) A fifth of its
/// CPU budget, so the test holds with other tests running beside it.
#[test]
fn a_starved_worker_gets_its_budget_in_cpu_time() {
    // 10 rounds of 20 ms of CPU time and 150 ms asleep: ≈ 0.2 s of CPU time in ≈ 1.7 s.
    let script = r#"exec perl -e '$| = 1; <STDIN>;
sub cpu { my @t = times; $t[0] + $t[1] }
for (1 .. 10) { my $t = cpu(); 1 while cpu() - $t < 0.02; select(undef, undef, undef, 0.15) }
print q({"Event":{"Finished":{"path":"file0.pdf","format":"pdf","status":"ok","pages":1,"chars":3,"cjk_chars":0,"ms":1,"error":null,"warnings":[],"document":null}}}), "
", q("End"), "
";
<STDIN>'"#;
    let mut config = shell_worker(script);
    config.document_timeout = Duration::from_secs(1);
    let started = Instant::now();
    let mut outcomes = Vec::new();
    parse_isolated(&inputs(1), &config, |_, o| outcomes.push(o));
    assert_eq!(outcomes.len(), 1);
    assert_eq!(outcomes[0].status, Status::Ok, "{outcomes:?}");
    assert!(started.elapsed() > config.document_timeout, "the worker ran past its wall-clock budget");
}

#[test]
fn a_worker_past_its_budget_is_given_the_cpu_time_it_has_left_only_if_it_ran() {
    let budget = Duration::from_secs(60);
    let ms = Duration::from_millis;
    // Starved: 5 s of CPU time in a minute, running.
    assert_eq!(starved_extension(ms(5_000), ms(5_000), budget), Some(ms(55_000)));
    // Stuck: no CPU time since the last look, whatever it used before.
    assert_eq!(starved_extension(ms(5_000), ms(0), budget), None);
    assert_eq!(starved_extension(ms(5_000), MIN_RUNNING_CPU - ms(1), budget), None);
    // Spinning on a hostile file: its CPU budget spent.
    assert_eq!(starved_extension(budget, ms(1_000), budget), None);
    // The CPU time of a process, read from the system: this one's grows as it spins.
    let before = cpu_time(std::process::id()).expect("Linux reports CPU time");
    let spin = Instant::now();
    let mut x = 0u64;
    while spin.elapsed() < ms(200) {
        x = std::hint::black_box(x.wrapping_add(1));
    }
    let after = cpu_time(std::process::id()).unwrap();
    assert!(after >= before + ms(50), "{before:?} → {after:?}");
}

/// A parser exploited by a crafted file runs with a cleared environment: no API key variables, no D-Bus
/// session (the way to the OS keyring), no proxy settings. The stand-in worker prints what it can see to
/// stderr and crashes, so its stderr lands in the row's message. (Before, workers inherited everything.)
#[test]
fn a_worker_sees_no_api_keys_and_no_keyring_session() {
    std::env::set_var("QUARRY_LLM_API_KEY", "sk-worker-must-not-see");
    std::env::set_var("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/1000/bus-must-not-see");
    std::env::set_var("HTTPS_PROXY", "http://proxy-must-not-see:3128");
    // (Variables the other tests of this binary read are left alone: they run in parallel.)
    let config = shell_worker("read line; echo \"seen:[$QUARRY_LLM_API_KEY][$DBUS_SESSION_BUS_ADDRESS][$HTTPS_PROXY][$PATH]\" >&2; kill -SEGV $$");
    let mut outcomes = Vec::new();
    parse_isolated(&inputs(1), &config, |i, o| outcomes.push((i, o)));
    let message = outcomes[0].1.error.as_ref().unwrap().to_string();
    let path = std::env::var("PATH").unwrap_or_default();
    assert!(message.contains(&format!("seen:[][][][{path}]")), "the worker saw: {message}");
}

/// A parser taken over by a crafted file cannot reach the network: the stand-in worker tries to connect
/// to a listening port on this computer and reports what happened. The listener must see no connection
/// and the worker's socket must be refused (before, workers had the person's full network access).
#[cfg(target_os = "linux")]
#[test]
fn a_worker_cannot_open_a_socket() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        "read line; if exec 3<>/dev/tcp/127.0.0.1/{port}; then echo 'reached:connected' >&2; else echo 'reached:refused' >&2; fi; kill -SEGV $$"
    );
    let mut config =
        IsolationConfig::new(WorkerCommand { program: "bash".into(), args: vec!["-c".into(), script.into()] });
    config.workers = 1;
    config.document_timeout = Duration::from_secs(10);
    let mut outcomes = Vec::new();
    parse_isolated(&inputs(1), &config, |i, o| outcomes.push((i, o)));
    let message = outcomes[0].1.error.as_ref().unwrap().to_string();
    assert!(message.contains("reached:refused"), "the worker's socket was not refused: {message}");
    assert!(listener.accept().is_err(), "the worker connected to this computer");
}

/// A parser taken over by a crafted file can change no file and read nothing beyond what it parses: the
/// stand-in worker tries to append to a settings file, read a file it was not given, read its
/// supervisor's environment and open its memory, and signal it; it may write in its own temporary folder
/// and read its input. Before the Landlock sandbox every forbidden step succeeded (same user, no Yama).
#[cfg(target_os = "linux")]
#[test]
fn a_worker_writes_no_file_and_reads_neither_other_files_nor_its_supervisor() {
    let abi = quarry_ingest::isolate::landlock_abi()
        .unwrap_or_else(|| panic!("{}", quarry_ingest::isolate::landlock_status()));
    let home = tempfile::tempdir().unwrap();
    let settings = home.path().join("settings.toml");
    std::fs::write(&settings, "offline = true\n").unwrap();
    let secret = home.path().join("notes.txt");
    std::fs::write(&secret, "private").unwrap();
    let input = home.path().join("report.txt");
    std::fs::write(&input, "the input").unwrap();
    let (settings, secret, input_path) = (settings.display(), secret.display(), input.display());
    let script = format!(
        r#"read line
r=""
if (echo 'llm_url = "http://attacker"' >> '{settings}') 2>/dev/null; then r="$r write:done"; else r="$r write:refused"; fi
if (cat '{secret}' >/dev/null) 2>/dev/null; then r="$r other-file:read"; else r="$r other-file:refused"; fi
n=$(cat /proc/$PPID/environ 2>/dev/null | wc -c); if [ "$n" -gt 0 ]; then r="$r environ:read"; else r="$r environ:refused"; fi
if (grep -q VmSize /proc/$$/status && grep -q processor /proc/cpuinfo) 2>/dev/null; then r="$r own-proc:read"; else r="$r own-proc:refused"; fi
if (: < /proc/$PPID/mem) 2>/dev/null; then r="$r mem:opened"; else r="$r mem:refused"; fi
if kill -0 $PPID 2>/dev/null; then r="$r signal:sent"; else r="$r signal:refused"; fi
if (echo x > "$TMPDIR/scratch") 2>/dev/null; then r="$r tmp:written"; else r="$r tmp:refused"; fi
if (cat '{input_path}' >/dev/null) 2>/dev/null; then r="$r input:read"; else r="$r input:refused"; fi
echo "tried:$r" >&2
kill -SEGV $$"#
    );
    let mut config =
        IsolationConfig::new(WorkerCommand { program: "bash".into(), args: vec!["-c".into(), script.into()] });
    config.workers = 1;
    config.document_timeout = Duration::from_secs(10);
    let mut outcomes = Vec::new();
    let inputs = vec![InputFile { path: input.clone(), display: "report.txt".into() }];
    parse_isolated(&inputs, &config, |i, o| outcomes.push((i, o)));
    let message = outcomes[0].1.error.as_ref().unwrap().to_string();
    let mut expected =
        "tried: write:refused other-file:refused environ:refused own-proc:read mem:refused signal:refused tmp:written input:read"
            .to_string();
    if abi < 6 {
        // Landlock before ABI 6 does not scope signals.
        expected = expected.replace("signal:refused", "signal:sent");
    }
    assert!(message.contains(&expected), "Landlock ABI {abi}; the worker: {message}");
    assert_eq!(std::fs::read_to_string(home.path().join("settings.toml")).unwrap(), "offline = true\n");
}

/// An archive whose members each finish within the per-document budget still has a budget as a whole:
/// the stand-in worker finishes one member every 0.2 s for ever.
#[test]
fn an_archive_that_never_ends_meets_the_whole_file_budget() {
    let script = r#"read line
echo '{"Event":{"Started":{"path":"a.zip"}}}'
i=0
while true; do
  i=$((i+1))
  echo "{\"Event\":{\"Finished\":{\"path\":\"a.zip!/$i.txt\",\"format\":\"text\",\"status\":\"ok\",\"pages\":null,\"chars\":3,\"cjk_chars\":0,\"ms\":1,\"error\":null,\"warnings\":[],\"document\":null}}}"
  sleep 0.2
done"#;
    let mut config = shell_worker(script);
    config.file_timeout = Duration::from_millis(1500);
    let started = Instant::now();
    let mut outcomes = Vec::new();
    let input = vec![InputFile { path: "/tmp/a.zip".into(), display: "a.zip".into() }];
    parse_isolated(&input, &config, |_, o| outcomes.push(o));
    assert!(started.elapsed() < Duration::from_secs(10), "the budget must end the file");
    let last = outcomes.last().unwrap();
    assert_eq!((last.path.as_str(), last.status), ("a.zip", Status::Timeout));
    assert_eq!(last.error.as_ref().unwrap().to_string(), "timed out after 1.5 s");
    let members = outcomes.iter().filter(|o| o.status == Status::Ok).count();
    assert!((3..=9).contains(&members), "members finished in time are kept: {members}");
}

/// A worker that reports progress for ever (a crafted scan of endless pages) is stopped at the whole-file
/// wall budget: each step buys it one more document timeout, never more than the wall. Before, progress
/// extended the budget without end.
#[test]
fn endless_progress_cannot_carry_a_file_past_its_wall_budget() {
    let script = r#"read line
echo '{"Event":{"Started":{"path":"scan.pdf"}}}'
i=0
while true; do
  i=$((i+1))
  echo "{\"Event\":{\"Progress\":{\"path\":\"scan.pdf\",\"done\":$i,\"total\":1000000}}}"
  sleep 0.1
done"#;
    let mut config = shell_worker(script);
    config.file_timeout = Duration::from_millis(500);
    config.file_wall_timeout = Duration::from_millis(1500);
    let started = Instant::now();
    let mut outcomes = Vec::new();
    let input = vec![InputFile { path: "/tmp/scan.pdf".into(), display: "scan.pdf".into() }];
    parse_isolated(&input, &config, |_, o| outcomes.push(o));
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(1400) && took < Duration::from_secs(10), "took {took:?}");
    assert_eq!(outcomes.len(), 1);
    assert_eq!(outcomes[0].status, Status::Timeout);
    assert_eq!(outcomes[0].error.as_ref().unwrap().to_string(), "timed out after 1.5 s");
}

/// A worker that writes one endless line is stopped once the line passes `max_reply_bytes`; the
/// supervisor never holds more than that (before, it read lines of any length into memory).
#[test]
fn a_worker_flooding_one_line_is_stopped_at_the_reply_cap() {
    let mut config = shell_worker(FLOODING_WORKER);
    config.document_timeout = Duration::from_secs(20);
    config.max_reply_bytes = 1 << 20;
    let mut outcomes = Vec::new();
    parse_isolated(&inputs(2), &config, |i, o| outcomes.push((i, o)));
    assert_eq!(outcomes.len(), 2, "the batch goes on");
    for (_, o) in &outcomes {
        assert_eq!(o.status, Status::TooLarge);
        assert_eq!(
            o.error.as_ref().unwrap().to_string(),
            "too large: the parser's output for one document is over 1 MiB (the limit for a file of 0 bytes)"
        );
    }
}

/// A reply line is capped by what the file could sensibly produce, not only by `max_reply_bytes`: a
/// 1 KiB file's worker flooding its output is stopped at [`MIN_REPLY_BYTES`] (64 MiB), where before it
/// was read up to 1 GiB — per worker, so 1 GiB × cores in the supervisor.
#[test]
fn a_small_files_worker_flooding_one_line_is_stopped_at_what_its_size_allows() {
    let folder = tempfile::tempdir().unwrap();
    let small = folder.path().join("small.pdf");
    std::fs::write(&small, vec![b'x'; 1024]).unwrap();
    let mut config = shell_worker(FLOODING_WORKER);
    config.document_timeout = Duration::from_secs(60);
    assert_eq!(config.max_reply_bytes, 1 << 30, "the default ceiling");
    assert_eq!(reply_cap(1024, config.max_reply_bytes), MIN_REPLY_BYTES);
    assert_eq!(reply_cap(100 << 20, config.max_reply_bytes), 1 << 30, "a 100 MiB file may reach the ceiling");
    assert_eq!(reply_cap(2 << 20, config.max_reply_bytes), 128 << 20);
    let mut outcomes = Vec::new();
    parse_isolated(&[InputFile { path: small, display: "small.pdf".into() }], &config, |_, o| outcomes.push(o));
    assert_eq!(outcomes.len(), 1);
    assert_eq!(outcomes[0].status, Status::TooLarge);
    assert_eq!(
        outcomes[0].error.as_ref().unwrap().to_string(),
        "too large: the parser's output for one document is over 64 MiB (the limit for a file of 1024 bytes)"
    );
}

/// Web pages are read by a worker under the same guard: one that answers is used, one that hangs is
/// stopped at the time budget, one that dies is reported with its last words, and the next page gets a
/// fresh worker.
#[test]
fn a_page_reader_worker_that_hangs_or_dies_costs_one_page() {
    let answering = shell_worker(r#"while read line; do echo '{"Page":{"title":"T","text":"readable"}}'; done"#);
    let reader = PageReader::new(answering);
    assert_eq!(reader.read("<p>x</p>", "https://example.org/").unwrap(), ("T".to_string(), "readable".to_string()));
    assert_eq!(reader.read("<p>y</p>", "https://example.org/2").unwrap().1, "readable", "the worker is kept");

    let reader = PageReader::new(shell_worker("read line; sleep 30"));
    let started = Instant::now();
    assert_eq!(reader.read("<div>", "https://example.org/").unwrap_err(), IngestError::Timeout(500));
    assert!(started.elapsed() < Duration::from_secs(10));

    let reader =
        PageReader::new(shell_worker("read line; echo 'thread main has overflowed its stack' >&2; kill -SEGV $$"));
    for _ in 0..2 {
        let message = reader.read("<div>", "https://example.org/").unwrap_err().to_string();
        assert!(message.contains("SIGSEGV") && message.contains("overflowed its stack"), "{message}");
    }
}

/// A worker that closes its pipes and lives on is not waited for: its file is reported and the batch goes
/// on (before, the supervisor waited for it to exit, for ever).
#[test]
fn a_worker_that_closes_its_pipes_and_lives_on_does_not_hang_the_batch() {
    let config = shell_worker("read line; exec 0<&- 1>&- 2>&-; sleep 30");
    let started = Instant::now();
    let mut outcomes = Vec::new();
    parse_isolated(&inputs(2), &config, |i, o| outcomes.push((i, o)));
    assert_eq!(outcomes.len(), 2);
    assert!(outcomes.iter().all(|(_, o)| o.status == Status::Crashed), "{outcomes:?}");
    assert!(started.elapsed() < Duration::from_secs(15), "the batch waited for the worker");
}

/// A worker that asks for an OCR permit for every file, as the real one does before it loads the OCR
/// models, holds it for 0.3 s and ends the file; `then` runs after the permit is granted.
fn ocr_worker(then: &str) -> IsolationConfig {
    let script = format!(
        "while read line; do echo '\"OcrWanted\"'; read grant; case \"$grant\" in *OcrGranted*) {then} ;; esac; done"
    );
    let mut config = shell_worker(&script);
    config.workers = 2;
    config.document_timeout = Duration::from_secs(5);
    config
}

#[test]
fn no_more_workers_read_by_ocr_at_once_than_the_permits_allow() {
    for limit in [1, 2] {
        let mut config = ocr_worker("sleep 0.3; echo '\"End\"'");
        config.ocr_permits = std::sync::Arc::new(OcrPermits::new(limit));
        parse_isolated(&inputs(6), &config, |_, _| {});
        assert_eq!(config.ocr_permits.granted(), 6, "every file got its permit");
        assert_eq!(config.ocr_permits.most_held(), limit, "at most {limit} at once, and the limit used");
    }
}

#[test]
fn a_worker_that_dies_holding_an_ocr_permit_gives_it_back() {
    let mut config = ocr_worker("kill -SEGV $$");
    config.ocr_permits = std::sync::Arc::new(OcrPermits::new(1));
    let mut outcomes = Vec::new();
    parse_isolated(&inputs(3), &config, |i, o| outcomes.push((i, o)));
    // Each file's worker died after its permit was granted; the next file's worker got one all the same.
    assert_eq!(outcomes.len(), 3);
    assert!(outcomes.iter().all(|(_, o)| o.status == Status::Crashed), "{outcomes:?}");
    assert_eq!(config.ocr_permits.granted(), 3);
}

/// Stopping a run (the app's Cancel, Ctrl-C) stops a file in the middle within a second: the worker is
/// killed and the file gets no row (the next run reads it again). Before, the run waited for the file to
/// finish, however long it took.
#[test]
fn a_stop_ends_the_file_being_read_within_a_second() {
    let mut config = shell_worker("read line; echo '{\"Event\":{\"Started\":{\"path\":\"long.pdf\"}}}'; sleep 60");
    config.document_timeout = Duration::from_secs(120);
    let stop = std::sync::Arc::clone(&config.stop);
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let started = Instant::now();
    let mut outcomes = Vec::new();
    parse_isolated(&inputs(2), &config, |i, o| outcomes.push((i, o)));
    let took = started.elapsed();
    assert!(took < Duration::from_secs(3), "the stop waited for the file: {took:?}");
    assert!(outcomes.is_empty(), "a stopped file has no row, the next file was not started: {outcomes:?}");
}
