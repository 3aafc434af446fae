//! The session as Markdown: the same reading as the HTML file, for a wiki, a pull request or a
//! notes folder. Prompts are quoted, replies kept as the Markdown they are, tool calls and
//! thinking folded in `<details>` (GitHub and most renderers fold them), code fenced with a
//! fence longer than any run of backticks inside, so no output can close it early.

use std::collections::HashMap;
use std::fmt::Write;

use super::html::{bands, sorted, ways};
use super::{entries, Entry, SessionSource, ToolCall};
use crate::export::markdown::fence;
use crate::extract::redact::Redactor;

/// `text` in a fenced block.
fn code(out: &mut String, text: &str, lang: &str) {
    let f = fence(text);
    let _ = writeln!(out, "{f}{lang}\n{}\n{f}\n", text.trim_end());
}

/// Text where Markdown would read `<` as HTML: escaped, so a prompt quoting a tag shows it.
fn plain(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The session as Markdown.
pub fn markdown(src: &SessionSource, r: &Redactor) -> String {
    let mut agents = src.agents.clone();
    let all = entries(&src.main, r, &mut agents, 0);
    let s = &src.session;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# {}\n",
        plain(s.title.as_deref().unwrap_or("(no title)"))
    );
    let _ = writeln!(out, "- Session: `{}`", s.session_id);
    let _ = writeln!(
        out,
        "- Where: {}",
        plain(s.cwd.as_deref().unwrap_or(&s.project))
    );
    if let Some(b) = &s.git_branch {
        let _ = writeln!(out, "- Branch: {}", plain(b));
    }
    let _ = writeln!(
        out,
        "- When: {} → {}",
        super::when(s.started_at.as_deref()),
        super::when(s.last_activity_at.as_deref())
    );
    if let Some(line) = &src.resume {
        let _ = writeln!(out, "- Resume: `{line}`");
    }
    out.push('\n');
    if !src.files.is_empty() {
        let _ = writeln!(
            out,
            "<details><summary>Files touched ({})</summary>\n",
            src.files.len()
        );
        for f in &src.files {
            let _ = writeln!(out, "- `{}` {}", f.path, ways(f.reads, f.edits, f.writes));
        }
        out.push_str("\n</details>\n\n");
    }
    for (ep, run) in bands(&all, src) {
        if let Some(e) = ep.and_then(|i| src.episodes.get(i)) {
            let _ = writeln!(
                out,
                "## Episode {} · {} · lines {}–{}\n",
                e.ordinal,
                e.triage.replace('_', " "),
                e.start_line,
                e.end_line
            );
            if let Some(t) = &e.title {
                let _ = writeln!(out, "_{}_\n", plain(t));
            }
        }
        for x in run {
            entry(&mut out, x);
        }
    }
    if !agents.is_empty() {
        out.push_str("## Sub-agents not linked to a call\n\n");
        for (id, a) in sorted(&agents) {
            let what = a
                .description
                .as_deref()
                .or(a.agent_type.as_deref())
                .unwrap_or("");
            let _ = writeln!(
                out,
                "<details><summary>Sub-agent {id} {}</summary>\n",
                plain(what)
            );
            for x in entries(&a.bytes, r, &mut HashMap::new(), 1) {
                entry(&mut out, &x);
            }
            out.push_str("</details>\n\n");
        }
    }
    out
}

fn entry(out: &mut String, e: &Entry) {
    match e {
        Entry::Prompt { line, text } => {
            let _ = writeln!(out, "**User** (line {line})\n");
            for l in plain(text).lines() {
                let _ = writeln!(out, "> {l}");
            }
            out.push('\n');
        }
        Entry::Reply { line, text } => {
            let _ = writeln!(out, "**Assistant** (line {line})\n\n{}\n", text.trim_end());
        }
        Entry::Thinking { text, .. } => {
            out.push_str("<details><summary>Thinking</summary>\n\n");
            let _ = writeln!(out, "{}\n\n</details>\n", text.trim_end());
        }
        Entry::Tool(t) => tool(out, t),
        Entry::Image { line, .. } => {
            let _ = writeln!(out, "_(an image, line {line}: see the HTML export)_\n");
        }
        Entry::Note { title, text, .. } => {
            if text.is_empty() {
                let _ = writeln!(out, "_— {title} —_\n");
            } else {
                let _ = writeln!(
                    out,
                    "<details><summary>{title}</summary>\n\n{}\n\n</details>\n",
                    text.trim_end()
                );
            }
        }
    }
}

fn tool(out: &mut String, t: &ToolCall) {
    let failed = t.output.as_ref().is_some_and(|(_, f)| *f);
    let _ = writeln!(
        out,
        "<details><summary>{}{} <code>{}</code> (line {})</summary>\n",
        if failed { "❌ " } else { "" },
        plain(&t.name),
        plain(&t.target),
        t.line
    );
    code(out, &t.input, "json");
    if let Some((o, _)) = &t.output {
        out.push_str("Output:\n\n");
        code(out, o, "");
    }
    if let Some((id, what, nested)) = &t.agent {
        let _ = writeln!(
            out,
            "<details><summary>Sub-agent {id}: {}</summary>\n",
            plain(what)
        );
        for x in nested {
            entry(out, x);
        }
        out.push_str("</details>\n\n");
    }
    out.push_str("</details>\n\n");
}
