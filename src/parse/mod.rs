//! Zero-copy, never-failing parser for one line of a Claude Code JSONL transcript.
//!
//! Why this shape: Gleaner ingests transcripts at hundreds of MB/s, and most of the bytes in a
//! transcript (tool outputs, file snapshots, images, thinking, progress payloads) are never
//! stored. So the parser borrows every string it keeps from the line (`Cow::Borrowed` unless the
//! JSON string contains escapes), keeps big values only as [`RawValue`] slices for lazy decoding,
//! and skips everything else with [`IgnoredAny`] without allocating.
//!
//! Why it never fails: a transcript is foreign, evolving data (the format changed key order, added
//! line kinds and fields across versions). A bad line must become a diagnostic value the caller
//! can count and store, never a panic or an aborted ingest. To that end every field is read
//! *leniently*: a known field with an unexpected JSON type is treated as absent instead of failing
//! the line, unknown line kinds become [`Kind::Other`], unknown block types become
//! [`Block::Other`], and unknown top-level keys are reported in [`Record::unknown_fields`].
//! Only broken JSON syntax, invalid UTF-8 and non-object values produce a [`LineError`].

use std::borrow::Cow;
use std::fmt;

use serde::de::Deserialize;
use serde_json::value::RawValue;

/// Longest tool-input target kept by [`Block::ToolUse`], in bytes. Why: the target is an index
/// key / display hint (a path, a command line); a multi-KB heredoc command would bloat every row.
pub const MAX_TARGET_LEN: usize = 1024;

/// Tools whose target (see [`Block::ToolUse`]) is a file path rather than a command, URL or
/// pattern: their targets give `ext:` tags and episode vocabulary. Why in `parse`: the parser
/// decides what a call's target is; the episode stage and snippet excerpts both read targets.
pub const FILE_TOOLS: &[&str] = &[
    "Read",
    "Edit",
    "Write",
    "MultiEdit",
    "NotebookEdit",
    "NotebookRead",
];

/// Result of parsing one physical line. Why not `Result`: a line can yield good records *and*
/// an error (glued objects where a later one is broken), and the caller wants both.
#[derive(Debug, Default)]
pub struct Parsed<'a> {
    /// Usually one. Two JSON objects glued on one line (`{...}{...}`, seen in real files) yield
    /// both records, in order. Empty for a blank line.
    pub records: Vec<Record<'a>>,
    /// At most one: the problem that stopped parsing this line (records before it are kept).
    pub error: Option<LineError>,
}

/// Why a line (or the rest of it) could not be parsed; stored by the caller as a diagnostic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineError {
    /// The line is not UTF-8; `valid_up_to` is the byte offset of the first bad byte, so the
    /// diagnostic can point at it (e.g. a file truncated mid-character).
    InvalidUtf8 {
        /// Byte offset of the first invalid byte.
        valid_up_to: usize,
    },
    /// JSON syntax error (including a truncated line, the common case for a partial write).
    MalformedJson {
        /// 1-based byte column reported by serde_json (0 if unknown).
        column: usize,
        /// serde_json's description, for the diagnostic record.
        message: String,
    },
    /// A well-formed JSON value that is not an object (`[1,2]`, `"x"`, `42`): no record shape.
    NotAnObject,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineError::InvalidUtf8 { valid_up_to } => {
                write!(f, "invalid UTF-8 after byte {valid_up_to}")
            }
            LineError::MalformedJson { column, message } => {
                write!(f, "malformed JSON at column {column}: {message}")
            }
            LineError::NotAnObject => f.write_str("JSON value is not an object"),
        }
    }
}

impl std::error::Error for LineError {}

