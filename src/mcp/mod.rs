//! `gleaner mcp`: the Model Context Protocol over stdio, for coding agents to query their own
//! history.
//!
//! Built on the official SDK (`rmcp`): it owns the JSON-RPC framing, the lifecycle and protocol
//! version negotiation; the tools are in [`tools`], their argument types (and so their JSON
//! schemas) in [`args`]. The server reads the database directly, like the CLI, so it works
//! whether or not the daemon runs, and as a reader it never holds the daemon's writer up
//! (SQLite's WAL lets readers and the one writer proceed together).
//!
//! stdout carries only JSON-RPC; logs go to stderr. A call with bad arguments is answered with
//! an error (invalid parameters, or a tool result marked `isError` saying what is wrong) and
//! the server keeps serving. Every result is capped at `mcp.max_result_chars` characters: lists
//! are cut and say `has_more` / `next_offset`, texts are cut and say so.

mod args;
mod export;
mod tools;

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{tool_handler, ServerHandler, ServiceExt};
use serde::Serialize;
use serde_json::Value;

use crate::config::Config;
use crate::store::{Store, StoreError};

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The transport or the protocol's initialisation failed.
    #[error("MCP server: {0}")]
    Serve(String),
}

/// The server: a store and the configuration, shared by every call.
#[derive(Clone)]
pub struct Gleaner {
    store: Store,
    cfg: Arc<Config>,
    tool_router: ToolRouter<Gleaner>,
}

/// What a model is told about the server when it connects.
const INSTRUCTIONS: &str = "Gleaner keeps what mattered in past Claude Code sessions on this \
machine: compaction summaries, what the user said (prompts, tool denials, interruptions), \
episodes labelled by what happened (error_recovery, user_correction, pivot, design_decision) \
and snippets of reasoning. Start with `search` (full text over all of it) or `list_sessions`; \
read `get_session` for an overview before asking for more; `get_conversation` and \
`get_transcript_lines` give the words themselves; `export_learnings` gives what was learned as \
observation/generalization pairs. Session ids may be given as unique prefixes.";

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Gleaner {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("gleaner", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}

impl Gleaner {
    /// A server over a connected store.
    pub fn new(cfg: Arc<Config>, store: Store) -> Gleaner {
        Gleaner {
            store,
            cfg,
            tool_router: Self::tool_router() + Self::export_router(),
        }
    }

    /// Serve on stdin/stdout until the client closes the connection.
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        let service = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| McpError::Serve(e.to_string()))?;
        service
            .waiting()
            .await
            .map_err(|e| McpError::Serve(e.to_string()))?;
        Ok(())
    }

    /// The largest result, in characters.
    fn cap(&self) -> usize {
        self.cfg.mcp.max_result_chars
    }

    /// The full id of a session given by id or unique prefix.
    async fn resolve(&self, prefix: &str) -> Result<String, String> {
        let p = prefix.trim();
        if p.is_empty() {
            return Err("session_id is empty".into());
        }
        let mut ids = self
            .store
            .sessions_with_prefix(p)
            .await
            .map_err(store_err)?;
        match ids.len() {
            0 => Err(format!("no session found with id or prefix {p:?}")),
            1 => Ok(ids.remove(0)),
            _ => Err(format!(
                "session prefix {p:?} is ambiguous; it matches {} (give more characters)",
                ids.join(", ")
            )),
        }
    }

    /// [`Gleaner::resolve`] for an optional filter: `None` stays `None`.
    async fn resolve_opt(&self, prefix: Option<&str>) -> Result<Option<Vec<String>>, String> {
        match prefix {
            None => Ok(None),
            Some(p) => Ok(Some(vec![self.resolve(p).await?])),
        }
    }
}

/// A store failure as a tool error's text.
fn store_err(e: StoreError) -> String {
    format!("database error: {e}")
}

