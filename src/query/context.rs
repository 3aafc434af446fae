//! The digest a new session is given at its start (`gleaner hook session-start`, Claude Code's
//! `SessionStart` hook) and that `gleaner context` prints: what earlier sessions of the same
//! project kept, in at most `max_bytes`.
//!
//! How it is chosen: the project is the session's working directory as Claude Code names its
//! folder under `~/.claude/projects`; the current session is left out. Three kinds of lines,
//! each ending with the session id (8 characters) for a follow-up MCP call:
//!
//! 1. **Corrections and preferences**: what the user said when correcting the assistant (the
//!    words of turns labelled `user_correction` in the 20 most recent sessions: a correcting
//!    phrase, or what followed an interruption; the words typed before anything pasted, and
//!    nothing that is mostly a paste) and the reasons typed for
//!    denied tool calls, newest first, those that state a rule first (see [`states_a_rule`]).
//!    Most actionable, so first.
//! 2. **Decisions and fixes**: the project's snippets (decision rationales, error reasoning,
//!    learnings), newest first: their titles state the lesson (what fixed what, what was
//!    decided and why, the rule). Episode titles are not used: an episode is titled by its
//!    first prompt, which says what was asked, not what was learned.
//! 3. **Recent sessions**: date, title and the start of the latest summary.
//!
//! Lines are taken in turns from the three lists (the first of each, then the second...) while
//! they fit, so a long list never crowds the others out; then shown grouped. Each line is cut
//! to [`LINE_CHARS`]; the same text is shown once. Nothing relevant: an empty digest (the hook
//! prints nothing). Every text comes from stored rows, redacted before they were stored.

use std::collections::{BTreeSet, HashSet};

use super::Error;
use crate::store::{ContextCorrection, ContextItem, ContextSession, Store};
use crate::text::gist::says_again;
use crate::text::rule::{looks_pasted, states_a_rule, typed_words};

/// Longest line of a digest, in characters.
pub const LINE_CHARS: usize = 200;
/// Recent sessions whose corrections and episodes are read.
const RECENT_SESSIONS: i64 = 20;
/// Candidates read per list (a digest shows far fewer).
const CANDIDATES: i64 = 12;

/// What to digest.
#[derive(Debug, Clone)]
pub struct ContextRequest {
    /// The project folder (see [`project_folder`]).
    pub project: String,
    /// The session being started, left out.
    pub exclude: Option<String>,
    /// Longest digest, in bytes.
    pub max_bytes: usize,
}

/// The project folder Claude Code keeps a working directory's sessions in: every character
/// but ASCII letters and digits becomes `-` (`/home/u/my.app` -> `-home-u-my-app`). A value
/// that is already a folder name (no `/` or `\`) is taken as it is.
pub fn project_folder(cwd_or_folder: &str) -> String {
    if !cwd_or_folder.contains(['/', '\\']) {
        return cwd_or_folder.to_string();
    }
    // `/home/u/p/` is the directory `/home/u/p` (as a shell completes it).
    let dir = match cwd_or_folder.trim_end_matches(['/', '\\']) {
        "" => cwd_or_folder,
        d => d,
    };
    dir.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// The project folder a `--project` value or a session's working directory names, as the
/// store holds it:
/// - a folder or directory with sessions: that one;
/// - a directory without (a session started in a subfolder of a project): the nearest
///   directory above it that has sessions;
/// - a part of a name (`devenv`, as every other `--project` takes): the one project whose
///   folder holds it; several are an error naming them.
///
/// When nothing matches, the folder the value names (its digest is empty).
pub async fn resolve_project(store: &Store, given: &str) -> Result<String, Error> {
    let folder = project_folder(given);
    if let Some(f) = stored_folder(store, &folder).await? {
        return Ok(f);
    }
    if given.contains(['/', '\\']) {
        let mut dir = std::path::Path::new(given.trim_end_matches(['/', '\\']));
        while let Some(up) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            let f = project_folder(&up.to_string_lossy());
            if f != "-" {
                if let Some(f) = stored_folder(store, &f).await? {
                    return Ok(f);
                }
            }
            dir = up;
        }
        return Ok(folder);
    }
    let part = given.to_lowercase();
    let found: Vec<String> = store
        .projects()
        .await?
        .into_iter()
        .filter(|p| p.to_lowercase().contains(&part))
        .collect();
    match found.len() {
        0 => Ok(folder),
        1 => Ok(found.into_iter().next().unwrap_or(folder)),
        _ => Err(Error::BadValue {
            field: "--project".into(),
            value: given.into(),
            expected: format!("one project; it is part of {}", found.join(", ")),
        }),
    }
}

