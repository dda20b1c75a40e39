//! Key figures of a text — amounts of money, scaled numbers, percentages, dates and large plain
//! numbers — read mechanically, normalised so that differently written forms of one figure compare equal
//! ("$7.19 billion", "$7,192 million" and "7,192" from a table in millions; "84 percent" and "84%";
//! "April 30, 2023" and "30 April 2023").
//!
//! Two users: the claim check ([`crate::claims`]), which asks whether an answer's figures occur in the
//! passages it cites, and `quarry eval answers`, which scores an answer by the share of a reference
//! answer's figures it states. The rules are ours, written for English financial and technical prose; a
//! figure in words ("seven billion") is not read.

use regex::Regex;
use std::sync::OnceLock;

/// What a figure measures. Amounts (money and scaled numbers) and plain numbers compare with each other;
/// percentages only with percentages, dates only with dates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FigureKind {
    /// A number with a currency sign or a scale word (`$7.19 billion`, `7,192 million`, `$ 13,507`).
    Amount,
    /// A percentage or percentage points (`84%`, `12.5 percent`).
    Percent,
    /// A calendar date: year, month (1–12) and day (1–31; 0 when only month and year are written).
    Date {
        /// The year.
        year: u16,
        /// The month, 1–12.
        month: u8,
        /// The day, 1–31; 0 when only month and year are written.
        day: u8,
    },
    /// A number without unit that is not a year, a list marker or part of a name (`82,959`, `1.25`,
    /// `4,500`): at least 1,000, or written with a thousands separator or decimals.
    Number,
}

/// One figure read from a text.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// What kind of figure.
    pub kind: FigureKind,
    /// The value in plain units (`$7.19 billion` → 7.19e9; `84%` → 84; dates: 0).
    pub value: f64,
    /// Whether a scale word multiplied the value (`million`, `billion`, `bn`, `k`): an unscaled figure may
    /// be a table's figure "in millions", so it also matches a scaled one of the same digits.
    pub scaled: bool,
    /// Half of the last written digit's place, in plain units (`7.19 billion` → 0.005e9): how far a
    /// rounded form of the same figure may lie from it.
    pub half_unit: f64,
    /// The text it was read from, as written.
    pub text: String,
}

const MONTHS: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];

fn month_number(word: &str) -> Option<u8> {
    let w = word.to_ascii_lowercase();
    let w = w.trim_end_matches('.');
    if w.len() < 3 {
        return None;
    }
    MONTHS.iter().position(|m| w.starts_with(m)).map(|i| i as u8 + 1)
}

fn patterns() -> &'static [Regex; 4] {
    static PATTERNS: OnceLock<[Regex; 4]> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        let month = r"(Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?";
        [
            // Dates: "April 30, 2023", "30 April 2023", "April 2023"; the comma's spaces as a small model
            // or a text layer leaves them ("June 25,2022", "June 26 , 2021").
            Regex::new(&format!(r"\b{month}\s+(\d{{1,2}})(?:\s*,\s*|\s+)(\d{{4}})\b|\b(\d{{1,2}})\s+{month}\s+(\d{{4}})\b|\b{month}\s+(\d{{4}})\b")).expect("the pattern is valid"),
            // Percentages.
            Regex::new(r"(?i)(-?\d+(?:\.\d+)?)\s*(%|percent\b|per cent\b|percentage points?\b|pp\b)").expect("the pattern is valid"),
            // Amounts: a currency sign and/or a scale word (English, or Chinese 万 10^4, 亿 10^8, 万亿 10^12);
            // an accounting table's negative in parentheses, "$(842) million", "(823) million", counts as
            // its magnitude, as a written-out "a decrease of $842 million" does.
            Regex::new(r"(?i)(?:(?:US)?\$|USD|€|£|¥|EUR|RMB|CNY)\s?\(?(\d[\d,]*(?:\.\d+)?)\)?(?:\s*(thousand|million|billion|trillion|bn|mn|m|b|k)\b)?|\b(\d[\d,]*(?:\.\d+)?)\)?\s*(thousand|million|billion|trillion|bn)\b|(\d[\d,]*(?:\.\d+)?)\s*(万亿|亿|万)").expect("the pattern is valid"),
            // Plain numbers.
            Regex::new(r"\d[\d,]*(?:\.\d+)?").expect("the pattern is valid"),
        ]
    })
}

