//! Read-side queries shared by the CLI (and later the MCP server): plain structs, no printing.
//!
//! Session aggregates (files, sub-agents, tool calls, feedback, summaries, tokens) are computed
//! from their tables at query time rather than kept as counters: every one of them is keyed so
//! that re-reads and resumed-session copies count once, and a `COUNT` over those keys is exact
//! by construction.

use std::collections::HashMap;

use super::sql::{contains_pattern, like_escape, Sql};
use super::{Store, StoreError};
use serde::Serialize;

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

/// A sub-agent of a session.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SubAgent {
    /// Agent id (file name without `agent-`).
    pub agent_id: Option<String>,
    /// `agentType` from the `.meta.json` sidecar.
    pub agent_type: Option<String>,
    /// `description` from the sidecar.
    pub description: Option<String>,
}

/// Feedback counts by type.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct FeedbackCounts {
    /// Human messages.
    pub message: i64,
    /// Rejected tool uses.
    pub tool_denial: i64,
    /// Esc presses.
    pub interruption: i64,
}

/// Summary counts by kind.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct SummaryCounts {
    /// `summary` lines.
    pub summary: i64,
    /// Compaction boundaries.
    pub compact_boundary: i64,
    /// Post-compaction summaries.
    pub compact_summary: i64,
}

/// Token usage totals (once per API message).
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct TokenTotals {
    /// Input tokens.
    pub input: i64,
    /// Output tokens.
    pub output: i64,
    /// Cache-creation input tokens.
    pub cache_creation: i64,
    /// Cache-read input tokens.
    pub cache_read: i64,
}

/// One session as `gleaner sessions` shows it.
#[derive(Debug, Clone, sqlx::FromRow, Serialize)]
pub struct SessionListing {
    /// Session UUID.
    pub session_id: String,
    /// Project folder.
    pub project: String,
    /// Working directory.
    pub cwd: Option<String>,
    /// Git branch.
    pub git_branch: Option<String>,
    /// Claude Code version.
    pub version: Option<String>,
    /// Session slug.
    pub slug: Option<String>,
    /// First line of the first real prompt.
    pub title: Option<String>,
    /// First timestamp.
    pub started_at: Option<String>,
    /// Last timestamp.
    pub last_activity_at: Option<String>,
    /// `active` or `finished`.
    pub status: String,
    /// When it finished (its last activity).
    pub ended_at: Option<String>,
    /// `ended_at - started_at` of a finished session, in milliseconds.
    pub duration_ms: Option<i64>,
    /// `idle`, `hook` or `deleted`.
    pub end_reason: Option<String>,
    /// Message rows.
    #[sqlx(rename = "message_count")]
    pub messages: i64,
    /// Files of the session (main and sub-agents).
    #[sqlx(skip)]
    pub files: i64,
    /// Lines committed across those files.
    #[sqlx(skip)]
    pub lines: i64,
    /// Number of sub-agents.
    #[sqlx(skip)]
    pub subagent_count: i64,
    /// The sub-agents.
    #[sqlx(skip)]
    pub subagents: Vec<SubAgent>,
    /// Tool calls.
    #[sqlx(skip)]
    pub tool_calls: i64,
    /// Tool results with an error.
    #[sqlx(skip)]
    pub tool_errors: i64,
    /// Feedback counts.
    #[sqlx(skip)]
    pub feedback: FeedbackCounts,
    /// Summary counts.
    #[sqlx(skip)]
    pub summaries: SummaryCounts,
    /// Token usage.
    #[sqlx(skip)]
    pub tokens: TokenTotals,
}

/// A summary row as `gleaner summaries` shows it.
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

/// A feedback item as `gleaner feedback` shows it.
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
    /// Line uuid.
    pub uuid: Option<String>,
    /// Transcript file.
    pub source_file: String,
    /// 1-based line number.
    #[sqlx(rename = "line_no")]
    pub line: i64,
}

/// Row counts of the main tables (used by tests and `ingest` summaries).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, sqlx::FromRow, Serialize)]
pub struct TableCounts {
    /// Files.
    pub files: i64,
    /// Sessions.
    pub sessions: i64,
    /// Messages.
    pub messages: i64,
    /// Diagnostics.
    pub diagnostics: i64,
    /// Summaries of all kinds.
    pub summaries: i64,
    /// Feedback items.
    pub feedback: i64,
}

