//! Rich Text Format documents, through rtf-parser-tt (a maintained fork of rtf-parser): the text of the
//! body, footnotes (with their numbers), headers and footers, in any code page the document declares
//! (`\ansicpg`, a font's `\fcharset`; Chinese, Japanese and Korean through encoding_rs), paragraphs and
//! table cells on lines of their own. The document's `\info` title, when it has one, is the heading path.

use crate::IngestError;
use quarry_core::{Block, Location};

/// One block: the document's text with blank-line runs collapsed (see [`crate::text::tidy_lines`]); heading
/// path its `\info` title.
///
/// Errors: [`IngestError::Malformed`] when the parser rejects the file (it returns errors for malformed
/// input rather than panicking).
pub(crate) fn load(bytes: &[u8]) -> Result<Vec<Block>, IngestError> {
    let document = rtf_parser_tt::RtfDocument::from_bytes(bytes).map_err(|e| IngestError::malformed("rtf", e))?;
    // `lines` leaves a lone `\r` (a classic Mac line end) inside a line.
    let text = crate::text::tidy_lines(&document.get_text().replace("\r\n", "\n").replace('\r', "\n"));
    let title = document.info.title.as_deref().map(str::trim).filter(|t| !t.is_empty());
    let location =
        Location { heading_path: title.map(|t| vec![t.to_string()]).unwrap_or_default(), ..Default::default() };
    Ok(vec![Block { text, location }])
}

#[cfg(test)]
mod tests {
    #[test]
    fn text_in_a_declared_code_page_is_decoded() {
        // "Grüße" in Windows-1252 escapes, a paragraph break, and a title.
        let rtf = br"{\rtf1\ansi\ansicpg1252{\info{\title Notes}}\pard Gr\'fc\'dfe\par Second line\par}";
        let blocks = super::load(rtf).unwrap();
        assert_eq!(blocks.len(), 1);
        assert!(blocks[0].text.contains("Grüße"), "{:?}", blocks[0].text);
        assert!(blocks[0].text.contains("Second line"), "{:?}", blocks[0].text);
        assert_eq!(blocks[0].location.heading_path, vec!["Notes".to_string()]);
    }
}