fn scale_of(word: Option<&str>) -> f64 {
    match word.map(|w| w.to_ascii_lowercase()).as_deref() {
        Some("thousand") | Some("k") => 1e3,
        Some("million") | Some("mn") | Some("m") => 1e6,
        Some("billion") | Some("bn") | Some("b") => 1e9,
        Some("trillion") | Some("万亿") => 1e12,
        Some("亿") => 1e8,
        Some("万") => 1e4,
        _ => 1.0,
    }
}

/// The value of a written number (`82,959`, `7.19`) and half its last digit's place (0.5, 0.005).
fn number_and_half_unit(digits: &str) -> Option<(f64, f64)> {
    let clean: String = digits.chars().filter(|c| *c != ',').collect();
    let clean = clean.trim_end_matches('.');
    let value: f64 = clean.parse().ok()?;
    let decimals = clean.split_once('.').map(|(_, d)| d.len()).unwrap_or(0);
    Some((value, 0.5 * 10f64.powi(-(decimals as i32))))
}

/// Every figure in `text`, in order of appearance. Citation markers (`[2]`) are not figures.
pub fn figures(text: &str) -> Vec<Figure> {
    figures_at(text).into_iter().map(|(_, f)| f).collect()
}

/// [`figures`], each with the byte offset in `text` where its match starts (an amount's match may
/// start with the space before its currency sign; [`Figure::text`] is trimmed).
pub fn figures_at(text: &str) -> Vec<(usize, Figure)> {
    let [date, percent, amount, plain] = patterns();
    let mut taken: Vec<std::ops::Range<usize>> = Vec::new();
    let mut out: Vec<(usize, Figure)> = Vec::new();
    let overlaps = |taken: &[std::ops::Range<usize>], r: &std::ops::Range<usize>| {
        taken.iter().any(|t| t.start < r.end && r.start < t.end)
    };

    for c in date.captures_iter(text) {
        let whole = c.get(0).expect("group 0 is the whole match");
        let (month, day, year) = if let Some(m) = c.get(1) {
            (
                m.as_str(),
                c.get(2).map(|d| d.as_str()),
                c.get(3).expect("the alternative that matched has this group").as_str(),
            )
        } else if let Some(d) = c.get(4) {
            (
                c.get(5).expect("the alternative that matched has this group").as_str(),
                Some(d.as_str()),
                c.get(6).expect("the alternative that matched has this group").as_str(),
            )
        } else {
            (
                c.get(7).expect("the alternative that matched has this group").as_str(),
                None,
                c.get(8).expect("the alternative that matched has this group").as_str(),
            )
        };
        let (Some(month), Ok(year)) = (month_number(month), year.parse::<u16>()) else { continue };
        let day = day.and_then(|d| d.parse::<u8>().ok()).unwrap_or(0);
        if day > 31 {
            continue;
        }
        taken.push(whole.range());
        out.push((
            whole.start(),
            Figure {
                kind: FigureKind::Date { year, month, day },
                value: 0.0,
                scaled: false,
                half_unit: 0.0,
                text: whole.as_str().to_string(),
            },
        ));
    }
    for c in percent.captures_iter(text) {
        let whole = c.get(0).expect("group 0 is the whole match");
        if overlaps(&taken, &whole.range()) {
            continue;
        }
        let Some((value, half_unit)) =
            number_and_half_unit(c.get(1).expect("the alternative that matched has this group").as_str())
        else {
            continue;
        };
        taken.push(whole.range());
        out.push((
            whole.start(),
            Figure {
                kind: FigureKind::Percent,
                value: value.abs(),
                scaled: false,
                half_unit,
                text: whole.as_str().to_string(),
            },
        ));
    }
    for c in amount.captures_iter(text) {
        let whole = c.get(0).expect("group 0 is the whole match");
        if overlaps(&taken, &whole.range()) {
            continue;
        }
        let (digits, scale) = match (c.get(1), c.get(3)) {
            (Some(d), _) => (d.as_str(), c.get(2).map(|s| s.as_str())),
            (None, Some(d)) => (d.as_str(), c.get(4).map(|s| s.as_str())),
            (None, None) => {
                (c.get(5).expect("the alternative that matched has this group").as_str(), c.get(6).map(|s| s.as_str()))
            }
        };
        let Some((value, half_unit)) = number_and_half_unit(digits) else { continue };
        let factor = scale_of(scale);
        taken.push(whole.range());
        out.push((
            whole.start(),
            Figure {
                kind: FigureKind::Amount,
                value: value * factor,
                scaled: factor > 1.0,
                half_unit: half_unit * factor,
                text: whole.as_str().trim().to_string(),
            },
        ));
    }
    for m in plain.find_iter(text) {
        if overlaps(&taken, &m.range()) {
            continue;
        }
        let digits = m.as_str().trim_end_matches([',', '.']);
        let before = text[..m.start()].chars().next_back();
        let after = text[m.start() + digits.len()..].chars().next();
        // Part of a name or code (Q3, 10-Q, FY2023, Item 1A) or a citation marker ([2]). Chinese text puts a
        // counter or unit right after a number with no space ("2802家", "2023年"): no code.
        let glued = |c: Option<char>| {
            c.is_some_and(|c| (c.is_alphabetic() && !quarry_core::is_cjk_char(c)) || c == '-' || c == '_' || c == '/')
        };
        if glued(before) || glued(after) || (before == Some('[') && after == Some(']')) {
            continue;
        }
        let Some((value, half_unit)) = number_and_half_unit(digits) else { continue };
        let has_separator = digits.contains(',');
        let has_decimals = digits.contains('.');
        let is_year = !has_separator && !has_decimals && (1900.0..=2100.0).contains(&value);
        // The year of a period code, whatever its value ("Q3 2022", "YTD 1894" — a model's loop of
        // quarters runs past the plausible years).
        let after_period_code = !has_separator && !has_decimals && follows_period_code(&text[..m.start()]);
        if is_year || after_period_code || !(value >= 1000.0 || has_separator || has_decimals) {
            continue;
        }
        out.push((
            m.start(),
            Figure { kind: FigureKind::Number, value, scaled: false, half_unit, text: digits.to_string() },
        ));
    }
    out.sort_by_key(|(at, _)| *at);
    out
}

