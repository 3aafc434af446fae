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

/// How many rows a table holds: exact, or (past [`ROWS_COUNTED`]) estimated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Figure {
    /// The number.
    pub n: i64,
    /// Whether it is exact (else an estimate, which the page says).
    pub exact: bool,
}

/// Totals for the home page (see `Store::totals`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Totals {
    /// Sessions.
    pub sessions: Figure,
    /// Messages.
    pub messages: Figure,
    /// Summaries of all kinds.
    pub summaries: Figure,
    /// Feedback items.
    pub feedback: Figure,
    /// Episodes.
    pub episodes: Figure,
    /// Snippets.
    pub snippets: Figure,
}

/// Rows counted exactly; beyond, a table's rows are estimated (a count reads every row, so its
/// cost would grow with the store).
pub const ROWS_COUNTED: i64 = 20_000;

/// SQLite's estimate counts the rows of this many windows of row ids ...
const SAMPLE_WINDOWS: i64 = 16;
/// ... of this many ids each (16,384 rows read at most: a few milliseconds).
const SAMPLE_IDS: i64 = 1_024;

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

    /// Totals for the home page: each table's rows counted up to [`ROWS_COUNTED`], estimated
    /// beyond, so that the page costs the same on any size of store and never shows a number
    /// rows that are gone (a prune, a re-extraction) still count in. SQLite: the density of
    /// live rows in evenly spaced windows of row ids, times the span of ids (deleted rows
    /// leave gaps, which the windows see); PostgreSQL: the statistics' live-row count (updated
    /// as rows are written and deleted).
    pub async fn totals(&self) -> Result<Totals, StoreError> {
        Ok(Totals {
            sessions: self.table_rows("sessions").await?,
            messages: self.table_rows("messages").await?,
            summaries: self.table_rows("summaries").await?,
            feedback: self.table_rows("feedback").await?,
            episodes: self.table_rows("episodes").await?,
            snippets: self.table_rows("snippets").await?,
        })
    }

    /// The rows of table `t` (one of the store's own names, never a caller's text).
    async fn table_rows(&self, t: &str) -> Result<Figure, StoreError> {
        let counted = self
            .fetch_i64(
                &Sql::new(format!(
                    "SELECT COUNT(*) FROM (SELECT 1 FROM {t} LIMIT $1) c"
                ))
                .arg(ROWS_COUNTED + 1),
            )
            .await?;
        if counted <= ROWS_COUNTED {
            return Ok(Figure {
                n: counted,
                exact: true,
            });
        }
        let estimate = match self.backend() {
            Backend::Sqlite => {
                let (lo, hi): (Option<i64>, Option<i64>) = self
                    .fetch_optional(&Sql::new(format!("SELECT MIN(rowid), MAX(rowid) FROM {t}")))
                    .await?
                    .unwrap_or((None, None));
                let (lo, hi) = (lo.unwrap_or(0), hi.unwrap_or(0));
                let span = (hi - lo + 1).max(1);
                let step = (span / SAMPLE_WINDOWS).max(SAMPLE_IDS);
                let (mut seen, mut looked) = (0i64, 0i64);
                let mut at = lo;
                while at <= hi {
                    let w = SAMPLE_IDS.min(hi - at + 1);
                    seen += self
                        .fetch_i64(
                            &Sql::new(format!(
                                "SELECT COUNT(*) FROM {t} WHERE rowid >= $1 AND rowid < $2"
                            ))
                            .arg(at)
                            .arg(at + w),
                        )
                        .await?;
                    looked += w;
                    at += step;
                }
                (seen as f64 / looked.max(1) as f64 * span as f64).round() as i64
            }
            Backend::Postgres => {
                self.fetch_i64(
                    &Sql::new(
                        "SELECT COALESCE(MAX(n_live_tup), 0) FROM pg_stat_user_tables \
                         WHERE relname = $1 AND schemaname = current_schema()",
                    )
                    .arg(t.to_string()),
                )
                .await?
            }
        };
        Ok(Figure {
            n: estimate.max(counted),
            exact: false,
        })
    }

    /// Whether any session belongs to project folder `project`.
    pub async fn has_project(&self, project: &str) -> Result<bool, StoreError> {
        let q = Sql::new("SELECT CAST(1 AS BIGINT) FROM sessions WHERE project = $1 LIMIT 1")
            .arg(project);
        Ok(self.fetch_optional::<(i64,)>(&q).await?.is_some())
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
