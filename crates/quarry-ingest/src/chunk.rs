//! Token-sized chunks with overlap, through text-splitter (semantic boundaries: paragraphs, then
//! sentences, then words), each keeping the page span, sheet and heading path of the text it came from.

use quarry_core::{Chunk, ParsedDocument, BLOCK_SEPARATOR};
use std::path::Path;
use std::sync::Arc;

/// How chunk length is measured.
#[derive(Clone)]
pub enum ChunkSizer {
    /// Tokens of a Hugging Face tokenizer (the embedding model's), without special tokens.
    Tokenizer(Box<tokenizers::Tokenizer>),
    /// Tokens as counted by the embedding model itself (e.g. `quarry_index::Embedder::token_counter`).
    TokenCounter(Arc<dyn Fn(&str) -> usize + Send + Sync>),
    /// Unicode characters, for when no tokenizer file is at hand.
    Characters,
}

impl ChunkSizer {
    /// Loads `tokenizer.json` from `path`, with truncation and padding turned off so sizes are true lengths.
    ///
    /// Errors: the file is missing or is not a tokenizer definition (the message names the path).
    pub fn from_tokenizer_file(path: &Path) -> Result<Self, String> {
        let mut tokenizer = tokenizers::Tokenizer::from_file(path)
            .map_err(|e| format!("cannot load tokenizer {}: {e}", path.display()))?;
        tokenizer.with_truncation(None).map_err(|e| format!("tokenizer {}: {e}", path.display()))?;
        tokenizer.with_padding(None);
        Ok(ChunkSizer::Tokenizer(Box::new(tokenizer)))
    }
}

impl text_splitter::ChunkSizer for ChunkSizer {
    fn size(&self, chunk: &str) -> usize {
        match self {
            ChunkSizer::Tokenizer(t) => {
                t.encode_fast(chunk, false).map(|e| e.len()).unwrap_or_else(|_| chunk.chars().count())
            }
            ChunkSizer::TokenCounter(count) => count(chunk),
            ChunkSizer::Characters => chunk.chars().count(),
        }
    }
}

/// Chunk size settings, in the sizer's unit (tokens or characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkerConfig {
    /// Largest chunk (default 512).
    pub max_size: usize,
    /// How much of the previous chunk the next one repeats (default 76, about 15 % of 512).
    pub overlap: usize,
}

impl Default for ChunkerConfig {
    fn default() -> Self {
        ChunkerConfig { max_size: 512, overlap: 76 }
    }
}

/// Splits [`ParsedDocument`]s into [`Chunk`]s. Chunks never cross a change of sheet or heading section
/// (so each has one heading path), but do run across PDF pages (`page_start..=page_end`). A PDF chunk
/// has no heading path, except one that starts inside a table below a later section line of it
/// ("Operating Income" after the "Revenue" rows): that section is its heading path, so its first rows can
/// be told from the same labels under the earlier section (`quarry_agents::genre::financial::table_section`).
pub struct Chunker {
    splitter: text_splitter::TextSplitter<ChunkSizer>,
    /// The same sizer as the splitter's, to report each chunk's length.
    sizer: ChunkSizer,
}

impl Chunker {
    /// Errors: `overlap >= max_size`.
    pub fn new(sizer: ChunkSizer, config: ChunkerConfig) -> Result<Self, String> {
        let chunk_config = text_splitter::ChunkConfig::new(config.max_size)
            .with_overlap(config.overlap)
            .map_err(|e| e.to_string())?
            .with_sizer(sizer.clone());
        Ok(Chunker { splitter: text_splitter::TextSplitter::new(chunk_config), sizer })
    }

    /// True when sizes are tokens, false when characters.
    pub fn counts_tokens(&self) -> bool {
        !matches!(self.sizer, ChunkSizer::Characters)
    }

