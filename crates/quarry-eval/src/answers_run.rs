//! The answers evaluation's run (`quarry eval answers`): is the answer a person reads right? An agent answers a question set over a
//! real library built with `quarry add`, and each answer is scored against the set's reference answer
//! (written by others) and against the passages it cites:
//!
//! - **key-fact score**: the share of the reference answer's key figures (amounts, percentages, dates,
//!   large numbers; read mechanically by [`quarry_agents::figures`]) that the answer states, averaged
//!   over the questions whose reference has any; reported over all answerable questions and over those
//!   whose qrels name one document;
//! - **cited**: the share of answers (not declining) that cite at least one passage;
//! - **supported claims**: the share of the answers' claims that the claim check
//!   ([`quarry_agents::claims`]) finds supported by the passages they cite (pooled over answers);
//! - **abstention**: on questions the library cannot answer — none of the documents their qrels name is in
//!   the library (e.g. the AAPL questions of a library without Apple's filings) — the share of answers
//!   that decline ([`quarry_agents::text::is_decline`]); on answerable ones, the share that wrongly
//!   decline;
//! - **answer passage**: of the passages the answer was written from, as the model read them (those that
//!   fit its prompt, each cut toward the question), the 1-based position of the first one from a
//!   relevant document that states a reference figure (single-document questions), and the share of
//!   reference figures found anywhere in them — the ceiling of the key-fact score;
//! - **reference F1**: SQuAD's token-overlap F1 of the answer (citation markers removed) against the
//!   reference ([`crate::qa::token_f1`]: words, or characters for Chinese, as the Chinese QA sets
//!   score), over all answerable questions — the one score for references that state no figure (most of
//!   the Chinese NetOperatorQA set, the "relate A to B" analyses);
//! - **relevant document read**: the share of answerable questions for which a passage of a document their
//!   qrels name is among what the model reads (with `--retrieval-only` too);
//! - seconds, model calls and tokens per question.
//!
//! `--retrieval-only` asks no model: it scores the passages NaiveRAG would read (hybrid search for the
//! question, the named document's passages first, `-k` of them, cut as the prompt cuts them) and
//! whether the answer passage is in a deeper list (`--depth`), in seconds per question instead of minutes.
//!
//! `--route-only` asks only the router ([`route_only`]). The CLI opens the library and the model, and
//! prints what these functions report.

use crate::answers::{answer_passage_position, figures_found, figures_stated_in, in_question_language};
use crate::qrels::same_file_name;
use crate::retrieval::EvalSet;
use crate::EvalError;
use quarry_agents::claims::supported_share;
use quarry_agents::figures::{figures, key_figures, states, Figure};
use quarry_agents::text::is_decline;
use quarry_agents::{AgentConfig, AgentKind, CancellationToken, GenreKind, SearchableLibrary};
use quarry_core::{ChatModel, Passage};
use serde::Serialize;
use std::io::Write;
use std::sync::Arc;

/// One question of the run, as the library sees it.
#[derive(Debug, Clone)]
pub struct Question {
    /// The set's id of it.
    pub id: String,
    /// Its text.
    pub text: String,
    /// The qrels documents.
    pub relevant: Vec<String>,
    /// Every relevant document is in the library (answerable) / none is (unanswerable); mixed questions
    /// are left out.
    pub answerable: bool,
    /// The first reference answer.
    pub reference: String,
    /// The reference's key figures.
    pub figures: Vec<Figure>,
}

/// Which questions of a set a run asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Only {
    /// Answerable and unanswerable.
    All,
    /// Every document the qrels name is in the library.
    Answerable,
    /// None is.
    Unanswerable,
}

impl std::str::FromStr for Only {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "all" => Ok(Only::All),
            "answerable" => Ok(Only::Answerable),
            "unanswerable" => Ok(Only::Unanswerable),
            other => Err(format!("--only takes all, answerable or unanswerable, not {other:?}")),
        }
    }
}

