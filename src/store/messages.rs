//! The message rows of a group, and their search index: most of what a backfill writes, so
//! each backend gets the way that is fastest for it behind one call ([`write`]):
//!
//! - PostgreSQL: multi-row `INSERT`s (arrays per column, see `store::unnest`), each statement
//!   built while the previous one runs on the server; then the searchable messages' vectors
//!   (computed on the reading threads) in `message_search` (migration 0022: a narrow table, so
//!   that a search's walk over the newest messages reads no text and no unsearchable row).
//! - SQLite: single-row prepared statements run on the writer's own handle ([`Conn::Direct`],
//!   `store::direct`), and the searchable text put in the full-text index (`search_docs`,
//!   `search_fts`) in the same transaction.
//!
//! Both keep the same rule: the checkpoint guard means these lines were never committed in
//! this generation, so every row is new and a file gains its batch's rows; the unique key is
//! the belt and braces, and if a conflict ever skipped a row the file's count is taken from the
//! table instead ([`recount`]).

use std::collections::HashMap;

use super::copies::Keep;
use super::model_names::model_id;
use super::search::index::tsvector_arg;
use super::sql::{row_chunks, Backend, Conn, Sql};
use super::StoreError;
use crate::extract::lexemes;
use crate::extract::rows::{uuid_bytes, uuid_stored, MessageRow, PreparedBatch, StoredUuid};

/// What a commit wrote for one batch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommitStats {
    /// Message rows actually inserted (duplicates are skipped).
    pub messages: u64,
    /// Diagnostic rows actually inserted.
    pub diagnostics: u64,
}

const INSERT_MESSAGE: &str = "INSERT INTO messages (file_id, generation, line_no, seq, \
     byte_start, byte_end, uuid, parent_uuid, kind, subtype, ts, is_sidechain, agent_id, \
     model_id, tool_names, is_error, text, is_meta) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18) \
     ON CONFLICT (file_id, generation, line_no, seq) DO NOTHING";

/// No session and no time: a message's are its file's and its row's
/// (`search::sql::sqlite_doc_session`, `sqlite_doc_ts`).
const INSERT_DOC: &str = "INSERT INTO search_docs (id, kind, session_id, ts, file_id, \
     generation, line_no, seq) VALUES (?1, 'message', '', NULL, ?2, ?3, ?4, ?5)";

const INSERT_FTS: &str = "INSERT INTO search_fts (rowid, body) VALUES (?1, ?2)";

/// The message rows of the accepted batches (and their search index); what each file
/// actually gained, by file id. `index_time` gains the time spent indexing (SQLite: the
/// full-text rows; PostgreSQL's vectors were made on the reading threads).
pub(super) async fn write(
    c: &mut Conn<'_>,
    accepted: &[&PreparedBatch],
    keep: &Keep,
    models: &HashMap<String, i64>,
    index_time: &mut std::time::Duration,
) -> Result<HashMap<i64, CommitStats>, StoreError> {
    let written = match c {
        Conn::Direct(db) => {
            let (written, index) = write_direct(db, accepted, keep, models)?;
            *index_time += index;
            written
        }
        _ => write_multi_row(c, accepted, keep, models, index_time).await?,
    };
    let mut inserted = HashMap::with_capacity(accepted.len());
    for (b, rows) in accepted.iter().zip(written) {
        let messages = match rows {
            Some(n) if n == keep.count(b) => n,
            _ => {
                tracing::error!(
                    file_id = b.file_id,
                    expected = keep.count(b),
                    inserted = rows,
                    "duplicate message rows skipped despite the checkpoint guard; recounting"
                );
                recount(c, b).await?
            }
        };
        let st = CommitStats {
            messages,
            diagnostics: b.diagnostics.len() as u64,
        };
        inserted.insert(b.file_id, st);
    }
    Ok(inserted)
}

