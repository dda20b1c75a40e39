//! ChainOfRAG, after deep-searcher's chain-of-RAG (itself after Wang et al., "Chain-of-Retrieval Augmented
//! Generation", 2025): one simple follow-up query at a time, retrieval, an intermediate answer that cites
//! the passages supporting it, and an "enough to answer?" check; the final answer is written from the
//! intermediate answers and the passages the steps retrieved.
//!
//! Three choices differ from deep-searcher, all measured (docs/evaluation/agents-qa.md, "ChainOfRAG with Qwen2.5-1.5B"):
//! - The question itself is searched first (no model call) and its hits head the final passages, as
//!   DeepSearch protects the question's own hits: the first follow-up query often asks for one link of
//!   the chain only. Every search reads as DeepSearch's do ([`Run::retrieve_for`]): the passages of the
//!   documents the query, then the question, names first.
//! - The final passages are every search's hits, not only the passages a model call picked as
//!   supporting: with Qwen2.5-1.5B that pick held a supporting passage far less often than the steps'
//!   top hits (supporting-passage Recall@5 0.167 against 0.650 replayed on the same searches). The
//!   supporting passages of a step are the ones its intermediate answer cites, so the step needs no
//!   extra model call.
//! - They are ordered as DeepSearch orders its kept passages: the question's first hits
//!   (`AgentConfig::protected_question_hits`), then by one more search for the question followed by the
//!   intermediate answers ([`crate::deep_search()`]'s ordering search), then the rest merged rank by rank.
//!
//! Like DeepSearch it keeps to [`crate::run::AgentConfig::search_seconds`]: a step that leaves no time
//! for the next (the enough-check, a follow-up query and an intermediate answer, at the mean length of
//! the run's calls so far) is the last.

use crate::answer::{cited_numbers, number_passages, passage_ref, strip_citations, Answer};
use crate::deep_search::{excerpt, interleave_by_rank, order_by_facts};
use crate::events::AgentEvent;
use crate::prompts;
use crate::run::{AgentError, AnswerInputs, Run};
use crate::structured::{boolean_schema, clean, single_line, yes_no};
use quarry_core::Passage;
use std::collections::HashSet;

const NO_INFORMATION: &str = "No relevant information found.";
/// How an intermediate answer that found nothing starts (models add or drop the full stop).
const NO_INFORMATION_START: &str = "No relevant information";

