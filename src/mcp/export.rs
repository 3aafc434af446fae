//! The `export_learnings` tool: the learnings export (`gleaner export --format learnings`) for
//! agents that keep their own memory. A router of its own, merged with the others in
//! [`super::Gleaner::new`].

use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router, ErrorData};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::args::Parameters;
use super::{done, origin, page, page_of, store_err, time, Gleaner};
use crate::export;
use crate::query::store::SnippetFilter;

/// `export_learnings`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportLearningsArgs {
    /// Only this session (a unique prefix of its id is enough).
    pub session_id: Option<String>,
    /// Only sessions whose project folder or working directory contains this text.
    pub project: Option<String>,
    /// Only sessions with a transcript on this machine (its machine id; a shared store holds
    /// several: `list_sessions` shows each session's machines).
    pub machine: Option<String>,
    /// Only sessions of this user (the `user` of the machine that holds them).
    pub user: Option<String>,
    /// Only learnings kept at or after this time (ISO date/time, or an age such as 7d).
    pub since: Option<String>,
    /// Most learnings to return (default 50, at most 500).
    pub limit: Option<u32>,
    /// Learnings to skip (use `next_offset` of the previous page).
    pub offset: Option<u32>,
}

#[tool_router(router = export_router, vis = "pub(super)")]
impl Gleaner {
    #[tool(
        description = "What was learned in past sessions, as learnings a memory store can import: one per non-routine snippet, {observation (what happened, concretely), generalization (the reusable lesson), project, type (mistake, decision, preference or pattern), tags (session:<id>, episode:<id>, turn:<n>, tools, files, errors)}. Newest first. Use it to seed or refresh your own notes about a project.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn export_learnings(
        &self,
        Parameters(a): Parameters<ExportLearningsArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        done(self.export_learnings_body(a).await)
    }
}

/// Snippets read per round while filling a page of learnings.
const ROUND: u32 = 200;

/// Most snippets one call reads: the answer stays bounded however rare learnings are among
/// the snippets (it then says `has_more` with the offset to go on from).
const MAX_SCANNED: u32 = 5_000;

impl Gleaner {
    /// A page of learnings: snippets newest first, those of non-routine work turned into
    /// learnings, each with the episode it came from (for its turn). Paged over snippets in
    /// SQL, so its cost is that of the page, not of the store.
    async fn export_learnings_body(
        &self,
        a: ExportLearningsArgs,
    ) -> Result<serde_json::Value, String> {
        let p = page_of(a.limit, a.offset, 50, crate::query::MAX_LISTING)?;
        let mut filter = SnippetFilter {
            session_ids: self.resolve_opt(a.session_id.as_deref()).await?,
            project: crate::query::project(("project", a.project)).map_err(|e| e.to_string())?,
            origin: origin(a.machine, a.user)?,
            since: time("since", a.since.as_deref())?,
            limit: ROUND,
            offset: 0,
            ..SnippetFilter::default()
        };
        // Learnings before the page (skipped), then the page and one more (to know if more
        // follow).
        let want = p.offset as usize + p.limit as usize + 1;
        let mut found = Vec::new();
        let mut scanned = 0u32;
        let mut exhausted = false;
        while found.len() < want && scanned < MAX_SCANNED {
            let batch = self.store.list_snippets(&filter).await.map_err(store_err)?;
            scanned += batch.snippets.len() as u32;
            found.extend(batch.snippets.into_iter().filter(export::is_learning));
            if !batch.has_more {
                exhausted = true;
                break;
            }
            filter.offset += ROUND;
        }
        let rows: Vec<_> = found.into_iter().skip(p.offset as usize).collect();
        let ids: Vec<i64> = rows.iter().filter_map(|s| s.episode_id).collect();
        let episodes = self
            .store
            .episodes_with_ids(&ids)
            .await
            .map_err(store_err)?;
        let learnings: Vec<serde_json::Value> = rows
            .iter()
            .map(|sn| {
                let ep = episodes.iter().find(|e| Some(e.id) == sn.episode_id);
                json!(export::learning(sn, ep))
            })
            .collect();
        let more = learnings.len() > p.limit as usize || !exhausted;
        let mut paged = p.finish(learnings, None);
        if more && !paged.has_more {
            paged.has_more = true;
            paged.next_offset = Some(u64::from(p.offset) + paged.items.len() as u64);
        }
        Ok(page("learnings", &paged, p.offset, &[], self.cap()))
    }
}
