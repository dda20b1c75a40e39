//! Tauri's build step for the app: the commands' permission manifest and the capabilities.

// tauri.conf.json sits at the repository root and the capabilities under src-tauri/ (see Cargo.toml).
// The app manifest lists Quarry's commands so that each needs an explicit `allow-…` permission in a
// capability: the webview can call only what src-tauri/capabilities/default.json grants.
const COMMANDS: &[&str] = &[
    "app_info",
    "list_libraries",
    "create_library",
    "rename_library",
    "delete_library",
    "add_to_library",
    "pick_files",
    "cancel_ingest",
    "list_conversations",
    "load_conversation",
    "rename_conversation",
    "delete_conversation",
    "ask",
    "stop_ask",
    "answer_web_query",
    "passage_context",
    "open_source",
    "export_report",
    "get_settings",
    "save_settings",
    "test_connection",
    "find_llm_servers",
];

fn main() {
    let attributes = tauri_build::Attributes::new()
        .capabilities_path_pattern("./src-tauri/capabilities/**/*")
        .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS));
    if let Err(error) = tauri_build::try_build(attributes) {
        panic!("tauri build step failed: {error:#}");
    }
}
