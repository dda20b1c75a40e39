//! Research reports: a finished [`Answer`] as one Markdown document a person can keep and share.
//!
//! Layout (stable; CommonMark only, no tables or other extensions, so any renderer shows it the same):
//!
//! ```text
//! # <title, by default the question>
//! *Quarry research report · <date>*
//! ## Question            the question, as asked
//! ## Answer              the answer; every [n] links to its source below
//! ## Sources             per cited passage: [n], a link that opens the file (PDFs at the page),
//!                        the place (page / sheet / heading), the library, and the passage quoted
//! ### Also read          passages the answer was written from but does not cite (no quote)
//! ## Method              agent, libraries, model, queries per round, passages retrieved / kept,
//!                        model calls, tokens, seconds
//! ```
//!
//! Text from documents, the question and the model's answer are data: document text is escaped so it
//! shows exactly as stored (no Markdown or HTML in it takes effect), and `<` in the answer is escaped so
//! a model cannot put HTML into the report. Nothing the model writes can make a reader fetch or open a
//! URL ([`neutralise_links`]: its images, links, autolinks, bare URLs and link definitions become inert
//! text), so a document that tells the model to "end with this image" cannot phone home from an exported
//! report; the only links are Quarry's own (citations and sources). Links are relative to the folder the report is saved in
//! ([`ReportOptions::link_base`]), so the report and the library folders can move together.

use crate::answer::{pieces, Answer, Citation, Piece};
use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

/// How to write a report.
#[derive(Debug, Clone, Default)]
pub struct ReportOptions {
    /// The title (`#` heading); the question when `None`.
    pub title: Option<String>,
    /// When it was written, shown under the title as given (e.g. `2026-11-23 14:05`).
    pub date: String,
    /// The folder the report will be saved in: links to cited files are relative to it. `None` writes
    /// absolute paths.
    pub link_base: Option<PathBuf>,
}

/// The claims of `claims` that the claim check did not support, as a quoted list after the text they
/// belong to (an answer, or a section of a long-form report): each sentence and why. Nothing when all
/// are supported.
pub(crate) fn write_unsupported(out: &mut String, claims: &[crate::answer::ClaimCheck]) {
    let unsupported: Vec<_> = claims.iter().filter(|c| !c.supported).collect();
    if unsupported.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "> **Unsupported by the cited passages** ({} of {} claims; check them before relying on them):\n>",
        unsupported.len(),
        claims.len()
    );
    for claim in unsupported {
        let _ = writeln!(out, "> - “{}” — {}", escape_inline(&claim.sentence), escape_inline(&claim.problem));
    }
    out.push('\n');
}

