//! Read-side queries shared by the CLI (and later the MCP server): plain structs, no printing.

use super::{with_pool, Store, StoreError};

/// One file as `gleaner files` shows it.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct FileListing {
    /// Absolute path.
    pub path: String,
    /// Session id.
    pub session_id: Option<String>,
    /// Sub-agent id.
    pub agent_id: Option<String>,
    /// Size at the last commit.
    pub size: i64,
    /// Index just past the last complete line.
    #[sqlx(rename = "byte_offset")]
    pub offset: i64,
    /// Number of `\n` before `offset`.
    pub lines: i64,
    /// Diagnostics recorded.
    pub diagnostics: i64,
    /// Generation (+1 per truncation or rewrite).
    pub generation: i64,
    /// `active` or `gone`.
    pub state: String,
}

/// One session as `gleaner sessions` shows it.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct SessionListing {
    /// Session UUID.
    pub session_id: String,
    /// Project folder.
    pub project: String,
    /// Working directory.
    pub cwd: Option<String>,
    /// Git branch.
    pub git_branch: Option<String>,
    /// Claude Code version.
    pub version: Option<String>,
    /// First line of the first real prompt.
    pub title: Option<String>,
    /// First timestamp.
    pub started_at: Option<String>,
    /// Last timestamp.
    pub last_activity_at: Option<String>,
    /// Files of the session (main and sub-agents).
    pub files: i64,
    /// Lines committed across those files.
    pub lines: i64,
    /// Message rows.
    pub messages: i64,
}

/// Row counts of the main tables (used by tests and `ingest` summaries).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, sqlx::FromRow, serde::Serialize)]
pub struct TableCounts {
    /// Files.
    pub files: i64,
    /// Sessions.
    pub sessions: i64,
    /// Messages.
    pub messages: i64,
    /// Diagnostics.
    pub diagnostics: i64,
}

impl Store {
    /// Files of one machine, ordered by path.
    pub async fn list_files(&self, machine: &str) -> Result<Vec<FileListing>, StoreError> {
        let sql = "SELECT path, session_id, agent_id, size, byte_offset, lines, diagnostics, \
                   generation, state FROM files WHERE machine = $1 ORDER BY path";
        Ok(
            with_pool!(self, pool => sqlx::query_as::<_, FileListing>(sql)
            .bind(machine)
            .fetch_all(pool)
            .await?),
        )
    }

    /// Sessions, most recent activity first.
    pub async fn list_sessions(&self) -> Result<Vec<SessionListing>, StoreError> {
        let sql = "SELECT s.session_id, s.project, s.cwd, s.git_branch, s.version, s.title, \
                   s.started_at, s.last_activity_at, \
                   COALESCE(f.files, 0) AS files, COALESCE(f.lines, 0) AS lines, \
                   s.message_count AS messages \
                   FROM sessions s LEFT JOIN (SELECT session_id, COUNT(*) AS files, \
                   CAST(SUM(lines) AS BIGINT) AS lines FROM files GROUP BY session_id) f \
                   ON f.session_id = s.session_id \
                   ORDER BY s.last_activity_at DESC, s.session_id";
        Ok(
            with_pool!(self, pool => sqlx::query_as::<_, SessionListing>(sql)
            .fetch_all(pool)
            .await?),
        )
    }

    /// Row counts of the main tables.
    pub async fn counts(&self) -> Result<TableCounts, StoreError> {
        let sql = "SELECT (SELECT COUNT(*) FROM files) AS files, \
                   (SELECT COUNT(*) FROM sessions) AS sessions, \
                   (SELECT COUNT(*) FROM messages) AS messages, \
                   (SELECT COUNT(*) FROM diagnostics) AS diagnostics";
        Ok(
            with_pool!(self, pool => sqlx::query_as::<_, TableCounts>(sql)
            .fetch_one(pool)
            .await?),
        )
    }
}
