//! Which `user` transcript lines are user feedback, and what kind.
//!
//! Why this exists: the most valuable signal in a transcript is where the human steered the
//! agent — a typed correction, a rejected tool call (often with a reason), or Esc. None of these
//! is marked as such in the JSONL; they are recognisable only by the shape and text of `user`
//! lines. This module is the single place that encodes those rules, so the extractor only maps
//! [`Item`]s to rows and dedups them on (line uuid, type, block / tool use id).
//!
//! Rules, applied to every `user` record of every file (main and sub-agent):
//! 1. Injected lines are never feedback: `isMeta`, `isCompactSummary`, or `sourceToolUseID`
//!    (e.g. a skill body) skip the whole line.
//! 2. A `tool_result` with `is_error: true` that is a permission rejection is a
//!    [`FeedbackType::ToolDenial`], with the reason the user typed, if any.
//! 3. A text starting with `[Request interrupted` is a [`FeedbackType::Interruption`].
//! 4. Remaining non-plumbing text of a main-session line, joined, is one
//!    [`FeedbackType::Message`] unless [`is_trivial`].
//! 5. One item per line and block: [`Item::block`] is the content block index.

use crate::extract::prompt::{is_interruption, is_plumbing};
use crate::parse::{Block, Content, Kind, Record};

/// Type of a feedback item. Why an enum: the three kinds come from different rules and are
/// stored in one table discriminated by [`FeedbackType::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedbackType {
    /// Something the human typed on a main-session line (a prompt or correction).
    Message,
    /// A tool call the user rejected in the permission prompt.
    ToolDenial,
    /// The user pressed Esc (`[Request interrupted by user…]`).
    Interruption,
}

impl FeedbackType {
    /// Stable name stored in the database. Why fixed strings: they are data in a column and
    /// must not change when the enum is renamed.
    pub fn as_str(self) -> &'static str {
        match self {
            FeedbackType::Message => "message",
            FeedbackType::ToolDenial => "tool_denial",
            FeedbackType::Interruption => "interruption",
        }
    }
}

/// One feedback item found on a line. Why owned strings: items outlive the line buffer they
/// were parsed from (they are batched for the writer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// Which rule produced it.
    pub feedback_type: FeedbackType,
    /// The text as written: the joined message, the interruption marker, or the whole
    /// tool result text of a denial.
    pub content: String,
    /// For a denial, what the user typed when rejecting the tool call (trimmed); `None` when
    /// they typed nothing, and always `None` for other types.
    pub reason: Option<String>,
    /// For a denial, the `tool_use_id` of the rejected call, linking it to the tool use.
    pub tool_use_id: Option<String>,
    /// Index of the content block that produced it (0 for string content / joined message text);
    /// with the line uuid it forms the dedup key "one item per line and block".
    pub block: u32,
}

/// Start of the tool result Claude Code writes when the user rejects a tool call.
pub const DENIAL_PREFIX: &str = "The user doesn't want to proceed with this tool use";

/// Tool result text of a tool call cut short by Esc while it was pending or running.
const TOOL_INTERRUPT_MARKER: &str = "[Request interrupted by user for tool use]";

/// Markers after which the rejection reason typed by the user follows (newer, older format).
const REASON_MARKERS: &[&str] = &[
    "the user said:",
    "The user provided the following reason for the rejection:",
];

/// Wrapper some older versions put around tool error texts.
const ERROR_OPEN: &str = "<tool_use_error>";
const ERROR_CLOSE: &str = "</tool_use_error>";

/// Prefix some older versions put before tool error texts.
const ERROR_PREFIX: &str = "Error: ";

/// Replies that carry no feedback by themselves (rule 4), compared case-insensitively.
const TRIVIAL_WORDS: &[&str] = &[
    "y", "n", "k", "g", "ok", "go", "yes", "no", "continue", "proceed", "sure", "okay", "resume",
];