    /// The chunks of `doc`, in order, with `index` 0.. and character offsets into `doc.full_text()`.
    pub fn chunk(&self, doc: &ParsedDocument) -> Vec<Chunk> {
        let full = doc.full_text();
        // Byte range of every block inside `full`.
        let mut ranges = Vec::with_capacity(doc.blocks.len());
        let mut at = 0;
        for (i, block) in doc.blocks.iter().enumerate() {
            if i > 0 {
                at += BLOCK_SEPARATOR.len();
            }
            ranges.push(at..at + block.text.len());
            at += block.text.len();
        }
        let mut chars = CharOffsets::new(&full);
        let mut chunks = Vec::new();
        let mut first = 0;
        while first < doc.blocks.len() {
            // A segment: consecutive blocks sharing sheet and heading path.
            let key = |i: usize| (&doc.blocks[i].location.sheet, &doc.blocks[i].location.heading_path);
            let mut last = first;
            while last + 1 < doc.blocks.len() && key(last + 1) == key(first) {
                last += 1;
            }
            let segment_start = ranges[first].start;
            let segment = &full[segment_start..ranges[last].end];
            for (offset, text) in self.splitter.chunk_indices(segment) {
                let start = segment_start + offset;
                let end = start + text.len();
                let touched = || (first..=last).filter(|&i| ranges[i].start < end && start < ranges[i].end);
                let pages: Vec<u32> = touched().filter_map(|i| doc.blocks[i].location.page).collect();
                let ocr = touched().any(|i| doc.blocks[i].location.ocr);
                let location = &doc.blocks[first].location;
                // A PDF chunk that starts inside a table, below a later section line of it, keeps that
                // section as its heading ("Operating Income"), for what reads its first rows.
                let heading_path = if location.heading_path.is_empty() && location.page.is_some() {
                    crate::table::section_above(&full[..start], text).into_iter().collect()
                } else {
                    location.heading_path.clone()
                };
                chunks.push(Chunk {
                    document_id: doc.content_hash.clone(),
                    path: doc.path.clone(),
                    index: chunks.len() as u32,
                    text: text.to_string(),
                    page_start: pages.iter().min().copied(),
                    page_end: pages.iter().max().copied(),
                    sheet: location.sheet.clone(),
                    heading_path,
                    char_start: chars.at(start),
                    char_end: chars.at(end),
                    token_count: text_splitter::ChunkSizer::size(&self.sizer, text) as u32,
                    ocr,
                });
            }
            first = last + 1;
        }
        chunks
    }
}

/// Converts byte offsets to character offsets in O(distance moved), for offsets that mostly go forward.
struct CharOffsets<'a> {
    text: &'a str,
    byte: usize,
    char: u64,
}

impl<'a> CharOffsets<'a> {
    fn new(text: &'a str) -> Self {
        CharOffsets { text, byte: 0, char: 0 }
    }

    fn at(&mut self, byte: usize) -> u64 {
        if byte >= self.byte {
            self.char += self.text[self.byte..byte].chars().count() as u64;
        } else {
            self.char -= self.text[byte..self.byte].chars().count() as u64;
        }
        self.byte = byte;
        self.char
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quarry_core::{Block, Format, Location};

    fn doc(blocks: Vec<Block>) -> ParsedDocument {
        ParsedDocument {
            path: "x.pdf".into(),
            format: Format::Pdf,
            content_hash: "h".into(),
            byte_len: 0,
            page_count: Some(3),
            blocks,
            warnings: vec![],
        }
    }

    fn page(n: u32, text: &str) -> Block {
        Block { text: text.into(), location: Location { page: Some(n), ..Default::default() } }
    }

    #[test]
    fn chunks_span_pages_and_offsets_point_into_full_text() {
        let sentence = "Ünïcode words make offsets differ from bytes. ";
        // A long first page is split by sentences; its last sentences and the two short pages fit one chunk.
        let d = doc(vec![page(1, &sentence.repeat(10)), page(2, "Short page two."), page(3, "Last page.")]);
        let chunker = Chunker::new(ChunkSizer::Characters, ChunkerConfig { max_size: 300, overlap: 40 }).unwrap();
        let chunks = chunker.chunk(&d);
        assert!(chunks.len() >= 2);
        let full: Vec<char> = d.full_text().chars().collect();
        for c in &chunks {
            let slice: String = full[c.char_start as usize..c.char_end as usize].iter().collect();
            assert_eq!(slice, c.text);
            assert!(c.token_count as usize <= 300);
        }
        assert_eq!((chunks[0].page_start, chunks[0].page_end), (Some(1), Some(1)));
        let last = chunks.last().unwrap();
        assert_eq!((last.page_start, last.page_end), (Some(1), Some(3)), "the last chunk runs across pages 1-3");
    }

    #[test]
    fn chunks_do_not_cross_sheets() {
        let sheet = |name: &str, text: &str| Block {
            text: text.into(),
            location: Location { sheet: Some(name.into()), ..Default::default() },
        };
        let d = doc(vec![sheet("A", "alpha"), sheet("B", "beta")]);
        let chunker = Chunker::new(ChunkSizer::Characters, ChunkerConfig::default()).unwrap();
        let chunks = chunker.chunk(&d);
        assert_eq!(chunks.iter().map(|c| c.sheet.clone().unwrap()).collect::<Vec<_>>(), vec!["A", "B"]);
    }
}
