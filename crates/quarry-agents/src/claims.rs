//! The claim check: after an answer is written, each of its sentences that states something is tested
//! against the passages it cites. A claim is *supported* when it cites at least one passage and every
//! figure it states ([`crate::figures`]) occurs in one of the passages it cites; otherwise it is marked
//! unsupported, with the reason. The check reads text only — no model call — so it costs microseconds and
//! cannot itself invent support.
//!
//! What counts as a claim: a sentence (or list item) with a figure, or with at least four words, that is
//! not a statement that the documents do not answer ([`is_decline`]). Models often cite once at the end of
//! a paragraph, so a sentence without a marker takes the markers of the next sentence of the same
//! paragraph. A claim that names a quarter ("the first quarter of fiscal 2024", "Q1 2024") must cite a
//! passage naming that quarter too, in its text or its document's context line — the second quarter's
//! filing does not support a first-quarter figure even when the number occurs in it. The same holds for
//! the other names a claim states ([`names`]: companies, segments, products, people — runs of capitalised
//! words — and Chinese names in quotation marks): each must occur in a passage it cites, so "Intel's
//! revenue was $14.2 billion \[1\]" citing AMD's filing is marked even when the figure is there. So for
//! the calendar years a claim names ([`crate::figures::years`]): "the plant opens in 2027 \[1\]" is marked
//! when no passage it cites (its text, context line or file name) names 2027.

use crate::answer::{pieces, Citation, Piece};
use crate::answer::{CitationRepair, ClaimCheck};
use crate::figures::{figures, states, Figure, FigureKind};
use crate::genre::Genre;
use crate::quarter::quarters;
use crate::text::is_decline;
use regex::Regex;
use std::sync::OnceLock;

/// Words written with a capital that name no entity: months and weekdays (the dates of a period), the
/// pronoun "I", and the words a sentence or a lead-in starts with are left out by position instead
/// ([`names`]).
const NOT_NAMES: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "i",
];

/// The names `text` states, in order, each once: runs of words that start with a capital letter
/// ("NVIDIA", "Data Center", "Apple's" → "Apple", "AWS"), and Chinese text in quotation marks or title
/// marks (“托举哥”, 「…」, 《…》, at most 20 characters). A capitalised word that starts the sentence
/// or follows a colon, semicolon or opening bracket counts only when it is written in capitals or
/// possessive ("Apple's …"), since any word is capitalised there; months, weekdays and "I" never count
/// ([`NOT_NAMES`]), nor words with digits ("Q1", "10-Q", "FY2024": periods and forms are checked as
/// periods and figures). The claim check asks each name's words (letters only, case ignored) to occur in
/// a passage the claim cites — its text or its document's context line, which names the issuer.
pub fn names(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut run: Vec<String> = Vec::new();
    let mut starts_clause = true;
    let push = |run: &mut Vec<String>, out: &mut Vec<String>| {
        if !run.is_empty() {
            let name = run.join(" ");
            if !out.contains(&name) {
                out.push(name);
            }
            run.clear();
        }
    };
    for token in text.split_whitespace() {
        let opens = token.starts_with(['(', '[', '"', '“', '‘']);
        let word = token.trim_matches(|c: char| !c.is_alphanumeric());
        let (word, possessive) = match word.strip_suffix("'s").or_else(|| word.strip_suffix("’s")) {
            Some(stem) => (stem, true),
            None => (word, token.trim_end_matches([',', '.', ';', ':', ')', ']']).ends_with(['\'', '’'])),
        };
        let letters = word.chars().filter(|c| c.is_alphabetic()).count();
        let capitalised = word.chars().next().is_some_and(|c| c.is_uppercase())
            && word.chars().all(|c| c.is_alphabetic() || matches!(c, '&' | '.' | '-' | '\'' | '’'))
            && letters >= 2
            && !word.chars().any(quarry_core::is_cjk_char);
        let all_capitals = capitalised && word.chars().filter(|c| c.is_alphabetic()).all(|c| c.is_uppercase());
        let counts = capitalised
            && !NOT_NAMES.contains(&word.to_lowercase().as_str())
            && (!(starts_clause || opens) || all_capitals || possessive);
        if counts {
            run.push(word.to_string());
        } else {
            push(&mut run, &mut out);
        }
        // A name ends where its clause or phrase does ("Apple, Microsoft", "NVIDIA's Data Center").
        if possessive || token.ends_with([',', ';', ':', '.', ')', ']', '"', '”']) {
            push(&mut run, &mut out);
        }
        // Punctuation alone ("…", "-", "•") leaves a clause's start where it was: "… This AI" starts at "This".
        starts_clause = token.ends_with([':', ';', '.', '!', '?']) || (word.is_empty() && starts_clause);
    }
    push(&mut run, &mut out);
    static QUOTED: OnceLock<Regex> = OnceLock::new();
    let quoted =
        QUOTED.get_or_init(|| Regex::new(r#"[“「《"]([^”」》"…]{2,20})[”」》"]"#).expect("the pattern is valid"));
    for c in quoted.captures_iter(text) {
        let inner = c[1].trim().to_string();
        if inner.chars().any(quarry_core::is_cjk_char) && !out.contains(&inner) {
            out.push(inner);
        }
    }
    out
}

/// Whether `name` ([`names`]) occurs in a passage read as `words` (its lower-case words) and `compact`
/// (its lower-case text without white space): a Chinese name as written, any other name word by word
/// (words of one letter, as in "U.S.", are not checked).
fn names_in(name: &str, words: &std::collections::HashSet<String>, compact: &str) -> bool {
    if name.chars().any(quarry_core::is_cjk_char) {
        let name: String = name.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_lowercase();
        return compact.contains(&name);
    }
    name.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 2)
        .all(|w| words.contains(&w.to_lowercase()))
}

/// A sentence of the answer with the markers inside or right after it.
struct Sentence {
    text: String,
    markers: Vec<usize>,
    /// True when it ends a paragraph or list item (markers are not borrowed across it).
    ends_paragraph: bool,
}

/// `markdown` cut into sentences: at `.`, `!`, `?` followed by a space or line end, at the full-width
/// sentence ends of Chinese and Japanese (`。！？；`, no space after them) and the full-width colon that
/// ends a lead-in (`：`), at line breaks, and before the quote Quarry writes after a per-document line's
/// words ([`crate::text::QUOTE_LEAD_INS`]: the words before it end their paragraph, so they do not
/// borrow the quote's markers); a marker right after the full stop (`… billion. [2]`, `…亿元。[2]`)
/// belongs to the sentence before it.
fn sentences(markdown: &str) -> Vec<Sentence> {
    let mut out: Vec<Sentence> = Vec::new();
    let mut current = Sentence { text: String::new(), markers: Vec::new(), ends_paragraph: false };
    let flush = |current: &mut Sentence, out: &mut Vec<Sentence>, ends_paragraph: bool| {
        let text = current.text.trim().to_string();
        if !text.is_empty() || !current.markers.is_empty() {
            if text.is_empty() {
                // Markers alone (a line of "[1][2]"): they belong to the sentence before.
                if let Some(last) = out.last_mut() {
                    last.markers.append(&mut current.markers);
                }
            } else {
                out.push(Sentence { text, markers: std::mem::take(&mut current.markers), ends_paragraph });
            }
        } else if ends_paragraph {
            if let Some(last) = out.last_mut() {
                last.ends_paragraph = true;
            }
        }
        current.text.clear();
        current.markers.clear();
    };
    for piece in pieces(markdown) {
        match piece {
            Piece::Marker { numbers, .. } => {
                if current.text.trim().is_empty() {
                    if let Some(last) = out.last_mut().filter(|l| !l.ends_paragraph) {
                        last.markers.extend(numbers);
                        continue;
                    }
                }
                current.markers.extend(numbers);
            }
            Piece::Text(text) => {
                let chars: Vec<(usize, char)> = text.char_indices().collect();
                let mut start = 0;
                for (i, &(at, c)) in chars.iter().enumerate() {
                    let next = chars.get(i + 1).map(|&(_, n)| n);
                    if crate::text::QUOTE_LEAD_INS.iter().any(|lead| text[at..].starts_with(lead)) {
                        // Quarry's quote after the model's words on one line: a sentence of its own,
                        // whose citations the model's words do not borrow (they are the quote's).
                        current.text.push_str(&text[start..at]);
                        flush(&mut current, &mut out, true);
                        start = at;
                    }
                    if c == '\n' {
                        current.text.push_str(&text[start..at]);
                        flush(&mut current, &mut out, true);
                        start = at + 1;
                    } else if (matches!(c, '.' | '!' | '?')
                        && next.is_none_or(|n| n.is_whitespace())
                        && !ends_with_abbreviation(&text[..at]))
                        || ends_cjk_sentence_or_lead_in(c)
                    {
                        current.text.push_str(&text[start..at + c.len_utf8()]);
                        flush(&mut current, &mut out, false);
                        start = at + c.len_utf8();
                    }
                }
                current.text.push_str(&text[start..]);
            }
        }
    }
    flush(&mut current, &mut out, true);
    out
}

/// Words in `text`: those between spaces, where a run of CJK characters (written without spaces) counts
/// one word per two characters, about the length of a Chinese word.
fn word_count(text: &str) -> usize {
    text.split_whitespace()
        .map(|w| {
            let cjk = quarry_core::count_cjk_chars(w);
            let other = w.chars().any(|c| c.is_alphanumeric() && !quarry_core::is_cjk_char(c));
            cjk / 2 + usize::from(other || cjk == 1)
        })
        .sum()
}

/// A full-width sentence end of Chinese and Japanese ([`crate::text::CJK_SENTENCE_ENDS`]), or the
/// full-width colon that ends a lead-in (`…如下：`).
fn ends_cjk_sentence_or_lead_in(c: char) -> bool {
    crate::text::CJK_SENTENCE_ENDS.contains(&c) || c == '：'
}

/// `p.`, `pp.`, `No.`, `Inc.`, `Corp.`, `vs.`, `e.g.`, a single capital (`U.S.`), or a number's decimal
/// point at the end of `before` — a full stop that does not end a sentence.
fn ends_with_abbreviation(before: &str) -> bool {
    let word = before.rsplit(|c: char| c.is_whitespace() || c == '(').next().unwrap_or("");
    let lower = word.to_lowercase();
    matches!(
        lower.as_str(),
        "p" | "pp"
            | "no"
            | "inc"
            | "corp"
            | "co"
            | "ltd"
            | "vs"
            | "e.g"
            | "i.e"
            | "fig"
            | "approx"
            | "mr"
            | "ms"
            | "dr"
            | "st"
    ) || (word.len() <= 3 && word.chars().all(|c| c.is_ascii_uppercase() || c == '.') && !word.is_empty())
}

/// Strips Markdown decoration that is not content: list bullets, numbering, heading marks, emphasis.
fn plain(sentence: &str) -> String {
    let t = sentence.trim_start_matches(['-', '*', '+', '#', ' ', '>']);
    let t = match t.split_once(". ") {
        Some((n, rest)) if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) => rest,
        _ => t,
    };
    t.replace("**", "").replace('*', "").trim().to_string()
}

