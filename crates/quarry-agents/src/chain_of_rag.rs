//! ChainOfRAG, after deep-searcher's chain-of-RAG (itself after Wang et al., "Chain-of-Retrieval Augmented
//! Generation", 2025): one simple follow-up query at a time, retrieval, an intermediate answer, the
//! passages that support it, and an "enough to answer?" check; the final answer is written from the
//! intermediate answers and their supporting passages.

use crate::answer::{number_passages, passage_ref, Answer};
use crate::deep_search::excerpt;
use crate::events::AgentEvent;
use crate::prompts;
use crate::run::{AgentError, Run};
use crate::structured::{boolean_schema, number_list, numbers_schema, single_line, yes_no};
use quarry_core::Passage;
use std::collections::HashSet;

const NO_INFORMATION: &str = "No relevant information found.";

/// Runs ChainOfRAG for `question` (see the module docs). Model calls per step: follow-up query,
/// intermediate answer, supporting passages, enough-check (the last step skips it); plus the answer.
pub async fn chain_of_rag(run: &Run, question: &str) -> Result<Answer, AgentError> {
    let config = run.config.clone();
    run.emit(AgentEvent::Started { agent: "chain".into(), question: question.into() });
    let mut steps: Vec<(String, String)> = Vec::new();
    let mut asked: Vec<Vec<String>> = Vec::new();
    let mut supporting_all: Vec<Passage> = Vec::new();
    let mut seen: HashSet<(String, u64)> = HashSet::new();
    let mut retrieved = 0;
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
        let query = match query {
            Some(q) if !asked.iter().flatten().any(|a| a.eq_ignore_ascii_case(&q)) => q,
            Some(_) if round > 1 => {
                run.emit(AgentEvent::Stopped { round, reason: "the follow-up query repeats an earlier one".into() });
                break;
            }
            _ if round == 1 => question.to_string(),
            _ => break,
        };
        run.emit(AgentEvent::Queries { round, queries: vec![query.clone()] });
        asked.push(vec![query.clone()]);
        let passages = run.retrieve(&query).await?;
        let new = passages.iter().filter(|p| seen.insert(p.key())).count();
        retrieved += new;
        run.emit(AgentEvent::Retrieved { round, query: query.clone(), hits: passages.len(), new });

        let (text, used) = number_passages(&passages, config.passage_chars, config.context_chars);
        let request = prompts::INTERMEDIATE_ANSWER.request(&[("query", &query), ("passages", &text)], 160);
        let answer = match run.call_structured(&request, NO_INFORMATION).await? {
            Some(t) if !crate::structured::clean(&t).is_empty() => crate::structured::clean(&t),
            _ => NO_INFORMATION.to_string(),
        };
        let supporting: Vec<Passage> = if answer.starts_with("No relevant information") || used == 0 {
            Vec::new()
        } else {
            let request = prompts::SUPPORTING_PASSAGES
                .request(&[("query", &query), ("answer", &answer), ("passages", &text)], 96)
                .with_schema(numbers_schema("supporting"));
            let numbers = match run.call_structured(&request, "the top 3 passages").await? {
                Some(t) => number_list(&t, "supporting", used).unwrap_or_else(|| {
                    run.degraded("supporting_passages", &format!("no passage numbers in {:?}", excerpt(&t)), "the top 3 passages");
                    (1..=used.min(3)).collect()
                }),
                None => (1..=used.min(3)).collect(),
            };
            numbers.into_iter().map(|n| passages[n - 1].clone()).collect()
        };
        run.emit(AgentEvent::IntermediateAnswer {
            round,
            query: query.clone(),
            answer: answer.clone(),
            supporting: supporting.iter().map(passage_ref).collect(),
        });
        for p in supporting {
            if !supporting_all.iter().any(|s| s.key() == p.key()) {
                supporting_all.push(p);
            }
        }
        steps.push((query, answer));
        if round == rounds {
            run.emit(AgentEvent::Stopped { round, reason: "max rounds".into() });
            break;
        }
        let history = render_steps(&steps);
        let request = prompts::ENOUGH.request(&[("question", question), ("steps", &history)], 32).with_schema(boolean_schema("enough"));
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
    run.write_answer("chain", prompts::CHAIN_ANSWER, question, supporting_all, &[("steps", &history)], asked, retrieved).await
}

fn render_steps(steps: &[(String, String)]) -> String {
    if steps.is_empty() {
        return "(none yet)".to_string();
    }
    steps.iter().enumerate().map(|(i, (q, a))| format!("{}. Query: {q}\n   Answer: {a}", i + 1)).collect::<Vec<_>>().join("\n")
}
