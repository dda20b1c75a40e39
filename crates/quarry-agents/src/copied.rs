//! Figures the model changed in words it copied from a passage, given back the passage's figures; row
//! labels it left out, given back.
//!
//! A small model often answers by copying a passage's sentence or table row, and changes a number as it
//! copies: "As of September 30, 2022, our long-term unsecured debt rating was AAA …" comes out "As of
//! September 30, 2012, …", a year is cut to "202", an amount loses a digit. The words say the sentence is
//! the passage's; its numbers then must be too. A reader checking the citation finds the sentence and a
//! different figure; the claim check can only flag it. Here such numbers are put back: a run of the
//! answer's words and numbers that a passage holds word for word — at least [`MIN_RUN_TOKENS`] tokens, of
//! which [`MIN_RUN_WORDS`] words — but with other numbers where the answer has numbers, gets the passage's
//! numbers, unless some passage holds the run with the answer's own numbers (a filing's row copied right,
//! beside another filing's row of the same words), and only when the passages the sentence cites (or,
//! citing none, all the passages) agree on one set of numbers for it. No model call; no genre knowledge.
//!
//! Most such changes the embedded model made came from its repetition control, not from the model: DRY
//! penalised a digit that continued a repeat, and since digits break its repeats (quarry-gguf's
//! `DRY_SEQUENCE_BREAKERS`, docs/evaluation/decisions.md, 2026-12-07 (e)) they are rare. What is put back
//! here now is what a model changes on its own, an OpenAI-compatible server's included.
//!
//! The same goes for what it leaves out of a table row it copies: a row's cells opening a sentence
//! without the row's label get the label back ([`restore_row_labels`]).

use crate::answer::{pieces, Piece};
use quarry_core::Passage;

/// Fewest tokens (words and numbers) a copied run needs before its numbers are put back: short runs
/// ("revenue increased $3.2 billion") are phrasing many sentences share, not a copy.
pub const MIN_RUN_TOKENS: usize = 10;

/// Fewest words among a run's tokens ([`MIN_RUN_TOKENS`]): a run of numbers with a word or two between
/// them (a table's row of amounts) says nothing about which row was copied.
pub const MIN_RUN_WORDS: usize = 6;

/// One number of the answer put back to what its passage says.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RestoredFigure {
    /// The number as the model wrote it.
    pub written: String,
    /// The number as the passage states it.
    pub passage_says: String,
    /// The answer's number of the passage (1-based, as the answer cites it).
    pub passage: usize,
}

/// A word or a number of a text, with its byte range. A number starts with a digit and takes in the
/// digits, a `.` before a digit ("1.0") and a `,` before exactly three digits ("82,959"; "25,2022" is two
/// numbers, a day and a year run together); a word is a run of letters and digits starting with a letter
/// ("form10", "q3"), compared lower-cased.
#[derive(Debug)]
struct Token {
    start: usize,
    end: usize,
    number: bool,
    lower: String,
}

fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (start, c) = chars[i];
        if !c.is_alphanumeric() {
            i += 1;
            continue;
        }
        let number = c.is_ascii_digit();
        let digit_at = |k: usize| chars.get(k).is_some_and(|&(_, n)| n.is_ascii_digit());
        let mut j = i + 1;
        while j < chars.len() {
            let d = chars[j].1;
            let joins = if number {
                d.is_ascii_digit()
                    // A thousands separator: exactly three digits follow ("25,2022" is a day and a year).
                    || (d == ',' && (1..=3).all(|k| digit_at(j + k)) && !digit_at(j + 4))
                    || (d == '.' && digit_at(j + 1))
            } else {
                d.is_alphanumeric()
            };
            if !joins {
                break;
            }
            j += 1;
        }
        let end = chars.get(j).map_or(text.len(), |&(at, _)| at);
        out.push(Token { start, end, number, lower: text[start..end].to_lowercase() });
        i = j;
    }
    out
}

