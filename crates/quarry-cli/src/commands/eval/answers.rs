//! `quarry eval answers`: is the answer a person reads right? An agent answers a question set over a
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
//!   reference ([`quarry_eval::qa::token_f1`]: words, or characters for Chinese, as the Chinese QA sets
//!   score), over all answerable questions — the one score for references that state no figure (most of
//!   the Chinese NetOperatorQA set, the "relate A to B" analyses);
//! - **relevant document read**: the share of answerable questions for which a passage of a document their
//!   qrels name is among what the model reads (with `--retrieval-only` too);
//! - seconds, model calls and tokens per question.
//!
//! `--retrieval-only` asks no model: it scores the passages NaiveRAG would read (hybrid search for the
//! question, the named document's passages first, `-k` of them, cut as the prompt cuts them) and
//! whether the answer passage is in a deeper list (`--depth`), in seconds per question instead of minutes.

use crate::commands::args::LlmArgs;
use crate::commands::args::ModelArgs;
use anyhow::Context;
use quarry_agents::claims::supported_share;
use quarry_agents::figures::{figures, key_figures, states, Figure};
use quarry_agents::text::is_decline;
use quarry_agents::{AgentConfig, AgentKind, CancellationToken};
use quarry_core::Passage;
use quarry_eval::answers::{answer_passage_position, figures_found, figures_stated_in, in_question_language};
use quarry_eval::qrels::same_file_name;
use quarry_eval::retrieval::load_queries;
use quarry_store::{DataDir, Library, SearchMode};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct AnswersArgs {
    /// The library to ask (built beforehand with `quarry add`).
    #[arg(long)]
    pub library: String,
    /// Folder with queries.jsonl (with `answers`) and qrels.tsv naming documents by path relative to the
    /// set's root (e.g. ../shared/eval/C_private_library/qna/sec-10-q).
    #[arg(long)]
    pub set: PathBuf,
    /// auto, naive, deep or chain; several separated by commas, one report each.
    #[arg(long, default_value = "naive")]
    pub agent: String,
    /// Skip the first N questions.
    #[arg(long, default_value_t = 0)]
    pub offset: usize,
    /// Only N questions (after `--offset`).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Which questions: all, answerable (every document they need is in the library) or unanswerable
    /// (none is).
    #[arg(long, default_value = "all")]
    pub only: String,
    /// Score retrieval for the answer only (no model): the passages NaiveRAG would read.
    #[arg(long)]
    pub retrieval_only: bool,
    /// Only ask the router which agent would answer each question (one short model call each; no
    /// search, no answer): the choices per agent, and with --trace the router's reply per question.
    #[arg(long, conflicts_with = "retrieval_only")]
    pub route_only: bool,
    /// With --retrieval-only: how deep to look for the answer passage's rank.
    #[arg(long, default_value_t = 40)]
    pub depth: usize,
    /// Most search rounds (deep, chain).
    #[arg(long, default_value_t = 3)]
    pub max_rounds: usize,
    /// Seconds a DeepSearch or ChainOfRAG search may take before the answer is written (0: no limit).
    #[arg(long, default_value_t = quarry_agents::DEFAULT_SEARCH_SECONDS)]
    pub search_seconds: f64,
    /// Passages retrieved per query.
    #[arg(short, default_value_t = AgentConfig::default().top_k)]
    pub k: usize,
    /// Most tokens of each answer.
    #[arg(long, default_value_t = 400)]
    pub answer_tokens: u32,
    /// Most characters of one passage in the answer prompt (cut toward the question).
    #[arg(long, default_value_t = AgentConfig::default().passage_chars)]
    pub passage_chars: usize,
    /// Most characters of all passages in the answer prompt.
    #[arg(long, default_value_t = AgentConfig::default().context_chars)]
    pub context_chars: usize,
    #[command(flatten)]
    pub per_document: crate::commands::args::PerDocumentArgs,
    /// The weight of the document prior in keyword ranking for this run (0 = without it; default: the
    /// library's, `DEFAULT_DOCUMENT_PRIOR`), to measure what it does to the passages the agents read.
    #[arg(long, value_parser = crate::commands::args::parse_document_prior)]
    pub document_prior: Option<f32>,
    /// Most sentences or table rows quoted under an answer (each document's line), those whose figures
    /// the answer leaves out (0: none).
    #[arg(long, default_value_t = AgentConfig::default().quoted_pieces)]
    pub quoted_pieces: usize,
    /// Write one JSON line per question and agent to this file: question, reference figures, answer,
    /// which figures it stated, the claim check, the sources' citations, the answer passage's position.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Print one JSON object per agent instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Record the model's calls to this file (JSON lines) and answer from it every call asked again
    /// with the same prompt, so a run is scored again without the model after a change that leaves the
    /// prompts as they were (the quote under an answer, the claim check, the scoring), and only changed
    /// prompts go to the model (`quarry_eval::recorded`). Seconds then measure the replay, not the model.
    #[arg(long, value_name = "FILE.jsonl")]
    pub recording: Option<PathBuf>,
    /// With --recording: never load the model; a call not in the recording fails its question.
    #[arg(long, requires = "recording")]
    pub replay_only: bool,
    #[command(flatten)]
    pub llm: LlmArgs,
    #[command(flatten)]
    pub embedding: ModelArgs,
}

