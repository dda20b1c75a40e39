//! The table section each row of a passage sits under, named in its label for the model.
//!
//! Financial tables repeat their row labels under each section: Microsoft prints every segment under
//! "Revenue" and again under "Operating Income", Apple "Products" and "Services" under "Net sales" and
//! under "Cost of sales". The section lines are short and share few words with a question, so the
//! excerpt the model reads ([`crate::answer::passage_excerpts`]) often keeps both rows and drops the lines
//! between them: a 1.5B model then read `More Personal Computing: 5,174 million (…)`, the segment's
//! operating income, as its revenue (issue 36). And a chunk that starts below the later section line
//! lacks it altogether; the chunker keeps that section as such a PDF chunk's heading path
//! (`quarry_ingest::Chunker`).
//!
//! So, in what the model reads, a row under a section gets it in its label — `Operating Income: More
//! Personal Computing: 5,174 million (…)` — when the passage needs it told apart: it starts below a later
//! section (its heading path), or one row label stands under two sections in it. A section is a short
//! line without figures directly above a row written by [`quarry_core::table_row::write_row`]
//! ([`quarry_core::table_row::is_section_line`]); it lasts until a line that is neither a row nor
//! another section. Only what the model reads changes: the stored text, the indexes and the citation do
//! not.
//!
//! Naming a section in every repeated label *at ingest* was measured worse (docs/evaluation/decisions.md,
//! 2026-11-26 (f): it changed chunks and so retrieval, and "Total (Revenue)" was read for a segment).

use quarry_core::table_row::{is_section_line, parse_row, section_name, write_row, TableCell};
use quarry_core::Passage;
use std::collections::HashMap;

/// `passage`'s text with the labels of its table rows naming the section each sits under, when it needs
/// them told apart (see the module docs); the text unchanged otherwise. The section a PDF passage's first
/// rows sit under is its heading path's one title (a passage with no page keeps its heading path to
/// itself: those are a document's headings).
pub fn label_rows_by_section(passage: &Passage) -> String {
    let scan = scan(passage);
    let mut sections_of_label: HashMap<&str, &str> = HashMap::new();
    let mut repeated = false;
    for (label, _, section) in scan.rows.iter().flatten() {
        if let Some(section) = section {
            let name = scan.names[*section].as_str();
            repeated |= *sections_of_label.entry(*label).or_insert(name) != name;
        }
    }
    if !scan.carried && !repeated {
        return passage.text.clone();
    }
    let labelled: Vec<String> = scan
        .lines
        .iter()
        .zip(&scan.rows)
        .map(|(line, row)| match row {
            Some((label, cells, Some(section))) => write_row(&format!("{}: {label}", scan.names[*section]), cells),
            _ => line.to_string(),
        })
        .collect();
    labelled.join("\n")
}

/// Every table row of `passage`'s text (a line written by [`quarry_core::table_row::write_row`] with two
/// cells or more) as `(section, label, line)`: the section it sits under as [`label_rows_by_section`]
/// finds it, empty when none — whether or not the model is shown it. For the claim check, which reads
/// what a row measures from its label, or from its section when the label is a segment's name
/// ("Operating Income (Loss)" above "AWS: 6,976 million (…)"; [`crate::claims`]).
pub(crate) fn rows_with_sections(passage: &Passage) -> Vec<(String, &str, &str)> {
    let scan = scan(passage);
    scan.lines
        .iter()
        .zip(&scan.rows)
        .filter_map(|(line, row)| {
            let (label, _, section) = row.as_ref()?;
            Some((section.map(|s| scan.names[s].clone()).unwrap_or_default(), *label, *line))
        })
        .collect()
}

/// The table rows of a plain `text` (a passage's text, or [`label_rows_by_section`]'s) that sit under a
/// section line, each as `(start, end, section)`: the row line's byte range in `text` and the section's
/// name, read as [`scan`] reads a passage (no heading path carried). For the quote under an answer,
/// which tells what a row whose label is a segment's name measures ([`crate::genre::financial::key_quote`]).
pub(crate) fn sections_of_rows(text: &str) -> Vec<(usize, usize, String)> {
    let scan = scan_text(text, None);
    scan.lines
        .iter()
        .zip(&scan.rows)
        .filter_map(|(line, row)| {
            let section = row.as_ref()?.2?;
            // Every line is a slice of `text` (`scan_text` splits it).
            let start = line.as_ptr() as usize - text.as_ptr() as usize;
            Some((start, start + line.len(), scan.names[section].clone()))
        })
        .collect()
}

/// A table row as [`scan`] reads it: its label, its cells and its section (an index into
/// [`Scan::names`]; `None` when no section line heads it).
type ScannedRow<'a> = (&'a str, Vec<TableCell>, Option<usize>);

