//! The result of a research run: Markdown with numbered citations that resolve to passages.

use crate::events::PassageRef;
use quarry_core::{Passage, TokenUsage};
use serde::{Deserialize, Serialize};

/// One citation: the number used in the answer text (`[n]`) and the passage it points to.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Citation {
    pub number: usize,
    pub passage: Passage,
}

/// A finished answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Answer {
    pub question: String,
    /// The agent that produced it (`naive`, `deep`, `chain`).
    pub agent: String,
    /// Markdown; `[n]` markers refer to `citations` by number.
    pub markdown: String,
    /// The passages cited in the text, in order of number.
    pub citations: Vec<Citation>,
    /// Every passage the answer was written from, numbered as in the prompt (cited or not).
    pub sources: Vec<Citation>,
    /// Queries run, per round (round 1 first).
    pub queries: Vec<Vec<String>>,
    /// Passages retrieved in all (distinct) and kept for the answer.
    pub retrieved: usize,
    pub kept: usize,
    pub llm_calls: usize,
    pub usage: TokenUsage,
    pub seconds: f64,
    /// The model that wrote it.
    pub model: String,
    /// The libraries searched (set by [`crate::ask`]; empty when an agent is run directly).
    pub libraries: Vec<String>,
    /// True when the library held nothing relevant and no model was asked to answer.
    pub nothing_found: bool,
    /// The claim check of the answer's sentences against the passages they cite
    /// ([`crate::claims::check_claims`]); unsupported ones are shown as such.
    #[serde(default)]
    pub claims: Vec<crate::claims::ClaimCheck>,
    /// Every query meant for the web during the run, sent or withheld by the web query policy
    /// ([`crate::web_gate`]); empty when the web was not searched.
    #[serde(default)]
    pub web_queries: Vec<crate::web_gate::WebQuery>,
    /// Citations the claim check corrected by figures before checking ([`crate::claims::repair_citations`]);
    /// `markdown` holds the corrected markers (the streamed text had the model's).
    #[serde(default)]
    pub citation_repairs: Vec<crate::claims::CitationRepair>,
}

impl Answer {
    /// The claims the check found unsupported.
    pub fn unsupported_claims(&self) -> impl Iterator<Item = &crate::claims::ClaimCheck> {
        self.claims.iter().filter(|c| !c.supported)
    }
}

/// The text given to the model for numbered passages: `[n] citation (document context)\ntext`, each
/// passage's table rows kept to the periods `focus` asks about ([`crate::period_focus`]) and the passage
/// cut to `max_chars_each` characters by [`focus_passage`] toward `focus` (the question or query the
/// passages are read for), stopping once `budget_chars` would be exceeded (at least one passage).
/// The context line names the document's issuer, type and period, so the model can tell the first
/// quarter's filing from the second's; it is written once per document, and a later passage of the same
/// document says `(same document as [n])` instead (≈ 30 prompt tokens saved a passage, ≈ 1 s each on 2
/// cores). Returns the text and how many passages it holds.
pub fn number_passages(
    passages: &[Passage],
    focus: &str,
    max_chars_each: usize,
    budget_chars: usize,
) -> (String, usize) {
    number_passages_from(1, passages, focus, max_chars_each, budget_chars)
}

/// [`number_passages`] with the first passage numbered `first` instead of 1 (the next ones `first + 1`,
/// …), for a prompt that shows one part of a longer numbered list: the per-document answers of
/// [`crate::per_document`] cite the answer's numbers directly.
pub fn number_passages_from(
    first: usize,
    passages: &[Passage],
    focus: &str,
    max_chars_each: usize,
    budget_chars: usize,
) -> (String, usize) {
    let mut out = String::new();
    let mut used = 0;
    let mut first_of_document: std::collections::HashMap<(&str, &str), usize> = std::collections::HashMap::new();
    for (i, p) in passages.iter().enumerate() {
        let text = focus_passage(&crate::period_focus::keep_question_periods(&p.text, focus), focus, max_chars_each);
        let number = first + i;
        let source = if p.context.is_empty() {
            p.citation()
        } else {
            match first_of_document.get(&(p.library.as_str(), p.document_id.as_str())) {
                Some(earlier) => format!("{} (same document as [{earlier}])", p.citation()),
                None => format!("{} ({})", p.citation(), p.context),
            }
        };
        let entry = format!("[{number}] {source}\n{}\n\n", text.trim());
        if used > 0 && out.chars().count() + entry.chars().count() > budget_chars {
            break;
        }
        out.push_str(&entry);
        used += 1;
        first_of_document.entry((p.library.as_str(), p.document_id.as_str())).or_insert(number);
    }
    (out.trim_end().to_string(), used)
}

