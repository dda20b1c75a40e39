//! The LanceDB side of a library: tables `documents` and `chunks`, the source of truth (see
//! docs/ARCHITECTURE.md, "Storage and crash safety").
//!
//! - `documents`: one row per document, keyed by `document_id` (BLAKE3 of the document's bytes), with its
//!   state (`pending` → `keyword_only` → `indexed` | `failed`), where it came from and what parsing said.
//! - `chunks`: one row per chunk: `chunk_id` (see [`chunk_id`]), `document_id`, text, location (page span,
//!   sheet, heading path, character offsets), the embedding (`vector`, `FixedSizeList<Float32, dim>`) and
//!   whether it is computed yet (`embedded`: false while the chunk waits for its embedding and holds a
//!   zero vector; null in rows written before the column existed, which all have their embedding).
//!
//! Every write here is one LanceDB commit (one new table version); the order of those commits is what
//! makes a library survive `kill -9` (see `crate::library`).

use crate::StoreError;
use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, Int64Array, ListArray, RecordBatch, StringArray, UInt32Array, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use futures::TryStreamExt;
use lancedb::query::{ExecutableQuery, QueryBase, Select};
use lancedb::{Connection, DistanceType, Table};
use serde::Serialize;
use std::path::Path;
use std::sync::Arc;

pub(crate) const DOCUMENTS: &str = "documents";
pub(crate) const CHUNKS: &str = "chunks";

/// Where a document is in its life: written as `pending` before its chunks, `keyword_only` once its chunks
/// are committed to LanceDB and tantivy without their embeddings (BM25 finds them), `indexed` once every
/// chunk has its embedding too, `failed` when it could not be read (with the reason in `error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum DocumentState {
    /// Its row is written; its chunks are not both indexed yet (an interrupted run leaves this).
    Pending,
    /// Searchable by keyword (BM25); its chunks wait for their embeddings, so dense search skips them.
    KeywordOnly,
    /// Searchable both ways.
    Indexed,
    /// Could not be read; the reason is in `error`.
    Failed,
}

impl DocumentState {
    /// `pending`, `keyword_only`, `indexed` or `failed`.
    pub fn name(self) -> &'static str {
        match self {
            DocumentState::Pending => "pending",
            DocumentState::KeywordOnly => "keyword_only",
            DocumentState::Indexed => "indexed",
            DocumentState::Failed => "failed",
        }
    }

    /// Whether search returns its chunks: `keyword_only` (BM25 only) and `indexed` documents.
    pub fn searchable(self) -> bool {
        matches!(self, DocumentState::KeywordOnly | DocumentState::Indexed)
    }

    fn parse(s: &str) -> DocumentState {
        match s {
            "keyword_only" => DocumentState::KeywordOnly,
            "indexed" => DocumentState::Indexed,
            "failed" => DocumentState::Failed,
            _ => DocumentState::Pending,
        }
    }
}

/// One row of `documents`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DocumentRecord {
    /// BLAKE3 of the document's bytes (lowercase hex). For a document that failed inside an archive, whose
    /// bytes were never read, BLAKE3 of `origin_id` and `path`.
    pub document_id: String,
    /// BLAKE3 of the file on disk the document came from: equal to `document_id` for a plain file, the
    /// archive's hash for a ZIP member.
    pub origin_id: String,
    /// Virtual path: the absolute file path, with `!/member` parts for ZIP members.
    pub path: String,
    /// The file on disk (the archive, for members).
    pub file_path: String,
    /// Format name (`pdf`, `docx`, `zip`, …) or `unknown`.
    pub format: String,
    /// Size of its bytes.
    pub byte_len: u64,
    /// Pages (PDF) or sheets (spreadsheets).
    pub page_count: Option<u32>,
    /// Chunks it was cut into.
    pub chunk_count: u32,
    /// Characters of its text.
    pub char_count: u64,
    /// Where it is in its life.
    pub state: DocumentState,
    /// Why the document failed: the parse status and message (`failed: no text layer (needs OCR)`).
    pub error: Option<String>,
    /// Non-fatal parse warnings, one per line.
    pub warnings: Option<String>,
    /// When the row was written, Unix milliseconds.
    pub added_ms: i64,
    /// Modification time of `file_path` when it was read, Unix milliseconds (sync compares it).
    pub modified_ms: i64,
    /// What the document is about, in one line (`quarry_ingest::document_context`): prefixed to each of
    /// its chunks for embedding and BM25, and shown with its passages. `None` for documents indexed
    /// before the column existed (their chunks were embedded without it) and for failed documents.
    pub context: Option<String>,
    /// The version of its format's reading the document was read with
    /// ([`quarry_ingest::extraction_version`]); `None` for rows written before the column existed, which
    /// count as [`quarry_ingest::UNSTAMPED_EXTRACTION_VERSION`]. Sync reads a file again when this is older.
    pub extraction_version: Option<u32>,
}

impl DocumentRecord {
    /// True when the document was read by an older reading of its format than Quarry's today, so reading
    /// its file again would give other (better) text; for a failed document, also when an older Quarry
    /// knew fewer formats ([`quarry_ingest::failure_version`]), so a file it refused may be readable now.
    pub fn read_by_older_parser(&self) -> bool {
        let current = if self.state == DocumentState::Failed {
            quarry_ingest::failure_version(&self.format)
        } else {
            quarry_ingest::extraction_version(&self.format)
        };
        self.extraction_version.unwrap_or(quarry_ingest::UNSTAMPED_EXTRACTION_VERSION) < current
    }
}

/// One row of `chunks` without its vector, as search returns it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChunkRecord {
    /// The chunk's id, unique within the library.
    pub chunk_id: u64,
    /// Its document's content hash.
    pub document_id: String,
    /// 0-based position in the document.
    pub chunk_index: u32,
    /// Its text (without the context line).
    pub text: String,
    /// First page it touches (1-based), for paged formats.
    pub page_start: Option<u32>,
    /// Last page it touches (1-based, inclusive).
    pub page_end: Option<u32>,
    /// The spreadsheet sheet it comes from.
    pub sheet: Option<String>,
    /// Enclosing headings, outermost first.
    pub heading_path: Vec<String>,
    /// Offset of its first character in the document's full text (Unicode scalar values).
    pub char_start: u64,
    /// Offset after its last character.
    pub char_end: u64,
    /// Its length in the embedding model's tokens.
    pub token_count: u32,
    /// Some of its text was recognised by OCR (false for chunks written before the `ocr` column).
    pub ocr: bool,
}

impl From<quarry_core::Chunk> for ChunkRecord {
    /// The row of a chunk as the chunker cut it; its id is [`chunk_id`] of its document and index.
    fn from(chunk: quarry_core::Chunk) -> Self {
        ChunkRecord {
            chunk_id: chunk_id(&chunk.document_id, chunk.index),
            document_id: chunk.document_id,
            chunk_index: chunk.index,
            text: chunk.text,
            page_start: chunk.page_start,
            page_end: chunk.page_end,
            sheet: chunk.sheet,
            heading_path: chunk.heading_path,
            char_start: chunk.char_start,
            char_end: chunk.char_end,
            token_count: chunk.token_count,
            ocr: chunk.ocr,
        }
    }
}

