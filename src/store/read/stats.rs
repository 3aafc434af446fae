//! Figures over the whole store: row counts and the projects with their sessions.

use serde::Serialize;

use super::super::sql::Backend;
use super::super::sql::Sql;
use super::super::{Store, StoreError};

/// Row counts of the main tables (used by tests and `ingest` summaries).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, sqlx::FromRow, Serialize)]
pub struct TableCounts {
    /// Files.
    pub files: i64,
    /// Sessions.
    pub sessions: i64,
    /// Messages.
    pub messages: i64,
    /// Diagnostics.
    pub diagnostics: i64,
    /// Summaries of all kinds.
    pub summaries: i64,
    /// Feedback items.
    pub feedback: i64,
}

/// Totals for the home page: `sessions` exact up to [`SESSIONS_COUNTED`], the others estimated
/// (see `Store::totals`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Totals {
    /// Sessions.
    pub sessions: i64,
    /// Whether `sessions` is exact (else estimated, as the others).
    pub sessions_exact: bool,
    /// Messages.
    pub messages: i64,
    /// Summaries of all kinds.
    pub summaries: i64,
    /// Feedback items.
    pub feedback: i64,
    /// Episodes.
    pub episodes: i64,
    /// Snippets.
    pub snippets: i64,
}

/// Sessions the home page counts exactly; beyond, it estimates (a count reads every row, so
/// its cost would grow with the store).
pub const SESSIONS_COUNTED: i64 = 10_000;

impl Store {
    /// Row counts of the main tables, exact (tests and `ingest` summaries: it counts every
    /// row).
    pub async fn counts(&self) -> Result<TableCounts, StoreError> {
        let q = Sql::new(
            "SELECT (SELECT COUNT(*) FROM files) AS files, \
             (SELECT COUNT(*) FROM sessions) AS sessions, \
             (SELECT COUNT(*) FROM messages) AS messages, \
             (SELECT COUNT(*) FROM diagnostics) AS diagnostics, \
             (SELECT COUNT(*) FROM summaries) AS summaries, \
             (SELECT COUNT(*) FROM feedback) AS feedback",
        );
        let row: Option<TableCounts> = self.fetch_optional(&q).await?;
        Ok(row.unwrap_or_default())
    }

    /// Totals for the home page: sessions counted up to [`SESSIONS_COUNTED`], the large
    /// tables (and more sessions) estimated, so that the page costs the same on any size of
    /// store. SQLite: the largest row id (rows are rarely deleted); PostgreSQL: the
    /// statistics' live-row count (updated as rows are written).
    pub async fn totals(&self) -> Result<Totals, StoreError> {
        let estimate = |t: &str| match self.backend() {
            Backend::Sqlite => Sql::new(format!("SELECT COALESCE(MAX(rowid), 0) FROM {t}")),
            Backend::Postgres => Sql::new(
                "SELECT COALESCE(MAX(n_live_tup), 0) FROM pg_stat_user_tables \
                 WHERE relname = $1 AND schemaname = current_schema()",
            )
            .arg(t.to_string()),
        };
        let counted = self
            .fetch_i64(
                &Sql::new("SELECT COUNT(*) FROM (SELECT 1 FROM sessions LIMIT $1) t")
                    .arg(SESSIONS_COUNTED + 1),
            )
            .await?;
        let sessions_exact = counted <= SESSIONS_COUNTED;
        let sessions = if sessions_exact {
            counted
        } else {
            self.fetch_i64(&estimate("sessions")).await?.max(counted)
        };
        Ok(Totals {
            sessions,
            sessions_exact,
            messages: self.fetch_i64(&estimate("messages")).await?,
            summaries: self.fetch_i64(&estimate("summaries")).await?,
            feedback: self.fetch_i64(&estimate("feedback")).await?,
            episodes: self.fetch_i64(&estimate("episodes")).await?,
            snippets: self.fetch_i64(&estimate("snippets")).await?,
        })
    }

    /// The projects sessions belong to, by name (at most 200: the filters' choices). A loose
    /// index scan (one index probe per project), so its cost follows the number of projects,
    /// not of sessions.
    pub async fn projects(&self) -> Result<Vec<String>, StoreError> {
        let q = Sql::new(
            "WITH RECURSIVE p(project) AS ( \
               SELECT MIN(project) FROM sessions \
               UNION ALL \
               SELECT (SELECT MIN(s.project) FROM sessions s WHERE s.project > p.project) \
               FROM p WHERE p.project IS NOT NULL) \
             SELECT project FROM p WHERE project IS NOT NULL LIMIT 200",
        );
        let rows: Vec<(String,)> = self.fetch_all(&q).await?;
        Ok(rows.into_iter().map(|(p,)| p).collect())
    }
}
