//! DeepSearch, after Zilliz's deep-searcher: split the question into sub-queries, retrieve for each in
//! parallel, keep only the passages that help, reflect on what is missing and search again, then write a
//! cited answer from the kept passages.
//!
//! Where it differs from deep-searcher:
//! - round 1 searches the question itself as well as its sub-queries, so a poor decomposition never loses
//!   what a plain search would have found — read as NaiveRAG reads it, the passages of the document the
//!   question names first — and the best few hits of that search
//!   (`AgentConfig::protected_question_hits`, default 3) are kept without judging: hybrid retrieval for
//!   the whole question is the strongest evidence the agent has, and a small judge that drops it costs
//!   more recall than any sub-query wins back (measured on HotpotQA, docs/evaluation/agents-qa.md, "Measuring answers");
//! - every sub-query and gap query is searched as the question is ([`Run::retrieve_for`]): deeper, with
//!   the passages of the documents it names first, then of those the question names. A sub-query that
//!   drops the question's company or period ("operating expenses for the quarter") otherwise read four
//!   filings alike, and 34 of the 93 passages DeepSearch answered from on 10-Q lookups came from a
//!   filing the question does not ask about (12 of 94 for NaiveRAG; docs/evaluation/decisions.md, 2026-11-28 (d));
//! - relevance is judged for a batch of passages per model call (not one call per passage), and passages
//!   are deduplicated by chunk id across queries and rounds, so none is judged twice. (Showing the judge
//!   the reflection's facts, and judging a rejected passage again when a later query found it, was
//!   tried on MuSiQue questions 51–64 and kept fewer supporting passages: 0.702 against 0.726; the
//!   passages it re-judged and kept were none of them supporting — docs/evaluation/agents-qa.md, "Measuring answers");
//! - the kept passages are ordered: the question's protected hits first, in the question's own order,
//!   then the rest turn by turn over the queries ([`order_kept`]): every query's best kept passage (the
//!   question's first, then the sub-queries' and gap queries' in the order asked), then every query's
//!   second, and so on. A second-hop passage that only the query naming the bridge entity finds, at its
//!   top, thus comes before passages that several queries found lower down; reciprocal rank fusion,
//!   used until 2026-11-24, put such passages sixth to eleventh (Qwen2.5 on MuSiQue,
//!   `quarry eval qa --trace`; docs/evaluation/agents-qa.md, "Measuring answers"). Fusing everything, protected hits included,
//!   also let sub-queries that keep finding the same side topics push the question's best hit out of
//!   the top 5. Within a round the sub-queries' results are judged rank by rank (every query's best hit
//!   first). Once the search ends, one more search — the question followed by the facts the last
//!   reflection noted — orders the kept passages after the protected hits ([`order_by_facts`]; no
//!   model call);
//! - when the judge keeps none of round 1's passages, the first few in that order are kept anyway
//!   (reported as a degraded step): a small model's over-strict judging must not leave the answer with
//!   nothing;
//! - the reflection first writes down the facts the kept passages establish (at most
//!   [`MAX_REFLECTION_FACTS`] short sentences, names spelled out) and then its gap queries, in one
//!   schema-constrained reply. Asked for gap queries alone, Qwen2.5-1.5B wrote one in only a fifth to two
//!   fifths of MuSiQue's multi-hop questions, and most supporting passages DeepSearch missed were second
//!   hops behind a bridge entity that a kept passage already named (`quarry eval qa --trace`);
//! - a round that adds no new relevant passage ends the search;
//! - the search keeps to a time budget ([`crate::run::AgentConfig::search_seconds`], default 50 s): it
//!   starts no relevance call or reflection that would, at the mean length of the run's calls so far,
//!   end after it (a reflection needs time for itself and one relevance call). Round 1 always judges its
//!   first batch. Passages a round could not judge in time are dropped, best-ranked first being judged
//!   first. On 2 cores with Qwen2.5-Coder-1.5B a 10-Q question took 222 s (8 calls: two reflections
//!   103 s, four relevance calls 76 s) — docs/evaluation/decisions.md, 2026-11-28 (d).

use crate::answer::{number_passages, passage_ref, Answer};
use crate::events::AgentEvent;
use crate::prompts;
use crate::run::{AgentError, AnswerInputs, Run};
use crate::structured::{
    number_list, numbers_schema, reflection_reply, reflection_schema, string_list, strings_schema,
};
use quarry_core::Passage;
use std::collections::{HashMap, HashSet};

/// Passages kept from round 1 when the relevance judge keeps none of them.
pub const FALLBACK_KEEP: usize = 3;

