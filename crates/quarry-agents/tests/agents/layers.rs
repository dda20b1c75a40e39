//! The crate's modules import downward only (docs/ARCHITECTURE.md, "Inside `quarry-agents`"): read from
//! the sources, not from memory. A module is a file under `src/` (a `mod.rs` names its folder); all of
//! `genre/financial/` counts as one module, the genre layer. What a module imports is every `crate::…`
//! path in its code — comments and its `#[cfg(test)]` part left out, `use crate::{a, b}` read as both.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module name of a source file relative to `src/`, read as an import of its path is ([`target_of`]):
/// `genre/financial/key_quote.rs` → `genre::financial`, `genre/mod.rs` → `genre`.
fn module_of(relative: &str) -> String {
    target_of(&relative.trim_end_matches(".rs").trim_end_matches("/mod").replace('/', "::"))
}

/// The module a `crate::` path names: its first segment, or `genre::financial` for that layer.
fn target_of(path: &str) -> String {
    let mut segments = path.split("::");
    let first = segments.next().unwrap_or_default();
    match (first, segments.next()) {
        ("genre", Some("financial")) => "genre::financial".to_string(),
        _ => first.to_string(),
    }
}

/// Code of a source file without comments and without its `#[cfg(test)]` part (always at the end here).
fn code_of(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines().map(|line| line.split("//").next().unwrap_or_default()).collect::<Vec<_>>().join("\n")
}

/// The modules `code` imports through `crate::` paths.
fn imports_of(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = group.split('}').next().unwrap_or_default();
            for item in group.split(',') {
                let item = item.trim();
                if !item.is_empty() {
                    found.insert(target_of(item));
                }
            }
        } else {
            let path: String =
                rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':').collect();
            found.insert(target_of(&path));
        }
    }
    found
}

fn source_files(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            source_files(&path, root, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            out.push((relative, std::fs::read_to_string(&path).unwrap()));
        }
    }
}

/// Module → the other modules of the crate it imports.
fn import_graph() -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    source_files(&root, &root, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (relative, text) in &files {
        let module = module_of(relative);
        let imports = imports_of(&code_of(text));
        graph.entry(module.clone()).or_default().extend(imports.into_iter().filter(|m| *m != module));
    }
    let known: BTreeSet<String> = graph.keys().cloned().collect();
    for imports in graph.values_mut() {
        imports.retain(|m| known.contains(m));
    }
    graph
}

/// A cycle through `start`, as the modules along it, if there is one (depth-first search).
fn cycle_from(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    fn walk(
        graph: &BTreeMap<String, BTreeSet<String>>,
        start: &str,
        at: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        for next in graph.get(at).into_iter().flatten() {
            if next == start {
                let mut cycle = path.clone();
                cycle.push(start.to_string());
                return Some(cycle);
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if let Some(cycle) = walk(graph, start, next, path, seen) {
                    return Some(cycle);
                }
                path.pop();
            }
        }
        None
    }
    walk(graph, start, start, &mut vec![start.to_string()], &mut BTreeSet::new())
}

#[test]
fn the_modules_import_downward_only_and_only_genre_reaches_the_financial_layer() {
    let graph = import_graph();
    // The reading itself: modules the architecture names, with imports it draws.
    for module in ["text", "genre", "genre::financial", "answer", "claims", "run", "per_document", "naive"] {
        assert!(graph.contains_key(module), "no module {module} read: {:?}", graph.keys());
    }
    assert!(graph["run"].contains("answer") && graph["naive"].contains("run"), "{graph:?}");
    for module in graph.keys() {
        if let Some(cycle) = cycle_from(&graph, module) {
            panic!("import cycle: {}", cycle.join(" → "));
        }
    }
    let reaching: Vec<&String> = graph
        .iter()
        .filter(|(module, imports)| !module.starts_with("genre") && imports.contains("genre::financial"))
        .map(|(module, _)| module)
        .collect();
    assert!(reaching.is_empty(), "outside genre/, these import genre::financial: {reaching:?}");
}

#[test]
fn the_import_reading_sees_grouped_paths_and_skips_comments_and_tests() {
    let code = code_of(
        "use crate::{answer::Answer, text};\n// crate::run in a comment\nfn f() { crate::genre::financial::x(); }\n\
         #[cfg(test)]\nmod tests { use crate::claims; }\n",
    );
    let imports = imports_of(&code);
    assert_eq!(imports, ["answer", "genre::financial", "text"].into_iter().map(String::from).collect());
    assert_eq!(module_of("genre/financial/key_quote.rs"), "genre::financial");
    assert_eq!(module_of("genre/mod.rs"), "genre");
    let mut graph = BTreeMap::new();
    graph.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    graph.insert("b".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(cycle_from(&graph, "a"), Some(vec!["a".to_string(), "b".to_string(), "a".to_string()]));
}
