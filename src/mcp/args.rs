//! The arguments of each MCP tool: their JSON schemas are generated from these types, and the
//! doc comments are what a model reads.

use rmcp::handler::server::common::FromContextPart;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::ErrorData;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Deserialize;

/// A tool's arguments, read from the call. Why not rmcp's own `Parameters`: its error for a
/// value of the wrong type does not say which argument it was; this one names the path
/// (`invalid argument limit: invalid type: string "ten", expected u32`). The name is the one
/// rmcp's `#[tool]` looks for to take the input schema from `P`.
#[derive(Debug)]
pub struct Parameters<P>(pub P);

impl<P: JsonSchema> JsonSchema for Parameters<P> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        P::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        P::json_schema(generator)
    }
}

impl<S, P: DeserializeOwned> FromContextPart<ToolCallContext<'_, S>> for Parameters<P> {
    fn from_context_part(context: &mut ToolCallContext<'_, S>) -> Result<Self, ErrorData> {
        let mut args = context.arguments.take().unwrap_or_default();
        // Agents often send numbers and booleans as strings (`"limit": "2"`): a string that
        // holds exactly the value an argument expects is taken as that value; anything else
        // is refused, naming the argument. At most one retry per argument.
        for _ in 0..=args.len() {
            let e = match serde_path_to_error::deserialize::<_, P>(serde_json::Value::Object(
                args.clone(),
            )) {
                Ok(p) => return Ok(Parameters(p)),
                Err(e) => e,
            };
            let path = e.path().to_string();
            if !coerce(&mut args, &path, &e.inner().to_string()) {
                let msg = if path == "." {
                    format!("invalid arguments: {}", e.inner())
                } else {
                    format!("invalid argument {path}: {}", e.inner())
                };
                return Err(ErrorData::invalid_params(msg, None));
            }
        }
        Err(ErrorData::invalid_params("invalid arguments", None))
    }
}

/// Replace the string at top-level argument `path` by the number or boolean it spells, when
/// the error says that type was expected; false when there is nothing to do.
fn coerce(args: &mut serde_json::Map<String, serde_json::Value>, path: &str, error: &str) -> bool {
    if !error.starts_with("invalid type: string") {
        return false;
    }
    let Some(serde_json::Value::String(text)) = args.get(path) else {
        return false;
    };
    let text = text.trim();
    let integer = [
        "expected u32",
        "expected u64",
        "expected usize",
        "expected i64",
    ];
    let value = if integer.iter().any(|x| error.contains(x)) {
        match text.parse::<u64>() {
            Ok(n) => serde_json::Value::from(n),
            Err(_) => match text.parse::<i64>() {
                Ok(n) => serde_json::Value::from(n),
                Err(_) => return false,
            },
        }
    } else if error.contains("expected a boolean") {
        match text {
            "true" => serde_json::Value::Bool(true),
            "false" => serde_json::Value::Bool(false),
            _ => return false,
        }
    } else {
        return false;
    };
    args.insert(path.to_string(), value);
    true
}

/// `search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// Words (all must match), "exact phrases" in double quotes, prefixes like migrat*, OR,
    /// NOT or -word, parentheses. Example: `"flaky test" auth -windows`.
    pub query: String,
    /// Only these kinds: message, summary, feedback, snippet, tool (default: all). Summaries
    /// are compaction summaries, the best overview of a session; tool is what tools did (a
    /// call's command, file path, pattern or URL, and its output: errors whole, other output
    /// by its head and tail).
    pub kinds: Option<Vec<String>>,
    /// Only what this tool did: Bash, Edit, Read, Grep, mcp__server__tool... (any case; the
    /// kinds are then tool).
    pub tool: Option<String>,
    /// Only sessions whose project folder or working directory contains this text.
    pub project: Option<String>,
    /// Only sessions with a transcript on this machine (its machine id; a shared store holds
    /// several: `list_sessions` shows each session's machines).
    pub machine: Option<String>,
    /// Only sessions of this user (the `user` of the machine that holds them).
    pub user: Option<String>,
    /// Only this session (a unique prefix of its id is enough).
    pub session_id: Option<String>,
    /// Only results at or after this time: ISO date/time (2026-01-31) or an age (7d, 12h).
    pub since: Option<String>,
    /// Only results before this time (same forms as `since`; a date alone includes its day).
    pub until: Option<String>,
    /// Results per page (default 20, at most 200).
    pub limit: Option<u32>,
    /// Results to skip (use `next_offset` of the previous page).
    pub offset: Option<u32>,
}

