//! Passages from the document the question names come first. A question such as "NVIDIA's revenue in
//! the first quarter of fiscal 2024" names a company and a period; the chunks of four NVIDIA filings all
//! talk about revenue, and search ranks the second quarter's as high as the first's. Each passage carries
//! its document's context line (issuer, document type, period; `quarry_ingest::document_context`), so the
//! question's words can be matched against it: passages whose context shares the most of the question's
//! words move ahead of the others, each group keeping the search's order. A question that names no
//! document (no context word shared, or every passage sharing as many) leaves the order as it was. A
//! question asking for the "latest" or "most recent" document puts the latest period among the
//! best-matching documents first (the context line's "… ended `<date>`").
//!
//! This is metadata matching, not a model call: microseconds, and it cannot invent a match. It only
//! reorders what search returned, so the search should return more than the answer will read
//! ([`WIDENING`]).

use crate::period::{asks_for_latest, file_stem, period_end, stated_context};
use crate::quarter::{quarter_mentions, QuarterMention};
use crate::text::word_stems;
use quarry_core::Passage;

/// How many times `top_k` passages NaiveRAG asks search for before preferring the matching documents'
/// passages and keeping `top_k`.
pub const WIDENING: usize = 4;

/// How many of `question`'s match terms ([`match_terms`]: words, stop words left out, and the quarters
/// it names) the passage's document context shares.
pub fn context_overlap(question: &str, passage: &Passage) -> usize {
    if passage.context.is_empty() {
        return 0;
    }
    match_terms(question).intersection(&match_terms(&passage.context)).count()
}

/// What a question and a context line are matched by: their [`word_stems`], plus each quarter they name
/// as one term of its own ([`quarter_terms`]) in place of the words that name it. Matched word by word,
/// "Q3 2023" would share "Q3" with a filing named `2022 Q3 MSFT` and "2023" with its "first quarter of
/// fiscal 2023" just as much as it shares both with `2023 Q3 MSFT`, and "the first quarter of 2023"
/// would share "first" with any filing of a first quarter; as one term, the quarter goes to the
/// filings that name that quarter of that year.
pub(crate) fn match_terms(text: &str) -> std::collections::HashSet<String> {
    let mentions = quarter_mentions(text);
    let mut words = text.to_string();
    for mention in &mentions {
        words.replace_range(mention.span.clone(), &" ".repeat(mention.span.len()));
    }
    let mut terms = word_stems(&words);
    terms.extend(mentions.iter().map(QuarterMention::term));
    terms
}

/// The quarters `text` names ([`crate::quarter`]), each as the term `q3·2023` (quarter and year as
/// written: a fiscal year is not turned into a calendar one).
pub(crate) fn quarter_terms(text: &str) -> Vec<String> {
    quarter_mentions(text).iter().map(QuarterMention::term).collect()
}

/// What a passage's document is matched by, read once from its context line and file name.
struct DocumentTerms {
    /// The context line's [`match_terms`].
    terms: std::collections::HashSet<String>,
    /// The quarters the document states: its context line without the file name part.
    stated_quarters: Vec<String>,
    /// The quarters its file name (without extension) gives.
    file_quarters: Vec<String>,
}

impl DocumentTerms {
    /// `None` for a passage without a context line (it matches nothing).
    fn of(passage: &Passage) -> Option<DocumentTerms> {
        if passage.context.is_empty() {
            return None;
        }
        Some(DocumentTerms {
            terms: match_terms(&passage.context),
            stated_quarters: quarter_terms(&stated_context(passage)),
            file_quarters: quarter_terms(file_stem(passage)),
        })
    }

    /// Whether the quarter `question` names is the one its reader most likely means in this document,
    /// when a filing's own words and its file name name different quarters: a quarter asked for as
    /// fiscal ("Q1 FY2024", "the first quarter of fiscal 2024") is the one the document states (its
    /// context line without the file name); a quarter asked for without "fiscal" ("Q1 2023") is the one
    /// the file's name gives, the label the person filed it under. Microsoft's 10-Q for the quarter
    /// ended December 31, 2022 calls it the second quarter of fiscal 2023; filed as `2023 Q1 MSFT.pdf`,
    /// it is what "Microsoft's first quarter of 2023" means to the person who named it so — and the
    /// filing of the quarter ended September 30, 2022, "first quarter of fiscal year 2023" in its own
    /// words, is what "the first quarter of fiscal 2023" means. Used only to break a tie in
    /// [`document_match`]; false when the question names no quarter.
    fn quarter_as_meant(&self, question: &[QuarterMention]) -> bool {
        question.iter().any(|q| {
            if q.fiscal {
                self.stated_quarters.contains(&q.term())
            } else {
                self.file_quarters.contains(&q.term())
            }
        })
    }
}

/// How well a document (`document`, `None` without a context line) matches what a question names
/// (`question_terms`, its [`match_terms`]; `quarters`, its [`quarter_mentions`]): the match terms they
/// share ([`context_overlap`]), then whether its quarter is the one the question most likely means
/// ([`DocumentTerms::quarter_as_meant`]). Compared as a pair: the second only breaks ties.
fn document_match(
    question_terms: &std::collections::HashSet<String>,
    quarters: &[QuarterMention],
    document: Option<&DocumentTerms>,
) -> (usize, bool) {
    let Some(document) = document else { return (0, false) };
    let shared = question_terms.intersection(&document.terms).count();
    (shared, shared > 0 && document.quarter_as_meant(quarters))
}

