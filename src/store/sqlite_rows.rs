//! SQLite: the writer's group transaction, run on the writer's own thread through its own
//! connection's `sqlite3` handle (`lock_handle` + `rusqlite::Connection::from_handle`, kept
//! from group to group: [`Direct`]), with the message rows and their search documents bound
//! straight from the batch into single-row prepared statements.
//!
//! Why not sqlx here: these rows are most of what a backfill writes (233,662 of them for the
//! 1 GB bench tree), and through sqlx every statement of a group (about fifteen besides the
//! rows) was built as SQL text, its arguments copied and sent to the connection's worker
//! thread, and bound and stepped there: the writer chain ran on two threads taking turns, and
//! it is ingest's critical path. The other statements of the group are the same `Sql` texts
//! the PostgreSQL path runs (`commit::group_body` over `Conn::Direct`, see `store::lite`).
//!
//! The transaction is opened and committed here (`BEGIN IMMEDIATE` ... `COMMIT`) on the handle
//! sqlx lends while its worker is locked out; sqlx's own transaction count never changes, and
//! a failed group leaves a connection the caller drops (the next group opens another). Rows
//! and checkpoints still commit together, and the duplicate rule is the PostgreSQL path's
//! (`ON CONFLICT DO NOTHING` on the natural key).
#![allow(unsafe_code)]

use std::collections::{HashMap, HashSet};

use sqlx::SqliteConnection;

use super::commit::{group_body, model_id, CommitStats};
use super::sql::Conn;
use super::StoreError;
use crate::extract::lexemes;
use crate::extract::rows::{uuid_stored, MessageRow, PreparedBatch, StoredUuid};

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

/// Statements kept prepared on the writer's connection: the message, search and checkpoint
/// texts and every table's ladder of multi-row inserts (five sizes each), with room to spare.
const STATEMENTS: usize = 160;

/// The writer's own SQLite connection, kept from one group to the next with the statements
/// prepared on it.
///
/// Why kept: a group's multi-row texts (up to 500 rows of 19 columns, thousands of
/// placeholders) were parsed again in every group, about a tenth of the writer's time, because
/// the statements died with the `rusqlite::Connection` made for that group; and a pooled
/// connection also brought whichever page cache it had. Why its own (not pooled): sqlx closes a
/// handle with `sqlite3_close` and panics if a statement is still open on it, so the statements
/// must be finalized before the connection closes, which only an owner of both can promise.
pub(crate) struct Direct {
    /// Declared before `conn`, so dropped first: finalizes its statements (it never closes the
    /// handle, which is `conn`'s).
    db: rusqlite::Connection,
    conn: SqliteConnection,
}

impl std::fmt::Debug for Direct {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Direct")
    }
}

impl Direct {
    /// A new connection with the pool's options (pragmas included).
    pub(super) async fn open(pool: &sqlx::SqlitePool) -> Result<Direct, StoreError> {
        use sqlx::Connection;
        let opts = pool.connect_options();
        let mut conn = SqliteConnection::connect_with(&opts).await?;
        let raw = conn.lock_handle().await?.as_raw_handle();
        // SAFETY: the handle lives as long as `conn`, which `db` never outlives (field order);
        // `db` is only used while `conn`'s worker is locked out (`commit_group` holds
        // `lock_handle`), and nothing else ever runs on `conn`; a connection made with
        // `from_handle` does not own the handle and never closes it (dropping it finalizes the
        // statements it prepared).
        let db = unsafe { rusqlite::Connection::from_handle(raw.as_ptr()) }?;
        db.set_prepared_statement_cache_capacity(STATEMENTS);
        Ok(Direct { db, conn })
    }

    /// Finalize the statements, then close the connection.
    pub(super) async fn close(self) {
        use sqlx::Connection;
        let Direct { db, conn } = self;
        drop(db);
        let _ = conn.close().await;
    }
}