/// Filters of `gleaner sessions`.
#[derive(Debug, Clone, Default)]
pub struct SessionFilter {
    /// Project folder or working directory containing this text.
    pub project: Option<String>,
    /// Last activity at or after this ISO-8601 time.
    pub since: Option<String>,
    /// Started strictly before this ISO-8601 time.
    pub until: Option<String>,
    /// `active` or `finished`.
    pub status: Option<String>,
    /// Only these sessions.
    pub session_ids: Option<Vec<String>>,
}

/// Filters of `gleaner feedback`.
#[derive(Debug, Clone, Default)]
pub struct FeedbackFilter {
    /// Only these sessions (their sub-agents included: they share the session id).
    pub session_ids: Option<Vec<String>>,
    /// `message`, `tool_denial` or `interruption`.
    pub feedback_type: Option<String>,
    /// Project folder or working directory containing this text.
    pub project: Option<String>,
    /// At or after this ISO-8601 time.
    pub since: Option<String>,
}

/// The session a summary belongs to: the one holding the message its `leaf_uuid` names (the
/// earliest such session, so a resumed session's copy of that message does not take it over),
/// else the session of the file it was read from. Resolved at query time because the leaf is
/// often in a sibling file that may be read before or after the summary.
const SUMMARY_SESSION: &str = "COALESCE((SELECT h.session_id FROM summary_leaves h \
     JOIN sessions ms ON ms.session_id = h.session_id WHERE h.leaf_uuid = s.leaf_uuid \
     ORDER BY ms.started_at, h.session_id LIMIT 1), s.session_id)";

