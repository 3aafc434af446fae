//! Read-side queries shared by the CLI (and later the MCP server): plain structs, no printing.
//!
//! Session aggregates (files, sub-agents, tool calls, feedback, summaries, tokens) are computed
//! from their tables at query time rather than kept as counters: every one of them is keyed so
//! that re-reads and resumed-session copies count once, and a `COUNT` over those keys is exact
//! by construction.

use std::collections::HashMap;

use serde::Serialize;
use sqlx::QueryBuilder;

use super::{with_pool, Store, StoreError};
use crate::extract::rows::{now_iso, unix_millis_from_iso};

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

/// A session that went quiet, as found by [`Store::idle_sessions`].
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct IdleSession {
    /// Session id.
    pub session_id: String,
    /// Files of the session that still exist.
    pub live_files: i64,
    /// First activity.
    pub started_at: Option<String>,
    /// Last activity.
    pub last_activity_at: Option<String>,
}

/// How a session ended: its end is its last activity, its duration runs from its first.
fn end_of(started: Option<&str>, last: Option<&str>) -> (String, Option<i64>) {
    let ended = last.map_or_else(now_iso, str::to_string);
    let duration = match (
        started.and_then(unix_millis_from_iso),
        unix_millis_from_iso(&ended),
    ) {
        (Some(a), Some(b)) if b >= a => Some(b - a),
        _ => None,
    };
    (ended, duration)
}

const FINISH_SESSION: &str = "UPDATE sessions SET status = 'finished', ended_at = $1, \
     duration_ms = $2, end_reason = $3, updated_at = $4 \
     WHERE session_id = $5 AND status = 'active'";

/// The session a summary belongs to: the one holding the message its `leaf_uuid` names (the
/// earliest such session, so a resumed session's copy of that message does not take it over),
/// else the session of the file it was read from. Resolved at query time because the leaf is
/// often in a sibling file that may be read before or after the summary.
const SUMMARY_SESSION: &str = "COALESCE((SELECT h.session_id FROM summary_leaves h \
     JOIN sessions ms ON ms.session_id = h.session_id WHERE h.leaf_uuid = s.leaf_uuid \
     ORDER BY ms.started_at, h.session_id LIMIT 1), s.session_id)";

/// Escape `%`, `_` and `\` for a `LIKE ... ESCAPE '\'` pattern.
fn like_escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}

impl Store {
    /// Files of one machine, ordered by path.
    pub async fn list_files(&self, machine: &str) -> Result<Vec<FileListing>, StoreError> {
        let sql = "SELECT path, session_id, agent_id, size, byte_offset, lines, diagnostics, \
                   generation, state FROM files WHERE machine = $1 ORDER BY path";
        Ok(
            with_pool!(self, pool => sqlx::query_as::<_, FileListing>(sql)
            .bind(machine)
            .fetch_all(pool)
            .await?),
        )
    }

    /// Ids of the sessions whose id starts with `prefix` (at most 20).
    pub async fn sessions_with_prefix(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        let sql = "SELECT session_id FROM sessions WHERE session_id LIKE $1 ESCAPE '\\' \
                   ORDER BY session_id LIMIT 20";
        let pattern = format!("{}%", like_escape(&prefix.to_lowercase()));
        Ok(
            with_pool!(self, pool => sqlx::query_scalar::<_, String>(sql)
            .bind(pattern)
            .fetch_all(pool)
            .await?),
        )
    }