/// The calendar years `text` names, in order, each once: runs of exactly four ASCII digits from 1900 to
/// 2100 that stand alone or in a date, a range or a period code ("in 2019", "October 1, 2022",
/// "2021–2022", "Q3 2022", "2023年"), not those inside a longer number or a name ("$2,019", "0.2019",
/// "FY2023", "ISO9001", "2019%"). [`figures`] leaves bare years out (a year is rarely the figure a
/// question asks for); the claim check asks that the years a claim names occur in the passages it cites
/// too, since a model that has no figure to give may write a plausible year instead.
pub fn years(text: &str) -> Vec<u16> {
    let bytes = text.as_bytes();
    let mut out: Vec<u16> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        if i - start != 4 {
            continue;
        }
        let before = text[..start].chars().next_back();
        let after = text[i..].chars().next();
        let after_next = text[i..].chars().nth(1);
        // Inside a number ("$2,019", "0.2019", "2019.5", "2,019,000") or a name or code ("FY2023", "2019x").
        let ascii_letter = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        let in_number_before = matches!(before, Some(',' | '.' | '$'));
        let in_number_after = matches!(after, Some(',' | '.')) && after_next.is_some_and(|c| c.is_ascii_digit());
        if ascii_letter(before) || ascii_letter(after) || in_number_before || in_number_after || after == Some('%') {
            continue;
        }
        let Ok(year) = text[start..i].parse::<u16>() else { continue };
        if (1900..=2100).contains(&year) && !out.contains(&year) {
            out.push(year);
        }
    }
    out
}

/// Whether `before` (the text before a number) ends in a period code and a space — "Q3 ", "YTD ", "FY ",
/// "H1 ", any case — so that the number is that period's year.
fn follows_period_code(before: &str) -> bool {
    let Some(head) = before.strip_suffix(' ') else { return false };
    let code = head.rsplit(|c: char| !c.is_alphanumeric()).next().unwrap_or("").to_ascii_uppercase();
    matches!(code.as_str(), "Q1" | "Q2" | "Q3" | "Q4" | "YTD" | "FY" | "H1" | "H2")
}

