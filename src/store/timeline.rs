//! The rows of one transcript in line order (messages, tool uses, feedback, summaries) and a
//! session's transcript files: what the web view's timeline is drawn from.

use serde::Serialize;

use super::sql::Sql;
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
    /// Its session (`None` while undecided).
    pub session_id: Option<String>,
    /// The machine holding this copy (a shared store may hold a transcript on several).
    pub machine: String,
    /// The user of that machine.
    #[sqlx(rename = "user_name")]
    pub user: String,
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

impl Store {
    /// The transcript files of a session, main first.
    pub async fn session_files(&self, session_id: &str) -> Result<Vec<TimelineFile>, StoreError> {
        let q = Sql::new(
            "SELECT id, path, kind, agent_id, agent_type, agent_description, lines, generation, \
             session_id, machine, user_name FROM files WHERE session_id = $1 ORDER BY CASE WHEN kind = 'main' THEN 0 ELSE 1 END, \
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
        // Tool calls, feedback and summaries are indexed by session, not by file: the file's
        // session narrows them by index first (a filter on the file alone read the whole
        // table: 160 ms for a session's feedback on a 50 GB store).
        let of_file = |cols: &str, table: &str, order: &str| {
            let q = match &file.session_id {
                Some(sid) => Sql::new(format!(
                    "SELECT {cols} FROM {table} WHERE session_id = $2 AND file_id = $1 \
                     ORDER BY {order}"
                ))
                .arg(file.id)
                .arg(sid.as_str()),
                None => Sql::new(format!(
                    "SELECT {cols} FROM {table} WHERE file_id = $1 ORDER BY {order}"
                ))
                .arg(file.id),
            };
            q
        };
        let tools = of_file("line_no, name, target, is_error", "tool_uses", "line_no");
        let feedback = of_file(
            "line_no, feedback_type, content, reason",
            "feedback",
            "line_no, id",
        );
        let summaries = of_file(
            "line_no, kind, text, compact_trigger, pre_tokens",
            "summaries",
            "line_no, id",
        );
        Ok(Timeline {
            messages: self.fetch_all(&messages).await?,
            tools: self.fetch_all(&tools).await?,
            feedback: self.fetch_all(&feedback).await?,
            summaries: self.fetch_all(&summaries).await?,
        })
    }
}
