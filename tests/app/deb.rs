//! The Debian package: built by the Tauri bundler from the binary `cargo test` just built, unpacked the way
//! `dpkg` installs it (`usr/bin/quarry-app`, resources in `usr/lib/Quarry/`), and run with nothing from
//! this checkout — no `QUARRY_MODELS_DIR`, no per-user model folder — so it must embed, parse and answer
//! with the model files it carries. The running app's memory map proves which files it loaded.
//!
//! The installed app runs in offline mode (the default) under `strace -f`, started through a wrapper the
//! driver launches as the app, while files are added, indexed and asked about with the embedded model:
//! it opens no network connection (no connect or datagram to an address other than loopback, none to a
//! DNS port).

use super::{
    eval_dir, finished_add_summary, network_reached, one_app_at_a_time, open_app_at, pick_and_add, under_strace,
    Driver, MINUTE,
};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `command`, panics with its output if it fails; returns its standard output.
fn run(command: &mut Command) -> String {
    let output = command.output().unwrap_or_else(|e| panic!("running {command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Bundles the `.deb` with the Tauri CLI from ui/node_modules (`tauri bundle` packages an already-built
/// binary; it does not compile). Returns the package's path.
fn bundle_deb(binary: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let profile_dir = binary.parent().unwrap(); // <target>/debug
    let target_dir = profile_dir.parent().unwrap();
    let bundles = profile_dir.join("bundle/deb");
    let _ = std::fs::remove_dir_all(&bundles);
    run(Command::new(root.join("ui/node_modules/.bin/tauri"))
        .args(["bundle", "--debug", "--bundles", "deb", "--ci"])
        .current_dir(root)
        .env("CARGO_TARGET_DIR", target_dir));
    let debs: Vec<PathBuf> = std::fs::read_dir(&bundles)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "deb"))
        .collect();
    assert_eq!(debs.len(), 1, "one .deb expected in {}: {debs:?}", bundles.display());
    // The bundler's staging folder is an unpacked copy of the package (≈0.7 GB with a debug binary).
    for staging in std::fs::read_dir(&bundles).unwrap().flatten().filter(|e| e.path().is_dir()) {
        let _ = std::fs::remove_dir_all(staging.path());
    }
    debs.into_iter().next().unwrap()
}

/// The pid of the running process whose executable is `binary`.
fn pid_of(binary: &Path) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|entry| {
        let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
        let exe = std::fs::read_link(entry.path().join("exe")).ok()?;
        (exe == binary).then_some(pid)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deb_package_runs_with_only_the_model_files_it_carries() {
    let _one = one_app_at_a_time().await;
    let deb = bundle_deb(Path::new(env!("CARGO_BIN_EXE_quarry-app")));

    // What dpkg would be told: the libraries the binary links, beyond Tauri's own list.
    let depends = run(Command::new("dpkg-deb").arg("--field").arg(&deb).arg("Depends"));
    for package in ["libwebkit2gtk-4.1-0", "libgtk-3-0", "libgomp1", "libdbus-1-3"] {
        assert!(depends.contains(package), "Depends lacks {package}: {depends}");
    }
    let contents = run(Command::new("dpkg-deb").arg("--contents").arg(&deb));
    for file in [
        "usr/bin/quarry-app",
        "usr/bin/quarry",
        "usr/share/applications/Quarry.desktop",
        "usr/lib/Quarry/models/onnxruntime/libonnxruntime.so",
        "usr/lib/Quarry/models/pdfium/libpdfium.so",
        "usr/lib/Quarry/models/all-minilm-l6-v2/model.onnx",
        "usr/lib/Quarry/models/all-minilm-l6-v2/tokenizer.json",
        "usr/lib/Quarry/models/smollm2-135m-instruct/model.gguf",
        "usr/lib/Quarry/models/qwen2.5-coder-1.5b-instruct/model.gguf",
        "usr/lib/Quarry/models/NOTICE.md",
    ] {
        assert!(contents.lines().any(|l| l.ends_with(file)), "{file} missing from the package:\n{contents}");
    }

    // Unpack it as dpkg installs it.
    let work = tempfile::tempdir().unwrap();
    let install = work.path().join("root");
    run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&install));
    let install = install.canonicalize().unwrap(); // what /proc/<pid>/exe and maps will show
    let binary = install.join("usr/bin/quarry-app");
    let desktop = std::fs::read_to_string(install.join("usr/share/applications/Quarry.desktop")).unwrap();
    assert!(desktop.lines().any(|l| l == "Exec=quarry-app"), "{desktop}");
    let bundled_models = install.join("usr/lib/Quarry/models");

    // Nothing from this checkout: no QUARRY_MODELS_DIR, an empty per-user data folder.
    let data = work.path().join("data");
    let config = work.path().join("config");
    let xdg_data = work.path().join("xdg-data");
    let picked = work.path().join("picked-paths.txt");
    let driver = Driver::start(
        &[
            ("QUARRY_DATA_DIR", &data),
            ("QUARRY_CONFIG_DIR", &config),
            ("XDG_DATA_HOME", &xdg_data),
            ("QUARRY_APP_PICKED_PATHS", &picked),
        ],
        &["QUARRY_MODELS_DIR", "QUARRY_BUNDLED_MODELS_DIR", "QUARRY_LLM_MODEL_FILE", "QUARRY_NETWORK"],
    );
    let (wrapper, trace) = under_strace(work.path(), &binary);
    let app = open_app_at(&driver, &wrapper).await;
    app.wait_for("#new-library-name", MINUTE).await.unwrap().type_text("installed\u{E007}").await.unwrap();
    app.wait_for("li[data-library='installed'].selected", 2 * MINUTE).await.unwrap();
    let docs = eval_dir().join("C_private_library/docs");
    let files: Vec<String> = ["en_ntsb-aviation-reports/20080102X00002.pdf", "en_misc_office/handbook-1p.docx"]
        .iter()
        .map(|f| docs.join(f).display().to_string())
        .collect();
    pick_and_add(&app, &picked, "installed", &files, false).await;
    let summary = finished_add_summary(&app).await;
    assert!(summary.contains("2 indexed"), "{summary}");
    app.wait_for("#close-ingest", MINUTE).await.unwrap().click().await.unwrap();

    app.script("document.getElementById('agent').value = 'naive'; return true;", vec![]).await.unwrap();
    app.wait_for("#question", MINUTE)
        .await
        .unwrap()
        .type_text("What damage did the airplane suffer?\u{E007}")
        .await
        .unwrap();
    app.wait_until(
        "return !document.querySelector('.turn.live') && document.querySelector('.turn .answer')",
        15 * MINUTE,
    )
    .await
    .unwrap();
    let answer = app.wait_for(".turn .answer", MINUTE).await.unwrap().text().await.unwrap();
    assert!(!answer.trim().is_empty());
    app.wait_for(".sources .cite", MINUTE).await.unwrap();

    // The memory map of the running app: ONNX Runtime and the default GGUF (Qwen2.5-Coder-1.5B) come from
    // the package's folder, and no file from this checkout's assets/models is mapped.
    let pid = pid_of(&binary).expect("the installed app's process");
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    for file in ["onnxruntime/libonnxruntime.so", "qwen2.5-coder-1.5b-instruct/model.gguf"] {
        let expected = bundled_models.join(file).display().to_string();
        assert!(maps.contains(&expected), "{expected} is not mapped by the app:\n{maps}");
    }
    assert!(!maps.contains("assets/models"), "the app mapped a file from the checkout:\n{maps}");
    app.quit().await.unwrap();
    drop(driver);
    assert_eq!(network_reached(&trace), Vec::<String>::new(), "the offline app reached the network");

    // The CLI the package installs beside the app: it finds the package's models (`../lib/Quarry/models`
    // beside /usr/bin) before any other folder, and searches the library the app built.
    let cli = install.join("usr/bin/quarry");
    let clean = |command: &mut Command| {
        command
            .env("QUARRY_DATA_DIR", &data)
            .env("XDG_DATA_HOME", &xdg_data)
            .env_remove("QUARRY_MODELS_DIR")
            .env_remove("QUARRY_BUNDLED_MODELS_DIR")
            .env_remove("QUARRY_LLM_MODEL_FILE");
    };
    let mut models = Command::new(&cli);
    models.args(["models", "--json"]);
    clean(&mut models);
    let models: serde_json::Value = serde_json::from_str(&run(&mut models)).unwrap();
    let default = models["embedded"].as_array().unwrap().iter().find(|m| m["default"] == true).unwrap().clone();
    let expected = bundled_models.join("qwen2.5-coder-1.5b-instruct/model.gguf");
    assert_eq!(default["path"].as_str().map(Path::new), Some(expected.as_path()), "{models}");
    let mut search = Command::new(&cli);
    search.args(["search", "damage to the airplane", "--library", "installed", "--json"]);
    clean(&mut search);
    let hits = run(&mut search);
    assert!(hits.contains("20080102X00002.pdf"), "{hits}");
}