/// `passage`'s lines, each line's row when it is one, the section names, and whether the first rows
/// carry the heading path's section.
struct Scan<'a> {
    lines: Vec<&'a str>,
    rows: Vec<Option<ScannedRow<'a>>>,
    names: Vec<String>,
    carried: bool,
}

/// Reads `passage`'s lines: rows, and the section lines that head them (see the module docs).
fn scan(passage: &Passage) -> Scan<'_> {
    let carried = match (passage.page_start, passage.heading_path.as_slice()) {
        (Some(_), [section]) if !section.trim().is_empty() => Some(section.trim().to_string()),
        _ => None,
    };
    scan_text(&passage.text, carried)
}

/// [`scan`] of a plain `text`, its first rows under the section `carried` when one is.
fn scan_text(text: &str, carried: Option<String>) -> Scan<'_> {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut names: Vec<String> = carried.iter().cloned().collect();
    let mut current = carried.as_ref().map(|_| 0);
    let mut rows = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        if let Some((label, cells)) = parse_row(line) {
            rows.push(Some((label, cells, current)));
            continue;
        }
        rows.push(None);
        let heads_rows = is_section_line(line) && lines.get(i + 1).is_some_and(|next| parse_row(next).is_some());
        current = heads_rows.then(|| {
            names.push(section_name(line));
            names.len() - 1
        });
    }
    Scan { lines, rows, names, carried: carried.is_some() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passage(text: &str, page: Option<u32>, heading_path: &[&str]) -> Passage {
        Passage {
            library: "l".into(),
            chunk_id: 1,
            chunk_index: None,
            document_id: "d".into(),
            path: "/docs/2023 Q3 MSFT.pdf".into(),
            page_start: page,
            page_end: page,
            sheet: None,
            heading_path: heading_path.iter().map(|s| s.to_string()).collect(),
            text: text.into(),
            context: String::new(),
            score: 1.0,
            ocr: false,
        }
    }

    const SEGMENTS: &str = "Segment revenue and operating income were as follows during the periods presented:\n\
        Revenue\n\
        More Personal Computing: 13,666 million (three months ended September 30, 2023); 13,332 million (three months ended September 30, 2022)\n\
        Total: $56,517 million (three months ended September 30, 2023); $50,122 million (three months ended September 30, 2022)\n\
        Operating Income\n\
        More Personal Computing: 4,565 million (three months ended September 30, 2023); 3,459 million (three months ended September 30, 2022)\n\
        Total: $26,895 million (three months ended September 30, 2023); $21,518 million (three months ended September 30, 2022)\n\
        Microsoft Cloud revenue increased 24%.";

    #[test]
    fn rows_whose_label_stands_under_two_sections_name_their_section() {
        let labelled = label_rows_by_section(&passage(SEGMENTS, Some(27), &[]));
        let lines: Vec<&str> = labelled.lines().collect();
        assert_eq!(lines[0], "Segment revenue and operating income were as follows during the periods presented:");
        assert_eq!(lines[1], "Revenue");
        assert!(
            lines[2].starts_with(
                "Revenue: More Personal Computing: 13,666 million (three months ended September 30, 2023); "
            ),
            "{labelled}"
        );
        assert!(lines[3].starts_with("Revenue: Total: $56,517 million"), "{labelled}");
        assert_eq!(lines[4], "Operating Income");
        assert!(lines[5].starts_with("Operating Income: More Personal Computing: 4,565 million"), "{labelled}");
        assert!(lines[6].starts_with("Operating Income: Total: $26,895 million"), "{labelled}");
        assert_eq!(lines[7], "Microsoft Cloud revenue increased 24%.");
        // No label under two sections, no heading path: as stored.
        let one_section: String = SEGMENTS.lines().take(4).collect::<Vec<_>>().join("\n");
        assert_eq!(label_rows_by_section(&passage(&one_section, Some(27), &[])), one_section);
    }

    #[test]
    fn a_passage_that_starts_below_a_later_section_names_it_in_its_first_rows() {
        let text: String = SEGMENTS.lines().skip(5).collect::<Vec<_>>().join("\n");
        let labelled = label_rows_by_section(&passage(&text, Some(27), &["Operating Income"]));
        let lines: Vec<&str> = labelled.lines().collect();
        assert!(lines[0].starts_with("Operating Income: More Personal Computing: 4,565 million"), "{labelled}");
        assert!(lines[1].starts_with("Operating Income: Total: $26,895 million"), "{labelled}");
        assert_eq!(lines[2], "Microsoft Cloud revenue increased 24%.", "prose ends the section");
        // A heading path that is a document's headings (no page): the text as stored.
        assert_eq!(label_rows_by_section(&passage(&text, None, &["Operating Income"])), text);
        // Prose first: nothing to label.
        let prose = format!("Operating income increased $5.4 billion.\n{text}");
        assert_eq!(label_rows_by_section(&passage(&prose, Some(27), &["Operating Income"])), prose);
    }
}
