//! What a document is about, in one line, for every chunk of it: a chunk of a quarterly filing says
//! "we" and "the Company" and "the quarter", so four filings of one company look alike to BM25, to the
//! embedding and to the model reading it. The line names what the document itself states on its first
//! page — organisation, document type, period — plus the fiscal quarter its text speaks of most, its
//! first heading or title lines, and last the file name, e.g.
//! `NVIDIA CORPORATION · Form 10-Q · quarterly period ended April 30, 2023 · first quarter of fiscal 2024 · 2023 Q1 NVDA`.
//!
//! Rules, all read from the text (no model): the organisation is the first line of the first page ending
//! in a company form (Inc., Corporation, Ltd., plc, …); the document type a `Form X` mention; the period
//! a "for the … ended `<date>`" phrase; the fiscal quarter the most frequent "`<first…fourth>` quarter of
//! `[fiscal]` `<year>`" phrase of the whole document, when it occurs at least twice; the title the first
//! heading, else the document's first short lines. Anything not stated is left out; a document that
//! states nothing gets its file name alone.

use quarry_core::{ParsedDocument, CONTEXT_SEPARATOR};
use regex::Regex;
use std::collections::HashMap;
use std::sync::OnceLock;

/// Characters of the document's start read for organisation, type, period and title (about a page).
const FIRST_PAGE_CHARS: usize = 4000;
/// Longest context line, in characters.
const MAX_CONTEXT_CHARS: usize = 240;

struct Patterns {
    organisation: Regex,
    form: Regex,
    period: Regex,
    fiscal_quarter: Regex,
}

fn patterns() -> &'static Patterns {
    static PATTERNS: OnceLock<Patterns> = OnceLock::new();
    PATTERNS.get_or_init(|| Patterns {
        organisation: Regex::new(
            r"(?i)^[\p{L}\d][\p{L}\d .,&'’-]{1,70}?\b(inc\.?|incorporated|corporation|corp\.?|company|co\.|ltd\.?|limited|plc|llc|l\.l\.c\.|group|holdings|ag|se|n\.v\.|s\.a\.)$",
        )
        .expect("the pattern is valid"),
        form: Regex::new(r"\b(?i:form)\s+(\d{1,2}-[A-Z]{1,2}|[A-Z]{1,3}-\d{1,2}[A-Z]?|\d{3,4}(?:-[A-Z]+)?)\b").expect("the pattern is valid"),
        period: Regex::new(
            r"(?i)\bfor the ((?:quarterly|annual|fiscal|transition)? ?(?:period|year|quarter)|(?:three|six|nine|twelve) months) ended:?\s+([A-Z][a-z]+\.? \d{1,2}, \d{4})",
        )
        .expect("the pattern is valid"),
        fiscal_quarter: Regex::new(r"(?i)\b(first|second|third|fourth) (?:fiscal )?quarter of (fiscal )?(?:year )?((?:19|20)\d{2})\b").expect("the pattern is valid"),
    })
}

/// The context line of `doc` (see the module docs); never empty when the document has a file name.
pub fn document_context(doc: &ParsedDocument) -> String {
    let p = patterns();
    let start: String = doc.full_text().chars().take(FIRST_PAGE_CHARS).collect();
    let lines: Vec<&str> = start.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let mut parts: Vec<String> = Vec::new();

    if let Some(organisation) = lines.iter().find(|l| p.organisation.is_match(l)) {
        parts.push(organisation.to_string());
    }
    if let Some(form) = p.form.captures(&start) {
        parts.push(format!("Form {}", &form[1]));
    }
    let mut period_end = None;
    if let Some(period) = p.period.captures(&start) {
        let what = period[1].split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
        parts.push(format!("{what} ended {}", &period[2]));
        period_end = month_and_year(&period[2]);
    }
    if let Some(quarter) = most_frequent_fiscal_quarter(doc, &p.fiscal_quarter, period_end) {
        parts.push(quarter);
    }
    if parts.is_empty() {
        if let Some(title) = title(doc, &lines) {
            parts.push(title);
        }
    }
    let name = file_stem(&doc.path);
    if !name.is_empty() && !parts.iter().any(|p| p.eq_ignore_ascii_case(&name)) {
        parts.push(name);
    }
    let mut line = parts.join(CONTEXT_SEPARATOR);
    if line.chars().count() > MAX_CONTEXT_CHARS {
        line = line.chars().take(MAX_CONTEXT_CHARS - 1).collect::<String>() + "…";
    }
    line
}

