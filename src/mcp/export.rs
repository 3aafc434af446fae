//! The `export_learnings` tool: the learnings export (`gleaner export --format learnings`) for
//! agents that keep their own memory. A router of its own, merged with the others in
//! [`super::Gleaner::new`].

use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router, ErrorData};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::args::Parameters;
use super::{fail, ok, page, page_size, store_err, time, Gleaner};
use crate::export::{self, ExportFilter};

/// `export_learnings`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportLearningsArgs {
    /// Only this session (a unique prefix of its id is enough).
    pub session_id: Option<String>,
    /// Only sessions whose project folder or working directory contains this text.
    pub project: Option<String>,
    /// Only sessions active at or after this time (ISO date/time, or an age such as 7d).
    pub since: Option<String>,
    /// Most learnings to return (default 50, at most 500).
    pub limit: Option<u32>,
}

#[tool_router(router = export_router, vis = "pub(super)")]
impl Gleaner {
    #[tool(
        description = "What was learned in past sessions, as learnings a memory store can import: one per non-routine snippet, {observation (what happened, concretely), generalization (the reusable lesson), project, type (mistake, decision, preference or pattern), tags (session:<id>, episode:<id>, turn:<n>, tools, files, errors)}. Newest sessions first. Use it to seed or refresh your own notes about a project."
    )]
    async fn export_learnings(
        &self,
        Parameters(a): Parameters<ExportLearningsArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(match self.export_learnings_body(a).await {
            Ok(v) => ok(v),
            Err(msg) => fail(msg),
        })
    }
}

impl Gleaner {
    async fn export_learnings_body(
        &self,
        a: ExportLearningsArgs,
    ) -> Result<serde_json::Value, String> {
        let limit = page_size("limit", a.limit, 50, 500)?;
        let filter = ExportFilter {
            session_ids: self.resolve_opt(a.session_id.as_deref()).await?,
            project: a.project,
            since: time("since", a.since.as_deref())?,
            until: None,
            limit: None,
        };
        let sessions = export::collect(&self.store, &filter)
            .await
            .map_err(store_err)?;
        let all: Vec<serde_json::Value> = sessions
            .iter()
            .flat_map(export::learnings)
            .map(|l| json!(l))
            .collect();
        let shown: Vec<serde_json::Value> = all.iter().take(limit as usize).cloned().collect();
        Ok(page(
            "learnings",
            &shown,
            0,
            all.len() as u64,
            &[],
            self.cap(),
        ))
    }
}
