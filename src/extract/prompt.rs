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
    // A hook that blocked the prompt: Claude Code's words, in the user's line.
    "Operation stopped by hook",
];

/// Context Claude Code's IDE integrations and its harness wrap in a tag and put beside what the
/// user typed, as blocks of their own (VS Code and JetBrains put `<ide_opened_file>` or
/// `<ide_selection>` before the typed text): the wrapper goes, the typed text stays.
pub const WRAPPER_TAGS: &[&str] = &[
    "ide_opened_file",
    "ide_selection",
    "ide_cursor",
    "ide_visible_files",
    "system-reminder",
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

/// A text with every wrapper block ([`WRAPPER_TAGS`]) taken out: a wrapper counts when it starts
/// the text or a line (stored text joins a line's blocks with `\n`) and its closing tag ends the
/// text or a line. The IDE context of each wrapper removed is returned as a short note
/// ([`wrapper_note`]). Borrowed when there is no wrapper, the common case.
pub fn strip_wrappers(text: &str) -> (std::borrow::Cow<'_, str>, Vec<String>) {
    if !text.contains("</") {
        return (std::borrow::Cow::Borrowed(text), Vec::new());
    }
    let mut out = String::with_capacity(text.len());
    let mut notes = Vec::new();
    let mut rest = text;
    let mut stripped = false;
    while !rest.is_empty() {
        if let Some((inner, tag, after)) = wrapper_at(rest) {
            if let Some(n) = wrapper_note(tag, inner) {
                notes.push(n);
            }
            stripped = true;
            rest = after.strip_prefix('\n').unwrap_or(after);
            continue;
        }
        let line_end = rest.find('\n').map_or(rest.len(), |i| i + 1);
        out.push_str(&rest[..line_end]);
        rest = &rest[line_end..];
    }
    if !stripped {
        return (std::borrow::Cow::Borrowed(text), notes);
    }
    let kept = out.trim_end_matches('\n');
    (std::borrow::Cow::Owned(kept.to_string()), notes)
}

/// The wrapper starting `s` (after leading blanks): its inner text, its tag and what follows
/// its closing tag, when that closing tag ends `s` or a line.
fn wrapper_at(s: &str) -> Option<(&str, &'static str, &str)> {
    let t = s.trim_start_matches([' ', '\t', '\r']);
    let body = t.strip_prefix('<')?;
    let tag = WRAPPER_TAGS
        .iter()
        .find(|tag| body.strip_prefix(**tag).is_some_and(|r| r.starts_with('>')))?;
    let inner_start = tag.len() + 1;
    let close = format!("</{tag}>");
    let end = body[inner_start..].find(&close)? + inner_start;
    let after = &body[end + close.len()..];
    let after_trim = after.trim_start_matches([' ', '\t', '\r']);
    (after_trim.is_empty() || after_trim.starts_with('\n')).then_some((
        &body[inner_start..end],
        *tag,
        after_trim,
    ))
}

/// A short note for an IDE wrapper: `opened README.md`, `selected lines 206-215 of README.md`
/// (the file's name only: its folder is the session's business). `None` for the harness's
/// reminders and anything not recognised.
pub fn wrapper_note(tag: &str, inner: &str) -> Option<String> {
    let file_name = |p: &str| {
        let p = p.trim().trim_end_matches(['.', ':']);
        p.rsplit(['/', '\\']).next().unwrap_or(p).to_string()
    };
    match tag {
        "ide_opened_file" => {
            let rest = inner.split("opened the file ").nth(1)?;
            let path = rest.split(" in the IDE").next()?;
            Some(format!("opened {}", file_name(path)))
        }
        "ide_selection" => {
            let rest = inner.split("selected the lines ").nth(1)?;
            let (range, file) = rest.split_once(" from ")?;
            let (a, b) = range.split_once(" to ")?;
            let file = file.split(['\n']).next()?;
            Some(format!(
                "selected lines {}-{} of {}",
                a.trim(),
                b.trim(),
                file_name(file)
            ))
        }
        _ => None,
    }
}

/// Whether a text block is an interruption marker.
pub fn is_interruption(text: &str) -> bool {
    text.trim_start().starts_with(INTERRUPTION_PREFIX)
}

/// The human-typed text of a user record: its string content or text blocks, minus plumbing and
/// interruption markers, joined with `\n`. `None` when nothing remains.
pub fn human_text(rec: &Record<'_>) -> Option<String> {
    let msg = rec.message.as_ref()?;
    let text = match &msg.content {
        Content::Text(t) => typed(t)?.into_owned(),
        Content::Blocks(blocks) => {
            let parts: Vec<std::borrow::Cow<'_, str>> = blocks
                .iter()
                .filter_map(|b| match b {
                    Block::Text(t) => typed(t),
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

/// What the user typed in one text: the text without its wrappers, `None` when that is blank,
/// plumbing or an interruption marker.
pub fn typed(text: &str) -> Option<std::borrow::Cow<'_, str>> {
    let (t, _) = strip_wrappers(text);
    (!t.trim().is_empty() && !is_plumbing(&t) && !is_interruption(&t)).then_some(t)
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

    #[test]
    fn ide_wrappers_go_and_the_typed_text_stays() {
        let opened = "<ide_opened_file>The user opened the file /home/u/p/README.md in the IDE. \
                      This may or may not be related to the current task.</ide_opened_file>";
        let stored = format!("{opened}\nfix the typo");
        let (t, notes) = strip_wrappers(&stored);
        assert_eq!(t, "fix the typo");
        assert_eq!(notes, ["opened README.md"]);
        let sel = "<ide_selection>The user selected the lines 206 to 215 from \
                   c:\\code\\README.md:\nsome text\n\nThis may or may not be related.</ide_selection>";
        let stored = format!("{sel}\n<system-reminder>be brief</system-reminder>\nwhy?\n<system-reminder>x</system-reminder>");
        let (t, notes) = strip_wrappers(&stored);
        assert_eq!(t, "why?");
        assert_eq!(notes, ["selected lines 206-215 of README.md"]);
        // Only wrappers: nothing typed.
        assert_eq!(typed(opened), None);
        // A tag quoted inside a sentence is the user's text.
        let quoted = "what does <ide_selection>x</ide_selection> mean";
        assert_eq!(strip_wrappers(quoted).0, quoted);
        // An unclosed wrapper is left alone (and is plumbing).
        assert_eq!(typed("<ide_opened_file>oops"), None);
        assert_eq!(
            human(&format!(
                r#"{{"type":"user","message":{{"role":"user","content":{}}}}}"#,
                serde_json::json!(format!("<system-reminder>r</system-reminder>\nship it"))
            ))
            .as_deref(),
            Some("ship it")
        );
    }
}
