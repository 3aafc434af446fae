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

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// Longest tool-input target kept by [`Block::ToolUse`], in bytes. Why: the target is an index
/// key / display hint (a path, a command line); a multi-KB heredoc command would bloat every row.
pub const MAX_TARGET_LEN: usize = 1024;

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
    /// `toolUseResult`, kept raw: its shape depends on the tool and it can be huge.
    /// See [`Record::tool_use_result_agent_id`].
    pub tool_use_result: Option<&'a RawValue>,
    /// `attachment.type` of attachment lines (the body is skipped).
    pub attachment_type: Option<Cow<'a, str>>,
    /// `data.type` of progress lines (the payload is skipped).
    pub progress_type: Option<Cow<'a, str>>,
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

/// Token usage of an assistant message. Why only four numbers: they are what cost and context
/// statistics need; the many newer extras (`service_tier`, `cache_creation`, …) are skipped.
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
    let text = match std::str::from_utf8(line) {
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

// ---------------------------------------------------------------------------------------------
// Lenient primitives: never error on a type mismatch, so a surprising field cannot lose a line.

/// A string that borrows when it can; any non-string JSON value reads as `None`.
struct LStr<'a>(Option<Cow<'a, str>>);

struct LStrVisitor;

impl<'de> Visitor<'de> for LStrVisitor {
    type Value = LStr<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(LStr(Some(Cow::Borrowed(v))))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(LStr(Some(Cow::Owned(v.to_owned()))))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(LStr(Some(Cow::Owned(v))))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(LStr(None))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(LStr(None))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(LStr(None))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(LStr(None))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(LStr(None))
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(LStr(None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(LStr(None))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(LStr(None))
    }
}

impl<'de> Deserialize<'de> for LStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LStrVisitor)
    }
}

/// Object keys: borrowed unless escaped (keys are strings in JSON, so no leniency needed).
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match d.deserialize_str(LStrVisitor)?.0 {
            Some(k) => Ok(Key(k)),
            None => Ok(Key(Cow::Borrowed(""))),
        }
    }
}

/// A bool; anything else reads as `false`.
struct LBool(bool);