/// Whether two numbers are the same figure as written: equal but for thousands separators.
fn same_number(a: &str, b: &str) -> bool {
    a.replace(',', "") == b.replace(',', "")
}

/// Whether `written` can be the model's copy of `says` with digits changed: as many digits (a year
/// 2012 for 2022, an amount 18,547 for 18,546, 3.2 for 2.9), or its digits the start or end of the
/// passage's (a year cut to "202" or "22"). Anything else — a day standing where a year stood, an amount
/// where a date stood — means the run pairs numbers that are not copies of each other (the model left one
/// out or wrote one more), and the run is left as written.
fn copy_of(written: &str, says: &str) -> bool {
    let digits = |s: &str| s.chars().filter(char::is_ascii_digit).collect::<String>();
    let (written, says) = (digits(written), digits(says));
    written.len() == says.len() || says.starts_with(&written) || says.ends_with(&written)
}

/// Whether a token of the answer and one of a passage fit one template: the same word, or two numbers.
fn fits(a: &Token, b: &Token) -> bool {
    a.number == b.number && (a.number || a.lower == b.lower)
}

/// A run of an answer sentence's tokens that a passage holds word for word.
struct Run {
    /// First token of the run in the sentence, and its length.
    at: usize,
    len: usize,
    /// The passage (index into the passages) and the passage's numbers in the run, in order.
    passage: usize,
    numbers: Vec<String>,
    /// The run starts where a clause of the passage starts — a word that is the passage's first token or
    /// follows a line break, a full stop, a colon, a semicolon, `!` or `?` — not inside a label: "Net
    /// sales: $53,037 million …" under a segment's heading matches the end of "Total net sales: $82,959
    /// million …", another row. Only such runs give their numbers back; any run shows a copy made right.
    clause_start: bool,
}

/// The maximal runs of at least [`MIN_RUN_TOKENS`] tokens ([`MIN_RUN_WORDS`] words, one number) where
/// `sentence` and `passage` fit one template ([`fits`]); a run that does not start a clause of the
/// passage is given again from its first token that does (the answer's "… period ended September 30,
/// 2022): Our principal sources …" matches a row's "… months ended September 30, 2022)" before the
/// sentence it copied), when that part still has the tokens, words and a number a run needs.
fn runs(sentence: &[Token], passage_index: usize, passage_text: &str, passage: &[Token]) -> Vec<Run> {
    let clause_at = |b: usize| {
        !passage[b].number
            && (b == 0 || passage_text[passage[b - 1].end..passage[b].start].contains(['.', ';', ':', '!', '?', '\n']))
    };
    let run_at = |a: usize, b: usize, len: usize, clause_start: bool| {
        let run = &sentence[a..a + len];
        let words = run.iter().filter(|t| !t.number).count();
        (len >= MIN_RUN_TOKENS && words >= MIN_RUN_WORDS && words < len).then(|| Run {
            at: a,
            len,
            passage: passage_index,
            numbers: passage[b..b + len]
                .iter()
                .filter(|t| t.number)
                .map(|t| passage_text[t.start..t.end].to_string())
                .collect(),
            clause_start,
        })
    };
    let mut out = Vec::new();
    for a in 0..sentence.len() {
        for b in 0..passage.len() {
            if !fits(&sentence[a], &passage[b]) || (a > 0 && b > 0 && fits(&sentence[a - 1], &passage[b - 1])) {
                continue;
            }
            let mut len = 0;
            while a + len < sentence.len() && b + len < passage.len() && fits(&sentence[a + len], &passage[b + len]) {
                len += 1;
            }
            let Some(run) = run_at(a, b, len, clause_at(b)) else { continue };
            if !run.clause_start {
                if let Some(k) = (1..len).find(|&k| clause_at(b + k)) {
                    out.extend(run_at(a + k, b + k, len - k, true));
                }
            }
            out.push(run);
        }
    }
    out
}

