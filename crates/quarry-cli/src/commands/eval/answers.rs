//! `quarry eval answers`: is the answer a person reads right? The run and its scores are
//! [`quarry_eval::answers_run`]; this module reads the arguments, opens the library and the model, and
//! prints. An agent answers a question set over a
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
use quarry_agents::AgentConfig;
use quarry_eval::answers_run::{
    answer_all, report_all, retrieval_only, route_only, select_questions, AnswersProgress, AnswersReport, Only,
    RunSetup,
};
use quarry_eval::retrieval::load_queries;
use quarry_store::{DataDir, Library, SearchMode};
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
    /// Write each answerable question up as a long-form research report with `quarry report`'s defaults
    /// (instead of answering it with `--agent`) and score the reports: key facts anywhere in the report,
    /// the sections' cited sentences, supported claims and repeated sentences
    /// (`quarry_eval::answers_run::report_all`).
    #[arg(long, conflicts_with_all = ["retrieval_only", "route_only"])]
    pub report: bool,
    /// With --report: score the sections as the model wrote them, without the finishing an answer gets
    /// (citation repair, repeated sentences dropped): what finishing does, measured on one recording.
    #[arg(long, requires = "report")]
    pub sections_as_written: bool,
    /// With --retrieval-only: how deep to look for the answer passage's rank.
    #[arg(long, default_value_t = 40)]
    pub depth: usize,
    /// Most search rounds (deep, chain; default 3), or DeepSearch rounds a report section searches
    /// (with --report; default `quarry report`'s).
    #[arg(long)]
    pub max_rounds: Option<usize>,
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
    /// prompts go to the model (`quarry_eval::recorded`). A replayed call counts as long as it took when recorded, so a search
    /// under a time budget stops where it stopped and seconds are the recorded run's.
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

pub fn answers_eval(args: AnswersArgs, data: &DataDir) -> anyhow::Result<()> {
    let agents = super::parse_agents(&args.agent)?;
    let only: Only = args.only.parse().map_err(anyhow::Error::msg)?;
    let set = load_queries(&args.set, None).with_context(|| format!("loading {}", args.set.display()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let paths: Vec<String> = {
        let library = runtime.block_on(Library::open_read(data, &args.library))?;
        library.documents().map(|d| d.path.clone()).collect()
    };
    anyhow::ensure!(!paths.is_empty(), "library {:?} holds no documents: add some with `quarry add`", args.library);
    let questions: Vec<_> = select_questions(&set, &paths, only)
        .into_iter()
        .skip(args.offset)
        .take(args.limit.unwrap_or(usize::MAX))
        .collect();
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
        max_rounds: args.max_rounds.unwrap_or(3).max(1),
        top_k: args.k.max(1),
        search_seconds: quarry_agents::search_budget(args.search_seconds),
        answer_max_tokens: args.answer_tokens.max(16),
        passage_chars: args.passage_chars.max(100),
        context_chars: args.context_chars.max(100),
        quoted_pieces: args.quoted_pieces,
        ..AgentConfig::default()
    });
    // A report is written as `quarry report` writes it, whatever the answer flags say.
    let config = if args.report {
        AgentConfig {
            max_rounds: args.max_rounds.unwrap_or(quarry_agents::REPORT_ROUNDS).max(1),
            top_k: quarry_agents::REPORT_TOP_K,
            search_seconds: quarry_agents::search_budget(args.search_seconds),
            ..AgentConfig::default()
        }
    } else {
        config
    };
    let setup = RunSetup { set: &set.name, library: &args.library, offset: args.offset, config: &config };
    // Reports print as they come (the router's as one line); the first printing error is kept.
    let mut printed: anyhow::Result<()> = Ok(());
    let route = args.route_only;
    let as_reports = args.report;
    let mut progress = |step: AnswersProgress<'_>| match step {
        AnswersProgress::Started(message) => {
            bar.set_position(0);
            bar.set_message(message);
        }
        AnswersProgress::Asked => bar.inc(1),
        // A hidden bar (stderr not a terminal) prints nothing: the failure still goes to stderr.
        AnswersProgress::Failed { qid, error } if bar.is_hidden() => eprintln!("{qid}: {error}"),
        AnswersProgress::Failed { qid, error } => bar.println(format!("{qid}: {error}")),
        AnswersProgress::Report(report) => {
            if printed.is_ok() {
                printed = bar.suspend(|| match (route, as_reports) {
                    (true, _) => print_route(report, args.json),
                    (_, true) => print_reports(report, args.json),
                    _ => print_report(report, args.json),
                });
            }
        }
    };
    let trace_out = trace.as_mut().map(|t| t as &mut dyn std::io::Write);
    if args.retrieval_only {
        runtime.block_on(retrieval_only(&setup, &questions, &libraries[0], args.depth, trace_out, &mut progress))?;
        bar.finish_and_clear();
        return printed;
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
    if as_reports {
        let research =
            quarry_agents::ResearchConfig { finish_sections: !args.sections_as_written, ..Default::default() };
        runtime.block_on(report_all(&setup, &questions, &libraries, model, research, trace_out, &mut progress))?;
    } else if route {
        runtime.block_on(route_only(&setup, &questions, &libraries[0], model, trace_out, &mut progress))?;
    } else {
        runtime.block_on(answer_all(&setup, &questions, &libraries, model, &agents, trace_out, &mut progress))?;
    }
    bar.finish_and_clear();
    printed
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

/// "deep 3, naive 9": questions per agent, by agent name.
fn agent_counts(answered_by: &std::collections::BTreeMap<String, usize>) -> String {
    answered_by.iter().map(|(agent, n)| format!("{agent} {n}")).collect::<Vec<_>>().join(", ")
}

/// A score to three decimals, or "–" where it does not apply.
fn score(value: Option<f64>) -> String {
    value.map(|v| format!("{v:.3}")).unwrap_or_else(|| "–".into())
}

/// ", N failed" after a report's question counts, or nothing when none failed.
fn failed_note(report: &AnswersReport) -> String {
    if report.failed > 0 {
        format!(", {} failed", report.failed)
    } else {
        String::new()
    }
}

fn print_report(report: &AnswersReport, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(report)?);
        return Ok(());
    }
    let f = score;
    let failed = failed_note(report);
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

/// The reports' scores ([`report_all`]): a JSON line with `--json`, else a Markdown table.
fn print_reports(report: &AnswersReport, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(report)?);
        return Ok(());
    }
    let f = score;
    let failed = failed_note(report);
    println!(
        "## {} over library {} — reports, {} ({} answerable questions{failed})\n",
        report.set, report.library, report.model, report.answerable
    );
    println!("| key facts | cited sentences | supported claims | repeated sentences | relevant document read | figures in passages | s/report | calls/report | tokens/report |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    println!(
        "| {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.0} |\n",
        f(report.key_fact_score),
        f(report.cited_sentence_rate),
        f(report.supported_claim_rate),
        f(report.repeated_sentence_rate),
        f(report.relevant_document_read),
        f(report.figures_in_passages),
        report.seconds_per_q,
        report.llm_calls_per_q,
        report.tokens_per_q
    );
    Ok(())
}

/// The router's report: a JSON line with `--json`, else one sentence with its choices.
fn print_route(report: &AnswersReport, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(report)?);
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
    Ok(())
}