/// Runs ChainOfRAG for `question` (see the module docs). Searches: the question, then one per step.
/// Model calls per step: follow-up query, intermediate answer, enough-check (the last step skips it);
/// plus the answer. Stops at `max_rounds` steps, when the model says the steps are enough, or when a
/// follow-up query repeats an earlier search.
pub async fn chain_of_rag(run: &Run, question: &str) -> Result<Answer, AgentError> {
    let config = run.config.clone();
    let search_started = run.seconds();
    run.emit(AgentEvent::Started { agent: "chain".into(), question: question.into() });
    let mut steps: Vec<(String, String)> = Vec::new();
    let mut seen: HashSet<(String, u64)> = HashSet::new();

    // The question's own search, before any model call: its hits (`rankings[0]`) lead the final passages.
    let mut rankings: Vec<Vec<Passage>> = vec![search(run, 1, question, question, &mut seen).await?];
    let mut asked: Vec<Vec<String>> = vec![vec![question.to_string()]];

    let rounds = config.max_rounds.max(1);
    for round in 1..=rounds {
        let history = render_steps(&steps);
        let request = prompts::FOLLOW_UP.request(&[("question", question), ("steps", &history)], 64);
        let fallback = if round == 1 { "the question as the query" } else { "stop" };
        let query = match run.call_structured(&request, fallback).await? {
            Some(text) => {
                let line = single_line(&text);
                if line.is_none() {
                    run.degraded("follow_up", &format!("no query in {:?}", excerpt(&text)), fallback);
                }
                line
            }
            None => None,
        };
        let repeats = |q: &str| asked.iter().flatten().any(|a| a.eq_ignore_ascii_case(q));
        let query = match query {
            Some(q) if !repeats(&q) => q,
            Some(_) if round > 1 => {
                run.emit(AgentEvent::Stopped { round, reason: "the follow-up query repeats an earlier one".into() });
                break;
            }
            _ if round == 1 => question.to_string(),
            _ => break,
        };
        let passages = if query == question {
            // Round 1 without a usable follow-up: the step works on the question's own hits.
            rankings[0].clone()
        } else {
            if round == 1 {
                asked[0].push(query.clone());
            } else {
                asked.push(vec![query.clone()]);
            }
            let passages = search(run, round, &query, question, &mut seen).await?;
            rankings.push(passages.clone());
            passages
        };

        let (text, used) = number_passages(run.genre(), &passages, &query, config.passage_chars, config.context_chars);
        let request = prompts::INTERMEDIATE_ANSWER.request(&[("query", &query), ("passages", &text)], 160);
        let answer = match run.call_structured(&request, NO_INFORMATION).await? {
            Some(t) if !clean(&t).is_empty() => clean(&t),
            _ => NO_INFORMATION.to_string(),
        };
        let supporting: Vec<&Passage> = cited_numbers(&answer, used).into_iter().map(|n| &passages[n - 1]).collect();
        run.emit(AgentEvent::IntermediateAnswer {
            round,
            query: query.clone(),
            answer: answer.clone(),
            supporting: supporting.into_iter().map(passage_ref).collect(),
        });
        // The step's passage numbers mean nothing to later prompts, which number passages anew.
        steps.push((query, strip_citations(&answer)));
        if round == rounds {
            run.emit(AgentEvent::Stopped { round, reason: "max rounds".into() });
            break;
        }
        if !run.time_for(search_started, 3) {
            run.emit(AgentEvent::Stopped { round, reason: "time budget".into() });
            break;
        }
        let history = render_steps(&steps);
        let request = prompts::ENOUGH
            .request(&[("question", question), ("steps", &history)], 32)
            .with_schema(boolean_schema("enough"));
        let enough = match run.call_structured(&request, "keep searching").await? {
            Some(t) => yes_no(&t, "enough").unwrap_or_else(|| {
                run.degraded("enough", &format!("no yes/no in {:?}", excerpt(&t)), "keep searching");
                false
            }),
            None => false,
        };
        if enough {
            run.emit(AgentEvent::Stopped { round, reason: "enough to answer".into() });
            break;
        }
    }
    let history = render_steps(&steps);
    let protected: Vec<(String, u64)> =
        rankings[0].iter().take(config.protected_question_hits).map(Passage::key).collect();
    let mut passages = distinct(interleave_by_rank(rankings));
    // The intermediate answers name what the question only describes, as DeepSearch's facts do.
    let found: Vec<String> =
        steps.iter().map(|(_, answer)| answer.clone()).filter(|a| !a.starts_with(NO_INFORMATION_START)).collect();
    order_by_facts(run, question, &found, &mut passages, &protected).await?;
    let extra = [("steps", history.as_str())];
    run.write_answer(AnswerInputs {
        agent: "chain",
        prompt: prompts::CHAIN_ANSWER,
        question,
        passages,
        extra: &extra,
        queries: asked,
        retrieved: seen.len(),
    })
    .await
}

/// Searches for `query` as part of `round` of the search for `question` (as DeepSearch searches,
/// [`Run::retrieve_for`]: the documents `query`, then `question`, names first), reporting the query and
/// how many of its hits `seen` (every passage retrieved so far, which this extends) did not hold yet.
async fn search(
    run: &Run,
    round: usize,
    query: &str,
    question: &str,
    seen: &mut HashSet<(String, u64)>,
) -> Result<Vec<Passage>, AgentError> {
    run.emit(AgentEvent::Queries { round, queries: vec![query.to_string()] });
    let passages = run.retrieve_for(query, question).await?;
    let new = passages.iter().filter(|p| seen.insert(p.key())).count();
    run.emit(AgentEvent::Retrieved { round, query: query.to_string(), hits: passages.len(), new });
    Ok(passages)
}

/// `passages` without repeats (by library and chunk id), first occurrence kept.
fn distinct(passages: Vec<Passage>) -> Vec<Passage> {
    let mut seen = HashSet::new();
    passages.into_iter().filter(|p| seen.insert(p.key())).collect()
}

fn render_steps(steps: &[(String, String)]) -> String {
    if steps.is_empty() {
        return "(none yet)".to_string();
    }
    steps
        .iter()
        .enumerate()
        .map(|(i, (q, a))| format!("{}. Query: {q}\n   Answer: {a}", i + 1))
        .collect::<Vec<_>>()
        .join("\n")
}
