//! One tokenizer for Chinese, Japanese, Korean and English text in the same field.
//!
//! Runs of CJK characters are cut by jieba in search mode (words and their sub-words) and also split into
//! overlapping character bigrams, the classic CJK indexing unit, which catches words jieba's (Simplified
//! Chinese) dictionary does not know: Traditional Chinese, names, jargon. Other text is split into
//! alphanumeric words. Lowercasing, English stop words and stemming are applied afterwards by the
//! analyzer that [`crate::KeywordIndex`] builds.

use quarry_core::is_cjk_char;
use std::sync::{Arc, OnceLock};
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// The name the keyword analyzer (this tokenizer and the filters [`crate::KeywordIndex`] adds) is
/// registered under in a tantivy index. It names the analyzer's version: the schema of an index records
/// it, so an index always searches with the analyzer that built it. `quarry_mixed_folded` adds ASCII
/// folding (`Aschenbrödel` and `Aschenbrodel` are one word); indexes built before it use
/// [`LEGACY_MIXED_TOKENIZER`].
pub const MIXED_TOKENIZER: &str = "quarry_mixed_folded";

/// The analyzer of keyword indexes built before ASCII folding (no folding; otherwise the same).
pub const LEGACY_MIXED_TOKENIZER: &str = "quarry_mixed";

fn jieba() -> &'static jieba_rs::Jieba {
    static JIEBA: OnceLock<jieba_rs::Jieba> = OnceLock::new();
    JIEBA.get_or_init(jieba_rs::Jieba::new)
}

/// See the module documentation. Cheap to clone (tantivy clones tokenizers per thread).
#[derive(Clone, Default)]
pub struct MixedTokenizer {
    _shared: Arc<()>,
}

pub struct MixedTokenStream {
    tokens: Vec<Token>,
    index: usize,
}

impl Tokenizer for MixedTokenizer {
    type TokenStream<'a> = MixedTokenStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> MixedTokenStream {
        MixedTokenStream { tokens: tokenize(text), index: usize::MAX }
    }
}

impl TokenStream for MixedTokenStream {
    fn advance(&mut self) -> bool {
        self.index = self.index.wrapping_add(1);
        self.index < self.tokens.len()
    }
    fn token(&self) -> &Token {
        &self.tokens[self.index]
    }
    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.index]
    }
}

/// The tokens of `text`, with byte offsets and increasing positions.
pub(crate) fn tokenize(text: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let push = |from: usize, to: usize, word: &str, tokens: &mut Vec<Token>| {
        let position = tokens.len();
        tokens.push(Token { offset_from: from, offset_to: to, position, text: word.to_string(), position_length: 1 });
    };
    let mut chars = text.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        if is_cjk_char(c) {
            let mut end = start;
            while let Some(&(i, c)) = chars.peek() {
                if !is_cjk_char(c) {
                    break;
                }
                end = i + c.len_utf8();
                chars.next();
            }
            let run = &text[start..end];
            for word in jieba().cut_for_search(run, true) {
                // jieba positions are in characters; convert to byte offsets within the run.
                let from = run.char_indices().nth(word.start).map(|(b, _)| b).unwrap_or(0);
                push(start + from, start + from + word.word.len(), word.word, &mut tokens);
            }
            let offsets: Vec<(usize, char)> = run.char_indices().collect();
            for pair in offsets.windows(2) {
                let (a, _) = pair[0];
                let (b, cb) = pair[1];
                push(start + a, start + b + cb.len_utf8(), &run[a..b + cb.len_utf8()], &mut tokens);
            }
        } else if c.is_alphanumeric() {
            let mut end = start;
            while let Some(&(i, c)) = chars.peek() {
                if !c.is_alphanumeric() || is_cjk_char(c) {
                    break;
                }
                end = i + c.len_utf8();
                chars.next();
            }
            push(start, end, &text[start..end], &mut tokens);
        } else {
            chars.next();
        }
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        tokenize(text).into_iter().map(|t| t.text).collect()
    }

    #[test]
    fn chinese_gets_jieba_words_and_bigrams() {
        let w = words("中国联通的资本开支");
        assert!(w.contains(&"中国".to_string()) && w.contains(&"联通".to_string()), "{w:?}");
        assert!(w.contains(&"资本".to_string()), "{w:?}");
        assert!(w.contains(&"通的".to_string()), "bigram expected: {w:?}");
    }

    #[test]
    fn english_words_and_numbers_split_on_punctuation() {
        assert_eq!(words("Apple's Q3-2023 revenue: $81.8bn"), vec!["Apple", "s", "Q3", "2023", "revenue", "81", "8bn"]);
    }

    #[test]
    fn mixed_text_keeps_offsets_inside_the_text() {
        let text = "iPhone销量 grew 增长了";
        for t in tokenize(text) {
            assert_eq!(&text[t.offset_from..t.offset_to], t.text);
        }
    }
}