/// The report for `answer` as CommonMark text (ends with a newline).
pub fn render_report(answer: &Answer, options: &ReportOptions) -> String {
    let mut out = String::new();
    write_title(&mut out, options, &answer.question);

    out.push_str("## Question\n\n");
    let _ = writeln!(out, "{}\n", escape_block(&answer.question));

    out.push_str("## Answer\n\n");
    let body = link_citations(&demote_headings(&escape_html(&neutralise_links(&answer.markdown))), &cited_set(answer));
    let _ = writeln!(out, "{}\n", body.trim());
    write_unsupported(&mut out, &answer.claims);

    out.push_str("## Sources\n\n");
    if answer.citations.is_empty() {
        out.push_str(if answer.nothing_found {
            "No passage in the searched libraries was relevant to the question.\n\n"
        } else {
            "The answer cites no passage.\n\n"
        });
    }
    for citation in &answer.citations {
        write_source(&mut out, citation, options.link_base.as_deref());
    }
    let uncited: Vec<&Citation> =
        answer.sources.iter().filter(|s| !answer.citations.iter().any(|c| c.number == s.number)).collect();
    write_also_read(&mut out, &uncited, "the answer was", options.link_base.as_deref());

    out.push_str("## Method\n\n");
    let libraries = if answer.libraries.is_empty() {
        "—".to_string()
    } else {
        answer.libraries.iter().map(|l| escape_inline(l)).collect::<Vec<_>>().join(", ")
    };
    let _ = writeln!(out, "- **Agent:** {}", escape_inline(&answer.agent));
    let _ = writeln!(out, "- **Libraries:** {libraries}");
    let _ = writeln!(out, "- **Model:** {}", escape_inline(&answer.model));
    let _ = writeln!(
        out,
        "- **Passages:** {} retrieved, {} used for the answer, {} cited",
        answer.retrieved,
        answer.kept,
        answer.citations.len()
    );
    write_cost(&mut out, answer.llm_calls, &answer.usage, answer.seconds);
    if !answer.queries.is_empty() {
        out.push_str("- **Queries:**\n");
        for (i, round) in answer.queries.iter().enumerate() {
            let list =
                round.iter().map(|q| format!("“{}”", escape_inline(&one_line(q)))).collect::<Vec<_>>().join("; ");
            let _ = writeln!(out, "  - round {}: {list}", i + 1);
        }
    }
    if !answer.web_queries.is_empty() {
        out.push_str(
            "- **Web queries** (only these left the machine):
",
        );
        for q in &answer.web_queries {
            let what = if q.sent {
                format!("sent to {}", escape_inline(&q.source))
            } else {
                format!("withheld from {} (written by the model)", escape_inline(&q.source))
            };
            let _ = writeln!(out, "  - {what}: “{}”", escape_inline(&one_line(&q.query)));
        }
    }
    out
}

/// The `#` title (the option's, else `fallback`) and the line under it with the date.
/// The "Model calls" and "Time" lines of a report's run details: calls, tokens (prompt and completion)
/// and wall-clock seconds.
pub(crate) fn write_cost(out: &mut String, llm_calls: usize, usage: &quarry_core::TokenUsage, seconds: f64) {
    let _ = writeln!(
        out,
        "- **Model calls:** {llm_calls}, {} tokens ({} prompt, {} completion)",
        usage.total(),
        usage.prompt_tokens,
        usage.completion_tokens
    );
    let _ = writeln!(out, "- **Time:** {seconds:.1} s");
}

pub(crate) fn write_title(out: &mut String, options: &ReportOptions, fallback: &str) {
    let title = options.title.as_deref().filter(|t| !t.trim().is_empty()).unwrap_or(fallback);
    let _ = writeln!(out, "# {}\n", escape_inline(&one_line(title)));
    if options.date.is_empty() {
        out.push_str("*Quarry research report*\n\n");
    } else {
        let _ = writeln!(out, "*Quarry research report · {}*\n", escape_inline(&options.date));
    }
}

/// The "Also read" list of passages `who` ("the answer was") written from without citing; nothing when
/// there are none.
pub(crate) fn write_also_read(out: &mut String, uncited: &[&Citation], who: &str, base: Option<&Path>) {
    if uncited.is_empty() {
        return;
    }
    let _ = writeln!(out, "### Also read\n\nPassages {who} written from without citing them:\n");
    for source in uncited {
        let _ = writeln!(out, "- {} {}", source_label(source.number), location(source, base));
    }
    out.push('\n');
}

/// The numbers of the cited sources (the ones with an anchor in the Sources section).
fn cited_set(answer: &Answer) -> Vec<usize> {
    answer.citations.iter().map(|c| c.number).collect()
}

pub(crate) fn source_label(number: usize) -> String {
    format!("\\[{number}\\]")
}

/// One cited source: label, anchor, link and place, library, then the passage as a block quote.
pub(crate) fn write_source(out: &mut String, citation: &Citation, base: Option<&Path>) {
    let _ = writeln!(
        out,
        "{} <a id=\"source-{}\"></a>{}\n",
        source_label(citation.number),
        citation.number,
        location(citation, base)
    );
    let text = escape_block(citation.passage.text.trim());
    for line in text.lines() {
        if line.is_empty() {
            out.push_str(">\n");
        } else {
            let _ = writeln!(out, "> {line}");
        }
    }
    out.push('\n');
}