/// The distinct figures of `text` (a second mention of the same figure is dropped).
pub fn key_figures(text: &str) -> Vec<Figure> {
    let mut out: Vec<Figure> = Vec::new();
    for f in figures(text) {
        if !out.iter().any(|o| o.same_as(&f)) {
            out.push(f);
        }
    }
    out
}

impl Figure {
    /// Whether `other` states this figure: the same date; the same percentage up to rounding; or the same
    /// amount up to rounding (within half a unit of the less precise of the two, or 0.5 %), where an
    /// unscaled number also matches a scaled one of the same digits in thousands, millions or billions
    /// (a table "in millions" writes $7,192 million as 7,192).
    pub fn same_as(&self, other: &Figure) -> bool {
        match (self.kind, other.kind) {
            (FigureKind::Date { year, month, day }, FigureKind::Date { year: y, month: m, day: d }) => {
                year == y && month == m && (day == d || day == 0 || d == 0)
            }
            (FigureKind::Percent, FigureKind::Percent) => {
                close(self.value, other.value, self.half_unit.max(other.half_unit), 0.0)
            }
            (FigureKind::Amount | FigureKind::Number, FigureKind::Amount | FigureKind::Number) => {
                let tolerance = self.half_unit.max(other.half_unit);
                if close(self.value, other.value, tolerance, 0.005) {
                    return true;
                }
                // One side unscaled: compare its digits with the other's in thousands / millions / billions.
                let (unscaled, scaled) = match (self.scaled, other.scaled) {
                    (false, true) => (self, other),
                    (true, false) => (other, self),
                    _ => return false,
                };
                [1e3, 1e6, 1e9].iter().any(|f| {
                    close(unscaled.value, scaled.value / f, unscaled.half_unit.max(scaled.half_unit / f), 0.005)
                })
            }
            _ => false,
        }
    }
}

fn close(a: f64, b: f64, absolute: f64, relative: f64) -> bool {
    (a - b).abs() <= absolute.max(relative * a.abs().max(b.abs())) + 1e-9
}