/// Line kind, from the top-level `"type"`. Why an enum with `Other`: matching on kinds is the
/// hot path of the ingester, yet new kinds appear with new Claude Code versions and must flow
/// through as data. The envelope-less metadata kinds of 2.1.x (`permission-mode`,
/// `last-prompt`, `ai-title`, `custom-title`, `agent-name`, `pr-link`) are known variants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind<'a> {
    /// `user`: a prompt, a tool result or injected meta text.
    User,
    /// `assistant`: one (possibly partial, streamed) API response.
    Assistant,
    /// `system`: boundaries, hooks, errors, durations (see `subtype`).
    System,
    /// `summary`: a title for the conversation ending at `leafUuid` (not compaction).
    Summary,
    /// `attachment`: context injected into the model input (2.1.x).
    Attachment,
    /// `progress`: tool/hook/agent progress (2.1.12–2.1.81).
    Progress,
    /// `file-history-snapshot`: checkpoint bookkeeping, no conversational content.
    FileHistorySnapshot,
    /// `queue-operation`: prompts typed while Claude was busy.
    QueueOperation,
    /// `permission-mode` metadata line.
    PermissionMode,
    /// `last-prompt` metadata line.
    LastPrompt,
    /// `ai-title` metadata line.
    AiTitle,
    /// `custom-title` metadata line.
    CustomTitle,
    /// `agent-name` metadata line.
    AgentName,
    /// `pr-link` metadata line.
    PrLink,
    /// Any other `type` value (or `""` when `type` is absent or not a string).
    Other(Cow<'a, str>),
}

impl<'a> Kind<'a> {
    fn from_name(name: &Cow<'a, str>) -> Kind<'a> {
        match name.as_ref() {
            "user" => Kind::User,
            "assistant" => Kind::Assistant,
            "system" => Kind::System,
            "summary" => Kind::Summary,
            "attachment" => Kind::Attachment,
            "progress" => Kind::Progress,
            "file-history-snapshot" => Kind::FileHistorySnapshot,
            "queue-operation" => Kind::QueueOperation,
            "permission-mode" => Kind::PermissionMode,
            "last-prompt" => Kind::LastPrompt,
            "ai-title" => Kind::AiTitle,
            "custom-title" => Kind::CustomTitle,
            "agent-name" => Kind::AgentName,
            "pr-link" => Kind::PrLink,
            _ => Kind::Other(name.clone()),
        }
    }
}

/// `compactMetadata` of a `system/compact_boundary` line. Why kept: it tells how big the context
/// was when it was compacted and whether the user asked for it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactMetadata {
    /// `"auto"` or `"manual"`.
    pub trigger: Option<String>,
    /// Context size in tokens before compaction.
    pub pre_tokens: Option<i64>,
}

