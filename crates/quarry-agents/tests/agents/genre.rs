//! The whole pipeline over a library that is not financial, with the genre layer off
//! ([`GenreKind::General`]): passages are shown as ingested, nothing is quoted under an answer, and the
//! claim check and citation repair read figures and names alone. And the genre chosen per question
//! ([`GenreKind::Auto`], the default) in a library that holds a filing beside the reports. The passages are the text of two NTSB
//! accident reports of the sample library (`assets/sample-library/ntsb/20080102X00002.pdf` and
//! `20080102X00005.pdf`, as `pdftotext -layout` reads them).

use crate::fakes::{text, MemoryRetriever, ScriptedModel};
use crate::flows::{library, run_agent};
use quarry_agents::{AgentConfig, AgentKind, GenreKind};
use std::sync::Arc;

const CHEVROUX: &str = "Location: Chevroux, France Accident Number: DEN08WA042\n\
Date & Time: 12/17/2007, 1045 UTC\n\
Aircraft: Reims F172 M Aircraft Damage: Destroyed\n\
Injuries: 1 Fatal\n\
On December 17, 2007, at 1045 coordinated universal time, a Reims F172 M, French registered FBVIF, owned by \
Airclub Besancon la Veze and piloted by the accident pilot, was destroyed when it impacted terrain under \
unknown circumstances near Chevroux, France. A postimpact fire ensued. Instrument meteorological conditions \
prevailed at the time of the accident. The pilot was fatally injured.";

const CHEVROUX_CAUSE: &str = "The French investigators reported that the airplane collided with the ground in \
\"bad weather conditions.\"";

const BELEN: &str = "Location: Belen, NM Accident Number: DEN08CA034\n\
Date & Time: 11/27/2007, 1100 MST Registration: N74SR\n\
Aircraft: Godwin, David P Sorrell SNJ-7 Aircraft Damage: Substantial\n\
Injuries: 1 None\n\
According to the pilot's statement, he was landing on runway 21 and the winds were light and variable. \
Shortly after touchdown on the runway, he lost directional control and the airplane ground looped. The \
airplane departed the left side of the runway and came to rest upright.";

const BELEN_CAUSE: &str = "The National Transportation Safety Board determines the probable cause(s) of this \
accident to be: the pilot's loss of directional control during landing resulting in a ground loop.";

/// The two reports' passages: (file, page, text).
const REPORT_PASSAGES: [(&str, u32, &str); 4] = [
    ("20080102X00002.pdf", 1, CHEVROUX),
    ("20080102X00002.pdf", 1, CHEVROUX_CAUSE),
    ("20080102X00005.pdf", 1, BELEN),
    ("20080102X00005.pdf", 1, BELEN_CAUSE),
];

fn accident_reports() -> Arc<MemoryRetriever> {
    Arc::new(
        MemoryRetriever::new("ntsb", &REPORT_PASSAGES)
            .with_context("20080102X00002.pdf", "Aviation Accident Factual Report · 20080102X00002")
            .with_context("20080102X00005.pdf", "Aviation Accident Final Report · 20080102X00005"),
    )
}

fn general() -> AgentConfig {
    AgentConfig { genre: GenreKind::General, ..AgentConfig::default() }
}

#[tokio::test]
async fn naive_rag_over_accident_reports_with_the_genre_layer_off_shows_cites_and_checks_as_ingested() {
    let model = Arc::new(
        ScriptedModel::new()
            .on("answer", text("The Reims F172 M was destroyed near Chevroux, France, at 1045 UTC [1].")),
    );
    let retriever = accident_reports();
    let question = "What happened to the airplane near Chevroux, France?";
    let (answer, _) = run_agent(question, Some(AgentKind::Naive), &model, &[library(&retriever)], general()).await;
    let answer = answer.unwrap();
    // The prompt shows the report's lines as the report writes them, cited by file and page.
    let prompt = &model.prompts_of("answer")[0];
    assert!(prompt.contains("20080102X00002.pdf, p. 1 (Aviation Accident Factual Report"), "{prompt}");
    assert!(prompt.contains("Injuries: 1 Fatal"), "{prompt}");
    // Nothing is quoted under the answer: the quote is the financial genre's.
    assert_eq!(answer.markdown, "The Reims F172 M was destroyed near Chevroux, France, at 1045 UTC [1].");
    assert_eq!(answer.citations[0].passage.citation(), "20080102X00002.pdf, p. 1");
    assert_eq!(answer.claims.len(), 1);
    assert!(answer.claims[0].supported, "{:?}", answer.claims[0]);

    // A figure the cited passage does not state is still marked: the claim check needs no genre.
    let model = Arc::new(ScriptedModel::new().on("answer", text("The airplane was destroyed at 1130 UTC [1].")));
    let (answer, _) = run_agent(question, Some(AgentKind::Naive), &model, &[library(&retriever)], general()).await;
    let answer = answer.unwrap();
    assert!(!answer.claims[0].supported);
    assert!(answer.claims[0].problem.starts_with("figures not in the cited passages"), "{:?}", answer.claims[0]);
}

