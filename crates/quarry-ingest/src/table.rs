//! Financial tables made readable one row at a time.
//!
//! A PDF's text layer gives a table as a header of scattered column titles and then one line per row of
//! bare numbers:
//!
//! ```text
//! Three Months Ended Nine Months Ended
//! October 29, October 30, October 29, October 30,
//! 2023 2022 2023 2022
//! (In millions)
//! Data Center $ 14,514 $ 3,833 $ 29,121 $ 11,389
//! ```
//!
//! A person reads the column from the header; a small language model reading a 700-character passage
//! (often cut after the header, or with the header in another chunk) takes the nine-month figure for the
//! quarter, or the prior year's for this year's, and drops the unit. This module rewrites each row whose
//! columns it can tell apart so that every figure carries its own column and unit:
//!
//! ```text
//! Data Center: $14,514 million (three months ended October 29, 2023); $3,833 million (three months ended
//! October 30, 2022); $29,121 million (nine months ended October 29, 2023); $11,389 million (nine months
//! ended October 30, 2022)
//! ```
//!
//! Rules (no model), read from the text:
//! - A **row** is a line that ends in at least two numeric cells (`$ 1,234`, `(4)%`, `12.5 %`, `1.3 pts`, `—`) after a
//!   label with a letter in it.
//! - Its **header** is the run of lines just above the first row made only of period phrases ("Three
//!   Months Ended", "Year Ended"), month-and-day dates, years, period codes ("Q3 2023", "YTD 2023", "Q1
//!   FY24": Intel's management's-discussion tables; each names its column as printed), "Change" (with
//!   the periods it compares when its title names them: "Quarter-over-Quarter Change", NVIDIA's
//!   quarterly summary, names its column "quarter-over-quarter change"), unit
//!   notes ("(In millions)", "($ in millions)") and "(unaudited)";
//!   short section lines ("Revenue:") may sit between header and rows.
//! - **Columns** are the header's years in reading order, each period's change columns after its years
//!   (Microsoft prints "Percentage" above "Change" above the years, so "Change" is read first). Periods
//!   are spread evenly over the columns (two periods over four years: two each); month-and-day dates pair
//!   one-to-one with the years, or one per period. When the counts do not fit, the table is left as it
//!   was.
//! - The **unit** ("in millions", "in thousands", "in billions") comes from the header or the caption line
//!   above it and is added to plain figures, not to percentages, and not in rows or sections about shares,
//!   per-share amounts, rates, ratios or percentages (shareholders' equity is an amount). What a note excepts from its unit ("in millions, except
//!   number of shares, which are reflected in thousands") does not count; a note that gives its rows two
//!   units ("net income in millions and shares in thousands") gives none.
//! - A header's dates may be split over lines ("October" / "29," / "2023"): a line that holds only a month
//!   or a day is header material, and the header is read from its lines joined. The header's first line
//!   may start with another column's title of up to four capitalised words ("Interest Rate April 30,
//!   2023", NVIDIA's debt note): its dates count, its title does not.
//! - A table goes on past short section lines, longer ones that end in a colon, section lines that refer
//!   to a note ("Commitments and contingencies (Note 4)"), blank lines, and a row
//!   label the text layer wrapped over two lines (joined again when the row below goes on in lower case
//!   or closes a parenthesis the label left open).
//! - A row with more cells than columns gives its leading cells back to the label ("Balance as of June 30,
//!   2023 $ 10 $ 12"); a row with as many cells as the table has period columns left its change columns
//!   blank (Apple prints a change only on the total row) and fills the period columns; a row with fewer
//!   cells still, and every row of a table whose header cannot be read, is left as it was. The header
//!   lines are dropped only when every row of the table was rewritten.
//! - A negative figure that the text layer wrote with a space before its closing parenthesis
//!   ("(554 )", Microsoft's) is one cell.

use quarry_core::table_row::{
    is_change_column, is_section_line, is_section_line_within, parse_row, section_name, write_row, TableCell,
};
use regex::Regex;
use std::sync::OnceLock;

/// Fewest numeric cells that make a line a table row.
const MIN_CELLS: usize = 2;
/// How many lines above a header are searched for its unit ("… were as follows (in millions):").
const CAPTION_LINES: usize = 2;

struct Patterns {
    /// One header item: a period phrase, a period code ("Q3 2023", "YTD 2023", "FY24"), a month-and-day
    /// date, a year, or a change column.
    header_item: Regex,
    unit: Regex,
    /// "except …" up to the end of its parenthesis: the amounts a unit note leaves out of its unit.
    exception: Regex,
    /// A whole line of header material (checked after the items are removed).
    leftover: Regex,
    /// A line that is only the first word of a column title over two lines ("Percentage" above "Change").
    column_title: Regex,
    number: Regex,
    /// A line that only says the figures are unaudited.
    unaudited: Regex,
    /// A line that holds only part of a date a text layer split over lines: a month ("October") or a
    /// day ("29,"); the header is read from its lines joined.
    date_part: Regex,
    /// A reference to a note at a line's end ([`without_note_reference`]).
    note_reference: Regex,
    /// Labels and sections whose figures are not amounts in the table's unit ("ratio" as a word: it is
    /// inside "operations" and "consideration").
    not_amount: Regex,
}

/// A change column's title that names the periods it compares ("Quarter-over-Quarter", "Year-over-Year";
/// NVIDIA's text layer also gives "Quarter-overQuarter"), as a regex group.
const OVER: &str = r"(?:quarter|year|month)-over-?(?:quarter|year|month)";

/// A month's name or its abbreviation, as a regex group: a header's dates ("Oct. 29") and a month alone
/// on a line of a date split over lines are read by it.
const MONTH: &str = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)";

fn patterns() -> &'static Patterns {
    static PATTERNS: OnceLock<Patterns> = OnceLock::new();
    PATTERNS.get_or_init(|| Patterns {
        header_item: Regex::new(&format!(
            r"(?ix)
            (?P<period>\b(?:three|six|nine|twelve|thirteen|twenty-six|thirty-nine|fifty-two|fifty-three)\s+(?:months|weeks)\s+ended\b
                      |\b(?:fiscal\s+)?(?:years?|quarters?)\s+ended\b)
            |(?P<code>\b(?:(?:q[1-4]|ytd|h[12])\s+(?:19|20)\d{{2}}|(?:q[1-4]\s+)?fy\s?(?:(?:19|20)\d{{2}}|\d{{2}}))\b)
            |(?P<monthday>\b{MONTH}\.?\s+\d{{1,2}}\b,?)
            |(?P<year>\b(?:19|20)\d{{2}}\b)
            |(?P<change>(?:(?P<over>{OVER})\s*)?(?:%\s*)?\bchange)",
        ))
        .expect("the pattern is valid"),
        unit: Regex::new(r"(?i)\bin\s+(millions|thousands|billions)\b").expect("the pattern is valid"),
        exception: Regex::new(r"(?i)\bexcept\b[^()]*").expect("the pattern is valid"),
        column_title: Regex::new(&format!(r"(?i)^\s*(?:percentage|percent|%|\$|{OVER})\s*$")).expect("the pattern is valid"),
        leftover: Regex::new(&format!(r"(?i)^[\s,;:()%$*\-–—]*(?:\((?:\$\s*)?(?:in\s+)?[a-z ,;\-]*\)|unaudited|as of|and|{OVER}|[\s,;:()%$*\-–—])*$")).expect("the pattern is valid"),
        number: Regex::new(r"^\(?\$?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?\)?%?$").expect("the pattern is valid"),
        date_part: Regex::new(&format!(r"(?i)^\s*(?:{MONTH}\.?|\d{{1,2}},)\s*$")).expect("the pattern is valid"),
        note_reference: Regex::new(r"(?i)\s*(?:[-–—]\s*)?\(?\s*(?:see\s+)?notes?\s+\d+(?:\s*(?:,|and)\s*\d+)*\s*\)?\s*$").expect("the pattern is valid"),
        unaudited: Regex::new(r"(?i)^\s*\(?\s*unaudited\s*\)?\s*$").expect("the pattern is valid"),
        not_amount: Regex::new(r"(?i)share|percent|%|\brate\b|\bratios?\b|growth|margin|mix|days|employees|headcount|basis points").expect("the pattern is valid"),
    })
}

