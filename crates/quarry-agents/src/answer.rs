//! The result of a research run: Markdown with numbered citations that resolve to passages.

use crate::events::PassageRef;
use crate::genre::Genre;
use crate::text::{sentence_pieces, stems, wrapped_line_goes_on};
use quarry_core::{Passage, TokenUsage};
use serde::{Deserialize, Serialize};

/// One citation: the number used in the answer text (`[n]`) and the passage it points to.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Citation {
    /// Its number in the answer's `[n]` markers (1-based, as the prompt numbered the passages).
    pub number: usize,
    /// The passage.
    pub passage: Passage,
}

/// A finished answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Answer {
    /// The question as asked.
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
    /// See `retrieved`.
    pub kept: usize,
    /// Model calls the run made.
    pub llm_calls: usize,
    /// Tokens they consumed.
    pub usage: TokenUsage,
    /// Wall-clock seconds of the run.
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
    pub claims: Vec<crate::answer::ClaimCheck>,
    /// Every query meant for the web during the run, sent or withheld by the web query policy
    /// ([`crate::web_gate`]); empty when the web was not searched.
    #[serde(default)]
    pub web_queries: Vec<crate::web_gate::WebQuery>,
    /// Citations the claim check corrected by figures before checking ([`crate::claims::repair_citations`]);
    /// `markdown` holds the corrected markers (the streamed text had the model's).
    #[serde(default)]
    pub citation_repairs: Vec<crate::answer::CitationRepair>,
    /// The citation markers of `markdown` that cite its passages, as written there
    /// ([`citation_markers`]): the app turns exactly these strings into links, so the front end parses
    /// no markers itself. Answers stored before the field get it when their conversation is read
    /// ([`Answer::with_markers`]).
    #[serde(default)]
    pub markers: Vec<CitationMarker>,
    /// The genre layer the answer was written with (`general`, `financial`: [`crate::Run::genre_kind`]);
    /// empty in answers stored before the field.
    #[serde(default)]
    pub genre: String,
}

/// A citation marker as it stands in an answer's Markdown — `[2]`, `[1, 3]`, the form
/// [`canonical_markers`] writes — with the passage numbers it cites.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CitationMarker {
    /// The marker as written, brackets included.
    pub text: String,
    /// The passage numbers it names, as written.
    pub numbers: Vec<usize>,
}

/// The distinct citation markers of `markdown` (as [`pieces`] reads them) whose numbers all name one of
/// `numbers` — an answer's cited and source passages — in order of first appearance. A bracket of other
/// numbers ("in `[2023]`") is not one.
pub fn citation_markers(markdown: &str, numbers: &[usize]) -> Vec<CitationMarker> {
    let mut out: Vec<CitationMarker> = Vec::new();
    for piece in pieces(markdown) {
        if let Piece::Marker { raw, numbers: named } = piece {
            if named.iter().all(|n| numbers.contains(n)) && !out.iter().any(|m| m.text == raw) {
                out.push(CitationMarker { text: raw.to_string(), numbers: named });
            }
        }
    }
    out
}

impl Answer {
    /// The answer with [`Answer::markers`] filled from its Markdown, citations and sources when empty
    /// (an answer stored before the field existed).
    pub fn with_markers(mut self) -> Self {
        if self.markers.is_empty() {
            let numbers: Vec<usize> = self.citations.iter().chain(&self.sources).map(|c| c.number).collect();
            self.markers = citation_markers(&self.markdown, &numbers);
        }
        self
    }

    /// The claims the check found unsupported.
    pub fn unsupported_claims(&self) -> impl Iterator<Item = &crate::answer::ClaimCheck> {
        self.claims.iter().filter(|c| !c.supported)
    }
}

/// The text given to the model for numbered passages: `[n] citation (document context)\nexcerpt`, the
/// excerpt of each passage chosen by [`passage_excerpts`] (its table rows kept to the periods `focus` asks
/// about, its sentences and rows that share most words with `focus`, at most `max_chars_each` characters a
/// passage and `budget_chars` characters of excerpts in all). The context line names the document's
/// issuer, type and period, so the model can tell the first quarter's filing from the second's; it is
/// written once per document, and a later passage of the same document says `(same document as [n])`
/// instead (≈ 30 prompt tokens saved a passage, ≈ 1 s each on 2 cores). Returns the text and how many
/// passages it holds (the first ones of `passages`).
pub fn number_passages(
    genre: &dyn Genre,
    passages: &[Passage],
    focus: &str,
    max_chars_each: usize,
    budget_chars: usize,
) -> (String, usize) {
    number_passages_from(genre, 1, passages, focus, max_chars_each, budget_chars)
}

/// [`number_passages`] with the first passage numbered `first` instead of 1 (the next ones `first + 1`,
/// …), for a prompt that shows one part of a longer numbered list: the per-document answers of
/// [`crate::per_document`] cite the answer's numbers directly.
pub fn number_passages_from(
    genre: &dyn Genre,
    first: usize,
    passages: &[Passage],
    focus: &str,
    max_chars_each: usize,
    budget_chars: usize,
) -> (String, usize) {
    let excerpts = passage_excerpts(genre, passages, focus, max_chars_each, budget_chars);
    (number_excerpts_from(first, passages, &excerpts), excerpts.len())
}

/// The numbered text of [`number_passages_from`] from excerpts already chosen: the first
/// `excerpts.len()` of `passages`, numbered from `first`, each shown as its excerpt under its source line,
/// for a caller that also needs the excerpts themselves (the quote under an answer, [`crate::genre::financial::key_quote`]).
pub fn number_excerpts_from(first: usize, passages: &[Passage], excerpts: &[String]) -> String {
    let mut out = String::new();
    let mut first_of_document: std::collections::HashMap<(&str, &str), usize> = std::collections::HashMap::new();
    for (i, (p, text)) in passages.iter().zip(excerpts).enumerate() {
        let number = first + i;
        let source = if p.context.is_empty() {
            p.citation()
        } else {
            match first_of_document.get(&(p.library.as_str(), p.document_id.as_str())) {
                Some(earlier) => format!("{} (same document as [{earlier}])", p.citation()),
                None => format!("{} ({})", p.citation(), p.context),
            }
        };
        out.push_str(&format!("[{number}] {source}\n{}\n\n", text.trim()));
        first_of_document.entry((p.library.as_str(), p.document_id.as_str())).or_insert(number);
    }
    out.trim_end().to_string()
}

