//! Section headings of a PDF, read from its text layer, so that each chunk can say which section it is
//! from ("Item 2. Management's Discussion and Analysis … > First Quarter of Fiscal Year 2024 Summary").
//!
//! A PDF's text layer has no heading marks: a heading is a line. A chunk of a quarterly filing that says
//! "Revenue for the first quarter of fiscal year 2024 was $7.19 billion" sits under the heading that
//! names what it summarises; without the heading both indexes see only the paragraph (docs/ANSWERS.md,
//! Session 16). The rules, all read from the lines (no fonts, no model):
//!
//! - A **heading** is a line of 1–14 words and at most 120 characters that starts with a capital letter,
//!   does not end like a sentence or a list lead-in (`.`, `,`, `;`, `:`) unless it is a bare numbered part
//!   ("Item 1A."), holds no amount (`$`, `%`, a number other than a year or the heading's own number), no
//!   date and no table-header words ([`crate::table`]'s "Three Months Ended", "(In millions)"), and whose
//!   words are in title case or capitals (every word but a few joining words starts with a capital). The
//!   line after it must not continue a sentence (start in lower case).
//! - It does not follow a table-header line, and the first line after it (and after any headings right
//!   below it) is prose or a table's header: column titles of a table ("Year-over-Year", "Weighted
//!   Average Grant-Date Fair" over "Value Per Share") are followed by rows or by more of the title. A
//!   one-word heading must introduce prose. Running heads between a heading and its text are skipped.
//! - A line that recurs on three or more pages is page furniture (running heads such as "Table of
//!   Contents" or "NVIDIA CORPORATION AND SUBSIDIARIES"), not a heading.
//! - **Levels**: "PART I" starts a part and clears the path; "Item 2." is the first level under it; every
//!   other heading replaces the one below its item. The path is at most [item, heading].
//! - A run of headings with no other text between them (a table of contents, "Item 2." over its first
//!   sub-heading) stays one section, under the last of them, rather than a chunk of headings alone.

use regex::Regex;
use std::collections::HashMap;
use std::sync::OnceLock;

/// Longest heading line, in characters.
const MAX_HEADING_CHARS: usize = 120;
/// Most words in a heading line.
const MAX_HEADING_WORDS: usize = 14;
/// A line on this many pages or more is a running head or foot, not a heading.
const FURNITURE_PAGES: usize = 3;

/// Words that stay in lower case inside a title.
const JOINING_WORDS: &[&str] = &[
    "a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "of", "on", "or", "per", "the", "to", "vs", "via",
    "with", "its", "our", "not", "than", "under", "over",
];

struct Patterns {
    part: Regex,
    item: Regex,
    numbered: Regex,
    date: Regex,
}

fn patterns() -> &'static Patterns {
    static PATTERNS: OnceLock<Patterns> = OnceLock::new();
    PATTERNS.get_or_init(|| Patterns {
        part: Regex::new(r"^(?i:part)\s+[IVX]+\b").expect("the pattern is valid"),
        item: Regex::new(r"^(?i:item)\s+\d{1,2}[A-Z]?\b").expect("the pattern is valid"),
        // The number that names a heading: "Note 4", "Item 1A.", "PART I.", "3.2", "1." at its start.
        numbered: Regex::new(r"^(?:(?i:note|item|part|section|chapter|appendix)\s+\S+|\d+(?:\.\d+)*\.?)(?:\s+|$)")
            .expect("the pattern is valid"),
        date: Regex::new(
            r"(?i)\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?\s+\d{1,2},?\s+(?:19|20)\d{2}\b",
        )
        .expect("the pattern is valid"),
    })
}

/// The pages' text cut into sections: `(page, heading path, text)` in reading order. Each page's text is
/// split before every heading line that follows other text (the heading stays as the first line of its
/// section's text), and every piece carries the path in force after its leading headings; text before
/// the first heading has an empty path. Joining one page's pieces with line breaks gives back its text.
pub(crate) fn split_sections(pages: &[(u32, String)]) -> Vec<(u32, Vec<String>, String)> {
    let furniture = furniture_lines(pages);
    let mut path: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for (page, text) in pages {
        let lines: Vec<&str> = text.lines().collect();
        let headings = heading_lines(&lines, &furniture);
        let mut current: Vec<&str> = Vec::new();
        // Whether `current` holds a line other than headings.
        let mut body = false;
        for (line, heading) in lines.iter().zip(headings) {
            if heading {
                if body {
                    out.push((*page, path.clone(), current.join("\n")));
                    current.clear();
                    body = false;
                }
                enter(&mut path, line.trim());
            } else if !line.trim().is_empty() {
                body = true;
            }
            current.push(line);
        }
        if current.iter().any(|l| !l.trim().is_empty()) {
            out.push((*page, path.clone(), current.join("\n")));
        }
    }
    out
}

