//! Spreadsheets through calamine: xlsx, xlsm, xlsb, xls and ods. Every sheet, cached cell values (what the
//! formulas last computed, never the formulas), each row as `column header: value` pairs, the sheet name
//! as the location. Rows are grouped 50 to a block so locations stay useful in large sheets.

use crate::IngestError;
use calamine::{Data, Reader};
use quarry_core::{Block, Format, Location};
use std::io::{Cursor, Read, Seek};

/// Rows per block: small enough for precise citations, large enough to keep a table's context together.
const ROWS_PER_BLOCK: usize = 50;

/// Text blocks, sheet count and warnings of a workbook. Errors: [`IngestError::Malformed`] when the
/// workbook cannot be opened; a single unreadable sheet only adds a warning.
pub(crate) fn load(format: Format, bytes: &[u8]) -> Result<(Vec<Block>, u32, Vec<String>), IngestError> {
    let cursor = Cursor::new(bytes);
    let name = format.name();
    let malformed = |e: &dyn std::fmt::Display| IngestError::malformed(name, e);
    match format {
        Format::Xlsx | Format::Xlsm => read_workbook(calamine::Xlsx::new(cursor).map_err(|e| malformed(&e))?),
        Format::Xlsb => read_workbook(calamine::Xlsb::new(cursor).map_err(|e| malformed(&e))?),
        Format::Xls => read_workbook(calamine::Xls::new(cursor).map_err(|e| malformed(&e))?),
        Format::Ods => read_workbook(calamine::Ods::new(cursor).map_err(|e| malformed(&e))?),
        other => Err(IngestError::Unsupported(format!("{other} is not a spreadsheet"))),
    }
}

fn read_workbook<RS, R>(mut workbook: R) -> Result<(Vec<Block>, u32, Vec<String>), IngestError>
where
    RS: Read + Seek,
    R: Reader<RS>,
    R::Error: std::fmt::Display,
{
    let names = workbook.sheet_names();
    let mut blocks = Vec::new();
    let mut warnings = Vec::new();
    for sheet in &names {
        let range = match workbook.worksheet_range(sheet) {
            Ok(range) => range,
            Err(e) => {
                warnings.push(format!("sheet {sheet:?}: {}", crate::error::one_line(&e.to_string())));
                continue;
            }
        };
        let location = Location { sheet: Some(sheet.clone()), ..Default::default() };
        // Every block names its sheet, so keyword search finds "Q3 budget" in a sheet called that.
        let title = format!("Sheet: {sheet}\n");
        let rows: Vec<Vec<String>> = range
            .rows()
            .map(|row| row.iter().map(cell_text).collect::<Vec<_>>())
            .filter(|row| row.iter().any(|c| !c.is_empty()))
            .collect();
        let Some((header, body)) = rows.split_first() else { continue };
        let header = column_names(header);
        if body.is_empty() {
            blocks.push(Block { text: format!("{title}{}", header.join(" | ")), location });
            continue;
        }
        for group in body.chunks(ROWS_PER_BLOCK) {
            let text: Vec<String> = group.iter().map(|row| render_row(&header, row)).collect();
            blocks.push(Block { text: format!("{title}{}", text.join("\n")), location: location.clone() });
        }
    }
    Ok((blocks, names.len() as u32, warnings))
}

/// The first non-empty row names the columns; an empty header cell is named by its column letter.
fn column_names(header: &[String]) -> Vec<String> {
    header.iter().enumerate().map(|(i, h)| if h.is_empty() { column_letter(i) } else { h.clone() }).collect()
}

fn column_letter(mut index: usize) -> String {
    let mut letters = Vec::new();
    loop {
        letters.push((b'A' + (index % 26) as u8) as char);
        if index < 26 {
            break;
        }
        index = index / 26 - 1;
    }
    letters.iter().rev().collect()
}

/// `header: value; header: value` for the non-empty cells of a row (shared with CSV).
pub(crate) fn render_row(header: &[String], row: &[String]) -> String {
    let mut parts = Vec::new();
    for (i, value) in row.iter().enumerate() {
        if value.is_empty() {
            continue;
        }
        match header.get(i) {
            Some(name) if !name.is_empty() => parts.push(format!("{name}: {value}")),
            _ => parts.push(value.clone()),
        }
    }
    parts.join("; ")
}

fn cell_text(cell: &Data) -> String {
    match cell {
        Data::Empty => String::new(),
        Data::String(s) => s.split_whitespace().collect::<Vec<_>>().join(" "),
        Data::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", *f as i64),
        Data::Float(f) => format!("{}", (f * 1e6).round() / 1e6),
        Data::DateTime(dt) if !dt.is_duration() => match dt.as_datetime() {
            Some(t) if t.time() == chrono::NaiveTime::MIN => t.date().to_string(),
            Some(t) => t.to_string(),
            None => dt.to_string(),
        },
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_letters_go_past_z() {
        assert_eq!(column_letter(0), "A");
        assert_eq!(column_letter(25), "Z");
        assert_eq!(column_letter(26), "AA");
        assert_eq!(column_letter(27), "AB");
    }

    #[test]
    fn rows_skip_empty_cells_and_name_values() {
        let header = vec!["Year".to_string(), "Revenue".to_string()];
        assert_eq!(render_row(&header, &["2023".into(), "".into()]), "Year: 2023");
        assert_eq!(render_row(&header, &["2023".into(), "5".into(), "extra".into()]), "Year: 2023; Revenue: 5; extra");
    }
}
