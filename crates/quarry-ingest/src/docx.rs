//! DOCX through docx-rs: paragraphs in reading order with their heading path (H1 > H2 > …), list items,
//! tables rendered as Markdown tables, footnotes, and page headers/footers (once each, at the end).
//! Text boxes and equations, which docx-rs does not read, come from [`crate::docx_extras`] as blocks of
//! their own after the body.
//!
//! Headings are recognised by paragraph outline level or by style ("Heading N", "Title", or a style based
//! on one), as Word itself does for its navigation pane.

use crate::IngestError;
use docx_rs::{
    DocumentChild, FooterChild, HeaderChild, Paragraph, ParagraphChild, Run, RunChild, StructuredDataTagChild, Table,
    TableCellContent, TableChild, TableRowChild,
};
use quarry_core::{Block, Location};
use std::collections::HashMap;

/// Text blocks (one per heading section) and warnings. Errors: [`IngestError::Malformed`] when docx-rs
/// cannot read the package.
pub(crate) fn load(bytes: &[u8]) -> Result<(Vec<Block>, Vec<String>), IngestError> {
    let options = docx_rs::ReadDocxOptions::default().with_image_previews(false);
    let docx = docx_rs::read_docx_with_options(bytes, options).map_err(|e| IngestError::malformed("docx", e))?;
    let styles = StyleLevels::new(&docx.styles);
    let mut writer = SectionWriter::default();
    for child in &docx.document.children {
        write_document_child(child, &styles, &mut writer);
    }
    writer.flush();
    if !writer.footnotes.is_empty() {
        let text = writer.footnotes.join("\n");
        writer
            .blocks
            .push(Block { text, location: Location { heading_path: vec!["Footnotes".into()], ..Default::default() } });
    }
    let (text_boxes, equations) = crate::docx_extras::text_boxes_and_equations(bytes);
    for (title, items) in [("Text boxes", text_boxes), ("Equations", equations)] {
        if !items.is_empty() {
            let location = Location { heading_path: vec![title.to_string()], ..Default::default() };
            writer.blocks.push(Block { text: items.join("\n\n"), location });
        }
    }
    let margins = header_footer_text(&docx.document.section_property);
    if !margins.is_empty() {
        writer.blocks.push(Block {
            text: margins.join("\n"),
            location: Location { heading_path: vec!["Page headers and footers".into()], ..Default::default() },
        });
    }
    Ok((writer.blocks, Vec::new()))
}

/// Accumulates the text of the current heading section and closes a block whenever the heading changes.
#[derive(Default)]
struct SectionWriter {
    heading_path: Vec<(usize, String)>,
    current: String,
    blocks: Vec<Block>,
    footnotes: Vec<String>,
}

impl SectionWriter {
    fn flush(&mut self) {
        let text = self.current.trim().to_string();
        self.current.clear();
        if !text.is_empty() {
            let heading_path = self.heading_path.iter().map(|(_, t)| t.clone()).collect();
            self.blocks.push(Block { text, location: Location { heading_path, ..Default::default() } });
        }
    }

    fn heading(&mut self, level: usize, title: String) {
        self.flush();
        self.heading_path.retain(|(l, _)| *l < level);
        self.heading_path.push((level, title.clone()));
        self.current.push_str(&format!("{} {}\n\n", "#".repeat(level.min(6)), title));
    }

    fn paragraph(&mut self, line: &str) {
        self.current.push_str(line);
        self.current.push_str("\n\n");
    }
}

