//! E-mail (`.eml`, Outlook `.msg`), PowerPoint (`.pptx`), OpenDocument text (`.odt`) and EPUB on the real
//! files of shared B (unstructured's and markitdown's example documents): every file read or refused with
//! a one-line reason, the envelope, body and attachments of a message, slides with their titles, tables
//! and notes, headings of a text document, chapters of a book.

use crate::common::*;
use quarry_ingest::{parse_bytes, Format, IngestError, ParseEvent, ParseOptions, Status};
use std::path::{Path, PathBuf};

fn files_with_extension(ext: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(eval_dir().join("B_documents"))
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case(ext)))
        .collect();
    files.sort();
    files
}

#[test]
fn every_message_and_presentation_is_read_or_refused_with_a_reason() {
    let mut read = 0;
    let mut refused = Vec::new();
    for ext in ["eml", "msg", "pptx", "odt", "epub"] {
        let files = files_with_extension(ext);
        assert!(!files.is_empty(), "no .{ext} files in shared B");
        for file in files {
            for outcome in parse(&file) {
                match outcome.status {
                    Status::Ok if outcome.document.is_some() => read += 1,
                    Status::Ok => {}
                    status => {
                        let error = outcome.error.as_ref().map(|e| e.to_string()).unwrap_or_default();
                        assert!(!error.is_empty() && !error.contains('\n'), "{}: {status:?} {error:?}", outcome.path);
                        assert_ne!(status, Status::Crashed, "{}: {error}", outcome.path);
                        refused.push(format!("{}: {error}", outcome.path));
                    }
                }
            }
        }
    }
    eprintln!("read {read}; refused {}:\n{}", refused.len(), refused.join("\n"));
    // Refusals that are right: an empty message, a PGP-encrypted one, a slide that is only a picture, the
    // picture attached to a message (it needs OCR).
    let expected =
        ["empty.eml: no text found", "fake-encrypted.msg: encrypted", "test-image-jpg-mime.pptx: no text found"];
    for want in expected {
        let (file, reason) = want.split_once(": ").unwrap();
        assert!(refused.iter().any(|r| r.starts_with(file) && r.contains(reason)), "{want} expected in {refused:?}");
    }
    assert!(
        refused
            .iter()
            .all(|r| expected.iter().any(|e| r.starts_with(e.split(':').next().unwrap())) || r.contains("needs OCR")),
        "{refused:?}"
    );
    assert!(
        read >= 28,
        "19 messages but one, 1 Outlook message, 6 presentations but one, 1 attachment, 2 ODT, 1 EPUB: {read}"
    );
}

#[test]
fn a_message_reads_as_envelope_then_body_under_its_subject() {
    let outcome = parse_one(&b_docs("unstructured_example-docs/eml/family-day.eml"));
    assert_eq!(outcome.format, Some(Format::Eml));
    let doc = outcome.document.as_ref().unwrap();
    let head = &doc.blocks[0].text;
    assert!(head.contains("From: Mallori Harrell <mallori@unstructured.io>"), "{head}");
    assert!(head.contains("Date: 2022-12-21 10:28 -06:00"), "{head}");
    assert!(head.contains("Subject: Family Day"), "{head}");
    let text = text_of(&outcome);
    assert!(text.contains("face painting, a petting zoo, funnel cake"), "{text}");
    assert!(doc.blocks.iter().all(|b| b.location.heading_path == vec!["Family Day".to_string()]));

    // Saved as UTF-16 (big-endian, no byte order mark), and base64 bodies.
    for name in ["fake-email-utf-16-be.eml", "fake-email-utf-16.eml", "fake-email-b64.eml"] {
        let text = text_of(&parse_one(&b_docs(&format!("unstructured_example-docs/eml/{name}"))));
        assert!(text.contains("Subject: Test Email") && text.contains("Violets are blue"), "{name}: {text}");
    }
    let text = text_of(&parse_one(&b_docs("unstructured_example-docs/eml/mime-word-encoded-subject.eml")));
    assert!(text.contains("Subject: Simple email with ☸☿ Unicode subject"), "{text}");
    // A Hebrew message in a legacy code page.
    let text = text_of(&parse_one(&b_docs("unstructured_example-docs/eml/email-no-utf8-2008-07-16.062410.eml")));
    assert!(text.contains("שלום"), "{text}");
}

