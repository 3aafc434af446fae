//! Sessions: one listing (every door's), one session by id, and id-prefix lookup; the row
//! (`view`) and what narrows a listing (`filter`) in files of their own.

mod filter;
mod view;

pub(in crate::store) use filter::PROMPTED;
pub use filter::{SessionCursor, SessionFilter, SessionSort};
pub use view::{FeedbackCounts, SessionListing, SubAgent, SummaryCounts, TokenTotals};

use std::collections::HashMap;

use super::super::sql::Sql;
use super::super::{Backend, Page, Paged, Store, StoreError};
use super::{every_page, push_origin_filter, push_project_filter};

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
