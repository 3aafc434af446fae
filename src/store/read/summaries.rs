//! Summaries: `summary` lines, compaction boundaries and compaction summaries.

use serde::Serialize;

use super::super::sql::Sql;
use super::super::{Page, Paged, Store, StoreError, SummaryKind};
use super::sessions::{push_summary_candidates, SUMMARY_SESSION};
use super::{every_page, push_origin_filter, push_project_filter, Origin};

/// A summary row: the one view every door lists.
#[derive(Debug, Clone, sqlx::FromRow, Serialize)]
pub struct SummaryListing {
    /// `summary`, `compact_boundary` or `compact_summary`.
    pub kind: String,
    /// Text.
    pub text: Option<String>,
    /// `leafUuid`.
    pub leaf_uuid: Option<String>,
    /// Line uuid.
    pub uuid: Option<String>,
    /// Compaction trigger.
    #[sqlx(rename = "compact_trigger")]
    pub trigger: Option<String>,
    /// Tokens before compaction.
    pub pre_tokens: Option<i64>,
    /// Session.
    pub session_id: String,
    /// Sub-agent id.
    pub agent_id: Option<String>,
    /// Line timestamp.
    #[sqlx(rename = "ts")]
    pub timestamp: Option<String>,
    /// Transcript file.
    pub source_file: String,
    /// 1-based line number.
    #[sqlx(rename = "line_no")]
    pub line: i64,
}

/// What a summary listing is narrowed to.
#[derive(Debug, Clone, Default)]
pub struct SummaryFilter {
    /// Only these sessions (a summary belongs to the session its leaf names).
    pub session_ids: Option<Vec<String>>,
    /// Only this kind.
    pub kind: Option<SummaryKind>,
    /// Only sessions whose project folder or working directory contains this text.
    pub project: Option<String>,
    /// Who and where: sessions held by this machine or user.
    pub origin: Origin,
    /// At or after this time (as stored).
    pub since: Option<String>,
    /// Strictly before this time.
    pub until: Option<String>,
    /// Oldest first instead of newest first.
    pub oldest_first: bool,
}

impl Store {
    /// One page of summaries matching `f`, newest first (or oldest first), undated last.
    pub async fn summaries(
        &self,
        f: &SummaryFilter,
        page: Page,
    ) -> Result<Paged<SummaryListing>, StoreError> {
        let mut q = Sql::new(format!(
            "SELECT s.kind, s.text, s.leaf_uuid, s.uuid, s.compact_trigger, s.pre_tokens, \
             {SUMMARY_SESSION} AS session_id, s.agent_id, s.ts, fl.path AS source_file, \
             s.line_no FROM summaries s JOIN files fl ON fl.id = s.file_id WHERE 1 = 1"
        ));
        if let Some(ids) = &f.session_ids {
            // Candidates by index (read from these sessions' files, or naming a leaf they
            // hold), then the exact owner.
            q.push(" AND s.id IN (");
            push_summary_candidates(&mut q, ids);
            q.push(") AND ");
            q.push_in(SUMMARY_SESSION, ids);
        }
        if let Some(k) = f.kind {
            q.push(" AND s.kind = ").push_bind(k.as_str());
        }
        if let Some(p) = &f.project {
            q.push(&format!(
                " AND EXISTS (SELECT 1 FROM sessions ps WHERE ps.session_id = {SUMMARY_SESSION}"
            ));
            push_project_filter(&mut q, p, "ps.project", "ps.cwd");
            q.push(")");
        }
        push_origin_filter(&mut q, &f.origin, SUMMARY_SESSION);
        if let Some(t) = &f.since {
            q.push(" AND s.ts >= ").push_bind(t.as_str());
        }
        if let Some(t) = &f.until {
            q.push(" AND s.ts < ").push_bind(t.as_str());
        }
        let dir = if f.oldest_first { "ASC" } else { "DESC" };
        q.push(&format!(
            " ORDER BY s.ts {dir} NULLS LAST, s.id {dir} LIMIT "
        ))
        .push_bind(i64::from(page.probe()))
        .push(" OFFSET ")
        .push_bind(i64::from(page.offset));
        let rows = self.fetch_all(&q.not_persistent()).await?;
        Ok(page.finish(rows, None))
    }

    /// Every summary matching `f` (exports and tests), a page at a time.
    pub async fn list_summaries(
        &self,
        f: &SummaryFilter,
    ) -> Result<Vec<SummaryListing>, StoreError> {
        every_page(|page| self.summaries(f, page)).await
    }
}
