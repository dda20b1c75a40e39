//! Format detection from a file's bytes. Extensions are only used to tell apart formats whose bytes are
//! the same kind of thing (Markdown, CSV and plain text are all text).

use crate::IngestError;
use quarry_core::Format;
use std::io::{Cursor, Read};

const OLE2_MAGIC: &[u8] = &[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1];

/// Decides the format of `bytes`; `name` (a file name or virtual path) only breaks ties between text kinds.
///
/// Errors: [`IngestError::Unsupported`] naming what the file is (legacy Word, image, RTF, …) when Quarry
/// cannot read it; [`IngestError::Encrypted`] for password-protected Office files.
pub fn detect_format(name: &str, bytes: &[u8]) -> Result<Format, IngestError> {
    let head = &bytes[..bytes.len().min(1024)];
    if find(head, b"%PDF-").is_some() {
        return Ok(Format::Pdf);
    }
    if bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06") || bytes.starts_with(b"PK\x07\x08") {
        return Ok(detect_zip_container(bytes));
    }
    if bytes.starts_with(OLE2_MAGIC) {
        return detect_ole2(bytes);
    }
    if is_picture(bytes) {
        return Ok(Format::Image);
    }
    if bytes.starts_with(b"{\\rtf") {
        return Ok(Format::Rtf);
    }
    if let Some(kind) = known_binary(bytes) {
        return Err(IngestError::Unsupported(kind.to_string()));
    }
    if has_zip_end_record(bytes) && !crate::text::looks_like_text(bytes) {
        // The local header is damaged but the end-of-central-directory record is there: a broken ZIP,
        // which the ZIP loader names precisely. (Checked after OLE2: legacy Office files embed ZIP parts.)
        return Ok(Format::Zip);
    }
    if crate::text::looks_like_text(bytes) {
        return detect_text_kind(name, bytes);
    }
    Err(IngestError::Unsupported(format!("binary file of unknown type{}", extension_hint(name))))
}

/// The end-of-central-directory record sits in the last 22 bytes + up to 64 KiB of comment.
fn has_zip_end_record(bytes: &[u8]) -> bool {
    let tail = &bytes[bytes.len().saturating_sub((64 << 10) + 22)..];
    find(tail, b"PK\x05\x06").is_some()
}

fn extension_hint(name: &str) -> String {
    match extension(name) {
        Some(ext) => format!(" (.{ext})"),
        None => String::new(),
    }
}

pub(crate) fn extension(name: &str) -> Option<String> {
    let file = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let (stem, ext) = file.rsplit_once('.')?;
    (!stem.is_empty()).then(|| ext.to_ascii_lowercase())
}

/// OOXML, OpenDocument and EPUB are ZIP files; look inside to tell which.
fn detect_zip_container(bytes: &[u8]) -> Format {
    let Ok(mut archive) = zip::ZipArchive::new(Cursor::new(bytes)) else {
        // A damaged archive: the ZIP loader reports what is wrong with it.
        return Format::Zip;
    };
    let has = |archive: &zip::ZipArchive<Cursor<&[u8]>>, name: &str| archive.index_for_name(name).is_some();
    if has(&archive, "word/document.xml") || has(&archive, "word/document2.xml") {
        return Format::Docx;
    }
    if has(&archive, "ppt/presentation.xml") {
        return Format::Pptx;
    }
    if has(&archive, "xl/workbook.bin") {
        return Format::Xlsb;
    }
    if has(&archive, "xl/workbook.xml") {
        let macro_enabled =
            read_small_member(&mut archive, "[Content_Types].xml").map(|t| t.contains("macroEnabled")).unwrap_or(false);
        return if macro_enabled { Format::Xlsm } else { Format::Xlsx };
    }
    if let Some(mime) = read_small_member(&mut archive, "mimetype") {
        match mime.trim() {
            "application/vnd.oasis.opendocument.spreadsheet" => return Format::Ods,
            "application/vnd.oasis.opendocument.text" => return Format::Odt,
            "application/vnd.oasis.opendocument.presentation" => return Format::Odp,
            "application/epub+zip" => return Format::Epub,
            _ => {}
        }
    }
    if has(&archive, "META-INF/container.xml") && archive.file_names().any(|n| n.ends_with(".opf")) {
        return Format::Epub; // an EPUB whose `mimetype` entry is missing
    }
    Format::Zip
}

