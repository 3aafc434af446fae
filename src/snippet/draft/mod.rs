//! Automatic snippets of a closed episode, scored so that each keeps only what teaches.
//!
//! Why here and not in `episode`: drafting is what a snippet is made of (its types, gates,
//! titles, learning halves), so it is the snippet module's. It reads the episode's state (the
//! failures, recoveries, notes and signals the builder kept); the builder calls it through
//! [`crate::episode::Drafter`], which [`Auto`] implements, so `episode` imports none of this
//! and the modules form no circle. Inside, the files form no circle either: `candidate` (the
//! `Draft` type and the word tests every draft shares) is a leaf; `wording` reads only it; the
//! drafts (`recovery`, `corrections`, `notes`, `options`) read those two at most; this file
//! reads them all, and ranks, gates and caps the drafts and turns them into rows.
//!
//! Candidates: an `error_reasoning` for each failure that was fixed (the error, the reason
//! when the assistant gave one, the fix as a compact diff or the way the passing command
//! differs, the command that then passed); a `learning_pattern` for each strong correction by
//! the user (their words and the denied call); a `decision_rationale` for a decision that
//! weighs options, or a change of approach with its reason; and an explicit lesson ("the root
//! cause was", "key insight") as `learning_pattern`, in any episode.
//!
//! Each candidate gets a score in 0..1 from what it holds (see `score` in each draft):
//! an explanation and a concrete change count for it; a cascade or a different action never
//! becomes a candidate (see `episode/tools.rs`); a fix that silences a check, a missing program
//! installed, a question typed as a "correction", options without a choice, and lessons cut
//! out of code or how-to steps count against it. Below `MIN_SCORE` it is dropped; an episode
//! keeps its best `PER_EPISODE`, a session its best `PER_SESSION` (the scores kept are
//! stored in [`crate::episode::Builder`]'s state). Everything shown was redacted by extraction
//! before it got here.

mod candidate;
mod corrections;
mod notes;
mod options;
mod recovery;
mod tags;
mod wording;

use std::collections::BTreeSet;

use crate::episode::{Closing, Drafter, Label, NoteKind, Open, Triage};
use crate::extract::rows::SnippetRow;
use crate::snippet::{
    metadata_json, normalized_hash, validate, SnippetType, MAX_CONTENT_BYTES, MAX_TITLE_CHARS,
};
use crate::text::gist;
use crate::text::noise::is_noise_line;
use crate::text::{clip_chars, truncate_bytes};
use candidate::Draft;
use tags::tags;

pub(crate) use wording::relative;

/// Most automatic snippets per episode.
const PER_EPISODE: usize = 2;
/// Most automatic snippets per session file; past it a new one must beat the weakest kept.
const PER_SESSION: usize = 8;
/// Titles of a file's latest snippets remembered to refuse a repeat.
const KEPT_TITLES: usize = 32;
/// Lowest score a snippet needs to be kept.
const MIN_SCORE: f64 = 0.55;
/// Head start of the snippet type the episode's label calls for.
const PRIMARY_BONUS: f64 = 0.1;
/// Smallest automatic `learning_pattern`, in bytes.
const MIN_LESSON_BYTES: usize = 150;

/// The drafts worth keeping (score at least [`MIN_SCORE`]), best first; the snippet of the
/// episode's own label (`primary`) gets a small head start (it is what the episode is about).
/// The score gate comes before the ranking: a draft under the gate that the head start put
/// first must not end the walk, or the better drafts after it are never kept.
fn ranked(drafts: Vec<Draft>, primary: Option<SnippetType>) -> Vec<Draft> {
    let rank = |d: &Draft| {
        d.score
            + if Some(d.kind) == primary {
                PRIMARY_BONUS
            } else {
                0.0
            }
    };
    let mut kept: Vec<Draft> = drafts
        .into_iter()
        .filter(|d| d.score >= MIN_SCORE)
        .collect();
    kept.sort_by(|a, b| rank(b).total_cmp(&rank(a)));
    kept
}

/// The drafter of automatic snippets (origin `auto`): what [`crate::episode::Feed`] and
/// [`crate::episode::Builder::finish`] are given to draft the snippets of the episodes that
/// close. The scores it asks the builder to keep are those of the file's best snippets (the
/// per-session cap, `PER_SESSION`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Auto;

