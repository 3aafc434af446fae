//! Where a [`Sql`] runs: a connection of either backend ([`Conn`]: pooled, inside a
//! transaction, or the SQLite writer's own handle), an open transaction ([`Tx`]) and a
//! connection held between transactions ([`Pooled`]). The one place that matches on the backend
//! to execute a statement and decode its rows (see `store::sql` for why).

use sqlx::postgres::{PgConnection, PgRow};
use sqlx::sqlite::{SqliteConnection, SqliteRow};
use sqlx::{FromRow, PgPool, Postgres, Sqlite, SqlitePool};

use super::sql::{Backend, Sql};
use super::StoreError;

/// A row type both backends can decode (every `#[derive(sqlx::FromRow)]` struct and tuple of
/// plain columns is one).
pub(crate) trait Record:
    for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow> + Send + Unpin
{
}
impl<T> Record for T where
    T: for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow> + Send + Unpin
{
}

/// A connection of either backend: a pooled one or the one inside a transaction.
pub(crate) enum Conn<'c> {
    /// SQLite.
    Sqlite(&'c mut SqliteConnection),
    /// PostgreSQL.
    Postgres(&'c mut PgConnection),
    /// SQLite through the connection's own handle, on the calling thread: the writer's group
    /// transaction (`store::lite`). Its futures never wait; it reads rows back with
    /// [`Conn::fetch_rows`] only.
    Direct(&'c mut rusqlite::Connection),
}

impl Conn<'_> {
    /// Which backend this is.
    pub(crate) fn backend(&self) -> Backend {
        match self {
            Conn::Sqlite(_) | Conn::Direct(_) => Backend::Sqlite,
            Conn::Postgres(_) => Backend::Postgres,
        }
    }

    /// Run a statement; the number of rows it changed.
    pub(crate) async fn execute(&mut self, q: &Sql<'_>) -> Result<u64, StoreError> {
        Ok(match self {
            Conn::Sqlite(c) => sqlx::query_with(&q.lite, q.sqlite_args()?)
                .persistent(q.persistent)
                .execute(&mut **c)
                .await?
                .rows_affected(),
            Conn::Postgres(c) => sqlx::query_with(&q.pg, q.pg_args()?)
                .persistent(q.persistent)
                .execute(&mut **c)
                .await?
                .rows_affected(),
            Conn::Direct(db) => super::lite::execute(db, q)?,
        })
    }

    /// Every row of a query whose rows are plain tuples: the reads of the write path, which
    /// also runs on [`Conn::Direct`].
    pub(crate) async fn fetch_rows<T: Record + super::lite::LiteRow>(
        &mut self,
        q: &Sql<'_>,
    ) -> Result<Vec<T>, StoreError> {
        match self {
            Conn::Direct(db) => Ok(super::lite::fetch_all(db, q)?),
            _ => self.fetch_all(q).await,
        }
    }

    /// Every row of a query.
    pub(crate) async fn fetch_all<T: Record>(&mut self, q: &Sql<'_>) -> Result<Vec<T>, StoreError> {
        Ok(match self {
            Conn::Sqlite(c) => {
                sqlx::query_as_with::<Sqlite, T, _>(&q.lite, q.sqlite_args()?)
                    .persistent(q.persistent)
                    .fetch_all(&mut **c)
                    .await?
            }
            Conn::Postgres(c) => {
                sqlx::query_as_with::<Postgres, T, _>(&q.pg, q.pg_args()?)
                    .persistent(q.persistent)
                    .fetch_all(&mut **c)
                    .await?
            }
            Conn::Direct(_) => {
                return Err(StoreError::Unsupported(
                    "the direct SQLite path reads tuples only (Conn::fetch_rows)",
                ))
            }
        })
    }

    /// The row of a query that returns at most one (a lookup by key, an aggregate).
    pub(crate) async fn fetch_optional<T: Record>(
        &mut self,
        q: &Sql<'_>,
    ) -> Result<Option<T>, StoreError> {
        Ok(self.fetch_all(q).await?.into_iter().next())
    }

    /// The single value of a one-row, one-column query (a count).
    pub(crate) async fn fetch_i64(&mut self, q: &Sql<'_>) -> Result<i64, StoreError> {
        let row = self.fetch_rows::<(i64,)>(q).await?.into_iter().next();
        row.map(|(n,)| n)
            .ok_or(StoreError::Unsupported("a one-value query returned no row"))
    }
}

/// An open transaction of either backend.
pub(crate) enum Tx<'c> {
    /// SQLite.
    Sqlite(sqlx::Transaction<'c, Sqlite>),
    /// PostgreSQL.
    Postgres(sqlx::Transaction<'c, Postgres>),
}

impl Tx<'_> {
    /// The transaction's connection, to run statements in it.
    pub(crate) fn conn(&mut self) -> Conn<'_> {
        match self {
            Tx::Sqlite(t) => Conn::Sqlite(t),
            Tx::Postgres(t) => Conn::Postgres(t),
        }
    }

    /// Commit.
    pub(crate) async fn commit(self) -> Result<(), sqlx::Error> {
        match self {
            Tx::Sqlite(t) => t.commit().await,
            Tx::Postgres(t) => t.commit().await,
        }
    }
}

/// A connection checked out of either pool.
pub(crate) enum Pooled {
    /// SQLite.
    Sqlite(sqlx::pool::PoolConnection<Sqlite>),
    /// PostgreSQL.
    Postgres(sqlx::pool::PoolConnection<Postgres>),
}

impl Pooled {
    /// Check a connection out.
    pub(crate) async fn acquire_sqlite(p: &SqlitePool) -> Result<Pooled, sqlx::Error> {
        Ok(Pooled::Sqlite(p.acquire().await?))
    }

    /// Check a connection out.
    pub(crate) async fn acquire_pg(p: &PgPool) -> Result<Pooled, sqlx::Error> {
        Ok(Pooled::Postgres(p.acquire().await?))
    }

    /// The connection, to run statements on.
    pub(crate) fn conn(&mut self) -> Conn<'_> {
        match self {
            Pooled::Sqlite(c) => Conn::Sqlite(c),
            Pooled::Postgres(c) => Conn::Postgres(c),
        }
    }

    /// Begin a transaction on this connection.
    pub(crate) async fn begin(&mut self) -> Result<Tx<'_>, sqlx::Error> {
        use sqlx::Connection;
        Ok(match self {
            Pooled::Sqlite(c) => Tx::Sqlite(c.begin().await?),
            Pooled::Postgres(c) => Tx::Postgres(c.begin().await?),
        })
    }

    /// Close the connection instead of returning it to the pool.
    pub(crate) async fn close(self) {
        let _ = match self {
            Pooled::Sqlite(c) => c.close().await,
            Pooled::Postgres(c) => c.close().await,
        };
    }
}
