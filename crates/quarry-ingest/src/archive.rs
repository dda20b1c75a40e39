//! ZIP archives: every member is a document of its own with the virtual path `archive.zip!/dir/file.pdf`;
//! nested archives are opened up to [`ParseOptions::max_archive_depth`] levels.
//!
//! Guards, each reported per member with a clear reason instead of failing the archive: entry count,
//! declared and actual member size, total unpacked bytes, compression ratio (zip bombs), path traversal
//! (`..`, absolute paths), symbolic links, encrypted entries. Names without the UTF-8 flag are decoded as
//! UTF-8 when valid, else as a CJK legacy encoding (GBK, Big5, Shift_JIS) when chardetng is confident, else
//! as CP437 (the ZIP default).

use crate::parse::{outcome_failed, ParseEvent, ParseOptions};
use crate::IngestError;
use std::io::{Cursor, Read};

/// Members bigger than this are only suspicious when their compression ratio is also extreme.
const RATIO_CHECK_MIN_BYTES: u64 = 1 << 20;

/// Expands an archive's members into `emit`, parsing each (and recursing into nested archives).
/// `path` is the archive's virtual path, `depth` how many archives enclose it (0 for a file on disk).
///
/// Errors: [`IngestError::Malformed`] when the central directory cannot be read, [`IngestError::TooLarge`]
/// when it lists more entries than allowed. Member problems never abort the archive: they become rows.
pub(crate) fn expand(
    path: &str,
    bytes: &[u8],
    depth: u32,
    options: &ParseOptions,
    emit: &mut dyn FnMut(ParseEvent),
) -> Result<usize, IngestError> {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| IngestError::malformed("zip", e))?;
    if archive.len() > options.max_archive_entries {
        return Err(IngestError::TooLarge(format!(
            "archive lists {} entries (limit {})",
            archive.len(),
            options.max_archive_entries
        )));
    }
    let mut unpacked_total: u64 = 0;
    let mut members = 0;
    for index in 0..archive.len() {
        let meta = match archive.by_index_raw(index) {
            Ok(entry) => EntryMeta::from(&entry),
            Err(e) => {
                emit(outcome_failed(format!("{path}!/#{index}"), None, IngestError::malformed("zip", e), 0));
                continue;
            }
        };
        if meta.is_dir || is_os_metadata(&meta.name) {
            continue;
        }
        members += 1;
        let member_path = format!("{path}!/{}", meta.name.trim_start_matches('/'));
        let refuse = |error: IngestError, emit: &mut dyn FnMut(ParseEvent)| {
            emit(ParseEvent::Started { path: member_path.clone() });
            emit(outcome_failed(member_path.clone(), None, error, 0));
        };
        if let Some(reason) = unsafe_path_reason(&meta.name) {
            refuse(IngestError::UnsafeArchive(reason), emit);
            continue;
        }
        if meta.is_symlink {
            refuse(IngestError::UnsafeArchive("symbolic link".into()), emit);
            continue;
        }
        if meta.encrypted {
            refuse(IngestError::Encrypted("ZIP entry needs a password".into()), emit);
            continue;
        }
        if meta.size > options.max_member_bytes {
            refuse(
                IngestError::TooLarge(format!(
                    "member unpacks to {} bytes (limit {})",
                    meta.size, options.max_member_bytes
                )),
                emit,
            );
            continue;
        }
        if meta.size >= RATIO_CHECK_MIN_BYTES && meta.size / meta.compressed_size.max(1) > options.max_compression_ratio
        {
            let ratio = meta.size / meta.compressed_size.max(1);
            refuse(IngestError::UnsafeArchive(format!("compression ratio {ratio}:1 looks like a zip bomb")), emit);
            continue;
        }
        if unpacked_total.saturating_add(meta.size) > options.max_archive_total_bytes {
            refuse(
                IngestError::TooLarge(format!(
                    "archive unpacks to more than {} bytes",
                    options.max_archive_total_bytes
                )),
                emit,
            );
            continue;
        }
        // Never trust the declared size: read at most one byte past the limit.
        let data = match read_member(&mut archive, index, options.max_member_bytes) {
            Ok(data) => data,
            Err(error) => {
                refuse(error, emit);
                continue;
            }
        };
        unpacked_total += data.len() as u64;
        if unpacked_total > options.max_archive_total_bytes {
            refuse(
                IngestError::TooLarge(format!(
                    "archive unpacks to more than {} bytes",
                    options.max_archive_total_bytes
                )),
                emit,
            );
            continue;
        }
        crate::parse::parse_bytes(&member_path, &data, depth + 1, options, emit);
    }
    Ok(members)
}

