//! Chunking real documents with the embedding model's own tokenizer (all-MiniLM-L6-v2, from set-up).

use crate::common::*;
use quarry_ingest::{ChunkSizer, Chunker, ChunkerConfig};

fn minilm_chunker(config: ChunkerConfig) -> Chunker {
    let sizer = ChunkSizer::from_tokenizer_file(&models_dir().join("all-minilm-l6-v2/tokenizer.json")).unwrap();
    Chunker::new(sizer, config).unwrap()
}

#[test]
fn pdf_chunks_fit_the_token_budget_and_cite_pages() {
    let library = eval_dir().join("C_private_library");
    // The PDF with the most text: many pages, many chunks.
    let row = manifest(&library)
        .into_iter()
        .filter(|r| r["magic"] == "pdf")
        .max_by_key(|r| r["text_chars"].parse::<u64>().unwrap_or(0))
        .expect("PDFs in the private library");
    let outcome = parse_one(&library.join(&row["path"]));
    let doc = outcome.document.expect("parsed");
    let chunker = minilm_chunker(ChunkerConfig::default());
    assert!(chunker.counts_tokens());
    let chunks = chunker.chunk(&doc);
    assert!(chunks.len() > 20, "{} chunks", chunks.len());
    let full: Vec<char> = doc.full_text().chars().collect();
    let pages = doc.page_count.unwrap();
    for (i, c) in chunks.iter().enumerate() {
        assert_eq!(c.index as usize, i);
        assert!(c.token_count <= 512, "chunk {i} has {} tokens", c.token_count);
        assert!(c.token_count > 0);
        let (start, end) = (c.page_start.unwrap(), c.page_end.unwrap());
        assert!(1 <= start && start <= end && end <= pages, "chunk {i} pages {start}-{end} of {pages}");
        let slice: String = full[c.char_start as usize..c.char_end as usize].iter().collect();
        assert_eq!(slice, c.text, "offsets of chunk {i}");
        assert_eq!(c.document_id, doc.content_hash);
    }
    // Every page with text is covered by some chunk.
    for block in &doc.blocks {
        let page = block.location.page.unwrap();
        assert!(
            chunks.iter().any(|c| c.page_start.unwrap() <= page && page <= c.page_end.unwrap()),
            "page {page} uncovered"
        );
    }
}

#[test]
fn a_chunk_starting_below_a_tables_later_section_keeps_that_section() {
    // Microsoft's segment table prints each segment under "Revenue" and again under "Operating Income";
    // a chunk that starts among the operating-income rows showed "More Personal Computing: 5,174 million"
    // with nothing saying it is not revenue (issue 36). Chunked as a library chunks (256 tokens, 38 overlap).
    let doc = parse_one(&c_docs("en_sec-10-q/2023 Q3 MSFT.pdf")).document.expect("parsed");
    let full = doc.full_text();
    let chunks = minilm_chunker(ChunkerConfig { max_size: 256, overlap: 38 }).chunk(&doc);
    let with_section: Vec<_> = chunks.iter().filter(|c| !c.heading_path.is_empty()).collect();
    assert!(
        with_section
            .iter()
            .any(|c| c.heading_path == ["Operating Income"] && c.text.contains("More Personal Computing: ")),
        "no chunk starts among the operating-income rows of the segment table: {:?}",
        with_section.iter().map(|c| (&c.heading_path, c.text.lines().next())).collect::<Vec<_>>()
    );
    let full_chars: Vec<char> = full.chars().collect();
    for c in &with_section {
        assert_eq!(c.heading_path.len(), 1);
        // It starts at a row under the section, with the section line above it in the same page's text,
        // or at the section line itself.
        let first = c.text.lines().next().unwrap();
        if quarry_core::table_row::section_name(first) == c.heading_path[0] {
            continue;
        }
        assert!(quarry_core::table_row::parse_row(first).is_some(), "{:?} starts with {first:?}", c.heading_path);
        let before: String = full_chars[..c.char_start as usize].iter().collect();
        let line = format!("\n{}", c.heading_path[0]);
        let page_start = before.rfind("\n\n").unwrap_or(0);
        assert!(before[page_start..].contains(&line), "{:?} not above chunk {}", c.heading_path, c.index);
    }
    // Most chunks are prose and keep no heading path.
    assert!(with_section.len() * 5 < chunks.len(), "{} of {} chunks", with_section.len(), chunks.len());
}

