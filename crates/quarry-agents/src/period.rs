//! The period a document covers, read from its context line (`quarry_ingest::document_context`: issuer,
//! document type, "… period ended `<date>`", file name), and whether a question asks for the latest one.
//! Words only, no model.

use quarry_core::{Passage, CONTEXT_SEPARATOR};

/// Whether `question` asks for the most recent document ("latest", "most recent", "newest") alone. A
/// question that sets it against earlier ones ("Comparing the most recent quarter to previous ones",
/// "the latest report against prior years": [`names_earlier_periods`]) asks for every period, so it does not.
pub fn asks_for_latest(question: &str) -> bool {
    let q = question.to_lowercase();
    ["latest", "most recent", "newest", "most current"].iter().any(|w| q.contains(w)) && !names_earlier_periods(&q)
}

/// Whether `question` names earlier periods or documents in the plural ("previous ones", "prior quarters",
/// "earlier reports", "past years"): the several documents before the latest, not the prior-year
/// column of the latest one ("the same quarter of the prior year", singular, stays in it).
pub fn names_earlier_periods(question: &str) -> bool {
    static EARLIER: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    EARLIER
        .get_or_init(|| {
            regex::Regex::new(
                r"(?i)\b(?:previous|prior|earlier|preceding|past|former)\s+(?:ones|quarters|periods|filings|reports|years|months|documents|versions|editions|releases|issues)\b",
            )
            .expect("the pattern is valid")
        })
        .is_match(question)
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

    #[test]
    fn the_latest_set_against_earlier_ones_is_not_the_latest_alone() {
        assert!(asks_for_latest("What changed in NVIDIA's accounting in its most recent 10-Q?"));
        assert!(asks_for_latest(
            "How does revenue in the latest quarter compare to the same quarter of the prior year?"
        ));
        assert!(!asks_for_latest(
            "Comparing the most recent quarter to previous ones, how has NVIDIA's investment in research changed?"
        ));
        assert!(!asks_for_latest("How do the latest minutes differ from earlier reports?"));
        assert!(!asks_for_latest("How have inventories changed over these quarters?"));
    }
}
