//! An answer per document, for a question that several documents match alike.
//!
//! "How has Apple's total net sales changed over time?" over four quarterly filings names the company
//! and no period: the four filings match it equally ([`crate::document_match::tied_documents`]). Asked of
//! all their passages in one prompt, a 1.5B model mixed the quarters up, labelled figures with periods
//! no passage names and cited nothing (docs/evaluation/decisions.md, 2026-11-26 (c)). Here the model reads one document
//! at a time — its few best passages, numbered as they will be in the answer — and says what that
//! document reports, with the document's period; the answer lists the documents in order of period, so
//! each figure stands under the filing and period it comes from, cited. The prompts together are about
//! as long as the single prompt would be (the system part is the same for each call, so llama.cpp reuses
//! its cache), so the extra cost is the extra answers' tokens.
//!
//! A document whose passages do not state it says so in its line; when none does, the model reads all
//! their passages together once more (NaiveRAG's answer prompt), and that answer follows the list — if
//! the claim check supports at least one of its claims: otherwise it says the passages do not state it
//! together either, since a model that found nothing in any one document may still write a plausible
//! value ("read together" once gave an unanswerable question a year no passage names).
//!
//! Under each line, the document's own row or sentence that answers is quoted when the model's words
//! leave its figures out ([`crate::genre::financial::key_quote`]) — from the passages its call read or, failing those,
//! from the document's further passages among the search's candidates, which no call reads (a call
//! reads two passages of at most 500 characters). A passage only a quote cites is numbered after every
//! passage read, so the prompts stay as they are, and joins the answer's sources. A line that only
//! declines is replaced by the quote when one answers. Replaying 2026-12-02 (d)'s recorded sec-10-q answers,
//! the further passages raised the 26 multi-document questions' key-fact score from 0.416 to 0.456 (83 →
//! 91 of 184 figures) and the replaced declines to 0.476 (96); all 98: 0.508 → 0.529 (docs/evaluation/decisions.md,
//! 2026-12-02 (e)).

use crate::answer::{number_excerpts_from, number_passages_from, passage_excerpts, Answer, Citation};
use crate::document_match::TiedDocuments;
use crate::events::AgentEvent;
use crate::prompts;
use crate::run::{AgentError, QuoteSources, Run};
use crate::text::is_decline;
use crate::text::line_head;
use quarry_core::Passage;

/// Most tokens of one document's answer.
const DOCUMENT_ANSWER_TOKENS: u32 = 200;

