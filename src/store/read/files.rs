//! The files a machine tracks, with their checkpoints.

use serde::Serialize;

use super::super::sql::Sql;
use super::super::{Store, StoreError};

/// One file as `gleaner files` shows it.
#[derive(Debug, Clone, sqlx::FromRow, Serialize)]
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

impl Store {
    /// Files of one machine, ordered by path.
    pub async fn list_files(&self, machine: &str) -> Result<Vec<FileListing>, StoreError> {
        let q = Sql::new(
            "SELECT path, session_id, agent_id, size, byte_offset, lines, diagnostics, \
             generation, state FROM files WHERE machine = $1 ORDER BY path",
        )
        .arg(machine);
        self.fetch_all(&q).await
    }
}