/// A time filter (`since`, `until`, ...) as stored times compare, or the error naming the field.
fn time(field: &str, v: Option<&str>) -> Result<Option<String>, String> {
    match v {
        None => Ok(None),
        Some(s) => crate::extract::rows::time_or_age(s)
            .map(Some)
            .ok_or_else(|| {
                format!("invalid {field} {s:?}: expected a date like 2026-01-31 or an age like 7d")
            }),
    }
}

/// A page size: `default` when absent, else 1..=`max`.
fn page_size(field: &str, v: Option<u32>, default: u32, max: u32) -> Result<u32, String> {
    match v {
        None => Ok(default),
        Some(n) if (1..=max).contains(&n) => Ok(n),
        Some(n) => Err(format!("{field} must be 1 to {max}, got {n}")),
    }
}

/// A successful result: the value as JSON (structured content and its text).
fn ok(v: Value) -> CallToolResult {
    CallToolResult::structured(v)
}

/// A failed call: the message, as a tool result marked as an error.
fn fail(msg: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(msg.into())])
}

/// One page of `items` (already the page after `offset`) under `key`, with `total_count`,
/// `has_more` and `next_offset`, cut to the items that fit in `cap` characters of JSON.
fn page<T: Serialize>(
    key: &str,
    items: &[T],
    offset: u64,
    total: u64,
    extra: &[(&str, Value)],
    cap: usize,
) -> Value {
    let build = |n: usize| {
        let end = offset + n as u64;
        let has_more = end < total;
        let mut m = serde_json::Map::new();
        for (k, v) in extra {
            m.insert((*k).to_string(), v.clone());
        }
        m.insert(
            key.to_string(),
            serde_json::to_value(&items[..n]).unwrap_or(Value::Null),
        );
        m.insert("total_count".into(), Value::from(total));
        m.insert("has_more".into(), Value::from(has_more));
        m.insert(
            "next_offset".into(),
            if has_more {
                Value::from(end)
            } else {
                Value::Null
            },
        );
        Value::Object(m)
    };
    let fits = |v: &Value| v.to_string().chars().count() <= cap;
    let all = build(items.len());
    if fits(&all) {
        return all;
    }
    // The most items that fit (at least none): binary search on the count.
    let (mut lo, mut hi) = (0, items.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(&build(mid)) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    build(lo)
}

/// `s` cut to `max` characters, and whether it was cut.
fn cut_text(s: &str, max: usize) -> (String, bool) {
    if s.chars().count() <= max {
        (s.to_string(), false)
    } else {
        (s.chars().take(max).collect(), true)
    }
}

/// Run `gleaner mcp`.
pub async fn serve(cfg: Arc<Config>, store: Store) -> Result<(), McpError> {
    tracing::info!("MCP server on stdio");
    Gleaner::new(cfg, store).serve_stdio().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_cut_to_fit_and_say_where_to_go_on() {
        let items: Vec<String> = (0..50).map(|i| format!("item number {i:03}")).collect();
        let v = page(
            "xs",
            &items,
            10,
            100,
            &[("success", Value::Bool(true))],
            200,
        );
        assert!(v.to_string().chars().count() <= 200, "{v}");
        let n = v["xs"].as_array().map_or(0, Vec::len);
        assert!(n > 0 && n < 50, "{v}");
        assert_eq!(v["has_more"], true);
        assert_eq!(v["next_offset"], 10 + n as u64);
        assert_eq!(v["total_count"], 100);
        assert_eq!(v["success"], true);
        let all = page("xs", &items[..2], 0, 2, &[], 20_000);
        assert_eq!(all["has_more"], false);
        assert_eq!(all["next_offset"], Value::Null);
    }

    #[test]
    fn arguments_are_checked() {
        assert_eq!(page_size("limit", None, 20, 200), Ok(20));
        assert!(page_size("limit", Some(0), 20, 200).is_err());
        assert!(page_size("limit", Some(201), 20, 200).is_err());
        assert!(time("since", Some("yesterday")).is_err());
        assert_eq!(
            time("since", Some("2026-01-31")),
            Ok(Some("2026-01-31".into()))
        );
        assert_eq!(cut_text("abcdef", 3), ("abc".into(), true));
    }
}