/// One transcript record (one JSON object). Strings borrow from the line unless they contained
/// escapes. Every field is optional because line kinds share few fields and versions differ.
#[derive(Debug, Clone)]
pub struct Record<'a> {
    /// Line kind decoded from `type`.
    pub kind: Kind<'a>,
    /// Raw `type` value (`""` if absent), kept so unknown kinds can be stored verbatim.
    pub type_name: Cow<'a, str>,
    /// `subtype` (system lines), e.g. `compact_boundary`.
    pub subtype: Option<Cow<'a, str>>,
    /// `uuid` of this line (absent on envelope-less kinds).
    pub uuid: Option<Cow<'a, str>>,
    /// `parentUuid`: previous line in the conversation DAG (`None` for roots).
    pub parent_uuid: Option<Cow<'a, str>>,
    /// `logicalParentUuid`: bridges a compact boundary to the last pre-compaction line.
    pub logical_parent_uuid: Option<Cow<'a, str>>,
    /// `sessionId` (the parent's for sub-agents).
    pub session_id: Option<Cow<'a, str>>,
    /// `agentId` of a sub-agent line.
    pub agent_id: Option<Cow<'a, str>>,
    /// `timestamp`, ISO-8601 as written (parsing left to the caller).
    pub timestamp: Option<Cow<'a, str>>,
    /// `cwd` at the time of the line.
    pub cwd: Option<Cow<'a, str>>,
    /// `gitBranch`.
    pub git_branch: Option<Cow<'a, str>>,
    /// Claude Code `version`.
    pub version: Option<Cow<'a, str>>,
    /// Human-readable session `slug`.
    pub slug: Option<Cow<'a, str>>,
    /// API `requestId` on assistant lines.
    pub request_id: Option<Cow<'a, str>>,
    /// `promptId` shared by all lines answering one prompt.
    pub prompt_id: Option<Cow<'a, str>>,
    /// `sourceToolUseID`: tool use that produced an injected line.
    pub source_tool_use_id: Option<Cow<'a, str>>,
    /// `sourceToolAssistantUUID`: assistant line holding the `tool_use` a result answers.
    pub source_tool_assistant_uuid: Option<Cow<'a, str>>,
    /// `toolUseID` on progress/system lines: the tool call or hook run they belong to.
    pub tool_use_id: Option<Cow<'a, str>>,
    /// `isSidechain`: sub-agent line.
    pub is_sidechain: bool,
    /// `isMeta`: injected, not typed by the user.
    pub is_meta: bool,
    /// `isCompactSummary`: the post-compaction summary user line.
    pub is_compact_summary: bool,
    /// `isApiErrorMessage`: synthetic assistant error line.
    pub is_api_error_message: bool,
    /// `message` of user/assistant lines (`None` if absent or not an object).
    pub message: Option<Message<'a>>,
    /// `summary` text of a `summary` line.
    pub summary: Option<Cow<'a, str>>,
    /// `leafUuid` of `summary` / `last-prompt` lines.
    pub leaf_uuid: Option<Cow<'a, str>>,
    /// Top-level `content` when it is a string (system lines, queue operations).
    pub content: Option<Cow<'a, str>>,
    /// `level` of system lines (`info`, `warning`, `error`, …).
    pub level: Option<Cow<'a, str>>,
    /// `compactMetadata` of compact boundaries.
    pub compact_metadata: Option<CompactMetadata>,
    /// `durationMs` (turn_duration / stop hooks), for timing statistics.
    pub duration_ms: Option<i64>,
    /// `costUSD`: the cost older Claude Code versions wrote on each assistant line. Where it is
    /// present it is the cost of the line's message, as ccusage counts it.
    pub cost_usd: Option<f64>,
    /// `toolUseResult`, kept raw: its shape depends on the tool and it can be huge.
    /// See [`Record::tool_use_result_agent_id`].
    pub tool_use_result: Option<&'a RawValue>,
    /// `attachment.type` of attachment lines (the body is skipped).
    pub attachment_type: Option<Cow<'a, str>>,
    /// `data.type` of progress lines (the payload is skipped).
    pub progress_type: Option<Cow<'a, str>>,
    /// The sub-agent message an `agent_progress` line carries (older Claude Code versions
    /// report a sub-agent's replies only there): its usage counts like any reply's.
    pub agent_usage: Option<AgentUsage>,
    /// `operation` of queue-operation lines.
    pub operation: Option<Cow<'a, str>>,
    /// `permissionMode` (user lines and `permission-mode` lines).
    pub permission_mode: Option<Cow<'a, str>>,
    /// `lastPrompt` of `last-prompt` lines.
    pub last_prompt: Option<Cow<'a, str>>,
    /// `aiTitle` of `ai-title` lines.
    pub ai_title: Option<Cow<'a, str>>,
    /// `customTitle` of `custom-title` lines.
    pub custom_title: Option<Cow<'a, str>>,
    /// `agentName` of `agent-name` lines.
    pub agent_name: Option<Cow<'a, str>>,
    /// `prUrl` of `pr-link` lines.
    pub pr_url: Option<Cow<'a, str>>,
    /// Names of top-level keys this parser does not know — recorded by the caller as data
    /// (counted), never an error. Empty (no allocation) for all lines of the known format.
    pub unknown_fields: Vec<Cow<'a, str>>,
}

/// The Anthropic-API-shaped `message` of user/assistant lines, reduced to what is indexed.
#[derive(Debug, Clone, Default)]
pub struct Message<'a> {
    /// API message id; streamed lines of one response share it (dedupe/group key).
    pub id: Option<Cow<'a, str>>,
    /// `user` / `assistant`.
    pub role: Option<Cow<'a, str>>,
    /// Model id (`<synthetic>` for synthetic lines).
    pub model: Option<Cow<'a, str>>,
    /// String or block content.
    pub content: Content<'a>,
    /// `stop_reason` (`None` on intermediate streamed lines).
    pub stop_reason: Option<Cow<'a, str>>,
    /// Token usage (assistant lines).
    pub usage: Option<Usage>,
}

