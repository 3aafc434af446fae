//! `gleaner mcp`: the Model Context Protocol over stdio, for coding agents to query their own
//! history.
//!
//! Built on the official SDK (`rmcp`): it owns the JSON-RPC framing, the lifecycle and protocol
//! version negotiation; the tools are in `listings`, `session`, `snippets` and `export` (one
//! router each), their argument types (and so their JSON schemas) in [`args`]. The server reads the database directly, like the CLI, so it works
//! whether or not the daemon runs, and as a reader it never holds the daemon's writer up
//! (SQLite's WAL lets readers and the one writer proceed together).
//!
//! stdout carries only JSON-RPC; logs go to stderr. A call with bad arguments to a known tool is
//! answered with a tool result marked `isError` saying what is wrong, whether the value has the
//! wrong type or is out of range (so the model reads it and can try again, as MCP's 2025-11-25
//! revision asks of input validation); an unknown tool is a JSON-RPC error. The server keeps
//! serving either way. Every result is capped at `mcp.max_result_chars` characters: lists
//! are cut and say `has_more` / `next_offset`, texts are cut and say so.

mod args;
mod export;
mod frame;
mod listings;
mod session;
mod snippets;
mod usage;

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorCode,
    Implementation, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{tool_handler, RoleServer, ServerHandler, ServiceExt};
use serde::Serialize;
use serde_json::Value;

use crate::config::Config;
use crate::query::overview::cut_text;
use crate::query::store::{Origin, Store, StoreError};
use crate::query::{self, Page, Paged};

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
const INSTRUCTIONS: &str = "Gleaner keeps what mattered in past Claude Code sessions (of this \
machine, or of several machines sharing one store): compaction summaries, what the user said (prompts, tool denials, interruptions), \
episodes labelled by what happened (error_recovery, user_correction, pivot, design_decision) \
and snippets of reasoning. Start with `search` (full text over all of it) or `list_sessions`; \
read `get_session` for an overview before asking for more; `get_conversation` and \
`get_transcript_lines` give the words themselves; `get_usage` gives tokens and cost; `export_learnings` gives what was learned as \
observation/generalization pairs. Session ids may be given as unique prefixes.";

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Gleaner {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("gleaner", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    /// The router's call, with an argument of the wrong type answered as an error result like
    /// every other bad argument. Why here: a tool's body never fails with invalid parameters
    /// (it answers `done`), so from a known tool that code can only come from reading the
    /// arguments (`args::Parameters`); an unknown tool stays a JSON-RPC error.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        if !self.tool_router.has_route(&request.name) {
            // rmcp says only "tool not found": name it, and what there is.
            let mut tools: Vec<String> = self
                .tool_router
                .list_all()
                .into_iter()
                .map(|t| t.name.into_owned())
                .collect();
            tools.sort();
            return Err(rmcp::ErrorData::invalid_params(
                format!("no tool {:?}; tools: {}", request.name, tools.join(", ")),
                None,
            ));
        }
        let call = ToolCallContext::new(self, request, context);
        match self.tool_router.call(call).await {
            Err(e) if e.code == ErrorCode::INVALID_PARAMS => {
                Ok(fail(e.message.into_owned()).into())
            }
            other => other,
        }
    }
}

impl Gleaner {
    /// A server over a connected store.
    pub fn new(cfg: Arc<Config>, store: Store) -> Gleaner {
        Gleaner {
            store,
            cfg,
            tool_router: Self::listing_router()
                + Self::session_router()
                + Self::snippet_router()
                + Self::export_router()
                + Self::usage_router(),
        }
    }

    /// Serve on stdin/stdout until the client closes the connection.
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        let (stdin, stdout) = rmcp::transport::stdio();
        let io = frame::checked(stdin, stdout);
        let end = match self.serve((io.input, io.output)).await {
            Ok(service) => service.waiting().await.map(drop).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        // Every answer written before the process ends, on either path (the writer ends with
        // rmcp's output; bounded all the same, an exit must not hang on it).
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), io.writer).await;
        end.map_err(McpError::Serve)
    }

    /// The largest result, in characters.
    fn cap(&self) -> usize {
        self.cfg.mcp.max_result_chars
    }

    /// The full id of a session given by id or unique prefix.
    async fn resolve(&self, prefix: &str) -> Result<String, String> {
        query::resolve_session(&self.store, "session_id", prefix)
            .await
            .map_err(|e| e.to_string())
    }

    /// [`Gleaner::resolve`] for an optional filter: `None` stays `None`.
    async fn resolve_opt(&self, prefix: Option<&str>) -> Result<Option<Vec<String>>, String> {
        query::resolve_optional_session(&self.store, "session_id", prefix)
            .await
            .map_err(|e| e.to_string())
    }
}

/// A tool's body: `Ok` is its result, `Err` the text of an error result.
type Body = Result<Value, String>;

