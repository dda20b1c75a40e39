//! What every agent run shares: the model, the retriever, settings, the event sink, cancellation, and the
//! count of model calls and tokens.

use crate::answer::{citations_for, number_excerpts_from, passage_excerpts, Answer};
use crate::events::{AgentEvent, EventSink};
use crate::genre::GenreKind;
use crate::prompts::Prompt;
use quarry_core::{ChatError, ChatModel, ChatRequest, ChatResponse, Passage, Retriever, TokenUsage};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// Settings of a research run. Defaults follow deep-searcher where it has one.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Most search rounds (DeepSearch: sub-queries, then gap queries; ChainOfRAG: follow-up steps). Default 3.
    pub max_rounds: usize,
    /// Passages retrieved per query. Default 8.
    pub top_k: usize,
    /// Most sub-queries in DeepSearch's first round. Default 4.
    pub max_sub_queries: usize,
    /// Most gap queries per reflection. Default 3.
    pub max_gap_queries: usize,
    /// Passages judged per relevance call. Default 6.
    pub relevance_batch: usize,
    /// DeepSearch keeps this many of the best passages that the search for the whole question returns
    /// without asking the relevance judge (0: every passage is judged). Default 3.
    pub protected_question_hits: usize,
    /// Characters of each passage shown to the relevance judge and the reflection. Default 600.
    pub judge_chars: usize,
    /// Most characters of one passage in an answer prompt (its sentences and table rows chosen toward
    /// the question by `answer::passage_excerpts`). Default 500.
    pub passage_chars: usize,
    /// Characters of passage excerpts in one answer prompt, shared among its passages (each keeps its
    /// best piece; the rest go to the pieces sharing most words with the question). Default 3,000: against
    /// 700 a passage and no shared limit, the sec-10-q single-document slice with Qwen2.5-Coder-1.5B on 2
    /// cores took 40.5 s a question instead of 56.4 s (1,517 tokens instead of 2,027) and stated no fewer
    /// reference figures (0.424 vs 0.354), while NaiveRAG's reading of the whole set kept the answer
    /// passage for the same 38 of 45 questions (docs/evaluation/decisions.md, 2026-11-26 (e)). 4,000 stated 6 more of 164
    /// single-document figures, all six in one question, for 12 % more prompt tokens (2026-12-02 (e)).
    pub context_chars: usize,
    /// When several documents match a question alike (the same company's filings, no period named),
    /// NaiveRAG answers from each of at most this many of them in turn ([`crate::per_document`]); 1 turns
    /// that off. Default 4.
    pub max_documents_per_answer: usize,
    /// Fewest passages each document reads when NaiveRAG answers per document (each document's call
    /// reads its own share of `top_k`, but no fewer than this). Default 2 (the share of 8 among four
    /// documents).
    pub passages_per_document: usize,
    /// Passages each document's call reads when DeepSearch answers a question several documents match
    /// alike ([`crate::document_plan`]): the document's best passage of the question's search, then those
    /// its own sub-question's search ranks first. Default 3.
    pub deep_passages_per_document: usize,
    /// Most characters of one passage in a per-document answer's prompt ([`crate::per_document`]; its
    /// excerpts share `context_chars` as NaiveRAG's do). Default 500, as `passage_chars`.
    pub document_passage_chars: usize,
    /// Most tokens of the final answer. Default 800.
    pub answer_max_tokens: u32,
    /// Which queries the web (an always-searched source) receives: by default only the person's
    /// question, never a query the model wrote from document passages (`crate::web_gate`).
    pub web_queries: crate::web_gate::WebQueryPolicy,
    /// Under [`crate::web_gate::WebQueryPolicy::Ask`], who approves each query the model wrote (the app);
    /// `None` withholds them.
    pub web_query_approver: Option<crate::web_gate::QueryApprover>,
    /// Whether a person typed the question (the CLI, the app): then the web may receive it under every
    /// policy. False when another program's model wrote it (an MCP host): the question is then a
    /// model-written query like any other, sent only under [`crate::web_gate::WebQueryPolicy::All`] or
    /// when approved. Default true.
    pub question_typed_by_person: bool,
    /// Seconds one DeepSearch or ChainOfRAG search may take before the answer is written; `None`: no
    /// limit. The search starts no model call that would, at the mean length of this run's calls so far,
    /// end after it ([`Run::time_for`]); it always makes its first relevance or intermediate-answer call.
    /// Default 50: on 2 cores with Qwen2.5-Coder-1.5B a 10-Q answer call takes 25–35 s, so search and
    /// answer end within the 90 s a person is asked to wait; a served model's calls take a second or two
    /// and rarely reach it (docs/evaluation/decisions.md, 2026-11-28 (d)).
    pub search_seconds: Option<f64>,
    /// Most sentences or table rows of the passages read quoted under the model's answer (under each
    /// document's line of a per-document answer), those that answer the question and whose figures the
    /// answer leaves out ([`crate::genre::financial::key_quote`]); 0 quotes nothing. Default 2: over the 98 sec-10-q
    /// questions with Qwen2.5-Coder-1.5B one quote raised the key-fact score from 0.453 to 0.498, the
    /// model's words unchanged (docs/evaluation/decisions.md, 2026-12-02 (b)); over the 63 single-document ones, two
    /// quotes from the whole passages stated 70 reference figures of 164 where one stated 67, three 70
    /// (docs/evaluation/decisions.md, 2026-12-02 (d)).
    pub quoted_pieces: usize,
    /// The genre layer the answer pipeline consults ([`crate::genre`]): what a prompt shows of a
    /// passage, the quote under an answer, the line items the claim check reads. Default
    /// [`GenreKind::Auto`]: chosen per run from the documents its first search found
    /// ([`crate::genre::resolve`]); [`GenreKind::General`] runs the pipeline with no genre knowledge.
    pub genre: GenreKind,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            max_rounds: 3,
            top_k: 8,
            max_sub_queries: 4,
            max_gap_queries: 3,
            relevance_batch: 6,
            protected_question_hits: 3,
            judge_chars: 600,
            passage_chars: 500,
            context_chars: 3000,
            max_documents_per_answer: 4,
            passages_per_document: 2,
            deep_passages_per_document: 3,
            document_passage_chars: 500,
            answer_max_tokens: 800,
            web_queries: crate::web_gate::WebQueryPolicy::Question,
            web_query_approver: None,
            question_typed_by_person: true,
            search_seconds: Some(DEFAULT_SEARCH_SECONDS),
            quoted_pieces: 2,
            genre: GenreKind::Auto,
        }
    }
}

