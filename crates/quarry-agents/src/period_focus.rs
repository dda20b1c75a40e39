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

use quarry_core::table_row::{parse_row, write_row};
use regex::Regex;
use std::sync::OnceLock;

/// A length of reporting period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    Quarter,
    HalfYear,
    NineMonths,
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
        .map(|(span, pattern)| (span, Regex::new(pattern).unwrap()))
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
}
