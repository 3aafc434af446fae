//! `gleaner text` against an independent reading of the JSONL: for every main transcript of
//! the corpus, the conversation printed from the stored rows equals the one read here straight
//! from the files with `serde_json::Value` (no Gleaner parser), on both backends; truncation
//! keeps the end from a paragraph boundary.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::both_backends;
use crate::common::*;

/// What Claude Code injects into user lines (format doc §3.1), as a text starts.
const PLUMBING: &[&str] = &[
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
    "[Request interrupted",
];

/// The wrappers an IDE or the harness puts beside what the user typed: removed, and the rest
/// of the prompt kept (a prompt sent from VS Code is what was typed).
const WRAPPERS: &[&str] = &[
    "ide_opened_file",
    "ide_selection",
    "ide_cursor",
    "ide_visible_files",
    "system-reminder",
];

/// `text` without its wrapper blocks: a wrapper starts a line and its closing tag ends one.
fn without_wrappers(text: &str) -> String {
    let mut t = text.to_string();
    for tag in WRAPPERS {
        let re = regex::Regex::new(&format!(
            r"(?ms)^[ \t\r]*<{tag}>.*?</{tag}>[ \t\r]*(?:\n|\z)"
        ))
        .expect("wrapper pattern");
        t = re.replace_all(&t, "").into_owned();
    }
    t
}