/// Whether one of `figures` states `wanted` ([`Figure::same_as`]).
pub fn states(figures: &[Figure], wanted: &Figure) -> bool {
    figures.iter().any(|f| wanted.same_as(f))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(s: &str) -> Vec<String> {
        figures(s).into_iter().map(|f| f.text).collect()
    }

    #[test]
    fn years_are_read_alone_in_dates_ranges_and_codes_but_not_inside_numbers_or_names() {
        assert_eq!(
            years("Founded in 2019; the quarter ended October 1, 2022 (Q3 2023, fiscal 2021–2022, 2024年)."),
            [2019, 2022, 2023, 2021, 2024]
        );
        assert!(years("$2,019 million, 0.2019, 2019.5 units, 2,019,000, FY2025, ISO9001, 2019% and 12019").is_empty());
        assert_eq!(years("In 2019, revenue was 2019. Then 1850 and 2200."), [2019]);
    }

    #[test]
    fn reads_amounts_percentages_dates_and_skips_years_markers_and_codes() {
        let s = "Revenue for the first quarter of fiscal year 2024 was $7.19 billion [1], up 19% from Q4 and \
                 down 13 percent from a year ago; in the 10-Q for the quarter ended April 30, 2023, Item 2 lists 1,250 \
                 employees and 4.5 million units [2].";
        assert_eq!(texts(s), ["$7.19 billion", "19%", "13 percent", "April 30, 2023", "1,250", "4.5 million"]);
        let f = figures("$7.19 billion");
        assert_eq!(f[0].kind, FigureKind::Amount);
        assert!((f[0].value - 7.19e9).abs() < 1.0 && f[0].scaled);
        assert_eq!(figures("30 April 2023")[0].kind, FigureKind::Date { year: 2023, month: 4, day: 30 });
        assert_eq!(figures("in August 2022")[0].kind, FigureKind::Date { year: 2022, month: 8, day: 0 });
        assert!(figures("1. First item\n2. FY2023 and Q3 and 2024 and [3] and 42").is_empty());
        // A period code's year is no figure, whatever its value (a model's loop wrote "YTD 1894").
        assert!(figures("Inventory levels were lower compared to YTD 1894, Q3 1006 and fy 1850.").is_empty());
        assert_eq!(texts("Q3 revenue was 1850 units"), ["1850"], "a code not right before the number");
    }

    #[test]
    fn a_date_is_read_whatever_the_spaces_around_its_comma() {
        for text in ["June 25,2022", "June 25 , 2022", "June 25, 2022", "June 25 2022"] {
            let f = figures(text);
            assert_eq!(f.len(), 1, "{text}: {f:?}");
            assert_eq!(f[0].kind, FigureKind::Date { year: 2022, month: 6, day: 25 }, "{text}");
        }
        // Not a thousands-separated number "25,2022" that no passage states.
        assert!(states(&figures("three months ended June 25, 2022"), &figures("June 25,2022")[0]));
    }

    #[test]
    fn an_accounting_negative_in_parentheses_is_an_amount_of_its_magnitude() {
        // As Quarry writes NVIDIA's cash-flow row and Amazon's interest expense from their tables.
        for (text, value) in [("$(842) million", 842e6), ("(823) million", 823e6), ("$ (1,576)", 1576.0)] {
            let f = figures(text);
            assert_eq!(f.len(), 1, "{text}: {f:?}");
            assert_eq!(f[0].kind, FigureKind::Amount, "{text}");
            assert!((f[0].value - value).abs() < 1.0, "{text}: {}", f[0].value);
        }
        assert!(states(&figures("Stock-based compensation expense: $(842) million"), &figures("$842 million")[0]));
        assert!(figures("see Note (3) of the statements").is_empty(), "a note number is no amount");
    }

    #[test]
    fn one_figure_written_several_ways_matches_itself_and_not_its_neighbours() {
        let reference = &figures("$7,192 million")[0];
        for same in ["$7.19 billion", "7,192 million", "$7.2 billion", "$ 7,192", "7192"] {
            assert!(states(&figures(same), reference), "{same} states $7,192 million");
        }
        for other in ["$13.51 billion", "$7.5 billion", "7,912 million", "719 million", "7.19%"] {
            assert!(!states(&figures(other), reference), "{other} does not state $7,192 million");
        }
        assert!(figures("84 percent")[0].same_as(&figures("84%")[0]));
        assert!(figures("84.2%")[0].same_as(&figures("84%")[0]), "84% is 84.2% rounded");
        assert!(!figures("85%")[0].same_as(&figures("84%")[0]));
        assert!(figures("April 30, 2023")[0].same_as(&figures("30 Apr 2023")[0]));
        assert!(!figures("April 30, 2023")[0].same_as(&figures("April 30, 2022")[0]));
    }

    #[test]
    fn chinese_amounts_and_counts_are_figures_and_years_are_not() {
        // From the references of the shared NetOperatorQA set, and the same figures as a model writes them.
        let texts = |s: &str| figures(s).into_iter().map(|f| f.text).collect::<Vec<_>>();
        assert_eq!(
            texts("2023年出口额为 5005.7 亿元，进口额为654.8亿元；中国有2802家，用户总数达到 8,588 万户。"),
            ["5005.7 亿", "654.8亿", "2802", "8,588 万"]
        );
        let reference = &figures("实现营业收入 3,549 亿元")[0];
        assert_eq!(reference.value, 3549e8);
        assert!(states(&figures("营业收入为3549亿元[1]"), reference));
        assert!(states(&figures("revenue of RMB 354.9 billion"), reference));
        assert!(!states(&figures("营业收入为3549万元"), reference), "10^4 is not 10^8");
        assert!(states(&figures("出货1.23亿台"), &figures("出货 1.23 亿台")[0]));
    }

    #[test]
    fn key_figures_are_distinct() {
        let k = key_figures("Net sales were $82,959 million, or $82.96 billion; margin 43.3% (43.3 percent).");
        assert_eq!(k.iter().map(|f| f.text.as_str()).collect::<Vec<_>>(), ["$82,959 million", "43.3%"]);
    }
}
