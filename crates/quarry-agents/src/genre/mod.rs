//! The genre layer: what the answer pipeline knows about one kind of document, kept behind the
//! [`Genre`] trait so that the pipeline itself (retrieval, the agents, citation repair, the claim check)
//! reads any library the same way.
//!
//! The pipeline asks a genre four things: what an answer prompt shows of a passage
//! ([`Genre::shown_text`]), what the quote under an answer may be chosen from
//! ([`Genre::quotable_text`]) and which pieces to quote ([`Genre::key_quotes`]), and which line items a
//! text names and a passage's table rows measure ([`Genre::line_items`], [`Genre::table_rows`]; the claim
//! check marks a figure read from another item's row).
//!
//! Two genres exist:
//! - [`General`]: passages shown as ingested, no quote, no line items — the pipeline alone. A library of
//!   papers, reports, manuals or mail is read correctly with it.
//! - [`Financial`] ([`financial`]): financial statements and filings — table rows labelled by their
//!   section, each row kept to the period the question asks for, the filing's row quoted under an
//!   answer that leaves its figures out, one vocabulary of line items.
//!
//! Periods ("Q1 2024", "quarterly period ended April 30, 2023") are not genre knowledge: reports, calls
//! and mail name quarters as filings do, so [`crate::quarter`] and [`crate::period`] serve every genre.

pub mod financial;

pub use financial::Financial;

use quarry_core::Passage;

/// A piece of a passage quoted under an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyQuote {
    /// The number of the passage it is quoted from, as the answer's markers number it.
    pub number: usize,
    /// The piece as the passage writes it (a genre cuts it to its own limit).
    pub text: String,
}

/// `quotes` as the answer shows them: `From the passages: “…” [n]`, further quotes after `; `
/// (Chinese: `段落原文：“…” [n]；“…” [m]`). Empty for no quote.
pub fn render_quotes(quotes: &[KeyQuote], chinese: bool) -> String {
    let each: Vec<String> = quotes.iter().map(|q| format!("“{}” [{}]", q.text, q.number)).collect();
    match (each.is_empty(), chinese) {
        (true, _) => String::new(),
        (false, true) => format!("{}{}", crate::text::QUOTE_LEAD_INS[1], each.join("；")),
        (false, false) => format!("{}{}", crate::text::QUOTE_LEAD_INS[0], each.join("; ")),
    }
}

/// A table row of a passage as a genre reads it: the section it sits under (empty when none), its
/// label, the whole line (a slice of the passage's text), and the line items it measures (indexes into
/// the genre's vocabulary; empty when it names none).
#[derive(Debug, Clone, PartialEq)]
pub struct TableRow<'p> {
    /// The section heading the row sits under, or empty.
    pub section: String,
    /// The row's label.
    pub label: &'p str,
    /// The row's line, as the passage writes it.
    pub line: &'p str,
    /// The line items the row measures ([`Genre::line_items`]' indexes).
    pub items: Vec<usize>,
}

/// What the answer pipeline asks of a document genre. Every method is pure text work (no model call,
/// microseconds to a millisecond a passage) and must not fail: a genre that has nothing to say returns
/// the passage as it is, or nothing.
pub trait Genre: Send + Sync + std::fmt::Debug {
    /// The genre's name in settings and traces (`general`, `financial`).
    fn name(&self) -> &'static str;

    /// The text an answer prompt shows of `passage` for a question about `focus`, before the excerpt
    /// budget cuts it (`crate::answer::passage_excerpts`).
    fn shown_text(&self, passage: &Passage, focus: &str) -> String;

    /// The text the quote under an answer is chosen from, of one passage whole.
    fn quotable_text(&self, passage: &Passage) -> String;

    /// At most `most` pieces of `texts` (the passages the answer was written from, each with the number
    /// the answer cites it by, best first) or of `rows_only` (further passages of the same documents,
    /// numbered after them) to quote under `answer` to `question`, best first. Empty: no quote.
    fn key_quotes(
        &self,
        question: &str,
        answer: &str,
        texts: &[(usize, &str)],
        rows_only: &[(usize, &str)],
        most: usize,
    ) -> Vec<KeyQuote>;

    /// The line items `text` names, as indexes into the genre's vocabulary, in ascending order.
    fn line_items(&self, text: &str) -> Vec<usize>;

    /// The table rows of `passage` the genre reads, in the passage's order; each `line` is one of
    /// `passage.text.split('\n')`.
    fn table_rows<'p>(&self, passage: &'p Passage) -> Vec<TableRow<'p>>;
}

/// The pipeline with no genre knowledge: passages shown and quoted as ingested, no quote under an
/// answer, no line items (so the claim check reads figures and names only).
#[derive(Debug, Clone, Copy, Default)]
pub struct General;

impl Genre for General {
    fn name(&self) -> &'static str {
        "general"
    }

    fn shown_text(&self, passage: &Passage, _focus: &str) -> String {
        passage.text.clone()
    }

    fn quotable_text(&self, passage: &Passage) -> String {
        passage.text.clone()
    }

    fn key_quotes(&self, _: &str, _: &str, _: &[(usize, &str)], _: &[(usize, &str)], _: usize) -> Vec<KeyQuote> {
        Vec::new()
    }

    fn line_items(&self, _text: &str) -> Vec<usize> {
        Vec::new()
    }

    fn table_rows<'p>(&self, _passage: &'p Passage) -> Vec<TableRow<'p>> {
        Vec::new()
    }
}

/// The genre a run reads its library as ([`crate::AgentConfig::genre`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GenreKind {
    /// [`General`].
    General,
    /// [`Financial`]: the default, since the answer figures measured so far are over filings; its rules
    /// act only on text shaped as statements (table rows, line items) and leave other passages as they
    /// are.
    #[default]
    Financial,
}

impl GenreKind {
    /// The genre itself.
    pub fn layer(self) -> &'static dyn Genre {
        match self {
            GenreKind::General => &General,
            GenreKind::Financial => &Financial,
        }
    }
}

impl std::str::FromStr for GenreKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "general" => Ok(GenreKind::General),
            "financial" => Ok(GenreKind::Financial),
            other => Err(format!("unknown genre {other:?} (general or financial)")),
        }
    }
}