/// SQLite: the group in one transaction, run on the writer's own thread through its own
/// connection's handle (see the module doc and `store::lite`). The caller drops the connection
/// when this fails.
pub(super) async fn commit_group(
    direct: &mut Direct,
    batches: &[PreparedBatch],
    leaves: &mut HashSet<i64>,
    index_time: &mut std::time::Duration,
) -> Result<Vec<Result<CommitStats, StoreError>>, StoreError> {
    let t = std::time::Instant::now();
    let locked = direct.conn.lock_handle().await?;
    let lock_us = t.elapsed().as_micros() as u64;
    let db = &mut direct.db;
    // Immediate: the write lock is taken now, so ids read in the transaction (search
    // documents) cannot be taken by another writer before it commits.
    db.execute_batch("BEGIN IMMEDIATE")?;
    let r = now_or_never(group_body(
        &mut Conn::Direct(db),
        batches,
        leaves,
        index_time,
    ));
    let body_us = t.elapsed().as_micros() as u64 - lock_us;
    let r = match r {
        Ok(results) => db
            .execute_batch("COMMIT")
            .map(|()| results)
            .map_err(StoreError::from),
        Err(e) => Err(e),
    };
    if r.is_err() {
        // Best effort: the caller drops the connection, which rolls back what is left.
        let _ = db.execute_batch("ROLLBACK");
    }
    drop(locked);
    tracing::debug!(
        lock_us,
        body_us,
        total_us = t.elapsed().as_micros() as u64,
        "sqlite group"
    );
    r
}

/// Run a future that never waits (every statement of [`Conn::Direct`] runs on the spot) to
/// its end, here.
fn now_or_never<T>(
    f: impl std::future::Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match f.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(r) => r,
        std::task::Poll::Pending => Err(StoreError::Sqlx(sqlx::Error::Protocol(
            "a statement of the direct SQLite path waited".into(),
        ))),
    }
}

/// The message rows of the accepted batches and their searchable text in the full-text
/// index; what each file actually gained, and the time spent indexing.
///
/// A batch is indexed only when all of its rows were inserted: the checkpoint guard rules
/// duplicates out, but if one was ever skipped, which row it was is unknown here and indexing
/// a row twice would show it twice in results (the count is then recomputed from the table).
pub(super) fn write_rows(
    db: &rusqlite::Connection,
    accepted: &[&PreparedBatch],
    models: &HashMap<String, i64>,
) -> Result<(HashMap<i64, CommitStats>, std::time::Duration), StoreError> {
    let mut insert = db.prepare_cached(INSERT_MESSAGE)?;
    let mut doc = db.prepare_cached(INSERT_DOC)?;
    let mut fts = db.prepare_cached(INSERT_FTS)?;
    let mut next_id: i64 = db
        .prepare_cached("SELECT COALESCE(MAX(id), 0) FROM search_docs")?
        .query_row([], |r| r.get(0))?;
    let mut index = std::time::Duration::ZERO;
    let mut inserted = HashMap::with_capacity(accepted.len());
    for b in accepted {
        let generation = b.checkpoint.generation;
        let mut rows = 0u64;
        for m in &b.messages {
            let model = model_id(models, m);
            rows += insert_message(&mut insert, b.file_id, generation, m, model)? as u64;
        }
        if rows == b.messages.len() as u64 {
            let t = std::time::Instant::now();
            for m in b.messages.iter().filter(|m| lexemes::searchable(m)) {
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
                fts.execute(rusqlite::params![next_id, text])?;
            }
            index += t.elapsed();
        } else {
            tracing::error!(
                file_id = b.file_id,
                expected = b.messages.len(),
                inserted = rows,
                "duplicate message rows skipped despite the checkpoint guard; batch not indexed"
            );
            rows = db.query_row(
                "SELECT COUNT(*) FROM messages WHERE file_id = ?1 AND generation = ?2 \
                 AND byte_start >= ?3",
                rusqlite::params![b.file_id, generation, b.expected.1 as i64],
                |r| r.get::<_, i64>(0),
            )? as u64;
        }
        let st = CommitStats {
            messages: rows,
            diagnostics: b.diagnostics.len() as u64,
        };
        inserted.insert(b.file_id, st);
    }
    Ok((inserted, index))
}

fn insert_message(
    stmt: &mut rusqlite::Statement<'_>,
    file_id: i64,
    generation: i64,
    m: &MessageRow,
    model_id: Option<i64>,
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
        m.text.as_deref(),
        m.is_meta,
    ])
}
