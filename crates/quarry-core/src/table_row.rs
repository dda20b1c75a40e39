//! The written form of a table row whose figures name their columns, shared by the PDF reader that
//! writes it (`quarry-ingest`'s table module) and the agents that read it (`quarry-agents`' period
//! focus): `label: value (column); value (column); …`, e.g.
//! `Total revenue: $7,192 million (three months ended April 30, 2023); $8,288 million (three months ended May 1, 2022)`.

/// Between two cells of a row.
pub const CELL_SEPARATOR: &str = "; ";

/// One cell: the figure as printed (with unit when known) and the column it sits in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableCell {
    /// The figure as printed, with its unit when known (`$7,192 million`, `64.6%`).
    pub value: String,
    /// The column's header (`three months ended April 30, 2023`); empty when it has none.
    pub column: String,
}

impl TableCell {
    /// The cell as a row writes it: `value (column)`, e.g. `$7,192 million (three months ended April 30, 2023)`.
    pub fn written(&self) -> String {
        format!("{} ({})", self.value, self.column)
    }
}

/// The row `label: value (column); …`; `label`'s trailing colon is not doubled.
pub fn write_row(label: &str, cells: &[TableCell]) -> String {
    let cells: Vec<String> = cells.iter().map(TableCell::written).collect();
    format!("{}: {}", label.trim_end_matches(':'), cells.join(CELL_SEPARATOR))
}

/// The label and cells of a line written by [`write_row`] with at least two cells, or `None` for any
/// other line. A label may itself hold ": " ("Net income per share: Diluted").
pub fn parse_row(line: &str) -> Option<(&str, Vec<TableCell>)> {
    let segments: Vec<&str> = line.split(CELL_SEPARATOR).collect();
    if segments.len() < 2 || !segments.iter().all(|s| s.ends_with(')') && s.contains(" (")) {
        return None;
    }
    let first = segments[0];
    let value_start = first[..first.find(" (")?].rfind(": ")?;
    let label = &first[..value_start];
    let mut cells = Vec::with_capacity(segments.len());
    for (i, segment) in segments.iter().enumerate() {
        let segment = if i == 0 { &first[value_start + 2..] } else { segment };
        let open = segment.find(" (")?;
        cells.push(TableCell {
            value: segment[..open].to_string(),
            column: segment[open + 2..segment.len() - 1].to_string(),
        });
    }
    Some((label, cells))
}

/// Whether `column` (a cell's column name as the PDF table reader writes it) holds a change between
/// periods: "change, three months ended", "quarter-over-quarter change".
pub fn is_change_column(column: &str) -> bool {
    column.starts_with("change") || column.ends_with(" change")
}

/// Longest line, in characters, that may be a section line inside a table ("Operating Income").
pub const MAX_SECTION_CHARS: usize = 60;

/// True for a short line without figures that may head a part of a table: "Revenue:", "Operating
/// Income", "Cost of sales:" — at most [`MAX_SECTION_CHARS`] characters, starting with a letter, no digit,
/// not ending a sentence. Whether it heads rows is for the caller to see (the line below is a row).
pub fn is_section_line(line: &str) -> bool {
    is_section_line_within(line, MAX_SECTION_CHARS)
}

/// [`is_section_line`] with another length bound: at most `max_chars` characters (trimmed), starting with
/// a letter, no digit, not ending a sentence. The PDF table reader allows longer section lines when they
/// end in a colon.
pub fn is_section_line_within(line: &str, max_chars: usize) -> bool {
    let t = line.trim();
    !t.is_empty()
        && t.chars().count() <= max_chars
        && !t.ends_with('.')
        && !t.chars().any(|c| c.is_ascii_digit())
        && t.chars().next().is_some_and(char::is_alphabetic)
}

/// A section line as a name: trimmed, without its trailing colon ("Cost of sales:" → "Cost of sales").
pub fn section_name(line: &str) -> String {
    line.trim().trim_end_matches(':').trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_row_reads_back() {
        let cells = vec![
            TableCell { value: "$0.82".into(), column: "three months ended April 30, 2023".into() },
            TableCell { value: "(4)%".into(), column: "change, three months ended".into() },
        ];
        let row = write_row("Net income per share: Diluted:", &cells);
        assert_eq!(row, "Net income per share: Diluted: $0.82 (three months ended April 30, 2023); (4)% (change, three months ended)");
        assert_eq!(parse_row(&row), Some(("Net income per share: Diluted", cells)));
        assert_eq!(parse_row("Revenue was $7.19 billion (up 19%); see Note 2."), None);
        assert_eq!(parse_row("Total: $5 (2023)"), None, "one cell is not a labelled row");
    }
}