/// `message.content`: a plain string or an array of blocks.
#[derive(Debug, Clone, Default)]
pub enum Content<'a> {
    /// Absent, `null` or of an unexpected JSON type.
    #[default]
    None,
    /// Plain string content (typed prompts).
    Text(Cow<'a, str>),
    /// Content blocks, in order.
    Blocks(Vec<Block<'a>>),
}

/// One content block. Big payloads (tool input, tool result content, images, documents,
/// thinking) are skipped or kept raw so parsing stays allocation-free for them.
#[derive(Debug, Clone)]
pub enum Block<'a> {
    /// `text` block.
    Text(Cow<'a, str>),
    /// `tool_use` block; only a small target of the input is kept.
    ToolUse {
        /// `toolu_…` id linking to the result.
        id: Cow<'a, str>,
        /// Tool name (`Bash`, `Edit`, `mcp__…`).
        name: Cow<'a, str>,
        /// First present of input `file_path`, `notebook_path`, `command`, `url`, `pattern`,
        /// `path`, `query`, `description` (in that priority), cut to [`MAX_TARGET_LEN`] bytes.
        target: Option<Cow<'a, str>>,
        /// For editing tools, what the call changes (kept raw; empty for other tools).
        edit: EditInput<'a>,
    },
    /// `tool_result` block; content kept raw, see [`Block::tool_result_text`].
    ToolResult {
        /// Id of the `tool_use` this answers.
        tool_use_id: Cow<'a, str>,
        /// `is_error` (failures and permission denials); `false` when absent.
        is_error: bool,
        /// Raw `content` (string or block array), decoded only on demand.
        content: Option<&'a RawValue>,
    },
    /// `thinking` / `redacted_thinking` (text not kept: often empty and never indexed).
    Thinking,
    /// `image` (base64 data skipped).
    Image,
    /// `document` (data skipped).
    Document,
    /// Unknown block type, by name (`""` if the block had no string `type`).
    Other(Cow<'a, str>),
}

/// What an editing tool's input says it changes: `Edit` `old_string`/`new_string`, `MultiEdit`
/// `edits`, `Write` `content`. Kept as raw JSON because almost no call is ever shown: the text
/// is decoded only when a snippet shows the change that fixed a failure.
#[derive(Debug, Clone, Copy, Default)]
pub struct EditInput<'a> {
    /// `old_string`.
    pub old: Option<&'a RawValue>,
    /// `new_string`.
    pub new: Option<&'a RawValue>,
    /// `edits` (`MultiEdit`: an array of `{old_string, new_string}`).
    pub edits: Option<&'a RawValue>,
    /// `content` (`Write`: the whole new file).
    pub content: Option<&'a RawValue>,
}

impl EditInput<'_> {
    /// The `(old, new)` text pairs the call replaces (a `Write` is `("", content)`), decoded;
    /// at most `max` pairs. Empty when the input holds none or does not decode.
    pub fn pairs(&self, max: usize) -> Vec<(String, String)> {
        let text = |r: Option<&RawValue>| -> Option<String> {
            r.and_then(|r| serde_json::from_str::<String>(r.get()).ok())
        };
        if let (Some(old), Some(new)) = (text(self.old), text(self.new)) {
            return vec![(old, new)];
        }
        if let Some(edits) = self.edits {
            #[derive(serde::Deserialize)]
            struct One {
                #[serde(default)]
                old_string: String,
                #[serde(default)]
                new_string: String,
            }
            return serde_json::from_str::<Vec<One>>(edits.get())
                .map(|v| {
                    v.into_iter()
                        .take(max)
                        .map(|e| (e.old_string, e.new_string))
                        .collect()
                })
                .unwrap_or_default();
        }
        text(self.content)
            .map(|c| vec![(String::new(), c)])
            .unwrap_or_default()
    }

    /// Whether the call carries any change at all.
    pub fn is_empty(&self) -> bool {
        self.old.is_none() && self.new.is_none() && self.edits.is_none() && self.content.is_none()
    }
}

impl Block<'_> {
    /// For `ToolResult`: decode the content (a string, or its `text` blocks joined by `'\n'`)
    /// only when asked, because most results are never read as text. `None` for other blocks or
    /// when there is no text.
    pub fn tool_result_text(&self) -> Option<String> {
        let Block::ToolResult {
            content: Some(raw), ..
        } = self
        else {
            return None;
        };
        let mut de = serde_json::Deserializer::from_str(raw.get());
        let content = ContentField::deserialize(&mut de).ok()?.0;
        content_text(&content)
    }
}

/// A sub-agent's message seen through its parent's `agent_progress` line.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentUsage {
    /// `message.id`.
    pub message_id: String,
    /// `message.model`.
    pub model: Option<String>,
    /// `message.usage`.
    pub usage: Usage,
    /// `requestId`.
    pub request_id: Option<String>,
    /// `timestamp` of the sub-agent's line.
    pub timestamp: Option<String>,
}

