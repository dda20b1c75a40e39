//! What `quarry eval answers` scores in an answer a person reads, beside the claim check
//! ([`quarry_agents::claims`]) and the reference figures ([`quarry_agents::figures`]): where the passage
//! that states the answer sits among what the model read, how many of the reference's figures those
//! passages state (the ceiling of the key-fact score), and whether the answer is written in the
//! question's language.

use crate::qrels::same_file_name;
use quarry_agents::figures::{figures, states, Figure};
use quarry_core::Passage;

/// The 1-based position of the first passage from a relevant document that states one of `wanted` (in
/// its text or its document's context line).
pub fn answer_passage_position(passages: &[Passage], relevant: &[String], wanted: &[Figure]) -> Option<usize> {
    passages
        .iter()
        .position(|p| {
            relevant.iter().any(|r| same_file_name(&p.path, r)) && {
                let found = figures(&format!("{}\n{}", p.context, p.text));
                wanted.iter().any(|w| states(&found, w))
            }
        })
        .map(|i| i + 1)
}

/// Share of `wanted` stated somewhere in `passages` (texts and context lines).
pub fn figures_found(passages: &[Passage], wanted: &[Figure]) -> f64 {
    figures_stated_in(passages, wanted).len() as f64 / wanted.len().max(1) as f64
}

/// Those of `wanted` stated somewhere in `passages` (texts and context lines), in order.
pub fn figures_stated_in<'a>(passages: &[Passage], wanted: &'a [Figure]) -> Vec<&'a Figure> {
    let found: Vec<Figure> = passages.iter().flat_map(|p| figures(&format!("{}\n{}", p.context, p.text))).collect();
    wanted.iter().filter(|w| states(&found, w)).collect()
}

/// Whether `answer` is written in the language of `question`, told apart by script only: for a question
/// that is mostly CJK characters ([`quarry_core::is_mostly_cjk`]), no run of three or more Latin-script
/// words (numbers between them do not break a run, Chinese text does) outside citation markers: a phrase
/// of English, where "5G" or "IPv6+" in a Chinese sentence is fine;
/// for any other question, an answer that is not mostly CJK. Quarry's own lines (declines, fallbacks)
/// count as answers.
pub fn in_question_language(question: &str, answer: &str) -> bool {
    if !quarry_core::is_mostly_cjk(question) {
        return !quarry_core::is_mostly_cjk(answer);
    }
    let mut run = 0;
    let mut word = String::new();
    for c in answer.chars().chain(std::iter::once(' ')) {
        if (c.is_alphanumeric() && !quarry_core::is_cjk_char(c)) || matches!(c, '\'' | '+' | '-') {
            word.push(c);
            continue;
        }
        let letters: Vec<char> = word.chars().filter(|c| c.is_alphabetic()).collect();
        if letters.len() >= 2 && letters.iter().all(char::is_ascii_alphabetic) {
            run += 1;
            if run >= 3 {
                return false;
            }
        }
        word.clear();
        if quarry_core::is_cjk_char(c) {
            run = 0;
        }
    }
    true
}

/// The positions in `sentences` (in reading order) of those that say again what an earlier one said
/// ([`quarry_agents::text::says_again`]: most of each one's words in the other, at least
/// [`quarry_agents::text::REPEAT_MIN_WORDS`] of them). Scores reports whose sections restate each other.
pub fn repeated_sentences(sentences: &[&str]) -> Vec<usize> {
    use quarry_agents::text::{says_again, sentence_words};
    let sets: Vec<_> = sentences.iter().map(|s| sentence_words(s)).collect();
    (0..sets.len()).filter(|&i| sets[..i].iter().any(|earlier| says_again(&sets[i], earlier))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use quarry_agents::figures::key_figures;

    fn passage(path: &str, text: &str) -> Passage {
        Passage {
            chunk_id: 0,
            chunk_index: None,
            library: "l".into(),
            document_id: "d".into(),
            path: path.into(),
            page_start: None,
            page_end: None,
            sheet: None,
            heading_path: vec![],
            text: text.into(),
            context: String::new(),
            score: 0.0,
            ocr: false,
        }
    }

    #[test]
    fn an_answer_is_in_the_question_language_unless_it_holds_a_sentence_of_the_other_script() {
        let chinese = "2022年中国联通的审计委员会由谁组成？";
        assert!(in_question_language(chinese, "审计委员会由吴晓根董事、顾佳丹董事组成，5G 和 IPv6+ 网络覆盖全国。"));
        assert!(!in_question_language(chinese, "In the year 2022, 联通董事会审计委员会由以下成员组成"));
        assert!(!in_question_language(chinese, "审计委员会 (same document as [1]) 由吴晓根董事组成"));
        assert!(!in_question_language(chinese, "The documents found do not state what was asked."));
        assert!(!in_question_language(chinese, "中国联通的收入增长。The total revenue was 38.4 billion yuan."));
        let english = "What was NVIDIA's revenue in the first quarter of fiscal 2024?";
        assert!(in_question_language(english, "Revenue was $7.19 billion (营收)."));
        assert!(!in_question_language(english, "收入为71.9亿美元。"));
    }

    #[test]
    fn a_sentence_repeats_an_earlier_one_when_each_holds_most_of_the_others_words() {
        let sentences = [
            "Microsoft's total revenue was $52.9 billion in the quarter.",
            "Cloud revenue grew 22% year over year.",
            // The first again, a word changed: a repeat.
            "In the quarter, Microsoft's total revenue was $52.9 billion dollars.",
            // The second with a new clause: most of the earlier one's words, but not most of its own.
            "Cloud revenue grew 22% year over year, driven by Azure and other cloud services and new customers.",
            // The first's words but another figure: no repeat.
            "Microsoft's total revenue was $56.2 billion in the quarter.",
            // Within the first, but holding too little of it to say it again.
            "Revenue was $52.9 billion.",
            "微软本季度总收入为529亿美元。",
            "微软本季度总收入为529亿美元。",
        ];
        assert_eq!(repeated_sentences(&sentences), [2, 7]);
        assert!(repeated_sentences(&[]).is_empty());
    }

    #[test]
    fn the_answer_passage_is_the_first_from_a_relevant_document_stating_a_reference_figure() {
        let wanted = key_figures("Revenue for the first quarter of fiscal year 2024 was $7.19 billion.");
        let relevant = vec!["sec-10-q/2023 Q1 NVDA.pdf".to_string()];
        let passages = [
            passage("/s/sec-10-q/2023 Q2 NVDA.pdf", "Revenue was $7.19 billion in the previous quarter."),
            passage("/s/sec-10-q/2023 Q1 NVDA.pdf", "Revenue was $13,507 million."),
            passage("/s/sec-10-q/2023 Q1 NVDA.pdf", "Total revenue $ 7,192 (in millions)."),
        ];
        assert_eq!(answer_passage_position(&passages, &relevant, &wanted), Some(3));
        assert_eq!(figures_found(&passages[..2], &wanted), 1.0);
        assert_eq!(figures_found(&passages[1..2], &wanted), 0.0);
        assert!(crate::qrels::same_file_name(
            "/s/sample-library/sec-10-q/2023 Q1 NVDA.pdf",
            "docs/en_sec-10-q/2023 Q1 NVDA.pdf"
        ));
        assert!(!crate::qrels::same_file_name("/s/2023 Q1 NVDA.pdf.bak", "docs/2023 Q1 NVDA.pdf"));
    }
}
