//! Long-form research reports, after LangChain's open_deep_research: plan sections from a first
//! retrieval pass, research each section with DeepSearch, write each section from its own evidence with
//! citations, review it once (pass, or follow-up searches and one rewrite), then write the introduction
//! and conclusion from the sections, and finish each section as an answer is finished (citations
//! repaired by figures) without the sentences an earlier one already said. The result renders as one
//! Markdown report whose citation numbers run across the whole report.
//!
//! Model calls: 1 (plan) + per section [DeepSearch's search calls + 1 (write) + 1 (review) + 1 if revised]
//! + 2 (introduction, conclusion).

use crate::answer::{number_passages, pieces, strip_citations, Citation, Piece};
use crate::deep_search::{deep_search_evidence, excerpt};
use crate::events::AgentEvent;
use crate::prompts;
use crate::report::{
    demote_headings, escape_html, escape_inline, link_citations, neutralise_links, one_line, write_also_read,
    write_cost, write_source, write_title, write_unsupported, ReportOptions,
};
use crate::run::{AgentError, Run};
use crate::structured::{find_json, string_list, yes_no};
use quarry_core::{Passage, TokenUsage};
use serde::Serialize;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

/// DeepSearch rounds a section searches by default (`quarry report --max-rounds`).
pub const REPORT_ROUNDS: usize = 2;

/// Passages retrieved per query by default in a report (`quarry report -k`).
pub const REPORT_TOP_K: usize = 8;

/// Settings of a long-form report.
#[derive(Debug, Clone, Copy)]
pub struct ResearchConfig {
    /// Most sections the plan may have (default 4).
    pub max_sections: usize,
    /// Most follow-up queries a section review may ask for (default 2).
    pub max_review_queries: usize,
    /// Most tokens of one section (default 700).
    pub section_max_tokens: u32,
    /// Finish each section as an answer is finished and drop what an earlier sentence said (default
    /// true); false keeps the sections as the model wrote them, to measure what finishing does.
    pub finish_sections: bool,
}

impl Default for ResearchConfig {
    fn default() -> Self {
        ResearchConfig { max_sections: 4, max_review_queries: 2, section_max_tokens: 700, finish_sections: true }
    }
}

/// One finished section.
#[derive(Debug, Clone, Serialize)]
pub struct ReportSection {
    /// Its heading.
    pub title: String,
    /// What the section had to find out (from the plan).
    pub focus: String,
    /// Markdown; `[n]` refer to the report's [`ResearchReport::sources`].
    pub markdown: String,
    /// Queries run for it: DeepSearch's rounds, then the review's follow-ups (if any).
    pub queries: Vec<Vec<String>>,
    /// True when the review asked for more and the section was rewritten.
    pub revised: bool,
    /// Sentences left out because they said again what the report had said before
    /// ([`crate::answer::drop_repeated_sentences`]).
    pub repeats_dropped: usize,
    /// The claim check of `markdown` against the report's sources ([`crate::claims::check_claims`]):
    /// one verdict per claim, in order; the rendered report lists the unsupported ones under the section.
    pub claims: Vec<crate::answer::ClaimCheck>,
}

/// A section's text when every sentence the model wrote for it said again what the sections before it
/// said.
/// Phrased as a decline ([`crate::text::is_decline`]), so the claim check does not take it for a claim.
pub const NOTHING_NEW: &str = "The passages found for this section do not state anything beyond the sections above.";

/// A finished long-form report.
#[derive(Debug, Clone, Serialize)]
pub struct ResearchReport {
    /// The topic as asked.
    pub topic: String,
    /// The opening paragraph (Markdown).
    pub introduction: String,
    /// The sections, in the plan's order.
    pub sections: Vec<ReportSection>,
    /// The closing paragraph (Markdown).
    pub conclusion: String,
    /// Every passage a section was written from, numbered across the report (each passage once).
    pub sources: Vec<Citation>,
    /// The numbers cited somewhere in the sections, ascending.
    pub cited: Vec<usize>,
    /// Model calls made.
    pub llm_calls: usize,
    /// Tokens they consumed.
    pub usage: TokenUsage,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// The model that wrote it.
    pub model: String,
    /// The libraries searched (set by [`crate::research_report`]).
    pub libraries: Vec<String>,
    /// The genre layer the sections were written with (`general`, `financial`: [`Run::genre_kind`]).
    pub genre: String,
}

/// A planned section.
#[derive(Debug, Clone, PartialEq)]
struct Plan {
    title: String,
    focus: String,
}