/// ` AND (<a> LIKE pat OR <b> LIKE pat)`: the project filter of every listing (the session's
/// project folder or working directory contains the text).
pub(super) fn push_project_filter<'a>(q: &mut Sql<'a>, project: &str, folder: &str, cwd: &str) {
    let pat = contains_pattern(project);
    q.push(&format!(" AND ({folder} LIKE "))
        .push_bind(pat.clone())
        .push(&format!(" ESCAPE '\\' OR {cwd} LIKE "))
        .push_bind(pat)
        .push(" ESCAPE '\\')");
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

    /// Ids of the sessions whose id starts with `prefix` (at most 20).
    pub async fn sessions_with_prefix(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        let pattern = format!("{}%", like_escape(&prefix.to_lowercase()));
        let q = Sql::new(
            "SELECT session_id FROM sessions WHERE session_id LIKE $1 ESCAPE '\\' \
             ORDER BY session_id LIMIT 20",
        )
        .arg(pattern);
        let ids: Vec<(String,)> = self.fetch_all(&q).await?;
        Ok(ids.into_iter().map(|(s,)| s).collect())
    }

    /// Sessions, most recent activity first, with their aggregates.
    pub async fn list_sessions(
        &self,
        f: &SessionFilter,
    ) -> Result<Vec<SessionListing>, StoreError> {
        let mut q = Sql::new(
            "SELECT session_id, project, cwd, git_branch, version, slug, title, started_at, \
             last_activity_at, status, ended_at, duration_ms, end_reason, message_count \
             FROM sessions WHERE 1 = 1",
        );
        if let Some(p) = &f.project {
            push_project_filter(&mut q, p, "project", "cwd");
        }
        if let Some(s) = &f.since {
            q.push(" AND last_activity_at >= ").push_bind(s.as_str());
        }
        if let Some(u) = &f.until {
            q.push(" AND started_at < ").push_bind(u.as_str());
        }
        if let Some(s) = &f.status {
            q.push(" AND status = ").push_bind(s.as_str());
        }
        if let Some(ids) = &f.session_ids {
            q.push(" AND ").push_in("session_id", ids);
        }
        q.push(" ORDER BY last_activity_at DESC, session_id");
        let mut sessions: Vec<SessionListing> = self.fetch_all(&q.not_persistent()).await?;
        if sessions.is_empty() {
            return Ok(sessions);
        }
        self.fill_aggregates(&mut sessions).await?;
        Ok(sessions)
    }

    async fn fill_aggregates(&self, sessions: &mut [SessionListing]) -> Result<(), StoreError> {
        type Files = (Option<String>, i64, i64);
        type Agent = (
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
        );
        type Tools = (String, i64, i64);
        type Counted = (String, String, i64);
        type Tokens = (String, i64, i64, i64, i64);
        let mut pooled = self.acquire().await?;
        let mut c = pooled.conn();
        let files: Vec<Files> = c
            .fetch_all(&Sql::new(
                "SELECT session_id, COUNT(*), CAST(COALESCE(SUM(lines), 0) AS BIGINT) \
                 FROM files GROUP BY session_id",
            ))
            .await?;
        let agents: Vec<Agent> = c
            .fetch_all(&Sql::new(
                "SELECT session_id, agent_id, agent_type, agent_description FROM files \
                 WHERE kind = 'agent' ORDER BY path",
            ))
            .await?;
        let tools: Vec<Tools> = c
            .fetch_all(&Sql::new(
                "SELECT session_id, COUNT(name), \
                 CAST(COALESCE(SUM(CASE WHEN is_error THEN 1 ELSE 0 END), 0) AS BIGINT) \
                 FROM tool_uses GROUP BY session_id",
            ))
            .await?;
        let feedback: Vec<Counted> = c
            .fetch_all(&Sql::new(
                "SELECT session_id, feedback_type, COUNT(*) FROM feedback \
                 GROUP BY session_id, feedback_type",
            ))
            .await?;
        let summaries: Vec<Counted> = c
            .fetch_all(&Sql::new(format!(
                "SELECT sid, kind, COUNT(*) FROM \
                 (SELECT {SUMMARY_SESSION} AS sid, s.kind FROM summaries s) x GROUP BY sid, kind"
            )))
            .await?;
        let tokens: Vec<Tokens> = c
            .fetch_all(&Sql::new(
                "SELECT session_id, CAST(SUM(input_tokens) AS BIGINT), \
                 CAST(SUM(output_tokens) AS BIGINT), \
                 CAST(SUM(cache_creation_input_tokens) AS BIGINT), \
                 CAST(SUM(cache_read_input_tokens) AS BIGINT) \
                 FROM assistant_usage GROUP BY session_id",
            ))
            .await?;
        let index: HashMap<String, usize> = sessions
            .iter()
            .enumerate()
            .map(|(i, s)| (s.session_id.clone(), i))
            .collect();
        let mut at = |id: &str| index.get(id).copied();
        for (sid, n, lines) in files {
            if let Some(i) = sid.as_deref().and_then(&mut at) {
                sessions[i].files = n;
                sessions[i].lines = lines;
            }
        }
        for (sid, agent_id, agent_type, description) in agents {
            if let Some(i) = sid.as_deref().and_then(&mut at) {
                sessions[i].subagent_count += 1;
                sessions[i].subagents.push(SubAgent {
                    agent_id,
                    agent_type,
                    description,
                });
            }
        }
        for (sid, calls, errors) in tools {
            if let Some(i) = at(&sid) {
                sessions[i].tool_calls = calls;
                sessions[i].tool_errors = errors;
            }
        }
        for (sid, kind, n) in feedback {
            if let Some(i) = at(&sid) {
                let c = &mut sessions[i].feedback;
                match kind.as_str() {
                    "message" => c.message = n,
                    "tool_denial" => c.tool_denial = n,
                    "interruption" => c.interruption = n,
                    _ => {}
                }
            }
        }
        for (sid, kind, n) in summaries {
            if let Some(i) = at(&sid) {
                let c = &mut sessions[i].summaries;
                match kind.as_str() {
                    "summary" => c.summary = n,
                    "compact_boundary" => c.compact_boundary = n,
                    "compact_summary" => c.compact_summary = n,
                    _ => {}
                }
            }
        }
        for (sid, input, output, cache_creation, cache_read) in tokens {
            if let Some(i) = at(&sid) {
                sessions[i].tokens = TokenTotals {
                    input,
                    output,
                    cache_creation,
                    cache_read,
                };
            }
        }
        Ok(())
    }

    /// Summaries, oldest first, optionally of some sessions and of one kind.
    pub async fn list_summaries(
        &self,
        session_ids: Option<&[String]>,
        kind: Option<&str>,
    ) -> Result<Vec<SummaryListing>, StoreError> {
        let mut q = Sql::new(format!(
            "SELECT * FROM (SELECT s.kind, s.text, s.leaf_uuid, s.uuid, s.compact_trigger, \
             s.pre_tokens, {SUMMARY_SESSION} AS session_id, s.agent_id, s.ts, \
             f.path AS source_file, s.line_no \
             FROM summaries s JOIN files f ON f.id = s.file_id) s WHERE 1 = 1"
        ));
        if let Some(ids) = session_ids {
            q.push(" AND ").push_in("s.session_id", ids);
        }
        if let Some(k) = kind {
            q.push(" AND s.kind = ").push_bind(k);
        }
        q.push(" ORDER BY s.ts, s.source_file, s.line_no");
        self.fetch_all(&q.not_persistent()).await
    }

    /// Feedback items sorted by timestamp.
    pub async fn list_feedback(
        &self,
        f: &FeedbackFilter,
    ) -> Result<Vec<FeedbackListing>, StoreError> {
        let mut q = Sql::new(
            "SELECT fb.ts, fb.session_id, fb.feedback_type, fb.content, fb.reason, \
             fb.agent_id, fb.slug, fb.tool_use_id, fb.uuid, f.path AS source_file, fb.line_no \
             FROM feedback fb JOIN files f ON f.id = fb.file_id \
             LEFT JOIN sessions s ON s.session_id = fb.session_id WHERE 1 = 1",
        );
        if let Some(ids) = &f.session_ids {
            q.push(" AND ").push_in("fb.session_id", ids);
        }
        if let Some(t) = &f.feedback_type {
            q.push(" AND fb.feedback_type = ").push_bind(t.as_str());
        }
        if let Some(p) = &f.project {
            push_project_filter(&mut q, p, "s.project", "s.cwd");
        }
        if let Some(s) = &f.since {
            q.push(" AND fb.ts >= ").push_bind(s.as_str());
        }
        q.push(" ORDER BY fb.ts, f.path, fb.line_no");
        self.fetch_all(&q.not_persistent()).await
    }

    /// Row counts of the main tables.
    pub async fn counts(&self) -> Result<TableCounts, StoreError> {
        let q = Sql::new(
            "SELECT (SELECT COUNT(*) FROM files) AS files, \
             (SELECT COUNT(*) FROM sessions) AS sessions, \
             (SELECT COUNT(*) FROM messages) AS messages, \
             (SELECT COUNT(*) FROM diagnostics) AS diagnostics, \
             (SELECT COUNT(*) FROM summaries) AS summaries, \
             (SELECT COUNT(*) FROM feedback) AS feedback",
        );
        let row: Option<TableCounts> = self.fetch_optional(&q).await?;
        Ok(row.unwrap_or_default())
    }
}

