//! Automatic snippets of a closed episode, scored so that each keeps only what teaches.
//!
//! Candidates: an `error_reasoning` for each failure that was fixed (the error, the reason
//! when the assistant gave one, the fix as a compact diff or the way the passing command
//! differs, the command that then passed); a `learning_pattern` for each strong correction by
//! the user (their words and the denied call); a `decision_rationale` for a decision that
//! weighs options, or a change of approach with its reason; and an explicit lesson ("the root
//! cause was", "key insight") as `learning_pattern`, in any episode.
//!
//! Each candidate gets a score in 0..1 from what it holds (see [`score`] in each draft):
//! an explanation and a concrete change count for it; a cascade or a different action never
//! becomes a candidate (see `tools.rs`); a fix that silences a check, a missing program
//! installed, a question typed as a "correction", options without a choice, and lessons cut
//! out of code or how-to steps count against it. Below [`MIN_SCORE`] it is dropped; an episode
//! keeps its best [`PER_EPISODE`], a session its best [`PER_SESSION`] (see
//! [`super::Builder`]). Everything shown was redacted by extraction before it got here.

use std::collections::BTreeSet;

use super::fix::sentences;
use super::tags::tags;
use super::triage::{Label, Triage};
use super::{NoteKind, Open};
use crate::extract::rows::SnippetRow;
use crate::snippet::{
    clip_chars, is_noise_line, metadata_json, normalized_hash, title_from, truncate_bytes,
    validate, SnippetType, MAX_CONTENT_BYTES, MAX_TITLE_CHARS,
};

/// Most automatic snippets per episode.
const PER_EPISODE: usize = 2;
/// Most automatic snippets per session file; past it a new one must beat the weakest kept.
pub(super) const PER_SESSION: usize = 8;
/// Lowest score a snippet needs to be kept.
pub(super) const MIN_SCORE: f64 = 0.55;
/// Head start of the snippet type the episode's label calls for.
const PRIMARY_BONUS: f64 = 0.1;
/// Smallest automatic `learning_pattern`, in bytes.
const MIN_LESSON_BYTES: usize = 150;

/// A snippet before validation.
pub(super) struct Draft {
    pub(super) kind: SnippetType,
    pub(super) title: String,
    pub(super) content: String,
    pub(super) lines: (u64, u64),
    /// What happened, concretely, in a sentence or two (a learning's `observation`).
    pub(super) observation: String,
    /// The reusable lesson (a learning's `generalization`).
    pub(super) lesson: String,
    /// How much it teaches, 0..1.
    pub(super) score: f64,
}

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

/// The first sentence of `text` (its first line when there is no sentence end), clipped.
pub(super) fn first_sentence(text: &str) -> String {
    sentences(text)
        .into_iter()
        .next()
        .map(|s| clip_chars(&s, 300))
        .unwrap_or_default()
}

/// The snippets of a closed episode with their scores, best first.
pub fn snippets(
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
                .filter_map(super::recovery::error_reasoning),
        );
        drafts.extend(corrections(open));
        drafts.extend(super::notes::note_draft(open, NoteKind::Decision));
        drafts.extend(super::options::draft(open));
        drafts.extend(super::notes::note_draft(open, NoteKind::Pivot));
    }
    drafts.extend(super::notes::note_draft(open, NoteKind::Learning));
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
        let observation = super::wording::finish(&d.observation, project);
        let lesson = super::wording::finish(&d.lesson, project);
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

/// Whether two texts share a word of five letters or more (a narration about the failure
/// names something in it: the file, the error, the program).
pub(super) fn shares_word(a: &str, b: &str) -> bool {
    shared_words(a, b) > 0
}

/// How many distinct words of five letters or more two texts share.
pub(super) fn shared_words(a: &str, b: &str) -> usize {
    let words = |s: &str| -> BTreeSet<String> {
        s.split(|c: char| !c.is_alphanumeric() && c != '_')
            .filter(|w| w.chars().count() >= 5)
            .map(str::to_lowercase)
            .collect()
    };
    let b = words(b);
    words(a).iter().filter(|w| b.contains(*w)).count()
}

/// Openings of an answer that takes a correction on board.
const ACKNOWLEDGED: &[&str] = &[
    "you're right",
    "you are right",
    "got it",
    "good point",
    "understood",
    "right,",
    "ah,",
    "ah ",
    "ok,",
    "okay,",
    "i see",
    "makes sense",
];

