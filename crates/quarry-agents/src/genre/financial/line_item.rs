//! One vocabulary for the line items of financial statements: filers name one line differently ("Net
//! sales" / "Revenue"), and a question, a quote ([`crate::genre::financial::key_quote`]) and a claim ([`crate::claims`])
//! are matched to a filing's rows only when they are read in the same words.

use crate::text::stems;

/// Words different filers use for one line item, each with the word it is matched as, in the order they
/// are read: Apple and Amazon report "Net sales" and "Cost of sales" where Microsoft, NVIDIA and Intel
/// report "Revenue" and "Cost of revenue" (the same lines; US GAAP's ASC 606 calls them revenue). Without
/// it a question on Amazon's AWS revenue shared one word with the row "AWS: Net sales: $23,059 million",
/// and a question on Microsoft's "total net sales" none with its "Total revenue" row. A cost of revenue is
/// one item of its own, matched as one word, so it answers no question on revenue (nor the other way).
/// "Operating costs", "operational expenses" and "operating" or "operational expenditures" are what the
/// filings print as operating expenses: a question on NVIDIA's operating costs shared one word
/// ("operating") with its "Total operating expenses" row and got no quote of it
/// (docs/evaluation/decisions.md, 2026-12-07 (g)).
/// "Sales and marketing" reads "revenue and marketing" and still names an expense: a label must name only
/// what is asked (`key_quote`'s label rule), and [`LINE_ITEMS`] reads "sales and marketing" as an
/// item of its own.
pub(crate) const SAME_LINE_ITEM: &[(&str, &str)] = &[
    ("cost of sales", "costofrevenue"),
    ("cost of revenue", "costofrevenue"),
    ("cost of revenues", "costofrevenue"),
    ("operating costs", "operating expenses"),
    ("operational costs", "operating expenses"),
    ("operational expenses", "operating expenses"),
    ("operating expenditures", "operating expenses"),
    ("operational expenditures", "operating expenses"),
    ("sales", "revenue"),
];

/// `text` in one vocabulary for matching, the question's and the passages' alike: each whole word of
/// [`SAME_LINE_ITEM`] written as the word it is matched as, the text lower-cased when one occurs (so a
/// sentence saying both "net sales" and "revenue" shares one word with the question, not two); `text`
/// itself (borrowed) when none does. The text shown is never changed.
pub(crate) fn one_vocabulary(text: &str) -> std::borrow::Cow<'_, str> {
    let is_word_at = |text: &str, at: usize, len: usize| {
        let before = text[..at].chars().next_back();
        let after = text[at + len..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    };
    let mut out = text.to_lowercase();
    let mut changed = false;
    for (word, matched_as) in SAME_LINE_ITEM {
        let mut rewritten = String::with_capacity(out.len());
        let mut rest = 0;
        for (at, _) in out.match_indices(word) {
            if is_word_at(&out, at, word.len()) {
                rewritten.push_str(&out[rest..at]);
                rewritten.push_str(matched_as);
                rest = at + word.len();
            }
        }
        if rest > 0 {
            rewritten.push_str(&out[rest..]);
            out = rewritten;
            changed = true;
        }
    }
    if changed {
        std::borrow::Cow::Owned(out)
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// The words of `text` that are not stop words, lower case, in the singular ("Inventories" →
/// "inventory", "expenses" → "expense"; a word ending in "ss", "us" or "is" keeps its "s"). A label is
/// matched to the question word by word, not by [`crate::text::stems`]' first five letters, under
/// which "International" would answer a question on interest expense.
pub(crate) fn whole_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !stems(w).is_empty())
        .map(|w| {
            let w = w.to_lowercase();
            let n = w.chars().count();
            if n > 4 && w.ends_with("ies") {
                format!("{}y", &w[..w.len() - 3])
            } else if n > 3 && w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
                w[..w.len() - 1].to_string()
            } else {
                w
            }
        })
        .collect()
}