/// Reads a message's attachments as documents of their own, named `{path}!/{file name}`, under the
/// guards ZIP members have: nesting depth, entry count, member size and total unpacked size. A name is
/// reduced to its last path component (a name like `../../x.pdf` stays inside the message) and made unique
/// within the message (`report (2).pdf`). Problems become rows of their own; they never fail the message.
pub(crate) fn expand_attachments(
    path: &str,
    attachments: Vec<crate::mail::Attachment>,
    depth: u32,
    options: &ParseOptions,
    emit: &mut dyn FnMut(ParseEvent),
) {
    let mut used: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut unpacked_total: u64 = 0;
    for (index, attachment) in attachments.into_iter().enumerate() {
        let name = unique_name(&attachment_file_name(&attachment.name, index), &mut used);
        let member_path = format!("{path}!/{name}");
        let size = attachment.bytes.len() as u64;
        unpacked_total = unpacked_total.saturating_add(size);
        let refusal = if depth + 1 > options.max_archive_depth {
            Some(IngestError::UnsafeArchive(format!("attachments nested more than {} deep", options.max_archive_depth)))
        } else if index >= options.max_archive_entries {
            Some(IngestError::TooLarge(format!(
                "message carries more than {} attachments",
                options.max_archive_entries
            )))
        } else if size > options.max_member_bytes {
            Some(IngestError::TooLarge(format!("attachment is {size} bytes (limit {})", options.max_member_bytes)))
        } else if unpacked_total > options.max_archive_total_bytes {
            Some(IngestError::TooLarge(format!(
                "attachments add up to more than {} bytes",
                options.max_archive_total_bytes
            )))
        } else {
            None
        };
        match refusal {
            Some(error) => {
                emit(ParseEvent::Started { path: member_path.clone() });
                emit(outcome_failed(member_path, None, error, 0));
            }
            None => crate::parse::parse_bytes(&member_path, &attachment.bytes, depth + 1, options, emit),
        }
    }
}

/// The last path component of an attachment's name, without control characters or the `!/` that
/// separates virtual path levels; `attachment-N` when nothing is left.
fn attachment_file_name(name: &str, index: usize) -> String {
    let last = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let clean: String = last.chars().filter(|c| !c.is_control()).collect::<String>().replace("!/", "!_");
    let clean = clean.trim().trim_start_matches('.').trim().to_string();
    if clean.is_empty() {
        format!("attachment-{}", index + 1)
    } else {
        clean
    }
}

/// `name`, or `stem (2).ext`, `stem (3).ext`, … when an earlier attachment took it.
fn unique_name(name: &str, used: &mut std::collections::HashSet<String>) -> String {
    if used.insert(name.to_string()) {
        return name.to_string();
    }
    let (stem, ext) = match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => (stem, format!(".{ext}")),
        _ => (name, String::new()),
    };
    (2..)
        .map(|n| format!("{stem} ({n}){ext}"))
        .find(|candidate| used.insert(candidate.clone()))
        .unwrap_or_else(|| name.to_string())
}

struct EntryMeta {
    name: String,
    is_dir: bool,
    is_symlink: bool,
    encrypted: bool,
    size: u64,
    compressed_size: u64,
}

impl<R: Read> From<&zip::read::ZipFile<'_, R>> for EntryMeta {
    fn from(entry: &zip::read::ZipFile<'_, R>) -> Self {
        EntryMeta {
            name: decode_name(entry.name_raw(), entry.name()),
            is_dir: entry.is_dir(),
            is_symlink: entry.is_symlink(),
            encrypted: entry.encrypted(),
            size: entry.size(),
            compressed_size: entry.compressed_size(),
        }
    }
}

