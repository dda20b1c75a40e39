//! Counting a text's tokens fast enough for the chunker, exactly.
//!
//! The chunker (text-splitter) sizes many candidate chunks per chunk it keeps, and tokenizing every
//! candidate from scratch made chunking the slowest step of reading files (docs/evaluation/
//! ingest-and-search.md, "Searchable by keyword first"). For a BERT-style tokenizer — a character-local
//! normaliser (`BertNormalizer`), a pre-tokenizer that splits at whitespace (and punctuation), and a
//! WordPiece model, as all-MiniLM-L6-v2 has — no token spans whitespace, so a text's token count is the
//! sum of its whitespace-separated pieces' counts. [`PieceCountCache`] counts each distinct piece once
//! with the real tokenizer and adds up cached counts after that: the same numbers, without the repeats.

use std::collections::HashMap;
use std::sync::Mutex;

/// Distinct pieces kept before the cache starts over (bounds memory at a few tens of MB).
const MAX_PIECES: usize = 500_000;

/// A token counter that adds up cached per-piece counts (see the module docs for when that is exact).
pub struct PieceCountCache<F> {
    count: F,
    pieces: Mutex<HashMap<Box<str>, u32>>,
}

impl<F: Fn(&str) -> usize> PieceCountCache<F> {
    /// Wraps `count`, the tokenizer's own count of a text (no special tokens, no truncation).
    pub fn new(count: F) -> Self {
        PieceCountCache { count, pieces: Mutex::new(HashMap::new()) }
    }

    /// Tokens of `text`: the sum over its whitespace-separated pieces, each counted by the tokenizer the
    /// first time it is seen.
    pub fn count(&self, text: &str) -> usize {
        let Ok(mut pieces) = self.pieces.lock() else {
            return (self.count)(text);
        };
        if pieces.len() > MAX_PIECES {
            pieces.clear();
        }
        let mut total = 0usize;
        for piece in text.split(splits_pieces).filter(|p| !p.is_empty()) {
            total += match pieces.get(piece) {
                Some(n) => *n as usize,
                None => {
                    let n = (self.count)(piece);
                    pieces.insert(piece.into(), n as u32);
                    n
                }
            };
        }
        total
    }
}

/// Whitespace at which BERT's tokenizer always cuts: Unicode whitespace except the control characters
/// its normaliser deletes (vertical tab, form feed — common in PDF text — and next line), which join
/// their neighbours ("a\u{c}b" is one word to it).
fn splits_pieces(c: char) -> bool {
    c.is_whitespace() && !matches!(c, '\u{b}' | '\u{c}' | '\u{85}')
}

/// Whether `tokenizer` is built so that no token spans whitespace and its normaliser works character by
/// character (BERT's normaliser or none; BERT's or the whitespace pre-tokenizer; a WordPiece model), so
/// that [`PieceCountCache`] counts exactly what it counts.
pub fn counts_by_piece(tokenizer: &tokenizers::Tokenizer) -> bool {
    use tokenizers::{ModelWrapper, NormalizerWrapper, PreTokenizerWrapper};
    let normaliser = matches!(tokenizer.get_normalizer(), None | Some(NormalizerWrapper::BertNormalizer(_)));
    let pre_tokenizer = matches!(
        tokenizer.get_pre_tokenizer(),
        Some(PreTokenizerWrapper::BertPreTokenizer(_)) | Some(PreTokenizerWrapper::Whitespace(_))
    );
    let model = matches!(tokenizer.get_model(), ModelWrapper::WordPiece(_));
    normaliser && pre_tokenizer && model
}

#[cfg(test)]
mod tests {
    use super::*;

    /// all-MiniLM-L6-v2's own tokenizer file (installed by scripts/setup.sh).
    fn minilm() -> tokenizers::Tokenizer {
        let path = quarry_core::models::find_model_file("all-minilm-l6-v2/tokenizer.json")
            .expect("scripts/setup.sh installs the MiniLM tokenizer");
        let mut tokenizer = tokenizers::Tokenizer::from_file(&path).expect("tokenizer.json loads");
        let _ = tokenizer.with_truncation(None);
        tokenizer.with_padding(None);
        tokenizer
    }

    #[test]
    fn cached_piece_counts_equal_the_tokenizers_own_counts_on_real_text() {
        let tokenizer = minilm();
        assert!(counts_by_piece(&tokenizer), "MiniLM is BERT-style");
        let direct = |text: &str| tokenizer.encode_fast(text, false).map(|e| e.len()).unwrap();
        let cache = PieceCountCache::new(direct);
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/sample-library");
        let chinese = std::fs::read_to_string(root.join("zh/china-unicom-2022-annual-report-summary.md")).unwrap();
        let sources = std::fs::read_to_string(root.join("SOURCES.md")).unwrap();
        let mut texts: Vec<String> = vec![
            "Revenue for the first quarter of fiscal year 2024 was $7.19 billion, down 13% from a year ago.".into(),
            "NVIDIA Corporation · Form 10-Q · quarter ended April 30, 2023 (first quarter of fiscal 2024)".into(),
            "Café naïve façade — “quoted” words… and a verylongwordthatwordpiecemustcutintomanysmallerpieces".into(),
            "tabs\tand\nnewlines\r\n  and  doubled   spaces\u{00a0}no-break\u{2003}em space".into(),
            "control\u{0}chars\u{7}inside and ZERO\u{200b}WIDTH and emoji 🚀 and 中国联通2022年营收3549亿元".into(),
            "page one\u{c}page two, a\u{b}b, c\u{85}d, e\u{2028}f, g\u{3000}h".into(),
            format!("{}x", "a".repeat(150)),
        ];
        // Real documents, cut into candidate-sized windows as the chunker would size them.
        for text in [&chinese, &sources] {
            let chars: Vec<char> = text.chars().collect();
            for start in (0..chars.len()).step_by(700) {
                texts.push(chars[start..(start + 1_000).min(chars.len())].iter().collect());
            }
        }
        for text in &texts {
            assert_eq!(cache.count(text), direct(text), "{text:?}");
            assert_eq!(cache.count(text), direct(text), "again, from the cache: {text:?}");
        }
    }
}