/// Words too common to say what a question is about.
const STOP_WORDS: &[&str] = &[
    "the", "and", "for", "was", "were", "what", "which", "who", "whom", "how", "did", "does", "has", "have", "had",
    "with", "from", "that", "this", "these", "those", "its", "their", "are", "is", "of", "in", "on", "to", "a", "an",
    "by", "as", "at", "or", "be", "been", "any", "there", "over", "into", "about", "when", "where", "why", "can",
    "could", "would",
];

/// The first five letters of each word of `text` that is not a stop word, lower case: a crude stem, so
/// "revenues" meets "revenue" and "quarterly" meets "quarter".
pub(crate) fn stems(text: &str) -> std::collections::HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .map(|w| w.chars().take(5).collect())
        .collect()
}

/// `text` cut to at most `max_chars` characters. A passage that fits is returned whole; a longer one
/// keeps the sentences (and table lines) that share the most words with `focus`, in their original
/// order, with ` … ` where text was left out — so a fact near a long chunk's end is not cut off the way
/// a plain prefix cuts it. With an empty `focus`, the first `max_chars` characters.
pub fn focus_passage(text: &str, focus: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_string();
    }
    let wanted = stems(focus);
    if wanted.is_empty() {
        return text.chars().take(max_chars).collect();
    }
    // Sentences: split after ". " and at line breaks, keeping every character.
    let mut pieces: Vec<&str> = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let ends = b == b'\n' || (b == b'.' && bytes.get(i + 1).is_some_and(|n| n.is_ascii_whitespace()));
        if ends {
            pieces.push(&text[start..=i]);
            start = i + 1;
        }
    }
    if start < text.len() {
        pieces.push(&text[start..]);
    }
    let scores: Vec<usize> = pieces.iter().map(|p| stems(p).intersection(&wanted).count()).collect();
    let mut order: Vec<usize> = (0..pieces.len()).filter(|&i| !pieces[i].trim().is_empty()).collect();
    order.sort_by(|&a, &b| scores[b].cmp(&scores[a]).then(a.cmp(&b)));
    let mut keep = vec![false; pieces.len()];
    let mut length = 0;
    for i in order {
        let n = pieces[i].chars().count() + 3;
        if length + n > max_chars {
            continue;
        }
        keep[i] = true;
        length += n;
    }
    let mut out = String::new();
    let mut gap = false;
    for (i, piece) in pieces.iter().enumerate() {
        if keep[i] {
            if gap && !out.is_empty() {
                out.push_str(" … ");
            }
            out.push_str(piece);
            gap = false;
        } else if !piece.trim().is_empty() {
            gap = true;
        }
    }
    if out.is_empty() {
        text.chars().take(max_chars).collect()
    } else {
        out
    }
}

/// The numbers of a citation marker's inside — `2`, `1, 3`, `1 3`, `1-2` or `1–2` (a range of at most 10) —
/// or `None` when it is not a citation marker (other characters, empty, a reversed or longer range).
pub fn marker_numbers(inside: &str) -> Option<Vec<usize>> {
    if !inside.chars().all(|c| c.is_ascii_digit() || c.is_whitespace() || ",-–".contains(c)) {
        return None;
    }
    let mut numbers = Vec::new();
    for part in inside.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once(['-', '–']) {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if a > b || b - a >= 10 {
                    return None;
                }
                numbers.extend(a..=b);
            }
            None => {
                for n in part.split_whitespace() {
                    numbers.push(n.parse().ok()?);
                }
            }
        }
    }
    if numbers.is_empty() {
        None
    } else {
        Some(numbers)
    }
}