/// One question of the run, as the library sees it.
struct Question {
    id: String,
    text: String,
    /// The qrels documents.
    relevant: Vec<String>,
    /// Every relevant document is in the library (answerable) / none is (unanswerable); mixed questions
    /// are left out.
    answerable: bool,
    reference: String,
    figures: Vec<Figure>,
}

/// Sums over the questions of one agent's run.
#[derive(Debug, Default, Serialize)]
struct AnswersReport {
    library: String,
    set: String,
    agent: String,
    model: String,
    offset: usize,
    answerable: usize,
    unanswerable: usize,
    /// Mean share of reference figures stated, over answerable questions whose reference has figures.
    key_fact_score: Option<f64>,
    /// The same over the single-document ones among them.
    key_fact_score_single_doc: Option<f64>,
    /// Share of answerable answers (not declining) with at least one citation.
    cited_rate: Option<f64>,
    /// Supported claims over all claims of answerable answers.
    supported_claim_rate: Option<f64>,
    /// Share of unanswerable questions declined.
    abstention: Option<f64>,
    /// Share of answerable questions declined.
    false_decline: Option<f64>,
    /// Share of answers (all questions) written in the question's language: see [`in_question_language`].
    in_question_language: Option<f64>,
    /// Mean SQuAD token F1 of the answers against the references (characters for CJK), answerable ones.
    reference_f1: Option<f64>,
    /// Share of answerable questions with a passage of a relevant document among what the model reads.
    relevant_document_read: Option<f64>,
    /// Share of reference figures found in the passages the answer was written from (answerable).
    figures_in_passages: Option<f64>,
    /// Single-document questions whose answer passage is among the passages the answer was written from.
    answer_passage_found: Option<f64>,
    /// Mean reciprocal position of the answer passage (0 when absent), single-document questions.
    answer_passage_mrr: Option<f64>,
    /// With --retrieval-only: the same within the deeper list (`--depth`).
    answer_passage_found_deep: Option<f64>,
    /// Mean characters of passage excerpts in the answer prompt(s) a question (what the model reads,
    /// without passage headers): prompt processing is most of an answer's seconds on a CPU.
    passage_chars_per_q: Option<f64>,
    /// With --retrieval-only: share of questions NaiveRAG answers one document at a time (several
    /// documents match alike: `quarry_agents::per_document`).
    per_document: Option<f64>,
    seconds_per_q: f64,
    /// Mean seconds from the question to the first streamed token of the answer (what a person waits
    /// before text appears); `None` with --retrieval-only.
    first_token_seconds_per_q: Option<f64>,
    llm_calls_per_q: f64,
    tokens_per_q: f64,
    /// Prompt tokens the embedded model did not process again (shared with its previous call), a question.
    cached_prompt_tokens_per_q: f64,
    /// Questions each agent answered (with `--agent auto`: the router's choices), by agent name.
    answered_by: std::collections::BTreeMap<String, usize>,
    failed: usize,
    #[serde(skip)]
    sums: Sums,
}