/// Token usage of an assistant message. Why these numbers only: they are what cost and context
/// statistics need; the many newer extras (`service_tier`, `server_tool_use`, …) are skipped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// `input_tokens` (0 if absent).
    pub input_tokens: i64,
    /// `output_tokens` (0 if absent).
    pub output_tokens: i64,
    /// `cache_creation_input_tokens` (0 if absent).
    pub cache_creation_input_tokens: i64,
    /// `cache_read_input_tokens` (0 if absent).
    pub cache_read_input_tokens: i64,
    /// `cache_creation.ephemeral_1h_input_tokens`: the part of the cache writes kept for an
    /// hour, priced at twice the input rate instead of the 5-minute write rate (0 if absent).
    pub cache_creation_1h_tokens: i64,
}

impl<'a> Record<'a> {
    /// Plain text of the text blocks / string content of `message`, joined with `'\n'`;
    /// `None` if there is none. Excludes thinking, tool input and tool results, because this is
    /// what the user or model actually said.
    pub fn text(&self) -> Option<String> {
        content_text(&self.message.as_ref()?.content)
    }

    /// Names of the tools used by this line (assistant `tool_use` blocks), in order.
    pub fn tool_names(&self) -> Vec<&str> {
        self.blocks()
            .iter()
            .filter_map(|b| match b {
                Block::ToolUse { name, .. } => Some(name.as_ref()),
                _ => None,
            })
            .collect()
    }

    /// Whether any `tool_result` of this line has `is_error: true` (failure or denial).
    pub fn has_tool_error(&self) -> bool {
        self.blocks()
            .iter()
            .any(|b| matches!(b, Block::ToolResult { is_error: true, .. }))
    }

    /// The content blocks of `message` (empty for string or absent content).
    pub fn blocks(&self) -> &[Block<'a>] {
        match self.message.as_ref().map(|m| &m.content) {
            Some(Content::Blocks(blocks)) => blocks,
            _ => &[],
        }
    }

    /// `toolUseResult.agentId`, pulled lazily: it links a Task/Agent result to the sub-agent's
    /// file, and is the only part of `toolUseResult` the indexer needs.
    pub fn tool_use_result_agent_id(&self) -> Option<Cow<'a, str>> {
        let raw = self.tool_use_result?;
        let mut de = serde_json::Deserializer::from_str(raw.get());
        AgentIdOnly::deserialize(&mut de).ok()?.0
    }
}

fn content_text(content: &Content<'_>) -> Option<String> {
    match content {
        Content::None => None,
        Content::Text(t) => Some(t.to_string()),
        Content::Blocks(blocks) => {
            let mut out: Option<String> = None;
            for b in blocks {
                if let Block::Text(t) = b {
                    match out.as_mut() {
                        Some(s) => {
                            s.push('\n');
                            s.push_str(t);
                        }
                        None => out = Some(t.to_string()),
                    }
                }
            }
            out
        }
    }
}

/// Parse one physical line (without its '\n'; '\r' and BOM already stripped by the tailer).
/// Never fails and never panics: problems are reported in [`Parsed::error`].
pub fn parse_line(line: &[u8]) -> Parsed<'_> {
    // simdutf8: the same check and error position as `std::str::from_utf8`, several times
    // faster on long lines (std's check was 2% of a backfill's CPU).
    let text = match simdutf8::compat::from_utf8(line) {
        Ok(t) => t,
        Err(e) => {
            return Parsed {
                records: Vec::new(),
                error: Some(LineError::InvalidUtf8 {
                    valid_up_to: e.valid_up_to(),
                }),
            }
        }
    };
    let mut parsed = Parsed::default();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Record<'_>>();
    loop {
        let offset = stream.byte_offset();
        match stream.next() {
            None => break,
            Some(Ok(rec)) => parsed.records.push(rec),
            Some(Err(e)) => {
                parsed.error = Some(classify(text, offset, &e));
                break;
            }
        }
    }
    parsed
}

fn classify(text: &str, offset: usize, e: &serde_json::Error) -> LineError {
    // Every field is read leniently, so a data (type) error can only come from the top-level
    // value not being an object; double-check by looking at the value's first byte.
    let first = text
        .as_bytes()
        .get(offset..)
        .and_then(|rest| rest.iter().find(|b| !b.is_ascii_whitespace()));
    if e.is_data() && first != Some(&b'{') {
        return LineError::NotAnObject;
    }
    LineError::MalformedJson {
        column: e.column(),
        message: e.to_string(),
    }
}

mod lenient;
mod record;

pub use lenient::TARGET_KEYS;
use lenient::{AgentIdOnly, ContentField};

#[cfg(test)]
mod tests;
