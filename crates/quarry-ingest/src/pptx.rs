//! PowerPoint presentations (Office Open XML, `.pptx`), read with zip and quick-xml: one block per slide,
//! in the order the presentation lists them (`p:sldIdLst` in `ppt/presentation.xml`, resolved through its
//! relationships), each under the heading path `Slide N > title` so a citation reads
//! `deck.pptx, Slide 4 > Revenue by segment`.
//!
//! A slide's block holds its title, the text of its other shapes in document order (group shapes
//! included), its tables as Markdown tables (first row the header, as DOCX tables are), and its speaker
//! notes after `Notes:`. Slide numbers and the slide image placeholder of a notes page are left out;
//! footers and dates stay (they often name the company or period a slide is about).

use crate::package::{attribute, entity_text, folder_of, read_part, resolve, Package};
use crate::IngestError;
use quarry_core::{Block, Location};
use quick_xml::events::{BytesStart, Event};
use std::collections::HashMap;
use std::io::Cursor;

/// Placeholder types whose text says nothing about the slide's content (its number, the notes page's
/// slide picture).
const BOILERPLATE_PLACEHOLDERS: &[&str] = &["sldNum", "sldImg"];

/// Slide blocks, the number of slides, and warnings (a slide that could not be read).
///
/// Errors: [`IngestError::Malformed`] when the bytes are not a ZIP package or have no
/// `ppt/presentation.xml`.
pub(crate) fn load(bytes: &[u8]) -> Result<(Vec<Block>, u32, Vec<String>), IngestError> {
    let mut package = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| IngestError::malformed("pptx", e))?;
    let slides = slide_parts(&mut package)?;
    let mut blocks = Vec::new();
    let mut warnings = Vec::new();
    for (index, part) in slides.iter().enumerate() {
        let number = index + 1;
        let Some(xml) = read_part(&mut package, part) else {
            warnings.push(format!("slide {number} ({part}) could not be read"));
            continue;
        };
        let slide = shape_text(&xml);
        let mut lines: Vec<String> = slide.title.iter().cloned().collect();
        lines.extend(slide.lines);
        if let Some(notes_part) = related_part(&mut package, part, "/notesSlide") {
            if let Some(notes_xml) = read_part(&mut package, &notes_part) {
                let notes = shape_text(&notes_xml);
                let notes: Vec<String> = notes.title.into_iter().chain(notes.lines).collect();
                if !notes.is_empty() {
                    lines.push(format!("Notes: {}", notes.join("\n")));
                }
            }
        }
        if lines.is_empty() {
            continue;
        }
        let mut heading_path = vec![format!("Slide {number}")];
        heading_path.extend(slide.title);
        blocks.push(Block { text: lines.join("\n"), location: Location { heading_path, ..Default::default() } });
    }
    Ok((blocks, slides.len() as u32, warnings))
}

/// The slide parts in presentation order. A package whose presentation part lists no slides (a damaged
/// list) falls back to the `ppt/slides/slideN.xml` parts by number.
fn slide_parts(package: &mut Package<'_>) -> Result<Vec<String>, IngestError> {
    let presentation = read_part(package, "ppt/presentation.xml")
        .ok_or_else(|| IngestError::malformed("pptx", "no readable ppt/presentation.xml"))?;
    let relationships = relationships(package, "ppt/presentation.xml");
    let mut slides = Vec::new();
    let mut reader = quick_xml::Reader::from_str(&presentation);
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) | Ok(Event::Empty(e)) if e.name().as_ref() == "p:sldId" => {
                if let Some(target) = attribute(&e, "r:id").and_then(|id| relationships.get(&id)) {
                    slides.push(target.0.clone());
                }
            }
            Ok(Event::Eof) => break,
            Err(e) => return Err(IngestError::malformed("pptx", format!("ppt/presentation.xml: {e}"))),
            _ => {}
        }
    }
    if slides.is_empty() {
        let mut numbered: Vec<(u32, String)> = package
            .file_names()
            .filter_map(|name| {
                let number = name.strip_prefix("ppt/slides/slide")?.strip_suffix(".xml")?.parse().ok()?;
                Some((number, name.to_string()))
            })
            .collect();
        numbered.sort();
        slides = numbered.into_iter().map(|(_, name)| name).collect();
    }
    Ok(slides)
}

