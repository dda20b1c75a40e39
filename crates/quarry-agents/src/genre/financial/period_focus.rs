//! Table figures of the period a question asks about. A quarterly filing's table gives each row for the
//! quarter and for the year to date ("three months ended" and "nine months ended" columns); the
//! ingested text names each figure's column ([`quarry_core::table_row`]), yet a 1.5B model asked for
//! "the latest quarter" still copied the nine-month figure. Before the answer call, a row's cells for
//! other spans than the question's are left out: a question about a quarter keeps the three-month
//! cells (and their change column), one about the first half or the year to date keeps those. Cells
//! without a span (balance-sheet dates) always stay, and a question that names no span, or a row that
//! would lose every cell, is left as it was. The passages shrink too (fewer prompt tokens).
//!
//! Spans are read from words, no model: "quarter", "Q1"–"Q4", "three months", "13 weeks" → quarter;
//! "six months", "first half", "half-year" → half year; "nine months", "year to date" → nine months;
//! "twelve months", "full year", "annual", "52 weeks" → year ("fiscal year" alone is not a span: "first
//! quarter of fiscal year 2024" asks for a quarter).

use quarry_core::table_row::{is_change_column, parse_row, write_row};
use quarry_core::Passage;
use regex::Regex;
use std::sync::OnceLock;

/// A length of reporting period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    /// Three months.
    Quarter,
    /// Six months.
    HalfYear,
    /// Nine months (the year to date of a third-quarter filing).
    NineMonths,
    /// Twelve months.
    Year,
}

fn span_patterns() -> &'static [(Span, Regex)] {
    static PATTERNS: OnceLock<Vec<(Span, Regex)>> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        [
            (Span::Quarter, r"(?i)\bquarter(?:ly|s)?\b|\bq[1-4]\b|\b(?:three|3)[- ]months?\b|\b(?:thirteen|13)[- ]weeks?\b"),
            (Span::HalfYear, r"(?i)\b(?:six|6)[- ]months?\b|\bfirst half\b|\bhalf[- ]year\b|\bh1\b|\b(?:twenty-six|26)[- ]weeks?\b"),
            (Span::NineMonths, r"(?i)\b(?:nine|9)[- ]months?\b|\byear[- ]to[- ]date\b|\bytd\b|\b(?:thirty-nine|39)[- ]weeks?\b"),
            (Span::Year, r"(?i)\b(?:twelve|12)[- ]months?\b|\bfull[- ]year\b|\bannual(?:ly)?\b|\byears? ended\b|\b(?:fifty-two|fifty-three|52|53)[- ]weeks?\b"),
        ]
        .into_iter()
        .map(|(span, pattern)| (span, Regex::new(pattern).expect("the pattern is valid")))
        .collect()
    })
}

/// The spans `text` names (a question: what it asks for; a column name: the one it covers).
pub fn spans_named(text: &str) -> Vec<Span> {
    span_patterns().iter().filter(|(_, p)| p.is_match(text)).map(|(s, _)| *s).collect()
}

/// `text` with, in each labelled table row, only the cells whose column covers a span `question` asks
/// for (see the module docs); unchanged when the question names no span.
pub fn keep_question_periods(text: &str, question: &str) -> String {
    let wanted = spans_named(question);
    if wanted.is_empty() || !text.contains(quarry_core::table_row::CELL_SEPARATOR) {
        return text.to_string();
    }
    let mut out: Vec<String> = Vec::new();
    for line in text.split('\n') {
        let Some((label, cells)) = parse_row(line) else {
            out.push(line.to_string());
            continue;
        };
        let kept: Vec<_> = cells
            .iter()
            .filter(|c| {
                let spans = spans_named(&c.column);
                spans.is_empty() || spans.iter().any(|s| wanted.contains(s))
            })
            .cloned()
            .collect();
        if kept.is_empty() || kept.len() == cells.len() {
            out.push(line.to_string());
        } else {
            out.push(write_row(label, &kept));
        }
    }
    out.join("\n")
}

/// Words of a question that asks how figures differ between periods: it needs every column. (The words
/// of a comparison that may join two line items of one period instead are [`COMPARE_WORDS`].)
const COMPARISON_WORDS: &[&str] = &[
    "change",
    "changed",
    "changes",
    "growth",
    "grew",
    "grow",
    "increase",
    "increased",
    "decrease",
    "decreased",
    "decline",
    "declined",
    "rise",
    "rose",
    "fall",
    "fell",
    "trend",
    "prior",
    "previous",
    "preceding",
    "last year",
    "year over year",
    "year-over-year",
    "over time",
    "earlier",
];

