//! Readable text of an HTML page: the article as Mozilla's Readability finds it (through `dom_smoothie`),
//! or, when the page has no article shape (a list, a short note), all of its text through `html2text`.

/// Most elements Readability scores; larger pages fall back to plain rendering.
const MAX_ELEMENTS: usize = 30_000;

/// (title, text) of `html`; `url` resolves relative links. The text has paragraphs separated by blank
/// lines. Never fails: the worst case is the page's whole text.
pub fn readable_text(html: &str, url: Option<&str>) -> (String, String) {
    let config = dom_smoothie::Config {
        max_elements_to_parse: MAX_ELEMENTS,
        text_mode: dom_smoothie::TextMode::Formatted,
        ..Default::default()
    };
    let article = dom_smoothie::Readability::new(html, url, Some(config)).ok().and_then(|mut r| r.parse().ok());
    let title_of_page = page_title(html);
    if let Some(article) = article {
        let text = tidy(article.text_content.as_ref());
        if text.chars().count() >= 200 {
            let title = if article.title.trim().is_empty() { title_of_page } else { article.title.trim().to_string() };
            return (title, text);
        }
    }
    let text = html2text::config::plain_no_decorate()
        .string_from_read(html.as_bytes(), 100_000)
        .map(|t| tidy(&t))
        .unwrap_or_default();
    (title_of_page, text)
}

/// The `<title>` of a page, whitespace collapsed.
fn page_title(html: &str) -> String {
    let lower = html.to_ascii_lowercase();
    let Some(start) = lower.find("<title") else { return String::new() };
    let Some(open_end) = lower[start..].find('>').map(|i| start + i + 1) else { return String::new() };
    let Some(end) = lower[open_end..].find("</title").map(|i| open_end + i) else { return String::new() };
    html[open_end..end].split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Lines trimmed, runs of blank lines collapsed to one.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = false;
    for line in text.lines().map(str::trim) {
        if line.is_empty() {
            blank = !out.is_empty();
            continue;
        }
        if blank {
            out.push_str("\n\n");
            blank = false;
        } else if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_short_page_falls_back_to_its_whole_text_and_title() {
        let (title, text) = super::readable_text("<html><head><title> A  note </title></head><body><p>Hello <b>there</b></p><script>x()</script></body></html>", None);
        assert_eq!(title, "A note");
        assert!(text.contains("Hello there") && !text.contains("x()"), "{text}");
    }
}