impl<'de> Deserialize<'de> for LBool {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LBool;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<LBool, E> {
                Ok(LBool(v))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<LBool, E> {
                Ok(LBool(false))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<LBool, E> {
                Ok(LBool(false))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<LBool, E> {
                Ok(LBool(false))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<LBool, E> {
                Ok(LBool(false))
            }
            fn visit_unit<E: de::Error>(self) -> Result<LBool, E> {
                Ok(LBool(false))
            }
            fn visit_none<E: de::Error>(self) -> Result<LBool, E> {
                Ok(LBool(false))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<LBool, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(LBool(false))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LBool, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(LBool(false))
            }
        }
        d.deserialize_any(V)
    }
}

/// An integer (floats truncated, huge values saturated); anything else reads as `None`.
struct LI64(Option<i64>);

impl<'de> Deserialize<'de> for LI64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LI64;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<LI64, E> {
                Ok(LI64(None))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<LI64, E> {
                Ok(LI64(Some(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<LI64, E> {
                Ok(LI64(Some(i64::try_from(v).unwrap_or(i64::MAX))))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<LI64, E> {
                // `as` saturates and maps NaN to 0, which is what we want for a counter.
                Ok(LI64(Some(v as i64)))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<LI64, E> {
                Ok(LI64(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<LI64, E> {
                Ok(LI64(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<LI64, E> {
                Ok(LI64(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<LI64, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(LI64(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LI64, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(LI64(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// Implements the non-map arms of a lenient "object or nothing" visitor: any other JSON type
/// reads as `None` (skipped without allocating).
macro_rules! non_map_is_none {
    () => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(None)
        }
    };
}

/// Deserializes `Option<T>` from "an object, or anything else → None" with a map visitor.
macro_rules! lenient_object {
    ($wrapper:ident, $value:ty, |$map:ident| $body:block) => {
        struct $wrapper<'de>(Option<$value>, std::marker::PhantomData<&'de ()>);
        impl<'de> Deserialize<'de> for $wrapper<'de> {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = Option<$value>;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str("any JSON value")
                    }
                    non_map_is_none!();
                    fn visit_map<A: MapAccess<'de>>(
                        self,
                        mut $map: A,
                    ) -> Result<Self::Value, A::Error> {
                        $body
                    }
                }
                Ok($wrapper(d.deserialize_any(V)?, std::marker::PhantomData))
            }
        }
    };
}

// `{"agentId": …}` out of a `toolUseResult`.
lenient_object!(AgentIdOnlyObj, Option<Cow<'de, str>>, |map| {
    let mut id = None;
    while let Some(k) = map.next_key::<Key<'de>>()? {
        if k.0 == "agentId" {
            id = map.next_value::<LStr<'de>>()?.0;
        } else {
            map.next_value::<IgnoredAny>()?;
        }
    }
    Ok(Some(id))
});

struct AgentIdOnly<'a>(Option<Cow<'a, str>>);

impl<'de> Deserialize<'de> for AgentIdOnly<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(AgentIdOnly(AgentIdOnlyObj::deserialize(d)?.0.flatten()))
    }
}

// `{"type": …}` out of `attachment` / progress `data`, skipping the (possibly huge) rest.
lenient_object!(TypeOnly, Option<Cow<'de, str>>, |map| {
    let mut t = None;
    while let Some(k) = map.next_key::<Key<'de>>()? {
        if k.0 == "type" {
            t = map.next_value::<LStr<'de>>()?.0;
        } else {
            map.next_value::<IgnoredAny>()?;
        }
    }
    Ok(Some(t))
});

lenient_object!(CompactMeta, CompactMetadata, |map| {
    let mut m = CompactMetadata::default();
    while let Some(k) = map.next_key::<Key<'de>>()? {
        match k.0.as_ref() {
            "trigger" => m.trigger = map.next_value::<LStr<'de>>()?.0.map(Cow::into_owned),
            "preTokens" => m.pre_tokens = map.next_value::<LI64>()?.0,
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
    }
    Ok(Some(m))
});

lenient_object!(UsageObj, Usage, |map| {
    let mut u = Usage::default();
    while let Some(k) = map.next_key::<Key<'de>>()? {
        let slot = match k.0.as_ref() {
            "input_tokens" => &mut u.input_tokens,
            "output_tokens" => &mut u.output_tokens,
            "cache_creation_input_tokens" => &mut u.cache_creation_input_tokens,
            "cache_read_input_tokens" => &mut u.cache_read_input_tokens,
            _ => {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
        };
        *slot = map.next_value::<LI64>()?.0.unwrap_or(0);
    }
    Ok(Some(u))
});

/// Input keys that name a tool's target, in priority order.
const TARGET_KEYS: [&str; 8] = [
    "file_path",
    "notebook_path",
    "command",
    "url",
    "pattern",
    "path",
    "query",
    "description",
];

// Tool input reduced to its target; every other input field is skipped.
lenient_object!(ToolTarget, Cow<'de, str>, |map| {
    let mut best: Option<(usize, Cow<'de, str>)> = None;
    while let Some(k) = map.next_key::<Key<'de>>()? {
        let rank = TARGET_KEYS.iter().position(|t| *t == k.0);
        match rank {
            Some(r) if best.as_ref().is_none_or(|(b, _)| r < *b) => {
                if let Some(v) = map.next_value::<LStr<'de>>()?.0 {
                    best = Some((r, v));
                }
            }
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
    }
    Ok(best.map(|(_, v)| truncate(v, MAX_TARGET_LEN)))
});

fn truncate(s: Cow<'_, str>, max: usize) -> Cow<'_, str> {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    match s {
        Cow::Borrowed(b) => Cow::Borrowed(&b[..end]),
        Cow::Owned(mut o) => {
            o.truncate(end);
            Cow::Owned(o)
        }
    }
}

// A content block; `type` may come after the other keys, so fields are collected first.
lenient_object!(BlockObj, Block<'de>, |map| {
    let mut ty: Option<Cow<'de, str>> = None;
    let mut text = None;
    let mut id = None;
    let mut name = None;
    let mut target = None;
    let mut tool_use_id = None;
    let mut is_error = false;
    let mut content: Option<&'de RawValue> = None;
    while let Some(k) = map.next_key::<Key<'de>>()? {
        match k.0.as_ref() {
            "type" => ty = map.next_value::<LStr<'de>>()?.0,
            "text" => text = map.next_value::<LStr<'de>>()?.0,
            "id" => id = map.next_value::<LStr<'de>>()?.0,
            "name" => name = map.next_value::<LStr<'de>>()?.0,
            "input" => target = map.next_value::<ToolTarget<'de>>()?.0,
            "tool_use_id" => tool_use_id = map.next_value::<LStr<'de>>()?.0,
            "is_error" => is_error = map.next_value::<LBool>()?.0,
            "content" => content = Some(map.next_value::<&'de RawValue>()?),
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
    }
    let ty = ty.unwrap_or(Cow::Borrowed(""));
    Ok(Some(match ty.as_ref() {
        "text" => Block::Text(text.unwrap_or_default()),
        "tool_use" => Block::ToolUse {
            id: id.unwrap_or_default(),
            name: name.unwrap_or_default(),
            target,
        },
        "tool_result" => Block::ToolResult {
            tool_use_id: tool_use_id.unwrap_or_default(),
            is_error,
            content,
        },
        "thinking" | "redacted_thinking" => Block::Thinking,
        "image" => Block::Image,
        "document" => Block::Document,
        _ => Block::Other(ty),
    }))
});

/// String-or-array content; used for `message.content` and tool result content.
struct ContentField<'a>(Content<'a>);

impl<'de> Deserialize<'de> for ContentField<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Content<'de>, E> {
                Ok(Content::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Content<'de>, E> {
                Ok(Content::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Content<'de>, E> {
                Ok(Content::Text(Cow::Owned(v)))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Content<'de>, E> {
                Ok(Content::None)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Content<'de>, E> {
                Ok(Content::None)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Content<'de>, E> {
                Ok(Content::None)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Content<'de>, E> {
                Ok(Content::None)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Content<'de>, E> {
                Ok(Content::None)
            }
            fn visit_none<E: de::Error>(self) -> Result<Content<'de>, E> {
                Ok(Content::None)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content<'de>, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(1).min(16));
                while let Some(b) = seq.next_element::<BlockObj<'de>>()? {
                    // Non-object array elements are not blocks; skip them.
                    if let Some(b) = b.0 {
                        blocks.push(b);
                    }
                }
                Ok(Content::Blocks(blocks))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Content<'de>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Content::None)
            }
        }
        Ok(ContentField(d.deserialize_any(V)?))
    }
}

lenient_object!(MessageObj, Message<'de>, |map| {
    let mut m = Message::default();
    while let Some(k) = map.next_key::<Key<'de>>()? {
        match k.0.as_ref() {
            "id" => m.id = map.next_value::<LStr<'de>>()?.0,
            "role" => m.role = map.next_value::<LStr<'de>>()?.0,
            "model" => m.model = map.next_value::<LStr<'de>>()?.0,
            "content" => m.content = map.next_value::<ContentField<'de>>()?.0,
            "stop_reason" => m.stop_reason = map.next_value::<LStr<'de>>()?.0,
            "usage" => m.usage = map.next_value::<UsageObj<'de>>()?.0,
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
    }
    Ok(Some(m))
});

/// Top-level keys that are known but deliberately not kept (so they are not reported as
/// unknown). Why listed: `unknown_fields` should flag format drift, not known noise.
const KNOWN_SKIPPED: &[&str] = &[
    "userType",
    "entrypoint",
    "isVisibleInTranscriptOnly",
    "thinkingMetadata",
    "todos",
    "planContent",
    "imagePasteIds",
    "error",
    "apiErrorStatus",
    "attributionAgent",
    "attributionSkill",
    "forkedFrom",
    "parentToolUseID",
    "messageId",
    "snapshot",
    "isSnapshotUpdate",
    "hookCount",
    "hookInfos",
    "hookErrors",
    "preventedContinuation",
    "stopReason",
    "hasOutput",
    "messageCount",
    "retryInMs",
    "retryAttempt",
    "maxRetries",
    "cause",
    "microcompactMetadata",
    "prNumber",
    "prRepository",
];

impl<'de> Deserialize<'de> for Record<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(RecordVisitor)
    }
}

