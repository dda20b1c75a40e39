//! The router: picks the agent for a question (and, with several libraries, which to search) with one
//! model call; falls back to DeepSearch over every library when the model's choice cannot be read.

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

/// The names the router prompt gives the agents, in [`AgentKind`] order (naive, deep, chain). NaiveRAG is
/// offered as "lookup": named "naive", Qwen2.5-Coder-1.5B chose it for 2 of the 98 shared 10-Q questions,
/// almost all of them lookups in one filing (docs/evaluation/decisions.md, 2026-11-28 (c)).
pub const ROUTE_LABELS: [&str; 3] = ["lookup", "deep", "chain"];

/// The agents [`ROUTE_LABELS`] name, in the same order.
const ROUTE_AGENTS: [AgentKind; 3] = [AgentKind::Naive, AgentKind::Deep, AgentKind::Chain];

/// The names a router reply may give: [`ROUTE_LABELS`], then the agents' own names ([`AgentKind::name`]);
/// entry `i` names `ROUTE_AGENTS[i % 3]`.
fn route_names() -> Vec<&'static str> {
    ROUTE_LABELS.iter().copied().chain(ROUTE_AGENTS.iter().map(|a| a.name())).collect()
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
    let route = match run.call_structured(&request, "deep search over every library").await? {
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
                Route { agent, libraries, reason: "chosen by the model".into() }
            }
        },
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