/// One header item, in reading order.
#[derive(Debug, Clone, PartialEq)]
enum HeaderItem {
    Period(String),
    /// A column named by a period code as printed ("Q3 2023", "YTD 2022", "Q1 FY24"): a column of its
    /// own, like a year, that needs no period phrase or date.
    Code(String),
    MonthDay(String),
    Year(String),
    /// A change column; with the periods its title compares when it names them
    /// ("quarter-over-quarter", [`OVER`]).
    Change(Option<String>),
}

/// Rewrites the rows of every table in `page` whose columns can be read (see the module docs); all other
/// text is returned unchanged.
pub(crate) fn label_table_rows(page: &str) -> String {
    let joined = join_wrapped_labels(page);
    let lines: Vec<&str> = joined.iter().map(String::as_str).collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        if row_cells(lines[i]).is_none() {
            out.push(lines[i].to_string());
            i += 1;
            continue;
        }
        // A table's first row: find its header above (already pushed to `out`).
        let (header_start, items) = header_above(&lines, i);
        // The table's lines: rows and short section lines, up to the first line that is neither; blank
        // lines between them are passed over (some text layers put one between every two lines).
        let mut end = i;
        while end < lines.len()
            && (is_table_line(lines[end])
                || blank_before_table_line(&lines[end..])
                || (subtotal_cells(lines[end]).is_some()
                    && row_cells(lines[end - 1]).is_some()
                    && lines[header_start..end].iter().any(|l| is_section_line(l))))
        {
            end += 1;
        }
        // A trailing section line belongs to what follows.
        while end > i + 1 && row_cells(lines[end - 1]).is_none() {
            end -= 1;
        }
        let columns = items.as_deref().and_then(columns);
        let Some(columns) = columns else {
            out.extend(lines[i..end].iter().map(|l| l.to_string()));
            i = end;
            continue;
        };
        let caption_start = header_start.saturating_sub(CAPTION_LINES);
        // Joined, so that a caption's "(in\nmillions)" split over two lines is read too.
        let unit = caption_unit(&lines[caption_start..i].join(" "));
        let mut section = String::new();
        // A row of figures alone below a section's rows is that section's subtotal (Intel's "Client
        // Computing" segment above its "Desktop", "Notebook" and "Other" rows): named by the last section
        // line above it, once.
        let mut subtotal_of = lines[header_start..i]
            .iter()
            .rev()
            .find(|l| is_section_line(l) && !is_header_line(l))
            .map(|l| section_name(l))
            .unwrap_or_default();
        let mut rewritten = Vec::with_capacity(end - i);
        let mut all = true;
        for line in lines[i..end].iter().filter(|l| !l.trim().is_empty()) {
            if let Some(cells) = subtotal_cells(line) {
                let named = std::mem::take(&mut subtotal_of);
                match (!named.is_empty())
                    .then(|| label_row(&named, &cells, &columns, unit.as_deref(), &section))
                    .flatten()
                {
                    Some(row) => rewritten.push(row),
                    None => {
                        all = false;
                        rewritten.push(line.to_string());
                    }
                }
                continue;
            }
            match row_cells(line) {
                Some((label, cells)) => match label_row(&label, &cells, &columns, unit.as_deref(), &section) {
                    Some(row) => rewritten.push(row),
                    None => {
                        all = false;
                        rewritten.push(line.to_string());
                    }
                },
                None => {
                    section = line.trim().to_string();
                    subtotal_of = section_name(line);
                    rewritten.push(line.to_string());
                }
            }
        }
        if all {
            // Drop the header lines, keep the section lines between header and rows.
            let keep_from = out.len().saturating_sub(i - header_start);
            let between: Vec<String> =
                out.drain(keep_from..).filter(|l| !is_header_line(l) && !l.trim().is_empty()).collect();
            out.extend(between);
        }
        out.extend(rewritten);
        i = end;
    }
    let mut text = out.join("\n");
    if page.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// The section line that the table rows at the start of `chunk` sit under, when the chunk starts inside a
/// table at or after its second or a later section line and the line that names the section is not among
/// the chunk's rows: Microsoft prints each segment under "Revenue" and again under "Operating Income", so
/// a chunk that starts below "Operating Income" shows `More Personal Computing: 5,174 million (…)` with
/// nothing saying which of the two it is (issue 36; docs/evaluation/decisions.md, 2026-12-01 (a)).
///
/// `before` is the document's text before the chunk (the chunk must start at a line start: `before`
/// ends in a line break, and a blank line — a page break — ends the search), `chunk` the chunk's text.
/// Either the chunk's first line is a row written by [`label_table_rows`] and, walking up, rows are
/// passed over until a section line ("Operating Income", "Cost of sales:"); or the chunk's first line
/// is itself a section line with a written row below it. The section counts only when the line above it
/// is a row too (a later section of the table, not the table's first section or a caption). Returns the
/// section without its trailing colon, or `None`.
pub(crate) fn section_above(before: &str, chunk: &str) -> Option<String> {
    let is_row = |line: &str| parse_row(line).is_some() || row_cells(line).is_some();
    let mut lines = chunk.lines();
    let first = lines.next()?;
    let head = before.strip_suffix('\n')?;
    let mut above = head.rsplit('\n');
    let section_line = if parse_row(first).is_some() {
        loop {
            let line = above.next()?;
            if !is_row(line) {
                break line;
            }
        }
    } else {
        parse_row(lines.next()?)?;
        first
    };
    if !is_section_line(section_line) {
        return None;
    }
    above.next().filter(|l| is_row(l)).map(|_| section_name(section_line))
}

/// Whether `line` continues a table: a row, a short section line, or a longer one that ends in a colon
/// ("Change in unrealized gains/losses on derivative instruments, net of tax:"), or a section line that
/// refers to a note ([`without_note_reference`]: "Commitments and contingencies (Note 4)").
fn is_table_line(line: &str) -> bool {
    row_cells(line).is_some()
        || is_section_line(line)
        || is_long_section_line(line)
        || without_note_reference(line).is_some_and(is_section_line)
}

/// `line` without a reference to a note of the financial statements at its end — "(Note 4)", "- see
/// Note 13", "(see Notes 7 and 8)" — when it has one. Amazon's and NVIDIA's balance sheets print
/// "Commitments and contingencies" with one above their equity rows; the note's number made it no
/// section line, and the equity rows below lost their columns.
fn without_note_reference(line: &str) -> Option<&str> {
    let at = patterns().note_reference.find(line)?.start();
    Some(&line[..at])
}

/// Longest section line, in characters, that ends in a colon ([`is_long_section_line`]).
const MAX_COLON_SECTION_CHARS: usize = 2 * quarry_core::table_row::MAX_SECTION_CHARS;

/// A section line longer than [`is_section_line`] allows, that says it heads what follows: it ends in a
/// colon, within [`MAX_COLON_SECTION_CHARS`] characters ([`is_section_line_within`]). Apple's
/// statement of comprehensive income heads its rows with such lines; taking the first for the table's
/// end left the rows below it without their columns.
fn is_long_section_line(line: &str) -> bool {
    line.trim().ends_with(':') && is_section_line_within(line, MAX_COLON_SECTION_CHARS)
}

