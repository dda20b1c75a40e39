//! Whether a document of a library is the one an evaluation set's qrels name. Two rules, for two kinds
//! of runs: [`same_path`] for a library built from the set's own folder (`quarry eval library`), and
//! [`same_file_name`] for one built from a copy laid out otherwise (`quarry eval answers` over the quick
//! start's sample library).

/// Whether the library path `path` is the qrels document `relevant` (a path relative to the set's root):
/// `path` is `relevant` or ends with it at a folder boundary.
pub fn same_path(path: &str, relevant: &str) -> bool {
    let relevant = relevant.trim_start_matches("./");
    path == relevant || path.ends_with(&format!("/{relevant}"))
}

/// Whether the library path `path` is the qrels document `relevant` by file name alone (the sets name
/// their files uniquely, and the library may have been built from another folder layout, such as the
/// quick start's `assets/sample-library/sec-10-q/` for `docs/en_sec-10-q/`). The name is what follows the
/// last `/`, `\` or `!` (an archive member's own name).
pub fn same_file_name(path: &str, relevant: &str) -> bool {
    let name = |p: &str| p.rsplit(['/', '\\', '!']).next().unwrap_or(p).to_string();
    name(path) == name(relevant)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_qrels_path_matches_at_a_folder_boundary_only() {
        assert!(same_path("/data/C/docs/en_sec-10-q/2023 Q1 AAPL.pdf", "docs/en_sec-10-q/2023 Q1 AAPL.pdf"));
        assert!(same_path("docs/a.md", "./docs/a.md"));
        assert!(!same_path("/data/C/mydocs/a.md", "docs/a.md"));
        assert!(!same_path("/data/C/docs/a.md.bak", "docs/a.md"));
    }

    #[test]
    fn a_file_name_matches_in_any_folder_and_inside_an_archive() {
        assert!(same_file_name("/s/sample-library/sec-10-q/2023 Q1 NVDA.pdf", "docs/en_sec-10-q/2023 Q1 NVDA.pdf"));
        assert!(same_file_name("/s/filings.zip!/2023 Q1 NVDA.pdf", "docs/2023 Q1 NVDA.pdf"));
        assert!(!same_file_name("/s/2023 Q1 NVDA.pdf.bak", "docs/2023 Q1 NVDA.pdf"));
    }
}