/// Answers `question` one document of `tied` at a time (one model call each, streamed) and writes the
/// answer as one list item per document, in order of period: `- **file** (period): what it reports [n]`.
/// The passages are numbered across all documents, so each item cites the answer's own numbers.
/// `queries` and `retrieved` are recorded in the [`Answer`] as given. With `synthesis` (DeepSearch's
/// plan, [`crate::document_plan`]), when at least two documents' lines state something, one more call
/// reads the lines and writes two or three sentences across them, citing the lines' numbers
/// ([`synthesis_across`]); they follow the list under "Across the documents".
pub async fn answer_per_document(
    run: &Run,
    agent: &str,
    question: &str,
    tied: TiedDocuments,
    queries: Vec<Vec<String>>,
    retrieved: usize,
    synthesis: bool,
) -> Result<Answer, AgentError> {
    // Quarry's own lines speak the question's language (Chinese or English), as `Run::write_answer`'s do.
    let chinese = quarry_core::is_mostly_cjk(question);
    let language = prompts::in_question_language(question);
    let intro = if chinese {
        "有几份文档同样符合这个问题；按时期顺序，各文档的说法如下：\n"
    } else {
        "Several documents match the question alike; what each of them reports, in order of period:\n"
    };
    run.emit(AgentEvent::AnswerDelta { text: intro.to_string() });
    let mut markdown = String::from(intro);
    let mut passages: Vec<Passage> = Vec::new();
    let mut answered = 0;
    let mut citation_repairs = Vec::new();
    // What each document's call reads, chosen before the first call: a passage quoted but not read is
    // numbered after every passage read, so each call's prompt is what it would be without quotes.
    let excerpts: Vec<Vec<String>> = tied
        .documents
        .iter()
        .map(|document| {
            passage_excerpts(
                run.genre(),
                document,
                question,
                run.config.document_passage_chars,
                run.config.context_chars,
            )
        })
        .collect();
    let read_total: usize = excerpts.iter().map(Vec::len).sum();
    // The passages quoted under a line that its call did not read, in order of their numbers.
    let mut quoted_further: Vec<Passage> = Vec::new();
    // Each document's passages its call does not read: those cut for the prompt's budget, then its
    // further ones among the search's candidates.
    let unread: Vec<Vec<Passage>> = tied
        .documents
        .iter()
        .zip(&excerpts)
        .zip(&tied.further)
        .map(|((document, excerpts), further)| document[excerpts.len()..].iter().chain(further).cloned().collect())
        .collect();
    for ((document, excerpts), unread) in tied.documents.iter().zip(&excerpts).zip(&unread) {
        let first = passages.len() + 1;
        let text = number_excerpts_from(first, document, excerpts);
        let used = excerpts.len();
        let file = document[0].file_name();
        let head = line_head(file, crate::period::period_phrase(&document[0].context));
        let described = if document[0].context.is_empty() { file.to_string() } else { document[0].context.clone() };
        let mut request = prompts::DOCUMENT_ANSWER.request(
            &[
                ("document", &described),
                ("passages", &text),
                ("question", question),
                ("in_question_language", &language),
            ],
            DOCUMENT_ANSWER_TOKENS,
        );
        request.step = "document_answer".into();
        run.emit(AgentEvent::AnswerDelta { text: head.clone() });
        let said = run.call(&request, true).await?.text;
        let mut said = said.split_whitespace().collect::<Vec<_>>().join(" ");
        // A small model often cites nothing; each sentence whose figures one of this document's
        // passages states is cited to it.
        if crate::answer::cited_numbers(&said, usize::MAX).is_empty() {
            let sources: Vec<Citation> = document
                .iter()
                .take(used)
                .enumerate()
                .map(|(i, p)| Citation { number: first + i, passage: p.clone() })
                .collect();
            let (cited, repairs) = crate::claims::cite_uncited_sentences(&said, &sources);
            said = cited;
            citation_repairs.extend(repairs);
        }
        let declined = is_decline(&said);
        if !declined {
            answered += 1;
        }
        // The document's own row or sentence that answers, when the model's words leave its figures out:
        // from the passages its call read or, failing those, from the document's further passages.
        // A line that only declines (no figure of its own) is replaced by the quote: the filing states
        // what its call's few passages did not (or what the model missed in them), in its own words,
        // cited and checked. (The decline has streamed by then; the answer's markdown holds the quote.)
        // As under NaiveRAG's answer: a line that states no amount may quote the filing's row that its
        // label names only what is asked for ("Inventories", "Total inventories") from the rest of the
        // filing — the balance-sheet line no search for the question's wording ranks.
        let rest = if run.genre().quotes_from_rest_of_document(question, &said) {
            run.rest_of_document(&document[0], &document[..used], unread).await?
        } else {
            Vec::new()
        };
        let sources = QuoteSources {
            read: &document[..used],
            first,
            further: unread,
            further_first: read_total + quoted_further.len() + 1,
            rows_only: &rest,
        };
        let only_declines = declined && crate::figures::figures(&said).is_empty();
        if let Some(quote) = run.quote_under(question, if only_declines { "" } else { &said }, sources, " ") {
            if only_declines {
                said = quote.text.trim_start().to_string();
            } else {
                said.push_str(&quote.text);
            }
            quoted_further.extend(quote.further_quoted);
        }
        run.emit(AgentEvent::AnswerDelta { text: "\n".into() });
        markdown.push_str(&head);
        markdown.push_str(&said);
        markdown.push('\n');
        passages.extend(document.iter().take(used).cloned());
    }
    if tied.left_out > 0 {
        let note = if chinese {
            format!("\n另有 {} 份文档同样符合，没有读取；请在问题中写明时期，以询问其中一份。\n", tied.left_out)
        } else {
            format!(
                "\n{} more documents match as well and were not read; name a period to ask about one of them.\n",
                tied.left_out
            )
        };
        run.emit(AgentEvent::AnswerDelta { text: note.clone() });
        markdown.push_str(&note);
    }
    if synthesis && answered >= 2 {
        if let Some(text) = synthesis_across(run, question, &markdown[intro.len()..]).await? {
            let head = if chinese { "\n**综合各文档：** " } else { "\n**Across the documents:** " };
            let text = format!("{head}{text}\n");
            run.emit(AgentEvent::AnswerDelta { text: text.clone() });
            markdown.push_str(&text);
        }
    }
    if answered == 0 {
        // No document states it on its own: the answer is written from all their passages together, as
        // NaiveRAG writes it (same numbers), below the list — what the one-call answer found before
        // per-document answers existed is never lost to them.
        let transition = if chinese {
            "\n没有一份文档的段落单独说明这一点；合在一起读：\n\n"
        } else {
            "\nNo document's passages state it on their own; read together:\n\n"
        };
        run.emit(AgentEvent::AnswerDelta { text: transition.to_string() });
        markdown.push_str(transition);
        let (text, _) = number_passages_from(
            run.genre(),
            1,
            &passages,
            question,
            run.config.passage_chars,
            run.config.context_chars,
        );
        let mut request = prompts::ANSWER.request(
            &[("passages", &text), ("question", question), ("in_question_language", &language)],
            run.config.answer_max_tokens,
        );
        request.step = "answer".into();
        let together = run.call(&request, true).await?.text.trim().to_string();
        // Every document's own call found its passages silent, so what the passages say together must
        // hold up: kept when the claim check supports at least one of its claims (or it claims nothing),
        // else it is an invention — a plausible year or figure no passage holds — and the answer says
        // the passages do not state it together either (the streamed words are replaced, as a line
        // that only declines is replaced by its quote).
        let together = if holds_up(&together, &passages, run.genre()) {
            together
        } else {
            let decline = if chinese {
                "合在一起读，这些段落也没有说明这一点。"
            } else {
                "Read together, their passages do not state it either."
            };
            run.emit(AgentEvent::AnswerDelta { text: format!("\n\n{decline}") });
            decline.to_string()
        };
        markdown.push_str(&together);
        // As under NaiveRAG's answer: the row that answers, when these words leave its figures out.
        let not_quoted: Vec<Passage> =
            unread.concat().into_iter().filter(|p| !quoted_further.iter().any(|q| q.key() == p.key())).collect();
        let sources = QuoteSources {
            read: &passages,
            first: 1,
            further: &not_quoted,
            further_first: read_total + quoted_further.len() + 1,
            rows_only: &[],
        };
        if let Some(quote) = run.quote_under(question, &together, sources, "\n\n") {
            markdown.push_str(&quote.text);
            quoted_further.extend(quote.further_quoted);
        }
    }
    // The passages only a quote cites, numbered after those read.
    passages.extend(quoted_further);
    let mut answer =
        run.finish_answer(agent, question, markdown.trim_end().to_string(), passages, queries, retrieved, false);
    citation_repairs.append(&mut answer.citation_repairs);
    answer.citation_repairs = citation_repairs;
    Ok(answer)
}