/// What the model read of each source — its document's context line (issuer, period) and its text — as
/// the figures and quarters stated there; index 0 is passage `[1]`.
struct SourcesRead {
    figures: Vec<Vec<Figure>>,
    quarters: Vec<Vec<(u8, u16)>>,
    /// The calendar years each names ([`crate::figures::years`]), with those of its file name.
    years: Vec<Vec<u16>>,
    /// The words (and CJK character pairs) of each, as [`crate::text::stems`] reads them.
    stems: Vec<std::collections::HashSet<String>>,
    /// The lower-case words of each (letters and digits between other characters), for [`names_in`].
    words: Vec<std::collections::HashSet<String>>,
    /// Each in lower case without white space, for the Chinese names of [`names_in`].
    compact: Vec<String>,
}

/// What the claim check reads of each source's table rows — only the check needs them, not the
/// citation repair, which reads [`SourcesRead`] — index 0 is passage `[1]`.
struct RowsRead {
    /// Each passage's table rows, with the line items they measure.
    rows: Vec<Vec<MeasuredRow>>,
    /// The figures of each passage's other lines and of its context line.
    prose: Vec<Vec<Figure>>,
}

/// A table row of a passage and what it measures.
struct MeasuredRow {
    /// The row's label, after its table section when it has one ("Operating Income (Loss): AWS").
    name: String,
    /// The line items its label names, or its section's when the label names none (a segment's row
    /// under "Operating Income"; [`crate::genre::financial::line_item::measured_items`]).
    items: Vec<usize>,
    /// The figures the row states.
    figures: Vec<Figure>,
}

impl MeasuredRow {
    fn of(section: &str, label: &str, items: Vec<usize>, line: &str) -> Self {
        let name = if section.is_empty() { label.to_string() } else { format!("{section}: {label}") };
        MeasuredRow { name, items, figures: figures(line) }
    }
}

/// `passage`'s table rows ([`crate::genre::financial::table_section::rows_with_sections`], and rows of one cell,
/// [`crate::text::row_label`]) and the figures of its other lines and context line.
fn rows_and_prose(passage: &quarry_core::Passage, genre: &dyn Genre) -> (Vec<MeasuredRow>, Vec<Figure>) {
    let mut table = genre.table_rows(passage).into_iter().peekable();
    let mut rows = Vec::new();
    let mut prose = figures(&passage.context);
    for line in passage.text.split('\n') {
        if let Some(row) = table.next_if(|row| std::ptr::eq(row.line, line)) {
            rows.push(MeasuredRow::of(&row.section, row.label, row.items, line));
        } else if let Some(label) = crate::text::row_label(line) {
            rows.push(MeasuredRow::of("", label, genre.line_items(label), line));
        } else {
            prose.extend(figures(line));
        }
    }
    (rows, prose)
}

impl RowsRead {
    fn of(sources: &[Citation], genre: &dyn Genre) -> Self {
        let (rows, prose) = sources.iter().map(|c| rows_and_prose(&c.passage, genre)).unzip();
        RowsRead { rows, prose }
    }

    /// The row of another line item that a claim's `figure` was read from: when the claim names line
    /// items (`named`, [`crate::genre::financial::line_item::line_items`]) and every place the passages `numbers` (all
    /// known) state `figure` is a table row measuring another item, that row's name ("Operating income",
    /// "Operating Income (Loss): AWS"). `None` — nothing to report — when a row of a named item, a row
    /// that names no item (a segment's row with no section), a line of prose or the context line states
    /// it, when no passage does, when the claim names no item, or for a date.
    fn other_line_item(&self, numbers: &[usize], figure: &Figure, named: &[usize]) -> Option<String> {
        if named.is_empty() || matches!(figure.kind, FigureKind::Date { .. }) {
            return None;
        }
        let mut other = None;
        for &n in numbers {
            if states(&self.prose[n - 1], figure) {
                return None;
            }
            for row in self.rows[n - 1].iter().filter(|r| states(&r.figures, figure)) {
                if row.items.is_empty() || row.items.iter().any(|i| named.contains(i)) {
                    return None;
                }
                other.get_or_insert_with(|| row.name.clone());
            }
        }
        other
    }
}

/// Each figure of the claim `text` with the line items ([`crate::genre::financial::line_item::line_items`], by index) it
/// is stated for: those the text names between the figure before it (or the sentence's start) and it —
/// "operating expenses were $14,316 million …, lower than its revenue, which was $12,755 million" states
/// the second amount for revenue alone — or, when that stretch names none ("revenue and operating
/// income were $7,192 million and $2,140 million"), every item the sentence names (`named`). A
/// percentage keeps every item too: its base follows it ("operating expenses were 26% of revenue"). An
/// item that is the base of the percentage before a figure ("34.9% of revenue, against $2,508 million")
/// is not what that figure is stated for: the stretch is read from its first comma, semicolon or
/// closing bracket.
/// `stated` are the claim's figures with their offsets ([`crate::figures::figures_at`]).
fn items_of_figures<'a>(
    text: &str,
    stated: &'a [(usize, Figure)],
    named: &[usize],
    genre: &dyn Genre,
) -> Vec<(&'a Figure, Vec<usize>)> {
    let mut out = Vec::with_capacity(stated.len());
    let mut from = 0;
    let mut after_percent = false;
    for &(at, ref figure) in stated {
        let mut stretch = &text[from.min(at)..at];
        if after_percent && stretch.trim_start().starts_with("of ") {
            stretch = stretch.find([',', ';', ')']).map_or("", |end| &stretch[end + 1..]);
        }
        let near = genre.line_items(stretch);
        from = at + text[at..].find(figure.text.as_str()).map_or(0, |start| start + figure.text.len());
        after_percent = figure.kind == FigureKind::Percent;
        // A percentage names its base after it ("26% of its revenues" under operating expenses' row "% of
        // net revenue"): it keeps the sentence's items.
        let own = !near.is_empty() && matches!(figure.kind, FigureKind::Amount | FigureKind::Number);
        out.push((figure, if own { near } else { named.to_vec() }));
    }
    out
}

/// Share of a sentence's words (and CJK character pairs) that one passage must hold for the sentence to
/// count as copied from it ([`SourcesRead::quoting`]): nearly all, so a paraphrase is not cited by it.
const QUOTED_SHARE: f64 = 0.8;