/// Which of a page's `lines` are headings: each reads as one ([`is_heading`]), is not page furniture,
/// does not follow a table-header line (a column title such as "Year-over-Year" under "Change"), and the
/// first line after its run of heading-like lines is text a heading introduces — prose or a table's
/// header — rather than a table row or the rest of a column title ("Weighted Average Grant-Date Fair" /
/// "Value Per Share" / "Balances, January 29, 2023 … 1,234").
fn heading_lines(lines: &[&str], furniture: &HashMap<String, usize>) -> Vec<bool> {
    let filled: Vec<usize> = (0..lines.len()).filter(|&i| !lines[i].trim().is_empty()).collect();
    let is_furniture = |i: usize| furniture.contains_key(&furniture_key(lines[i]));
    let mut candidate = vec![false; lines.len()];
    for (k, &i) in filled.iter().enumerate() {
        let next = filled.get(k + 1).map(|&j| lines[j].trim());
        let after_header = k > 0 && crate::table::is_header_line(lines[filled[k - 1]]);
        candidate[i] = !after_header && is_heading(lines[i], next) && !is_furniture(i);
    }
    let mut heading = vec![false; lines.len()];
    for (k, &i) in filled.iter().enumerate() {
        if candidate[i] {
            // Running heads between a heading and its text are looked through (a table header repeats
            // on many pages too, but is what a heading over a table introduces).
            let looked_through = |j: usize| is_furniture(j) && !crate::table::is_header_line(lines[j]);
            let introduced =
                filled[k + 1..].iter().find(|&&j| !candidate[j] && !looked_through(j)).map(|&j| lines[j].trim());
            // A one-word heading ("Liquidity") must introduce prose: one word over a table is a column title.
            let one_word = lines[i].split_whitespace().count() == 1;
            heading[i] = introduced.is_some_and(|l| is_prose(l) || (!one_word && crate::table::is_header_line(l)));
        }
    }
    heading
}

/// A line of running text: five words or more, at least two of them lower-case words.
fn is_prose(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    let lower = words
        .iter()
        .filter(|w| {
            let letters: Vec<char> = w.chars().filter(|c| c.is_alphabetic()).collect();
            letters.len() >= 2 && letters.iter().all(|c| c.is_lowercase())
        })
        .count();
    words.len() >= 5 && lower >= 2
}

/// Moves `path` into the section `heading` opens (see the module docs for the levels).
fn enter(path: &mut Vec<String>, heading: &str) {
    let p = patterns();
    let heading = heading.split_whitespace().collect::<Vec<_>>().join(" ");
    if p.part.is_match(&heading) {
        path.clear();
    } else if p.item.is_match(&heading) {
        path.clear();
        path.push(heading);
    } else {
        let keep = usize::from(path.first().is_some_and(|h| p.item.is_match(h)));
        path.truncate(keep);
        path.push(heading);
    }
}

/// Lines found on [`FURNITURE_PAGES`] pages or more, keyed by [`furniture_key`], with their page counts.
fn furniture_lines(pages: &[(u32, String)]) -> HashMap<String, usize> {
    let mut pages_of: HashMap<String, usize> = HashMap::new();
    for (_, text) in pages {
        let mut seen: Vec<String> = text.lines().map(furniture_key).filter(|k| !k.is_empty()).collect();
        seen.sort_unstable();
        seen.dedup();
        for key in seen {
            *pages_of.entry(key).or_default() += 1;
        }
    }
    pages_of.retain(|_, n| *n >= FURNITURE_PAGES);
    pages_of
}

/// A line compared across pages: its letters only, in lower case (a running head reads the same on every
/// page but for page numbers).
fn furniture_key(line: &str) -> String {
    line.chars().filter(|c| c.is_alphabetic()).flat_map(char::to_lowercase).collect()
}

