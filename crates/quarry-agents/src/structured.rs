//! Lenient reading of structured model output. Small local models wrap JSON in prose, code fences or
//! `<think>` blocks, or break it altogether; every reader here takes what it can and returns `None` only
//! when nothing usable is there, so the caller can degrade instead of failing the question.

use serde_json::Value;

/// `text` without `<think>…</think>` blocks (an unclosed `<think>` drops the rest) and without Markdown
/// code fences.
pub fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<think>") {
        out.push_str(&rest[..start]);
        match rest[start..].find("</think>") {
            Some(end) => rest = &rest[start + end + "</think>".len()..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    // A reasoning model may also emit only the closing tag (its opening was part of the prompt).
    if let Some(end) = out.find("</think>") {
        out = out[end + "</think>".len()..].to_string();
    }
    out.lines().filter(|l| !l.trim_start().starts_with("```")).collect::<Vec<_>>().join("\n").trim().to_string()
}

/// The first JSON object or array in `text` (after [`clean`]): the whole text if it parses, else the
/// first balanced `{…}` or `[…]` that parses.
pub fn find_json(text: &str) -> Option<Value> {
    let text = clean(text);
    if let Ok(value) = serde_json::from_str::<Value>(&text) {
        if value.is_object() || value.is_array() {
            return Some(value);
        }
    }
    let bytes = text.as_bytes();
    for (start, &b) in bytes.iter().enumerate() {
        if b != b'{' && b != b'[' {
            continue;
        }
        if let Some(end) = balanced_end(&text[start..]) {
            if let Ok(value) = serde_json::from_str::<Value>(&text[start..start + end]) {
                return Some(value);
            }
        }
    }
    None
}

/// Length of the balanced bracket expression at the start of `s`, honouring JSON strings.
fn balanced_end(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// The array under `key` of a JSON object, or a bare JSON array.
fn array_at(value: &Value, key: &str) -> Option<Vec<Value>> {
    match value {
        Value::Array(items) => Some(items.clone()),
        Value::Object(map) => match map.get(key) {
            Some(Value::Array(items)) => Some(items.clone()),
            _ => map.values().find_map(|v| v.as_array().cloned()),
        },
        _ => None,
    }
}

/// A list of strings: `{"<key>": ["a", "b"]}` or `["a", "b"]`; failing JSON, bulleted or numbered lines
/// (`- a`, `1. b`). Empty strings and duplicates (case-insensitive) are dropped; at most `max`.
/// `None` when nothing list-like was found (an explicit empty JSON list gives `Some(vec![])`).
pub fn string_list(text: &str, key: &str, max: usize) -> Option<Vec<String>> {
    if let Some(items) = find_json(text).and_then(|v| array_at(&v, key)) {
        return Some(distinct_strings(&items, max));
    }
    let lines: Vec<Value> = clean(text)
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            let stripped =
                line.trim_start_matches(|c: char| c.is_ascii_digit()).trim_start_matches(['.', ')', '-', '*', '•']);
            (stripped.len() < line.len()).then(|| Value::String(stripped.trim().trim_matches('"').to_string()))
        })
        .collect();
    (!lines.is_empty()).then(|| distinct_strings(&lines, max))
}

/// The strings of a JSON array (an object item gives its first string value), trimmed, without empty
/// ones and case-insensitive duplicates, at most `max`.
fn distinct_strings(items: &[Value], max: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        let item = match item {
            Value::String(s) => s.trim().to_string(),
            Value::Object(map) => map.values().find_map(|v| v.as_str()).unwrap_or_default().trim().to_string(),
            _ => continue,
        };
        if !item.is_empty() && !out.iter().any(|o| o.eq_ignore_ascii_case(&item)) && out.len() < max {
            out.push(item);
        }
    }
    out
}

/// DeepSearch's reflection reply `{"facts": [...], "queries": [...]}` as (facts, gap queries), each
/// cleaned as [`string_list`] does. Facts are read only from a `facts` array; a reply with facts but no
/// `queries` key gives `None` (its facts must not be searched as queries, which [`string_list`]'s
/// any-array fallback would do); other shapes fall back to [`string_list`] for the queries and no facts.
pub fn reflection_reply(text: &str, max_facts: usize, max_queries: usize) -> Option<(Vec<String>, Vec<String>)> {
    if let Some(Value::Object(map)) = find_json(text) {
        if map.contains_key("facts") || map.contains_key("queries") {
            let facts = match map.get("facts") {
                Some(Value::Array(items)) => distinct_strings(items, max_facts),
                _ => Vec::new(),
            };
            return match map.get("queries") {
                Some(Value::Array(items)) => Some((facts, distinct_strings(items, max_queries))),
                _ => None,
            };
        }
    }
    string_list(text, "queries", max_queries).map(|queries| (Vec::new(), queries))
}