/// `page`'s lines, with a row label that the text layer wrapped over two lines made one line again: a
/// line that is not a row, a header line or the end of a sentence, between a table line above
/// ([`is_table_line`]; blank lines between passed over) and a row whose label goes on below it — in
/// lower case ("Total change in unrealized gains/losses on marketable debt" / "securities (3,055) 163
/// (9,819) (792)"), or closing a parenthesis the line left open ("Property, plant and equipment, net of
/// accumulated depreciation of $94,550 ($93,386 as of" / "December 31, 2022) 85,734 80,860", Intel's;
/// Amazon's common-stock row). Left apart, the first half ended the table and the second was read as a
/// row named "securities".
fn join_wrapped_labels(page: &str) -> Vec<String> {
    let lines: Vec<&str> = page.lines().collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let opens_parenthesis = |line: &str| line.matches('(').count() > line.matches(')').count();
    // The row below goes on with `line`'s label: in lower case, or closing the parenthesis `line` opened
    // (in its label or, when the text layer took a year before it for a figure, "2022)", right after).
    let goes_on = |line: &str, next: &str, label: &str| {
        label.chars().next().is_some_and(char::is_lowercase)
            || (opens_parenthesis(line) && next.find(')').is_some_and(|close| !next[..close].contains('(')))
    };
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let above = lines[..i].iter().rev().find(|l| !l.trim().is_empty());
        let wraps = i + 1 < lines.len()
            && !line.trim().is_empty()
            && !line.trim_end().ends_with('.')
            && row_cells(line).is_none()
            && !is_header_line(line)
            && above.is_some_and(|l| is_table_line(l))
            && row_cells(lines[i + 1]).is_some_and(|(label, _)| goes_on(line, lines[i + 1], &label));
        if wraps {
            out.push(format!("{} {}", line.trim_end(), lines[i + 1].trim_start()));
            i += 2;
        } else {
            out.push(line.to_string());
            i += 1;
        }
    }
    out
}

/// Whether `rest` starts with blank lines followed by a table line ([`is_table_line`]): a blank line
/// inside a table, not the end of it.
fn blank_before_table_line(rest: &[&str]) -> bool {
    let blanks = rest.iter().take_while(|l| l.trim().is_empty()).count();
    blanks > 0 && rest.get(blanks).is_some_and(|l| is_table_line(l))
}

/// The numeric cells of a line made of them alone (at least [`MIN_CELLS`]), or `None`.
fn subtotal_cells(line: &str) -> Option<Vec<String>> {
    if is_header_line(line) {
        return None;
    }
    let (label, cells) = cells_of(line)?;
    label.is_empty().then_some(cells)
}

/// The label and numeric cells of a row line, or `None` when it is not one.
fn row_cells(line: &str) -> Option<(String, Vec<String>)> {
    // "Three Months Ended September 30, 2023 2022" ends in two numbers but is a header.
    if is_header_line(line) {
        return None;
    }
    let (label, cells) = cells_of(line)?;
    if !label.chars().any(char::is_alphabetic) || label.ends_with('.') {
        return None;
    }
    Some((label, cells))
}

/// The words before a line's trailing numeric cells, and those cells (at least [`MIN_CELLS`]).
fn cells_of(line: &str) -> Option<(String, Vec<String>)> {
    // Microsoft's text layer puts a space inside a negative figure's parenthesis ("(554 )"): the lone
    // ")" is joined to the figure again.
    let mut tokens: Vec<std::borrow::Cow<'_, str>> = Vec::new();
    for token in line.split_whitespace() {
        match tokens.last_mut() {
            Some(last) if matches!(token, ")" | ")%") && last.starts_with('(') && !last.contains(')') => {
                last.to_mut().push_str(token);
            }
            _ => tokens.push(std::borrow::Cow::Borrowed(token)),
        }
    }
    let tokens: Vec<&str> = tokens.iter().map(|t| t.as_ref()).collect();
    let mut cells: Vec<String> = Vec::new();
    let mut k = tokens.len();
    // Walk back over cells: [$] value [% | pts]
    while k > 0 {
        let mut j = k;
        let mut cell = String::new();
        // A percentage's sign, or "pts" after a change in percentage points (NVIDIA's gross margin:
        // "64.6 % 63.3 % 1.3 pts (0.9) pts").
        if j > 0 && tokens[j - 1] == "%" {
            cell.push('%');
            j -= 1;
        } else if j > 0 && tokens[j - 1] == "pts" {
            cell.push_str(" pts");
            j -= 1;
        }
        if j == 0 {
            break;
        }
        let value = tokens[j - 1];
        let is_dash = matches!(value, "—" | "–" | "-" | "$—" | "$-" | "$–");
        if !(is_dash || patterns().number.is_match(value)) {
            break;
        }
        cell.insert_str(0, value);
        j -= 1;
        if j > 0 && tokens[j - 1] == "$" {
            cell.insert(0, '$');
            j -= 1;
        }
        cells.push(cell);
        k = j;
    }
    if cells.len() < MIN_CELLS {
        return None;
    }
    let label = tokens[..k].join(" ");
    cells.reverse();
    Some((label, cells))
}

/// The unit ("million", "thousand", "billion") the last unit note of `caption` gives the table's amounts,
/// leaving out the exceptions a note lists: Apple prints "(In millions, except number of shares, which are
/// reflected in thousands, and per-share amounts)", and its amounts are in millions, not thousands (share
/// rows get no unit anyway, see [`label_row`]). None when that note gives different rows different units
/// ("(net income in millions and shares in thousands)"): the figures stay as printed rather than some
/// labelled wrong.
fn caption_unit(caption: &str) -> Option<String> {
    let caption = patterns().exception.replace_all(caption, "");
    let notes: Vec<_> = patterns().unit.captures_iter(&caption).collect();
    let unit_of = |c: &regex::Captures| c[1].to_lowercase().trim_end_matches('s').to_string();
    let last = notes.last()?;
    if let [.., before, _] = notes.as_slice() {
        let between = &caption[before.get(0)?.end()..last.get(0)?.start()];
        if !between.contains([')', '.', ':']) && unit_of(before) != unit_of(last) {
            return None;
        }
    }
    Some(unit_of(last))
}

/// True when `line` holds header items and nothing else but unit notes and punctuation.
fn is_header_line(line: &str) -> bool {
    let p = patterns();
    // "(unaudited)" between a balance sheet's dates and its first section (Amazon's); a month or a day
    // alone, of a date split over lines (NVIDIA's "October" / "29," / "2023").
    if p.column_title.is_match(line) || p.unaudited.is_match(line) || p.date_part.is_match(line) {
        return true;
    }
    if !p.header_item.is_match(line) && !p.unit.is_match(line) {
        return false;
    }
    let rest = p.header_item.replace_all(line, " ");
    p.leftover.is_match(&rest)
}

/// What of `line` is header material: the whole line when it is a header line ([`is_header_line`]),
/// the dates after a column title ([`titled_header`]), or `None`.
fn header_part(line: &str) -> Option<&str> {
    if is_header_line(line) {
        Some(line)
    } else {
        titled_header(line)
    }
}

/// Most words of a column title that a header line may start with ([`titled_header`]).
const MAX_TITLE_WORDS: usize = 4;

/// The header items of a line that starts with another column's title and ends with the dates or
/// years of the columns right of it — NVIDIA's debt note prints "Effective" over "Interest Rate April
/// 30, 2023", then "January 29," and "2023" below — when the title is one to [`MAX_TITLE_WORDS`]
/// words of letters, each capitalised (no sentence: "… were as follows as of April 30, 2023" is none,
/// nor Apple's caption "Operations for the three months ended December 31, 2022 and …") and the
/// rest is a header line ([`is_header_line`]). `None` otherwise.
fn titled_header(line: &str) -> Option<&str> {
    let found = patterns().header_item.find(line)?;
    let (title, items) = line.split_at(found.start());
    let words: Vec<&str> = title.split_whitespace().collect();
    let title_like = (1..=MAX_TITLE_WORDS).contains(&words.len())
        && words.iter().all(|w| w.chars().all(char::is_alphabetic) && w.chars().next().is_some_and(char::is_uppercase));
    (title_like && is_header_line(items)).then_some(items)
}

