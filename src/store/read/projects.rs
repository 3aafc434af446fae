//! Projects: one row per project folder, most recent activity first (`gleaner projects`, MCP
//! `list_projects`, the web's `/projects`).
//!
//! Grouped from `sessions` through its `(project, last_activity_at, session_id)` index; a
//! page's token totals come from the per-project usage rollup (`usage_groups`), one indexed
//! lookup per project on the page, so they include what `prune` removed, as `gleaner usage`
//! does.

use std::collections::HashMap;

use serde::Serialize;

use super::super::sql::Sql;
use super::super::{Page, Paged, Store, StoreError};
use super::{push_origin_filter, push_project_filter, Origin};

/// A project: where its sessions ran and how much happened there.
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
pub struct ProjectListing {
    /// The project folder under `~/.claude/projects` (the working directory, encoded).
    pub project: String,
    /// The working directory of its latest session that names one.
    pub cwd: Option<String>,
    /// Its sessions (warm-ups and empty ones included).
    pub sessions: i64,
    /// When its first session started.
    pub first_activity: Option<String>,
    /// Its last activity.
    pub last_activity: Option<String>,
    /// Message rows of its sessions.
    pub messages: i64,
    /// Tokens of every kind (input, output, cache writes and reads), counted once per API
    /// message, as `gleaner usage --by project` counts them.
    #[sqlx(skip)]
    pub tokens: i64,
}

/// What a project listing is narrowed to.
#[derive(Debug, Clone, Default)]
pub struct ProjectFilter {
    /// The project folder or a session's working directory contains this text.
    pub project: Option<String>,
    /// Who and where: the sessions held by this machine or user.
    pub origin: Origin,
}

impl Store {
    /// One page of projects matching `f`, most recent activity first.
    pub async fn project_listing(
        &self,
        f: &ProjectFilter,
        page: Page,
    ) -> Result<Paged<ProjectListing>, StoreError> {
        let mut q = Sql::new(
            "SELECT s.project, (SELECT c.cwd FROM sessions c WHERE c.project = s.project \
             AND c.cwd IS NOT NULL ORDER BY c.last_activity_at DESC LIMIT 1) AS cwd, \
             CAST(COUNT(*) AS BIGINT) AS sessions, MIN(s.started_at) AS first_activity, \
             MAX(s.last_activity_at) AS last_activity, \
             CAST(COALESCE(SUM(s.message_count), 0) AS BIGINT) AS messages \
             FROM sessions s WHERE 1 = 1",
        );
        if let Some(p) = &f.project {
            push_project_filter(&mut q, p, "s.project", "s.cwd");
        }
        push_origin_filter(&mut q, &f.origin, "s.session_id");
        q.push(" GROUP BY s.project ORDER BY last_activity DESC, s.project LIMIT ")
            .push_bind(i64::from(page.probe()))
            .push(" OFFSET ")
            .push_bind(i64::from(page.offset));
        let rows: Vec<ProjectListing> = self.fetch_all(&q.not_persistent()).await?;
        let mut paged = page.finish(rows, None);
        if paged.items.is_empty() {
            return Ok(paged);
        }
        let mut q = Sql::new(
            "SELECT key, CAST(SUM(input_tokens + output_tokens + cache_creation_tokens \
             + cache_read_tokens) AS BIGINT) FROM usage_groups WHERE kind = 'project' AND ",
        );
        q.push_in("key", paged.items.iter().map(|p| p.project.as_str()))
            .push(" GROUP BY key");
        let tokens: HashMap<String, i64> = self
            .fetch_all::<(String, i64)>(&q.not_persistent())
            .await?
            .into_iter()
            .collect();
        for p in &mut paged.items {
            p.tokens = tokens.get(&p.project).copied().unwrap_or(0);
        }
        Ok(paged)
    }
}
