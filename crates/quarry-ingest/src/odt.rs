//! OpenDocument text (`.odt`) and presentations (`.odp`), read with zip and quick-xml from their
//! `content.xml`: paragraphs and list items in document order, headings (`text:h` with its outline level)
//! as the heading path, tables as Markdown tables (first row the header, as DOCX tables are), footnotes
//! inline where they are cited. Comments (`office:annotation`) are left out. One block per heading
//! section; in a presentation one block per slide (`draw:page`), under `Slide N > title` (the title
//! frame's text), its speaker notes after `Notes:` as PPTX slides have them.

use crate::package::{attribute, entity_text, read_part};
use crate::IngestError;
use quarry_core::{Block, Location};
use quick_xml::events::{BytesStart, Event};
use std::io::Cursor;

/// A repeated table cell (`table:number-columns-repeated`) is written at most this many times: sheets
/// and tables pad rows with thousands of repeated empty cells.
const MAX_REPEATED_CELLS: usize = 64;

/// Section blocks and warnings.
///
/// Errors: [`IngestError::Malformed`] when the package or its `content.xml` cannot be read.
pub(crate) fn load(bytes: &[u8]) -> Result<(Vec<Block>, Vec<String>), IngestError> {
    let mut package = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| IngestError::malformed("odt", e))?;
    let content = read_part(&mut package, "content.xml")
        .ok_or_else(|| IngestError::malformed("odt", "no readable content.xml"))?;
    content_blocks(&content)
}

/// Slide blocks, the slide count and warnings of an OpenDocument presentation.
///
/// Errors: [`IngestError::Malformed`] when the package or its `content.xml` cannot be read.
pub(crate) fn load_presentation(bytes: &[u8]) -> Result<(Vec<Block>, u32, Vec<String>), IngestError> {
    let mut package = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| IngestError::malformed("odp", e))?;
    let content = read_part(&mut package, "content.xml")
        .ok_or_else(|| IngestError::malformed("odp", "no readable content.xml"))?;
    let slides = content.matches("<draw:page ").count() as u32;
    content_blocks(&content).map(|(blocks, warnings)| (blocks, slides, warnings))
}

/// Where the reader is inside a presentation's slide.
#[derive(Default)]
struct Slide {
    /// 1-based number of the slide being read; 0 outside slides (a text document).
    number: u32,
    /// Inside the slide's title frame (`presentation:class="title"`).
    in_title: bool,
    title: Option<String>,
    /// Inside the speaker notes (`presentation:notes`), and what they say.
    in_notes: bool,
    notes: Vec<String>,
}

/// Collects sections: the heading path and the paragraphs under it.
#[derive(Default)]
struct Sections {
    path: Vec<(u32, String)>,
    current: Vec<String>,
    blocks: Vec<Block>,
}

impl Sections {
    fn flush(&mut self) {
        if self.current.is_empty() {
            return;
        }
        let location =
            Location { heading_path: self.path.iter().map(|(_, t)| t.clone()).collect(), ..Default::default() };
        self.blocks.push(Block { text: std::mem::take(&mut self.current).join("\n\n"), location });
    }

    fn heading(&mut self, level: u32, title: String) {
        self.flush();
        self.path.retain(|(l, _)| *l < level);
        self.path.push((level, title.clone()));
        self.current.push(title);
    }
}

/// A table being read: finished rows, the current row, the current cell's paragraphs, and how many times
/// the cell repeats.
#[derive(Default)]
struct TableState {
    rows: Vec<Vec<String>>,
    row: Vec<String>,
    cell: Vec<String>,
    repeat: usize,
}