/// `folder` as the store holds it, if it does. A Windows drive letter is matched in either
/// case: Claude Code reports `s:\work` and `S:\work` for one directory (an editor's and a
/// shell's spelling) and keeps both in one folder, so a hook given either finds it.
async fn stored_folder(store: &Store, folder: &str) -> Result<Option<String>, Error> {
    if store.has_project(folder).await? {
        return Ok(Some(folder.to_string()));
    }
    // `S--work`: a drive letter, then `:\` encoded. The same folder with the letter's other
    // case (an ASCII letter's two cases differ in bit 0x20).
    if let [d, b'-', b'-', ..] = folder.as_bytes() {
        if d.is_ascii_alphabetic() {
            let other = format!("{}{}", char::from(d ^ 0x20), &folder[1..]);
            if store.has_project(&other).await? {
                return Ok(Some(other));
            }
        }
    }
    Ok(None)
}

/// The digest for `req`, or an empty string when the project holds nothing to say.
pub async fn digest(store: &Store, req: &ContextRequest) -> Result<String, Error> {
    let sessions = store
        .context_sessions(&req.project, req.exclude.as_deref(), RECENT_SESSIONS)
        .await?;
    let ids: Vec<String> = sessions.iter().map(|s| s.session_id.clone()).collect();
    let corrections = store.context_corrections(&ids, CANDIDATES).await?;
    let mut items = store.context_items(&req.project, CANDIDATES).await?;
    if let Some(ex) = &req.exclude {
        items.retain(|i| &i.session_id != ex);
    }
    let lists = [
        correction_lines(&corrections),
        item_lines(&items),
        session_lines(&sessions),
    ];
    Ok(pack(&lists, req.max_bytes))
}

/// `text [abcd1234]`, whitespace collapsed, cut to [`LINE_CHARS`].
fn line(text: &str, session_id: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let short: String = session_id.chars().take(8).collect();
    let body = if text.chars().count() > LINE_CHARS {
        // A quotation cut short keeps its closing mark, so where the user's words end is
        // still plain.
        let quoted = text.len() > 1 && text.starts_with('"') && text.ends_with('"');
        let keep = LINE_CHARS - 1 - usize::from(quoted);
        let cut: String = text.chars().take(keep).collect();
        format!("{}…{}", cut.trim_end(), if quoted { "\"" } else { "" })
    } else {
        text
    };
    format!("- {body} [{short}]")
}

/// The correction lines, those that state a rule (a denial's typed reason, or words for which
/// [`states_a_rule`] holds) before the rest, newest first within each.
fn correction_lines(rows: &[ContextCorrection]) -> Vec<String> {
    let mut out: Vec<(bool, String)> = Vec::new();
    for r in rows {
        match r.source.as_str() {
            // Claude Code's own words to the assistant ("The user wants to clarify these
            // questions ...", written when a question tool is turned down) are no reason the
            // user typed; a question typed as the reason sets no rule.
            "denial"
                if r.body.trim_start().starts_with("The user ")
                    || r.body.trim_end().ends_with('?') => {}
            "denial" => out.push((
                true,
                line(&format!("denied a tool call: {}", r.body), &r.session_id),
            )),
            _ => {
                let Ok(serde_json::Value::Array(ev)) = serde_json::from_str(&r.body) else {
                    continue;
                };
                for e in ev {
                    let text = e["text"].as_str().unwrap_or_default();
                    // The user's own words: a correcting phrase, or what they said after
                    // interrupting, up to anything they pasted after them. (A denial's evidence
                    // names the tool call, a pasted failure or log is output: neither is a
                    // preference.)
                    let signal = e["signal"].as_str().unwrap_or_default();
                    let words = signal.starts_with("phrase") || signal.starts_with("interruption");
                    let said = typed_words(text);
                    // A question asks; it sets no rule ("should i go through the tutorial?").
                    let asks = said.trim_end().ends_with('?');
                    if e["label"] == "user_correction" && words && !looks_pasted(text) && !asks {
                        out.push((
                            states_a_rule(said),
                            line(&format!("\"{said}\""), &r.session_id),
                        ));
                    }
                }
            }
        }
    }
    // Stable: newest first within each kind.
    out.sort_by_key(|(rule, _)| !rule);
    out.into_iter().map(|(_, l)| l).collect()
}