/// Whether `text` (an answer written from `passages`, numbered from 1) claims nothing, or has at least
/// one claim the claim check supports once its citations are repaired ([`crate::claims::repair_citations`],
/// [`crate::claims::check_claims`]).
fn holds_up(text: &str, passages: &[Passage], genre: &dyn crate::genre::Genre) -> bool {
    let (_, sources) = crate::answer::citations_for(text, passages);
    let (repaired, _) = crate::claims::repair_citations(text, &sources);
    let checks = crate::claims::check_claims(&repaired, &sources, genre);
    checks.is_empty() || checks.iter().any(|c| c.supported)
}

/// Most tokens of the sentences across the documents.
const SYNTHESIS_TOKENS: u32 = 200;

/// Two or three sentences that answer `question` across the documents' `lines` (the per-document list,
/// one `- **file** (period): what it reports [n]` line each), written by one model call
/// (`prompts/synthesis.md`), whitespace folded; `None` when the model says the lines do not answer it
/// together ([`is_decline`]) or writes nothing. Its figures are checked against the passages their
/// citations name with the rest of the answer ([`Run::finish_answer`]).
async fn synthesis_across(run: &Run, question: &str, lines: &str) -> Result<Option<String>, AgentError> {
    let language = prompts::in_question_language(question);
    let mut request = prompts::SYNTHESIS.request(
        &[("lines", lines.trim()), ("question", question), ("in_question_language", &language)],
        SYNTHESIS_TOKENS,
    );
    request.step = "synthesis".into();
    let said = run.call(&request, false).await?.text;
    let said = said.split_whitespace().collect::<Vec<_>>().join(" ");
    // The prompt's refusal, "The documents do not state it together.", is a decline phrase.
    Ok((!said.is_empty() && !is_decline(&said)).then_some(said))
}
