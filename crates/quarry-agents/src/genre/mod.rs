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
//! Which genre a question's passages are read as is chosen per run ([`GenreKind::Auto`], the default):
//! the documents its first search found are looked through whole, and a genre that recognises at least
//! half of them is used ([`resolve`]); otherwise the pipeline runs alone ([`General`]). A library of
//! filings beside accident reports and papers so reads a question about a filing as financial and one
//! about an accident as general.
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

use quarry_core::{Passage, Retriever};

/// A piece of a passage quoted under an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyQuote {
    /// The number of the passage it is quoted from, as the answer's markers number it.
    pub number: usize,
    /// The piece as the passage writes it (a genre cuts it to its own limit).
    pub text: String,
    /// The number of the passage its first lines come from when it goes on from there (a table the
    /// chunker split between two passages, quoted whole), else `None`.
    pub parts_from: Option<usize>,
}

/// `quotes` as the answer shows them: `From the passages: “…” [n]`, or `[m, n]` for a quote whose
/// first lines are passage m's ([`KeyQuote::parts_from`]), further quotes after `; ` (Chinese:
/// `段落原文：“…” [n]；“…” [m]`). Empty for no quote.
pub fn render_quotes(quotes: &[KeyQuote], chinese: bool) -> String {
    let each: Vec<String> = quotes
        .iter()
        .map(|q| match q.parts_from {
            Some(from) => format!("“{}” [{from}, {}]", q.text, q.number),
            None => format!("“{}” [{}]", q.text, q.number),
        })
        .collect();
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
    /// numbered after them) to quote under `answer` to `question`, best first. `follows` pairs (n, m)
    /// say passage n is the chunk right after passage m in their document (a quote may run across
    /// them: [`KeyQuote::parts_from`]). Empty: no quote.
    fn key_quotes(
        &self,
        question: &str,
        answer: &str,
        texts: &[(usize, &str)],
        rows_only: &[(usize, &str)],
        follows: &[(usize, usize)],
        most: usize,
    ) -> Vec<KeyQuote>;

    /// Whether the quote under `answer` to `question` may come from the rest of the answered document
    /// too (its passages no search ranked: [`Genre::key_quotes`]' `rows_only`), so that rest is read
    /// from the library. By default, only under an answer that states no amount of its own.
    fn quotes_from_rest_of_document(&self, question: &str, answer: &str) -> bool {
        let _ = question;
        !crate::text::states_amount(answer)
    }

    /// The line items `text` names, as indexes into the genre's vocabulary, in ascending order.
    fn line_items(&self, text: &str) -> Vec<usize>;

    /// The table rows of `passage` the genre reads, in the passage's order; each `line` is one of
    /// `passage.text.split('\n')`.
    fn table_rows<'p>(&self, passage: &'p Passage) -> Vec<TableRow<'p>>;

    /// Whether `document` (every passage of one document, in its order) is of this genre, for
    /// [`GenreKind::Auto`] ([`resolve`]). [`General`] recognises nothing: it is what is left.
    fn recognises(&self, document: &[Passage]) -> bool;
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

    fn key_quotes(
        &self,
        _: &str,
        _: &str,
        _: &[(usize, &str)],
        _: &[(usize, &str)],
        _: &[(usize, usize)],
        _: usize,
    ) -> Vec<KeyQuote> {
        Vec::new()
    }

    fn line_items(&self, _text: &str) -> Vec<usize> {
        Vec::new()
    }

    fn table_rows<'p>(&self, _passage: &'p Passage) -> Vec<TableRow<'p>> {
        Vec::new()
    }

    fn recognises(&self, _document: &[Passage]) -> bool {
        false
    }
}

/// The genre a run reads its library as ([`crate::AgentConfig::genre`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GenreKind {
    /// Chosen per run from the documents its first search found ([`resolve`]): the default, so that a
    /// library of papers, reports or mail is read without the financial rules and one of filings with
    /// them, with no setting to find.
    #[default]
    Auto,
    /// [`General`].
    General,
    /// [`Financial`]: its rules act only on text shaped as statements (table rows, line items) and leave
    /// other passages as they are; its quote under an answer is chosen from any passage.
    Financial,
}

/// The genres [`resolve`] may choose besides [`GenreKind::General`], in the order they are tried.
const RECOGNISED: [GenreKind; 1] = [GenreKind::Financial];

/// Most documents [`resolve`] looks through: those of the first search's best passages.
pub const DETECTION_DOCUMENTS: usize = 4;

impl GenreKind {
    /// The genre itself; [`GenreKind::Auto`] before a run has resolved it reads as [`General`].
    pub fn layer(self) -> &'static dyn Genre {
        match self {
            GenreKind::Auto | GenreKind::General => &General,
            GenreKind::Financial => &Financial,
        }
    }

    /// The name settings and traces give it (`auto`, `general`, `financial`).
    pub fn name(self) -> &'static str {
        match self {
            GenreKind::Auto => "auto",
            other => other.layer().name(),
        }
    }
}

