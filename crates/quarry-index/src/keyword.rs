//! BM25 keyword search over tantivy, with [`crate::MixedTokenizer`] for Chinese and English text.
//!
//! Queries are never parsed as tantivy query syntax: the user's words are analysed like the documents and
//! OR-ed as term queries, so text such as `AND (` or `title:` cannot cause a syntax error.

use crate::tokenizer::{MixedTokenizer, LEGACY_MIXED_TOKENIZER, MIXED_TOKENIZER};
use crate::IndexError;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};
use tantivy::collector::TopDocs;
use tantivy::index::SegmentId;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, FAST, INDEXED, STORED, STRING,
};
use tantivy::tokenizer::{AsciiFoldingFilter, Language, LowerCaser, Stemmer, StopWordFilter, TextAnalyzer};
use tantivy::{DocSet, Index, IndexReader, IndexWriter, Opstamp, ReloadPolicy, TantivyDocument, Term, TERMINATED};

/// Memory budget of the tantivy writer, in bytes.
const WRITER_MEMORY: usize = 64 << 20;

/// A BM25 index of chunks: (chunk id, document id, text). On disk it records, as its commit payload, which
/// version of the LanceDB `chunks` table it mirrors (see `crate::library`).
pub struct KeywordIndex {
    index: Index,
    reader: IndexReader,
    writer: Option<IndexWriter>,
    id: Field,
    document: Field,
    text: Field,
    /// Chunk → document map of the last committed state searched by [`KeywordIndex::document_scores`].
    layout: Mutex<Option<Arc<DocumentLayout>>>,
}

impl KeywordIndex {
    /// An index held in memory (evaluation, tests).
    pub fn in_memory() -> Result<Self, IndexError> {
        Self::with_index(Index::create_in_ram(schema()))
    }

    /// Opens the index in `dir`, creating it (and the folder) when missing.
    ///
    /// Errors: the folder cannot be created, or holds an index with another schema — also one built
    /// with an older analyzer ([`LEGACY_MIXED_TOKENIZER`]), which a writer must rebuild: new chunks
    /// analysed another way would not match queries the same way as the old ones.
    pub fn open_or_create(dir: &Path) -> Result<Self, IndexError> {
        std::fs::create_dir_all(dir).map_err(|e| IndexError::Keyword(tantivy::TantivyError::IoError(e.into())))?;
        let directory = tantivy::directory::MmapDirectory::open(dir).map_err(|e| IndexError::Keyword(e.into()))?;
        match Index::open_or_create(directory.clone(), schema()) {
            Ok(index) => Self::with_index(index),
            // Only a mismatch looks at the old schema, so a current index is opened once.
            Err(tantivy::TantivyError::SchemaError(_))
                if Index::open(directory)?.schema() == schema_with(LEGACY_MIXED_TOKENIZER) =>
            {
                Err(IndexError::KeywordAnalyzerChanged(dir.to_path_buf()))
            }
            Err(error) => Err(error.into()),
        }
    }

    /// Opens an existing index in `dir` for searching only: no writer lock is taken, so it works while
    /// another process writes. Call [`KeywordIndex::reload`] to see newer commits. An index built with
    /// an older analyzer opens too, and queries are analysed the way its chunks were (until a writer
    /// rebuilds it, see [`KeywordIndex::open_or_create`]).
    ///
    /// Errors: no index in `dir`, or one with another schema.
    pub fn open_read_only(dir: &Path) -> Result<Self, IndexError> {
        let index = Index::open_in_dir(dir)?;
        if index.schema() != schema() && index.schema() != schema_with(LEGACY_MIXED_TOKENIZER) {
            return Err(IndexError::Keyword(tantivy::TantivyError::SchemaError(format!(
                "{} has another schema",
                dir.display()
            ))));
        }
        Self::with_index(index)
    }

    /// An index in `dir` as Quarry built it before ASCII folding ([`LEGACY_MIXED_TOKENIZER`]), for tests
    /// of the upgrade path.
    #[doc(hidden)]
    pub fn create_legacy(dir: &Path) -> Result<Self, IndexError> {
        std::fs::create_dir_all(dir).map_err(|e| IndexError::Keyword(tantivy::TantivyError::IoError(e.into())))?;
        Self::with_index(Index::create_in_dir(dir, schema_with(LEGACY_MIXED_TOKENIZER))?)
    }