/// Line items of financial statements, each as its spellings in the words [`whole_words`] reads from
/// [`one_vocabulary`] (so "Net sales" is `net revenue`, "Research and development" `research
/// development`): a row's label or table section names what the row measures, and a sentence that says
/// "revenue" and states a figure the cited passage prints only in its "Operating income" row has read
/// the wrong row (the claim check, [`crate::claims`]). An income and a loss of one level are one item
/// ("Operating income (loss)"); the expense lines whose name holds "sales" ("Sales and marketing",
/// "Selling, general and administrative") are items of their own, so they never read as revenue.
pub(crate) const LINE_ITEMS: &[&[&[&str]]] = &[
    &[&["revenue"]],
    &[&["costofrevenue"]],
    &[&["gross", "margin"], &["gross", "profit"]],
    &[&["operating", "income"], &["operating", "loss"]],
    &[&["net", "income"], &["net", "loss"]],
    &[&["operating", "expense"]],
    &[&["research", "development"]],
    &[&["revenue", "marketing"]],
    &[
        &["revenue", "general", "administrative"],
        &["selling", "general", "administrative"],
        &["marketing", "general", "administrative"],
        &["general", "administrative"],
    ],
    // The statement of cash flows' three totals, as the filers print them: "Net cash provided by (used
    // in) operating activities" (Amazon, Intel, NVIDIA), "Cash generated by operating activities"
    // (Apple), "Net cash from operations" / "Net cash used in investing" (Microsoft).
    &[&["operating", "activity"], &["cash", "operation"]],
    &[&["investing", "activity"], &["cash", "investing"], &["cash", "used", "investing"]],
    &[&["financing", "activity"], &["cash", "financing"], &["cash", "used", "financing"]],
    // Cash and cash equivalents: the balance sheet's first row, and what the discussion's "Liquidity and
    // capital resources" starts from ("Cash, cash equivalents, and short-term investments totaled …").
    &[&["cash", "cash", "equivalent"]],
];

/// The line items ([`LINE_ITEMS`], by index) a question names by the statement or the topic that reports
/// them: "cash flow(s)" names the statement of cash flows, whose operating, investing and financing
/// totals are what a person asking how a company's cash flows changed reads first; "liquidity" names
/// cash and cash equivalents, the row a filing's discussion of its liquidity starts from
/// (docs/evaluation/decisions.md, 2026-12-07 (n), (p)); a row is that statement's when its label names
/// the item and nothing else ([`items_named_only`]). Empty when `question` names neither. Read from the
/// question only: a passage saying "cash flows" measures none of them.
pub(crate) fn statement_items(question: &str) -> Vec<usize> {
    let words = whole_words(&one_vocabulary(question));
    let mut spellings = Vec::new();
    if words.windows(2).any(|pair| pair[0] == "cash" && pair[1] == "flow") {
        spellings.extend(["operating activity", "investing activity", "financing activity"]);
    }
    if words.iter().any(|w| w == "liquidity") {
        spellings.push("cash and cash equivalents");
    }
    let mut items: Vec<usize> = spellings.iter().flat_map(|spelling| line_items(spelling)).collect();
    items.dedup();
    items
}

/// Words a statement's row label says beside the line item it measures without measuring anything
/// else: "Net cash provided by (used in) operating activities", "Total cash and cash equivalents".
const LABEL_FILLER: &[&str] = &["net", "total", "provided", "used", "generated", "cash"];

/// The line items ([`line_items`]) a row `label` names when it names nothing else: each of its words
/// is a word of one of those items' spellings or [`LABEL_FILLER`]. "Cash and cash equivalents" and
/// "Net cash used in financing" name their items; "Net change in cash and cash equivalents", "Effect
/// of foreign exchange rates on cash and cash equivalents" and "Cash, cash equivalents, and restricted
/// cash, end of period" name more than the item (a change, an effect, another balance) and get none
/// (docs/evaluation/decisions.md, 2026-12-07 (p)).
pub(crate) fn items_named_only(label: &str) -> Vec<usize> {
    let items = line_items(label);
    let spelled: Vec<&str> =
        items.iter().flat_map(|&item| LINE_ITEMS[item].iter().flat_map(|spelling| spelling.iter().copied())).collect();
    let only = whole_words(&one_vocabulary(label))
        .iter()
        .all(|w| spelled.contains(&w.as_str()) || LABEL_FILLER.contains(&w.as_str()));
    if only {
        items
    } else {
        Vec::new()
    }
}

/// The line items ([`LINE_ITEMS`], by index) that `text` names, in the order it first names them: its
/// words read from the first, each place taking the longest spelling that starts there ("sales and
/// marketing" is that expense, not revenue); a word in no spelling is passed over.
pub(crate) fn line_items(text: &str) -> Vec<usize> {
    let words = whole_words(&one_vocabulary(text));
    let mut found = Vec::new();
    let mut at = 0;
    while at < words.len() {
        let rest = &words[at..];
        let longest = LINE_ITEMS
            .iter()
            .enumerate()
            .flat_map(|(index, spellings)| spellings.iter().map(move |s| (index, s.len(), *s)))
            .filter(|(_, len, spelling)| rest.len() >= *len && spelling.iter().zip(rest).all(|(a, b)| *a == b.as_str()))
            .max_by_key(|(_, len, _)| *len);
        match longest {
            Some((index, len, _)) => {
                if !found.contains(&index) {
                    found.push(index);
                }
                at += len;
            }
            None => at += 1,
        }
    }
    found
}

/// Where a table row's line items were read from ([`measured_items`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MeasuredBy {
    /// The row's label names them ("Total operating expenses").
    Label,
    /// The label names none (a segment's name, "AWS"), so the section the row sits under does
    /// ("Operating Income (Loss)"), or nothing does (the list is empty).
    Section,
}