/// `[file.pdf](../docs/file.pdf#page=3), p. 3 · library *papers*` (ZIP members: the member's name, a
/// link to the archive, and `in archive.zip`).
pub(crate) fn location(citation: &Citation, base: Option<&Path>) -> String {
    let p = &citation.passage;
    if let Some(url) = p.url() {
        // A web page: its title, linked to its URL (angle brackets: a parsed URL holds no `<`, `>` or
        // line break).
        let title = p.heading_path.first().filter(|t| !t.trim().is_empty()).map(String::as_str).unwrap_or(url);
        let url: String = url.chars().filter(|c| !matches!(c, '<' | '>' | '\n' | '\r')).collect();
        return format!("[{}](<{url}>) · web", escape_inline(title));
    }
    let (file, member) = match p.path.split_once("!/") {
        Some((archive, member)) => (archive, Some(member)),
        None => (p.path.as_str(), None),
    };
    let mut target = link_target(Path::new(file), base);
    if member.is_none() && file.to_ascii_lowercase().ends_with(".pdf") {
        if let Some(page) = p.page_start {
            let _ = write!(target, "#page={page}");
        }
    }
    let mut s = format!("[{}]({target})", escape_inline(p.file_name()));
    if member.is_some() {
        let archive =
            Path::new(file).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| file.to_string());
        let _ = write!(s, " in {}", escape_inline(&archive));
    }
    let place = p.place();
    if !place.is_empty() {
        let _ = write!(s, ", {}", escape_inline(&place));
    }
    if !p.library.is_empty() {
        let _ = write!(s, " · library *{}*", escape_inline(&p.library));
    }
    s
}

/// Characters percent-encoded in link destinations: controls, space and what CommonMark or URLs give a
/// meaning (`<>()[]#?%"\` and the backtick).
const LINK: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'<')
    .add(b'>')
    .add(b'(')
    .add(b')')
    .add(b'[')
    .add(b']')
    .add(b'#')
    .add(b'?')
    .add(b'%')
    .add(b'"')
    .add(b'\\')
    .add(b'`');

/// The link destination for `file`: relative to `base` when both are absolute, with `/` separators,
/// percent-encoded.
fn link_target(file: &Path, base: Option<&Path>) -> String {
    let path = match base {
        Some(base) if file.is_absolute() && base.is_absolute() => relative_path(file, base),
        _ => file.to_path_buf(),
    };
    let joined = path.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>();
    let text = if path.is_absolute() { format!("/{}", joined[1..].join("/")) } else { joined.join("/") };
    utf8_percent_encode(&text, LINK).to_string()
}

/// `file` as a path relative to the folder `base` (both absolute): `../docs/a.pdf`.
pub fn relative_path(file: &Path, base: &Path) -> PathBuf {
    let (file, base) = (normal_components(file), normal_components(base));
    let common = file.iter().zip(base.iter()).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..base.len() {
        out.push("..");
    }
    for c in &file[common..] {
        out.push(c.as_os_str());
    }
    out
}

fn normal_components(path: &Path) -> Vec<Component<'_>> {
    path.components().filter(|c| !matches!(c, Component::CurDir)).collect()
}

