//! The Quarry desktop shell (Tauri v2). Wiring only: commands here call the library crates and return
//! their results; every behaviour lives in `crates/` and is reachable from the `quarry` CLI too.

pub mod batch;
pub mod commands;
pub mod state;

/// Builds and runs the app with the person's settings (`quarry_session::Settings`; unreadable settings
/// fall back to the defaults and the problem is shown) over the data folder (`QUARRY_DATA_DIR`, else the
/// settings' folder, else the platform's data folder); exits with a message if no data folder can be
/// found or the window system cannot start. Model files bundled with an installed app (the `.deb` puts
/// them in `/usr/lib/Quarry/models`) are found through `QUARRY_BUNDLED_MODELS_DIR`, set here from Tauri's
/// resource folder unless already set; must be called before any other thread starts (it sets an
/// environment variable, which the parser workers inherit).
pub fn run() {
    let context = tauri::generate_context!();
    if std::env::var_os("QUARRY_BUNDLED_MODELS_DIR").is_none() {
        if let Ok(resources) = tauri::utils::platform::resource_dir(context.package_info(), &tauri::Env::default()) {
            let models = resources.join("models");
            if models.is_dir() {
                std::env::set_var("QUARRY_BUNDLED_MODELS_DIR", models);
            }
        }
    }
    let (settings_path, settings, problem) = match quarry_session::Settings::default_path() {
        Ok(path) => match quarry_session::Settings::load(&path) {
            Ok(settings) => (path, settings, None),
            Err(e) => (path, quarry_session::Settings::default(), Some(e.to_string())),
        },
        Err(e) => (std::path::PathBuf::from("settings.toml"), quarry_session::Settings::default(), Some(e.to_string())),
    };
    let explicit = if std::env::var_os("QUARRY_DATA_DIR").is_some_and(|v| !v.is_empty()) {
        None
    } else {
        settings.data_dir.clone()
    };
    let data = match quarry_store::DataDir::resolve(explicit) {
        Ok(data) => data,
        Err(error) => {
            eprintln!("quarry: {error}");
            std::process::exit(1);
        }
    };
    let worker = std::env::current_exe().unwrap_or_else(|_| "quarry-app".into());
    let result = tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .manage(state::AppState::new(data, settings_path, settings, problem, worker))
        // A drop on the window, as the window system reports it (never as the webview says), grants its
        // paths to `add_to_library`.
        .on_window_event(|window, event| {
            if let tauri::WindowEvent::DragDrop(tauri::DragDropEvent::Drop { paths, .. }) = event {
                use tauri::Manager;
                window.state::<state::AppState>().grant_chosen(paths);
            }
        })
        .invoke_handler(tauri::generate_handler![
            commands::app_info,
            commands::list_libraries,
            commands::create_library,
            commands::rename_library,
            commands::delete_library,
            commands::add_to_library,
            commands::pick_files,
            commands::cancel_ingest,
            commands::list_conversations,
            commands::load_conversation,
            commands::rename_conversation,
            commands::delete_conversation,
            commands::ask,
            commands::stop_ask,
            commands::answer_web_query,
            commands::passage_context,
            commands::open_source,
            commands::export_report,
            commands::get_settings,
            commands::save_settings,
            commands::test_connection,
            commands::find_llm_servers,
        ])
        .run(context);
    if let Err(error) = result {
        eprintln!("quarry: the desktop app could not start: {error}");
        std::process::exit(1);
    }
}