/// Writes a long-form report on `topic` over `run`'s retriever (see the module docs). Emits
/// [`AgentEvent::Section`] as each section moves through its stages.
///
/// Errors: cancellation, retrieval failures, and the model failing on a writing step; planning and
/// review degrade instead (one section on the whole topic; a section that passes).
pub async fn write_research_report(
    run: &Run,
    topic: &str,
    config: ResearchConfig,
) -> Result<ResearchReport, AgentError> {
    run.emit(AgentEvent::Started { agent: "report".into(), question: topic.into() });

    // 1. Plan from a first retrieval pass.
    let first = run.retrieve(topic).await?;
    let plan = plan_sections(run, topic, &first, config.max_sections.max(1)).await?;
    let count = plan.len();
    for (i, section) in plan.iter().enumerate() {
        run.emit(AgentEvent::Section { index: i + 1, count, title: section.title.clone(), stage: "planned".into() });
    }

    // 2. Research, write and review each section: its draft and the passages its prompt held.
    let mut drafts: Vec<(ReportSection, Vec<Passage>)> = Vec::new();
    for (i, section) in plan.iter().enumerate() {
        let progress = |stage: &str| {
            run.emit(AgentEvent::Section { index: i + 1, count, title: section.title.clone(), stage: stage.into() })
        };
        progress("research");
        let question = format!("{topic}: {}", section.focus);
        let evidence = deep_search_evidence(run, &question).await?;
        let mut passages = evidence.kept;
        let mut queries = evidence.queries;
        progress("write");
        let (mut draft, mut used) = write_section(run, topic, section, &passages, config).await?;
        progress("review");
        let follow_ups = review_section(run, topic, section, &draft, config.max_review_queries).await?;
        let mut revised = false;
        if !follow_ups.is_empty() {
            progress("revise");
            run.emit(AgentEvent::Queries { round: queries.len() + 1, queries: follow_ups.clone() });
            let seen: HashSet<(String, u64)> = passages.iter().map(Passage::key).collect();
            let found = futures::future::join_all(follow_ups.iter().map(|q| run.retrieve(q))).await;
            let mut added = Vec::new();
            for (query, result) in follow_ups.iter().zip(found) {
                let hits = result?;
                let new: Vec<Passage> = hits
                    .iter()
                    .filter(|p| !seen.contains(&p.key()) && !added.iter().any(|a: &Passage| a.key() == p.key()))
                    .cloned()
                    .collect();
                run.emit(AgentEvent::Retrieved {
                    round: queries.len() + 1,
                    query: query.clone(),
                    hits: hits.len(),
                    new: new.len(),
                });
                added.extend(new);
            }
            queries.push(follow_ups);
            if !added.is_empty() {
                // The section's best passages first, then what the follow-ups found.
                passages.extend(added);
                (draft, used) = write_section(run, topic, section, &passages, config).await?;
                revised = true;
            }
        }
        progress("done");
        let section = ReportSection {
            title: section.title.clone(),
            focus: section.focus.clone(),
            markdown: draft,
            queries,
            revised,
            repeats_dropped: 0,
            claims: Vec::new(),
        };
        drafts.push((section, passages[..used].to_vec()));
    }

    // 3. Introduction and conclusion from the sections as written.
    let digest = drafts
        .iter()
        .map(|(s, _)| s)
        .map(|s| format!("## {}\n{}", s.title, excerpt_chars(&strip_citations(&s.markdown), 1500)))
        .collect::<Vec<_>>()
        .join("\n\n");
    let frame = |prompt: prompts::Prompt, stage: &'static str| {
        let digest = &digest;
        async move {
            run.emit(AgentEvent::Section { index: 0, count, title: stage.into(), stage: "write".into() });
            let request = prompt.request(&[("topic", topic), ("sections", digest)], 400);
            Ok::<String, AgentError>(strip_citations(&run.call(&request, false).await?.text))
        }
    };
    let introduction = frame(prompts::REPORT_INTRODUCTION, "introduction").await?;
    let conclusion = frame(prompts::REPORT_CONCLUSION, "conclusion").await?;

    // 4. Each section finished as an answer is (copied headers, loops, citations moved to the passage
    // that holds their figures; [`Run::finish_text`]), without what an earlier section or sentence
    // already said ([`crate::answer::drop_repeated_sentences`]), its markers numbered across the report.
    // After the framing, which summarises the sections as written, so that a report recorded once is
    // finished again without a model call.
    let mut registry = SourceRegistry::default();
    let mut said = Vec::new();
    let mut sections = Vec::with_capacity(drafts.len());
    for (mut section, passages) in drafts {
        if !config.finish_sections {
            section.markdown = registry.renumber(&section.markdown, &passages);
            section.claims = crate::claims::check_claims(&section.markdown, &registry.sources, run.genre());
            sections.push(section);
            continue;
        }
        let draft = without_title_heading(&section.markdown, &section.title);
        let (finished, _) = run.finish_text(&draft, &passages);
        let (mut finished, dropped) = crate::answer::drop_repeated_sentences(&finished, &mut said);
        if strip_citations(&finished).trim().is_empty() {
            finished = NOTHING_NEW.to_string();
        }
        section.markdown = registry.renumber(&finished, &passages);
        section.repeats_dropped = dropped;
        // Its claims against every source so far: its markers are report-wide now.
        section.claims = crate::claims::check_claims(&section.markdown, &registry.sources, run.genre());
        sections.push(section);
    }

    let (llm_calls, usage) = run.stats();
    let seconds = run.seconds();
    run.emit(AgentEvent::Finished { llm_calls, usage, seconds });
    let cited = registry.cited.iter().copied().collect::<std::collections::BTreeSet<_>>().into_iter().collect();
    Ok(ResearchReport {
        topic: topic.to_string(),
        introduction,
        sections,
        conclusion,
        sources: registry.sources,
        cited,
        llm_calls,
        usage,
        seconds,
        model: run.model.describe(),
        libraries: Vec::new(),
        genre: run.genre_kind().name().to_string(),
    })
}