pub(crate) fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Escapes the characters that start Markdown inline syntax or HTML (`\`, `` ` ``, `*`, `_`, `[`, `]`,
/// `<`, `>`, `#`, `|`, `~`, `!`, `&`), so `s` renders literally inside a line.
pub fn escape_inline(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if matches!(c, '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '#' | '|' | '~' | '!' | '&') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Escapes document text so it renders literally as paragraphs: inline syntax as [`escape_inline`],
/// plus what would start a block at the beginning of a line (list markers `-`/`+`/`1.`/`1)`, setext
/// underlines `=`, indented code). Lines are trimmed; paragraph breaks (blank lines) are kept.
pub fn escape_block(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut blank_run = 0;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() {
            blank_run += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank_run > 0 { "\n\n" } else { "\n" });
        }
        blank_run = 0;
        let escaped = escape_inline(line);
        let first = escaped.chars().next().unwrap_or(' ');
        if matches!(first, '-' | '+' | '=') {
            out.push('\\');
            out.push_str(&escaped);
        } else if first.is_ascii_digit() {
            // `12. ` or `3) ` starts an ordered list.
            let digits = escaped.chars().take_while(|c| c.is_ascii_digit()).count();
            let (number, rest) = escaped.split_at(digits);
            if rest.starts_with('.') || rest.starts_with(')') {
                out.push_str(number);
                out.push('\\');
                out.push_str(rest);
            } else {
                out.push_str(&escaped);
            }
        } else {
            out.push_str(&escaped);
        }
    }
    out
}

/// Model-written Markdown made inert: an image `![alt](url)` becomes `alt (image not shown: `url`)`, a
/// link `[text](url)` becomes `text (`url`)`, a bare URL (`http(s)://`, `ftp://`, `www.`) is put in a code
/// span (renderers that link bare URLs leave code alone), and a link reference definition (`[id]: url`)
/// loses its meaning (its `[` escaped), so `![x][id]` is text too. Code spans and fenced code are kept
/// as written; raw HTML is left to [`escape_html`]. Returns the text with the same lines.
///
/// Why: a report or an MCP answer is read where images load by themselves; a model steered by a hostile
/// passage could otherwise put the person's data in an image URL.
pub fn neutralise_links(markdown: &str) -> String {
    use std::sync::OnceLock;
    static LINK: OnceLock<Option<regex::Regex>> = OnceLock::new();
    static DEFINITION: OnceLock<Option<regex::Regex>> = OnceLock::new();
    let link = LINK.get_or_init(|| {
        regex::Regex::new(
            r#"(!?)\[([^\[\]\n]*)\]\(\s*([^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)|(?i:\b(?:https?|ftp)://|\bwww\.)[^\s<>()\[\]`]+"#,
        )
        .ok()
    });
    let definition = DEFINITION.get_or_init(|| regex::Regex::new(r"^ {0,3}\[[^\]\n]+\]:").ok());
    let (Some(link), Some(definition)) = (link, definition) else { return markdown.to_string() };
    let inert = |text: &str| -> String {
        link.replace_all(text, |caps: &regex::Captures<'_>| {
            let code = |url: &str| format!("`{}`", url.replace('`', ""));
            match (caps.get(1), caps.get(2), caps.get(3)) {
                (Some(bang), Some(label), Some(url)) if bang.as_str() == "!" => {
                    format!("{} (image not shown: {})", label.as_str(), code(url.as_str()))
                }
                (Some(_), Some(label), Some(url)) => format!("{} ({})", label.as_str(), code(url.as_str())),
                _ => code(&caps[0]),
            }
        })
        .into_owned()
    };
    let mut out = outside_fences(markdown, |line, out| {
        // `[id]: url` at a line's start defines a link target: escape its `[` so it defines nothing.
        let line = match definition.find(line).and_then(|found| line[found.start()..].find('[')) {
            Some(bracket) => format!("{}\\{}", &line[..bracket], &line[bracket..]),
            None => line.to_string(),
        };
        // Outside code spans only.
        code_spans(&line, out, |text, out| out.push_str(&inert(text)));
    });
    if !markdown.ends_with('\n') {
        out.pop();
    }
    out
}

/// `<` in model output becomes `&lt;` so it cannot carry HTML (code spans and fences are left alone:
/// there it is literal anyway).
pub(crate) fn escape_html(markdown: &str) -> String {
    outside_fences(markdown, |line, out| code_spans(line, out, |text, out| out.push_str(&text.replace('<', "&lt;"))))
}

