//! The quarters a text names — a question, a document's context line, a file name, a claim — read one
//! way for every use: the document match ([`crate::document_match`]: which filing a question means), the
//! period focus ([`crate::genre::financial::period_focus`]: which table columns it asks for) and the claim check
//! ([`crate::claims`]: whether a cited passage names the period a claim states).
//!
//! Forms read (case aside): "Q1 2024", "Q1'2024", "Q1 FY2024", "Q1 of fiscal 2024"; the year-first labels
//! of file names, "2023 Q1", "FY2023 Q1", "2023_Q1", "2023-Q1", "2023Q1", "2023 Q3MSFT"; and the
//! spelled-out "first quarter of 2023", "1st quarter of fiscal year 2021", "second quarter in 2023",
//! "third quarter, 2022", "fourth quarter of the fiscal year 2023". A quarter is kept as written
//! (quarter and year): a fiscal year is not turned into a calendar one. A year or quarter number that
//! runs on into more digits ("12023 Q15", "Q3 20234") is none.

use regex::Regex;
use std::sync::OnceLock;

/// One quarter named in a text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct QuarterMention {
    /// The quarter, 1–4.
    pub quarter: u8,
    /// The year as written (fiscal or calendar).
    pub year: u16,
    /// Where the text names it (byte range).
    pub span: std::ops::Range<usize>,
    /// Whether it is written as a fiscal quarter ("fiscal", "FY").
    pub fiscal: bool,
}

impl QuarterMention {
    /// The quarter as one match term of [`crate::document_match`]: `q1·2023`.
    pub fn term(&self) -> String {
        format!("q{}·{}", self.quarter, self.year)
    }
}

/// Every quarter `text` names (see the module docs), with where and how: quarter codes first ("Q1 2024"),
/// then year-first labels ("2023 Q1"), then spelled-out quarters, each in text order; where two readings
/// overlap ("Q3 2023 Q4") the first is kept.
pub(crate) fn quarter_mentions(text: &str) -> Vec<QuarterMention> {
    static PATTERNS: OnceLock<[Regex; 3]> = OnceLock::new();
    let [code_first, year_first, spelled] = PATTERNS.get_or_init(|| {
        [
            Regex::new(r"(?i)\bQ([1-4])[\s,'’]*(?:of\s+)?(?:fiscal\s+|FY\s*)?((?:19|20)\d{2})\b").expect("valid pattern"),
            Regex::new(r"(?i)\b(?:FY\s*)?((?:19|20)\d{2})[\s,_-]*Q([1-4])").expect("valid pattern"),
            Regex::new(
                r"(?i)\b(first|second|third|fourth|1st|2nd|3rd|4th) (?:fiscal )?quarter,?(?: (?:of|in))?(?: the)?(?: fiscal)?(?: year)?,? (?:FY\s?)?((?:19|20)\d{2})\b",
            )
            .expect("valid pattern"),
        ]
    });
    let ordinal = |w: &str| match w.to_lowercase().as_str() {
        "first" | "1st" => 1,
        "second" | "2nd" => 2,
        "third" | "3rd" => 3,
        _ => 4,
    };
    let mention = |c: &regex::Captures, quarter: u8, year: &str| {
        let whole = c.get(0).expect("a match");
        let written = whole.as_str().to_lowercase();
        Some(QuarterMention {
            quarter,
            year: year.parse().ok()?,
            span: whole.range(),
            fiscal: written.contains("fiscal") || written.contains("fy"),
        })
    };
    let mut mentions = Vec::new();
    for c in code_first.captures_iter(text) {
        mentions.extend(mention(&c, c[1].parse().unwrap_or(0), &c[2]));
    }
    for c in year_first.captures_iter(text) {
        // "2023 Q1" but not "2023 Q15": the quarter's digit ends the number (a name may follow, "Q3MSFT").
        let end = c.get(0).expect("a match").end();
        if !text[end..].starts_with(|ch: char| ch.is_ascii_digit()) {
            mentions.extend(mention(&c, c[2].parse().unwrap_or(0), &c[1]));
        }
    }
    for c in spelled.captures_iter(text) {
        mentions.extend(mention(&c, ordinal(&c[1]), &c[2]));
    }
    let mut kept: Vec<QuarterMention> = Vec::new();
    for m in mentions {
        if !kept.iter().any(|k| k.span.start < m.span.end && m.span.start < k.span.end) {
            kept.push(m);
        }
    }
    kept
}

/// The distinct quarters `text` names, as (quarter 1–4, year), in text order ([`quarter_mentions`]).
pub fn quarters(text: &str) -> Vec<(u8, u16)> {
    let mut mentions = quarter_mentions(text);
    mentions.sort_by_key(|m| m.span.start);
    let mut out: Vec<(u8, u16)> = Vec::new();
    for m in mentions {
        if !out.contains(&(m.quarter, m.year)) {
            out.push((m.quarter, m.year));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_of_a_quarter_is_read_and_runs_of_digits_are_not() {
        assert_eq!(
            quarters("the fourth quarter of 2023 and Q1 2024, Q3 of fiscal 2022, 1st quarter of fiscal year 2021"),
            [(4, 2023), (1, 2024), (3, 2022), (1, 2021)]
        );
        assert_eq!(
            quarters("· 2023 Q1 NVDA · 2023 Q3MSFT · 2022-Q4 · 2021_Q2"),
            [(1, 2023), (3, 2023), (4, 2022), (2, 2021)]
        );
        assert_eq!(
            quarters("Q1'2023, FY 2023 Q4, the second quarter in 2023, third quarter, 2022"),
            [(1, 2023), (4, 2023), (2, 2023), (3, 2022)]
        );
        assert_eq!(quarters("the fourth quarter of the fiscal year 2023"), [(4, 2023)]);
        assert_eq!(quarters("12023 Q15 and Q3 20234"), []);
        assert!(quarters("Q3 results; 2023 revenue; Q3-2023x").is_empty());
        let mentions = quarter_mentions("Q1 FY2024 and the first quarter of 2023");
        assert_eq!(
            mentions.iter().map(|m| (m.term(), m.fiscal)).collect::<Vec<_>>(),
            [("q1·2024".to_string(), true), ("q1·2023".to_string(), false)]
        );
        assert_eq!(&"Q1 FY2024 and the first quarter of 2023"[mentions[1].span.clone()], "first quarter of 2023");
        // Two readings of one stretch: the first is kept.
        assert_eq!(quarters("Q3 2023 Q4"), [(3, 2023)]);
    }
}