/// Facts a reflection may write down before its gap queries.
pub const MAX_REFLECTION_FACTS: usize = 4;

/// Runs DeepSearch for `question` (see the module docs). Model calls: 1 (sub-queries) + ⌈new passages /
/// batch⌉ per round (relevance) + 1 per round but the last (reflection) + 1 (answer).
///
/// When several documents match the question alike (NaiveRAG's reading of the question's search,
/// [`crate::naive::naive_reading`]), the plan is one sub-question per document instead
/// ([`crate::document_plan`]): calls 1 per document + 1 (synthesis).
pub async fn deep_search(run: &Run, question: &str) -> Result<Answer, AgentError> {
    run.emit(AgentEvent::Started { agent: "deep".into(), question: question.into() });
    let found = run.retrieve_top(question, run.config.top_k * crate::document_match::WIDENING).await?;
    if let crate::naive::NaiveReading::PerDocument(tied) = crate::naive::naive_reading(question, &found, &run.config) {
        let hits = tied.documents.iter().chain(&tied.further).map(Vec::len).sum();
        run.emit(AgentEvent::Retrieved { round: 1, query: question.into(), hits: found.len(), new: hits });
        return crate::document_plan::deep_per_document(run, question, tied, hits).await;
    }
    let evidence = search_rounds(run, question, Some(found)).await?;
    run.write_answer(AnswerInputs {
        agent: "deep",
        prompt: prompts::ANSWER,
        question,
        passages: evidence.kept,
        extra: &[],
        queries: evidence.queries,
        retrieved: evidence.retrieved,
    })
    .await
}

/// What DeepSearch found for a question, before any answer is written.
#[derive(Debug, Clone)]
pub struct Evidence {
    /// Kept passages, best first: the question's protected hits, then in the order of a search for the
    /// question and the facts noted ([`order_by_facts`]), the rest turn by turn over the queries
    /// ([`order_kept`]).
    pub kept: Vec<Passage>,
    /// Queries run, per round.
    pub queries: Vec<Vec<String>>,
    /// Distinct passages retrieved.
    pub retrieved: usize,
}

/// DeepSearch's search (sub-queries, parallel retrieval, relevance, reflection, rounds) without the
/// answer step; [`deep_search`] and the long-form report use it.
pub async fn deep_search_evidence(run: &Run, question: &str) -> Result<Evidence, AgentError> {
    search_rounds(run, question, None).await
}