    fn with_index(index: Index) -> Result<Self, IndexError> {
        index.tokenizers().register(MIXED_TOKENIZER, analyzer(true));
        index.tokenizers().register(LEGACY_MIXED_TOKENIZER, analyzer(false));
        let schema = index.schema();
        let id = schema.get_field("chunk_id")?;
        let document = schema.get_field("document_id")?;
        let text = schema.get_field("text")?;
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
        Ok(KeywordIndex { index, reader, writer: None, id, document, text, layout: Mutex::new(None) })
    }

    fn writer(&mut self) -> Result<&mut IndexWriter, IndexError> {
        if self.writer.is_none() {
            self.writer = Some(self.index.writer(WRITER_MEMORY)?);
        }
        self.writer
            .as_mut()
            .ok_or_else(|| IndexError::Keyword(tantivy::TantivyError::InternalError("no writer".into())))
    }

    /// Adds one chunk of `document_id`. Visible to searches after [`KeywordIndex::commit`].
    pub fn add(&mut self, chunk_id: u64, document_id: &str, text: &str) -> Result<(), IndexError> {
        let mut doc = TantivyDocument::default();
        doc.add_u64(self.id, chunk_id);
        doc.add_text(self.document, document_id);
        doc.add_text(self.text, text);
        self.writer()?.add_document(doc)?;
        Ok(())
    }

    /// Removes every chunk of `document_id` (at the next commit).
    pub fn delete_document(&mut self, document_id: &str) -> Result<(), IndexError> {
        let term = Term::from_field_text(self.document, document_id);
        self.writer()?.delete_term(term);
        Ok(())
    }

    /// Removes everything (at the next commit), before a rebuild.
    pub fn clear(&mut self) -> Result<(), IndexError> {
        self.writer()?.delete_all_documents()?;
        Ok(())
    }

    /// Makes added and deleted chunks durable and searchable.
    pub fn commit(&mut self) -> Result<(), IndexError> {
        if let Some(writer) = self.writer.as_mut() {
            writer.commit()?;
        }
        self.reader.reload()?;
        Ok(())
    }

    /// Commits like [`KeywordIndex::commit`], storing `payload` with the commit (atomically: a crash leaves
    /// the previous commit and its payload).
    pub fn commit_with_payload(&mut self, payload: &str) -> Result<(), IndexError> {
        let writer = self.writer()?;
        let mut prepared = writer.prepare_commit()?;
        prepared.set_payload(payload);
        prepared.commit()?;
        self.reader.reload()?;
        Ok(())
    }

    /// The payload of the last commit, if it stored one.
    pub fn payload(&self) -> Result<Option<String>, IndexError> {
        Ok(self.index.load_metas()?.payload)
    }

    /// Sees commits made since opening (by this or another process).
    pub fn reload(&self) -> Result<(), IndexError> {
        self.reader.reload()?;
        Ok(())
    }

    /// Number of committed chunks of `document_id`.
    pub fn count_document(&self, document_id: &str) -> Result<usize, IndexError> {
        let query = TermQuery::new(Term::from_field_text(self.document, document_id), IndexRecordOption::Basic);
        Ok(self.reader.searcher().search(&query, &tantivy::collector::Count)?)
    }

    /// The query's distinct terms, analysed as the text field is.
    fn query_terms(&self, query: &str) -> Result<Vec<Term>, IndexError> {
        let mut analyzer = self.index.tokenizer_for_field(self.text)?;
        let mut terms: Vec<Term> = Vec::new();
        let mut stream = analyzer.token_stream(query);
        while let Some(token) = stream.next() {
            let term = Term::from_field_text(self.text, &token.text);
            if !terms.contains(&term) {
                terms.push(term);
            }
        }
        Ok(terms)
    }

