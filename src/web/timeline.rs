//! One session as a page: its turns in order, episodes as bands coloured by their label, snippets
//! beside the turns they came from, compactions as section breaks.
//!
//! Built in two steps so the shape can be tested without a server: [`build`] turns the stored
//! rows of one transcript into [`Turn`]s grouped by episode (pure), [`render`] writes HTML.

use std::collections::HashMap;

use maud::{html, Markup, PreEscaped};
use serde_json::Value;

use super::layout::{clip, duration, enc, label, when};
use crate::conversation::{ide_notes, user_text};
use crate::query::store::{
    EpisodeListing, SessionListing, SnippetListing, Timeline, TimelineFile, TimelineSummary,
};
use crate::text::markdown::{to_html, to_plain};

/// Assistant text longer than this is collapsed (its first lines stay visible).
const COLLAPSE_CHARS: usize = 700;

/// One thing shown in a turn, in line order.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// What the person typed, and the IDE context beside it (`opened README.md`).
    Prompt(String, Vec<String>),
    /// What the assistant said.
    Said(String),
    /// A tool call: name, target, failed.
    Tool {
        /// Tool name.
        name: String,
        /// What it acted on.
        target: Option<String>,
        /// Its result was an error.
        failed: bool,
    },
    /// The user rejected a tool call (with the reason typed, if any).
    Denial(String),
    /// The user pressed Esc.
    Interruption,
    /// A compaction or summary line: a section break.
    Compaction {
        /// `compact_boundary`, `compact_summary` or `summary`.
        kind: String,
        /// Its text or what it says about the compaction.
        text: String,
    },
}

/// A human prompt and everything until the next one.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// First line.
    pub start_line: i64,
    /// Last line.
    pub end_line: i64,
    /// When it started.
    pub ts: Option<String>,
    /// What happened.
    pub items: Vec<Item>,
    /// Its own label, confidence and evidence, from the episode's `turn_labels`.
    pub label: Option<(String, f64, String)>,
    /// Every line it holds rows of (anchors for links to a line: search results, snippets).
    pub lines: Vec<i64>,
}

/// A band of turns: an episode, or turns outside any episode (`episode: None`).
#[derive(Debug, Clone)]
pub struct Band<'a> {
    /// The episode.
    pub episode: Option<&'a EpisodeListing>,
    /// Its turns.
    pub turns: Vec<Turn>,
}

/// Group a transcript's rows into turns, and turns into episode bands.
pub fn build<'a>(t: &Timeline, episodes: &'a [EpisodeListing]) -> Vec<Band<'a>> {
    let mut tools: HashMap<i64, Vec<&crate::query::store::TimelineTool>> = HashMap::new();
    for tool in &t.tools {
        tools.entry(tool.line_no).or_default().push(tool);
    }
    let mut feedback: HashMap<i64, Vec<&crate::query::store::TimelineFeedback>> = HashMap::new();
    for f in &t.feedback {
        feedback.entry(f.line_no).or_default().push(f);
    }
    let mut summaries: HashMap<i64, Vec<&TimelineSummary>> = HashMap::new();
    for s in &t.summaries {
        summaries.entry(s.line_no).or_default().push(s);
    }
    let mut turns: Vec<Turn> = Vec::new();
    let mut current = Turn {
        start_line: 1,
        end_line: 1,
        ts: None,
        items: Vec::new(),
        label: None,
        lines: Vec::new(),
    };
    let mut last_line = 0;
    for m in &t.messages {
        let line = m.line_no;
        let first_of_line = line != last_line;
        last_line = line;
        let prompt = (m.kind == "user" && !m.is_meta)
            .then(|| {
                m.text
                    .as_deref()
                    .and_then(|t| user_text(t).map(|p| (p, ide_notes(t))))
            })
            .flatten();
        if let Some(p) = prompt {
            if !current.items.is_empty() {
                turns.push(std::mem::replace(
                    &mut current,
                    Turn {
                        start_line: line,
                        end_line: line,
                        ts: None,
                        items: Vec::new(),
                        label: None,
                        lines: Vec::new(),
                    },
                ));
            } else {
                current.start_line = line;
            }
            current.ts = m.ts.clone();
            current.items.push(Item::Prompt(p.0.into_owned(), p.1));
        }
        current.end_line = line;
        if first_of_line {
            current.lines.push(line);
            for s in summaries.get(&line).into_iter().flatten() {
                current.items.push(Item::Compaction {
                    kind: s.kind.clone(),
                    text: compaction_text(s),
                });
            }
            for f in feedback.get(&line).into_iter().flatten() {
                match f.feedback_type.as_str() {
                    "tool_denial" => current.items.push(Item::Denial(
                        f.reason.clone().unwrap_or_else(|| f.content.clone()),
                    )),
                    "interruption" => current.items.push(Item::Interruption),
                    _ => {}
                }
            }
        }
        if m.kind == "assistant" && !m.is_meta {
            if let Some(text) = m.text.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
                current.items.push(Item::Said(text.to_string()));
            }
            if first_of_line {
                for tool in tools.get(&line).into_iter().flatten() {
                    current.items.push(Item::Tool {
                        name: tool.name.clone().unwrap_or_else(|| "tool".into()),
                        target: tool.target.clone(),
                        failed: tool.is_error,
                    });
                }
            }
        }
    }
    if !current.items.is_empty() {
        turns.push(current);
    }
    group(turns, episodes)
}