/// Names of OOXML/OpenDocument packages Quarry does not read yet, so the ZIP loader can say so instead of
/// unpacking their XML parts as if they were the user's files.
pub(crate) fn unsupported_package_kind(bytes: &[u8]) -> Option<&'static str> {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).ok()?;
    if let Some(mime) = read_small_member(&mut archive, "mimetype") {
        return match mime.trim() {
            m if m.starts_with("application/vnd.oasis.opendocument") => Some("OpenDocument file"),
            _ => None,
        };
    }
    None
}

fn read_small_member(archive: &mut zip::ZipArchive<Cursor<&[u8]>>, name: &str) -> Option<String> {
    let file = archive.by_name(name).ok()?;
    let mut text = String::new();
    file.take(64 * 1024).read_to_string(&mut text).ok()?;
    Some(text)
}

/// OLE2 compound files hold legacy Office documents, Outlook messages and password-protected OOXML. The
/// names of the root storage's entries tell them apart (read with `cfb`, so a stream name inside an
/// attachment's bytes cannot mislead); a directory `cfb` cannot read is searched for the names as
/// UTF-16LE bytes instead.
fn detect_ole2(bytes: &[u8]) -> Result<Format, IngestError> {
    let root_names: Option<Vec<String>> = cfb::CompoundFile::open(Cursor::new(bytes))
        .ok()
        .and_then(|file| file.read_storage("/").ok().map(|entries| entries.map(|e| e.name().to_string()).collect()));
    let has = |name: &str| match &root_names {
        Some(names) => names.iter().any(|n| n.starts_with(name)),
        None => {
            let utf16: Vec<u8> = name.encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
            find(bytes, &utf16).is_some()
        }
    };
    if has("__substg1.0_") || has("__properties_version1.0") {
        return Ok(Format::Msg);
    }
    if has("EncryptedPackage") {
        return Err(IngestError::Encrypted("password-protected Office document".into()));
    }
    if has("Workbook") || has("Book") {
        return Ok(Format::Xls);
    }
    let kind = if has("WordDocument") {
        "legacy Word 97-2003 document (.doc); save it as .docx"
    } else if has("PowerPoint Document") {
        "legacy PowerPoint presentation (.ppt); save it as .pptx"
    } else {
        "OLE2 compound file of unknown kind"
    };
    Err(IngestError::Unsupported(kind.into()))
}

/// PNG, JPEG and TIFF: the pictures OCR reads (see [`crate::ocr::load_image`]).
fn is_picture(bytes: &[u8]) -> bool {
    const SIGNATURES: &[&[u8]] = &[b"\x89PNG\r\n\x1a\n", b"\xFF\xD8\xFF", b"II*\x00", b"MM\x00*"];
    SIGNATURES.iter().any(|magic| bytes.starts_with(magic))
}

fn known_binary(bytes: &[u8]) -> Option<&'static str> {
    const SIGNATURES: &[(&[u8], &str)] = &[
        (b"GIF87a", "GIF image"),
        (b"GIF89a", "GIF image"),
        (b"\x1F\x8B", "gzip archive"),
        (b"7z\xBC\xAF\x27\x1C", "7-Zip archive"),
        (b"Rar!\x1A\x07", "RAR archive"),
        (b"\x7FELF", "executable"),
        (b"MZ", "Windows executable"),
    ];
    SIGNATURES.iter().find(|(magic, _)| bytes.starts_with(magic)).map(|(_, kind)| *kind)
}