/// A piece of answer Markdown: plain text, or a citation marker (`raw` is the whole `[…]`).
#[derive(Debug, PartialEq)]
pub enum Piece<'a> {
    Text(&'a str),
    Marker { raw: &'a str, numbers: Vec<usize> },
}

/// `markdown` cut into text and citation markers, in order; concatenating the pieces gives it back.
/// Bracketed text that is not a marker ([`marker_numbers`]) stays text.
pub fn pieces(markdown: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut text_start = 0;
    let mut at = 0;
    while let Some(open) = markdown[at..].find('[').map(|i| at + i) {
        let Some(close) = markdown[open + 1..].find(']').map(|i| open + 1 + i) else { break };
        match marker_numbers(&markdown[open + 1..close]) {
            Some(numbers) => {
                if open > text_start {
                    out.push(Piece::Text(&markdown[text_start..open]));
                }
                out.push(Piece::Marker { raw: &markdown[open..=close], numbers });
                text_start = close + 1;
                at = close + 1;
            }
            None => at = open + 1,
        }
    }
    if text_start < markdown.len() {
        out.push(Piece::Text(&markdown[text_start..]));
    }
    out
}

/// The citation numbers used in `markdown` (`[2]`, `[1][3]`, `[1, 3]`, `[1-2]` is read as 1 and 2), in
/// order of first use, limited to `1..=count`.
pub fn cited_numbers(markdown: &str, count: usize) -> Vec<usize> {
    let mut out = Vec::new();
    for piece in pieces(markdown) {
        if let Piece::Marker { numbers, .. } = piece {
            for n in numbers {
                if (1..=count).contains(&n) && !out.contains(&n) {
                    out.push(n);
                }
            }
        }
    }
    out
}

/// `markdown` without its citation markers (`[2]`, `[1, 3]`) and the spaces before them, e.g. to score
/// it against a reference answer or to quote it in a later prompt.
pub fn strip_citations(markdown: &str) -> String {
    let mut text = String::new();
    for piece in pieces(markdown) {
        match piece {
            Piece::Text(t) => text.push_str(t),
            Piece::Marker { .. } => text.truncate(text.trim_end().len()),
        }
    }
    text.trim().to_string()
}

/// The sources and citations of an answer whose prompt numbered `passages` from 1.
pub fn citations_for(markdown: &str, passages: &[Passage]) -> (Vec<Citation>, Vec<Citation>) {
    let sources: Vec<Citation> =
        passages.iter().enumerate().map(|(i, p)| Citation { number: i + 1, passage: p.clone() }).collect();
    let mut cited: Vec<Citation> =
        cited_numbers(markdown, passages.len()).into_iter().map(|n| sources[n - 1].clone()).collect();
    cited.sort_by_key(|c| c.number);
    (cited, sources)
}

/// The trace form of a passage.
pub fn passage_ref(p: &Passage) -> PassageRef {
    PassageRef { library: p.library.clone(), chunk_id: p.chunk_id, citation: p.citation() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn citation_markers_in_every_common_form() {
        assert_eq!(cited_numbers("A [2]. B [1][3]. C [1, 4]. D [2-3]. E [9]. F [see] [x]", 4), vec![2, 1, 3, 4]);
        assert_eq!(cited_numbers("no markers", 3), Vec::<usize>::new());
        assert_eq!(
            cited_numbers("spaces [3 1], spaced range [1 - 2], too long [1-30], reversed [3-1], odd [,]", 4),
            vec![3, 1, 2]
        );
        assert_eq!(marker_numbers("1–3"), Some(vec![1, 2, 3]));
        assert_eq!(marker_numbers("1, x"), None);
        assert_eq!(strip_citations("Tulsa [1][2], Oklahoma [1, 3]. See [note] []."), "Tulsa, Oklahoma. See [note] [].");
        let text = "a [see [2]] b [1-2](x) [";
        let joined: String = pieces(text)
            .iter()
            .map(|p| match p {
                Piece::Text(t) => *t,
                Piece::Marker { raw, .. } => raw,
            })
            .collect();
        assert_eq!(joined, text, "pieces give the text back");
        assert_eq!(pieces("[x][2]")[1], Piece::Marker { raw: "[2]", numbers: vec![2] });
    }

    #[test]
    fn a_long_passage_keeps_the_sentences_about_the_question() {
        let filler = "The Company designs chips for gaming and data centers. ".repeat(30);
        let text = format!("{filler}Revenue for the first quarter of fiscal year 2024 was $7.19 billion, down 13%. Gross margin was 64.6%.");
        let focused = focus_passage(&text, "What was NVIDIA's revenue in the first quarter of fiscal 2024?", 400);
        assert!(focused.chars().count() <= 400, "{focused}");
        assert!(focused.contains("Revenue for the first quarter of fiscal year 2024 was $7.19 billion"), "{focused}");
        assert!(
            focused.starts_with("The Company") && focused.contains(" … "),
            "kept sentences stay in order with gaps marked: {focused}"
        );
        assert_eq!(focus_passage("short", "anything", 400), "short");
        assert_eq!(focus_passage(&text, "", 20), text.chars().take(20).collect::<String>());
    }

    #[test]
    fn a_documents_context_line_is_written_once_and_later_passages_point_back_to_it() {
        let passage = |id: u64, document: &str, page: u32, context: &str| Passage {
            chunk_id: id,
            library: "l".into(),
            document_id: document.into(),
            path: format!("/docs/{document}.pdf"),
            page_start: Some(page),
            page_end: Some(page),
            sheet: None,
            heading_path: vec![],
            text: format!("text {id}"),
            context: context.into(),
            score: 0.0,
        };
        let q1 = "NVIDIA CORPORATION · Form 10-Q · quarterly period ended April 30, 2023";
        let q2 = "NVIDIA CORPORATION · Form 10-Q · quarterly period ended July 30, 2023";
        let passages = [passage(1, "q1", 22, q1), passage(2, "q2", 5, q2), passage(3, "q1", 25, q1)];
        let (text, used) = number_passages(&passages, "revenue", 1500, 9000);
        assert_eq!(used, 3);
        assert_eq!(
            text,
            format!("[1] q1.pdf, p. 22 ({q1})\ntext 1\n\n[2] q2.pdf, p. 5 ({q2})\ntext 2\n\n[3] q1.pdf, p. 25 (same document as [1])\ntext 3")
        );
    }
}