/// `markdown` with the numbers put back that the model changed in runs it copied from `passages`
/// (numbered from 1, as its prompt numbered them), as the module doc says; returns the text and what was
/// put back. Citation markers, and sentences mostly in Chinese or Japanese (not measured), are left as
/// they are. Cost: for each sentence, a token-by-token comparison with every passage (a few thousand
/// tokens each).
pub fn restore_copied_figures(markdown: &str, passages: &[Passage]) -> (String, Vec<RestoredFigure>) {
    let passage_tokens: Vec<Vec<Token>> = passages.iter().map(|p| tokens(&p.text)).collect();
    // Every number the passages state, as written without separators.
    let stated: std::collections::HashSet<String> = passage_tokens
        .iter()
        .zip(passages)
        .flat_map(|(tokens, p)| tokens.iter().filter(|t| t.number).map(|t| p.text[t.start..t.end].replace(',', "")))
        .collect();
    let mut out = String::with_capacity(markdown.len());
    let mut restored = Vec::new();
    for sentence in crate::text::sentence_pieces(markdown) {
        if quarry_core::is_mostly_cjk(sentence) {
            out.push_str(sentence);
            continue;
        }
        // The sentence's own text (markers blanked to spaces, so byte offsets hold) and what it cites.
        let mut plain = String::with_capacity(sentence.len());
        let mut cited: Vec<usize> = Vec::new();
        for piece in pieces(sentence) {
            match piece {
                Piece::Text(text) => plain.push_str(text),
                Piece::Marker { raw, numbers } => {
                    plain.push_str(&" ".repeat(raw.len()));
                    cited.extend(numbers.into_iter().filter(|&n| (1..=passages.len()).contains(&n)).map(|n| n - 1));
                }
            }
        }
        let words = tokens(&plain);
        let all: Vec<Run> =
            passages.iter().enumerate().flat_map(|(i, p)| runs(&words, i, &p.text, &passage_tokens[i])).collect();
        // Each number of a run as the answer writes it, beside the number its passage states there.
        let pairs = |run: &Run| -> Vec<(&str, String)> {
            (run.at..run.at + run.len)
                .filter(|&k| words[k].number)
                .map(|k| &plain[words[k].start..words[k].end])
                .zip(run.numbers.iter().cloned())
                .collect()
        };
        let agrees = |run: &Run| pairs(run).iter().all(|(written, says)| same_number(written, says));
        // Some passage holds a run with the answer's own numbers: the copy is right (maybe cited to
        // another filing, which citation repair mends), so nothing is changed in this sentence.
        if all.is_empty() || all.iter().any(agrees) {
            out.push_str(sentence);
            continue;
        }
        // The run that gives its numbers back: starting a clause of its passage; from a passage the
        // sentence cites when one holds such a run; then the fewest numbers changed (the passage the
        // model copied from keeps most of its numbers), then the longest.
        let clauses: Vec<&Run> = all.iter().filter(|r| r.clause_start).collect();
        let from_cited: Vec<&Run> = clauses.iter().copied().filter(|r| cited.contains(&r.passage)).collect();
        let candidates = if from_cited.is_empty() { clauses } else { from_cited };
        let kept = |run: &Run| pairs(run).iter().filter(|(written, says)| same_number(written, says)).count();
        let rank = |run: &Run| (kept(run), run.len);
        let Some(top) = candidates.iter().map(|r| rank(r)).max() else {
            out.push_str(sentence);
            continue;
        };
        let chosen: Vec<&Run> = candidates.into_iter().filter(|r| rank(r) == top).collect();
        let (first, rest) = chosen.split_first().expect("the best-ranked runs");
        let same_span = rest.iter().all(|r| r.at == first.at);
        let same_numbers = rest.iter().all(|r| r.numbers.iter().zip(&first.numbers).all(|(a, b)| same_number(a, b)));
        let first_pairs = pairs(first);
        let copies = first_pairs.iter().all(|(written, says)| copy_of(written, says));
        // The amounts it would change (not years, not numbers of one or two digits) all stand elsewhere in
        // the passages: the model wrote another row's or sentence's figures under these words ("Services:
        // $81,797 million …", the total's figures under a segment's label), a mix-up the claim check
        // flags, not a copy gone wrong; giving the words their own figures would drop what it meant.
        let amounts: Vec<String> = first_pairs
            .iter()
            .filter(|(written, says)| {
                !same_number(written, says) && written.chars().filter(char::is_ascii_digit).count() >= 3
            })
            .map(|(written, _)| written.replace(',', ""))
            .filter(|written| crate::figures::years(written).is_empty())
            .collect();
        let mixed_up = !amounts.is_empty() && amounts.iter().all(|a| stated.contains(a));
        if !same_span || !same_numbers || !copies || mixed_up {
            out.push_str(sentence);
            continue;
        }
        let mut text = sentence.to_string();
        // Back to front, so the byte offsets of the numbers not yet replaced hold (markers were blanked in
        // `plain` byte for byte, so its offsets are the sentence's).
        let at: Vec<&Token> = words[first.at..first.at + first.len].iter().filter(|t| t.number).collect();
        for (token, (written, number)) in at.iter().zip(&first_pairs).rev() {
            if !same_number(written, number) {
                restored.push(RestoredFigure {
                    written: written.to_string(),
                    passage_says: number.clone(),
                    passage: first.passage + 1,
                });
                text.replace_range(token.start..token.end, number);
            }
        }
        out.push_str(&text);
    }
    restored.reverse();
    (out, restored)
}