/// Fewest words (or CJK character pairs) of a sentence judged by [`QUOTED_SHARE`]: a short phrase shares
/// most of its words with many passages.
const QUOTED_MIN_STEMS: usize = 6;

impl SourcesRead {
    fn of(sources: &[Citation]) -> Self {
        let read: Vec<String> = sources.iter().map(|c| format!("{}\n{}", c.passage.context, c.passage.text)).collect();
        // What names and years are read in: the passage, its context line and its file name.
        let named: Vec<String> =
            sources.iter().zip(&read).map(|(c, t)| format!("{}\n{t}", c.passage.file_name())).collect();
        SourcesRead {
            figures: read.iter().map(|t| figures(t)).collect(),
            quarters: read.iter().map(|t| quarters(t)).collect(),
            years: named.iter().map(|t| crate::figures::years(t)).collect(),
            stems: read.iter().map(|t| crate::text::stems(t)).collect(),
            words: named
                .iter()
                .map(|t| {
                    t.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
                })
                .collect(),
            compact: read
                .iter()
                .map(|t| t.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_lowercase())
                .collect(),
        }
    }

    /// The index of the first passage that states every figure of `text` and names every quarter it
    /// names; `None` when `text` states no figure or no one passage holds them all.
    fn holding(&self, text: &str) -> Option<usize> {
        let stated = figures(text);
        if stated.is_empty() {
            return None;
        }
        let named = quarters(text);
        (0..self.figures.len()).find(|&i| {
            stated.iter().all(|f| states(&self.figures[i], f)) && named.iter().all(|q| self.quarters[i].contains(q))
        })
    }

    /// The indexes of the fewest passages (at most [`MOST_COVERING`]) that state every figure of `text`
    /// together, and name every quarter it names: `[i]` when one passage does ([`SourcesRead::holding`]),
    /// else chosen greedily — the passage stating most of the figures not yet stated, the first of
    /// equals (the greedy set cover). The figures a second or third passage is chosen for must be
    /// [`distinctive`]: "27%" or "$985" occur in many passages by chance, and a sentence that made them
    /// up was found "supported" by a passage saying them about something else (docs/evaluation/decisions.md,
    /// 2026-12-03 (b)). `None` when `text` states no figure, or no such passages state all.
    fn covering(&self, text: &str) -> Option<Vec<usize>> {
        if let Some(i) = self.holding(text) {
            return Some(vec![i]);
        }
        let stated = figures(text);
        if stated.is_empty() {
            return None;
        }
        let mut left: Vec<&Figure> = stated.iter().collect();
        let mut chosen: Vec<usize> = Vec::new();
        while !left.is_empty() {
            if chosen.len() == MOST_COVERING {
                return None;
            }
            let counts = self.figures.iter().map(|read| left.iter().filter(|f| states(read, f)).count());
            let (best, count) = counts.enumerate().fold((0, 0), |best, (i, n)| if n > best.1 { (i, n) } else { best });
            if count == 0 || (!chosen.is_empty() && !left.iter().all(|f| distinctive(f))) {
                return None;
            }
            chosen.push(best);
            left.retain(|f| !states(&self.figures[best], f));
        }
        chosen.sort_unstable();
        let named = quarters(text);
        named.iter().all(|q| chosen.iter().any(|&i| self.quarters[i].contains(q))).then_some(chosen)
    }

    /// The index of the passage that states the most of `text`'s figures (at least one; the first of
    /// equals); `None` when none states any.
    fn stating_most(&self, text: &str) -> Option<usize> {
        let stated = figures(text);
        let counts = self.figures.iter().map(|read| stated.iter().filter(|f| states(read, f)).count());
        let (index, count) = counts.enumerate().fold((0, 0), |best, (i, n)| if n > best.1 { (i, n) } else { best });
        (count > 0).then_some(index)
    }

    /// The index of the passage `text` is copied from: the one holding the largest share of its words (and
    /// CJK character pairs), if that share is at least [`QUOTED_SHARE`] of at least [`QUOTED_MIN_STEMS`];
    /// the first of equals. Small models often copy a passage's sentences word for word without a marker
    /// (Qwen2.5-1.5B on Chinese reports: a whole list from one passage, uncited).
    fn quoting(&self, text: &str) -> Option<usize> {
        let wanted = crate::text::stems(text);
        if wanted.len() < QUOTED_MIN_STEMS {
            return None;
        }
        let counts = self.stems.iter().map(|held| wanted.intersection(held).count());
        let (index, count) = counts.enumerate().fold((0, 0), |best, (i, n)| if n > best.1 { (i, n) } else { best });
        (count as f64 >= QUOTED_SHARE * wanted.len() as f64).then_some(index)
    }

    /// `numbers` (a marker's citations, all of passages the answer was given, at least two) less those
    /// that cite a passage adding nothing to the others for `text`: it states none of `text`'s figures,
    /// the others state them all, and it holds no word of `text` they lack. `None` when nothing would be
    /// left out. The quick start's answer cited `[1][3]` for "$7,192 million", `[3]` the summary table
    /// stating it and `[1]` a passage about cash that states no revenue (docs/evaluation/decisions.md, 2026-12-04 (f)); a
    /// passage that holds words of the sentence the figure's passage lacks ("… driven by demand for
    /// Hopper") stays cited.
    fn without_idle(&self, text: &str, numbers: &[usize]) -> Option<Vec<usize>> {
        if numbers.len() < 2 || self.known(numbers).len() != numbers.len() {
            return None;
        }
        let stated = figures(text);
        if stated.is_empty() {
            return None;
        }
        let (keep, idle): (Vec<usize>, Vec<usize>) =
            numbers.iter().partition(|&&n| stated.iter().any(|f| states(&self.figures[n - 1], f)));
        if idle.is_empty() || keep.is_empty() || !stated.iter().all(|f| self.any_states(&keep, f)) {
            return None;
        }
        let wanted = crate::text::stems(text);
        let covered: std::collections::HashSet<&String> =
            keep.iter().flat_map(|&n| wanted.intersection(&self.stems[n - 1])).collect();
        let adds_words = |n: usize| wanted.intersection(&self.stems[n - 1]).any(|w| !covered.contains(w));
        let dropped: Vec<usize> = idle.into_iter().filter(|&n| !adds_words(n)).collect();
        (!dropped.is_empty()).then(|| numbers.iter().copied().filter(|n| !dropped.contains(n)).collect())
    }

    /// The citation numbers among `numbers` that name a passage the answer was given.
    fn known(&self, numbers: &[usize]) -> Vec<usize> {
        numbers.iter().copied().filter(|n| (1..=self.figures.len()).contains(n)).collect()
    }

    /// Whether one of the passages `numbers` (all known) states `figure`.
    fn any_states(&self, numbers: &[usize], figure: &Figure) -> bool {
        numbers.iter().any(|&n| states(&self.figures[n - 1], figure))
    }
}