/// Words that compare whatever they join: two periods ("revenue in Q1 2024 compared with Q1 2023") or
/// two line items of one period ("How did Apple's operating expenses for Q1 2023 compare to its revenue
/// for the same quarter?"). They make a question compare periods only beside two periods it names, or a
/// word for periods in the plural ([`PLURAL_PERIOD_WORDS`]); otherwise the question is about one period,
/// and the row's other columns (last year's operating expenses, read as this year's revenue: 2026-12-04 (f))
/// only mislead.
const COMPARE_WORDS: &[&str] = &["compare", "compared", "comparison", "versus", "vs", "difference", "differ"];

/// Words for periods in the plural, which turn [`COMPARE_WORDS`] into a comparison of periods ("compare
/// across the periods").
const PLURAL_PERIOD_WORDS: &[&str] = &["periods", "quarters", "years", "across"];

/// Whether `question` compares periods: it uses one of [`COMPARISON_WORDS`], or one of [`COMPARE_WORDS`]
/// with two quarters or two years named ([`crate::quarter::quarters`]) or a word for periods in the
/// plural ([`PLURAL_PERIOD_WORDS`]).
pub fn compares_periods(question: &str) -> bool {
    let q = question.to_lowercase();
    let words: Vec<&str> = q.split(|c: char| !c.is_alphanumeric() && c != '-').filter(|w| !w.is_empty()).collect();
    let uses = |list: &[&str]| list.iter().any(|w| if w.contains(' ') { q.contains(w) } else { words.contains(w) });
    if uses(COMPARISON_WORDS) {
        return true;
    }
    if !uses(COMPARE_WORDS) {
        return false;
    }
    let mut years: Vec<&str> =
        words.iter().copied().filter(|w| w.len() == 4 && (w.starts_with("19") || w.starts_with("20"))).collect();
    years.sort_unstable();
    years.dedup();
    // `quarters` lists each quarter once.
    uses(PLURAL_PERIOD_WORDS) || years.len() >= 2 || crate::quarter::quarters(question).len() >= 2
}