/// The "`<ordinal>` quarter of `[fiscal]` `<year>`" phrase the document uses most (at least twice), normalised
/// to lower case ("first quarter of fiscal 2024"). When the document states its period's end
/// (`period_end`, month and year), only phrases that can name that quarter count
/// ([`quarter_fits_period`]): a filing also speaks of other quarters — Microsoft's 10-Q for the quarter
/// ended December 31, 2022 mentions "first quarter of fiscal year 2022" (a change of accounting estimate)
/// nine times and its own "second quarter of fiscal year 2023" four.
fn most_frequent_fiscal_quarter(
    doc: &ParsedDocument,
    pattern: &Regex,
    period_end: Option<(u32, u32)>,
) -> Option<String> {
    const ORDINALS: [&str; 4] = ["first", "second", "third", "fourth"];
    let mut counts: HashMap<String, (usize, usize)> = HashMap::new();
    let mut order = 0;
    for block in &doc.blocks {
        for c in pattern.captures_iter(&block.text) {
            let ordinal = c[1].to_lowercase();
            let quarter = ORDINALS.iter().position(|o| *o == ordinal).expect("the pattern's ordinals") as u32 + 1;
            let year: u32 = c[3].parse().expect("four digits");
            if period_end.is_some_and(|end| !quarter_fits_period(quarter, year, end)) {
                continue;
            }
            let fiscal = if c.get(2).is_some() { "fiscal " } else { "" };
            let key = format!("{ordinal} quarter of {fiscal}{}", &c[3]);
            let entry = counts.entry(key).or_insert((0, order));
            entry.0 += 1;
            order += 1;
        }
    }
    // Most frequent; ties go to the first mentioned.
    counts
        .into_iter()
        .filter(|(_, (n, _))| *n >= 2)
        .max_by(|a, b| a.1 .0.cmp(&b.1 .0).then(b.1 .1.cmp(&a.1 .1)))
        .map(|(k, _)| k)
}

/// Whether "the `quarter`th quarter of `[fiscal]` `year`" can be the quarter that ends in `period_end`
/// (month 1–12, year): a fiscal year is named by the calendar year it ends in (NVIDIA's fiscal 2024
/// ends in January 2024, Microsoft's fiscal 2023 in June 2023), and its `quarter`th quarter ends
/// 3 × (4 − `quarter`) months before it does, so that many months after the period's end must fall in
/// `year`. (A calendar year is the fiscal year ending in December.) The period's month is the month
/// the quarter covers: a period ending in the first week of a month (Apple's July 1, Intel's October
/// 1) counts as the month before — [`month_and_year`] does that.
fn quarter_fits_period(quarter: u32, year: u32, period_end: (u32, u32)) -> bool {
    let (month, end_year) = period_end;
    let months = end_year * 12 + (month - 1) + 3 * (4 - quarter);
    months / 12 == year
}

/// Month (1–12) and year of a date written "April 30, 2023", the month before when the day is in
/// the first week (a 52/53-week quarter ending "July 1, 2023" covers June); `None` when it is not
/// such a date.
fn month_and_year(date: &str) -> Option<(u32, u32)> {
    const MONTHS: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
    let mut words = date.split(|c: char| c.is_whitespace() || c == ',').filter(|w| !w.is_empty());
    let month_word = words.next()?.to_lowercase();
    let month = MONTHS.iter().position(|m| month_word.starts_with(m))? as u32 + 1;
    let day: u32 = words.next()?.parse().ok()?;
    let year: u32 = words.next()?.parse().ok()?;
    Some(match (day <= 7, month) {
        (true, 1) => (12, year - 1),
        (true, m) => (m - 1, year),
        (false, m) => (m, year),
    })
}

/// The first heading of the document, else its first one or two short lines that read like a title.
fn title(doc: &ParsedDocument, lines: &[&str]) -> Option<String> {
    if let Some(heading) =
        doc.blocks.iter().flat_map(|b| b.location.heading_path.first()).find(|h| !h.trim().is_empty())
    {
        return Some(heading.trim().to_string());
    }
    let title_like = |l: &str| {
        let letters = l.chars().filter(|c| c.is_alphabetic()).count();
        l.chars().count() <= 80 && letters * 2 > l.chars().count() && !l.ends_with(':')
    };
    let picked: Vec<&str> = lines.iter().copied().take(4).take_while(|l| title_like(l)).take(2).collect();
    (!picked.is_empty()).then(|| picked.join(" — ").trim_start_matches(['#', ' ']).to_string())
}

