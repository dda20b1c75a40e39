//! What the agents retrieve: passages (chunks with their location) from one or more libraries, through
//! the [`Retriever`] trait. The library store implements it over LanceDB + tantivy; tests use an
//! in-memory one.

use serde::{Deserialize, Serialize};

/// What separates the parts of a document's context line ([`Passage::context`]: "NVIDIA Corporation · Form
/// 10-Q · quarter ended April 30, 2023 · 2023 Q1 NVDA"), which ingestion writes and the agents read apart.
pub const CONTEXT_SEPARATOR: &str = " · ";

/// A retrieved chunk with everything a citation needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Passage {
    /// The chunk's id, unique within its library.
    pub chunk_id: u64,
    /// The chunk's place in its document, from 0, when the library knows it (`None` for web pages and
    /// passages made by hand): chunks `i` and `i + 1` of one document are neighbours in its text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_index: Option<u32>,
    /// The library it came from.
    pub library: String,
    /// Its document's content hash ([`crate::ParsedDocument::content_hash`]).
    pub document_id: String,
    /// The document's virtual path (`/abs/report.pdf`, `/abs/archive.zip!/a.docx`).
    pub path: String,
    /// First and last page (1-based, inclusive) for paged formats.
    pub page_start: Option<u32>,
    /// See `page_start`.
    pub page_end: Option<u32>,
    /// The spreadsheet sheet it comes from.
    pub sheet: Option<String>,
    /// Enclosing headings, outermost first.
    pub heading_path: Vec<String>,
    /// The chunk's text.
    pub text: String,
    /// What the passage's document is about, in one line (issuer, document type, period, file name —
    /// `quarry_ingest::document_context`); empty when unknown (web pages, older libraries).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub context: String,
    /// The retriever's score (higher is better; comparable only within one result list).
    pub score: f32,
    /// Some of its text was recognised by OCR from a scan or a picture ([`crate::Location::ocr`]): it may
    /// hold recognition errors, and its citation says so (`scan.pdf, p. 4, OCR`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ocr: bool,
}

impl Passage {
    /// A key unique across libraries: (library, chunk id).
    pub fn key(&self) -> (String, u64) {
        (self.library.clone(), self.chunk_id)
    }

    /// Whether `other` comes from the same document: same library, same document id.
    pub fn same_document(&self, other: &Passage) -> bool {
        self.library == other.library && self.document_id == other.document_id
    }

    /// The file name (the member name for ZIP members): `report.pdf`, `a.docx`.
    pub fn file_name(&self) -> &str {
        let inner = self.path.rsplit("!/").next().unwrap_or(&self.path);
        inner.rsplit(['/', '\\']).next().unwrap_or(inner)
    }

    /// Where in the file: `p. 3`, `pp. 3–4`, `sheet Q3`, `Safety > Ladders`, or empty; `, OCR` after it
    /// (`p. 4, OCR`; `OCR` alone without a place) when its text was recognised by OCR.
    pub fn place(&self) -> String {
        let place = citation_place(self.page_start, self.page_end, self.sheet.as_deref(), &self.heading_path);
        match (self.ocr, place.is_empty()) {
            (false, _) => place,
            (true, true) => "OCR".to_string(),
            (true, false) => format!("{place}, OCR"),
        }
    }

    /// The page's URL when the passage came from the web (its `path` is an http(s) URL and its heading
    /// path the page title).
    pub fn url(&self) -> Option<&str> {
        (self.path.starts_with("http://") || self.path.starts_with("https://")).then_some(self.path.as_str())
    }

    /// The citation form: `report.pdf, pp. 3–4`, `budget.xlsx, sheet Q3`, `handbook.docx, Safety > Ladders`,
    /// `scan.pdf, p. 4, OCR` (see [`Passage::place`]); for a web page `Title (https://…)`.
    pub fn citation(&self) -> String {
        if let Some(url) = self.url() {
            return match self.heading_path.first().filter(|t| !t.trim().is_empty()) {
                Some(title) => format!("{title} ({url})"),
                None => url.to_string(),
            };
        }
        let place = self.place();
        if place.is_empty() {
            self.file_name().to_string()
        } else {
            format!("{}, {place}", self.file_name())
        }
    }
}

/// The location part of a citation from a chunk's page span, sheet and heading path (page wins, then
/// sheet, then headings): `p. 3`, `pp. 3–4`, `sheet Q3`, `Safety > Ladders`, or empty.
pub fn citation_place(
    page_start: Option<u32>,
    page_end: Option<u32>,
    sheet: Option<&str>,
    heading_path: &[String],
) -> String {
    match (page_start, page_end, sheet) {
        (Some(a), Some(b), _) if a != b => format!("pp. {a}–{b}"),
        (Some(a), _, _) => format!("p. {a}"),
        (None, _, Some(sheet)) => format!("sheet {sheet}"),
        _ => heading_path.join(" > "),
    }
}

/// Why retrieval failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RetrievalError(pub String);

/// Finds passages for a query in one library or several.
#[async_trait::async_trait]
pub trait Retriever: Send + Sync {
    /// The `k` best passages for `query`, best first (hybrid search where the store supports it).
    async fn retrieve(&self, query: &str, k: usize) -> Result<Vec<Passage>, RetrievalError>;

    /// How many passages (chunks) it can search, when it knows: `Some(0)` for a library with no document
    /// read yet, so an agent says so before any model call; `None` (the default) when it cannot tell, as
    /// for the web.
    async fn passage_count(&self) -> Option<u64> {
        None
    }

    /// Every passage of document `document_id` of library `library` that search can return, in the
    /// document's order (chunk index), each with score 0: what an agent looks through for a table row
    /// search did not rank among its candidates (a filing's balance-sheet line). Empty — the default —
    /// when this retriever does not hold that library or document, or cannot list one, as for the web.
    async fn document_passages(&self, library: &str, document_id: &str) -> Result<Vec<Passage>, RetrievalError> {
        let _ = (library, document_id);
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passage(page: Option<u32>, heading_path: Vec<String>, ocr: bool) -> Passage {
        Passage {
            chunk_id: 1,
            chunk_index: None,
            library: "l".into(),
            document_id: "d".into(),
            path: "/docs/scan.pdf".into(),
            page_start: page,
            page_end: page,
            sheet: None,
            heading_path,
            text: "t".into(),
            context: String::new(),
            score: 0.0,
            ocr,
        }
    }

    #[test]
    fn a_citation_says_when_its_text_was_recognised_by_ocr() {
        assert_eq!(passage(Some(4), vec![], true).citation(), "scan.pdf, p. 4, OCR");
        assert_eq!(passage(Some(4), vec![], false).citation(), "scan.pdf, p. 4");
        assert_eq!(passage(None, vec![], true).citation(), "scan.pdf, OCR");
        assert_eq!(passage(None, vec!["Scans".into()], true).place(), "Scans, OCR");
        // Read back from JSON written before the field: not OCR; a passage from a text layer writes none.
        let old = r#"{"chunk_id":1,"library":"l","document_id":"d","path":"p","page_start":1,"page_end":1,
            "sheet":null,"heading_path":[],"text":"t","score":0.5}"#;
        assert!(!serde_json::from_str::<Passage>(old).unwrap().ocr);
        assert!(!serde_json::to_string(&passage(Some(1), vec![], false)).unwrap().contains("ocr"));
    }
}