struct RecordVisitor;

impl<'de> Visitor<'de> for RecordVisitor {
    type Value = Record<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Record<'de>, A::Error> {
        let mut r = Record {
            kind: Kind::Other(Cow::Borrowed("")),
            type_name: Cow::Borrowed(""),
            subtype: None,
            uuid: None,
            parent_uuid: None,
            logical_parent_uuid: None,
            session_id: None,
            agent_id: None,
            timestamp: None,
            cwd: None,
            git_branch: None,
            version: None,
            slug: None,
            request_id: None,
            prompt_id: None,
            source_tool_use_id: None,
            source_tool_assistant_uuid: None,
            tool_use_id: None,
            is_sidechain: false,
            is_meta: false,
            is_compact_summary: false,
            is_api_error_message: false,
            message: None,
            summary: None,
            leaf_uuid: None,
            content: None,
            level: None,
            compact_metadata: None,
            duration_ms: None,
            tool_use_result: None,
            attachment_type: None,
            progress_type: None,
            operation: None,
            permission_mode: None,
            last_prompt: None,
            ai_title: None,
            custom_title: None,
            agent_name: None,
            pr_url: None,
            unknown_fields: Vec::new(),
        };
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let slot = match key.as_ref() {
                "type" => {
                    r.type_name = map.next_value::<LStr<'de>>()?.0.unwrap_or_default();
                    continue;
                }
                "message" => {
                    r.message = map.next_value::<MessageObj<'de>>()?.0;
                    continue;
                }
                "isSidechain" => {
                    r.is_sidechain = map.next_value::<LBool>()?.0;
                    continue;
                }
                "isMeta" => {
                    r.is_meta = map.next_value::<LBool>()?.0;
                    continue;
                }
                "isCompactSummary" => {
                    r.is_compact_summary = map.next_value::<LBool>()?.0;
                    continue;
                }
                "isApiErrorMessage" => {
                    r.is_api_error_message = map.next_value::<LBool>()?.0;
                    continue;
                }
                "compactMetadata" => {
                    r.compact_metadata = map.next_value::<CompactMeta<'de>>()?.0;
                    continue;
                }
                "durationMs" => {
                    r.duration_ms = map.next_value::<LI64>()?.0;
                    continue;
                }
                "toolUseResult" => {
                    r.tool_use_result = Some(map.next_value::<&'de RawValue>()?);
                    continue;
                }
                "attachment" => {
                    r.attachment_type = map.next_value::<TypeOnly<'de>>()?.0.flatten();
                    continue;
                }
                "data" => {
                    r.progress_type = map.next_value::<TypeOnly<'de>>()?.0.flatten();
                    continue;
                }
                "subtype" => &mut r.subtype,
                "uuid" => &mut r.uuid,
                "parentUuid" => &mut r.parent_uuid,
                "logicalParentUuid" => &mut r.logical_parent_uuid,
                "sessionId" => &mut r.session_id,
                "agentId" => &mut r.agent_id,
                "timestamp" => &mut r.timestamp,
                "cwd" => &mut r.cwd,
                "gitBranch" => &mut r.git_branch,
                "version" => &mut r.version,
                "slug" => &mut r.slug,
                "requestId" => &mut r.request_id,
                "promptId" => &mut r.prompt_id,
                "sourceToolUseID" => &mut r.source_tool_use_id,
                "sourceToolAssistantUUID" => &mut r.source_tool_assistant_uuid,
                "toolUseID" => &mut r.tool_use_id,
                "summary" => &mut r.summary,
                "leafUuid" => &mut r.leaf_uuid,
                "content" => &mut r.content,
                "level" => &mut r.level,
                "operation" => &mut r.operation,
                "permissionMode" => &mut r.permission_mode,
                "lastPrompt" => &mut r.last_prompt,
                "aiTitle" => &mut r.ai_title,
                "customTitle" => &mut r.custom_title,
                "agentName" => &mut r.agent_name,
                "prUrl" => &mut r.pr_url,
                k => {
                    if !KNOWN_SKIPPED.contains(&k) {
                        r.unknown_fields.push(key);
                    }
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            *slot = map.next_value::<LStr<'de>>()?.0;
        }
        r.kind = Kind::from_name(&r.type_name);
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Record<'_> {
        let p = parse_line(line.as_bytes());
        assert!(p.error.is_none(), "{:?}", p.error);
        assert_eq!(p.records.len(), 1);
        p.records.into_iter().next().expect("one record")
    }

    #[test]
    fn string_vs_block_content() {
        let r =
            one(r#"{"type":"user","message":{"role":"user","content":"continue"},"uuid":"u1"}"#);
        assert_eq!(r.kind, Kind::User);
        assert!(
            matches!(r.message.as_ref().map(|m| &m.content), Some(Content::Text(t)) if t == "continue")
        );
        assert!(matches!(&r.uuid, Some(Cow::Borrowed("u1"))));
        assert_eq!(r.text().as_deref(), Some("continue"));

        let r = one(
            r#"{"message":{"content":[{"text":"say lol","type":"text"},{"type":"text","text":"x"}]},"type":"user"}"#,
        );
        assert_eq!(r.kind, Kind::User);
        assert_eq!(r.blocks().len(), 2);
        assert_eq!(r.text().as_deref(), Some("say lol\nx"));
    }

    #[test]
    fn assistant_thinking_text_tool_use() {
        let line = r#"{"parentUuid":"p","isSidechain":false,"type":"assistant","requestId":"req_1","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-opus-4","content":[{"type":"thinking","thinking":"secret plan","signature":"sig"},{"type":"text","text":"Hello"},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"description":"list","command":"ls -la","timeout":5}},{"type":"tool_use","id":"toolu_2","name":"Edit","input":{"old_string":"a","file_path":"/x/y.rs","new_string":"b"}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"cache_creation_input_tokens":10,"cache_read_input_tokens":20,"output_tokens":7,"service_tier":"standard","cache_creation":{"ephemeral_5m_input_tokens":0}}}}"#;
        let r = one(line);
        assert_eq!(r.kind, Kind::Assistant);
        let m = r.message.as_ref().expect("message");
        assert_eq!(m.id.as_deref(), Some("msg_1"));
        assert_eq!(m.model.as_deref(), Some("claude-opus-4"));
        assert_eq!(m.stop_reason.as_deref(), Some("tool_use"));
        assert_eq!(
            m.usage,
            Some(Usage {
                input_tokens: 3,
                output_tokens: 7,
                cache_creation_input_tokens: 10,
                cache_read_input_tokens: 20
            })
        );
        assert_eq!(r.text().as_deref(), Some("Hello"));
        assert_eq!(r.tool_names(), vec!["Bash", "Edit"]);
        assert!(matches!(r.blocks()[0], Block::Thinking));
        match &r.blocks()[2] {
            Block::ToolUse { id, target, .. } => {
                assert_eq!(id, "toolu_1");
                assert_eq!(target.as_deref(), Some("ls -la"));
            }
            b => panic!("unexpected {b:?}"),
        }
        match &r.blocks()[3] {
            Block::ToolUse { target, .. } => assert_eq!(target.as_deref(), Some("/x/y.rs")),
            b => panic!("unexpected {b:?}"),
        }
        assert!(!r.has_tool_error());
        assert!(r.unknown_fields.is_empty());
    }

    #[test]
    fn tool_result_error_and_denial_text() {
        let denial = "The user doesn't want to proceed with this tool use.";
        let line = format!(
            r#"{{"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"toolu_1","type":"tool_result","content":"{denial}","is_error":true}}]}},"toolUseResult":"Error: {denial}"}}"#
        );
        let r = one(&line);
        assert!(r.has_tool_error());
        assert_eq!(r.text(), None);
        assert_eq!(r.blocks()[0].tool_result_text().as_deref(), Some(denial));
        assert_eq!(r.tool_use_result_agent_id(), None);

        let r = one(
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"a\tb"},{"type":"image","source":{"data":"AAAA"}},{"type":"text","text":"c"}]}]},"toolUseResult":{"status":"completed","agentId":"a073139c8fe58ba03","content":[]}}"#,
        );
        assert!(!r.has_tool_error());
        assert_eq!(r.blocks()[0].tool_result_text().as_deref(), Some("a\tb\nc"));
        assert_eq!(
            r.tool_use_result_agent_id().as_deref(),
            Some("a073139c8fe58ba03")
        );
    }

    #[test]
    fn glued_objects() {
        let p = parse_line(
            br#"{"type":"user","uuid":"a"}{"type":"summary","summary":"t","leafUuid":"l"}"#,
        );
        assert!(p.error.is_none());
        assert_eq!(p.records.len(), 2);
        assert_eq!(p.records[0].kind, Kind::User);
        assert_eq!(p.records[1].kind, Kind::Summary);
        assert_eq!(p.records[1].leaf_uuid.as_deref(), Some("l"));

        let p = parse_line(br#"{"type":"user"} {"type":"system","content":"x"}"#);
        assert_eq!(p.records.len(), 2);
        assert!(p.error.is_none());
    }

    #[test]
    fn glued_then_broken() {
        let p = parse_line(br#"{"type":"user","uuid":"a"}{"type":"summ"#);
        assert_eq!(p.records.len(), 1);
        assert!(
            matches!(p.error, Some(LineError::MalformedJson { column, .. }) if column > 0),
            "{:?}",
            p.error
        );
        let p = parse_line(br#"{"type":"user","message":{"content":[{"type":"text","text":1,]}}"#);
        assert!(p.records.is_empty());
        assert!(matches!(p.error, Some(LineError::MalformedJson { .. })));
    }

    #[test]
    fn invalid_utf8() {
        let p = parse_line(b"{\"type\":\"user\",\"x\":\"\xff\"}");
        assert!(p.records.is_empty());
        assert_eq!(p.error, Some(LineError::InvalidUtf8 { valid_up_to: 20 }));
    }

    #[test]
    fn not_an_object() {
        for line in [&b"[1,2]"[..], b"\"x\"", b"42", b"null", b"true"] {
            let p = parse_line(line);
            assert!(p.records.is_empty());
            assert_eq!(p.error, Some(LineError::NotAnObject), "{line:?}");
        }
        let p = parse_line(br#"{"type":"user"}[1]"#);
        assert_eq!(p.records.len(), 1);
        assert_eq!(p.error, Some(LineError::NotAnObject));
        let p = parse_line(b"");
        assert!(p.records.is_empty() && p.error.is_none());
    }

    #[test]
    fn unknown_type_and_fields() {
        let r = one(r#"{"type":"frame-link","x":1}"#);
        assert_eq!(r.kind, Kind::Other(Cow::Borrowed("frame-link")));
        assert_eq!(r.type_name, "frame-link");
        assert_eq!(r.unknown_fields, vec![Cow::Borrowed("x")]);
        let r = one(r#"{"x\u0041":{"deep":[1,2,{"a":null}]},"uuid":"u"}"#);
        assert_eq!(r.kind, Kind::Other(Cow::Borrowed("")));
        assert_eq!(r.unknown_fields, vec![Cow::<str>::Owned("xA".into())]);
    }

    #[test]
    fn unknown_block_type_and_lenient_fields() {
        let r = one(
            r#"{"type":"assistant","uuid":5,"isMeta":"yes","message":{"content":[{"citations":[],"type":"server_tool_use"},7,{"type":"image","source":{"data":"AAA"}}],"usage":"lots"}}"#,
        );
        assert_eq!(r.uuid, None);
        assert!(!r.is_meta);
        assert!(matches!(&r.blocks()[0], Block::Other(t) if t == "server_tool_use"));
        assert!(matches!(&r.blocks()[1], Block::Image));
        assert_eq!(r.message.as_ref().and_then(|m| m.usage), None);
        let r = one(r#"{"type":"user","message":"oops"}"#);
        assert!(r.message.is_none());
    }

    #[test]
    fn escapes_decode() {
        let r = one(
            r#"{"type":"user","message":{"content":[{"type":"text","text":"a\nb \u00e9\"q\""}]}}"#,
        );
        assert_eq!(r.text().as_deref(), Some("a\nb é\"q\""));
        let r = one(r#"{"type":"user","message":{"content":"x\\y"}}"#);
        assert_eq!(r.text().as_deref(), Some("x\\y"));
    }

    #[test]
    fn system_compact_boundary_and_metadata_lines() {
        let r = one(
            r#"{"parentUuid":null,"logicalParentUuid":"L","type":"system","subtype":"compact_boundary","content":"Conversation compacted","level":"info","compactMetadata":{"trigger":"auto","preTokens":155000,"postTokens":1,"durationMs":2}}"#,
        );
        assert_eq!(r.kind, Kind::System);
        assert_eq!(r.parent_uuid, None);
        assert_eq!(r.logical_parent_uuid.as_deref(), Some("L"));
        assert_eq!(
            r.compact_metadata,
            Some(CompactMetadata {
                trigger: Some("auto".into()),
                pre_tokens: Some(155000)
            })
        );
        assert_eq!(r.content.as_deref(), Some("Conversation compacted"));
        let r = one(r#"{"type":"ai-title","aiTitle":"Fix bug","sessionId":"s"}"#);
        assert_eq!(r.kind, Kind::AiTitle);
        assert_eq!(r.ai_title.as_deref(), Some("Fix bug"));
        let r = one(
            r#"{"type":"attachment","attachment":{"content":{"big":[1]},"type":"queued_command"}}"#,
        );
        assert_eq!(r.attachment_type.as_deref(), Some("queued_command"));
        let r = one(r#"{"type":"progress","data":{"type":"bash_progress","output":"..."}}"#);
        assert_eq!(r.progress_type.as_deref(), Some("bash_progress"));
    }

    #[test]
    fn target_truncated_at_char_boundary() {
        let long = "é".repeat(MAX_TARGET_LEN);
        let line = format!(
            r#"{{"type":"assistant","message":{{"content":[{{"type":"tool_use","id":"i","name":"Bash","input":{{"command":"{long}"}}}}]}}}}"#
        );
        let r = one(&line);
        match &r.blocks()[0] {
            Block::ToolUse {
                target: Some(t), ..
            } => {
                assert!(t.len() <= MAX_TARGET_LEN && !t.is_empty());
            }
            b => panic!("unexpected {b:?}"),
        }
    }

    #[test]
    fn deep_nesting_does_not_panic() {
        let deep = format!("{{\"x\":{}{}}}", "[".repeat(100_000), "]".repeat(100_000));
        let p = parse_line(deep.as_bytes());
        assert!(p.records.len() + usize::from(p.error.is_some()) == 1);
        let deep = format!(
            "{{\"type\":\"user\",\"message\":{}}}",
            "{\"a\":".repeat(10_000)
        );
        let p = parse_line(deep.as_bytes());
        assert!(matches!(p.error, Some(LineError::MalformedJson { .. })));
    }

    // ------------------------------------------------------------------ corpus

    const CORPUS: &str = "/work/shared/corpus/real";

    fn corpus_files() -> Vec<std::path::PathBuf> {
        fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            let Ok(rd) = std::fs::read_dir(dir) else {
                return;
            };
            for e in rd.flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|x| x == "jsonl") {
                    out.push(p);
                }
            }
        }
        let mut out = Vec::new();
        walk(std::path::Path::new(CORPUS), &mut out);
        out.sort();
        out
    }

    fn lines(data: &[u8]) -> impl Iterator<Item = &[u8]> {
        data.split(|b| *b == b'\n').filter(|l| !l.is_empty())
    }

    #[test]
    fn corpus_parses() {
        use std::collections::BTreeMap;
        let files = corpus_files();
        if files.is_empty() {
            eprintln!("corpus not found at {CORPUS}; skipping");
            return;
        }
        let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
        let mut unknown: BTreeMap<String, usize> = BTreeMap::new();
        let mut blocks: BTreeMap<String, usize> = BTreeMap::new();
        let mut malformed = Vec::new();
        let (mut n_lines, mut n_other, mut glued) = (0usize, 0usize, 0usize);
        for f in &files {
            let data = std::fs::read(f).expect("read corpus file");
            for (i, line) in lines(&data).enumerate() {
                n_lines += 1;
                let p = parse_line(line);
                if let Some(e) = &p.error {
                    malformed.push(format!("{}:L{}: {e}", f.display(), i + 1));
                }
                if p.records.len() > 1 {
                    glued += 1;
                }
                for r in &p.records {
                    let key = match &r.subtype {
                        Some(s) => format!("{}/{s}", r.type_name),
                        None => r.type_name.to_string(),
                    };
                    *kinds.entry(key).or_default() += 1;
                    for u in &r.unknown_fields {
                        *unknown.entry(u.to_string()).or_default() += 1;
                    }
                    for b in r.blocks() {
                        let name = match b {
                            Block::Text(_) => "text".to_string(),
                            Block::ToolUse { .. } => "tool_use".into(),
                            Block::ToolResult { .. } => "tool_result".into(),
                            Block::Thinking => "thinking".into(),
                            Block::Image => "image".into(),
                            Block::Document => "document".into(),
                            Block::Other(t) => format!("other:{t}"),
                        };
                        *blocks.entry(name).or_default() += 1;
                    }
                    match r.kind {
                        Kind::User | Kind::Assistant => {
                            assert!(r.message.is_some(), "{}:L{} no message", f.display(), i + 1)
                        }
                        Kind::Summary => {
                            assert!(r.leaf_uuid.is_some(), "{}:L{}", f.display(), i + 1)
                        }
                        Kind::System if r.subtype.as_deref() == Some("compact_boundary") => {
                            let pre = r.compact_metadata.as_ref().and_then(|m| m.pre_tokens);
                            assert!(pre.is_some(), "{}:L{}", f.display(), i + 1);
                        }
                        Kind::Other(_) => n_other += 1,
                        _ => {}
                    }
                    for b in r.blocks() {
                        // Decoding on demand must never panic.
                        let _ = b.tool_result_text();
                    }
                    let _ = r.tool_use_result_agent_id();
                }
            }
        }
        eprintln!(
            "files: {}, lines: {n_lines}, glued lines: {glued}",
            files.len()
        );
        eprintln!("kinds/subtypes: {kinds:#?}");
        eprintln!("blocks: {blocks:#?}");
        eprintln!("unknown top-level fields: {unknown:#?}");
        eprintln!("malformed lines ({}): {malformed:#?}", malformed.len());
        assert!(n_lines > 15_000);
        assert_eq!(n_other, 0, "all corpus line kinds are known variants");
        assert!(
            malformed.is_empty(),
            "the real corpus has no malformed lines"
        );
        assert!(unknown.is_empty(), "all corpus top-level keys are known");
    }

    /// Speed report only (no timed assertion): meaningful in `--release`.
    #[test]
    fn corpus_speed_report() {
        let mut all = Vec::new();
        for f in corpus_files() {
            if let Ok(d) = std::fs::read(f) {
                all.extend_from_slice(&d);
                if !all.ends_with(b"\n") {
                    all.push(b'\n');
                }
            }
        }
        if all.is_empty() {
            return;
        }
        let reps = if cfg!(debug_assertions) { 1 } else { 5 };
        let start = std::time::Instant::now();
        let mut records = 0usize;
        for _ in 0..reps {
            for line in lines(&all) {
                records += parse_line(line).records.len();
            }
        }
        let secs = start.elapsed().as_secs_f64();
        let mb = (all.len() * reps) as f64 / 1e6;
        eprintln!(
            "parse speed: {mb:.1} MB in {secs:.3}s = {:.0} MB/s ({records} records)",
            mb / secs
        );
    }
}