/// The part a relationship of `part` points to whose type ends in `kind` (e.g. `/notesSlide`).
fn related_part(package: &mut Package<'_>, part: &str, kind: &str) -> Option<String> {
    relationships(package, part).into_values().find(|(_, rel_type)| rel_type.ends_with(kind)).map(|(target, _)| target)
}

/// A part's relationships (`_rels/<name>.rels` beside it): id → (target part path, relationship type).
/// Targets are resolved against the part's folder; external targets (links) are left out.
fn relationships(package: &mut Package<'_>, part: &str) -> HashMap<String, (String, String)> {
    let folder = folder_of(part);
    let name = part.strip_prefix(folder).unwrap_or(part).trim_start_matches('/');
    let rels_path =
        if folder.is_empty() { format!("_rels/{name}.rels") } else { format!("{folder}/_rels/{name}.rels") };
    let mut map = HashMap::new();
    let Some(xml) = read_part(package, &rels_path) else { return map };
    let mut reader = quick_xml::Reader::from_str(&xml);
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) | Ok(Event::Empty(e)) if e.name().as_ref() == "Relationship" => {
                if attribute(&e, "TargetMode").as_deref() == Some("External") {
                    continue;
                }
                if let (Some(id), Some(target)) = (attribute(&e, "Id"), attribute(&e, "Target")) {
                    let rel_type = attribute(&e, "Type").unwrap_or_default();
                    map.insert(id, (resolve(folder, &target), rel_type));
                }
            }
            Ok(Event::Eof) | Err(_) => break,
            _ => {}
        }
    }
    map
}

/// The text of one slide (or notes page).
#[derive(Debug, Default, PartialEq)]
struct SlideText {
    /// The title placeholder's text (`title` or `ctrTitle`), when the slide has one.
    title: Option<String>,
    /// Paragraphs of the other shapes and Markdown tables, in document order.
    lines: Vec<String>,
}

/// One shape being read: its placeholder type and the paragraphs seen so far.
struct Shape {
    placeholder: Option<String>,
    paragraphs: Vec<String>,
}