    /// BM25 of whole documents for `query`: each document scored as if its chunks were one text (term
    /// frequency = the sum over its chunks, length = the sum of their lengths in tokens, document
    /// frequency and average length counted over documents), with tantivy's constants k1 = 1.2, b = 0.75
    /// and idf = ln(1 + (N − df + 0.5) / (df + 0.5)). Covers every document with a committed chunk (0 when
    /// no query term occurs in it); empty when the query has no terms.
    ///
    /// Used as a document prior for chunk search (`Library::set_document_prior`): chunks of a long
    /// document rarely repeat what the document is about (a 10-Q filing's paragraphs say "the Company",
    /// not "Apple"), which the document as a whole does. Cost: one walk of each query term's postings;
    /// which document owns each chunk, and each document's length, are read once per committed state of
    /// the index and cached (docs/evaluation/retrieval.md, "A document prior").
    pub fn document_scores(&self, query: &str) -> Result<DocumentScores, IndexError> {
        const K1: f32 = 1.2;
        const B: f32 = 0.75;
        let terms = self.query_terms(query)?;
        let searcher = self.reader.searcher();
        let layout = self.document_layout(&searcher)?;
        let alive = layout.alive.len();
        if terms.is_empty() || alive == 0 {
            return Ok(DocumentScores { layout, scores: Vec::new(), lowest: 0.0, highest: 0.0 });
        }
        let n = alive as f32;
        let slots = layout.names.len();
        let mut scores = vec![0.0f32; slots];
        // Per term: its frequency in each document (summed over the document's chunks).
        let mut frequency = vec![0.0f32; slots];
        for term in &terms {
            let per_document = self.term_frequencies(&searcher, &layout, term, &mut frequency)?;
            let df = per_document.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(slot, tf) in per_document.iter() {
                let norm = K1 * (1.0 - B + B * layout.lengths[slot as usize] / layout.average_length);
                scores[slot as usize] += idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        let (lowest, highest) = layout.alive.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &slot| {
            let score = scores[slot as usize];
            (lo.min(score), hi.max(score))
        });
        Ok(DocumentScores { layout, scores, lowest, highest })
    }

    /// `term`'s frequency in each document of `layout` that holds it, as (slot, frequency summed over the
    /// document's chunks), in the order the documents are first met: one walk of the term's postings in
    /// every segment, `scratch` (one 0.0 per slot, left all 0.0) adding them up. A term with at least
    /// [`CACHED_TERM_POSTINGS`] postings is kept with the layout (so until the index changes), within
    /// [`CACHED_TERM_ENTRIES`]: at 1M chunks a common word's postings are long, and the document prior
    /// walked them for every query again.
    fn term_frequencies(
        &self,
        searcher: &tantivy::Searcher,
        layout: &DocumentLayout,
        term: &Term,
        scratch: &mut [f32],
    ) -> Result<TermFrequencies, IndexError> {
        if let Some(cached) = layout.terms.lock().ok().and_then(|terms| terms.1.get(term).cloned()) {
            return Ok(cached);
        }
        let mut touched: Vec<u32> = Vec::new();
        let mut postings_walked = 0usize;
        for segment in searcher.segment_readers() {
            let Some(runs) = layout.runs.get(&segment.segment_id()) else { continue };
            let text = segment.inverted_index(self.text)?;
            // Block by block: 128 chunk ids and their term frequencies decoded at once.
            let Some(mut postings) = text.read_block_postings(term, IndexRecordOption::WithFreqs).map_err(io_error)?
            else {
                continue;
            };
            postings_walked += postings.doc_freq() as usize;
            // The run holding each posting's chunk: found by binary search for a block's first chunk, then
            // walked forward (postings ascend) — no random read per posting, as a chunk → slot array (4 MB
            // for a 1M-chunk segment) cost.
            let mut run = 0;
            loop {
                let docs = postings.docs();
                let Some(&first) = docs.first() else { break };
                run += runs[run..].partition_point(|&(end, _)| end <= first);
                for (&doc, &freq) in docs.iter().zip(postings.freqs()) {
                    while runs[run].0 <= doc {
                        run += 1;
                    }
                    let slot = runs[run].1;
                    if slot != NO_DOCUMENT {
                        if scratch[slot as usize] == 0.0 {
                            touched.push(slot);
                        }
                        scratch[slot as usize] += freq as f32;
                    }
                }
                postings.advance();
            }
        }
        let per_document: Vec<(u32, f32)> =
            touched.iter().map(|&slot| (slot, std::mem::take(&mut scratch[slot as usize]))).collect();
        let per_document = Arc::new(per_document);
        if postings_walked >= CACHED_TERM_POSTINGS {
            if let Ok(mut terms) = layout.terms.lock() {
                let (kept, map) = &mut *terms;
                if *kept + per_document.len() <= CACHED_TERM_ENTRIES && !map.contains_key(term) {
                    *kept += per_document.len();
                    map.insert(term.clone(), Arc::clone(&per_document));
                }
            }
        }
        Ok(per_document)
    }

    /// Which document owns each committed chunk, and each document's length, for `searcher`'s segments:
    /// the cached layout when the segments and their deletes are the same, else read again (one walk of
    /// the document-id postings and of the text field's lengths).
    fn document_layout(&self, searcher: &tantivy::Searcher) -> Result<Arc<DocumentLayout>, IndexError> {
        let state = searcher.generation().segments().clone();
        if let Ok(cache) = self.layout.lock() {
            if let Some(layout) = cache.as_ref().filter(|layout| layout.state == state) {
                return Ok(Arc::clone(layout));
            }
        }
        let mut slots: HashMap<String, u32> = HashMap::new();
        let mut names: Vec<String> = Vec::new();
        let mut chunks: Vec<u32> = Vec::new();
        let mut lengths: Vec<f32> = Vec::new();
        let mut runs = HashMap::new();
        for segment in searcher.segment_readers() {
            let mut owner = vec![NO_DOCUMENT; segment.max_doc() as usize];
            let ids = segment.inverted_index(self.document)?;
            let mut stream = ids.terms().stream().map_err(io_error)?;
            while stream.advance() {
                let name = String::from_utf8_lossy(stream.key());
                let slot = match slots.get(name.as_ref()) {
                    Some(&slot) => slot,
                    None => {
                        let slot = names.len() as u32;
                        slots.insert(name.to_string(), slot);
                        names.push(name.into_owned());
                        chunks.push(0);
                        lengths.push(0.0);
                        slot
                    }
                };
                let mut postings =
                    ids.read_postings_from_terminfo(stream.value(), IndexRecordOption::Basic).map_err(io_error)?;
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    if !segment.is_deleted(doc) {
                        owner[doc as usize] = slot;
                        chunks[slot as usize] += 1;
                    }
                    doc = postings.advance();
                }
            }
            let norms = segment.get_fieldnorms_reader(self.text)?;
            for (doc, &slot) in owner.iter().enumerate() {
                if slot != NO_DOCUMENT {
                    lengths[slot as usize] += norms.fieldnorm(doc as u32) as f32;
                }
            }
            runs.insert(segment.segment_id(), owner_runs(&owner));
        }
        let alive: Vec<u32> = (0..names.len() as u32).filter(|&slot| chunks[slot as usize] > 0).collect();
        let average_length = if alive.is_empty() {
            1.0
        } else {
            (alive.iter().map(|&slot| lengths[slot as usize]).sum::<f32>() / alive.len() as f32).max(1.0)
        };
        let terms = Mutex::new((0, HashMap::new()));
        let layout = Arc::new(DocumentLayout { state, slots, names, lengths, alive, average_length, runs, terms });
        if let Ok(mut cache) = self.layout.lock() {
            *cache = Some(Arc::clone(&layout));
        }
        Ok(layout)
    }