fn item_lines(rows: &[ContextItem]) -> Vec<String> {
    rows.iter()
        .map(|i| {
            let what = match i.kind.as_str() {
                "decision_rationale" => "decision",
                "error_reasoning" => "fix",
                _ => "learned",
            };
            line(&format!("{what}: {}", i.title), &i.session_id)
        })
        .collect()
}

fn session_lines(rows: &[ContextSession]) -> Vec<String> {
    rows.iter()
        .filter(|s| s.title.is_some() || s.summary.is_some())
        .map(|s| {
            let date = s
                .last_activity_at
                .as_deref()
                .map(|t| t.chars().take(10).collect::<String>())
                .unwrap_or_default();
            let mut text = date;
            if let Some(t) = &s.title {
                text.push_str(&format!(" \"{t}\""));
            }
            if let Some(sum) = &s.summary {
                text.push_str(": ");
                text.push_str(sum);
            }
            line(text.trim(), &s.session_id)
        })
        .collect()
}

const HEADER: &str = "Gleaner: what earlier sessions in this project kept (the id in brackets \
                      names the session for the gleaner MCP tools: get_session, \
                      get_conversation, search).";
const TITLES: [&str; 3] = [
    "Corrections and preferences:",
    "Decisions and fixes:",
    "Recent sessions:",
];

/// The words a line says (see [`crate::text::gist`]), without the line's kind ("learned:",
/// "fix:") and session tag: a correction quoted under "Corrections" and its snippet are one
/// thing, shown once.
fn gist(line: &str) -> BTreeSet<String> {
    let body = line.rsplit_once(" [").map_or(line, |(b, _)| b);
    let mut w = crate::text::gist::words(body);
    for kind in [
        "learned",
        "correction",
        "preference",
        "fix",
        "decision",
        "denied",
    ] {
        w.remove(kind);
    }
    w
}