/// The line items ([`LINE_ITEMS`], by index) a table row with `label` under `section` (empty when none)
/// measures: its label's ([`line_items`]), else its section's, with where they were read. One rule for
/// the claim check's "figure read from another line item's row" ([`crate::claims`]) and the quote's
/// "segment row under another item's section" ([`crate::genre::financial::key_quote`]).
pub(crate) fn measured_items(section: &str, label: &str) -> (Vec<usize>, MeasuredBy) {
    let items = line_items(label);
    if items.is_empty() {
        (line_items(section), MeasuredBy::Section)
    } else {
        (items, MeasuredBy::Label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Line items by their first spelling.
    fn names(items: Vec<usize>) -> Vec<String> {
        items.into_iter().map(|i| LINE_ITEMS[i][0].join(" ")).collect()
    }

    /// Each item `text` names, by its first spelling.
    fn named(text: &str) -> Vec<String> {
        names(line_items(text))
    }

    #[test]
    fn line_items_are_read_in_one_vocabulary_longest_first() {
        assert_eq!(named("AWS revenue was $6,976 million"), ["revenue"]);
        assert_eq!(named("Total net sales"), ["revenue"]);
        assert_eq!(named("Operating Income (Loss)"), ["operating income"]);
        assert_eq!(named("an operating loss of $412 million"), ["operating income"]);
        assert_eq!(named("Cost of sales: Products"), ["costofrevenue"]);
        assert_eq!(named("Sales and marketing"), ["revenue marketing"]);
        assert_eq!(named("Selling, general and administrative expenses"), ["revenue general administrative"]);
        assert_eq!(named("Research and development expenses were $6,844 million"), ["research development"]);
        assert_eq!(named("Revenue rose while total operating expenses fell"), ["revenue", "operating expense"]);
        assert_eq!(named("NVIDIA's operating costs rose"), ["operating expense"]);
        assert_eq!(named("Microsoft's operational expenditures"), ["operating expense"]);
        assert_eq!(named("operational expenses and revenue"), ["operating expense", "revenue"]);
        assert_eq!(named("Net cash provided by (used in) operating activities"), ["operating activity"]);
        assert_eq!(named("Cash generated by/(used in) investing activities"), ["investing activity"]);
        assert_eq!(named("Net cash from operations"), ["operating activity"]);
        assert_eq!(named("Net cash used in investing"), ["investing activity"]);
        assert_eq!(named("Net cash from (used in) financing"), ["financing activity"]);
        assert_eq!(named("Net cash used for financing activities"), ["financing activity"]);
        assert!(named("Operating cash flows from operating leases").is_empty());
        assert_eq!(named("Cash and cash equivalents"), ["cash cash equivalent"]);
        assert_eq!(named("Cash, cash equivalents, and short-term investments totaled"), ["cash cash equivalent"]);
        assert_eq!(named("Cash, cash equivalents and restricted cash, end of period"), ["cash cash equivalent"]);
        assert!(named("AWS").is_empty());
        assert!(named("Intelligent Cloud").is_empty());
    }

    #[test]
    fn cash_flows_name_the_statements_three_totals() {
        let named = |q: &str| names(statement_items(q));
        assert_eq!(
            named("Are there any notable changes in Amazon's liquidity position or cash flows as reported?"),
            ["operating activity", "investing activity", "financing activity", "cash cash equivalent"]
        );
        assert_eq!(named("How did Microsoft's cash flow change?").len(), 3);
        assert_eq!(named("How has Intel's liquidity changed?"), ["cash cash equivalent"]);
        assert!(named("How did Apple's cash and cash equivalents change?").is_empty());
        let only = |label: &str| names(items_named_only(label));
        assert_eq!(only("Cash and cash equivalents"), ["cash cash equivalent"]);
        assert_eq!(only("Net cash provided by (used in) operating activities"), ["operating activity"]);
        assert_eq!(only("Net cash used in financing"), ["financing activity"]);
        assert_eq!(only("Cash generated by operating activities"), ["operating activity"]);
        assert!(only("Net change in cash and cash equivalents").is_empty());
        assert!(only("Effect of foreign exchange rates on cash and cash equivalents").is_empty());
        assert!(only("Cash, cash equivalents, and restricted cash, end of period").is_empty());
        assert!(only("Cash and cash equivalents, beginning of period").is_empty());
        assert!(named("What was NVIDIA's operating income?").is_empty());
    }

    #[test]
    fn a_row_measures_its_labels_items_else_its_sections() {
        let revenue = line_items("revenue");
        let operating_income = line_items("operating income");
        assert_eq!(measured_items("Operating Income (Loss)", "Net sales"), (revenue, MeasuredBy::Label));
        assert_eq!(measured_items("Operating Income (Loss)", "AWS"), (operating_income, MeasuredBy::Section));
        assert_eq!(measured_items("", "AWS"), (vec![], MeasuredBy::Section));
    }
}