/// A list of 1-based passage numbers in `1..=count`: `{"<key>": [1, 3]}` or `[1, 3]` (numbers given as
/// strings are accepted); failing JSON, every integer in the text. Out-of-range numbers and duplicates are
/// dropped. `None` when neither form is there.
pub fn number_list(text: &str, key: &str, count: usize) -> Option<Vec<usize>> {
    let numbers: Vec<i64> = match find_json(text).and_then(|v| array_at(&v, key)) {
        Some(items) => items
            .iter()
            .filter_map(|item| match item {
                Value::Number(n) => n.as_i64(),
                Value::String(s) => s.trim().trim_start_matches('[').trim_end_matches(']').parse().ok(),
                _ => None,
            })
            .collect(),
        None => {
            let cleaned = clean(text);
            let found = integers(&cleaned);
            if found.is_empty() && !cleaned.to_ascii_lowercase().contains("none") {
                return None;
            }
            found
        }
    };
    let mut out = Vec::new();
    for n in numbers {
        if n >= 1 && (n as usize) <= count && !out.contains(&(n as usize)) {
            out.push(n as usize);
        }
    }
    Some(out)
}

fn integers(text: &str) -> Vec<i64> {
    text.split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty() && s.len() < 10)
        .filter_map(|s| s.parse().ok())
        .collect()
}

/// A yes/no judgement: `{"<key>": true}` (or `"yes"`), else the first `yes`/`no`/`true`/`false` word.
pub fn yes_no(text: &str, key: &str) -> Option<bool> {
    if let Some(Value::Object(map)) = find_json(text) {
        let value = map.get(key).or_else(|| map.values().next());
        match value {
            Some(Value::Bool(b)) => return Some(*b),
            Some(Value::String(s)) => return word_yes_no(s),
            _ => {}
        }
    }
    word_yes_no(&clean(text))
}

fn word_yes_no(text: &str) -> Option<bool> {
    text.split(|c: char| !c.is_alphanumeric()).find_map(|word| match word.to_ascii_lowercase().as_str() {
        "yes" | "true" => Some(true),
        "no" | "false" => Some(false),
        _ => None,
    })
}

/// One of `options`: `{"<key>": "name"}`, else the first option named in the text, else the last number
/// in the text taken as a 1-based index into `options`.
pub fn choice(text: &str, key: &str, options: &[&str]) -> Option<usize> {
    if let Some(Value::Object(map)) = find_json(text) {
        if let Some(name) = map.get(key).and_then(Value::as_str) {
            if let Some(i) = options.iter().position(|o| o.eq_ignore_ascii_case(name.trim())) {
                return Some(i);
            }
        }
    }
    let cleaned = clean(text).to_ascii_lowercase();
    let words: Vec<&str> = cleaned.split(|c: char| !c.is_alphanumeric() && c != '_' && c != '-').collect();
    if let Some(i) = words.iter().find_map(|w| options.iter().position(|o| o.eq_ignore_ascii_case(w))) {
        return Some(i);
    }
    integers(&cleaned).last().and_then(|&n| (n >= 1 && (n as usize) <= options.len()).then(|| n as usize - 1))
}

/// The first non-empty line of the cleaned text, without quotes, a `Query:` label or a leading
/// "Search for" / "Look up" (Qwen2.5-1.5B writes `Search for "X` as a follow-up query); `None` if empty.
pub fn single_line(text: &str) -> Option<String> {
    let cleaned = clean(text);
    let line = cleaned.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = line
        .split_once(':')
        .filter(|(label, _)| label.len() < 20 && label.to_ascii_lowercase().contains("query"))
        .map(|(_, q)| q)
        .unwrap_or(line);
    let line = line.trim();
    let line = ["search for ", "look up "]
        .iter()
        .find_map(|verb| {
            line.get(..verb.len()).filter(|start| start.eq_ignore_ascii_case(verb)).map(|_| &line[verb.len()..])
        })
        .unwrap_or(line);
    let line = line.trim().trim_matches(['"', '`', '*']).trim();
    (!line.is_empty()).then(|| line.to_string())
}

/// A JSON schema for an object with one array-of-strings property `key` of at most `max` items.
pub fn strings_schema(key: &str, max: usize) -> Value {
    string_arrays_schema(&[(key, max)])
}

/// A JSON schema for an object whose required properties are arrays of strings, `(key, max items)`
/// each. llama.cpp's grammar writes the properties in the schema's order, which is alphabetical here
/// (serde_json's map), not the slice's.
pub fn string_arrays_schema(fields: &[(&str, usize)]) -> Value {
    let properties: serde_json::Map<String, Value> = fields
        .iter()
        .map(|(key, max)| {
            (key.to_string(), serde_json::json!({ "type": "array", "items": { "type": "string" }, "maxItems": max }))
        })
        .collect();
    let required: Vec<&str> = fields.iter().map(|(key, _)| *key).collect();
    serde_json::json!({ "type": "object", "properties": properties, "required": required })
}

/// A JSON schema for DeepSearch's reflection: `{"facts": [≤ max_facts strings], "queries": [≤ max_queries
/// strings]}`. The facts come first ("facts" sorts before "queries"), so a model writes down what the
/// passages established before it asks for what is missing.
pub fn reflection_schema(max_facts: usize, max_queries: usize) -> Value {
    string_arrays_schema(&[("facts", max_facts), ("queries", max_queries)])
}