impl ChunkRecord {
    /// This chunk as the agents' [`quarry_core::Passage`]: of `library`, in the document at virtual `path`
    /// whose context line is `context` (`None`: unknown), with the retriever's `score`.
    pub fn passage(&self, library: &str, path: &str, context: Option<&str>, score: f32) -> quarry_core::Passage {
        quarry_core::Passage {
            chunk_id: self.chunk_id,
            chunk_index: Some(self.chunk_index),
            library: library.to_string(),
            document_id: self.document_id.clone(),
            path: path.to_string(),
            page_start: self.page_start,
            page_end: self.page_end,
            sheet: self.sheet.clone(),
            heading_path: self.heading_path.clone(),
            text: self.text.clone(),
            context: context.unwrap_or_default().to_string(),
            score,
            ocr: self.ocr,
        }
    }
}

/// The stable id of chunk `index` of `document_id`: the first 8 bytes of BLAKE3(document id, index),
/// little-endian. Deterministic, so re-indexing a document gives the same ids and no counter is stored.
pub fn chunk_id(document_id: &str, index: u32) -> u64 {
    let mut hasher = blake3::Hasher::new();
    hasher.update(document_id.as_bytes());
    hasher.update(&index.to_le_bytes());
    let bytes = hasher.finalize();
    u64::from_le_bytes(bytes.as_bytes()[..8].try_into().unwrap_or([0; 8]))
}

/// A SQL string literal: single quotes doubled, so any path or id is safe inside a filter.
pub(crate) fn sql_string(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// `column IN ('a', 'b', …)` for string values.
pub(crate) fn sql_in_strings<'a>(column: &str, values: impl IntoIterator<Item = &'a str>) -> String {
    let list: Vec<String> = values.into_iter().map(sql_string).collect();
    format!("{column} IN ({})", list.join(", "))
}

fn documents_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("document_id", DataType::Utf8, false),
        Field::new("origin_id", DataType::Utf8, false),
        Field::new("path", DataType::Utf8, false),
        Field::new("file_path", DataType::Utf8, false),
        Field::new("format", DataType::Utf8, false),
        Field::new("byte_len", DataType::UInt64, false),
        Field::new("page_count", DataType::UInt32, true),
        Field::new("chunk_count", DataType::UInt32, false),
        Field::new("char_count", DataType::UInt64, false),
        Field::new("state", DataType::Utf8, false),
        Field::new("error", DataType::Utf8, true),
        Field::new("warnings", DataType::Utf8, true),
        Field::new("added_ms", DataType::Int64, false),
        Field::new("modified_ms", DataType::Int64, false),
        Field::new("context", DataType::Utf8, true),
        Field::new("extraction_version", DataType::UInt32, true),
    ]))
}

fn chunks_schema(dimension: usize) -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("chunk_id", DataType::UInt64, false),
        Field::new("document_id", DataType::Utf8, false),
        Field::new("chunk_index", DataType::UInt32, false),
        Field::new("text", DataType::Utf8, false),
        Field::new("page_start", DataType::UInt32, true),
        Field::new("page_end", DataType::UInt32, true),
        Field::new("sheet", DataType::Utf8, true),
        Field::new("heading_path", DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))), false),
        Field::new("char_start", DataType::UInt64, false),
        Field::new("char_end", DataType::UInt64, false),
        Field::new("token_count", DataType::UInt32, false),
        Field::new(
            "vector",
            DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), dimension as i32),
            false,
        ),
        Field::new(EMBEDDED, DataType::Boolean, true),
        Field::new(OCR, DataType::Boolean, true),
    ]))
}

/// The `chunks` column that says whether some of a chunk's text was recognised by OCR (null: written
/// before the column, read as false).
const OCR: &str = "ocr";

/// The `chunks` column that says whether a row's `vector` is its embedding (true or null) or a zero
/// placeholder waiting for it (false).
const EMBEDDED: &str = "embedded";

/// The SQL filter that keeps the chunks whose embedding is computed (null: written before the column).
pub(crate) const EMBEDDED_ONLY: &str = "(embedded IS NULL OR embedded = true)";

/// Chunk columns without the vector: what searches read back.
pub(crate) const CHUNK_COLUMNS: [&str; 11] = [
    "chunk_id",
    "document_id",
    "chunk_index",
    "text",
    "page_start",
    "page_end",
    "sheet",
    "heading_path",
    "char_start",
    "char_end",
    "token_count",
];

/// The two tables of one library.
#[derive(Clone)]
pub struct Store {
    pub(crate) documents: Table,
    pub(crate) chunks: Table,
    dimension: usize,
    /// Whether `chunks` has the `embedded` column (a library made before it, opened read-only, has not).
    embedded_column: bool,
    /// Whether `chunks` has the `ocr` column (the same for a library made before it).
    ocr_column: bool,
}

/// Bytes LanceDB may keep of opened vector and scalar indexes in memory (its default: 6 GiB). The ANN
/// index of 1M chunks and its id index fit (a search-only process at 1M peaks at 1.5 GiB, see
/// docs/evaluation/retrieval.md).
pub const LANCE_INDEX_CACHE_BYTES: usize = 1 << 30;

/// Bytes LanceDB may keep of table metadata — manifests, file footers, fragment and deletion data — in
/// memory (its default: 1 GiB). An ingest commits a new table version per batch of documents, and each
/// version's metadata stays cached until this budget is full.
pub const LANCE_METADATA_CACHE_BYTES: usize = 128 << 20;

/// The Lance file format new tables are written in. LanceDB 0.41 writes 2.2 by default, which stores a
/// column page holding one repeated value (an all-null `sheet`, `ocr` false on every row) as a constant
/// page, and lance-encoding 14.0.2 reads row `n` of such a page by stepping through every row before it:
/// reading the 10 rows a search returns took 11.5 ms at 1M chunks in 2.2 and 1.9 ms in 2.1
/// (docs/evaluation/retrieval.md, "Lance file format 2.1"). Tables made before keep their format.
pub const LANCE_FILE_FORMAT: &str = "2.1";

