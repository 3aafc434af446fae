//! The session as one self-contained HTML5 file: its style inline, no script, nothing loaded
//! from the network (images are `data:` URIs, Markdown images become links); tool calls,
//! thinking and sub-agents folded in `<details>`, so the page reads without a script; each
//! episode a band with its label in the margin.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use maud::{html, Markup, PreEscaped, DOCTYPE};

use super::{entries, episode_of, printable as p, Entry, SessionSource, ToolCall};
use crate::extract::redact::Redactor;
use crate::text::markdown::to_html;

/// The export's style: inline in the file; the web view serves it as `/export.css` (its
/// Content-Security-Policy allows no inline style).
pub const CSS: &str = r#"
:root { --fg:#1d2125; --muted:#5b636b; --line:#d9dde1; --bg:#fff; --soft:#f5f6f7;
  --red:#b42318; --green:#067647; --amber:#b54708; --blue:#175cd3; --violet:#6941c6; }
* { box-sizing:border-box; }
body { margin:0; font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif; color:var(--fg); background:var(--bg); }
header, main, footer, section.files { max-width:980px; margin:0 auto; padding:0 16px; }
h1 { font-size:1.4em; margin:20px 0 6px; overflow-wrap:anywhere; }
dl.meta { display:grid; grid-template-columns:max-content 1fr; gap:2px 12px; margin:0 0 10px; color:var(--muted); }
dl.meta dd { margin:0; overflow-wrap:anywhere; }
pre, code { font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,monospace; }
pre { background:var(--soft); padding:8px 10px; border-radius:6px; overflow-x:auto; white-space:pre-wrap; overflow-wrap:anywhere; }
.resume { border:1px solid var(--line); }
section.band { display:grid; grid-template-columns:150px 1fr; gap:12px; border-top:1px solid var(--line); padding:10px 0; }
section.band > aside { font-size:13px; color:var(--muted); }
section.band > aside .label { display:inline-block; padding:1px 8px; border-radius:10px; background:var(--soft); color:var(--fg); font-weight:600; }
section[data-triage=error_recovery] > aside .label { background:#fee4e2; color:var(--red); }
section[data-triage=user_correction] > aside .label { background:#fef0c7; color:var(--amber); }
section[data-triage=design_decision] > aside .label { background:#d1e9ff; color:var(--blue); }
section[data-triage=pivot] > aside .label { background:#ebe9fe; color:var(--violet); }
.turn { margin:0 0 10px; min-width:0; }
.who { font-size:12px; font-weight:700; text-transform:uppercase; color:var(--muted); }
.who a { color:inherit; font-weight:400; text-decoration:none; margin-left:6px; }
.user .text { white-space:pre-wrap; overflow-wrap:anywhere; background:#eef4ff; padding:6px 10px; border-radius:6px; }
.md { overflow-wrap:anywhere; } .md table { border-collapse:collapse; } .md td, .md th { border:1px solid var(--line); padding:2px 6px; }
details { margin:4px 0; border:1px solid var(--line); border-radius:6px; padding:2px 8px; min-width:0; }
details > summary { cursor:pointer; overflow-wrap:anywhere; }
details.failed > summary { color:var(--red); }
details.thinking > summary, details.note > summary { color:var(--muted); }
details.agent { border-left:3px solid var(--violet); }
h4 { margin:6px 0 2px; font-size:12px; color:var(--muted); }
img { max-width:100%; height:auto; border:1px solid var(--line); }
footer { color:var(--muted); font-size:12px; padding:20px 16px; }
@media (max-width: 640px) { section.band { grid-template-columns:1fr; gap:4px; } }
"#;

/// Where a document's style comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style<'a> {
    /// In the file (an export: one file, nothing else to fetch).
    Inline,
    /// From this URL (the web view).
    Linked(&'a str),
}

/// The session as an HTML5 document.
pub fn html(src: &SessionSource, r: &Redactor, style: Style<'_>) -> String {
    let mut agents = src.agents.clone();
    let all = entries(&src.main, r, &mut agents, 0);
    let seen = Seen::default();
    let s = &src.session;
    let title = p(s.title.as_deref().unwrap_or("(no title)"));
    let doc = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (crate::text::clip(&title, 80, "…")) " · Gleaner" }
                @match style {
                    Style::Inline => style { (PreEscaped(CSS)) },
                    Style::Linked(url) => link rel="stylesheet" href=(url);,
                }
            }
            body {
                header {
                    h1 { (title) }
                    dl.meta {
                        dt { "Session" } dd { code { (s.session_id) } }
                        dt { "Where" } dd { (p(s.cwd.as_deref().unwrap_or(&s.project))) }
                        @if let Some(b) = &s.git_branch { dt { "Branch" } dd { (p(b)) } }
                        dt { "When" } dd { (super::when(s.started_at.as_deref())) " → " (super::when(s.last_activity_at.as_deref())) }
                        dt { "Size" } dd { (s.messages) " messages, " (s.tool_calls) " tool calls, " (src.episodes.len()) " episodes" }
                    }
                    @if let Some(line) = &src.resume { pre.resume { code { (line) } } }
                }
                @if !src.files.is_empty() {
                    section.files { details {
                        summary { "Files touched (" (src.files.len()) ")" }
                        ul { @for f in &src.files {
                            li { code { (p(&f.path)) } " " (ways(f.reads, f.edits, f.writes)) }
                        } }
                    } }
                }
                main {
                    @for (ep, run) in bands(&all, src) {
                        @match ep.and_then(|i| src.episodes.get(i)) {
                            Some(e) => section.band data-triage=(e.triage) {
                                aside {
                                    span.label { (e.triage.replace('_', " ")) }
                                    div { "Episode " (e.ordinal) " · lines " (e.start_line) "–" (e.end_line) }
                                    @if let Some(t) = &e.title { div { (crate::text::clip(&p(t), 120, "…")) } }
                                }
                                div { @for x in run { (entry(x, "", &seen)) } }
                            },
                            None => section.band {
                                aside {}
                                div { @for x in run { (entry(x, "", &seen)) } }
                            },
                        }
                    }
                    @if !agents.is_empty() {
                        h2 { "Sub-agents not linked to a call" }
                        @for (id, a) in sorted(&agents) {
                            details.agent {
                                summary { "Sub-agent " (p(id)) " " (p(a.description.as_deref().or(a.agent_type.as_deref()).unwrap_or(""))) }
                                @let scope = agent_scope(id);
                                @for x in entries(&a.bytes, r, &mut HashMap::new(), 1) { (entry(&x, &scope, &seen)) }
                            }
                        }
                    }
                }
                footer { "Exported by Gleaner from the session's transcripts; secrets redacted." }
            }
        }
    };
    doc.into_string()
}

/// `edited 2x, read 1x`.
pub(super) fn ways(reads: i64, edits: i64, writes: i64) -> String {
    [(edits, "edited"), (writes, "written"), (reads, "read")]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, w)| format!("{w} {n}x"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Agents by id, for a stable order.
pub(super) fn sorted(agents: &HashMap<String, super::Agent>) -> Vec<(&String, &super::Agent)> {
    let mut v: Vec<_> = agents.iter().collect();
    v.sort_by(|a, b| a.0.cmp(b.0));
    v
}

/// Consecutive entries of the same episode (by line), in order.
pub(super) fn bands<'a>(
    all: &'a [Entry],
    src: &SessionSource,
) -> Vec<(Option<usize>, Vec<&'a Entry>)> {
    let mut out: Vec<(Option<usize>, Vec<&Entry>)> = Vec::new();
    for e in all {
        let ep = episode_of(&src.episodes, e.line());
        match out.last_mut() {
            Some((last, run)) if *last == ep => run.push(e),
            _ => out.push((ep, vec![e])),
        }
    }
    out
}

/// The id prefix of a sub-agent's lines: its transcript numbers lines from 1 as the session's
/// does, so `line-N` alone would name two places (and a link would jump to the wrong one).
fn agent_scope(agent_id: &str) -> String {
    format!("agent-{agent_id}-")
}

/// Anchors given so far: a line can hold several entries (a reply's text and its tool call),
/// and only the first is the line's anchor (an `id` is unique in a page).
type Seen = RefCell<HashSet<String>>;

/// `{scope}line-{line}` if no entry has it yet.
fn anchor(seen: &Seen, scope: &str, line: impl std::fmt::Display) -> Option<String> {
    let id = format!("{scope}line-{line}");
    seen.borrow_mut().insert(id.clone()).then_some(id)
}

/// One entry; `scope` prefixes its anchors (empty for the session's own transcript).
fn entry(e: &Entry, scope: &str, seen: &Seen) -> Markup {
    match e {
        Entry::Prompt { line, text } => html! {
            div.turn.user id=[anchor(seen, scope, line)] {
                div.who { "User" a href={ "#" (scope) "line-" (line) } { "line " (line) } }
                div.text { (text) }
            }
        },
        Entry::Reply { line, text } => html! {
            div.turn.assistant id=[anchor(seen, scope, line)] {
                div.who { "Assistant" a href={ "#" (scope) "line-" (line) } { "line " (line) } }
                div.md { (PreEscaped(to_html(text))) }
            }
        },
        Entry::Thinking { text, .. } => html! {
            details.thinking { summary { "Thinking" } div.md { (PreEscaped(to_html(text))) } }
        },
        Entry::Tool(t) => tool(t, scope, seen),
        Entry::Image {
            media_type, data, ..
        } => html! {
            img src={ "data:" (media_type) ";base64," (data) } alt="image from the session";
        },
        Entry::Note { title, text, .. } => html! {
            @if text.is_empty() { div.who { (title) } }
            @else { details.note { summary { (title) } div.md { (PreEscaped(to_html(text))) } } }
        },
    }
}

fn tool(t: &ToolCall, scope: &str, seen: &Seen) -> Markup {
    let failed = t.output.as_ref().is_some_and(|(_, f)| *f);
    html! {
        details.tool.failed[failed] id=[anchor(seen, scope, t.line)] {
            summary {
                strong { (p(&t.name)) } " " code { (t.target) }
                @if failed { " — failed" }
            }
            h4 { "Input (line " (t.line) ")" }
            pre { (t.input) }
            @if let Some((out, _)) = &t.output {
                h4 { "Output" @if let Some(l) = t.output_line { " (line " (l) ")" } }
                pre { (out) }
            }
            @if let Some((id, what, nested)) = &t.agent {
                details.agent {
                    summary { "Sub-agent " (p(id)) ": " (p(what)) }
                    @let scope = agent_scope(id);
                    @for x in nested { (entry(x, &scope, seen)) }
                }
            }
        }
    }
}
