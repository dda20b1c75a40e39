//! The filing's own words under the model's: the sentence or table row of the passages read that answers
//! the question, quoted and cited when the model's answer leaves its figures out.
//!
//! A 1.5B model shown Apple's "Total operating expenses: $14,316 million (three months ended December 31,
//! 2022); …" row often writes the sentences around it, or the row's labels, instead of its figures:
//! over the 98 questions of sec-10-q, Qwen2.5-Coder-1.5B stated 137 of 351 reference figures while the
//! passages it was shown held 186 of them (docs/evaluation/decisions.md, 2026-12-02 (a)). Quoting, after the model's
//! words, the piece of those passages that shares most of the words the question asks for and states a
//! figure — marked as a quote, cited to its passage — puts the figure in front of the person without
//! asking the model again, and the claim check finds it in the passage it cites: 150 of the 351 stated
//! (key facts 0.453 → 0.498), no figure lost (docs/evaluation/decisions.md, 2026-12-02 (b)). Since 2026-12-02 (d) the
//! pieces come from the passages the answer was written from whole ([`super::Financial`]'s `quotable_text`), not only from
//! the excerpts its prompt showed, and up to two are quoted (the second side the model left out: the
//! statutory rate beside the effective one, the nine months beside the quarter). Nothing is quoted when
//! the model's answer already states half or more of a piece's figures (a row the model copied is not
//! written twice), when the answer declines (an abstention stays one), or when no piece shares at least
//! [`MIN_SHARED_WORDS`] of the words that say what the question asks for.
//!
//! Since 2026-12-02 (f) a table row whose label names only what the question asks for ("Inventories" for an
//! "inventory levels … supply chain efficiency" question) is quotable with that one word, and under a
//! NaiveRAG answer such rows are also looked for in the rest of the filing the question names, beyond the
//! search's candidates (`rows_only`: the balance-sheet line no search for the question's wording ranks);
//! a row whose label and amounts repeat one ranked above it is passed over. Over the 63 single-document sec-10-q
//! questions, replayed on recorded answers, 70 → 77 of 164 reference figures (docs/evaluation/decisions.md,
//! 2026-12-02 (f)).
//!
//! A quote is shown as its whole sentence when a PDF's text layer wrapped it over several lines: the
//! lines are chosen among as they are, then joined ([`whole_sentence`]; docs/evaluation/decisions.md, 2026-12-02 (g)).
//!
//! The question's words and the passages' are matched in one vocabulary of line items ([`crate::genre::financial::line_item::SAME_LINE_ITEM`]):
//! "net sales" is revenue, "cost of sales" is cost of revenue, whichever a filer prints (docs/evaluation/decisions.md,
//! 2026-12-03 (a)).
//!
//! Questions written mostly in CJK characters get no quote: the rule was measured on English filings only.

use crate::figures::{figures, key_figures, states, FigureKind};
use crate::genre::financial::line_item::{one_vocabulary, whole_words};
use crate::genre::KeyQuote;
use crate::text::{amounts, row_label, states_amount};
use crate::text::{sentence_pieces, stems};
use std::collections::HashSet;

/// Fewest of the question's asked-for words ([`asked_words`]) a piece shares with it to be quoted. With
/// one, "revenue" alone picked whichever revenue sentence ranked first for the quick start's question;
/// two keep rows like "Total operating expenses" for "operating expenses" (docs/evaluation/decisions.md, 2026-12-02 (b)).
pub const MIN_SHARED_WORDS: usize = 2;

/// Most characters of a quote; a longer piece is cut after its last `; ` (a table row's column) before
/// the limit, or at the limit, and ends with ` …`.
pub const QUOTE_CHARS: usize = 400;

/// The pieces of `texts` to quote under `answer` to `question`: of the `most` pieces that share the
/// most asked-for words with it, those whose figures the answer leaves out, best first. `texts` are
/// the passages the answer was written from ([`super::Financial`]'s `quotable_text`), each with the number the answer cites
/// it by, best-ranked first. A piece is a sentence or table row ([`crate::text::sentence_pieces`]) that states
/// an amount, a percentage or a number ([`crate::figures`]; a date alone does not count) and shares at
/// least [`MIN_SHARED_WORDS`] of the words that say what the question asks for (not its subject, period
/// or question words: [`asked_words`]), or — when `answer` has not found its row ([`found_its_row`]: no
/// amount or number of its own in a sentence about what was asked, percentages aside) — is a table row whose label names only what is asked for ([`label_is_asked_for`]); of `rows_only` (the
/// rest of a document, numbered as `texts` are, after them) only such a row, and only one known to
/// measure a line item the question names when it names one ([`measures_asked_item`]); more shared words rank first, then the better-ranked passage, then
/// the earlier piece (under an answer stating percentages alone, a piece of percentages alone ranks after
/// every other); a piece whose text repeats one ranked above it, or a row whose label and amounts
/// do, is passed over, and a row whose label and amounts repeat one ranked above with more columns
/// takes its place. `follows` pairs (n, m) say that passage n is the chunk right after passage m in
/// their document: a total opening passage n may be quoted with its first rows from the end of m
/// ([`with_parts`]). Of those `most`
/// pieces, one is quoted when `answer` states fewer than half of the amounts, percentages and numbers
/// of its quote as shown (a total with its parts, [`with_parts`]; a wrapped sentence whole).
/// Empty when `answer` declines ([`crate::text::is_decline`]) or `question` is mostly CJK text.
///
/// A question naming a statement ("cash flows", [`crate::genre::financial::line_item::statement_items`])
/// asks for that statement's totals: a row measuring one of them is quotable for its label alone, from
/// `rows_only` too whatever `answer` states, those items count as asked for, and `most` grows by one
/// for each total past the first (docs/evaluation/decisions.md, 2026-12-07 (h)).
///
/// A total row chosen that its own passage prints alone (a summary table's) and `answer` left out is
/// quoted instead where `texts` or `rows_only` print the same total with its parts
/// ([`printed_with_parts`]), whatever else `answer` states: the income statement's rows under it
/// (docs/evaluation/decisions.md, 2026-12-08 (c)).
pub fn key_quotes(
    question: &str,
    answer: &str,
    texts: &[(usize, &str)],
    rows_only: &[(usize, &str)],
    follows: &[(usize, usize)],
    most: usize,
) -> Vec<KeyQuote> {
    if most == 0 || quarry_core::is_mostly_cjk(question) || crate::text::is_decline(answer) {
        return Vec::new();
    }
    let wanted = asked_words(question);
    let asked = asked_whole_words(question, &wanted);
    let modifiers = asked_modifiers(question, &asked);
    let mut asked_items = crate::genre::financial::line_item::line_items(question);
    // A question on a statement ("cash flows") asks for its totals' rows: each is quotable for its label
    // alone, from the rest of the document too, and the quote may show one more piece for each.
    let statement = crate::genre::financial::line_item::statement_items(question);
    for item in &statement {
        if !asked_items.contains(item) {
            asked_items.push(*item);
        }
    }
    let most = if statement.is_empty() { most } else { most + statement.len() - 1 };
    // A statement's row: its label names one of the statement's items and nothing else ("Net change in
    // cash and cash equivalents" is no balance of cash).
    let statement_row = |piece: &str| {
        !statement.is_empty()
            && row_label(piece).is_some_and(|label| {
                crate::genre::financial::line_item::items_named_only(own_label(label))
                    .iter()
                    .any(|item| statement.contains(item))
            })
    };
    let mut ranked: Vec<(usize, usize, &str)> = Vec::new();
    // A row is quoted for its label alone — and the rest of a document looked through — only under an
    // answer that states no amount of its own (a percentage alone is a change or a ratio of the row, not
    // the row): one that does has found its row, and a like-labelled row
    // elsewhere in the filing (the percentage-of-revenue table's "Revenue: 100.0%" under the quick
    // start's "$7,192 million") adds nothing. A statement's totals are the exception (above): they are
    // looked for under any answer.
    let answered_with_amount = found_its_row(question, answer);
    // The whole rest, where a total quoted alone may be printed with its parts; of it, rows are quoted
    // for their label only under an answer that has not found its row, or for a statement's totals.
    let rest = rows_only;
    let rows_only = if rows_from_rest_of_document(question, answer) { rows_only } else { &[] };
    let all = texts.iter().map(|t| (t, false)).chain(rows_only.iter().map(|t| (t, true)));
    for (&(number, text), only_rows) in all {
        let sections = crate::genre::financial::table_section::sections_of_rows(text);
        for piece in sentence_pieces(text) {
            let piece = bare(piece);
            if !states_amount(piece) || measures_another_item(text, piece, &sections, &asked_items) {
                continue;
            }
            let words = one_vocabulary(piece);
            let shared = stems(&words).intersection(&wanted).count();
            let named_by_label =
                (!answered_with_amount && label_is_asked_for(&words, &asked, &modifiers)) || statement_row(piece);
            let quotable = if only_rows {
                named_by_label && (statement_row(piece) || measures_asked_item(text, piece, &sections, &asked_items))
            } else {
                shared >= MIN_SHARED_WORDS || named_by_label
            };
            if quotable && !ranked.iter().any(|(_, _, p)| *p == piece) {
                ranked.push((shared, number, piece));
            }
        }
    }
    // Stable: equal counts keep the passages' rank and the pieces' order. Under an answer of
    // percentages alone, a piece of percentages alone ranks after the others: it says what the model
    // said (a change, a ratio), and the row those are of is what is missing.
    let of_percentages_only = |text: &str| states_amount(text) && !states_own_amount(text);
    let answered_in_percentages = of_percentages_only(answer);
    ranked.sort_by_key(|piece| (answered_in_percentages && of_percentages_only(piece.2), std::cmp::Reverse(piece.0)));
    // A row whose label and amounts a row ranked above it has already (the same row read with and
    // without its change column, or with and without the section a table names it under: "Operating
    // expenses: Total operating expenses") is passed over.
    // And a row that repeats one ranked above with more columns (its change column) takes that row's
    // place, so the row is quoted once, whole.
    // A total row that repeats one ranked above but is printed with the rows it adds up, where the one
    // above is not (the income statement's "Total operating expenses" under its research and selling
    // rows, against the same total in a summary table of the discussion), takes that row's place: the
    // quote then shows the breakdown ([`with_parts`]).
    let text_of = |number: usize| texts.iter().chain(rest).find(|(n, _)| *n == number).map(|(_, t)| *t);
    // Where a split table's first rows may be: the passage right before a piece's own in its document,
    // when it is quotable.
    let before = |number: usize| -> Option<(usize, &str)> {
        let (_, previous) = follows.iter().find(|(next, _)| *next == number)?;
        Some((*previous, text_of(*previous)?))
    };
    let shows_parts =
        |piece: &(usize, usize, &str)| text_of(piece.1).and_then(|t| with_parts(t, piece.2, before(piece.1))).is_some();
    let mut distinct: Vec<(usize, usize, &str)> = Vec::new();
    for piece in ranked {
        let own = amounts(piece.2);
        // The same row: one label ([`one_label`]).
        let label = row_label(piece.2).map(own_label);
        let items = label.map(crate::genre::financial::line_item::line_items).unwrap_or_default();
        let same_label = |above: &(usize, usize, &str)| {
            label.is_some_and(|label| {
                row_label(above.2).map(own_label).is_some_and(|other| one_label(label, &items, other))
            })
        };
        let repeats =
            |above: &(usize, usize, &str)| same_label(above) && own.iter().all(|f| states(&amounts(above.2), f));
        if let Some(at) = distinct.iter().position(repeats) {
            if shows_parts(&piece) && !shows_parts(&distinct[at]) {
                distinct[at] = (distinct[at].0, piece.1, piece.2);
            }
            continue;
        }
        let widens =
            distinct.iter().position(|above| same_label(above) && amounts(above.2).iter().all(|f| states(&own, f)));
        // A segment's row that says nothing of what it measures (neither its label nor the section it is
        // labelled under names a line item) with the label of a row above and another value in a column
        // both print is another measure of that segment — its operating loss under its revenue, the
        // table's heading left in another passage — and is passed over (docs/evaluation/decisions.md,
        // 2026-12-07 (o)).
        let measure_unknown = row_label(piece.2).is_some_and(|full| {
            let (section, own) = full.rsplit_once(": ").unwrap_or(("", full));
            crate::genre::financial::line_item::measured_items(section, own).0.is_empty()
        });
        let another_measure = |above: &(usize, usize, &str)| {
            measure_unknown && same_label(above) && differs_in_a_shared_column(above.2, piece.2)
        };
        if widens.is_none() && distinct.iter().any(another_measure) {
            continue;
        }
        match widens {
            Some(at) => distinct[at] = piece,
            None => distinct.push(piece),
        }
    }
    let stated = figures(answer);
    // Whether the answer states fewer than half of `shown`'s figures (dates aside): it left them out.
    let left_out = |shown: &str| {
        let shown: Vec<_> =
            key_figures(shown).into_iter().filter(|f| !matches!(f.kind, FigureKind::Date { .. })).collect();
        let kept = shown.iter().filter(|f| states(&stated, f)).count();
        kept * 2 < shown.len()
    };
    covering_asked_items(distinct, &asked_items, most)
        .into_iter()
        .map(|(_, number, piece)| {
            // A total quoted alone (a summary table's) that the answer left out is shown where the filing
            // prints it with its parts; one the model copied is not widened from elsewhere.
            let alone = text_of(number).is_some_and(|text| with_parts(text, piece, before(number)).is_none());
            match alone && left_out(piece) {
                true => printed_with_parts(piece, texts.iter().chain(rest), &before).unwrap_or((number, piece)),
                false => (number, piece),
            }
        })
        .map(|(number, piece)| {
            // Shown whole: the sentence a wrapped line of prose belongs to ([`whole_sentence`]), a
            // total row with the rows it adds up ([`with_parts`]).
            let text = text_of(number);
            let piece = text.map_or(piece, |text| whole_sentence(text, piece));
            let (shown, parts_from) = text
                .and_then(|text| with_parts(text, piece, before(number)))
                .unwrap_or_else(|| (cut(&piece.replace('\n', " "), QUOTE_CHARS), None));
            (number, shown, parts_from)
        })
        // The answer left the quote's figures out when it states fewer than half of them: a row the model
        // copied (and its answer cut short) is not written twice, while a total it copied is still quoted
        // with the parts its passage prints and it left out.
        .filter(|(_, shown, _)| left_out(shown))
        .fold(Vec::new(), |mut quotes: Vec<KeyQuote>, (number, text, parts_from)| {
            // Two lines of one sentence, quoted once; a row quoted among a total's parts, once.
            let cites = |q: &KeyQuote, n: usize| q.number == n || q.parts_from == Some(n);
            let same = |q: &KeyQuote| cites(q, number) || parts_from.is_some_and(|from| cites(q, from));
            if let Some(at) = quotes.iter().position(|q| same(q) && text.contains(q.text.as_str())) {
                quotes[at] = KeyQuote { number, text, parts_from };
            } else if !quotes.iter().any(|q| same(q) && q.text.contains(text.as_str())) {
                quotes.push(KeyQuote { number, text, parts_from });
            }
            quotes
        })
}

