//! The text helpers every step shares, below everything else in the crate: word stems for matching
//! (with CJK character pairs), sentence pieces, wrapped PDF lines, table-row labels, the amounts a text
//! states, the statements that the documents do not answer, and the head Quarry writes on a
//! per-document line. No model, no passage types: plain `&str` in, plain values out.

/// Words too common to say what a question is about.
const STOP_WORDS: &[&str] = &[
    "the", "and", "for", "was", "were", "what", "which", "who", "whom", "how", "did", "does", "has", "have", "had",
    "with", "from", "that", "this", "these", "those", "its", "their", "are", "is", "of", "in", "on", "to", "a", "an",
    "by", "as", "at", "or", "be", "been", "any", "there", "over", "into", "about", "when", "where", "why", "can",
    "could", "would",
];

/// Chinese words that only shape a question ("what", "which", "how many", "according to", "please look
/// up"), as the character pairs [`stems`] makes of them.
const CJK_STOP_PAIRS: &[&str] = &[
    "什么", "哪些", "哪个", "哪种", "多少", "如何", "怎么", "怎样", "是否", "分别", "根据", "介绍", "查询", "请问",
    "帮我", "我查", "有哪", "是什", "有什", "了哪", "是哪", "为什", "情况",
];

/// What [`stems`] matches by: the first five letters of each word that is not a stop word, lower case (a
/// crude stem, so "revenues" meets "revenue" and "quarterly" meets "quarter"); and in runs of CJK characters,
/// which are not separated into words, each pair of adjacent characters (the character bigrams of CJK
/// keyword indexing, as Lucene's CJKAnalyzer and our BM25 index cut them), question-word pairs left out. A
/// lone CJK character between other scripts ("2022年") is too common to say anything and is left out.
pub(crate) fn stems(text: &str) -> std::collections::HashSet<String> {
    stems_of(text, true)
}

/// [`stems`] of the words written without CJK characters only: what a question shares with a document's
/// context line ([`crate::document_match`]). Character pairs are too small a unit to say that a question
/// names a document — "中国", "联通" are in most titles of a Chinese operator's library — and neither is
/// the year glued to them ("2023年"): matching context lines by either moved the wrong documents' passages
/// first (NetOperatorQA, docs/evaluation/decisions.md, 2026-11-27 (c)).
pub(crate) fn word_stems(text: &str) -> std::collections::HashSet<String> {
    stems_of(text, false)
}

fn stems_of(text: &str, cjk_pairs: bool) -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        if !cjk_pairs && word.chars().any(quarry_core::is_cjk_char) {
            continue;
        }
        let chars: Vec<char> = word.chars().collect();
        let mut start = 0;
        while start < chars.len() {
            let cjk = quarry_core::is_cjk_char(chars[start]);
            let end = (start..chars.len()).find(|&i| quarry_core::is_cjk_char(chars[i]) != cjk).unwrap_or(chars.len());
            let run = &chars[start..end];
            if cjk {
                for pair in run.windows(2) {
                    let pair: String = pair.iter().collect();
                    if !CJK_STOP_PAIRS.contains(&pair.as_str()) {
                        out.insert(pair);
                    }
                }
            } else {
                let lower = run.iter().collect::<String>().to_lowercase();
                if !STOP_WORDS.contains(&lower.as_str()) {
                    out.insert(lower.chars().take(5).collect());
                }
            }
            start = end;
        }
    }
    out
}

/// Whether `next` (a piece of [`sentence_pieces`]) goes on with the sentence of the line `line` that a
/// PDF's text layer wrapped mid-sentence: `line` ends in a line break without a full stop, colon or
/// semicolon, `next` starts in lower case (or with a digit or `$` after a line ending in a lower-case
/// word: "… shares of our common stock for" / "$3.72 billion and $7.01 billion, respectively."), and
/// neither is a table row ([`crate::text::row_label`]).
pub(crate) fn wrapped_line_goes_on(line: &str, next: &str) -> bool {
    let body = line.trim_end();
    line.ends_with('\n')
        && !body.is_empty()
        && !body.ends_with(['.', '!', '?', ':', ';'])
        && next.trim_start().chars().next().is_some_and(|c| {
            // A sentence goes on in lower case, or — after a word in lower case ("… repurchased 8.3
            // million shares for") — with the amount it was leading to.
            c.is_lowercase() || (body.ends_with(char::is_lowercase) && (c.is_ascii_digit() || c == '$'))
        })
        && crate::text::row_label(body.trim()).is_none()
        && crate::text::row_label(next.trim()).is_none()
}

