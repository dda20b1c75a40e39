//! The Quarry desktop shell (Tauri v2). Wiring only: commands here call the library crates and return
//! their results; every behaviour lives in `crates/` and is reachable from the `quarry` CLI too.

pub mod commands;

/// Builds and runs the app; exits with a message if the window system cannot start.
pub fn run() {
    let result = tauri::Builder::default()
        .invoke_handler(tauri::generate_handler![commands::app_info])
        .run(tauri::generate_context!());
    if let Err(error) = result {
        eprintln!("quarry: the desktop app could not start: {error}");
        std::process::exit(1);
    }
}
