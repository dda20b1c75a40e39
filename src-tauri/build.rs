// tauri.conf.json sits at the repository root and the capabilities under src-tauri/ (see Cargo.toml).
fn main() {
    let attributes = tauri_build::Attributes::new().capabilities_path_pattern("./src-tauri/capabilities/**/*");
    if let Err(error) = tauri_build::try_build(attributes) {
        panic!("tauri build step failed: {error:#}");
    }
}
