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

use super::fix::{self, is_announcement, is_explanation, is_reason, sentences};
use super::tags::tags;
use super::triage::{Label, Triage};
use super::{NoteKind, Open, Recovery};
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
/// Lines between a failure and its success past which the link is loose.
const LOOSE_LINES: u64 = 40;
/// Smallest automatic `learning_pattern`, in bytes.
const MIN_LESSON_BYTES: usize = 150;

/// A snippet before validation.
struct Draft {
    kind: SnippetType,
    title: String,
    content: String,
    lines: (u64, u64),
    /// What happened, concretely, in a sentence or two (a learning's `observation`).
    observation: String,
    /// The reusable lesson (a learning's `generalization`).
    lesson: String,
    /// How much it teaches, 0..1.
    score: f64,
}

/// The first sentence of `text` (its first line when there is no sentence end), clipped.
fn first_sentence(text: &str) -> String {
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
        drafts.extend(open.recoveries.iter().filter_map(error_reasoning));
        drafts.extend(corrections(open));
        drafts.extend(note_draft(open, NoteKind::Decision));
        drafts.extend(note_draft(open, NoteKind::Pivot));
    }
    drafts.extend(note_draft(open, NoteKind::Learning));
    // Best first; the episode's own label breaks ties (it is what the episode is about).
    let primary = match triage.label {
        Label::ErrorRecovery => Some(SnippetType::ErrorReasoning),
        Label::UserCorrection => Some(SnippetType::LearningPattern),
        Label::Pivot | Label::DesignDecision => Some(SnippetType::DecisionRationale),
        Label::Routine => None,
    };
    // Best first; the snippet of the episode's own label gets a small head start (it is what
    // the episode is about).
    let rank = |d: &Draft| {
        d.score
            + if Some(d.kind) == primary {
                PRIMARY_BONUS
            } else {
                0.0
            }
    };
    drafts.sort_by(|a, b| rank(b).total_cmp(&rank(a)));

    let tags = tags(open, project);
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for d in drafts {
        if out.len() >= PER_EPISODE || d.score < MIN_SCORE {
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
        let mut metadata = crate::snippet::with_learning(
            &metadata_json(
                &content,
                Some(triage.label.as_str()),
                Some(triage.confidence),
                version,
            ),
            &d.observation,
            &d.lesson,
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

/// A command as a snippet shows it: its first lines (a heredoc'd commit message or PR body is
/// not the point), at most 400 characters.
fn clip_command(cmd: &str) -> String {
    const LINES: usize = 4;
    let mut out = cmd.lines().take(LINES).collect::<Vec<_>>().join("\n");
    if cmd.lines().nth(LINES).is_some() {
        out.push_str("\n…");
    }
    clip_chars(&out, 400)
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
fn shares_word(a: &str, b: &str) -> bool {
    let words = |s: &str| -> BTreeSet<String> {
        s.split(|c: char| !c.is_alphanumeric() && c != '_')
            .filter(|w| w.chars().count() >= 5)
            .map(str::to_lowercase)
            .collect()
    };
    let b = words(b);
    words(a).iter().any(|w| b.contains(w))
}

/// The `error_reasoning` draft of one fixed failure, or `None` when it shows nothing a reader
/// could reuse (no error text, no reason, no change).
fn error_reasoning(r: &Recovery) -> Option<Draft> {
    let f = &r.failure;
    if f.error.trim().is_empty() {
        return None;
    }
    let what = match &f.target {
        Some(t) => format!("{} {}", f.tool, clip_command(t)),
        None => f.tool.clone(),
    };
    let headline = crate::snippet::headline(&f.error);
    let subject = match (f.tool.as_str(), &f.target) {
        ("Bash", Some(cmd)) => format!("`{}`", fix::subject_command(cmd)),
        (tool, Some(t)) => format!("{tool} {}", t.rsplit(['/', '\\']).next().unwrap_or(t)),
        (tool, None) => tool.to_string(),
    };
    let context = format!("{what}\n{}", f.error);
    // What the assistant said between failure and fix: an explanation is the lesson, an
    // announcement ("Let me check X:") is not worth quoting, narration about something else
    // is left out.
    let said: Vec<&(u64, String)> = f.tried.iter().chain(r.fix_text.iter()).collect();
    // The first words after the failure are about it; later ones must name something in it.
    let first_said = f
        .tried
        .iter()
        .find(|(_, t)| !is_announcement(t))
        .map(|(l, _)| *l);
    let reason = said.iter().find_map(|(l, t)| {
        sentences(t)
            .into_iter()
            .find(|s| is_reason(s) && (Some(*l) == first_said || shares_word(s, &context)))
            .map(|s| (*l, s))
    });
    let tried: Vec<&(u64, String)> = f
        .tried
        .iter()
        .filter(|(_, t)| !is_announcement(t) && (is_explanation(t) || shares_word(t, &context)))
        .collect();
    let changes: Vec<&(u64, String)> = f.actions.iter().filter(|(l, _)| *l < r.line).collect();
    // A diff that only moves a brace says nothing on its own.
    let diffs: Vec<&str> = changes
        .iter()
        .filter_map(|(_, a)| a.split_once('\n').map(|(_, d)| d))
        .filter(|d| d.chars().filter(|c| c.is_alphanumeric()).count() >= 3)
        .collect();
    let passed = r.call.strip_prefix("Bash ").unwrap_or(&r.call);
    let change = match (f.tool.as_str(), &f.target) {
        ("Bash", Some(t)) => fix::command_change(t, passed),
        _ => None,
    };
    let fix_words = format!(
        "{}\n{}",
        changes
            .iter()
            .map(|(_, a)| a.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        passed
    );

    let mut score: f64 = 0.35;
    if reason.is_some() {
        score += 0.25;
    }
    if !diffs.is_empty() {
        score += 0.2;
    } else if change.is_some() {
        score += 0.15;
    }
    if fix::is_suppression(&fix_words) {
        score -= 0.35;
    }
    if fix::is_missing_install(&f.error, &fix_words) || fix::is_conflict(&f.error) {
        score -= 0.35;
    }
    // A success long after the failure, past many changes, is only loosely its fix.
    if r.line.saturating_sub(f.line) > LOOSE_LINES {
        score -= 0.3;
    }

    let mut c = format!(
        "What failed (line {}): {what}\n\nError:\n{}\n",
        f.line, f.error
    );
    if let Some((l, s)) = &reason {
        c.push_str(&format!("\nWhy (line {l}): {s}\n"));
    }
    let tried: Vec<_> = tried
        .into_iter()
        .filter(|(l, t)| {
            reason
                .as_ref()
                .is_none_or(|(rl, s)| rl != l || !t.contains(s.as_str()))
        })
        .collect();
    if !tried.is_empty() {
        c.push_str("\nWhat was tried:\n");
        for (l, t) in tried {
            c.push_str(&format!("- (line {l}) {t}\n"));
        }
    }
    if !changes.is_empty() {
        c.push_str("\nThe fix:\n");
        for (l, a) in &changes {
            match a.split_once('\n') {
                Some((head, diff)) => {
                    c.push_str(&format!("- (line {l}) {head}\n```diff\n{diff}\n```\n"))
                }
                None => c.push_str(&format!("- (line {l}) {a}\n")),
            }
        }
    }
    let call = clip_chars(r.call.lines().next().unwrap_or(""), 300);
    c.push_str(&format!("\nThen it worked (line {}): {call}", r.line));
    match &change {
        Some(ch) => c.push_str(&format!(" ({ch})\n")),
        None => c.push('\n'),
    }

    // The lesson: the reason, then the concrete change.
    let concrete = if let Some(d) = diffs.first() {
        // Only a one-line change reads well inline; a larger one is in the content.
        let one = |sign: &str| {
            let mut it = d.lines().filter(|l| l.starts_with(sign));
            match (it.next(), it.next()) {
                (Some(l), None) => Some(&l[2..]),
                _ => None,
            }
        };
        let (minus, plus) = match (
            d.lines().filter(|l| l.starts_with("- ")).count(),
            d.lines().filter(|l| l.starts_with("+ ")).count(),
        ) {
            (0..=1, 0..=1) => (one("- "), one("+ ").map(str::to_string)),
            // Lines only added (an import, a field): name them all.
            (0, 2..=3) => (
                None,
                Some(d.lines().map(|l| &l[2..]).collect::<Vec<_>>().join("`, `")),
            ),
            _ => (None, None),
        };
        let file = changes
            .iter()
            .find(|(_, a)| a.contains('\n'))
            .and_then(|(_, a)| a.lines().next())
            .and_then(|h| h.rsplit(['/', '\\']).next())
            .unwrap_or("the file");
        match (minus, plus) {
            (Some(m), Some(p)) => format!(
                "changing `{}` to `{}` in {file} fixed it",
                clip_chars(m, 100),
                clip_chars(&p, 100)
            ),
            (None, Some(p)) => format!("adding `{}` to {file} fixed it", clip_chars(&p, 160)),
            (Some(m), None) => format!("removing `{}` from {file} fixed it", clip_chars(m, 100)),
            (None, None) => format!("the edit of {file} shown above fixed it"),
        }
    } else {
        change
            .as_ref()
            .map(|ch| format!("the command worked once it {ch}"))
            .unwrap_or_default()
    };
    let lesson = match (&reason, concrete.is_empty()) {
        (Some((_, s)), true) => s.clone(),
        (Some((_, s)), false) => format!("{} ({concrete}).", s.trim_end_matches(['.', ':'])),
        (None, false) => format!("{}{}.", concrete[..1].to_uppercase(), &concrete[1..]),
        (None, true) => return None,
    };
    Some(Draft {
        kind: SnippetType::ErrorReasoning,
        title: format!("{subject} failed, then fixed: {}", title_from(&headline)),
        observation: clip_chars(
            &format!(
                "{what} failed (line {}) with \"{}\"; it worked at line {} with {call}.",
                f.line,
                clip_chars(&headline, 200),
                r.line
            ),
            600,
        ),
        lesson: clip_chars(
            &format!(
                "When {subject} fails with \"{}\": {lesson}",
                clip_chars(&headline, 160)
            ),
            600,
        ),
        content: c,
        lines: (f.line, r.line),
        score: score.clamp(0.0, 1.0),
    })
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
            let mut score: f64 = if denial { 0.6 } else { 0.45 };
            let question = words.trim_end().ends_with(['?', '？']);
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
            let (prefix, lesson) = if denial {
                ("Preference", format!("{words} (said when rejecting {call})"))
            } else {
                ("Correction", words.to_string())
            };
            Some(Draft {
                kind: SnippetType::LearningPattern,
                title: format!("{prefix}: {}", title_from(words)),
                observation: clip_chars(
                    &format!("{what} (line {}); the assistant then: {}", s.line, first_sentence(follow)),
                    600,
                ),
                lesson: clip_chars(&lesson, 600),
                content,
                lines: (s.line, *fl),
                score: score.clamp(0.0, 1.0),
            })
        })
        .collect()
}

/// Words that give a decision its reason.
const REASONS: &[&str] = &[
    "because",
    "since ",
    "so that",
    "simpler",
    "cleaner",
    "faster",
    "safer",
    "tradeoff",
    "trade-off",
    "avoids",
    "avoid ",
    "keeps",
    "without",
    "cheaper",
    "more robust",
    "easier",
];

/// Whether a text lays out options: two or more list items, or words that set one thing
/// against another.
fn has_options(text: &str) -> bool {
    let items = text
        .lines()
        .map(str::trim_start)
        .filter(|l| {
            l.starts_with("- ")
                || l.starts_with("* ")
                || l.split_once(['.', ')']).is_some_and(|(n, _)| {
                    !n.is_empty() && n.len() <= 2 && n.chars().all(|c| c.is_ascii_digit())
                })
        })
        .count();
    let t = text.to_lowercase();
    items >= 2
        || [
            " vs ",
            " vs. ",
            "versus",
            "rather than",
            "instead of",
            "option a",
            "option 1",
            "alternative",
            "over ",
            "trade-off",
            "tradeoff",
            "whereas",
            "compared",
            "either",
        ]
        .iter()
        .any(|w| t.contains(w))
}

/// Whether a paragraph is mostly commands or code (a how-to), not prose a lesson can come from.
fn is_how_to(text: &str) -> bool {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let code = lines
        .iter()
        .filter(|l| {
            l.starts_with("```")
                || l.starts_with("cd ")
                || l.starts_with("$ ")
                || l.starts_with('`') && l.ends_with('`')
                || l.starts_with("npm ")
                || l.starts_with("git ")
        })
        .count();
    code * 2 >= lines.len().max(1)
}

/// The sentence a note's lesson is: the phrase's own sentence, or, when that is only a lead-in
/// ("Key insight:"), the sentence after it.
fn lesson_sentence(sentence: &str, text: &str) -> String {
    let s = sentence.trim().trim_matches('*').trim();
    let words = crate::snippet::word_count(s);
    if !s.ends_with(':') && words >= 6 {
        return s.to_string();
    }
    let all = sentences(text);
    let at = all.iter().position(|x| x.contains(s.trim_end_matches(':')));
    match at.and_then(|i| all.get(i + 1)) {
        // "The issue was that X, but:" + "Client expects Y" reads as one lesson.
        Some(next) if words >= 6 => format!(
            "{s} {}",
            next.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.')
                .trim()
                .replace("**", "")
        ),
        Some(next) => next.replace("**", ""),
        None => s.to_string(),
    }
}

fn note_draft(open: &Open, kind: NoteKind) -> Option<Draft> {
    let n = open.notes.iter().find(|n| n.kind == kind)?;
    let (snippet_kind, prefix) = match kind {
        NoteKind::Learning => (SnippetType::LearningPattern, "Lesson"),
        NoteKind::Pivot => (SnippetType::DecisionRationale, "Change of approach"),
        NoteKind::Decision => (SnippetType::DecisionRationale, "Decision"),
    };
    let mut content = String::new();
    let mut start = n.line;
    if kind != NoteKind::Learning {
        if let Some((l, ctx)) = &n.context {
            // The paragraph before a decision usually holds the problem it answers.
            content.push_str(&truncate_bytes(ctx, 1500));
            content.push_str("\n\n");
            start = *l;
        }
    }
    content.push_str(&n.text);
    let lesson = lesson_sentence(&n.sentence, &n.text);
    let mut head = title_from(&lesson);
    let words = |t: &str| t.chars().filter(|c| c.is_alphanumeric()).count();
    if words(&head) < 10 {
        head = title_from(&n.text);
    }
    if words(&head) < 10 {
        // No sentence to name it by: not readable on its own.
        return None;
    }
    let body = content.to_lowercase();
    let prose: usize = n
        .text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .map(str::len)
        .sum();
    let mut score: f64 = 0.5;
    match kind {
        NoteKind::Decision => {
            // A decision shows the options and the choice; a heading or a plan does not.
            if !has_options(&content) || prose < 80 {
                score -= 0.3;
            }
            if REASONS.iter().any(|w| body.contains(w)) {
                score += 0.2;
            }
        }
        NoteKind::Pivot => {
            // A change of approach teaches through why the first one failed.
            if sentences(&n.text).iter().any(|s| is_reason(s)) {
                score += 0.1;
            } else {
                score -= 0.35;
            }
        }
        NoteKind::Learning => {
            if is_how_to(&n.text) {
                score -= 0.35;
            }
            if is_explanation(&lesson) {
                score += 0.2;
            }
            if lesson.trim_end().ends_with(':') {
                score -= 0.2;
            }
        }
    }
    // "Key design decision: ..." needs no "Decision: " in front.
    let lead = head.chars().take(40).collect::<String>().to_lowercase();
    let title = if lead.contains(&prefix.to_lowercase()) {
        head
    } else {
        format!("{prefix}: {head}")
    };
    // What happened: the reason given, else the note's own first sentence.
    let observation = sentences(&content)
        .into_iter()
        .find(|s| is_reason(s))
        .map(|s| clip_chars(&s, 300))
        .unwrap_or_else(|| first_sentence(&n.text));
    // A change of approach is learnt through its reason: "why -> what instead".
    let lesson = match (kind, &observation) {
        (NoteKind::Pivot, why) if is_reason(why) && !why.contains(lesson.as_str()) => {
            format!("{} -> {}", why.trim_end_matches('.'), lesson)
        }
        _ => lesson,
    };
    Some(Draft {
        kind: snippet_kind,
        title,
        observation,
        lesson: clip_chars(lesson.trim(), 600),
        content,
        lines: (start, n.line),
        score: score.clamp(0.0, 1.0),
    })
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
    fn long_commands_are_clipped() {
        let cmd = "git commit -m \"$(cat <<'EOF'\nline 1\nline 2\nline 3\nline 4\nEOF\n)\"";
        assert_eq!(
            clip_command(cmd),
            "git commit -m \"$(cat <<'EOF'\nline 1\nline 2\nline 3\n…"
        );
        assert_eq!(clip_command(&"x".repeat(500)).chars().count(), 400);
        assert_eq!(clip_command("cargo build"), "cargo build");
    }

    #[test]
    fn options_how_tos_and_lead_ins() {
        assert!(has_options(
            "1. Copy files\n2. Use rewrites\nI think option 1 is cleanest."
        ));
        assert!(has_options(
            "Shell out to the CLI rather than adding the SDK."
        ));
        assert!(!has_options("## Possible Approaches"));
        assert!(is_how_to("```\ncd \"S:\\repo\"\nnpm run build\n```"));
        assert!(!is_how_to("The root cause was a stale cache key."));
        assert_eq!(
            lesson_sentence(
                "**Key insight:**",
                "**Key insight:**\nEach checkpoint saves the full state of modified files."
            ),
            "Each checkpoint saves the full state of modified files."
        );
    }
}