/// The first line of the header above row `first_row`, and the header's items in reading order (`None`
/// when there is no header with a year or a period code).
fn header_above(lines: &[&str], first_row: usize) -> (usize, Option<Vec<HeaderItem>>) {
    let mut start = first_row;
    let mut seen_header = false;
    while start > 0 {
        let line = lines[start - 1];
        if line.trim().is_empty() {
            // A blank line between header lines, or between the header and the rows.
            start -= 1;
            continue;
        }
        if is_header_line(line) {
            seen_header = true;
        } else if seen_header && titled_header(line).is_some() {
            // A column's title with the dates of the columns right of it ("Interest Rate April 30,
            // 2023"): the header's first line.
            start -= 1;
            break;
        } else if !is_section_line(line) || seen_header {
            break;
        }
        start -= 1;
    }
    // Section lines above the header are not part of it.
    while start < first_row && header_part(lines[start]).is_none() {
        start += 1;
    }
    let text = lines[start..first_row].iter().filter_map(|l| header_part(l)).collect::<Vec<_>>().join(" ");
    let items: Vec<HeaderItem> = patterns()
        .header_item
        .captures_iter(&text)
        .map(|c| {
            if let Some(m) = c.name("period") {
                HeaderItem::Period(m.as_str().split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase())
            } else if let Some(m) = c.name("code") {
                HeaderItem::Code(m.as_str().split_whitespace().collect::<Vec<_>>().join(" ").to_uppercase())
            } else if let Some(m) = c.name("monthday") {
                HeaderItem::MonthDay(m.as_str().trim_end_matches(',').to_string())
            } else if let Some(m) = c.name("year") {
                HeaderItem::Year(m.as_str().to_string())
            } else {
                HeaderItem::Change(c.name("over").map(|m| over_title(m.as_str())))
            }
        })
        .collect();
    if items.iter().any(|i| matches!(i, HeaderItem::Year(_) | HeaderItem::Code(_))) {
        (start, Some(items))
    } else {
        (start, None)
    }
}

/// Column names from header items (see the module docs), or `None` when the counts do not fit.
fn columns(items: &[HeaderItem]) -> Option<Vec<String>> {
    let periods: Vec<&String> =
        items.iter().filter_map(|i| if let HeaderItem::Period(p) = i { Some(p) } else { None }).collect();
    let days: Vec<&String> =
        items.iter().filter_map(|i| if let HeaderItem::MonthDay(d) = i { Some(d) } else { None }).collect();
    // Period codes stand where years do; a header that mixes them with dates is not read.
    let years: Vec<&HeaderItem> =
        items.iter().filter(|i| matches!(i, HeaderItem::Year(_) | HeaderItem::Code(_))).collect();
    if !days.is_empty() && items.iter().any(|i| matches!(i, HeaderItem::Code(_))) {
        return None;
    }
    let changes: Vec<&HeaderItem> = items.iter().filter(|i| matches!(i, HeaderItem::Change(_))).collect();
    let count = years.len() + changes.len();
    if count < MIN_CELLS {
        return None;
    }
    // Each period's years, then its change columns: a change column sits right of the years it
    // compares, though a two-line "Percentage / Change" title is read before the years under it.
    let groups = periods.len().max(1);
    if !years.len().is_multiple_of(groups) || !changes.len().is_multiple_of(groups) {
        return None;
    }
    let (years_each, changes_each) = (years.len() / groups, changes.len() / groups);
    let slots: Vec<&HeaderItem> = (0..groups)
        .flat_map(|g| {
            years[g * years_each..(g + 1) * years_each]
                .iter()
                .chain(&changes[g * changes_each..(g + 1) * changes_each])
                .copied()
        })
        .collect();
    let years = years.len();
    let per_period = if periods.is_empty() { count } else { count / periods.len() };
    let day_for = |year_index: usize, column: usize| -> Option<Option<&String>> {
        if days.is_empty() {
            Some(None)
        } else if days.len() == years {
            Some(Some(days[year_index]))
        } else if !periods.is_empty() && days.len() == periods.len() {
            Some(Some(days[column / per_period]))
        } else if days.len() == 1 {
            Some(Some(days[0]))
        } else {
            None
        }
    };
    let mut out = Vec::with_capacity(count);
    let mut year_index = 0;
    for (column, slot) in slots.iter().enumerate() {
        let period = periods.get(column / per_period).map(|p| p.as_str());
        let name = match slot {
            HeaderItem::Year(year) => {
                let day = day_for(year_index, column)?;
                year_index += 1;
                let date = match day {
                    Some(day) => format!("{day}, {year}"),
                    None => year.clone(),
                };
                match period {
                    Some(period) => format!("{period} {date}"),
                    None => date,
                }
            }
            HeaderItem::Code(code) => match period {
                Some(period) => format!("{period} {code}"),
                None => code.clone(),
            },
            HeaderItem::Change(Some(compared)) => format!("{compared} change"),
            _ => match period {
                Some(period) => format!("change, {period}"),
                None => "change".to_string(),
            },
        };
        out.push(name);
    }
    Some(out)
}

/// The title of a change column that names the periods it compares, written one way:
/// "Quarter-overQuarter" (as NVIDIA's text layer gives it) → "quarter-over-quarter".
fn over_title(title: &str) -> String {
    let title = title.to_lowercase();
    match title.split_once("-over") {
        Some((from, to)) => format!("{from}-over-{}", to.trim_start_matches('-')),
        None => title,
    }
}

/// Whether a row's label or section says its figures are not amounts in the table's unit (shares,
/// per-share amounts, rates …: `Patterns::not_amount`); "shareholders' equity" and "stockholders'
/// equity" are amounts, though they hold the word "share".
fn names_no_amount(text: &str) -> bool {
    let text = text.to_lowercase().replace("shareholder", "owner").replace("stockholder", "owner");
    patterns().not_amount.is_match(&text)
}

