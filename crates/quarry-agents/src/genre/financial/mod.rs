//! The financial genre: financial statements and filings (10-Q, 10-K, annual and half-year reports).
//! What it adds to the pipeline, each measured on the sec-10-q set (docs/evaluation/decisions.md):
//! - [`table_section`]: a table row names the section it sits under where its label repeats;
//! - [`period_focus`]: a row's cells of other spans than the question's (nine months for a quarter's
//!   question) are left out of the prompt;
//! - [`key_quote`]: the filing's own row or sentence quoted under an answer that leaves its figures out;
//! - [`line_item`]: one vocabulary of line items ("net sales" / "revenue"), so the claim check can mark
//!   a figure read from another item's row.

pub mod key_quote;
pub mod line_item;
pub mod period_focus;
pub mod table_section;

use super::{Genre, KeyQuote, TableRow};
use quarry_core::Passage;

/// Fewest table rows measuring a line item that make a document financial ([`Genre::recognises`]).
pub const STATEMENT_ROWS: usize = 5;

/// The financial-statements genre ([`self`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Financial;

impl Genre for Financial {
    fn name(&self) -> &'static str {
        "financial"
    }

    fn shown_text(&self, passage: &Passage, focus: &str) -> String {
        let text = table_section::label_rows_by_section(passage);
        let spans = period_focus::keep_question_periods(&text, focus);
        period_focus::keep_document_period(&spans, passage, focus)
    }

    /// `passage` whole, its table rows naming the section they sit under where the prompt's excerpts
    /// name it ([`table_section`]), every period's columns kept — not only the excerpt the answer prompt
    /// showed: the quote asks no model, so it need not fit the prompt's budget. Over the 63
    /// single-document sec-10-q questions with Qwen2.5-Coder-1.5B's recorded answers, quoting two pieces
    /// of the whole passages stated 70 reference figures of 164, against 64 for one piece of the excerpts
    /// and 68 for two pieces of the whole passages kept to the question's periods (docs/evaluation/decisions.md,
    /// 2026-12-02 (d)).
    fn quotable_text(&self, passage: &Passage) -> String {
        table_section::label_rows_by_section(passage)
    }

    fn key_quotes(
        &self,
        question: &str,
        answer: &str,
        texts: &[(usize, &str)],
        rows_only: &[(usize, &str)],
        follows: &[(usize, usize)],
        most: usize,
    ) -> Vec<KeyQuote> {
        key_quote::key_quotes(question, answer, texts, rows_only, follows, most)
    }

    /// Also under an answer stating amounts when the question names a statement ("cash flows") or a
    /// line item (a total quoted alone may be printed with its parts there):
    /// [`key_quote::quotes_from_rest_of_document`].
    fn quotes_from_rest_of_document(&self, question: &str, answer: &str) -> bool {
        key_quote::quotes_from_rest_of_document(question, answer)
    }

    fn line_items(&self, text: &str) -> Vec<usize> {
        line_item::line_items(text)
    }

    fn table_rows<'p>(&self, passage: &'p Passage) -> Vec<TableRow<'p>> {
        table_section::rows_with_sections(passage)
            .into_iter()
            .map(|(section, label, line)| {
                let (items, _) = line_item::measured_items(&section, label);
                TableRow { section, label, line, items }
            })
            .collect()
    }

    /// A document holding at least [`STATEMENT_ROWS`] table rows that measure a line item: a statement
    /// (income, balance sheet, cash flows) or a table of them. Over the shared libraries every one of the
    /// 20 sec-10-q filings holds 9–61 such rows, and none of 8 NTSB reports, the sample library's
    /// half-year segment workbook, a Chinese annual-report summary in Markdown or `SOURCES.md` holds one
    /// (docs/evaluation/decisions.md, 2026-12-06 (c)).
    fn recognises(&self, document: &[Passage]) -> bool {
        let rows: usize =
            document.iter().map(|p| self.table_rows(p).iter().filter(|row| !row.items.is_empty()).count()).sum();
        rows >= STATEMENT_ROWS
    }
}