/// The rows a file holds from this batch on, counted in the table.
async fn recount(c: &mut Conn<'_>, b: &PreparedBatch) -> Result<u64, StoreError> {
    let q = Sql::new(
        "SELECT COUNT(*) FROM messages WHERE file_id = $1 AND generation = $2 \
         AND byte_start >= $3",
    )
    .arg(b.file_id)
    .arg(b.checkpoint.generation)
    .arg(b.expected.1 as i64);
    Ok(u64::try_from(c.fetch_i64(&q).await?).unwrap_or(0))
}

/// PostgreSQL: multi-row inserts; the rows inserted per accepted batch, in order (`None`:
/// not known per batch, to be counted in the table).
///
/// Each statement is built while the previous one runs: the server works on its own core, so
/// building the next one on this task overlaps it instead of following it (the writer is
/// ingest's critical path). The per-batch counts are the batch sizes unless the total shows a
/// skipped row, which a statement of many batches cannot place.
async fn write_multi_row(
    c: &mut Conn<'_>,
    accepted: &[&PreparedBatch],
    keep: &Keep,
    models: &HashMap<String, i64>,
    index_time: &mut std::time::Duration,
) -> Result<Vec<Option<u64>>, StoreError> {
    let backend = c.backend();
    let messages: Vec<(&PreparedBatch, &MessageRow)> = accepted
        .iter()
        .flat_map(|b| keep.messages(b).map(move |m| (*b, m)))
        .collect();
    let mut message_rows = 0;
    let chunks: Vec<_> = row_chunks(backend, &messages).collect();
    let mut next = chunks
        .first()
        .map(|ch| messages_insert(backend, ch, models));
    let mut rest = chunks.iter().skip(1);
    while let Some(q) = next.take() {
        let (done, built) = tokio::join!(c.execute(&q), async {
            rest.next().map(|ch| messages_insert(backend, ch, models))
        });
        message_rows += done?;
        next = built;
    }
    if backend == Backend::Postgres {
        let t = std::time::Instant::now();
        write_search_rows(c, &messages).await?;
        *index_time += t.elapsed();
    }
    let all = message_rows == messages.len() as u64;
    Ok(accepted
        .iter()
        .map(|b| all.then_some(keep.count(b)))
        .collect())
}

/// PostgreSQL: the vectors of the searchable messages among `messages` in `message_search`,
/// keyed as their rows (a row already there, from a message already stored, is kept).
async fn write_search_rows(
    c: &mut Conn<'_>,
    messages: &[(&PreparedBatch, &MessageRow)],
) -> Result<(), StoreError> {
    let backend = c.backend();
    let rows: Vec<(&PreparedBatch, &MessageRow, &str)> = messages
        .iter()
        .filter(|(_, m)| lexemes::searchable(m))
        .filter_map(|(b, m)| Some((*b, *m, m.text.as_deref()?)))
        .collect();
    for chunk in row_chunks(backend, &rows) {
        let mut q = Sql::new(
            "INSERT INTO message_search (file_id, generation, line_no, seq, ts, search_vec) ",
        );
        q.push_rows(backend, chunk, |row, (b, m, text)| {
            row.bind(b.file_id)
                .bind(b.checkpoint.generation)
                .bind(m.line_no as i64)
                .bind(i64::from(m.seq))
                .bind(m.ts.as_deref())
                .bind(tsvector_arg(&m.search_vec, Some(*text)));
        });
        q.push(" ON CONFLICT (file_id, generation, line_no, seq) DO NOTHING");
        c.execute(&q).await?;
    }
    Ok(())
}