/// Whether the quote under `answer` to `question` may come from the rest of the answered document
/// (`key_quotes`' `rows_only`): under an answer that has not found its row ([`found_its_row`]: it states
/// no amount or number of its own about what was asked, percentages aside), or for a question naming a statement
/// ([`crate::genre::financial::line_item::statement_items`]), whose totals' rows sit in the statement,
/// which a search for the question's words seldom ranks ([`rows_from_rest_of_document`]); and for a
/// question naming a line item, where a total quoted alone may be printed with its parts
/// ([`printed_with_parts`]). [`super::Financial`] reads the rest when this holds.
pub fn quotes_from_rest_of_document(question: &str, answer: &str) -> bool {
    rows_from_rest_of_document(question, answer) || !crate::genre::financial::line_item::line_items(question).is_empty()
}

/// Whether a row of the rest of the document may be quoted for its label ([`key_quotes`]' `rows_only`):
/// under an answer that has not found its row ([`found_its_row`]), or for a question naming a statement.
/// Under any other answer to a question naming a line item the rest is read only for a total quoted
/// alone, to show it where the filing prints it with its parts ([`printed_with_parts`]).
fn rows_from_rest_of_document(question: &str, answer: &str) -> bool {
    !found_its_row(question, answer) || !crate::genre::financial::line_item::statement_items(question).is_empty()
}

/// Whether `answer` has found the row `question` asks for: one of its sentences states an amount or a
/// number of its own ([`states_own_amount`]) and shares a word the question asks for ([`asked_words`];
/// any sentence stating an amount when the question asks for no word). Percentages alone do not count —
/// "Operating expenses decreased 28% from YTD 2022, with an operating margin of 18%" states a change and
/// a ratio, not the row they are of, so the row is still looked for (docs/evaluation/decisions.md,
/// 2026-12-07 (o)) — nor do amounts about something else: "Our Q3 2023 revenue was $14.2 billion" under
/// "How have inventory levels at Intel changed …?" (2026-12-08 (e)).
pub fn found_its_row(question: &str, answer: &str) -> bool {
    let wanted = asked_words(question);
    sentence_pieces(answer).into_iter().any(|sentence| {
        states_own_amount(sentence)
            && (wanted.is_empty() || stems(&one_vocabulary(sentence)).intersection(&wanted).next().is_some())
    })
}

/// Whether `text` states an amount or a number, percentages and dates aside ([`crate::text::amounts`]).
fn states_own_amount(text: &str) -> bool {
    amounts(text).iter().any(|f| !matches!(f.kind, FigureKind::Percent))
}

/// A row label without the table section [`crate::genre::financial::table_section`] names it under: "Operating expenses:
/// Total operating expenses" → "Total operating expenses".
fn own_label(label: &str) -> &str {
    label.rsplit(": ").next().unwrap_or(label).trim_start()
}

/// The same total as the table row `total`, printed with the rows it adds up ([`with_parts`]) in one of
/// `texts` (numbered passages, best first; `before` gives the passage right before one, as in
/// [`key_quotes`]): a row whose label is the total's, up to qualifiers ([`unqualified`]: "Total operating
/// expenses" and a summary table's "Operating expenses"), or names the same line items ([`one_label`]), and whose first
/// cell is the total's, value and column. NVIDIA's discussion prints "Operating expenses: $2,983 million
/// (three months ended October 29, 2023); …" alone, its income statement the same total under its research,
/// selling and acquisition-cost rows. `None` when no passage prints it so.
fn printed_with_parts<'t>(
    total: &str,
    texts: impl Iterator<Item = &'t (usize, &'t str)>,
    before: &dyn Fn(usize) -> Option<(usize, &'t str)>,
) -> Option<(usize, &'t str)> {
    let label = own_label(row_label(total)?);
    let items = crate::genre::financial::line_item::line_items(label);
    let first = |row: &str| cells(row).first().map(|(value, column)| (printed_value(value), column.to_string()));
    let wanted = first(total)?;
    for &(number, text) in texts {
        for piece in sentence_pieces(text) {
            let piece = bare(piece);
            let Some(other) = row_label(piece).map(own_label) else { continue };
            if one_label(label, &items, other)
                && first(piece).as_ref() == Some(&wanted)
                && with_parts(text, piece, before(number)).is_some()
            {
                return Some((number, piece));
            }
        }
    }
    None
}

/// The first `most` of `ranked` (best first), except that when the question names two or more line items
/// (`asked_items`, [`crate::genre::financial::line_item::line_items`]: "How did Apple's operating expenses … compare to its
/// revenue …?") each piece after the first is the best-ranked one that measures an asked item no piece
/// before it measures, while one does: a question on two line items is answered by a row of each, and
/// the second-best piece for the first item (the same total in another table) added nothing. A piece
/// measures what its row label names, or what a sentence names ([`crate::genre::financial::line_item::line_items`]).
fn covering_asked_items<'a>(
    mut ranked: Vec<(usize, usize, &'a str)>,
    asked_items: &[usize],
    most: usize,
) -> Vec<(usize, usize, &'a str)> {
    if asked_items.len() < 2 {
        ranked.truncate(most);
        return ranked;
    }
    let measures = |piece: &str| -> Vec<usize> {
        crate::genre::financial::line_item::line_items(row_label(piece).unwrap_or(piece))
            .into_iter()
            .filter(|item| asked_items.contains(item))
            .collect()
    };
    let mut covered: Vec<usize> = Vec::new();
    let mut chosen = Vec::new();
    while chosen.len() < most && !ranked.is_empty() {
        let at = if chosen.is_empty() {
            0
        } else {
            ranked.iter().position(|p| measures(p.2).iter().any(|item| !covered.contains(item))).unwrap_or(0)
        };
        let piece = ranked.remove(at);
        covered.extend(measures(piece.2));
        chosen.push(piece);
    }
    chosen
}

/// The sentence of `text` that `piece` (a slice of it) is part of, when a PDF's text layer wrapped that
/// sentence over several lines: the lines joined ([`quote_pieces`]); `piece` itself otherwise. A quote
/// is chosen among the lines as they are (joined, longer pieces share more of the question's words by
/// their length alone, and off-topic sentences were quoted: docs/evaluation/decisions.md, 2026-12-02 (g)), then shown
/// whole, so it does not stop at "… which" and start again at "replaced the previous …".
fn whole_sentence<'a>(text: &'a str, piece: &'a str) -> &'a str {
    let Some(start) = offset_in(text, piece) else { return piece };
    let end = start + piece.len();
    quote_pieces(text)
        .into_iter()
        .find(|joined| offset_in(text, joined).is_some_and(|at| at <= start && end <= at + joined.len()))
        .map(bare)
        .unwrap_or(piece)
}

/// Most characters of a total row quoted with its parts ([`with_parts`]); a longer one is quoted alone.
/// 1,000: an income statement printing three and nine months (four columns a row) shows NVIDIA's
/// research, selling and acquisition-cost rows above their total in about 880; 600 left that total
/// alone (docs/evaluation/decisions.md, 2026-12-07 (g)).
pub const TOTAL_WITH_PARTS_CHARS: usize = 1000;

/// What [`with_parts`] writes between two rows of one quote.
const ROW_SEPARATOR: &str = " · ";

/// A total row quoted with the rows it adds up: when `piece` is a table row of `text` that is a total
/// ("Total inventories: $12,831 million (Oct 1, 2022); …"), the fewest rows right above it (two or
/// more, two of them not zero; blank lines and rows whose first column is a percentage skipped — Apple
/// prints "Percentage of total net sales" under each expense row (docs/evaluation/decisions.md,
/// 2026-12-07 (u)) — up to the first line that is not a row or a row of the total's own label) whose
/// first column adds up to the
/// total's first column (within the rounding of the printed figures: half the unit of each one's last
/// printed digit), then `piece`, joined by `" · "` — "Raw materials: $1,635 million (…) · Work in
/// process: … · Finished goods: … · Total inventories: …". A person asking about inventory levels,
/// operating expenses or revenue by segment reads the breakdown the filing prints beside the total; the
/// sum keeps rows that only stand above a total (another block of the statement) out of it. A row is a
/// total when its label says so ("Total …") or, unlabelled, when rows right above it add up to it, none
/// of them nor it zero: Intel prints its operating expenses as "Operating expenses: 5,476 million"
/// under research, marketing and restructuring rows that add up to it (docs/evaluation/decisions.md,
/// 2026-12-07 (l)).
///
/// A table the chunker split between two passages (Apple's expense rows ending one passage, its "Total
/// operating expenses" opening the next) is read across them: when the rows above `piece` reach the top
/// of `text` before they add up, the walk goes on up from the last line of `before` (the passage right
/// before `text`'s in its document, with its number, when it is quotable), and when its rows complete the
/// sum they are the rest of the parts (chunks overlap: a row read already, by its own label and cells, is
/// not read again, 2026-12-08 (c)); its number comes back with the quote, which cites it too (docs/evaluation/decisions.md,
/// 2026-12-07 (v)). Returns the quote and that number (`None` when the
/// parts are all in `text`); `None` when `piece` is no total row, no rows above it add up to it, or they
/// and it pass [`TOTAL_WITH_PARTS_CHARS`] (the total is then quoted alone: a breakdown cut short would
/// read as complete).
fn with_parts<'t>(text: &'t str, piece: &'t str, before: Option<(usize, &'t str)>) -> Option<(String, Option<usize>)> {
    let own = own_label(row_label(piece)?);
    let labelled = own.len() > 6 && own.get(..6).is_some_and(|start| start.eq_ignore_ascii_case("total "));
    let (total, unit) = first_column_value(piece)?;
    if !labelled && total == 0.0 {
        return None;
    }
    let start = offset_in(text, piece)?;
    let mut sum = PartsSum {
        label: unqualified(own),
        labelled,
        total,
        parts: Vec::new(),
        not_zero: 0,
        sum: 0.0,
        rounding: 0.5 * unit,
    };
    let from = match sum.read_up(&text[..start]) {
        Some(true) => None,
        Some(false) => return None,
        // The rows above reach the top of the passage: the table may have begun in the passage before
        // it, if that one's last rows complete the sum.
        None => {
            let (number, previous) = before?;
            if sum.read_up(previous) != Some(true) {
                return None;
            }
            Some(number)
        }
    };
    let mut parts = sum.parts;
    parts.reverse();
    parts.push(piece.trim());
    let joined = parts.join(ROW_SEPARATOR);
    (joined.chars().count() <= TOTAL_WITH_PARTS_CHARS).then_some((joined, from))
}

