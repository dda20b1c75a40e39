//! Which reading of a format a document was indexed with, so that a parser improvement reaches
//! libraries built before it.

/// The number a document row carries when it was written before rows were stamped (2026-11-27): the
/// reading each format had then, counted as version 1.
pub const UNSTAMPED_EXTRACTION_VERSION: u32 = 1;

/// The version of the text Quarry reads out of a format today, by format name ([`quarry_core::Format::name`],
/// or `unknown` for a file that was not recognised).
///
/// A library stamps each document row with it; `quarry sync` and `quarry add` read a file again (same
/// bytes, same document and chunk ids) when one of its documents carries an older number than this, so a
/// person's existing library gets the better text without `quarry library reindex`, and only the formats
/// whose reading changed are read again. Raise a format's number when its parser's text changes in a way
/// search or answers see (words, pages, tables), not for changes in warnings or speed.
///
/// History:
/// - `pdf` 2: PDFium reads every page, and its reading replaces pdf-extract's where it keeps words whole
///   (`pdf::keeps_words_whole`; docs/evaluation/decisions.md, 2026-11-27 (a)).
/// - `pdf` 3: a table's unit note leaves out what it excepts — Apple's amounts were labelled "thousand"
///   from "(In millions, except number of shares, which are reflected in thousands, …)" (2026-12-02 (c)).
/// - `pdf` 4: Intel's tables read as rows with their columns — a unit note with a semicolon ("(In
///   Millions, Except Per Share Amounts; Unaudited)") on the dates' line, and blank lines between a
///   table's lines (2026-12-03 (d)).
/// - `pdf` 5: a table goes on past a long section line that ends in a colon and past a row label
///   wrapped over two lines (Apple's comprehensive income and shareholders' equity rows; 2026-12-03 (e)).
/// - `pdf` 6: headers of period codes ("Q3 2023 Q3 2022 YTD 2023 YTD 2022", Intel's management's
///   discussion), dates split over lines and "($ in millions)" (NVIDIA's) and "(unaudited)" (Amazon's)
///   name their columns; a row that leaves its change columns blank fills the period columns (Apple's
///   other income and expense); "(554 )" is one cell (Microsoft's); a section line naming a note, and a
///   row label wrapped inside a parenthesis (Intel's balance sheet), keep the table going (2026-12-03 (f)).
/// - `pdf` 7: a header line that starts with a column's title and ends with the first column's date
///   ("Interest Rate April 30, 2023", NVIDIA's debt notes) names the columns (2026-12-03 (g)).
/// - `pdf` 8: change columns titled "Quarter-over-Quarter" / "Year-over-Year" and changes in
///   percentage points ("1.3 pts") are read (NVIDIA's quarterly summary tables); rows about
///   "operations" (and "consideration") get their table's unit, which the word "ratio" inside them had
///   kept off (2026-12-04 (f)).
pub fn extraction_version(format: &str) -> u32 {
    match format {
        "pdf" => 8,
        _ => UNSTAMPED_EXTRACTION_VERSION,
    }
}

/// The version of the set of formats Quarry reads: raised when it learns a format it refused before.
///
/// History:
/// - 2: e-mail (`.eml`, Outlook `.msg`, mailboxes), PowerPoint (`.pptx`), OpenDocument text (`.odt`), EPUB.
/// - 3: OCR: scanned PDFs (refused before as `no text layer`) and pictures (PNG, JPEG, TIFF); RTF; OpenDocument presentations (`.odp`).
pub const RECOGNITION_VERSION: u32 = 3;

/// The version a *failed* document row is stamped with: its format's reading or the set of formats,
/// whichever is newer. A failed row stamped lower is read again by `sync`/`add` — once — so a file an
/// older Quarry refused (an `.eml` before version 2) gets read when Quarry learns its format.
pub fn failure_version(format: &str) -> u32 {
    extraction_version(format).max(RECOGNITION_VERSION)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quarry_core::Format;

    #[test]
    fn every_format_has_a_version_at_least_the_unstamped_one() {
        for format in [Format::Pdf, Format::Docx, Format::Pptx, Format::Eml, Format::Msg, Format::Zip, Format::Html] {
            assert!(extraction_version(format.name()) >= UNSTAMPED_EXTRACTION_VERSION);
        }
        assert_eq!(extraction_version("pdf"), 8, "change columns titled quarter-over-quarter (2026-12-04 (f))");
        assert_eq!(extraction_version("unknown"), UNSTAMPED_EXTRACTION_VERSION);
        assert!(failure_version("unknown") > UNSTAMPED_EXTRACTION_VERSION, "refusals from before e-mail are re-read");
        assert_eq!(failure_version("pdf"), 8, "the PDF reading is newer than the set of formats (3, OCR)");
        assert!(failure_version("pdf") >= RECOGNITION_VERSION, "scans refused before OCR are read again");
    }
}
