//! The router: picks the agent for a question (and, with several libraries, which to search) with one
//! model call; falls back to DeepSearch over every library when the model's choice cannot be read. It
//! chooses between NaiveRAG and DeepSearch only: ChainOfRAG, measured against both on MuSiQue, HotpotQA
//! and the sec-10-q lookups, led on no kind of question (docs/evaluation/decisions.md, 2026-12-07 (m)),
//! so it runs only when a person asks for it (`--agent chain`). A
//! question whose form shows that it reaches its answer through another thing first
//! ([`multi_hop_form`]) goes to DeepSearch whatever the model says: Qwen2.5-Coder-1.5B chose a lookup
//! for every one of 30 HotpotQA and 30 MuSiQue questions, where DeepSearch answers better.

use crate::events::AgentEvent;
use crate::prompts;
use crate::run::{AgentError, Run};
use crate::structured::{choice, find_json};
use crate::AgentKind;

/// A library the router may choose, with a description of what it holds.
#[derive(Debug, Clone)]
pub struct LibraryInfo {
    /// The library's name.
    pub name: String,
    /// What the library holds (e.g. "14 documents: 10-Q filings, NTSB reports"), for the router prompt.
    pub description: String,
}

/// The router's decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    /// The agent to run.
    pub agent: AgentKind,
    /// Names of the libraries to search (never empty).
    pub libraries: Vec<String>,
    /// How the choice was made (the model's reason, an override, a fallback).
    pub reason: String,
}

/// The names the router prompt gives the agents it chooses between (NaiveRAG, DeepSearch). NaiveRAG is
/// offered as "lookup": named "naive", Qwen2.5-Coder-1.5B chose it for 2 of the 98 shared 10-Q questions,
/// almost all of them lookups in one filing (docs/evaluation/decisions.md, 2026-11-28 (c)).
pub const ROUTE_LABELS: [&str; 2] = ["lookup", "deep"];

/// [`Route::reason`] when [`multi_hop_form`] chose DeepSearch.
pub const MULTI_HOP_REASON: &str = "the question names what it asks about through another thing: deep search";

/// The agents [`ROUTE_LABELS`] name, in the same order.
const ROUTE_AGENTS: [AgentKind; 2] = [AgentKind::Naive, AgentKind::Deep];

/// The names a router reply may give: [`ROUTE_LABELS`], then the agents' own names ([`AgentKind::name`]);
/// entry `i` names `ROUTE_AGENTS[i % 2]`. A reply naming another agent ("chain") is unreadable.
fn route_names() -> Vec<&'static str> {
    ROUTE_LABELS.iter().copied().chain(ROUTE_AGENTS.iter().map(|a| a.name())).collect()
}

/// Whether `question`'s form shows that it needs more than one search: a noun phrase with a relative
/// clause that says which thing is meant ("the band **who released** the album …", "the company
/// **that** bought …"; not "… that is"/"… which was", which describe), or a choice between two named
/// things ("Which … , A **or** B?", "Were A and B **both** …?"). English question forms only; anything
/// else is false. Over the first 30 questions of HotpotQA and of MuSiQue it matched 11 and 17, over
/// the 98 sec-10-q questions none (`scripts/studies/question-forms.py`, docs/evaluation/results.md):
/// it sends only multi-hop questions to DeepSearch, though not all of them.
pub fn multi_hop_form(question: &str) -> bool {
    static PATTERNS: std::sync::OnceLock<[regex::Regex; 2]> = std::sync::OnceLock::new();
    let [relative, choice] = PATTERNS.get_or_init(|| {
        [
            regex::Regex::new(
                r"(?i)\b(?:the|a|an|this|that)\s+(?:[\w'-]+\s+){0,3}?(?:who|which|that|whose|where)\s+(\w+)",
            )
            .expect("valid pattern"),
            regex::Regex::new(
                r"(?i)\b(?:both|either|which\s+(?:one\s+)?(?:of|is|was|has|had|came)|who\s+(?:is|was)\s+(?:older|younger|born\s+first))\b.*\bor\b|\b(?:are|were|is|was)\s+\w.*\band\b.*\bboth\b",
            )
            .expect("valid pattern"),
        ]
    });
    // Every start a relative clause could have, as a backtracking search would try them.
    let clause = (0..question.len()).filter(|&i| question.is_char_boundary(i)).any(|i| {
        relative.captures_at(question, i).is_some_and(|c| {
            let next = c.get(1).map_or("", |m| m.as_str()).to_lowercase();
            !matches!(next.as_str(), "is" | "was" | "are")
        })
    });
    clause || choice.is_match(question)
}