fn read_member(archive: &mut zip::ZipArchive<Cursor<&[u8]>>, index: usize, limit: u64) -> Result<Vec<u8>, IngestError> {
    let entry = archive.by_index(index).map_err(|e| match e {
        zip::result::ZipError::UnsupportedArchive(m) if m == zip::result::ZipError::PASSWORD_REQUIRED => {
            IngestError::Encrypted("ZIP entry needs a password".into())
        }
        other => IngestError::malformed("zip", other),
    })?;
    let mut data = Vec::new();
    entry.take(limit + 1).read_to_end(&mut data).map_err(|e| IngestError::malformed("zip", e))?;
    if data.len() as u64 > limit {
        return Err(IngestError::TooLarge(format!("member unpacks to more than {limit} bytes")));
    }
    Ok(data)
}

/// Decodes a member name. `fallback` is the zip crate's decoding (UTF-8 when flagged, else CP437).
fn decode_name(raw: &[u8], fallback: &str) -> String {
    if let Ok(utf8) = std::str::from_utf8(raw) {
        return utf8.to_string();
    }
    let mut detector = chardetng::EncodingDetector::new();
    detector.feed(raw, true);
    let (encoding, confident) = detector.guess_assess(None, false);
    let cjk = [encoding_rs::GBK, encoding_rs::GB18030, encoding_rs::BIG5, encoding_rs::SHIFT_JIS, encoding_rs::EUC_KR];
    if confident && cjk.contains(&encoding) {
        let (text, _, had_errors) = encoding.decode(raw);
        if !had_errors {
            return text.into_owned();
        }
    }
    fallback.to_string()
}

/// Why a member name is unsafe to treat as a path inside the archive, if it is.
fn unsafe_path_reason(name: &str) -> Option<String> {
    let normalised = name.replace('\\', "/");
    if normalised.starts_with('/') || normalised.as_bytes().get(1) == Some(&b':') {
        return Some(format!("absolute path {name:?}"));
    }
    if normalised.split('/').any(|c| c == "..") {
        return Some(format!("path escapes the archive: {name:?}"));
    }
    None
}

/// macOS resource forks and Finder files: noise, not documents.
fn is_os_metadata(name: &str) -> bool {
    name.starts_with("__MACOSX/") || name.ends_with(".DS_Store") || name.rsplit('/').next() == Some("Thumbs.db")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traversal_and_absolute_names_are_refused() {
        assert!(unsafe_path_reason("../../etc/passwd").is_some());
        assert!(unsafe_path_reason("a/../../b").is_some());
        assert!(unsafe_path_reason("/etc/passwd").is_some());
        assert!(unsafe_path_reason("C:\\windows\\x").is_some());
        assert!(unsafe_path_reason("dir/file..name.pdf").is_none());
    }

    #[test]
    fn attachment_names_stay_inside_the_message_and_are_unique() {
        assert_eq!(attachment_file_name("../../etc/passwd", 0), "passwd");
        assert_eq!(attachment_file_name("C:\\Users\\a\\report.pdf", 0), "report.pdf");
        assert_eq!(attachment_file_name("a!/b.pdf", 0), "b.pdf");
        assert_eq!(attachment_file_name("x!/", 0), "attachment-1");
        assert_eq!(attachment_file_name("..", 2), "attachment-3");
        let mut used = std::collections::HashSet::new();
        assert_eq!(unique_name("report.pdf", &mut used), "report.pdf");
        assert_eq!(unique_name("report.pdf", &mut used), "report (2).pdf");
        assert_eq!(unique_name("report.pdf", &mut used), "report (3).pdf");
        assert_eq!(unique_name("notes", &mut used), "notes");
        assert_eq!(unique_name("notes", &mut used), "notes (2)");
    }

    #[test]
    fn gbk_names_are_decoded() {
        let (raw, _, _) = encoding_rs::GBK.encode("中国移动年度报告.txt");
        assert_eq!(decode_name(&raw, "garbled"), "中国移动年度报告.txt");
    }
}
