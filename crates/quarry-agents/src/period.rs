//! The period a document covers, read from its context line (`quarry_ingest::document_context`: issuer,
//! document type, "… period ended `<date>`", file name), and whether a question asks for the latest one.
//! Words only, no model.

use quarry_core::{Passage, CONTEXT_SEPARATOR};

/// Whether `question` asks for the most recent document ("latest", "most recent", "newest").
pub fn asks_for_latest(question: &str) -> bool {
    let q = question.to_lowercase();
    ["latest", "most recent", "newest", "most current"].iter().any(|w| q.contains(w))
}

/// The period a context line names: its "… ended `<date>`" part ("quarterly period ended July 1, 2023"),
/// or `None`.
pub(crate) fn period_phrase(context: &str) -> Option<&str> {
    context.split(CONTEXT_SEPARATOR).find(|part| part.contains(" ended ")).map(str::trim)
}

/// The period end date a context line states, as written ("April 30, 2023" of "quarterly period ended
/// April 30, 2023"), or `None`.
pub(crate) fn period_end_text(context: &str) -> Option<&str> {
    let phrase = period_phrase(context)?;
    let date = phrase[phrase.find(" ended ")? + " ended ".len()..].trim();
    (!date.is_empty()).then_some(date)
}

/// The period end date a context line states ("… ended April 30, 2023"), as (year, month, day).
pub(crate) fn period_end(context: &str) -> Option<(u16, u8, u8)> {
    crate::figures::figures(period_end_text(context)?).into_iter().find_map(|f| match f.kind {
        crate::figures::FigureKind::Date { year, month, day } => Some((year, month, day)),
        _ => None,
    })
}

/// The name of `passage`'s file without its extension ("2023 Q1 NVDA"); empty when it has none.
pub(crate) fn file_stem(passage: &Passage) -> &str {
    std::path::Path::new(&passage.path).file_stem().and_then(|s| s.to_str()).unwrap_or("")
}

/// `passage`'s context line without the part that is its file's name (`quarry_ingest::document_context`
/// ends the line with it): what the document itself states — "NVIDIA CORPORATION · Form 10-Q · quarterly
/// period ended April 30, 2023 · first quarter of fiscal 2024" of a file named `2023 Q1 NVDA.pdf`.
pub(crate) fn stated_context(passage: &Passage) -> String {
    let file_name = file_stem(passage);
    passage
        .context
        .split(CONTEXT_SEPARATOR)
        .filter(|part| file_name.is_empty() || !part.trim().eq_ignore_ascii_case(file_name))
        .collect::<Vec<_>>()
        .join(CONTEXT_SEPARATOR)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_period_is_the_ended_part_of_the_context_line() {
        let apple = "Apple Inc. · Form 10-Q · quarterly period ended July 1, 2023 · 2023 Q3 AAPL";
        assert_eq!(period_phrase(apple), Some("quarterly period ended July 1, 2023"));
        assert_eq!(period_end(apple), Some((2023, 7, 1)));
        assert_eq!(period_phrase("Annual report 2023"), None);
    }
}