impl Drafter for Auto {
    fn snippets(&self, episode: &Closing<'_>, kept: &[f64], titles: &[String]) -> Vec<SnippetRow> {
        let mut scored = snippets(
            episode.open,
            episode.triage,
            episode.version,
            episode.project,
            episode.end_line,
        );
        // An earlier episode of the file kept this lesson already (the same cause found
        // twice, a resumed session replaying an exchange). Most episodes draft nothing, so the
        // earlier titles are read only when there is a draft to compare.
        if !scored.is_empty() && !titles.is_empty() {
            let said: Vec<_> = titles.iter().map(|t| gist::words(t)).collect();
            scored.retain(|(_, r)| {
                let w = gist::words(&r.title);
                !said.iter().any(|s| gist::says_again(&w, s))
            });
        }
        session_cap(kept, scored)
    }

    fn keep(&self, kept: &mut Vec<f64>, titles: &mut Vec<String>, stored: &[SnippetRow]) {
        for s in stored {
            keep_score(kept, snippet_score(s));
            titles.push(s.title.clone());
        }
        // The latest are enough to tell a repeat; the state stays small.
        let over = titles.len().saturating_sub(KEPT_TITLES);
        titles.drain(..over);
    }
}

/// The snippets of a closed episode with their scores, best first.
fn snippets(
    open: &Open,
    triage: &Triage,
    version: Option<&str>,
    project: Option<&str>,
    end_line: u64,
) -> Vec<(f64, SnippetRow)> {
    let mut drafts: Vec<Draft> = Vec::new();
    if triage.label != Label::Routine {
        drafts.extend(
            open.recoveries
                .iter()
                .filter_map(|r| recovery::error_reasoning(open, r)),
        );
        drafts.extend(corrections::corrections(open));
        drafts.extend(notes::note_draft(open, NoteKind::Decision));
        drafts.extend(options::draft(open));
        drafts.extend(notes::note_draft(open, NoteKind::Pivot));
    }
    drafts.extend(notes::note_draft(open, NoteKind::Learning));
    let primary = match triage.label {
        Label::ErrorRecovery => Some(SnippetType::ErrorReasoning),
        Label::UserCorrection => Some(SnippetType::LearningPattern),
        Label::Pivot | Label::DesignDecision => Some(SnippetType::DecisionRationale),
        Label::Routine => None,
    };
    let drafts = ranked(drafts, primary);

    let tags = tags(open, project);
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for d in drafts {
        if out.len() >= PER_EPISODE {
            break;
        }
        let content = clean(&d.content);
        let content = truncate_bytes(&content, MAX_CONTENT_BYTES);
        let title = clip_chars(&d.title, MAX_TITLE_CHARS);
        if validate(&title, &content).is_err() {
            continue;
        }
        // A lesson needs room to say what and why; a short "next time ..." is chatter.
        if d.kind == SnippetType::LearningPattern && content.len() < MIN_LESSON_BYTES {
            continue;
        }
        let hash = normalized_hash(&content);
        if !seen.insert(hash.clone()) {
            continue;
        }
        let said = gist::words(&title);
        if out
            .iter()
            .any(|(_, r): &(f64, SnippetRow)| gist::says_again(&said, &gist::words(&r.title)))
        {
            continue;
        }
        // A lesson already quoted by a kept snippet (the "Why" of an error) counts once.
        if d.kind == SnippetType::LearningPattern
            && out.iter().any(|(_, r): &(f64, SnippetRow)| {
                r.content.contains(d.lesson.trim_end_matches(['.', ':']))
            })
        {
            continue;
        }
        let (start, end) = d.lines;
        let start = start.max(open.start_line).min(end_line);
        let end = end.clamp(start, end_line);
        let score = (d.score * 100.0).round() / 100.0;
        let observation = wording::finish(&d.observation, project);
        let lesson = wording::finish(&d.lesson, project);
        // The two halves must say different things: a lesson that only repeats what
        // happened is not one.
        if observation.eq_ignore_ascii_case(&lesson) {
            continue;
        }
        let mut metadata = crate::snippet::with_learning(
            &metadata_json(
                &content,
                Some(triage.label.as_str()),
                Some(triage.confidence),
                version,
            ),
            &observation,
            &lesson,
        );
        if let Ok(serde_json::Value::Object(mut m)) = serde_json::from_str(&metadata) {
            m.insert("score".into(), score.into());
            metadata = serde_json::Value::Object(m).to_string();
        }
        out.push((
            score,
            SnippetRow {
                origin: "auto",
                snippet_type: d.kind.as_str().to_string(),
                metadata,
                title,
                content,
                content_hash: hash,
                line_start: start,
                line_end: end,
                tags: tags.clone(),
            },
        ));
    }
    out
}

