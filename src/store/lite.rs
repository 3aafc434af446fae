//! SQLite statements run through the connection's own `sqlite3` handle ([`Conn::Direct`]), on
//! the calling thread: the single writer's group transaction (`sqlite_rows`).
//!
//! Why: through sqlx every statement is sent to the connection's worker thread with its
//! arguments copied, and the writer waits for the answer; a group ran about fifteen such round
//! trips besides its rows, the two threads taking turns on what is ingest's critical path. The
//! same [`Sql`] texts and [`Arg`]s run here: one dialect, one set of statements.
//!
//! [`Conn::Direct`]: super::sql::Conn::Direct

use super::sql::{Arg, Sql};

/// A row the direct path can read back: the few shapes the write path fetches (ids and keys),
/// as tuples of plain columns.
pub(crate) trait LiteRow: Sized {
    /// Decode one row.
    fn from_lite(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self>;
}

impl<A: rusqlite::types::FromSql> LiteRow for (A,) {
    fn from_lite(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok((r.get(0)?,))
    }
}
impl<A: rusqlite::types::FromSql, B: rusqlite::types::FromSql> LiteRow for (A, B) {
    fn from_lite(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok((r.get(0)?, r.get(1)?))
    }
}
impl<A, B, C> LiteRow for (A, B, C)
where
    A: rusqlite::types::FromSql,
    B: rusqlite::types::FromSql,
    C: rusqlite::types::FromSql,
{
    fn from_lite(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    }
}
impl<A, B, C, D> LiteRow for (A, B, C, D)
where
    A: rusqlite::types::FromSql,
    B: rusqlite::types::FromSql,
    C: rusqlite::types::FromSql,
    D: rusqlite::types::FromSql,
{
    fn from_lite(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
    }
}

/// Prepare `q` (kept for the rest of the group: ladder chunks repeat a few texts) and bind its
/// arguments. A hand-numbered placeholder (`$3`) takes that argument, as sqlx binds it; a
/// plain `?` the next one.
fn prepared<'c>(
    db: &'c rusqlite::Connection,
    q: &Sql<'_>,
) -> rusqlite::Result<rusqlite::CachedStatement<'c>> {
    let mut stmt = db.prepare_cached(q.lite_text())?;
    let args = q.arg_list();
    // Only a hand-numbered text needs its names read: a built one (multi-row inserts, up to
    // thousands of placeholders on the writer's path) binds in order.
    let by_name = q.hand_numbered();
    for k in 1..=stmt.parameter_count() {
        let at = by_name
            .then(|| stmt.parameter_name(k))
            .flatten()
            .and_then(|n| n.strip_prefix('$').or_else(|| n.strip_prefix('?')))
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(k);
        let missing = || rusqlite::Error::InvalidParameterCount(at, args.len());
        match args.get(at - 1).ok_or_else(missing)? {
            Arg::Int(v) => stmt.raw_bind_parameter(k, v)?,
            Arg::Real(v) => stmt.raw_bind_parameter(k, v)?,
            Arg::Bool(v) => stmt.raw_bind_parameter(k, v)?,
            Arg::Text(v) => stmt.raw_bind_parameter(k, v.as_deref())?,
            Arg::Bytes(v) => stmt.raw_bind_parameter(k, v.as_deref())?,
            Arg::TextArray(_) | Arg::TsVector(_) | Arg::Column(_) => {
                return Err(rusqlite::Error::ToSqlConversionFailure(
                    "SQLite has no array or tsvector type".into(),
                ))
            }
        }
    }
    Ok(stmt)
}

/// Run a statement; the rows it changed.
pub(super) fn execute(db: &rusqlite::Connection, q: &Sql<'_>) -> Result<u64, sqlx::Error> {
    let run = || prepared(db, q)?.raw_execute();
    run().map(|n| n as u64).map_err(into_sqlx)
}

/// Every row of a query.
pub(super) fn fetch_all<T: LiteRow>(
    db: &rusqlite::Connection,
    q: &Sql<'_>,
) -> Result<Vec<T>, sqlx::Error> {
    let run = || {
        let mut stmt = prepared(db, q)?;
        let mut rows = stmt.raw_query();
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            out.push(T::from_lite(r)?);
        }
        Ok(out)
    };
    run().map_err(into_sqlx)
}

/// A SQLite error of the direct path as the database error sqlx would have reported.
pub(super) fn into_sqlx(e: rusqlite::Error) -> sqlx::Error {
    sqlx::Error::Database(Box::new(DirectError {
        message: e.to_string(),
        source: e,
    }))
}

#[derive(Debug)]
struct DirectError {
    message: String,
    source: rusqlite::Error,
}

impl std::fmt::Display for DirectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DirectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

impl sqlx::error::DatabaseError for DirectError {
    fn message(&self) -> &str {
        &self.message
    }
    fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        self
    }
    fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
        self
    }
    fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
        self
    }
    fn kind(&self) -> sqlx::error::ErrorKind {
        sqlx::error::ErrorKind::Other
    }
}