/// The questions of `set` over a library holding the documents `paths`, in the set's order: each
/// answerable when every document its qrels name is among `paths` (by file name, [`same_file_name`]),
/// unanswerable when none is, left out when some are; then those `only` keeps.
pub fn select_questions(set: &EvalSet, paths: &[String], only: Only) -> Vec<Question> {
    let mut questions: Vec<Question> = Vec::new();
    for (id, text) in &set.queries {
        let mut relevant: Vec<String> = set.relevant.get(id).map(|r| r.iter().cloned().collect()).unwrap_or_default();
        relevant.sort();
        let present = relevant.iter().filter(|r| paths.iter().any(|p| same_file_name(p, r))).count();
        let answerable = match present {
            n if n == relevant.len() => true,
            0 => false,
            _ => continue,
        };
        let reference = set.answers.get(id).and_then(|a| a.first()).cloned().unwrap_or_default();
        let figures = key_figures(&reference);
        questions.push(Question { id: id.clone(), text: text.clone(), relevant, answerable, reference, figures });
    }
    questions.retain(|q| match only {
        Only::Answerable => q.answerable,
        Only::Unanswerable => !q.answerable,
        Only::All => true,
    });
    questions
}

/// What a run is over, for its reports: the set's and the library's names, the questions skipped at the
/// set's start, and the agents' settings.
#[derive(Debug, Clone, Copy)]
pub struct RunSetup<'a> {
    /// The set's folder name.
    pub set: &'a str,
    /// The library asked.
    pub library: &'a str,
    /// Questions skipped at the start (`--offset`), recorded in the reports.
    pub offset: usize,
    /// The agents' settings (and NaiveRAG's reading, for `--retrieval-only`).
    pub config: &'a AgentConfig,
}

/// What a run tells its caller as it goes, for a progress bar and the printed reports.
#[derive(Debug)]
pub enum AnswersProgress<'a> {
    /// A pass over the questions starts (`"retrieval"`, `"router"`, `"naive agent"`, …).
    Started(String),
    /// One question was answered (or failed).
    Asked,
    /// A question's run failed; it counts in no mean.
    Failed {
        /// The question's id.
        qid: &'a str,
        /// Why.
        error: String,
    },
    /// A pass finished.
    Report(&'a AnswersReport),
}

/// Writes one trace line and flushes it (a run stopped part way keeps every finished question).
fn write_line(out: &mut dyn Write, line: &serde_json::Value) -> Result<(), EvalError> {
    writeln!(out, "{line}").and_then(|()| out.flush()).map_err(|e| EvalError::Trace(e.to_string()))
}

