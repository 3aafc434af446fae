//! The Markdown export: one section per session, for people.

use std::fmt::Write;

use super::SessionExport;
use crate::text::clip_chars;

/// Longest feedback item shown, in characters.
const FEEDBACK_CHARS: usize = 500;

/// One session's Markdown (what [`markdown`] writes for each, between rules).
pub fn session_text(s: &SessionExport) -> String {
    let mut out = String::new();
    session(&mut out, s);
    out
}

/// Markdown of every session, separated by rules.
pub fn markdown(sessions: &[SessionExport]) -> String {
    let mut out = String::new();
    if sessions.is_empty() {
        out.push_str("_No session matched._\n");
    }
    for (i, s) in sessions.iter().enumerate() {
        if i > 0 {
            out.push_str("\n---\n\n");
        }
        session(&mut out, s);
    }
    out
}

/// A fence longer than any run of backticks in `text`, so the text cannot close it.
pub(super) fn fence(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    "`".repeat(longest.max(2) + 1)
}

/// Text on one line, for list items and headings.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn session(out: &mut String, x: &SessionExport) {
    let s = &x.session;
    let title = s.title.as_deref().map(one_line).unwrap_or_default();
    let title = if title.is_empty() {
        "(untitled session)".to_string()
    } else {
        clip_chars(&title, 120)
    };
    let _ = writeln!(out, "# {title}\n");
    let _ = writeln!(out, "- Session: `{}`", s.session_id);
    let _ = writeln!(out, "- Project: {}", s.project);
    if let Some(cwd) = &s.cwd {
        let _ = writeln!(out, "- Directory: `{cwd}`");
    }
    if let Some(b) = &s.git_branch {
        let _ = writeln!(out, "- Branch: `{b}`");
    }
    let machines = if s.machines.is_empty() {
        s.machine.clone()
    } else {
        s.machines.join(", ")
    };
    match s.user.as_deref().filter(|u| !u.is_empty()) {
        Some(u) => {
            let _ = writeln!(out, "- By {u} on {machines}");
        }
        None => {
            let _ = writeln!(out, "- On {machines}");
        }
    }
    let started = s.started_at.as_deref().unwrap_or("?");
    let last = s.last_activity_at.as_deref().unwrap_or("?");
    let _ = writeln!(out, "- From {started} to {last} ({})", s.status);
    if let Some(v) = &s.version {
        let _ = writeln!(out, "- Claude Code {v}");
    }
    let _ = writeln!(
        out,
        "- {} messages, {} tool calls ({} failed), {} episodes, {} snippets",
        s.messages,
        s.tool_calls,
        s.tool_errors,
        x.episodes.len(),
        x.snippets.len()
    );

    if !x.summaries.is_empty() {
        let _ = writeln!(out, "\n## Summaries\n");
        for sm in &x.summaries {
            let text = sm.text.as_deref().unwrap_or("").trim();
            if text.is_empty() {
                continue;
            }
            let _ = writeln!(
                out,
                "**{}** ({}:{})\n",
                sm.kind.replace('_', " "),
                sm.source_file,
                sm.line
            );
            for l in text.lines() {
                let _ = writeln!(out, "> {l}");
            }
            out.push('\n');
        }
    }

    if !x.feedback.is_empty() {
        let _ = writeln!(out, "\n## Feedback\n");
        for f in &x.feedback {
            let mut item = clip_chars(&one_line(&f.content), FEEDBACK_CHARS);
            if let Some(r) = &f.reason {
                item.push_str(&format!(" — reason: {}", clip_chars(&one_line(r), 300)));
            }
            let _ = writeln!(
                out,
                "- {} (line {}, {}): {item}",
                f.feedback_type.replace('_', " "),
                f.line,
                f.timestamp.as_deref().unwrap_or("?")
            );
        }
    }

    if !x.episodes.is_empty() {
        let _ = writeln!(out, "\n## Episodes\n");
        for e in &x.episodes {
            let title = e.title.as_deref().map(one_line).unwrap_or_default();
            let _ = writeln!(
                out,
                "### #{} {} — {} ({:.2})\n",
                e.ordinal,
                clip_chars(&title, 100),
                e.triage,
                e.confidence
            );
            let _ = writeln!(
                out,
                "Lines {}–{}, {} turn(s), {}.",
                e.start_line, e.end_line, e.turns, e.status
            );
            for t in e.turn_labels.as_array().into_iter().flatten() {
                let label = t["triage"].as_str().unwrap_or("routine");
                if label == "routine" {
                    continue;
                }
                let why = t["evidence"][0]["text"].as_str().unwrap_or("");
                let _ = writeln!(
                    out,
                    "- turn {} (lines {}–{}): {label} {:.2}{}",
                    t["ordinal"],
                    t["start_line"],
                    t["end_line"],
                    t["confidence"].as_f64().unwrap_or(0.0),
                    if why.is_empty() {
                        String::new()
                    } else {
                        format!(" — {}", one_line(why))
                    }
                );
            }
            for ev in e.evidence.as_array().into_iter().flatten().take(5) {
                let _ = writeln!(
                    out,
                    "- evidence, line {}: {} — {}",
                    ev["line"],
                    ev["signal"].as_str().unwrap_or("?"),
                    one_line(ev["text"].as_str().unwrap_or(""))
                );
            }
            out.push('\n');
        }
    }

    if !x.snippets.is_empty() {
        let _ = writeln!(out, "## Snippets\n");
        for sn in &x.snippets {
            let _ = writeln!(
                out,
                "### {}\n\n_{}, {}, {}:{}–{}_\n",
                one_line(&sn.title),
                sn.snippet_type.replace('_', " "),
                sn.origin,
                sn.source_file,
                sn.line_start,
                sn.line_end
            );
            let f = fence(&sn.content);
            let _ = writeln!(out, "{f}text\n{}\n{f}\n", sn.content.trim_end());
        }
    }
}