async fn plan_sections(run: &Run, topic: &str, first: &[Passage], max: usize) -> Result<Vec<Plan>, AgentError> {
    let fallback = || vec![Plan { title: topic.to_string(), focus: topic.to_string() }];
    let (text, _) = number_passages(run.genre(), first, topic, run.config.judge_chars, run.config.context_chars);
    let max_text = max.to_string();
    let schema = serde_json::json!({
        "type": "object",
        "properties": { "sections": { "type": "array", "maxItems": max, "items": {
            "type": "object",
            "properties": { "title": { "type": "string" }, "focus": { "type": "string" } },
            "required": ["title", "focus"] } } },
        "required": ["sections"]
    });
    let request = prompts::REPORT_PLAN
        .request(&[("topic", topic), ("passages", &text), ("max", &max_text)], 400)
        .with_schema(schema);
    let Some(output) = run.call_structured(&request, "one section on the whole topic").await? else {
        return Ok(fallback());
    };
    let plan = parse_plan(&output, max);
    if plan.is_empty() {
        run.degraded(
            "report_plan",
            &format!("no sections in {:?}", excerpt(&output)),
            "one section on the whole topic",
        );
        return Ok(fallback());
    }
    Ok(plan)
}

/// Sections from `{"sections": [{"title", "focus"}]}`, a bare array of such objects, or a list of titles
/// (JSON strings or bulleted lines). Duplicate titles are dropped; at most `max`.
fn parse_plan(output: &str, max: usize) -> Vec<Plan> {
    let mut plan: Vec<Plan> = Vec::new();
    let items: Option<Vec<Value>> = find_json(output).and_then(|v| match v {
        Value::Array(items) => Some(items),
        Value::Object(map) => map.get("sections").and_then(Value::as_array).cloned(),
        _ => None,
    });
    let candidates: Vec<Plan> = match items {
        Some(items) => items
            .iter()
            .filter_map(|item| match item {
                Value::String(title) => Some(Plan { title: title.clone(), focus: title.clone() }),
                Value::Object(map) => {
                    let title = map.get("title").and_then(Value::as_str)?.to_string();
                    let focus = map
                        .get("focus")
                        .and_then(Value::as_str)
                        .filter(|f| !f.trim().is_empty())
                        .unwrap_or(&title)
                        .to_string();
                    Some(Plan { title, focus })
                }
                _ => None,
            })
            .collect(),
        None => string_list(output, "sections", max)
            .unwrap_or_default()
            .into_iter()
            .map(|t| Plan { title: t.clone(), focus: t })
            .collect(),
    };
    for candidate in candidates {
        let title = one_line(&candidate.title).trim().trim_matches(['#', '*', '"']).trim().to_string();
        if !title.is_empty() && !plan.iter().any(|p| p.title.eq_ignore_ascii_case(&title)) && plan.len() < max {
            let focus = if candidate.focus == candidate.title { title.clone() } else { one_line(&candidate.focus) };
            plan.push(Plan { title, focus });
        }
    }
    plan
}