/// [`AgentConfig::search_seconds`]'s default.
pub const DEFAULT_SEARCH_SECONDS: f64 = 50.0;

/// [`AgentConfig::search_seconds`] from a command-line value: 0 (or less) for no limit.
pub fn search_budget(seconds: f64) -> Option<f64> {
    (seconds > 0.0 && seconds.is_finite()).then_some(seconds)
}

/// Whether `calls` more model calls of `mean_call` seconds each, after `elapsed` seconds of a search,
/// end within `budget` seconds.
pub fn fits_budget(elapsed: f64, mean_call: f64, calls: usize, budget: f64) -> bool {
    elapsed + mean_call * calls as f64 <= budget
}

/// Why a run failed. Malformed model output never gets here: it degrades the step instead.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The person stopped the run.
    #[error("cancelled")]
    Cancelled,
    /// The model failed on a step that cannot be skipped (writing the answer).
    #[error("{step}: {source}")]
    Model {
        /// The step (`answer`, …).
        step: String,
        /// The model's error.
        source: ChatError,
    },
    /// Searching a library failed.
    #[error("retrieval: {0}")]
    Retrieval(String),
    /// Every library asked holds no document yet (their names); nothing was searched and the model was
    /// not called.
    #[error("{}", nothing_to_search_message(.0))]
    NothingToSearch(Vec<String>),
}

/// "library \"notes\" holds no documents yet: …" for the names of the empty libraries asked.
fn nothing_to_search_message(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    match quoted.as_slice() {
        [one] => format!("library {one} holds no documents yet: add files to it, then ask again"),
        _ => format!("libraries {} hold no documents yet: add files to them, then ask again", quoted.join(", ")),
    }
}

impl quarry_core::Coded for AgentError {
    fn code(&self) -> quarry_core::ErrorCode {
        match self {
            AgentError::Cancelled => quarry_core::ErrorCode::Cancelled,
            AgentError::Model { source, .. } => quarry_core::Coded::code(source),
            AgentError::Retrieval(_) | AgentError::NothingToSearch(_) => quarry_core::ErrorCode::Other,
        }
    }
}

/// One research run in progress.
pub struct Run {
    /// The model every step calls.
    pub model: Arc<dyn ChatModel>,
    /// What the run searches (the chosen libraries, and the web when on).
    pub retriever: Arc<dyn Retriever>,
    /// Limits: rounds, passages, tokens.
    pub config: AgentConfig,
    events: EventSink,
    cancel: CancellationToken,
    stats: Mutex<(usize, TokenUsage)>,
    /// Seconds of all model calls so far (wall clock, or as recorded for a replayed call).
    model_seconds: Mutex<f64>,
    /// Seconds replayed calls stood for beyond the time their replay took
    /// ([`quarry_core::ChatResponse::recorded_ms`]), which [`Run::seconds`] counts.
    replayed_extra: Mutex<f64>,
    started: Instant,
    /// [`AgentConfig::genre`] once resolved ([`crate::genre::resolve`], at the first search that finds a
    /// passage).
    genre: tokio::sync::OnceCell<GenreKind>,
}