impl Store {
    /// Opens the tables under `dir` (the library's `lance/` folder), creating missing ones; `dimension` is
    /// the embedding length the `chunks` table is created with.
    ///
    /// Errors: LanceDB cannot open or create the tables; an existing `chunks` table has another dimension.
    pub async fn open(dir: &Path, dimension: usize, create: bool) -> Result<Store, StoreError> {
        let uri = dir.to_str().ok_or_else(|| StoreError::Store(format!("{} is not valid UTF-8", dir.display())))?;
        // Zero interval: every read checks for commits by other processes (a search during an ingest).
        let session = lancedb::Session::new(
            LANCE_INDEX_CACHE_BYTES,
            LANCE_METADATA_CACHE_BYTES,
            Arc::new(lancedb::ObjectStoreRegistry::default()),
        );
        let db: Connection = lancedb::connect(uri)
            .read_consistency_interval(std::time::Duration::ZERO)
            .session(Arc::new(session))
            .execute()
            .await?;
        let names = db.table_names().execute().await?;
        let open_or_create = |name: &'static str, schema: SchemaRef| {
            let db = db.clone();
            let exists = names.iter().any(|n| n == name);
            async move {
                if exists {
                    Ok(db.open_table(name).execute().await?)
                } else if create {
                    Ok(db
                        .create_empty_table(name, schema)
                        .storage_option("new_table_data_storage_version", LANCE_FILE_FORMAT)
                        .execute()
                        .await?)
                } else {
                    Err(StoreError::Store(format!("table {name} is missing in {}", dir.display())))
                }
            }
        };
        let documents = open_or_create(DOCUMENTS, documents_schema()).await?;
        if create {
            add_missing_columns(&documents, &documents_schema()).await?;
        }
        let chunks = open_or_create(CHUNKS, chunks_schema(dimension)).await?;
        if create {
            add_missing_columns(&chunks, &chunks_schema(dimension)).await?;
        }
        let stored = chunks.schema().await?;
        let embedded_column = stored.field_with_name(EMBEDDED).is_ok();
        let ocr_column = stored.field_with_name(OCR).is_ok();
        if let Ok(field) = stored.field_with_name("vector") {
            if let DataType::FixedSizeList(_, n) = field.data_type() {
                if *n as usize != dimension {
                    return Err(StoreError::Store(format!(
                        "the chunks table holds {n}-dimensional vectors, the embedding model gives {dimension}"
                    )));
                }
            }
        }
        Ok(Store { documents, chunks, dimension, embedded_column, ocr_column })
    }

    /// Length of the stored vectors.
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// The version of the `chunks` table (tantivy records the version it mirrors).
    pub async fn chunks_version(&self) -> Result<u64, StoreError> {
        Ok(self.chunks.version().await?)
    }

    /// Every document row, in no particular order.
    pub async fn documents(&self) -> Result<Vec<DocumentRecord>, StoreError> {
        self.documents_where(None).await
    }

    /// Document rows matching an SQL `filter` (all when `None`).
    pub async fn documents_where(&self, filter: Option<String>) -> Result<Vec<DocumentRecord>, StoreError> {
        let mut query = self.documents.query();
        if let Some(filter) = filter {
            query = query.only_if(filter);
        }
        let batches: Vec<RecordBatch> = query.execute().await?.try_collect().await?;
        let mut out = Vec::new();
        for batch in &batches {
            out.extend(documents_from_batch(batch)?);
        }
        Ok(out)
    }

    /// Appends document rows in one commit.
    pub async fn add_documents(&self, rows: &[DocumentRecord]) -> Result<(), StoreError> {
        if rows.is_empty() {
            return Ok(());
        }
        self.documents.add(documents_to_batch(rows)?).execute().await?;
        Ok(())
    }

    /// Sets `state` (and clears `error`) for the given documents, in one commit.
    pub async fn set_state(&self, ids: &[String], state: DocumentState) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        self.documents
            .update()
            .only_if(sql_in_strings("document_id", ids.iter().map(String::as_str)))
            .column("state", sql_string(state.name()))
            .execute()
            .await?;
        Ok(())
    }

    /// Moves documents of `origin_id` from `old_file` to `new_file` (a renamed or moved file): rewrites
    /// `file_path` and the start of `path`, in one commit.
    pub async fn rename_origin(
        &self,
        origin_id: &str,
        old_file: &str,
        new_file: &str,
        modified_ms: i64,
    ) -> Result<(), StoreError> {
        self.documents
            .update()
            .only_if(format!("origin_id = {} AND file_path = {}", sql_string(origin_id), sql_string(old_file)))
            .column("path", format!("replace(path, {}, {})", sql_string(old_file), sql_string(new_file)))
            .column("file_path", sql_string(new_file))
            .column("modified_ms", modified_ms.to_string())
            .execute()
            .await?;
        Ok(())
    }

    /// Moves one document to another origin and path (an unchanged member of a changed archive), in one
    /// commit.
    pub async fn move_document(
        &self,
        document_id: &str,
        origin_id: &str,
        path: &str,
        file_path: &str,
    ) -> Result<(), StoreError> {
        self.documents
            .update()
            .only_if(format!("document_id = {}", sql_string(document_id)))
            .column("origin_id", sql_string(origin_id))
            .column("path", sql_string(path))
            .column("file_path", sql_string(file_path))
            .execute()
            .await?;
        Ok(())
    }

    /// Whether `chunks.vector` has an ANN index.
    pub async fn has_vector_index(&self) -> Result<bool, StoreError> {
        Ok(self.chunks.list_indices().await?.iter().any(|i| i.columns.iter().any(|c| c == "vector")))
    }

    /// Deletes document rows by id, in one commit.
    pub async fn delete_documents(&self, ids: &[String]) -> Result<(), StoreError> {
        for part in ids.chunks(500) {
            self.documents.delete(sql_in_strings("document_id", part.iter().map(String::as_str)).as_str()).await?;
        }
        Ok(())
    }

    /// Appends chunks with their vectors in one commit. `vectors[i]` belongs to `chunks[i]`.
    pub async fn add_chunks(&self, chunks: &[ChunkRecord], vectors: &[Vec<f32>]) -> Result<(), StoreError> {
        if chunks.is_empty() {
            return Ok(());
        }
        self.chunks.add(chunks_to_batch(chunks, Some(vectors), self.dimension)?).execute().await?;
        Ok(())
    }

    /// Appends chunks without their embeddings in one commit: zero vectors, `embedded = false`. Dense
    /// search skips them until [`Store::set_vectors`] fills them in; BM25 can index them at once.
    pub async fn add_chunks_waiting(&self, chunks: &[ChunkRecord]) -> Result<(), StoreError> {
        if chunks.is_empty() {
            return Ok(());
        }
        self.chunks.add(chunks_to_batch(chunks, None, self.dimension)?).execute().await?;
        Ok(())
    }

    /// Gives chunks already in the table their embeddings (`vectors[i]` for `chunks[i]`) and marks them
    /// `embedded`, in one commit (a LanceDB merge-insert on `chunk_id`, so a kill leaves either all of
    /// them embedded or none). Chunks not in the table are not added.
    pub async fn set_vectors(&self, chunks: &[ChunkRecord], vectors: &[Vec<f32>]) -> Result<(), StoreError> {
        if chunks.is_empty() {
            return Ok(());
        }
        let batch = chunks_to_batch(chunks, Some(vectors), self.dimension)?;
        let schema = batch.schema();
        let reader = arrow_array::RecordBatchIterator::new(vec![Ok(batch)], schema);
        let mut merge = self.chunks.merge_insert(&["chunk_id"]);
        merge.when_matched_update_all(None);
        merge.execute(Box::new(reader)).await?;
        Ok(())
    }

    /// Chunks whose embedding is not computed yet (`embedded = false`); 0 for a library made before the
    /// column existed.
    pub async fn count_waiting_chunks(&self) -> Result<usize, StoreError> {
        if !self.embedded_column {
            return Ok(0);
        }
        self.count_chunks(Some(format!("{EMBEDDED} = false"))).await
    }

    /// The chunks of `document_ids` still waiting for their embeddings, in document and chunk order.
    pub async fn waiting_chunks_of(&self, document_ids: &[String]) -> Result<Vec<ChunkRecord>, StoreError> {
        if document_ids.is_empty() || !self.embedded_column {
            return Ok(Vec::new());
        }
        let filter = format!(
            "{EMBEDDED} = false AND {}",
            sql_in_strings("document_id", document_ids.iter().map(String::as_str))
        );
        let mut chunks = self.chunks_where(Some(filter)).await?;
        chunks.sort_by(|a, b| a.document_id.cmp(&b.document_id).then(a.chunk_index.cmp(&b.chunk_index)));
        Ok(chunks)
    }

    /// The chunks of `document_ids` whose embedding is computed, each with its vector of
    /// [`Store::dimension`] floats (any order). Every chunk of a library made before the `embedded`
    /// column is embedded.
    pub async fn embedded_chunks_of(
        &self,
        document_ids: &[String],
    ) -> Result<Vec<(ChunkRecord, Vec<f32>)>, StoreError> {
        if document_ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut filter = sql_in_strings("document_id", document_ids.iter().map(String::as_str));
        if self.embedded_column {
            filter = format!("{EMBEDDED} = true AND {filter}");
        }
        let mut columns = self.chunk_columns();
        columns.push("vector");
        let batches: Vec<RecordBatch> = self
            .chunks
            .query()
            .select(Select::columns(&columns))
            .only_if(filter)
            .execute()
            .await?
            .try_collect()
            .await?;
        let mut out = Vec::new();
        for batch in &batches {
            out.extend(chunks_from_batch(batch)?.into_iter().zip(vectors_from_batch(batch)?));
        }
        Ok(out)
    }

    /// Deletes every chunk of the given documents (one commit per 500 documents).
    pub async fn delete_chunks_of(&self, document_ids: &[String]) -> Result<(), StoreError> {
        for part in document_ids.chunks(500) {
            self.chunks.delete(sql_in_strings("document_id", part.iter().map(String::as_str)).as_str()).await?;
        }
        Ok(())
    }

    /// Number of chunk rows matching an SQL `filter` (all when `None`).
    pub async fn count_chunks(&self, filter: Option<String>) -> Result<usize, StoreError> {
        Ok(self.chunks.count_rows(filter).await?)
    }

    /// The columns a search reads back: [`CHUNK_COLUMNS`], and `ocr` where the table has it.
    fn chunk_columns(&self) -> Vec<&'static str> {
        let mut columns = CHUNK_COLUMNS.to_vec();
        if self.ocr_column {
            columns.push(OCR);
        }
        columns
    }

    /// Chunks (without vectors) matching `filter`, all columns of [`CHUNK_COLUMNS`] (and `ocr`).
    pub async fn chunks_where(&self, filter: Option<String>) -> Result<Vec<ChunkRecord>, StoreError> {
        let mut query = self.chunks.query().select(Select::columns(&self.chunk_columns()));
        if let Some(filter) = filter {
            query = query.only_if(filter);
        }
        let batches: Vec<RecordBatch> = query.execute().await?.try_collect().await?;
        let mut out = Vec::new();
        for batch in &batches {
            out.extend(chunks_from_batch(batch)?);
        }
        Ok(out)
    }

    /// The chunks with these ids (any order; ids not found are left out).
    pub async fn chunks_by_id(&self, ids: &[u64]) -> Result<Vec<ChunkRecord>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let list: Vec<String> = ids.iter().map(u64::to_string).collect();
        self.chunks_where(Some(format!("chunk_id IN ({})", list.join(", ")))).await
    }

    /// The `k` chunks nearest to `vector` by cosine distance, as (chunk, cosine similarity), best first.
    /// Uses the ANN index when one exists (rows added after it was built are searched exactly), with
    /// [`ANN_REFINE_FACTOR`].
    pub async fn nearest(&self, vector: &[f32], k: usize) -> Result<Vec<(ChunkRecord, f32)>, StoreError> {
        self.nearest_by(vector, k, VectorSearch::DEFAULT).await
    }

    /// [`Store::nearest`] by exact search over every row, ignoring any ANN index: the ground truth an ANN
    /// index's recall is measured against (`quarry eval latency`), and the fallback when one is suspect.
    pub async fn nearest_exact(&self, vector: &[f32], k: usize) -> Result<Vec<(ChunkRecord, f32)>, StoreError> {
        self.nearest_by(vector, k, VectorSearch::Exact).await
    }

    /// [`Store::nearest`] with the search chosen by the caller (`quarry eval latency` compares them).
    pub async fn nearest_by(
        &self,
        vector: &[f32],
        k: usize,
        search: VectorSearch,
    ) -> Result<Vec<(ChunkRecord, f32)>, StoreError> {
        self.nearest_where(vector, k, search, false).await
    }

    /// [`Store::nearest`] over the chunks whose embedding is computed only when `embedded_only` (a
    /// LanceDB pre-filter, so the `k` results are all real neighbours while chunks wait for embeddings;
    /// without waiting chunks the filter is left off, as it costs a scan of the column).
    pub async fn nearest_where(
        &self,
        vector: &[f32],
        k: usize,
        search: VectorSearch,
        embedded_only: bool,
    ) -> Result<Vec<(ChunkRecord, f32)>, StoreError> {
        let mut columns = self.chunk_columns();
        columns.push("_distance");
        let query = self.vector_query(vector, k, search, embedded_only)?;
        let batches: Vec<RecordBatch> = query.select(Select::columns(&columns)).execute().await?.try_collect().await?;
        let mut out = Vec::new();
        for batch in &batches {
            let chunks = chunks_from_batch(batch)?;
            let distance = batch
                .column_by_name("_distance")
                .and_then(|c| c.as_any().downcast_ref::<arrow_array::Float32Array>().cloned());
            for (i, chunk) in chunks.into_iter().enumerate() {
                let d = distance.as_ref().map(|d| d.value(i)).unwrap_or(1.0);
                out.push((chunk, 1.0 - d));
            }
        }
        out.sort_by(|a, b| b.1.total_cmp(&a.1));
        Ok(out)
    }

    /// The LanceDB query for the `k` chunks nearest to `vector` by cosine distance, searched as `search`
    /// asks, over embedded chunks only when `embedded_only` (see [`Store::nearest_where`]).
    fn vector_query(
        &self,
        vector: &[f32],
        k: usize,
        search: VectorSearch,
        embedded_only: bool,
    ) -> Result<lancedb::query::VectorQuery, StoreError> {
        let mut query = search.apply(
            self.chunks.vector_search(vector.to_vec())?.column("vector").distance_type(DistanceType::Cosine).limit(k),
            k,
        )?;
        if embedded_only && self.embedded_column {
            query = query.only_if(EMBEDDED_ONLY);
        }
        Ok(query)
    }

    /// [`Store::nearest_where`] returning only (chunk id, document id, cosine similarity), best first. Hybrid
    /// search fuses deeper lists than it returns, so it reads whole rows only for the chunks that make the
    /// final list ([`Store::chunks_by_id`]): reading a row's every column costs more than its size says
    /// (LanceDB 0.41 walks each column page that holds one repeated value, such as an all-empty heading
    /// path, from its first row to the row read, so at 1M chunks a lookup takes milliseconds), and these
    /// two columns are the ones that vary row by row.
    pub async fn nearest_ids(
        &self,
        vector: &[f32],
        k: usize,
        search: VectorSearch,
        embedded_only: bool,
    ) -> Result<Vec<(u64, String, f32)>, StoreError> {
        let query = self.vector_query(vector, k, search, embedded_only)?;
        let columns = ["chunk_id", "document_id", "_distance"];
        let batches: Vec<RecordBatch> = query.select(Select::columns(&columns)).execute().await?.try_collect().await?;
        let mut out = Vec::new();
        for batch in &batches {
            let ids = column::<UInt64Array>(batch, "chunk_id")?;
            let documents = column::<StringArray>(batch, "document_id")?;
            let distance = column::<arrow_array::Float32Array>(batch, "_distance")?;
            for i in 0..batch.num_rows() {
                out.push((ids.value(i), documents.value(i).to_string(), 1.0 - distance.value(i)));
            }
        }
        out.sort_by(|a, b| b.2.total_cmp(&a.2));
        Ok(out)
    }

    /// The stored embedding of every chunk matching `filter`, as (chunk id, vector of [`Store::dimension`]
    /// floats). For consistency checks and "more like this"; searches use [`Store::nearest`].
    pub async fn chunk_vectors(&self, filter: Option<String>) -> Result<Vec<(u64, Vec<f32>)>, StoreError> {
        let mut query = self.chunks.query().select(Select::columns(&["chunk_id", "vector"]));
        if let Some(filter) = filter {
            query = query.only_if(filter);
        }
        let batches: Vec<RecordBatch> = query.execute().await?.try_collect().await?;
        let mut out = Vec::new();
        for batch in &batches {
            let ids = column::<UInt64Array>(batch, "chunk_id")?;
            out.extend(ids.values().iter().copied().zip(vectors_from_batch(batch)?));
        }
        Ok(out)
    }

    /// Every (chunk id, document id, text), streamed in batches to `each` (rebuilding the keyword index).
    pub async fn scan_texts(
        &self,
        mut each: impl FnMut(u64, &str, &str) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut stream =
            self.chunks.query().select(Select::columns(&["chunk_id", "document_id", "text"])).execute().await?;
        while let Some(batch) = stream.try_next().await? {
            let ids = column::<UInt64Array>(&batch, "chunk_id")?;
            let docs = column::<StringArray>(&batch, "document_id")?;
            let texts = column::<StringArray>(&batch, "text")?;
            for i in 0..batch.num_rows() {
                each(ids.value(i), docs.value(i), texts.value(i))?;
            }
        }
        Ok(())
    }
}

