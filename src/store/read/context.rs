//! What a new session is given at its start (`query::context`): a project's recent sessions with
//! their latest summary, the corrections its user made, and its decisions and fixes. Every
//! query is bounded by the project's sessions (the `sessions_project` index) and a small limit,
//! so the digest costs the same on any size of store.

use super::super::sql::Sql;
use super::super::{Store, StoreError};

/// A recent session of the project.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ContextSession {
    /// Session id.
    pub session_id: String,
    /// Its first real prompt.
    pub title: Option<String>,
    /// Last activity.
    pub last_activity_at: Option<String>,
    /// Its latest summary or compaction summary (redacted when stored).
    pub summary: Option<String>,
}

/// Something the user said that corrects or sets a preference: an episode's correction
/// evidence (JSON, to be read by the caller) or a tool denial's reason.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ContextCorrection {
    /// Session it was said in.
    pub session_id: String,
    /// When.
    pub at: Option<String>,
    /// `evidence` (an episode's JSON evidence list) or `denial` (the reason given).
    pub source: String,
    /// The evidence JSON or the reason.
    pub body: String,
}

/// A decision or fix worth knowing: a snippet.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ContextItem {
    /// Session it comes from.
    pub session_id: String,
    /// `decision_rationale`, `error_reasoning` or `learning_pattern`.
    pub kind: String,
    /// Its title.
    pub title: String,
    /// When.
    pub at: Option<String>,
}

impl Store {
    /// The project's most recent sessions, `exclude` left out, newest first (sessions without
    /// a time last). `project` is the project folder (`~/.claude/projects/<folder>`).
    pub async fn context_sessions(
        &self,
        project: &str,
        exclude: Option<&str>,
        limit: i64,
    ) -> Result<Vec<ContextSession>, StoreError> {
        // Sessions with a time, newest first, through `sessions_project_recent`; those
        // without one (rare) only when the first part leaves room. (A `CASE` putting them last
        // in one `ORDER BY` made every session of the project sorted.)
        let query = |timed: bool, limit: i64| {
            Sql::new(format!(
                "SELECT s.session_id, s.title, s.last_activity_at, \
                 (SELECT su.text FROM summaries su WHERE su.session_id = s.session_id \
                  AND su.kind IN ('summary', 'compact_summary') AND su.text IS NOT NULL \
                  ORDER BY su.id DESC LIMIT 1) AS summary \
                 FROM sessions s WHERE s.project = $1 AND s.session_id <> $2 \
                 AND s.last_activity_at IS {} NULL \
                 ORDER BY s.last_activity_at DESC, s.session_id DESC LIMIT $3",
                if timed { "NOT" } else { "" }
            ))
            .arg(project)
            .arg(exclude.unwrap_or(""))
            .arg(limit)
        };
        let mut rows: Vec<ContextSession> = self.fetch_all(&query(true, limit)).await?;
        let left = limit - rows.len() as i64;
        if left > 0 {
            rows.extend(
                self.fetch_all::<ContextSession>(&query(false, left))
                    .await?,
            );
        }
        Ok(rows)
    }

    /// Corrections in `sessions`, newest first: the evidence of episodes labelled (or holding a
    /// turn labelled) `user_correction`, and the reasons given for denied tool calls.
    pub async fn context_corrections(
        &self,
        sessions: &[String],
        limit: i64,
    ) -> Result<Vec<ContextCorrection>, StoreError> {
        if sessions.is_empty() {
            return Ok(Vec::new());
        }
        let mut q = Sql::new(
            "SELECT session_id, at, source, body FROM (\
             SELECT e.session_id, e.started_at AS at, 'evidence' AS source, e.evidence AS body \
             FROM episodes e WHERE ",
        );
        q.push_in("e.session_id", sessions.iter().map(String::as_str))
            .push(
                " AND e.labels LIKE '%user_correction%' \
                 UNION ALL SELECT f.session_id, f.ts AS at, 'denial' AS source, f.reason AS body \
                 FROM feedback f WHERE ",
            )
            .push_in("f.session_id", sessions.iter().map(String::as_str))
            .push(
                " AND f.feedback_type = 'tool_denial' AND f.reason IS NOT NULL) c \
                 ORDER BY CASE WHEN at IS NULL THEN 1 ELSE 0 END, at DESC LIMIT ",
            )
            .push_bind(limit);
        self.fetch_all(&q.not_persistent()).await
    }

    /// Decisions and fixes of the project, newest first: its snippets, whose titles state the
    /// lesson. (Episode titles were read here once; they are the first prompt, which repeats
    /// what was asked and not what fixed it.)
    pub async fn context_items(
        &self,
        project: &str,
        limit: i64,
    ) -> Result<Vec<ContextItem>, StoreError> {
        let q = Sql::new(
            "SELECT s.session_id, s.snippet_type AS kind, s.title, s.created_at AS at \
             FROM snippets s WHERE s.project = $1 \
             ORDER BY s.created_at DESC, s.id DESC LIMIT $2",
        )
        .arg(project)
        .arg(limit);
        self.fetch_all(&q.not_persistent()).await
    }
}