fn compaction_text(s: &TimelineSummary) -> String {
    match (s.kind.as_str(), s.text.as_deref()) {
        (_, Some(t)) if !t.trim().is_empty() => t.trim().to_string(),
        ("compact_boundary", _) => format!(
            "Conversation compacted ({}{})",
            s.compact_trigger.as_deref().unwrap_or("auto"),
            s.pre_tokens
                .map(|n| format!(", {n} tokens before"))
                .unwrap_or_default()
        ),
        _ => "Summary".into(),
    }
}

/// Put each turn in the episode whose line range holds its first line, with its turn label.
fn group<'a>(turns: Vec<Turn>, episodes: &'a [EpisodeListing]) -> Vec<Band<'a>> {
    let mut bands: Vec<Band<'a>> = Vec::new();
    for mut turn in turns {
        let ep = episodes
            .iter()
            .find(|e| e.start_line <= turn.start_line && turn.start_line <= e.end_line);
        if let Some(e) = ep {
            turn.label = turn_label(e, turn.start_line);
        }
        match bands.last_mut() {
            Some(b) if b.episode.map(|e| e.id) == ep.map(|e| e.id) => b.turns.push(turn),
            _ => bands.push(Band {
                episode: ep,
                turns: vec![turn],
            }),
        }
    }
    // An episode none of whose turns is stored (its messages pruned, `prune --keep-knowledge`)
    // still shows, with its label and evidence, where its lines are. The turns keep their
    // order (by time when copies are merged, whose line numbers interleave): such an episode
    // goes before the first band that starts after it, nothing is re-sorted.
    for e in episodes {
        if bands
            .iter()
            .any(|b| b.episode.is_some_and(|x| x.id == e.id))
        {
            continue;
        }
        let at = bands
            .iter()
            .position(|b| {
                b.turns
                    .first()
                    .map(|t| t.start_line)
                    .or(b.episode.map(|x| x.start_line))
                    .is_some_and(|l| l > e.start_line)
            })
            .unwrap_or(bands.len());
        bands.insert(
            at,
            Band {
                episode: Some(e),
                turns: Vec::new(),
            },
        );
    }
    bands
}

/// Whether snippet `sn` shows beside one of the turns of the file `path`.
fn placed(sn: &SnippetListing, path: &str, bands: &[Band<'_>]) -> bool {
    sn.source_file == path
        && bands
            .iter()
            .flat_map(|b| &b.turns)
            .any(|t| t.start_line <= sn.line_start && sn.line_start <= t.end_line)
}

/// Where a snippet came from, for people: a transcript's lines, MCP, or the file it was read
/// from (`snippet add --content-file`).
pub fn snippet_source(sn: &SnippetListing) -> String {
    match sn.source_file.as_str() {
        "mcp" => "given through MCP".to_string(),
        f if f.ends_with(".jsonl") => format!("lines {}–{} of {f}", sn.line_start, sn.line_end),
        f => format!("from {f}"),
    }
}

fn turn_label(e: &EpisodeListing, start_line: i64) -> Option<(String, f64, String)> {
    let list = e.turn_labels.as_array()?;
    let t = list
        .iter()
        .find(|t| t["start_line"].as_i64() == Some(start_line))?;
    Some((
        t["triage"].as_str()?.to_string(),
        t["confidence"].as_f64().unwrap_or(0.0),
        evidence_text(&t["evidence"]),
    ))
}

/// Evidence as one readable line, the items as every door writes them
/// (`L12 user said [user_correction]: no, keep it; ...`).
pub fn evidence_text(v: &Value) -> String {
    crate::query::Evidence::list(v)
        .iter()
        .map(|e| e.line_text(160))
        .collect::<Vec<_>>()
        .join("; ")
}

/// What the session page shows.
pub struct SessionView<'a> {
    /// The session.
    pub session: &'a SessionListing,
    /// Its transcript files (main first).
    pub files: &'a [TimelineFile],
    /// The one shown.
    pub file: &'a TimelineFile,
    /// Its bands.
    pub bands: &'a [Band<'a>],
    /// Its snippets.
    pub snippets: &'a [SnippetListing],
    /// What to say when no turn is stored (`query::no_conversation`).
    pub no_conversation: String,
}