/// Checks every claim of `markdown`, an answer written from `sources` (numbered from 1 as in the prompt).
/// Returns one [`ClaimCheck`] per claim, in order; sentences that are no claim (Markdown headings, short headings, a
/// statement that the documents do not answer) are left out, and so is the label Quarry writes at the
/// start of a document's line (`- **file** (period): `, [`crate::text::split_line_head`]) when
/// it names one of `sources`' files.
pub fn check_claims(markdown: &str, sources: &[Citation], genre: &dyn Genre) -> Vec<ClaimCheck> {
    let mut list = sentences(markdown);
    // A sentence without markers borrows the markers of the next sentence of its paragraph.
    for i in (0..list.len()).rev() {
        if list[i].markers.is_empty() && !list[i].ends_paragraph {
            if let Some(next) = list.get(i + 1) {
                list[i].markers = next.markers.clone();
            }
        }
    }
    let read = SourcesRead::of(sources);
    let rows = RowsRead::of(sources, genre);
    let mut out = Vec::new();
    for s in list {
        // Quarry's own label on a document's line (`- **file** (period): `) is no claim of the model's.
        let own = crate::text::split_line_head(&s.text)
            .filter(|(file, _)| sources.iter().any(|c| c.passage.file_name() == *file))
            .map_or(s.text.as_str(), |(_, rest)| rest);
        let text = plain(own);
        // Each figure with where it stands in the sentence (the line items named before it: [`items_of_figures`]).
        let stated = crate::figures::figures_at(&text);
        let words = word_count(&text);
        // No claim: a Markdown heading or a short one, a lead-in to a list ("The changes are as
        // follows:"), a decline.
        let heading = crate::text::heading_level(s.text.trim_start()).is_some();
        if heading || (stated.is_empty() && (words < 4 || text.ends_with([':', '：']))) || is_decline(&text) {
            continue;
        }
        let mut cited: Vec<usize> = Vec::new();
        for n in s.markers {
            if !cited.contains(&n) {
                cited.push(n);
            }
        }
        let known = read.known(&cited);
        let problem = if cited.is_empty() {
            "cites no passage".to_string()
        } else if known.is_empty() {
            "cites a passage the answer was not given".to_string()
        } else {
            let missing: Vec<&str> = stated
                .iter()
                .map(|(_, f)| f)
                .filter(|f| !read.any_states(&known, f))
                .map(|f| f.text.as_str())
                .collect();
            let other_period: Vec<String> = quarters(&text)
                .into_iter()
                .filter(|q| !known.iter().any(|n| read.quarters[n - 1].contains(q)))
                .map(|(q, y)| format!("Q{q} {y}"))
                .collect();
            let other_year: Vec<String> = crate::figures::years(&text)
                .into_iter()
                .filter(|y| !known.iter().any(|n| read.years[n - 1].contains(y)))
                .map(|y| y.to_string())
                .collect();
            let unnamed: Vec<String> = names(&text)
                .into_iter()
                .filter(|name| !known.iter().any(|n| names_in(name, &read.words[n - 1], &read.compact[n - 1])))
                .collect();
            let named = genre.line_items(&text);
            let other_item: Vec<String> = items_of_figures(&text, &stated, &named, genre)
                .into_iter()
                .filter_map(|(f, items)| {
                    rows.other_line_item(&known, f, &items).map(|row| format!("{} ({row})", f.text))
                })
                .collect();
            if !missing.is_empty() {
                format!("figures not in the cited passages: {}", missing.join(", "))
            } else if !other_period.is_empty() {
                format!("the cited passages do not name the period it states: {}", other_period.join(", "))
            } else if !other_year.is_empty() {
                format!("the cited passages do not name the year it states: {}", other_year.join(", "))
            } else if !unnamed.is_empty() {
                format!("the cited passages do not name: {}", unnamed.join(", "))
            } else if !other_item.is_empty() {
                format!("figures from a row of another line item: {}", other_item.join(", "))
            } else {
                String::new()
            }
        };
        out.push(ClaimCheck { sentence: text, cited, supported: problem.is_empty(), problem });
    }
    out
}

impl CitationRepair {
    /// The repair of `text` (markers removed, [`plain`]) from the numbers `from` to the passages `to`
    /// (at least one, in order), with the markers to write for it: `[2]`, or `[2][4]` when several
    /// passages state its figures together.
    fn citing(text: &str, from: Vec<usize>, to: &[usize]) -> (String, Self) {
        let markers = to.iter().map(|n| format!("[{n}]")).collect();
        (markers, CitationRepair { text: plain(text), from, to: to[0], also: to[1..].to_vec() })
    }
}

/// Whether `figure` is unlikely to occur in a passage by chance: a date, or an amount, number or
/// percentage written with at least four digits ("$6,976 million", "85,335", "12.25%"; not "27%", "$985").
fn distinctive(figure: &Figure) -> bool {
    matches!(figure.kind, FigureKind::Date { .. }) || figure.text.chars().filter(char::is_ascii_digit).count() >= 4
}

/// Most passages a corrected citation names when no one passage states all of a text's figures: a
/// sentence that joins two figures ("$63,171 million and $6,976 million, respectively") read from two
/// rows in two passages cites both, so the person can find each and the claim check reads each in its
/// row ([`check_claims`]).
pub const MOST_COVERING: usize = 3;

/// Corrects citations by figures (see [`CitationRepair`]): small models copy a figure from one passage
/// and cite its neighbour (the quick start's answer stated $7,192 million from passage `[2]` and cited
/// `[1]`). Each marker is judged by the text since the previous marker or the start of its line; a line
/// (a paragraph or a list item — the claim check does not borrow markers across lines either) without
/// any marker gets one at its end. The new marker is the lowest-numbered passage of `sources` (numbered
/// from 1) holding every figure of that text, or, when none holds them all, the fewest passages that
/// state them together (at most [`MOST_COVERING`], one marker each) — a figure either is or is not in a
/// passage's text, so a repair cannot cite a passage that does not state it. A line without markers whose figures no single
/// passage holds, or that states none, is cited sentence by sentence ([`cite_uncited_sentences`]: by
/// figures, or by the passage it is copied from), and so are the sentences after a line's last marker,
/// which the claim check would find citing nothing (a small model cites its first sentence and copies
/// the next ones from a passage without a marker). Other text keeps its markers (the claim check then
/// reports it). Returns the corrected Markdown and what was changed.
pub fn repair_citations(markdown: &str, sources: &[Citation]) -> (String, Vec<CitationRepair>) {
    let read = SourcesRead::of(sources);
    let holder = |text: &str| read.holding(text).map(|i| i + 1);
    let holds = |text: &str, numbers: &[usize]| -> bool {
        let stated = figures(text);
        let known = read.known(numbers);
        !known.is_empty() && stated.iter().all(|f| read.any_states(&known, f))
    };
    let mut out = String::with_capacity(markdown.len() + 8);
    let mut repairs = Vec::new();
    // Text since the previous marker, and whether the current paragraph has a marker yet.
    let mut since_marker = String::new();
    let mut paragraph = String::new();
    let mut paragraph_cited = false;
    let close_paragraph = |out: &mut String,
                           paragraph: &mut String,
                           since_marker: &str,
                           cited: &mut bool,
                           repairs: &mut Vec<CitationRepair>| {
        if *cited && !since_marker.trim().is_empty() {
            // The sentences after a cited line's last marker borrow no marker in the claim check:
            // each cites the passage stating most of its figures, or the one it is copied from.
            let (by_sentence, mut sentence_repairs) = cite_sentences(since_marker, sources, &read);
            if !sentence_repairs.is_empty() && out.ends_with(since_marker) {
                out.truncate(out.len() - since_marker.len());
                out.push_str(&by_sentence);
                repairs.append(&mut sentence_repairs);
            }
        }
        // A Markdown heading names what follows; it is not cited (a report section's "### Three months
        // ended April 1, 2023" states a date every passage of that quarter holds).
        if !*cited && crate::text::heading_level(paragraph.trim_start()).is_none() {
            // A line that declines is cited sentence by sentence, which leaves the decline uncited.
            if let Some(to) = holder(paragraph).filter(|_| !is_decline(paragraph)) {
                let trimmed = out.trim_end_matches([' ', '\t']).len();
                out.truncate(trimmed);
                out.push_str(&format!(" [{to}]"));
                repairs.push(CitationRepair { text: plain(paragraph), from: Vec::new(), to, also: Vec::new() });
            } else {
                // No one passage holds all its figures: each sentence cites the passage stating most
                // of its own, or the one it is copied from (an uncited line is exactly the text last
                // pushed to `out`).
                let (by_sentence, mut sentence_repairs) = cite_sentences(paragraph, sources, &read);
                if !sentence_repairs.is_empty() {
                    out.truncate(out.len() - paragraph.len());
                    out.push_str(&by_sentence);
                    repairs.append(&mut sentence_repairs);
                }
            }
        }
        paragraph.clear();
        *cited = false;
    };
    for piece in pieces(markdown) {
        match piece {
            Piece::Marker { raw, numbers } => {
                let text = since_marker.clone();
                // Cited to passages that do not state its figures: the ones that do; else, a passage
                // cited beside them that adds nothing, left out.
                let to = match read.covering(&text) {
                    Some(to) if !holds(&text, &numbers) => Some(to.into_iter().map(|i| i + 1).collect()),
                    _ => read.without_idle(&text, &numbers),
                };
                match to {
                    Some(to) => {
                        let (markers, repair) = CitationRepair::citing(&text, numbers, &to);
                        out.push_str(&markers);
                        repairs.push(repair);
                    }
                    None => out.push_str(raw),
                }
                since_marker.clear();
                paragraph_cited = true;
            }
            Piece::Text(text) => {
                let mut rest = text;
                // A line is a paragraph here: a list item cites for itself, as the claim check reads it.
                while let Some(at) = rest.find('\n') {
                    let (head, tail) = rest.split_at(at);
                    out.push_str(head);
                    since_marker.push_str(head);
                    paragraph.push_str(head);
                    close_paragraph(&mut out, &mut paragraph, &since_marker, &mut paragraph_cited, &mut repairs);
                    since_marker.clear();
                    out.push('\n');
                    rest = &tail[1..];
                }
                out.push_str(rest);
                since_marker.push_str(rest);
                paragraph.push_str(rest);
            }
        }
    }
    close_paragraph(&mut out, &mut paragraph, &since_marker, &mut paragraph_cited, &mut repairs);
    (out, repairs)
}