/// `line` written to `out` with its code spans (between two backticks) copied as they are and the text
/// between them written by `text`. A backtick with no partner later in the line opens no span: the
/// rest of the line is text, as CommonMark reads it.
fn code_spans(line: &str, out: &mut String, mut text: impl FnMut(&str, &mut String)) {
    let pieces: Vec<&str> = line.split('`').collect();
    let unmatched_tail = pieces.len().is_multiple_of(2);
    for (i, piece) in pieces.iter().enumerate() {
        if i > 0 {
            out.push('`');
        }
        let is_code = i % 2 == 1 && !(unmatched_tail && i + 1 == pieces.len());
        if is_code {
            out.push_str(piece);
        } else {
            text(piece, out);
        }
    }
}

/// `markdown` line by line, each ending in `\n`: lines of fenced code blocks (``` or ~~~) and their
/// fence lines copied as they are, every other line written by `rewrite` into the output.
fn outside_fences(markdown: &str, mut rewrite: impl FnMut(&str, &mut String)) -> String {
    let mut out = String::with_capacity(markdown.len() + 16);
    let mut in_fence = false;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            out.push_str(line);
        } else if in_fence {
            out.push_str(line);
        } else {
            rewrite(line, &mut out);
        }
        out.push('\n');
    }
    out
}

/// Headings in the answer go two levels down (`#` → `###`) so they sit under "## Answer".
pub(crate) fn demote_headings(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len() + 16);
    let mut in_fence = false;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
        }
        match crate::text::heading_level(line).filter(|_| !in_fence) {
            Some(hashes) => {
                out.push_str(&"#".repeat((hashes + 2).min(6)));
                out.push_str(&trimmed[hashes..]);
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// Citation markers (`[2]`, `[1, 3]`, `[1-2]`) whose numbers are all in `cited` become links to the
/// sources' anchors: `[\[2\]](#source-2)`. Other bracketed text, and a marker that is already a link
/// (`[1](…)`), is left as it is.
pub(crate) fn link_citations(markdown: &str, cited: &[usize]) -> String {
    let pieces = pieces(markdown);
    let mut out = String::with_capacity(markdown.len() + 64);
    for (i, piece) in pieces.iter().enumerate() {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Marker { raw, numbers } => {
                let is_link = matches!(pieces.get(i + 1), Some(Piece::Text(next)) if next.starts_with('('));
                if is_link || !numbers.iter().all(|n| cited.contains(n)) {
                    out.push_str(raw);
                } else {
                    for n in numbers {
                        let _ = write!(out, "[\\[{n}\\]](#source-{n})");
                    }
                }
            }
        }
    }
    out
}

/// The folder a report at `path` goes in, as an absolute path (the base of its relative links).
///
/// Errors (naming the file): `path` is a folder, or its folder does not exist.
pub fn report_folder(path: &Path) -> std::io::Result<PathBuf> {
    if path.is_dir() {
        return Err(std::io::Error::other(format!(
            "cannot write the report to {}: it is a folder (give a file name, e.g. report.md)",
            path.display()
        )));
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    parent.canonicalize().map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("cannot write the report to {}: no folder {}", path.display(), parent.display()),
        )
    })
}

/// Writes `text` to `path` through a temporary file in the same folder, so an interrupted write never
/// leaves half a report (or destroys an earlier one).
///
/// Errors (naming the file): the folder is not writable, the disk is full.
pub fn write_report(path: &Path, text: &str) -> std::io::Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "report.md".into());
    let partial = path.with_file_name(format!(".{name}.part"));
    let named =
        |e: std::io::Error, p: &Path| std::io::Error::new(e.kind(), format!("writing the report {}: {e}", p.display()));
    std::fs::write(&partial, text).map_err(|e| named(e, &partial))?;
    std::fs::rename(&partial, path).map_err(|e| named(e, path))
}