#[test]
fn overlap_repeats_text_between_neighbours_within_budget() {
    // text-splitter overlaps in whole semantic units (sentences, paragraphs) that fit the overlap budget,
    // so some neighbours share text and none shares more than the budget.
    let outcome = parse_one(&b_docs("unstructured_example-docs/book-war-and-peace-1p.txt"));
    let doc = outcome.document.unwrap();
    let chunker = minilm_chunker(ChunkerConfig { max_size: 96, overlap: 32 });
    let sizer = ChunkSizer::from_tokenizer_file(&models_dir().join("all-minilm-l6-v2/tokenizer.json")).unwrap();
    let chunks = chunker.chunk(&doc);
    assert!(chunks.len() >= 5, "{} chunks", chunks.len());
    let full: Vec<char> = doc.full_text().chars().collect();
    let mut overlaps = 0;
    for pair in chunks.windows(2) {
        if pair[1].char_start < pair[0].char_end {
            overlaps += 1;
            let shared: String = full[pair[1].char_start as usize..pair[0].char_end as usize].iter().collect();
            assert!(pair[0].text.ends_with(shared.trim_end()) || pair[0].text.contains(shared.trim()));
            let tokens = text_splitter::ChunkSizer::size(&sizer, &shared);
            assert!(tokens <= 32 + 2, "overlap of {tokens} tokens: {shared:?}");
        }
    }
    assert!(overlaps > 0, "no overlap in {} chunks", chunks.len());
}

#[test]
fn chinese_markdown_chunks_keep_heading_paths() {
    let dir = c_docs("");
    let md = walk_first(&dir, |p| {
        p.extension().is_some_and(|e| e == "md") && std::fs::read_to_string(p).is_ok_and(|t| t.contains("\n## "))
    })
    .expect("a Chinese Markdown report with sections");
    let outcome = parse_one(&md);
    assert!(outcome.cjk_chars > 100, "{}: {} CJK chars", md.display(), outcome.cjk_chars);
    let chunks = minilm_chunker(ChunkerConfig::default()).chunk(outcome.document.as_ref().unwrap());
    assert!(chunks.iter().any(|c| !c.heading_path.is_empty()));
    for c in &chunks {
        assert!(c.token_count <= 512);
    }
}

fn walk_first(dir: &std::path::Path, pred: impl Fn(&std::path::Path) -> bool) -> Option<std::path::PathBuf> {
    let mut stack = vec![dir.to_path_buf()];
    let mut found = Vec::new();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).ok()? {
            let p = e.ok()?.path();
            if p.is_dir() {
                stack.push(p);
            } else if pred(&p) {
                found.push(p);
            }
        }
    }
    found.sort();
    found.into_iter().next()
}

/// What the chunks of three real filings (Apple's, Intel's and NVIDIA's tables are each read by rules
/// of their own) hash to, with the PDF extraction version they were read with.
/// A library reads a PDF again only when `quarry_ingest::extraction_version("pdf")` rises, so a change to
/// the PDF reading, the table rows or the chunker that leaves the version alone reaches new libraries
/// but never existing ones: the entries 2026-12-01 (b) to 2026-12-02 (b) measured answers on a library read before aa8f920 had changed
/// its chunks' heading paths (docs/evaluation/decisions.md, 2026-12-02 (c)).
const PDF_READING: (u32, &str) = (8, "3a822b714c9859f7bddf22bbb1f82da9bec1fe6352fd0bb453bb740be880b0a0");

#[test]
fn a_change_in_what_a_pdf_s_chunks_say_comes_with_a_new_extraction_version() {
    let mut hasher = blake3::Hasher::new();
    let mut counts = Vec::new();
    for file in
        [sample_filing("2023 Q3 AAPL.pdf"), c_docs("en_sec-10-q/2023 Q3 INTC.pdf"), sample_filing("2023 Q2 NVDA.pdf")]
    {
        let doc = parse_one(&file).document.expect("parsed");
        let file = file.file_name().unwrap_or_default().to_string_lossy().into_owned();
        let chunks = minilm_chunker(ChunkerConfig::default()).chunk(&doc);
        counts.push(format!("{file}: {}", chunks.len()));
        for c in &chunks {
            for part in [c.text.as_str(), &c.heading_path.join(" > "), &format!("{:?}-{:?}", c.page_start, c.page_end)]
            {
                hasher.update(part.as_bytes());
                hasher.update(b"\0");
            }
        }
    }
    let hash = hasher.finalize().to_hex();
    assert_eq!(
        (quarry_ingest::extraction_version("pdf"), hash.as_str()),
        PDF_READING,
        "the chunks of the filings changed ({}): if the change is meant, raise \
         quarry_ingest::extraction_version(\"pdf\") so that `sync` reads existing libraries again, and \
         record the new version and hash in PDF_READING",
        counts.join(", ")
    );
}