fn column<'a, T: 'static>(batch: &'a RecordBatch, name: &str) -> Result<&'a T, StoreError> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<T>())
        .ok_or_else(|| StoreError::Store(format!("column {name} is missing or has an unexpected type")))
}

fn opt_u32(array: &UInt32Array, i: usize) -> Option<u32> {
    (!array.is_null(i)).then(|| array.value(i))
}

fn opt_str(array: &StringArray, i: usize) -> Option<String> {
    (!array.is_null(i)).then(|| array.value(i).to_string())
}

/// Adds the columns of `schema` that `table` lacks, all null: a library made by an older Quarry gets the
/// newer nullable columns (`documents.context`, `documents.extraction_version`) the first time it is opened for writing, in one commit.
async fn add_missing_columns(table: &Table, schema: &SchemaRef) -> Result<(), StoreError> {
    let stored = table.schema().await?;
    let missing: Vec<Field> = schema
        .fields()
        .iter()
        .filter(|f| stored.field_with_name(f.name()).is_err())
        .map(|f| f.as_ref().clone())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    if let Some(required) = missing.iter().find(|f| !f.is_nullable()) {
        return Err(StoreError::Store(format!(
            "the library lacks the column {} and it cannot be added empty: re-create the library",
            required.name()
        )));
    }
    table
        .add_columns()
        .transform(lancedb::table::NewColumnTransform::AllNulls(Arc::new(Schema::new(missing))))
        .execute()
        .await?;
    Ok(())
}

