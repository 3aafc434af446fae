//! Sessions: one listing (every door's), one session by id, and id-prefix lookup.

use std::collections::HashMap;

use serde::Serialize;

use super::super::sql::Sql;
use super::super::{Backend, Page, Paged, SessionStatus, Store, StoreError};
use super::{every_page, push_origin_filter, push_project_filter, Origin};

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

/// How a session listing is ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionSort {
    /// Most recent activity first (sessions without a time last). Served by an index.
    #[default]
    Recent,
    /// Least recent activity first: [`SessionSort::Recent`] reversed (sessions without a time
    /// first), served by the same index read backwards.
    Oldest,
    /// Earliest start first.
    Started,
    /// Longest first.
    Duration,
    /// Most feedback first (counts every session's feedback: costs more on a large store).
    Feedback,
    /// Most snippets first (likewise).
    Snippets,
    /// By title.
    Title,
    /// By project.
    Project,
}

impl SessionSort {
    /// Every order, as the doors list them.
    pub const ALL: &'static [SessionSort] = &[
        SessionSort::Recent,
        SessionSort::Oldest,
        SessionSort::Started,
        SessionSort::Duration,
        SessionSort::Feedback,
        SessionSort::Snippets,
        SessionSort::Title,
        SessionSort::Project,
    ];

    /// Its name in flags and URLs.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionSort::Recent => "recent",
            SessionSort::Oldest => "oldest",
            SessionSort::Started => "started",
            SessionSort::Duration => "duration",
            SessionSort::Feedback => "feedback",
            SessionSort::Snippets => "snippets",
            SessionSort::Title => "title",
            SessionSort::Project => "project",
        }
    }

    /// `ORDER BY` terms (NULLs last on both backends; the id makes the order total, so pages
    /// neither skip nor repeat a row).
    fn order_by(self) -> &'static str {
        match self {
            SessionSort::Recent => "s.last_activity_at DESC NULLS LAST, s.session_id DESC",
            SessionSort::Oldest => "s.last_activity_at ASC NULLS FIRST, s.session_id ASC",
            SessionSort::Started => "s.started_at ASC NULLS LAST, s.session_id",
            SessionSort::Duration => "s.duration_ms DESC NULLS LAST, s.session_id",
            SessionSort::Feedback => {
                "(SELECT COUNT(*) FROM feedback f WHERE f.session_id = s.session_id) DESC, \
                 s.session_id"
            }
            SessionSort::Snippets => {
                "(SELECT COUNT(*) FROM snippets n WHERE n.session_id = s.session_id) DESC, \
                 s.session_id"
            }
            SessionSort::Title => "s.title ASC NULLS LAST, s.session_id",
            SessionSort::Project => "s.project, s.last_activity_at DESC NULLS LAST, s.session_id",
        }
    }
}

/// What a session listing is narrowed to.
#[derive(Debug, Clone, Default)]
pub struct SessionFilter {
    /// Project folder or working directory containing this text.
    pub project: Option<String>,
    /// Last activity at or after this time (as stored: `query::TimeBound::as_stored`).
    pub since: Option<String>,
    /// Started strictly before this time.
    pub until: Option<String>,
    /// Only sessions in this state.
    pub status: Option<SessionStatus>,
    /// Only these sessions.
    pub session_ids: Option<Vec<String>>,
    /// Who and where: sessions held by this machine or user.
    pub origin: Origin,
    /// Only sessions whose tools read, edited or wrote this file (its path, or a tail of it
    /// after a `/`: `src/auth.rs`).
    pub file: Option<String>,
    /// Only sessions on this git branch (as last seen).
    pub branch: Option<String>,
    /// Only sessions with a reply from a model whose name contains this text (`opus`).
    pub model: Option<String>,
    /// Leave out sessions with no typed prompt (warm-ups, empty ones): the doors' listings do
    /// unless asked for all (`--all`), as they crowd a project's list and hold nothing to
    /// read; exports and internal walks take every session.
    pub hide_unprompted: bool,
    /// The order.
    pub sort: SessionSort,
    /// Only sessions after this one in the `Recent` order (keyset paging: a walk over every
    /// session costs the same per page at its end as at its start, where `OFFSET` would skip
    /// all the rows before).
    pub after: Option<SessionCursor>,
}

