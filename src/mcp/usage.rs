//! The `get_usage` tool: tokens and cost as `gleaner usage --json` gives them, with the same
//! arguments. A router of its own, merged with the others in [`super::Gleaner::new`].

use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router, ErrorData};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::args::Parameters;
use super::{done, store_err, Body, Gleaner};

use crate::query::usage::{report, UsageInput, UsageQuery, UsageReport};
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
        Ok(capped(r, q.page.offset, self.cap()))
    }
}

/// The report within `cap` characters, as every list tool answers: the most rows that fit
/// (binary search on the count), `next_offset` then pointing at the first row left out. The
/// totals are always whole: they cover everything the filters select, not the page.
fn capped(mut r: UsageReport, offset: u32, cap: usize) -> Value {
    let value = |r: &UsageReport| serde_json::to_value(r).unwrap_or(Value::Null);
    let fits = |v: &Value| v.to_string().chars().count() <= cap;
    let all = value(&r);
    if fits(&all) {
        return all;
    }
    let rows = std::mem::take(&mut r.rows);
    let with = |r: &mut UsageReport, n: usize| {
        r.rows = rows[..n].to_vec();
        r.next_offset = Some(u64::from(offset) + n as u64);
        value(r)
    };
    let (mut lo, mut hi) = (0, rows.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(&with(&mut r, mid)) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    with(&mut r, lo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::usage::{By, Figures, UsageRow};

    fn report(rows: usize) -> UsageReport {
        let row = |i: usize| UsageRow {
            key: format!("2026-03-{i:02}"),
            figures: Figures::default(),
            models: vec!["claude-opus-4-5".into()],
            breakdown: None,
            block: None,
        };
        UsageReport {
            by: By::Day,
            rows: (0..rows).map(row).collect(),
            totals: Figures::default(),
            next_offset: None,
            undated: false,
        }
    }

    #[test]
    fn a_report_too_long_for_the_cap_keeps_the_rows_that_fit_and_says_where_to_go_on() {
        let whole = capped(report(3), 0, 20_000);
        assert_eq!(whole["rows"].as_array().map(Vec::len), Some(3));
        assert_eq!(whole["next_offset"], Value::Null);
        let cut = capped(report(200), 10, 4_000);
        let n = cut["rows"].as_array().map(Vec::len).unwrap_or(0);
        assert!(n > 0 && n < 200, "{n}");
        assert_eq!(cut["next_offset"], 10 + n as u64);
        assert!(cut.to_string().chars().count() <= 4_000);
        assert!(cut["totals"].is_object(), "the totals stay");
    }
}
