//! The session as every door shows it: the row and its aggregates.

use serde::Serialize;

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

impl FeedbackCounts {
    /// All items.
    pub fn total(&self) -> i64 {
        self.message + self.tool_denial + self.interruption
    }
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

/// A session: the one view every door lists, shows and serialises.
#[derive(Debug, Clone, Default, sqlx::FromRow, Serialize)]
pub struct SessionListing {
    /// Session UUID.
    pub session_id: String,
    /// Project folder.
    pub project: String,
    /// The machine whose transcripts it came from first (a shared store holds several).
    pub machine: String,
    /// The user of that machine (config `user`); `None` for a session stored before Gleaner
    /// recorded users.
    #[sqlx(rename = "user_name")]
    pub user: Option<String>,
    /// Every machine holding a copy of one of its transcripts, by name.
    #[sqlx(skip)]
    pub machines: Vec<String>,
    /// Working directory.
    pub cwd: Option<String>,
    /// Git branch.
    pub git_branch: Option<String>,
    /// Claude Code version.
    pub version: Option<String>,
    /// Session slug.
    pub slug: Option<String>,
    /// First line of the first real prompt; without one, of the first summary, sub-agent
    /// prompt or assistant text (see `Store::fill_titles`); `None` when the session holds no
    /// text.
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
    /// Snippets kept from it.
    #[sqlx(skip)]
    pub snippets: i64,
    /// Its episodes that are not routine.
    #[sqlx(skip)]
    pub notable_episodes: i64,
}