/// The session page's body.
pub fn render(v: &SessionView<'_>) -> Markup {
    let s = v.session;
    let sid = &s.session_id;
    let agent_q = v
        .file
        .agent_id
        .as_deref()
        .map(|a| format!("&agent={}", enc(a)))
        .unwrap_or_default();
    html! {
        h1 { (s.title.as_deref().unwrap_or("(no title)")) }
        p.muted {
            (s.cwd.as_deref().unwrap_or(&s.project)) " · started " (when(s.started_at.as_deref()))
            " · " (duration(s.duration_ms)) " · " (s.status)
            " · " (s.feedback.total()) " feedback · " (s.snippets) " snippets · "
            code { (sid) }
        }
        @if let Some(line) = crate::query::overview::resume_line(s.cwd.as_deref(), sid) {
            form.resume {
                label { "Resume in a terminal" input #resume readonly value=(line) size="60"; }
                button type="button" data-copy="resume" { "Copy" }
            }
        }
        p { a href={ "/sessions/" (sid) "/read" } { "Read it whole, tool calls shown →" } }
        // The copy button's script: the one the view serves, on this page only.
        script src="/copy.js" defer {}
        @if v.files.len() > 1 {
            p {
                "Transcripts: "
                @for f in v.files {
                    @let here = f.id == v.file.id;
                    @match f.agent_id.as_deref() {
                        None => a href={ "/sessions/" (sid) } class=[here.then_some("on")] { "main" },
                        Some(a) => a href={ "/sessions/" (sid) "?agent=" (enc(a)) } title=[f.agent_description.as_deref()] {
                            "sub-agent " (f.agent_type.as_deref().unwrap_or(a))
                            @if here { " (shown)" }
                        },
                    }
                    " "
                }
            }
        }
        @if v.file.agent_id.is_some() {
            p.muted { "Sub-agent " (v.file.agent_type.as_deref().unwrap_or("")) ": "
                (v.file.agent_description.as_deref().unwrap_or("")) }
        }
        @if v.bands.iter().all(|b| b.turns.is_empty()) {
            p.muted { (v.no_conversation) }
        }
        div.timeline {
            @for band in v.bands {
                (render_band(band, v, sid, &agent_q))
            }
        }
        @let others: Vec<&SnippetListing> = v.snippets.iter()
            .filter(|sn| !placed(sn, &v.file.path, v.bands)).collect();
        @if !others.is_empty() {
            section.others {
                h2 { "Other snippets of this session" }
                @for sn in others {
                    div.snippet id={ "snippet-" (sn.id) } {
                        span class="pill" { (sn.snippet_type) } " " b { (sn.title) }
                        div.muted { (snippet_source(sn)) }
                        pre { (sn.content) }
                    }
                }
            }
        }
    }
}

fn render_band(band: &Band<'_>, v: &SessionView<'_>, sid: &str, agent_q: &str) -> Markup {
    let class = band.episode.map_or("episode none", |e| e.triage.as_str());
    html! {
        section class={ "episode " (class) } data-triage=[band.episode.map(|e| e.triage.as_str())] {
            @if let Some(e) = band.episode {
                div.episode-head {
                    (label(&e.triage)) " "
                    b { "Episode " (e.ordinal) } " "
                    span.muted { (e.title.as_deref().unwrap_or("")) " · " (e.turns) " turns · lines "
                        (e.start_line) "–" (e.end_line) " · confidence " (format!("{:.2}", e.confidence)) }
                    @if let Some(labels) = e.labels.as_array().filter(|l| l.len() > 1) {
                        " · holds "
                        @for l in labels { @if let Some(l) = l.as_str() { (label(l)) " " } }
                    }
                    @let ev = evidence_text(&e.evidence);
                    @if !ev.is_empty() { div.evidence { "Evidence: " (ev) } }
                }
            }
            @for turn in &band.turns {
                (render_turn(turn, sid, agent_q))
                aside.snips {
                    @for sn in v.snippets.iter().filter(|sn| sn.source_file == v.file.path
                        && sn.line_start >= turn.start_line && sn.line_start <= turn.end_line) {
                        div.snippet id={ "snippet-" (sn.id) } {
                            span class="pill" { (sn.snippet_type) } " " b { (sn.title) }
                            pre { (sn.content) }
                        }
                    }
                }
            }
        }
    }
}

fn render_turn(turn: &Turn, sid: &str, agent_q: &str) -> Markup {
    html! {
        div.turn id={ "line-" (turn.start_line) } {
            @for l in turn.lines.iter().filter(|l| **l != turn.start_line) { span id={ "line-" (l) } {} }
            div.muted {
                (when(turn.ts.as_deref())) " · "
                a href={ "/sessions/" (sid) "/lines?from=" (turn.start_line) "&to=" (turn.end_line) (agent_q) } {
                    "lines " (turn.start_line) "–" (turn.end_line)
                }
                @if let Some((l, c, ev)) = &turn.label {
                    @if l != "routine" {
                        span.turnlabel title=(ev) { (label(l)) " " (format!("{c:.2}")) }
                    }
                }
            }
            @for item in &turn.items {
                @match item {
                    Item::Prompt(p, notes) => {
                        @if !notes.is_empty() {
                            div.idenote { (notes.join(" · ")) }
                        }
                        div.prompt { (p) }
                    },
                    Item::Said(t) => {
                        // Markdown rendered, its raw HTML shown as text and its links kept
                        // to http(s) (`text::markdown`).
                        @if t.chars().count() > COLLAPSE_CHARS {
                            details.assistant { summary { (clip(&to_plain(t), 240)) } div.md { (PreEscaped(to_html(t))) } }
                        } @else {
                            div.assistant.md { (PreEscaped(to_html(t))) }
                        }
                    },
                    Item::Tool { name, target, failed } => {
                        div class={ "tool" @if *failed { " failed" } } {
                            "→ " b { (name) } " " (target.as_deref().map(|t| clip(t, 200)).unwrap_or_default())
                            @if *failed { " ✗ error" }
                        }
                    },
                    Item::Denial(reason) => div.marker.denial { "✗ tool use rejected: " (reason) },
                    Item::Interruption => div.marker.interruption { "■ interrupted by the user" },
                    Item::Compaction { kind, text } => {
                        div.compaction data-kind=(kind) {
                            b { (kind.replace('_', " ")) } "\n" (clip(text, 4000))
                        }
                    },
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::store::{TimelineFeedback, TimelineMessage, TimelineTool};

    fn msg(line: i64, kind: &str, text: &str) -> TimelineMessage {
        TimelineMessage {
            line_no: line,
            seq: 0,
            kind: kind.into(),
            subtype: None,
            ts: None,
            tool_names: None,
            is_error: false,
            text: Some(text.into()),
            is_meta: false,
        }
    }

    #[test]
    fn turns_start_at_human_prompts_and_carry_tools_denials_and_compactions() {
        let t = Timeline {
            messages: vec![
                msg(1, "user", "<command-name>/clear</command-name>"),
                msg(2, "user", "fix the build"),
                msg(3, "assistant", "Running the build."),
                msg(4, "user", "[Request interrupted by user]"),
                msg(5, "user", "no, use make"),
                msg(6, "assistant", ""),
            ],
            tools: vec![TimelineTool {
                line_no: 3,
                name: Some("Bash".into()),
                target: Some("cargo build".into()),
                is_error: true,
            }],
            feedback: vec![TimelineFeedback {
                line_no: 6,
                feedback_type: "tool_denial".into(),
                content: "x".into(),
                reason: Some("use make".into()),
            }],
            summaries: vec![TimelineSummary {
                line_no: 4,
                kind: "compact_boundary".into(),
                text: None,
                compact_trigger: Some("auto".into()),
                pre_tokens: Some(1000),
            }],
        };
        let bands = build(&t, &[]);
        assert_eq!(bands.len(), 1);
        let turns = &bands[0].turns;
        assert_eq!(turns.len(), 2, "{turns:?}");
        assert_eq!((turns[0].start_line, turns[0].end_line), (2, 4));
        assert_eq!(
            turns[0].items[0],
            Item::Prompt("fix the build".into(), Vec::new())
        );
        assert!(turns[0].items.contains(&Item::Tool {
            name: "Bash".into(),
            target: Some("cargo build".into()),
            failed: true
        }));
        assert!(
            matches!(&turns[0].items[3], Item::Compaction { text, .. } if text.contains("1000 tokens"))
        );
        assert_eq!(
            turns[1].items.last(),
            Some(&Item::Denial("use make".into()))
        );
    }
}