/// What an answer prompt shows of each passage, for the first passages of `passages` that fit: a PDF
/// passage's table rows name the section they sit under where a label repeats under two sections or the
/// passage starts below a later one ([`crate::genre::financial::table_section`]); each passage's table rows are kept to
/// the periods `focus` asks about ([`crate::genre::financial::period_focus`]: the spans it names, and the document's own
/// period when it asks for that period), then its
/// pieces (sentences, split after ". " and at line breaks, and table lines) compete for one shared budget
/// of `budget_chars` characters: every passage shown gets its piece sharing most words with `focus`
/// (its first piece when none shares any), then the remaining pieces are added best first — most words
/// shared with `focus`, then the better-ranked passage, then the earlier piece — while their passage
/// stays within `max_chars_each` and the excerpts within `budget_chars` (each gap costs 3 characters).
/// A passage keeps its pieces in their original order with ` … ` where text was left out; a passage
/// that fits whole within both limits is shown whole. Passages are shown while their first piece fits
/// (always the first one), so the result is a prefix of `passages`: `result.len()` passages, the
/// excerpts in the same order.
///
/// With a budget larger than the passages, each passage is cut on its own: a passage that fits is shown
/// whole, a longer one keeps its sentences sharing most words with `focus` (so a fact near a long chunk's
/// end is not cut off the way a plain prefix cuts it); a smaller budget moves characters from the weaker sentences of every passage to the stronger ones (issue 36: fewer
/// prompt tokens, the figure-bearing rows kept — docs/evaluation/decisions.md, 2026-11-26 (e)).
pub fn passage_excerpts(
    genre: &dyn Genre,
    passages: &[Passage],
    focus: &str,
    max_chars_each: usize,
    budget_chars: usize,
) -> Vec<String> {
    let texts: Vec<String> = passages.iter().map(|p| genre.shown_text(p, focus)).collect();
    excerpts(texts, focus, max_chars_each, budget_chars)
}

/// [`passage_excerpts`] of plain texts (no period focus): the selection itself.
fn excerpts(texts: Vec<String>, focus: &str, max_chars_each: usize, budget_chars: usize) -> Vec<String> {
    let wanted = stems(focus);
    if wanted.is_empty() {
        // Nothing to choose by: the start of each passage, while the budget lasts.
        let mut out = Vec::new();
        let mut used = 0;
        for text in &texts {
            let excerpt: String = text.chars().take(max_chars_each).collect();
            let n = excerpt.chars().count();
            if !out.is_empty() && used + n > budget_chars {
                break;
            }
            used += n;
            out.push(excerpt);
        }
        return out;
    }
    let pieces: Vec<Vec<&str>> = texts.iter().map(|t| sentence_pieces(t)).collect();
    let mut scores: Vec<Vec<usize>> =
        pieces.iter().map(|ps| ps.iter().map(|p| stems(p).intersection(&wanted).count()).collect()).collect();
    // A wrapped line that goes on with the amounts its sentence leads to ("… shares of our common stock
    // for" / "$3.72 billion and $7.01 billion, respectively.") ranks with the line it continues: shown
    // without it, the sentence names what was bought and stops before what it cost.
    for (ps, scores) in pieces.iter().zip(scores.iter_mut()) {
        for j in 1..ps.len() {
            if wrapped_line_goes_on(ps[j - 1], ps[j]) && crate::text::states_amount(ps[j]) {
                scores[j] = scores[j].max(scores[j - 1]);
            }
        }
    }
    let cost = |piece: &str| piece.chars().count() + 3;
    let mut keep: Vec<Vec<bool>> = pieces.iter().map(|ps| vec![false; ps.len()]).collect();
    let mut length = vec![0usize; pieces.len()];
    let mut total = 0;
    let mut shown = 0;
    // Each passage's best piece (cut to the passage's limit when it alone is longer), in rank order.
    for (i, ps) in pieces.iter().enumerate() {
        let best = (0..ps.len())
            .filter(|&j| !ps[j].trim().is_empty())
            .max_by(|&a, &b| scores[i][a].cmp(&scores[i][b]).then(b.cmp(&a)));
        let n = best.map(|j| cost(ps[j]).min(max_chars_each)).unwrap_or(0);
        if shown > 0 && total + n > budget_chars {
            break;
        }
        if let Some(j) = best {
            keep[i][j] = true;
        }
        length[i] = n;
        total += n;
        shown += 1;
    }
    // Then the other pieces of the shown passages, best first.
    let mut order: Vec<(usize, usize)> = (0..shown)
        .flat_map(|i| (0..pieces[i].len()).map(move |j| (i, j)))
        .filter(|&(i, j)| !keep[i][j] && !pieces[i][j].trim().is_empty())
        .collect();
    order.sort_by(|&(ia, ja), &(ib, jb)| scores[ib][jb].cmp(&scores[ia][ja]).then(ia.cmp(&ib)).then(ja.cmp(&jb)));
    for (i, j) in order {
        let n = cost(pieces[i][j]);
        if length[i] + n > max_chars_each || total + n > budget_chars {
            continue;
        }
        keep[i][j] = true;
        length[i] += n;
        total += n;
    }
    (0..shown)
        .map(|i| {
            if keep[i].iter().zip(&pieces[i]).all(|(k, p)| *k || p.trim().is_empty()) {
                return texts[i].clone();
            }
            let joined = join_kept(&pieces[i], &keep[i]);
            if joined.chars().count() > max_chars_each {
                // A single piece longer than the passage's limit.
                joined.chars().take(max_chars_each).collect()
            } else {
                joined
            }
        })
        .collect()
}

/// `markdown` with the passage headers the model copied into it — `2023 Q1 NVDA.pdf, p. 22 (NVIDIA
/// CORPORATION · Form 10-Q · …)` or `2023 Q1 NVDA.pdf, p. 28 (same document as [1])`, as
/// [`number_passages`] writes them above each passage — replaced by that passage's marker `[n]` (its
/// 1-based place in `passages`), or dropped where the marker already stands right before it.
/// Qwen2.5-Coder-1.5B copies such a header into many per-document answers (docs/evaluation/decisions.md, 2026-11-28 (a)):
/// the person should read the figure and its citation, not the prompt's scaffolding. A header is a
/// passage's citation followed by a parenthesis holding a context line (with ` · `) or "same document
/// as"; a citation written alone is left as it is, and a copy whose file name or page the model changed
/// is dropped ([`drop_changed_headers`]: it names no passage to mark).
pub fn replace_copied_headers(markdown: &str, passages: &[Passage]) -> String {
    let mut out = markdown.to_string();
    for (i, passage) in passages.iter().enumerate() {
        let citation = passage.citation();
        if citation.is_empty() {
            continue;
        }
        let marker = format!("[{}]", i + 1);
        let mut from = 0;
        while let Some(found) = out[from..].find(&citation) {
            let start = from + found;
            let after = start + citation.len();
            let Some(mut end) = header_parenthesis_end(&out[after..]).map(|len| after + len) else {
                from = after;
                continue;
            };
            let marked_already = out[..start].trim_end_matches(' ').ends_with(&marker);
            let replacement = if marked_already {
                // "[1] <header> Between" → "[1] Between": one space between, not two.
                if out[..start].ends_with(' ') && out[end..].starts_with(' ') {
                    end += 1;
                }
                String::new()
            } else {
                marker.clone()
            };
            out.replace_range(start..end, &replacement);
            from = start + replacement.len();
        }
    }
    drop_changed_headers(&out, passages)
}

