//! Plain text, Markdown, CSV, HTML and JSON, in UTF-8, UTF-16 (with or without BOM) or a legacy encoding
//! such as GB18030/GBK, Big5, Shift_JIS or Windows-1252 (guessed with chardetng, Firefox's detector).

use crate::IngestError;
use quarry_core::{Block, Format, Location};

/// Heuristic: does `bytes` hold text (in any encoding we decode) rather than binary data?
pub(crate) fn looks_like_text(bytes: &[u8]) -> bool {
    if bytes.is_empty() {
        return true;
    }
    if bom_encoding(bytes).is_some() || utf16_without_bom(bytes).is_some() {
        return true;
    }
    let sample = &bytes[..bytes.len().min(8192)];
    if sample.contains(&0) {
        return false;
    }
    // Control characters other than tab/newline/CR/form feed/escape are rare in text.
    let controls = sample.iter().filter(|&&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0C | 0x1B)).count();
    controls * 100 <= sample.len()
}

fn bom_encoding(bytes: &[u8]) -> Option<&'static encoding_rs::Encoding> {
    encoding_rs::Encoding::for_bom(bytes).map(|(enc, _)| enc)
}

/// UTF-16 text without a BOM shows up as NUL in every other byte of ASCII-heavy content.
fn utf16_without_bom(bytes: &[u8]) -> Option<&'static encoding_rs::Encoding> {
    let sample = &bytes[..bytes.len().min(4096) & !1];
    if sample.len() < 4 {
        return None;
    }
    let pairs = sample.len() / 2;
    let even_zero = sample.iter().step_by(2).filter(|&&b| b == 0).count();
    let odd_zero = sample.iter().skip(1).step_by(2).filter(|&&b| b == 0).count();
    if odd_zero * 10 >= pairs * 7 && even_zero * 10 <= pairs {
        Some(encoding_rs::UTF_16LE)
    } else if even_zero * 10 >= pairs * 7 && odd_zero * 10 <= pairs {
        Some(encoding_rs::UTF_16BE)
    } else {
        None
    }
}

/// Decodes bytes to a String: BOM first, then UTF-16 without BOM, then strict UTF-8, then chardetng's guess.
/// Returns the text and the name of the encoding used. Undecodable bytes become U+FFFD.
pub fn decode_text(bytes: &[u8]) -> (String, &'static str) {
    if let Some(enc) = bom_encoding(bytes).or_else(|| utf16_without_bom(bytes)) {
        let (text, _, _) = enc.decode(bytes);
        return (text.into_owned(), enc.name());
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        return (text.to_string(), "UTF-8");
    }
    let mut detector = chardetng::EncodingDetector::new();
    detector.feed(bytes, true);
    let enc = detector.guess(None, true);
    let (text, _, _) = enc.decode(bytes);
    (text.into_owned(), enc.name())
}

/// Decodes at most `limit` bytes from the start (for sniffing), tolerating a cut multi-byte character.
pub(crate) fn decode_prefix(bytes: &[u8], limit: usize) -> String {
    let (text, _) = decode_text(&bytes[..bytes.len().min(limit)]);
    text
}

/// Reads a text-like format into blocks: paragraphs for text/Markdown (Markdown headings give the heading
/// path), one block per 50 rows for CSV (as `header: value` lines), readable text for HTML (scripts and
/// styles dropped), pretty-printed JSON.
pub(crate) fn load(format: Format, bytes: &[u8]) -> Result<Vec<Block>, IngestError> {
    let (text, _encoding) = decode_text(bytes);
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let blocks = match format {
        Format::Markdown => markdown_blocks(&text),
        Format::Csv => csv_blocks(&text),
        Format::Html => paragraph_blocks(&html_to_text(&text)?, Location::default()),
        Format::Json => {
            let pretty = match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(value) => serde_json::to_string_pretty(&value).unwrap_or(text),
                Err(_) => text, // JSON Lines or slightly broken JSON: keep the text as it is.
            };
            paragraph_blocks(&pretty, Location::default())
        }
        _ => paragraph_blocks(&text, Location::default()),
    };
    Ok(blocks)
}

/// The text a person reads in an HTML page or mail body: scripts and styles dropped, no decoration,
/// lines up to 120 characters. Errors: [`IngestError::Malformed`] when html2text cannot render it.
pub(crate) fn html_to_text(html: &str) -> Result<String, IngestError> {
    html2text::config::plain_no_decorate()
        .allow_width_overflow()
        .string_from_read(html.as_bytes(), 120)
        .map_err(|e| IngestError::malformed("html", e))
}