#[test]
fn an_attachment_is_a_document_of_its_own_inside_the_message() {
    let outcomes = parse(&b_docs("unstructured_example-docs/eml/email-inline-content-disposition.eml"));
    let paths: Vec<&str> = outcomes.iter().map(|o| o.path.as_str()).collect();
    assert_eq!(paths, ["email-inline-content-disposition.eml!/t.txt", "email-inline-content-disposition.eml"]);
    assert!(outcomes.iter().all(|o| o.status == Status::Ok), "{outcomes:?}");
    assert!(text_of(&outcomes[1]).contains("Attachments: t.txt"));

    // A picture attached to a message is a document of its own, read by OCR (this one, a logo of
    // triangles on a transparent background, holds no words: at most a stray letter, else "no text
    // found"); the message is read.
    let outcomes = parse(&b_docs("unstructured_example-docs/eml/fake-email-image-embedded.eml"));
    assert_eq!(outcomes.len(), 2, "{outcomes:?}");
    assert!(outcomes[0].path.ends_with("!/unstructured_logo.png"));
    assert_eq!(outcomes[0].format, Some(quarry_ingest::Format::Image), "{:?}", outcomes[0]);
    assert!(
        (outcomes[0].status == Status::Ok && outcomes[0].chars < 10) || outcomes[0].error == Some(IngestError::Empty),
        "{:?}",
        outcomes[0]
    );
    assert!(text_of(&outcomes[1]).contains("Subject: fake-email-image-embedded"));

    // A "picture" whose base64 is cut off (the file says "[Base64 encoded image data continues]") is not
    // indexed as letters: the message is read, with a warning.
    let outcomes = parse(&b_docs("unstructured_example-docs/eml/mime-no-body.eml"));
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    assert!(outcomes[0].warnings.iter().any(|w| w.contains("image.jpg")), "{:?}", outcomes[0].warnings);
    assert!(text_of(&outcomes[0]).contains("Subject: Image Only Email"));
}

/// A message carrying a ZIP that carries the message again, nested past the depth limit: every level
/// reads until the limit, which refuses with a reason.
#[test]
fn attachments_obey_the_archive_guards() {
    let message = |attachment_name: &str, attachment: &[u8]| -> Vec<u8> {
        let encoded = base64_encode(attachment);
        format!(
            "From: a@example.org\r\nTo: b@example.org\r\nSubject: Nested\r\nMIME-Version: 1.0\r\n\
             Content-Type: multipart/mixed; boundary=\"xx\"\r\n\r\n--xx\r\nContent-Type: text/plain\r\n\r\n\
             Level body.\r\n--xx\r\nContent-Type: application/octet-stream\r\n\
             Content-Disposition: attachment; filename=\"{attachment_name}\"\r\nContent-Transfer-Encoding: base64\r\n\r\n\
             {encoded}\r\n--xx--\r\n"
        )
        .into_bytes()
    };
    let mut bytes = message("notes.txt", b"innermost words");
    for level in 0..4 {
        bytes = message(&format!("level-{level}.eml"), &bytes);
    }
    let options = ParseOptions { max_archive_depth: 3, ..ParseOptions::default() };
    let mut outcomes = Vec::new();
    parse_bytes("top.eml", &bytes, 0, &options, &mut |event| {
        if let ParseEvent::Finished(outcome) = event {
            outcomes.push(*outcome);
        }
    });
    let rows: Vec<(String, Status)> = outcomes.iter().map(|o| (o.path.clone(), o.status)).collect();
    assert_eq!(rows.last().unwrap(), &("top.eml".to_string(), Status::Ok), "{rows:?}");
    let refused: Vec<&(String, Status)> = rows.iter().filter(|(_, s)| *s != Status::Ok).collect();
    assert_eq!(refused.len(), 1, "{rows:?}");
    assert_eq!(refused[0].0, "top.eml!/level-3.eml!/level-2.eml!/level-1.eml!/level-0.eml", "{rows:?}");
}

fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out.as_bytes().chunks(76).map(|l| String::from_utf8_lossy(l).into_owned()).collect::<Vec<_>>().join("\r\n")
}

#[test]
fn an_outlook_message_gives_sender_recipients_and_body() {
    let outcome = parse_one(&b_docs("unstructured_example-docs/fake-email.msg"));
    assert_eq!(outcome.format, Some(Format::Msg));
    let text = text_of(&outcome);
    assert!(text.contains("From: Matthew Robinson <mrobinson@unstructured.io>"), "{text}");
    // Recipients' addresses and the original Date come from the internet headers Outlook kept.
    assert!(text.contains("To: Matthew Robinson <mrobinson@unstructured.io>"), "{text}");
    assert!(text.contains("Subject: Test Email"), "{text}");
    assert!(text.contains("Date: 2022-12-16 17:04 -05:00"), "{text}");
    assert!(
        text.contains("This is a test email to use for unit tests.") && text.contains("Violets are blue"),
        "{text}"
    );
    let text = text_of(&parse_one(&b_docs("unstructured_example-docs/fake-email-with-cc-and-bcc.msg")));
    assert!(text.contains("Cc: steve@unstructured.io"), "{text}");
    // A PGP/MIME-encrypted message: refused, not indexed as ciphertext.
    let refused = parse(&b_docs("unstructured_example-docs/fake-encrypted.msg"));
    assert_eq!(refused.len(), 1, "no attachment rows: {refused:?}");
    assert!(matches!(&refused[0].error, Some(IngestError::Encrypted(m)) if m.contains("PGP")), "{refused:?}");
}

/// Outlook keeps a message attached as a message ("forward as attachment") not as file bytes but as a
/// storage inside the attachment's storage ([MS-OXMSG] 2.2.2.1), whose property stream has a 24-byte
/// header where a saved message has 32. Built here the way Outlook writes it: `fake-email.msg` carrying
/// `fake-email-with-cc-and-bcc.msg`.
fn message_carrying_a_message(outer: &Path, inner: &Path, display_name: &str) -> Vec<u8> {
    use std::io::{Cursor, Read, Write};
    fn copy_tree(
        from: &mut cfb::CompoundFile<std::fs::File>,
        out: &mut cfb::CompoundFile<Cursor<Vec<u8>>>,
        under: &Path,
        embedded: bool,
    ) {
        out.create_storage_all(under).unwrap();
        let entries: Vec<(PathBuf, bool)> = from
            .walk()
            .map(|e| (e.path().to_path_buf(), e.is_storage()))
            .filter(|(p, _)| p != Path::new("/"))
            .collect();
        for (path, is_storage) in entries {
            // The named-property map stays at the top of the file only.
            if embedded && path.starts_with("/__nameid_version1.0") {
                continue;
            }
            let target = under.join(path.strip_prefix("/").unwrap());
            if is_storage {
                out.create_storage_all(&target).unwrap();
                continue;
            }
            let mut bytes = Vec::new();
            from.open_stream(&path).unwrap().read_to_end(&mut bytes).unwrap();
            if embedded && path == Path::new("/__properties_version1.0") {
                bytes.drain(24..32);
            }
            out.create_stream(&target).unwrap().write_all(&bytes).unwrap();
        }
    }
    let mut out = cfb::CompoundFile::create(Cursor::new(Vec::new())).unwrap();
    copy_tree(&mut cfb::open(outer).unwrap(), &mut out, Path::new("/"), false);
    let attachment = Path::new("/__attach_version1.0_#00000000");
    out.create_storage(attachment).unwrap();
    out.create_stream(attachment.join("__properties_version1.0")).unwrap().write_all(&[0u8; 8]).unwrap();
    let name: Vec<u8> = display_name.encode_utf16().flat_map(u16::to_le_bytes).collect();
    out.create_stream(attachment.join("__substg1.0_3001001F")).unwrap().write_all(&name).unwrap();
    copy_tree(&mut cfb::open(inner).unwrap(), &mut out, &attachment.join("__substg1.0_3701000D"), true);
    out.flush().unwrap();
    out.into_inner().into_inner()
}