/// `text` (which cites nothing) with a marker at the end of each sentence that is not a decline
/// ([`is_decline`]) and either states a figure one of `sources` holds — the passage stating the most of
/// that sentence's figures — or is copied from one of them ([`SourcesRead::quoting`]). For text written
/// from a few passages, whose sentences each come from one of them; a sentence that also states figures
/// its passage lacks is cited all the same, and the claim check reports those figures. `sources` keep
/// their own numbers (they need not start at 1). A sentence ends at `.`, `!` or `?` followed by a space
/// and anything but a lower-case letter ("the U.S. dollar" is one sentence), at the full-width `。！？；`
/// and the lead-in's `：`, or at the end of `text`.
pub fn cite_uncited_sentences(text: &str, sources: &[Citation]) -> (String, Vec<CitationRepair>) {
    cite_sentences(text, sources, &SourcesRead::of(sources))
}

/// [`cite_uncited_sentences`] with `sources` already read (`read` is [`SourcesRead::of`] them).
fn cite_sentences(text: &str, sources: &[Citation], read: &SourcesRead) -> (String, Vec<CitationRepair>) {
    let mut out = String::with_capacity(text.len() + 16);
    let mut repairs = Vec::new();
    // A decline ("… do not state it") claims nothing, whatever dates its heading names.
    let mut cite = |sentence: &str, out: &mut String| {
        if is_decline(sentence) {
            return;
        }
        let indexes = read
            .covering(sentence)
            .or_else(|| read.stating_most(sentence).or_else(|| read.quoting(sentence)).map(|i| vec![i]));
        if let Some(indexes) = indexes {
            let to: Vec<usize> = indexes.into_iter().map(|i| sources[i].number).collect();
            let (markers, repair) = CitationRepair::citing(sentence, Vec::new(), &to);
            out.push(' ');
            out.push_str(&markers);
            repairs.push(repair);
        }
    };
    let mut start = 0;
    for (i, c) in text.char_indices() {
        let after = &text[i + c.len_utf8()..];
        let ends = (matches!(c, '.' | '!' | '?')
            && after.chars().next().is_none_or(char::is_whitespace)
            && after.trim_start().chars().next().is_none_or(|c| !c.is_lowercase()))
            || ends_cjk_sentence_or_lead_in(c);
        if !ends {
            continue;
        }
        let sentence = &text[start..i];
        out.push_str(sentence);
        cite(sentence, &mut out);
        out.push(c);
        start = i + c.len_utf8();
    }
    // The last sentence, when no full stop ends it.
    let rest = &text[start..];
    let body = rest.trim_end();
    out.push_str(body);
    if !body.trim().is_empty() {
        cite(body, &mut out);
    }
    out.push_str(&rest[body.len()..]);
    (out, repairs)
}

