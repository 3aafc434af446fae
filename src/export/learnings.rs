//! Snippets as learnings, in the shape learning stores import.

use serde::Serialize;

use super::SessionExport;
use crate::store::{EpisodeListing, SnippetListing};
use crate::text::clip_chars;

/// One learning: what happened, the lesson, where.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Learning {
    /// What happened, concretely.
    pub observation: String,
    /// The reusable lesson.
    pub generalization: String,
    /// Project folder of the session.
    pub project: String,
    /// `pattern`, `mistake`, `decision` or `preference`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// `session:<id>`, `episode:<id>`, `turn:<n>` and the snippet's own tags.
    pub tags: Vec<String>,
}

/// The learnings of one session: one per snippet that is not from routine work (automatic
/// snippets of routine episodes are left out; manual ones are always in: a person kept them).
pub fn learnings(s: &SessionExport) -> Vec<Learning> {
    s.snippets
        .iter()
        .filter(|sn| is_learning(sn))
        .map(|sn| {
            let episode = s.episodes.iter().find(|e| Some(e.id) == sn.episode_id);
            learning(sn, episode)
        })
        .collect()
}

/// Whether a snippet is exported as a learning: every manual one, and the automatic ones of
/// non-routine work (see the module documentation of `export`).
pub fn is_learning(sn: &SnippetListing) -> bool {
    sn.origin != "auto" || triage_of(sn) != Some("routine")
}

fn triage_of(sn: &SnippetListing) -> Option<&str> {
    sn.metadata.get("triage").and_then(|t| t.as_str())
}

/// `error_reasoning` -> mistake; `decision_rationale` -> decision; a `learning_pattern` drawn
/// from a user's correction -> preference (what the user wants done), else pattern.
fn kind(sn: &SnippetListing) -> &'static str {
    match sn.snippet_type.as_str() {
        "error_reasoning" => "mistake",
        "decision_rationale" => "decision",
        // The assistant's own lesson, even in an episode the user corrected: what was learned
        // about the work, not what the user wants.
        _ if sn.title.starts_with("Lesson:") => "pattern",
        _ if triage_of(sn) == Some("user_correction")
            || sn.title.starts_with("User correction")
            || sn.title.starts_with("Preference:")
            || sn.title.starts_with("Correction:") =>
        {
            "preference"
        }
        _ => "pattern",
    }
}

/// The learning of one snippet; `episode` is the episode it came from, when known (it gives
/// the turn).
pub fn learning(sn: &SnippetListing, episode: Option<&EpisodeListing>) -> Learning {
    let field = |k: &str| {
        sn.metadata
            .get(k)
            .and_then(|v| v.as_str())
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    // Snippets written before the two halves were stored (and manual ones): the title names
    // the lesson, the opening of the content says what happened.
    let observation = field("observation").unwrap_or_else(|| {
        let para = sn
            .content
            .split("\n\n")
            .map(str::trim)
            .find(|p| !p.is_empty())
            .unwrap_or("");
        clip_chars(&plain(para), 600)
    });
    let generalization = field("generalization").unwrap_or_else(|| sn.title.clone());
    let mut tags = vec![format!("session:{}", sn.session_id)];
    if let Some(e) = sn.episode_id {
        tags.push(format!("episode:{e}"));
    }
    if let Some(t) = episode.and_then(|ep| turn_of(ep, sn)) {
        tags.push(format!("turn:{t}"));
    }
    tags.extend(sn.tags.iter().cloned());
    Learning {
        observation,
        generalization,
        project: sn.project.clone(),
        kind: kind(sn),
        tags,
    }
}

/// A hand-made snippet's text as a learning states it: an excerpt of a transcript
/// (`[L12] user: ...`, `snippet add --lines`) without its line markers and tool lines, the
/// speakers' words joined; absolute paths shortened to the file's name. Why: a learning is
/// imported elsewhere, where line numbers of a transcript and one machine's paths mean
/// nothing.
fn plain(text: &str) -> String {
    // Only an excerpt: every line a `[L<n>] ` marker (other text is kept as written).
    let marked = |l: &str| {
        l.strip_prefix("[L")
            .and_then(|r| r.split_once("] "))
            .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    if !text.lines().filter(|l| !l.trim().is_empty()).all(marked) {
        return text.to_string();
    }
    let mut parts = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("[L").and_then(|r| r.split_once("] ")) else {
            parts.push(line.trim().to_string());
            continue;
        };
        let body = rest.1;
        if body.starts_with("tool ") {
            continue;
        }
        let said = match body.split_once(": ") {
            Some((who, t)) if !who.contains(' ') => {
                let mut who = who.to_string();
                if let Some(c) = who.get_mut(0..1) {
                    c.make_ascii_uppercase();
                }
                format!("{who}: {}", t.trim())
            }
            _ => body.trim().to_string(),
        };
        parts.push(said);
    }
    let joined = parts
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| {
            if p.ends_with(['.', '!', '?', ':']) {
                p.clone()
            } else {
                format!("{p}.")
            }
        })
        .collect::<Vec<_>>()
        .join(" ");
    crate::snippet::draft::relative(&joined, None)
}

/// The turn (its number in the file) whose lines hold the snippet's first line.
fn turn_of(ep: &EpisodeListing, sn: &SnippetListing) -> Option<i64> {
    let line = sn.line_start;
    ep.turn_labels
        .as_array()?
        .iter()
        .find(|t| {
            t["start_line"].as_i64().is_some_and(|a| a <= line)
                && t["end_line"].as_i64().is_some_and(|b| line <= b)
        })
        .and_then(|t| t["ordinal"].as_i64())
        .or_else(|| (line >= ep.start_line && line <= ep.end_line).then_some(ep.first_turn))
}