fn documents_to_batch(rows: &[DocumentRecord]) -> Result<RecordBatch, StoreError> {
    let strings =
        |f: fn(&DocumentRecord) -> &str| -> ArrayRef { Arc::new(StringArray::from_iter_values(rows.iter().map(f))) };
    let columns: Vec<ArrayRef> = vec![
        strings(|r| &r.document_id),
        strings(|r| &r.origin_id),
        strings(|r| &r.path),
        strings(|r| &r.file_path),
        strings(|r| &r.format),
        Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.byte_len))),
        Arc::new(UInt32Array::from_iter(rows.iter().map(|r| r.page_count))),
        Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.chunk_count))),
        Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.char_count))),
        strings(|r| r.state.name()),
        Arc::new(StringArray::from_iter(rows.iter().map(|r| r.error.as_deref()))),
        Arc::new(StringArray::from_iter(rows.iter().map(|r| r.warnings.as_deref()))),
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.added_ms))),
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.modified_ms))),
        Arc::new(StringArray::from_iter(rows.iter().map(|r| r.context.as_deref()))),
        Arc::new(UInt32Array::from_iter(rows.iter().map(|r| r.extraction_version))),
    ];
    Ok(RecordBatch::try_new(documents_schema(), columns)?)
}

fn documents_from_batch(batch: &RecordBatch) -> Result<Vec<DocumentRecord>, StoreError> {
    let document_id = column::<StringArray>(batch, "document_id")?;
    let origin_id = column::<StringArray>(batch, "origin_id")?;
    let path = column::<StringArray>(batch, "path")?;
    let file_path = column::<StringArray>(batch, "file_path")?;
    let format = column::<StringArray>(batch, "format")?;
    let byte_len = column::<UInt64Array>(batch, "byte_len")?;
    let page_count = column::<UInt32Array>(batch, "page_count")?;
    let chunk_count = column::<UInt32Array>(batch, "chunk_count")?;
    let char_count = column::<UInt64Array>(batch, "char_count")?;
    let state = column::<StringArray>(batch, "state")?;
    let error = column::<StringArray>(batch, "error")?;
    let warnings = column::<StringArray>(batch, "warnings")?;
    // Absent in libraries made before 2026-11-26 until they are opened for writing.
    let context = batch.column_by_name("context").and_then(|c| c.as_any().downcast_ref::<StringArray>());
    // Absent in libraries made before 2026-11-27 until they are opened for writing.
    let extraction_version =
        batch.column_by_name("extraction_version").and_then(|c| c.as_any().downcast_ref::<UInt32Array>());
    let added_ms = column::<Int64Array>(batch, "added_ms")?;
    let modified_ms = column::<Int64Array>(batch, "modified_ms")?;
    Ok((0..batch.num_rows())
        .map(|i| DocumentRecord {
            document_id: document_id.value(i).to_string(),
            origin_id: origin_id.value(i).to_string(),
            path: path.value(i).to_string(),
            file_path: file_path.value(i).to_string(),
            format: format.value(i).to_string(),
            byte_len: byte_len.value(i),
            page_count: opt_u32(page_count, i),
            chunk_count: chunk_count.value(i),
            char_count: char_count.value(i),
            state: DocumentState::parse(state.value(i)),
            error: opt_str(error, i),
            warnings: opt_str(warnings, i),
            added_ms: added_ms.value(i),
            modified_ms: modified_ms.value(i),
            context: context.and_then(|c| opt_str(c, i)),
            extraction_version: extraction_version.and_then(|c| opt_u32(c, i)),
        })
        .collect())
}