/// One stored message of a session's conversation.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ConversationRow {
    /// `user` or `assistant`.
    pub kind: String,
    /// The message text (redacted when stored).
    pub text: String,
    /// The sub-agent it belongs to (`None`: the main transcript).
    pub agent_id: Option<String>,
}

impl Store {
    /// The user and assistant messages of a session that carry text, in conversation order:
    /// the main transcript by line, with `subagents` also the sub-agents' messages, all by time
    /// (a line without a timestamp keeps its place after the timed ones of its file). Injected
    /// (meta) lines and earlier generations of rewritten files are left out.
    pub async fn conversation_rows(
        &self,
        session_id: &str,
        subagents: bool,
    ) -> Result<Vec<ConversationRow>, StoreError> {
        let order = if subagents {
            "CASE WHEN m.ts IS NULL THEN 1 ELSE 0 END, m.ts, f.kind DESC, m.file_id, m.line_no, m.seq"
        } else {
            "m.file_id, m.line_no, m.seq"
        };
        let agents = if subagents {
            ""
        } else {
            " AND f.kind = 'main'"
        };
        let q = Sql::new(format!(
            "SELECT m.kind, m.text, CASE WHEN f.kind = 'agent' THEN f.agent_id END AS agent_id \
             FROM messages m JOIN files f ON f.id = m.file_id AND m.generation = f.generation \
             WHERE f.session_id = $1 AND m.kind IN ('user', 'assistant') AND m.text IS NOT NULL \
             AND NOT m.is_meta{agents} ORDER BY {order}"
        ))
        .arg(session_id);
        self.fetch_all(&q.not_persistent()).await
    }
}