/// Take lines in turns from each list while the whole fits in `max_bytes`, then show them
/// grouped under their titles. Empty when no line fits or none is given.
fn pack(lists: &[Vec<String>; 3], max_bytes: usize) -> String {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut gists: Vec<BTreeSet<String>> = Vec::new();
    let mut chosen: [Vec<&str>; 3] = Default::default();
    let mut size = HEADER.len() + 1;
    let mut next = [0usize; 3];
    let mut progress = true;
    while progress {
        progress = false;
        for k in 0..3 {
            while let Some(l) = lists[k].get(next[k]) {
                next[k] += 1;
                let words = gist(l);
                if !seen.insert(l.as_str()) || gists.iter().any(|g| says_again(&words, g)) {
                    continue;
                }
                let title = if chosen[k].is_empty() {
                    TITLES[k].len() + 1
                } else {
                    0
                };
                let grown = size + title + l.len() + 1;
                if grown <= max_bytes {
                    size = grown;
                    gists.push(words);
                    chosen[k].push(l);
                    progress = true;
                }
                break;
            }
        }
    }
    if chosen.iter().all(Vec::is_empty) {
        return String::new();
    }
    let mut out = String::from(HEADER);
    out.push('\n');
    for (k, lines) in chosen.iter().enumerate() {
        if lines.is_empty() {
            continue;
        }
        out.push_str(TITLES[k]);
        out.push('\n');
        for l in lines {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_are_named_as_claude_code_names_them() {
        assert_eq!(project_folder("/home/u/my.app"), "-home-u-my-app");
        assert_eq!(project_folder("S:\\02-DevOps"), "S--02-DevOps");
        assert_eq!(project_folder("-home-u-p"), "-home-u-p");
        assert_eq!(project_folder("/home/u/my.app/"), "-home-u-my-app");
        assert_eq!(project_folder("/"), "-");
    }

    #[test]
    fn lines_are_taken_in_turns_within_the_budget() {
        let many = |p: &str| (0..50).map(|i| format!("- {p} {i} [abcd1234]")).collect();
        let lists = [many("fix"), many("decision"), many("session")];
        let out = pack(&lists, 600);
        assert!(out.len() <= 600, "{}", out.len());
        for t in TITLES {
            assert!(out.contains(t), "{out}");
        }
        assert!(
            out.contains("- fix 1 ") && out.contains("- session 1 "),
            "{out}"
        );
        assert_eq!(pack(&[vec![], vec![], vec![]], 2048), "");
        // Nothing fits: nothing at all, not a bare header.
        assert_eq!(pack(&lists, HEADER.len() + 10), "");
    }

    #[test]
    fn corrections_that_state_a_rule_come_first() {
        let row = |id: &str, said: &str| ContextCorrection {
            session_id: id.into(),
            at: None,
            source: "evidence".into(),
            body:
                serde_json::json!([{"label": "user_correction", "signal": "phrase", "text": said}])
                    .to_string(),
        };
        let denial = |id: &str, reason: &str| ContextCorrection {
            session_id: id.into(),
            at: None,
            source: "denial".into(),
            body: reason.into(),
        };
        let kept = correction_lines(&[
            denial("dddddddd1", "The user wants to clarify these questions. This means they may have additional information"),
            row("eeeeeeee1", "should i go through the tutorial?"),
            denial("ffffffff1", "use pnpm, this repository has a pnpm lockfile"),
            denial("gggggggg1", "should i clear the context?"),
        ]);
        assert_eq!(kept.len(), 1, "{kept:?}");
        assert!(kept[0].contains("use pnpm"), "{kept:?}");
        let lines = correction_lines(&[
            row("aaaaaaaa1", "i didnt see it before"),
            row("bbbbbbbb1", "lets just go back to solid orange"),
            row("cccccccc1", "i dont see it in the repo"),
        ]);
        assert!(lines[0].contains("solid orange"), "{lines:?}");
        assert!(
            lines[1].contains("didnt see") && lines[2].contains("in the repo"),
            "{lines:?}"
        );
    }

    #[test]
    fn the_same_thing_said_twice_is_shown_once() {
        // A digest of a new user's trial: the quote and its snippet said one thing twice.
        let lists = [
            vec!["- \"no when i sign out it closes the rdp session\" [aaaaaaaa]".to_string()],
            vec![
                "- learned: Correction: no when i sign out it closes the rdp session maybe [aaaaaaaa]"
                    .to_string(),
                "- fix: the sign-out hook ends the session; now it only locks [aaaaaaaa]".to_string(),
            ],
            vec!["- 2026-11-20 \"rdp\" [aaaaaaaa]".to_string()],
        ];
        let out = pack(&lists, 2048);
        assert_eq!(out.matches("closes the rdp session").count(), 1, "{out}");
        assert!(out.contains("now it only locks"), "{out}");
    }

    #[test]
    fn long_lines_are_cut_and_whitespace_collapsed() {
        let l = line(&format!("a\n  b {}", "x".repeat(500)), "0123456789abcdef");
        assert!(
            l.starts_with("- a b x") && l.ends_with("… [01234567]"),
            "{l}"
        );
        assert!(l.chars().count() <= LINE_CHARS + 14);
        // A quotation cut short keeps its closing mark.
        let q = line(&format!("\"{}\"", "y ".repeat(300)), "0123456789abcdef");
        assert!(
            q.starts_with("- \"y y") && q.ends_with("…\" [01234567]"),
            "{q}"
        );
        assert!(q.chars().count() <= LINE_CHARS + 14);
    }
}
