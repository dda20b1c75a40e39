//! Downloading a result page: size-capped, decoded by its declared charset (HTTP header, then
//! `<meta charset>`), reduced to readable text.

use crate::{PageReader, WebError};
use quarry_net::HttpClient;

/// A fetched page as text.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// The URL asked for.
    pub url: String,
    /// The page's `<title>`, or its URL when it has none.
    pub title: String,
    /// Readable text, paragraphs separated by blank lines.
    pub text: String,
    /// True when the page was larger than the cap and only its start was read.
    pub truncated: bool,
}

/// Fetches `url` through `client` and returns its readable text, read in this process
/// ([`crate::in_process_reader`]; see [`fetch_page_read_by`]).
pub async fn fetch_page(
    client: &HttpClient,
    url: &str,
    max_bytes: usize,
    timeout_seconds: u64,
) -> Result<Page, WebError> {
    fetch_page_read_by(client, url, max_bytes, timeout_seconds, &crate::in_process_reader()).await
}

/// Fetches `url` through `client` and returns its readable text, HTML reduced by `reader` (on a blocking
/// thread). Reads at most `max_bytes` of the body (the rest is not downloaded; `truncated` says so).
/// Accepts HTML, XHTML and plain text. Errors: offline mode, unreachable, timeout ([`WebError::Timeout`]
/// with `timeout_seconds`), an HTTP error status, another content type ([`WebError::NotReadable`]), or
/// the reader failed ([`WebError::Unreadable`]).
pub async fn fetch_page_read_by(
    client: &HttpClient,
    url: &str,
    max_bytes: usize,
    timeout_seconds: u64,
    reader: &PageReader,
) -> Result<Page, WebError> {
    let what = format!("page {url}");
    let mut response = client
        .get(url)?
        .header("Accept", "text/html,application/xhtml+xml,text/plain;q=0.8")
        .send()
        .await
        .map_err(|e| WebError::transport(&what, &e, timeout_seconds))?;
    let status = response.status();
    if !status.is_success() {
        return Err(WebError::Http {
            what,
            status: status.as_u16(),
            message: status.canonical_reason().unwrap_or("").to_string(),
        });
    }
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("text/html")
        .to_ascii_lowercase();
    let is_html = content_type.contains("html") || content_type.contains("xml");
    if !is_html && !content_type.starts_with("text/plain") {
        return Err(WebError::NotReadable { url: url.to_string(), content_type });
    }
    let mut body = Vec::new();
    let mut truncated = false;
    while let Some(piece) = response.chunk().await.map_err(|e| WebError::transport(&what, &e, timeout_seconds))? {
        let room = max_bytes.saturating_sub(body.len());
        if piece.len() > room {
            body.extend_from_slice(&piece[..room]);
            truncated = true;
            break;
        }
        body.extend_from_slice(&piece);
    }
    let text = decode(&body, &content_type);
    let (title, text) = if is_html {
        let (reader, page_url) = (reader.clone(), url.to_string());
        tokio::task::spawn_blocking(move || reader(text, page_url))
            .await
            .map_err(|e| e.to_string())
            .and_then(|read| read)
            .map_err(|reason| WebError::Unreadable { url: url.to_string(), reason })?
    } else {
        (String::new(), text)
    };
    let title = if title.is_empty() { url.to_string() } else { title };
    Ok(Page { url: url.to_string(), title, text, truncated })
}

/// The body decoded by the charset of the Content-Type header, else of a `<meta>` in the first 2 kB,
/// else UTF-8 (invalid bytes replaced).
fn decode(body: &[u8], content_type: &str) -> String {
    let label = charset_in(content_type).or_else(|| {
        let head = String::from_utf8_lossy(&body[..body.len().min(2048)]).to_ascii_lowercase();
        charset_in(&head)
    });
    let encoding = label.and_then(|l| encoding_rs::Encoding::for_label(l.as_bytes())).unwrap_or(encoding_rs::UTF_8);
    encoding.decode(body).0.into_owned()
}

/// The value after `charset=` in `text`, if any.
fn charset_in(text: &str) -> Option<String> {
    let at = text.find("charset=")? + "charset=".len();
    let value: String = text[at..]
        .trim_start_matches(['"', '\''])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || "-_:".contains(*c))
        .collect();
    (!value.is_empty()).then_some(value)
}

#[cfg(test)]
mod tests {
    #[test]
    fn charsets_come_from_the_header_then_the_meta_tag() {
        assert_eq!(super::charset_in("text/html; charset=windows-1255"), Some("windows-1255".into()));
        assert_eq!(
            super::charset_in(r#"<meta http-equiv="content-type" content="text/html; charset=utf_8" />"#),
            Some("utf_8".into())
        );
        let hebrew = encoding_rs::WINDOWS_1255.encode("<meta charset=\"windows-1255\"><p>שלום</p>").0;
        assert!(super::decode(&hebrew, "text/html").contains("שלום"));
    }
}
