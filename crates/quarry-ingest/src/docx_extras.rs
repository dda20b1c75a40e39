//! What docx-rs's reader leaves out of the document model, read straight from `word/document.xml` with
//! quick-xml: text boxes (`w:txbxContent`, kept by docx-rs for writing only) and Office Math equations
//! (`m:oMath`). Each comes back as a list of paragraphs, in document order, without duplicates (Word
//! stores a text box twice, as DrawingML and as a VML fallback).

use quick_xml::events::Event;
use std::io::Cursor;

/// Paragraph texts of text boxes and equations. Errors are swallowed into empty lists: this pass only
/// adds text, and the main reader has already reported a broken file.
pub(crate) fn text_boxes_and_equations(docx_bytes: &[u8]) -> (Vec<String>, Vec<String>) {
    let Some(xml) = read_document_xml(docx_bytes) else { return (Vec::new(), Vec::new()) };
    let mut reader = quick_xml::Reader::from_str(&xml);
    let mut text_boxes: Vec<String> = Vec::new();
    let mut equations: Vec<String> = Vec::new();
    // Nesting depth inside each construct; text counts when either is > 0.
    let (mut in_box, mut in_math) = (0usize, 0usize);
    let mut paragraph = String::new();
    let mut equation = String::new();
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) => match e.name().as_ref() {
                "w:txbxContent" => in_box += 1,
                "m:oMath" => in_math += 1,
                _ => {}
            },
            Ok(Event::End(e)) => match e.name().as_ref() {
                "w:txbxContent" => in_box = in_box.saturating_sub(1),
                "m:oMath" => {
                    in_math = in_math.saturating_sub(1);
                    if in_math == 0 {
                        push_unique(&mut equations, std::mem::take(&mut equation));
                    }
                }
                "w:p" if in_box > 0 && in_math == 0 => push_unique(&mut text_boxes, std::mem::take(&mut paragraph)),
                _ => {}
            },
            Ok(Event::Text(t)) => {
                let text = t.xml10_content();
                if in_math > 0 {
                    equation.push_str(&text);
                } else if in_box > 0 {
                    paragraph.push_str(&text);
                }
            }
            Ok(Event::GeneralRef(r)) => {
                if let Some(text) = crate::package::entity_text(&r) {
                    if in_math > 0 {
                        equation.push_str(&text);
                    } else if in_box > 0 {
                        paragraph.push_str(&text);
                    }
                }
            }
            Ok(Event::Eof) | Err(_) => break,
            _ => {}
        }
    }
    (text_boxes, equations)
}

fn push_unique(list: &mut Vec<String>, text: String) {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if !text.is_empty() && !list.contains(&text) {
        list.push(text);
    }
}

fn read_document_xml(docx_bytes: &[u8]) -> Option<String> {
    let mut archive = zip::ZipArchive::new(Cursor::new(docx_bytes)).ok()?;
    crate::package::read_part(&mut archive, "word/document.xml")
}
