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

    /// Every row of one transcript the timeline shows: of `file` and of the other copies of
    /// its transcript in `files` (other machines', `store::copies`), of every generation (a
    /// file cut short and grown back stores each line once). One copy in one generation is in
    /// line order; several are merged by time, then line.
    pub async fn timeline(
        &self,
        files: &[TimelineFile],
        file: &TimelineFile,
    ) -> Result<Timeline, StoreError> {
        let copies: Vec<&TimelineFile> = files
            .iter()
            .filter(|f| f.id != file.id && f.kind == file.kind && f.agent_id == file.agent_id)
            .chain(std::iter::once(file))
            .collect();
        let order = if copies.len() > 1 || copies.iter().any(|f| f.generation > 1) {
            "CASE WHEN m.ts IS NULL THEN 1 ELSE 0 END, m.ts, m.line_no, m.file_id, m.generation, \
             m.seq"
        } else {
            "m.line_no, m.seq"
        };
        let mut messages = Sql::new(format!(
            "SELECT m.line_no, m.seq, m.kind, m.subtype, m.ts, m.tool_names, m.is_error, {} AS text, \
             m.is_meta FROM messages m WHERE (",
            self.backend().stored_text("m.text")
        ));
        for (i, f) in copies.iter().enumerate() {
            if i > 0 {
                messages.push(" OR ");
            }
            messages.push("m.file_id = ").push_bind(f.id);
        }
        messages.push(&format!(") ORDER BY {order}"));
        let messages = messages.not_persistent();
        // Tool calls, feedback and summaries are indexed by session, not by file: the file's
        // session narrows them by index first (a filter on the file alone read the whole
        // table: 160 ms for a session's feedback on a 50 GB store). Each is stored once, by
        // the copy that read it first.
        let ids: Vec<i64> = copies.iter().map(|f| f.id).collect();
        let of_file = |cols: &str, table: &str, order: &str| {
            let mut q = Sql::new(format!("SELECT {cols} FROM {table} WHERE "));
            if let Some(sid) = &file.session_id {
                q.push("session_id = ")
                    .push_bind(sid.as_str())
                    .push(" AND ");
            }
            q.push_in("file_id", ids.iter().copied())
                .push(&format!(" ORDER BY {order}"));
            q.not_persistent()
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
