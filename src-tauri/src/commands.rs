//! Tauri commands. Each is a plain function too, so tests call it without a window.

use serde::Serialize;

/// What the front end shows before anything else: the version and the formats ingestion reads.
#[derive(Debug, Serialize)]
pub struct AppInfo {
    pub version: String,
    pub formats: Vec<String>,
}

/// `app_info` command: static facts about this build.
#[tauri::command]
pub fn app_info() -> AppInfo {
    use quarry_core::Format::*;
    let formats = [Pdf, Docx, Xlsx, Xlsm, Xlsb, Xls, Ods, Zip, Text, Markdown, Csv, Html, Json];
    AppInfo { version: env!("CARGO_PKG_VERSION").to_string(), formats: formats.iter().map(|f| f.name().to_string()).collect() }
}

#[cfg(test)]
mod tests {
    #[test]
    fn app_info_lists_the_ingested_formats() {
        let info = super::app_info();
        assert!(info.formats.iter().any(|f| f == "pdf"));
        assert_eq!(info.version, env!("CARGO_PKG_VERSION"));
    }
}