/// One turn and where it stands: (role, text), line uuid, timestamp, line number.
type Turn = (
    (&'static str, String),
    Option<String>,
    Option<String>,
    usize,
);

/// The turns of one transcript file, read with `serde_json` only. The corpus's files are
/// finished (idle for days), so a last line without its `\n` counts when it is whole JSON.
pub(crate) fn turns_of(bytes: &[u8]) -> Vec<Turn> {
    let mut out = Vec::new();
    let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    if lines
        .last()
        .is_some_and(|l| serde_json::from_slice::<Value>(l).is_err())
    {
        lines.pop();
    }
    for (at, line) in lines.into_iter().enumerate() {
        let mut de = serde_json::Deserializer::from_slice(line).into_iter::<Value>();
        while let Some(Ok(v)) = de.next() {
            let role = match v["type"].as_str() {
                Some("user") => "User",
                Some("assistant") => "Assistant",
                _ => continue,
            };
            // Sidechain lines in a main file (Claude Code 1.0.x) are a sub-agent's.
            if v["isMeta"] == true || v["isCompactSummary"] == true || v["isSidechain"] == true {
                continue;
            }
            let text = match &v["message"]["content"] {
                Value::String(s) => s.clone(),
                Value::Array(blocks) => blocks
                    .iter()
                    .filter(|b| b["type"] == "text")
                    .filter_map(|b| b["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => continue,
            };
            let text = if role == "User" {
                without_wrappers(&text)
            } else {
                text
            };
            let t = text.trim();
            if t.is_empty() || (role == "User" && PLUMBING.iter().any(|p| t.starts_with(p))) {
                continue;
            }
            let text = |k: &str| v[k].as_str().map(str::to_string);
            out.push((
                (role, t.to_string()),
                text("uuid"),
                text("timestamp"),
                at + 1,
            ));
        }
    }
    out
}

fn render(turns: &[(&str, String)]) -> String {
    turns
        .iter()
        .map(|(role, t)| {
            let sep = if t.contains('\n') { '\n' } else { ' ' };
            format!("{role}:{sep}{t}")
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn text_json(env: &TestEnv, args: &[&str]) -> (Value, String) {
    let out = env
        .cmd()
        .arg("text")
        .args(args)
        .arg("--json")
        .output()
        .expect("run text");
    assert_ok(&out);
    (
        serde_json::from_slice(&out.stdout).expect("text JSON"),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

async fn matches_jsonl(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let corpus = corpus_dir().canonicalize().expect("corpus");
    // The corpus is finished (a last line without its newline counts) however recently it was
    // copied: sessions idle after a second.
    env.ingest_dir_env(&corpus, &[("GLEANER_SESSIONS__IDLE_TIMEOUT_SECS", "1")]);
    let out = env
        .cmd_for(&corpus)
        .args(["files", "--json", "--limit", "500"])
        .output()
        .expect("files");
    assert_ok(&out);
    let files: Vec<Value> = serde_json::from_slice(&out.stdout).expect("files JSON");
    let out = env
        .cmd_for(&corpus)
        .args(["sessions", "--json", "--limit", "500"])
        .output()
        .expect("sessions");
    assert_ok(&out);
    let known: Vec<Value> = serde_json::from_slice(&out.stdout).expect("sessions JSON");
    let known: std::collections::HashSet<&str> = known
        .iter()
        .filter_map(|s| s["session_id"].as_str())
        .collect();
    // Main transcripts per session, in the order the store numbers them (sorted paths). A file
    // with no record (only snapshots, say) makes no session.
    let mut sessions: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in &files {
        if f["agent_id"].is_null() {
            if let Some(sid) = f["session_id"].as_str().filter(|s| known.contains(s)) {
                let path = f["path"].as_str().unwrap_or_default().to_string();
                if !path.contains("/subagents/") {
                    sessions.entry(sid.to_string()).or_default().push(path);
                }
            }
        }
    }
    // The same conversation at the other doors: MCP's get_conversation read forward page by
    // page, and the web view's session page (every turn's words, in order).
    let mut mcp = crate::mcp::Client::ready_cmd(env.cmd_for(&corpus));
    let web = crate::web::start_web(&env, &corpus, "127.0.0.1:0");
    let (mut compared, mut redacted) = (0, 0);
    let mut longest: Option<(usize, String, String)> = None;
    for (sid, mut paths) in sessions {
        paths.sort();
        // Copies of one transcript (the corpus holds excerpts of some sessions in other
        // files) are stored once: each line uuid from the first file holding it, merged by
        // time, then line (store::copies).
        let mut turns: Vec<(Turn, usize)> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (i, p) in paths.iter().enumerate() {
            for t in turns_of(&std::fs::read(p).expect("transcript")) {
                if t.1.as_ref().is_none_or(|u| seen.insert(u.clone())) {
                    turns.push((t, i));
                }
            }
        }
        if paths.len() > 1 {
            turns.sort_by(|(a, fa), (b, fb)| {
                (a.2.is_none(), &a.2, a.3, fa).cmp(&(b.2.is_none(), &b.2, b.3, fb))
            });
        }
        let turns: Vec<(&str, String)> = turns.into_iter().map(|(t, _)| t.0).collect();
        let want = render(&turns);
        let (v, _) = text_json(&env, &[&sid]);
        let got = v["text"].as_str().unwrap_or_default();
        if got.contains("[REDACTED:") {
            redacted += 1;
            continue;
        }
        if got != want {
            let at = got
                .chars()
                .zip(want.chars())
                .take_while(|(a, b)| a == b)
                .count();
            let around = |s: &str| {
                s.chars()
                    .skip(at.saturating_sub(80))
                    .take(160)
                    .collect::<String>()
            };
            panic!(
                "session {sid} ({paths:?}) differs at char {at}:\n got: {:?}\nwant: {:?}",
                around(got),
                around(&want)
            );
        }
        assert_eq!(v["dropped_chars"], 0);
        assert_eq!(v["turns"], turns.len());
        let mut paged = String::new();
        let mut offset = Some(0);
        while let Some(at) = offset {
            let page = mcp
                .call(
                    "get_conversation",
                    serde_json::json!({"session_id": sid, "offset": at, "max_chars": 6000}),
                )
                .unwrap_or_else(|e| panic!("get_conversation {sid} at {at}: {e}"));
            paged.push_str(page["text"].as_str().unwrap_or_default());
            offset = page["next_offset"].as_u64().map(|n| n as usize);
        }
        assert!(
            paged == want,
            "{sid}: get_conversation read forward differs"
        );
        let base = web.url.trim_end_matches('/');
        let (status, page) = crate::web::get(&format!("{base}/sessions/{sid}"));
        assert_eq!(status, 200, "{sid}: {page}");
        let mut at = 0;
        for (role, t) in &turns {
            // The page shows each text whole; long ones folded, never cut. A prompt is shown
            // as typed; a reply is rendered Markdown, so a stretch of it that renders as itself
            // is looked for (a code fence's opening line renders as no text).
            let first = t
                .lines()
                .map(str::trim)
                .find(|l| !l.starts_with("```") && !rendered_as_is(l).is_empty())
                .unwrap_or(t);
            let needle = if *role == "User" {
                escape(first)
            } else {
                rendered_as_is(first)
            };
            match page[at..].find(&needle) {
                Some(i) => at += i + needle.len(),
                None => panic!("{sid}: the web page lacks (or misorders) {role} {first:?}"),
            }
        }
        compared += 1;
        if longest.as_ref().is_none_or(|(n, _, _)| want.len() > *n) {
            longest = Some((want.len(), sid.clone(), want));
        }
    }
    assert!(compared >= 100, "only {compared} sessions compared");
    assert!(redacted <= 5, "{redacted} sessions hold redacted text");

    // Truncation: the end is kept, from the first paragraph boundary after the cut.
    let (_, sid, full) = longest.expect("a session");
    let (v, err) = text_json(&env, &[&sid, "--max-chars", "2000"]);
    let got = v["text"].as_str().unwrap_or_default();
    assert!(
        full.ends_with(got),
        "{sid}: not the end of the conversation"
    );
    assert!(got.chars().count() <= 2000);
    let dropped = v["dropped_chars"].as_u64().unwrap_or(0) as usize;
    assert_eq!(dropped + got.chars().count(), full.chars().count());
    let cut_at = full.len() - got.len();
    assert!(
        full[..cut_at].ends_with("\n\n"),
        "cut not at a paragraph boundary"
    );
    assert!(
        err.contains(&format!("dropped the first {dropped}")),
        "{err}"
    );

    // Unknown and ambiguous prefixes.
    let out = env.cmd().args(["text", "ffffffff"]).output().expect("text");
    assert_eq!(out.status.code(), Some(1));
    env.cleanup().await;
}

both_backends!(conversation_text_matches_the_jsonl, matches_jsonl);

/// Text as maud escapes it in a page.
fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The longest stretch of a reply's line that Markdown renders as itself (no marks, links,
/// code, quotes or entities in it): replies are rendered, so their marks become tags.
fn rendered_as_is(line: &str) -> String {
    // A link shows its text, not its target: `[text](target)` is `text`.
    let mut shown = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(i) = rest.find("](") {
        shown.push_str(&rest[..i]);
        rest = &rest[i + 2..];
        rest = rest.find(')').map_or("", |j| &rest[j + 1..]);
    }
    shown.push_str(rest);
    shown
        .split(|c: char| "*`[]()_#|<>&'\"~\\".contains(c))
        .map(str::trim)
        .max_by_key(|s| s.len())
        .unwrap_or("")
        .to_string()
}