/// `text` split into sentences (after ". ") and lines, keeping every character: the pieces, joined, give
/// `text` back. (Joining lines that a PDF's text layer wrapped mid-sentence into one piece was tried: on
/// the whole sec-10-q set it cut the reference figures NaiveRAG reads from 0.553 to 0.507 at the default
/// budget — longer pieces, fewer of them fit; docs/evaluation/decisions.md, 2026-11-26 (e).)
pub(crate) fn sentence_pieces(text: &str) -> Vec<&str> {
    let mut pieces: Vec<&str> = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        // A line break, a full stop before white space, or a Chinese/Japanese sentence end (no space follows
        // those in CJK text).
        let ends = c == '\n' || (c == '.' && next.is_some_and(char::is_whitespace)) || CJK_SENTENCE_ENDS.contains(&c);
        if ends {
            let end = i + c.len_utf8();
            pieces.push(&text[start..end]);
            start = end;
        }
    }
    if start < text.len() {
        pieces.push(&text[start..]);
    }
    pieces
}

/// The level (1–6) of `line` when it is a Markdown ATX heading — at most three spaces, one to six `#`,
/// then a space, a tab or the line's end (CommonMark) — else `None`. The one heading test of the
/// answer and report finishing (demoting a section's headings, dropping a heading left with nothing
/// under it, keeping headings out of citations and the claim check).
pub fn heading_level(line: &str) -> Option<usize> {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() >= 4 {
        return None;
    }
    let hashes = trimmed.chars().take_while(|&c| c == '#').count();
    let rest = &trimmed[hashes..];
    ((1..=6).contains(&hashes) && (rest.is_empty() || rest.starts_with([' ', '\t']))).then_some(hashes)
}

/// Fewest distinct words a sentence needs for [`says_again`] to call it a repeat.
pub const REPEAT_MIN_WORDS: usize = 4;

/// Share of each of two sentences' words that the other must hold for [`says_again`].
pub const REPEAT_OVERLAP: f64 = 0.8;

/// The distinct words of `sentence` by which [`says_again`] compares sentences: lower-cased runs of
/// letters and digits ("$7,192 million" gives `7`, `192`, `million`), and each CJK character on its own.
pub fn sentence_words(sentence: &str) -> std::collections::HashSet<String> {
    let mut set = std::collections::HashSet::new();
    let mut word = String::new();
    for c in sentence.chars().chain(std::iter::once(' ')) {
        if quarry_core::is_cjk_char(c) {
            set.insert(c.to_string());
        } else if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
            continue;
        }
        if !word.is_empty() {
            set.insert(std::mem::take(&mut word));
        }
    }
    set
}

/// Whether a sentence of the words `later` ([`sentence_words`]) says again what one of the words
/// `earlier` said: it has at least [`REPEAT_MIN_WORDS`] words, each holds at least [`REPEAT_OVERLAP`]
/// of the other's, and every number of `later` is in `earlier`. Both ways, so a sentence that adds a
/// clause to an earlier one is no repeat, and neither is a short one that a long earlier one contains;
/// and "Change (three months): 6%" does not repeat "Change (three months): 5%".
pub fn says_again(later: &std::collections::HashSet<String>, earlier: &std::collections::HashSet<String>) -> bool {
    let shared = later.intersection(earlier).count() as f64;
    later.len() >= REPEAT_MIN_WORDS
        && shared >= REPEAT_OVERLAP * later.len() as f64
        && shared >= REPEAT_OVERLAP * earlier.len() as f64
        && later.iter().filter(|w| w.chars().any(|c| c.is_ascii_digit())).all(|w| earlier.contains(w))
}

/// Full-width marks that end a sentence or clause in Chinese and Japanese text: 。！？；
pub(crate) const CJK_SENTENCE_ENDS: &[char] = &['。', '！', '？', '；'];

/// The label of a table row as [`quarry_core::table_row::write_row`] writes it — `Inventories: 5,433
/// million (June 25, 2022); …` gives `Inventories` — with one cell or more; `None` for any other text.
/// Also read: a first cell that is an accounting negative without a currency sign (`Net cash used in
/// financing: (10,883) million (three months …); …`, Microsoft's statements) and a label holding a
/// parenthesis (`Net cash from (used in) investing: 503 million (…)`, `Net cash provided by (used in)
/// operating activities: …`), which [`quarry_core::table_row::parse_row`] does not read.
pub(crate) fn row_label(piece: &str) -> Option<&str> {
    if let Some((label, _)) = quarry_core::table_row::parse_row(piece) {
        return Some(label);
    }
    // `label: value (column)…`: the first cell's column opens at the first " (" (not the one a negative
    // amount opens right after the colon) that has a ": " before it, the value between them starting
    // as an amount does.
    let piece = piece.trim_end();
    if !piece.ends_with(')') {
        return None;
    }
    piece.match_indices(" (").map(|(at, _)| at).filter(|&at| !piece[..at].ends_with(':')).find_map(|open| {
        let value_start = piece[..open].rfind(": ")?;
        let amount = piece[value_start + 2..open]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || matches!(c, '$' | '(' | '-' | '€' | '£' | '¥'));
        amount.then(|| &piece[..value_start])
    })
}