/// The rows read so far above a total ([`with_parts`]), bottom up.
#[derive(Debug)]
struct PartsSum<'t> {
    /// The total's own label without its qualifiers ([`unqualified`]).
    label: Vec<String>,
    /// The total's label says "Total": a zero part ("—") counts.
    labelled: bool,
    /// The total's first column.
    total: f64,
    /// The rows read, bottom up.
    parts: Vec<&'t str>,
    /// How many of them are not zero.
    not_zero: usize,
    /// Their first columns' sum.
    sum: f64,
    /// How far the sum may be from the total: half the unit of each figure's last printed digit.
    rounding: f64,
}

impl<'t> PartsSum<'t> {
    /// Reads the lines of `text` bottom up (trimmed, blank ones skipped, a row whose first column is a
    /// percentage passed over): `Some(true)` when two or more rows add up to the total, two of them not
    /// zero; `Some(false)` at a line that is no row, a row of the total's own label (the same total
    /// printed in another table, not a part of it), a zero under an unlabelled total, or rows past
    /// [`TOTAL_WITH_PARTS_CHARS`]; `None` when `text`'s first line is read and the rows do not add up yet.
    fn read_up(&mut self, text: &'t str) -> Option<bool> {
        for line in text.lines().rev().map(str::trim).filter(|l| !l.is_empty()) {
            if first_column_is_percentage(line) {
                // A ratio row between the parts ("Percentage of total net sales: 8% …" under each of
                // Apple's expense rows) is no part: passed over, and left out of the quote.
                continue;
            }
            let Some((value, unit)) = first_column_value(line) else {
                return Some(false);
            };
            // Chunks overlap: the passage before may end with rows the next one opens with (NVIDIA's
            // "Acquisition termination cost: — …" twice, once under its section's name). A row read
            // already, by its own label and cells, is the same row again.
            let same_row = |part: &&str| {
                row_label(part).map(own_label) == row_label(line).map(own_label) && cells(part) == cells(line)
            };
            if self.parts.iter().any(same_row) {
                continue;
            }
            let same_total = row_label(line).is_some_and(|label| unqualified(own_label(label)) == self.label);
            if same_total || (!self.labelled && value == 0.0) {
                return Some(false);
            }
            self.parts.push(line);
            self.not_zero += usize::from(value != 0.0);
            self.sum += value;
            self.rounding += 0.5 * unit;
            if self.not_zero >= 2 && (self.sum - self.total).abs() <= self.rounding {
                return Some(true);
            }
            if self.parts.join(ROW_SEPARATOR).chars().count() > TOTAL_WITH_PARTS_CHARS {
                return Some(false);
            }
        }
        None
    }
}

/// The first column's figure of the table row `line` as a signed number in the table's printed units
/// ("$1,635 million" → 1635, "$(1,568) million" → −1568, "—" → 0), with the unit of its last printed
/// digit ("1,635" → 1, "12.8" → 0.1); `None` for a line that is no row or a first column that is a
/// percentage or no number.
fn first_column_value(line: &str) -> Option<(f64, f64)> {
    let value = first_cell(line)?;
    if value.contains('%') {
        return None;
    }
    let digits: String = value.chars().filter(|c| c.is_ascii_digit() || *c == '.').collect();
    if digits.is_empty() {
        return matches!(value.trim_start_matches('$').trim(), "—" | "–" | "-").then_some((0.0, 1.0));
    }
    let magnitude: f64 = digits.parse().ok()?;
    let decimals = digits.split_once('.').map_or(0, |(_, after)| after.len());
    let unit = 10f64.powi(-(decimals as i32));
    Some((if value.contains('(') { -magnitude } else { magnitude }, unit))
}

/// Whether `line` is a table row whose first column is a percentage ("Percentage of total net sales: 8%
/// (three months ended June 25, 2022); …").
fn first_column_is_percentage(line: &str) -> bool {
    first_cell(line).is_some_and(|value| value.ends_with('%'))
}

/// The first cell of the table row `line`, trimmed: what stands between its label and the first
/// column's name ("$1,635 million" of "Raw materials: $1,635 million (Oct 1, 2022); …"); `None` for a
/// line that is no row.
fn first_cell(line: &str) -> Option<&str> {
    let label = row_label(line)?;
    let rest = line[label.len()..].trim_start_matches(':').trim_start();
    Some(rest[..rest.find(" (")?].trim())
}

/// Whether table rows `a` and `b` ([`cells`]) print a column of the same name with different values
/// ("(three months ended Jul 1, 2023)": 4,004 million against (161) million).
fn differs_in_a_shared_column(a: &str, b: &str) -> bool {
    let b = cells(b);
    cells(a)
        .iter()
        .any(|(x, column)| b.iter().any(|(y, other)| column == other && printed_value(x) != printed_value(y)))
}

/// A cell's value without its currency sign and spaces, to compare cells of two tables: "$2,983 million"
/// and "2,983 million" are one value.
fn printed_value(value: &str) -> String {
    value.chars().filter(|c| !matches!(c, '$' | ' ')).collect()
}

/// Whether the row labels `label` (whose line items are `items`) and `other`, each without its table
/// section ([`own_label`]), name the same row: equal, naming the same line items (the statement's "Net
/// cash provided by (used in) financing activities" and the discussion's "Financing activities"), or
/// equal but for a qualifier ([`unqualified`]: "Total inventories" and "Inventories",
/// docs/evaluation/decisions.md, 2026-12-07 (s)).
fn one_label(label: &str, items: &[usize], other: &str) -> bool {
    other == label
        || (!items.is_empty() && crate::genre::financial::line_item::line_items(other) == items)
        || unqualified(other) == unqualified(label)
}

/// The cells of the table row `row` as (value, column) pairs: "Data Center and AI: (161) million (three
/// months ended Jul 1, 2023); …" → ("(161) million", "three months ended Jul 1, 2023"), …. Read after
/// [`row_label`], so a first value that is an accounting negative is read (which
/// [`quarry_core::table_row::parse_row`] does not); empty for a line that is no row.
fn cells(row: &str) -> Vec<(&str, &str)> {
    let Some(label) = row_label(row) else { return Vec::new() };
    let rest = row[label.len()..].trim_start_matches(':').trim_start();
    rest.split(quarry_core::table_row::CELL_SEPARATOR)
        .filter_map(|cell| {
            let open = cell.strip_suffix(')')?.rfind(" (")?;
            Some((&cell[..open], &cell[open + 2..cell.len() - 1]))
        })
        .collect()
}

/// `piece` without the white space and the `…` of a cut excerpt around it.
fn bare(piece: &str) -> &str {
    piece.trim().trim_start_matches('…').trim_end_matches('…').trim()
}

