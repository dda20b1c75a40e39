//! EPUB e-books (2 and 3), read with zip and quick-xml: the package document named by
//! `META-INF/container.xml` gives the chapters in reading order (its `spine`), each an XHTML part read as
//! HTML is (scripts and styles dropped), one block per chapter under the chapter's title (its first
//! heading, else its `<title>`, else `Chapter N`). The navigation document (the table of contents) is left
//! out. An e-book whose chapters are encrypted (DRM, listed in `META-INF/encryption.xml`) is refused as
//! encrypted; obfuscated fonts alone do not count.

use crate::package::{attribute, folder_of, read_part, resolve};
use crate::text::{html_to_text, paragraph_blocks};
use crate::IngestError;
use quarry_core::{Block, Location};
use quick_xml::events::Event;
use regex::Regex;
use std::collections::{HashMap, HashSet};
use std::io::Cursor;
use std::sync::OnceLock;

/// One entry of the package's manifest.
struct Item {
    /// Package path of the part.
    path: String,
    media_type: String,
    properties: String,
}

/// Chapter blocks and the number of chapters read, with warnings (a chapter that could not be read).
///
/// Errors: [`IngestError::Malformed`] without a container or package document, [`IngestError::Encrypted`]
/// when chapters are DRM-encrypted.
pub(crate) fn load(bytes: &[u8]) -> Result<(Vec<Block>, u32, Vec<String>), IngestError> {
    let mut package = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| IngestError::malformed("epub", e))?;
    let container = read_part(&mut package, "META-INF/container.xml")
        .ok_or_else(|| IngestError::malformed("epub", "no META-INF/container.xml"))?;
    let opf_path = first_attribute(&container, "rootfile", "full-path")
        .ok_or_else(|| IngestError::malformed("epub", "the container names no package document"))?;
    let opf = read_part(&mut package, &opf_path)
        .ok_or_else(|| IngestError::malformed("epub", format!("package document {opf_path} not readable")))?;
    let (manifest, spine) = manifest_and_spine(&opf, folder_of(&opf_path));
    let encrypted = encrypted_parts(&mut package);
    let mut blocks = Vec::new();
    let mut warnings = Vec::new();
    let mut chapters = 0u32;
    for idref in spine {
        let Some(item) = manifest.get(&idref) else {
            warnings.push(format!("the reading order names {idref:?}, which the manifest lacks"));
            continue;
        };
        let is_page = item.media_type.contains("html");
        if !is_page || item.properties.split_whitespace().any(|p| p == "nav") {
            continue;
        }
        if encrypted.contains(&item.path) {
            return Err(IngestError::Encrypted("EPUB with encrypted chapters (DRM)".into()));
        }
        let Some(xhtml) = read_part(&mut package, &item.path) else {
            warnings.push(format!("chapter {} could not be read", item.path));
            continue;
        };
        chapters += 1;
        let text = match html_to_text(&xhtml) {
            Ok(text) => text,
            Err(e) => {
                warnings.push(format!("chapter {}: {e}", item.path));
                continue;
            }
        };
        let title = chapter_title(&xhtml).unwrap_or_else(|| format!("Chapter {chapters}"));
        blocks.extend(paragraph_blocks(&text, Location { heading_path: vec![title], ..Default::default() }));
    }
    Ok((blocks, chapters, warnings))
}

/// The first value of `attr` on an element named `element` in `xml`.
fn first_attribute(xml: &str, element: &str, attr: &str) -> Option<String> {
    let mut reader = quick_xml::Reader::from_str(xml);
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) | Ok(Event::Empty(e)) if e.local_name().as_ref() == element => {
                if let Some(value) = attribute(&e, attr) {
                    return Some(value);
                }
            }
            Ok(Event::Eof) | Err(_) => return None,
            _ => {}
        }
    }
}