    /// The `k` best chunks for `query` by BM25 (its analysed terms OR-ed), best first, as (score, address)
    /// with the searcher they belong to; no hits when the query has no terms or `k` is 0.
    fn top_chunks(&self, query: &str, k: usize) -> Result<(tantivy::Searcher, Vec<ScoredChunk>), IndexError> {
        let searcher = self.reader.searcher();
        let terms = self.query_terms(query)?;
        if terms.is_empty() || k == 0 {
            return Ok((searcher, Vec::new()));
        }
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .into_iter()
            .map(|t| (Occur::Should, Box::new(TermQuery::new(t, IndexRecordOption::WithFreqs)) as Box<dyn Query>))
            .collect();
        let hits = searcher.search(&BooleanQuery::new(clauses), &TopDocs::with_limit(k).order_by_score())?;
        Ok((searcher, hits))
    }

    /// The `k` best chunks for `query` by BM25, best first, each with the id of the document it belongs
    /// to — so a caller can filter and re-rank hits by document without reading the chunks' rows from
    /// LanceDB. The chunk → document map is the one [`KeywordIndex::document_scores`] caches (read once per
    /// committed state of the index: one walk of the document-id postings). A chunk whose document is not
    /// known to the map (none in a consistent index) is left out.
    pub fn search_with_documents(&self, query: &str, k: usize) -> Result<Vec<KeywordHit>, IndexError> {
        let (searcher, hits) = self.top_chunks(query, k)?;
        if hits.is_empty() {
            return Ok(Vec::new());
        }
        let layout = self.document_layout(&searcher)?;
        let mut results = Vec::with_capacity(hits.len());
        for (score, address) in hits {
            let segment = searcher.segment_reader(address.segment_ord);
            let slot = layout.runs.get(&segment.segment_id()).map_or(NO_DOCUMENT, |runs| slot_of(runs, address.doc_id));
            if slot == NO_DOCUMENT {
                continue;
            }
            let ids = segment.fast_fields().u64("chunk_id")?;
            let Some(chunk_id) = ids.first(address.doc_id) else { continue };
            results.push(KeywordHit { chunk_id, score, document_id: layout.names[slot as usize].clone() });
        }
        Ok(results)
    }