/// The section's text from `passages`, and how many passages the prompt held (its `[n]` refer to them).
async fn write_section(
    run: &Run,
    topic: &str,
    section: &Plan,
    passages: &[Passage],
    config: ResearchConfig,
) -> Result<(String, usize), AgentError> {
    if passages.is_empty() {
        return Ok(("The documents hold no passage on this part of the topic.".into(), 0));
    }
    let (text, used) =
        number_passages(run.genre(), passages, &section.focus, run.config.passage_chars, run.config.context_chars);
    let mut request = prompts::REPORT_SECTION.request(
        &[("topic", topic), ("section", &section.title), ("focus", &section.focus), ("passages", &text)],
        config.section_max_tokens,
    );
    request.step = "report_section".into();
    Ok((run.call(&request, false).await?.text.trim().to_string(), used))
}

/// The review's follow-up queries; empty when the section passes (or the review is unusable).
async fn review_section(
    run: &Run,
    topic: &str,
    section: &Plan,
    draft: &str,
    max: usize,
) -> Result<Vec<String>, AgentError> {
    if max == 0 {
        return Ok(Vec::new());
    }
    let max_text = max.to_string();
    let schema = serde_json::json!({
        "type": "object",
        "properties": { "pass": { "type": "boolean" }, "queries": { "type": "array", "items": { "type": "string" }, "maxItems": max } },
        "required": ["pass", "queries"]
    });
    let request = prompts::REPORT_REVIEW
        .request(
            &[
                ("topic", topic),
                ("section", &section.title),
                ("focus", &section.focus),
                ("draft", draft),
                ("max", &max_text),
            ],
            200,
        )
        .with_schema(schema);
    let Some(output) = run.call_structured(&request, "keep the section as written").await? else {
        return Ok(Vec::new());
    };
    let queries = string_list(&output, "queries", max).unwrap_or_default();
    match yes_no(&output, "pass") {
        Some(true) => Ok(Vec::new()),
        Some(false) => Ok(queries),
        None if !queries.is_empty() => Ok(queries),
        None => {
            run.degraded(
                "report_review",
                &format!("no verdict in {:?}", excerpt(&output)),
                "keep the section as written",
            );
            Ok(Vec::new())
        }
    }
}

/// The report's sources: each passage once, numbered in order of first use across sections.
#[derive(Default)]
struct SourceRegistry {
    sources: Vec<Citation>,
    numbers: HashMap<(String, u64), usize>,
    cited: Vec<usize>,
}

impl SourceRegistry {
    /// `markdown` with its section-local `[n]` (1-based into `passages`) replaced by report-wide numbers;
    /// registers every passage (cited or not). Markers outside `1..=passages.len()` are dropped.
    fn renumber(&mut self, markdown: &str, passages: &[Passage]) -> String {
        let global: Vec<usize> = passages
            .iter()
            .map(|p| {
                *self.numbers.entry(p.key()).or_insert_with(|| {
                    self.sources.push(Citation { number: self.sources.len() + 1, passage: p.clone() });
                    self.sources.len()
                })
            })
            .collect();
        let mut out = String::with_capacity(markdown.len());
        for piece in pieces(markdown) {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Marker { numbers, .. } => {
                    for n in numbers.into_iter().filter(|n| (1..=global.len()).contains(n)) {
                        let g = global[n - 1];
                        let _ = write!(out, "[{g}]");
                        self.cited.push(g);
                    }
                }
            }
        }
        out
    }
}

/// `markdown` without a first line that is a heading repeating the section's `title` (any level,
/// emphasis and case aside): the report writes the title itself, and small models repeat it although
/// the prompt asks them not to.
fn without_title_heading(markdown: &str, title: &str) -> String {
    let plain = |s: &str| s.trim().trim_matches(['#', '*', ' ', ':']).trim().to_lowercase();
    let mut lines = markdown.trim_start().splitn(2, '\n');
    match (lines.next(), lines.next()) {
        (Some(first), rest) if crate::text::heading_level(first).is_some() && plain(first) == plain(title) => {
            rest.unwrap_or("").trim_start().to_string()
        }
        _ => markdown.to_string(),
    }
}

