//! A whole session to read or share (`gleaner export --format html|md --session ID`): every
//! prompt and reply, tool calls with their inputs and outputs, thinking, sub-agents nested where
//! they were called, images, compactions, and the session's episodes with their labels beside
//! the turns they cover. Secrets are redacted on the way, as everything Gleaner stores.
//!
//! Read from the transcripts' bytes (the files, or the archive's copies once Claude Code
//! deleted them: the caller brings them), not from the stored rows: the rows keep a tool
//! result only as a bounded search text, and no thinking or image at all. Why not the `parse`
//! stage: it skips exactly those payloads to stay fast; a reading for people wants them, once.
//! Lines are parsed as plain JSON values, and a line that is not one is left out (never an
//! error): the export is a view, the archive keeps every byte.

mod html;
mod md;
mod source;

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

pub use html::{html, Style, CSS};
pub use md::markdown;
pub use source::{gather, SourceError};

use crate::extract::redact::Redactor;
use crate::store::{EpisodeListing, SessionListing, TouchedFile};

/// Most characters of one tool output or input shown (a file read can be megabytes: the
/// archive keeps it whole, `restore` gives it back).
pub const MAX_TOOL_TEXT: usize = 64 * 1024;

/// What a session export is made of: the session, its episodes, and its transcripts' bytes.
#[derive(Debug, Clone)]
pub struct SessionSource {
    /// The session as every door lists it.
    pub session: SessionListing,
    /// `cd <cwd> && claude --resume <id>`.
    pub resume: Option<String>,
    /// Its episodes, oldest first.
    pub episodes: Vec<EpisodeListing>,
    /// The files its tools touched.
    pub files: Vec<TouchedFile>,
    /// The main transcript's bytes.
    pub main: Vec<u8>,
    /// Each sub-agent's transcript by agent id, with its description.
    pub agents: HashMap<String, Agent>,
}

/// A sub-agent's transcript.
#[derive(Debug, Clone, Default)]
pub struct Agent {
    /// Its type (`Explore`, `general-purpose`).
    pub agent_type: Option<String>,
    /// What the parent asked it to do.
    pub description: Option<String>,
    /// Its transcript's bytes.
    pub bytes: Vec<u8>,
}

/// One thing that happened, in order. `line` is the transcript line it came from (1-based).
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// What the user typed (or an IDE sent).
    Prompt {
        /// Its line.
        line: u64,
        /// Its text, redacted.
        text: String,
    },
    /// The assistant's text (Markdown).
    Reply {
        /// Its line.
        line: u64,
        /// Its text, redacted.
        text: String,
    },
    /// The assistant's thinking.
    Thinking {
        /// Its line.
        line: u64,
        /// Its text, redacted.
        text: String,
    },
    /// A tool call, its result when one came, and the sub-agent it ran.
    Tool(Box<ToolCall>),
    /// An image someone pasted or a tool returned.
    Image {
        /// Its line.
        line: u64,
        /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
        media_type: String,
        /// Its bytes, base64.
        data: String,
    },
    /// A compaction summary, a `summary` line, or a compaction boundary.
    Note {
        /// Its line.
        line: u64,
        /// What it is.
        title: &'static str,
        /// Its text (empty for a boundary).
        text: String,
    },
}

/// A tool call and what came of it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolCall {
    /// The call's line.
    pub line: u64,
    /// Its tool use id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// What it acted on: the command, file path, pattern, URL, query or description.
    pub target: String,
    /// Its input, as pretty JSON.
    pub input: String,
    /// The result's text, and whether it failed.
    pub output: Option<(String, bool)>,
    /// The result's line.
    pub output_line: Option<u64>,
    /// A `Task`/`Agent` call's sub-agent: its id, description and entries.
    pub agent: Option<(String, String, Vec<Entry>)>,
}

impl Entry {
    /// The transcript line it came from.
    pub fn line(&self) -> u64 {
        match self {
            Entry::Prompt { line, .. }
            | Entry::Reply { line, .. }
            | Entry::Thinking { line, .. }
            | Entry::Image { line, .. }
            | Entry::Note { line, .. } => *line,
            Entry::Tool(t) => t.line,
        }
    }
}