/// [`deep_search_evidence`], round 1 reading `question_found` (a search for the question
/// [`crate::document_match::WIDENING`] × `top_k` deep, best first) as [`Run::retrieve_for`] would read
/// the search it saves, when the caller has searched already.
async fn search_rounds(
    run: &Run,
    question: &str,
    mut question_found: Option<Vec<Passage>>,
) -> Result<Evidence, AgentError> {
    let config = run.config.clone();
    let search_started = run.seconds();

    // Round 1's queries: the question itself and the sub-queries (none for a simple question).
    let max = config.max_sub_queries.max(1).to_string();
    let request = prompts::SUB_QUERIES
        .request(&[("question", question), ("max", &max)], 256)
        .with_schema(strings_schema("queries", config.max_sub_queries.max(1)));
    let mut queries = match run.call_structured(&request, "the question as the only query").await? {
        Some(text) => match string_list(&text, "queries", config.max_sub_queries.max(1)) {
            Some(list) => list,
            None => {
                run.degraded(
                    "sub_queries",
                    &format!("no query list in {:?}", excerpt(&text)),
                    "the question as the only query",
                );
                vec![]
            }
        },
        None => vec![],
    };
    // The question goes first, also when the model listed it among its sub-queries: its best hits are
    // the protected ones, and a sub-query searched before it would take them as its own.
    queries.retain(|q| normalise(q) != normalise(question));
    queries.insert(0, question.to_string());

    let mut asked: Vec<Vec<String>> = Vec::new();
    // Every passage retrieved so far.
    let mut seen: HashSet<(String, u64)> = HashSet::new();
    let mut facts: Vec<String> = Vec::new();
    let mut kept: Vec<Passage> = Vec::new();
    let mut protected_keys: Vec<(String, u64)> = Vec::new();
    let mut rankings: Vec<Vec<(String, u64)>> = Vec::new();
    for round in 1..=config.max_rounds.max(1) {
        run.emit(AgentEvent::Queries { round, queries: queries.clone() });
        asked.push(queries.clone());

        // Parallel retrieval, one search per query, each read as NaiveRAG reads the question.
        // Round 1's first query is the question: its search may be done already.
        let done = if round == 1 { question_found.take() } else { None };
        let searched = futures::future::join_all(
            queries.iter().skip(usize::from(done.is_some())).map(|q| run.retrieve_for(q, question)),
        )
        .await;
        let results: Vec<Result<Vec<Passage>, AgentError>> = done
            .map(|found| Ok(crate::document_match::select_for_query(question, question, found, config.top_k)))
            .into_iter()
            .chain(searched)
            .collect();
        let mut per_query: Vec<Vec<Passage>> = Vec::with_capacity(queries.len());
        let mut protected: Vec<Passage> = Vec::new();
        for (index, (query, result)) in queries.iter().zip(results).enumerate() {
            let passages = result?;
            let hits = passages.len();
            rankings.push(passages.iter().map(Passage::key).collect());
            // Each passage is judged once per run, when it is first retrieved.
            let mut new: Vec<Passage> = passages.into_iter().filter(|p| seen.insert(p.key())).collect();
            run.emit(AgentEvent::Retrieved { round, query: query.clone(), hits, new: new.len() });
            // Round 1's first query is the question (put there above).
            if round == 1 && index == 0 {
                protected = new.drain(..config.protected_question_hits.min(new.len())).collect();
                protected_keys = protected.iter().map(Passage::key).collect();
            }
            per_query.push(new);
        }
        // Best first across queries, so the first batches judged and the first passages of the answer's
        // context are every sub-query's top hits, not all of the first sub-query's.
        let fresh = interleave_by_rank(per_query);

        // Relevance filter, a batch of passages per call; the question's protected hits are kept unjudged.
        let mut round_kept = protected;
        let mut rejected = Vec::new();
        let all_queries = asked.concat().join("; ");
        let mut not_judged = 0;
        for (index, batch) in fresh.chunks(config.relevance_batch.max(1)).enumerate() {
            // A round's first batch was budgeted for before the round (round 1: always judged).
            if index > 0 && !run.time_for(search_started, 1) {
                not_judged = fresh.len() - index * config.relevance_batch.max(1);
                break;
            }
            let (text, used) = number_passages(run.genre(), batch, question, config.judge_chars, usize::MAX);
            let request = prompts::RELEVANCE
                .request(&[("question", question), ("queries", &all_queries), ("passages", &text)], 128)
                .with_schema(numbers_schema("relevant"));
            let verdict = run.call_structured(&request, "keep the whole batch").await?;
            let relevant = match verdict.as_deref().map(|t| (t, number_list(t, "relevant", used))) {
                Some((_, Some(numbers))) => numbers,
                Some((t, None)) => {
                    run.degraded(
                        "relevance",
                        &format!("no passage numbers in {:?}", excerpt(t)),
                        "keep the whole batch",
                    );
                    (1..=used).collect()
                }
                None => (1..=used).collect(),
            };
            for (i, p) in batch.iter().enumerate() {
                if relevant.contains(&(i + 1)) {
                    round_kept.push(p.clone())
                } else {
                    rejected.push(p.clone())
                }
            }
        }
        if round == 1 && round_kept.is_empty() && !rejected.is_empty() {
            order_kept(&mut rejected, &[], &rankings);
            let n = FALLBACK_KEEP.min(rejected.len());
            run.degraded(
                "relevance",
                &format!("the judge kept none of {} passages", rejected.len()),
                &format!("keep the {n} best-ranked"),
            );
            round_kept = rejected.drain(..n).collect();
        }
        run.emit(AgentEvent::Judged {
            round,
            kept: round_kept.iter().map(passage_ref).collect(),
            rejected: rejected.iter().map(passage_ref).collect(),
        });
        let added = round_kept.len();
        kept.extend(round_kept);
        order_kept(&mut kept, &protected_keys, &rankings);
        if added == 0 {
            run.emit(AgentEvent::Stopped { round, reason: "no new relevant passages".into() });
            break;
        }
        if not_judged > 0 {
            let reason = format!("time budget: {not_judged} passages not judged");
            run.emit(AgentEvent::Stopped { round, reason });
            break;
        }
        if round == config.max_rounds.max(1) {
            run.emit(AgentEvent::Stopped { round, reason: "max rounds".into() });
            break;
        }
        // The reflection and at least one relevance call of the next round.
        if !run.time_for(search_started, 2) {
            run.emit(AgentEvent::Stopped { round, reason: "time budget".into() });
            break;
        }

        // Reflection: what have the passages established, and what is still missing?
        let (text, _) = number_passages(run.genre(), &kept, question, config.judge_chars, config.context_chars);
        let history = asked.iter().flatten().map(|q| format!("- {q}")).collect::<Vec<_>>().join("\n");
        let max = config.max_gap_queries.to_string();
        let request = prompts::REFLECTION
            .request(&[("question", question), ("queries", &history), ("passages", &text), ("max", &max)], 384)
            .with_schema(reflection_schema(MAX_REFLECTION_FACTS, config.max_gap_queries));
        let gaps = match run.call_structured(&request, "stop searching").await? {
            Some(text) => match reflection_reply(&text, MAX_REFLECTION_FACTS, config.max_gap_queries) {
                Some((noted, gaps)) => {
                    run.emit(AgentEvent::Reflected { round, facts: noted.clone(), queries: gaps.clone() });
                    // A reflection that notes no facts keeps the earlier ones for the ordering search.
                    if !noted.is_empty() {
                        facts = noted;
                    }
                    gaps
                }
                None => {
                    run.degraded("reflection", &format!("no query list in {:?}", excerpt(&text)), "stop searching");
                    vec![]
                }
            },
            None => vec![],
        };
        let previous: HashSet<String> = asked.iter().flatten().map(|q| normalise(q)).collect();
        queries = gaps.into_iter().filter(|q| !previous.contains(&normalise(q))).collect();
        if queries.is_empty() {
            run.emit(AgentEvent::Stopped { round, reason: "no gaps left".into() });
            break;
        }
    }
    order_by_facts(run, question, &facts, &mut kept, &protected_keys).await?;
    Ok(Evidence { kept, queries: asked, retrieved: seen.len() })
}