/// The file name without folders, archive prefix and extension (`/a/b.zip!/2023 Q1 NVDA.pdf` →
/// `2023 Q1 NVDA`).
fn file_stem(path: &str) -> String {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let stem = match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && ext.len() <= 5 => stem,
        _ => name,
    };
    stem.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use quarry_core::{Block, Format, Location};

    fn doc(path: &str, pages: &[&str]) -> ParsedDocument {
        ParsedDocument {
            path: path.into(),
            format: Format::Pdf,
            content_hash: "h".into(),
            byte_len: 0,
            page_count: Some(pages.len() as u32),
            blocks: pages
                .iter()
                .enumerate()
                .map(|(i, t)| Block {
                    text: t.to_string(),
                    location: Location { page: Some(i as u32 + 1), ..Default::default() },
                })
                .collect(),
            warnings: vec![],
        }
    }

    #[test]
    fn a_quarterly_filing_is_named_by_issuer_form_period_and_fiscal_quarter() {
        let cover = "UNITED STATES\nSECURITIES AND EXCHANGE COMMISSION\nWashington, D.C. 20549\nFORM 10-Q\n\
                     QUARTERLY REPORT PURSUANT TO SECTION 13\nFor the quarterly period ended April 30, 2023\n\
                     Commission file number: 0-23985\nNVIDIA CORPORATION\n(Exact name of registrant as specified in its charter)";
        let body =
            "Revenue for the first quarter of fiscal year 2024 was $7.19 billion. The second quarter of fiscal 2024 \
                    outlook … In the first quarter of fiscal 2024 we …";
        let d = doc("/lib/sec/2023 Q1 NVDA.pdf", &[cover, body]);
        assert_eq!(
            document_context(&d),
            "NVIDIA CORPORATION · Form 10-Q · quarterly period ended April 30, 2023 · first quarter of fiscal 2024 · 2023 Q1 NVDA"
        );
    }

    #[test]
    fn the_fiscal_quarter_is_one_that_can_end_in_the_stated_period() {
        // Microsoft, quarter ended December 31, 2022: its fiscal year ends in June, so this is the second
        // quarter of fiscal 2023; "first quarter of fiscal year 2022" is an older quarter it mentions more.
        let cover = "FORM 10-Q\nFor the Quarterly Period Ended December 31, 2022\nMICROSOFT CORPORATION";
        let body = "beginning in the first quarter of fiscal year 2022 … first quarter of fiscal year 2022 … \
                    first quarter of fiscal year 2022 … in the second quarter of fiscal year 2023 … second quarter of fiscal year 2023";
        let d = doc("/lib/2023 Q1 MSFT.pdf", &[cover, body]);
        assert_eq!(
            document_context(&d),
            "MICROSOFT CORPORATION · Form 10-Q · quarterly period ended December 31, 2022 · second quarter of fiscal 2023 · 2023 Q1 MSFT"
        );
        // Without a stated period every phrase counts.
        let d = doc("/lib/notes.pdf", &[body]);
        assert_eq!(document_context(&d), "first quarter of fiscal 2022 · notes");
        // Periods ending in a month's first week cover the month before (Intel: October 1, 2022).
        assert!(quarter_fits_period(3, 2022, month_and_year("October 1, 2022").unwrap()));
        assert!(quarter_fits_period(4, 2022, (12, 2022)));
        assert!(quarter_fits_period(1, 2024, month_and_year("April 30, 2023").unwrap()), "NVIDIA's fiscal 2024");
        assert!(quarter_fits_period(1, 2023, month_and_year("December 31, 2022").unwrap()), "Apple's fiscal 2023");
        assert!(!quarter_fits_period(1, 2022, month_and_year("December 31, 2022").unwrap()));
        assert_eq!(month_and_year("January 2, 2023"), Some((12, 2022)));
        assert_eq!(month_and_year("Sept. 30, 2023"), Some((9, 2023)));
        assert_eq!(month_and_year("the 30th"), None);
    }

    #[test]
    fn other_documents_get_their_title_and_file_name() {
        let d = doc(
            "/r/20080102X00002.pdf",
            &["National Transportation Safety Board\nAviation Accident Factual Report\nLocation:\nChevroux, France"],
        );
        assert_eq!(
            document_context(&d),
            "National Transportation Safety Board — Aviation Accident Factual Report · 20080102X00002"
        );
        let mut md = doc("a.zip!/notes/联通年报.md", &["正文"]);
        md.blocks[0].location.heading_path = vec!["中国联通 2022 年度报告摘要".into()];
        assert_eq!(document_context(&md), "中国联通 2022 年度报告摘要 · 联通年报");
        assert_eq!(document_context(&doc("empty.txt", &[""])), "empty");
        let apple = doc(
            "q.pdf",
            &["FORM 10-Q\nFor the quarterly period ended July 1, 2023\nApple Inc.\n(Exact name of Registrant)"],
        );
        assert_eq!(document_context(&apple), "Apple Inc. · Form 10-Q · quarterly period ended July 1, 2023 · q");
    }
}