#[test]
fn a_message_attached_to_an_outlook_message_is_read_as_a_message() {
    let bytes = message_carrying_a_message(
        &b_docs("unstructured_example-docs/fake-email.msg"),
        &b_docs("unstructured_example-docs/fake-email-with-cc-and-bcc.msg"),
        "Forwarded: the cc and bcc test",
    );
    let mut outcomes = Vec::new();
    parse_bytes("outer.msg", &bytes, 0, &ParseOptions::default(), &mut |event| {
        if let ParseEvent::Finished(outcome) = event {
            outcomes.push(*outcome);
        }
    });
    let paths: Vec<&str> = outcomes.iter().map(|o| o.path.as_str()).collect();
    assert_eq!(paths, ["outer.msg!/Forwarded: the cc and bcc test.msg", "outer.msg"], "{outcomes:?}");
    assert!(outcomes.iter().all(|o| o.status == Status::Ok), "{outcomes:?}");
    let inner = text_of(&outcomes[0]);
    assert_eq!(outcomes[0].format, Some(Format::Msg));
    assert!(inner.contains("Cc: steve@unstructured.io"), "{inner}");
    let expected = text_of(&parse_one(&b_docs("unstructured_example-docs/fake-email-with-cc-and-bcc.msg")));
    assert_eq!(inner, expected, "the attached message reads as the same message saved alone");
    let outer = text_of(&outcomes[1]);
    assert!(outer.contains("Subject: Test Email"), "{outer}");
    assert!(outer.contains("Attachments: Forwarded: the cc and bcc test.msg"), "{outer}");
    assert!(outcomes[1].warnings.is_empty(), "{:?}", outcomes[1].warnings);
}

#[test]
fn slides_read_in_order_with_titles_and_tables() {
    let outcome = parse_one(&b_docs("markitdown_test_files/test.pptx"));
    assert_eq!((outcome.format, outcome.pages), (Some(Format::Pptx), Some(6)));
    let doc = outcome.document.as_ref().unwrap();
    let first = &doc.blocks[0];
    assert_eq!(first.location.heading_path[0], "Slide 1");
    assert!(first.text.contains("AutoGen"), "{}", first.text);
    let table = doc.blocks.iter().find(|b| b.text.contains("| ColA | ColB |")).expect("the table slide");
    assert!(table.text.contains("| --- |"), "{}", table.text);

    let outcome = parse_one(&b_docs("unstructured_example-docs/fake-power-point.pptx"));
    let doc = outcome.document.as_ref().unwrap();
    assert_eq!(doc.blocks[0].location.heading_path, vec!["Slide 1".to_string(), "Adding a Bullet Slide".into()]);
    assert!(doc.blocks[0].text.contains("Here is some text in a text box!"), "{}", doc.blocks[0].text);

    let text = text_of(&parse_one(&b_docs("unstructured_example-docs/group-shapes-nested.pptx")));
    for letter in ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J"] {
        assert!(text.split_whitespace().any(|w| w == letter), "{letter} of the nested groups: {text}");
    }
}

#[test]
fn an_opendocument_text_keeps_its_headings_and_a_book_its_chapters() {
    let outcome = parse_one(&b_docs("unstructured_example-docs/simple.odt"));
    assert_eq!(outcome.format, Some(Format::Odt));
    let doc = outcome.document.as_ref().unwrap();
    let text = text_of(&outcome);
    assert!(text.contains("Hockey") && text.contains("This is my third thought."), "{text}");
    assert!(
        doc.blocks.iter().any(|b| b.location.heading_path == ["These are a few of my favorite things:"]),
        "{:?}",
        doc.blocks
    );
    let text = text_of(&parse_one(&b_docs("unstructured_example-docs/language-docs/eng_spa_mult.odt")));
    assert!(text.contains("All human beings are born free"), "{text}");

    let outcome = parse_one(&b_docs("markitdown_test_files/test.epub"));
    assert_eq!(outcome.format, Some(Format::Epub));
    let doc = outcome.document.as_ref().unwrap();
    let titles: Vec<&str> = doc.blocks.iter().map(|b| b.location.heading_path[0].as_str()).collect();
    // The navigation document (the table of contents) is not a chapter.
    assert_eq!(titles, ["Chapter 1: Test Content", "Chapter 2: More Content"]);
    assert!(text_of(&outcome).contains("This is a blockquote for testing."));
}