#[tokio::test]
async fn deep_search_compares_two_accident_reports_with_the_genre_layer_off() {
    // Both reports match the comparison alike: one sub-question per report (named by its file, as the
    // reports' context lines name no period), a cited line per report (undated: in search order, Belen's
    // first), then the synthesis across them.
    let model = Arc::new(
        ScriptedModel::new()
            .on("document_answer", text("The pilot lost directional control during landing, a ground loop [2]."))
            .on("document_answer", text("The airplane collided with the ground in bad weather conditions [4]."))
            .on(
                "synthesis",
                text("At Belen the pilot lost directional control [2]; at Chevroux the airplane hit the ground in bad weather [4]."),
            ),
    );
    let retriever = accident_reports();
    let question = "Compare the causes of the Chevroux and Belen accidents.";
    let (answer, _) = run_agent(question, Some(AgentKind::Deep), &model, &[library(&retriever)], general()).await;
    let answer = answer.unwrap();
    assert_eq!(model.steps(), ["document_answer", "document_answer", "synthesis"]);
    let queries = retriever.queries();
    for file in ["20080102X00002", "20080102X00005"] {
        assert!(queries.contains(&format!("{question} ({file})")), "a sub-question per report: {queries:?}");
    }
    let prompts = model.prompts_of("document_answer");
    for (prompt, cause) in prompts.iter().zip([BELEN_CAUSE, CHEVROUX_CAUSE]) {
        assert!(prompt.contains(cause), "each report's call reads its cause: {prompt}");
    }
    assert!(answer.citations.iter().any(|c| c.passage.path.ends_with("20080102X00002.pdf")), "{}", answer.markdown);
    assert!(answer.citations.iter().any(|c| c.passage.path.ends_with("20080102X00005.pdf")), "{}", answer.markdown);
    assert!(answer.markdown.contains("**Across the documents:** At Belen"), "{}", answer.markdown);
    assert!(!answer.markdown.contains("From the passages"), "{}", answer.markdown);
}

/// A filing's income statement as ingestion writes a table's rows (`label: value (column); …`): six
/// rows that measure a line item, above [`quarry_agents::genre::financial::STATEMENT_ROWS`].
const INCOME_STATEMENT: &str = "\
Revenue: $7,192 million (three months ended April 30, 2023); $8,288 million (three months ended May 1, 2022)\n\
Cost of revenue: $2,544 million (three months ended April 30, 2023); $2,857 million (three months ended May 1, 2022)\n\
Gross profit: $4,648 million (three months ended April 30, 2023); $5,431 million (three months ended May 1, 2022)\n\
Research and development: $1,875 million (three months ended April 30, 2023); $1,618 million (three months ended May 1, 2022)\n\
Operating income: $2,140 million (three months ended April 30, 2023); $1,868 million (three months ended May 1, 2022)\n\
Net income: $2,043 million (three months ended April 30, 2023); $1,618 million (three months ended May 1, 2022)";

#[tokio::test]
async fn the_default_genre_reads_a_filing_question_as_financial_and_an_accident_question_as_general() {
    // One library: the two accident reports and a filing. Each question's first search finds its own
    // documents, which are looked through whole: the filing's statement rows make the filing question
    // financial (the row that answers is quoted under an answer that leaves its figure out); the
    // reports hold none, so the accident question is read with no genre (nothing quoted).
    let retriever = Arc::new(
        MemoryRetriever::new("mixed", &[&REPORT_PASSAGES[..], &[("2023 Q1 NVDA.pdf", 3, INCOME_STATEMENT)]].concat())
            .with_context("2023 Q1 NVDA.pdf", "NVIDIA CORPORATION · Form 10-Q · quarterly period ended April 30, 2023"),
    );
    assert_eq!(AgentConfig::default().genre, GenreKind::Auto);

    let model = Arc::new(ScriptedModel::new().on("answer", text("NVIDIA reported its revenue for the quarter [1].")));
    let question = "What is NVIDIA's revenue in its quarter ended April 30, 2023?";
    let (answer, _) =
        run_agent(question, Some(AgentKind::Naive), &model, &[library(&retriever)], AgentConfig::default()).await;
    let answer = answer.unwrap();
    assert_eq!(answer.genre, "financial");
    assert!(
        answer.markdown.contains("From the passages: “Revenue: $7,192 million (three months ended April 30, 2023)"),
        "{}",
        answer.markdown
    );

    let model = Arc::new(
        ScriptedModel::new()
            .on("answer", text("The Reims F172 M was destroyed near Chevroux, France, at 1045 UTC [1].")),
    );
    let question = "What happened to the airplane near Chevroux, France?";
    let (answer, _) =
        run_agent(question, Some(AgentKind::Naive), &model, &[library(&retriever)], AgentConfig::default()).await;
    let answer = answer.unwrap();
    assert_eq!(answer.genre, "general");
    assert_eq!(answer.markdown, "The Reims F172 M was destroyed near Chevroux, France, at 1045 UTC [1].");
}
