//! E-mail messages: RFC 5322/MIME files (`.eml`), read with the `mail-parser` crate (every charset,
//! quoted-printable and base64, encoded words), and Outlook `.msg` files, OLE2 compound files read with the
//! `cfb` crate whose MAPI property streams are decoded here (the property ids are Microsoft's [MS-OXMSG]
//! and [MS-OXPROPS]).
//!
//! A message becomes one document: a first block of its envelope (From, To, Cc, Date, Subject, the names of
//! its attachments) and its body (the plain-text part, else the HTML part as text), every block under the
//! subject as its heading path, so a citation reads `mail.eml, Quarterly figures`. Each attachment is
//! handed back with a file name to be read as a document of its own (`mail.eml!/report.pdf`) under the
//! same guards as ZIP members ([`crate::archive::expand_attachments`]).

use crate::text::{decode_text, html_to_text, paragraph_blocks};
use crate::IngestError;
use quarry_core::{Block, Format, Location};
use std::io::{Cursor, Read, Write};
use std::path::{Path, PathBuf};

/// A file carried by a message, to be read as a document of its own.
#[derive(Debug)]
pub(crate) struct Attachment {
    /// The attachment's file name as the message gives it (not yet made safe for a virtual path).
    pub name: String,
    pub bytes: Vec<u8>,
}

/// A message read into blocks, with its attachments and the problems met on the way.
#[derive(Debug)]
pub(crate) struct Mail {
    pub blocks: Vec<Block>,
    pub attachments: Vec<Attachment>,
    pub warnings: Vec<String>,
}

/// The header fields a reader of the message sees first.
#[derive(Debug, Default)]
struct Envelope {
    from: Option<String>,
    to: Option<String>,
    cc: Option<String>,
    date: Option<String>,
    subject: Option<String>,
}

/// Reads an `.eml` or `.msg` message.
///
/// Errors: [`IngestError::Malformed`] when the bytes are not a message of that kind,
/// [`IngestError::Encrypted`] for S/MIME-encrypted Outlook messages, [`IngestError::Unsupported`] for
/// another format.
pub(crate) fn load(format: Format, bytes: &[u8]) -> Result<Mail, IngestError> {
    match format {
        Format::Eml => load_eml(bytes),
        Format::Msg => load_msg(bytes),
        other => Err(IngestError::Unsupported(other.to_string())),
    }
}

fn load_eml(bytes: &[u8]) -> Result<Mail, IngestError> {
    use mail_parser::{MimeHeaders, PartType};
    // A message saved as UTF-16 text (it happens on Windows, with or without a byte order mark): MIME
    // headers are ASCII, so NUL bytes among them mean UTF-16; decode it first.
    let utf16 = bytes.starts_with(&[0xFF, 0xFE])
        || bytes.starts_with(&[0xFE, 0xFF])
        || bytes[..bytes.len().min(64)].contains(&0);
    let decoded = utf16.then(|| decode_text(bytes).0.into_bytes());
    let raw: &[u8] = decoded.as_deref().unwrap_or(bytes);
    let message = mail_parser::MessageParser::default()
        .parse(raw)
        .ok_or_else(|| IngestError::malformed("eml", "no message headers found"))?;
    if let Some(kind) = encryption(&message) {
        return Err(IngestError::Encrypted(kind.into()));
    }
    let envelope = envelope_of(&message);
    let mut warnings = Vec::new();
    let mut body = String::new();
    for part in message.text_bodies() {
        let text = match &part.body {
            PartType::Text(text) => text.to_string(),
            PartType::Html(html) => match html_to_text(html) {
                Ok(text) => text,
                Err(e) => {
                    warnings.push(format!("an HTML body part could not be read: {e}"));
                    continue;
                }
            },
            _ => continue,
        };
        push_paragraphs(&mut body, &text);
    }
    let mut attachments = Vec::new();
    for (index, part) in message.attachments().enumerate() {
        // Inline parts (images in the body, a signature's logo) belong to the body, not the library.
        if matches!(part.body, PartType::InlineBinary(_)) {
            continue;
        }
        let name = part.attachment_name().map(str::to_string).unwrap_or_else(|| match &part.body {
            PartType::Message(_) => format!("attachment-{}.eml", index + 1),
            PartType::Html(_) => format!("attachment-{}.html", index + 1),
            PartType::Text(_) => format!("attachment-{}.txt", index + 1),
            _ => format!("attachment-{}", index + 1),
        });
        let bytes = part.contents();
        // A picture or recording that is still text after decoding (a broken base64 body) would be
        // indexed as letters; say so instead.
        let media = part.content_type().is_some_and(|t| matches!(t.c_type.as_ref(), "image" | "audio" | "video"));
        if media && crate::text::looks_like_text(bytes) {
            warnings.push(format!("attachment {name:?} is declared a picture or recording but could not be decoded"));
            continue;
        }
        attachments.push(Attachment { name, bytes: bytes.to_vec() });
    }
    Ok(assemble(&envelope, &body, attachments, warnings))
}

