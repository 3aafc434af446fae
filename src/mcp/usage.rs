//! The `get_usage` tool: tokens and cost as `gleaner usage --json` gives them, with the same
//! arguments. A router of its own, merged with the others in [`super::Gleaner::new`].

use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router, ErrorData};
use schemars::JsonSchema;
use serde::Deserialize;

use super::args::Parameters;
use super::{done, store_err, Body, Gleaner};
use crate::query::usage::{report, UsageInput, UsageQuery};
use crate::query::Error as QueryError;

/// `get_usage`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UsageArgs {
    /// Rows by: day (default), week, month, session, project, model, machine, user or block
    /// (the 5-hour windows usage limits count; the open one is marked active).
    pub by: Option<String>,
    /// Only usage at or after this time: ISO date/time or an age (7d, 12h); to the hour.
    pub since: Option<String>,
    /// Only usage before this time (same forms as `since`).
    pub until: Option<String>,
    /// Only sessions whose project folder or working directory contains this text.
    pub project: Option<String>,
    /// Only sessions first written by this machine (its machine id).
    pub machine: Option<String>,
    /// Only sessions of this user.
    pub user: Option<String>,
    /// Split each row by model.
    pub breakdown: Option<bool>,
    /// Rows per page (default 50, at most 500).
    pub limit: Option<u32>,
    /// Rows to skip (use `next_offset` of the previous page).
    pub offset: Option<u32>,
}

#[tool_router(router = usage_router, vis = "pub(super)")]
impl Gleaner {
    #[tool(
        description = "Token usage and cost (USD) of past Claude Code sessions, from what Gleaner keeps (it outlives the transcripts): rows by day, week, month, session, project, model, machine, user or 5-hour block, newest first, each with input, output, cache-creation and cache-read tokens, total, cost (null when a model has no price) and models; plus totals over everything the filters select. Returns {by, rows, totals, next_offset}.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_usage(
        &self,
        Parameters(a): Parameters<UsageArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        done(self.get_usage_body(a).await)
    }
}

impl Gleaner {
    async fn get_usage_body(&self, a: UsageArgs) -> Body {
        let q = UsageQuery::parse(
            UsageInput {
                by: a.by.as_deref(),
                since: a.since.as_deref(),
                until: a.until.as_deref(),
                project: a.project,
                machine: a.machine,
                user: a.user,
                breakdown: a.breakdown.unwrap_or(false),
                limit: a.limit.map(u64::from),
                offset: a.offset.map(u64::from),
            },
            str::to_string,
        )
        .map_err(|e| e.to_string())?;
        let now = chrono::Utc::now().timestamp_millis();
        let r = report(&self.store, &q, &self.cfg.prices, now)
            .await
            .map_err(|e| match e {
                QueryError::Store(s) => store_err(s),
                other => other.to_string(),
            })?;
        serde_json::to_value(&r).map_err(|e| e.to_string())
    }
}
