//! SQLite statements run through the connection's own `sqlite3` handle ([`Conn::Direct`]), on
//! the calling thread: the single writer's group transaction (`store::direct`). Its errors
//! are SQLite's own (`StoreError::Sqlite`).
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

impl<A, B, C, D, E> LiteRow for (A, B, C, D, E)
where
    A: rusqlite::types::FromSql,
    B: rusqlite::types::FromSql,
    C: rusqlite::types::FromSql,
    D: rusqlite::types::FromSql,
    E: rusqlite::types::FromSql,
{
    fn from_lite(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
    }
}

impl<A, B, C, D, E, F> LiteRow for (A, B, C, D, E, F)
where
    A: rusqlite::types::FromSql,
    B: rusqlite::types::FromSql,
    C: rusqlite::types::FromSql,
    D: rusqlite::types::FromSql,
    E: rusqlite::types::FromSql,
    F: rusqlite::types::FromSql,
{
    fn from_lite(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
            r.get(3)?,
            r.get(4)?,
            r.get(5)?,
        ))
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
pub(super) fn execute(db: &rusqlite::Connection, q: &Sql<'_>) -> rusqlite::Result<u64> {
    Ok(prepared(db, q)?.raw_execute()? as u64)
}

/// Every row of a query.
pub(super) fn fetch_all<T: LiteRow>(
    db: &rusqlite::Connection,
    q: &Sql<'_>,
) -> rusqlite::Result<Vec<T>> {
    let mut stmt = prepared(db, q)?;
    let mut rows = stmt.raw_query();
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        out.push(T::from_lite(r)?);
    }
    Ok(out)
}
