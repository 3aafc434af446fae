//! Tool calls and their results as rows: what a session *did*, searchable as the `tool` kind.
//!
//! A call keeps its tool name and the one input that says what it acted on (the command, the
//! file path, the pattern, the URL: `parse`'s target). A result keeps a bounded part of its
//! text: an error whole up to [`ERROR_CHARS`] (what failed is the point), any other output by
//! its head and tail ([`OUTPUT_HEAD`], [`OUTPUT_TAIL`]): a build's first lines and its verdict,
//! not the 40 KB of a file that was read. Why bounded: tool output is most of a transcript's
//! bytes; stored whole it would double the store (issue 49 allows 15 %), and the archive keeps
//! every byte anyway.

use super::rows::ToolUseRow;
use crate::parse::{Block, Kind, Record};
use std::borrow::Cow;

use crate::text::{head_bytes, strip_ansi};

/// Most characters of a failed result kept (its head, then its last [`ERROR_TAIL`]).
pub const ERROR_CHARS: usize = 1_200;
/// Of a failed result cut to [`ERROR_CHARS`], the characters kept from its end.
const ERROR_TAIL: usize = 300;
/// Characters kept from the start of any other result.
pub const OUTPUT_HEAD: usize = 200;
/// Characters kept from the end of any other result.
pub const OUTPUT_TAIL: usize = 150;

/// Tools whose output is not searched unless it failed: what they return restates what the
/// transcript holds elsewhere (a file read or just edited, a plan, a to-do list, a sub-agent's
/// last reply, the lines or paths of a search through files) or says nothing ("The file has
/// been updated"). Half the output bytes of the corpus's calls, and none of what people look
/// for among what a session *did* (a command's output, an error, a page fetched). Their calls
/// (the path, the pattern) are searched all the same.
pub const QUIET_OUTPUT: &[&str] = &[
    "Read",
    "NotebookRead",
    "Edit",
    "MultiEdit",
    "Write",
    "NotebookEdit",
    "Glob",
    "Grep",
    "LS",
    "TodoWrite",
    "TodoRead",
    "TaskCreate",
    "TaskUpdate",
    "TaskList",
    "TaskGet",
    "Task",
    "Agent",
    "ExitPlanMode",
    "mcp__acp__Read",
    "mcp__acp__Edit",
    "mcp__acp__Write",
];

/// The text a call is searched by: its tool's name, then what it acted on; `None` for a call
/// with no target (a to-do list, a plan): its name alone finds nothing worth a document.
pub fn call_text(name: Option<&str>, target: Option<&str>) -> Option<String> {
    match (name, target) {
        (Some(n), Some(t)) => Some(format!("{n}\n{t}")),
        _ => None,
    }
}

/// `text` cut to its first `head` and last `tail` characters, with a line `…` between them
/// when anything was left out; terminal escapes and blank lines removed. Only the ends of a
/// long text are looked at (a read file can be megabytes).
pub fn head_and_tail(text: &str, head: usize, tail: usize) -> String {
    // A character is at most 4 bytes: windows this long hold `head` and `tail` characters
    // (and blank lines dropped from them only make the kept text shorter: fine).
    let (hw, tw) = (head * 4 + 64, tail * 4 + 64);
    let text = if text.len() <= 2 * (hw + tw) {
        strip_ansi(text)
    } else {
        // The ends only, a line marking the cut between them.
        let start = head_bytes(text, hw).len();
        let end = ceil_boundary(text, text.len() - tw);
        Cow::Owned(format!(
            "{}\n…\n{}",
            strip_ansi(&text[..start]),
            strip_ansi(&text[end..])
        ))
    };
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    let compact = lines.join("\n");
    let chars = compact.chars().count();
    if chars <= head + tail {
        return compact;
    }
    let first: String = compact.chars().take(head).collect();
    let last: String = compact.chars().skip(chars - tail).collect();
    format!("{}\n…\n{}", first.trim_end(), last.trim_start())
}

