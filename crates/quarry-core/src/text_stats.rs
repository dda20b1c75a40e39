/// True for characters of the CJK scripts: Han ideographs (unified, extensions A–G, compatibility),
/// Japanese kana and Korean Hangul syllables/jamo. CJK punctuation is not counted.
pub fn is_cjk_char(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF        // CJK Unified Ideographs
        | 0x3400..=0x4DBF      // Extension A
        | 0x20000..=0x323AF    // Extensions B–H
        | 0xF900..=0xFAFF      // Compatibility Ideographs
        | 0x3040..=0x30FF      // Hiragana, Katakana
        | 0x31F0..=0x31FF      // Katakana Phonetic Extensions
        | 0xAC00..=0xD7AF      // Hangul Syllables
        | 0x1100..=0x11FF      // Hangul Jamo
        | 0x3130..=0x318F      // Hangul Compatibility Jamo
    )
}

/// Number of CJK characters (see [`is_cjk_char`]) in `text`.
pub fn count_cjk_chars(text: &str) -> usize {
    text.chars().filter(|&c| is_cjk_char(c)).count()
}

/// Whether text with `cjk` CJK characters among `letters` letters (alphabetic characters, CJK included)
/// is mostly Chinese, Japanese or Korean: more than half of the letters. Digits, punctuation and spaces
/// do not count, so the figures of a Chinese annual report do not hide its language. One rule for the
/// library's embedding model, search's fusion and the answer's language.
pub fn mostly_cjk(letters: u64, cjk: u64) -> bool {
    letters > 0 && cjk * 2 > letters
}

/// [`mostly_cjk`] of `text`.
pub fn is_mostly_cjk(text: &str) -> bool {
    let letters = text.chars().filter(|c| c.is_alphabetic()).count() as u64;
    mostly_cjk(letters, count_cjk_chars(text) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_han_kana_and_hangul_but_not_latin_or_punctuation() {
        assert_eq!(count_cjk_chars("中国移动 report"), 4);
        assert_eq!(count_cjk_chars("ひらがなカタカナ"), 8);
        assert_eq!(count_cjk_chars("한국어"), 3);
        assert_eq!(count_cjk_chars("。，、「」"), 0);
    }
}
