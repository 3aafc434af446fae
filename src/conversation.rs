//! A session's conversation as plain text: what the user and the assistant wrote, in order.
//!
//! For people, and for tools that summarise a session: each turn is its role and its text,
//! turns joined by a blank line. Tool calls and results, thinking, file snapshots, injected
//! (meta) lines and Claude Code's plumbing are left out. The text is built from stored rows
//! (so it survives Claude Code deleting the transcript) or from parsed records; both go through
//! [`Turn`] and [`build`].
//!
//! Truncation keeps the end (recent conversation matters most): the last `max_chars`
//! characters, with the cut moved forward to the first paragraph boundary (`\n\n`) after it so
//! no turn starts mid-sentence.

use std::borrow::Cow;

use serde::Serialize;

use crate::extract::prompt;
use crate::parse::{Kind, Record};

/// Who wrote a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The person (or, in a sub-agent, the prompt it was given).
    User,
    /// Claude.
    Assistant,
}

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn<'a> {
    /// Who wrote it.
    pub role: Role,
    /// What was written.
    pub text: Cow<'a, str>,
    /// The sub-agent it belongs to (`None`: the main conversation).
    pub agent: Option<&'a str>,
}

/// The conversation text and what truncation dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conversation {
    /// The text.
    pub text: String,
    /// Turns in the whole conversation.
    pub turns: usize,
    /// Characters of the whole conversation.
    pub total_chars: usize,
    /// Characters left out at the start by `max_chars`.
    pub dropped_chars: usize,
}

/// The text a stored user message contributes, `None` for plumbing (command markup, caveats),
/// interruption markers and blank text. Stored text joins a line's text blocks with `\n`: the
/// wrappers an IDE or the harness put beside the typed text (`<ide_opened_file>`,
/// `<system-reminder>`...) are taken out first, so a prompt sent from VS Code is what was
/// typed; what is left is judged by how it starts, which is where Claude Code puts its markup.
pub fn user_text(stored: &str) -> Option<Cow<'_, str>> {
    match prompt::typed(stored)? {
        Cow::Borrowed(t) => Some(Cow::Borrowed(t.trim())),
        Cow::Owned(t) => Some(Cow::Owned(t.trim().to_string())),
    }
}

/// The IDE context beside a stored user message's typed text, as short notes (`opened
/// README.md`, `selected lines 206-215 of README.md`); empty for most messages.
pub fn ide_notes(stored: &str) -> Vec<String> {
    prompt::strip_wrappers(stored).1
}

/// The role and text of a parsed record, `None` when it is not conversation: not a user or
/// assistant line, injected (`isMeta`, a compaction summary), or without text once tool
/// results, thinking and plumbing blocks are set aside.
pub fn turn_of(rec: &Record<'_>) -> Option<(Role, String)> {
    if rec.is_meta || rec.is_compact_summary {
        return None;
    }
    match rec.kind {
        Kind::User => prompt::human_text(rec).map(|t| (Role::User, t)),
        Kind::Assistant => rec
            .text()
            .filter(|t| !t.trim().is_empty())
            .map(|t| (Role::Assistant, t.trim().to_string())),
        _ => None,
    }
}

fn label(t: &Turn<'_>) -> String {
    let role = match t.role {
        Role::User => "User",
        Role::Assistant => "Assistant",
    };
    match t.agent {
        Some(a) => format!("{role} (agent {a}):"),
        None => format!("{role}:"),
    }
}

/// The conversation of stored message rows, each `(kind, text, sub-agent)` with kind `user` or
/// `assistant`: user rows that are plumbing or interruption markers are left out.
pub fn from_stored<'a>(
    rows: impl IntoIterator<Item = (&'a str, &'a str, Option<&'a str>)>,
    max_chars: Option<usize>,
) -> Conversation {
    let turns = rows.into_iter().filter_map(|(kind, text, agent)| {
        let (role, text) = match kind {
            "user" => (Role::User, user_text(text)?),
            "assistant" => (Role::Assistant, Cow::Borrowed(text)),
            _ => return None,
        };
        Some(Turn { role, text, agent })
    });
    build(turns, max_chars)
}

/// Join the turns (`Role: text`, a blank line between turns) and keep at most the last
/// `max_chars` characters, cut at the first paragraph boundary after the cut.
pub fn build<'a>(
    turns: impl IntoIterator<Item = Turn<'a>>,
    max_chars: Option<usize>,
) -> Conversation {
    let mut text = String::new();
    let mut n = 0;
    for t in turns {
        let body = t.text.trim();
        if body.is_empty() {
            continue;
        }
        if n > 0 {
            text.push_str("\n\n");
        }
        text.push_str(&label(&t));
        text.push(if body.contains('\n') { '\n' } else { ' ' });
        text.push_str(body);
        n += 1;
    }
    let total_chars = text.chars().count();
    let (text, dropped_chars) = match max_chars {
        Some(max) if total_chars > max => keep_tail(&text, total_chars - max),
        _ => (text, 0),
    };
    Conversation {
        text,
        turns: n,
        total_chars,
        dropped_chars,
    }
}

impl Conversation {
    /// Up to `max` characters of the text from character `start`, read forward (the way to read
    /// a long conversation from its beginning, a page at a time): the page ends at the last
    /// paragraph boundary (`\n\n`) within it, else at the last white space, else at `max`;
    /// the second value is where the next page starts, `None` when the text ends here.
    pub fn window(&self, start: usize, max: usize) -> (String, Option<usize>) {
        let max = max.max(1);
        let from = self
            .text
            .char_indices()
            .nth(start)
            .map_or(self.text.len(), |(i, _)| i);
        let rest = &self.text[from..];
        let end = rest.char_indices().nth(max).map_or(rest.len(), |(i, _)| i);
        if end == rest.len() {
            return (rest.to_string(), None);
        }
        let page = &rest[..end];
        let cut = match page.rfind("\n\n") {
            Some(i) if i > 0 => i + 2,
            _ => match page.rfind(char::is_whitespace) {
                Some(i) if i > 0 => i + page[i..].chars().next().map_or(1, char::len_utf8),
                _ => end,
            },
        };
        let text = rest[..cut].to_string();
        let next = start + text.chars().count();
        (text, Some(next))
    }
}

/// Drop the first `skip` characters, then up to the first `\n\n` after them (and that
/// boundary). Without a boundary after the cut, the cut stays where it is.
fn keep_tail(text: &str, skip: usize) -> (String, usize) {
    let cut = text.char_indices().nth(skip).map_or(text.len(), |(i, _)| i);
    let (before, after) = text.split_at(cut);
    let start = if before.ends_with("\n\n") {
        // Already at a turn's start.
        cut
    } else if before.ends_with('\n') && after.starts_with('\n') {
        // Inside a boundary: its second half goes too.
        cut + 1
    } else {
        match after.find("\n\n") {
            Some(i) => cut + i + 2,
            // The last turn is longer than what is kept: start at its next word, never inside
            // one (a text with no white space left is kept from the cut).
            None if !before.ends_with(char::is_whitespace) => {
                match after.find(char::is_whitespace) {
                    Some(i) => {
                        let rest = &after[i..];
                        cut + i + (rest.len() - rest.trim_start().len())
                    }
                    // The cut is inside the text's last word: that word is kept whole (a
                    // few characters over the limit rather than half a word).
                    None => before.rfind(char::is_whitespace).map_or(0, |i| {
                        i + before[i..].chars().next().map_or(1, char::len_utf8)
                    }),
                }
            }
            None => cut,
        }
    };
    (text[start..].to_string(), text[..start].chars().count())
}

#[cfg(test)]
mod tests;