/// What NaiveRAG reads of `found` (a search [`WIDENING`] × `k` deep, best first): the matching
/// documents' passages first ([`prefer_matching_documents`]), shared out over the documents that match
/// equally well ([`spread_over_documents`]), then the first `k`.
pub fn select(question: &str, found: Vec<Passage>, k: usize) -> Vec<Passage> {
    select_for_query(question, question, found, k)
}

/// What an agent reads of a sub-query's search `found` ([`WIDENING`] × `k` deep, best first) for
/// `question`: as [`select`], with the documents `query` names first, and among the passages `query`
/// matches equally (none, when it names no document) those of the documents `question` names. A
/// sub-query the model wrote without the question's company or period ("operating expenses for the
/// quarter") thus reads the question's filing, not four look-alike filings; a gap query naming a new
/// entity (a second hop's "Who founded Globex?") reads Globex's documents first. "Latest" is read from
/// `question`. With `query` = `question` this is [`select`].
pub fn select_for_query(query: &str, question: &str, found: Vec<Passage>, k: usize) -> Vec<Passage> {
    let (query_words, question_words) = (match_terms(query), match_terms(question));
    let (query_quarters, question_quarters) = (quarter_mentions(query), quarter_mentions(question));
    // Each passage's document terms are read once for both matches.
    let key = |p: &Passage| {
        let document = DocumentTerms::of(p);
        (
            document_match(&query_words, &query_quarters, document.as_ref()),
            document_match(&question_words, &question_quarters, document.as_ref()),
        )
    };
    let (mut passages, first_group) = match_order_by(found, key, asks_for_latest(question));
    if first_group > 0 {
        passages = spread_over_documents(passages, first_group);
    }
    passages.truncate(k);
    passages
}

/// When the first `group_len` of `passages` come from several documents that match the question equally
/// well (four quarterly filings of the company a question names, "How have Apple's net sales changed?"),
/// those places go to the documents in turn — each document's best passage, then each one's second, … in
/// the order the documents first appear — so that one filing's passages cannot fill every place. The
/// rest follow unchanged; with one document in the group nothing moves.
pub fn spread_over_documents(passages: Vec<Passage>, group_len: usize) -> Vec<Passage> {
    let mut documents: Vec<String> = Vec::new();
    for p in &passages[..group_len] {
        if !documents.contains(&p.document_id) {
            documents.push(p.document_id.clone());
        }
    }
    if documents.len() < 2 {
        return passages;
    }
    let mut group = passages;
    let tail = group.split_off(group_len);
    let mut queues: Vec<std::collections::VecDeque<Passage>> = documents.iter().map(|_| Default::default()).collect();
    for p in group {
        let d = documents.iter().position(|d| *d == p.document_id).expect("document of the group");
        queues[d].push_back(p);
    }
    let mut out = Vec::with_capacity(group_len + tail.len());
    while out.len() < group_len {
        for queue in queues.iter_mut() {
            if let Some(p) = queue.pop_front() {
                out.push(p);
            }
        }
    }
    out.extend(tail);
    out
}

/// Words of context lines that say what kind of document it is rather than whose or which one: a
/// question matching a context line only on these ("… in these 10-Qs over the quarters") names no
/// document.
const DOCUMENT_KIND_WORDS: &str = "form 10-Q 10-K 8-K 20-F quarterly quarter period ended fiscal year annual report \
     months three six nine twelve inc corporation company";

/// Whether `question` shares a word with `context` that names the document — an issuer, a title, a
/// period code such as "Q3" — not only its kind ([`DOCUMENT_KIND_WORDS`]) or a bare number: an Apple
/// question about "2023" shares the year with every 2023 filing of another company.
fn names_document(question: &str, context: &str) -> bool {
    let kind = word_stems(DOCUMENT_KIND_WORDS);
    word_stems(question)
        .intersection(&word_stems(context))
        .any(|w| !kind.contains(w) && w.chars().any(char::is_alphabetic))
}

/// Documents that match a question equally well, for an answer per document ([`tied_documents`]).
#[derive(Debug, Clone, PartialEq)]
pub struct TiedDocuments {
    /// Each document's passages (search order), the documents in order of the period they cover.
    pub documents: Vec<Vec<Passage>>,
    /// Each document's other passages among the search's candidates, after those in `documents`
    /// (search order; same order of documents): the quote under its line may come from them
    /// ([`crate::per_document`]), though its model call does not read them.
    pub further: Vec<Vec<Passage>>,
    /// How many more documents matched as well but were left out (beyond `max_documents`).
    pub left_out: usize,
}