    /// Sessions, most recent activity first, with their aggregates.
    pub async fn list_sessions(
        &self,
        f: &SessionFilter,
    ) -> Result<Vec<SessionListing>, StoreError> {
        let mut sessions: Vec<SessionListing> = with_pool!(self, pool => {
            let mut qb = QueryBuilder::new(
                "SELECT session_id, project, cwd, git_branch, version, slug, title, started_at, \
                 last_activity_at, status, ended_at, duration_ms, end_reason, message_count \
                 FROM sessions WHERE 1 = 1",
            );
            if let Some(p) = &f.project {
                let pat = format!("%{}%", like_escape(p));
                qb.push(" AND (project LIKE ").push_bind(pat.clone());
                qb.push(" ESCAPE '\\' OR cwd LIKE ").push_bind(pat).push(" ESCAPE '\\')");
            }
            if let Some(s) = &f.since {
                qb.push(" AND last_activity_at >= ").push_bind(s.clone());
            }
            if let Some(s) = &f.status {
                qb.push(" AND status = ").push_bind(s.clone());
            }
            if let Some(ids) = &f.session_ids {
                qb.push(" AND session_id IN (");
                let mut sep = qb.separated(", ");
                for id in ids {
                    sep.push_bind(id.clone());
                }
                sep.push_unseparated(")");
                if ids.is_empty() {
                    qb.push(" AND 1 = 0");
                }
            }
            qb.push(" ORDER BY last_activity_at DESC, session_id");
            qb.build_query_as::<SessionListing>().fetch_all(pool).await?
        });
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
        let (files, agents, tools, feedback, summaries, tokens) = with_pool!(self, pool => {
            let files: Vec<Files> = sqlx::query_as(
                "SELECT session_id, COUNT(*), CAST(COALESCE(SUM(lines), 0) AS BIGINT) \
                 FROM files GROUP BY session_id",
            )
            .fetch_all(pool)
            .await?;
            let agents: Vec<Agent> = sqlx::query_as(
                "SELECT session_id, agent_id, agent_type, agent_description FROM files \
                 WHERE kind = 'agent' ORDER BY path",
            )
            .fetch_all(pool)
            .await?;
            let tools: Vec<Tools> = sqlx::query_as(
                "SELECT session_id, COUNT(name), \
                 CAST(COALESCE(SUM(CASE WHEN is_error THEN 1 ELSE 0 END), 0) AS BIGINT) \
                 FROM tool_uses GROUP BY session_id",
            )
            .fetch_all(pool)
            .await?;
            let feedback: Vec<Counted> = sqlx::query_as(
                "SELECT session_id, feedback_type, COUNT(*) FROM feedback \
                 GROUP BY session_id, feedback_type",
            )
            .fetch_all(pool)
            .await?;
            let summaries: Vec<Counted> = sqlx::query_as(&format!(
                "SELECT sid, kind, COUNT(*) FROM \
                 (SELECT {SUMMARY_SESSION} AS sid, s.kind FROM summaries s) x GROUP BY sid, kind"
            ))
            .fetch_all(pool)
            .await?;
            let tokens: Vec<Tokens> = sqlx::query_as(
                "SELECT session_id, CAST(SUM(input_tokens) AS BIGINT), \
                 CAST(SUM(output_tokens) AS BIGINT), \
                 CAST(SUM(cache_creation_input_tokens) AS BIGINT), \
                 CAST(SUM(cache_read_input_tokens) AS BIGINT) \
                 FROM assistant_usage GROUP BY session_id",
            )
            .fetch_all(pool)
            .await?;
            (files, agents, tools, feedback, summaries, tokens)
        });
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
        Ok(with_pool!(self, pool => {
            let mut qb = QueryBuilder::new(format!(
                "SELECT * FROM (SELECT s.kind, s.text, s.leaf_uuid, s.uuid, s.compact_trigger, \
                 s.pre_tokens, {SUMMARY_SESSION} AS session_id, s.agent_id, s.ts, \
                 f.path AS source_file, s.line_no \
                 FROM summaries s JOIN files f ON f.id = s.file_id) s WHERE 1 = 1"
            ));
            if let Some(ids) = session_ids {
                qb.push(" AND s.session_id IN (");
                let mut sep = qb.separated(", ");
                for id in ids {
                    sep.push_bind(id.clone());
                }
                sep.push_unseparated(")");
            }
            if let Some(k) = kind {
                qb.push(" AND s.kind = ").push_bind(k.to_string());
            }
            qb.push(" ORDER BY s.ts, s.source_file, s.line_no");
            qb.build_query_as::<SummaryListing>().fetch_all(pool).await?
        }))
    }

    /// Feedback items sorted by timestamp.
    pub async fn list_feedback(
        &self,
        f: &FeedbackFilter,
    ) -> Result<Vec<FeedbackListing>, StoreError> {
        Ok(with_pool!(self, pool => {
            let mut qb = QueryBuilder::new(
                "SELECT fb.ts, fb.session_id, fb.feedback_type, fb.content, fb.reason, \
                 fb.agent_id, fb.slug, fb.tool_use_id, fb.uuid, f.path AS source_file, fb.line_no \
                 FROM feedback fb JOIN files f ON f.id = fb.file_id \
                 LEFT JOIN sessions s ON s.session_id = fb.session_id WHERE 1 = 1",
            );
            if let Some(ids) = &f.session_ids {
                qb.push(" AND fb.session_id IN (");
                let mut sep = qb.separated(", ");
                for id in ids {
                    sep.push_bind(id.clone());
                }
                sep.push_unseparated(")");
            }
            if let Some(t) = &f.feedback_type {
                qb.push(" AND fb.feedback_type = ").push_bind(t.clone());
            }
            if let Some(p) = &f.project {
                let pat = format!("%{}%", like_escape(p));
                qb.push(" AND (s.project LIKE ").push_bind(pat.clone());
                qb.push(" ESCAPE '\\' OR s.cwd LIKE ").push_bind(pat).push(" ESCAPE '\\')");
            }
            if let Some(s) = &f.since {
                qb.push(" AND fb.ts >= ").push_bind(s.clone());
            }
            qb.push(" ORDER BY fb.ts, f.path, fb.line_no");
            qb.build_query_as::<FeedbackListing>().fetch_all(pool).await?
        }))
    }

