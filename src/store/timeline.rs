//! What the web view reads: one transcript's rows in line order (messages, tool uses, feedback,
//! summaries), a page of sessions with their counts, and the home page's totals.
//!
//! Why separate queries from `gleaner sessions`: that listing aggregates over whole tables
//! (fine for a CLI that prints everything), while a page shows 50 sessions and must stay fast on
//! a database of thousands; here every count is a correlated subquery over the page's rows only,
//! each served by a `session_id` index.

use serde::Serialize;

use super::sql::{like_escape, Sql};
use super::{Store, StoreError};

/// One stored message of a transcript, in line order.
#[derive(Debug, Clone, sqlx::FromRow, Serialize)]
pub struct TimelineMessage {
    /// 1-based line in the transcript.
    pub line_no: i64,
    /// Order within the line.
    pub seq: i64,
    /// `user`, `assistant`, `system`, `summary`.
    pub kind: String,
    /// `system` subtype.
    pub subtype: Option<String>,
    /// When.
    pub ts: Option<String>,
    /// Tools the line calls, comma-separated.
    pub tool_names: Option<String>,
    /// A tool result that failed, or an API error.
    pub is_error: bool,
    /// Redacted text.
    pub text: Option<String>,
    /// Injected by Claude Code (not typed, not said).
    pub is_meta: bool,
}

/// A tool call of the transcript.
#[derive(Debug, Clone, sqlx::FromRow, Serialize)]
pub struct TimelineTool {
    /// Line of the call.
    pub line_no: i64,
    /// Tool name.
    pub name: Option<String>,
    /// What it acted on (file, command, pattern), redacted.
    pub target: Option<String>,
    /// Its result failed.
    pub is_error: bool,
}

/// What the user said, by line.
#[derive(Debug, Clone, sqlx::FromRow, Serialize)]
pub struct TimelineFeedback {
    /// Line.
    pub line_no: i64,
    /// `message`, `tool_denial`, `interruption`.
    pub feedback_type: String,
    /// The words.
    pub content: String,
    /// A denial's reason.
    pub reason: Option<String>,
}

/// A summary or compaction of the transcript, by line.
#[derive(Debug, Clone, sqlx::FromRow, Serialize)]
pub struct TimelineSummary {
    /// Line.
    pub line_no: i64,
    /// `summary`, `compact_boundary`, `compact_summary`.
    pub kind: String,
    /// Text.
    pub text: Option<String>,
    /// `manual` or `auto` (boundaries).
    pub compact_trigger: Option<String>,
    /// Tokens before compaction (boundaries).
    pub pre_tokens: Option<i64>,
}

/// A transcript file of a session: the main one or a sub-agent's.
#[derive(Debug, Clone, sqlx::FromRow, Serialize)]
pub struct TimelineFile {
    /// Row id.
    pub id: i64,
    /// Path.
    pub path: String,
    /// `main` or `agent`.
    pub kind: String,
    /// Sub-agent id.
    pub agent_id: Option<String>,
    /// Sub-agent type.
    pub agent_type: Option<String>,
    /// What the parent asked the sub-agent to do.
    pub agent_description: Option<String>,
    /// Lines read.
    pub lines: i64,
    /// Current generation.
    pub generation: i64,
}

/// Every row of one transcript the timeline shows.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Timeline {
    /// Messages in line order.
    pub messages: Vec<TimelineMessage>,
    /// Tool calls in line order.
    pub tools: Vec<TimelineTool>,
    /// Feedback in line order.
    pub feedback: Vec<TimelineFeedback>,
    /// Summaries and compactions in line order.
    pub summaries: Vec<TimelineSummary>,
}

/// A row of the sessions page.
#[derive(Debug, Clone, sqlx::FromRow, Serialize)]
pub struct SessionRow {
    /// Id.
    pub session_id: String,
    /// Title (first prompt).
    pub title: Option<String>,
    /// Project folder.
    pub project: String,
    /// Working directory.
    pub cwd: Option<String>,
    /// First activity.
    pub started_at: Option<String>,
    /// Last activity.
    pub last_activity_at: Option<String>,
    /// Duration once finished.
    pub duration_ms: Option<i64>,
    /// `active` or `finished`.
    pub status: String,
    /// Feedback items.
    pub feedback: i64,
    /// Snippets.
    pub snippets: i64,
    /// Non-routine episodes.
    pub episodes: i64,
}

/// How the sessions page is sorted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SessionSort {
    /// Most recent activity first.
    #[default]
    Recent,
    /// Earliest start first.
    Started,
    /// Longest first.
    Duration,
    /// Most feedback first.
    Feedback,
    /// Most snippets first.
    Snippets,
    /// By title.
    Title,
    /// By project.
    Project,
}

impl SessionSort {
    /// From a query parameter (`recent` when unknown).
    pub fn parse(s: &str) -> SessionSort {
        match s {
            "started" => SessionSort::Started,
            "duration" => SessionSort::Duration,
            "feedback" => SessionSort::Feedback,
            "snippets" => SessionSort::Snippets,
            "title" => SessionSort::Title,
            "project" => SessionSort::Project,
            _ => SessionSort::Recent,
        }
    }