/// `markdown` without the passage headers the model copied with their file name changed — `2023 Q9
/// AAPL.pdf, p. 15 (same document as [7])`, `2023 Q3 AMazon.pdf, p. 33 (same document as [7])`:
/// Qwen2.5-Coder-1.5B wrote 17 of them into the per-document answers of 98 sec-10-q questions
/// (docs/evaluation/decisions.md, 2026-12-03 (c)), which [`replace_copied_headers`] cannot turn into a marker (the page
/// or file no longer names a passage). A header is recognised by its parenthesis (a context line with
/// ` · `, or `same document as [n]`), the place before it (`, p. 15`, `, pp. 3–4`) and a file name
/// before that within [`CHANGED_NAME_EDITS`] of one of `passages`' (Levenshtein distance, case
/// ignored; `strsim`); the whole header is dropped. Text in parentheses after a citation that is no
/// header, and a file name too far from any passage's, stay.
fn drop_changed_headers(markdown: &str, passages: &[Passage]) -> String {
    static PLACE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let place = PLACE.get_or_init(|| regex::Regex::new(r",\s*pp?\.\s*[^\s,()]{1,12}\s*$").expect("valid pattern"));
    let mut names: Vec<String> =
        passages.iter().map(|p| p.file_name().to_lowercase()).filter(|n| !n.is_empty()).collect();
    names.sort();
    names.dedup();
    let longest = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    let mut out = markdown.to_string();
    let mut from = 0;
    while let Some(found) = out[from..].find('(') {
        let open = from + found;
        let Some(len) = header_parenthesis_end(&out[open..]) else {
            from = open + 1;
            continue;
        };
        let end = open + len;
        let Some(at) = place.find(&out[..open]).map(|m| m.start()) else {
            from = end;
            continue;
        };
        let head = &out[..at];
        // The file name ends at the place's comma and starts at a word: the closest of the passages'.
        // Its start lies within the longest name's length and 4 characters of the comma, each start
        // given with the characters from it to the comma.
        let starts: Vec<(usize, usize)> = head
            .char_indices()
            .rev()
            .take(longest + 4)
            .enumerate()
            .map(|(k, (i, _))| (i, k + 1))
            .filter(|&(i, _)| i == 0 || head[..i].ends_with([' ', ']', '(', '\n']))
            .collect();
        let best = names
            .iter()
            .flat_map(|name| {
                let n = name.chars().count();
                starts
                    .iter()
                    .filter(move |&&(_, len)| len + 4 >= n && len <= n + 4)
                    .map(move |&(i, _)| (strsim::levenshtein(&head[i..].to_lowercase(), name), i, n))
            })
            .min();
        match best {
            Some((edits, start, n)) if edits <= CHANGED_NAME_EDITS.max(n / 4) => {
                let end = if head[..start].ends_with(' ') && out[end..].starts_with(' ') { end + 1 } else { end };
                out.replace_range(start..end, "");
                from = start;
            }
            _ => from = end,
        }
    }
    out
}

/// Fewest letter edits a copied header's file name may be from a passage's to be dropped as one
/// ([`drop_changed_headers`]); a long name may be a quarter of its letters off ("AMazon" for "AMZN").
pub const CHANGED_NAME_EDITS: usize = 2;

/// Length of `rest`'s leading ` (…)` when it is the parenthesis of a passage header (a context line with
/// ` · `, or "`same document as [n]`") on one line; `None` otherwise.
fn header_parenthesis_end(rest: &str) -> Option<usize> {
    let open = rest.len() - rest.trim_start_matches(' ').len();
    let inner = rest[open..].strip_prefix('(')?;
    let close = inner.find(['(', ')', '\n'])?;
    if !inner[close..].starts_with(')') {
        return None;
    }
    let content = &inner[..close];
    (content.contains(" · ") || content.starts_with("same document as")).then_some(open + 1 + close + 1)
}

/// Whether a model's answer says nothing: once its citation markers are removed, no word of two letters
/// or more is left (Qwen2.5-Coder-1.5B sometimes answers `[1] [2] [3] [4] [5] [6] [7] [8]`).
pub fn says_nothing(markdown: &str) -> bool {
    !strip_citations(markdown)
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| w.chars().filter(|c| c.is_alphabetic()).count() >= 2)
}

/// Whether the final answer `checked` says something else than the text `streamed` while the model wrote
/// it, citation markers aside: the final answer drops passage headers the model copied with a changed
/// file name ([`replace_copied_headers`]) and loops ([`cut_repeated_lines`]), and adds Quarry's own lines
/// (the quote, the periods note), which are streamed too. A front end that printed the streamed text
/// shows the checked one again when this is true (`quarry ask`), so what the person reads last is what
/// the claim check, the report and `--json` hold.
pub fn checked_text_differs(streamed: &str, checked: &str) -> bool {
    let words = |text: &str| strip_citations(text).split_whitespace().collect::<Vec<_>>().join(" ");
    words(streamed) != words(checked)
}

/// Lines of an answer that open with the same first [`LOOP_KEY_WORDS`] words are alike; this many alike
/// make a loop ([`cut_repeated_lines`]).
pub const LOOP_LINES: usize = 6;
/// How many words open a line's key for [`cut_repeated_lines`].
pub const LOOP_KEY_WORDS: usize = 5;
/// Lines of a loop kept: the first ones, as the model wrote them.
pub const LOOP_LINES_KEPT: usize = 3;