/// A tool's answer: a result, or an error result saying what is wrong (the server goes on).
fn done(body: Body) -> Result<CallToolResult, rmcp::ErrorData> {
    Ok(match body {
        Ok(v) => ok(v),
        Err(msg) => fail(msg),
    })
}

/// A store failure as a tool error's text.
fn store_err(e: StoreError) -> String {
    format!("database error: {e}")
}

/// A time filter (`since`, `until`, ...) as stored times compare, or the error naming the field.
fn time(field: &str, v: Option<&str>) -> Result<Option<String>, String> {
    query::time_opt(field, v).map_err(|e| e.to_string())
}

/// A `since`/`until` pair as one range: a date alone as the end includes its day, and a start
/// not before the end is an error ([`query::time_range_stored`]).
fn range(
    since: (&str, Option<&str>),
    until: (&str, Option<&str>),
) -> Result<(Option<String>, Option<String>), String> {
    query::time_range_stored(since, until).map_err(|e| e.to_string())
}

/// The `machine`/`user` filter of a tool.
fn origin(machine: Option<String>, user: Option<String>) -> Result<Origin, String> {
    query::origin(("machine", machine), ("user", user)).map_err(|e| e.to_string())
}

/// The page of `limit`/`offset` (`default` rows when no limit is given, at most `max`).
fn page_of(
    limit: Option<u32>,
    offset: Option<u32>,
    default: u32,
    max: u32,
) -> Result<Page, String> {
    Page::parse(
        ("limit", limit.map(u64::from)),
        ("offset", offset.map(u64::from)),
        default,
        max,
    )
    .map_err(|e| e.to_string())
}

/// A value of a closed vocabulary, or the error naming the field and the accepted values.
fn choice<T: query::Vocabulary>(field: &str, v: Option<&str>) -> Result<Option<T>, String> {
    v.map(|s| query::choice::<T>(field, s))
        .transpose()
        .map_err(|e| e.to_string())
}

/// A successful result: the value as JSON (structured content and its text).
fn ok(v: Value) -> CallToolResult {
    CallToolResult::structured(v)
}

/// A failed call: the message, as a tool result marked as an error.
fn fail(msg: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(msg.into())])
}

/// One page under `key`, with `has_more`, `next_offset` (and `total_count` when the listing
/// knows it), cut to the items that fit in `cap` characters of JSON: a cut page says
/// `has_more` and where to go on.
fn page<T: Serialize>(
    key: &str,
    p: &Paged<T>,
    offset: u32,
    extra: &[(&str, Value)],
    cap: usize,
) -> Value {
    let build = |n: usize| {
        let cut = n < p.items.len();
        let has_more = cut || p.has_more;
        let end = u64::from(offset) + n as u64;
        let mut m = serde_json::Map::new();
        for (k, v) in extra {
            m.insert((*k).to_string(), v.clone());
        }
        m.insert(
            key.to_string(),
            serde_json::to_value(&p.items[..n]).unwrap_or(Value::Null),
        );
        if let Some(total) = p.total {
            m.insert("total_count".into(), Value::from(total));
        }
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
    let all = build(p.items.len());
    if fits(&all) {
        return all;
    }
    // The most items that fit (at least none): binary search on the count.
    let (mut lo, mut hi) = (0, p.items.len());
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
        let p = Paged {
            items,
            total: Some(100),
            has_more: true,
            next_offset: Some(60),
        };
        let v = page("xs", &p, 10, &[("success", Value::Bool(true))], 200);
        assert!(v.to_string().chars().count() <= 200, "{v}");
        let n = v["xs"].as_array().map_or(0, Vec::len);
        assert!(n > 0 && n < 50, "{v}");
        assert_eq!(v["has_more"], true);
        assert_eq!(v["next_offset"], 10 + n as u64);
        assert_eq!(v["total_count"], 100);
        assert_eq!(v["success"], true);
        let last = Paged {
            items: vec!["a".to_string(), "b".to_string()],
            total: None,
            has_more: false,
            next_offset: None,
        };
        let all = page("xs", &last, 0, &[], 20_000);
        assert_eq!(all["has_more"], false);
        assert_eq!(all["next_offset"], Value::Null);
        assert!(all.get("total_count").is_none());
    }

    #[test]
    fn arguments_are_checked() {
        assert_eq!(page_of(None, None, 20, 200).map(|p| p.limit), Ok(20));
        assert!(page_of(Some(0), None, 20, 200).is_err());
        assert!(page_of(Some(201), None, 20, 200).is_err());
        assert!(time("since", Some("yesterday")).is_err());
        assert!(time("since", Some("2026-13-45"))
            .unwrap_err()
            .contains("2026-13-45"));
        assert!(time("since", Some("2026-01-31")).is_ok());
        assert_eq!(cut_text("abcdef", 3), ("abc".into(), true));
    }
}