/// A stored time as a reader reads it: `2026-04-24T20:59:22.572Z` is `2026-04-24 20:59:22 UTC`
/// (an export is read anywhere, so it says its zone rather than turning into the exporter's);
/// any other form as it is, `?` for none.
pub(super) fn when(ts: Option<&str>) -> String {
    let Some(ts) = ts else {
        return "?".into();
    };
    match chrono::DateTime::parse_from_rfc3339(ts) {
        Ok(t) => t
            .with_timezone(&chrono::Utc)
            .format("%Y-%m-%d %H:%M:%S UTC")
            .to_string(),
        Err(_) => ts.to_string(),
    }
}

/// `text` without terminal escapes and control characters (but line breaks and tabs): HTML5
/// allows none of them, and a build log is full of colour codes.
pub fn printable(text: &str) -> String {
    crate::text::strip_ansi(text)
        .chars()
        .map(|c| match c {
            '\n' | '\t' => c,
            '\r' => '\n',
            c if c.is_control() || ('\u{FDD0}'..='\u{FDEF}').contains(&c) => '\u{FFFD}',
            c if (c as u32) & 0xFFFE == 0xFFFE => '\u{FFFD}',
            c => c,
        })
        .collect()
}

/// `text` redacted, printable and cut to `max` characters.
fn clean(r: &Redactor, text: &str, max: usize) -> String {
    let mut counts = BTreeMap::new();
    let t = printable(&r.redact(text, &mut counts));
    if t.chars().count() <= max {
        return t;
    }
    let kept: String = t.chars().take(max).collect();
    format!(
        "{kept}\n… ({} more characters in the transcript)",
        t.chars().count() - max
    )
}

/// The text of a content value: a string, or its `text` blocks joined.
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// An image block's media type and base64 data, when it is one a browser shows.
fn image_of(b: &Value) -> Option<(String, String)> {
    let src = b.get("source")?;
    let media = src.get("media_type")?.as_str()?;
    let data = src.get("data")?.as_str()?;
    let shown = matches!(
        media,
        "image/png" | "image/jpeg" | "image/gif" | "image/webp"
    );
    let base64 = data
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'='));
    (shown && base64).then(|| (media.to_string(), data.to_string()))
}