fn excerpt_chars(text: &str, max: usize) -> String {
    let mut out: String = text.chars().take(max).collect();
    if text.chars().count() > max {
        out.push('…');
    }
    out
}

/// The report as CommonMark: title, date, Introduction, one `##` per section (citations linked to the
/// sources), Conclusion, Sources (cited passages quoted; uncited ones listed), Method. Text from
/// documents and from the model is escaped as in [`crate::render_report`].
pub fn render_research_report(report: &ResearchReport, options: &ReportOptions) -> String {
    let mut out = String::new();
    write_title(&mut out, options, &report.topic);
    let body = |markdown: &str| {
        link_citations(&demote_headings(&escape_html(&neutralise_links(markdown))), &report.cited).trim().to_string()
    };
    out.push_str("## Introduction\n\n");
    let _ = writeln!(out, "{}\n", body(&report.introduction));
    for section in &report.sections {
        let _ = writeln!(out, "## {}\n", escape_inline(&one_line(&section.title)));
        let _ = writeln!(out, "{}\n", body(&section.markdown));
        write_unsupported(&mut out, &section.claims);
    }
    out.push_str("## Conclusion\n\n");
    let _ = writeln!(out, "{}\n", body(&report.conclusion));

    out.push_str("## Sources\n\n");
    if report.cited.is_empty() {
        out.push_str("The sections cite no passage.\n\n");
    }
    for source in report.sources.iter().filter(|s| report.cited.contains(&s.number)) {
        write_source(&mut out, source, options.link_base.as_deref());
    }
    let uncited: Vec<&Citation> = report.sources.iter().filter(|s| !report.cited.contains(&s.number)).collect();
    write_also_read(&mut out, &uncited, "the sections were", options.link_base.as_deref());

    out.push_str("## Method\n\n");
    let libraries = if report.libraries.is_empty() {
        "—".to_string()
    } else {
        report.libraries.iter().map(|l| escape_inline(l)).collect::<Vec<_>>().join(", ")
    };
    out.push_str("- **Agent:** long-form report (plan, DeepSearch per section, one review per section)\n");
    let _ = writeln!(out, "- **Libraries:** {libraries}");
    let _ = writeln!(out, "- **Model:** {}", escape_inline(&report.model));
    let _ = writeln!(out, "- **Passages:** {} used, {} cited", report.sources.len(), report.cited.len());
    write_cost(&mut out, report.llm_calls, &report.usage, report.seconds);
    out.push_str("- **Sections:**\n");
    for section in &report.sections {
        let revised = if section.revised { ", revised after review" } else { "" };
        let _ = writeln!(
            out,
            "  - {} — focus: {}{revised}",
            escape_inline(&one_line(&section.title)),
            escape_inline(&one_line(&section.focus))
        );
        for (i, round) in section.queries.iter().enumerate() {
            let list =
                round.iter().map(|q| format!("“{}”", escape_inline(&one_line(q)))).collect::<Vec<_>>().join("; ");
            let _ = writeln!(out, "    - round {}: {list}", i + 1);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_heading_repeating_the_section_title_goes() {
        let title = "Historical Net Sales";
        assert_eq!(
            without_title_heading("### Historical Net Sales\n\n#### Overview\nSales rose.", title),
            "#### Overview\nSales rose."
        );
        assert_eq!(
            without_title_heading("**historical net sales:**\nSales rose.", title),
            "**historical net sales:**\nSales rose."
        );
        assert_eq!(without_title_heading("#### Overview\nSales rose.", title), "#### Overview\nSales rose.");
        assert_eq!(without_title_heading("## Historical Net Sales", title), "");
    }

    #[test]
    fn plans_are_read_from_objects_arrays_and_lists() {
        let plan = parse_plan(
            r###"{"sections": [{"title": "Revenue", "focus": "quarterly revenue"}, {"title": "revenue"}, {"title": "## Risks"}]}"###,
            4,
        );
        assert_eq!(
            plan,
            vec![
                Plan { title: "Revenue".into(), focus: "quarterly revenue".into() },
                Plan { title: "Risks".into(), focus: "Risks".into() }
            ]
        );
        assert_eq!(parse_plan(r#"["A", "B", "C"]"#, 2).len(), 2);
        assert_eq!(
            parse_plan("1. Causes\n2. Findings", 4).iter().map(|p| p.title.as_str()).collect::<Vec<_>>(),
            vec!["Causes", "Findings"]
        );
        assert!(parse_plan("no idea", 4).is_empty());
    }
}