/// One pass's scores over the questions (`quarry eval answers --json` prints it as one object).
#[derive(Debug, Default, Serialize)]
pub struct AnswersReport {
    /// The library asked.
    pub library: String,
    /// The set's folder name.
    pub set: String,
    /// The agent (`auto`: the router's choice; `retrieval`: no model).
    pub agent: String,
    /// The model, as it describes itself (`none` without one).
    pub model: String,
    /// Questions skipped at the start of the set.
    pub offset: usize,
    /// Answerable questions asked.
    pub answerable: usize,
    /// Unanswerable questions asked.
    pub unanswerable: usize,
    /// Mean share of reference figures stated, over answerable questions whose reference has figures.
    pub key_fact_score: Option<f64>,
    /// The same over the single-document ones among them.
    pub key_fact_score_single_doc: Option<f64>,
    /// Share of answerable answers (not declining) with at least one citation.
    pub cited_rate: Option<f64>,
    /// Supported claims over all claims of answerable answers.
    pub supported_claim_rate: Option<f64>,
    /// Reports ([`report_all`]): claims of the sections that cite a passage, over all their claims.
    pub cited_sentence_rate: Option<f64>,
    /// Reports ([`report_all`]): sentences of the sections that say again what an earlier one said
    /// ([`crate::answers::repeated_sentences`]), over all their claims.
    pub repeated_sentence_rate: Option<f64>,
    /// Share of unanswerable questions declined.
    pub abstention: Option<f64>,
    /// Share of answerable questions declined.
    pub false_decline: Option<f64>,
    /// Share of answers (all questions) written in the question's language: see [`in_question_language`].
    pub in_question_language: Option<f64>,
    /// Mean SQuAD token F1 of the answers against the references (characters for CJK), answerable ones.
    pub reference_f1: Option<f64>,
    /// Share of answerable questions with a passage of a relevant document among what the model reads.
    pub relevant_document_read: Option<f64>,
    /// Share of reference figures found in the passages the answer was written from (answerable).
    pub figures_in_passages: Option<f64>,
    /// Single-document questions whose answer passage is among the passages the answer was written from.
    pub answer_passage_found: Option<f64>,
    /// Mean reciprocal position of the answer passage (0 when absent), single-document questions.
    pub answer_passage_mrr: Option<f64>,
    /// With --retrieval-only: the same within the deeper list (`--depth`).
    pub answer_passage_found_deep: Option<f64>,
    /// Mean characters of passage excerpts in the answer prompt(s) a question (what the model reads,
    /// without passage headers): prompt processing is most of an answer's seconds on a CPU.
    pub passage_chars_per_q: Option<f64>,
    /// With --retrieval-only: share of questions NaiveRAG answers one document at a time (several
    /// documents match alike: `quarry_agents::per_document`).
    pub per_document: Option<f64>,
    /// Mean seconds a question.
    pub seconds_per_q: f64,
    /// Mean seconds from the question to the first streamed token of the answer (what a person waits
    /// before text appears); `None` with --retrieval-only.
    pub first_token_seconds_per_q: Option<f64>,
    /// Model calls a question.
    pub llm_calls_per_q: f64,
    /// Prompt and completion tokens a question.
    pub tokens_per_q: f64,
    /// Prompt tokens the embedded model did not process again (shared with its previous call), a question.
    pub cached_prompt_tokens_per_q: f64,
    /// Questions each agent answered (with `--agent auto`: the router's choices), by agent name.
    pub answered_by: std::collections::BTreeMap<String, usize>,
    /// Questions whose run failed.
    pub failed: usize,
    #[serde(skip)]
    sums: Sums,
}