/// Where `part` starts in `text`, in bytes, when it is a slice of it; `None` otherwise.
fn offset_in(text: &str, part: &str) -> Option<usize> {
    let at = (part.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    (at + part.len() <= text.len()).then_some(at)
}

/// `text` in sentences and lines ([`sentence_pieces`]), with a line of prose that a PDF's text layer
/// wrapped mid-sentence joined to the line it runs on into ([`crate::text::wrapped_line_goes_on`]).
/// Each piece is a slice of `text`.
fn quote_pieces(text: &str) -> Vec<&str> {
    let pieces = sentence_pieces(text);
    let wraps = crate::text::wrapped_line_goes_on;
    // Every piece is a slice of `text`.
    let offset = |piece: &str| offset_in(text, piece).unwrap_or(0);
    let mut out = Vec::with_capacity(pieces.len());
    let mut i = 0;
    while i < pieces.len() {
        let mut j = i;
        while j + 1 < pieces.len() && wraps(pieces[j], pieces[j + 1]) {
            j += 1;
        }
        out.push(&text[offset(pieces[i])..offset(pieces[j]) + pieces[j].len()]);
        i = j + 1;
    }
    out
}

/// Words that say which period or how a question is put, not what it asks for (first five letters, as
/// [`crate::text::stems`] cuts them): the period is the document's, and a prose sentence naming "the
/// first quarter of fiscal 2024" outscored the revenue row that answered (the quick start's question);
/// "how much"/"how many" left "much" as an asked-for word no row label holds, so "How much revenue did
/// NVIDIA have …" got no quote.
const NOT_ASKED: &[&str] = &[
    "much", "many", "first", "secon", "third", "fourt", "quart", "fisca", "year", "years", "month", "three", "six",
    "nine", "twelv", "ended", "endin", "perio", "lates", "recen", "most", "janua", "febru", "march", "april", "may",
    "june", "july", "augus", "septe", "octob", "novem", "decem", "repor", "compa", "descr", "expla", "ident", "discu",
    "analy", "provi", "detai", "menti", "outli", "summa", "same", "prior", "previ", "last",
];

/// The words of `question` ([`crate::text::stems`]) that say what it asks for: less the name it is
/// about ([`crate::document_match::question_subject`]; every passage of that company's filings says it),
/// numbers, period and question words ([`NOT_ASKED`]), and stems of one or two letters
/// (the "s" of "Apple's", "if", "so").
fn asked_words(question: &str) -> HashSet<String> {
    let subject = crate::document_match::question_subject(question).map(|s| stems(&s)).unwrap_or_default();
    stems(&one_vocabulary(question))
        .into_iter()
        .filter(|w| {
            w.chars().count() > 2
                && !subject.contains(w)
                && !NOT_ASKED.contains(&w.as_str())
                && !w.chars().next().is_some_and(|c| c.is_ascii_digit())
        })
        .collect()
}

/// Words a row label may hold besides the asked-for ones and still be what the question asks for
/// ("Total inventories", "Net sales").
const LABEL_QUALIFIERS: &[&str] = &["total", "net"];

/// The words of a row label ([`whole_words`]) less [`LABEL_QUALIFIERS`]: "Total inventories" and
/// "Inventories" both read `["inventory"]`.
fn unqualified(label: &str) -> Vec<String> {
    whole_words(label).into_iter().filter(|w| !LABEL_QUALIFIERS.contains(&w.as_str())).collect()
}

/// Words of a balance sheet's sections ("Current assets", "Non-current liabilities"), as [`whole_words`]
/// writes them: they say where a row stands on the sheet, not what it measures. Apple's balance sheet
/// repeats "Marketable securities" under current and non-current assets, so each of its rows is read
/// with its section ([`crate::genre::financial::table_section`]): "Current assets: Inventories".
const BALANCE_SHEET_SECTIONS: &[&str] = &["current", "non", "noncurrent", "asset", "liability"];

/// The words of `question` ([`whole_words`]) whose stem is one of `wanted` (what it asks for,
/// [`asked_words`]).
fn asked_whole_words(question: &str, wanted: &HashSet<String>) -> HashSet<String> {
    whole_words(&one_vocabulary(question)).into_iter().filter(|w| stems(w).iter().any(|s| wanted.contains(s))).collect()
}

/// Whether `piece` is a table row whose label says only what the question asks for: every word of the
/// label ([`whole_words`], less [`LABEL_QUALIFIERS`]) is one of the question's `asked` words
/// ([`asked_whole_words`]), and it has one. Such a row is quotable with a single asked-for word:
/// "Inventories: 5,433 million (June 25, 2022); …" answers "How did Apple's inventory levels reflect on
/// its supply chain efficiency?", whose other asked-for words no row states — while "Segment operating
/// income" does not answer a question about operating expenses (its label says more than was asked),
/// and neither does a prose sentence that shares one word. A label naming its table section ("Current
/// assets: Inventories") counts its section's words as asked for when they only place the row on a
/// balance sheet ([`BALANCE_SHEET_SECTIONS`]); any other section says what the row measures ("Cost of
/// sales: Products" is no answer to a question on product sales).
fn label_is_asked_for(
    piece: &str,
    asked: &HashSet<String>,
    modifiers: &std::collections::HashMap<String, Vec<String>>,
) -> bool {
    row_label(piece).is_some_and(|label| {
        let words_of = |text: &str| -> Vec<String> {
            whole_words(text).into_iter().filter(|w| !LABEL_QUALIFIERS.contains(&w.as_str())).collect()
        };
        let (section, own) = label.rsplit_once(": ").unwrap_or(("", label));
        let section = words_of(section);
        let own = words_of(own);
        let places_the_row = |w: &String| asked.contains(w) || BALANCE_SHEET_SECTIONS.contains(&w.as_str());
        // "potential liabilities" asks for less than "Total liabilities" states: a word the question
        // qualifies is matched only by a label that says the qualifier too.
        let qualified_alike =
            |w: &String| modifiers.get(w).is_none_or(|ms| ms.iter().all(|m| own.contains(m) || section.contains(m)));
        !own.is_empty()
            && own.iter().all(|w| asked.contains(w) && qualified_alike(w))
            && section.iter().all(places_the_row)
    })
}

/// Whether `piece`, a table row of `text`, measures line items none of which the question asks for
/// (`asked_items`, [`crate::genre::financial::line_item::line_items`]): those its label names, or — a
/// label naming none ("AWS", "Services", "More Personal Computing": a segment's name) — those of the
/// section it sits under. Amazon's "AWS: 4,883 million (…)" under "Operating income (loss)" is no answer
/// on AWS revenue, nor Apple's "Services: 14,842 million" under "Gross margin:" on Services revenue
/// (docs/evaluation/decisions.md, 2026-12-03 (c)), nor Microsoft's "Operating Income: More Personal
/// Computing: 3,320 million …" on its operating expenses (2026-12-07 (r)) — the claim check's rule for a
/// figure read from another line item's row ([`crate::claims`]; one rule,
/// [`crate::genre::financial::line_item::measured_items`]), applied before quoting.
/// False when the question names no line item, or neither the label nor the section names one.
fn measures_another_item(text: &str, piece: &str, sections: &[(usize, usize, String)], asked_items: &[usize]) -> bool {
    if asked_items.is_empty() {
        return false;
    }
    row_items(text, piece, sections)
        .is_some_and(|items| !items.is_empty() && !items.iter().any(|i| asked_items.contains(i)))
}

/// Whether `piece`, a table row of `text`, is known to measure one of the question's `asked_items`
/// ([`crate::genre::financial::line_item::measured_items`]: by its label, else by the section it sits
/// under); true when the question names no line item. A row of the rest of a filing is quoted for its
/// label alone only when it is: a segment's row whose section heading fell in another passage ("Data
/// Center and AI: (161) million …", Intel's segment operating loss) is no answer on that segment's
/// revenue (docs/evaluation/decisions.md, 2026-12-07 (o)).
fn measures_asked_item(text: &str, piece: &str, sections: &[(usize, usize, String)], asked_items: &[usize]) -> bool {
    asked_items.is_empty()
        || row_items(text, piece, sections).is_some_and(|items| items.iter().any(|i| asked_items.contains(i)))
}

/// The line items `piece`, a table row of `text`, measures ([`crate::genre::financial::line_item::measured_items`]:
/// its label's, else those of the section of `sections` it sits under); `None` when `piece` is no row.
/// One reading for [`measures_another_item`] and [`measures_asked_item`].
fn row_items(text: &str, piece: &str, sections: &[(usize, usize, String)]) -> Option<Vec<usize>> {
    let label = row_label(piece)?;
    let section = offset_in(text, piece)
        .and_then(|at| sections.iter().find(|(start, end, _)| *start <= at && at < *end))
        .map_or("", |(_, _, s)| s.as_str());
    Some(crate::genre::financial::line_item::measured_items(section, label).0)
}

/// For each of the question's `asked` words, the asked words written right before it (no stop word
/// between), less [`LABEL_QUALIFIERS`]: the qualifiers that narrow what it names — "potential" and
/// "legal" in "legal issues or potential liabilities", none in "Apple's inventory levels" (the subject
/// is not asked for) or "invested in research and development" ("in" stands between).
fn asked_modifiers(question: &str, asked: &HashSet<String>) -> std::collections::HashMap<String, Vec<String>> {
    let tokens: Vec<Option<String>> = one_vocabulary(question)
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(|t| whole_words(t).into_iter().next())
        .collect();
    let mut out: std::collections::HashMap<String, Vec<String>> = std::collections::HashMap::new();
    for pair in tokens.windows(2) {
        if let [Some(before), Some(word)] = pair {
            if asked.contains(word) && asked.contains(before) && !LABEL_QUALIFIERS.contains(&before.as_str()) {
                out.entry(word.clone()).or_default().push(before.clone());
            }
        }
    }
    out
}

/// `piece` cut to at most `max_chars` characters (plus ` …`): after its last `; ` before the limit when
/// there is one, else at the limit.
fn cut(piece: &str, max_chars: usize) -> String {
    if piece.chars().count() <= max_chars {
        return piece.to_string();
    }
    let end = piece.char_indices().nth(max_chars).map(|(i, _)| i).unwrap_or(piece.len());
    let head = &piece[..end];
    let head = match head.rfind("; ") {
        Some(i) if i > 0 => &head[..i],
        _ => head,
    };
    format!("{} …", head.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`key_quotes`] of passages none of which goes on from another.
    fn quotes_of(
        question: &str,
        answer: &str,
        texts: &[(usize, &str)],
        rows_only: &[(usize, &str)],
        most: usize,
    ) -> Vec<KeyQuote> {
        key_quotes(question, answer, texts, rows_only, &[], most)
    }

    /// [`with_parts`] within `text` alone: the quote.
    fn parts(text: &str, piece: &str) -> Option<String> {
        with_parts(text, piece, None).map(|(quote, _)| quote)
    }
    use crate::genre::render_quotes;

    const ROWS: &str = "Research and development: $7,709 million (three months ended December 31, 2022); \
                        $6,306 million (three months ended December 25, 2021)\n\
                        Total operating expenses: $14,316 million (three months ended December 31, 2022); \
                        $12,755 million (three months ended December 25, 2021)\n\
                        The Company’s operating expenses grew due to headcount.";

    /// The one piece [`key_quotes`] quotes, if any.
    fn key_quote(question: &str, answer: &str, texts: &[(usize, &str)]) -> Option<KeyQuote> {
        quotes_of(question, answer, texts, &[], 1).into_iter().next()
    }

    #[test]
    fn the_row_the_question_names_is_quoted_when_the_answer_leaves_its_figures_out() {
        let question = "What were Apple's total operating expenses in the first quarter of 2023?";
        let answer = "Apple's operating expenses grew because of higher headcount [2].";
        let quote = key_quote(question, answer, &[(1, "Apple sells iPhones."), (2, ROWS)]).expect("a quote");
        assert_eq!(quote.number, 2);
        assert!(quote.text.starts_with("Total operating expenses: $14,316 million"), "{}", quote.text);
        assert_eq!(
            render_quotes(std::slice::from_ref(&quote), false),
            format!("From the passages: “{}” [2]", quote.text),
            "marked as a quote and cited to its passage"
        );
    }

    #[test]
    fn nothing_is_quoted_when_the_answer_states_the_figures_declines_or_no_row_fits() {
        let question = "What were Apple's total operating expenses in the first quarter of 2023?";
        let stated = "Total operating expenses were $14.3 billion and $12.8 billion a year earlier [2].";
        assert_eq!(key_quote(question, stated, &[(2, ROWS)]), None, "every figure already stated (rounded)");
        let copied = "Total operating expenses: $14,316 million (three months ended December 31, 2022) [2]";
        assert_eq!(key_quote(question, copied, &[(2, ROWS)]), None, "half the row copied: not written twice");
        let declined = "The passages do not contain Apple's operating expenses.";
        assert_eq!(key_quote(question, declined, &[(2, ROWS)]), None, "an abstention stays one");
        let other = "What did NVIDIA say about export controls?";
        assert_eq!(key_quote(other, "NVIDIA said little [1].", &[(1, ROWS)]), None, "no piece shares two words");
        let dates_only = "Total operating expenses are reported as of December 31, 2022.";
        assert_eq!(key_quote(question, "They grew [1].", &[(1, dates_only)]), None, "a date alone is no figure");
        assert_eq!(
            key_quote("苹果公司的总营业费用是多少？", "增长了 [1]。", &[(1, ROWS)]),
            None,
            "not measured on CJK"
        );
    }

    #[test]
    fn net_sales_and_revenue_are_one_line_item_both_ways() {
        // Amazon's segment table (2023 Q3 AMZN.pdf, p. 18), asked as revenue; the answer took the
        // operating income row for the revenue.
        let question = "What was the reported revenue from Amazon's e-commerce and AWS segments in the latest quarter?";
        let answer = "AWS revenue was $6,976 million [2].";
        let rows = "AWS: Net sales: $23,059 million (three months ended September 30, 2023)\n\
                    AWS: Operating income: $6,976 million (three months ended September 30, 2023)";
        let quote = key_quote(question, answer, &[(2, rows)]).expect("a quote");
        assert_eq!(
            quote.text, "AWS: Net sales: $23,059 million (three months ended September 30, 2023)",
            "shown as printed"
        );
        // Microsoft's income statement (2023 Q3 MSFT.pdf, p. 3) says revenue; the question says net sales.
        let question = "How has Microsoft's total net sales changed over time?";
        let rows = "Sales and marketing: 5,187 million (three months ended September 30, 2023); 5,126 million \
                    (three months ended September 30, 2022)\n\
                    Total revenue: 56,517 million (three months ended September 30, 2023); 50,122 million \
                    (three months ended September 30, 2022)";
        let quote = key_quote(question, "Microsoft's sales grew [1].", &[(1, rows)]).expect("a quote");
        assert!(quote.text.starts_with("Total revenue: 56,517 million"), "{}", quote.text);
        // A cost of revenue answers no question on revenue, and "cost of sales" asks for it by either name.
        let cost = "Cost of revenue: Total cost of revenue: 17,488 million (three months ended December 31, 2022)";
        assert_eq!(key_quote("How has Microsoft's total net sales evolved?", "It grew [1].", &[(1, cost)]), None);
        let asked = "How did Microsoft's total cost of sales change?";
        assert!(key_quote(asked, "It grew [1].", &[(1, cost)]).is_some());
        // Selling costs are not sales: the row of sales and marketing expenses answers no revenue question.
        let question = "What was Microsoft's revenue in the quarter?";
        let selling = "Sales and marketing: 5,187 million (three months ended September 30, 2023)";
        assert_eq!(key_quote(question, "It rose [1].", &[(1, selling)]), None);
    }

    #[test]
    fn how_much_and_how_many_only_shape_the_question() {
        // The quick start's filing (2023 Q1 NVDA.pdf, p. 25) asked the way people ask: "much" and "have"
        // say nothing about which row answers.
        let rows = "Revenue: $7,192 million (three months ended April 30, 2023); $8,288 million (three months \
                    ended May 1, 2022)\n\
                    Cost of revenue: $2,544 million (three months ended April 30, 2023)";
        let question = "How much revenue did NVIDIA have in the first quarter of fiscal 2024?";
        let quote = key_quote(question, "NVIDIA's revenue fell [1].", &[(1, rows)]).expect("a quote");
        assert!(quote.text.starts_with("Revenue: $7,192 million"), "{}", quote.text);
        let question = "How many employees did NVIDIA have at the end of the quarter?";
        let employees = "Employees: 26,196 (April 30, 2023)";
        assert!(key_quote(question, "It grew [1].", &[(1, employees)]).is_some());
    }

    #[test]
    fn a_question_on_two_line_items_gets_a_row_of_each() {
        // 2023 Q1 AAPL.pdf as the passages hold it: the operating expenses total in two tables, the net
        // sales row only in the rest of the filing, and a sentence on net sales "compared to the same
        // quarter" ranked above it.
        let question = "How did Apple's operating expenses for Q1 2023 compare to its revenue for the same quarter?";
        let answer = "Operating expenses grew because of headcount-related expenses [1].";
        let sentence = "Total net sales decreased 5% or $6.8 billion during the first quarter of 2023 compared to                         the same quarter in 2022 due to the weakness in foreign currencies.";
        let total = "Total operating expenses: $14,316 million (three months ended December 31, 2022);                      $12,755 million (three months ended December 25, 2021)";
        let section = "Operating expenses: Total operating expenses: 14,316 million (three months ended                        December 31, 2022); 12,755 million (three months ended December 25, 2021)";
        let net_sales = "Total net sales: $117,154 million (three months ended December 31, 2022); $123,945                          million (three months ended December 25, 2021)";
        let texts = [(1, sentence), (2, total), (3, section)];
        let quotes = quotes_of(question, answer, &texts, &[(4, net_sales)], 2);
        let quoted: Vec<(usize, &str)> = quotes.iter().map(|q| (q.number, q.text.as_str())).collect();
        assert_eq!(quoted, [(2, total), (4, net_sales)], "the second quote is revenue's row, not a second opex total");
        // "the same quarter" names the period, not what is asked: the sentence shares one asked word.
        assert!(!asked_words(question).contains("same"));
        // One line item asked: the two best pieces, as before.
        let one_item = "What were Apple's total operating expenses in the first quarter of 2023?";
        let quotes = quotes_of(one_item, answer, &texts, &[], 2);
        assert_eq!(quotes.iter().map(|q| q.number).collect::<Vec<_>>(), [2], "one total, its repeat passed over");
    }

    #[test]
    fn period_words_and_the_subject_do_not_make_a_sentence_about_something_else_quotable() {
        // The quick start's question, answered right: the prose sentence naming its period is no answer.
        let question = "What was NVIDIA's revenue in the first quarter of fiscal 2024?";
        let passage = "No customer represented 10% or more of total revenue for the first quarter of fiscal \
                       years 2024 and 2023.\nTotal revenue: $7,192 million (three months ended April 30, 2023)";
        assert_eq!(key_quote(question, "NVIDIA's revenue was $7,192 million [1].", &[(1, passage)]), None);
        assert_eq!(asked_words(question), HashSet::from(["reven".to_string()]));
    }

    #[test]
    fn a_table_split_between_two_passages_is_quoted_whole_citing_both() {
        // 2022 Q3 AAPL.pdf, p. 21, as the library's two chunks hold it: the expense rows end one, the
        // total opens the next (the chunker split the table).
        let rows = "Operating Expenses\n\
            Operating expenses for the three- and nine-month periods ended June 25, 2022 and June 26, 2021 were as follows (dollars in millions):\n\
            Research and development: $6,797 million (three months ended June 25, 2022); $5,717 million (three months ended June 26, 2021)\n\
            Percentage of total net sales: 8% (three months ended June 25, 2022); 7% (three months ended June 26, 2021)\n\
            Selling, general and administrative: $6,012 million (three months ended June 25, 2022); $5,412 million (three months ended June 26, 2021)";
        let total = "Percentage of total net sales: 7% (three months ended June 25, 2022); 7% (three months ended June 26, 2021)\n\
            Total operating expenses: $12,809 million (three months ended June 25, 2022); $11,129 million (three months ended June 26, 2021)\n\
            Percentage of total net sales: 15% (three months ended June 25, 2022); 14% (three months ended June 26, 2021)\n\
            Research and Development\n\
            The growth in research and development expense was driven primarily by increases in headcount-related expenses.";
        // Another filing's expense rows, which do not add up to this total, ranked between them.
        let other = "Research and development: $7,709 million (three months ended December 31, 2022)\n\
            Selling, general and administrative: $6,607 million (three months ended December 31, 2022)";
        let question =
            "Has there been any significant change in Apple's operating expenses over the reported quarters?";
        let answer = "Operating expenses grew with headcount [1].";
        // Passage 1 is the chunk right after passage 3 in their document.
        let quotes = key_quotes(question, answer, &[(1, total), (2, other), (3, rows)], &[], &[(1, 3)], 1);
        assert_eq!(
            quotes,
            vec![KeyQuote {
                number: 1,
                text: "Research and development: $6,797 million (three months ended June 25, 2022); $5,717 million (three months ended June 26, 2021) · \
                       Selling, general and administrative: $6,012 million (three months ended June 25, 2022); $5,412 million (three months ended June 26, 2021) · \
                       Total operating expenses: $12,809 million (three months ended June 25, 2022); $11,129 million (three months ended June 26, 2021)"
                    .into(),
                parts_from: Some(3),
            }]
        );
        assert_eq!(
            crate::genre::render_quotes(&quotes, false),
            format!("From the passages: “{}” [3, 1]", quotes[0].text)
        );
        // Chunks overlap: 2023 Q1 NVDA.pdf's statement ends one chunk with its acquisition-cost row and
        // opens the next with it again, under its section's name; the row is read once.
        let before = "Research and development: 1,875 million (three months ended April 30, 2023); 1,618 million (three months ended May 1, 2022)\n\
            Sales, general and administrative: 633 million (three months ended April 30, 2023); 592 million (three months ended May 1, 2022)\n\
            Acquisition termination cost: — (three months ended April 30, 2023); 1,353 million (three months ended May 1, 2022)";
        let opening = "Operating expenses: Acquisition termination cost: — (three months ended April 30, 2023); 1,353 million (three months ended May 1, 2022)\n\
            Operating expenses: Total operating expenses: 2,508 million (three months ended April 30, 2023); 3,563 million (three months ended May 1, 2022)";
        let total_row = opening.lines().nth(1).expect("two lines");
        let (quote, from) = with_parts(opening, total_row, Some((4, before))).expect("joined");
        assert_eq!(from, Some(4));
        assert_eq!(quote.matches("Acquisition termination cost").count(), 1, "{quote}");
        assert!(quote.starts_with("Research and development: 1,875 million") && quote.ends_with(total_row), "{quote}");
        // The same total at the end of another table (the statement's, above the discussion's total with
        // its change columns) is no part of it: the statement's "—" row and its total do not make one.
        let statement = "Acquisition termination cost: — (three months ended October 30, 2022)\n\
            Total operating expenses: 12,809 million (three months ended October 30, 2022)";
        let discussion = "Total operating expenses: $12,809 million (three months ended October 30, 2022); $616 (change, three months ended)";
        assert_eq!(with_parts(discussion, discussion, Some((1, statement))), None);
        // Without the passage before it, or when the passage before it is one whose rows do not add up
        // to it, or with the rows that do in a passage not known to come right before it, the total is
        // quoted alone.
        for (texts, follows) in [
            (&[(1, total), (2, other)][..], &[(1, 3)][..]),
            (&[(1, total), (2, other)][..], &[(1, 2)][..]),
            (&[(1, total), (2, other), (3, rows)][..], &[][..]),
        ] {
            let alone = key_quotes(question, answer, texts, &[], follows, 1);
            assert_eq!(alone.len(), 1);
            assert!(
                alone[0].text.starts_with("Total operating expenses") && alone[0].parts_from.is_none(),
                "{alone:?}"
            );
        }
    }

    #[test]
    fn a_total_row_is_quoted_with_the_rows_it_adds_up() {
        // 2022 Q3 INTC.pdf, p. 12 (Note 4), as the passage holds it.
        let note = "Note 4 : Other Financial Statement Details\n\
                    Inventories\n\
                    Raw materials: $1,635 million (Oct 1, 2022); $1,441 million (Dec 25, 2021)\n\
                    Work in process: 7,030 million (Oct 1, 2022); 6,656 million (Dec 25, 2021)\n\
                    Finished goods: 4,166 million (Oct 1, 2022); 2,679 million (Dec 25, 2021)\n\
                    Total inventories: $12,831 million (Oct 1, 2022); $10,776 million (Dec 25, 2021)\n\
                    Interest and Other, Net";
        let question =
            "What insights into inventory management could be gleaned from Intel's Q3 2022 inventory levels?";
        let answer = "Inventory levels were adjusted to manage liquidity [1].";
        let quotes = quotes_of(question, answer, &[(1, note)], &[], 2);
        assert_eq!(
            quotes,
            vec![KeyQuote {
                parts_from: None,
                number: 1,
                text: "Raw materials: $1,635 million (Oct 1, 2022); $1,441 million (Dec 25, 2021) · \
                       Work in process: 7,030 million (Oct 1, 2022); 6,656 million (Dec 25, 2021) · \
                       Finished goods: 4,166 million (Oct 1, 2022); 2,679 million (Dec 25, 2021) · \
                       Total inventories: $12,831 million (Oct 1, 2022); $10,776 million (Dec 25, 2021)"
                    .into()
            }],
            "the parts once, with their total"
        );
        // The balance sheet's "Inventories" row, ranked first, is the note's "Total inventories" (one label
        // but for its qualifier, the same amounts): the note's, printed with its parts, takes its place.
        let sheet = "Inventories: 12,831 million (Oct 1, 2022); 10,776 million (Dec 25, 2021)";
        let quotes = quotes_of(question, answer, &[(1, sheet), (2, note)], &[], 2);
        assert!(
            quotes.len() == 1 && quotes[0].number == 2 && quotes[0].text.starts_with("Raw materials"),
            "{quotes:?}"
        );
        assert_eq!(unqualified("Total inventories"), unqualified("Inventories"));
        // A row that is no total, a total with no row above it, or rows that do not add up to it
        // (another block of the statement above the total): the row is quoted alone.
        assert_eq!(parts(note, &note[note.find("Finished").unwrap()..note.find("\nTotal").unwrap()]), None);
        let alone = "Total inventories: $12,831 million (Oct 1, 2022)";
        assert_eq!(parts(alone, alone), None);
        // A label whose sixth byte falls inside a character is read, not sliced through (and, its rows
        // adding up to it, it is a total).
        let euro = "A: 1 million (Q3)\nB: 1 million (Q3)\nTota€ sum: 2 million (Q3)";
        assert!(parts(euro, &euro[euro.find("Tota").unwrap()..]).is_some());
        assert_eq!(parts(ROWS, &ROWS[ROWS.find("Total").unwrap()..ROWS.find("\nThe").unwrap()]), None);
        // Signed parts: an accounting negative subtracts.
        let net = "Operating income: $4,770 million (Q3)\nOther expense, net: $(1,200) million (Q3)\n\
                   Total income before taxes: $3,570 million (Q3)";
        let total = &net[net.find("Total").unwrap()..];
        assert!(parts(net, total).is_some_and(|q| q.starts_with("Operating income")));
        // Parts that would pass the limit: the total alone, not a breakdown cut short.
        let long = format!("A: 1 million ({0})\nB: 1 million ({0})\nTotal costs: 2 million (Q3)", "x".repeat(500));
        assert_eq!(parts(&long, &long[long.find("Total").unwrap()..]), None);
        // Four columns a row, three parts (one of them "—"): within the limit.
        let statement = "Operating expenses\n\
            Research and development: 1,945 million (three months ended October 30, 2022); 1,403 million (three months ended October 31, 2021); 5,387 million (nine months ended October 30, 2022); 3,802 million (nine months ended October 31, 2021)\n\
            Sales, general and administrative: 631 million (three months ended October 30, 2022); 557 million (three months ended October 31, 2021); 1,815 million (nine months ended October 30, 2022); 1,603 million (nine months ended October 31, 2021)\n\
            Acquisition termination cost: — (three months ended October 30, 2022); — (three months ended October 31, 2021); 1,353 million (nine months ended October 30, 2022); — (nine months ended October 31, 2021)\n\
            Total operating expenses: 2,576 million (three months ended October 30, 2022); 1,960 million (three months ended October 31, 2021); 8,555 million (nine months ended October 30, 2022); 5,405 million (nine months ended October 31, 2021)";
        let quoted = parts(statement, &statement[statement.find("Total").unwrap()..]);
        assert!(quoted.as_deref().is_some_and(|q| q.starts_with("Research and development: 1,945")), "{quoted:?}");
        // A ratio row under each part (2023 Q1 AAPL.pdf, p. 22, as the passage holds it): passed over and
        // left out, the parts still add up.
        let apple = "Operating expenses for the three months ended December 31, 2022 and December 25, 2021 were as follows (dollars in millions):\n\
            Research and development: $7,709 million (three months ended December 31, 2022); $6,306 million (three months ended December 25, 2021)\n\
            Percentage of total net sales: 7% (three months ended December 31, 2022); 5% (three months ended December 25, 2021)\n\
            Selling, general and administrative: $6,607 million (three months ended December 31, 2022); $6,449 million (three months ended December 25, 2021)\n\
            Percentage of total net sales: 6% (three months ended December 31, 2022); 5% (three months ended December 25, 2021)\n\
            Total operating expenses: $14,316 million (three months ended December 31, 2022); $12,755 million (three months ended December 25, 2021)";
        assert_eq!(
            parts(apple, &apple[apple.find("Total").unwrap()..]).as_deref(),
            Some(
                "Research and development: $7,709 million (three months ended December 31, 2022); $6,306 million (three months ended December 25, 2021) · \
                 Selling, general and administrative: $6,607 million (three months ended December 31, 2022); $6,449 million (three months ended December 25, 2021) · \
                 Total operating expenses: $14,316 million (three months ended December 31, 2022); $12,755 million (three months ended December 25, 2021)"
            )
        );
    }

    #[test]
    fn a_row_the_rows_above_add_up_to_is_a_total_without_the_word() {
        // 2023 Q1 INTC.pdf, p. 6, as the passage holds it: Intel prints its operating expenses unlabelled.
        let statement = "Net revenue: $11,715 million (three months ended Apr 1, 2023); $18,353 million (three months ended Apr 2, 2022)\n\
            Cost of sales: 7,707 million (three months ended Apr 1, 2023); 9,109 million (three months ended Apr 2, 2022)\n\
            Gross margin: 4,008 (three months ended Apr 1, 2023); 9,244 (three months ended Apr 2, 2022)\n\
            Research and development: 4,109 million (three months ended Apr 1, 2023); 4,362 million (three months ended Apr 2, 2022)\n\
            Marketing, general, and administrative: 1,303 million (three months ended Apr 1, 2023); 1,752 million (three months ended Apr 2, 2022)\n\
            Restructuring and other charges: 64 million (three months ended Apr 1, 2023); (1,211) million (three months ended Apr 2, 2022)\n\
            Operating expenses: 5,476 million (three months ended Apr 1, 2023); 4,903 million (three months ended Apr 2, 2022)\n";
        let row = |label: &str| {
            let at = statement.find(&format!("\n{label}:")).unwrap() + 1;
            &statement[at..at + statement[at..].find('\n').unwrap()]
        };
        let quoted = parts(statement, row("Operating expenses"));
        assert!(
            quoted.as_deref().is_some_and(|q| q.starts_with("Research and development: 4,109")
                && q.contains(" · Restructuring and other charges: 64 million")
                && q.ends_with("Operating expenses: 5,476 million (three months ended Apr 1, 2023); 4,903 million (three months ended Apr 2, 2022)")),
            "{quoted:?}"
        );
        let question = "Has there been a substantial shift in Intel's operating expenses over the reported quarters?";
        let quotes = quotes_of(question, "Operating expenses were $5,476 million [1].", &[(1, statement)], &[], 1);
        assert!(quotes.len() == 1 && quotes[0].text.starts_with("Research and development"), "{quotes:?}");
        // A row that is a difference of the rows above, not their sum, is no total.
        assert_eq!(parts(statement, row("Gross margin")), None);
        // Decimals are summed to their own rounding: $0.06 apart is no total of figures printed to $0.01
        // (a whole unit's rounding took any three per-share figures for a total).
        let per_share = "Basic: $0.30 (Q3)\nDiluted: $0.29 (Q3)\nEarnings: $0.65 (Q3)";
        assert_eq!(parts(per_share, &per_share[per_share.find("Earn").unwrap()..]), None);
        let billions = "Cloud: $8.1 billion (Q3)\nOther: $4.4 billion (Q3)\nSegment revenue: $12.5 billion (Q3)";
        assert!(parts(billions, &billions[billions.find("Segment").unwrap()..]).is_some());
        // Rows of "—" make no total of one.
        let dashes = "A: — (Q3)\nB: — (Q3)\nC: — (Q3)";
        assert_eq!(parts(dashes, &dashes[dashes.find("C:").unwrap()..]), None);
    }

    #[test]
    fn an_amount_about_something_else_has_not_found_its_row() {
        // 2023 Q3 INTC.pdf: the model's line on inventories states the quarter's revenue; the inventories
        // note (p. 13), in the rest of the filing, prints the total with its parts.
        let question = "How have inventory levels at Intel changed over these quarters?";
        let answer = "Our Q3 2023 revenue was $14.2 billion, down $1.2 billion or 8% from Q3 2022 [7].";
        assert!(!found_its_row(question, answer));
        assert!(found_its_row(question, "Inventories were $11,466 million [7]."));
        assert!(found_its_row("What did Intel report?", answer), "a question asking for no word: any amount");
        let note = "Raw materials: $1,278 million (Sep 30, 2023); $1,517 million (Dec 31, 2022)\n\
            Work in process: 6,266 million (Sep 30, 2023); 7,565 million (Dec 31, 2022)\n\
            Finished goods: 3,922 million (Sep 30, 2023); 4,142 million (Dec 31, 2022)\n\
            Total inventories: $11,466 million (Sep 30, 2023); $13,224 million (Dec 31, 2022)";
        let quotes = quotes_of(question, answer, &[(7, "Our Q3 2023 revenue was $14.2 billion.")], &[(12, note)], 1);
        assert!(
            quotes.len() == 1 && quotes[0].number == 12 && quotes[0].text.ends_with("$13,224 million (Dec 31, 2022)"),
            "{quotes:?}"
        );
        assert!(quotes[0].text.starts_with("Raw materials: $1,278 million"), "{quotes:?}");
    }

    #[test]
    fn a_line_stating_only_percentages_has_not_found_its_row() {
        // 2023 Q1 INTC.pdf: the discussion's sentence of changes and ratios (p. 24), read; the statement's
        // rows (p. 6), in the rest of the filing.
        let read = "Operating expenses decreased 28% from YTD 2022, with an operating margin of 18%.";
        let statement = "Research and development: 4,109 million (three months ended Apr 1, 2023); 4,362 million (three months ended Apr 2, 2022)\n\
            Marketing, general, and administrative: 1,303 million (three months ended Apr 1, 2023); 1,752 million (three months ended Apr 2, 2022)\n\
            Restructuring and other charges: 64 million (three months ended Apr 1, 2023); (1,211) million (three months ended Apr 2, 2022)\n\
            Operating expenses: 5,476 million (three months ended Apr 1, 2023); 4,903 million (three months ended Apr 2, 2022)\n";
        let question = "Has there been a substantial shift in Intel's operating expenses over the reported quarters?";
        let answer = "Operating expenses decreased 28% from YTD 2022, with an operating margin of 18% [1].";
        assert!(!found_its_row(question, answer));
        use crate::genre::Genre;
        assert!(crate::genre::financial::Financial.quotes_from_rest_of_document(question, answer));
        let quotes = quotes_of(question, answer, &[(1, read)], &[(2, statement)], 1);
        assert!(
            quotes.len() == 1
                && quotes[0].number == 2
                && quotes[0].text.starts_with("Research and development: 4,109")
                && quotes[0].text.contains("Operating expenses: 5,476 million"),
            "{quotes:?}"
        );
        // A segment's row of the rest whose section heading fell in another passage (2023 Q2 INTC.pdf's
        // segment operating loss) is not known to measure the revenue asked for: not quoted.
        let question = "Are there identifiable trends in Intel's Data Center and AI segment revenues?";
        let loss = "Data Center and AI: (161) million (three months ended Jul 1, 2023); (80) million (three months ended Jul 2, 2022)";
        let answer = "DCAI revenue decreased 15% [1].";
        assert_eq!(
            quotes_of(question, answer, &[(1, "DCAI revenue decreased 15% from Q2 2022.")], &[(2, loss)], 2),
            []
        );
        // Read, below the segment's revenue row, it is another measure of the segment: passed over.
        let revenue = "Data Center and AI: 4,004 million (three months ended Jul 1, 2023); 4,695 million (three months ended Jul 2, 2022)";
        let quotes = quotes_of(question, answer, &[(1, revenue), (2, loss)], &[], 2);
        assert!(quotes.len() == 1 && quotes[0].number == 1, "{quotes:?}");
        // A row labelled under a section that says what it measures is no unknown measure: kept.
        let income = "Operating income: Data Center and AI: (161) million (three months ended Jul 1, 2023); (80) million (three months ended Jul 2, 2022)";
        let both = "What were Intel's Data Center and AI segment revenue and operating income?";
        assert_eq!(quotes_of(both, answer, &[(1, revenue), (2, income)], &[], 2).len(), 2);
        // An amount of its own (a dollar figure, a number) is a row found: no row of the rest is quoted for
        // its label (the rest is read, for a total quoted alone: `printed_with_parts`).
        let question = "Has there been a substantial shift in Intel's operating expenses over the reported quarters?";
        for found in ["Operating expenses were $5,476 million [1].", "Operating expenses: 5,476 (in millions) [1]."] {
            assert!(found_its_row(question, found), "{found}");
            assert!(!rows_from_rest_of_document(question, found), "{found}");
            let quotes = quotes_of(question, found, &[(1, read)], &[(2, statement)], 1);
            assert!(quotes.iter().all(|q| q.number == 1 && q.parts_from.is_none()), "{quotes:?}");
        }
    }

    #[test]
    fn a_total_is_quoted_from_the_passage_that_prints_its_parts() {
        // 2023 Q1 AAPL.pdf: the discussion's summary table prints the total alone, ranked first; the
        // income statement prints it under the rows it adds up.
        let summary = "Operating Expenses\n\
                       Total operating expenses: $14,316 million (three months ended December 31, 2022); \
                       $12,755 million (three months ended December 25, 2021)\n";
        let statement = "Operating expenses:\n\
                         Research and development: 7,709 million (three months ended December 31, 2022); \
                         6,306 million (three months ended December 25, 2021)\n\
                         Selling, general and administrative: 6,607 million (three months ended December 31, 2022); \
                         6,449 million (three months ended December 25, 2021)\n\
                         Total operating expenses: 14,316 million (three months ended December 31, 2022); \
                         12,755 million (three months ended December 25, 2021)\n";
        let question =
            "Has there been any significant change in Apple's operating expenses over the reported quarters?";
        let answer = "Operating expenses grew with headcount [1].";
        let quotes = quotes_of(question, answer, &[(1, summary), (2, statement)], &[], 1);
        assert_eq!(quotes.len(), 1, "{quotes:?}");
        assert_eq!(quotes[0].number, 2, "{quotes:?}");
        assert!(quotes[0].text.starts_with("Research and development: 7,709 million"), "{quotes:?}");
        assert!(quotes[0].text.contains(" · Selling, general and administrative: 6,607 million"), "{quotes:?}");
        assert!(quotes[0].text.ends_with("12,755 million (three months ended December 25, 2021)"), "{quotes:?}");
        // An answer that copied the total still gets it with the parts it left out; one that states
        // the parts too gets nothing again.
        let copied = "Total operating expenses: $14,316 million (three months ended December 31, 2022) [1].";
        let with_total = quotes_of(question, copied, &[(1, summary), (2, statement)], &[], 1);
        assert!(with_total.len() == 1 && with_total[0].text.contains(" · Selling, general"), "{with_total:?}");
        let all = "R&D was 7,709 million, SG&A 6,607 million, the total 14,316 million (6,306, 6,449 and 12,755 million a year before) [2].";
        assert!(quotes_of(question, all, &[(1, summary), (2, statement)], &[], 1).is_empty());
        // Asked as "operating costs", the same rows (one vocabulary of line items).
        let costs = "Has there been a considerable shift in Apple's operating costs over the reported quarters?";
        assert_eq!(quotes_of(costs, answer, &[(1, summary), (2, statement)], &[], 1), quotes);
        // Neither passage printing the parts: the better-ranked one is quoted, as before.
        let alone = "Total operating expenses: 14,316 million (three months ended December 31, 2022)\n";
        let quotes = quotes_of(question, answer, &[(1, summary), (2, alone)], &[], 1);
        assert_eq!(quotes.len(), 1, "{quotes:?}");
        assert_eq!(quotes[0].number, 1, "{quotes:?}");
    }

    #[test]
    fn a_total_quoted_alone_is_shown_where_the_rest_of_the_filing_prints_its_parts() {
        // 2023 Q3 NVDA.pdf: the discussion's summary (p. 27), which a search ranked, prints the total alone;
        // the income statement (p. 3), which none did, prints it under the rows it adds up.
        let summary = "Operating expenses: $2,983 million (three months ended October 29, 2023); $2,662 million \
                       (three months ended July 30, 2023); $2,576 million (three months ended October 30, 2022); \
                       12% (quarter-over-quarter change); 16% (year-over-year change)";
        let statement = "Operating expenses\n\
                         Research and development: 2,294 million (three months ended October 29, 2023); \
                         1,945 million (three months ended October 30, 2022)\n\
                         Sales, general and administrative: 689 million (three months ended October 29, 2023); \
                         631 million (three months ended October 30, 2022)\n\
                         Acquisition termination cost: — (three months ended October 29, 2023); \
                         — (three months ended October 30, 2022)\n\
                         Total operating expenses: 2,983 million (three months ended October 29, 2023); \
                         2,576 million (three months ended October 30, 2022)";
        let question = "Has there been a considerable shift in NVIDIA's operating costs over the reported quarters?";
        // The model's line states amounts of something else: it has "found its row" by that count.
        let answer = "A change in estimate increased operating income by $41 million [8].";
        let quotes = quotes_of(question, answer, &[(1, summary)], &[(9, statement)], 1);
        assert_eq!(quotes.len(), 1, "{quotes:?}");
        assert_eq!(quotes[0].number, 9, "cited to the statement: {quotes:?}");
        assert!(quotes[0].text.starts_with("Research and development: 2,294 million"), "{quotes:?}");
        assert!(quotes[0].text.contains(" · Sales, general and administrative: 689 million"), "{quotes:?}");
        assert!(quotes[0].text.ends_with("2,576 million (three months ended October 30, 2022)"), "{quotes:?}");
        // Another period's total (another first cell) is not the same total: the summary row stays.
        let other = statement.replace(
            "2,983 million (three months ended October 29, 2023)",
            "2,508 million (three months ended April 30, 2023)",
        );
        let quotes = quotes_of(question, answer, &[(1, summary)], &[(9, other.as_str())], 1);
        assert_eq!(quotes.len(), 1, "{quotes:?}");
        assert_eq!(quotes[0].number, 1, "{quotes:?}");
        // Nor is a row of the rest quoted for its label under this answer.
        assert!(quotes_of(question, answer, &[(1, "NVIDIA designs GPUs.")], &[(9, statement)], 1).is_empty());
        // A question naming a line item reads the rest under any answer; one naming none, only as before.
        assert!(quotes_from_rest_of_document(question, answer));
        assert!(!quotes_from_rest_of_document("Who audits NVIDIA?", "Audit fees were $41 million [8]."));
    }

    #[test]
    fn a_question_on_cash_flows_gets_the_statements_three_totals() {
        // 2022 Q3 MSFT.pdf, p. 6, as the passages hold it (the rest of the filing: no search ranked them).
        let operations = "Other long-term liabilities: 188 million (three months ended September 30, 2022); 250 million (three months ended September 30, 2021)\n\
            Net cash from operations: 23,198 million (three months ended September 30, 2022); 24,540 million (three months ended September 30, 2021)\n\
            Financing\n\
            Repayments of debt: (1,000) million (three months ended September 30, 2022); (4,826) million (three months ended September 30, 2021)";
        let financing = "Other, net: (264) million (three months ended September 30, 2022); (172) million (three months ended September 30, 2021)\n\
            Net cash used in financing: (10,883) million (three months ended September 30, 2022); (16,276) million (three months ended September 30, 2021)\n\
            Investing\n\
            Additions to property and equipment: (6,283) million (three months ended September 30, 2022); (5,810) million (three months ended September 30, 2021)";
        let investing = "Other, net: (860) million (three months ended September 30, 2022); (417) million (three months ended September 30, 2021)\n\
            Net cash used in investing: (3,132) million (three months ended September 30, 2022); (3,250) million (three months ended September 30, 2021)";
        let read =
            "Cash, cash equivalents, and short-term investments totaled $107.2 billion as of September 30, 2022.";
        let question = "What significant movements have been observed in Microsoft's liquidity status or cash flow as per the quarterly reports?";
        // The answer states an amount of its own, yet the statement's rows are looked for in the rest.
        let answer = "Cash and short-term investments totaled $107.2 billion [1].";
        let rest = [(2, operations), (3, financing), (4, investing)];
        let quotes = quotes_of(question, answer, &[(1, read)], &rest, 2);
        let labels: Vec<&str> = quotes.iter().filter_map(|q| row_label(&q.text)).collect();
        assert_eq!(labels.len(), 3, "{quotes:?}");
        for label in ["Net cash from operations", "Net cash used in financing", "Net cash used in investing"] {
            assert!(labels.contains(&label), "{label}: {quotes:?}");
        }
        // The discussion's summary row of the same amounts is the same row: quoted once.
        let summary = "Financing activities: (10,883) million (three months ended September 30, 2022); (16,276) million (three months ended September 30, 2021)";
        let again = quotes_of(
            question,
            answer,
            &[(1, read)],
            &[(2, operations), (3, financing), (4, investing), (5, summary)],
            2,
        );
        assert_eq!(again, quotes);
        // A question on no statement: from the rest, nothing under an answer stating an amount.
        let other = "What significant movements have been observed in Microsoft's cash position?";
        assert!(quotes_of(other, answer, &[(1, read)], &rest, 2).iter().all(|q| q.number == 1));
        // The financial layer reads the rest of the document for such a question, not for another.
        use crate::genre::Genre;
        assert!(crate::genre::financial::Financial.quotes_from_rest_of_document(question, answer));
        assert!(!crate::genre::financial::Financial.quotes_from_rest_of_document(other, answer));
        assert!(crate::genre::financial::Financial.quotes_from_rest_of_document(other, "Cash grew [1]."));
    }

    #[test]
    fn with_two_pieces_the_next_row_is_quoted_too_unless_the_answer_states_it() {
        let question = "What were Apple's research and development and total operating expenses?";
        let answer = "Apple's operating expenses grew because of higher headcount [2].";
        let quotes = quotes_of(question, answer, &[(2, ROWS)], &[], 2);
        assert_eq!(quotes.len(), 2, "{quotes:?}");
        // Three asked-for words shared ("total", "operating", "expenses") before two.
        assert!(quotes[0].text.starts_with("Total operating expenses: $14,316 million"), "{quotes:?}");
        assert!(quotes[1].text.starts_with("Research and development: $7,709 million"), "{quotes:?}");
        assert_eq!(
            render_quotes(&quotes, false),
            format!("From the passages: “{}” [2]; “{}” [2]", quotes[0].text, quotes[1].text)
        );
        assert_eq!(quotes_of(question, answer, &[(2, ROWS)], &[], 1), quotes[..1].to_vec(), "one piece: the best");
        let stated = "Research and development was $7.7 billion and $6.3 billion a year earlier [2].";
        let rest = quotes_of(question, stated, &[(2, ROWS)], &[], 2);
        assert_eq!(rest.len(), 1, "the stated row is not written twice: {rest:?}");
        assert!(rest[0].text.starts_with("Total operating expenses"), "{rest:?}");
        assert!(quotes_of(question, answer, &[(2, ROWS)], &[], 0).is_empty(), "0 quotes nothing");
    }

    #[test]
    fn a_row_whose_label_is_what_was_asked_is_quoted_with_one_shared_word() {
        // The real 2022 Q3 AAPL balance-sheet row; the question's other asked-for words no row states.
        let question =
            "How did Apple's inventory levels in the Q3 2022 report reflect on their supply chain efficiency?";
        let answer = "Apple managed its supply chain efficiently [1].";
        let row = "Inventories: 5,433 million (June 25, 2022); 6,580 million (September 25, 2021)";
        let quote = key_quote(question, answer, &[(1, row)]).expect("the inventories row");
        assert_eq!(quote.text, row);
        let total = "Total inventories: $12,831 million (Oct 1, 2022); $10,776 million (Dec 25, 2021)";
        assert!(key_quote(question, answer, &[(1, total)]).is_some(), "\"Total\" only qualifies the label");
        let one_cell = "Inventories: 5,433 million (June 25, 2022)";
        assert!(key_quote(question, answer, &[(1, one_cell)]).is_some(), "a one-column row");
        // A label saying more than was asked, or a sentence sharing one word, is not quoted.
        let expenses = "How did Apple's operating expenses change in Q1 2023?";
        let income = "Segment operating income: $45,405 million (three months ended December 31, 2022)";
        assert_eq!(key_quote(expenses, "They rose [1].", &[(1, income)]), None);
        let sentence = "Inventory purchase obligations were $5.4 billion.";
        assert_eq!(key_quote(question, answer, &[(1, sentence)]), None);
        // A word the question qualifies ("potential liabilities") is not what a label without the
        // qualifier states: Microsoft's balance-sheet total is no answer on legal liabilities.
        let legal = "What legal actions or potential liabilities are revealed in the quarterly reports?";
        let liabilities = "Total liabilities: 186,218 million (September 30, 2022); 198,298 million (June 30, 2022)";
        assert_eq!(key_quote(legal, "Several suits are pending.", &[(1, liabilities)]), None);
        let plain = "What were Microsoft's total liabilities at the quarter's end?";
        assert!(key_quote(plain, "They fell.", &[(1, liabilities)]).is_some(), "\"total\" qualifies nothing");
    }

    #[test]
    fn a_segment_row_under_another_line_items_section_is_not_quoted() {
        // Apple's gross-margin table (2023 Q2 AAPL.pdf, p. 20) and net-sales rows, as their passages hold them.
        let margin = "Gross margin:\n\
                      Products: $27,134 million (three months ended April 1, 2023); $28,167 million (three months ended March 26, 2022)\n\
                      Services: 14,842 million (three months ended April 1, 2023); 14,392 million (three months ended March 26, 2022)";
        let sales = "Net sales:\n\
                     Products: $73,929 million (three months ended April 1, 2023); $77,457 million (three months ended March 26, 2022)\n\
                     Services: 20,907 million (three months ended April 1, 2023); 19,821 million (three months ended March 26, 2022)";
        let question = "Can any trends be identified in Apple's Services segment revenue over the reported periods?";
        let quotes = quotes_of(question, "Services grew.", &[(1, margin), (2, sales)], &[], 2);
        assert_eq!(quotes.len(), 1, "{quotes:?}");
        assert!(quotes[0].text.starts_with("Services: 20,907 million"), "{quotes:?}");
        // A question on gross margin quotes the gross-margin row; one naming no line item, either.
        let on_margin = "What was Apple's Services gross margin in Q2 2023?";
        let quote = key_quote(on_margin, "It rose.", &[(1, margin)]).expect("the margin row");
        assert!(quote.text.starts_with("Services: 14,842 million"), "{quote:?}");
        // A label that names another line item itself (2023 Q1 MSFT.pdf's segment table, its section in
        // the label) is no answer on operating expenses either; the operating-expenses sentence is.
        let segments = "Operating Income: More Personal Computing: 3,320 million (three months ended December 31, 2022); 6,236 million (three months ended December 31, 2021); (47)% (change, three months ended)\n\
                        Operating expenses increased $269 million or 4% driven by investment in Search and news advertising.";
        let on_expenses = "Have there been notable fluctuations in Microsoft's operational expenditures? What were the principal factors behind these changes?";
        let quote = key_quote(on_expenses, "They changed [1].", &[(1, segments)]).expect("the sentence");
        assert!(quote.text.starts_with("Operating expenses increased $269 million"), "{quote:?}");
    }

    #[test]
    fn a_balance_sheet_section_in_the_label_does_not_hide_the_row_asked_for() {
        // As Apple's 2022 Q3 balance sheet reads once its rows name their sections.
        let question =
            "How did Apple's inventory levels in the Q3 2022 report reflect on their supply chain efficiency?";
        let answer = "Apple managed its supply chain efficiently [1].";
        let row = "Current assets: Inventories: 5,433 million (June 25, 2022); 6,580 million (September 25, 2021)";
        assert_eq!(key_quote(question, answer, &[(1, row)]).map(|q| q.text), Some(row.to_string()));
        let deferred = "Non-current liabilities: Deferred revenue: 2,984 million (June 25, 2022)";
        assert!(key_quote("What was Apple's deferred revenue?", "It grew [1].", &[(1, deferred)]).is_some());
        // A section that says what the row measures is part of what the label says.
        let cost = "Cost of sales: Products: 41,485 million (three months ended June 25, 2022)";
        assert_eq!(key_quote("How did Apple's products do in Q3 2022?", "Well [1].", &[(1, cost)]), None);
        // Word by word, not by the first five letters: "International" is no answer on interest expense.
        let interest = "How did Amazon's interest expense change in Q1 2023?";
        let international = "International: 29,145 million (three months ended March 31, 2023)";
        assert_eq!(key_quote(interest, "It rose [1].", &[(1, international)]), None);
        let expense = "Interest expense: 823 million (three months ended March 31, 2023)";
        assert!(key_quote(interest, "It rose [1].", &[(1, expense)]).is_some());
        let sales = "Net sales: Products: 63,355 million (three months ended June 25, 2022)";
        assert!(key_quote("What were Apple's product sales in Q3 2022?", "Well [1].", &[(1, sales)]).is_some());
    }

    #[test]
    fn from_the_rest_of_a_document_only_a_row_named_by_what_was_asked_is_quoted() {
        let question = "What do Microsoft's inventory levels in Q3 2022 suggest about product demand?";
        let answer = "Demand was strong [1].";
        let read = [(1, "Microsoft sells Surface devices and Xbox consoles.")];
        // The exhibit list shares two asked-for words ("product", "demand") but is not a row named by them.
        let rest = [
            (2, "Product demand schedule 31.2 of the 2022 exhibits, 13a-14(a)."),
            (3, "Inventories: 4,268 million (September 30, 2022); 3,742 million (June 30, 2022)"),
        ];
        let quotes = quotes_of(question, answer, &read, &rest, 2);
        assert_eq!(quotes.len(), 1, "{quotes:?}");
        assert_eq!(quotes[0].number, 3);
        assert!(quotes[0].text.starts_with("Inventories: 4,268 million"), "{quotes:?}");
        // The same sentence among the passages read or the search's candidates is quotable, as before.
        let quotes = quotes_of(question, answer, &[read[0], rest[0]], &[], 2);
        assert_eq!(quotes.iter().map(|q| q.number).collect::<Vec<_>>(), [2], "{quotes:?}");
        // An answer that states an amount has found its row: the rest of the document is not looked through.
        let stated = "Inventories rose to $4.3 billion as demand was strong [1].";
        assert!(quotes_of(question, stated, &read, &rest, 2).is_empty());
        let quick_start = "NVIDIA's revenue in the first quarter of fiscal 2024 was $7,192 million [1].";
        let percent_of_revenue =
            [(9, "Revenue: 100.0% (three months ended April 30, 2023); 100.0% (three months ended May 1, 2022)")];
        let read = [(1, "Revenue: $7,192 million (three months ended April 30, 2023); $8,288 million (three months ended May 1, 2022)")];
        let revenue = "What was NVIDIA's revenue in the first quarter of fiscal 2024?";
        assert!(quotes_of(revenue, quick_start, &read, &percent_of_revenue, 2).is_empty());
        // Nor a row named by one asked-for word among the passages read or the candidates.
        assert!(quotes_of(revenue, quick_start, &[read[0], percent_of_revenue[0]], &[], 2).is_empty());
    }

    #[test]
    fn a_sentence_the_text_layer_wrapped_is_quoted_whole_and_once() {
        // Amazon's Q3 2023 tax note as its text layer wraps it, and the repurchase sentence in two lines.
        let tax = "Our income tax provision for the nine months ended September 30, 2023 was $4.1 billion, which\n\
                   included $175 million of net discrete tax expense, primarily consisting of discrete tax expense\n\
                   related to shortfalls from stock-based compensation and approximately $600 million of tax benefit.\n\
                   Total net sales: $143,083 million (three months ended September 30, 2023)";
        let question = "What did Amazon report about its income tax and discrete tax expense?";
        let quotes = quotes_of(question, "It is favourable [1].", &[(1, tax)], &[], 2);
        assert_eq!(quotes.len(), 1, "{quotes:?}");
        assert!(quotes[0].text.starts_with("Our income tax provision for the nine months"), "{quotes:?}");
        assert!(quotes[0].text.ends_with("approximately $600 million of tax benefit."), "{quotes:?}");
        assert!(!quotes[0].text.contains('\n'), "one line");
        // Two lines of one sentence, each sharing the question's words: one quote.
        let buyback =
            "In March 2022, the Board of Directors authorized a program to repurchase up to $10.0 billion of our\n\
                       common stock, which replaced the previous $5.0 billion stock repurchase authorization.";
        let quotes =
            quotes_of("What stock repurchase program did Amazon authorize?", "One [1].", &[(1, buyback)], &[], 2);
        assert_eq!(quotes.len(), 1, "{quotes:?}");
        assert_eq!(quotes[0].text, buyback.replace('\n', " "));
        // NVIDIA's repurchase sentence (2023 Q3 NVDA.pdf, p. 45): the line that shares the question's
        // words ends in "for"; its amounts open the next line.
        let repurchase = "Issuer Purchases of Equity Securities\n\
                          During the third quarter and first nine months of fiscal year 2024, we repurchased 8.3 million and 15.9 million shares of our common stock for\n\
                          $3.72 billion and $7.01 billion, respectively. On August 21, 2023, our Board of Directors approved an increase.";
        let question = "Has NVIDIA reported any significant stock repurchase activities in its Q3 2023 10-Q, and what scale did these take?";
        let quotes = quotes_of(question, "It did [1].", &[(1, repurchase)], &[], 1);
        assert_eq!(quotes.len(), 1, "{quotes:?}");
        assert!(
            quotes[0].text.ends_with("common stock for $3.72 billion and $7.01 billion, respectively."),
            "{quotes:?}"
        );
        // A table row stays a row: the line after it is not its continuation.
        assert_eq!(
            quote_pieces("Inventories: 5,433 million (June 25, 2022)\nwere lower"),
            ["Inventories: 5,433 million (June 25, 2022)\n", "were lower"]
        );
    }

    #[test]
    fn a_row_read_twice_is_quoted_once() {
        let question = "What were Apple's Services net sales in Q1 2023?";
        let with_change = "Services: 20,766 million (three months ended December 31, 2022); 19,516 million \
                           (three months ended December 25, 2021); 6% (change, three months ended)";
        let plain = "Services: 20,766 million (three months ended December 31, 2022); 19,516 million (three \
                     months ended December 25, 2021)";
        let quotes = quotes_of(question, "Services grew [1].", &[(1, with_change), (2, plain)], &[], 2);
        assert_eq!(quotes.len(), 1, "{quotes:?}");
        assert_eq!(quotes[0].number, 1);
        // Read the other way round, the row with its change column is the one quoted, in the first's place.
        let quotes = quotes_of(question, "Services grew [1].", &[(1, plain), (2, with_change)], &[], 2);
        assert_eq!(quotes.len(), 1, "{quotes:?}");
        assert_eq!((quotes[0].number, quotes[0].text.as_str()), (2, with_change));
    }

    #[test]
    fn row_labels_are_read_from_rows_with_one_cell_or_more() {
        assert_eq!(
            row_label("Inventories: 5,433 million (June 25, 2022); 6,580 million (September 25, 2021)"),
            Some("Inventories")
        );
        assert_eq!(
            row_label("Cost of sales: Products: 41,485 million (three months ended June 25, 2022)"),
            Some("Cost of sales: Products")
        );
        assert_eq!(row_label("Other income: $(7,139) million (nine months ended Oct 1, 2022)"), Some("Other income"));
        // An accounting negative without a dollar sign first (Microsoft's cash-flow statement), one cell
        // or more: the column's " (" is not the one the amount opens with.
        assert_eq!(
            row_label("Net cash used in financing: (10,883) million (three months ended September 30, 2022); (16,276) million (three months ended September 30, 2021)"),
            Some("Net cash used in financing")
        );
        assert_eq!(row_label("Other, net: (264) million (three months ended September 30, 2022)"), Some("Other, net"));
        assert_eq!(row_label("Change: (3)% (change, three months ended)"), Some("Change"));
        assert_eq!(row_label("Per share: Diluted: (1.20) (three months)"), Some("Per share: Diluted"));
        // A label holding a parenthesis (Microsoft's and Amazon's cash-flow totals).
        assert_eq!(
            row_label("Net cash from (used in) investing: 503 million (three months ended September 30, 2023); (3,132) million (three months ended September 30, 2022)"),
            Some("Net cash from (used in) investing")
        );
        assert_eq!(
            row_label("Net cash provided by (used in) operating activities: 11,404 million (three months ended September 30, 2022)"),
            Some("Net cash provided by (used in) operating activities")
        );
        assert_eq!(
            row_label(
                "2009 issuance of $3.8 billion 2039 5.20% 5.24%: $520 (September 30, 2022); $520 (June 30, 2022)"
            ),
            Some("2009 issuance of $3.8 billion 2039 5.20% 5.24%")
        );
        assert_eq!(row_label("Revenue (in millions) grew by a third (see below)"), None, "no colon before an amount");
        assert_eq!(row_label("The Company: see Note 4 (below)"), None, "no amount");
        assert_eq!(row_label("Revenue grew 19% (quarter over quarter)."), None, "a sentence");
    }

    #[test]
    fn a_long_row_is_cut_after_a_column_and_marked() {
        let row = format!("Total net sales: {}", ["$82,959 million (three months ended June 25, 2022)"; 12].join("; "));
        let quote =
            key_quote("How have Apple's total net sales changed?", "They changed [1].", &[(1, &row)]).expect("a quote");
        assert!(quote.text.chars().count() <= QUOTE_CHARS + 2);
        assert!(quote.text.ends_with("2022) …"), "{}", quote.text);
    }
}