fn content_blocks(xml: &str) -> Result<(Vec<Block>, Vec<String>), IngestError> {
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut sections = Sections::default();
    // Paragraphs and headings can nest (a footnote's paragraphs inside the citing paragraph): a stack of
    // buffers, each with the heading level it is for (0 for a paragraph).
    let mut paragraphs: Vec<(u32, String)> = Vec::new();
    let mut tables: Vec<TableState> = Vec::new();
    let mut skip_depth = 0usize;
    let mut in_body = false;
    let mut slide = Slide::default();
    loop {
        let event = match reader.read_event() {
            Ok(Event::Eof) => break,
            Ok(event) => event,
            Err(e) => return Err(IngestError::malformed("odt", format!("content.xml: {e}"))),
        };
        match event {
            Event::Start(e) => {
                let name = e.name();
                if skip_depth > 0 || matches!(name.as_ref(), "office:annotation" | "text:note-citation") {
                    skip_depth += 1;
                    continue;
                }
                match name.as_ref() {
                    "office:body" => in_body = true,
                    "draw:page" if in_body => {
                        sections.flush();
                        slide = Slide { number: slide.number + 1, ..Default::default() };
                        sections.path = vec![(1, format!("Slide {}", slide.number))];
                    }
                    "draw:frame" => slide.in_title = attribute(&e, "presentation:class").as_deref() == Some("title"),
                    "presentation:notes" => slide.in_notes = true,
                    "text:p" if in_body => paragraphs.push((0, String::new())),
                    "text:h" if in_body => paragraphs.push((outline_level(&e), String::new())),
                    "table:table" if in_body => tables.push(TableState::default()),
                    "table:table-row" => {
                        if let Some(t) = tables.last_mut() {
                            t.row.clear();
                        }
                    }
                    "table:table-cell" | "table:covered-table-cell" => {
                        if let Some(t) = tables.last_mut() {
                            t.cell.clear();
                            t.repeat = repeated(&e);
                        }
                    }
                    _ => {}
                }
            }
            Event::Empty(e) => {
                if skip_depth > 0 {
                    continue;
                }
                match e.name().as_ref() {
                    "text:s" => {
                        let count = attribute(&e, "text:c").and_then(|c| c.parse::<usize>().ok()).unwrap_or(1);
                        push_text(&mut paragraphs, &" ".repeat(count.min(64)));
                    }
                    "text:tab" => push_text(&mut paragraphs, "\t"),
                    "text:line-break" => push_text(&mut paragraphs, "\n"),
                    "table:table-cell" | "table:covered-table-cell" => {
                        if let Some(t) = tables.last_mut() {
                            let repeat = repeated(&e);
                            t.row.extend(std::iter::repeat_n(String::new(), repeat));
                        }
                    }
                    _ => {}
                }
            }
            Event::End(e) => {
                if skip_depth > 0 {
                    skip_depth -= 1;
                    continue;
                }
                match e.name().as_ref() {
                    "office:body" => in_body = false,
                    "draw:frame" => slide.in_title = false,
                    "presentation:notes" => slide.in_notes = false,
                    "draw:page" => {
                        if !slide.notes.is_empty() {
                            sections.current.push(format!("Notes: {}", slide.notes.join(" ")));
                        }
                        sections.flush();
                    }
                    "text:p" | "text:h" => {
                        let Some((level, text)) = paragraphs.pop() else { continue };
                        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
                        if text.is_empty() {
                            continue;
                        }
                        if let Some(parent) = paragraphs.last_mut() {
                            // A footnote's paragraph: inline, in brackets, where it is cited.
                            parent.1.push_str(&format!(" [{text}] "));
                        } else if let Some(table) = tables.last_mut() {
                            table.cell.push(text);
                        } else if slide.in_notes {
                            slide.notes.push(text);
                        } else if slide.number > 0 && slide.in_title && slide.title.is_none() {
                            // The slide's title names its block, as a PPTX slide's does.
                            sections.path = vec![(1, format!("Slide {}", slide.number)), (2, text.clone())];
                            slide.title = Some(text.clone());
                            sections.current.push(text);
                        } else if level > 0 {
                            sections.heading(level, text);
                        } else {
                            sections.current.push(text);
                        }
                    }
                    "table:table-cell" | "table:covered-table-cell" => {
                        if let Some(t) = tables.last_mut() {
                            let text = t.cell.join(" ").replace('|', "\\|");
                            let repeat = if text.is_empty() { t.repeat } else { t.repeat.min(MAX_REPEATED_CELLS) };
                            t.row.extend(std::iter::repeat_n(text, repeat));
                        }
                    }
                    "table:table-row" => {
                        if let Some(t) = tables.last_mut() {
                            let mut row = std::mem::take(&mut t.row);
                            while row.last().is_some_and(String::is_empty) {
                                row.pop(); // the padding of repeated empty cells
                            }
                            t.rows.push(row);
                        }
                    }
                    "table:table" => {
                        let Some(table) = tables.pop() else { continue };
                        let markdown = crate::docx::markdown_table(table.rows);
                        if markdown.is_empty() {
                            continue;
                        }
                        match tables.last_mut() {
                            Some(outer) => outer.cell.push(markdown.replace('\n', " ")),
                            None => sections.current.push(markdown),
                        }
                    }
                    _ => {}
                }
            }
            Event::Text(t) if skip_depth == 0 => push_text(&mut paragraphs, &t.xml10_content()),
            Event::GeneralRef(r) if skip_depth == 0 => {
                if let Some(text) = entity_text(&r) {
                    push_text(&mut paragraphs, &text);
                }
            }
            _ => {}
        }
    }
    sections.flush();
    Ok((sections.blocks, Vec::new()))
}