/// What the final answer is written from ([`Run::write_answer`]).
pub struct AnswerInputs<'a> {
    /// The agent's name, as the answer and traces record it ("naive", "deep", "chain").
    pub agent: &'a str,
    /// The answer prompt: placeholders `passages`, `question` and those of `extra`.
    pub prompt: Prompt,
    /// The person's question.
    pub question: &'a str,
    /// The passages the answer is written from, best first (numbered from 1 in the prompt).
    pub passages: Vec<Passage>,
    /// Further placeholders of `prompt`, as (name, value).
    pub extra: &'a [(&'a str, &'a str)],
    /// The searches run, one list per round, as the answer records them.
    pub queries: Vec<Vec<String>>,
    /// How many passages the searches returned, as the answer records it.
    pub retrieved: usize,
}

/// Where [`Run::quote_under`] may quote from.
#[derive(Debug, Clone, Copy)]
pub struct QuoteSources<'a> {
    /// The passages the answer was written from, numbered from `first` as the answer cites them.
    pub read: &'a [Passage],
    /// The number of `read[0]`.
    pub first: usize,
    /// Further passages of the same documents that the model did not read (search order); a quote
    /// from one of them cites it by a number from `further_first` on, which the caller then adds to the
    /// answer's passages ([`QuoteLine::further_quoted`]).
    pub further: &'a [Passage],
    /// The number the first further passage quoted gets: after every passage the answer's prompts
    /// numbered, so no prompt changes.
    pub further_first: usize,
    /// The rest of a document, beyond the search's candidates (its order), taken after `further` and
    /// numbered after it: only a table row whose label names what the question asks for is quoted from
    /// these ([`crate::genre::Genre::key_quotes`]'s `rows_only`), not a sentence that shares words with it.
    pub rows_only: &'a [Passage],
}

impl<'a> QuoteSources<'a> {
    /// Only the passages read, numbered from `first`.
    pub fn read(read: &'a [Passage], first: usize) -> Self {
        QuoteSources { read, first, further: &[], further_first: first + read.len(), rows_only: &[] }
    }
}

/// A quote [`Run::quote_under`] wrote under an answer.
#[derive(Debug, Clone)]
pub struct QuoteLine {
    /// The text streamed: the separator, then `From the passages: “…” [n]`.
    pub text: String,
    /// The further passages it quotes, in order of the numbers it cites them by (from
    /// [`QuoteSources::further_first`]); the caller appends them to the answer's passages in this order.
    pub further_quoted: Vec<Passage>,
}

impl Run {
    /// A run starting now, reporting to `events`, stopped by `cancel`.
    pub fn new(
        model: Arc<dyn ChatModel>,
        retriever: Arc<dyn Retriever>,
        config: AgentConfig,
        events: EventSink,
        cancel: CancellationToken,
    ) -> Self {
        Run {
            model,
            retriever,
            config,
            events,
            cancel,
            stats: Mutex::new((0, TokenUsage::default())),
            model_seconds: Mutex::new(0.0),
            replayed_extra: Mutex::new(0.0),
            started: Instant::now(),
            genre: tokio::sync::OnceCell::new(),
        }
    }

    /// Reports `event`.
    pub fn emit(&self, event: AgentEvent) {
        (self.events)(event);
    }

    /// Model calls and tokens so far.
    pub fn stats(&self) -> (usize, TokenUsage) {
        *self.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The genre layer of this run ([`Run::genre_kind`]).
    pub fn genre(&self) -> &'static dyn crate::genre::Genre {
        self.genre_kind().layer()
    }

    /// The genre this run reads its passages as: [`AgentConfig::genre`], or for
    /// [`GenreKind::Auto`] the genre resolved at the run's first search that found a passage
    /// ([`crate::genre::resolve`]; [`GenreKind::General`] before it).
    pub fn genre_kind(&self) -> GenreKind {
        match self.config.genre {
            GenreKind::Auto => self.genre.get().copied().unwrap_or(GenreKind::General),
            chosen => chosen,
        }
    }

