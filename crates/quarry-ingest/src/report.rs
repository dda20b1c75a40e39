//! The per-file parse report: one TSV row per document, with the columns path, format, status, pages,
//! chars, cjk_chars, ms and error (see [`HEADER`]).

use crate::FileOutcome;
use std::io::Write;

/// The report's header line (without newline).
pub const HEADER: &str = "path\tformat\tstatus\tpages\tchars\tcjk_chars\tms\terror";

/// One row for `outcome` (without newline). Tabs and newlines inside fields become spaces.
pub fn row(outcome: &FileOutcome) -> String {
    let clean = |s: &str| s.replace(['\t', '\n', '\r'], " ");
    let fields = [
        clean(&outcome.path),
        outcome.format.map(|f| f.name().to_string()).unwrap_or_default(),
        outcome.status.name().to_string(),
        outcome.pages.map(|p| p.to_string()).unwrap_or_default(),
        outcome.chars.to_string(),
        outcome.cjk_chars.to_string(),
        outcome.ms.to_string(),
        outcome.error.as_ref().map(|e| clean(&e.to_string())).unwrap_or_default(),
    ];
    fields.join("\t")
}

/// Writes the header and a row per outcome.
pub fn write_tsv<W: Write>(mut out: W, outcomes: &[FileOutcome]) -> std::io::Result<()> {
    writeln!(out, "{HEADER}")?;
    for outcome in outcomes {
        writeln!(out, "{}", row(outcome))?;
    }
    out.flush()
}