/// The genre of a set of documents, each given whole (its passages in order): the first of
/// [`RECOGNISED`] that recognises at least half of them ([`Genre::recognises`]), else
/// [`GenreKind::General`] — also for no documents.
pub fn detect(documents: &[Vec<Passage>]) -> GenreKind {
    if documents.is_empty() {
        return GenreKind::General;
    }
    RECOGNISED
        .into_iter()
        .find(|kind| 2 * documents.iter().filter(|d| kind.layer().recognises(d)).count() >= documents.len())
        .unwrap_or(GenreKind::General)
}

/// The genre to read a run's passages as: `kind` itself unless it is [`GenreKind::Auto`]; then
/// [`detect`] over the documents of `passages` (a search's results, best first): the first
/// [`DETECTION_DOCUMENTS`] distinct ones, each read whole through [`Retriever::document_passages`] (a
/// document the retriever cannot list — a web page — counts as read and recognised by no genre; a
/// failed read likewise). Cost: one listing a document; over the 20-filing sec-10-q library about 0.2 s
/// a question (`quarry eval answers --retrieval-only`: 0.3 → 0.5 s a question, beside a model run).
pub async fn resolve(kind: GenreKind, retriever: &dyn Retriever, passages: &[Passage]) -> GenreKind {
    if kind != GenreKind::Auto {
        return kind;
    }
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for p in passages {
        let key = (p.library.as_str(), p.document_id.as_str());
        if !seen.contains(&key) {
            seen.push(key);
        }
        if seen.len() == DETECTION_DOCUMENTS {
            break;
        }
    }
    let mut documents = Vec::with_capacity(seen.len());
    for (library, document) in seen {
        documents.push(retriever.document_passages(library, document).await.unwrap_or_default());
    }
    detect(&documents)
}

impl std::str::FromStr for GenreKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(GenreKind::Auto),
            "general" => Ok(GenreKind::General),
            "financial" => Ok(GenreKind::Financial),
            other => Err(format!("unknown genre {other:?} (auto, general or financial)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passage(text: &str) -> Passage {
        Passage {
            chunk_id: 1,
            chunk_index: None,
            library: "l".into(),
            document_id: "d".into(),
            path: "/d.pdf".into(),
            page_start: None,
            page_end: None,
            sheet: None,
            heading_path: vec![],
            text: text.into(),
            context: String::new(),
            score: 0.0,
            ocr: false,
        }
    }

    /// `rows` statement rows (two columns each) that measure line items, over two passages.
    fn statement(rows: usize) -> Vec<Passage> {
        let items = ["Revenue", "Cost of revenue", "Gross profit", "Operating income", "Net income", "Total assets"];
        let lines: Vec<String> = (0..rows)
            .map(|i| {
                format!(
                    "{}: ${},{:03} million (three months ended April 30, 2023); $1,000 million (three months ended May 1, 2022)",
                    items[i % items.len()],
                    i + 1,
                    i
                )
            })
            .collect();
        let half = lines.len() / 2;
        vec![passage(&lines[..half].join("\n")), passage(&lines[half..].join("\n"))]
    }

    fn report() -> Vec<Passage> {
        vec![passage(
            "On December 17, 2007, a Reims F172 M was destroyed when it impacted terrain near Chevroux, France. \
             The pilot was fatally injured. Revenue passenger flights were not affected.",
        )]
    }

    #[test]
    fn a_genre_is_chosen_when_it_recognises_at_least_half_of_the_documents() {
        assert!(Financial.recognises(&statement(financial::STATEMENT_ROWS)));
        assert!(!Financial.recognises(&statement(financial::STATEMENT_ROWS - 1)), "too few rows");
        assert!(!Financial.recognises(&report()), "prose naming a line item is no statement");
        assert!(!General.recognises(&statement(8)));

        let filing = statement(8);
        assert_eq!(detect(std::slice::from_ref(&filing)), GenreKind::Financial);
        assert_eq!(detect(&[filing.clone(), report()]), GenreKind::Financial, "half");
        assert_eq!(detect(&[filing, report(), report()]), GenreKind::General, "under half");
        assert_eq!(detect(&[report()]), GenreKind::General);
        assert_eq!(detect(&[]), GenreKind::General, "no document to read");
    }

    #[test]
    fn genre_names_read_back() {
        for kind in [GenreKind::Auto, GenreKind::General, GenreKind::Financial] {
            assert_eq!(kind.name().parse::<GenreKind>(), Ok(kind));
        }
        assert_eq!(GenreKind::Auto.layer().name(), "general", "unresolved, the pipeline runs alone");
        assert!("filings".parse::<GenreKind>().unwrap_err().contains("auto, general or financial"));
    }
}