/// Reads the shapes (`p:sp`), their paragraphs (`a:p` of `a:t` runs) and tables (`a:tbl`) of a slide part.
fn shape_text(xml: &str) -> SlideText {
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut out = SlideText::default();
    let mut shapes: Vec<Shape> = Vec::new();
    let mut paragraph: Option<String> = None;
    let mut in_run_text = false;
    // The table being read: its rows, the current row, and the current cell's paragraphs.
    let mut table: Option<Vec<Vec<String>>> = None;
    let mut row: Vec<String> = Vec::new();
    let mut cell: Option<Vec<String>> = None;
    loop {
        let event = match reader.read_event() {
            Ok(Event::Eof) | Err(_) => break,
            Ok(event) => event,
        };
        match event {
            Event::Start(e) => match e.name().as_ref() {
                "p:sp" => shapes.push(Shape { placeholder: None, paragraphs: Vec::new() }),
                "p:ph" => set_placeholder(&mut shapes, &e),
                "a:p" => paragraph = Some(String::new()),
                "a:t" => in_run_text = true,
                "a:tbl" => table = Some(Vec::new()),
                "a:tr" => row.clear(),
                "a:tc" => cell = Some(Vec::new()),
                _ => {}
            },
            Event::Empty(e) => match e.name().as_ref() {
                "p:ph" => set_placeholder(&mut shapes, &e),
                "a:br" => {
                    if let Some(p) = paragraph.as_mut() {
                        p.push(' ');
                    }
                }
                "a:tc" => row.push(String::new()),
                _ => {}
            },
            Event::End(e) => match e.name().as_ref() {
                "a:t" => in_run_text = false,
                "a:p" => {
                    let text = paragraph.take().unwrap_or_default().split_whitespace().collect::<Vec<_>>().join(" ");
                    if text.is_empty() {
                        continue;
                    }
                    if let Some(cell) = cell.as_mut() {
                        cell.push(text);
                    } else if let Some(shape) = shapes.last_mut() {
                        shape.paragraphs.push(text);
                    } else {
                        out.lines.push(text);
                    }
                }
                "a:tc" => {
                    let text = cell.take().unwrap_or_default().join(" ").replace('|', "\\|");
                    row.push(text);
                }
                "a:tr" => {
                    if let Some(table) = table.as_mut() {
                        table.push(std::mem::take(&mut row));
                    }
                }
                "a:tbl" => {
                    let markdown = crate::docx::markdown_table(table.take().unwrap_or_default());
                    if !markdown.is_empty() {
                        out.lines.push(markdown);
                    }
                }
                "p:sp" => {
                    let Some(shape) = shapes.pop() else { continue };
                    match shape.placeholder.as_deref() {
                        Some("title" | "ctrTitle") if out.title.is_none() && !shape.paragraphs.is_empty() => {
                            out.title = Some(shape.paragraphs.join(" "));
                        }
                        Some(kind) if BOILERPLATE_PLACEHOLDERS.contains(&kind) => {}
                        _ => out.lines.extend(shape.paragraphs),
                    }
                }
                _ => {}
            },
            Event::Text(t) if in_run_text => {
                if let Some(p) = paragraph.as_mut() {
                    p.push_str(&t.xml10_content());
                }
            }
            Event::GeneralRef(r) if in_run_text => {
                if let (Some(p), Some(text)) = (paragraph.as_mut(), entity_text(&r)) {
                    p.push_str(&text);
                }
            }
            _ => {}
        }
    }
    out
}

