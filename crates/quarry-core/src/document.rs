use crate::Format;
use serde::{Deserialize, Serialize};

/// Where a piece of text sits inside its file, precise enough for a citation ("report.pdf, p. 12",
/// "budget.xlsx, sheet Q3", "handbook.docx, Safety > Ladders").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Location {
    /// 1-based page number, for paged formats (PDF).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// Worksheet name, for spreadsheets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sheet: Option<String>,
    /// Titles of the enclosing headings, outermost first (H1 > H2 > …); empty when the format has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub heading_path: Vec<String>,
    /// The text was recognised by OCR from an image of the page (a scan, a picture), not read from a
    /// text layer: it may hold recognition errors, and citations say so ("p. 4, OCR").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ocr: bool,
}

/// A run of text with one location: a PDF page, a DOCX paragraph or table, a spreadsheet sheet's rows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Block {
    /// The text, paragraphs separated by blank lines.
    pub text: String,
    /// Where it stands in the document.
    pub location: Location,
}

/// The text of one document, in reading order, with locations. ZIP members are documents of their own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParsedDocument {
    /// Virtual path: relative to what the user added; ZIP members as `archive.zip!/dir/file.pdf`
    /// (nested archives repeat the `!/` separator).
    pub path: String,
    /// The format it was read as.
    pub format: Format,
    /// BLAKE3 hash of the file's bytes, lowercase hex (64 characters): the document's identity.
    pub content_hash: String,
    /// Size of the file's bytes.
    pub byte_len: u64,
    /// Page count for paged formats (PDF), sheet count for spreadsheets; `None` otherwise.
    pub page_count: Option<u32>,
    /// The text in reading order.
    pub blocks: Vec<Block>,
    /// Non-fatal problems met while reading (a page that could not be decoded, an unreadable sheet, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl ParsedDocument {
    /// Number of characters (Unicode scalar values) over all blocks.
    pub fn char_count(&self) -> usize {
        self.blocks.iter().map(|b| b.text.chars().count()).sum()
    }

    /// Number of CJK characters over all blocks (see [`crate::count_cjk_chars`]).
    pub fn cjk_char_count(&self) -> usize {
        self.blocks.iter().map(|b| crate::count_cjk_chars(&b.text)).sum()
    }

    /// Number of letters (alphabetic characters, CJK ideographs included; digits, punctuation and spaces
    /// not) over all blocks: what language shares are counted against.
    pub fn letter_count(&self) -> usize {
        self.blocks.iter().map(|b| b.text.chars().filter(|c| c.is_alphabetic()).count()).sum()
    }

    /// The whole text, blocks joined by a blank line; the character offsets of [`Chunk`] refer to it.
    pub fn full_text(&self) -> String {
        let mut out = String::new();
        for (i, block) in self.blocks.iter().enumerate() {
            if i > 0 {
                out.push_str(BLOCK_SEPARATOR);
            }
            out.push_str(&block.text);
        }
        out
    }
}

/// What [`ParsedDocument::full_text`] puts between blocks.
pub const BLOCK_SEPARATOR: &str = "\n\n";

/// A piece of a document sized for embedding and retrieval, with everything a citation needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    /// The document's content hash (see [`ParsedDocument::content_hash`]).
    pub document_id: String,
    /// The document's virtual path.
    pub path: String,
    /// 0-based position of this chunk in its document.
    pub index: u32,
    /// The chunk's text (without its document's context line, which is stored once per document).
    pub text: String,
    /// First and last page the chunk touches (1-based, inclusive), for paged formats.
    pub page_start: Option<u32>,
    /// See `page_start`.
    pub page_end: Option<u32>,
    /// The spreadsheet sheet it comes from.
    pub sheet: Option<String>,
    /// Enclosing headings (or slide, chapter, message), outermost first.
    pub heading_path: Vec<String>,
    /// Character offsets (Unicode scalar values, end exclusive) into [`ParsedDocument::full_text`].
    pub char_start: u64,
    /// See `char_start`.
    pub char_end: u64,
    /// Length in tokens of the tokenizer the chunker was sized with (characters when none was given).
    pub token_count: u32,
    /// Some of its text was recognised by OCR (a block it touches is [`Location::ocr`]).
    pub ocr: bool,
}