/// The line of a cited passage's `text` (a table row, or the line of prose) that states the most of
/// the amounts and percentages of the claims citing passage `number` — what a citation's preview should
/// show, so the reader sees the words the answer rests on and not only the passage's first line (the
/// quick start's answer cites a chunk that opens with segment rows and holds "Total revenue: $7,192
/// million (three months ended April 30, 2023)" further down). Whitespace is collapsed. `None` when no
/// claim citing the passage states an amount or a percentage, or no line of the passage states one of
/// them (dates are left out: a table's every row names its columns' dates).
pub fn stating_line(text: &str, number: usize, claims: &[ClaimCheck]) -> Option<String> {
    let wanted: Vec<Figure> = claims
        .iter()
        .filter(|c| c.cited.contains(&number))
        .flat_map(|c| figures(&c.sentence))
        .filter(|f| matches!(f.kind, FigureKind::Amount | FigureKind::Percent))
        .collect();
    if wanted.is_empty() {
        return None;
    }
    let mut best: Option<(usize, &str)> = None;
    for line in text.lines() {
        let stated = figures(line);
        let count = wanted.iter().filter(|w| states(&stated, w)).count();
        if count > 0 && best.is_none_or(|(most, _)| count > most) {
            best = Some((count, line));
        }
    }
    best.map(|(_, line)| line.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Supported claims over all claims, or `None` when the answer makes no claim.
pub fn supported_share(checks: &[ClaimCheck]) -> Option<f64> {
    (!checks.is_empty()).then(|| checks.iter().filter(|c| c.supported).count() as f64 / checks.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The claim check with the financial genre, as the default run reads.
    fn check_claims(markdown: &str, sources: &[Citation]) -> Vec<ClaimCheck> {
        super::check_claims(markdown, sources, &crate::genre::Financial)
    }
    use quarry_core::Passage;

    #[test]
    fn a_citations_preview_is_the_line_stating_what_the_answer_cites_it_for() {
        let text = "Professional Visualization: 295 million (three months ended April 30, 2023); 622 million (three months ended May 1, 2022)\n\
                    Automotive: 296 million (three months ended April 30, 2023); 138 million (three months ended May 1, 2022)\n\
                    Total revenue: $7,192 million (three months ended April 30, 2023); $8,288 million (three months ended May 1, 2022)";
        let claims = check_claims(
            "NVIDIA's revenue in the first quarter of fiscal 2024 was $7,192 million [2].",
            &[source(2, text)],
        );
        assert_eq!(
            stating_line(text, 2, &claims).as_deref(),
            Some("Total revenue: $7,192 million (three months ended April 30, 2023); $8,288 million (three months ended May 1, 2022)")
        );
        // Another passage's number, or a claim with no amount: no line to show.
        assert_eq!(stating_line(text, 3, &claims), None);
        let claims = check_claims("NVIDIA reports by segment [2].", &[source(2, text)]);
        assert_eq!(stating_line(text, 2, &claims), None);
    }

    fn source(number: usize, text: &str) -> Citation {
        Citation {
            number,
            passage: Passage {
                chunk_id: number as u64,
                chunk_index: None,
                library: "l".into(),
                document_id: "d".into(),
                path: "/x/2023 Q1 NVDA.pdf".into(),
                page_start: Some(25),
                page_end: Some(25),
                sheet: None,
                heading_path: vec![],
                text: text.into(),
                context: String::new(),
                score: 1.0,
                ocr: false,
            },
        }
    }

    /// Amazon's AWS segment rows as stored (`2023 Q3 AMZN.pdf`, p. 19): the rows under the segment's
    /// section line.
    const AMAZON_AWS: &str = "AWS\n\
        Net sales: $20,538 million (three months ended September 30, 2022); $23,059 million (three months ended September 30, 2023); $58,718 million (nine months ended September 30, 2022); $66,553 million (nine months ended September 30, 2023)\n\
        Operating expenses: 15,135 million (three months ended September 30, 2022); 16,083 million (three months ended September 30, 2023); 41,082 million (nine months ended September 30, 2022); 49,089 million (nine months ended September 30, 2023)\n\
        Operating income: $5,403 million (three months ended September 30, 2022); $6,976 million (three months ended September 30, 2023); $17,636 million (nine months ended September 30, 2022); $17,464 million (nine months ended September 30, 2023)\n\
        Consolidated";

    /// The same filing's operating income by segment: the rows are the segments' names, the line item
    /// is their table section.
    const AMAZON_BY_SEGMENT: &str = "Operating Income (Loss)\n\
        Operating income (loss) by segment is as follows (in millions):\n\
        Operating Income (Loss)\n\
        North America: $(412) million (three months ended September 30, 2022); $4,307 million (three months ended September 30, 2023); $(2,607) million (nine months ended September 30, 2022); $8,416 million (nine months ended September 30, 2023)\n\
        AWS: 5,403 million (three months ended September 30, 2022); 6,976 million (three months ended September 30, 2023); 17,636 million (nine months ended September 30, 2022); 17,464 million (nine months ended September 30, 2023)";

    fn problem(md: &str, sources: &[Citation]) -> String {
        let checks = check_claims(md, sources);
        assert_eq!(checks.len(), 1, "{checks:?}");
        checks[0].problem.clone()
    }

    #[test]
    fn a_figure_from_a_row_of_another_line_item_is_unsupported() {
        let sources = [source(1, AMAZON_AWS)];
        // The model's answer to "What was the reported revenue from … AWS …?" (the entries 2026-12-02 (f) to 2026-12-03 (a)).
        assert_eq!(
            problem("AWS revenue was $6,976 million [1].", &sources),
            "figures from a row of another line item: $6,976 million (AWS: Operating income)"
        );
        // The row that says it, in either filer's words; the item the figure is; no item named.
        assert_eq!(problem("AWS net sales were $23,059 million [1].", &sources), "");
        assert_eq!(problem("AWS revenue was $23,059 million [1].", &sources), "");
        assert_eq!(problem("AWS operating income was $6,976 million [1].", &sources), "");
        assert_eq!(problem("AWS reported $6,976 million for the quarter [1].", &sources), "");
        // A row named by a segment: its section says what it measures.
        let by_segment = [source(1, AMAZON_BY_SEGMENT)];
        assert_eq!(
            problem("AWS revenue was $6,976 million [1].", &by_segment),
            "figures from a row of another line item: $6,976 million (Operating Income (Loss): AWS)"
        );
        assert_eq!(problem("AWS had an operating income of $6,976 million [1].", &by_segment), "");
        // Where prose states the figure, or a row that names no item, the sentence may be right.
        let prose = [source(1, &format!("{AMAZON_AWS}\nAWS revenue grew to $6,976 million."))];
        assert_eq!(problem("AWS revenue was $6,976 million [1].", &prose), "");
        let bare = [source(1, "AWS: 5,403 million (three months ended September 30, 2022); 6,976 million (three months ended September 30, 2023)")];
        assert_eq!(problem("AWS revenue was $6,976 million [1].", &bare), "");
        // Figures of other passages the sentence does not cite do not excuse it.
        let two = [source(1, AMAZON_AWS), source(2, "AWS revenue grew to $6,976 million.")];
        assert!(
            problem("AWS revenue was $6,976 million [1].", &two).starts_with("figures from a row of another line item")
        );
    }

    #[test]
    fn each_figure_is_read_for_the_line_item_named_just_before_it() {
        // Apple's Q1 2023 operating expenses (sec10q-069, 2026-12-04 (c)'s recording): the model stated the
        // prior year's operating expenses as the quarter's revenue.
        let opex = [source(
            1,
            "Operating Expenses\n\
             Total operating expenses: $14,316 million (three months ended December 31, 2022); $12,755 million (three months ended December 25, 2021)",
        )];
        assert_eq!(
            problem(
                "Operating expenses were $14,316 million (three months ended December 31, 2022), which was lower \
                 than its revenue for the same quarter, which was $12,755 million (three months ended December 25, 2021) [1].",
                &opex
            ),
            "figures from a row of another line item: $12,755 million (Operating Expenses: Total operating expenses)"
        );
        // Both figures stated for the item named before them.
        assert_eq!(
            problem("Operating expenses were $14,316 million, against $12,755 million a year earlier [1].", &opex),
            ""
        );
        // The stretch before a figure names no item: every item of the sentence counts, as before.
        assert_eq!(problem("Revenue and operating expenses were $14,316 million and $12,755 million [1].", &opex), "");
        // A percentage is stated for its base too: operating expenses' row "% of net revenue".
        let shares = [source(1, "Operating Expenses\n% of net revenue: 34.9% (three months ended April 30, 2023)")];
        assert_eq!(problem("Operating expenses were 34.9% of revenue [1].", &shares), "");
        // The base of a percentage is not what the next figure is stated for.
        let with_share = [source(
            1,
            "Total operating expenses: $14,316 million (three months ended December 31, 2022); $12,755 million (three months ended December 25, 2021)\n\
             Operating expenses were 12.2% of revenue.",
        )];
        assert_eq!(
            problem(
                "Operating expenses were $14,316 million, or 12.2% of revenue, against $12,755 million a year earlier [1].",
                &with_share
            ),
            ""
        );
    }

    /// The quick start's answer (2026-12-04 (f)): "$7,192 million" cited to the summary table that states
    /// it and to a passage about cash that states no revenue. The idle citation is left out; one that
    /// holds words of the sentence the figure's passage lacks stays.
    #[test]
    fn a_passage_cited_beside_the_one_stating_the_figure_that_adds_nothing_is_left_out() {
        let sources = [
            source(1, "As of April 30, 2023, we had $15.32 billion in cash, partially offset by lower revenue."),
            source(2, "First Quarter of Fiscal Year 2024 Summary\nRevenue: $7,192 million (three months ended April 30, 2023)"),
            source(3, "Data Center revenue was driven by demand for Hopper GPUs."),
        ];
        let md = "NVIDIA's revenue in the first quarter of fiscal 2024 was $7,192 million [1, 2].";
        let (fixed, repairs) = repair_citations(md, &sources);
        assert_eq!(fixed, "NVIDIA's revenue in the first quarter of fiscal 2024 was $7,192 million [2].");
        assert_eq!((repairs[0].from.clone(), repairs[0].to, repairs[0].also.clone()), (vec![1, 2], 2, vec![]));
        // [3] says what drove it, which [2] does not: both stay.
        let md = "Revenue was $7,192 million, driven by demand for Hopper GPUs [2, 3].";
        assert_eq!(repair_citations(md, &sources), (md.to_string(), vec![]));
        // No figure, or no passage states it: the markers are the claim check's to judge.
        for md in ["Revenue grew on demand for Hopper [1, 3].", "Revenue was $9,999 million [1, 3]."] {
            assert_eq!(repair_citations(md, &sources).0, md);
        }
    }

    #[test]
    fn figures_that_no_one_passage_holds_cite_the_passages_that_hold_them_together() {
        // The model's answer to Amazon's segment revenue question: the North America row of one passage,
        // the AWS operating income row of another, cited to a third that states neither.
        let sources = [
            source(1, "Net sales by segment were as follows."),
            source(2, "North America: Net sales: $63,171 million (three months ended September 30, 2023)"),
            source(3, AMAZON_AWS),
        ];
        let md = "Revenue from North America and AWS was $63,171 million and $6,976 million, respectively [1].";
        let (fixed, repairs) = repair_citations(md, &sources);
        assert_eq!(
            fixed,
            "Revenue from North America and AWS was $63,171 million and $6,976 million, respectively [2][3]."
        );
        assert_eq!((repairs[0].from.clone(), repairs[0].to, repairs[0].also.clone()), (vec![1], 2, vec![3]));
        // Cited where its figures are, the sentence is checked row by row: $6,976 million is AWS's
        // operating income, not its revenue.
        let checks = check_claims(&fixed, &sources);
        assert_eq!(checks[0].cited, vec![2, 3]);
        assert_eq!(
            checks[0].problem,
            "figures from a row of another line item: $6,976 million (AWS: Operating income)"
        );
        // Uncited, sentence by sentence, the same.
        let (fixed, _) = repair_citations("North America and AWS sold $63,171 million and $23,059 million.", &sources);
        assert_eq!(fixed, "North America and AWS sold $63,171 million and $23,059 million [2][3].");
        assert!(check_claims(&fixed, &sources).iter().all(|c| c.supported));
        // A figure of few digits that another passage happens to state is no reason to cite it: the
        // sentence cites the passage stating most of its figures, and the check reports the rest.
        let chance = [source(1, "North America: Net sales: $63,171 million"), source(2, "Sales rose 27% in Europe.")];
        let (fixed, _) = repair_citations("North America sold $63,171 million, 27% above AWS.", &chance);
        assert_eq!(fixed, "North America sold $63,171 million, 27% above AWS [1].");
        assert_eq!(check_claims(&fixed, &chance)[0].problem, "figures not in the cited passages: 27%");
        // A figure no passage states leaves the marker as written (the check reports it).
        let md = "North America and AWS sold $63,171 million and $99,999 million [1].";
        assert_eq!(repair_citations(md, &sources).0, md);
    }

    #[test]
    fn the_quote_after_a_lines_words_is_a_claim_of_its_own() {
        // A per-document line: the model's words, then Quarry's quote on the same line.
        let mut sources = [source(1, AMAZON_AWS), source(2, "AWS sales increased 12% in Q3 2023.")];
        for s in &mut sources {
            s.passage.path = "/x/2023 Q3 AMZN.pdf".into();
            s.passage.context = "AMAZON.COM, INC. · Form 10-Q · quarter ended September 30, 2023".into();
        }
        let md = "- **2023 Q3 AMZN.pdf** (quarter ended September 30, 2023): AWS grew 12% [2] From the passages: \
                  “AWS: Net sales: $23,059 million (three months ended September 30, 2023)” [1]";
        let checks = check_claims(md, &sources);
        let said: Vec<(&str, &[usize])> = checks.iter().map(|c| (c.sentence.as_str(), c.cited.as_slice())).collect();
        // Quarry's label of the line (file and period) is no claim of the model's: left out of the check.
        assert_eq!(
            said,
            vec![
                ("AWS grew 12%", &[2][..]),
                (
                    "From the passages: “AWS: Net sales: $23,059 million (three months ended September 30, 2023)”",
                    &[1][..]
                ),
            ]
        );
        assert!(checks.iter().all(|c| c.supported), "{checks:?}");
        // Words the model did not cite do not borrow the quote's citation.
        let md = "- **2023 Q3 AMZN.pdf** (quarter ended September 30, 2023): AWS grew 12% From the passages: \
                  “AWS: Net sales: $23,059 million (three months ended September 30, 2023)” [1]";
        let checks = check_claims(md, &sources);
        assert_eq!(checks.len(), 2, "{checks:?}");
        assert_eq!((checks[0].cited.len(), checks[0].problem.as_str()), (0, "cites no passage"));
        assert!(checks[1].supported);
        // A line whose decline the quote replaced: the label alone is no claim (its period is a date).
        let md = "- **2023 Q3 AMZN.pdf** (quarter ended September 30, 2023): From the passages: \
                  “AWS: Net sales: $23,059 million (three months ended September 30, 2023)” [1]";
        let checks = check_claims(md, &sources);
        assert_eq!(checks.len(), 1, "{checks:?}");
        assert!(checks[0].supported && checks[0].sentence.starts_with("From the passages"));
        // A bold lead that names no source's file is the model's own words, checked as written.
        let md = "- **AWS** (segment): Net sales were $23,059 million. [1]";
        assert_eq!(check_claims(md, &sources)[0].sentence, "AWS (segment): Net sales were $23,059 million.");
    }

    #[test]
    fn a_figure_cited_to_the_wrong_passage_is_re_cited_to_the_one_that_states_it() {
        let mut sources = [
            source(1, "Revenue from sales outside the United States was 67% of total revenue."),
            source(2, "Total revenue: $7,192 million (three months ended April 30, 2023); $8,288 million (three months ended May 1, 2022)"),
        ];
        sources[1].passage.context = "NVIDIA CORPORATION · Form 10-Q · first quarter of fiscal 2024".into();
        // The quick start's answer: the figure is in [2], the marker said [1].
        let md = "NVIDIA's revenue in the first quarter of fiscal 2024 was $7,192 million, as stated in [1].";
        let (fixed, repairs) = repair_citations(md, &sources);
        assert_eq!(fixed, "NVIDIA's revenue in the first quarter of fiscal 2024 was $7,192 million, as stated in [2].");
        assert_eq!(
            repairs,
            vec![CitationRepair {
                text: "NVIDIA's revenue in the first quarter of fiscal 2024 was $7,192 million, as stated in".into(),
                from: vec![1],
                to: 2,
                also: Vec::new()
            }]
        );
        assert!(check_claims(&fixed, &sources).iter().all(|c| c.supported));
        // Right markers, markers after a marker, and text without figures stay as written.
        let md = "Revenue was $7,192 million [2][1]. Sales abroad were 67% [1]. Demand was strong [2].";
        assert_eq!(repair_citations(md, &sources), (md.to_string(), vec![]));
        // A heading is not cited, though its date is in a passage; the line under it is.
        let md = "#### Three months ended April 30, 2023\nRevenue was $7,192 million.";
        let (fixed, _) = repair_citations(md, &sources);
        assert_eq!(fixed, "#### Three months ended April 30, 2023\nRevenue was $7,192 million. [2]");
        // Nor is it a claim.
        assert_eq!(check_claims(&fixed, &sources).len(), 1, "{:?}", check_claims(&fixed, &sources));
        // A paragraph that cites nothing gets the passage holding its figures; one no passage holds keeps none.
        let md = "Revenue was $7,192 million.\n\nRevenue was $9,999 million.";
        let (fixed, repairs) = repair_citations(md, &sources);
        assert_eq!(fixed, "Revenue was $7,192 million. [2]\n\nRevenue was $9,999 million.");
        assert_eq!(repairs.len(), 1);
        // An uncited paragraph whose figures stand in two passages: each sentence cites its own.
        let md = "Revenue was $7,192 million. Sales abroad were 67% of it.";
        let (fixed, repairs) = repair_citations(md, &sources);
        assert_eq!(fixed, "Revenue was $7,192 million [2]. Sales abroad were 67% of it [1].");
        assert_eq!(repairs.iter().map(|r| r.to).collect::<Vec<_>>(), [2, 1]);
        assert!(check_claims(&fixed, &sources).iter().all(|c| c.supported));
        // A quarter the passage does not name is not a match.
        let md = "Revenue in Q2 2024 was $7,192 million [1].";
        assert_eq!(repair_citations(md, &sources).1, vec![]);
        // A list whose one marker closes the last item: each item cites for itself, as it is checked.
        let md = "The figures:\n- Revenue was $7,192 million.\n- Sales abroad were 67%. [1]";
        let (fixed, _) = repair_citations(md, &sources);
        assert_eq!(fixed, "The figures:\n- Revenue was $7,192 million. [2]\n- Sales abroad were 67%. [1]");
        assert!(check_claims(&fixed, &sources).iter().all(|c| c.supported), "{fixed}");
    }

    #[test]
    fn a_figure_absent_from_its_cited_passage_is_unsupported() {
        let sources = [
            source(
                1,
                "NVIDIA revenue for the first quarter of fiscal year 2024 was $7.19 billion, down 13% from a year ago.",
            ),
            source(2, "Revenue for the second quarter of fiscal year 2024 was $13.51 billion."),
        ];
        let checks = check_claims(
            "NVIDIA's revenue in Q1 FY2024 was $7,192 million [1]. It was $13.51 billion in Q1 [1].",
            &sources,
        );
        assert_eq!(checks.len(), 2);
        assert!(checks[0].supported, "{checks:?}");
        assert!(!checks[1].supported);
        assert_eq!(checks[1].problem, "figures not in the cited passages: $13.51 billion");
        assert_eq!(supported_share(&checks), Some(0.5));
    }

    #[test]
    fn uncited_sentences_borrow_the_paragraphs_next_marker_but_not_across_paragraphs() {
        let sources = [source(1, "Revenue was $7.19 billion and gross margin was 64.6%.")];
        let md = "Revenue was $7.19 billion. Gross margin was 64.6% [1].\n\nThe company also expects strong growth next year.";
        let checks = check_claims(md, &sources);
        assert_eq!(checks.len(), 3);
        assert!(checks[0].supported && checks[1].supported, "{checks:?}");
        assert_eq!(checks[0].cited, vec![1]);
        assert_eq!(checks[2].problem, "cites no passage");
        // A marker after the full stop belongs to the sentence before; p. 25 does not end a sentence.
        let checks = check_claims("- Revenue was $7.19 billion (p. 25). [1]\n- Margin was 64.6% [2]", &sources);
        assert!(checks[0].supported, "{checks:?}");
        assert_eq!(checks[1].problem, "cites a passage the answer was not given");
    }

    #[test]
    fn a_figure_from_another_quarters_document_is_unsupported() {
        let mut q2 = source(
            1,
            "Revenue for the second quarter of fiscal year 2024 was $13.51 billion, up 101% from a year ago.",
        );
        q2.passage.context = "NVIDIA CORPORATION · Form 10-Q · second quarter of fiscal 2024".into();
        let checks =
            check_claims("NVIDIA's revenue in the first quarter of fiscal 2024 was $13.51 billion [1].", &[q2.clone()]);
        assert_eq!(checks[0].problem, "the cited passages do not name the period it states: Q1 2024");
        let checks = check_claims("In Q2 FY2024 revenue was $13.51 billion [1].", &[q2]);
        assert!(checks[0].supported, "{checks:?}");
    }

    #[test]
    fn a_year_no_cited_passage_names_is_unsupported() {
        // What a model wrote for a question the library cannot answer: no figure to check, only a year.
        let mut call = source(1, "We expect to open the new plant as soon as permits allow; no date is set.");
        call.passage.path = "/x/Q3 call.txt".into();
        call.passage.context = "Globex · earnings call · third fiscal quarter".into();
        let checks = check_claims("Globex will open its new plant in 2027 [1].", &[call.clone()]);
        assert_eq!(checks[0].problem, "the cited passages do not name the year it states: 2027", "{checks:?}");
        // A year the passage, its context line or its file name names is supported.
        call.passage.text.push_str(" The plant was announced in 2023.");
        assert!(check_claims("Globex announced its new plant in 2023 [1].", &[call.clone()])[0].supported);
        call.passage.path = "/x/2024 Q3 call.txt".into();
        assert!(check_claims("Globex held its call for fiscal 2024 [1].", &[call])[0].supported);
    }

    #[test]
    fn declines_and_headings_are_not_claims() {
        let checks = check_claims("## Answer\nThe documents do not contain NVIDIA's revenue for that quarter.", &[]);
        assert!(checks.is_empty(), "{checks:?}");
        assert!(is_decline("The passages found don’t answer this; the documents do not mention Q1."));
        assert!(!is_decline("Revenue was $7.19 billion [1]."));
        let lead_in = check_claims("The changes are as follows:\n- Revenue was $7.19 billion [1].", &[]);
        assert_eq!(lead_in.len(), 1, "the list item is the one claim: {lead_in:?}");
    }

    #[test]
    fn a_chinese_answer_is_checked_sentence_by_sentence() {
        let sources = [source(
            1,
            "2022 年,公司实现了经营发展的 “四个新高” : 一是实现营业收入 3,549 亿元,同比增长达到 8.3% ,增速创近 9 年新高",
        )];
        // Two sentences with no space after their full stops; the second states a figure the passage lacks.
        let checks = check_claims("2022年中国联通营业收入为3,549亿元[1]。同比增长达到9.3%[1]。", &sources);
        assert_eq!(checks.len(), 2, "{checks:?}");
        assert!(checks[0].supported, "{checks:?}");
        assert!(!checks[1].supported && checks[1].problem.contains("9.3%"), "{checks:?}");
        // A sentence without figures is a claim by its length, counting two characters a word.
        assert_eq!(check_claims("公司坚持理性规范竞争，积极发挥宽带速率高的综合优势。", &sources).len(), 1);
        assert!(is_decline("文档中没有提到2023年的应收账款变动原因。"));
        assert!(check_claims("文档中没有提到2023年的应收账款变动原因。", &sources).is_empty());
    }

    #[test]
    fn an_uncited_sentence_copied_from_a_passage_cites_it_and_a_paraphrase_does_not() {
        // China Unicom's 2022 annual report summary (AY01.md of the shared library) and another passage.
        let sources = [
            source(
                1,
                "公司坚持理性规范竞争, 积极发挥宽带速率高、内容丰富、服务优的综合优势, 加快智慧家庭系列产品推广。",
            ),
            source(
                2,
                "一是联接规模和联接结构升维, 从过去的连接人为主拓展到连接人机物, 大力发展物联网和工业互联网; \
                 二是核心功能升维, 从以基础连接为主发展到大联接、大计算、大数据、大应用、大安全五大主责主业。",
            ),
        ];
        let answer = "实现了以下维度的转型升级：一是联接规模和联接结构升维，从过去的连接人为主拓展到连接人机物，\
                      大力发展物联网和工业互联网；二是核心功能升维，从以基础连接为主发展到大联接、大计算、大数据、大应用、大安全五大主责主业。";
        let (cited, repairs) = repair_citations(answer, &sources);
        assert_eq!(repairs.iter().map(|r| r.to).collect::<Vec<_>>(), [2, 2], "{cited}");
        assert!(cited.contains("工业互联网 [2]；") && cited.ends_with("主责主业 [2]。"), "{cited}");
        assert!(check_claims(&cited, &sources).iter().all(|c| c.supported), "{cited}");
        // Said in other words, a sentence is not the passage's: it stays uncited and the check says so.
        let paraphrase = "The company widened what it connects, from people to things, and now runs five main lines.";
        let (same, repairs) = repair_citations(paraphrase, &sources);
        assert!(repairs.is_empty() && same == paraphrase);
        assert!(!check_claims(&same, &sources)[0].supported);
    }

    #[test]
    fn sentences_after_a_lines_last_marker_cite_the_passage_they_copy_or_whose_figures_they_state() {
        // Amazon's legal-proceedings passage and its cash-flow sentence, as a 1.5B model wove them into one line.
        let sources = [
            source(1, "Claims, litigation, government investigations, and other proceedings may adversely affect our business and results of operations."),
            source(
                2,
                "Any of these types of proceedings can have an adverse effect on us because of legal costs, \
                 disruption to our operations, and diversion of management resources. Cash provided by \
                 operating activities was $54.3 billion.",
            ),
        ];
        let md = "Amazon faces several proceedings [1]. Any of these types of proceedings can have an adverse effect \
                  on us because of legal costs, disruption to our operations, and diversion of management resources. \
                  Operating cash flow was $54.3 billion. This may weigh on the company's future growth.";
        let before = check_claims(md, &sources);
        assert_eq!(before.iter().filter(|c| c.problem == "cites no passage").count(), 3, "{before:?}");
        let (fixed, repairs) = repair_citations(md, &sources);
        assert_eq!(repairs.iter().map(|r| r.to).collect::<Vec<_>>(), [2, 2], "{fixed}");
        assert!(
            fixed.contains("management resources [2]. Operating cash flow was $54.3 billion [2]. This may"),
            "{fixed}"
        );
        let after = check_claims(&fixed, &sources);
        // The model's own reading of it cites nothing still, and the check says so.
        assert_eq!(
            after.iter().filter(|c| !c.supported).map(|c| c.problem.as_str()).collect::<Vec<_>>(),
            ["cites no passage"]
        );
        // A line whose last marker ends it is left as it was.
        let cited = "Amazon faces several proceedings [1].";
        assert_eq!(repair_citations(cited, &sources), (cited.to_string(), vec![]));
    }

    #[test]
    fn uncited_sentences_are_cited_to_the_passage_stating_their_figures() {
        let sources = [
            Citation { number: 5, ..source(1, "Total net sales were $81,797 million for the quarter.") },
            Citation { number: 6, ..source(2, "Services net sales were $21,213 million.") },
        ];
        let (text, repairs) = cite_uncited_sentences(
            "Total net sales were $81,797 million, down 1%. Services rose to $21,213 million! Sales fell 3% \
             against the U.S. dollar. Fine.",
            &sources,
        );
        assert_eq!(
            text,
            "Total net sales were $81,797 million, down 1% [5]. Services rose to $21,213 million [6]! Sales fell 3% \
             against the U.S. dollar. Fine."
        );
        assert_eq!(repairs.iter().map(|r| r.to).collect::<Vec<_>>(), [5, 6]);
        assert_eq!(repairs[0].from, Vec::<usize>::new());
    }

    #[test]
    fn names_are_runs_of_capitalised_words_and_quoted_chinese_text() {
        assert_eq!(names("NVIDIA's revenue in the first quarter of fiscal 2024 was $7.19 billion."), ["NVIDIA"]);
        assert_eq!(
            names("In April 2023, revenue from Data Center rose; Gaming fell at Microsoft and Apple."),
            ["Data Center", "Microsoft", "Apple"]
        );
        // A sentence's first word, a lead-in's, periods, forms and the pronoun are not names.
        assert_eq!(names("Revenue was $7,192 million in Q1 FY2024 (Form 10-Q), as I read it."), Vec::<String>::new());
        assert_eq!(names("Total: Operating income rose."), Vec::<String>::new());
        // Capitals and possessives count at a sentence's start too.
        assert_eq!(names("AWS sales rose. Apple's margin fell."), ["AWS", "Apple"]);
        assert_eq!(
            names("… This AI may be developed by Microsoft. - Total Revenue rose."),
            ["AI", "Microsoft", "Revenue"]
        );
        assert_eq!(names("视频中的“托举哥”救下了孩子，见《中国联通年报》。"), ["托举哥", "中国联通年报"]);
    }

    #[test]
    fn a_claim_naming_what_its_passages_do_not_is_unsupported() {
        let nvidia = |number: usize, text: &str| {
            let mut c = source(number, text);
            c.passage.context = "NVIDIA CORPORATION · Form 10-Q · first quarter of fiscal 2024 · 2023 Q1 NVDA".into();
            c
        };
        let sources = [nvidia(1, "Revenue for the first quarter of fiscal year 2024 was $7.19 billion, down 13%.")];
        // The issuer from the context line, the figure from the text: supported.
        let right =
            check_claims("NVIDIA's revenue in the first quarter of fiscal 2024 was $7.19 billion [1].", &sources);
        assert!(right[0].supported, "{right:?}");
        // The same figure said of another company, and a segment the passage does not name: marked.
        let wrong = check_claims(
            "Intel's revenue in the first quarter of fiscal 2024 was $7.19 billion [1]. \
             Revenue from the Gaming segment fell 13% [1].",
            &sources,
        );
        assert_eq!(
            wrong.iter().map(|c| c.problem.as_str()).collect::<Vec<_>>(),
            ["the cited passages do not name: Intel", "the cited passages do not name: Gaming"]
        );
        // A name in the file name counts (the model reads it in the passage's header), case ignored.
        let file = check_claims(
            "The Nvda filing states revenue of $7.19 billion [1].",
            &[source(1, "Revenue was $7.19 billion.")],
        );
        assert!(file[0].supported, "{file:?}");
        // A Chinese name in quotation marks must be in a cited passage as written.
        let chinese = [source(1, "中国联通2023年营业收入为3726亿元。")];
        assert!(check_claims("“中国联通”的营业收入为3726亿元[1]。", &chinese)[0].supported);
        assert_eq!(
            check_claims("“托举哥”所在公司的营业收入为3726亿元[1]。", &chinese)[0].problem,
            "the cited passages do not name: 托举哥"
        );
    }
}