/// `markdown` with the lines of a loop left out, and how many were: a small model sometimes writes one
/// line again and again with a word changed until its token limit ("- Inventory levels were higher
/// compared to the previous quarter." / "… to previous years." / "… to industry standards." — 30 lines
/// in one sec-10-q answer, docs/evaluation/decisions.md, 2026-12-03 (d)), which llama.cpp's DRY sampler does not stop
/// when the changed word comes last. Lines are alike when their first [`LOOP_KEY_WORDS`] words
/// (lower case, list marks, emphasis and citation markers aside) are the same; when [`LOOP_LINES`] or
/// more are, the first [`LOOP_LINES_KEPT`] stay and the rest go, except a line that states an amount,
/// percentage or number ([`crate::figures`]; not a date) — a list of quarters' figures is no loop. A
/// line of fewer words is never cut. The text is otherwise unchanged.
pub fn cut_repeated_lines(markdown: &str) -> (String, usize) {
    let keyed: Vec<(&str, Option<String>)> = markdown.lines().map(|line| (line, loop_key(line))).collect();
    let mut count: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for k in keyed.iter().filter_map(|(_, k)| k.as_deref()) {
        *count.entry(k).or_default() += 1;
    }
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut cut = 0;
    let mut kept: Vec<&str> = Vec::new();
    for (line, k) in &keyed {
        let line = *line;
        if let Some(k) = k.as_deref().filter(|k| count[k] >= LOOP_LINES) {
            let n = seen.entry(k).or_default();
            *n += 1;
            if *n > LOOP_LINES_KEPT && !states_figure(line) {
                cut += 1;
                continue;
            }
        }
        kept.push(line);
    }
    if cut == 0 {
        return (markdown.to_string(), 0);
    }
    let mut out = kept.join("\n");
    if markdown.ends_with('\n') {
        out.push('\n');
    }
    (out, cut)
}

