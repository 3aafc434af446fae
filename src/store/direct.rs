//! SQLite: the writer's own connection ([`Direct`]), whose `sqlite3` handle the writer drives
//! itself, on its own thread, for the group transaction ([`DirectTx`]): `BEGIN IMMEDIATE`, the
//! group's statements through [`Conn::Direct`] (`store::lite`), `COMMIT`.
//!
//! Why not sqlx here: a group's rows are most of what a backfill writes, and through sqlx every
//! statement was built as SQL text, its arguments copied and sent to the connection's worker
//! thread, and bound and stepped there: the writer chain ran on two threads taking turns, and
//! it is ingest's critical path. The statements are the same `Sql` texts the PostgreSQL path
//! runs (`commit::group_body`), except the message rows (`store::messages`).
//!
//! The transaction is opened and committed here on the handle sqlx lends while its worker is
//! locked out; sqlx's own transaction count never changes, and a failed group leaves a
//! connection the caller drops (the next group opens another). Rows and checkpoints still
//! commit together, and the duplicate rule is the PostgreSQL path's (`ON CONFLICT DO NOTHING`
//! on the natural key).
#![allow(unsafe_code)]

use sqlx::SqliteConnection;

use super::sql::Conn;
use super::StoreError;

/// Statements kept prepared on the writer's connection: the message, search and checkpoint
/// texts and every table's ladder of multi-row inserts (five sizes each), with room to spare.
const STATEMENTS: usize = 160;

/// Register Gleaner's SQL functions on a pooled connection (`SqlitePoolOptions::after_connect`):
/// `gleaner_fts(text)`, the text the full-text index holds (`extract::lexemes::fts_text`;
/// migration 0026; a message's frame is read as its text), and `gleaner_text(value)`, a
/// message's text whether stored plain or as a frame (`store::packed_text`). Every connection
/// needs them: the index's content view and triggers call `gleaner_fts`, readers
/// `gleaner_text`.
pub(super) async fn register_functions(conn: &mut SqliteConnection) -> Result<(), sqlx::Error> {
    let mut handle = conn.lock_handle().await?;
    let raw = handle.as_raw_handle();
    // SAFETY: the handle is valid while `conn` lives, and sqlx's worker is locked out while
    // `handle` is held (until the end of this function), so nothing else runs on it; a
    // connection made with `from_handle` does not own the handle and never closes it.
    let db = unsafe { rusqlite::Connection::from_handle(raw.as_ptr()) }
        .map_err(|e| sqlx::Error::Protocol(e.to_string()))?;
    let added = add_functions(&db).map_err(|e| sqlx::Error::Protocol(e.to_string()));
    drop(db);
    drop(handle);
    added
}

/// `gleaner_fts(text)` and `gleaner_text(value)` on `db` (see [`register_functions`]).
fn add_functions(db: &rusqlite::Connection) -> rusqlite::Result<()> {
    use rusqlite::functions::FunctionFlags;
    use rusqlite::types::{Value, ValueRef};
    let flags = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC;
    let unpack = |frame: &[u8]| {
        super::packed_text::unpack(frame)
            .map_err(|e| rusqlite::Error::UserFunctionError(Box::new(e)))
    };
    // The search index's content view passes a message's stored value, which may be a frame
    // (`store::packed_text`): the index holds the text's words either way.
    db.create_scalar_function("gleaner_fts", 1, flags, move |ctx| {
        let text: Option<String> = match ctx.get_raw(0) {
            ValueRef::Blob(frame) => Some(String::from_utf8_lossy(&unpack(frame)?).into_owned()),
            _ => ctx.get(0)?,
        };
        Ok(text.map(|t| crate::extract::lexemes::fts_text(&t).into_owned()))
    })?;
    // A frame becomes its text; any other value is returned as it is (plain text, NULL).
    db.create_scalar_function("gleaner_text", 1, flags, move |ctx| {
        Ok(match ctx.get_raw(0) {
            ValueRef::Blob(frame) => match String::from_utf8(unpack(frame)?) {
                Ok(text) => Value::Text(text),
                Err(e) => Value::Blob(e.into_bytes()),
            },
            other => Value::from(other),
        })
    })
}

/// The writer's own SQLite connection, kept from one group to the next with the statements
/// prepared on it.
///
/// Why kept: a group's multi-row texts (up to 500 rows of 19 columns, thousands of
/// placeholders) were parsed again in every group, because the statements died with the
/// `rusqlite::Connection` made for that group; and a pooled connection also brought whichever
/// page cache it had. Why its own (not pooled): sqlx closes a handle with `sqlite3_close` and
/// panics if a statement is still open on it, so the statements must be finalized before the
/// connection closes, which only an owner of both can promise.
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
        // `db` is only used while `conn`'s worker is locked out (`DirectTx` holds
        // `lock_handle`), and nothing else ever runs on `conn`; a connection made with
        // `from_handle` does not own the handle and never closes it (dropping it finalizes the
        // statements it prepared).
        let db = unsafe { rusqlite::Connection::from_handle(raw.as_ptr()) }?;
        add_functions(&db)?;
        db.set_prepared_statement_cache_capacity(STATEMENTS);
        // The pool's connections keep a small cache; the writer's walks the same index pages
        // group after group.
        db.execute_batch(&format!(
            "PRAGMA cache_size = -{}",
            super::open::WRITER_CACHE_KIB
        ))?;
        Ok(Direct { db, conn })
    }

    /// Finalize the statements, then close the connection.
    pub(super) async fn close(self) {
        use sqlx::Connection;
        let Direct { db, conn } = self;
        drop(db);
        let _ = conn.close().await;
    }

    /// Lock sqlx's worker out and begin the write transaction (`IMMEDIATE`: the write lock is
    /// taken now, so ids read in the transaction, the search documents', cannot be taken by
    /// another writer before it commits).
    pub(super) async fn begin(&mut self) -> Result<DirectTx<'_>, StoreError> {
        let Direct { db, conn } = self;
        let lock = conn.lock_handle().await?;
        db.execute_batch("BEGIN IMMEDIATE")?;
        Ok(DirectTx {
            db,
            _lock: lock,
            open: true,
        })
    }
}

/// An open write transaction on [`Direct`]: committed by [`DirectTx::commit`], rolled back
/// when dropped without it (best effort: the caller drops the connection after a failure).
pub(super) struct DirectTx<'a> {
    db: &'a mut rusqlite::Connection,
    _lock: sqlx::sqlite::LockedSqliteHandle<'a>,
    open: bool,
}

impl DirectTx<'_> {
    /// The connection the group's statements run on.
    pub(super) fn conn(&mut self) -> Conn<'_> {
        Conn::Direct(self.db)
    }

    /// Commit.
    pub(super) fn commit(mut self) -> Result<(), StoreError> {
        self.db.execute_batch("COMMIT")?;
        self.open = false;
        Ok(())
    }
}

impl Drop for DirectTx<'_> {
    fn drop(&mut self) {
        if self.open {
            let _ = self.db.execute_batch("ROLLBACK");
        }
    }
}

/// Run to its end, here, a future that never waits: every statement of [`Conn::Direct`] runs
/// on the spot, so the group's body is polled once. A body that does wait is a bug, reported
/// as [`StoreError::Unsupported`].
pub(super) fn run_now<T>(
    f: impl std::future::Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match f.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(r) => r,
        std::task::Poll::Pending => Err(StoreError::Unsupported(
            "a statement of the direct SQLite path waited",
        )),
    }
}
