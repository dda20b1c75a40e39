//! The prompts of every agent step, kept as files in `prompts/` (data, versioned with the code) and filled
//! with `{name}` placeholders.

use quarry_core::ChatRequest;

/// Version of the prompt set; reports record it. Bump it when a prompt's wording changes.
pub const PROMPTS_VERSION: &str = "2026-12-07.1";

/// One prompt file: a system part and a user part.
#[derive(Debug, Clone, Copy)]
pub struct Prompt {
    /// The file's name without `.md` (`answer`), as traces name the step.
    pub name: &'static str,
    source: &'static str,
}

macro_rules! prompt {
    ($ident:ident, $file:literal) => {
        #[doc = concat!("The prompt of `prompts/", $file, ".md`.")]
        pub const $ident: Prompt = Prompt { name: $file, source: include_str!(concat!("../prompts/", $file, ".md")) };
    };
}

prompt!(ANSWER, "answer");
prompt!(DOCUMENT_ANSWER, "document_answer");
prompt!(SYNTHESIS, "synthesis");
prompt!(SUB_QUERIES, "sub_queries");
prompt!(RELEVANCE, "relevance");
prompt!(REFLECTION, "reflection");
prompt!(FOLLOW_UP, "follow_up");
prompt!(INTERMEDIATE_ANSWER, "intermediate_answer");
prompt!(ENOUGH, "enough");
prompt!(CHAIN_ANSWER, "chain_answer");
prompt!(ROUTER, "router");
prompt!(REPORT_PLAN, "report_plan");
prompt!(REPORT_SECTION, "report_section");
prompt!(REPORT_REVIEW, "report_review");
prompt!(REPORT_INTRODUCTION, "report_introduction");
prompt!(REPORT_CONCLUSION, "report_conclusion");

/// The line `prompts/in_chinese.md` asks for an answer in Chinese with.
const IN_CHINESE: &str = include_str!("../prompts/in_chinese.md");

/// The value of an answer prompt's `{in_question_language}` placeholder for `question`: a Chinese line
/// asking for the answer in Chinese, on a line of its own, when the question is mostly CJK characters
/// ([`quarry_core::is_mostly_cjk`]); empty otherwise, so an English prompt is unchanged. Asked in the user
/// turn only: the rules in Chinese made a 1.5B model write citation markers alone (docs/evaluation/decisions.md, 2026-11-27 (c)).
pub fn in_question_language(question: &str) -> String {
    if quarry_core::is_mostly_cjk(question) {
        format!("\n{}", IN_CHINESE.trim())
    } else {
        String::new()
    }
}

/// Every prompt, for tests.
pub const ALL: [Prompt; 16] = [
    ANSWER,
    DOCUMENT_ANSWER,
    SYNTHESIS,
    SUB_QUERIES,
    RELEVANCE,
    REFLECTION,
    FOLLOW_UP,
    INTERMEDIATE_ANSWER,
    ENOUGH,
    CHAIN_ANSWER,
    ROUTER,
    REPORT_PLAN,
    REPORT_SECTION,
    REPORT_REVIEW,
    REPORT_INTRODUCTION,
    REPORT_CONCLUSION,
];

impl Prompt {
    /// (system, user) with every `{name}` replaced by its value from `values`. Braces that are not a
    /// placeholder (`{"queries": …}` in JSON examples) stay as they are.
    ///
    /// Panics: a placeholder of the file has no value (a programming error the tests catch).
    pub fn render(&self, values: &[(&str, &str)]) -> (String, String) {
        let body = self.source.split_once("---system---").map(|(_, rest)| rest).unwrap_or(self.source);
        let (system, user) = body.split_once("---user---").unwrap_or((body, ""));
        (fill(self.name, system.trim(), values), fill(self.name, user.trim(), values))
    }

    /// A chat request for this prompt, named after it.
    pub fn request(&self, values: &[(&str, &str)], max_tokens: u32) -> ChatRequest {
        let (system, user) = self.render(values);
        ChatRequest::new(self.name, system, user, max_tokens)
    }

    /// The placeholder names used in the file.
    pub fn placeholders(&self) -> Vec<String> {
        let mut names = Vec::new();
        let mut rest = self.source;
        while let Some(open) = rest.find('{') {
            rest = &rest[open + 1..];
            if let Some(close) = rest.find('}') {
                let name = &rest[..close];
                if is_placeholder(name) && !names.iter().any(|n| n == name) {
                    names.push(name.to_string());
                }
            }
        }
        names
    }
}

fn is_placeholder(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
}

fn fill(prompt: &str, template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() + values.iter().map(|v| v.1.len()).sum::<usize>());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) if is_placeholder(&after[..close]) => {
                let name = &after[..close];
                let value = values
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| *v)
                    .unwrap_or_else(|| panic!("prompt {prompt}: no value for {{{name}}}"));
                out.push_str(value);
                rest = &after[close + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_prompt_has_a_system_and_a_user_part_and_fills_its_placeholders() {
        for prompt in ALL {
            let names = prompt.placeholders();
            let values: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "VALUE")).collect();
            let (system, user) = prompt.render(&values);
            assert!(!system.is_empty() && !user.is_empty(), "{}", prompt.name);
            for text in [&system, &user] {
                for name in &names {
                    assert!(!text.contains(&format!("{{{name}}}")), "{}: {{{name}}} left", prompt.name);
                }
            }
        }
    }

    #[test]
    fn a_chinese_question_asks_for_a_chinese_answer_and_an_english_one_leaves_the_prompt_as_it_was() {
        let english = in_question_language("What was NVIDIA's revenue?");
        let (_, user) = ANSWER.render(&[("passages", "P"), ("question", "Q"), ("in_question_language", &english)]);
        assert!(user.ends_with("Write the answer with citations."), "{user}");
        let chinese = in_question_language("2022年中国联通的营业收入是多少？");
        let (_, user) = ANSWER.render(&[("passages", "P"), ("question", "Q"), ("in_question_language", &chinese)]);
        assert!(user.ends_with("没有回答这个问题。") && user.contains("citations.\n这个问题是用中文提出的"), "{user}");
    }

    #[test]
    fn json_examples_survive_filling() {
        let (system, _) = SUB_QUERIES.render(&[("max", "4"), ("question", "q")]);
        assert!(system.contains("at most 4") && system.contains(r#"{"queries": ["...", "..."]}"#), "{system}");
    }
}