/// `text`, the text of `passage` whose document's context line states its period ("… quarterly period
/// ended April 30, 2023"), with each labelled table row kept to that period's cells when `question` asks
/// for that period and compares nothing: the question names a quarter the context line names ("first
/// quarter of fiscal 2024", "Q1 2024", [`crate::quarter::quarters`]; the file name's "2023 Q1" only when
/// the line states no quarter in words, [`crate::period::stated_context`]) or asks for the latest filing, and uses
/// none of [`COMPARISON_WORDS`]. A filing's tables print the same quarter a year earlier beside its own;
/// with both in front of it, Qwen2.5-Coder-1.5B answered the quick start's question with the prior year's
/// $8,288 million (docs/evaluation/decisions.md, 2026-11-26 (e)). Change columns go too: asked for Microsoft's latest
/// gross margin, the model read "Gross margin: 40,215 (three months ended September 30, 2023); 16% (change,
/// three months ended)" and answered 16% (2026-12-04 (f)). Other cells whose column names no date stay;
/// a row with no cell of the document's date is left whole, and so is every row when the question or the
/// context line names no period.
pub fn keep_document_period(text: &str, passage: &Passage, question: &str) -> String {
    if !text.contains(quarry_core::table_row::CELL_SEPARATOR) || compares_periods(question) {
        return text.to_string();
    }
    let context = passage.context.as_str();
    let Some(date) = crate::period::period_end_text(context) else {
        return text.to_string();
    };
    let named = crate::quarter::quarters(question);
    // The quarter the context line states in words ("first quarter of fiscal 2024") before the one its
    // file name part suggests ("2023 Q1 NVDA" is NVIDIA's first quarter of fiscal 2024, not of 2023).
    let stated = crate::quarter::quarters(&crate::period::stated_context(passage));
    let own = if stated.is_empty() { crate::quarter::quarters(context) } else { stated };
    let asks_this_period =
        named.iter().any(|q| own.contains(q)) || (named.is_empty() && crate::period::asks_for_latest(question));
    if !asks_this_period {
        return text.to_string();
    }
    let dated = |column: &str| {
        column
            .split(|c: char| !c.is_ascii_digit())
            .any(|w| w.len() == 4 && (w.starts_with("19") || w.starts_with("20")))
    };
    let mut out: Vec<String> = Vec::new();
    for line in text.split('\n') {
        let Some((label, cells)) = parse_row(line) else {
            out.push(line.to_string());
            continue;
        };
        if !cells.iter().any(|c| c.column.contains(date)) {
            out.push(line.to_string());
            continue;
        }
        let kept: Vec<_> = cells
            .iter()
            .filter(|c| c.column.contains(date) || !(dated(&c.column) || is_change_column(&c.column)))
            .cloned()
            .collect();
        out.push(if kept.len() == cells.len() { line.to_string() } else { write_row(label, &kept) });
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROW: &str = "iPhone: $39,669 million (three months ended July 1, 2023); $40,665 million (three months ended June 25, 2022); \
                       (2)% (change, three months ended); $156,778 million (nine months ended July 1, 2023); \
                       $162,863 million (nine months ended June 25, 2022); (4)% (change, nine months ended)";

    #[test]
    fn a_quarter_question_keeps_the_three_month_cells() {
        let text = format!("Net sales by category:\n{ROW}\nMac");
        let out = keep_question_periods(&text, "For the latest quarter, what was Apple's iPhone revenue?");
        assert_eq!(
            out,
            "Net sales by category:\niPhone: $39,669 million (three months ended July 1, 2023); $40,665 million (three months ended June 25, 2022); (2)% (change, three months ended)\nMac"
        );
        let out = keep_question_periods(&text, "What were iPhone net sales in the first nine months of 2023?");
        assert!(
            out.contains("iPhone: $156,778 million (nine months ended July 1, 2023); $162,863")
                && !out.contains("39,669"),
            "{out}"
        );
        // No span named, or a span no cell has: unchanged.
        assert_eq!(keep_question_periods(&text, "How have iPhone sales changed over time?"), text);
        assert_eq!(keep_question_periods(&text, "What were annual iPhone sales?"), text);
        // Cells without a span stay.
        let balance = "Inventories: $6,820 million (June 30, 2023); $4,946 million (September 24, 2022)";
        assert_eq!(keep_question_periods(balance, "What were inventories at the end of the quarter?"), balance);
        assert_eq!(spans_named("first quarter of fiscal year 2024"), [Span::Quarter]);
    }

    /// A passage of `2023 Q1 NVDA.pdf` whose document has the context line `context`.
    fn filing(context: &str) -> Passage {
        Passage {
            chunk_id: 1,
            chunk_index: None,
            library: "sec".into(),
            document_id: "nvda".into(),
            path: "/filings/2023 Q1 NVDA.pdf".into(),
            page_start: None,
            page_end: None,
            sheet: None,
            heading_path: Vec::new(),
            text: String::new(),
            context: context.into(),
            score: 1.0,
            ocr: false,
        }
    }

    #[test]
    fn a_question_about_the_documents_own_quarter_keeps_that_quarters_cells() {
        let context = &filing(
            "NVIDIA CORPORATION · Form 10-Q · quarterly period ended April 30, 2023 · first quarter of fiscal 2024 · 2023 Q1 NVDA",
        );
        let row = "Total revenue: $7,192 million (three months ended April 30, 2023); $8,288 million (three months ended May 1, 2022); (13)% (change, three months ended)";
        let text = format!("Revenue:\n{row}\nAs of April 30, 2023 we had …");
        let own = "Total revenue: $7,192 million (three months ended April 30, 2023)";
        for question in [
            "What was NVIDIA's revenue in the first quarter of fiscal 2024?",
            "What was NVIDIA's revenue in Q1 2024?",
            "What was NVIDIA's total revenue in its latest 10-Q?",
        ] {
            assert_eq!(
                keep_document_period(&text, context, question),
                format!("Revenue:\n{own}\nAs of April 30, 2023 we had …"),
                "{question}"
            );
        }
        for question in [
            // Another quarter than the document's: the prior-year column may be the answer.
            "What was NVIDIA's revenue in the first quarter of fiscal 2023?",
            // Comparisons need both columns.
            "How did NVIDIA's revenue in the first quarter of fiscal 2024 compare with a year earlier?",
            "How much did revenue change in Q1 2024?",
            // No period named.
            "What was NVIDIA's revenue?",
        ] {
            assert_eq!(keep_document_period(&text, context, question), text, "{question}");
        }
        // A context line without a period, or a row without the document's date: unchanged.
        assert_eq!(keep_document_period(&text, &filing("NVIDIA CORPORATION · Form 10-Q"), "revenue in Q1 2024?"), text);
        let balance = "Inventories: $4,611 million (January 29, 2023); $5,159 million (October 30, 2022)";
        assert_eq!(keep_document_period(balance, context, "Inventories in the first quarter of fiscal 2024?"), balance);
        assert!(compares_periods("How has Apple's total net sales changed over time?"));
        // "Compare" joins two periods, or two line items of one period.
        assert!(compares_periods("How did revenue in Q1 2024 compare with Q1 2023?"));
        assert!(compares_periods("How does the effective tax rate compare across the periods?"));
        assert!(compares_periods("How did revenue in fiscal 2024 compare to fiscal 2023?"));
        assert!(!compares_periods(
            "How did Apple's operating expenses for Q1 2023 compare to its revenue for the same quarter?"
        ));
        assert!(!compares_periods("How did NVIDIA's operating expenses compare to its revenues in Q1 2023?"));
        assert!(!compares_periods("What was the revenue from iPhone sales for the latest quarter?"));
    }
}