/// The entries of one transcript; `agents` are the session's sub-agents, nested into the calls
/// that ran them (each once).
pub fn entries(
    bytes: &[u8],
    r: &Redactor,
    agents: &mut HashMap<String, Agent>,
    depth: usize,
) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    // Where each call is in `out`, by its tool use id.
    let mut calls: HashMap<String, usize> = HashMap::new();
    for (i, raw) in bytes.split(|b| *b == b'\n').enumerate() {
        let line = i as u64 + 1;
        let Ok(v) = serde_json::from_slice::<Value>(raw) else {
            continue;
        };
        let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
        let content = v.get("message").and_then(|m| m.get("content"));
        match kind {
            "summary" => {
                let text = v.get("summary").and_then(Value::as_str).unwrap_or("");
                out.push(Entry::Note {
                    line,
                    title: "Summary",
                    text: clean(r, text, MAX_TOOL_TEXT),
                });
            }
            "system" if v.get("subtype").and_then(Value::as_str) == Some("compact_boundary") => out
                .push(Entry::Note {
                    line,
                    title: "Compacted",
                    text: String::new(),
                }),
            "user" if v.get("isCompactSummary") == Some(&Value::Bool(true)) => {
                out.push(Entry::Note {
                    line,
                    title: "Compaction summary",
                    text: clean(r, &content.map(text_of).unwrap_or_default(), MAX_TOOL_TEXT),
                })
            }
            "user" if v.get("isMeta") == Some(&Value::Bool(true)) => {}
            "user" => match content {
                Some(Value::String(s)) => out.push(Entry::Prompt {
                    line,
                    text: clean(r, s, usize::MAX),
                }),
                Some(Value::Array(blocks)) => {
                    let agent_id = v
                        .get("toolUseResult")
                        .and_then(|t| t.get("agentId"))
                        .and_then(Value::as_str);
                    for b in blocks {
                        match b.get("type").and_then(Value::as_str) {
                            Some("text") => out.push(Entry::Prompt {
                                line,
                                text: clean(
                                    r,
                                    &text_of(b.get("text").unwrap_or(&Value::Null)),
                                    usize::MAX,
                                ),
                            }),
                            Some("image") => {
                                if let Some((media_type, data)) = image_of(b) {
                                    out.push(Entry::Image {
                                        line,
                                        media_type,
                                        data,
                                    });
                                }
                            }
                            Some("tool_result") => {
                                let id = b.get("tool_use_id").and_then(Value::as_str).unwrap_or("");
                                let failed = b.get("is_error") == Some(&Value::Bool(true));
                                let text = clean(
                                    r,
                                    &b.get("content").map(text_of).unwrap_or_default(),
                                    MAX_TOOL_TEXT,
                                );
                                let Some(Entry::Tool(call)) =
                                    calls.get(id).and_then(|&at| out.get_mut(at))
                                else {
                                    continue;
                                };
                                call.output = Some((text, failed));
                                call.output_line = Some(line);
                                if let (Some(a), true) = (agent_id, depth < 3) {
                                    if let Some(agent) = agents.remove(a) {
                                        let nested = entries(&agent.bytes, r, agents, depth + 1);
                                        let what = agent
                                            .description
                                            .or(agent.agent_type)
                                            .unwrap_or_default();
                                        call.agent = Some((a.to_string(), what, nested));
                                    }
                                }
                                // Images a tool returned (a screenshot).
                                if let Some(Value::Array(parts)) = b.get("content") {
                                    for p in parts {
                                        if let Some((media_type, data)) = image_of(p) {
                                            out.push(Entry::Image {
                                                line,
                                                media_type,
                                                data,
                                            });
                                        }
                                    }
                                }
                            }
                            _ => {}
                        }
                    }
                }
                _ => {}
            },
            "assistant" => {
                let Some(Value::Array(blocks)) = content else {
                    continue;
                };
                for b in blocks {
                    match b.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            let text = b.get("text").and_then(Value::as_str).unwrap_or("");
                            if !text.trim().is_empty() {
                                out.push(Entry::Reply {
                                    line,
                                    text: clean(r, text, usize::MAX),
                                });
                            }
                        }
                        Some("thinking") => {
                            let text = b.get("thinking").and_then(Value::as_str).unwrap_or("");
                            if !text.trim().is_empty() {
                                out.push(Entry::Thinking {
                                    line,
                                    text: clean(r, text, MAX_TOOL_TEXT),
                                });
                            }
                        }
                        Some("tool_use") => {
                            let id = b
                                .get("id")
                                .and_then(Value::as_str)
                                .unwrap_or("")
                                .to_string();
                            let input = b
                                .get("input")
                                .map(|i| serde_json::to_string_pretty(i).unwrap_or_default())
                                .unwrap_or_default();
                            calls.insert(id.clone(), out.len());
                            let target = crate::parse::TARGET_KEYS
                                .iter()
                                .find_map(|k| b.get("input")?.get(*k)?.as_str())
                                .map(|t| crate::text::clip(crate::text::first_line(t), 120, "…"))
                                .unwrap_or_default();
                            out.push(Entry::Tool(Box::new(ToolCall {
                                line,
                                id,
                                name: b
                                    .get("name")
                                    .and_then(Value::as_str)
                                    .unwrap_or("?")
                                    .to_string(),
                                input: clean(r, &input, MAX_TOOL_TEXT),
                                target: clean(r, &target, usize::MAX),
                                ..ToolCall::default()
                            })));
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The episode (its index in `episodes`) each entry falls in, by the entry's line.
pub fn episode_of(episodes: &[EpisodeListing], line: u64) -> Option<usize> {
    episodes
        .iter()
        .position(|e| (e.start_line as u64..=e.end_line as u64).contains(&line))
}

#[cfg(test)]
mod tests;
