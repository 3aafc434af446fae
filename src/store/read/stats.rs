//! Figures over the whole store: row counts and the projects with their sessions.

use serde::Serialize;

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

/// Totals for the home page.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Totals {
    /// Sessions.
    pub sessions: i64,
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

impl Store {
    /// Row counts of the main tables.
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
    /// Totals for the home page.
    pub async fn totals(&self) -> Result<Totals, StoreError> {
        let n = |t: &str| Sql::new(format!("SELECT COUNT(*) FROM {t}"));
        Ok(Totals {
            sessions: self.fetch_i64(&n("sessions")).await?,
            messages: self.fetch_i64(&n("messages")).await?,
            summaries: self.fetch_i64(&n("summaries")).await?,
            feedback: self.fetch_i64(&n("feedback")).await?,
            episodes: self.fetch_i64(&n("episodes")).await?,
            snippets: self.fetch_i64(&n("snippets")).await?,
        })
    }

    /// Projects with their session counts, most sessions first (the filter's choices).
    pub async fn projects(&self) -> Result<Vec<(String, i64)>, StoreError> {
        let q = Sql::new(
            "SELECT project, COUNT(*) AS n FROM sessions GROUP BY project ORDER BY n DESC, project \
             LIMIT 200",
        );
        self.fetch_all(&q).await
    }
}
