//! Reading the parts of ZIP-based document packages (Office Open XML, OpenDocument, EPUB): a part's text
//! under a size cap, an XML attribute's value, entity references, and relative part names.

use quick_xml::events::{BytesRef, BytesStart};
use std::io::{Cursor, Read};

/// The most bytes read from one part of a package (the package itself is bounded by the file limit).
pub(crate) const MAX_PART_BYTES: u64 = 256 << 20;

/// A package opened over in-memory bytes.
pub(crate) type Package<'a> = zip::ZipArchive<Cursor<&'a [u8]>>;

/// The text of the part `name`, or `None` when it is missing, not UTF-8 or unreadable.
pub(crate) fn read_part(package: &mut Package<'_>, name: &str) -> Option<String> {
    let part = package.by_name(name).ok()?;
    let mut text = String::new();
    part.take(MAX_PART_BYTES).read_to_string(&mut text).ok()?;
    Some(text)
}

/// An attribute's value (by its qualified name, e.g. `r:id`) with XML escapes resolved.
pub(crate) fn attribute(element: &BytesStart<'_>, name: &str) -> Option<String> {
    let attr = element.try_get_attribute(name).ok()??;
    let raw = attr.value.to_string();
    Some(quick_xml::escape::unescape(&raw).map(|v| v.into_owned()).unwrap_or(raw))
}

/// The text an entity reference stands for (`&amp;` → `&`, `&#x3B1;` → `α`); quick-xml reports them as
/// events of their own.
pub(crate) fn entity_text(reference: &BytesRef<'_>) -> Option<String> {
    reference.resolve_char_ref().ok().flatten().map(String::from).or_else(|| {
        let name = reference.clone().into_inner();
        quick_xml::escape::resolve_predefined_entity(&name).map(str::to_string)
    })
}

/// A link between parts made a package path: absolute targets (`/ppt/slides/slide1.xml`) as they are,
/// relative ones against `folder`, `%XX` escapes decoded, `..` and `.` resolved, any `#fragment` dropped.
pub(crate) fn resolve(folder: &str, target: &str) -> String {
    let target = target.split('#').next().unwrap_or(target);
    let target = percent_decode(target);
    let joined = match target.strip_prefix('/') {
        Some(absolute) => absolute.to_string(),
        None if folder.is_empty() => target.clone(),
        None => format!("{folder}/{target}"),
    };
    let mut parts: Vec<&str> = Vec::new();
    for component in joined.split('/') {
        match component {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    parts.join("/")
}

/// The folder part of a part name (`EPUB/content.opf` → `EPUB`; a top-level name → empty).
pub(crate) fn folder_of(part: &str) -> &str {
    part.rsplit_once('/').map(|(folder, _)| folder).unwrap_or("")
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(high), Some(low)) => {
                out.push((high * 16 + low) as u8);
                i += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_resolve_against_the_part_folder() {
        assert_eq!(resolve("ppt", "slides/slide1.xml"), "ppt/slides/slide1.xml");
        assert_eq!(resolve("ppt/slides", "../notesSlides/notesSlide1.xml"), "ppt/notesSlides/notesSlide1.xml");
        assert_eq!(resolve("ppt/slides", "/ppt/media/x.png"), "ppt/media/x.png");
        assert_eq!(resolve("OEBPS", "Text/chapter%201.xhtml#start"), "OEBPS/Text/chapter 1.xhtml");
        assert_eq!(resolve("", "content.opf"), "content.opf");
        assert_eq!(folder_of("EPUB/content.opf"), "EPUB");
        assert_eq!(folder_of("content.opf"), "");
    }
}