/// Passages the ordering search of [`order_by_facts`] returns (at least as many as are kept).
pub const ORDERING_DEPTH: usize = 50;

/// Orders the kept passages for the answer by one more hybrid search, for the question followed by the
/// `facts` the last reflection noted: the protected question hits stay first, the other kept passages
/// follow in that search's order, and kept passages it does not return keep their turn-by-turn place
/// after them. No model call; without facts, or with fewer than two unprotected passages, `kept` is left
/// as it is. A failed search leaves it too (reported as a degraded step); cancellation ends the run.
/// ChainOfRAG orders its passages the same way, its intermediate answers standing for the facts.
///
/// The question alone cannot rank a second hop (it names the continent by its coldest temperature, the
/// passage by "Antarctica"); the facts name the bridge entity. Using what the model has learnt so far
/// as the next retrieval query follows ITER-RETGEN (Shao et al., "Enhancing Retrieval-Augmented Large
/// Language Models with Iterative Retrieval-Generation Synergy", 2023). Replayed on the `--trace` files
/// of Qwen2.5-1.5B on MuSiQue questions 31–70, this order puts supporting passages in the first five
/// with Recall@5 0.654 where the turn-by-turn order had 0.610 (both halves higher, 8 questions up, 3
/// down); on HotpotQA questions 16–25 level at 0.850. Run for real on questions 51–70: 0.658 against
/// 0.600, NaiveRAG 0.583 (docs/evaluation/agents-qa.md, "Measuring answers").
pub(crate) async fn order_by_facts(
    run: &Run,
    question: &str,
    facts: &[String],
    kept: &mut [Passage],
    protected: &[(String, u64)],
) -> Result<(), AgentError> {
    if facts.is_empty() || kept.iter().filter(|p| !protected.contains(&p.key())).count() < 2 {
        return Ok(());
    }
    let query = format!("{question} {}", facts.join(" "));
    let ranking = match run.retrieve_top(&query, ORDERING_DEPTH.max(kept.len())).await {
        Ok(passages) => passages.iter().map(Passage::key).collect::<Vec<_>>(),
        Err(AgentError::Retrieval(problem)) => {
            run.degraded("ordering", &problem, "keep the turn-by-turn order");
            return Ok(());
        }
        Err(other) => return Err(other),
    };
    order_by_ranking(kept, protected, &ranking);
    run.emit(AgentEvent::Ordered { query, kept: kept.len() });
    Ok(())
}

/// Sorts `kept`: the `protected` keys first, in their order, then the passages `ranking` holds, in the
/// order of their first appearance there, then the rest in their present order (the sort is stable).
pub(crate) fn order_by_ranking(kept: &mut [Passage], protected: &[(String, u64)], ranking: &[(String, u64)]) {
    let place: HashMap<&(String, u64), usize> = ranking.iter().enumerate().rev().map(|(at, key)| (key, at)).collect();
    kept.sort_by_cached_key(|p| {
        let key = p.key();
        let protected_at = protected.iter().position(|k| *k == key).unwrap_or(usize::MAX);
        (protected_at, place.get(&key).copied().unwrap_or(usize::MAX))
    });
}