    /// The query parameter.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionSort::Recent => "recent",
            SessionSort::Started => "started",
            SessionSort::Duration => "duration",
            SessionSort::Feedback => "feedback",
            SessionSort::Snippets => "snippets",
            SessionSort::Title => "title",
            SessionSort::Project => "project",
        }
    }

    fn order_by(self) -> &'static str {
        // NULLs placed explicitly: SQLite sorts them first, PostgreSQL last.
        match self {
            SessionSort::Recent => {
                "CASE WHEN s.last_activity_at IS NULL THEN 1 ELSE 0 END, s.last_activity_at DESC"
            }
            SessionSort::Started => {
                "CASE WHEN s.started_at IS NULL THEN 1 ELSE 0 END, s.started_at"
            }
            SessionSort::Duration => {
                "CASE WHEN s.duration_ms IS NULL THEN 1 ELSE 0 END, s.duration_ms DESC"
            }
            SessionSort::Feedback => "feedback DESC",
            SessionSort::Snippets => "snippets DESC",
            SessionSort::Title => "CASE WHEN s.title IS NULL THEN 1 ELSE 0 END, s.title",
            SessionSort::Project => "s.project",
        }
    }
}

/// Filters and page of the sessions page.
#[derive(Debug, Clone, Default)]
pub struct SessionPageFilter {
    /// Project folder or working directory contains this.
    pub project: Option<String>,
    /// Last activity at or after.
    pub since: Option<String>,
    /// Started before.
    pub until: Option<String>,
    /// Order.
    pub sort: SessionSort,
    /// Page size.
    pub limit: u32,
    /// Rows skipped.
    pub offset: u32,
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

const SESSION_COLUMNS: &str = "s.session_id, s.title, s.project, s.cwd, s.started_at, \
     s.last_activity_at, s.duration_ms, s.status, \
     (SELECT COUNT(*) FROM feedback f WHERE f.session_id = s.session_id) AS feedback, \
     (SELECT COUNT(*) FROM snippets n WHERE n.session_id = s.session_id) AS snippets, \
     (SELECT COUNT(*) FROM episodes e WHERE e.session_id = s.session_id \
      AND e.triage <> 'routine') AS episodes";

impl Store {
    /// One page of sessions and how many match.
    pub async fn session_page(
        &self,
        f: &SessionPageFilter,
    ) -> Result<(Vec<SessionRow>, i64), StoreError> {
        let filters = |q: &mut Sql<'_>| {
            if let Some(p) = &f.project {
                super::query::push_project_filter(q, p, "s.project", "s.cwd");
            }
            if let Some(t) = &f.since {
                q.push(" AND s.last_activity_at >= ").push_bind(t.clone());
            }
            if let Some(t) = &f.until {
                q.push(" AND s.started_at < ").push_bind(t.clone());
            }
        };
        let mut q = Sql::new(format!(
            "SELECT {SESSION_COLUMNS} FROM sessions s WHERE 1 = 1"
        ));
        filters(&mut q);
        q.push(&format!(" ORDER BY {}, s.session_id", f.sort.order_by()))
            .push(" LIMIT ")
            .push_bind(i64::from(f.limit.clamp(1, 500)))
            .push(" OFFSET ")
            .push_bind(i64::from(f.offset));
        let rows = self.fetch_all(&q.not_persistent()).await?;
        let mut c = Sql::new("SELECT COUNT(*) FROM sessions s WHERE 1 = 1");
        filters(&mut c);
        let total = self.fetch_i64(&c.not_persistent()).await?;
        Ok((rows, total))
    }

    /// One session's row, by exact id.
    pub async fn session_row(&self, session_id: &str) -> Result<Option<SessionRow>, StoreError> {
        let q = Sql::new(format!(
            "SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.session_id = $1"
        ))
        .arg(session_id);
        self.fetch_optional(&q).await
    }

    /// The transcript files of a session, main first.
    pub async fn session_files(&self, session_id: &str) -> Result<Vec<TimelineFile>, StoreError> {
        let q = Sql::new(
            "SELECT id, path, kind, agent_id, agent_type, agent_description, lines, generation \
             FROM files WHERE session_id = $1 ORDER BY CASE WHEN kind = 'main' THEN 0 ELSE 1 END, \
             path",
        )
        .arg(session_id);
        self.fetch_all(&q).await
    }

    /// Every row of one transcript file (its current generation) the timeline shows.
    pub async fn timeline(&self, file: &TimelineFile) -> Result<Timeline, StoreError> {
        let messages = Sql::new(
            "SELECT line_no, seq, kind, subtype, ts, tool_names, is_error, text, is_meta \
             FROM messages WHERE file_id = $1 AND generation = $2 ORDER BY line_no, seq",
        )
        .arg(file.id)
        .arg(file.generation);
        let tools = Sql::new(
            "SELECT line_no, name, target, is_error FROM tool_uses WHERE file_id = $1 \
             ORDER BY line_no",
        )
        .arg(file.id);
        let feedback = Sql::new(
            "SELECT line_no, feedback_type, content, reason FROM feedback WHERE file_id = $1 \
             ORDER BY line_no, id",
        )
        .arg(file.id);
        let summaries = Sql::new(
            "SELECT line_no, kind, text, compact_trigger, pre_tokens FROM summaries \
             WHERE file_id = $1 ORDER BY line_no, id",
        )
        .arg(file.id);
        Ok(Timeline {
            messages: self.fetch_all(&messages).await?,
            tools: self.fetch_all(&tools).await?,
            feedback: self.fetch_all(&feedback).await?,
            summaries: self.fetch_all(&summaries).await?,
        })
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

    /// Session ids starting with `prefix` (the web's short links), at most 2.
    pub async fn resolve_session(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        let q = Sql::new(
            "SELECT session_id FROM sessions WHERE session_id LIKE $1 ESCAPE '\\' \
             ORDER BY session_id LIMIT 2",
        )
        .arg(format!("{}%", like_escape(prefix)));
        let ids: Vec<(String,)> = self.fetch_all(&q).await?;
        Ok(ids.into_iter().map(|(s,)| s).collect())
    }
}