/// The envelope of a parsed message (or of an Outlook message's transport headers).
fn envelope_of(message: &mail_parser::Message<'_>) -> Envelope {
    Envelope {
        from: message.from().map(addresses),
        to: message.to().map(addresses),
        cc: message.cc().map(addresses),
        date: message.date().map(|d| {
            let zone = if d.tz_hour == 0 && d.tz_minute == 0 {
                "UTC".to_string()
            } else {
                format!("{}{:02}:{:02}", if d.tz_before_gmt { '-' } else { '+' }, d.tz_hour, d.tz_minute)
            };
            format!("{:04}-{:02}-{:02} {:02}:{:02} {zone}", d.year, d.month, d.day, d.hour, d.minute)
        }),
        subject: message.subject().map(str::to_string),
    }
}

/// What kind of encrypted message this is, when its body is encrypted: PGP/MIME (`multipart/encrypted`,
/// RFC 3156) or S/MIME enveloped data (`application/pkcs7-mime`, RFC 8551; signed-only S/MIME is readable).
fn encryption(message: &mail_parser::Message<'_>) -> Option<&'static str> {
    use mail_parser::MimeHeaders;
    let content_type = message.content_type()?;
    let subtype = content_type.c_subtype.as_deref().unwrap_or("").to_ascii_lowercase();
    match (content_type.c_type.to_ascii_lowercase().as_str(), subtype.as_str()) {
        ("multipart", "encrypted") => Some("PGP/MIME-encrypted message"),
        ("application", "pkcs7-mime" | "x-pkcs7-mime")
            if content_type.attribute("smime-type").is_none_or(|t| t.eq_ignore_ascii_case("enveloped-data")) =>
        {
            Some("S/MIME-encrypted message")
        }
        _ => None,
    }
}

/// `Name <address>, …` for an address header (groups flattened).
fn addresses(address: &mail_parser::Address<'_>) -> String {
    address
        .iter()
        .map(|a| match (a.name(), a.address()) {
            (Some(name), Some(addr)) if name != addr => format!("{name} <{addr}>"),
            (_, Some(addr)) => addr.to_string(),
            (Some(name), None) => name.to_string(),
            (None, None) => String::new(),
        })
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The messages of a mailbox (mbox), in file order, as `.eml` files named `message N.eml` (1-based),
/// at most `limit`; the second value says whether more were left unread.
///
/// Errors: [`IngestError::Malformed`] when the file does not start with a `From ` separator line.
pub(crate) fn mbox_messages(bytes: &[u8], limit: usize) -> Result<(Vec<Attachment>, bool), IngestError> {
    let start = &bytes[..bytes.len().min(4096)];
    let first_line = start.iter().position(|&b| !b.is_ascii_whitespace()).map(|i| &start[i..]);
    if !first_line.is_some_and(|l| l.starts_with(b"From ")) {
        return Err(IngestError::malformed("mbox", "the mailbox does not start with a \"From \" line"));
    }
    let mut messages = Vec::new();
    let mut more = false;
    for message in mail_parser::mailbox::mbox::MessageIterator::new(Cursor::new(bytes)) {
        let message = message.map_err(|e| IngestError::malformed("mbox", e))?;
        if messages.len() == limit {
            more = true;
            break;
        }
        let name = format!("message {}.eml", messages.len() + 1);
        messages.push(Attachment { name, bytes: message.unwrap_contents() });
    }
    Ok((messages, more))
}

/// MAPI property ids ([MS-OXPROPS]) read from an Outlook message.
mod property {
    pub const MESSAGE_CLASS: u16 = 0x001A;
    pub const SUBJECT: u16 = 0x0037;
    pub const TRANSPORT_MESSAGE_HEADERS: u16 = 0x007D;
    pub const CLIENT_SUBMIT_TIME: u16 = 0x0039;
    pub const SENDER_NAME: u16 = 0x0C1A;
    pub const SENDER_EMAIL_ADDRESS: u16 = 0x0C1F;
    pub const DISPLAY_CC: u16 = 0x0E03;
    pub const DISPLAY_TO: u16 = 0x0E04;
    pub const MESSAGE_DELIVERY_TIME: u16 = 0x0E06;
    pub const BODY: u16 = 0x1000;
    pub const BODY_HTML: u16 = 0x1013;
    pub const ATTACH_DATA: u16 = 0x3701;
    pub const ATTACH_FILENAME: u16 = 0x3704;
    pub const ATTACH_LONG_FILENAME: u16 = 0x3707;
    pub const DISPLAY_NAME: u16 = 0x3001;
    pub const SENDER_SMTP_ADDRESS: u16 = 0x5D01;
}

/// Property types ([MS-OXCDATA] 2.11.1): how a `__substg1.0_IIIITTTT` stream's bytes are to be read.
const TYPE_UNICODE: u16 = 0x001F;
const TYPE_STRING8: u16 = 0x001E;
const TYPE_BINARY: u16 = 0x0102;
const TYPE_OBJECT: u16 = 0x000D;
const TYPE_TIME: u16 = 0x0040;

/// Bytes read from one property stream at most; the whole file is already bounded by `max_file_bytes`.
const MAX_STREAM_BYTES: u64 = 512 << 20;

type Compound<'a> = cfb::CompoundFile<Cursor<&'a [u8]>>;

fn load_msg(bytes: &[u8]) -> Result<Mail, IngestError> {
    let mut file = cfb::CompoundFile::open(Cursor::new(bytes)).map_err(|e| IngestError::malformed("msg", e))?;
    let class = string_property(&mut file, "/", property::MESSAGE_CLASS).unwrap_or_default();
    if class.starts_with("IPM.Note.SMIME") && !class.contains("MultipartSigned") {
        return Err(IngestError::Encrypted("S/MIME-encrypted message".into()));
    }
    // The internet headers the message arrived with, when Outlook kept them: the original Date and the
    // recipients' addresses (the MAPI display fields hold names only), and how the body was encrypted.
    // (The property's text is trimmed: the header block gets back the blank line that ends it, without
    // which the parser drops the last header.)
    let transport =
        string_property(&mut file, "/", property::TRANSPORT_MESSAGE_HEADERS).map(|h| format!("{h}\r\n\r\n"));
    let headers = transport.as_deref().and_then(|h| mail_parser::MessageParser::default().parse_headers(h));
    if let Some(kind) = headers.as_ref().and_then(encryption) {
        return Err(IngestError::Encrypted(kind.into()));
    }
    let from_headers = headers.as_ref().map(envelope_of).unwrap_or_default();
    let sender_name = string_property(&mut file, "/", property::SENDER_NAME);
    let sender_address = string_property(&mut file, "/", property::SENDER_SMTP_ADDRESS)
        .or_else(|| string_property(&mut file, "/", property::SENDER_EMAIL_ADDRESS))
        .filter(|a| a.contains('@'));
    let from = match (sender_name, sender_address) {
        (Some(name), Some(addr)) if name != addr => Some(format!("{name} <{addr}>")),
        (name, addr) => addr.or(name),
    };
    let time = fixed_time_property(&mut file, property::CLIENT_SUBMIT_TIME)
        .or_else(|| fixed_time_property(&mut file, property::MESSAGE_DELIVERY_TIME));
    let envelope = Envelope {
        from: from.or(from_headers.from),
        to: from_headers.to.or_else(|| string_property(&mut file, "/", property::DISPLAY_TO)),
        cc: from_headers.cc.or_else(|| string_property(&mut file, "/", property::DISPLAY_CC)),
        date: from_headers.date.or_else(|| time.and_then(filetime_to_utc)),
        subject: string_property(&mut file, "/", property::SUBJECT).or(from_headers.subject),
    };
    let mut warnings = Vec::new();
    let mut body = String::new();
    if let Some(text) = string_property(&mut file, "/", property::BODY).filter(|t| !t.trim().is_empty()) {
        push_paragraphs(&mut body, &text);
    } else {
        let html = stream(&mut file, "/", property::BODY_HTML, TYPE_BINARY)
            .map(|b| decode_text(&b).0)
            .or_else(|| string_property(&mut file, "/", property::BODY_HTML));
        if let Some(html) = html {
            match html_to_text(&html) {
                Ok(text) => push_paragraphs(&mut body, &text),
                Err(e) => warnings.push(format!("the HTML body could not be read: {e}")),
            }
        }
    }
    let storages: Vec<String> = match file.read_storage("/") {
        Ok(entries) => entries
            .filter(|e| e.is_storage() && e.name().starts_with("__attach_version1.0_#"))
            .map(|e| e.name().to_string())
            .collect(),
        Err(e) => return Err(IngestError::malformed("msg", e)),
    };
    let mut attachments = Vec::new();
    for (index, storage) in storages.iter().enumerate() {
        let storage = format!("/{storage}");
        let name = string_property(&mut file, &storage, property::ATTACH_LONG_FILENAME)
            .or_else(|| string_property(&mut file, &storage, property::ATTACH_FILENAME))
            .or_else(|| string_property(&mut file, &storage, property::DISPLAY_NAME))
            .filter(|n| !n.trim().is_empty())
            .unwrap_or_else(|| format!("attachment-{}", index + 1));
        match stream(&mut file, &storage, property::ATTACH_DATA, TYPE_BINARY) {
            Some(bytes) => attachments.push(Attachment { name, bytes }),
            None if file.is_storage(substg(&storage, property::ATTACH_DATA, TYPE_OBJECT)) => {
                // A message attached as a message (Outlook's "forward as attachment", a dragged-in mail):
                // read as a `.msg` of its own, under the attachment guards like any other attachment.
                let name = if name.to_lowercase().ends_with(".msg") { name } else { format!("{name}.msg") };
                match embedded_message(&mut file, &storage) {
                    Ok(bytes) => attachments.push(Attachment { name, bytes }),
                    Err(e) => warnings.push(format!("attached Outlook message {name:?} could not be read: {e}")),
                }
            }
            None => warnings.push(format!("attachment {name:?} has no data")),
        }
    }
    Ok(assemble(&envelope, &body, attachments, warnings))
}

/// The storage of the named-property map ([MS-OXMSG] 2.2.3), kept once at the top of a message file.
const NAMED_PROPERTY_MAP: &str = "/__nameid_version1.0";
/// The stream of fixed-size properties of a message, recipient or attachment ([MS-OXMSG] 2.4).
const PROPERTY_STREAM: &str = "__properties_version1.0";
/// Header bytes of the property stream of a top-level message and of an embedded one ([MS-OXMSG] 2.4.1.1,
/// 2.4.1.2): the embedded message's lacks the last 8 reserved bytes.
const TOP_LEVEL_HEADER: usize = 32;
const EMBEDDED_HEADER: usize = 24;

/// The message attached under `attachment` (an embedded message object, [MS-OXMSG] 2.2.2.1: the storage
/// `__substg1.0_3701000D` of the attachment's storage) as the bytes of a `.msg` file of its own: every
/// storage and stream under that storage copied to the root of a new compound file, the property stream's
/// 24-byte header widened to a top-level message's 32 bytes, and the outer file's named-property map
/// copied beside it — what Outlook writes when the attached message is saved by itself. Its own
/// attachments (a message in a message in a message) come along and are unpacked in turn, under the depth
/// guard of [`crate::archive::expand_attachments`].
///
/// Errors: an I/O error of the compound-file reader or writer (a damaged file).
fn embedded_message(file: &mut Compound<'_>, attachment: &str) -> std::io::Result<Vec<u8>> {
    let root = PathBuf::from(substg(attachment, property::ATTACH_DATA, TYPE_OBJECT));
    // (source path, path in the new file, is a storage), in the walk's preorder: every storage comes
    // before what it holds, so it exists by the time its streams are written.
    let mut copies: Vec<(PathBuf, PathBuf, bool)> = Vec::new();
    for entry in file.walk_storage(&root)? {
        if let Ok(relative) = entry.path().strip_prefix(&root) {
            copies.push((entry.path().to_path_buf(), Path::new("/").join(relative), entry.is_storage()));
        }
    }
    if file.is_storage(NAMED_PROPERTY_MAP) {
        for entry in file.walk_storage(NAMED_PROPERTY_MAP)? {
            copies.push((entry.path().to_path_buf(), entry.path().to_path_buf(), entry.is_storage()));
        }
    }
    let mut out = cfb::CompoundFile::create(Cursor::new(Vec::new()))?;
    for (from, to, is_storage) in copies {
        if to == Path::new("/") {
            continue;
        }
        if is_storage {
            out.create_storage(&to)?;
            continue;
        }
        let mut bytes = Vec::new();
        file.open_stream(&from)?.take(MAX_STREAM_BYTES).read_to_end(&mut bytes)?;
        if to == Path::new("/").join(PROPERTY_STREAM) && bytes.len() >= EMBEDDED_HEADER {
            bytes.splice(EMBEDDED_HEADER..EMBEDDED_HEADER, [0u8; TOP_LEVEL_HEADER - EMBEDDED_HEADER]);
        }
        out.create_stream(&to)?.write_all(&bytes)?;
    }
    out.flush()?;
    Ok(out.into_inner().into_inner())
}

/// The path of a property stream: `{storage}/__substg1.0_{id}{type}`, both in upper-case hex.
fn substg(storage: &str, id: u16, kind: u16) -> String {
    format!("{}/__substg1.0_{id:04X}{kind:04X}", storage.trim_end_matches('/'))
}

fn stream(file: &mut Compound<'_>, storage: &str, id: u16, kind: u16) -> Option<Vec<u8>> {
    let mut stream = file.open_stream(substg(storage, id, kind)).ok()?;
    let mut bytes = Vec::new();
    (&mut stream).take(MAX_STREAM_BYTES).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// A string property: UTF-16LE (`001F`) or 8-bit (`001E`, UTF-8 when valid, else the detected code page).
fn string_property(file: &mut Compound<'_>, storage: &str, id: u16) -> Option<String> {
    let text = if let Some(bytes) = stream(file, storage, id, TYPE_UNICODE) {
        let units: Vec<u16> = bytes.chunks_exact(2).map(|p| u16::from_le_bytes([p[0], p[1]])).collect();
        String::from_utf16_lossy(&units)
    } else {
        decode_text(&stream(file, storage, id, TYPE_STRING8)?).0
    };
    let text = text.trim_end_matches('\0').trim().to_string();
    (!text.is_empty()).then_some(text)
}

/// A time property of the message from its fixed-size property stream (`__properties_version1.0`: a
/// 32-byte header for the top-level message, then 16-byte entries of tag, flags and an 8-byte value).
fn fixed_time_property(file: &mut Compound<'_>, id: u16) -> Option<u64> {
    let mut stream = file.open_stream("/__properties_version1.0").ok()?;
    let mut bytes = Vec::new();
    (&mut stream).take(1 << 20).read_to_end(&mut bytes).ok()?;
    let wanted = (u32::from(id) << 16) | u32::from(TYPE_TIME);
    bytes.get(32..)?.chunks_exact(16).find_map(|entry| {
        let tag = u32::from_le_bytes(entry[0..4].try_into().ok()?);
        let value: [u8; 8] = entry[8..16].try_into().ok()?;
        (tag == wanted).then(|| u64::from_le_bytes(value))
    })
}

/// A Windows FILETIME (100-nanosecond ticks since 1601-01-01 UTC) as `YYYY-MM-DD HH:MM UTC`.
fn filetime_to_utc(ticks: u64) -> Option<String> {
    use chrono::{Datelike, Timelike};
    const SECONDS_1601_TO_1970: i64 = 11_644_473_600;
    let seconds = i64::try_from(ticks / 10_000_000).ok()? - SECONDS_1601_TO_1970;
    let time = chrono::DateTime::from_timestamp(seconds, 0)?;
    Some(format!(
        "{:04}-{:02}-{:02} {:02}:{:02} UTC",
        time.year(),
        time.month(),
        time.day(),
        time.hour(),
        time.minute()
    ))
}

/// Appends `text` as paragraphs, line endings normalised.
fn push_paragraphs(body: &mut String, text: &str) {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let text = text.trim();
    if text.is_empty() {
        return;
    }
    if !body.is_empty() {
        body.push_str("\n\n");
    }
    body.push_str(text);
}

/// The envelope block, then the body's paragraphs, all under the subject as heading path.
fn assemble(envelope: &Envelope, body: &str, attachments: Vec<Attachment>, warnings: Vec<String>) -> Mail {
    let location = Location {
        heading_path: envelope.subject.iter().filter(|s| !s.trim().is_empty()).cloned().collect(),
        ..Default::default()
    };
    let mut head = String::new();
    let fields = [
        ("From", &envelope.from),
        ("To", &envelope.to),
        ("Cc", &envelope.cc),
        ("Date", &envelope.date),
        ("Subject", &envelope.subject),
    ];
    for (label, value) in fields {
        if let Some(value) = value.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
            head.push_str(&format!("{label}: {value}\n"));
        }
    }
    if !attachments.is_empty() {
        let names: Vec<&str> = attachments.iter().map(|a| a.name.as_str()).collect();
        head.push_str(&format!("Attachments: {}\n", names.join(", ")));
    }
    let mut blocks = Vec::new();
    if !head.trim().is_empty() {
        blocks.push(Block { text: head.trim_end().to_string(), location: location.clone() });
    }
    blocks.extend(paragraph_blocks(body, location));
    Mail { blocks, attachments, warnings }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_eml_message_gives_its_envelope_body_and_attachments() {
        let raw = concat!(
            "From: Ada Lovelace <ada@example.org>\r\n",
            "To: Charles Babbage <cb@example.org>, team@example.org\r\n",
            "Subject: =?UTF-8?B?UXVhcnRlcmx5IGZpZ3VyZXMg4oCTIFEz?=\r\n",
            "Date: Tue, 16 Jul 2008 06:24:10 +0200\r\n",
            "MIME-Version: 1.0\r\n",
            "Content-Type: multipart/mixed; boundary=\"b1\"\r\n\r\n",
            "--b1\r\nContent-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n",
            "Revenue rose to =A3 12 million.\r\n",
            "--b1\r\nContent-Type: text/csv; name=\"figures.csv\"\r\nContent-Disposition: attachment; filename=\"figures.csv\"\r\n",
            "Content-Transfer-Encoding: base64\r\n\r\n",
            "cXVhcnRlcixyZXZlbnVlClEzLDEy\r\n",
            "--b1--\r\n"
        );
        let mail = load(Format::Eml, raw.as_bytes()).unwrap();
        let head = &mail.blocks[0].text;
        assert!(head.contains("From: Ada Lovelace <ada@example.org>"), "{head}");
        assert!(head.contains("To: Charles Babbage <cb@example.org>, team@example.org"), "{head}");
        assert!(head.contains("Date: 2008-07-16 06:24 +02:00"), "{head}");
        assert!(head.contains("Subject: Quarterly figures – Q3"), "{head}");
        assert!(head.contains("Attachments: figures.csv"), "{head}");
        assert_eq!(mail.blocks[1].text, "Revenue rose to £ 12 million.");
        assert_eq!(mail.blocks[1].location.heading_path, vec!["Quarterly figures – Q3".to_string()]);
        assert_eq!(mail.attachments.len(), 1);
        assert_eq!(mail.attachments[0].name, "figures.csv");
        assert_eq!(mail.attachments[0].bytes, b"quarter,revenue\nQ3,12");
    }

    #[test]
    fn an_html_only_body_is_read_as_text() {
        let raw = "From: a@example.org\r\nSubject: Hi\r\nContent-Type: text/html\r\n\r\n<html><body><p>Hello <b>there</b></p><script>x()</script></body></html>\r\n";
        let mail = load(Format::Eml, raw.as_bytes()).unwrap();
        let text: String = mail.blocks.iter().map(|b| b.text.as_str()).collect::<Vec<_>>().join("\n");
        assert!(text.contains("Hello there"), "{text}");
        assert!(!text.contains("x()"), "{text}");
    }

    #[test]
    fn a_mailbox_splits_into_messages() {
        let mbox = b"From a@example.org Mon Jan  1 00:00:00 2024\nFrom: a@example.org\nSubject: One\n\nFirst body\n>From the start\n\nFrom b@example.org Tue Jan  2 00:00:00 2024\nFrom: b@example.org\nSubject: Two\n\nSecond body\n";
        let (messages, more) = mbox_messages(mbox, 10).unwrap();
        assert!(!more);
        let names: Vec<&str> = messages.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["message 1.eml", "message 2.eml"]);
        let first = load(Format::Eml, &messages[0].bytes).unwrap();
        assert!(first.blocks[1].text.contains("First body\nFrom the start"), "{:?}", first.blocks);
        let (messages, more) = mbox_messages(mbox, 1).unwrap();
        assert_eq!((messages.len(), more), (1, true));
        assert!(mbox_messages(b"not a mailbox", 10).is_err());
    }

    #[test]
    fn filetime_is_converted_to_utc() {
        // 2008-07-16 04:24:10 UTC in 100 ns ticks since 1601.
        let ticks = (1_216_182_250u64 + 11_644_473_600) * 10_000_000;
        assert_eq!(filetime_to_utc(ticks).as_deref(), Some("2008-07-16 04:24 UTC"));
    }

    #[test]
    fn a_file_that_is_not_a_compound_file_is_malformed_msg() {
        let err = load(Format::Msg, b"not an OLE2 file at all").unwrap_err();
        assert!(matches!(err, IngestError::Malformed { ref format, .. } if format == "msg"), "{err}");
    }
}
