//! The diagnostics recorded while reading: lines skipped (malformed, over-long, not UTF-8)
//! and the like, each with its file and place, newest first.

use serde::Serialize;

use super::super::sql::Sql;
use super::super::{Page, Paged, Store, StoreError};

/// One recorded diagnostic as `gleaner diagnostics` shows it.
#[derive(Debug, Clone, sqlx::FromRow, Serialize)]
pub struct DiagnosticListing {
    /// The transcript it was found in.
    pub path: String,
    /// Its generation of the file (+1 per truncation or rewrite).
    pub generation: i64,
    /// 1-based line.
    pub line_no: i64,
    /// Byte offset of the line's start.
    pub byte_start: i64,
    /// Length of the line in bytes.
    pub byte_len: i64,
    /// What was wrong (`malformed_json`, `line_too_long`, ...).
    pub kind: String,
    /// Details (redacted before they were stored).
    pub detail: Option<String>,
    /// When it was recorded.
    pub created_at: String,
}

impl Store {
    /// One page of the diagnostics of one machine's files, newest first; with `path`, of
    /// that file only (found by its unique key, then its rows by theirs).
    pub async fn diagnostics(
        &self,
        machine: &str,
        path: Option<&str>,
        page: Page,
    ) -> Result<Paged<DiagnosticListing>, StoreError> {
        let mut q = Sql::new(
            "SELECT f.path, d.generation, d.line_no, d.byte_start, d.byte_len, d.kind, d.detail, \
             d.created_at FROM diagnostics d JOIN files f ON f.id = d.file_id WHERE f.machine = ",
        );
        q.push_bind(machine);
        if let Some(p) = path {
            q.push(" AND d.file_id = (SELECT id FROM files WHERE machine = ")
                .push_bind(machine)
                .push(" AND path = ")
                .push_bind(p)
                .push(")");
        }
        q.push(" ORDER BY d.id DESC LIMIT ")
            .push_bind(i64::from(page.probe()))
            .push(" OFFSET ")
            .push_bind(i64::from(page.offset));
        Ok(page.finish(self.fetch_all(&q).await?, None))
    }
}