/// Appends text to the innermost open paragraph; text outside paragraphs (indentation) is dropped.
fn push_text(paragraphs: &mut [(u32, String)], text: &str) {
    if let Some((_, p)) = paragraphs.last_mut() {
        p.push_str(text);
    }
}

fn outline_level(element: &BytesStart<'_>) -> u32 {
    attribute(element, "text:outline-level").and_then(|l| l.parse().ok()).filter(|l| *l > 0).unwrap_or(1)
}

/// How many columns a cell spans by repetition (`table:number-columns-repeated`, default 1).
fn repeated(element: &BytesStart<'_>) -> usize {
    attribute(element, "table:number-columns-repeated").and_then(|n| n.parse().ok()).unwrap_or(1).clamp(1, 1 << 14)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slides_in_order_with_titles_tables_and_notes() {
        let xml = r#"<office:document-content><office:body><office:presentation>
            <draw:page draw:name="page1">
              <draw:frame presentation:class="title"><draw:text-box><text:p>Quarterly results</text:p></draw:text-box></draw:frame>
              <draw:frame presentation:class="outline"><draw:text-box><text:list><text:list-item><text:p>Revenue 7.19 billion</text:p></text:list-item></text:list></draw:text-box></draw:frame>
              <presentation:notes><draw:frame><draw:text-box><text:p>Say it slowly.</text:p></draw:text-box></draw:frame></presentation:notes>
            </draw:page>
            <draw:page draw:name="page2">
              <draw:frame><table:table><table:table-row><table:table-cell><text:p>Segment</text:p></table:table-cell><table:table-cell><text:p>Sales</text:p></table:table-cell></table:table-row>
              <table:table-row><table:table-cell><text:p>Data center</text:p></table:table-cell><table:table-cell><text:p>4.28</text:p></table:table-cell></table:table-row></table:table></draw:frame>
            </draw:page>
        </office:presentation></office:body></office:document-content>"#;
        let (blocks, _) = content_blocks(xml).unwrap();
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[0].location.heading_path, ["Slide 1", "Quarterly results"]);
        assert_eq!(blocks[0].text, "Quarterly results\n\nRevenue 7.19 billion\n\nNotes: Say it slowly.");
        assert_eq!(blocks[1].location.heading_path, ["Slide 2"]);
        assert_eq!(blocks[1].text, "| Segment | Sales |\n| --- | --- |\n| Data center | 4.28 |");
    }

    #[test]
    fn headings_paragraphs_tables_and_notes() {
        let xml = r#"<office:document-content><office:body><office:text>
            <text:h text:outline-level="1">Results</text:h>
            <text:p>Revenue rose<text:note><text:note-citation>1</text:note-citation><text:note-body><text:p>Unaudited.</text:p></text:note-body></text:note> to <text:s text:c="2"/>12 m.</text:p>
            <text:h text:outline-level="2">By region</text:h>
            <table:table><table:table-row><table:table-cell><text:p>Region</text:p></table:table-cell><table:table-cell><text:p>Sales</text:p></table:table-cell><table:table-cell table:number-columns-repeated="1000"/></table:table-row>
            <table:table-row><table:table-cell><text:p>North</text:p></table:table-cell><table:table-cell><text:p>7 &amp; 8</text:p></table:table-cell></table:table-row></table:table>
            <office:annotation><text:p>a reviewer's comment</text:p></office:annotation>
        </office:text></office:body></office:document-content>"#;
        let (blocks, _) = content_blocks(xml).unwrap();
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[0].location.heading_path, ["Results"]);
        assert_eq!(blocks[0].text, "Results\n\nRevenue rose [Unaudited.] to 12 m.");
        assert_eq!(blocks[1].location.heading_path, ["Results", "By region"]);
        assert_eq!(blocks[1].text, "By region\n\n| Region | Sales |\n| --- | --- |\n| North | 7 & 8 |");
    }
}
