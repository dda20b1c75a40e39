//! ZIP archives on real files from zip2's and markitdown's test sets, plus the guards (bombs, traversal,
//! depth) on archives built here, since no real hostile archive of those kinds is in the eval set.

use crate::common::*;
use quarry_ingest::{IngestError, ParseOptions, Status};
use std::io::Write;

#[test]
fn members_are_documents_with_virtual_paths() {
    let outcomes = parse(&b_docs("markitdown_test_files/test_files.zip"));
    let paths: Vec<&str> = outcomes.iter().map(|o| o.path.as_str()).collect();
    assert!(paths.contains(&"test_files.zip"), "{paths:?}");
    assert!(paths.contains(&"test_files.zip!/test.docx"), "{paths:?}");
    let docx = outcomes.iter().find(|o| o.path == "test_files.zip!/test.docx").unwrap();
    assert_eq!(docx.status, Status::Ok);
    assert_eq!(docx.document.as_ref().unwrap().path, "test_files.zip!/test.docx");
    // A picture inside the archive is a document of its own, read by OCR.
    let jpg = outcomes.iter().find(|o| o.path.ends_with(".jpg")).unwrap();
    assert_eq!(jpg.format, Some(quarry_ingest::Format::Image));
    assert!(jpg.status == Status::Ok && jpg.warnings.iter().any(|w| w == "read by OCR"), "{jpg:?}");
}

#[test]
fn encrypted_entries_are_reported_not_fatal() {
    let outcomes = parse(&b_docs("zip2_tests/aes_archive.zip"));
    let archive = outcomes.iter().find(|o| o.path == "aes_archive.zip").unwrap();
    assert_eq!(archive.status, Status::Ok);
    let members: Vec<_> = outcomes.iter().filter(|o| o.path.contains("!/")).collect();
    assert!(!members.is_empty());
    for m in members {
        assert!(matches!(m.error, Some(IngestError::Encrypted(_))), "{}: {:?}", m.path, m.error);
    }
}

#[test]
fn symlinks_are_refused() {
    let outcomes = parse(&b_docs("zip2_tests/symlink.zip"));
    let link = outcomes.iter().find(|o| o.path.contains("!/")).unwrap();
    assert!(
        matches!(&link.error, Some(IngestError::UnsafeArchive(m)) if m.contains("symbolic link")),
        "{:?}",
        link.error
    );
}

#[test]
fn non_utf8_names_are_decoded() {
    let outcomes = parse(&b_docs("zip2_tests/non_utf8.zip"));
    let names: Vec<&str> = outcomes.iter().map(|o| o.path.as_str()).collect();
    assert!(names.iter().any(|n| n.ends_with("!/中文")), "{names:?}");
    assert!(names.iter().any(|n| n.ends_with("!/日文")), "{names:?}");
}

#[test]
fn corrupt_central_directory_is_a_clear_error() {
    for name in
        ["zip2_tests/invalid_offset.zip", "zip2_tests/invalid_cde_number_of_files_allocation_greater_offset.zip"]
    {
        let outcome = parse(&b_docs(name)).remove(0);
        assert_eq!(outcome.status, Status::Failed, "{name}");
        assert!(
            matches!(outcome.error, Some(IngestError::Malformed { ref format, .. }) if format == "zip"),
            "{name}: {:?}",
            outcome.error
        );
    }
}

fn write_zip(path: &std::path::Path, entries: &[(&str, Vec<u8>)]) {
    let file = std::fs::File::create(path).unwrap();
    let mut zip = zip::ZipWriter::new(file);
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for (name, data) in entries {
        zip.start_file(*name, options).unwrap();
        zip.write_all(data).unwrap();
    }
    zip.finish().unwrap();
}

#[test]
fn zip_bombs_and_traversal_are_refused_and_siblings_survive() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hostile.zip");
    write_zip(
        &path,
        &[
            ("zeros.txt", vec![b'0'; 50 << 20]), // 50 MiB of one byte: ~1000:1
            ("../../escape.txt", b"outside".to_vec()),
            ("fine.txt", b"a normal member".to_vec()),
        ],
    );
    let outcomes = parse(&path);
    let by_name = |suffix: &str| outcomes.iter().find(|o| o.path.ends_with(suffix)).unwrap();
    assert!(matches!(&by_name("zeros.txt").error, Some(IngestError::UnsafeArchive(m)) if m.contains("zip bomb")));
    assert!(matches!(&by_name("escape.txt").error, Some(IngestError::UnsafeArchive(m)) if m.contains("escapes")));
    assert_eq!(by_name("fine.txt").status, Status::Ok);
}

#[test]
fn total_unpacked_size_and_depth_are_capped() {
    let dir = tempfile::tempdir().unwrap();
    let inner = dir.path().join("inner.zip");
    let docx = std::fs::read(b_docs("markitdown_test_files/test.docx")).unwrap();
    write_zip(&inner, &[("test.docx", docx)]);
    // Four levels: outer > l2 > l3 > inner: the fourth archive is refused.
    let mut current = std::fs::read(&inner).unwrap();
    for level in ["l3.zip", "l2.zip", "outer.zip"] {
        let path = dir.path().join(level);
        let member = if level == "l3.zip" {
            "inner.zip".to_string()
        } else {
            format!("l{}.zip", level[1..2].parse::<u32>().map(|n| n + 1).unwrap_or(2))
        };
        write_zip(&path, &[(member.as_str(), current)]);
        current = std::fs::read(&path).unwrap();
    }
    let outcomes = parse(&dir.path().join("outer.zip"));
    let deepest = outcomes.iter().find(|o| o.path.ends_with("inner.zip")).unwrap();
    assert!(matches!(&deepest.error, Some(IngestError::UnsafeArchive(m)) if m.contains("nested")), "{outcomes:#?}");
    // Three levels are fine.
    let outcomes = parse(&dir.path().join("l2.zip"));
    assert!(
        outcomes.iter().any(|o| o.path == "l2.zip!/l3.zip!/inner.zip!/test.docx" && o.status == Status::Ok),
        "{:#?}",
        outcomes.iter().map(|o| (&o.path, o.status)).collect::<Vec<_>>()
    );

    let limits = ParseOptions { max_archive_total_bytes: 1000, ..ParseOptions::default() };
    let big = dir.path().join("big.zip");
    write_zip(&big, &[("a.txt", vec![b'a'; 800]), ("b.txt", vec![b'b'; 800])]);
    let outcomes = parse_with(&big, &limits);
    assert_eq!(outcomes.iter().find(|o| o.path.ends_with("a.txt")).unwrap().status, Status::Ok);
    assert_eq!(outcomes.iter().find(|o| o.path.ends_with("b.txt")).unwrap().status, Status::TooLarge);
}

#[test]
fn members_are_emitted_as_they_finish_before_the_archive_row() {
    // A supervisor that has to kill a worker mid-archive keeps what was already emitted, so members
    // must not be held back until the archive is done.
    let outcomes = parse(&b_docs("markitdown_test_files/test_files.zip"));
    let archive_at = outcomes.iter().position(|o| o.path == "test_files.zip").unwrap();
    assert_eq!(
        archive_at,
        outcomes.len() - 1,
        "archive row last: {:?}",
        outcomes.iter().map(|o| &o.path).collect::<Vec<_>>()
    );
}