/// The manifest (id → item, paths resolved against the package document's folder) and the spine's
/// `idref`s in reading order.
fn manifest_and_spine(opf: &str, folder: &str) -> (HashMap<String, Item>, Vec<String>) {
    let mut manifest = HashMap::new();
    let mut spine = Vec::new();
    let mut reader = quick_xml::Reader::from_str(opf);
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) | Ok(Event::Empty(e)) => match e.local_name().as_ref() {
                "item" => {
                    if let (Some(id), Some(href)) = (attribute(&e, "id"), attribute(&e, "href")) {
                        let item = Item {
                            path: resolve(folder, &href),
                            media_type: attribute(&e, "media-type").unwrap_or_default(),
                            properties: attribute(&e, "properties").unwrap_or_default(),
                        };
                        manifest.insert(id, item);
                    }
                }
                "itemref" if attribute(&e, "linear").as_deref() != Some("no") => {
                    spine.extend(attribute(&e, "idref"));
                }
                _ => {}
            },
            Ok(Event::Eof) | Err(_) => break,
            _ => {}
        }
    }
    (manifest, spine)
}

/// Parts listed as encrypted in `META-INF/encryption.xml`, except fonts obfuscated by the IDPF or Adobe
/// algorithms (which hide a font, not the text).
fn encrypted_parts(package: &mut crate::package::Package<'_>) -> HashSet<String> {
    let mut parts = HashSet::new();
    let Some(xml) = read_part(package, "META-INF/encryption.xml") else { return parts };
    let mut reader = quick_xml::Reader::from_str(&xml);
    let mut algorithm = String::new();
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) | Ok(Event::Empty(e)) => match e.local_name().as_ref() {
                "EncryptionMethod" => algorithm = attribute(&e, "Algorithm").unwrap_or_default(),
                "CipherReference" => {
                    let font_obfuscation =
                        algorithm.contains("obfuscation") || algorithm.contains("ns.adobe.com/pdf/enc");
                    if let (false, Some(uri)) = (font_obfuscation, attribute(&e, "URI")) {
                        parts.insert(resolve("", &uri));
                    }
                }
                _ => {}
            },
            Ok(Event::Eof) | Err(_) => break,
            _ => {}
        }
    }
    parts
}

/// A chapter's title: the text of its first `<h1>`–`<h3>`, else of its `<title>`; tags and entities
/// removed, whitespace collapsed.
fn chapter_title(xhtml: &str) -> Option<String> {
    static PATTERNS: OnceLock<(Regex, Regex, Regex)> = OnceLock::new();
    let (heading, title, tag) = PATTERNS.get_or_init(|| {
        (
            Regex::new(r"(?is)<h[1-3][^>]*>(.*?)</h[1-3]\s*>").expect("heading pattern"),
            Regex::new(r"(?is)<title[^>]*>(.*?)</title\s*>").expect("title pattern"),
            Regex::new(r"(?s)<[^>]*>").expect("tag pattern"),
        )
    });
    [heading, title].into_iter().find_map(|pattern| {
        let inner = pattern.captures(xhtml)?.get(1)?.as_str();
        let text = tag.replace_all(inner, " ");
        let text = quick_xml::escape::unescape(&text).map(|t| t.into_owned()).unwrap_or_else(|_| text.into_owned());
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        (!text.is_empty()).then_some(text)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spine_orders_chapters_and_skips_non_linear_items() {
        let opf = r#"<package><manifest>
            <item id="c2" href="Text/two.xhtml" media-type="application/xhtml+xml"/>
            <item id="c1" href="Text/one.xhtml" media-type="application/xhtml+xml"/>
            <item id="cover" href="cover.xhtml" media-type="application/xhtml+xml"/>
          </manifest><spine><itemref idref="cover" linear="no"/><itemref idref="c1"/><itemref idref="c2"/></spine></package>"#;
        let (manifest, spine) = manifest_and_spine(opf, "OEBPS");
        assert_eq!(spine, ["c1", "c2"]);
        assert_eq!(manifest["c1"].path, "OEBPS/Text/one.xhtml");
    }

    #[test]
    fn a_chapter_title_comes_from_its_first_heading() {
        let xhtml = "<html><head><title>Book</title></head><body><h2 class='x'>Chapter <em>One</em> &amp; more</h2><p>x</p></body></html>";
        assert_eq!(chapter_title(xhtml).as_deref(), Some("Chapter One & more"));
        assert_eq!(chapter_title("<html><head><title>Only title</title></head></html>").as_deref(), Some("Only title"));
        assert_eq!(chapter_title("<p>none</p>"), None);
    }
}