#[derive(Debug, Default)]
struct Sums {
    key_fact: Vec<f64>,
    key_fact_single: Vec<f64>,
    cited: Vec<f64>,
    claims: (usize, usize),
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
/// prompt shows of it ([`quarry_agents::answer::passage_excerpts`] with `config`'s limits).
fn as_read(passages: &[Passage], question: &str, config: &AgentConfig) -> Vec<Passage> {
    as_read_with(passages, question, config.passage_chars, config.context_chars, config)
}

/// [`as_read`] with `passage_chars` a passage (a per-document answer's limit) and `context_chars` in all.
fn as_read_with(
    passages: &[Passage],
    question: &str,
    passage_chars: usize,
    context_chars: usize,
    config: &AgentConfig,
) -> Vec<Passage> {
    quarry_agents::answer::passage_excerpts(config.genre.layer(), passages, question, passage_chars, context_chars)
        .into_iter()
        .zip(passages)
        .map(|(text, p)| Passage { text, ..p.clone() })
        .collect()
}

pub fn answers_eval(args: AnswersArgs, data: &DataDir) -> anyhow::Result<()> {
    let agents: Vec<Option<AgentKind>> = args
        .agent
        .split(',')
        .map(|a| match a.trim() {
            "auto" => Ok(None),
            other => other.parse().map(Some).map_err(anyhow::Error::msg),
        })
        .collect::<anyhow::Result<_>>()?;
    anyhow::ensure!(
        ["all", "answerable", "unanswerable"].contains(&args.only.as_str()),
        "--only takes all, answerable or unanswerable, not {:?}",
        args.only
    );
    let set = load_queries(&args.set, None).with_context(|| format!("loading {}", args.set.display()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let paths: Vec<String> = {
        let library = runtime.block_on(Library::open_read(data, &args.library))?;
        library.documents().map(|d| d.path.clone()).collect()
    };
    anyhow::ensure!(!paths.is_empty(), "library {:?} holds no documents: add some with `quarry add`", args.library);
    let mut questions: Vec<Question> = Vec::new();
    for (id, text) in &set.queries {
        let mut relevant: Vec<String> = set.relevant[id].iter().cloned().collect();
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
    questions.retain(|q| match args.only.as_str() {
        "answerable" => q.answerable,
        "unanswerable" => !q.answerable,
        _ => true,
    });
    let questions: Vec<Question> =
        questions.into_iter().skip(args.offset).take(args.limit.unwrap_or(usize::MAX)).collect();
    anyhow::ensure!(
        !questions.is_empty(),
        "no questions of {} fit (library {:?}, --only {})",
        args.set.display(),
        args.library,
        args.only
    );

    let libraries = runtime.block_on(quarry_session::open_libraries(
        data,
        std::slice::from_ref(&args.library),
        SearchMode::Hybrid,
        Some(&args.embedding.cache()),
        args.document_prior,
    ))?;
    let mut trace = match &args.trace {
        Some(path) => Some(std::io::BufWriter::new(
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
        )),
        None => None,
    };
    let bar = indicatif::ProgressBar::new(questions.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} eta {eta}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let config = args.per_document.apply(AgentConfig {
        max_rounds: args.max_rounds.max(1),
        top_k: args.k.max(1),
        search_seconds: quarry_agents::search_budget(args.search_seconds),
        answer_max_tokens: args.answer_tokens.max(16),
        passage_chars: args.passage_chars.max(100),
        context_chars: args.context_chars.max(100),
        quoted_pieces: args.quoted_pieces,
        ..AgentConfig::default()
    });
    if args.retrieval_only {
        bar.set_message("retrieval");
        let mut report = AnswersReport { agent: "retrieval".into(), model: "none".into(), ..AnswersReport::default() };
        for q in &questions {
            let started = std::time::Instant::now();
            let passages = runtime.block_on(libraries[0].retriever.retrieve(&q.text, args.depth.max(args.k)))?;
            // What NaiveRAG reads: a search twice as deep as it reads, the named document's passages first.
            let wider = runtime
                .block_on(libraries[0].retriever.retrieve(&q.text, args.k * quarry_agents::document_match::WIDENING))?;
            // NaiveRAG's own choice of what to read of that search (a decline, one answer per document, or one).
            let reading = quarry_agents::naive_reading(&q.text, &wider, &config);
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
                            as_read_with(
                                document,
                                &q.text,
                                config.document_passage_chars,
                                config.context_chars,
                                &config,
                            )
                        })
                        .collect(),
                ),
                quarry_agents::NaiveReading::Passages(naive) => {
                    let read = as_read(&naive, &q.text, &config);
                    (naive, read)
                }
                quarry_agents::NaiveReading::Decline(_) => (Vec::new(), Vec::new()),
            };
            report.sums.seconds += started.elapsed().as_secs_f64();
            bar.inc(1);
            score_passages(&mut report.sums, q, &read);
            if q.answerable && q.relevant.len() == 1 && !q.figures.is_empty() {
                report
                    .sums
                    .passage_found_deep
                    .push(f64::from(u8::from(answer_passage_position(&passages, &q.relevant, &q.figures).is_some())));
            }
            if let Some(out) = trace.as_mut() {
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
                    "subject": subject,
                    "passages": passages.iter().map(|p| format!("{} | {}", p.path.rsplit('/').next().unwrap_or(""), p.citation())).collect::<Vec<_>>(),
                });
                writeln!(out, "{line}")?;
            }
        }
        bar.finish_and_clear();
        return print_report(finish(report, &args, &set.name, &questions), args.json);
    }

    let recording = match &args.recording {
        Some(path) => {
            let inner = if args.replay_only { None } else { Some(args.llm.load()?) };
            Some(std::sync::Arc::new(quarry_eval::recorded::RecordedModel::open(path, inner)?))
        }
        None => None,
    };
    let model: std::sync::Arc<dyn quarry_core::chat::ChatModel> = match &recording {
        Some(recording) => recording.clone(),
        None => args.llm.load()?,
    };
    let _said = SayReplayed(recording.clone(), args.recording.clone());
    if args.route_only {
        bar.set_message("router");
        let mut report = AnswersReport { agent: "auto".into(), model: model.describe(), ..AnswersReport::default() };
        let info = quarry_agents::LibraryInfo { name: args.library.clone(), description: String::new() };
        for q in &questions {
            let run = quarry_agents::Run::new(
                std::sync::Arc::clone(&model),
                std::sync::Arc::clone(&libraries[0].retriever),
                config.clone(),
                quarry_agents::no_events(),
                CancellationToken::new(),
            );
            let route = runtime.block_on(quarry_agents::route(&run, &q.text, std::slice::from_ref(&info)))?;
            let (calls, usage) = run.stats();
            bar.inc(1);
            *report.answered_by.entry(route.agent.name().to_string()).or_default() += 1;
            report.sums.asked += 1;
            report.sums.seconds += run.seconds();
            report.sums.calls += calls;
            report.sums.tokens += usage.total();
            if let Some(out) = trace.as_mut() {
                let line = serde_json::json!({
                    "qid": q.id, "question": q.text, "relevant": q.relevant,
                    "routed": route.agent.name(), "reason": route.reason, "seconds": run.seconds(),
                });
                writeln!(out, "{line}")?;
                out.flush()?;
            }
        }
        bar.finish_and_clear();
        let report = finish(report, &args, &set.name, &questions);
        if args.json {
            println!("{}", serde_json::to_string(&report)?);
        } else {
            println!(
                "The router chose, for {} questions of {} ({}): {} ({:.1} s a question).",
                report.answered_by.values().sum::<usize>(),
                report.set,
                report.model,
                agent_counts(&report.answered_by),
                report.seconds_per_q
            );
        }
        return Ok(());
    }
    for agent in agents {
        let name = agent.map(|a| a.name()).unwrap_or("auto");
        bar.set_position(0);
        bar.set_message(format!("{name} agent"));
        let mut report = AnswersReport { agent: name.into(), model: model.describe(), ..AnswersReport::default() };
        for q in &questions {
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
            let result = runtime.block_on(quarry_agents::ask(
                &q.text,
                agent,
                std::sync::Arc::clone(&model),
                &libraries,
                config.clone(),
                events,
                CancellationToken::new(),
            ));
            bar.inc(1);
            let answer = match result {
                Ok(answer) => answer,
                Err(e) => {
                    bar.println(format!("{}: {e}", q.id));
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
            let read = as_read(&passages, &q.text, &config);
            let stated = figures(&text);
            let reference_f1 = quarry_eval::qa::token_f1(&text, std::slice::from_ref(&q.reference));
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
            if let Some(out) = trace.as_mut() {
                let line = serde_json::json!({
                    "qid": q.id, "agent": name, "answered_by": answer.agent, "question": q.text, "answerable": q.answerable, "relevant": q.relevant,
                    "reference": q.reference,
                    "reference_figures": q.figures.iter().map(|f| &f.text).collect::<Vec<_>>(),
                    "stated": q.figures.iter().filter(|f| states(&stated, f)).map(|f| &f.text).collect::<Vec<_>>(),
                    "reference_f1": reference_f1, "in_question_language": in_language,
                    "declined": declined, "answer": answer.markdown,
                    "claims": answer.claims, "supported_share": supported_share(&answer.claims),
                    "citation_repairs": answer.citation_repairs,
                    "answer_passage": answer_passage_position(&read, &q.relevant, &q.figures),
                    "sources": answer.sources.iter().map(|c| c.passage.citation()).collect::<Vec<_>>(),
                    "read_text": read.iter().map(|p| &p.text).collect::<Vec<_>>(),
                    "seconds": answer.seconds, "first_token_seconds": first_token.get(), "llm_calls": answer.llm_calls,
                    "prompt_tokens": answer.usage.prompt_tokens, "cached_prompt_tokens": answer.usage.cached_prompt_tokens,
                });
                writeln!(out, "{line}")?;
                out.flush()?; // a run stopped part way keeps every finished question
            }
        }
        print_report(finish(report, &args, &set.name, &questions), args.json)?;
    }
    bar.finish_and_clear();
    Ok(())
}

/// On drop (the run's end, or its error), says on stderr how many calls the recording answered and how
/// many went to the model.
struct SayReplayed(Option<std::sync::Arc<quarry_eval::recorded::RecordedModel>>, Option<PathBuf>);

impl Drop for SayReplayed {
    fn drop(&mut self) {
        if let (Some(recording), Some(path)) = (&self.0, &self.1) {
            let (replayed, called) = recording.replayed_and_called();
            eprintln!("quarry: {replayed} model calls answered from {}, {called} asked of the model", path.display());
        }
    }
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

fn finish(mut report: AnswersReport, args: &AnswersArgs, set: &str, questions: &[Question]) -> AnswersReport {
    let s = &report.sums;
    let n = s.asked.max(1) as f64;
    report.library = args.library.clone();
    report.set = set.to_string();
    report.offset = args.offset;
    report.answerable = questions.iter().filter(|q| q.answerable).count();
    report.unanswerable = questions.len() - report.answerable;
    report.key_fact_score = mean(&s.key_fact);
    report.key_fact_score_single_doc = mean(&s.key_fact_single);
    report.cited_rate = mean(&s.cited);
    report.supported_claim_rate = (s.claims.1 > 0).then(|| s.claims.0 as f64 / s.claims.1 as f64);
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

/// "deep 3, naive 9": questions per agent, by agent name.
fn agent_counts(answered_by: &std::collections::BTreeMap<String, usize>) -> String {
    answered_by.iter().map(|(agent, n)| format!("{agent} {n}")).collect::<Vec<_>>().join(", ")
}

fn print_report(report: AnswersReport, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    let f = |v: Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_else(|| "–".into());
    let failed = if report.failed > 0 { format!(", {} failed", report.failed) } else { String::new() };
    println!(
        "## {} over library {} — {} agent, {} ({} answerable, {} unanswerable questions{failed})\n",
        report.set, report.library, report.agent, report.model, report.answerable, report.unanswerable
    );
    println!("| key facts | key facts, 1 doc | reference F1 | question's language | cited | supported claims | abstention | false decline | relevant document read | figures in passages | answer passage read | answer passage MRR | found @depth | passage chars/q | s/q | first token s/q | calls/q | tokens/q |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    println!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} | {} | {:.1} | {:.0} |\n",
        f(report.key_fact_score),
        f(report.key_fact_score_single_doc),
        f(report.reference_f1),
        f(report.in_question_language),
        f(report.cited_rate),
        f(report.supported_claim_rate),
        f(report.abstention),
        f(report.false_decline),
        f(report.relevant_document_read),
        f(report.figures_in_passages),
        f(report.answer_passage_found),
        f(report.answer_passage_mrr),
        f(report.answer_passage_found_deep),
        report.passage_chars_per_q.map(|v| format!("{v:.0}")).unwrap_or_else(|| "–".into()),
        report.seconds_per_q,
        report.first_token_seconds_per_q.map(|v| format!("{v:.1}")).unwrap_or_else(|| "–".into()),
        report.llm_calls_per_q,
        report.tokens_per_q
    );
    if report.agent == "auto" {
        println!("The router chose: {}.\n", agent_counts(&report.answered_by));
    }
    if let Some(share) = report.per_document {
        println!("NaiveRAG answers {:.0} % of these questions one document at a time.\n", share * 100.0);
    }
    Ok(())
}