/// Orders `kept` passages: the `protected` keys first, in their order, then the rest turn by turn over
/// `rankings` (each query's result list, best first, in the order the queries were asked): the first
/// unprotected passage of `kept` in each ranking (ranking by ranking), then the second in each, and so on
/// — a passage's place is its best (rank among a ranking's unprotected kept passages, ranking index).
/// Passages no ranking holds go last; the sort is stable.
///
/// Measured against reciprocal rank fusion over the same rankings on the `--trace` files of four Qwen2.5
/// runs (HotpotQA, MuSiQue, 10–15 questions each): equal or higher supporting-passage Recall@5 on each.
pub(crate) fn order_kept(kept: &mut [Passage], protected: &[(String, u64)], rankings: &[Vec<(String, u64)>]) {
    let wanted: HashSet<(String, u64)> = kept.iter().map(Passage::key).filter(|k| !protected.contains(k)).collect();
    let filtered =
        rankings.iter().map(|ranking| ranking.iter().filter(|k| wanted.contains(*k)).cloned().collect()).collect();
    order_by_ranking(kept, protected, &interleave_by_rank(filtered));
}

/// The lists merged rank by rank: the first of each list (in list order), then the second of each, …
pub(crate) fn interleave_by_rank<T>(lists: Vec<Vec<T>>) -> Vec<T> {
    let mut iters: Vec<std::vec::IntoIter<T>> = lists.into_iter().map(Vec::into_iter).collect();
    let mut out = Vec::new();
    loop {
        let before = out.len();
        for it in &mut iters {
            if let Some(item) = it.next() {
                out.push(item);
            }
        }
        if out.len() == before {
            return out;
        }
    }
}

fn normalise(query: &str) -> String {
    query.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// The start of a model output, for trace messages.
pub(crate) fn excerpt(text: &str) -> String {
    let mut out: String = text.chars().take(120).collect();
    if text.chars().count() > 120 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    fn passage(id: u64) -> quarry_core::Passage {
        quarry_core::Passage {
            chunk_id: id,
            chunk_index: None,
            library: "lib".into(),
            document_id: format!("d{id}"),
            path: format!("d{id}.pdf"),
            page_start: None,
            page_end: None,
            sheet: None,
            heading_path: Vec::new(),
            text: String::new(),
            context: String::new(),
            score: 0.0,
            ocr: false,
        }
    }

    fn key(id: u64) -> (String, u64) {
        ("lib".to_string(), id)
    }

    #[test]
    fn the_questions_protected_hits_come_first_then_each_querys_best_kept_passage_in_turn() {
        let rankings = vec![
            vec![key(1), key(2), key(3), key(4), key(5)], // the question
            vec![key(9), key(8), key(4)],                 // sub-queries that agree on 9, 8 and 4
            vec![key(9), key(8), key(4)],
            vec![key(6), key(5), key(7)], // a gap query naming a bridge entity (6 not kept)
        ];
        let mut kept: Vec<_> = [7, 5, 9, 3, 8, 2, 1, 4, 10].into_iter().map(passage).collect();
        super::order_kept(&mut kept, &[key(1), key(2)], &rankings);
        let order: Vec<u64> = kept.iter().map(|p| p.chunk_id).collect();
        // Turn 1 (each ranking's first unprotected kept passage): 3, 9, 9, 5 — the gap query's top hit
        // comes before 4 and 8, which the question and two sub-queries found lower down; turn 2: 4, 8,
        // 8, 7; 10 is in no ranking.
        assert_eq!(order, vec![1, 2, 3, 9, 5, 4, 8, 7, 10], "protected in the question's order, then turn by turn");
    }

    #[test]
    fn protected_hits_stay_first_then_the_ranking_orders_the_rest_and_unranked_passages_keep_their_place() {
        // Turn-by-turn order: protected 1 and 2, then 3, 9, 5, 4, 8, 7.
        let mut kept: Vec<_> = [1, 2, 3, 9, 5, 4, 8, 7].into_iter().map(passage).collect();
        // The ordering search ranks the protected 2 and an unkept 6 too; 3 and 7 are not in it.
        let ranking = vec![key(8), key(2), key(6), key(5), key(9), key(4)];
        super::order_by_ranking(&mut kept, &[key(1), key(2)], &ranking);
        let order: Vec<u64> = kept.iter().map(|p| p.chunk_id).collect();
        assert_eq!(order, vec![1, 2, 8, 5, 9, 4, 3, 7]);
    }

    #[test]
    fn lists_are_merged_rank_by_rank() {
        let merged = super::interleave_by_rank(vec![vec![1, 2, 3], vec![], vec![10, 20], vec![100]]);
        assert_eq!(merged, vec![1, 10, 100, 2, 20, 3]);
    }
}