/// Whether `line` reads as a heading (see the module docs); `next` is the next non-empty line.
fn is_heading(line: &str, next: Option<&str>) -> bool {
    let p = patterns();
    let line = line.trim();
    let chars = line.chars().count();
    if !(3..=MAX_HEADING_CHARS).contains(&chars) || !line.chars().next().is_some_and(char::is_uppercase) {
        return false;
    }
    if line.split_whitespace().count() > MAX_HEADING_WORDS {
        return false;
    }
    let numbered = p.numbered.is_match(line) || p.part.is_match(line) || p.item.is_match(line);
    let name = if numbered { p.numbered.replace(line, "").into_owned() } else { line.to_string() };
    let name = name.trim();
    // "Item 1A." alone is a heading whose title follows; a line ending like a sentence or a lead-in is not.
    if !name.is_empty() && name.ends_with(['.', ',', ';', ':']) {
        return false;
    }
    if line.contains(['$', '%', '€', '£']) || p.date.is_match(line) || crate::table::is_header_line(line) {
        return false;
    }
    // Numbers other than years ("Fiscal Year 2024") and the heading's own number are figures.
    let figures = name.split_whitespace().filter(|w| w.chars().any(|c| c.is_ascii_digit())).any(|w| {
        let digits: String = w.chars().filter(char::is_ascii_digit).collect();
        !(digits.len() == 4 && (digits.starts_with("19") || digits.starts_with("20")))
    });
    if figures {
        return false;
    }
    // A title does not end on "and" or "of" (a wrapped line of prose does), and closes what it opens.
    let last = name.split_whitespace().last().unwrap_or("").to_lowercase();
    if !numbered && JOINING_WORDS.contains(&last.as_str()) {
        return false;
    }
    // "Flight Conducted Under: Non-U.S." is a form's field and its value.
    if line.matches('(').count() != line.matches(')').count() || name.contains(": ") {
        return false;
    }
    let mut title_words = 0;
    for word in name.split_whitespace() {
        let letters: String = word.chars().filter(|c| c.is_alphabetic()).collect();
        if letters.is_empty() || JOINING_WORDS.contains(&letters.to_lowercase().as_str()) {
            continue;
        }
        if !letters.chars().next().is_some_and(char::is_uppercase) {
            return false;
        }
        title_words += 1;
    }
    if title_words == 0 && !numbered {
        return false;
    }
    // The next line continues a sentence: this line is its start, not a heading.
    !next.is_some_and(|n| n.chars().next().is_some_and(char::is_lowercase))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_are_told_from_prose_tables_and_running_heads() {
        let yes = [
            "First Quarter of Fiscal Year 2024 Summary",
            "Item 2. Management's Discussion and Analysis of Financial Condition and Results of Operations",
            "PART I. FINANCIAL INFORMATION",
            "CONDENSED CONSOLIDATED STATEMENTS OF INCOME",
            "Note 4 - Leases",
            "Liquidity and Capital Resources",
            "Revenue by Reportable Segments",
            "Item 1A.",
        ];
        for line in yes {
            assert!(is_heading(line, Some("Revenue was up.")), "{line}");
        }
        let no = [
            "Revenue for the first quarter of fiscal year 2024 was $7.19 billion, down 13% from a year ago.",
            "Three Months Ended",
            "April 30, 2023 January 29, 2023 May 1, 2022",
            "(In millions, except per share data)",
            "Revenue:",
            "Data Center $ 4,284 $ 3,750",
            "Total Revenue 7,192 8,288",
            "We specialize in markets where our computing platforms can provide",
            "Operating expenses",
            "FORM 10-Q",
            "Flight Conducted Under: Non-U.S., Non-Commercial",
            "25",
        ];
        for line in no {
            assert!(!is_heading(line, Some("Revenue was up.")), "{line}");
        }
        // A title-case line that a sentence continues is not a heading.
        assert!(!is_heading("Hopper and Ampere Architectures", Some("were in demand.")));
        assert!(!is_heading("Productivity and Business Processes and", Some("More Personal Computing.")));
    }

    #[test]
    fn column_titles_of_a_table_are_not_headings() {
        let none = HashMap::new();
        let found = |text: &str| -> Vec<String> {
            let lines: Vec<&str> = text.lines().collect();
            let flags = heading_lines(&lines, &none);
            lines.iter().zip(flags).filter(|(_, h)| *h).map(|(l, _)| l.to_string()).collect()
        };
        // NVIDIA's summary table: the heading above it stays, its column titles do not.
        let summary = "First Quarter of Fiscal Year 2024 Summary\nThree Months Ended\nApril 30, 2023 January 29, 2023 May 1, 2022\nQuarter-over-Quarter\nChange\nYear-over-Year\nChange\nRevenue $ 7,192 $ 6,051 $ 8,288 19 % (13)%";
        assert_eq!(found(summary), ["First Quarter of Fiscal Year 2024 Summary"]);
        let equity = "Weighted Average Grant-Date Fair\nValue Per Share\nBalances, January 29, 2023 $ 1,234 $ 5,678";
        assert!(found(equity).is_empty());
        // A heading over a table's own header is kept; a single word over one is a column title.
        assert_eq!(found("Purchase Obligations\n(In millions)\nFiscal Year 2024 $ 6,667"), ["Purchase Obligations"]);
        assert!(found("Amount\n(In millions)\nFiscal Year 2024 $ 6,667").is_empty());
    }

    #[test]
    fn sections_carry_their_item_and_heading_across_pages() {
        let head = "Table of Contents\nNVIDIA Corporation and Subsidiaries";
        let pages = vec![
            (1, format!("{head}\nPART I. FINANCIAL INFORMATION\nItem 1. Financial Statements\nThe statements below are unaudited.")),
            (
                2,
                format!(
                    "{head}\nItem 2. Management's Discussion and Analysis\nFirst Quarter of Fiscal Year 2024 Summary\nRevenue for the first quarter was $7.19 billion."
                ),
            ),
            (3, format!("{head}\nGaming revenue was down.\nLiquidity and Capital Resources\nCash and equivalents were $15.32 billion.")),
        ];
        let sections = split_sections(&pages);
        let paths: Vec<(u32, Vec<&str>)> =
            sections.iter().map(|(page, path, _)| (*page, path.iter().map(String::as_str).collect())).collect();
        let item2 = "Item 2. Management's Discussion and Analysis";
        let summary = "First Quarter of Fiscal Year 2024 Summary";
        assert_eq!(
            paths,
            vec![
                (1, vec![]),
                (1, vec!["Item 1. Financial Statements"]),
                (2, vec!["Item 1. Financial Statements"]),
                (2, vec![item2, summary]),
                (3, vec![item2, summary]),
                (3, vec![item2, "Liquidity and Capital Resources"]),
            ]
        );
        // A table header found on every page is still what a heading over a table introduces.
        let tables: Vec<(u32, String)> = (1..=3)
            .map(|n| (n, format!("Results for page {n} are as follows in the table.\nThree Months Ended\nRevenue $ {n},192 $ 8,288")))
            .chain([(4, "Quarterly Summary\nThree Months Ended\nRevenue $ 7,192 $ 8,288".to_string())])
            .collect();
        assert_eq!(split_sections(&tables).last().unwrap().1, ["Quarterly Summary"]);
        // Every line is kept, in order; headings start their section's text, a run of them stays together.
        let page2: Vec<&str> = sections.iter().filter(|s| s.0 == 2).map(|s| s.2.as_str()).collect();
        assert_eq!(page2.join("\n"), pages[1].1);
        assert!(sections[3].2.starts_with("Item 2. Management's Discussion and Analysis\nFirst Quarter"));
        assert!(sections[5].2.starts_with("Liquidity and Capital Resources\nCash"));
    }

    /// Study, not a check: prints where the heading path changes in every PDF under `$QUARRY_STUDY_DIR`:
    /// `QUARRY_STUDY_DIR=… cargo test -p quarry-ingest --lib section_study -- --ignored --nocapture`.
    #[test]
    #[ignore = "a study over local files"]
    fn section_study() {
        let Ok(dir) = std::env::var("QUARRY_STUDY_DIR") else { return };
        let files = crate::pdf::pdf_files_under(std::path::Path::new(&dir));
        let options = crate::ParseOptions::default();
        for file in files {
            let mut document = None;
            crate::parse_file(&file, &file.display().to_string(), &options, &mut |event| {
                if let crate::ParseEvent::Finished(outcome) = event {
                    document = outcome.document;
                }
            });
            let Some(document) = document else { continue };
            println!("== {} ({} blocks)", file.display(), document.blocks.len());
            let mut last: Option<&Vec<String>> = None;
            for block in &document.blocks {
                if last != Some(&block.location.heading_path) {
                    println!("  p{:?} {}", block.location.page, block.location.heading_path.join(" > "));
                    last = Some(&block.location.heading_path);
                }
            }
        }
    }
}