/// Drop lines that are noise on their own, collapse runs of blank lines, and drop a heading
/// left dangling at the end (it introduces text that was cut).
fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = false;
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && is_noise_line(line) {
            continue;
        }
        if line.trim().is_empty() {
            if !blank && !out.is_empty() {
                out.push('\n');
            }
            blank = true;
            continue;
        }
        blank = false;
        out.push_str(line.trim_end());
        out.push('\n');
    }
    let mut out = out.trim().to_string();
    // A paragraph cut inside a code block: close the fence so the rest does not read as code.
    if fenced {
        out.push_str("\n```");
    }
    while let Some(i) = out.rfind('\n') {
        if !out[i + 1..].trim_start().starts_with('#') {
            break;
        }
        out.truncate(i);
        out.truncate(out.trim_end().len());
    }
    out
}

/// The score an automatic snippet was stored with (see this module).
fn snippet_score(s: &SnippetRow) -> f64 {
    serde_json::from_str::<serde_json::Value>(&s.metadata)
        .ok()
        .and_then(|m| m["score"].as_f64())
        .unwrap_or(MIN_SCORE)
}

/// Record a kept snippet's score: the [`PER_SESSION`] best of the file are remembered.
fn keep_score(kept: &mut Vec<f64>, score: f64) {
    kept.push(score);
    kept.sort_by(|a, b| b.total_cmp(a));
    kept.truncate(PER_SESSION);
}

/// Each session keeps its best snippets: once the file has [`PER_SESSION`], a new one
/// must score above the weakest of them. (The weaker one already stored stays; a session
/// thus holds at most the cap plus the improvements on it, and readers rank by score.)
fn session_cap(kept: &[f64], scored: Vec<(f64, SnippetRow)>) -> Vec<SnippetRow> {
    let mut kept = kept.to_vec();
    let mut out = Vec::new();
    for (score, row) in scored {
        let room = kept.len() < PER_SESSION;
        if room || kept.last().is_some_and(|w| score > *w) {
            keep_score(&mut kept, score);
            out.push(row);
        }
    }
    out
}

#[cfg(test)]
mod tests_learnings;
#[cfg(test)]
mod tests_lessons;
#[cfg(test)]
mod tests_snippets;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_drops_noise_blank_runs_and_a_dangling_heading() {
        let text = "**Root cause**:\nThe cache key ignored the version.\n\n\n\nSo stale rows came back.\n\n## The Fix\n";
        assert_eq!(
            clean(text),
            "The cache key ignored the version.\n\nSo stale rows came back."
        );
        // A heading followed by its text stays.
        assert_eq!(clean("## Why\nBecause."), "## Why\nBecause.");
        // A code block cut short is closed.
        assert_eq!(
            clean("The options are:\n```bash\npython3 -m http.server"),
            "The options are:\n```bash\npython3 -m http.server\n```"
        );
    }

    #[test]
    fn a_draft_under_the_gate_ranked_first_does_not_hide_the_rest() {
        let draft = |kind, score| Draft {
            kind,
            title: format!("{kind:?} {score}"),
            content: String::new(),
            lines: (1, 1),
            observation: String::new(),
            lesson: String::new(),
            score,
        };
        // The primary kind's head start puts the weak draft first (0.50 + 0.1 > 0.58).
        let drafts = vec![
            draft(SnippetType::ErrorReasoning, MIN_SCORE - 0.05),
            draft(SnippetType::DecisionRationale, MIN_SCORE + 0.03),
            draft(SnippetType::LearningPattern, MIN_SCORE + 0.01),
        ];
        let kept: Vec<SnippetType> = ranked(drafts, Some(SnippetType::ErrorReasoning))
            .into_iter()
            .map(|d| d.kind)
            .collect();
        assert_eq!(
            kept,
            [SnippetType::DecisionRationale, SnippetType::LearningPattern]
        );
        // Above the gate, the head start still decides between close scores.
        let drafts = vec![
            draft(SnippetType::DecisionRationale, 0.70),
            draft(SnippetType::ErrorReasoning, 0.65),
        ];
        let first = ranked(drafts, Some(SnippetType::ErrorReasoning))[0].kind;
        assert_eq!(first, SnippetType::ErrorReasoning);
    }
}