/// The `chunks` rows for `chunks` with `vectors` (`embedded = true`), or with zero vectors and
/// `embedded = false` when `None`.
fn chunks_to_batch(
    chunks: &[ChunkRecord],
    vectors: Option<&[Vec<f32>]>,
    dimension: usize,
) -> Result<RecordBatch, StoreError> {
    let embedded = vectors.is_some();
    let zeros;
    let vectors = match vectors {
        Some(vectors) => vectors,
        None => {
            zeros = vec![vec![0.0f32; dimension]; chunks.len()];
            &zeros[..]
        }
    };
    if vectors.len() != chunks.len() || vectors.iter().any(|v| v.len() != dimension) {
        return Err(StoreError::Store(format!(
            "{} chunks need {} vectors of {dimension} floats",
            chunks.len(),
            chunks.len()
        )));
    }
    let mut headings = ListBuilder::new(StringBuilder::new());
    for chunk in chunks {
        for title in &chunk.heading_path {
            headings.values().append_value(title);
        }
        headings.append(true);
    }
    let headings: ListArray = headings.finish();
    let vector_field = Arc::new(Field::new("item", DataType::Float32, true));
    let values = arrow_array::Float32Array::from_iter_values(vectors.iter().flatten().copied());
    let vectors = FixedSizeListArray::try_new(vector_field, dimension as i32, Arc::new(values), None)?;
    let columns: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from_iter_values(chunks.iter().map(|c| c.chunk_id))),
        Arc::new(StringArray::from_iter_values(chunks.iter().map(|c| c.document_id.as_str()))),
        Arc::new(UInt32Array::from_iter_values(chunks.iter().map(|c| c.chunk_index))),
        Arc::new(StringArray::from_iter_values(chunks.iter().map(|c| c.text.as_str()))),
        Arc::new(UInt32Array::from_iter(chunks.iter().map(|c| c.page_start))),
        Arc::new(UInt32Array::from_iter(chunks.iter().map(|c| c.page_end))),
        Arc::new(StringArray::from_iter(chunks.iter().map(|c| c.sheet.as_deref()))),
        Arc::new(headings),
        Arc::new(UInt64Array::from_iter_values(chunks.iter().map(|c| c.char_start))),
        Arc::new(UInt64Array::from_iter_values(chunks.iter().map(|c| c.char_end))),
        Arc::new(UInt32Array::from_iter_values(chunks.iter().map(|c| c.token_count))),
        Arc::new(vectors),
        Arc::new(arrow_array::BooleanArray::from(vec![embedded; chunks.len()])),
        Arc::new(arrow_array::BooleanArray::from_iter(chunks.iter().map(|c| Some(c.ocr)))),
    ];
    Ok(RecordBatch::try_new(chunks_schema(dimension), columns)?)
}

/// The `vector` column of a batch of chunk rows, one vector per row, in row order.
fn vectors_from_batch(batch: &RecordBatch) -> Result<Vec<Vec<f32>>, StoreError> {
    let vectors = column::<FixedSizeListArray>(batch, "vector")?;
    (0..batch.num_rows())
        .map(|i| {
            let values = vectors.value(i);
            let floats = values
                .as_any()
                .downcast_ref::<arrow_array::Float32Array>()
                .ok_or_else(|| StoreError::Store("column vector does not hold float32".into()))?;
            Ok(floats.values().to_vec())
        })
        .collect()
}

fn chunks_from_batch(batch: &RecordBatch) -> Result<Vec<ChunkRecord>, StoreError> {
    let chunk_id = column::<UInt64Array>(batch, "chunk_id")?;
    let document_id = column::<StringArray>(batch, "document_id")?;
    let chunk_index = column::<UInt32Array>(batch, "chunk_index")?;
    let text = column::<StringArray>(batch, "text")?;
    let page_start = column::<UInt32Array>(batch, "page_start")?;
    let page_end = column::<UInt32Array>(batch, "page_end")?;
    let sheet = column::<StringArray>(batch, "sheet")?;
    let headings = column::<ListArray>(batch, "heading_path")?;
    let char_start = column::<UInt64Array>(batch, "char_start")?;
    let char_end = column::<UInt64Array>(batch, "char_end")?;
    let token_count = column::<UInt32Array>(batch, "token_count")?;
    // Optional: absent in a library made before it (opened read-only), null in rows written before it.
    let ocr = batch.column_by_name(OCR).and_then(|c| c.as_any().downcast_ref::<arrow_array::BooleanArray>());
    let mut out = Vec::with_capacity(batch.num_rows());
    for i in 0..batch.num_rows() {
        let titles = headings.value(i);
        let titles = titles
            .as_any()
            .downcast_ref::<StringArray>()
            .map(|a| a.iter().flatten().map(str::to_string).collect())
            .unwrap_or_default();
        out.push(ChunkRecord {
            chunk_id: chunk_id.value(i),
            document_id: document_id.value(i).to_string(),
            chunk_index: chunk_index.value(i),
            text: text.value(i).to_string(),
            page_start: opt_u32(page_start, i),
            page_end: opt_u32(page_end, i),
            sheet: opt_str(sheet, i),
            heading_path: titles,
            char_start: char_start.value(i),
            char_end: char_end.value(i),
            token_count: token_count.value(i),
            ocr: ocr.is_some_and(|o| o.is_valid(i) && o.value(i)),
        });
    }
    Ok(out)
}

