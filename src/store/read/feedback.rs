//! Feedback: what the user said (prompts, tool denials, interruptions).

use serde::Serialize;

use super::super::sql::Sql;
use super::super::{FeedbackType, Page, Paged, Store, StoreError};
use super::{every_page, push_origin_filter, push_project_filter, Origin};

/// A feedback item: the one view every door lists.
#[derive(Debug, Clone, sqlx::FromRow, Serialize)]
pub struct FeedbackListing {
    /// Line timestamp.
    #[sqlx(rename = "ts")]
    pub timestamp: Option<String>,
    /// Session.
    pub session_id: String,
    /// `message`, `tool_denial` or `interruption`.
    pub feedback_type: String,
    /// Text.
    pub content: String,
    /// Rejection reason.
    pub reason: Option<String>,
    /// Sub-agent id.
    pub agent_id: Option<String>,
    /// Session slug.
    pub slug: Option<String>,
    /// Denied tool use.
    pub tool_use_id: Option<String>,
    /// The denied tool's name (`Bash`, `Edit`...), when its call is stored.
    pub tool_name: Option<String>,
    /// What the denied call would have acted on: its command, file, pattern or URL.
    pub tool_target: Option<String>,
    /// Line uuid.
    pub uuid: Option<String>,
    /// Transcript file.
    pub source_file: String,
    /// 1-based line number.
    #[sqlx(rename = "line_no")]
    pub line: i64,
}

/// What a feedback listing is narrowed to.
#[derive(Debug, Clone, Default)]
pub struct FeedbackFilter {
    /// Only these sessions (their sub-agents included: they share the session id).
    pub session_ids: Option<Vec<String>>,
    /// Only this type.
    pub feedback_type: Option<FeedbackType>,
    /// Project folder or working directory containing this text.
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
    /// One page of feedback matching `f`, newest first (or oldest first), undated last.
    pub async fn feedback(
        &self,
        f: &FeedbackFilter,
        page: Page,
    ) -> Result<Paged<FeedbackListing>, StoreError> {
        let mut q = Sql::new(
            "SELECT fb.ts, fb.session_id, fb.feedback_type, fb.content, fb.reason, \
             fb.agent_id, fb.slug, fb.tool_use_id, tu.name AS tool_name, \
             tu.target AS tool_target, fb.uuid, f.path AS source_file, fb.line_no \
             FROM feedback fb JOIN files f ON f.id = fb.file_id \
             LEFT JOIN tool_uses tu ON tu.tool_use_id = fb.tool_use_id WHERE 1 = 1",
        );
        if let Some(ids) = &f.session_ids {
            q.push(" AND ").push_in("fb.session_id", ids);
        }
        if let Some(t) = f.feedback_type {
            q.push(" AND fb.feedback_type = ").push_bind(t.as_str());
        }
        if let Some(p) = &f.project {
            q.push(" AND EXISTS (SELECT 1 FROM sessions s WHERE s.session_id = fb.session_id");
            push_project_filter(&mut q, p, "s.project", "s.cwd");
            q.push(")");
        }
        push_origin_filter(&mut q, &f.origin, "fb.session_id");
        if let Some(s) = &f.since {
            q.push(" AND fb.ts >= ").push_bind(s.as_str());
        }
        if let Some(s) = &f.until {
            q.push(" AND fb.ts < ").push_bind(s.as_str());
        }
        let dir = if f.oldest_first { "ASC" } else { "DESC" };
        q.push(&format!(
            " ORDER BY fb.ts {dir} NULLS LAST, fb.id {dir} LIMIT "
        ))
        .push_bind(i64::from(page.probe()))
        .push(" OFFSET ")
        .push_bind(i64::from(page.offset));
        let rows = self.fetch_all(&q.not_persistent()).await?;
        Ok(page.finish(rows, None))
    }

    /// Every feedback item matching `f` (exports and tests), a page at a time.
    pub async fn list_feedback(
        &self,
        f: &FeedbackFilter,
    ) -> Result<Vec<FeedbackListing>, StoreError> {
        every_page(|page| self.feedback(f, page)).await
    }
}