/// The labels of table rows whose cells a sentence of `markdown` opens with, given back where the model
/// copied a row's cells and left its label out: "7% (three months ended April 1, 2023); 6% (three months
/// ended March 26, 2022) \[7\]" as a filing's whole line says nothing of what the 7% is, and becomes
/// "Percentage of total net sales: 7% (…); 6% (…) \[7\]". A row is a line of a passage in Quarry's written
/// form of a table row (`label: value (column); …`, [`quarry_core::table_row`]); a sentence opens with its
/// cells when, after its list marker or a per-document line's head ([`crate::text::split_line_head`]),
/// it starts with one of the row's cells, value and column, word for word (the answer prompt may have
/// shown only some periods' columns). Of the rows it opens with, those
/// matching the most cells in a row decide; when they carry different labels (two ratio rows both
/// "7% (…)") the sentence is left as written. Sentences starting anywhere else — "R&D was 7% (…)", a label
/// of the model's own — are the model's words and left as they are, as are sentences mostly in CJK text.
/// Returns the text and the labels given back, in order. No model call; no genre knowledge.
pub fn restore_row_labels(markdown: &str, passages: &[Passage]) -> (String, Vec<String>) {
    // Each row of the passages, as its label and its cells, once.
    let mut rows: Vec<(&str, Vec<String>)> = Vec::new();
    for passage in passages {
        for line in passage.text.lines() {
            let Some((label, cells)) = quarry_core::table_row::parse_row(line.trim()) else { continue };
            let cells: Vec<String> = cells.iter().map(quarry_core::table_row::TableCell::written).collect();
            if !rows.iter().any(|(l, c)| *l == label && *c == cells) {
                rows.push((label, cells));
            }
        }
    }
    let mut out = String::with_capacity(markdown.len());
    let mut given = Vec::new();
    if rows.is_empty() {
        return (markdown.to_string(), given);
    }
    for sentence in crate::text::sentence_pieces(markdown) {
        let body_at = sentence_body_start(sentence);
        let body = &sentence[body_at..];
        if quarry_core::is_mostly_cjk(sentence) || body.is_empty() {
            out.push_str(sentence);
            continue;
        }
        // How many of a row's cells, in order, the sentence's body opens with, from any of its cells (the
        // prompt may have shown only some periods' columns).
        let opens_with = |cells: &[String]| -> usize {
            let from = |start: usize| {
                let mut rest = body;
                let mut matched = 0;
                for cell in &cells[start..] {
                    let Some(after) = rest.strip_prefix(cell.as_str()) else { break };
                    matched += 1;
                    match after.strip_prefix(quarry_core::table_row::CELL_SEPARATOR) {
                        Some(next) => rest = next,
                        None => break,
                    }
                }
                matched
            };
            (0..cells.len()).map(from).max().unwrap_or(0)
        };
        let matched: Vec<(&str, usize)> = rows.iter().map(|(label, cells)| (*label, opens_with(cells))).collect();
        let most = matched.iter().map(|(_, m)| *m).max().unwrap_or(0);
        let mut labels: Vec<&str> = matched.iter().filter(|(_, m)| *m == most).map(|(label, _)| *label).collect();
        labels.sort_unstable();
        labels.dedup();
        match labels.as_slice() {
            [label] if most > 0 => {
                out.push_str(&sentence[..body_at]);
                out.push_str(label);
                out.push_str(": ");
                out.push_str(body);
                given.push(label.to_string());
            }
            _ => out.push_str(sentence),
        }
    }
    (out, given)
}