/// One multi-row `INSERT` of message rows (see [`write_multi_row`]).
fn messages_insert<'a>(
    backend: Backend,
    chunk: &'a [(&'a PreparedBatch, &'a MessageRow)],
    models: &HashMap<String, i64>,
) -> Sql<'a> {
    let mut q = Sql::new(format!(
        "{}messages (file_id, generation, line_no, seq, byte_start, byte_end, \
     uuid, parent_uuid, kind, subtype, ts, is_sidechain, agent_id, \
     model_id, tool_names, is_error, text, is_meta) ",
        backend.insert_ignore(),
    ));
    q.push_rows(backend, chunk, |row, (b, m)| {
        row.bind(b.file_id)
            .bind(b.checkpoint.generation)
            .bind(m.line_no as i64)
            .bind(i64::from(m.seq))
            .bind(m.byte_start as i64)
            .bind(m.byte_end as i64)
            .bind(m.uuid.as_deref().map(uuid_bytes))
            .bind(m.parent_uuid.as_deref().map(uuid_bytes))
            .bind(m.kind.as_str())
            .bind(m.subtype.as_deref())
            .bind(m.ts.as_deref())
            .bind(m.is_sidechain)
            .bind(m.agent_id.as_deref())
            .bind(model_id(models, m))
            .bind(m.tool_names.as_deref())
            .bind(m.is_error)
            .bind(m.text.as_deref())
            .bind(m.is_meta);
    });
    q.push(&backend.on_conflict_ignore("file_id, generation, line_no, seq"));
    q
}

/// SQLite: single-row prepared statements on the writer's own handle, and the searchable text
/// in the full-text index; the rows inserted per accepted batch, and the time spent indexing.
///
/// A batch is indexed only when all of its rows were inserted: if one was ever skipped, which
/// row it was is unknown here, and indexing a row twice would show it twice in results.
fn write_direct(
    db: &rusqlite::Connection,
    accepted: &[&PreparedBatch],
    keep: &Keep,
    models: &HashMap<String, i64>,
) -> Result<(Vec<Option<u64>>, std::time::Duration), StoreError> {
    let mut insert = db.prepare_cached(INSERT_MESSAGE)?;
    let mut doc = db.prepare_cached(INSERT_DOC)?;
    let mut fts = db.prepare_cached(INSERT_FTS)?;
    let mut packer = super::packed_text::Packer::new();
    let mut next_id: i64 = db
        .prepare_cached("SELECT COALESCE(MAX(id), 0) FROM search_docs")?
        .query_row([], |r| r.get(0))?;
    let mut index = std::time::Duration::ZERO;
    let mut written = Vec::with_capacity(accepted.len());
    for b in accepted {
        let generation = b.checkpoint.generation;
        let mut rows = 0u64;
        for m in keep.messages(b) {
            let model = model_id(models, m);
            let text = m.text.as_deref().map(|t| packer.pack(t));
            rows += insert_message(&mut insert, b.file_id, generation, m, model, text)? as u64;
        }
        if rows == keep.count(b) {
            let t = std::time::Instant::now();
            for m in keep.messages(b).filter(|m| lexemes::searchable(m)) {
                let Some(text) = m.text.as_deref() else {
                    continue;
                };
                next_id += 1;
                doc.execute(rusqlite::params![
                    next_id,
                    b.file_id,
                    generation,
                    m.line_no as i64,
                    i64::from(m.seq),
                ])?;
                fts.execute(rusqlite::params![next_id, lexemes::fts_text(text).as_ref()])?;
            }
            index += t.elapsed();
        }
        written.push(Some(rows));
    }
    Ok((written, index))
}

fn insert_message(
    stmt: &mut rusqlite::Statement<'_>,
    file_id: i64,
    generation: i64,
    m: &MessageRow,
    model_id: Option<i64>,
    text: Option<super::packed_text::Stored<'_>>,
) -> Result<usize, rusqlite::Error> {
    let uuid = m.uuid.as_deref().map(uuid_stored);
    let parent = m.parent_uuid.as_deref().map(uuid_stored);
    stmt.execute(rusqlite::params![
        file_id,
        generation,
        m.line_no as i64,
        i64::from(m.seq),
        m.byte_start as i64,
        m.byte_end as i64,
        uuid.as_ref().map(StoredUuid::as_slice),
        parent.as_ref().map(StoredUuid::as_slice),
        m.kind.as_str(),
        m.subtype.as_deref(),
        m.ts.as_deref(),
        m.is_sidechain,
        m.agent_id.as_deref(),
        model_id,
        m.tool_names.as_deref(),
        m.is_error,
        text,
        m.is_meta,
    ])
}