/// When the best match for `question` among `found` (a search [`WIDENING`] × `k` deep, best first) is
/// several documents alike — four quarterly filings of the company a question names without naming a
/// period, "How have Apple's net sales changed over time?" — those documents: at most `max_documents` of
/// them (those whose passages search ranks first), ordered by the period they cover (the context line's
/// "ended `<date>`"; undated ones last, in search order), each with its first passages: `passages_total`
/// shared out evenly, at least `min_per_document` each (and at least one). `None` when one document (or
/// none) matches best — the question names its document — or when the match is on words for the kind of document only (an Apple question
/// asked of a library of NVIDIA filings matches them all on "10-Q"; [`names_document`]), or when
/// `max_documents` is below 2 (answers per document turned off).
pub fn tied_documents(
    question: &str,
    found: Vec<Passage>,
    max_documents: usize,
    passages_total: usize,
    min_per_document: usize,
) -> Option<TiedDocuments> {
    let (passages, first_group) = match_order(question, found);
    let mut documents: Vec<Vec<Passage>> = Vec::new();
    for p in passages.into_iter().take(first_group) {
        match documents.iter_mut().find(|d| d[0].same_document(&p)) {
            Some(document) => document.push(p),
            None => documents.push(vec![p]),
        }
    }
    if documents.len() < 2 || max_documents < 2 || !names_document(question, &documents[0][0].context) {
        return None;
    }
    let left_out = documents.len().saturating_sub(max_documents);
    documents.truncate(max_documents);
    documents.sort_by_key(|d| {
        let end = period_end(&d[0].context);
        (end.is_none(), end)
    });
    let per_document = (passages_total / documents.len()).max(min_per_document).max(1);
    let further = documents.iter_mut().map(|d| d.split_off(per_document.min(d.len()))).collect();
    Some(TiedDocuments { documents, further, left_out })
}

/// Capitalised words that do not name an issuer, a product or a person: question words, months, period
/// and form codes, accounting terms (lower case); [`question_subject`] skips them.
const NOT_NAMES: &str =
    "what which who whom whose how when where why did does do is are was were has have had can could \
     would should will the a an in on of for to and or from by with as at its their this these those that any \
     january february march april may june july august september october november december q1 q2 q3 q4 fy \
     form gaap non us u.s usd inc corp corporation company ltd llc plc co sec compare describe explain list \
     summarize outline according";

/// The name `question` is first about — its first capitalised word that does not open a sentence, or
/// its first all-capital word of four letters or more ("NVIDIA"; shorter ones such as "AWS", "ESG" are
/// often spelled out in the documents), possessive "'s" dropped, not in [`NOT_NAMES`] — in lower case;
/// `None` when the question names nothing.
///
/// Only the first name counts, the one a question is usually about ("What was Microsoft's gross margin
/// …"): later names are often parts of a product or segment that the documents phrase otherwise
/// ("Amazon Web Services" is "AWS" in the filings).
pub fn question_subject(question: &str) -> Option<String> {
    let not_names: Vec<&str> = NOT_NAMES.split_whitespace().collect();
    let mut opens_sentence = true;
    for raw in question.split_whitespace() {
        let starts_sentence = opens_sentence;
        opens_sentence = raw.ends_with(['.', '?', '!', ':']);
        if raw.contains('&') {
            continue;
        }
        let word = raw.trim_matches(|c: char| !c.is_alphanumeric());
        let word = word.strip_suffix("'s").or_else(|| word.strip_suffix("’s")).unwrap_or(word);
        let letters: Vec<char> = word.chars().filter(|c| c.is_alphabetic()).collect();
        let capitals = letters.iter().all(|c| c.is_uppercase());
        let all_capitals = letters.len() >= 4 && capitals;
        let capitalised = word.chars().next().is_some_and(char::is_uppercase) && !starts_sentence && !capitals;
        let lower = word.to_lowercase();
        if letters.len() < 3 || !(all_capitals || capitalised) || not_names.contains(&lower.as_str()) {
            continue;
        }
        return Some(lower);
    }
    None
}

/// Where the passages `found` name `subject` (lower case, as [`question_subject`] gives it), ignoring
/// case: in how many passages' document context lines, and in how many passages' text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct SubjectMentions {
    /// Passages whose document context line names it.
    pub in_context: usize,
    /// Passages whose text names it.
    pub in_text: usize,
}

/// Counts [`SubjectMentions`] of `subject` over `found`, as a whole word ("intel" is not mentioned by
/// "intellectual", "arm" not by "pharmaceutical").
pub fn subject_mentions(subject: &str, found: &[Passage]) -> SubjectMentions {
    SubjectMentions {
        in_context: found.iter().filter(|p| mentions_word(&p.context, subject)).count(),
        in_text: found.iter().filter(|p| mentions_word(&p.text, subject)).count(),
    }
}

