//! The long-form report's control flow with a scripted model: plan → per section DeepSearch, write,
//! review (and one revision) → introduction and conclusion; report-wide citation numbers; the Markdown.

use crate::fakes::{corpus, text, ScriptedModel};
use quarry_agents::{
    render_research_report, research_report, AgentConfig, AgentEvent, CancellationToken, LibraryInfo, ReportOptions,
    ResearchConfig, SearchableLibrary,
};
use std::sync::{Arc, Mutex};

fn library() -> (Arc<crate::fakes::MemoryRetriever>, Vec<SearchableLibrary>) {
    let retriever = Arc::new(corpus("work"));
    let libraries = vec![SearchableLibrary {
        info: LibraryInfo { name: "work".into(), description: "company documents".into() },
        retriever: Arc::clone(&retriever) as _,
        always: false,
    }];
    (retriever, libraries)
}

fn markers(markdown: &str) -> Vec<usize> {
    quarry_agents::answer::cited_numbers(markdown, usize::MAX)
}

#[tokio::test]
async fn a_report_plans_sections_researches_each_reviews_once_and_frames_them() {
    let model = Arc::new(
        ScriptedModel::new()
            .on("report_plan", text(r#"{"sections": [{"title": "Revenue", "focus": "revenue of Acme and Globex in 2023"}, {"title": "Leadership", "focus": "who founded Acme Corporation"}]}"#))
            // Section 1: DeepSearch (one round), write, review passes.
            .on("sub_queries", text(r#"{"queries": ["Acme Corporation revenue 2023", "Globex revenue 2023"]}"#))
            .on("relevance", text(r#"{"relevant": [1, 2, 3]}"#))
            .on("report_section", text("Acme earned 4.2 billion dollars [1] and Globex 1.1 billion [2]. See also [9]."))
            .on("report_review", text(r#"{"pass": true, "queries": []}"#))
            // Section 2: the review asks for more; the section is written again.
            .on("sub_queries", text(r#"{"queries": ["Acme founded"]}"#))
            .on("relevance", text(r#"{"relevant": [1]}"#))
            .on("report_section", text("Jane Miller founded Acme [1]."))
            .on("report_review", text(r#"{"pass": false, "queries": ["Globex chief executive"]}"#))
            .on("report_section", text("Jane Miller founded Acme [1]; Globex, which it acquired, is run by Hank Scorpio [2][3]."))
            .on("report_introduction", text("This report covers revenue and leadership [1]."))
            .on("report_conclusion", text("Acme is larger than Globex.")),
    );
    let (retriever, libraries) = library();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    let config =
        AgentConfig { max_rounds: 1, relevance_batch: 8, protected_question_hits: 0, ..AgentConfig::default() };
    let report = research_report(
        "Acme and Globex",
        Arc::clone(&model) as _,
        &libraries,
        config,
        ResearchConfig::default(),
        Arc::new(move |e| sink.lock().unwrap().push(e)),
        CancellationToken::new(),
    )
    .await
    .unwrap();

    assert_eq!(
        model.steps(),
        vec![
            "report_plan",
            "sub_queries",
            "relevance",
            "report_section",
            "report_review",
            "sub_queries",
            "relevance",
            "report_section",
            "report_review",
            "report_section",
            "report_introduction",
            "report_conclusion"
        ]
    );
    // The first retrieval pass is the topic; each section searches the topic with its focus.
    let queries = retriever.queries();
    assert_eq!(queries[0], "Acme and Globex");
    assert!(queries.contains(&"Acme and Globex: revenue of Acme and Globex in 2023".to_string()));
    assert_eq!(queries.last().unwrap(), "Globex chief executive");
    assert!(model.prompts_of("report_plan")[0].contains("[1] "), "the plan sees the first passages");

    let stages: Vec<(usize, String)> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(
            |e| if let AgentEvent::Section { index, stage, .. } = e { Some((*index, stage.clone())) } else { None },
        )
        .collect();
    let expected: Vec<(usize, &str)> = vec![
        (1, "planned"),
        (2, "planned"),
        (1, "research"),
        (1, "write"),
        (1, "review"),
        (1, "done"),
        (2, "research"),
        (2, "write"),
        (2, "review"),
        (2, "revise"),
        (2, "done"),
        (0, "write"),
        (0, "write"),
    ];
    assert_eq!(stages, expected.into_iter().map(|(i, s)| (i, s.to_string())).collect::<Vec<_>>());

    assert_eq!(report.sections.iter().map(|s| s.title.as_str()).collect::<Vec<_>>(), vec!["Revenue", "Leadership"]);
    assert!(!report.sections[0].revised && report.sections[1].revised);
    assert_eq!(report.sections[1].queries.last().unwrap(), &vec!["Globex chief executive".to_string()]);
    // Report-wide numbers: each passage once, every marker resolves, an out-of-range marker is dropped.
    let keys: std::collections::HashSet<_> = report.sources.iter().map(|s| s.passage.key()).collect();
    assert_eq!(keys.len(), report.sources.len());
    assert_eq!(
        report.sources.iter().map(|s| s.number).collect::<Vec<_>>(),
        (1..=report.sources.len()).collect::<Vec<_>>()
    );
    assert_eq!(markers(&report.sections[0].markdown), vec![1, 2]);
    assert!(!report.sections[0].markdown.contains("[9]"));
    let second = markers(&report.sections[1].markdown);
    assert_eq!(second.len(), 3);
    assert!(second.iter().all(|n| *n <= report.sources.len()));
    let founder = report.sources.iter().find(|s| s.number == second[0]).unwrap();
    assert!(
        founder.passage.text.contains("Jane Miller"),
        "section 2's [1] is renumbered to its own passage: {founder:?}"
    );
    assert!(markers(&report.introduction).is_empty() && report.conclusion == "Acme is larger than Globex.");
    assert_eq!(report.llm_calls, 12);
    assert_eq!(report.libraries, vec!["work".to_string()]);

    // The Markdown: the stable headings, links for cited sources, quotes of what was cited.
    let markdown = render_research_report(&report, &ReportOptions { date: "2026-11-23".into(), ..Default::default() });
    let headings: Vec<String> = {
        use pulldown_cmark::{Event, Parser, Tag, TagEnd};
        let mut out = Vec::new();
        let mut current: Option<String> = None;
        for event in Parser::new(&markdown) {
            match event {
                Event::Start(Tag::Heading { level: pulldown_cmark::HeadingLevel::H2, .. }) => {
                    current = Some(String::new())
                }
                Event::Text(t) => {
                    if let Some(c) = current.as_mut() {
                        c.push_str(&t)
                    }
                }
                Event::End(TagEnd::Heading(_)) => {
                    if let Some(c) = current.take() {
                        out.push(c)
                    }
                }
                _ => {}
            }
        }
        out
    };
    assert_eq!(
        headings,
        vec!["Introduction", "Revenue", "Leadership", "Conclusion", "Sources", "Method"],
        "{markdown}"
    );
    assert!(markdown.starts_with("# Acme and Globex\n"));
    assert!(markdown.contains("[\\[1\\]](#source-1)") && markdown.contains("<a id=\"source-1\"></a>"), "{markdown}");
    assert!(markdown.contains("revised after review"));
}

#[tokio::test]
async fn an_unreadable_plan_becomes_one_section_on_the_whole_topic() {
    let model = Arc::new(
        ScriptedModel::new()
            .on("report_plan", text("I would write a great report!"))
            .on("sub_queries", text(r#"["Acme founded"]"#))
            .on("relevance", text(r#"{"relevant": [1]}"#))
            .on("report_section", text("Jane Miller founded Acme [1]."))
            .on("report_review", text("looks fine to me"))
            .on("report_introduction", text("Intro."))
            .on("report_conclusion", text("End.")),
    );
    let (_, libraries) = library();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    let report = research_report(
        "Who founded Acme?",
        Arc::clone(&model) as _,
        &libraries,
        AgentConfig { max_rounds: 1, relevance_batch: 8, protected_question_hits: 0, ..AgentConfig::default() },
        ResearchConfig::default(),
        Arc::new(move |e| sink.lock().unwrap().push(e)),
        CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(report.sections.len(), 1);
    assert_eq!(report.sections[0].title, "Who founded Acme?");
    let degraded: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| if let AgentEvent::Degraded { step, .. } = e { Some(step.clone()) } else { None })
        .collect();
    assert_eq!(degraded, vec!["report_plan", "report_review"]);
    assert!(!report.sections[0].revised);
}