/// Where a sentence piece's own words start: after its leading white space, then a per-document line's
/// head (`- **file** (period): `, [`crate::text::split_line_head`]) or a list marker (`- `, `* `).
fn sentence_body_start(sentence: &str) -> usize {
    let trimmed = sentence.trim_start();
    let lead = sentence.len() - trimmed.len();
    if let Some((_, rest)) = crate::text::split_line_head(trimmed) {
        return sentence.len() - rest.len();
    }
    match trimmed.strip_prefix("- ").or_else(|| trimmed.strip_prefix("* ")) {
        Some(rest) => sentence.len() - rest.trim_start().len(),
        None => lead,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passage(text: &str) -> Passage {
        Passage {
            chunk_id: 1,
            chunk_index: None,
            library: "lib".into(),
            document_id: "d1".into(),
            path: "d1.pdf".into(),
            page_start: None,
            page_end: None,
            sheet: None,
            heading_path: Vec::new(),
            text: text.into(),
            context: String::new(),
            score: 0.0,
            ocr: false,
        }
    }

    #[test]
    fn a_year_changed_in_a_copied_sentence_is_put_back() {
        let passages = [passage(
            "Liquidity. As of September 30, 2022, our long-term unsecured debt rating was AAA, and cash \
             investments were in excess of $1.0 billion. Other text.",
        )];
        let answer = "- As of September 30, 2012, our long-term unsecured debt rating was AAA, and cash investments \
                      were in excess of $1.0 billion [1].";
        let (fixed, restored) = restore_copied_figures(answer, &passages);
        assert_eq!(
            fixed,
            "- As of September 30, 2022, our long-term unsecured debt rating was AAA, and cash investments \
             were in excess of $1.0 billion [1]."
        );
        assert_eq!(restored, vec![RestoredFigure { written: "2012".into(), passage_says: "2022".into(), passage: 1 }]);
    }

    #[test]
    fn a_year_cut_short_is_completed() {
        let passages = [passage(
            "The Company settled certain matters during the second quarter of 2023 that did not individually \
             or in the aggregate have a material impact.",
        )];
        let (fixed, restored) = restore_copied_figures(
            "The Company settled certain matters during the second quarter of 202 [1]",
            &passages,
        );
        assert_eq!(fixed, "The Company settled certain matters during the second quarter of 2023 [1]");
        assert_eq!(restored.len(), 1);
    }

    #[test]
    fn a_row_copied_right_from_one_filing_is_kept_beside_another_filings_row_of_the_same_words() {
        let q3_2022 = passage(
            "Total net sales: $82,959 million (three months ended June 25, 2022); $81,434 million (three months \
             ended June 26, 2021)",
        );
        let q3_2023 = passage(
            "Total net sales: $81,797 million (three months ended July 1, 2023); $82,959 million (three months \
             ended June 25, 2022)",
        );
        let answer = "Total net sales: $81,797 million (three months ended July 1, 2023); $82,959 million (three \
                      months ended June 25, 2022) [1]";
        let (fixed, restored) = restore_copied_figures(answer, &[q3_2022, q3_2023]);
        assert_eq!(fixed, answer);
        assert!(restored.is_empty());
    }

    #[test]
    fn passages_that_disagree_leave_the_sentence_as_written() {
        let a = passage("Server products and cloud services revenue increased $3.3 billion or 22% driven by Azure.");
        let b = passage("Server products and cloud services revenue increased $2.9 billion or 19% driven by Azure.");
        let answer = "Server products and cloud services revenue increased $3.2 billion or 20% driven by Azure.";
        // Cited to neither: the two passages disagree, nothing is guessed.
        assert_eq!(restore_copied_figures(answer, &[a.clone(), b.clone()]).0, answer);
        // Cited to the second: its figures.
        let cited = "Server products and cloud services revenue increased $3.2 billion or 20% driven by Azure [2].";
        let (fixed, restored) = restore_copied_figures(cited, &[a, b]);
        assert_eq!(
            fixed,
            "Server products and cloud services revenue increased $2.9 billion or 19% driven by Azure [2]."
        );
        assert_eq!(restored.len(), 2);
    }

    #[test]
    fn short_phrases_and_the_models_own_sentences_are_not_touched() {
        let passages = [passage("Revenue increased $3.3 billion or 22%. Operating income was $21,518 million.")];
        for answer in [
            "Revenue increased $3.2 billion or 18%.",
            "Apple's revenue grew 5% to $94,836 million in the second quarter of 2023 [1].",
            "营业收入为 3,549 亿元，同比增长 8.3% [1]。",
        ] {
            let (fixed, restored) = restore_copied_figures(answer, &passages);
            assert_eq!(fixed, answer);
            assert!(restored.is_empty());
        }
    }

    #[test]
    fn numbers_join_their_separators_and_words_their_digits() {
        let found: Vec<(bool, String)> = tokens("$82,959 million; Form10-K, 1.0. Q3 June 25,2022")
            .into_iter()
            .map(|t| (t.number, t.lower))
            .collect();
        let expected = [
            (true, "82,959"),
            (false, "million"),
            (false, "form10"),
            (false, "k"),
            (true, "1.0"),
            (false, "q3"),
            (false, "june"),
            (true, "25"),
            (true, "2022"),
        ];
        assert_eq!(found, expected.map(|(n, w)| (n, w.to_string())));
    }

    #[test]
    fn the_passage_the_model_copied_from_keeps_most_of_its_numbers() {
        // Two filings' liquidity sentences alike; the model copied the first and changed one year.
        let q3 = passage(
            "Our principal sources of liquidity are cash flows generated from operations and our cash \
             balances, which were $96.0 billion and $58.7 billion as of December 31, 2021 and September 30, 2022.",
        );
        let q1 = passage(
            "Our principal sources of liquidity are cash flows generated from operations and our cash \
             balances, which were $70.0 billion and $64.4 billion as of December 31, 2022 and March 31, 2023.",
        );
        let answer = "Our principal sources of liquidity are cash flows generated from operations and our cash \
                      balances, which were $96.0 billion and $58.7 billion as of December 31, 2021 and September \
                      30, 2012.";
        let (fixed, restored) = restore_copied_figures(answer, &[q1, q3]);
        assert!(fixed.ends_with("$96.0 billion and $58.7 billion as of December 31, 2021 and September 30, 2022."));
        assert_eq!(restored, vec![RestoredFigure { written: "2012".into(), passage_says: "2022".into(), passage: 2 }]);
    }

    #[test]
    fn a_run_is_taken_from_the_clause_it_copied() {
        // The answer's line head ends as the row before the copied sentence ends ("… ended September 30,
        // 2022)"), so the run begins inside that row; the sentence it copied still gives its year back.
        let passages = [passage(
            "Net cash: 6,532 million (twelve months ended September 30, 2022)\nOur principal sources of liquidity \
             are cash flows and balances, which were $96.0 billion and $58.7 billion as of December 31, 2021 and \
             September 30, 2022. Other text.",
        )];
        let answer = "- **2022 Q3.pdf** (quarterly period ended September 30, 2022): Our principal sources of \
                      liquidity are cash flows and balances, which were $96.0 billion and $58.7 billion as of December \
                      31, 2021 and September 30, 2012 [1].";
        let (fixed, restored) = restore_copied_figures(answer, &passages);
        assert!(fixed.ends_with("as of December 31, 2021 and September 30, 2022 [1]."), "{fixed}");
        assert_eq!(restored.len(), 1);
    }

    #[test]
    fn a_run_that_starts_inside_a_passages_label_is_another_row() {
        let passages = [passage(
            "Total net sales: $82,959 million (three months ended June 25, 2022); $81,434 million (three months \
             ended June 26, 2021)",
        )];
        let answer = "Net sales: $53,037 million (three months ended June 25, 2022); $53,643 million (three months \
                      ended June 26, 2021) [1]";
        assert_eq!(restore_copied_figures(answer, &passages).0, answer);
        // The row's own figures with "Total" left out: a copy made right, beside a segment's row of the
        // same words.
        let segment = passage(
            "Services: Net sales: $21,213 million (three months ended June 25, 2022); $19,604 million (three \
             months ended June 26, 2021)",
        );
        let answer = "Net sales: $82,959 million (three months ended June 25, 2022); $81,434 million (three months \
                      ended June 26, 2021) [2]";
        assert_eq!(restore_copied_figures(answer, &[passages[0].clone(), segment.clone()]).0, answer);
        // The total's figures under the segment's whole label, the total stated in a sentence elsewhere: a
        // mix-up of rows, left for the claim check.
        let total = passage("Total net sales were $82,959 million and $81,434 million in the two quarters.");
        let answer = "Services: Net sales: $82,959 million (three months ended June 25, 2022); $81,434 million (three \
                      months ended June 26, 2021) [2]";
        assert_eq!(restore_copied_figures(answer, &[total, segment]).0, answer);
    }

    #[test]
    fn a_run_whose_numbers_do_not_pair_up_is_left_as_written() {
        // The model left the day out ("December 2021") and wrote the change's "2%": pairing them with the
        // passage's "31, 2021" and "2%" would write a day for a year.
        let passages = [passage(
            "Total revenue: $51,728 million (three months ended December 31, 2021); 2% (change, three months ended)",
        )];
        let answer = "Total revenue: $51,728 million (three months ended December 2021); 2% (change, three months \
                      ended) [1]";
        assert_eq!(restore_copied_figures(answer, &passages).0, answer);
        // A day and a year run together are two numbers, as in the passage: the year put back, not the day.
        let answer = "Total revenue: $51,728 million (three months ended December 31,2020); 2% (change, three \
                      months ended) [1]";
        let (fixed, restored) = restore_copied_figures(answer, &passages);
        assert_eq!(
            fixed,
            "Total revenue: $51,728 million (three months ended December 31,2021); 2% (change, three months \
             ended) [1]"
        );
        assert_eq!(restored.len(), 1);
    }

    /// Apple's 2023 Q2 expense table as the PDF reader writes it, its three-month columns (2023 Q2 AAPL.pdf p. 21).
    const APPLE_EXPENSES: &str = "Operating expenses for the three- and six-month periods ended April 1, 2023 were as follows:\n\
        Research and development: $7,457 million (three months ended April 1, 2023); $6,387 million (three months ended March 26, 2022)\n\
        Percentage of total net sales: 8% (three months ended April 1, 2023); 7% (three months ended March 26, 2022)\n\
        Selling, general and administrative: $6,201 million (three months ended April 1, 2023); $6,193 million (three months ended March 26, 2022)\n\
        Percentage of total net sales: 7% (three months ended April 1, 2023); 6% (three months ended March 26, 2022)\n\
        Total operating expenses: $13,658 million (three months ended April 1, 2023); $12,580 million (three months ended March 26, 2022)\n\
        Percentage of total net sales: 14% (three months ended April 1, 2023); 13% (three months ended March 26, 2022)";

    #[test]
    fn a_rows_cells_copied_without_its_label_get_the_label_back() {
        let passages = [passage("Other text."), passage(APPLE_EXPENSES)];
        let line = "- **2023 Q2 AAPL.pdf** (quarterly period ended April 1, 2023): 7% (three months ended April 1, \
                    2023); 6% (three months ended March 26, 2022) The growth in R&D was driven by headcount [2].";
        let (fixed, given) = restore_row_labels(line, &passages);
        assert_eq!(
            fixed,
            "- **2023 Q2 AAPL.pdf** (quarterly period ended April 1, 2023): Percentage of total net sales: 7% (three \
             months ended April 1, 2023); 6% (three months ended March 26, 2022) The growth in R&D was driven by \
             headcount [2]."
        );
        assert_eq!(given, vec!["Percentage of total net sales".to_string()]);
        // A sentence of an answer, a list item, and a sentence after another: the same.
        let answer = "Revenue rose [1]. $13,658 million (three months ended April 1, 2023) [2].\n- $6,201 million \
                      (three months ended April 1, 2023) [2]";
        let (fixed, given) = restore_row_labels(answer, &passages);
        assert_eq!(
            fixed,
            "Revenue rose [1]. Total operating expenses: $13,658 million (three months ended April 1, 2023) [2].\n- \
             Selling, general and administrative: $6,201 million (three months ended April 1, 2023) [2]"
        );
        assert_eq!(given.len(), 2);
        // The cells of a later column (the prompt showed only the prior year's).
        let (fixed, _) = restore_row_labels("$12,580 million (three months ended March 26, 2022) [1]", &passages);
        assert_eq!(fixed, "Total operating expenses: $12,580 million (three months ended March 26, 2022) [1]");
    }

    #[test]
    fn cells_the_model_labelled_or_wrote_inside_a_sentence_or_that_two_rows_share_are_left_as_written() {
        let passages = [passage(APPLE_EXPENSES)];
        for answer in [
            // Its label already there, or one of the model's own.
            "Total operating expenses: $13,658 million (three months ended April 1, 2023) [1]",
            "Operating costs: $13,658 million (three months ended April 1, 2023) [1]",
            // Inside a sentence: the model's words say what it is.
            "R&D was 8% (three months ended April 1, 2023) of net sales [1]",
            // No row's cells at all.
            "Net sales were up [1].",
        ] {
            let (fixed, given) = restore_row_labels(answer, &passages);
            assert_eq!(fixed, answer);
            assert!(given.is_empty(), "{answer}");
        }
        // Two rows of different labels open with the same cell: which one the model copied is unknown.
        let two = passage(
            "Gross margin percentage: 44% (three months ended April 1, 2023); 43% (three months ended March 26, 2022)\n\
             Services gross margin percentage: 44% (three months ended April 1, 2023); 72% (three months ended March 26, 2022)",
        );
        let answer = "44% (three months ended April 1, 2023) [1]";
        assert_eq!(restore_row_labels(answer, std::slice::from_ref(&two)).0, answer);
        // The second cell tells them apart.
        let (fixed, _) = restore_row_labels(
            "44% (three months ended April 1, 2023); 72% (three months ended March 26, 2022) [1]",
            &[two],
        );
        assert!(fixed.starts_with("Services gross margin percentage: 44%"), "{fixed}");
    }
}
