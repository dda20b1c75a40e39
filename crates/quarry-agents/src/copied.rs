//! Figures the model changed in words it copied from a passage, given back the passage's figures.
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
}