/// Trims trailing spaces, collapses runs of blank lines, and drops NULs and other control characters that
/// broken font encodings leave behind (tabs stay); the whole trimmed. For text read out of PDF pages,
/// OCR and RTF.
pub(crate) fn tidy_lines(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut blank_run = 0;
    for line in raw.lines() {
        let line: String = line.chars().filter(|c| !c.is_control() || *c == '\t').collect();
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank_run += 1;
            if blank_run > 1 {
                continue;
            }
        } else {
            blank_run = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_string()
}

/// Groups text into blocks of about 4,000 characters at paragraph boundaries, so a long text file does not
/// become one giant block (the chunker works either way; smaller blocks keep locations useful).
pub(crate) fn paragraph_blocks(text: &str, location: Location) -> Vec<Block> {
    const TARGET: usize = 4000;
    let mut blocks = Vec::new();
    let mut current = String::new();
    for para in text.split("\n\n") {
        let para = para.trim_matches('\n');
        if para.trim().is_empty() {
            continue;
        }
        if !current.is_empty() && current.len() + para.len() > TARGET {
            blocks.push(Block { text: std::mem::take(&mut current), location: location.clone() });
        }
        if !current.is_empty() {
            current.push_str("\n\n");
        }
        current.push_str(para);
    }
    if !current.trim().is_empty() {
        blocks.push(Block { text: current, location });
    }
    blocks
}

/// Splits Markdown at ATX headings (`#`, `##`, …) and records the heading path of each section.
fn markdown_blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut path: Vec<(usize, String)> = Vec::new();
    let mut section = String::new();
    let mut in_fence = false;
    let flush = |section: &mut String, path: &[(usize, String)], blocks: &mut Vec<Block>| {
        let location = Location { heading_path: path.iter().map(|(_, t)| t.clone()).collect(), ..Default::default() };
        blocks.extend(paragraph_blocks(section, location));
        section.clear();
    };
    for line in text.lines() {
        if line.trim_start().starts_with("```") || line.trim_start().starts_with("~~~") {
            in_fence = !in_fence;
        }
        let heading = (!in_fence).then(|| atx_heading(line)).flatten();
        if let Some((level, title)) = heading {
            flush(&mut section, &path, &mut blocks);
            path.retain(|(l, _)| *l < level);
            path.push((level, title.to_string()));
        }
        section.push_str(line);
        section.push('\n');
    }
    flush(&mut section, &path, &mut blocks);
    blocks
}

fn atx_heading(line: &str) -> Option<(usize, &str)> {
    let trimmed = line.trim_start();
    if line.len() - trimmed.len() > 3 {
        return None;
    }
    let level = trimmed.bytes().take_while(|&b| b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &trimmed[level..];
    if !rest.is_empty() && !rest.starts_with([' ', '\t']) {
        return None;
    }
    let title = rest.trim().trim_end_matches('#').trim();
    (!title.is_empty()).then_some((level, title))
}

/// CSV/TSV rows rendered as `header: value` lines (as spreadsheets are), 50 rows to a block.
fn csv_blocks(text: &str) -> Vec<Block> {
    let first = text.lines().next().unwrap_or("");
    let delimiter = if first.matches('\t').count() > first.matches(',').count() { '\t' } else { ',' };
    let rows: Vec<Vec<String>> =
        text.lines().filter(|l| !l.trim().is_empty()).map(|l| split_csv_line(l, delimiter)).collect();
    let Some((header, body)) = rows.split_first() else { return Vec::new() };
    let mut blocks = Vec::new();
    for group in body.chunks(50) {
        let mut block = String::new();
        for row in group {
            block.push_str(&crate::spreadsheet::render_row(header, row));
            block.push('\n');
        }
        blocks.push(Block { text: block.trim_end().to_string(), location: Location::default() });
    }
    if blocks.is_empty() {
        blocks.push(Block { text: header.join(" | "), location: Location::default() });
    }
    blocks
}

/// Splits one CSV line, honouring double quotes (a quoted field may contain the delimiter; `""` is a quote).
/// Fields spanning several lines are not joined: each line stands alone, which loses nothing for retrieval.
fn split_csv_line(line: &str, delimiter: char) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            c if c == delimiter && !quoted => fields.push(std::mem::take(&mut field).trim().to_string()),
            c => field.push(c),
        }
    }
    fields.push(field.trim().to_string());
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tidy_collapses_blank_runs_and_strips_controls() {
        assert_eq!(tidy_lines("  a\u{0}b  \n\n\n\nc\n"), "ab\n\nc");
    }

    #[test]
    fn decodes_utf16_and_gb18030() {
        let utf16: Vec<u8> = "héllo wörld".encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
        assert_eq!(decode_text(&utf16).0, "héllo wörld");
        let (gbk, _, _) =
            encoding_rs::GB18030.encode("中国移动通信集团有限公司发布了二零二三年的年度报告，其中包括网络建设情况。");
        let (text, name) = decode_text(&gbk);
        assert!(text.starts_with("中国移动通信集团"), "{name}: {text}");
    }

    #[test]
    fn markdown_headings_build_a_path_and_fences_are_not_headings() {
        let blocks = markdown_blocks("# A\nintro\n## B\n```\n# not a heading\n```\n# C\nend\n");
        let paths: Vec<Vec<String>> = blocks.iter().map(|b| b.location.heading_path.clone()).collect();
        assert_eq!(paths, vec![vec!["A".to_string()], vec!["A".into(), "B".into()], vec!["C".into()]]);
        assert!(blocks[1].text.contains("# not a heading"));
    }

    #[test]
    fn csv_rows_become_header_value_lines() {
        let blocks = csv_blocks("name,\"city, state\"\nAda,\"London, UK\"\n");
        assert_eq!(blocks[0].text, "name: Ada; city, state: London, UK");
    }

    #[test]
    fn html_drops_scripts_and_styles() {
        let html = b"<html><head><style>p{color:red}</style><script>alert('x')</script></head><body><h1>Title</h1><p>Body text.</p></body></html>";
        let text: String = load(Format::Html, html).unwrap().into_iter().map(|b| b.text).collect();
        assert!(text.contains("Title") && text.contains("Body text."), "{text}");
        assert!(!text.contains("alert") && !text.contains("color:red"), "{text}");
    }
}
