//! Which cited files the app may hand to the system's default program.
//!
//! A citation names a path stored in the library; the app opens that path when the person clicks the
//! citation. A path is data that came from the library's index, so the check does not trust it: the file
//! must lie inside one of the library's sources (after resolving symbolic links, so a link inside a
//! source cannot lead out of it) and must not be something the desktop would *run* rather than show.

use std::path::{Path, PathBuf};

/// File name endings of the documents Quarry reads that a desktop shows rather than runs (lower case,
/// without the dot): the desktop picks the program by this name (its MIME type, from shared-mime-info's
/// globs), so only these are handed to it. An allowlist, not a list of what to refuse: a name the
/// desktop would run (`.desktop`, `.sh`, `.AppImage`, a name without an ending whose bytes it sniffs) is
/// not on it. HTML pages are left out too: a browser opening a local page runs its scripts.
pub const OPENABLE_EXTENSIONS: &[&str] = &[
    "pdf", "docx", "xlsx", "xlsm", "xlsb", "xls", "ods", "odt", "odp", "pptx", "epub", "rtf", "txt", "text", "md",
    "markdown", "mdown", "mkd", "csv", "tsv", "json", "jsonl", "ndjson", "eml", "msg", "mbox", "png", "jpg", "jpeg",
    "tif", "tiff", "zip",
];

/// The real path of `file` when it may be opened with the default program: it exists, is a regular
/// file, lies inside one of `sources` (files or folders the library was given; both sides have their
/// symbolic links resolved), has the name of a document Quarry reads ([`OPENABLE_EXTENSIONS`]), is not
/// marked executable (Unix) and does not start like a program (`#!` or an ELF header).
///
/// Errors: a one-line reason naming the file, for the person ("… is not inside the library's sources").
pub fn file_to_open(file: &Path, sources: &[PathBuf]) -> Result<PathBuf, String> {
    let shown = file.display();
    let real = file.canonicalize().map_err(|e| format!("{shown} cannot be opened: {e}"))?;
    if !real.is_file() {
        return Err(format!("{shown} is not a file"));
    }
    let inside = sources.iter().filter_map(|s| s.canonicalize().ok()).any(|source| real.starts_with(&source));
    if !inside {
        return Err(format!("{shown} is not inside the library's sources; Quarry opens only files it was given"));
    }
    let extension = real.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    if !OPENABLE_EXTENSIONS.contains(&extension.as_str()) {
        let kind = if extension.is_empty() {
            "has no file name ending".to_string()
        } else {
            format!("is a .{extension} file")
        };
        return Err(format!(
            "{shown} {kind}, not a document kind Quarry opens (PDF, Office, OpenDocument, text, e-mail, pictures); open it yourself if you trust it"
        ));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = real.metadata().map_err(|e| format!("{shown}: {e}"))?.permissions().mode();
        if mode & 0o111 != 0 {
            return Err(format!("{shown} is marked executable; Quarry does not open it"));
        }
    }
    let mut head = [0u8; 4];
    let read = std::fs::File::open(&real)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .map_err(|e| format!("{shown} cannot be read: {e}"))?;
    if head[..read].starts_with(b"#!") || head[..read].starts_with(b"\x7fELF") {
        return Err(format!("{shown} is a program; Quarry does not open it"));
    }
    Ok(real)
}

#[cfg(test)]
mod tests {
    use super::file_to_open;

    #[test]
    fn only_plain_files_inside_the_sources_are_opened() {
        let tmp = tempfile::tempdir().unwrap();
        let source = tmp.path().join("reports");
        let outside = tmp.path().join("elsewhere");
        std::fs::create_dir_all(&source).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let pdf = source.join("a.pdf");
        std::fs::write(&pdf, b"%PDF-1.7").unwrap();
        let sources = vec![source.clone()];
        assert_eq!(file_to_open(&pdf, &sources).unwrap(), pdf.canonicalize().unwrap());
        // A single file given as a source is inside itself.
        assert!(file_to_open(&pdf, std::slice::from_ref(&pdf)).is_ok());

        let secret = outside.join("notes.txt");
        std::fs::write(&secret, b"private").unwrap();
        let error = file_to_open(&secret, &sources).unwrap_err();
        assert!(error.contains("not inside the library's sources"), "{error}");
        // `..` and symbolic links are resolved before the check.
        let dotted = source.join("../elsewhere/notes.txt");
        assert!(file_to_open(&dotted, &sources).unwrap_err().contains("not inside"));
        #[cfg(unix)]
        {
            let link = source.join("link.txt");
            std::os::unix::fs::symlink(&secret, &link).unwrap();
            assert!(file_to_open(&link, &sources).unwrap_err().contains("not inside"));
        }

        let launcher = source.join("Report.desktop");
        std::fs::write(&launcher, b"[Desktop Entry]\nExec=sh -c 'curl evil'\n").unwrap();
        assert!(file_to_open(&launcher, &sources).unwrap_err().contains("is a .desktop file, not a document kind"));
        // Allowed by name, refused by what it is.
        let script = source.join("summary.txt");
        std::fs::write(&script, b"#!/bin/sh\necho hi\n").unwrap();
        assert!(file_to_open(&script, &sources).unwrap_err().contains("is a program"));
        // Names a desktop would run or sniff, which no list of launchers could keep up with, are refused by
        // the allowlist: before, `page.html` and a name without an ending went through.
        for name in ["Viewer.AppImage", "page.html", "summary", "notes.sh"] {
            let file = source.join(name);
            std::fs::write(&file, b"text").unwrap();
            assert!(file_to_open(&file, &sources).unwrap_err().contains("not a document kind"), "{name}");
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let marked = source.join("table.csv");
            std::fs::write(&marked, b"a,b\n").unwrap();
            std::fs::set_permissions(&marked, std::fs::Permissions::from_mode(0o755)).unwrap();
            assert!(file_to_open(&marked, &sources).unwrap_err().contains("marked executable"));
        }
        let gone = source.join("gone.pdf");
        assert!(file_to_open(&gone, &sources).unwrap_err().contains("cannot be opened"));
    }
}
