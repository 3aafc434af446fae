//! The files a machine tracks, with their checkpoints.

use serde::Serialize;

use super::super::sql::Sql;
use super::super::{Page, Paged, Store, StoreError};

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
    /// `active` or `gone` (`gleaner files` also shows `unreadable`: a file it cannot open).
    pub state: String,
}

impl Store {
    /// One page of the files of one machine, by path.
    pub async fn files(&self, machine: &str, page: Page) -> Result<Paged<FileListing>, StoreError> {
        let q = Sql::new(
            "SELECT path, session_id, agent_id, size, byte_offset, lines, diagnostics, \
             generation, state FROM files WHERE machine = $1 ORDER BY path LIMIT $2 OFFSET $3",
        )
        .arg(machine)
        .arg(i64::from(page.probe()))
        .arg(i64::from(page.offset));
        Ok(page.finish(self.fetch_all(&q).await?, None))
    }

    /// Whether `machine` tracks a file at `path`.
    pub async fn is_tracked(&self, machine: &str, path: &str) -> Result<bool, StoreError> {
        let q = Sql::new("SELECT CAST(1 AS BIGINT) FROM files WHERE machine = $1 AND path = $2")
            .arg(machine)
            .arg(path);
        Ok(self.fetch_optional::<(i64,)>(&q).await?.is_some())
    }

    /// Every file of one machine, by path (tests; a page at a time).
    pub async fn list_files(&self, machine: &str) -> Result<Vec<FileListing>, StoreError> {
        super::every_page(|page| self.files(machine, page)).await
    }
}