/// A Thunderbird-style mailbox (no extension, `From ` separator lines) made of two real messages: each
/// message a document of its own, then the mailbox's own row, as an archive has.
#[test]
fn a_mailbox_is_a_container_of_messages() {
    let mut mailbox = Vec::new();
    for name in ["family-day.eml", "fake-email-b64.eml"] {
        mailbox.extend_from_slice(b"From sender@example.org Wed Dec 21 10:28:53 2022\n");
        mailbox.extend(std::fs::read(b_docs(&format!("unstructured_example-docs/eml/{name}"))).unwrap());
        mailbox.extend_from_slice(b"\n");
    }
    let mut outcomes = Vec::new();
    parse_bytes("Inbox", &mailbox, 0, &ParseOptions::default(), &mut |event| {
        if let ParseEvent::Finished(outcome) = event {
            outcomes.push(*outcome);
        }
    });
    let rows: Vec<(&str, Option<Format>, Status)> =
        outcomes.iter().map(|o| (o.path.as_str(), o.format, o.status)).collect();
    assert_eq!(
        rows,
        [
            ("Inbox!/message 1.eml", Some(Format::Eml), Status::Ok),
            ("Inbox!/message 2.eml", Some(Format::Eml), Status::Ok),
            ("Inbox", Some(Format::Mbox), Status::Ok)
        ]
    );
    assert!(text_of(&outcomes[0]).contains("Subject: Family Day"));
    assert!(text_of(&outcomes[1]).contains("Roses are red"));
}

/// An OpenDocument presentation (no real one is among the shared files: this one is built the way
/// LibreOffice writes them, `mimetype` stored first): one document, a block per slide under
/// `Slide N > title`, and the slide count.
#[test]
fn an_opendocument_presentation_is_read_slide_by_slide() {
    use std::io::Write;
    let content = r#"<?xml version="1.0" encoding="UTF-8"?>
<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0"><office:body><office:presentation>
<draw:page draw:name="page1"><draw:frame presentation:class="title"><draw:text-box><text:p>Harbour survey</text:p></draw:text-box></draw:frame><draw:frame presentation:class="outline"><draw:text-box><text:p>Forty-two moorings in the inner basin</text:p></draw:text-box></draw:frame></draw:page>
<draw:page draw:name="page2"><draw:frame presentation:class="title"><draw:text-box><text:p>Next steps</text:p></draw:text-box></draw:frame><presentation:notes><draw:frame><draw:text-box><text:p>Ask the harbour master.</text:p></draw:text-box></draw:frame></presentation:notes></draw:page>
</office:presentation></office:body></office:document-content>"#;
    let mut bytes = Vec::new();
    {
        let mut package = zip::ZipWriter::new(std::io::Cursor::new(&mut bytes));
        let stored = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
        package.start_file("mimetype", stored).unwrap();
        package.write_all(b"application/vnd.oasis.opendocument.presentation").unwrap();
        package.start_file("content.xml", zip::write::SimpleFileOptions::default()).unwrap();
        package.write_all(content.as_bytes()).unwrap();
        package.finish().unwrap();
    }
    let mut outcomes = Vec::new();
    quarry_ingest::parse_bytes("survey.odp", &bytes, 0, &quarry_ingest::ParseOptions::default(), &mut |event| {
        if let ParseEvent::Finished(outcome) = event {
            outcomes.push(*outcome);
        }
    });
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    let outcome = &outcomes[0];
    assert_eq!(
        (outcome.format, outcome.status, outcome.pages),
        (Some(Format::Odp), Status::Ok, Some(2)),
        "{outcome:?}"
    );
    let blocks = &outcome.document.as_ref().unwrap().blocks;
    assert_eq!(blocks[0].location.heading_path, ["Slide 1", "Harbour survey"]);
    assert!(blocks[0].text.contains("Forty-two moorings"), "{:?}", blocks[0].text);
    assert_eq!(blocks[1].location.heading_path, ["Slide 2", "Next steps"]);
    assert!(blocks[1].text.ends_with("Notes: Ask the harbour master."), "{:?}", blocks[1].text);
}