/// Records the placeholder type of the shape being read (`body` when the placeholder names none).
fn set_placeholder(shapes: &mut [Shape], element: &BytesStart<'_>) {
    if let Some(shape) = shapes.last_mut() {
        shape.placeholder = Some(attribute(element, "type").unwrap_or_else(|| "body".to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn title_body_table_and_boilerplate_of_a_slide() {
        let xml = r#"<p:sld xmlns:p="p" xmlns:a="a"><p:cSld><p:spTree>
            <p:sp><p:nvSpPr><p:nvPr><p:ph type="title"/></p:nvPr></p:nvSpPr>
              <p:txBody><a:p><a:r><a:t>Revenue &amp; margin</a:t></a:r></a:p></p:txBody></p:sp>
            <p:grpSp><p:sp><p:txBody><a:p><a:r><a:t>Up 12%</a:t></a:r><a:br/><a:r><a:t>year on year</a:t></a:r></a:p></p:txBody></p:sp></p:grpSp>
            <p:graphicFrame><a:graphic><a:graphicData><a:tbl>
              <a:tr><a:tc><a:txBody><a:p><a:r><a:t>Quarter</a:t></a:r></a:p></a:txBody></a:tc><a:tc><a:txBody><a:p><a:r><a:t>Revenue</a:t></a:r></a:p></a:txBody></a:tc></a:tr>
              <a:tr><a:tc><a:txBody><a:p><a:r><a:t>Q3</a:t></a:r></a:p></a:txBody></a:tc><a:tc><a:txBody><a:p><a:r><a:t>$12 m</a:t></a:r></a:p></a:txBody></a:tc></a:tr>
            </a:tbl></a:graphicData></a:graphic></p:graphicFrame>
            <p:sp><p:nvSpPr><p:nvPr><p:ph type="sldNum"/></p:nvPr></p:nvSpPr><p:txBody><a:p><a:r><a:t>7</a:t></a:r></a:p></p:txBody></p:sp>
        </p:spTree></p:cSld></p:sld>"#;
        let slide = shape_text(xml);
        assert_eq!(slide.title.as_deref(), Some("Revenue & margin"));
        assert_eq!(
            slide.lines,
            vec!["Up 12% year on year".to_string(), "| Quarter | Revenue |\n| --- | --- |\n| Q3 | $12 m |".to_string()]
        );
    }

    /// A whole package, written here: slides in the presentation's order (not the part names'), the
    /// notes page's text after `Notes:` without its slide-image placeholder.
    #[test]
    fn a_package_reads_slides_in_presentation_order_with_notes() {
        use std::io::Write;
        let rel = |id: &str, kind: &str, target: &str| {
            format!(
                r#"<Relationship Id="{id}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/{kind}" Target="{target}"/>"#
            )
        };
        let slide = |title: &str, body: &str| {
            format!(
                r#"<p:sld><p:cSld><p:spTree><p:sp><p:nvSpPr><p:nvPr><p:ph type="title"/></p:nvPr></p:nvSpPr><p:txBody><a:p><a:r><a:t>{title}</a:t></a:r></a:p></p:txBody></p:sp><p:sp><p:txBody><a:p><a:r><a:t>{body}</a:t></a:r></a:p></p:txBody></p:sp></p:spTree></p:cSld></p:sld>"#
            )
        };
        let parts: Vec<(&str, String)> = vec![
            ("ppt/presentation.xml", r#"<p:presentation><p:sldIdLst><p:sldId id="256" r:id="rId7"/><p:sldId id="257" r:id="rId3"/></p:sldIdLst></p:presentation>"#.into()),
            ("ppt/_rels/presentation.xml.rels", format!("<Relationships>{}{}</Relationships>", rel("rId3", "slide", "slides/slide1.xml"), rel("rId7", "slide", "slides/slide2.xml"))),
            ("ppt/slides/slide1.xml", slide("Outlook", "Second in the deck")),
            ("ppt/slides/slide2.xml", slide("Results", "First in the deck")),
            ("ppt/slides/_rels/slide2.xml.rels", format!("<Relationships>{}</Relationships>", rel("rId1", "notesSlide", "../notesSlides/notesSlide9.xml"))),
            ("ppt/notesSlides/notesSlide9.xml", r#"<p:notes><p:cSld><p:spTree><p:sp><p:nvSpPr><p:nvPr><p:ph type="sldImg"/></p:nvPr></p:nvSpPr></p:sp><p:sp><p:nvSpPr><p:nvPr><p:ph type="body" idx="1"/></p:nvPr></p:nvSpPr><p:txBody><a:p><a:r><a:t>Say the margin first.</a:t></a:r></a:p></p:txBody></p:sp></p:spTree></p:cSld></p:notes>"#.into()),
        ];
        let mut bytes = Vec::new();
        {
            let mut writer = zip::ZipWriter::new(std::io::Cursor::new(&mut bytes));
            for (name, xml) in &parts {
                writer.start_file(*name, zip::write::SimpleFileOptions::default()).unwrap();
                writer.write_all(xml.as_bytes()).unwrap();
            }
            writer.finish().unwrap();
        }
        let (blocks, slides, warnings) = load(&bytes).unwrap();
        assert_eq!((slides, warnings.len()), (2, 0));
        assert_eq!(blocks[0].location.heading_path, ["Slide 1", "Results"]);
        assert_eq!(blocks[0].text, "Results\nFirst in the deck\nNotes: Say the margin first.");
        assert_eq!(blocks[1].location.heading_path, ["Slide 2", "Outlook"]);
        assert_eq!(blocks[1].text, "Outlook\nSecond in the deck");
    }
}