/// The smallest character boundary at or after `i`.
fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// A result's stored text: bounded as the module says, `None` when it holds no text.
pub fn result_text(text: &str, is_error: bool) -> Option<String> {
    let t = if is_error {
        head_and_tail(text, ERROR_CHARS - ERROR_TAIL, ERROR_TAIL)
    } else {
        head_and_tail(text, OUTPUT_HEAD, OUTPUT_TAIL)
    };
    (!t.trim().is_empty()).then_some(t)
}

/// The tool rows of one record: its calls (an assistant's `tool_use` blocks) into `calls`, its
/// results (a user line's `tool_result` blocks) into `results`.
pub(super) fn collect(
    calls: &mut Vec<ToolUseRow>,
    results: &mut Vec<ToolUseRow>,
    rec: &Record<'_>,
    session_id: &str,
    line_no: u64,
) {
    let ts = || rec.timestamp.as_deref().map(str::to_string);
    // The tool a result answers, when its call was read in this batch (it nearly always is:
    // the line before); an unknown one keeps its output.
    let quiet = |calls: &[ToolUseRow], id: &str| {
        calls
            .iter()
            .rev()
            .find(|c| c.tool_use_id == id)
            .and_then(|c| c.name.as_deref())
            .is_some_and(|n| QUIET_OUTPUT.contains(&n))
    };
    for block in rec.blocks() {
        match block {
            Block::ToolUse {
                id, name, target, ..
            } if rec.kind == Kind::Assistant => calls.push(ToolUseRow {
                tool_use_id: id.to_string(),
                session_id: session_id.to_string(),
                name: Some(name.to_string()),
                target: target.as_deref().map(str::to_string),
                ts: ts(),
                line_no,
                ..ToolUseRow::default()
            }),
            Block::ToolResult {
                tool_use_id,
                is_error,
                ..
            } => results.push(ToolUseRow {
                tool_use_id: tool_use_id.to_string(),
                session_id: session_id.to_string(),
                ts: ts(),
                line_no,
                is_error: *is_error,
                // Decoded only when kept: a file read's content is most of a transcript.
                result: (*is_error || !quiet(calls, tool_use_id))
                    .then(|| block.tool_result_text())
                    .flatten()
                    .and_then(|t| result_text(&t, *is_error)),
                ..ToolUseRow::default()
            }),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_kept_whole_without_blank_lines() {
        assert_eq!(head_and_tail("a\n\n  \nb  \n", 10, 10), "a\nb");
    }

    #[test]
    fn long_output_keeps_its_head_and_its_tail() {
        let text: String = (0..200).map(|i| format!("line {i}\n")).collect();
        let t = head_and_tail(&text, 30, 20);
        assert!(t.starts_with("line 0\nline 1\n"), "{t}");
        assert!(t.ends_with("line 198\nline 199"), "{t}");
        assert!(t.contains("\n…\n"), "{t}");
        assert!(t.chars().count() <= 30 + 20 + 3, "{t}");
        assert!(!t.contains("line 100"));
    }

    #[test]
    fn a_huge_output_is_cut_without_copying_it_whole() {
        let text = format!("{}\nfinal verdict: 3 failed", "x".repeat(200_000));
        let t = head_and_tail(&text, 10, 30);
        assert!(t.ends_with("final verdict: 3 failed"), "{t}");
        assert!(t.starts_with("xxxxxxxxxx"));
    }

    #[test]
    fn errors_are_kept_longer_than_output() {
        let err = "E".repeat(1_100);
        assert_eq!(result_text(&err, true).unwrap().len(), 1_100);
        assert!(result_text(&err, false).unwrap().chars().count() < 600);
        assert_eq!(result_text(" \n ", true), None);
    }

    #[test]
    fn non_ascii_is_cut_on_character_boundaries() {
        let text = "é".repeat(1_000);
        let t = head_and_tail(&text, 7, 5);
        assert!(t.starts_with("ééééééé\n…\n"));
    }

    #[test]
    fn a_call_is_searched_by_name_and_target() {
        assert_eq!(
            call_text(Some("Bash"), Some("cargo test")).as_deref(),
            Some("Bash\ncargo test")
        );
        assert_eq!(call_text(Some("TodoWrite"), None), None);
        assert_eq!(call_text(None, None), None);
    }
}