    /// Seconds since the run started, a replayed model call counted as long as it took when recorded.
    pub fn seconds(&self) -> f64 {
        self.started.elapsed().as_secs_f64() + *self.replayed_extra.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Mean wall-clock seconds of this run's model calls so far; `None` before the first.
    pub fn mean_call_seconds(&self) -> Option<f64> {
        let (calls, _) = self.stats();
        let seconds = *self.model_seconds.lock().unwrap_or_else(|e| e.into_inner());
        (calls > 0).then(|| seconds / calls as f64)
    }

    /// Whether a search that started at `search_started` (seconds of [`Run::seconds`]) has time for
    /// `calls` more model calls under [`AgentConfig::search_seconds`]: now + `calls` × the mean call so
    /// far ≤ the budget. Always true without a budget; before any call, true while the budget lasts.
    pub fn time_for(&self, search_started: f64, calls: usize) -> bool {
        match self.config.search_seconds {
            None => true,
            Some(budget) => {
                fits_budget(self.seconds() - search_started, self.mean_call_seconds().unwrap_or(0.0), calls, budget)
            }
        }
    }

    /// Errors: [`AgentError::Cancelled`] once the person stopped the run.
    pub fn check_cancelled(&self) -> Result<(), AgentError> {
        if self.cancel.is_cancelled() {
            Err(AgentError::Cancelled)
        } else {
            Ok(())
        }
    }

    /// One model call; cancellation interrupts it. With `stream`, text goes out as
    /// [`AgentEvent::AnswerDelta`] events as it is generated.
    pub async fn call(&self, request: &ChatRequest, stream: bool) -> Result<ChatResponse, AgentError> {
        self.check_cancelled()?;
        let started = Instant::now();
        let events = Arc::clone(&self.events);
        // A streamed answer caught in a loop of lines alike is stopped ([`crate::answer::loop_runs_on`]);
        // `finish_answer` then cuts the loop to its first lines.
        let streamed = Mutex::new(String::new());
        let looped = std::sync::atomic::AtomicBool::new(false);
        let sink = |text: &str| {
            events(AgentEvent::AnswerDelta { text: text.to_string() });
            let mut so_far = streamed.lock().unwrap_or_else(|e| e.into_inner());
            so_far.push_str(text);
            if text.contains('\n') && crate::answer::loop_runs_on(&so_far) {
                looped.store(true, std::sync::atomic::Ordering::Relaxed);
                return std::ops::ControlFlow::Break(());
            }
            std::ops::ControlFlow::Continue(())
        };
        let on_text: quarry_core::TokenSink<'_> = &sink;
        let on_text = stream.then_some(on_text);
        let result = tokio::select! {
            _ = self.cancel.cancelled() => return Err(AgentError::Cancelled),
            result = self.model.complete(request, on_text) => result,
        };
        let response = match result {
            Ok(response) => response,
            Err(ChatError::Cancelled) => return Err(AgentError::Cancelled),
            Err(source) => return Err(AgentError::Model { step: request.step.clone(), source }),
        };
        let elapsed = started.elapsed().as_secs_f64();
        // A replayed call counts as long as it took when recorded, so a time budget binds as it did then.
        let seconds = match response.recorded_ms {
            Some(ms) => {
                let recorded = ms as f64 / 1000.0;
                *self.replayed_extra.lock().unwrap_or_else(|e| e.into_inner()) += recorded - elapsed;
                recorded
            }
            None => elapsed,
        };
        if looped.load(std::sync::atomic::Ordering::Relaxed) {
            self.degraded(
                &request.step,
                &format!(
                    "the model was writing lines alike over and over ({} or more)",
                    crate::answer::LOOP_STOP_LINES
                ),
                "stopped there",
            );
        }
        {
            let mut stats = self.stats.lock().unwrap_or_else(|e| e.into_inner());
            stats.0 += 1;
            stats.1.add(response.usage);
            *self.model_seconds.lock().unwrap_or_else(|e| e.into_inner()) += seconds;
        }
        self.emit(AgentEvent::LlmCall {
            step: request.step.clone(),
            prompt_tokens: response.usage.prompt_tokens,
            completion_tokens: response.usage.completion_tokens,
            seconds,
        });
        Ok(response)
    }

    /// A structured step: the model's text, or `None` (with a [`AgentEvent::Degraded`] event) when the
    /// model failed; cancellation still ends the run.
    pub async fn call_structured(&self, request: &ChatRequest, fallback: &str) -> Result<Option<String>, AgentError> {
        match self.call(request, false).await {
            Ok(response) => Ok(Some(response.text)),
            Err(AgentError::Model { step, source }) => {
                self.degraded(&step, &source.to_string(), fallback);
                Ok(None)
            }
            Err(other) => Err(other),
        }
    }

    /// Reports that `step`'s output could not be used (`problem`) and the run goes on with `fallback`.
    pub fn degraded(&self, step: &str, problem: &str, fallback: &str) {
        self.emit(AgentEvent::Degraded {
            step: step.to_string(),
            problem: problem.to_string(),
            fallback: fallback.to_string(),
        });
    }

    /// The `top_k` best passages for `query`; cancellation interrupts the search.
    pub async fn retrieve(&self, query: &str) -> Result<Vec<Passage>, AgentError> {
        self.retrieve_top(query, self.config.top_k).await
    }

    /// The `top_k` passages an agent reads for `query`, a search or sub-query of `question`: a search
    /// [`crate::document_match::WIDENING`] × `top_k` deep, the passages of the documents `query` names
    /// first, then of those `question` names ([`crate::document_match::select_for_query`]). With
    /// `query` = `question` this is NaiveRAG's reading of the question.
    pub async fn retrieve_for(&self, query: &str, question: &str) -> Result<Vec<Passage>, AgentError> {
        let found = self.retrieve_top(query, self.config.top_k * crate::document_match::WIDENING).await?;
        Ok(crate::document_match::select_for_query(query, question, found, self.config.top_k))
    }

    /// The `k` best passages for `query`; cancellation interrupts the search. The run's first search that
    /// finds a passage also settles its genre under [`GenreKind::Auto`] ([`Run::genre_kind`]).
    pub async fn retrieve_top(&self, query: &str, k: usize) -> Result<Vec<Passage>, AgentError> {
        self.check_cancelled()?;
        let passages = tokio::select! {
            _ = self.cancel.cancelled() => Err(AgentError::Cancelled),
            result = self.retriever.retrieve(query, k) => result.map_err(|e| AgentError::Retrieval(e.to_string())),
        }?;
        if self.config.genre == GenreKind::Auto && !passages.is_empty() && !self.genre.initialized() {
            let resolving =
                self.genre.get_or_init(|| crate::genre::resolve(GenreKind::Auto, self.retriever.as_ref(), &passages));
            tokio::select! {
                _ = self.cancel.cancelled() => return Err(AgentError::Cancelled),
                _ = resolving => {}
            }
        }
        Ok(passages)
    }

    /// The passages of `passage`'s document, in the document's order ([`Retriever::document_passages`]),
    /// less those in `read` or `further`; empty when the retriever cannot list it. A quote is a help, not
    /// the answer: a failed read is reported as a degraded step and the answer goes on without it.
    /// Errors: [`AgentError::Cancelled`] only (cancellation interrupts the read).
    pub async fn rest_of_document(
        &self,
        passage: &Passage,
        read: &[Passage],
        further: &[Passage],
    ) -> Result<Vec<Passage>, AgentError> {
        self.check_cancelled()?;
        let whole = tokio::select! {
            _ = self.cancel.cancelled() => return Err(AgentError::Cancelled),
            result = self.retriever.document_passages(&passage.library, &passage.document_id) => result,
        };
        let whole = whole.unwrap_or_else(|e| {
            self.degraded("quote", &e.to_string(), "the search's candidates only");
            Vec::new()
        });
        Ok(whole.into_iter().filter(|p| !read.iter().chain(further).any(|r| r.key() == p.key())).collect())
    }

    /// Writes the final answer from `inputs.passages` with `inputs.prompt` (placeholders `passages`,
    /// `question` and `inputs.extra`), streaming it. With no passages, no model is asked: the answer says
    /// the library holds nothing on the question.
    pub async fn write_answer(&self, inputs: AnswerInputs<'_>) -> Result<Answer, AgentError> {
        self.write_answer_quoting(inputs, &[], None).await
    }

    /// [`Run::write_answer`], with the quote under the model's words chosen from `further` passages too
    /// (passages of the same documents the model did not read, [`QuoteSources::further`]) and, when
    /// `rest_of` names a passage and the model's answer states no amount of its own, from the rest of
    /// that passage's document ([`QuoteSources::rows_only`], read then: [`Run::rest_of_document`]). A
    /// further passage quoted is numbered after the passages read and joins the answer's sources, so its
    /// marker opens it and the claim check reads it.
    pub async fn write_answer_quoting(
        &self,
        inputs: AnswerInputs<'_>,
        further: &[Passage],
        rest_of: Option<&Passage>,
    ) -> Result<Answer, AgentError> {
        let AnswerInputs { agent, prompt, question, passages, extra, queries, retrieved } = inputs;
        let mut further_quoted: Vec<Passage> = Vec::new();
        let nothing_found = passages.is_empty();
        // The excerpts the prompt shows.
        let excerpts =
            passage_excerpts(self.genre(), &passages, question, self.config.passage_chars, self.config.context_chars);
        let text = number_excerpts_from(1, &passages, &excerpts);
        let passages: Vec<Passage> = passages.into_iter().take(excerpts.len()).collect();
        // Quarry's own lines speak the question's language (Chinese or English).
        let chinese = quarry_core::is_mostly_cjk(question);
        let markdown = if nothing_found {
            let text = if chinese {
                format!("资料库中没有找到与这个问题相关的段落，无法根据你的文档回答：{question}")
            } else {
                format!("The library does not contain passages relevant to this question, so it cannot be answered from your documents: {question}")
            };
            self.emit(AgentEvent::AnswerDelta { text: text.clone() });
            text
        } else {
            let language = crate::prompts::in_question_language(question);
            let mut values: Vec<(&str, &str)> =
                vec![("passages", &text), ("question", question), ("in_question_language", &language)];
            values.extend_from_slice(extra);
            let mut request = prompt.request(&values, self.config.answer_max_tokens);
            request.step = "answer".into();
            let text = self.call(&request, true).await?.text.trim().to_string();
            let empty = if crate::answer::says_nothing(&text) {
                Some("the model wrote only citation markers")
            } else if crate::answer::repeats_question(&text, question) {
                Some("the model repeated the question")
            } else {
                None
            };
            match empty.and_then(|why| Some((why, crate::answer::closest_piece(&passages, question, 400)?))) {
                // An answer of citation markers alone, or the question repeated: the person reads the
                // passage closest to the question, quoted as such, instead.
                Some((why, (number, piece))) => {
                    self.degraded("answer", why, "the passage closest to the question, quoted");
                    if chinese {
                        format!("模型没有根据找到的段落写出回答。与问题最接近的段落写道：“{piece}” [{number}]")
                    } else {
                        format!("The model wrote no answer from the passages found. The passage closest to the question says: “{piece}” [{number}]")
                    }
                }
                None => {
                    // The model's words first, then the filing's own, quoted and cited. The rest of the
                    // document is read only when the genre may quote from it (by default, under an answer
                    // that states no amount).
                    let rest = match rest_of {
                        Some(named) if self.genre().quotes_from_rest_of_document(question, &text) => {
                            self.rest_of_document(named, &passages, further).await?
                        }
                        _ => Vec::new(),
                    };
                    let sources = QuoteSources {
                        read: &passages,
                        first: 1,
                        further,
                        further_first: passages.len() + 1,
                        rows_only: &rest,
                    };
                    match self.quote_under(question, &text, sources, "\n\n") {
                        Some(quote) => {
                            further_quoted = quote.further_quoted;
                            format!("{text}{}", quote.text)
                        }
                        None => text,
                    }
                }
            }
        };
        let mut passages = passages;
        passages.extend(further_quoted);
        Ok(self.finish_answer(agent, question, markdown, passages, queries, retrieved, nothing_found))
    }

    /// The quote under `answer` to `question`, streamed and returned: `separator` then
    /// `From the passages: “…” [n]` ([`crate::genre::render_quotes`]) with at most
    /// [`AgentConfig::quoted_pieces`] pieces ([`crate::genre::Genre::key_quotes`]) of `sources` — the passages
    /// the answer was written from, then any further ones of the same documents, each whole
    /// ([`crate::genre::Genre::quotable_text`]); a piece of a passage read ranks before an equal one of a
    /// further passage. `None` (nothing emitted) when no piece is to be quoted. The one place NaiveRAG's
    /// answer, each per-document line and the per-document fallback get their quote.
    pub fn quote_under(
        &self,
        question: &str,
        answer: &str,
        sources: QuoteSources<'_>,
        separator: &str,
    ) -> Option<QuoteLine> {
        let QuoteSources { read, first, further, further_first, rows_only } = sources;
        let genre = self.genre();
        // Borrowed, not copied: `rows_only` may be the rest of a whole filing; only a passage quoted is cloned.
        let unread: Vec<&Passage> = further.iter().chain(rows_only).collect();
        // A further passage is numbered `further_first + its index` (the rest of the document after the
        // candidates) while the quotes are chosen, then renumbered in the order the quotes cite them, so
        // the numbers the answer gains have no gaps.
        let numbered_passages: Vec<(usize, &Passage)> = read
            .iter()
            .enumerate()
            .map(|(i, p)| (first + i, p))
            .chain(unread.iter().enumerate().map(|(j, p)| (further_first + j, *p)))
            .collect();
        let texts: Vec<String> = numbered_passages.iter().map(|(_, p)| genre.quotable_text(p)).collect();
        let numbered_texts: Vec<(usize, &str)> =
            numbered_passages.iter().zip(&texts).map(|((number, _), text)| (*number, text.as_str())).collect();
        // Passages read and further ones are candidates; the rest of the document (`rows_only`) gives rows.
        let (candidates, rows) = numbered_texts.split_at(read.len() + further.len());
        // Which passage is the chunk right after which, in their document (by the library's chunk order).
        let follows: Vec<(usize, usize)> = numbered_passages
            .iter()
            .filter_map(|(next, p)| {
                let index = p.chunk_index?.checked_sub(1)?;
                let (previous, _) =
                    numbered_passages.iter().find(|(_, q)| q.chunk_index == Some(index) && q.same_document(p))?;
                Some((*next, *previous))
            })
            .collect();
        let mut quotes = genre.key_quotes(question, answer, candidates, rows, &follows, self.config.quoted_pieces);
        if quotes.is_empty() {
            return None;
        }
        let mut further_quoted: Vec<(usize, Passage)> = Vec::new();
        // A further passage's number as the answer will cite it: in the order quotes first cite them.
        let mut renumber = |number: usize| -> usize {
            if number < further_first || unread.is_empty() {
                return number;
            }
            let index = number - further_first;
            let place = match further_quoted.iter().position(|(j, _)| *j == index) {
                Some(place) => place,
                None => {
                    further_quoted.push((index, Passage::clone(unread[index])));
                    further_quoted.len() - 1
                }
            };
            further_first + place
        };
        for quote in &mut quotes {
            // A split table's first rows come first in the quote, so their passage is numbered first.
            quote.parts_from = quote.parts_from.map(&mut renumber);
            quote.number = renumber(quote.number);
        }
        let chinese = quarry_core::is_mostly_cjk(question);
        let text = format!("{separator}{}", crate::genre::render_quotes(&quotes, chinese));
        self.emit(AgentEvent::AnswerDelta { text: text.clone() });
        Some(QuoteLine { text, further_quoted: further_quoted.into_iter().map(|(_, p)| p).collect() })
    }

    /// Model-written `markdown` from `passages` (numbered from 1, as its prompt numbered them) made fit to
    /// read: the passage headers it copied made markers ([`crate::answer::replace_copied_headers`]), a
    /// loop of lines alike cut ([`crate::answer::cut_repeated_lines`], reported as a degraded step), the
    /// numbers it changed in words copied from a passage put back ([`crate::copied::restore_copied_figures`],
    /// reported likewise), a table row's label given back where it copied the row's cells without it
    /// ([`crate::copied::restore_row_labels`]), its citation markers in one form ([`crate::answer::canonical_markers`]), and a
    /// citation whose figures are in another passage moved there ([`crate::claims::repair_citations`]).
    /// Returns the text and the repairs. Every answer ([`Run::finish_answer`]) and every section of a
    /// report goes through it.
    pub fn finish_text(&self, markdown: &str, passages: &[Passage]) -> (String, Vec<crate::answer::CitationRepair>) {
        let markdown = crate::answer::replace_copied_headers(markdown, passages);
        // A loop the model wrote is cut to its first lines, and the person told so.
        let (markdown, cut) = crate::answer::cut_repeated_lines(&markdown);
        if cut > 0 {
            self.degraded(
                "answer",
                &format!("the model wrote {cut} more lines alike (a loop)"),
                "its first lines kept, the rest left out",
            );
        }
        // A number changed in words the model copied is the passage's again, and the person told so.
        let (markdown, restored) = crate::copied::restore_copied_figures(&markdown, passages);
        if !restored.is_empty() {
            let changes: Vec<String> =
                restored.iter().map(|r| format!("{} for {} [{}]", r.written, r.passage_says, r.passage)).collect();
            self.degraded(
                "answer",
                &format!("the model changed figures in words it copied from a passage: {}", changes.join(", ")),
                "the passages' figures put back",
            );
        }
        // A row's cells copied without its label get the label back: "7% (…); 6% (…)" alone says nothing
        // of what the 7% is.
        let (markdown, _) = crate::copied::restore_row_labels(&markdown, passages);
        let markdown = crate::answer::canonical_markers(&markdown, passages.len());
        let (_, sources) = citations_for(&markdown, passages);
        // A figure cited to a passage that does not hold it is re-cited to the one that does. A repair can
        // put a number next to the same one ("[3][2]" → "[2][2]"): one form again.
        let (repaired, repairs) = crate::claims::repair_citations(&markdown, &sources);
        (crate::answer::canonical_markers(&repaired, passages.len()), repairs)
    }

    /// The [`Answer`] made of `markdown`, written from `passages` (numbered from 1, as its prompt numbered
    /// them): finished as [`Run::finish_text`] finishes it, each sentence gets its claim check, the cited documents'
    /// periods are named when the answer does not ([`crate::answer::cited_periods_note`]), and the run's model calls,
    /// tokens and seconds are recorded. Emits [`AgentEvent::Finished`]. `nothing_found` skips the repair
    /// and the check (no model wrote the text).
    #[allow(clippy::too_many_arguments)]
    pub fn finish_answer(
        &self,
        agent: &str,
        question: &str,
        markdown: String,
        passages: Vec<Passage>,
        queries: Vec<Vec<String>>,
        retrieved: usize,
        nothing_found: bool,
    ) -> Answer {
        let (markdown, citation_repairs) =
            if nothing_found { (markdown, Vec::new()) } else { self.finish_text(&markdown, &passages) };
        let (citations, sources) = citations_for(&markdown, &passages);
        let claims =
            if nothing_found { Vec::new() } else { crate::claims::check_claims(&markdown, &sources, self.genre()) };
        // Quarry's own line naming the cited documents' periods, after the claim check (it is no claim of
        // the model's); streamed too, so the person reads what the answer holds.
        let chinese = quarry_core::is_mostly_cjk(question);
        let markdown = match crate::answer::cited_periods_note(&markdown, &citations, chinese) {
            Some(note) if !nothing_found => {
                self.emit(AgentEvent::AnswerDelta { text: format!("\n\n{note}") });
                format!("{markdown}\n\n{note}")
            }
            _ => markdown,
        };
        let (llm_calls, usage) = self.stats();
        let seconds = self.seconds();
        self.emit(AgentEvent::Finished { llm_calls, usage, seconds });
        Answer {
            question: question.to_string(),
            agent: agent.to_string(),
            markdown,
            citations,
            sources,
            queries,
            retrieved,
            kept: passages.len(),
            llm_calls,
            usage,
            seconds,
            model: self.model.describe(),
            libraries: Vec::new(),
            nothing_found,
            claims,
            web_queries: Vec::new(),
            citation_repairs,
            markers: Vec::new(),
            genre: self.genre_kind().name().to_string(),
        }
        .with_markers()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model whose every answer is a replay of a call that took 40 s when recorded.
    struct Replayed;

    #[async_trait::async_trait]
    impl ChatModel for Replayed {
        fn describe(&self) -> String {
            "replayed".into()
        }
        async fn complete(
            &self,
            _: &ChatRequest,
            _: Option<quarry_core::TokenSink<'_>>,
        ) -> Result<ChatResponse, ChatError> {
            Ok(ChatResponse { text: "{}".into(), usage: TokenUsage::default(), recorded_ms: Some(40_000) })
        }
    }

    /// Finds nothing.
    struct Empty;

    #[async_trait::async_trait]
    impl Retriever for Empty {
        async fn retrieve(&self, _: &str, _: usize) -> Result<Vec<Passage>, quarry_core::RetrievalError> {
            Ok(Vec::new())
        }
    }

    #[tokio::test]
    async fn a_replayed_call_counts_as_long_as_it_took_when_recorded() {
        let config = AgentConfig { search_seconds: Some(50.0), ..AgentConfig::default() };
        let run = Run::new(Arc::new(Replayed), Arc::new(Empty), config, crate::no_events(), CancellationToken::new());
        assert!(run.time_for(0.0, 1), "before any call, the budget lasts");
        run.call(&ChatRequest::new("relevance", "system", "user", 8), false).await.unwrap();
        assert!(run.seconds() >= 40.0, "{}", run.seconds());
        assert_eq!(run.mean_call_seconds(), Some(40.0));
        // 40 s spent and a 40 s call to come do not fit 50 s: the search stops as it did when recorded.
        assert!(!run.time_for(0.0, 1));
    }

    #[test]
    fn a_call_fits_the_budget_when_it_would_end_within_it_at_the_mean_call_length() {
        assert!(fits_budget(20.0, 15.0, 2, 50.0));
        assert!(!fits_budget(21.0, 15.0, 2, 50.0));
        assert!(fits_budget(49.0, 0.0, 3, 50.0), "before any call only the elapsed time counts");
        assert!(!fits_budget(0.001, 0.0, 1, 0.0));
        assert_eq!(search_budget(0.0), None);
        assert_eq!(search_budget(-1.0), None);
        assert_eq!(search_budget(f64::INFINITY), None);
        assert_eq!(search_budget(50.0), Some(50.0));
    }
}
