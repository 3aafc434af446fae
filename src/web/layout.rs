//! The page shell (head, navigation, style) and small view helpers shared by every page.
//!
//! Every value goes through maud's `(...)` splice, which escapes HTML: transcripts hold markup,
//! scripts and anything else, and none of it may become part of the page. Nothing is
//! spliced unescaped; the style sheet is served as a file of its own (`/style.css`).

use maud::{html, Markup, DOCTYPE};

/// The style sheet: one constant, no build step, served at `/style.css` (a file of its own so
/// that the Content-Security-Policy allows no inline style or script).
pub const STYLE: &str = r#"
:root { --fg:#1d2330; --muted:#667085; --line:#e4e7ec; --bg:#fff; --soft:#f6f7f9;
  --err:#b42318; --routine:#d0d5dd; --error_recovery:#f79009; --user_correction:#d92d20;
  --pivot:#7a5af8; --design_decision:#1570ef; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif; color:var(--fg); background:var(--bg); }
header.top { display:flex; gap:18px; align-items:center; padding:10px 22px; border-bottom:1px solid var(--line); background:var(--soft); }
header.top a.brand { font-weight:700; color:var(--fg); text-decoration:none; }
header.top nav a { margin-right:14px; color:var(--muted); text-decoration:none; }
header.top nav a:hover { color:var(--fg); }
main { padding:18px 22px; max-width:1400px; }
h1 { font-size:20px; margin:6px 0 12px; } h2 { font-size:16px; margin:20px 0 8px; }
a { color:#175cd3; }
.muted { color:var(--muted); } .err { color:var(--err); }
table.list { border-collapse:collapse; width:100%; }
table.list th, table.list td { text-align:left; padding:6px 8px; border-bottom:1px solid var(--line); vertical-align:top; }
table.list th a { color:var(--fg); text-decoration:none; } td.nowrap { white-space:nowrap; } table.list th a.on { text-decoration:underline; }
form.filters { display:flex; flex-wrap:wrap; gap:8px; align-items:end; margin:8px 0 14px; }
form.filters label { display:flex; flex-direction:column; font-size:12px; color:var(--muted); }
input, select, button { font:inherit; padding:5px 7px; border:1px solid var(--line); border-radius:6px; }
input[type=search] { min-width:320px; } select { max-width:280px; }
button { background:var(--fg); color:#fff; border-color:var(--fg); cursor:pointer; }
.counts { display:flex; gap:22px; margin:10px 0 18px; } .counts div b { display:block; font-size:20px; }
.hit { padding:8px 0; border-bottom:1px solid var(--line); } .hit mark { background:#fef0c7; }
.pill { display:inline-block; padding:0 7px; border-radius:10px; font-size:12px; background:var(--soft); border:1px solid var(--line); }
.label { color:#fff; border:0; } .label.routine { background:#98a2b3; }
.label.error_recovery { background:var(--error_recovery); } .label.user_correction { background:var(--user_correction); }
.label.pivot { background:var(--pivot); } .label.design_decision { background:var(--design_decision); }
.pager { margin:14px 0; display:flex; gap:12px; }
.timeline { display:grid; grid-template-columns:minmax(0,1fr) 340px; gap:0 18px; }
section.episode { grid-column:1 / span 2; display:grid; grid-template-columns:minmax(0,1fr) 340px; gap:0 18px;
  border-left:6px solid var(--routine); margin:10px 0; padding-left:10px; }
section.episode.error_recovery { border-color:var(--error_recovery); } section.episode.user_correction { border-color:var(--user_correction); }
section.episode.pivot { border-color:var(--pivot); } section.episode.design_decision { border-color:var(--design_decision); }
.episode-head { grid-column:1 / span 2; padding:6px 0; }
.episode-head .evidence { font-size:12px; color:var(--muted); overflow-wrap:anywhere; }
.turn { grid-column:1; padding:8px 0; border-bottom:1px dashed var(--line); }
.turn.alt { grid-column:1; }
aside.snips { grid-column:2; font-size:12.5px; }
aside.snips .snippet { background:var(--soft); border:1px solid var(--line); border-radius:8px; padding:8px; margin:8px 0; }
aside.snips .snippet pre { white-space:pre-wrap; margin:6px 0 0; max-height:260px; overflow:auto; }
.idenote { color:#667; font-size:.85em; margin-bottom:2px; }
.prompt { background:#eff8ff; border-radius:8px; padding:8px 10px; white-space:pre-wrap; }
.assistant { padding:6px 10px; overflow-wrap:anywhere; }
.md p { margin:4px 0; } .md pre { white-space:pre-wrap; overflow-wrap:anywhere; overflow-x:auto; background:var(--soft); padding:6px 8px; border-radius:6px; }
.md table { border-collapse:collapse; display:block; overflow-x:auto; } .md td, .md th { border:1px solid var(--line); padding:2px 6px; }
.prompt { overflow-wrap:anywhere; }
form.resume { display:flex; flex-wrap:wrap; gap:6px; align-items:end; margin:6px 0; }
form.resume label { display:flex; flex-direction:column; font-size:12px; color:var(--muted); flex:1 1 260px; max-width:720px; }
form.resume input { font-family:ui-monospace,SFMono-Regular,Menlo,monospace; width:100%; }
div.scroll { overflow-x:auto; }
table.list td.num, table.list th.num { text-align:right; font-variant-numeric:tabular-nums; }
table.list td { overflow-wrap:anywhere; }
form.filters label { min-width:0; max-width:100%; } select { max-width:100%; }
label.check { flex-direction:row !important; gap:4px; align-items:center; }
.tool { font-family:ui-monospace,SFMono-Regular,Menlo,monospace; font-size:12.5px; padding:1px 10px; color:#344054; white-space:nowrap; overflow:hidden; text-overflow:ellipsis; }
.tool.failed { color:var(--err); } .marker { padding:2px 10px; font-size:12.5px; font-weight:600; }
.marker.denial { color:var(--user_correction); } .marker.interruption { color:var(--error_recovery); }
.compaction { grid-column:1 / span 2; margin:16px 0; padding:10px; border-top:3px double #98a2b3; background:var(--soft); white-space:pre-wrap; }
.turnlabel { float:right; }
details > summary { cursor:pointer; color:var(--muted); }
pre.raw { white-space:pre-wrap; background:var(--soft); padding:10px; border-radius:8px; }
svg.chart { display:block; width:100%; max-width:900px; height:auto; margin:6px 0; }
svg.chart text { font-size:11px; fill:var(--muted); } svg.chart line.axis { stroke:#98a2b3; stroke-width:1; }
.m0 { fill:#1570ef; } .m1 { fill:#f79009; } .m2 { fill:#12b76a; } .m3 { fill:#7a5af8; }
.m4 { fill:#ee46bc; } .m5 { fill:#0ba5ec; } .m6 { fill:#d92d20; } .m7 { fill:#475467; }
.m8 { fill:#a15c07; } .m9 { fill:#66c61c; }
rect.cost { fill:#344054; } rect.cost.partial { fill:#98a2b3; }
ul.legend { list-style:none; display:flex; flex-wrap:wrap; gap:6px 16px; padding:0; margin:4px 0 10px; }
ul.legend svg { vertical-align:-1px; }
table.list.usage td.num, table.list.usage th.num { text-align:right; font-variant-numeric:tabular-nums; }
table.list.usage tr.model td { color:var(--muted); } table.list.usage tr.model td:first-child { padding-left:22px; }
table.list.usage tr.total td { font-weight:600; border-top:2px solid var(--line); }
@media (max-width: 1100px) {
  table.list { display:block; overflow-x:auto; }
}
@media (max-width: 900px) {
  main { padding:12px; }
  .timeline, section.episode { grid-template-columns:minmax(0,1fr); }
  section.episode, .episode-head, .compaction, aside.snips, .turn { grid-column:1; }
}
@media (max-width: 640px) {
  main { overflow-wrap:anywhere; }
  table.list td.place { min-width:12em; }
  header.top { flex-wrap:wrap; gap:6px 12px; padding:8px 12px; }
  header.top nav a { margin-right:10px; }
  input[type=search] { min-width:0; width:100%; }
  form.filters label { flex:1 1 140px; } form.filters label:first-child { flex-basis:100%; }
  form.filters select, form.filters input:not([type=checkbox]) { width:100%; }
  .counts { flex-wrap:wrap; gap:10px 18px; }
  table.list td { min-width:5em; } table.list td:first-child { min-width:14em; }
  .turnlabel { float:none; display:inline-block; margin-bottom:4px; }
}
"#;

/// A whole page: head, navigation, then `body`.
pub fn page(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Gleaner" }
                link rel="stylesheet" href="/style.css";
            }
            body {
                header.top {
                    a.brand href="/" { "Gleaner" }
                    nav {
                        a href="/" { "Search" }
                        a href="/sessions" { "Sessions" }
                        a href="/projects" { "Projects" }
                        a href="/snippets" { "Snippets" }
                        a href="/usage" { "Usage" }
                    }
                }
                main { (body) }
            }
        }
    }
}

/// `YYYY-MM-DD HH:MM` of an ISO timestamp.
pub fn when(ts: Option<&str>) -> String {
    ts.map(|t| t.get(..16).unwrap_or(t).replace('T', " "))
        .unwrap_or_default()
}

/// A duration as `3 h 05 min`, `12 min`, `40 s`.
pub fn duration(ms: Option<i64>) -> String {
    let Some(ms) = ms else {
        return String::new();
    };
    let s = ms / 1000;
    if s >= 3600 {
        format!("{} h {:02} min", s / 3600, s % 3600 / 60)
    } else if s >= 60 {
        format!("{} min", s / 60)
    } else {
        format!("{s} s")
    }
}

/// The first `n` characters of `s`, with `…` when cut.
pub fn clip(s: &str, n: usize) -> String {
    let mut out: String = s.chars().take(n).collect();
    if s.chars().nth(n).is_some() {
        out.push('…');
    }
    out
}

/// A triage label as a coloured pill.
pub fn label(l: &str) -> Markup {
    html! { span class={ "pill label " (l) } { (l.replace('_', " ")) } }
}

/// `text` with the character ranges `spans` wrapped in `<mark>` (escaped all the same).
pub fn marked(text: &str, spans: &[[usize; 2]]) -> Markup {
    let chars: Vec<char> = text.chars().collect();
    let mut parts: Vec<(bool, String)> = Vec::new();
    let mut at = 0;
    for s in spans {
        let (a, b) = (s[0].min(chars.len()), s[1].min(chars.len()));
        if a < at || a >= b {
            continue;
        }
        parts.push((false, chars[at..a].iter().collect()));
        parts.push((true, chars[a..b].iter().collect()));
        at = b;
    }
    parts.push((false, chars[at..].iter().collect()));
    html! {
        @for (hit, t) in &parts {
            @if *hit { mark { (t) } } @else { (t) }
        }
    }
}

/// A query parameter value, encoded (`form_urlencoded`, the encoding axum's `Query` decodes).
pub fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_marks_kept() {
        let m = marked("<script>alert(1)</script> auth test", &[[26, 30]]);
        let s = m.into_string();
        assert!(s.contains("&lt;script&gt;"), "{s}");
        assert!(s.contains("<mark>auth</mark>"), "{s}");
        assert!(!s.contains("<script>"));
    }

    #[test]
    fn helpers() {
        assert_eq!(duration(Some(3_725_000)), "1 h 02 min");
        assert_eq!(duration(Some(61_000)), "1 min");
        assert_eq!(when(Some("2026-01-31T12:34:56Z")), "2026-01-31 12:34");
        assert_eq!(clip("abcdef", 3), "abc…");
        assert_eq!(enc("a b/é&x=1"), "a+b%2F%C3%A9%26x%3D1");
        let back: Vec<(String, String)> =
            form_urlencoded::parse(format!("q={}", enc("a b/é&x=1")).as_bytes())
                .into_owned()
                .collect();
        assert_eq!(back, [("q".to_string(), "a b/é&x=1".to_string())]);
    }
}