/// Sums over the questions of one pass, from which [`finish`] computes the report's means.
#[derive(Debug, Default)]
struct Sums {
    key_fact: Vec<f64>,
    key_fact_single: Vec<f64>,
    cited: Vec<f64>,
    claims: (usize, usize),
    cited_claims: usize,
    repeated: usize,
    declined_unanswerable: Vec<f64>,
    declined_answerable: Vec<f64>,
    figures_in_passages: Vec<f64>,
    reference_f1: Vec<f64>,
    in_question_language: Vec<f64>,
    relevant_document_read: Vec<f64>,
    passage_chars: Vec<f64>,
    passage_found: Vec<f64>,
    passage_rr: Vec<f64>,
    passage_found_deep: Vec<f64>,
    per_document: Vec<f64>,
    seconds: f64,
    first_token_seconds: Vec<f64>,
    calls: usize,
    tokens: u64,
    cached_tokens: u64,
    asked: usize,
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The passages as the answering model reads them: those that fit its prompt, each with the excerpt the
/// prompt shows of it ([`quarry_agents::answer::passage_excerpts`] with `config`'s limits, read as
/// `genre`).
fn as_read(passages: &[Passage], question: &str, config: &AgentConfig, genre: GenreKind) -> Vec<Passage> {
    as_read_with(passages, question, config.passage_chars, config.context_chars, genre)
}

/// [`as_read`] with `passage_chars` a passage (a per-document answer's limit) and `context_chars` in all.
fn as_read_with(
    passages: &[Passage],
    question: &str,
    passage_chars: usize,
    context_chars: usize,
    genre: GenreKind,
) -> Vec<Passage> {
    quarry_agents::answer::passage_excerpts(genre.layer(), passages, question, passage_chars, context_chars)
        .into_iter()
        .zip(passages)
        .map(|(text, p)| Passage { text, ..p.clone() })
        .collect()
}

/// Scores, without a model, the passages NaiveRAG would read for each question (hybrid search, the
/// named document's passages first, `config.top_k` of them cut as its prompt cuts them: its own choice of
/// a decline, one answer per document, or one) and whether the answer passage is within `depth` hits.
/// With `trace`, one JSON line a question. Errors: a search fails; writing the trace.
pub async fn retrieval_only(
    setup: &RunSetup<'_>,
    questions: &[Question],
    library: &SearchableLibrary,
    depth: usize,
    mut trace: Option<&mut dyn Write>,
    progress: &mut dyn FnMut(AnswersProgress<'_>),
) -> Result<AnswersReport, EvalError> {
    let config = setup.config;
    progress(AnswersProgress::Started("retrieval".into()));
    let mut report = AnswersReport { agent: "retrieval".into(), model: "none".into(), ..AnswersReport::default() };
    for q in questions {
        let started = std::time::Instant::now();
        let passages = library.retriever.retrieve(&q.text, depth.max(config.top_k)).await?;
        // What NaiveRAG reads: a search twice as deep as it reads, the named document's passages first.
        let wider = library.retriever.retrieve(&q.text, config.top_k * quarry_agents::document_match::WIDENING).await?;
        // The genre a run would settle at that search.
        let genre = quarry_agents::genre::resolve(config.genre, library.retriever.as_ref(), &wider).await;
        // NaiveRAG's own choice of what to read of that search (a decline, one answer per document, or one).
        let reading = quarry_agents::naive_reading(&q.text, &wider, config);
        let uncovered = match &reading {
            quarry_agents::NaiveReading::Decline(text) => Some(text.clone()),
            _ => None,
        };
        let subject = quarry_agents::document_match::question_subject(&q.text).map(|subject| {
                let mentions = quarry_agents::document_match::subject_mentions(&subject, &wider);
                serde_json::json!({"name": subject, "in_context": mentions.in_context, "in_text": mentions.in_text, "of": wider.len()})
            });
        let declines = f64::from(u8::from(uncovered.is_some()));
        if q.answerable {
            report.sums.declined_answerable.push(declines);
        } else {
            report.sums.declined_unanswerable.push(declines);
        }
        // Several documents alike: NaiveRAG reads each one's share, one document at a time, one prompt
        // per document; one prompt otherwise; nothing when it declines.
        let per_document = matches!(reading, quarry_agents::NaiveReading::PerDocument(_));
        report.sums.per_document.push(f64::from(u8::from(per_document)));
        let (naive, read) = match reading {
            quarry_agents::NaiveReading::PerDocument(tied) => (
                tied.documents.concat(),
                tied.documents
                    .iter()
                    .flat_map(|document| {
                        as_read_with(document, &q.text, config.document_passage_chars, config.context_chars, genre)
                    })
                    .collect(),
            ),
            quarry_agents::NaiveReading::Passages(naive) => {
                let read = as_read(&naive, &q.text, config, genre);
                (naive, read)
            }
            quarry_agents::NaiveReading::Decline(_) => (Vec::new(), Vec::new()),
        };
        report.sums.seconds += started.elapsed().as_secs_f64();
        progress(AnswersProgress::Asked);
        score_passages(&mut report.sums, q, &read);
        if q.answerable && q.relevant.len() == 1 && !q.figures.is_empty() {
            report
                .sums
                .passage_found_deep
                .push(f64::from(u8::from(answer_passage_position(&passages, &q.relevant, &q.figures).is_some())));
        }
        if let Some(out) = trace.as_deref_mut() {
            let line = serde_json::json!({
                "qid": q.id, "question": q.text, "answerable": q.answerable, "relevant": q.relevant,
                "reference_figures": q.figures.iter().map(|f| &f.text).collect::<Vec<_>>(),
                "answer_passage_rank": answer_passage_position(&passages, &q.relevant, &q.figures),
                "answer_passage_read": answer_passage_position(&read, &q.relevant, &q.figures),
                "figures_read": figures_stated_in(&read, &q.figures).iter().map(|f| &f.text).collect::<Vec<_>>(),
                "read": naive.iter().map(|p| p.citation()).collect::<Vec<_>>(),
                "read_text": read.iter().map(|p| &p.text).collect::<Vec<_>>(),
                "per_document": report.sums.per_document.last() == Some(&1.0),
                "declined_without_model": uncovered,
                "genre": genre.name(),
                "subject": subject,
                "passages": passages.iter().map(|p| format!("{} | {}", p.path.rsplit('/').next().unwrap_or(""), p.citation())).collect::<Vec<_>>(),
            });
            write_line(out, &line)?;
        }
    }
    let report = finish(report, setup, questions);
    progress(AnswersProgress::Report(&report));
    Ok(report)
}

/// Asks only the router which agent would answer each question (one short model call each; no search,
/// no answer); the report counts its choices (`answered_by`). With `trace`, one JSON line a question:
/// the choice and the router's reason. Errors: a model call fails outright; writing the trace.
pub async fn route_only(
    setup: &RunSetup<'_>,
    questions: &[Question],
    library: &SearchableLibrary,
    model: Arc<dyn ChatModel>,
    mut trace: Option<&mut dyn Write>,
    progress: &mut dyn FnMut(AnswersProgress<'_>),
) -> Result<AnswersReport, EvalError> {
    progress(AnswersProgress::Started("router".into()));
    let mut report = AnswersReport { agent: "auto".into(), model: model.describe(), ..AnswersReport::default() };
    let info = quarry_agents::LibraryInfo { name: setup.library.to_string(), description: String::new() };
    for q in questions {
        let run = quarry_agents::Run::new(
            Arc::clone(&model),
            Arc::clone(&library.retriever),
            setup.config.clone(),
            quarry_agents::no_events(),
            CancellationToken::new(),
        );
        let route = quarry_agents::route(&run, &q.text, std::slice::from_ref(&info)).await?;
        let (calls, usage) = run.stats();
        progress(AnswersProgress::Asked);
        *report.answered_by.entry(route.agent.name().to_string()).or_default() += 1;
        report.sums.asked += 1;
        report.sums.seconds += run.seconds();
        report.sums.calls += calls;
        report.sums.tokens += usage.total();
        if let Some(out) = trace.as_deref_mut() {
            let line = serde_json::json!({
                "qid": q.id, "question": q.text, "relevant": q.relevant,
                "routed": route.agent.name(), "reason": route.reason, "seconds": run.seconds(),
            });
            write_line(out, &line)?;
        }
    }
    let report = finish(report, setup, questions);
    progress(AnswersProgress::Report(&report));
    Ok(report)
}

/// Each of `agents` (`None`: the router's choice, reported as `auto`) answers every question over
/// `libraries` with `model`, and each answer is scored (module docs); one report per agent, in order.
/// With `trace`, one JSON line per question and agent: the answer, its claims, what was read, the
/// scores. A question whose run fails is reported through `progress` and counts in no mean. Errors:
/// writing the trace.
pub async fn answer_all(
    setup: &RunSetup<'_>,
    questions: &[Question],
    libraries: &[SearchableLibrary],
    model: Arc<dyn ChatModel>,
    agents: &[Option<AgentKind>],
    mut trace: Option<&mut dyn Write>,
    progress: &mut dyn FnMut(AnswersProgress<'_>),
) -> Result<Vec<AnswersReport>, EvalError> {
    let mut reports = Vec::with_capacity(agents.len());
    for &agent in agents {
        let name = agent.map(|a| a.name()).unwrap_or("auto");
        progress(AnswersProgress::Started(format!("{name} agent")));
        let mut report = AnswersReport { agent: name.into(), model: model.describe(), ..AnswersReport::default() };
        for q in questions {
            // The first streamed token of the answer: when a person starts reading.
            let started = std::time::Instant::now();
            let first_token = std::sync::Arc::new(std::sync::OnceLock::<f64>::new());
            let events: quarry_agents::EventSink = {
                let first_token = std::sync::Arc::clone(&first_token);
                std::sync::Arc::new(move |event| {
                    if let quarry_agents::AgentEvent::AnswerDelta { .. } = event {
                        let _ = first_token.set(started.elapsed().as_secs_f64());
                    }
                })
            };
            let result = quarry_agents::ask(
                &q.text,
                agent,
                Arc::clone(&model),
                libraries,
                setup.config.clone(),
                events,
                CancellationToken::new(),
            )
            .await;
            progress(AnswersProgress::Asked);
            let answer = match result {
                Ok(answer) => answer,
                Err(e) => {
                    progress(AnswersProgress::Failed { qid: &q.id, error: e.to_string() });
                    report.failed += 1;
                    continue;
                }
            };
            *report.answered_by.entry(answer.agent.clone()).or_default() += 1;
            let s = &mut report.sums;
            s.asked += 1;
            s.seconds += answer.seconds;
            s.first_token_seconds.extend(first_token.get().copied());
            s.calls += answer.llm_calls;
            s.tokens += answer.usage.total();
            s.cached_tokens += answer.usage.cached_prompt_tokens;
            let text = quarry_agents::answer::strip_citations(&answer.markdown);
            let declined = answer.nothing_found || (is_decline(&text) && figures(&text).is_empty());
            let passages: Vec<Passage> = answer.sources.iter().map(|c| c.passage.clone()).collect();
            // Read as the run read them (an answer stored without its genre: as configured).
            let genre = answer.genre.parse().unwrap_or(setup.config.genre);
            let read = as_read(&passages, &q.text, setup.config, genre);
            let stated = figures(&text);
            let reference_f1 = crate::qa::token_f1(&text, std::slice::from_ref(&q.reference));
            let in_language = in_question_language(&q.text, &text);
            s.in_question_language.push(f64::from(u8::from(in_language)));
            let share = (!q.figures.is_empty())
                .then(|| q.figures.iter().filter(|f| states(&stated, f)).count() as f64 / q.figures.len() as f64);
            if q.answerable {
                s.declined_answerable.push(f64::from(u8::from(declined)));
                s.reference_f1.push(reference_f1);
                if let Some(share) = share {
                    s.key_fact.push(share);
                    if q.relevant.len() == 1 {
                        s.key_fact_single.push(share);
                    }
                }
                if !declined {
                    s.cited.push(f64::from(u8::from(!answer.citations.is_empty())));
                    s.claims.0 += answer.claims.iter().filter(|c| c.supported).count();
                    s.claims.1 += answer.claims.len();
                }
                score_passages(s, q, &read);
            } else {
                s.declined_unanswerable.push(f64::from(u8::from(declined)));
            }
            if let Some(out) = trace.as_deref_mut() {
                let line = serde_json::json!({
                    "qid": q.id, "agent": name, "answered_by": answer.agent, "question": q.text, "answerable": q.answerable, "relevant": q.relevant,
                    "reference": q.reference,
                    "reference_figures": q.figures.iter().map(|f| &f.text).collect::<Vec<_>>(),
                    "stated": q.figures.iter().filter(|f| states(&stated, f)).map(|f| &f.text).collect::<Vec<_>>(),
                    "reference_f1": reference_f1, "in_question_language": in_language, "genre": answer.genre,
                    "declined": declined, "answer": answer.markdown,
                    "claims": answer.claims, "supported_share": supported_share(&answer.claims),
                    "citation_repairs": answer.citation_repairs,
                    "answer_passage": answer_passage_position(&read, &q.relevant, &q.figures),
                    "sources": answer.sources.iter().map(|c| c.passage.citation()).collect::<Vec<_>>(),
                    "read_text": read.iter().map(|p| &p.text).collect::<Vec<_>>(),
                    "seconds": answer.seconds, "first_token_seconds": first_token.get(), "llm_calls": answer.llm_calls,
                    "prompt_tokens": answer.usage.prompt_tokens, "cached_prompt_tokens": answer.usage.cached_prompt_tokens,
                });
                write_line(out, &line)?;
            }
        }
        let report = finish(report, setup, questions);
        progress(AnswersProgress::Report(&report));
        reports.push(report);
    }
    Ok(reports)
}

/// Each answerable question written up as a long-form research report, as `quarry report` writes it
/// ([`quarry_agents::research_report`] over `libraries` with `setup`'s agent settings and `research`),
/// and the report scored as a person reads it (one report, agent `report`):
///
/// - **key facts**: the share of the reference's key figures stated anywhere in it (introduction,
///   sections, conclusion);
/// - **cited sentences** and **supported claims**: the report's claim check of its sections
///   ([`quarry_agents::ReportSection::claims`]), where the citations are: the share of their claims
///   that cite a passage, and that the passages they cite support (pooled over reports);
/// - **repeated sentences**: the share of the sections' claims that say again what an earlier one said
///   ([`crate::answers::repeated_sentences`]), across sections;
/// - seconds, model calls, tokens.
///
/// A report does not decline, so unanswerable questions are not asked. With `trace`, one JSON line a
/// report: the rendered Markdown, the figures stated, the claims and the repeated sentences. A report
/// that fails is reported through `progress` and counts in no mean. Errors: writing the trace.
pub async fn report_all(
    setup: &RunSetup<'_>,
    questions: &[Question],
    libraries: &[SearchableLibrary],
    model: Arc<dyn ChatModel>,
    research: quarry_agents::ResearchConfig,
    mut trace: Option<&mut dyn Write>,
    progress: &mut dyn FnMut(AnswersProgress<'_>),
) -> Result<AnswersReport, EvalError> {
    progress(AnswersProgress::Started("report".into()));
    let mut report = AnswersReport { agent: "report".into(), model: model.describe(), ..AnswersReport::default() };
    let answerable: Vec<&Question> = questions.iter().filter(|q| q.answerable).collect();
    for q in answerable {
        let result = quarry_agents::research_report(
            &q.text,
            Arc::clone(&model),
            libraries,
            setup.config.clone(),
            research,
            quarry_agents::no_events(),
            CancellationToken::new(),
        )
        .await;
        progress(AnswersProgress::Asked);
        let written = match result {
            Ok(written) => written,
            Err(e) => {
                progress(AnswersProgress::Failed { qid: &q.id, error: e.to_string() });
                report.failed += 1;
                continue;
            }
        };
        *report.answered_by.entry("report".into()).or_default() += 1;
        let whole = std::iter::once(written.introduction.as_str())
            .chain(written.sections.iter().map(|s| s.markdown.as_str()))
            .chain(std::iter::once(written.conclusion.as_str()))
            .collect::<Vec<_>>()
            .join("\n\n");
        let stated = figures(&quarry_agents::answer::strip_citations(&whole));
        // The report's own claim check of each section (what its reader sees listed as unsupported).
        let claims: Vec<_> = written.sections.iter().flat_map(|s| s.claims.iter().cloned()).collect();
        let claim_sentences: Vec<&str> = claims.iter().map(|c| c.sentence.as_str()).collect();
        let repeated = crate::answers::repeated_sentences(&claim_sentences);
        let s = &mut report.sums;
        s.asked += 1;
        s.seconds += written.seconds;
        s.calls += written.llm_calls;
        s.tokens += written.usage.total();
        s.cached_tokens += written.usage.cached_prompt_tokens;
        if !q.figures.is_empty() {
            let share = q.figures.iter().filter(|f| states(&stated, f)).count() as f64 / q.figures.len() as f64;
            s.key_fact.push(share);
            if q.relevant.len() == 1 {
                s.key_fact_single.push(share);
            }
        }
        s.claims.0 += claims.iter().filter(|c| c.supported).count();
        s.claims.1 += claims.len();
        s.cited_claims += claims.iter().filter(|c| !c.cited.is_empty()).count();
        s.repeated += repeated.len();
        let passages: Vec<Passage> = written.sources.iter().map(|c| c.passage.clone()).collect();
        score_passages(s, q, &passages);
        if let Some(out) = trace.as_deref_mut() {
            let options = quarry_agents::ReportOptions { title: None, date: String::new(), link_base: None };
            let line = serde_json::json!({
                "qid": q.id, "agent": "report", "question": q.text, "relevant": q.relevant,
                "reference": q.reference,
                "reference_figures": q.figures.iter().map(|f| &f.text).collect::<Vec<_>>(),
                "stated": q.figures.iter().filter(|f| states(&stated, f)).map(|f| &f.text).collect::<Vec<_>>(),
                "genre": written.genre,
                "sections": written.sections.iter().map(|s| &s.title).collect::<Vec<_>>(),
                "report": quarry_agents::render_research_report(&written, &options),
                "claims": claims, "supported_share": supported_share(&claims),
                "repeated": repeated.iter().map(|&i| claim_sentences[i]).collect::<Vec<_>>(),
                "sources": written.sources.iter().map(|c| c.passage.citation()).collect::<Vec<_>>(),
                "seconds": written.seconds, "llm_calls": written.llm_calls,
                "prompt_tokens": written.usage.prompt_tokens, "cached_prompt_tokens": written.usage.cached_prompt_tokens,
            });
            write_line(out, &line)?;
        }
    }
    let report = finish(report, setup, questions);
    progress(AnswersProgress::Report(&report));
    Ok(report)
}

/// Scores the passages an answer was (or would be) written from.
fn score_passages(s: &mut Sums, q: &Question, passages: &[Passage]) {
    s.passage_chars.push(passages.iter().map(|p| p.text.chars().count()).sum::<usize>() as f64);
    if q.answerable {
        let read = passages.iter().any(|p| q.relevant.iter().any(|r| same_file_name(&p.path, r)));
        s.relevant_document_read.push(f64::from(u8::from(read)));
    }
    if !q.answerable || q.figures.is_empty() {
        return;
    }
    s.figures_in_passages.push(figures_found(passages, &q.figures));
    if q.relevant.len() == 1 {
        let position = answer_passage_position(passages, &q.relevant, &q.figures);
        s.passage_found.push(f64::from(u8::from(position.is_some())));
        s.passage_rr.push(position.map(|p| 1.0 / p as f64).unwrap_or(0.0));
    }
}

fn finish(mut report: AnswersReport, setup: &RunSetup<'_>, questions: &[Question]) -> AnswersReport {
    let s = &report.sums;
    let n = s.asked.max(1) as f64;
    report.library = setup.library.to_string();
    report.set = setup.set.to_string();
    report.offset = setup.offset;
    report.answerable = questions.iter().filter(|q| q.answerable).count();
    report.unanswerable = questions.len() - report.answerable;
    report.key_fact_score = mean(&s.key_fact);
    report.key_fact_score_single_doc = mean(&s.key_fact_single);
    report.cited_rate = mean(&s.cited);
    report.supported_claim_rate = (s.claims.1 > 0).then(|| s.claims.0 as f64 / s.claims.1 as f64);
    if report.agent == "report" {
        report.cited_sentence_rate = (s.claims.1 > 0).then(|| s.cited_claims as f64 / s.claims.1 as f64);
        report.repeated_sentence_rate = (s.claims.1 > 0).then(|| s.repeated as f64 / s.claims.1 as f64);
    }
    report.abstention = mean(&s.declined_unanswerable);
    report.false_decline = mean(&s.declined_answerable);
    report.figures_in_passages = mean(&s.figures_in_passages);
    report.reference_f1 = mean(&s.reference_f1);
    report.in_question_language = mean(&s.in_question_language);
    report.relevant_document_read = mean(&s.relevant_document_read);
    report.passage_chars_per_q = mean(&s.passage_chars);
    report.answer_passage_found = mean(&s.passage_found);
    report.answer_passage_mrr = mean(&s.passage_rr);
    report.answer_passage_found_deep = mean(&s.passage_found_deep);
    report.per_document = mean(&s.per_document);
    report.seconds_per_q = if s.asked > 0 { s.seconds / n } else { s.seconds / questions.len().max(1) as f64 };
    report.first_token_seconds_per_q = mean(&s.first_token_seconds);
    report.llm_calls_per_q = s.calls as f64 / n;
    report.tokens_per_q = s.tokens as f64 / n;
    report.cached_prompt_tokens_per_q = s.cached_tokens as f64 / n;
    report
}