/// Whether `text` holds `word` (lower case) as a whole word, ignoring case: no letter or digit right
/// before or after it.
fn mentions_word(text: &str, word: &str) -> bool {
    let text = text.to_lowercase();
    let mut from = 0;
    while let Some(at) = text[from..].find(word) {
        let start = from + at;
        let end = start + word.len();
        let before = text[..start].chars().next_back().is_some_and(char::is_alphanumeric);
        let after = text[end..].chars().next().is_some_and(char::is_alphanumeric);
        if !before && !after {
            return true;
        }
        from = start + text[start..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

/// Fewest passages found for a single passing mention to count as the library knowing nothing of a
/// subject (NaiveRAG searches 32 by default; see [`uncovered_subject`]).
pub const PASSING_MENTION_DEPTH: usize = 16;

/// A subject the library's documents are not about ([`uncovered_subject`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UncoveredSubject {
    /// The [`question_subject`], lower case.
    pub name: String,
    /// Passages found that mention it in their text (0 or 1).
    pub mentions: usize,
    /// Passages found.
    pub of: usize,
}

impl UncoveredSubject {
    /// The answer shown to the person: why the question cannot be answered from their documents.
    pub fn message(&self) -> String {
        if self.mentions == 0 {
            format!(
                "None of the passages found mentions \"{}\", so this question cannot be answered from your documents.",
                self.name
            )
        } else {
            format!(
                "Only one of the {} passages found mentions \"{}\", in passing, and none of their documents is about it, so this question cannot be answered from your documents.",
                self.of, self.name
            )
        }
    }
}

/// The [`question_subject`] when the passages `found` show the library holds nothing about it: no
/// passage's document context line names it (no document is about it) and at most one passage's text
/// mentions it as a whole word — none at all, or a single passing mention when at least
/// [`PASSING_MENTION_DEPTH`] passages were found. `None` otherwise, when the question names nothing, or
/// when a passage has no context line (a library whose documents do not say what they are, where the
/// context cannot tell what a document is about).
///
/// This is what an unanswerable question looks like — "What was Microsoft's gross margin?" asked of a
/// library of NVIDIA filings, whose closest passages are NVIDIA's own gross margin and whose only trace
/// of Microsoft is one partner's name — and NaiveRAG then declines without asking the model, which
/// answered such questions with the other company's figures (Qwen 1.5B, 2 of 2 questions of the first
/// unanswerable slice). A search for a question about a subject that the library does cover brings up
/// several passages naming it. Measured on the shared 10-Q questions (docs/evaluation/decisions.md, 2026-11-26 (d)): no answerable
/// question of 128 declined; every answerable question's subject is in a context line.
pub fn uncovered_subject(question: &str, found: &[Passage]) -> Option<UncoveredSubject> {
    if found.is_empty() || found.iter().any(|p| p.context.is_empty()) {
        return None;
    }
    let name = question_subject(question)?;
    let mentions = subject_mentions(&name, found);
    let passing = mentions.in_text == 0 || (mentions.in_text == 1 && found.len() >= PASSING_MENTION_DEPTH);
    (mentions.in_context == 0 && passing).then_some(UncoveredSubject {
        name,
        mentions: mentions.in_text,
        of: found.len(),
    })
}

/// The quarter `question` names (fiscal or calendar: [`crate::quarter::quarters`]) when none of the
/// documents found is for it: no passage's context line names that quarter in any form (its fiscal
/// quarter, "Q3 2023", or its file's label "2023 Q3 …"). `None` when the question names no quarter, when
/// one document found is for one of the quarters it names, or when a passage has no context line.
/// Passage texts do not count: filings compare with other quarters all the time.
///
/// "NVIDIA's Q3 2022 10-Q" asked of a library holding NVIDIA's first two filings of 2023: the closest
/// passages are those filings', and a small model answers from them as if they were the third
/// quarter's.
pub fn missing_quarter(question: &str, found: &[Passage]) -> Option<(u8, u16)> {
    if found.is_empty() || found.iter().any(|p| p.context.is_empty()) {
        return None;
    }
    let named = crate::quarter::quarters(question);
    let first = *named.first()?;
    let covered = found.iter().any(|p| crate::quarter::quarters(&p.context).iter().any(|q| named.contains(q)));
    (!covered).then_some(first)
}

/// Share of `text`'s letters that are Chinese, Japanese or Korean characters ([`quarry_core::is_cjk_char`]);
/// `None` without letters.
fn cjk_share(text: &str) -> Option<f64> {
    let letters = text.chars().filter(|c| c.is_alphabetic()).count();
    (letters > 0).then(|| quarry_core::count_cjk_chars(text) as f64 / letters as f64)
}

/// The message for a question written in Chinese, Japanese or Korean characters (at least half its
/// letters) when the passages found hold almost none (under 5 % of their letters): search matched the
/// question's numbers and stray Latin words, and a small model then answers from passages it cannot
/// relate to the question (issue 36: "a question in another language than the library … never a
/// made-up answer"). The other way round — an English question over Chinese documents — goes to the
/// model: the multilingual embedder (`e5`) retrieves across languages and Qwen reads Chinese. `None`
/// when the scripts agree or either side has no letters.
pub fn other_script(question: &str, found: &[Passage]) -> Option<String> {
    let asked = cjk_share(question)?;
    let text: String = found.iter().map(|p| p.text.as_str()).collect::<Vec<_>>().join("\n");
    let read = cjk_share(&text)?;
    (asked >= 0.5 && read < 0.05).then(|| {
        "The question is written in Chinese, Japanese or Korean characters, but the passages found in your documents are not, so it cannot be answered reliably from them: ask in the language of your documents.".to_string()
    })
}

/// Why NaiveRAG declines `question` without asking the model, given the passages `found` by its wider
/// search: a Chinese, Japanese or Korean question over passages in another script ([`other_script`]), an
/// [`uncovered_subject`], else a [`missing_quarter`] (the message names it and the documents
/// found, at most four). `None`: the model is asked. The one decision NaiveRAG and
/// `quarry eval answers --retrieval-only` share.
pub fn decline_without_model(question: &str, found: &[Passage]) -> Option<String> {
    if let Some(message) = other_script(question, found) {
        return Some(message);
    }
    if let Some(subject) = uncovered_subject(question, found) {
        return Some(subject.message());
    }
    let (quarter, year) = missing_quarter(question, found)?;
    let mut documents: Vec<&str> = Vec::new();
    for p in found {
        if !documents.contains(&p.file_name()) {
            documents.push(p.file_name());
        }
    }
    let more = if documents.len() > 4 { format!(" and {} more", documents.len() - 4) } else { String::new() };
    documents.truncate(4);
    Some(format!(
        "None of the documents found is for Q{quarter} {year} (they are {}{more}), so this question cannot be answered from your documents.",
        documents.join(", ")
    ))
}

/// `passages` (in search order) with those whose document context shares the most words with
/// `question` first; ties and the rest keep their order. Unchanged when no context shares a word or all
/// share the same number. When the question asks for the latest document, the passages of the latest
/// period among the best-matching documents (by the context line's "ended `<date>`") come first of all.
pub fn prefer_matching_documents(question: &str, passages: Vec<Passage>) -> Vec<Passage> {
    match_order(question, passages).0
}

/// The order of [`prefer_matching_documents`] and how many passages lead it as its first group (the best
/// match, of the latest period for a "latest" question; 0 when no context shares a word with `question`).
fn match_order(question: &str, passages: Vec<Passage>) -> (Vec<Passage>, usize) {
    let (terms, quarters) = (match_terms(question), quarter_mentions(question));
    match_order_by(
        passages,
        |p| document_match(&terms, &quarters, DocumentTerms::of(p).as_ref()),
        asks_for_latest(question),
    )
}

/// [`match_order`] for any match `key` (higher is better; the default, e.g. 0 or (0, 0), is no match):
/// the passages of the best key first (of the latest period among them when `latest`), the rest after,
/// each group in search order; and the first group's length.
fn match_order_by<K: Ord + Copy + Default>(
    passages: Vec<Passage>,
    key: impl Fn(&Passage) -> K,
    latest: bool,
) -> (Vec<Passage>, usize) {
    let keys: Vec<K> = passages.iter().map(&key).collect();
    let best = keys.iter().copied().max().unwrap_or_default();
    if best == K::default() {
        return (passages, 0);
    }
    let latest = if latest {
        passages.iter().zip(&keys).filter(|(_, &o)| o == best).filter_map(|(p, _)| period_end(&p.context)).max()
    } else {
        None
    };
    // Rank: 0 = best match of the latest period, 1 = best match, 2 = the rest; stable within each.
    let rank = |p: &Passage, o: K| match (o == best, latest) {
        (true, Some(date)) if period_end(&p.context) == Some(date) => 0,
        (true, _) => 1,
        _ => 2,
    };
    let mut ranked: Vec<(usize, Passage)> = passages.into_iter().zip(keys).map(|(p, o)| (rank(&p, o), p)).collect();
    ranked.sort_by_key(|(r, _)| *r);
    let first_rank = ranked[0].0;
    let first_group = ranked.iter().take_while(|(r, _)| *r == first_rank).count();
    (ranked.into_iter().map(|(_, p)| p).collect(), first_group)
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_chinese_question_over_english_passages_is_declined_and_the_reverse_is_not() {
        let passage = |text: &str| Passage {
            chunk_id: 1,
            chunk_index: None,
            library: "l".into(),
            document_id: "d".into(),
            path: "/docs/d.pdf".into(),
            page_start: Some(1),
            page_end: Some(1),
            sheet: None,
            heading_path: vec![],
            text: text.into(),
            context: String::new(),
            score: 0.0,
            ocr: false,
        };
        let english = [passage("Revenue for the first quarter of fiscal year 2024 was $7.19 billion.")];
        let chinese = [passage("中国移动 2023 年第一季度营业收入为 2,640 亿元。")];
        let message = other_script("英伟达 2024 财年第一季度的收入是多少？", &english).unwrap();
        assert!(message.contains("ask in the language of your documents") && !message.contains('\n'), "{message}");
        assert_eq!(decline_without_model("英伟达 2024 财年第一季度的收入是多少？", &english), Some(message));
        assert_eq!(other_script("中国移动第一季度营业收入是多少？", &chinese), None);
        assert_eq!(other_script("What was China Mobile's revenue?", &chinese), None);
        assert_eq!(other_script("What was NVIDIA's revenue?", &english), None);
        assert_eq!(other_script("2024?", &english), None, "no letters: no script to compare");
    }
    use super::*;

    fn passage(id: u64, context: &str) -> Passage {
        Passage {
            chunk_id: id,
            chunk_index: None,
            library: "l".into(),
            document_id: format!("d{id}"),
            path: format!("/d{id}.pdf"),
            page_start: None,
            page_end: None,
            sheet: None,
            heading_path: vec![],
            text: String::new(),
            context: context.into(),
            score: 0.0,
            ocr: false,
        }
    }

    #[test]
    fn the_named_period_comes_first_and_a_question_naming_nothing_keeps_the_order() {
        let q1 = "NVIDIA CORPORATION · Form 10-Q · quarterly period ended April 30, 2023 · first quarter of fiscal 2024 · 2023 Q1 NVDA";
        let q2 = "NVIDIA CORPORATION · Form 10-Q · quarterly period ended July 30, 2023 · second quarter of fiscal 2024 · 2023 Q2 NVDA";
        let apple = "Apple Inc. · Form 10-Q · quarterly period ended July 1, 2023 · 2023 Q3 AAPL";
        let found = vec![passage(1, q2), passage(2, apple), passage(3, q1), passage(4, q2), passage(5, q1)];
        let ids = |ps: &[Passage]| ps.iter().map(|p| p.chunk_id).collect::<Vec<_>>();
        let ordered =
            prefer_matching_documents("What was NVIDIA's revenue in the first quarter of fiscal 2024?", found.clone());
        assert_eq!(ids(&ordered), [3, 5, 1, 2, 4]);
        let unchanged = prefer_matching_documents("Which risks were named?", found.clone());
        assert_eq!(ids(&unchanged), [1, 2, 3, 4, 5]);
        let apple_first = prefer_matching_documents("How have Apple's net sales changed?", found.clone());
        assert_eq!(ids(&apple_first), [2, 1, 3, 4, 5]);
        // "Latest": the best-matching documents' latest period first (July 30 after April 30).
        let latest = prefer_matching_documents("What did NVIDIA report in its latest 10-Q?", found);
        assert_eq!(ids(&latest), [1, 4, 3, 5, 2]);
    }

    #[test]
    fn documents_that_match_equally_share_the_places() {
        let q1 = "NVIDIA CORPORATION · Form 10-Q · quarterly period ended April 30, 2023 · 2023 Q1 NVDA";
        let q2 = "NVIDIA CORPORATION · Form 10-Q · quarterly period ended July 30, 2023 · 2023 Q2 NVDA";
        let apple = "Apple Inc. · Form 10-Q · quarterly period ended July 1, 2023 · 2023 Q3 AAPL";
        let mut found =
            vec![passage(1, q2), passage(2, q2), passage(3, q2), passage(4, apple), passage(5, q1), passage(6, q1)];
        for (p, doc) in found.iter_mut().zip(["b", "b", "b", "c", "a", "a"]) {
            p.document_id = doc.into();
        }
        let ids = |ps: &[Passage]| ps.iter().map(|p| p.chunk_id).collect::<Vec<_>>();
        // Both NVIDIA filings match "NVIDIA" alike: they take turns, in the order they first appear.
        assert_eq!(ids(&select("How has NVIDIA's revenue changed over time?", found.clone(), 4)), [1, 5, 2, 6]);
        // One best-matching document: search order.
        assert_eq!(
            ids(&select("What did NVIDIA report for the quarter ended April 30, 2023?", found.clone(), 3)),
            [5, 6, 1]
        );
        // "Latest" picks one period: no sharing.
        assert_eq!(ids(&select("What did NVIDIA report in its latest 10-Q?", found, 3)), [1, 2, 3]);
    }

    #[test]
    fn a_quarter_is_matched_as_one_term_with_its_year() {
        assert_eq!(quarter_terms("Did Microsoft buy back shares in Q3 2023?"), ["q3·2023"]);
        assert_eq!(quarter_terms("2022 Q3 MSFT"), ["q3·2022"]);
        assert_eq!(quarter_terms("Q1 FY2024 and FY 2023 Q4"), ["q1·2024", "q4·2023"]);
        assert_eq!(quarter_terms("the second quarter of fiscal year 2023"), ["q2·2023"]);
        assert!(quarter_terms("Q3 results; 2023 revenue; Q3-2023x").is_empty());
        // Microsoft's two filings: the one named for the quarter the question names comes first.
        let earlier = "MICROSOFT CORPORATION · Form 10-Q · quarterly period ended September 30, 2022 · first quarter of fiscal 2023 · 2022 Q3 MSFT";
        let later = "MICROSOFT CORPORATION · Form 10-Q · quarterly period ended September 30, 2023 · first quarter of fiscal 2024 · 2023 Q3 MSFT";
        let found = vec![passage(1, earlier), passage(2, later)];
        let ids = |ps: &[Passage]| ps.iter().map(|p| p.chunk_id).collect::<Vec<_>>();
        assert_eq!(ids(&select("Did Microsoft repurchase shares in Q3 2023?", found.clone(), 2)), [2, 1]);
        assert_eq!(ids(&select("What did Microsoft report for the first quarter of fiscal 2023?", found, 2)), [1, 2]);
    }

    /// A passage of a filing whose file is named as its context line's last part says.
    fn filing(id: u64, context: &str) -> Passage {
        let file_name = context.rsplit(" · ").next().unwrap_or_default();
        Passage { path: format!("/filings/{file_name}.pdf"), document_id: file_name.into(), ..passage(id, context) }
    }

    #[test]
    fn a_quarter_is_one_term_in_place_of_its_words_and_knows_whether_it_is_fiscal() {
        let terms = match_terms("Amazon's R&D in the first quarter of 2023");
        assert!(terms.contains("q1·2023") && !terms.contains("first") && !terms.contains("2023"), "{terms:?}");
        // A year alone stays a word.
        assert!(match_terms("Apple's net sales in 2023").contains("2023"));
    }

    #[test]
    fn a_quarter_asked_for_without_fiscal_is_the_file_names_and_with_fiscal_the_documents_own() {
        // Microsoft's fiscal year ends in June: its filing for the quarter ended December 31, 2022 is its
        // second quarter of fiscal 2023, filed here as "2023 Q1 MSFT".
        let september = "MICROSOFT CORPORATION · Form 10-Q · quarterly period ended September 30, 2022 · first quarter of fiscal 2023 · 2022 Q3 MSFT";
        let december = "MICROSOFT CORPORATION · Form 10-Q · quarterly period ended December 31, 2022 · second quarter of fiscal 2023 · 2023 Q1 MSFT";
        let march = "MICROSOFT CORPORATION · Form 10-Q · quarterly period ended March 31, 2023 · third quarter of fiscal 2023 · 2023 Q2 MSFT";
        let found = vec![filing(1, september), filing(2, december), filing(3, march), filing(4, september)];
        let first = |question: &str| select(question, found.clone(), 4)[0].chunk_id;
        assert_eq!(first("How much did Microsoft spend on research and development in the first quarter of 2023?"), 2);
        assert_eq!(first("How much did Microsoft spend on research and development in Q1 2023?"), 2);
        assert_eq!(
            first("How much did Microsoft spend on research and development in the first quarter of fiscal 2023?"),
            1
        );
        assert_eq!(first("What was Microsoft's operating income in Q2 FY2023?"), 2);
        assert_eq!(first("What was Microsoft's operating income in Q2 2023?"), 3);
        // One filing is read, not an answer per filing.
        let question = "How much did Microsoft spend on research and development in the first quarter of 2023?";
        assert_eq!(tied_documents(question, found.clone(), 4, 8, 2), None);
        // Another company's filing of that quarter shares only the quarter.
        let amazon = "AMAZON.COM, INC. · Form 10-Q · quarterly period ended March 31, 2023 · 2023 Q1 AMZN";
        let intel = "INTEL CORPORATION · Form 10-Q · quarterly period ended April 1, 2023 · first quarter of 2023 · 2023 Q1 INTC";
        let found = vec![filing(1, intel), filing(2, amazon), filing(3, intel)];
        let question = "In the first quarter of 2023, what was Amazon's R&D expenditure?";
        assert_eq!(select(question, found.clone(), 3).iter().map(|p| p.chunk_id).collect::<Vec<_>>(), [2, 1, 3]);
        assert_eq!(tied_documents(question, found, 4, 8, 2), None);
    }

    #[test]
    fn a_sub_query_reads_the_documents_it_names_first_then_those_the_question_names() {
        let q1 = "NVIDIA CORPORATION · Form 10-Q · quarterly period ended April 30, 2023 · 2023 Q1 NVDA";
        let q2 = "NVIDIA CORPORATION · Form 10-Q · quarterly period ended July 30, 2023 · 2023 Q2 NVDA";
        let apple = "Apple Inc. · Form 10-Q · quarterly period ended July 1, 2023 · 2023 Q3 AAPL";
        let found = vec![passage(1, q2), passage(2, apple), passage(3, q1), passage(4, q2), passage(5, q1)];
        let ids = |ps: &[Passage]| ps.iter().map(|p| p.chunk_id).collect::<Vec<_>>();
        let question = "How did NVIDIA's operating expenses in Q1 2023 compare to its revenue?";
        // The sub-query names no document: the question's filing first.
        assert_eq!(
            ids(&select_for_query("operating expenses for the three months", question, found.clone(), 3)),
            [3, 5, 1]
        );
        // It names one: that one first, whatever the question names.
        assert_eq!(ids(&select_for_query("Apple net sales", question, found.clone(), 3)), [2, 1, 3]);
        // Of the documents it names alike (both NVIDIA filings), the question's first.
        assert_eq!(ids(&select_for_query("NVIDIA revenue", question, found.clone(), 3)), [3, 5, 1]);
        // The question as its own query is NaiveRAG's reading.
        assert_eq!(select_for_query(question, question, found.clone(), 4), select(question, found, 4));
    }

    #[test]
    fn a_subject_is_uncovered_when_no_document_is_about_it_and_at_most_one_passage_mentions_it() {
        let nvidia = "NVIDIA CORPORATION · Form 10-Q · quarterly period ended April 30, 2023";
        let mut found = vec![passage(1, nvidia), passage(2, nvidia)];
        found[1].text = "Our partners include Microsoft Azure; research and development rose.".into();
        let subject = |q: &str, found: &[Passage]| uncovered_subject(q, found).map(|s| s.name);
        assert_eq!(subject("What was Apple's gross margin in Q2 2023?", &found).as_deref(), Some("apple"));
        assert_eq!(subject("Did APPLE report it?", &found).as_deref(), Some("apple"), "all capitals");
        assert_eq!(subject("What was NVIDIA's revenue in the first quarter?", &found), None);
        assert_eq!(subject("How did Microsoft's cloud grow?", &found), None, "one mention of two passages");
        assert_eq!(subject("What did the Form 10-Q say in April?", &found), None, "no names");
        // Only the first name counts; a sentence's first word, "R&D" and short acronyms are no names.
        assert_eq!(subject("How did NVIDIA's Omniverse sales grow?", &found), None);
        assert_eq!(subject("What was the R&D spend? Please list ESG costs.", &found), None);
        // Whole words only: "intellectual" does not mention Intel.
        found[0].text = "We rely on intellectual property and internal controls.".into();
        assert_eq!(subject("What was Intel's gross margin?", &found).as_deref(), Some("intel"));
        // One passing mention among many passages found is no coverage; two are.
        let mut many: Vec<Passage> = (1..=PASSING_MENTION_DEPTH as u64).map(|i| passage(i, nvidia)).collect();
        many[3].text = "Our partners include Microsoft Azure.".into();
        let uncovered = uncovered_subject("How did Microsoft's cloud grow?", &many).unwrap();
        assert_eq!((uncovered.mentions, uncovered.of), (1, PASSING_MENTION_DEPTH));
        assert!(uncovered.message().contains("Only one of the 16 passages found mentions \"microsoft\""));
        assert!(crate::text::is_decline(&uncovered.message()), "scored and shown as a decline");
        many[7].text = "Microsoft and NVIDIA announced a collaboration.".into();
        assert_eq!(subject("How did Microsoft's cloud grow?", &many), None, "two passages mention it");
        found[1].context.clear();
        assert_eq!(subject("What was Apple's gross margin?", &found), None, "a passage without context");
    }

    #[test]
    fn a_quarter_no_document_found_is_for_is_missing() {
        let q1 = "NVIDIA CORPORATION · Form 10-Q · quarterly period ended April 30, 2023 · first quarter of fiscal 2024 · 2023 Q1 NVDA";
        let q2 = "NVIDIA CORPORATION · Form 10-Q · quarterly period ended July 30, 2023 · second quarter of fiscal 2024 · 2023 Q2 NVDA";
        let mut found = vec![passage(1, q1), passage(2, q2)];
        found[0].text = "Compared with the third quarter of fiscal 2022, revenue rose.".into();
        found[0].path = "/f/2023 Q1 NVDA.pdf".into();
        found[1].path = "/f/2023 Q2 NVDA.pdf".into();
        assert_eq!(
            missing_quarter("How did NVIDIA's inventory change in Q3 2022?", &found),
            Some((3, 2022)),
            "texts do not count"
        );
        assert_eq!(missing_quarter("What did NVIDIA's Q3 2023 10-Q report?", &found), Some((3, 2023)));
        // Named by fiscal quarter or by the file's label: covered.
        assert_eq!(missing_quarter("Revenue in the first quarter of fiscal 2024?", &found), None);
        assert_eq!(missing_quarter("What does NVIDIA's 2023 Q2 filing say?", &found), None);
        assert_eq!(missing_quarter("Compare Q3 2022 with Q1 2023", &found), None, "one of them is covered");
        assert_eq!(missing_quarter("How did revenue change over time?", &found), None, "no quarter named");
        let message = decline_without_model("What did NVIDIA's Q3 2023 10-Q report?", &found).unwrap();
        assert_eq!(
            message,
            "None of the documents found is for Q3 2023 (they are 2023 Q1 NVDA.pdf, 2023 Q2 NVDA.pdf), so this question cannot be answered from your documents."
        );
        assert!(crate::text::is_decline(&message));
        found[1].context.clear();
        assert_eq!(
            missing_quarter("What did NVIDIA's Q3 2023 10-Q report?", &found),
            None,
            "a passage without context"
        );
    }

    #[test]
    fn documents_that_tie_are_listed_by_period_with_their_first_passages() {
        let q1 = "NVIDIA CORPORATION · Form 10-Q · quarterly period ended April 30, 2023 · 2023 Q1 NVDA";
        let q2 = "NVIDIA CORPORATION · Form 10-Q · quarterly period ended July 30, 2023 · 2023 Q2 NVDA";
        let q3 = "NVIDIA CORPORATION · Form 10-Q · quarterly period ended October 29, 2023 · 2023 Q3 NVDA";
        let apple = "Apple Inc. · Form 10-Q · quarterly period ended July 1, 2023 · 2023 Q3 AAPL";
        let mut found = vec![
            passage(1, q2),
            passage(2, apple),
            passage(3, q2),
            passage(4, q1),
            passage(5, q2),
            passage(6, q3),
            passage(7, q1),
        ];
        for (p, doc) in found.iter_mut().zip(["b", "x", "b", "a", "b", "c", "a"]) {
            p.document_id = doc.into();
        }
        let ids = |ps: &[Passage]| ps.iter().map(|p| p.chunk_id).collect::<Vec<_>>();
        let tied = tied_documents("How has NVIDIA's revenue changed over time?", found.clone(), 4, 6, 0).unwrap();
        let by_document: Vec<Vec<u64>> = tied.documents.iter().map(|d| ids(d)).collect();
        assert_eq!(by_document, [vec![4, 7], vec![1, 3], vec![6]], "April, July, October; two passages each at most");
        assert_eq!(tied.left_out, 0);
        // At least three passages each: the share of 6 among three documents is two.
        let tied = tied_documents("How has NVIDIA's revenue changed over time?", found.clone(), 4, 6, 3).unwrap();
        let by_document: Vec<Vec<u64>> = tied.documents.iter().map(|d| ids(d)).collect();
        assert_eq!(by_document, [vec![4, 7], vec![1, 3, 5], vec![6]], "July's third passage is read too");
        // Two places: the two documents search ranks first (July, April), in period order.
        let tied = tied_documents("How has NVIDIA's revenue changed over time?", found.clone(), 2, 1, 0).unwrap();
        assert_eq!(tied.documents.iter().map(|d| ids(d)).collect::<Vec<_>>(), [vec![4], vec![1]]);
        assert_eq!(tied.left_out, 1);
        assert_eq!(tied_documents("How has NVIDIA's revenue changed over time?", found.clone(), 1, 6, 0), None, "off");
        // A question naming its period, its latest document or another company has one best document.
        assert_eq!(
            tied_documents("What was NVIDIA's revenue for the quarter ended July 30, 2023?", found.clone(), 4, 2, 0),
            None
        );
        assert_eq!(tied_documents("What did NVIDIA report in its latest 10-Q?", found.clone(), 4, 2, 0), None);
        assert_eq!(tied_documents("How have Apple's net sales changed?", found.clone(), 4, 2, 0), None);
        // Only the kind of document and a year in common: no document is named.
        assert_eq!(tied_documents("Did Apple buy back shares in 2023?", found.clone(), 4, 2, 0), None);
        // Only the kind of document in common ("10-Q", "quarters"): no document is named.
        assert_eq!(
            tied_documents("What legal proceedings do these 10-Qs disclose over the quarters?", found, 4, 2, 0),
            None
        );
    }
}
