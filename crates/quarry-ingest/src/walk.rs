use std::path::{Path, PathBuf};

/// A file to ingest: where it is on disk and the name it is reported under.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InputFile {
    /// Where it is on disk.
    pub path: PathBuf,
    /// Relative to the folder the user gave (`sub/report.pdf`); a file given directly keeps its file name.
    pub display: String,
}

/// Expands the user's paths into files: folders are walked recursively (symbolic links are not followed,
/// so a link loop cannot trap the walk), files are taken as they are. Results keep the order of `paths`
/// and are sorted by name within each folder, so reports are stable.
///
/// Errors: a path that does not exist or a folder that cannot be read is returned in the second list with
/// its reason, and the walk goes on.
pub fn collect_inputs(paths: &[PathBuf]) -> (Vec<InputFile>, Vec<(PathBuf, String)>) {
    let mut files = Vec::new();
    let mut problems = Vec::new();
    for root in paths {
        match std::fs::metadata(root) {
            Ok(meta) if meta.is_dir() => walk_folder(root, &mut files, &mut problems),
            Ok(_) => files.push(InputFile { path: root.clone(), display: file_name(root) }),
            Err(e) => problems.push((root.clone(), e.to_string())),
        }
    }
    (files, problems)
}

fn walk_folder(root: &Path, files: &mut Vec<InputFile>, problems: &mut Vec<(PathBuf, String)>) {
    for entry in walkdir::WalkDir::new(root).follow_links(false).sort_by_file_name() {
        match entry {
            Ok(entry) if entry.file_type().is_file() => {
                let relative = entry.path().strip_prefix(root).unwrap_or(entry.path());
                let display = relative.to_string_lossy().replace('\\', "/");
                files.push(InputFile { path: entry.path().to_path_buf(), display });
            }
            Ok(_) => {}
            Err(e) => problems.push((e.path().unwrap_or(root).to_path_buf(), e.to_string())),
        }
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| path.to_string_lossy().into_owned())
}