/// One row rewritten as `label: cell (column); …` ([`quarry_core::table_row`]), or `None` when its cells do not fit the columns.
fn label_row(label: &str, cells: &[String], columns: &[String], unit: Option<&str>, section: &str) -> Option<String> {
    // A row that leaves its change columns blank (Apple prints a change only on a table's total row)
    // has as many cells as the table has period columns: they are those columns'.
    let period_columns: Vec<String> = columns.iter().filter(|c| !is_change_column(c)).cloned().collect();
    let columns =
        if cells.len() < columns.len() && cells.len() == period_columns.len() { &period_columns[..] } else { columns };
    if cells.len() < columns.len() {
        return None;
    }
    let extra = cells.len() - columns.len();
    let label = if extra > 0 {
        let given_back: Vec<&str> = cells[..extra].iter().map(String::as_str).collect();
        format!("{label} {}", given_back.join(" "))
    } else {
        label.to_string()
    };
    let amounts = unit.filter(|_| !names_no_amount(&label) && !names_no_amount(section));
    let cells: Vec<TableCell> = cells[extra..]
        .iter()
        .zip(columns)
        .map(|(cell, column)| {
            let is_figure = cell.chars().any(|c| c.is_ascii_digit());
            let value = match amounts {
                Some(unit) if is_figure && !cell.contains('%') && !is_change_column(column) => {
                    format!("{cell} {unit}")
                }
                _ => cell.clone(),
            };
            TableCell { value, column: column.clone() }
        })
        .collect();
    Some(write_row(&label, &cells))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_below_a_later_section_line_of_its_table_gets_that_section() {
        let page = label_table_rows(
            "SEGMENT RESULTS OF OPERATIONS\n\
             Three Months Ended September 30, 2023 2022\n\
             (In millions)\n\
             Revenue\n\
             Productivity and Business Processes $ 18,592 $ 16,465\n\
             More Personal Computing 13,666 13,332\n\
             Total $ 56,517 $ 50,122\n\
             Operating Income\n\
             Productivity and Business Processes $ 10,136 $ 8,323\n\
             More Personal Computing 4,565 3,459\n\
             Total $ 26,895 $ 21,518\n\
             Our results of operations follow.",
        );
        let at = |row: &str| page.find(row).unwrap_or_else(|| panic!("{row:?} not in {page}"));
        let section = |start: usize| section_above(&page[..start], &page[start..]);
        // Under the second section, whether the section line is just above or rows are between.
        assert_eq!(section(at("Productivity and Business Processes: $10,136")).as_deref(), Some("Operating Income"));
        assert_eq!(section(at("More Personal Computing: 4,565")).as_deref(), Some("Operating Income"));
        // Starting at the later section line itself.
        assert_eq!(section(at("Operating Income")).as_deref(), Some("Operating Income"));
        // Under the first section (its line follows the caption, not a row): nothing to tell apart.
        assert_eq!(section(at("More Personal Computing: 13,666")), None);
        assert_eq!(section(at("Revenue\n")), None);
        // Not at a row or section line, or not at a line start.
        assert_eq!(section(at("Our results")), None);
        assert_eq!(section(at("Personal Computing: 4,565")), None);
        // A blank line (a page break) ends the search.
        let broken = page.replace("Operating Income\n", "Operating Income\n\n");
        let start = broken.find("Productivity and Business Processes: $10,136").unwrap();
        assert_eq!(section_above(&broken[..start], &broken[start..]), None);
    }

    /// Apple's Q3 2022 statements (`2022 Q3 AAPL.pdf`, pp. 2–3): a section line too long for a short one
    /// but ending in a colon, a row label wrapped over two lines, and a line without figures in the
    /// middle of the balance sheet no longer end the table: every row below keeps its columns.
    #[test]
    fn long_section_lines_and_wrapped_labels_stay_inside_their_table() {
        let page = "CONDENSED CONSOLIDATED STATEMENTS OF COMPREHENSIVE INCOME (Unaudited)\n\
                    (In millions)\n\
                    Three Months Ended Nine Months Ended\n\
                    June 25, June 26, June 25, June 26,\n\
                    2022 2021 2022 2021\n\
                    Net income $ 19,442 $ 21,744 $ 79,082 $ 74,129\n\
                    Change in unrealized gains/losses on derivative instruments, net of tax:\n\
                    Change in fair value of derivative instruments 852 (24) 1,548 4\n\
                    Adjustment for net (gains)/losses realized and included in net income 95 (54) 140 (234)\n\
                    Total change in unrealized gains/losses on marketable debt\n\
                    securities (3,055) 163 (9,819) (792)\n\
                    Total comprehensive income $ 16,639 $ 22,088 $ 69,622 $ 74,593\n\
                    See accompanying Notes to Condensed Consolidated Financial Statements.";
        let out = label_table_rows(page);
        assert!(out.contains("Change in fair value of derivative instruments: 852 million (three months ended June 25, 2022); (24) million (three months ended June 26, 2021)"), "{out}");
        assert!(out.contains("Total change in unrealized gains/losses on marketable debt securities: (3,055) million (three months ended June 25, 2022);"), "{out}");
        assert!(
            out.contains("Total comprehensive income: $16,639 million (three months ended June 25, 2022);"),
            "{out}"
        );
        assert!(out.ends_with("\nSee accompanying Notes to Condensed Consolidated Financial Statements."), "{out}");

        let balance = "CONDENSED CONSOLIDATED BALANCE SHEETS (Unaudited)\n\
                       (In millions)\n\
                       June 25, September 25,\n\
                       2022 2021\n\
                       Total liabilities 278,202 287,912\n\
                       Commitments and contingencies\n\
                       Shareholders’ equity:\n\
                       Common stock, $0.00001 par value: 50,400,000 shares authorized; 16,095,378\n\
                       and 16,426,786 shares issued and outstanding, respectively 62,115 57,365\n\
                       Retained earnings 5,289 5,562\n\
                       Apple Inc. | Q3 2022 Form 10-Q | 3";
        let out = label_table_rows(balance);
        assert!(
            out.contains("Retained earnings: 5,289 million (June 25, 2022); 5,562 million (September 25, 2021)"),
            "{out}"
        );
        assert!(out.contains("Common stock, $0.00001 par value: 50,400,000 shares authorized; 16,095,378 and 16,426,786 shares issued and outstanding, respectively: 62,115 (June 25, 2022)"), "{out}");
        assert!(out.contains("Commitments and contingencies\nShareholders’ equity:\n"), "{out}");
        // A sentence's last line above a row in lower case is no label.
        let prose = "Revenue 10 20\nThe rest is described below.\nand more 1 2";
        assert_eq!(join_wrapped_labels(prose), ["Revenue 10 20", "The rest is described below.", "and more 1 2"]);
    }

    #[test]
    fn nvidia_segment_table_gets_columns_and_unit() {
        let page = "Revenue by Reportable Segments\n\
                    Three Months Ended Nine Months Ended\n\
                    October 29, October 30, October 29, October 30,\n\
                    2023 2022 2023 2022\n\
                    (In millions)\n\
                    Revenue:\n\
                    Data Center $ 14,514 $ 3,833 $ 29,121 $ 11,389\n\
                    Gaming 2,856 1,574 7,582 7,236\n\
                    Total revenue $ 18,120 $ 5,931 $ 38,819 $ 20,923\n\
                    24";
        let out = label_table_rows(page);
        assert!(out.contains("Data Center: $14,514 million (three months ended October 29, 2023); $3,833 million (three months ended October 30, 2022); $29,121 million (nine months ended October 29, 2023); $11,389 million (nine months ended October 30, 2022)"), "{out}");
        assert!(out.contains("Gaming: 2,856 million (three months ended October 29, 2023);"), "{out}");
        assert!(
            out.starts_with("Revenue by Reportable Segments\nRevenue:\nData Center:"),
            "header dropped, section kept: {out}"
        );
        assert!(out.ends_with("\n24"), "{out}");
    }

    #[test]
    fn microsoft_and_amazon_headers_put_years_last() {
        let page = "Segment revenue and operating income were as follows during the periods presented:\n\
                    (In millions)\n\
                    Three Months Ended\n\
                    March 31,\n\
                    Nine Months Ended\n\
                    March 31,\n\
                    2023 2022 2023 2022\n\
                    Revenue\n\
                    More Personal Computing 13,260 14,584 40,829 45,480\n\
                    Operating Income\n\
                    More Personal Computing 4,237 4,788 11,774 16,000";
        let out = label_table_rows(page);
        assert!(out.contains("More Personal Computing: 13,260 million (three months ended March 31, 2023); 14,584 million (three months ended March 31, 2022); 40,829 million (nine months ended March 31, 2023)"), "{out}");
        assert!(out.contains("Operating Income\nMore Personal Computing: 4,237 million"), "{out}");

        let amazon = "Net sales information is as follows (in\nmillions):\nThree Months Ended\nJune 30,\nSix Months Ended\nJune 30,\n\
                      2022 2023 2022 2023\nNet Sales:\nAWS 19,739 22,140 38,180 43,494\n\
                      Year-over-year Percentage Growth (Decline):\nInternational (12) 10 (9) 5";
        let out = label_table_rows(amazon);
        assert!(out.contains("AWS: 19,739 million (three months ended June 30, 2022); 22,140 million (three months ended June 30, 2023)"), "older year first, as printed; the caption's unit split over two lines: {out}");
        assert!(
            out.contains(
                "International: (12) (three months ended June 30, 2022); 10 (three months ended June 30, 2023)"
            ),
            "{out}"
        );
    }

    #[test]
    fn microsoft_percentage_change_title_read_before_the_years_goes_after_them() {
        // As the text layer of Microsoft's 10-Q for the quarter ended September 30, 2023 gives it (p. 34).
        let page = "SEGMENT RESULTS OF OPERATIONS\n\
                    (In millions, except percentages)\n\
                    Three Months Ended\n\
                    September 30,\n\
                    Percentage\n\
                    Change\n\
                    2023 2022\n\
                    Revenue\n\
                    Productivity and Business Processes $ 18,592 $ 16,465 13%\n\
                    More Personal Computing 13,666 13,332 3%\n\
                    Operating Income\n\
                    More Personal Computing 5,174 4,217 23%";
        let out = label_table_rows(page);
        assert!(out.contains("More Personal Computing: 13,666 million (three months ended September 30, 2023); 13,332 million (three months ended September 30, 2022); 3% (change, three months ended)"), "{out}");
        assert!(
            out.contains(
                "Productivity and Business Processes: $18,592 million (three months ended September 30, 2023)"
            ),
            "{out}"
        );
        assert!(
            out.starts_with("SEGMENT RESULTS OF OPERATIONS\nRevenue\nProductivity"),
            "the whole header dropped: {out}"
        );
    }

    #[test]
    fn a_header_on_one_line_with_the_years_last() {
        // Microsoft's segment note (Item 1), quarter ended September 30, 2023.
        let page = "PART I\nItem 1\n\
                    Segment revenue and operating income were as follows during the periods presented:\n\
                    (In millions)\n\
                    Three Months Ended September 30, 2023 2022\n\
                    Revenue\n\
                    Productivity and Business Processes $ 18,592 $ 16,465\n\
                    More Personal Computing 13,666 13,332\n\
                    Total $ 56,517 $ 50,122\n\
                    No sales to an individual customer accounted for more than 10% of revenue for the three months";
        let out = label_table_rows(page);
        assert!(out.contains("More Personal Computing: 13,666 million (three months ended September 30, 2023); 13,332 million (three months ended September 30, 2022)"), "{out}");
    }

    #[test]
    fn apple_full_dates_and_change_columns() {
        let page = "The following table shows net sales by category (dollars in millions):\n\
                    Three Months Ended Six Months Ended\n\
                    April 1,\n2023\nMarch 26,\n2022 Change\nApril 1,\n2023\nMarch 26,\n2022 Change\n\
                    Net sales by category:\n\
                    iPhone $ 51,334 $ 50,570 2 % $ 117,109 $ 122,198 (4)%\n\
                    iPhone net sales were relatively flat during the second quarter of 2023.";
        let out = label_table_rows(page);
        assert!(out.contains("iPhone: $51,334 million (three months ended April 1, 2023); $50,570 million (three months ended March 26, 2022); 2% (change, three months ended); $117,109 million (six months ended April 1, 2023); $122,198 million (six months ended March 26, 2022); (4)% (change, six months ended)"), "{out}");
        assert!(out.ends_with("iPhone net sales were relatively flat during the second quarter of 2023."), "{out}");
    }

    #[test]
    fn a_unit_note_s_exceptions_do_not_set_the_unit() {
        // Apple's statements: amounts in millions, share counts in thousands. "Thousand" was read as the
        // unit, so the model was shown net sales of "$81,797 thousand".
        let page = "CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS (Unaudited)\n\
                    (In millions, except number of shares, which are reflected in thousands, and per-share amounts)\n\
                    Three Months Ended\nJuly 1,\n2023\nJune 25,\n2022\n\
                    Total net sales 81,797 82,959\n\
                    Shares used in computing earnings per share: 15,697,614 16,162,945";
        let out = label_table_rows(page);
        assert!(
            out.contains("Total net sales: 81,797 million (three months ended July 1, 2023); 82,959 million"),
            "{out}"
        );
        assert!(!out.contains("thousand"), "{out}");
        assert!(out.contains("earnings per share: 15,697,614 (three months ended July 1, 2023)"), "{out}");
        assert_eq!(caption_unit("(dollars in thousands)").as_deref(), Some("thousand"));
        assert_eq!(caption_unit("(In millions, except per share amounts)").as_deref(), Some("million"));
        assert_eq!(caption_unit("(net income in millions and shares in thousands):"), None, "two units, one note");
        assert_eq!(
            caption_unit("Revenue (in millions): ... Headcount (in thousands)").as_deref(),
            Some("thousand"),
            "the nearest of two notes"
        );
    }

    #[test]
    fn rows_that_do_not_fit_and_tables_without_header_stay_as_they_were() {
        // No header: left alone.
        let page = "Gaming 2,856 1,574 7,582 7,236\nAutomotive 261 251 810 609";
        assert_eq!(label_table_rows(page), page);
        // A row with fewer cells than columns keeps its text, and so does the header.
        let page = "Three Months Ended\nApril 30, May 1,\n2023 2022\nRevenue $ 7,192 $ 8,288\nGaming 2,240 —";
        let out = label_table_rows(page);
        assert!(
            out.contains(
                "Revenue: $7,192 (three months ended April 30, 2023); $8,288 (three months ended May 1, 2022)"
            ),
            "{out}"
        );
        assert!(
            out.contains("Gaming: 2,240 (three months ended April 30, 2023); — (three months ended May 1, 2022)"),
            "{out}"
        );
        let page = "2023 2022 2021\nRevenue $ 1 $ 2 $ 3\nGaming 4 5";
        let out = label_table_rows(page);
        assert!(out.starts_with("2023 2022 2021\nRevenue: $1 (2023); $2 (2022); $3 (2021)\nGaming 4 5"), "{out}");
        // A row with extra leading cells gives them back to the label.
        let page = "June 30, 2023 June 30, 2022\n(In millions)\nBalance as of March 31, 2023 $ 10 $ 12";
        let out = label_table_rows(page);
        assert!(
            out.contains("Balance as of March 31, 2023: $10 million (June 30, 2023); $12 million (June 30, 2022)"),
            "{out}"
        );
        // Per-share rows and prose are not amounts in millions.
        let page = "(In millions, except per share amounts)\nThree Months Ended\nApril 30, May 1,\n2023 2022\nNet income per share: Diluted $ 0.82 $ 0.09";
        let out = label_table_rows(page);
        assert!(
            out.contains("Diluted: $0.82 (three months ended April 30, 2023)")
                || out.contains("Net income per share: Diluted: $0.82 (three"),
            "{out}"
        );
        assert!(!out.contains("0.82 million"), "{out}");
        let prose = "Revenue for the first quarter of fiscal year 2024 was $7.19 billion, down 13% from a year ago.";
        assert_eq!(label_table_rows(prose), prose);
    }
    /// Intel's management's-discussion tables name their columns by period codes, and a 1.5B model read
    /// their rows bare: "Total restructuring and other charges $ 816 $ 664 $ 1,080 $ (460)".
    #[test]
    fn period_code_headers_name_their_columns() {
        let page = "Restructuring and Other Charges\n\
                    (In Millions) Q3 2023 Q3 2022 YTD 2023 YTD 2022\n\
                    Employee severance and benefit arrangements $ 59 $ 607 $ 191 $ 650\n\
                    Total restructuring and other charges $ 816 $ 664 $ 1,080 $ (460)\n\
                    Effective tax rate 642.0 % 0.5 % (1.3)% 7.7 %\n\
                    The 2022 Restructuring Program was approved in Q3 2022.";
        let out = label_table_rows(page);
        assert!(
            out.contains("Total restructuring and other charges: $816 million (Q3 2023); $664 million (Q3 2022); $1,080 million (YTD 2023); $(460) million (YTD 2022)"),
            "{out}"
        );
        assert!(out.contains("Effective tax rate: 642.0% (Q3 2023); 0.5% (Q3 2022);"), "{out}");
        assert!(out.starts_with("Restructuring and Other Charges\nEmployee severance"), "header dropped: {out}");
        assert!(out.ends_with("\nThe 2022 Restructuring Program was approved in Q3 2022."), "{out}");
        let fiscal = label_table_rows("Q1 FY24 Q1 FY23\nRevenue $ 7,192 $ 8,288");
        assert_eq!(fiscal, "Revenue: $7,192 (Q1 FY24); $8,288 (Q1 FY23)");
        // A chart's labels with a prose line below are no table, and a code mixed with dates is not read.
        let chart = "Q1 2022 Q1 2023\nNotebook revenue was $3.4 billion, down $2.6 billion from Q1 2022.";
        assert_eq!(label_table_rows(chart), chart);
        let mixed = "Q3 2023 June 30, 2022\nRevenue $ 1 $ 2";
        assert_eq!(label_table_rows(mixed), mixed);
    }

    /// Microsoft's negative figures with a space before their closing parenthesis, and Amazon's
    /// "(unaudited)" line between a balance sheet's dates and its first section.
    #[test]
    fn split_parentheses_and_an_unaudited_line_do_not_end_a_table() {
        let page = "Three Months Ended Nine Months Ended\n\
                    March 31, 2023 2022 2023 2022\n\
                    (In millions)\n\
                    Other long-term assets (554 ) (724 ) (1,285 ) (2,230 )\n\
                    Other, net 0 169 (1 ) 172";
        let out = label_table_rows(page);
        assert!(out.contains("Other long-term assets: (554) million (three months ended March 31, 2023); (724) million (three months ended March 31, 2022); (1,285) million (nine months ended March 31, 2023); (2,230) million (nine months ended March 31, 2022)"), "{out}");
        assert!(out.contains("Other, net: 0 million (three months ended March 31, 2023); 169 million (three months ended March 31, 2022); (1) million (nine months"), "{out}");
        let sheet = "CONSOLIDATED BALANCE SHEETS\n\
                     (in millions, except per share data)\n\
                     December 31, 2022 March 31, 2023\n\
                     (unaudited)\n\
                     ASSETS\n\
                     Current assets:\n\
                     Cash and cash equivalents $ 53,888 $ 49,343\n\
                     Goodwill 20,288 22,749";
        let out = label_table_rows(sheet);
        assert!(
            out.contains(
                "Cash and cash equivalents: $53,888 million (December 31, 2022); $49,343 million (March 31, 2023)"
            ),
            "{out}"
        );
        assert!(out.contains("Goodwill: 20,288 million (December 31, 2022); 22,749 million (March 31, 2023)"), "{out}");
        assert!(!out.contains("unaudited"), "a header line, dropped with the header: {out}");
    }

    /// NVIDIA's quarterly summary (`2023 Q1 NVDA.pdf`, p. 25, as its text layer gives it): three quarters'
    /// columns, then change columns titled "Quarter-over-Quarter" / "Year-over-Year" over "Change" (in
    /// the 2022 Q3 filing glued: "Quarter-overQuarter ChangeYear-over-Year"), and the gross margin's
    /// changes in percentage points. Before, the titles ended the header and no row was read; and
    /// "Income from operations" got no unit ("operations" holds "ratio").
    #[test]
    fn a_summary_table_with_quarter_over_quarter_and_year_over_year_columns_is_read() {
        let page = "First Quarter of Fiscal Year 2024 Summary\n\
                    Three Months Ended\n\
                    April 30, 2023\n\
                    January 29,\n\
                    2023 May 1, 2022\n\
                    Quarter-over-Quarter\n\
                    Change\n\
                    Year-over-Year\n\
                    Change\n\
                    ($ in millions, except per share data)\n\
                    Revenue $ 7,192 $ 6,051 $ 8,288 19 % (13)%\n\
                    Gross margin 64.6 % 63.3 % 65.5 % 1.3 pts (0.9) pts\n\
                    Income from operations $ 2,140 $ 1,257 $ 1,868 70 % 15 %\n\
                    Net income per diluted share $ 0.82 $ 0.57 $ 0.64 44 % 28 %\n\
                    We specialize in markets where our computing platforms can provide tremendous acceleration.";
        let out = label_table_rows(page);
        assert_eq!(
            out,
            "First Quarter of Fiscal Year 2024 Summary\n\
             Revenue: $7,192 million (three months ended April 30, 2023); $6,051 million (three months ended January 29, 2023); \
             $8,288 million (three months ended May 1, 2022); 19% (quarter-over-quarter change); (13)% (year-over-year change)\n\
             Gross margin: 64.6% (three months ended April 30, 2023); 63.3% (three months ended January 29, 2023); \
             65.5% (three months ended May 1, 2022); 1.3 pts (quarter-over-quarter change); (0.9) pts (year-over-year change)\n\
             Income from operations: $2,140 million (three months ended April 30, 2023); $1,257 million (three months ended January 29, 2023); \
             $1,868 million (three months ended May 1, 2022); 70% (quarter-over-quarter change); 15% (year-over-year change)\n\
             Net income per diluted share: $0.82 (three months ended April 30, 2023); $0.57 (three months ended January 29, 2023); \
             $0.64 (three months ended May 1, 2022); 44% (quarter-over-quarter change); 28% (year-over-year change)\n\
             We specialize in markets where our computing platforms can provide tremendous acceleration."
        );
        let glued = "Three Months Ended\n\
                     October 30,\n\
                     2022 July 31, 2022\n\
                     October 31,\n\
                     2021\n\
                     Quarter-overQuarter ChangeYear-over-Year\n\
                     Change\n\
                     ($ in millions, except per share data)\n\
                     Revenue $ 5,931 $ 6,704 $ 7,103 (12)% (17)%\n\
                     Operating expenses $ 2,576 $ 2,416 $ 1,960 7 % 31 %";
        let out = label_table_rows(glued);
        assert!(out.starts_with("Revenue: $5,931 million (three months ended October 30, 2022); $6,704 million (three months ended July 31, 2022); \
             $7,103 million (three months ended October 31, 2021); (12)% (quarter-over-quarter change); (17)% (year-over-year change)\n"), "{out}");
        assert!(out.contains("Operating expenses: $2,576 million (three months ended October 30, 2022);"), "{out}");
    }

    /// NVIDIA's segment table splits each date over three lines, and its balance sheet's equity rows sit
    /// below "Commitments and contingencies - see Note 13".
    #[test]
    fn dates_split_over_lines_and_note_references_keep_the_table() {
        let page = "Revenue by Reportable Segments\n\
                    Three Months Ended Nine Months Ended\n\
                    October\n29,\n2023\nOctober\n30,\n2022\n$\nChange\n%\nChange\n\
                    October\n29,\n2023\nOctober\n30,\n2022\n$\nChange\n%\nChange\n\
                    ($ in millions)\n\
                    Compute & Networking $ 14,645 $ 3,816 $ 10,829 284 % $ 29,507 $ 11,395 $ 18,112 159 %\n\
                    Graphics 3,475 2,115 1,360 64 % 9,312 9,528 (216) (2)%";
        let out = label_table_rows(page);
        assert!(out.contains("Compute & Networking: $14,645 million (three months ended October 29, 2023); $3,816 million (three months ended October 30, 2022); $10,829 (change, three months ended); 284% (change, three months ended); $29,507 million (nine months ended October 29, 2023)"), "{out}");
        assert!(out.contains("Graphics: 3,475 million (three months ended October 29, 2023);"), "{out}");
        let sheet = "October 29, 2023 January 29, 2023\n\
                     (In millions)\n\
                     Total liabilities 20,883 19,081\n\
                     Commitments and contingencies - see Note 13\n\
                     Shareholders’ equity:\n\
                     Additional paid-in capital 12,991 11,971\n\
                     Commitments and contingencies (Note 4)\n\
                     Retained earnings 20,360 10,171";
        let out = label_table_rows(sheet);
        assert!(out.contains("Shareholders’ equity\nAdditional paid-in capital: 12,991 million (October 29, 2023); 11,971 million (January 29, 2023)")
            || out.contains("Additional paid-in capital: 12,991 million (October 29, 2023); 11,971 million (January 29, 2023)"), "{out}");
        assert!(
            out.contains("Retained earnings: 20,360 million (October 29, 2023); 10,171 million (January 29, 2023)"),
            "{out}"
        );
        assert_eq!(
            without_note_reference("Commitments and contingencies (Note 4)"),
            Some("Commitments and contingencies")
        );
        assert_eq!(
            without_note_reference("Commitments and contingencies - see Note 13"),
            Some("Commitments and contingencies")
        );
        assert_eq!(without_note_reference("Revenue grew 4%"), None);
    }

    /// Intel's balance sheet wraps a row label inside a parenthesis, after a blank line ("… of $94,550
    /// ($93,386 as of" / "December 31, 2022) 85,734 80,860"); left apart it ended the table.
    #[test]
    fn a_label_wrapped_inside_a_parenthesis_is_joined_again() {
        let page = "(In Millions, Except Par Value; Unaudited) Apr 1, 2023 Dec 31, 2022\n\
                    Total current assets 48,314 50,407\n\
                    \n\
                    Property, plant and equipment, net of accumulated depreciation of $94,550 ($93,386 as of\n\
                    December 31, 2022) 85,734 80,860\n\
                    \n\
                    Goodwill 27,591 27,591";
        let out = label_table_rows(page);
        assert!(out.contains("Property, plant and equipment, net of accumulated depreciation of $94,550 ($93,386 as of December 31, 2022): 85,734 million (Apr 1, 2023); 80,860 million (Dec 31, 2022)"), "{out}");
        assert!(out.contains("Goodwill: 27,591 million (Apr 1, 2023); 27,591 million (Dec 31, 2022)"), "{out}");
        // A line that opens a parenthesis above a row that does not close one stays apart.
        let page = "2023 2022\nRevenue 1 2\nSee the table (below\nCost of sales 3 4";
        assert!(label_table_rows(page).contains("See the table (below\n"), "{}", label_table_rows(page));
    }

    /// NVIDIA's debt note: the last column titles share a line with the first date ("Interest Rate
    /// April 30, 2023"), the second date is split over two lines, and each row's term and rate stand
    /// between its label and the two amounts. (A label with a percentage names no amount in the
    /// table's unit, so "(In millions)" is not written after the figures: `names_no_amount`.)
    #[test]
    fn a_column_title_before_the_first_date_is_part_of_the_header() {
        let page = "The carrying value of our outstanding notes, the calendar year of maturity, and the associated interest rates were as follows:\n\
                    Carrying Value at\n\
                    Expected\n\
                    Remaining Term\n\
                    (years)\n\
                    Effective\n\
                    Interest Rate April 30, 2023\n\
                    January 29,\n\
                    2023\n\
                    (In millions)\n\
                    0.309% Notes Due 2023 0.1 0.41% $ 1,250 $ 1,250\n\
                    3.70% Notes Due 2060 36.9 3.73% 500 500";
        let out = label_table_rows(page);
        assert!(
            out.contains("0.309% Notes Due 2023 0.1 0.41%: $1,250 (April 30, 2023); $1,250 (January 29, 2023)\n"),
            "{out}"
        );
        assert!(out.contains("3.70% Notes Due 2060 36.9 3.73%: 500 (April 30, 2023); 500 (January 29, 2023)"), "{out}");
        // A sentence ending in a date is no column title.
        let page = "Our notes were as follows as of April 30, 2023\nJanuary 29,\n2023\nNotes Due 2026 1,000 1,000";
        assert!(label_table_rows(page).contains("Notes Due 2026 1,000 1,000"), "{}", label_table_rows(page));
        // Nor is a caption whose last words are a period and its dates (Apple's share-based compensation).
        let page = "Operations for the three months ended December 31, 2022 and December 25, 2021 (in millions):\n\
                    Three Months Ended\nDecember 31,\n2022\nDecember 25,\n2021\n\
                    Share-based compensation expense $ 2,905 $ 2,265";
        let out = label_table_rows(page);
        assert!(out.contains("Share-based compensation expense: $2,905 (three months ended December 31, 2022); $2,265 (three months ended December 25, 2021)"), "{out}");
    }

    /// Apple prints a change column's figure only on a table's total row: the rows above it have one
    /// cell for each period column.
    #[test]
    fn rows_that_leave_their_change_columns_blank_fill_the_period_columns() {
        let page = "Other income/(expense), net (“OI&E”) was as follows (dollars in millions):\n\
                    Three Months Ended Nine Months Ended\n\
                    June 25,\n2022\nJune 26,\n2021 Change\nJune 25,\n2022\nJune 26,\n2021 Change\n\
                    Interest and dividend income $ 722 $ 719 $ 2,072 $ 2,184\n\
                    Interest expense (719) (665) (2,104) (1,973)\n\
                    Total other income/(expense), net $ (10) $ 243 (104)% $ (97) $ 796 (112)%";
        let out = label_table_rows(page);
        assert!(
            out.contains("Interest and dividend income: $722 million (three months ended June 25, 2022); $719 million (three months ended June 26, 2021); $2,072 million (nine months ended June 25, 2022); $2,184 million (nine months ended June 26, 2021)\n"),
            "{out}"
        );
        assert!(out.contains("Total other income/(expense), net: $(10) million (three months ended June 25, 2022); $243 million (three months ended June 26, 2021); (104)% (change, three months ended);"), "{out}");
        assert!(!out.contains("June 25,\n2022"), "every row written: the header is dropped: {out}");
    }

    /// Intel's statements: a unit note with a semicolon ("(In Millions, Except Per Share Amounts;
    /// Unaudited)") on the line of the dates, abbreviated months; and, in one filing's text layer, a blank
    /// line between every two lines of the table.
    #[test]
    fn intel_income_statement_gets_columns_and_unit() {
        let page = "Consolidated Condensed Statements of Income\n\
                    Three Months Ended Nine Months Ended\n\
                    (In Millions, Except Per Share Amounts; Unaudited) Oct 1, 2022 Sep 25, 2021 Oct 1, 2022 Sep 25, 2021\n\
                    Net revenue $ 15,338 $ 19,192 $ 49,012 $ 58,496\n\
                    Operating expenses 6,710 5,519 17,900 18,339\n\
                    Earnings (loss) per share—Basic $ 4.00 $ 1.67 $ 1.67 $ 3.69\n\
                    See accompanying notes.";
        let out = label_table_rows(page);
        assert!(
            out.contains("Net revenue: $15,338 million (three months ended Oct 1, 2022); $19,192 million (three months ended Sep 25, 2021); $49,012 million (nine months ended Oct 1, 2022); $58,496 million (nine months ended Sep 25, 2021)"),
            "{out}"
        );
        assert!(out.contains("Operating expenses: 6,710 million (three months ended Oct 1, 2022);"), "{out}");
        assert!(out.contains("Earnings (loss) per share—Basic: $4.00 (three months ended Oct 1, 2022);"), "{out}");
        assert!(out.starts_with("Consolidated Condensed Statements of Income\nNet revenue:"), "header dropped: {out}");
        assert!(out.ends_with("\nSee accompanying notes."), "{out}");

        let segments = "Three Months Ended Nine Months Ended\n\
                        (In Millions; Unaudited) Sep 30, 2023 Oct 1, 2022 Sep 30, 2023 Oct 1, 2022\n\
                        Net revenue:\n\
                        Client Computing\n\
                        Desktop $ 2,753 $ 3,222 $ 7,002 $ 8,152\n\
                        Other 611 498 1,606 1,858\n\
                        7,867 8,128 20,414 25,128\n\
                        Data Center and AI 3,814 4,255 11,536 15,024";
        let out = label_table_rows(segments);
        assert!(out.contains("\nClient Computing: 7,867 million (three months ended Sep 30, 2023); 8,128 million (three months ended Oct 1, 2022);"), "a subtotal row under its section: {out}");
        assert!(out.contains("\nData Center and AI: 3,814 million (three months ended Sep 30, 2023);"), "{out}");
        // Figures alone with no section above, or not below a row, stay as they were.
        let out = label_table_rows("2023 2022\nRevenue $ 1 $ 2\n3 4");
        assert!(out.ends_with("\n3 4"), "{out}");

        let spaced = "Consolidated Condensed Statements of Income\n\n  Three Months Ended\n\n\
                      (In Millions, Except Per Share Amounts; Unaudited) Apr 1, 2023 Apr 2, 2022\n\n\
                      Net revenue $  11,715  $  18,353\n\n\
                      Cost of sales   7,707    9,109\n\n\
                      Gross margin   4,008    9,244\n\n\
                      Table of Contents";
        let out = label_table_rows(spaced);
        assert!(out.contains("Net revenue: $11,715 million (three months ended Apr 1, 2023); $18,353 million (three months ended Apr 2, 2022)\nCost of sales: 7,707 million (three months ended Apr 1, 2023); 9,109 million (three months ended Apr 2, 2022)\nGross margin: 4,008 (three months"), "{out}");
        assert!(
            out.starts_with("Consolidated Condensed Statements of Income\n\nNet revenue:"),
            "header dropped: {out}"
        );
        assert!(out.ends_with("9,244 (three months ended Apr 2, 2022)\n\nTable of Contents"), "{out}");
    }
}