/// How [`Store::nearest_by`] searches the vectors.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum VectorSearch {
    /// Every row, ignoring any ANN index.
    Exact,
    /// The ANN index when there is one (exact search otherwise). With `refine_factor: Some(f)` LanceDB
    /// takes `k × f` candidates from the index and re-ranks them by their full vectors, which corrects
    /// the order (and similarity scores) that scalar quantisation blurs; `None` returns the index's own
    /// approximate order and distances.
    Ann {
        /// Candidates per wanted result re-ranked by full vectors; `None`: no re-ranking.
        refine_factor: Option<u32>,
        /// Candidates the HNSW graph search keeps while it walks (its `ef`), per IVF partition probed;
        /// `None`: Lance's default, 1.5 × the candidates asked for (k × refine factor). Raised to that
        /// count when lower (Lance refuses less). More finds more of the true neighbours, and costs time.
        ef: Option<usize>,
        /// IVF partitions probed (`nprobes`, the same lower and upper bound); `None`: Lance's adaptive
        /// probing.
        nprobes: Option<usize>,
    },
}

impl VectorSearch {
    /// What searches use: the ANN index when there is one, re-ranked with [`ANN_REFINE_FACTOR`], its
    /// graph searched with an `ef` of at least [`ANN_MIN_EF`].
    pub const DEFAULT: VectorSearch =
        VectorSearch::Ann { refine_factor: Some(ANN_REFINE_FACTOR), ef: Some(ANN_MIN_EF), nprobes: None };

    /// Applies this search's settings to a LanceDB vector query for the `k` nearest rows.
    fn apply(
        self,
        mut query: lancedb::query::VectorQuery,
        k: usize,
    ) -> Result<lancedb::query::VectorQuery, StoreError> {
        match self {
            VectorSearch::Exact => query = query.bypass_vector_index(),
            VectorSearch::Ann { refine_factor, ef, nprobes } => {
                if let Some(factor) = refine_factor {
                    query = query.refine_factor(factor.max(1));
                }
                if let Some(ef) = ef {
                    let candidates = k * refine_factor.unwrap_or(1).max(1) as usize;
                    query = query.ef(ef.max(candidates).max(1));
                }
                if let Some(n) = nprobes {
                    query = query.nprobes(n.max(1))?;
                }
            }
        }
        Ok(query)
    }
}

/// Candidates per wanted result that an ANN search re-ranks by full vectors. Chosen with `quarry eval
/// latency` (docs/evaluation/retrieval.md, "Retrieval at scale"): at 100k chunks re-ranking lifted the
/// index's recall@10 against exact search from 0.79 to 0.91 (recall@50 0.94 to 0.99), at 4 when Lance's
/// `ef` grew with it. Since the graph is walked with an `ef` of at least [`ANN_MIN_EF`], 2 finds what 4
/// did — recall@10 / @50 0.980 / 0.993 at 100k chunks and 0.860 / 0.860 at 1M, against 0.940 / 0.983
/// without re-ranking at 100k — for 0.4 ms (100k) to 1–2 ms (1M) less a top-50 search (2026-12-04 (d)).
pub const ANN_REFINE_FACTOR: u32 = 2;

/// The least `ef` (candidates kept while walking the HNSW graph) of a default ANN search; Lance's own
/// default is 1.5 × k × refine factor, 60 for a top-10 search. Chosen with `quarry eval latency --library
/// … --ann-recall-queries 50 --ef …` on 1M chunks (docs/evaluation/retrieval.md, "HNSW ef"): a top-10
/// search's recall against exact search rises from 0.69 to 0.92; hybrid search's dense side (50 × 4
/// candidates) already searched with 300.
pub const ANN_MIN_EF: usize = 300;