/// `learning_pattern` drafts of the episode's strong corrections: a denial with the reason
/// typed, a redirect after an interruption, a prompt that opens with a correction.
fn corrections(open: &Open) -> Vec<Draft> {
    open.signals
        .iter()
        .filter(|s| s.label == Label::UserCorrection && s.weight >= 0.8)
        .filter(|s| s.signal != "tool_denial" || s.weight > 0.9)
        .filter_map(|s| {
            if s.signal == "acknowledged" {
                return acknowledged(open, s);
            }
            let (fl, follow) = s.followup.as_ref()?;
            let denial = s.signal == "tool_denial";
            // "denied Bash `npm i`: use pnpm" -> the call and the user's words.
            let (call, words) = match s.text.split_once(": ") {
                Some((head, w)) if denial => (head.trim_start_matches("denied ").to_string(), w),
                _ => (String::new(), s.text.as_str()),
            };
            // The user's own words, not what they pasted after them.
            let words = words.trim();
            let words = words.lines().next().unwrap_or(words).trim();
            let what = match s.signal.as_str() {
                "tool_denial" => format!("The user rejected {call}"),
                "interruption_redirect" => "The user interrupted and redirected".to_string(),
                _ => "The user corrected the assistant".to_string(),
            };
            // A typed denial reason is an instruction; a prompt's words ("cant read them",
            // "no i dont") teach something only when they say enough and the answer shows what
            // they meant.
            // A prompt's correction needs the answer to show it was one (an acknowledgement,
            // or the answer taking up its words): alone it is often the user changing their
            // own mind ("sorry, wrong file") or going on ("no, leave it, show me the link").
            let mut score: f64 = if denial { 0.6 } else { 0.4 };
            // A question asks; it instructs nothing ("We could offer an option to resume
            // anyway? (if we do this ...)", "or something descriptive? but yeah ...").
            let question = words
                .find(['.', '!', '?', '？'])
                .is_some_and(|i| words[i..].starts_with(['?', '？']));
            if question || crate::snippet::word_count(words) < 2 {
                score -= 0.3;
            }
            if !denial && crate::snippet::word_count(words) >= 8 {
                score += 0.1;
            }
            let lower = follow.trim_start().to_lowercase();
            if ACKNOWLEDGED.iter().any(|a| lower.starts_with(a)) || shares_word(follow, words) {
                score += 0.15;
            }
            let content = format!(
                "{what} (line {}) and said:\n> {}\n\nWhat the assistant did next (line {fl}):\n{follow}\n",
                s.line,
                words.replace('\n', "\n> ")
            );
            let quoted = clip_chars(words, 400);
            let (prefix, observation, lesson) = if denial {
                (
                    "Preference",
                    format!(
                        "The user turned down {call} and said: \"{quoted}\"; the assistant then: {}",
                        first_sentence(follow)
                    ),
                    format!(
                        "When about to {} in this project, do what the user asked instead: \"{quoted}\"",
                        super::wording::action(&call)
                    ),
                )
            } else {
                (
                    "Correction",
                    format!(
                        "The user corrected the assistant: \"{quoted}\"; the assistant then: {}",
                        first_sentence(follow)
                    ),
                    format!(
                        "When {}, keep to the user's correction: \"{quoted}\"",
                        super::wording::trigger(open, None, Some(words))
                    ),
                )
            };
            Some(Draft {
                kind: SnippetType::LearningPattern,
                title: format!("{prefix}: {}", title_from(words)),
                observation,
                lesson,
                content,
                lines: (s.line, *fl),
                score: score.clamp(0.0, 1.0),
            })
        })
        .collect()
}

/// The `learning_pattern` of a correction the assistant acknowledged ("You're right - if we
/// can't open the repository there, we shouldn't silently continue"): the user's words and
/// what the assistant then said was wrong. The prompt's wording may show no correction at all
/// (a question, a finding pasted); the acknowledgement does. An acknowledgement that says
/// nothing beyond it ("You're absolutely right!") teaches nothing.
fn acknowledged(open: &Open, s: &super::Signal) -> Option<Draft> {
    let (pl, prompt) = s.followup.as_ref()?;
    let words = prompt.lines().next().unwrap_or(prompt).trim();
    // What the assistant conceded, without the concession itself.
    let rest = s
        .text
        .split_once(['!', '.', '-', '—', ','])
        .map_or("", |(_, rest)| rest)
        .replace("**", "");
    // Its statements, not the steps it announces next ("Let me fix that.").
    let conceded = sentences(rest.trim_start_matches(['!', '.', '-', '—', ',', ' ']))
        .into_iter()
        .filter(|x| !super::fix::is_announcement(x) && !x.to_lowercase().starts_with("step "))
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    let mut score: f64 = 0.45;
    if crate::snippet::word_count(&conceded) < 6
        || super::fix::is_announcement(&conceded)
        || crate::snippet::word_count(words) < 3
    {
        score -= 0.3;
    }
    if shares_word(&conceded, words) {
        score += 0.15;
    }
    let quoted = clip_chars(words, 300);
    let observation = format!(
        "The user pointed out: \"{quoted}\"; the assistant agreed: {}",
        clip_chars(&s.text, 300)
    );
    let lesson = format!(
        "When {}, mind what the user pointed out: {}",
        super::wording::trigger(open, None, Some(words)),
        clip_chars(conceded.trim_end_matches(['.', ':']), 300)
    );
    let content = format!(
        "The user said (line {pl}):\n> {}\n\nThe assistant acknowledged (line {}):\n{}\n",
        prompt.replace('\n', "\n> "),
        s.line,
        s.text
    );
    Some(Draft {
        kind: SnippetType::LearningPattern,
        title: format!("Correction: {}", title_from(words)),
        observation,
        lesson: format!("{lesson}."),
        content,
        lines: (*pl, s.line),
        score: score.clamp(0.0, 1.0),
    })
}

/// The score an automatic snippet was stored with (see this module).
pub(super) fn snippet_score(s: &SnippetRow) -> f64 {
    serde_json::from_str::<serde_json::Value>(&s.metadata)
        .ok()
        .and_then(|m| m["score"].as_f64())
        .unwrap_or(MIN_SCORE)
}

/// Record a kept snippet's score: the [`PER_SESSION`] best of the file are remembered.
pub(super) fn keep_score(kept: &mut Vec<f64>, score: f64) {
    kept.push(score);
    kept.sort_by(|a, b| b.total_cmp(a));
    kept.truncate(PER_SESSION);
}

/// Each session keeps its best snippets: once the file has [`PER_SESSION`], a new one
/// must score above the weakest of them. (The weaker one already stored stays; a session
/// thus holds at most the cap plus the improvements on it, and readers rank by score.)
pub(super) fn session_cap(kept: &[f64], scored: Vec<(f64, SnippetRow)>) -> Vec<SnippetRow> {
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