    /// The `k` best chunks for `query` by BM25, best first, as (chunk id, score).
    pub fn search(&self, query: &str, k: usize) -> Result<Vec<(u64, f32)>, IndexError> {
        let (searcher, hits) = self.top_chunks(query, k)?;
        let mut results = Vec::with_capacity(hits.len());
        for (score, address) in hits {
            let doc: TantivyDocument = searcher.doc(address)?;
            if let Some(id) = doc.get_first(self.id).and_then(|v| v.as_u64()) {
                results.push((id, score));
            }
        }
        Ok(results)
    }

    /// Number of committed chunks.
    pub fn len(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Whether no chunk is committed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Marks a chunk with no (alive) document in [`DocumentLayout::runs`].
const NO_DOCUMENT: u32 = u32::MAX;

/// Chunks grouped by document, for one committed state of the index (see `KeywordIndex::document_layout`).
struct DocumentLayout {
    /// The segments and the opstamp of their deletes this layout was read from.
    state: BTreeMap<SegmentId, Option<Opstamp>>,
    /// Document id → slot.
    slots: HashMap<String, u32>,
    /// Slot → document id.
    names: Vec<String>,
    /// Slot → the document's length in tokens (sum over its chunks).
    lengths: Vec<f32>,
    /// Slots of documents with at least one alive chunk.
    alive: Vec<u32>,
    /// Mean length over alive documents, in tokens (at least 1).
    average_length: f32,
    /// Per segment: which slot owns each chunk (tantivy doc id), [`NO_DOCUMENT`] for deleted chunks, as
    /// runs of consecutive chunks of one slot ([`owner_runs`]; one chunk's: [`slot_of`]).
    runs: HashMap<SegmentId, Vec<(u32, u32)>>,
    /// Terms with long postings, each with its frequency per document ([`KeywordIndex::term_frequencies`]),
    /// and how many (document, frequency) entries they hold together.
    terms: Mutex<(usize, HashMap<Term, TermFrequencies>)>,
}

/// A term's frequency in each document holding it: (slot, frequency summed over the document's chunks).
type TermFrequencies = Arc<Vec<(u32, f32)>>;

/// Fewest postings (chunks holding it, over all segments) of a term whose per-document frequencies are
/// kept ([`KeywordIndex::term_frequencies`]); a rarer term is walked again, which costs microseconds.
const CACHED_TERM_POSTINGS: usize = 4_096;

/// Most (document, frequency) entries kept for one state of the index, over all terms: 8 bytes each,
/// 32 MB in all (at 10,000 documents, at least 400 terms' worth).
const CACHED_TERM_ENTRIES: usize = 4_000_000;

/// `owner` (chunk → slot) as runs of consecutive chunks with one slot, each (end, slot) with `end` the
/// first chunk after the run, ascending; the last ends at `owner.len()`. An ingest adds a document's
/// chunks together, so a segment has about one run per document (10,000 for 1M chunks of 100 each)
/// and the runs fit in a core's cache where the map does not.
fn owner_runs(owner: &[u32]) -> Vec<(u32, u32)> {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for (doc, &slot) in owner.iter().enumerate() {
        match runs.last_mut() {
            Some(last) if last.1 == slot => last.0 = doc as u32 + 1,
            _ => runs.push((doc as u32 + 1, slot)),
        }
    }
    runs
}

/// The slot owning chunk `doc` in `runs` ([`owner_runs`]); [`NO_DOCUMENT`] past the last run.
fn slot_of(runs: &[(u32, u32)], doc: u32) -> u32 {
    runs.get(runs.partition_point(|&(end, _)| end <= doc)).map_or(NO_DOCUMENT, |&(_, slot)| slot)
}

/// A BM25 score with the chunk's address in a searcher's segments.
type ScoredChunk = (f32, tantivy::DocAddress);

/// One hit of [`KeywordIndex::search_with_documents`].
#[derive(Debug, Clone, PartialEq)]
pub struct KeywordHit {
    /// The chunk's id (as in LanceDB's `chunks.chunk_id`).
    pub chunk_id: u64,
    /// Its BM25 score (tantivy's, k1 = 1.2, b = 0.75).
    pub score: f32,
    /// The id of the document the chunk belongs to.
    pub document_id: String,
}

/// Whole-document BM25 scores for one query ([`KeywordIndex::document_scores`]).
pub struct DocumentScores {
    layout: Arc<DocumentLayout>,
    /// Slot → score (empty when the query had no terms).
    scores: Vec<f32>,
    lowest: f32,
    highest: f32,
}

impl DocumentScores {
    /// The score of `document_id`: 0 when no query term occurs in it, `None` when it has no committed
    /// chunk or the query had no terms.
    pub fn get(&self, document_id: &str) -> Option<f32> {
        let slot = *self.layout.slots.get(document_id)?;
        // `alive` is in ascending slot order.
        self.layout.alive.binary_search(&slot).ok()?;
        self.scores.get(slot as usize).copied()
    }

    /// Number of documents scored (those with a committed chunk); 0 when the query had no terms.
    pub fn len(&self) -> usize {
        if self.scores.is_empty() {
            0
        } else {
            self.layout.alive.len()
        }
    }

    /// Whether no document was scored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// (lowest, highest) score over the scored documents; (0, 0) when none.
    pub fn range(&self) -> (f32, f32) {
        (self.lowest, self.highest)
    }
}

fn io_error(error: std::io::Error) -> IndexError {
    IndexError::Keyword(error.into())
}

fn schema() -> Schema {
    schema_with(MIXED_TOKENIZER)
}

/// The schema with `analyzer` (a registered name) for the text field.
fn schema_with(analyzer: &str) -> Schema {
    let mut builder = Schema::builder();
    builder.add_u64_field("chunk_id", INDEXED | STORED | FAST);
    builder.add_text_field("document_id", STRING);
    let indexing =
        TextFieldIndexing::default().set_tokenizer(analyzer).set_index_option(IndexRecordOption::WithFreqsAndPositions);
    builder.add_text_field("text", TextOptions::default().set_indexing_options(indexing));
    builder.build()
}

/// Mixed tokenizer → lowercase → ASCII folding (with `fold`) → English stop words → English (Snowball)
/// stemming. CJK tokens pass the last three steps unchanged.
///
/// Folding (Lucene's ASCIIFoldingFilter mapping: `ö` → `o`, `ß` → `ss`, `æ` → `ae`, full-width `２` →
/// `2`) lets a query typed without accents find the accented name: on MuSiQue, "the composer of
/// Aschenbrodel" missed the passage "Aschenbrödel (Cinderella) is a ballet …" (docs/evaluation/retrieval.md, "Hybrid fusion").
fn analyzer(fold: bool) -> TextAnalyzer {
    let stop_words = StopWordFilter::new(Language::English).unwrap_or_else(|| StopWordFilter::remove(Vec::new()));
    let builder = TextAnalyzer::builder(MixedTokenizer::default()).filter(LowerCaser);
    if fold {
        builder.filter(AsciiFoldingFilter).filter(stop_words).filter(Stemmer::new(Language::English)).build()
    } else {
        builder.filter(stop_words).filter(Stemmer::new(Language::English)).build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bm25_finds_chinese_and_english_with_stemming() {
        let mut index = KeywordIndex::in_memory().unwrap();
        index.add(1, "d1", "中国联通2022年资本开支为742亿元").unwrap();
        index.add(2, "d2", "Apple reported increasing revenues from iPhone sales").unwrap();
        index.add(3, "d3", "The weather was calm and the flight landed safely").unwrap();
        index.commit().unwrap();
        assert_eq!(index.len(), 3);
        assert_eq!(index.search("联通的资本开支", 2).unwrap()[0].0, 1);
        assert_eq!(index.search("revenue increased", 2).unwrap()[0].0, 2, "stemming joins revenue(s)/increas(ed|ing)");
        assert!(index.search("the and", 5).unwrap().is_empty(), "stop words alone match nothing");
        assert!(index.search("title:(AND", 5).is_ok(), "no query syntax errors");
        index.delete_document("d2").unwrap();
        index.commit_with_payload("{\"chunks_version\":7}").unwrap();
        assert_eq!(index.len(), 2);
        assert_eq!(index.count_document("d2").unwrap(), 0);
        assert_eq!(index.count_document("d1").unwrap(), 1);
        assert_eq!(index.payload().unwrap().as_deref(), Some("{\"chunks_version\":7}"));
    }

    #[test]
    fn a_common_terms_frequencies_per_document_are_kept_until_the_index_changes() {
        let mut index = KeywordIndex::in_memory().unwrap();
        // 42 documents of 100 chunks: "revenue" in every chunk (long postings), "growth" in every other.
        let chunks = CACHED_TERM_POSTINGS as u64 + 104;
        for chunk in 0..chunks {
            let text = if chunk % 2 == 0 { "revenue growth" } else { "revenue" };
            index.add(chunk, &format!("doc-{}", chunk / 100), text).unwrap();
        }
        index.commit().unwrap();
        let first = index.document_scores("revenue growth").unwrap();
        let layout = index.layout.lock().unwrap().clone().unwrap();
        let [revenue, growth] = [index.query_terms("revenue").unwrap(), index.query_terms("growth").unwrap()]
            .map(|mut terms| terms.pop().unwrap());
        {
            let kept = layout.terms.lock().unwrap();
            assert!(kept.1.contains_key(&revenue), "a term in {chunks} chunks is kept");
            assert!(!kept.1.contains_key(&growth), "a term in half of them is walked again");
            assert_eq!(kept.0, 42, "one entry per document holding it");
            assert_eq!(kept.1[&revenue].iter().map(|e| e.1).sum::<f32>(), chunks as f32);
        }
        let again = index.document_scores("revenue growth").unwrap();
        assert_eq!(again.get("doc-0"), first.get("doc-0"));
        assert_eq!(again.range(), first.range());
        // A commit makes a new layout: what was kept is not used for the new state.
        index.add(chunks, "doc-0", "revenue revenue revenue revenue").unwrap();
        index.commit().unwrap();
        let after = index.document_scores("revenue growth").unwrap();
        assert_ne!(after.get("doc-0"), first.get("doc-0"));
        let layout = index.layout.lock().unwrap().clone().unwrap();
        let kept = layout.terms.lock().unwrap();
        assert_eq!(kept.1[&revenue].iter().map(|e| e.1).sum::<f32>(), chunks as f32 + 4.0, "read again");
    }

    #[test]
    fn owner_runs_group_consecutive_chunks_of_one_document() {
        assert_eq!(owner_runs(&[]), vec![]);
        let runs = owner_runs(&[3, 3, NO_DOCUMENT, 3, 5, 5]);
        assert_eq!(runs, vec![(2, 3), (3, NO_DOCUMENT), (4, 3), (6, 5)]);
        let slots: Vec<u32> = (0..7).map(|doc| slot_of(&runs, doc)).collect();
        assert_eq!(slots, vec![3, 3, NO_DOCUMENT, 3, 5, 5, NO_DOCUMENT]);
    }

    #[test]
    fn document_scores_count_a_term_anywhere_in_the_document() {
        let mut index = KeywordIndex::in_memory().unwrap();
        // Apple's filing names Apple once, on its cover; its R&D paragraph says "the Company".
        index.add(1, "aapl", "Apple Inc. quarterly report on Form 10-Q").unwrap();
        index
            .add(2, "aapl", "Research and development expense of the Company increased during the quarter, driven by headcount and infrastructure costs")
            .unwrap();
        // Intel's R&D paragraph is short and repeats the question's words, but not "Apple".
        index.add(3, "intc", "Research and development expense; research and development expense").unwrap();
        index.add(4, "gone", "Apple research and development").unwrap();
        index.commit().unwrap();
        index.delete_document("gone").unwrap();
        index.commit().unwrap();
        let question = "Apple research and development expense";
        assert_eq!(index.search(question, 1).unwrap()[0].0, 3, "chunk BM25 puts Intel's paragraph first");
        let scores = index.document_scores(question).unwrap();
        assert_eq!(scores.len(), 2, "deleted documents are not scored");
        assert_eq!(scores.get("gone"), None);
        assert!(scores.get("aapl").unwrap() > scores.get("intc").unwrap());
        assert_eq!(scores.range(), (scores.get("intc").unwrap(), scores.get("aapl").unwrap()));
        // Two documents, "apple" in one: idf = ln(1 + 1.5 / 1.5) = ln 2 for it.
        let only_apple = index.document_scores("Apple").unwrap();
        assert_eq!(only_apple.get("intc"), Some(0.0));
        let apple = only_apple.get("aapl").unwrap();
        assert!(apple > 0.0 && apple < 2.2 * 2f32.ln());
        assert!(index.document_scores("the and of").unwrap().is_empty(), "stop words only: no terms");
        assert_eq!(index.document_scores("the and of").unwrap().get("aapl"), None);
        // The chunk → document map is cached per committed state: a reload without commits reuses it, a
        // commit (added or deleted chunks) reads it again.
        index.reload().unwrap();
        assert_eq!(index.document_scores(question).unwrap().get("aapl"), scores.get("aapl"));
        index.add(5, "msft", "Microsoft research and development expense").unwrap();
        index.commit().unwrap();
        let after_add = index.document_scores(question).unwrap();
        assert_eq!(after_add.len(), 3);
        assert!(after_add.get("msft").unwrap() > 0.0);
        index.delete_document("intc").unwrap();
        index.commit().unwrap();
        let after_delete = index.document_scores(question).unwrap();
        assert_eq!((after_delete.len(), after_delete.get("intc")), (2, None));
    }

    #[test]
    fn search_with_documents_names_each_hits_document_across_segments_and_deletes() {
        let mut index = KeywordIndex::in_memory().unwrap();
        index.add(11, "aapl", "Apple revenue grew in the quarter").unwrap();
        index.add(12, "gone", "revenue of a removed filing").unwrap();
        index.commit().unwrap();
        // A second segment, and a delete in the first.
        index.add(21, "nvda", "NVIDIA revenue for the first quarter was $7.19 billion").unwrap();
        index.commit().unwrap();
        index.delete_document("gone").unwrap();
        index.commit().unwrap();
        let hits = index.search_with_documents("revenue quarter", 10).unwrap();
        let mut found: Vec<(u64, &str)> = hits.iter().map(|h| (h.chunk_id, h.document_id.as_str())).collect();
        found.sort();
        assert_eq!(found, vec![(11, "aapl"), (21, "nvda")], "the deleted document's chunk is gone");
        // The same chunks, scores and order as the plain search.
        let plain = index.search("revenue quarter", 10).unwrap();
        assert_eq!(hits.iter().map(|h| (h.chunk_id, h.score)).collect::<Vec<_>>(), plain);
        assert!(index.search_with_documents("the and of", 10).unwrap().is_empty(), "stop words only");
        assert!(index.search_with_documents("revenue", 0).unwrap().is_empty());
    }

    #[test]
    fn accents_and_full_width_forms_are_folded_on_both_sides() {
        let mut index = KeywordIndex::in_memory().unwrap();
        index.add(1, "d1", "Aschenbrödel (\"Cinderella\") is a ballet by Johann Strauss II").unwrap();
        index.add(2, "d2", "Die Straße führt nach Zürich").unwrap();
        index.add(3, "d3", "营收同比增长２０２２年").unwrap();
        index.add(4, "d4", "An unrelated passage about ballet shoes").unwrap();
        index.commit().unwrap();
        assert_eq!(index.search("composer of Aschenbrodel", 2).unwrap()[0].0, 1);
        assert_eq!(index.search("Aschenbrödel", 2).unwrap()[0].0, 1, "the accented query still finds it");
        assert_eq!(index.search("strasse zurich", 2).unwrap()[0].0, 2, "ß → ss, ü → u");
        assert_eq!(index.search("2022年营收", 2).unwrap()[0].0, 3, "full-width digits fold to ASCII");
    }

    #[test]
    fn an_index_built_before_folding_searches_with_its_own_analyzer_and_a_writer_is_told_to_rebuild() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tantivy");
        let mut legacy = KeywordIndex::create_legacy(&path).unwrap();
        legacy.add(1, "d1", "Aschenbrödel is a ballet").unwrap();
        legacy.add(2, "d2", "Zurich is a city").unwrap();
        legacy.commit().unwrap();
        drop(legacy);
        let reader = KeywordIndex::open_read_only(&path).unwrap();
        assert_eq!(reader.len(), 2);
        assert_eq!(reader.search("Aschenbrödel", 1).unwrap()[0].0, 1, "queries are analysed as the chunks were");
        assert!(reader.search("Aschenbrodel", 1).unwrap().is_empty(), "no folding in the old index");
        match KeywordIndex::open_or_create(&path) {
            Err(IndexError::KeywordAnalyzerChanged(p)) => assert_eq!(p, path),
            other => panic!("expected KeywordAnalyzerChanged, got {:?}", other.map(|i| i.len())),
        }
    }
}