/// Where a walk over sessions in the `Recent` order stopped: the last session's activity time
/// and id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionCursor {
    /// Its last activity (`None`: it had none; those come last).
    pub last_activity_at: Option<String>,
    /// Its id.
    pub session_id: String,
}

impl SessionCursor {
    /// The cursor after `s`.
    pub fn after(s: &SessionListing) -> SessionCursor {
        SessionCursor {
            last_activity_at: s.last_activity_at.clone(),
            session_id: s.session_id.clone(),
        }
    }
}

/// Whether session `s` holds a prompt someone typed: Claude Code's warm-up sessions (a
/// `Warmup` prompt it sends itself) and sessions with no prompt are left out of listings
/// unless asked for (`SessionFilter::hide_unprompted`); a session asked for by id is always
/// shown.
pub(in crate::store) const PROMPTED: &str = "SELECT 1 FROM feedback pf \
     WHERE pf.session_id = s.session_id AND pf.feedback_type = 'message' \
     AND pf.content <> 'Warmup'";

/// The summaries' session: the one holding the message its `leaf_uuid` names (the earliest
/// such session, so a resumed session's copy of that message does not take it over), else the
/// session of the file it was read from. Resolved at query time because the leaf is often in
/// a sibling file that may be read before or after the summary.
pub(in crate::store) const SUMMARY_SESSION: &str = "COALESCE((SELECT h.session_id FROM \
     summary_leaves h JOIN sessions ms ON ms.session_id = h.session_id \
     WHERE h.leaf_uuid = s.leaf_uuid ORDER BY ms.started_at, h.session_id LIMIT 1), s.session_id)";

/// The ids of the summaries that may belong to `ids`: read from their files, or naming a leaf
/// one of them holds. A `UNION` of two index lookups: the same test written with `OR` made
/// PostgreSQL scan every summary.
pub(in crate::store) fn push_summary_candidates<'a>(q: &mut Sql<'a>, ids: &[String]) {
    q.push("SELECT c.id FROM summaries c WHERE ")
        .push_in("c.session_id", ids.iter().cloned())
        .push(
            " UNION SELECT c.id FROM summaries c JOIN summary_leaves l \
               ON l.leaf_uuid = c.leaf_uuid WHERE ",
        )
        .push_in("l.session_id", ids.iter().cloned());
}