/// Builds an approximate nearest-neighbour index (IVF partitions with HNSW graphs over scalar-quantised
/// vectors, cosine) on `chunks.vector` when the table holds at least `min_rows` rows and has none yet,
/// and with it a BTree index on `chunk_id` (BM25 hits are read back by id). Rows added later are folded
/// into both by `OptimizeAction::Index` ([`crate::Library::optimize`]). Returns whether an ANN index
/// exists now.
pub async fn ensure_vector_index(store: &Store, min_rows: usize) -> Result<bool, StoreError> {
    let indices = store.chunks.list_indices().await?;
    let indexed = |column: &str| indices.iter().any(|i| i.columns.iter().any(|c| c == column));
    let (has_vector, has_id) = (indexed("vector"), indexed("chunk_id"));
    if !has_vector {
        if store.chunks.count_rows(None).await? < min_rows {
            return Ok(false);
        }
        let builder = lancedb::index::vector::IvfHnswSqIndexBuilder::default().distance_type(DistanceType::Cosine);
        store.chunks.create_index(&["vector"], lancedb::index::Index::IvfHnswSq(builder)).execute().await?;
    }
    // A library this large also looks chunks up by id (BM25's hits) through a BTree instead of a scan.
    if !has_id {
        let btree = lancedb::index::scalar::BTreeIndexBuilder::default();
        store.chunks.create_index(&["chunk_id"], lancedb::index::Index::BTree(btree)).execute().await?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document(id: &str, state: DocumentState) -> DocumentRecord {
        DocumentRecord {
            document_id: id.into(),
            origin_id: id.into(),
            path: format!("/docs/{id}'s file.pdf"),
            file_path: format!("/docs/{id}'s file.pdf"),
            format: "pdf".into(),
            byte_len: 10,
            page_count: Some(2),
            chunk_count: 2,
            char_count: 100,
            state,
            error: None,
            warnings: None,
            added_ms: 1,
            modified_ms: 2,
            context: Some("Example Corp. · Form 10-Q".into()),
            extraction_version: Some(quarry_ingest::extraction_version("pdf")),
        }
    }

    fn chunk(document_id: &str, index: u32, text: &str) -> ChunkRecord {
        ChunkRecord {
            chunk_id: chunk_id(document_id, index),
            document_id: document_id.into(),
            chunk_index: index,
            text: text.into(),
            page_start: Some(index + 1),
            page_end: Some(index + 1),
            sheet: None,
            heading_path: vec!["Intro".into(), "Scope".into()],
            char_start: 0,
            char_end: text.len() as u64,
            token_count: 3,
            ocr: false,
        }
    }

    #[tokio::test]
    async fn rows_round_trip_and_nearest_uses_cosine() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(&tmp.path().join("lance"), 3, true).await.unwrap();
        store
            .add_documents(&[document("a", DocumentState::Pending), document("b", DocumentState::Indexed)])
            .await
            .unwrap();
        let chunks = vec![chunk("a", 0, "alpha"), chunk("a", 1, "beta"), chunk("b", 0, "gamma")];
        let vectors = vec![vec![1.0, 0.0, 0.0], vec![0.0, 5.0, 0.0], vec![1.0, 1.0, 0.0]];
        store.add_chunks(&chunks, &vectors).await.unwrap();
        assert!(store.add_chunks(&chunks[..1], &[vec![1.0]]).await.is_err(), "wrong dimension is refused");

        let docs = store.documents_where(Some("state = 'pending'".into())).await.unwrap();
        assert_eq!(docs, vec![document("a", DocumentState::Pending)], "quotes in paths survive");
        store.set_state(&["a".into()], DocumentState::Indexed).await.unwrap();
        assert_eq!(store.documents_where(Some("state = 'indexed'".into())).await.unwrap().len(), 2);

        let hits = store.nearest(&[0.0, 0.1, 0.0], 2).await.unwrap();
        assert_eq!(hits[0].0, chunks[1], "length does not matter, direction does");
        assert!((hits[0].1 - 1.0).abs() < 1e-5);
        assert_eq!(hits[1].0.text, "gamma");

        let by_id = store.chunks_by_id(&[chunks[2].chunk_id]).await.unwrap();
        assert_eq!(by_id, vec![chunks[2].clone()]);
        let before = store.chunks_version().await.unwrap();
        store.delete_chunks_of(&["a".into()]).await.unwrap();
        assert!(store.chunks_version().await.unwrap() > before);
        assert_eq!(store.count_chunks(None).await.unwrap(), 1);
        store.rename_origin("b", "/docs/b's file.pdf", "/new/b's file.pdf", 9).await.unwrap();
        let b = store.documents_where(Some("document_id = 'b'".into())).await.unwrap();
        assert_eq!(
            (b[0].path.as_str(), b[0].file_path.as_str(), b[0].modified_ms),
            ("/new/b's file.pdf", "/new/b's file.pdf", 9)
        );
        assert!(Store::open(&tmp.path().join("lance"), 4, false).await.is_err(), "another dimension is refused");
    }

    /// The (major, minor) Lance file version of every data file of `table` under `lance_dir`: a Lance file
    /// ends with its major and minor version (u16, little-endian) and the magic `LANC`.
    fn file_versions(lance_dir: &Path, table: &str) -> Vec<(u16, u16)> {
        let data = lance_dir.join(format!("{table}.lance")).join("data");
        std::fs::read_dir(&data)
            .unwrap()
            .map(|entry| {
                let bytes = std::fs::read(entry.unwrap().path()).unwrap();
                let tail = &bytes[bytes.len() - 8..];
                assert_eq!(&tail[4..], b"LANC");
                (u16::from_le_bytes([tail[0], tail[1]]), u16::from_le_bytes([tail[2], tail[3]]))
            })
            .collect()
    }

    #[tokio::test]
    async fn new_tables_are_written_in_lance_file_format_2_1() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("lance");
        let store = Store::open(&dir, 3, true).await.unwrap();
        store.add_documents(&[document("a", DocumentState::Indexed)]).await.unwrap();
        store
            .add_chunks(&[chunk("a", 0, "alpha"), chunk("a", 1, "beta")], &[vec![1.0, 0.0, 0.0], vec![0.0, 1.0, 0.0]])
            .await
            .unwrap();
        assert_eq!(LANCE_FILE_FORMAT, "2.1");
        for table in [DOCUMENTS, CHUNKS] {
            let versions = file_versions(&dir, table);
            assert!(!versions.is_empty(), "{table} has data files");
            assert!(versions.iter().all(|v| *v == (2, 1)), "{table}: {versions:?}");
        }
    }

    /// Deterministic vectors spread over the sphere (xorshift), `n` of `dimension`.
    use std::collections::HashSet;

    fn spread_vectors(n: usize, dimension: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut state = seed;
        (0..n)
            .map(|_| {
                (0..dimension)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        (state % 2001) as f32 / 1000.0 - 1.0
                    })
                    .collect()
            })
            .collect()
    }

    #[tokio::test]
    async fn the_ann_index_comes_at_its_threshold_with_an_id_index_and_finds_what_exact_search_finds() {
        let tmp = tempfile::tempdir().unwrap();
        let dimension = 16;
        let store = Store::open(&tmp.path().join("lance"), dimension, true).await.unwrap();
        let rows = 3_000;
        let chunks: Vec<ChunkRecord> =
            (0..rows).map(|i| chunk(&format!("d{}", i / 100), (i % 100) as u32, &format!("row {i}"))).collect();
        let vectors = spread_vectors(rows, dimension, 0x9e3779b97f4a7c15);
        store.add_chunks(&chunks, &vectors).await.unwrap();

        assert!(!ensure_vector_index(&store, rows + 1).await.unwrap(), "below the threshold: no index");
        assert!(store.chunks.list_indices().await.unwrap().is_empty());
        assert!(ensure_vector_index(&store, rows).await.unwrap());
        let indexed: Vec<Vec<String>> =
            store.chunks.list_indices().await.unwrap().into_iter().map(|i| i.columns).collect();
        assert!(
            indexed.contains(&vec!["vector".to_string()]) && indexed.contains(&vec!["chunk_id".to_string()]),
            "{indexed:?}"
        );
        assert!(store.has_vector_index().await.unwrap());
        assert!(ensure_vector_index(&store, rows).await.unwrap(), "a second call keeps what is there");

        // The ANN search (re-ranked by full vectors) returns most of exact search's top 10, with exact
        // cosine similarities; every row it returns is a real row.
        let queries = spread_vectors(20, dimension, 42);
        let mut found = 0;
        for query in &queries {
            let exact = store.nearest_exact(query, 10).await.unwrap();
            let approximate = store.nearest(query, 10).await.unwrap();
            assert_eq!(approximate.len(), 10);
            let exact_ids: HashSet<u64> = exact.iter().map(|(c, _)| c.chunk_id).collect();
            found += approximate.iter().filter(|(c, _)| exact_ids.contains(&c.chunk_id)).count();
            for (chunk, similarity) in &approximate {
                let row = chunks.iter().position(|c| c.chunk_id == chunk.chunk_id).unwrap();
                let v = &vectors[row];
                let cosine = v.iter().zip(query).map(|(a, b)| a * b).sum::<f32>()
                    / (v.iter().map(|a| a * a).sum::<f32>().sqrt() * query.iter().map(|a| a * a).sum::<f32>().sqrt());
                assert!((cosine - similarity).abs() < 1e-3, "refined similarities are exact: {cosine} vs {similarity}");
            }
        }
        assert!(found as f64 / 200.0 >= 0.8, "ANN recall@10 {found}/200");

        // Lookups by id go through the BTree and return the same rows.
        let some: Vec<u64> = chunks.iter().step_by(97).map(|c| c.chunk_id).collect();
        let mut back: Vec<u64> = store.chunks_by_id(&some).await.unwrap().into_iter().map(|c| c.chunk_id).collect();
        back.sort_unstable();
        let mut want = some.clone();
        want.sort_unstable();
        assert_eq!(back, want);

        // A row added after the index was built is found before the index is updated (searched exactly).
        let late = chunk("late", 0, "added after the index");
        let late_vector: Vec<f32> = (0..dimension).map(|i| if i == 3 { 1.0 } else { 0.0 }).collect();
        store.add_chunks(std::slice::from_ref(&late), std::slice::from_ref(&late_vector)).await.unwrap();
        let hits = store.nearest(&late_vector, 1).await.unwrap();
        assert_eq!(hits[0].0, late);
        assert_eq!(store.chunks_by_id(&[late.chunk_id]).await.unwrap(), vec![late.clone()]);
    }
}