/// A JSON schema for an object with one array-of-integers property `key`.
pub fn numbers_schema(key: &str) -> Value {
    serde_json::json!({
        "type": "object",
        "properties": { key: { "type": "array", "items": { "type": "integer" } } },
        "required": [key]
    })
}

/// A JSON schema for an object with one boolean property `key`.
pub fn boolean_schema(key: &str) -> Value {
    serde_json::json!({ "type": "object", "properties": { key: { "type": "boolean" } }, "required": [key] })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_require_every_string_array_with_its_bound() {
        let expected = serde_json::json!({
            "type": "object",
            "properties": {
                "facts": { "type": "array", "items": { "type": "string" }, "maxItems": 4 },
                "queries": { "type": "array", "items": { "type": "string" }, "maxItems": 3 }
            },
            "required": ["facts", "queries"]
        });
        assert_eq!(reflection_schema(4, 3), expected);
        let single = serde_json::json!({
            "type": "object",
            "properties": { "queries": { "type": "array", "items": { "type": "string" }, "maxItems": 2 } },
            "required": ["queries"]
        });
        assert_eq!(strings_schema("queries", 2), single);
    }

    #[test]
    fn reflection_replies_give_facts_and_queries_and_never_search_facts() {
        let reply =
            r#"{"facts": ["Blue Harbour was directed by Tomas Ek.", ""], "queries": ["Where was Tomas Ek born?"]}"#;
        assert_eq!(
            reflection_reply(reply, 4, 3),
            Some((
                vec!["Blue Harbour was directed by Tomas Ek.".to_string()],
                vec!["Where was Tomas Ek born?".to_string()]
            ))
        );
        assert_eq!(
            reflection_reply(r#"{"facts": ["Tomas Ek was born in Umeå."], "queries": []}"#, 4, 3).map(|r| r.1),
            Some(vec![])
        );
        assert_eq!(
            reflection_reply(r#"{"facts": ["Tomas Ek was born in Umeå."]}"#, 4, 3),
            None,
            "facts without queries"
        );
        assert_eq!(
            reflection_reply(r#"{"gaps": ["Tomas Ek birthplace"]}"#, 4, 3),
            Some((vec![], vec!["Tomas Ek birthplace".to_string()]))
        );
        assert_eq!(
            reflection_reply("- Tomas Ek birthplace", 4, 3),
            Some((vec![], vec!["Tomas Ek birthplace".to_string()]))
        );
        assert_eq!(reflection_reply("I cannot tell.", 4, 3), None);
    }

    #[test]
    fn json_is_found_behind_think_blocks_fences_and_prose() {
        let text = "<think>the user wants {x}</think>Sure! Here you go:\n```json\n{\"queries\": [\"a\", \"b\"]}\n```";
        assert_eq!(string_list(text, "queries", 4), Some(vec!["a".into(), "b".into()]));
        assert_eq!(string_list("[\"x\", \"X\", \"\", \"y\", \"z\"]", "queries", 2), Some(vec!["x".into(), "y".into()]));
        assert_eq!(
            string_list("1. first query\n2) second query", "queries", 4),
            Some(vec!["first query".into(), "second query".into()])
        );
        assert_eq!(string_list("{\"queries\": []}", "queries", 3), Some(vec![]));
        assert_eq!(string_list("I cannot help with that", "queries", 3), None);
        assert_eq!(find_json("text {\"a\": \"}\"} more"), Some(serde_json::json!({"a": "}"})));
    }

    #[test]
    fn numbers_yes_no_and_choices_have_fallbacks() {
        assert_eq!(number_list("{\"relevant\": [3, 1, 3, 9]}", "relevant", 4), Some(vec![3, 1]));
        assert_eq!(number_list("{\"relevant\": [\"2\"]}", "relevant", 4), Some(vec![2]));
        assert_eq!(number_list("Passages 2 and 4 help.", "relevant", 4), Some(vec![2, 4]));
        assert_eq!(number_list("none of them", "relevant", 4), Some(vec![]));
        assert_eq!(number_list("I am not sure", "relevant", 4), None);
        assert_eq!(yes_no("{\"enough\": false}", "enough"), Some(false));
        assert_eq!(yes_no("Yes, that is enough.", "enough"), Some(true));
        assert_eq!(yes_no("maybe", "enough"), None);
        let options = ["naive", "deep", "chain"];
        assert_eq!(choice("{\"agent\": \"chain\"}", "agent", &options), Some(2));
        assert_eq!(choice("I would use deep search here", "agent", &options), Some(1));
        assert_eq!(choice("option 1", "agent", &options), Some(0));
        assert_eq!(choice("no idea", "agent", &options), None);
        assert_eq!(single_line("\n  Query: \"who founded Acme?\"\nmore"), Some("who founded Acme?".into()));
        assert_eq!(single_line("Search for \"Dead Ernest's birthplace"), Some("Dead Ernest's birthplace".into()));
        assert_eq!(single_line("look up: x"), Some("look up: x".into()), "only the verb followed by a space goes");
        assert_eq!(single_line("Searching for Acme"), Some("Searching for Acme".into()));
    }
}