/// `list_sessions`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListSessionsArgs {
    /// Only sessions whose project folder or working directory contains this text.
    pub project: Option<String>,
    /// Only sessions whose tools read, edited or wrote this file: a path, or its tail such as
    /// `src/auth.rs`.
    pub file: Option<String>,
    /// Only sessions on this git branch.
    pub branch: Option<String>,
    /// Only sessions with replies from a model whose name contains this text (`opus`).
    pub model: Option<String>,
    /// Also sessions with no typed prompt (warm-ups, empty ones), left out by default.
    pub all: Option<bool>,
    /// Only sessions with a transcript on this machine (its machine id; a shared store holds
    /// several: `list_sessions` shows each session's machines).
    pub machine: Option<String>,
    /// Only sessions of this user (the `user` of the machine that holds them).
    pub user: Option<String>,
    /// Only sessions active at or after this time: ISO date/time or an age (7d, 12h).
    pub since: Option<String>,
    /// Only sessions started before this time (same forms as `since`; a date alone includes its day).
    pub until: Option<String>,
    /// `active` or `finished`.
    pub status: Option<String>,
    /// Sessions per page (default 20, at most 500).
    pub limit: Option<u32>,
    /// Sessions to skip.
    pub offset: Option<u32>,
}

/// `list_projects`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListProjectsArgs {
    /// Only projects whose folder or a session's working directory contains this text.
    pub project: Option<String>,
    /// Only sessions with a transcript on this machine (its machine id).
    pub machine: Option<String>,
    /// Only sessions of this user.
    pub user: Option<String>,
    /// Projects per page (default 20, at most 500).
    pub limit: Option<u32>,
    /// Projects to skip.
    pub offset: Option<u32>,
}

/// A session, by id or unique prefix.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionArgs {
    /// The session id (a unique prefix of it is enough).
    pub session_id: String,
}

/// `get_summaries`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SummariesArgs {
    /// Only this session (a unique prefix of its id is enough).
    pub session_id: Option<String>,
    /// Only sessions whose project folder or working directory contains this text.
    pub project: Option<String>,
    /// Only sessions with a transcript on this machine (its machine id; a shared store holds
    /// several: `list_sessions` shows each session's machines).
    pub machine: Option<String>,
    /// Only sessions of this user (the `user` of the machine that holds them).
    pub user: Option<String>,
    /// `summary`, `compact_boundary` or `compact_summary`.
    pub kind: Option<String>,
    /// Only summaries at or after this time: ISO date/time or an age (7d, 12h).
    pub since: Option<String>,
    /// Only summaries before this time (same forms as `since`; a date alone includes its day).
    pub until: Option<String>,
    /// Oldest first (default: newest first).
    pub oldest_first: Option<bool>,
    /// Summaries per page (default 20, at most 500).
    pub limit: Option<u32>,
    /// Summaries to skip.
    pub offset: Option<u32>,
}

/// `query_feedback`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FeedbackArgs {
    /// Only this session and its sub-agents (a unique prefix of its id is enough).
    pub session_id: Option<String>,
    /// `message` (what the user typed), `tool_denial` (a rejected tool use, with the reason
    /// typed) or `interruption` (the user pressed Esc).
    pub feedback_type: Option<String>,
    /// Only sessions whose project folder or working directory contains this text.
    pub project: Option<String>,
    /// Only sessions with a transcript on this machine (its machine id; a shared store holds
    /// several: `list_sessions` shows each session's machines).
    pub machine: Option<String>,
    /// Only sessions of this user (the `user` of the machine that holds them).
    pub user: Option<String>,
    /// Only items at or after this time: ISO date/time or an age (7d, 12h).
    pub since: Option<String>,
    /// Only items before this time (same forms as `since`; a date alone includes its day).
    pub until: Option<String>,
    /// Oldest first, to read a session in order (default: newest first).
    pub oldest_first: Option<bool>,
    /// Items per page (default 50, at most 500).
    pub limit: Option<u32>,
    /// Items to skip.
    pub offset: Option<u32>,
}

