//! Telling what a human typed from what Claude Code injected into a `user` line.
//!
//! User lines carry real prompts, but also slash-command plumbing, command output, caveats,
//! IDE context and interruption markers, recognisable only by their text (format doc §3.1).
//! These rules decide session titles now and user feedback later.

use crate::parse::{Block, Content, Record};

/// Text blocks starting with one of these are plumbing, not something the user typed.
pub const PLUMBING_PREFIXES: &[&str] = &[
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<task-notification>",
    "<ide_opened_file>",
    "<ide_selection>",
    "<system-reminder>",
    "Caveat: The messages below were generated",
];

/// Marker Claude Code writes when the user pressed Esc.
pub const INTERRUPTION_PREFIX: &str = "[Request interrupted";

/// Messages Claude Code itself writes into a user line when a typed slash command does not
/// resolve (`/hookify` without the plugin): one short line, never the user's words.
const CLIENT_REPLIES: &[&str] = &[
    "Unknown skill: ",
    "Unknown command: ",
    "Unknown slash command: ",
];

/// Whether a text block is plumbing (command markup, caveats, IDE context, Claude Code's own
/// one-line replies).
pub fn is_plumbing(text: &str) -> bool {
    let t = text.trim_start();
    PLUMBING_PREFIXES.iter().any(|p| t.starts_with(p))
        || CLIENT_REPLIES.iter().any(|p| {
            t.strip_prefix(p).is_some_and(|rest| {
                let rest = rest.trim_end();
                !rest.is_empty() && rest.len() <= 80 && !rest.contains(char::is_whitespace)
            })
        })
}

/// Whether a text block is an interruption marker.
pub fn is_interruption(text: &str) -> bool {
    text.trim_start().starts_with(INTERRUPTION_PREFIX)
}

/// The human-typed text of a user record: its string content or text blocks, minus plumbing and
/// interruption markers, joined with `\n`. `None` when nothing remains.
pub fn human_text(rec: &Record<'_>) -> Option<String> {
    let msg = rec.message.as_ref()?;
    let keep = |t: &str| !t.trim().is_empty() && !is_plumbing(t) && !is_interruption(t);
    let text = match &msg.content {
        Content::Text(t) => keep(t).then(|| t.to_string())?,
        Content::Blocks(blocks) => {
            let parts: Vec<&str> = blocks
                .iter()
                .filter_map(|b| match b {
                    Block::Text(t) if keep(t) => Some(t.as_ref()),
                    _ => None,
                })
                .collect();
            if parts.is_empty() {
                return None;
            }
            parts.join("\n")
        }
        Content::None => return None,
    };
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_line;

    fn human(line: &str) -> Option<String> {
        let p = parse_line(line.as_bytes());
        human_text(&p.records[0])
    }

    #[test]
    fn plumbing_and_markers_are_dropped() {
        assert_eq!(
            human(r#"{"type":"user","message":{"role":"user","content":"hello"}}"#).as_deref(),
            Some("hello")
        );
        assert_eq!(
            human(
                r#"{"type":"user","message":{"role":"user","content":"<command-name>/mcp</command-name>"}}"#
            ),
            None
        );
        assert_eq!(
            human(
                r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]}}"#
            ),
            None
        );
        assert_eq!(
            human(r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"<ide_opened_file>x</ide_opened_file>"},{"type":"text","text":"fix it"}]}}"#).as_deref(),
            Some("fix it")
        );
        assert_eq!(
            human(
                r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"out"}]}}"#
            ),
            None
        );
    }

    #[test]
    fn claude_codes_own_replies_are_not_prompts() {
        let line = |t: &str| {
            format!(
                r#"{{"type":"user","message":{{"role":"user","content":{}}}}}"#,
                serde_json::json!(t)
            )
        };
        assert_eq!(human(&line("Unknown skill: hookify")), None);
        assert_eq!(human(&line("Unknown command: /frobnicate\n")), None);
        // A person writing about it is a prompt.
        assert_eq!(
            human(&line("Unknown skill: hookify is what I get, why?")).as_deref(),
            Some("Unknown skill: hookify is what I get, why?")
        );
    }
}
