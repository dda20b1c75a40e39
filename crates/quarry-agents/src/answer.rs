//! The result of a research run: Markdown with numbered citations that resolve to passages.

use crate::events::PassageRef;
use quarry_core::{Passage, TokenUsage};
use serde::Serialize;

/// One citation: the number used in the answer text (`[n]`) and the passage it points to.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Citation {
    pub number: usize,
    pub passage: Passage,
}

/// A finished answer.
#[derive(Debug, Clone, Serialize)]
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
}

/// The text given to the model for numbered passages: `[n] citation\ntext`, each passage cut to
/// `max_chars_each` characters, stopping once `budget_chars` would be exceeded (at least one passage).
/// Returns the text and how many passages it holds.
pub fn number_passages(passages: &[Passage], max_chars_each: usize, budget_chars: usize) -> (String, usize) {
    let mut out = String::new();
    let mut used = 0;
    for (i, p) in passages.iter().enumerate() {
        let text: String = p.text.chars().take(max_chars_each).collect();
        let entry = format!("[{}] {}\n{}\n\n", i + 1, p.citation(), text.trim());
        if used > 0 && out.chars().count() + entry.chars().count() > budget_chars {
            break;
        }
        out.push_str(&entry);
        used += 1;
    }
    (out.trim_end().to_string(), used)
}

/// The citation numbers used in `markdown` (`[2]`, `[1][3]`, `[1, 3]`, `[1-2]` is read as 1 and 2), in
/// order of first use, limited to `1..=count`.
pub fn cited_numbers(markdown: &str, count: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut rest = markdown;
    while let Some(open) = rest.find('[') {
        rest = &rest[open + 1..];
        let Some(close) = rest.find(']') else { break };
        let inside = &rest[..close];
        if !inside.is_empty() && inside.chars().all(|c| c.is_ascii_digit() || c == ',' || c == ' ' || c == '-' || c == '–') {
            let parts: Vec<usize> = inside.split([',', ' ']).filter_map(|s| {
                let s = s.trim();
                if let Some((a, b)) = s.split_once(['-', '–']) {
                    let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                    if a <= b && b - a < 10 { return Some((a..=b).collect::<Vec<_>>()); }
                    return None;
                }
                s.parse().ok().map(|n| vec![n])
            }).flatten().collect();
            for n in parts {
                if (1..=count).contains(&n) && !out.contains(&n) {
                    out.push(n);
                }
            }
        }
        rest = &rest[close..];
    }
    out
}

/// `markdown` without its citation markers (`[2]`, `[1, 3]`), e.g. to score it against a reference answer.
pub fn strip_citations(markdown: &str) -> String {
    let mut out = String::new();
    let mut rest = markdown;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        match rest[open..].find(']') {
            Some(close) if close > 1 && rest[open + 1..open + close].chars().all(|c| c.is_ascii_digit() || ", -–".contains(c)) => {
                rest = &rest[open + close + 1..]
            }
            _ => {
                out.push('[');
                rest = &rest[open + 1..];
            }
        }
    }
    out.push_str(rest);
    out.trim().to_string()
}

/// The sources and citations of an answer whose prompt numbered `passages` from 1.
pub fn citations_for(markdown: &str, passages: &[Passage]) -> (Vec<Citation>, Vec<Citation>) {
    let sources: Vec<Citation> = passages.iter().enumerate().map(|(i, p)| Citation { number: i + 1, passage: p.clone() }).collect();
    let mut cited: Vec<Citation> = cited_numbers(markdown, passages.len()).into_iter().map(|n| sources[n - 1].clone()).collect();
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
        assert_eq!(strip_citations("Tulsa [1][2], Oklahoma [1, 3]. See [note] []."), "Tulsa , Oklahoma . See [note] [].");
    }
}