fn write_document_child(child: &DocumentChild, styles: &StyleLevels, out: &mut SectionWriter) {
    match child {
        DocumentChild::Paragraph(p) => write_paragraph(p, styles, out),
        DocumentChild::Table(t) => {
            let table = table_markdown(t, &mut out.footnotes);
            out.paragraph(&table);
        }
        DocumentChild::StructuredDataTag(sdt) => {
            for c in &sdt.children {
                match c {
                    StructuredDataTagChild::Paragraph(p) => write_paragraph(p, styles, out),
                    StructuredDataTagChild::Table(t) => {
                        let table = table_markdown(t, &mut out.footnotes);
                        out.paragraph(&table);
                    }
                    StructuredDataTagChild::Run(r) => {
                        let mut s = String::new();
                        run_text(r, &mut s, &mut out.footnotes);
                        out.paragraph(s.trim());
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

fn write_paragraph(p: &Paragraph, styles: &StyleLevels, out: &mut SectionWriter) {
    let text = paragraph_text(p, &mut out.footnotes);
    let text = text.trim();
    if text.is_empty() {
        return;
    }
    let style_id = p.property.style.as_ref().map(|s| s.val.as_str());
    let level = p
        .property
        .outline_lvl
        .as_ref()
        .map(|o| o.v + 1)
        .filter(|l| *l <= 9)
        .or_else(|| style_id.and_then(|id| styles.level(id)));
    if let Some(level) = level {
        out.heading(level, text.to_string());
    } else if let Some(numbering) = &p.property.numbering_property {
        let depth = numbering.level.as_ref().map(|l| l.val).unwrap_or(0);
        out.current.push_str(&format!("{}- {}\n", "  ".repeat(depth), text));
    } else {
        out.paragraph(text);
    }
}

fn paragraph_text(p: &Paragraph, footnotes: &mut Vec<String>) -> String {
    let mut s = String::new();
    for child in &p.children {
        paragraph_child_text(child, &mut s, footnotes);
    }
    s
}

fn paragraph_child_text(child: &ParagraphChild, s: &mut String, footnotes: &mut Vec<String>) {
    match child {
        ParagraphChild::Run(r) => run_text(r, s, footnotes),
        ParagraphChild::Insert(ins) => {
            for c in &ins.children {
                if let docx_rs::InsertChild::Run(r) = c {
                    run_text(r, s, footnotes);
                }
            }
        }
        ParagraphChild::MoveTo(mv) => {
            for c in &mv.children {
                if let docx_rs::MoveToChild::Run(r) = c {
                    run_text(r, s, footnotes);
                }
            }
        }
        ParagraphChild::Hyperlink(h) => {
            for c in &h.children {
                paragraph_child_text(c, s, footnotes);
            }
        }
        ParagraphChild::StructuredDataTag(sdt) => {
            for c in &sdt.children {
                match c {
                    StructuredDataTagChild::Run(r) => run_text(r, s, footnotes),
                    StructuredDataTagChild::Paragraph(p) => s.push_str(&paragraph_text(p, footnotes)),
                    _ => {}
                }
            }
        }
        // Deleted (tracked) text, bookmarks, comments and page-number fields carry no body text.
        _ => {}
    }
}

fn run_text(r: &Run, s: &mut String, footnotes: &mut Vec<String>) {
    for c in &r.children {
        match c {
            RunChild::Text(t) => s.push_str(&t.text),
            RunChild::Tab(_) | RunChild::PTab(_) => s.push(' '),
            RunChild::Break(_) | RunChild::CarriageReturn(_) => s.push('\n'),
            RunChild::FootnoteReference(f) => {
                let n = footnotes.len() + 1;
                s.push_str(&format!("[^{n}]"));
                let mut body = String::new();
                for p in &f.content {
                    body.push_str(paragraph_text(p, &mut Vec::new()).trim());
                    body.push(' ');
                }
                footnotes.push(format!("[^{n}]: {}", body.trim()));
            }
            _ => {}
        }
    }
}

/// A table as a Markdown table: the first row is the header; cell paragraphs are joined by spaces and
/// pipes escaped. Nested tables are flattened into their cell's text.
fn table_markdown(t: &Table, footnotes: &mut Vec<String>) -> String {
    let rows: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|TableChild::TableRow(row)| {
            row.cells.iter().map(|TableRowChild::TableCell(cell)| cell_text(&cell.children, footnotes)).collect()
        })
        .collect();
    markdown_table(rows)
}

/// Rows of cell texts as a Markdown table: the first non-empty row is the header, rows are padded to the
/// widest, empty rows dropped; empty when no cell has text. Cells must already have `|` escaped.
pub(crate) fn markdown_table(rows: Vec<Vec<String>>) -> String {
    let rows: Vec<Vec<String>> = rows.into_iter().filter(|row| row.iter().any(|c| !c.is_empty())).collect();
    let width = rows.iter().map(Vec::len).max().unwrap_or(0);
    if width == 0 {
        return String::new();
    }
    let line = |row: &[String]| {
        let mut cells: Vec<String> = row.to_vec();
        cells.resize(width, String::new());
        format!("| {} |", cells.join(" | "))
    };
    let mut out = vec![line(&rows[0]), format!("|{}", " --- |".repeat(width))];
    out.extend(rows[1..].iter().map(|r| line(r)));
    out.join("\n")
}

fn cell_text(children: &[TableCellContent], footnotes: &mut Vec<String>) -> String {
    let mut parts = Vec::new();
    for c in children {
        match c {
            TableCellContent::Paragraph(p) => parts.push(paragraph_text(p, footnotes)),
            TableCellContent::Table(t) => parts.push(table_markdown(t, footnotes)),
            TableCellContent::StructuredDataTag(sdt) => {
                for c in &sdt.children {
                    if let StructuredDataTagChild::Paragraph(p) = c {
                        parts.push(paragraph_text(p, footnotes));
                    }
                }
            }
            TableCellContent::TableOfContents(_) => {}
        }
    }
    parts.join(" ").split_whitespace().collect::<Vec<_>>().join(" ").replace('|', "\\|")
}

/// Distinct texts of the section's headers and footers (default, first-page, even-page), in that order.
fn header_footer_text(section: &docx_rs::SectionProperty) -> Vec<String> {
    let mut seen = Vec::new();
    let mut push = |text: String| {
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if !text.is_empty() && !seen.contains(&text) {
            seen.push(text);
        }
    };
    let mut footnotes = Vec::new();
    for (_, header) in [&section.header, &section.first_header, &section.even_header].into_iter().flatten() {
        for c in &header.children {
            match c {
                HeaderChild::Paragraph(p) => push(paragraph_text(p, &mut footnotes)),
                HeaderChild::Table(t) => push(table_markdown(t, &mut footnotes)),
                HeaderChild::StructuredDataTag(_) => {}
            }
        }
    }
    for (_, footer) in [&section.footer, &section.first_footer, &section.even_footer].into_iter().flatten() {
        for c in &footer.children {
            match c {
                FooterChild::Paragraph(p) => push(paragraph_text(p, &mut footnotes)),
                FooterChild::Table(t) => push(table_markdown(t, &mut footnotes)),
                FooterChild::StructuredDataTag(_) => {}
            }
        }
    }
    seen
}

/// Heading level (1-based) of each paragraph style, following `basedOn` chains.
struct StyleLevels {
    levels: HashMap<String, usize>,
}

impl StyleLevels {
    fn new(styles: &docx_rs::Styles) -> Self {
        let mut direct: HashMap<String, Option<usize>> = HashMap::new();
        let mut parent: HashMap<String, String> = HashMap::new();
        for style in &styles.styles {
            let name = serde_string(&style.name).unwrap_or_default();
            let level = style
                .paragraph_property
                .outline_lvl
                .as_ref()
                .map(|o| o.v + 1)
                .filter(|l| *l <= 9)
                .or_else(|| heading_level_from_name(&name))
                .or_else(|| heading_level_from_name(&style.style_id));
            direct.insert(style.style_id.clone(), level);
            if let Some(base) = style.based_on.as_ref().and_then(serde_string) {
                parent.insert(style.style_id.clone(), base);
            }
        }
        let mut levels = HashMap::new();
        for id in direct.keys() {
            let mut current = id.clone();
            for _ in 0..10 {
                if let Some(Some(level)) = direct.get(&current) {
                    levels.insert(id.clone(), *level);
                    break;
                }
                match parent.get(&current) {
                    Some(p) => current = p.clone(),
                    None => break,
                }
            }
        }
        StyleLevels { levels }
    }

    fn level(&self, style_id: &str) -> Option<usize> {
        self.levels.get(style_id).copied().or_else(|| heading_level_from_name(style_id))
    }
}

/// "Heading 2" / "heading2" / "Heading2Char" → 2; "Title" → 1.
fn heading_level_from_name(name: &str) -> Option<usize> {
    let lower = name.to_ascii_lowercase().replace(' ', "");
    if lower == "title" {
        return Some(1);
    }
    let rest = lower.strip_prefix("heading")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let level: usize = digits.parse().ok()?;
    (rest.len() == digits.len() && (1..=9).contains(&level)).then_some(level)
}

/// docx-rs keeps some string fields private but serializes them; read them back through serde.
fn serde_string<T: serde::Serialize>(value: &T) -> Option<String> {
    match serde_json::to_value(value).ok()? {
        serde_json::Value::String(s) => Some(s),
        serde_json::Value::Object(map) => map.values().find_map(|v| v.as_str().map(str::to_string)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heading_levels_from_style_names() {
        assert_eq!(heading_level_from_name("Heading 2"), Some(2));
        assert_eq!(heading_level_from_name("heading1"), Some(1));
        assert_eq!(heading_level_from_name("Title"), Some(1));
        assert_eq!(heading_level_from_name("Heading1Char"), None);
        assert_eq!(heading_level_from_name("Normal"), None);
    }
}