/// `query_snippets`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SnippetsArgs {
    /// Only this session (a unique prefix of its id is enough).
    pub session_id: Option<String>,
    /// `error_reasoning`, `decision_rationale` or `learning_pattern`.
    pub snippet_type: Option<String>,
    /// Only sessions whose project folder or working directory contains this text.
    pub project: Option<String>,
    /// Only sessions with a transcript on this machine (its machine id; a shared store holds
    /// several: `list_sessions` shows each session's machines).
    pub machine: Option<String>,
    /// Only sessions of this user (the `user` of the machine that holds them).
    pub user: Option<String>,
    /// Tags that must all be present (`tool:bash`, `ext:rs`, `error:compile`, `project:x`).
    pub tags: Option<Vec<String>>,
    /// Text the title or the content contains (case-insensitive substring).
    pub keyword: Option<String>,
    /// Created at or after this time: ISO date/time or an age (7d, 12h).
    pub start_date: Option<String>,
    /// Created before this time (a date alone includes its day).
    pub end_date: Option<String>,
    /// Snippets per page (default 50, at most 500).
    pub limit: Option<u32>,
    /// Snippets to skip.
    pub offset: Option<u32>,
}

/// `extract_snippet`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtractArgs {
    /// The session it belongs to (a unique prefix of its id is enough).
    pub session_id: String,
    /// `error_reasoning`, `decision_rationale` or `learning_pattern`.
    pub snippet_type: String,
    /// A title readable on its own (at most 256 characters).
    pub title: String,
    /// The content, written out. Leave it out to cut the content from the transcript by
    /// `source_line_start`/`source_line_end` or `start_turn`/`end_turn`.
    pub content: Option<String>,
    /// The transcript to cut from: one of the session's own transcript files (default: its
    /// main transcript). Any other file is refused.
    pub source_file: Option<String>,
    /// First physical line (1-based) of the range to cut.
    pub source_line_start: Option<u64>,
    /// Last physical line of the range to cut.
    pub source_line_end: Option<u64>,
    /// First turn (1-based: the n-th human prompt) of the range to cut.
    pub start_turn: Option<u64>,
    /// Last turn of the range to cut.
    pub end_turn: Option<u64>,
    /// Tags to add to the automatic ones.
    pub tags: Option<Vec<String>>,
    /// Metadata to store with it (a JSON object).
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
}

/// `get_transcript_lines`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinesArgs {
    /// The session (a unique prefix of its id is enough).
    pub session_id: String,
    /// First physical line, 1-based (search results and snippets give lines).
    pub start_line: u64,
    /// Last physical line (inclusive). An answer cut to the result limit gives
    /// `next_start_line`: call again from there.
    pub end_line: u64,
    /// A sub-agent's transcript instead of the main one (its id: `get_session` lists them).
    pub agent_id: Option<String>,
}

/// `get_conversation`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConversationArgs {
    /// The session (a unique prefix of its id is enough).
    pub session_id: String,
    /// Keep only the last N characters (cut at a paragraph boundary); with `offset`, read at
    /// most N characters forward. Default and maximum: the server's result limit.
    pub max_chars: Option<usize>,
    /// Read forward from this character of the whole conversation (0: its beginning) instead
    /// of keeping its end; the answer's `next_offset` is where the next page starts (null at
    /// the end).
    pub offset: Option<usize>,
    /// Include the sub-agents' conversations, interleaved by time (default false). A session
    /// whose main transcript holds no conversation says so, pointing here.
    pub subagents: Option<bool>,
}

/// `list_episodes`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EpisodesArgs {
    /// Only this session (a unique prefix of its id is enough).
    pub session_id: Option<String>,
    /// Episodes holding a turn labelled `routine`, `error_recovery`, `user_correction`,
    /// `pivot` or `design_decision`.
    pub triage: Option<String>,
    /// Only sessions with a transcript on this machine (its machine id; a shared store holds
    /// several: `list_sessions` shows each session's machines).
    pub machine: Option<String>,
    /// Only sessions of this user (the `user` of the machine that holds them).
    pub user: Option<String>,
    /// Episodes per page (default 50, at most 500).
    pub limit: Option<u32>,
    /// Episodes to skip.
    pub offset: Option<u32>,
}