    /// Row counts of the main tables.
    pub async fn counts(&self) -> Result<TableCounts, StoreError> {
        let sql = "SELECT (SELECT COUNT(*) FROM files) AS files, \
                   (SELECT COUNT(*) FROM sessions) AS sessions, \
                   (SELECT COUNT(*) FROM messages) AS messages, \
                   (SELECT COUNT(*) FROM diagnostics) AS diagnostics, \
                   (SELECT COUNT(*) FROM summaries) AS summaries, \
                   (SELECT COUNT(*) FROM feedback) AS feedback";
        Ok(
            with_pool!(self, pool => sqlx::query_as::<_, TableCounts>(sql)
            .fetch_one(pool)
            .await?),
        )
    }

    /// Active sessions with a file on `machine` and no live file modified at or after
    /// `cutoff_ms` (Unix ms). Sessions whose files are all gone qualify too.
    pub async fn idle_sessions(
        &self,
        machine: &str,
        cutoff_ms: i64,
    ) -> Result<Vec<IdleSession>, StoreError> {
        let sql = "SELECT s.session_id, s.started_at, s.last_activity_at, \
                   (SELECT COUNT(*) FROM files f WHERE f.session_id = s.session_id \
                    AND f.state = 'active') AS live_files \
                   FROM sessions s WHERE s.status = 'active' \
                   AND EXISTS (SELECT 1 FROM files f WHERE f.session_id = s.session_id \
                    AND f.machine = $1) \
                   AND NOT EXISTS (SELECT 1 FROM files f WHERE f.session_id = s.session_id \
                    AND f.state = 'active' AND f.mtime_ms >= $2)";
        Ok(
            with_pool!(self, pool => sqlx::query_as::<_, IdleSession>(sql)
            .bind(machine)
            .bind(cutoff_ms)
            .fetch_all(pool)
            .await?),
        )
    }

    /// Mark a session finished (`reason`: `idle`, `hook` or `deleted`). Its end is its last
    /// activity; its duration runs from its first. Returns false if it was not active.
    pub async fn finish_session(&self, session_id: &str, reason: &str) -> Result<bool, StoreError> {
        type Times = (Option<String>, Option<String>);
        let times: Option<Times> = with_pool!(self, pool => sqlx::query_as(
            "SELECT started_at, last_activity_at FROM sessions WHERE session_id = $1",
        )
        .bind(session_id)
        .fetch_optional(pool)
        .await?);
        let Some((started, last)) = times else {
            return Ok(false);
        };
        let (ended, duration) = end_of(started.as_deref(), last.as_deref());
        let now = now_iso();
        with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let n = sqlx::query(FINISH_SESSION)
                .bind(&ended)
                .bind(duration)
                .bind(reason)
                .bind(&now)
                .bind(session_id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if n == 1 {
                super::episodes::close_session_episodes!(tx, &[session_id], now.as_str());
            }
            tx.commit().await?;
            Ok(n == 1)
        })
    }

    /// Finish many idle sessions in one transaction (a backfill finds thousands at once).
    /// Returns how many changed.
    pub async fn finish_idle(&self, sessions: &[IdleSession]) -> Result<u64, StoreError> {
        let now = now_iso();
        with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let mut n = 0;
            let mut finished: Vec<&str> = Vec::with_capacity(sessions.len());
            for s in sessions {
                let (ended, duration) =
                    end_of(s.started_at.as_deref(), s.last_activity_at.as_deref());
                let reason = if s.live_files == 0 { "deleted" } else { "idle" };
                let changed = sqlx::query(FINISH_SESSION)
                    .bind(&ended)
                    .bind(duration)
                    .bind(reason)
                    .bind(&now)
                    .bind(&s.session_id)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                if changed == 1 {
                    finished.push(s.session_id.as_str());
                }
                n += changed;
            }
            super::episodes::close_session_episodes!(tx, &finished, now.as_str());
            tx.commit().await?;
            Ok(n)
        })
    }
}