/// Feedback items of one record. `in_agent_file`: the line comes from a sub-agent transcript file.
///
/// Why the flag: user text in a sub-agent file is the parent agent's prompt, not a human, so
/// only denials and interruptions are feedback there. Items come in block order (denials and
/// interruptions), followed by the joined message, if any. Non-user records yield nothing.
pub fn items(rec: &Record<'_>, in_agent_file: bool) -> Vec<Item> {
    let mut out = Vec::new();
    if rec.kind != Kind::User
        || rec.is_meta
        || rec.is_compact_summary
        || rec.source_tool_use_id.is_some()
    {
        return out;
    }
    let Some(msg) = rec.message.as_ref() else {
        return out;
    };
    // Human text only on main-session lines; up to 2.0.19 sidechain lines lived in main files.
    let human = !in_agent_file && !rec.is_sidechain;
    let mut texts: Vec<&str> = Vec::new();
    match &msg.content {
        Content::None => {}
        Content::Text(t) => text_block(t, 0, &mut out, &mut texts),
        Content::Blocks(blocks) => {
            for (i, b) in blocks.iter().enumerate() {
                let idx = u32::try_from(i).unwrap_or(u32::MAX);
                match b {
                    Block::Text(t) => text_block(t, idx, &mut out, &mut texts),
                    Block::ToolResult {
                        tool_use_id,
                        is_error: true,
                        ..
                    } => {
                        if let Some(item) = b
                            .tool_result_text()
                            .and_then(|text| denial(text, tool_use_id, idx))
                        {
                            out.push(item);
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    if human && !texts.is_empty() {
        let content = texts.join("\n");
        if !is_trivial(&content) {
            out.push(Item {
                feedback_type: FeedbackType::Message,
                content,
                reason: None,
                tool_use_id: None,
                block: 0,
            });
        }
    }
    out
}

/// Route one text block: an interruption becomes an item, plumbing and blank text are dropped,
/// anything else is collected as a candidate for the joined human message.
fn text_block<'t>(text: &'t str, block: u32, out: &mut Vec<Item>, texts: &mut Vec<&'t str>) {
    if is_interruption(text) {
        out.push(Item {
            feedback_type: FeedbackType::Interruption,
            content: text.to_string(),
            reason: None,
            tool_use_id: None,
            block,
        });
    } else if !text.trim().is_empty() && !is_plumbing(text) {
        texts.push(text);
    }
}

/// The denial item for an error tool result text, or `None` if it is an ordinary tool error
/// (including the parallel-call echo "doesn't want to take this action right now", which is a
/// consequence of the one real denial on a sibling call).
fn denial(text: String, tool_use_id: &str, block: u32) -> Option<Item> {
    let body = unwrap_error(&text);
    if !body.starts_with(DENIAL_PREFIX) && !text.contains(TOOL_INTERRUPT_MARKER) {
        return None;
    }
    let reason = reason(body);
    Some(Item {
        feedback_type: FeedbackType::ToolDenial,
        content: text,
        reason,
        tool_use_id: Some(tool_use_id.to_string()),
        block,
    })
}

/// Strip leading whitespace and any leading `Error: ` / `<tool_use_error>` (older formats).
fn unwrap_error(text: &str) -> &str {
    let mut t = text.trim_start();
    loop {
        if let Some(rest) = t.strip_prefix(ERROR_PREFIX) {
            t = rest.trim_start();
        } else if let Some(rest) = t.strip_prefix(ERROR_OPEN) {
            t = rest.trim_start();
        } else {
            return t;
        }
    }
}

/// What the user typed after the earliest reason marker, trimmed and without a closing
/// `</tool_use_error>`; `None` if there is no marker or nothing after it.
fn reason(body: &str) -> Option<String> {
    let (pos, marker) = REASON_MARKERS
        .iter()
        .filter_map(|m| body.find(m).map(|p| (p, *m)))
        .min_by_key(|(p, _)| *p)?;
    let mut r = body.get(pos + marker.len()..)?.trim();
    if let Some(rest) = r.strip_suffix(ERROR_CLOSE) {
        r = rest.trim();
    }
    (!r.is_empty()).then(|| r.to_string())
}

/// Whether a human message is too trivial to keep (rule 4).
///
/// Why: "ok", "continue" or a bare `/model` only acknowledge or drive the session; keeping them
/// would drown the real corrections. Trivial (case-insensitive, trimmed): empty, a single
/// character, one of the words in `TRIVIAL_WORDS`, or a lone slash command without arguments.
pub fn is_trivial(text: &str) -> bool {
    let t = text.trim();
    let mut chars = t.chars();
    if chars.next().is_none() || chars.next().is_none() {
        return true;
    }
    if TRIVIAL_WORDS.iter().any(|w| t.eq_ignore_ascii_case(w)) {
        return true;
    }
    t.strip_prefix('/').is_some_and(|name| {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '.' | '-'))
    })
}

#[cfg(test)]
mod tests;