/// Chooses agent and libraries for `question`. `run` supplies the model (its retriever is not used).
pub async fn route(run: &Run, question: &str, libraries: &[LibraryInfo]) -> Result<Route, AgentError> {
    let all: Vec<String> = libraries.iter().map(|l| l.name.clone()).collect();
    let several = libraries.len() > 1;
    let listing = if several {
        let lines: Vec<String> = libraries.iter().map(|l| format!("- {}: {}", l.name, l.description)).collect();
        format!("Libraries:\n{}\nAlso choose the libraries that may hold the answer.\n", lines.join("\n"))
    } else {
        String::new()
    };
    let (clause, field) =
        if several { (" and picks the libraries to search", r#", "libraries": ["name", ...]"#) } else { ("", "") };
    let mut properties = serde_json::json!({ "agent": { "type": "string", "enum": ROUTE_LABELS } });
    if several {
        properties["libraries"] = serde_json::json!({ "type": "array", "items": { "type": "string", "enum": all } });
    }
    let schema = serde_json::json!({ "type": "object", "properties": properties, "required": ["agent"] });
    let request = prompts::ROUTER
        .request(
            &[
                ("question", question),
                ("libraries_clause", clause),
                ("libraries", &listing),
                ("libraries_field", field),
            ],
            64,
        )
        .with_schema(schema);
    let fallback = || Route {
        agent: AgentKind::Deep,
        libraries: all.clone(),
        reason: "fallback: deep search over every library".into(),
    };
    let multi_hop = multi_hop_form(question);
    let route = if multi_hop && !several {
        // With one library there is nothing else to choose: no model call.
        Route { agent: AgentKind::Deep, libraries: all.clone(), reason: MULTI_HOP_REASON.into() }
    } else {
        match run.call_structured(&request, "deep search over every library").await? {
            None => fallback(),
            // The agent's own name is read too: a served model may answer with it.
            Some(text) => match choice(&text, "agent", &route_names()) {
                None => {
                    run.degraded(
                        "router",
                        &format!("no agent named in {:?}", crate::deep_search::excerpt(&text)),
                        "deep search over every library",
                    );
                    fallback()
                }
                Some(i) => {
                    let agent = ROUTE_AGENTS[i % ROUTE_AGENTS.len()];
                    let chosen: Vec<String> = find_json(&text)
                        .and_then(|v| v.get("libraries").and_then(|l| l.as_array()).cloned())
                        .map(|names| {
                            names
                                .iter()
                                .filter_map(|n| n.as_str())
                                .filter(|n| all.iter().any(|a| a == n))
                                .map(str::to_string)
                                .collect()
                        })
                        .unwrap_or_default();
                    let libraries = if chosen.is_empty() { all.clone() } else { chosen };
                    if agent == AgentKind::Naive && multi_hop {
                        Route { agent: AgentKind::Deep, libraries, reason: MULTI_HOP_REASON.into() }
                    } else {
                        Route { agent, libraries, reason: "chosen by the model".into() }
                    }
                }
            },
        }
    };
    run.emit(AgentEvent::Routed {
        agent: route.agent.name().into(),
        libraries: route.libraries.clone(),
        reason: route.reason.clone(),
    });
    Ok(route)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_that_reach_their_answer_through_another_thing_have_a_multi_hop_form() {
        for question in [
            "The band who released the debut album \"Tinted Windows\" had their first performance in what city?",
            "Who was the first president of the association which published Journal of Psychotherapy Integration?",
            "Who was older, George Atzerodt or Andrew Johnson?",
            "Were Scott Derrickson and Ed Wood both American?",
        ] {
            assert!(multi_hop_form(question), "{question}");
        }
        for question in [
            "What was NVIDIA's revenue in the first quarter of fiscal 2024?",
            "How has Apple's total net sales changed over time?",
            "What league, which is also known as the Barclays Premier League, had its start date pushed back?",
            "What are the risks that is mentioned?",
            "英伟达2024财年第一季度的收入是多少？",
            "",
        ] {
            assert!(!multi_hop_form(question), "{question}");
        }
    }

    #[test]
    fn the_prompt_offers_each_agent_by_its_route_label() {
        let request = prompts::ROUTER
            .request(&[("question", "q"), ("libraries_clause", ""), ("libraries", ""), ("libraries_field", "")], 64);
        let system = &request.messages[0].content;
        for label in ROUTE_LABELS {
            assert!(system.contains(&format!("- {label}: ")) && system.contains(&format!("\"{label}\"")), "{system}");
        }
        // "naive" made Qwen2.5-Coder-1.5B avoid NaiveRAG: the prompt never shows the word.
        assert!(!system.to_lowercase().contains("naive"), "{system}");
    }
}