/// The words [`crate::genre::render_quotes`] starts a quote with, English and Chinese. A quote under a per-document
/// line follows the model's words on the same line; the claim check starts a new sentence here, so the
/// model's words and the quote are each checked for themselves ([`crate::claims`]).
pub(crate) const QUOTE_LEAD_INS: [&str; 2] = ["From the passages: ", "段落原文："];

/// The amounts, percentages and numbers `text` states ([`crate::figures`]): its figures less dates.
pub(crate) fn amounts(text: &str) -> Vec<crate::figures::Figure> {
    crate::figures::figures(text)
        .into_iter()
        .filter(|f| !matches!(f.kind, crate::figures::FigureKind::Date { .. }))
        .collect()
}

/// Whether `text` states an amount, a percentage or a number (a date alone does not count). An answer
/// that does has found its row: [`crate::genre::financial::key_quote::key_quotes`] then quotes no row for its label alone and looks through
/// no rest of a document, so a caller need not read one.
pub fn states_amount(text: &str) -> bool {
    !amounts(text).is_empty()
}

/// Phrases that say the documents do not answer (lower case). An answer made of these is an abstention.
const DECLINE_PHRASES: &[&str] = &[
    "do not contain",
    "does not contain",
    "do not answer",
    "does not answer",
    "do not mention",
    "does not mention",
    "do not provide",
    "does not provide",
    "do not include",
    "does not include",
    "do not state",
    "does not state",
    "do not specify",
    "does not specify",
    "not in the passages",
    "not in the documents",
    "not found in",
    "not mentioned in",
    "not provided in",
    "not stated in",
    "not available in",
    "no information",
    "cannot answer",
    "can't answer",
    "cannot be answered",
    "cannot be determined",
    "unable to answer",
    "unable to find",
    "not enough information",
    "the library does not",
    // Chinese: "not mentioned", "not provided", "cannot answer", "cannot determine", "not found", "no relevant
    // information", "does not contain / include", "does not say".
    "没有提到",
    "没有提及",
    "未提及",
    "未提到",
    "没有提供",
    "未提供",
    "无法回答",
    "无法确定",
    "没有找到",
    "未找到",
    "没有相关信息",
    "不包含",
    "未包含",
    "没有包含",
    "未说明",
    "没有说明",
];

/// Whether `text` says that the documents do not answer (one of a fixed list of phrases, English and Chinese).
pub fn is_decline(text: &str) -> bool {
    let lower = text.to_lowercase().replace('’', "'");
    DECLINE_PHRASES.iter().any(|p| lower.contains(p))
}

/// The start Quarry writes on a document's line before the model's words: `- **file** (period): `, or
/// `- **file**: ` when the document's context names no period ([`split_line_head`] reads it back).
pub(crate) fn line_head(file: &str, period: Option<&str>) -> String {
    match period {
        Some(period) => format!("- **{file}** ({period}): "),
        None => format!("- **{file}**: "),
    }
}

/// A line that starts with a [`line_head`], as `(file, the rest of the line)`; `None` for any other
/// text. The claim check leaves the head out: it is Quarry's label, taken from the document's context,
/// not something the model claims (its period is a date, and a date alone made the head a claim).
pub(crate) fn split_line_head(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix("- **")?;
    let (file, rest) = rest.split_once("**")?;
    let rest = match rest.strip_prefix(" (") {
        Some(period) => period.split_once("):")?.1,
        None => rest.strip_prefix(':')?,
    };
    Some((file, rest.trim_start()))
}

#[cfg(test)]
mod tests {
    use super::heading_level;

    #[test]
    fn headings_are_read_as_commonmark_reads_them() {
        assert_eq!(heading_level("# Revenue"), Some(1));
        assert_eq!(heading_level("   ### Three months ended April 1, 2023"), Some(3));
        assert_eq!(heading_level("##"), Some(2));
        assert_eq!(heading_level("###### six"), Some(6));
        // Seven hashes, no space after them, four spaces before: not headings.
        for line in ["####### seven", "#hashtag", "    # code", "- # item", "Revenue # 2"] {
            assert_eq!(heading_level(line), None, "{line}");
        }
    }
}