/// `markdown` without the sentences that say again what an earlier sentence said — one of `said` (the
/// words of sentences written before it, [`crate::text::sentence_words`]) or one before it in
/// `markdown` ([`crate::text::says_again`], citation markers aside) — and without a heading left with
/// nothing under it; `said` gains the words of each sentence kept. Sentences are
/// [`crate::text::sentence_pieces`] of each line; a line whose every sentence goes is dropped whole (list
/// mark and markers too), and headings are never compared. Returns the text and how many sentences were
/// dropped. For a report whose sections, each written from its own
/// search, restate each other (a 1.5B model restates a figure in every section that finds it).
pub fn drop_repeated_sentences(markdown: &str, said: &mut Vec<std::collections::HashSet<String>>) -> (String, usize) {
    let mut dropped = 0;
    let mut kept: Vec<String> = Vec::new();
    for line in markdown.lines() {
        // Headings are kept as they are (one left heading nothing goes below).
        if crate::text::heading_level(line).is_some() {
            kept.push(line.to_string());
            continue;
        }
        let mut text = String::with_capacity(line.len());
        let mut cut = false;
        for piece in crate::text::sentence_pieces(line) {
            let words = crate::text::sentence_words(&strip_citations(piece));
            if said.iter().any(|earlier| crate::text::says_again(&words, earlier)) {
                dropped += 1;
                cut = true;
                continue;
            }
            if words.len() >= crate::text::REPEAT_MIN_WORDS {
                said.push(words);
            }
            text.push_str(piece);
        }
        // A line whose every sentence was said before goes, list mark and all.
        let rest = strip_citations(&text);
        if cut && rest.trim().trim_start_matches(['-', '*', '+']).trim().is_empty() {
            continue;
        }
        kept.push(if cut && !line.starts_with(char::is_whitespace) { text.trim_start().to_string() } else { text });
    }
    if dropped == 0 {
        return (markdown.to_string(), 0);
    }
    let lines: Vec<&str> = kept.iter().map(String::as_str).collect();
    // A heading whose next line with text is a heading of its level or above, or the end, heads nothing.
    let level = crate::text::heading_level;
    let mut out: Vec<&str> = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        if let Some(own) = level(line) {
            let next = lines[i + 1..].iter().find(|l| !l.trim().is_empty());
            if next.is_none_or(|n| level(n).is_some_and(|l| l <= own)) {
                continue;
            }
        }
        out.push(line);
    }
    // Blank lines where a dropped paragraph was: at most one in a row.
    let mut text = String::with_capacity(markdown.len());
    for line in out {
        if line.trim().is_empty() && (text.is_empty() || text.ends_with("\n\n")) {
            continue;
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    (text.trim_end().to_string(), dropped)
}

/// Complete lines alike (as [`cut_repeated_lines`] keys them) after which a streamed answer is stopped:
/// twice [`LOOP_LINES`], so a list that merely looks like a loop is cut by [`cut_repeated_lines`], not
/// stopped, and a model that is caught in one spends no more time on it.
pub const LOOP_STOP_LINES: usize = 2 * LOOP_LINES;

/// Whether the model writing `streamed` is caught in a loop and should be stopped: its complete lines
/// (the text up to its last line break) hold [`LOOP_STOP_LINES`] lines alike that state no figure — the
/// lines [`cut_repeated_lines`] would cut, and more. In 2026-12-03 (d)'s looping answer, Qwen2.5-Coder-1.5B
/// wrote 58 such lines, about a minute of generation on 2 cores, before its token limit stopped it
/// (docs/evaluation/decisions.md). [`crate::run::Run::call`] asks this after each streamed piece that ends a line.
pub fn loop_runs_on(streamed: &str) -> bool {
    let Some(end) = streamed.rfind('\n') else { return false };
    let mut count: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for line in streamed[..end].lines() {
        if let Some(key) = loop_key(line).filter(|_| !states_figure(line)) {
            let n = count.entry(key).or_default();
            *n += 1;
            if *n >= LOOP_STOP_LINES {
                return true;
            }
        }
    }
    false
}

/// A line's first [`LOOP_KEY_WORDS`] words, lower case, citation markers, list marks and emphasis
/// aside; `None` for a line of fewer words.
fn loop_key(line: &str) -> Option<String> {
    let words: Vec<String> = strip_citations(line)
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(LOOP_KEY_WORDS)
        .map(str::to_lowercase)
        .collect();
    (words.len() == LOOP_KEY_WORDS).then(|| words.join(" "))
}

/// Whether `line` states an amount, percentage or number ([`crate::figures`]; a date does not count).
fn states_figure(line: &str) -> bool {
    crate::figures::figures(line).iter().any(|f| !matches!(f.kind, crate::figures::FigureKind::Date { .. }))
}

/// Whether a model's answer only repeats the question: without its citation markers it is a question
/// (ends with `?` or `？`) with no word or CJK character pair ([`stems`]) that `question` lacks.
/// Qwen2.5-Coder-1.5B sometimes answers with the question itself and a row of markers
/// (NetOperatorQA, docs/evaluation/decisions.md, 2026-11-27 (d)).
pub fn repeats_question(markdown: &str, question: &str) -> bool {
    let text = strip_citations(markdown);
    let text = text.trim();
    if !text.ends_with(['?', '？']) {
        return false;
    }
    let said = stems(text);
    !said.is_empty() && said.is_subset(&stems(question))
}

/// The sentence or table row of `passages` that shares the most words with `question` (the better-ranked
/// passage, then the earlier piece, on ties; none when no piece shares a word), cut to `max_chars`
/// characters, with its passage's number (1-based, as [`number_passages`] numbers them).
pub fn closest_piece(passages: &[Passage], question: &str, max_chars: usize) -> Option<(usize, String)> {
    let wanted = stems(question);
    let mut best: Option<(usize, usize, String)> = None;
    for (i, p) in passages.iter().enumerate() {
        for piece in sentence_pieces(&p.text) {
            let score = stems(piece).intersection(&wanted).count();
            if score > 0 && best.as_ref().is_none_or(|(s, _, _)| score > *s) {
                best = Some((score, i + 1, piece.trim().chars().take(max_chars).collect()));
            }
        }
    }
    best.map(|(_, number, piece)| (number, piece))
}

/// The kept pieces in their order, ` … ` where non-blank pieces were left out between them.
fn join_kept(pieces: &[&str], keep: &[bool]) -> String {
    let mut out = String::new();
    let mut gap = false;
    for (piece, kept) in pieces.iter().zip(keep) {
        if *kept {
            if gap && !out.is_empty() {
                out.push_str(" … ");
            }
            out.push_str(piece);
            gap = false;
        } else if !piece.trim().is_empty() {
            gap = true;
        }
    }
    out
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
    /// Text between markers.
    Text(&'a str),
    /// A citation marker.
    Marker {
        /// The marker as written, brackets included.
        raw: &'a str,
        /// The passage numbers it names.
        numbers: Vec<usize>,
    },
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

/// `markdown` with every citation marker whose numbers are all passages (1..=`count`) written in one
/// form, `[1, 2, 3]` — `[1-3]`, `[1 3]`, `[1,3]` and `[1–3]` included — and every other bracket left as
/// it was. Markers next to each other (nothing but spaces between) become one, each number once: `[2][2]`
/// → `[2]`, `[1] [3]` → `[1, 3]`. Answers are stored and shown in this form, so the app links exactly
/// the markers this parser reads ([`marker_numbers`]) instead of parsing them a second way.
pub fn canonical_markers(markdown: &str, count: usize) -> String {
    enum Out<'a> {
        Text(&'a str),
        Marker(Vec<usize>),
    }
    let mut out: Vec<Out> = Vec::new();
    for piece in pieces(markdown) {
        match piece {
            Piece::Marker { numbers, .. } if numbers.iter().all(|&n| (1..=count).contains(&n)) => {
                if matches!(out.last(), Some(Out::Text(t)) if t.trim_matches(' ').is_empty())
                    && matches!(out.iter().rev().nth(1), Some(Out::Marker(_)))
                {
                    out.pop();
                }
                let mut merged = match out.last_mut() {
                    Some(Out::Marker(previous)) => std::mem::take(previous),
                    _ => {
                        out.push(Out::Marker(Vec::new()));
                        Vec::new()
                    }
                };
                for n in numbers {
                    if !merged.contains(&n) {
                        merged.push(n);
                    }
                }
                if let Some(Out::Marker(last)) = out.last_mut() {
                    *last = merged;
                }
            }
            Piece::Marker { raw, .. } => out.push(Out::Text(raw)),
            Piece::Text(text) => out.push(Out::Text(text)),
        }
    }
    out.into_iter()
        .map(|o| match o {
            Out::Text(text) => text.to_string(),
            Out::Marker(numbers) => {
                format!("[{}]", numbers.iter().map(usize::to_string).collect::<Vec<_>>().join(", "))
            }
        })
        .collect()
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

/// The sentence Quarry adds after an answer so that it names the period each cited document covers
/// (issue 36: "the answer names the document and period its figure comes from"; a figure of the second
/// quarter's filing given for the first quarter's question then shows as such). For each cited document,
/// in the order of its first cited passage, whose context line states a period ("quarterly period ended
/// July 1, 2023", [`crate::period::period_phrase`]) and whose end date the answer does not
/// already state: `file (period) [n]`, `n` that passage's number. `None` when no such document is
/// cited. `chinese`: the lead-in in Chinese (the period stays as the document writes it).
pub fn cited_periods_note(markdown: &str, cited: &[Citation], chinese: bool) -> Option<String> {
    let stated: Vec<crate::figures::FigureKind> =
        crate::figures::figures(markdown).into_iter().map(|f| f.kind).collect();
    let mut documents: Vec<&str> = Vec::new();
    let mut parts: Vec<String> = Vec::new();
    for c in cited {
        let p = &c.passage;
        if documents.contains(&p.document_id.as_str()) {
            continue;
        }
        documents.push(&p.document_id);
        let (Some(phrase), Some((year, month, day))) =
            (crate::period::period_phrase(&p.context), crate::period::period_end(&p.context))
        else {
            continue;
        };
        if stated.contains(&crate::figures::FigureKind::Date { year, month, day }) {
            continue;
        }
        let file = std::path::Path::new(&p.path).file_name().and_then(|n| n.to_str()).unwrap_or(&p.path);
        parts.push(format!("{file} ({phrase}) [{}]", c.number));
    }
    if parts.is_empty() {
        None
    } else if chinese {
        Some(format!("报告期：{}。", parts.join("；")))
    } else {
        Some(format!("Periods: {}.", parts.join("; ")))
    }
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

/// The verdict on one claim of an answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimCheck {
    /// The sentence, without its citation markers.
    pub sentence: String,
    /// The citation numbers it relies on (its own, or the next sentence's of the same paragraph).
    pub cited: Vec<usize>,
    /// Whether the passages it cites hold its figures and the quarters it names.
    pub supported: bool,
    /// Why it is unsupported: `cites no passage`, `cites a passage the answer was not given`,
    /// `figures not in the cited passages: $13.5 billion, 19%`, `the cited passages do not name the
    /// period it states: Q1 2024`, `the cited passages do not name the year it states: 2027`, `the cited
    /// passages do not name: Intel` or `figures from a row of
    /// another line item: $6,976 million (AWS: Operating income)`. Empty when supported.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub problem: String,
}

/// A citation the claim check corrected: the text before a marker states figures that none of the
/// passages it cited holds, but one passage the answer was written from holds them all (and names the
/// quarter the text names, if any) — or, when none does, two or three of them together
/// ([`crate::claims::MOST_COVERING`]); or a paragraph states such figures and cites nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CitationRepair {
    /// The text the marker belongs to, without markers.
    pub text: String,
    /// The numbers it cited (empty: none).
    pub from: Vec<usize>,
    /// The number it cites now.
    pub to: usize,
    /// The further numbers it cites now, when no one passage states all its figures and the passages
    /// `to` and these state them together (empty otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pipeline's excerpts with the financial genre, as the default run reads.
    fn passage_excerpts(passages: &[Passage], focus: &str, each: usize, budget: usize) -> Vec<String> {
        super::passage_excerpts(&crate::genre::Financial, passages, focus, each, budget)
    }

    fn number_passages(passages: &[Passage], focus: &str, each: usize, budget: usize) -> (String, usize) {
        super::number_passages(&crate::genre::Financial, passages, focus, each, budget)
    }
    use crate::text::word_stems;

    #[test]
    fn a_sentence_said_before_is_dropped_with_a_heading_left_empty_and_new_ones_are_kept() {
        // The first section of a report on Apple's net sales, as Qwen2.5-Coder-1.5B wrote one.
        let first = "Apple's total net sales were $94,836 million for the three months ended April 1, 2023 [1]. \
                     Services net sales grew [2].";
        let mut said = Vec::new();
        assert_eq!(drop_repeated_sentences(first, &mut said), (first.to_string(), 0));
        assert_eq!(said.len(), 2, "both sentences have four words or more");
        // The second section says the first sentence again (other markers, a word changed), adds a clause
        // to the second, and its sub-heading heads only the repeat.
        let second = "#### Quarterly Net Sales\n\
                      Apple's total net sales were $94,836 million in the three months ended April 1, 2023 [3].\n\n\
                      #### Services\n\
                      Services net sales grew, driven by advertising, cloud services and AppleCare [4]. Sales fell [5].";
        let (kept, dropped) = drop_repeated_sentences(second, &mut said);
        assert_eq!(dropped, 1);
        assert_eq!(
            kept,
            "#### Services\nServices net sales grew, driven by advertising, cloud services and AppleCare [4]. Sales fell [5]."
        );
        // Within one text too.
        let twice = "- Net sales were $81,797 million in the quarter.\n- Net sales were $81,797 million in the quarter.\n- Margin 44%.";
        assert_eq!(
            drop_repeated_sentences(twice, &mut Vec::new()),
            ("- Net sales were $81,797 million in the quarter.\n- Margin 44%.".to_string(), 1)
        );
    }

    #[test]
    fn the_markers_an_app_links_are_the_citations_of_the_answer_as_written() {
        let markdown = "In [2023] it said so [1, 2]. Costs rose [3] and fell [1, 2]; see `[1]` too. Not [9].";
        let markers = citation_markers(markdown, &[1, 2, 3]);
        let texts: Vec<&str> = markers.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(texts, ["[1, 2]", "[3]", "[1]"], "distinct, in order; [2023] and [9] are no citations");
        assert_eq!(markers[0].numbers, [1, 2]);
    }

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
        assert_eq!(
            canonical_markers("A [1-3]. B [1 3] and [2,3]. C [1–2][4]. D [9] [2023] [see 2].", 4),
            "A [1, 2, 3]. B [1, 3] and [2, 3]. C [1, 2, 4]. D [9] [2023] [see 2]."
        );
        // Markers side by side are one marker, each number once; text between keeps them apart.
        assert_eq!(
            canonical_markers("was $7,192 million, as stated in [2][2]. Up [1] [3], [1]. X [2, 2].", 3),
            "was $7,192 million, as stated in [2]. Up [1, 3], [1]. X [2]."
        );
    }

    #[test]
    fn a_long_passage_keeps_the_sentences_about_the_question() {
        let filler = "The Company designs chips for gaming and data centers. ".repeat(30);
        let text = format!("{filler}Revenue for the first quarter of fiscal year 2024 was $7.19 billion, down 13%. Gross margin was 64.6%.");
        let focus_passage = |text: &str, focus: &str, max_chars: usize| {
            excerpts(vec![text.to_string()], focus, max_chars, usize::MAX).pop().unwrap()
        };
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
    fn chinese_text_is_matched_by_character_pairs_and_cut_at_its_own_sentence_ends() {
        let question = stems("2022年上半年，联通在精品网络建设上有什么成果？");
        for pair in ["上半", "联通", "精品", "网络", "建设", "成果", "2022"] {
            assert!(question.contains(pair), "{pair} in {question:?}");
        }
        assert!(
            !question.contains("什么") && !question.contains("年"),
            "question words and lone characters: {question:?}"
        );
        assert_eq!(stems("Revenue of Q1 2024"), stems("revenues q1 of 2024"), "other scripts as before");
        // Context lines are matched by words written without CJK characters only.
        assert!(word_stems("2023年义乌市出口额和进口额分别是多少？").is_empty());
        assert_eq!(word_stems("中国联通 Q1 2024年 revenue"), ["q1", "reven"].map(String::from).into());
        // China Unicom's 2022 interim report (AY02.md of the shared library), a paragraph with no line break:
        // the sentences about the question are kept, not the paragraph's first 120 characters.
        let text = "中国联通始终坚持网络在企业发展中的基础地位, 适度加大战略投入, 上半年的精品网络建设卓有成效,为公司有根生长筑牢发展底座。\
                    5G/4G 精品网建设方面,已经实现重点乡镇以上场景室外连续覆盖。在网络能力大幅提升的同时,网络智能化、数字化转型也取得了阶段性成果。\
                    今年以来, 公司圆满完成了包括北京冬奥会和冬残奥会通信保障服务、国家 60 余次 “云外交” 重要保障任务。\
                    算力精品网建设方面, 完成 “东数西算” 网络总体架构方案, 总规模达到 32.9 万架；";
        assert_eq!(sentence_pieces(text).len(), 5, "{:?}", sentence_pieces(text));
        let excerpt =
            excerpts(vec![text.to_string()], "2022年上半年，联通在精品网络建设上有什么成果？", 160, usize::MAX)
                .pop()
                .unwrap();
        assert!(excerpt.contains("精品网络建设卓有成效") && excerpt.contains("算力精品网建设"), "{excerpt}");
        assert!(!excerpt.contains("冬奥会"), "the sentence about the Olympics is not about the question: {excerpt}");
    }

    #[test]
    fn a_wrapped_line_stating_the_amounts_its_sentence_leads_to_is_shown_with_it() {
        // 2023 Q3 NVDA.pdf, p. 45, as the text layer wraps it: the amounts are on a line of their own that
        // shares no word with the question.
        let text = "The repurchases can be made in the open market, in privately negotiated transactions, or in \
                    structured share repurchase programs.\n\
                    During the third quarter and first nine months of fiscal year 2024, we repurchased 8.3 million \
                    and 15.9 million shares of our common stock for\n\
                    $3.72 billion and $7.01 billion, respectively.\n\
                    The Board of Directors approved an increase to our share repurchase program.\n\
                    Our employees are paid in cash and stock, and stock repurchases offset the dilution of grants.";
        let question =
            "Has NVIDIA reported any significant stock repurchase activities, and what scale did these take?";
        let excerpt = excerpts(vec![text.to_string()], question, 260, usize::MAX).pop().unwrap();
        assert!(excerpt.contains("common stock for\n$3.72 billion and $7.01 billion, respectively."), "{excerpt}");
        // A wrapped line that states no amount keeps its own rank: the sentence is cut where it was.
        let prose = text.replace("$3.72 billion and $7.01 billion, respectively.", "cash on hand, as before.");
        let excerpt = excerpts(vec![prose], question, 260, usize::MAX).pop().unwrap();
        assert!(!excerpt.contains("cash on hand"), "{excerpt}");
    }

    #[test]
    fn passage_headers_copied_into_an_answer_become_its_markers() {
        let passage = |id: u64, path: &str, page: u32, context: &str| Passage {
            chunk_id: id,
            chunk_index: None,
            library: "l".into(),
            document_id: path.into(),
            path: format!("/docs/{path}"),
            page_start: Some(page),
            page_end: Some(page),
            sheet: None,
            heading_path: vec![],
            text: "text".into(),
            context: context.into(),
            score: 0.0,
            ocr: false,
        };
        let q3 = "NVIDIA CORPORATION · Form 10-Q · quarterly period ended October 30, 2022 · 2022 Q3 NVDA";
        let passages = [passage(1, "2022 Q3 NVDA.pdf", 36, q3), passage(2, "2022 Q3 NVDA.pdf", 34, q3)];
        // Copied after its own marker (Qwen's per-document answer to the inventory question): dropped.
        let answer = "- **2022 Q3 NVDA.pdf** (quarterly period ended October 30, 2022): [1] 2022 Q3 NVDA.pdf, p. 36 \
                      (NVIDIA CORPORATION · Form 10-Q · quarterly period ended October 30, 2022 · 2022 Q3NVDA) \
                      Inventory grew to $4.45 billion.";
        assert_eq!(
            replace_copied_headers(answer, &passages),
            "- **2022 Q3 NVDA.pdf** (quarterly period ended October 30, 2022): [1] Inventory grew to $4.45 billion."
        );
        // Copied in place of a marker, and the later passage's "same document as" form: the marker.
        let answer = "As 2022 Q3 NVDA.pdf, p. 34 (same document as [1]) says, exchange rates had little effect.";
        assert_eq!(replace_copied_headers(answer, &passages), "As [2] says, exchange rates had little effect.");
        // A citation written by itself, or one followed by a parenthesis that is no header, stays.
        for kept in [
            "Revenue was $5.93 billion (2022 Q3 NVDA.pdf, p. 36).",
            "See 2022 Q3 NVDA.pdf, p. 36 (the inventory note) [1].",
            "As Annual Report.pdf, p. 36 (same document as [1]) says.",
        ] {
            assert_eq!(replace_copied_headers(kept, &passages), kept);
        }
        // Copies whose file name or page the model changed (Qwen's per-document answers, 2026-12-03 (c)):
        // dropped, the words around them kept.
        let changed = [
            (
                "Inventory levels may increase. [8] 2022 Q9 NVDA.pdf, p. 37 (same document as [1]) From the passages",
                "Inventory levels may increase. [8] From the passages",
            ),
            (
                "and in the risk factors below, global 2022 Q3 NVda.pdf, p. [42] (same document as [2]) reasonably likely",
                "and in the risk factors below, global reasonably likely",
            ),
            (
                "Cash received from 2022 Q3 NVIDIA.pdf, p. 24 (NVIDIA CORPORATION · Form 10-Q) The increase",
                "Cash received from The increase",
            ),
        ];
        for (answer, cleaned) in changed {
            assert_eq!(replace_copied_headers(answer, &passages), cleaned);
        }
    }

    #[test]
    fn a_shared_budget_keeps_every_passages_best_rows_and_cuts_the_filler() {
        let passage = |id: u64, text: String| Passage {
            chunk_id: id,
            chunk_index: None,
            library: "l".into(),
            document_id: format!("d{id}"),
            path: format!("/docs/d{id}.pdf"),
            page_start: Some(1),
            page_end: Some(1),
            sheet: None,
            heading_path: vec![],
            text,
            context: String::new(),
            score: 0.0,
            ocr: false,
        };
        let filler = "The Company designs chips for gaming and data centers. ".repeat(8);
        let passages = [
            passage(1, format!("{filler}Gross margin was 64.6% for the period.")),
            passage(2, filler.clone()),
            passage(
                3,
                format!("{filler}\nData Center revenue: $4,284 million (three months ended April 30, 2023)\n{filler}"),
            ),
        ];
        let question = "What was NVIDIA's Data Center revenue?";
        // A budget larger than the passages: each passage cut on its own.
        let roomy = passage_excerpts(&passages, question, 300, 100_000);
        assert_eq!(roomy.len(), 3);
        for (excerpt, p) in roomy.iter().zip(&passages) {
            assert_eq!(excerpt, &excerpts(vec![p.text.clone()], question, 300, usize::MAX)[0]);
        }
        // A budget of 400 characters for three passages of 300 to 900: every passage is shown, the
        // row the question asks about is kept whole, and the filler gives way.
        let tight = passage_excerpts(&passages, question, 300, 400);
        assert_eq!(tight.len(), 3, "{tight:?}");
        let total: usize = tight.iter().map(|e| e.chars().count()).sum();
        assert!(total <= 400 + 3 * 3, "{total}: {tight:?}");
        assert!(
            tight[2].contains("Data Center revenue: $4,284 million (three months ended April 30, 2023)"),
            "{tight:?}"
        );
        assert!(tight.iter().all(|e| !e.trim().is_empty() && e.chars().count() <= 300), "{tight:?}");
        // A budget smaller than the first passage's best piece still shows that one passage, and no more.
        let one = passage_excerpts(&passages, question, 300, 10);
        assert_eq!(one.len(), 1, "{one:?}");
        // The numbered prompt text holds the same excerpts.
        let (text, used) = number_passages(&passages, question, 300, 400);
        assert_eq!(used, 3);
        assert!(text.contains(tight[2].trim()), "{text}");
    }

    /// Passage `id` on `page` of `/docs/{document}.pdf`, text "text {id}", with `context` as its context line.
    fn filing_passage(id: u64, document: &str, page: u32, context: &str) -> Passage {
        Passage {
            chunk_id: id,
            chunk_index: None,
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
            ocr: false,
        }
    }

    #[test]
    fn a_documents_context_line_is_written_once_and_later_passages_point_back_to_it() {
        let passage = filing_passage;
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

    #[test]
    fn an_answer_names_the_period_of_each_cited_document_it_does_not_date_itself() {
        let passage = |id: u64, document: &str, context: &str| filing_passage(id, document, 1, context);
        let q1 = "NVIDIA CORPORATION · Form 10-Q · quarterly period ended April 30, 2023 · 2023 Q1 NVDA";
        let q2 = "NVIDIA CORPORATION · Form 10-Q · quarterly period ended July 30, 2023 · 2023 Q2 NVDA";
        let cited = |numbers: &[(usize, Passage)]| -> Vec<Citation> {
            numbers.iter().map(|(n, p)| Citation { number: *n, passage: p.clone() }).collect()
        };
        let both = cited(&[
            (1, passage(1, "2023 Q2 NVDA", q2)),
            (2, passage(2, "2023 Q1 NVDA", q1)),
            (3, passage(3, "2023 Q2 NVDA", q2)),
        ]);
        assert_eq!(
            cited_periods_note("Revenue was $13,507 million [1] and $7,192 million [2][3].", &both, false).as_deref(),
            Some("Periods: 2023 Q2 NVDA.pdf (quarterly period ended July 30, 2023) [1]; 2023 Q1 NVDA.pdf (quarterly period ended April 30, 2023) [2].")
        );
        // A document whose end date the answer states, in any spelling, is not named again.
        let dated = "For the quarter ended 30 April 2023, revenue was $7,192 million [2]; $13,507 million [1].";
        assert_eq!(
            cited_periods_note(dated, &both, false).as_deref(),
            Some("Periods: 2023 Q2 NVDA.pdf (quarterly period ended July 30, 2023) [1].")
        );
        assert_eq!(cited_periods_note("In the quarters ended April 30, 2023 and July 30, 2023 …", &both, false), None);
        // No period in the context line (a report, a web page): nothing to name.
        let undated = cited(&[(1, passage(1, "notes", "Meeting notes · 2023"))]);
        assert_eq!(cited_periods_note("It rose [1].", &undated, false), None);
        assert_eq!(
            cited_periods_note("收入为 71.9 亿美元 [2]。", &both[1..2], true).as_deref(),
            Some("报告期：2023 Q1 NVDA.pdf (quarterly period ended April 30, 2023) [2]。")
        );
    }

    #[test]
    fn a_loop_of_lines_alike_is_cut_to_its_first_lines() {
        let mut answer = String::from("The insights are as follows:\n- Inventory levels were higher in Q3 2021.\n");
        for what in [
            "the previous quarter",
            "previous years",
            "industry standards [4]",
            "competitors",
            "market trends",
            "inflation",
            "interest rates [4]",
        ] {
            answer.push_str(&format!("- Inventory levels were higher compared to {what}.\n"));
        }
        answer.push_str("\nFrom the passages: \u{201c}Inventories: 12,831 million (Oct 1, 2022)\u{201d} [9]");
        let (cut_text, cut) = cut_repeated_lines(&answer);
        assert_eq!(cut, 4, "{cut_text}");
        assert!(cut_text.contains("compared to the previous quarter.\n- Inventory levels were higher compared to previous years.\n- Inventory levels were higher compared to industry standards [4].\n\nFrom the passages:"), "{cut_text}");
        assert!(
            cut_text.starts_with("The insights are as follows:\n- Inventory levels were higher in Q3 2021.\n"),
            "{cut_text}"
        );
        // Fewer lines alike than a loop, or lines that state figures, stay.
        let quarters = "- Revenue for the quarter was $1 million.\n- Revenue for the quarter was $2 million.\n\
                        - Revenue for the quarter was $3 million.\n- Revenue for the quarter was $4 million.\n\
                        - Revenue for the quarter was $5 million.\n- Revenue for the quarter was $6 million.";
        assert_eq!(cut_repeated_lines(quarters), (quarters.to_string(), 0));
        let five = "a b c d e 1\na b c d e 2\na b c d e 3\na b c d e 4\na b c d e 5";
        assert_eq!(cut_repeated_lines(five).1, 0);
    }

    #[test]
    fn a_streamed_answer_is_stopped_once_its_complete_lines_hold_a_long_loop() {
        let line = |i: usize| format!("- Inventory levels were higher compared to item {}.\n", "x".repeat(i + 1));
        let mut streamed = String::from("The insights are as follows:\n");
        for i in 0..LOOP_STOP_LINES - 1 {
            streamed.push_str(&line(i));
            assert!(!loop_runs_on(&streamed), "{i} lines alike");
        }
        // The next line alike counts once it is complete.
        streamed.push_str("- Inventory levels were higher compared to the rest");
        assert!(!loop_runs_on(&streamed));
        streamed.push_str(".\n");
        assert!(loop_runs_on(&streamed));
        // Lines that state figures are no loop, however many.
        let quarters: String =
            (1..=3 * LOOP_STOP_LINES).map(|i| format!("- Revenue for the quarter was ${i} million.\n")).collect();
        assert!(!loop_runs_on(&quarters));
        assert!(!loop_runs_on("no line break yet"));
    }

    #[test]
    fn a_checked_answer_differs_from_the_streamed_text_only_by_what_it_left_out() {
        let streamed = "Revenue was $7,192 million [3].\n\nPeriods: 2023 Q1 NVDA.pdf [3].";
        assert!(!checked_text_differs(
            streamed,
            "Revenue was $7,192 million [3][5].\n\nPeriods: 2023 Q1 NVDA.pdf [3]."
        ));
        assert!(!checked_text_differs(streamed, "Revenue  was $7,192 million.\nPeriods: 2023 Q1 NVDA.pdf [3]."));
        let looped = "- a b c d e 1\n- a b c d e 2\n- a b c d e 3\n- a b c d e f\n- a b c d e g\n- a b c d e h";
        let (cut, n) = cut_repeated_lines(looped);
        assert_eq!(n, 3);
        assert!(checked_text_differs(looped, &cut));
    }
}