fn detect_text_kind(name: &str, bytes: &[u8]) -> Result<Format, IngestError> {
    let ext = extension(name);
    match ext.as_deref() {
        Some("md" | "markdown" | "mdown" | "mkd") => return Ok(Format::Markdown),
        Some("csv" | "tsv") => return Ok(Format::Csv),
        Some("html" | "htm" | "xhtml") => return Ok(Format::Html),
        Some("json" | "jsonl" | "ndjson") => return Ok(Format::Json),
        Some("eml") => return Ok(Format::Eml),
        Some("mbox" | "mbx") => return Ok(Format::Mbox),
        Some("xml" | "svg") => return Err(IngestError::Unsupported("XML data".into())),
        _ => {}
    }
    let start = crate::text::decode_prefix(bytes, 2048);
    if ext.is_none() && looks_like_mail_headers(&start) {
        return Ok(Format::Eml);
    }
    // A mailbox without an extension (Thunderbird keeps each folder so): a `From ` separator line, then
    // a message's headers.
    if let Some((separator, rest)) = start.split_once('\n') {
        if ext.is_none() && separator.starts_with("From ") && looks_like_mail_headers(rest) {
            return Ok(Format::Mbox);
        }
    }
    let trimmed = start.trim_start().to_ascii_lowercase();
    if trimmed.starts_with("<!doctype html") || trimmed.starts_with("<html") {
        return Ok(Format::Html);
    }
    Ok(Format::Text)
}

/// A file without an extension that starts with an RFC 5322 header block naming a sender and at least
/// one of recipient, subject or date (mail saved from some clients, Maildir files) is a message.
fn looks_like_mail_headers(start: &str) -> bool {
    let mut names: Vec<String> = Vec::new();
    for line in start.lines() {
        if line.trim().is_empty() {
            break;
        }
        if line.starts_with([' ', '\t']) {
            continue; // a folded continuation line
        }
        let Some((name, _)) = line.split_once(':') else { return false };
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return false;
        }
        names.push(name.to_ascii_lowercase());
    }
    let has = |n: &str| names.iter().any(|m| m == n);
    has("from") && (has("to") || has("subject") || has("date"))
}

pub(crate) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || haystack.len() < needle.len() {
        return None;
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_kinds_follow_the_extension_and_html_is_sniffed() {
        assert_eq!(detect_format("a.md", b"# Title\n").unwrap(), Format::Markdown);
        assert_eq!(detect_format("a.csv", b"a,b\n1,2\n").unwrap(), Format::Csv);
        assert_eq!(detect_format("page", b"<!DOCTYPE html><p>x</p>").unwrap(), Format::Html);
        assert_eq!(detect_format("notes", b"plain words").unwrap(), Format::Text);
    }

    #[test]
    fn binary_kinds_are_named_in_the_error() {
        assert_eq!(detect_format("x.png", b"\x89PNG\r\n\x1a\n....").unwrap(), Format::Image);
        assert_eq!(detect_format("scan", b"II*\x00....").unwrap(), Format::Image);
        let err = detect_format("x.gif", b"GIF89a....").unwrap_err();
        assert_eq!(err, IngestError::Unsupported("GIF image".into()));
        let err = detect_format("x.bin", &[0u8, 1, 2, 3, 0, 0, 0, 9, 200, 0]).unwrap_err();
        assert!(matches!(err, IngestError::Unsupported(m) if m.contains("unknown type (.bin)")));
    }

    #[test]
    fn mail_is_told_by_extension_or_by_its_headers() {
        let mail = b"Received: from x\r\nFrom: a@example.org\r\nSubject: Hi\r\n\r\nBody\r\n";
        assert_eq!(detect_format("message", mail).unwrap(), Format::Eml);
        assert_eq!(detect_format("saved.eml", b"From: a@example.org\n\nhello").unwrap(), Format::Eml);
        assert_eq!(detect_format("notes.txt", mail).unwrap(), Format::Text, "an extension other than .eml wins");
        assert_eq!(detect_format("notes", b"From: me\nthis is just a note\n").unwrap(), Format::Text);
        let mailbox = b"From a@example.org Mon Jan  1 00:00:00 2024\nFrom: a@example.org\nSubject: Hi\n\nBody\n";
        assert_eq!(detect_format("Inbox", mailbox).unwrap(), Format::Mbox);
        assert_eq!(detect_format("takeout.mbox", mailbox).unwrap(), Format::Mbox);
    }

    #[test]
    fn extension_ignores_dot_files_and_folders() {
        assert_eq!(extension("dir.v2/README"), None);
        assert_eq!(extension(".bashrc"), None);
        assert_eq!(extension("a.zip!/x/Report.PDF").as_deref(), Some("pdf"));
    }
}