impl Store {
    /// Ids and titles of the sessions whose id starts with `prefix` (case ignored: ids are
    /// lower-case), at most `limit`, by id. The one lookup behind every door's session
    /// references (`query::resolve_session`).
    ///
    /// Why a range and not `LIKE 'p%'`: neither backend takes an index for that `LIKE` here
    /// (SQLite's `LIKE` ignores case, the primary key compares exactly; PostgreSQL needs the
    /// `C` collation for it, and a team's database rarely has it), so every lookup read the
    /// whole sessions table. `[p, p + U+10FFFF)` in byte order holds exactly the ids starting
    /// with `p`: SQLite compares bytes, PostgreSQL compares `COLLATE "C"` over the
    /// `sessions_id_c` index (migration 0014).
    pub async fn sessions_with_prefix(
        &self,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<(String, Option<String>)>, StoreError> {
        let low = prefix.to_lowercase();
        let high = format!("{low}\u{10FFFF}");
        let id = match self.backend() {
            Backend::Sqlite => "session_id",
            Backend::Postgres => "session_id COLLATE \"C\"",
        };
        let q = Sql::new(format!(
            "SELECT session_id, title FROM sessions WHERE {id} >= $1 AND {id} < $2 \
             ORDER BY {id} LIMIT $3"
        ))
        .arg(low)
        .arg(high)
        .arg(i64::from(limit));
        self.fetch_all(&q).await
    }

    /// One page of sessions matching `f`, with their aggregates.
    pub async fn sessions(
        &self,
        f: &SessionFilter,
        page: Page,
    ) -> Result<Paged<SessionListing>, StoreError> {
        let mut q = Sql::new(
            "SELECT s.session_id, s.project, s.machine, s.user_name, s.cwd, s.git_branch, s.version, s.slug, s.title, \
             s.started_at, s.last_activity_at, s.status, s.ended_at, s.duration_ms, \
             s.end_reason, s.message_count FROM sessions s WHERE 1 = 1",
        );
        if let Some(p) = &f.project {
            push_project_filter(&mut q, p, "s.project", "s.cwd");
        }
        if let Some(s) = &f.since {
            q.push(" AND s.last_activity_at >= ").push_bind(s.as_str());
        }
        if let Some(u) = &f.until {
            q.push(" AND s.started_at < ").push_bind(u.as_str());
        }
        if let Some(s) = f.status {
            q.push(" AND s.status = ").push_bind(s.as_str());
        }
        if let Some(ids) = &f.session_ids {
            q.push(" AND ").push_in("s.session_id", ids);
        }
        push_origin_filter(&mut q, &f.origin, "s.session_id");
        if let Some(path) = &f.file {
            super::touched::push_file_filter(&mut q, self.backend(), path, "s.session_id");
        }
        if let Some(b) = &f.branch {
            q.push(" AND s.git_branch = ").push_bind(b.as_str());
        }
        if let Some(m) = &f.model {
            // The per-session usage rollup (one row per session and model) names its models.
            q.push(
                " AND s.session_id IN (SELECT ug.key FROM usage_groups ug \
                 WHERE ug.kind = 'session' AND ug.model LIKE ",
            )
            .push_bind(super::super::sql::contains_pattern(m))
            .push(" ESCAPE '\\')");
        }
        if f.hide_unprompted && f.session_ids.is_none() {
            q.push(&format!(" AND EXISTS ({PROMPTED})"));
        }
        // After the cursor in `last_activity_at DESC NULLS LAST, session_id DESC`.
        match f
            .after
            .as_ref()
            .map(|c| (c.last_activity_at.as_deref(), c.session_id.as_str()))
        {
            // A row comparison, which both backends answer with a range of the index.
            Some((Some(at), id)) => {
                q.push(" AND ((s.last_activity_at, s.session_id) < (")
                    .push_bind(at)
                    .push(", ")
                    .push_bind(id)
                    .push(") OR s.last_activity_at IS NULL)");
            }
            Some((None, id)) => {
                q.push(" AND s.last_activity_at IS NULL AND s.session_id < ")
                    .push_bind(id);
            }
            None => {}
        }
        q.push(&format!(" ORDER BY {} LIMIT ", f.sort.order_by()))
            .push_bind(i64::from(page.probe()))
            .push(" OFFSET ")
            .push_bind(i64::from(page.offset));
        let rows: Vec<SessionListing> = self.fetch_all(&q.not_persistent()).await?;
        let mut paged = page.finish(rows, None);
        self.fill_aggregates(&mut paged.items).await?;
        self.fill_titles(&mut paged.items).await?;
        Ok(paged)
    }

    /// One session by its full id.
    pub async fn session(&self, session_id: &str) -> Result<Option<SessionListing>, StoreError> {
        let f = SessionFilter {
            session_ids: Some(vec![session_id.to_string()]),
            ..SessionFilter::default()
        };
        let page = Page {
            limit: 1,
            offset: 0,
        };
        Ok(self.sessions(&f, page).await?.items.into_iter().next())
    }

    /// Every session matching `f` (tests; exports walk with [`SessionFilter::after`]).
    pub async fn list_sessions(
        &self,
        f: &SessionFilter,
    ) -> Result<Vec<SessionListing>, StoreError> {
        every_page(|page| self.sessions(f, page)).await
    }

    /// The aggregates of `sessions` (one page), each an indexed lookup by their ids.
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
        type Count = (String, i64);
        type Tokens = (String, i64, i64, i64, i64);
        if sessions.is_empty() {
            return Ok(());
        }
        let ids: Vec<String> = sessions.iter().map(|s| s.session_id.clone()).collect();
        let with_ids = |head: &str, col: &str, tail: &str| {
            let mut q = Sql::new(head);
            q.push(" WHERE ")
                .push_in(col, ids.iter().cloned())
                .push(tail);
            q.not_persistent()
        };
        let mut pooled = self.acquire().await?;
        let mut c = pooled.conn();
        // Per transcript: several machines may hold copies of it (`store::copies`), which
        // count once, with the lines of the longest.
        let files: Vec<Files> = c
            .fetch_all(&with_ids(
                "SELECT session_id, COUNT(*), CAST(COALESCE(SUM(lines), 0) AS BIGINT) FROM \
                 (SELECT session_id, MAX(lines) AS lines FROM files",
                "session_id",
                " GROUP BY session_id, kind, COALESCE(agent_id, '')) t GROUP BY session_id",
            ))
            .await?;
        let holders: Vec<(Option<String>, String)> = c
            .fetch_all(&with_ids(
                "SELECT DISTINCT session_id, machine FROM files",
                "session_id",
                " ORDER BY machine",
            ))
            .await?;
        let agents: Vec<Agent> = c
            .fetch_all(&with_ids(
                "SELECT session_id, agent_id, agent_type, agent_description FROM files",
                "session_id",
                " AND kind = 'agent' ORDER BY path",
            ))
            .await?;
        let tools: Vec<Tools> = c
            .fetch_all(&with_ids(
                "SELECT session_id, COUNT(name), \
                 CAST(COALESCE(SUM(CASE WHEN is_error THEN 1 ELSE 0 END), 0) AS BIGINT) \
                 FROM tool_uses",
                "session_id",
                " GROUP BY session_id",
            ))
            .await?;
        let feedback: Vec<Counted> = c
            .fetch_all(&with_ids(
                "SELECT session_id, feedback_type, COUNT(*) FROM feedback",
                "session_id",
                " GROUP BY session_id, feedback_type",
            ))
            .await?;
        // A summary counts for the session its leaf names: candidates are the rows read from
        // these sessions' files and the rows whose leaf one of them holds.
        let mut q = Sql::new(format!(
            "SELECT sid, kind, COUNT(*) FROM (SELECT {SUMMARY_SESSION} AS sid, s.kind \
             FROM summaries s WHERE s.id IN ("
        ));
        push_summary_candidates(&mut q, &ids);
        q.push(")) x WHERE ")
            .push_in("sid", ids.iter().cloned())
            .push(" GROUP BY sid, kind");
        let summaries: Vec<Counted> = c.fetch_all(&q.not_persistent()).await?;
        let tokens: Vec<Tokens> = c
            .fetch_all(&with_ids(
                "SELECT session_id, CAST(SUM(input_tokens) AS BIGINT), \
                 CAST(SUM(output_tokens) AS BIGINT), \
                 CAST(SUM(cache_creation_input_tokens) AS BIGINT), \
                 CAST(SUM(cache_read_input_tokens) AS BIGINT) FROM usage_messages",
                "session_id",
                " GROUP BY session_id",
            ))
            .await?;
        let snippets: Vec<Count> = c
            .fetch_all(&with_ids(
                "SELECT session_id, COUNT(*) FROM snippets",
                "session_id",
                " GROUP BY session_id",
            ))
            .await?;
        let episodes: Vec<Count> = c
            .fetch_all(&with_ids(
                "SELECT session_id, COUNT(*) FROM episodes",
                "session_id",
                " AND triage <> 'routine' GROUP BY session_id",
            ))
            .await?;
        drop(pooled);
        let index: HashMap<&str, usize> = ids
            .iter()
            .enumerate()
            .map(|(i, s)| (s.as_str(), i))
            .collect();
        let at = |id: &str| index.get(id).copied();
        for (sid, n, lines) in files {
            if let Some(i) = sid.as_deref().and_then(at) {
                sessions[i].files = n;
                sessions[i].lines = lines;
            }
        }
        for (sid, machine) in holders {
            if let Some(i) = sid.as_deref().and_then(at) {
                sessions[i].machines.push(machine);
            }
        }
        let mut seen_agents: std::collections::HashSet<(usize, Option<String>)> =
            std::collections::HashSet::new();
        for (sid, agent_id, agent_type, description) in agents {
            if let Some(i) = sid.as_deref().and_then(at) {
                // A sub-agent held by several machines is one sub-agent.
                if agent_id.is_some() && !seen_agents.insert((i, agent_id.clone())) {
                    continue;
                }
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
        for (sid, n) in snippets {
            if let Some(i) = at(&sid) {
                sessions[i].snippets = n;
            }
        }
        for (sid, n) in episodes {
            if let Some(i) = at(&sid) {
                sessions[i].notable_episodes = n;
            }
        }
        Ok(())
    }
}
