//! `decision_rationale` and lesson drafts from the notes the builder kept (a paragraph holding
//! a pivot, decision or lesson phrase), scored: a decision needs options and a reason, a change
//! of approach its reason, a lesson prose rather than a how-to (see [`super`]).

use super::candidate::{first_sentence, Draft};
use crate::episode::fix::{is_explanation, is_reason};
use crate::episode::{NoteKind, Open, OPTIONS};
use crate::snippet::{title_from, SnippetType};
use crate::text::sentence::sentences;
use crate::text::{clip_chars, truncate_bytes};

/// Words that give a decision its reason.
const REASONS: &[&str] = &[
    "because",
    "since ",
    "so that",
    "simpler",
    "cleaner",
    "faster",
    "safer",
    "avoids",
    "avoid ",
    "cheaper",
    "more robust",
    "easier",
];

/// Words that describe a choice without saying why ("keeps", "without", "trade-off"): they
/// count for a decision note's score beside [`REASONS`], never as its title's reason.
const TRAITS: &[&str] = &["tradeoff", "trade-off", "keeps", "without"];

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
    let words = crate::text::word_count(s);
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

/// Whether a lesson only reports that its cause was dealt with ("the root cause is now fixed",
/// "the issue has been resolved") without saying what the cause was.
fn only_says_fixed(sentence: &str) -> bool {
    let l = sentence.to_lowercase();
    ["root cause", "the issue", "the problem", "the bug"]
        .iter()
        .any(|subject| {
            l.match_indices(subject).any(|(i, _)| {
                let rest = l[i + subject.len()..].trim_start();
                let rest = [
                    "is now ",
                    "was now ",
                    "has now been ",
                    "has been ",
                    "is ",
                    "was ",
                ]
                .iter()
                .find_map(|v| rest.strip_prefix(v))
                .unwrap_or("");
                [
                    "fixed",
                    "addressed",
                    "resolved",
                    "gone",
                    "handled",
                    "solved",
                ]
                .iter()
                .any(|w| rest.starts_with(w))
            })
        })
}

/// Whether a sentence announces the next thing to try rather than concluding.
fn is_trial(sentence: &str) -> bool {
    let lower = sentence
        .trim()
        .trim_start_matches(['*', '-', ' '])
        .to_lowercase();
    [
        "let me ",
        "let's ",
        "i'll ",
        "i will ",
        "now let me ",
        "now i'll ",
        "we could ",
    ]
    .iter()
    .any(|o| lower.starts_with(o))
}

/// A choice named only by its label ("I think option 1 is cleanest") with the option it
/// names, from the numbered or lettered list of `text` ("... (option 1: Copy files during
/// build)").
fn name_option(lesson: &str, text: &str) -> String {
    let lower = lesson.to_lowercase();
    let Some(at) = lower.find("option ") else {
        return lesson.to_string();
    };
    let label: String = lower[at + 7..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    if label.is_empty() || label.len() > 2 {
        return lesson.to_string();
    }
    let item = text.lines().map(str::trim).find_map(|l| {
        let l = l.trim_start_matches(['-', '*', '#', ' ']).replace("**", "");
        let ll = l.to_lowercase();
        let rest = ll
            .strip_prefix(&format!("option {label}"))
            .or_else(|| ll.strip_prefix(&label))?;
        // "1." or "1)" or "Option 1:", not "10 items".
        if !rest.starts_with([')', '.', ':', ' ', '-', '—']) {
            return None;
        }
        let rest = rest.trim_start_matches([')', '.', ':', ' ', '-', '—']);
        if rest.is_empty() {
            return None;
        }
        // Lower case may change a text's byte length: take the item's end from `l` safely.
        l.get(l.len().saturating_sub(rest.len())..)
            .map(|x| x.trim().to_string())
    });
    match item {
        Some(item) => {
            let item = item.split([':', '—']).next().unwrap_or(&item);
            let item = item
                .split(" - ")
                .next()
                .unwrap_or(item)
                .trim()
                .trim_end_matches(['-', ' ']);
            let label = &lesson[at..at + 7 + label.len()];
            format!(
                "{} ({label}: {})",
                lesson.trim_end_matches(['.', ':']),
                clip_chars(item, 120)
            )
        }
        None => lesson.to_string(),
    }
}

pub(super) fn note_draft(open: &Open, kind: NoteKind) -> Option<Draft> {
    // Laid-out options have their own draft (`options`).
    let n = open
        .notes
        .iter()
        .find(|n| n.kind == kind && n.phrase != OPTIONS)?;
    if kind == NoteKind::Decision && super::candidate::undone(open, n.line) {
        return None;
    }
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
    let mut lesson = lesson_sentence(&n.sentence, &n.text);
    if kind == NoteKind::Decision {
        lesson = name_option(&lesson, &content);
    }
    let mut head = title_from(&lesson);
    let words = |t: &str| t.chars().filter(|c| c.is_alphanumeric()).count();
    if words(&head) < 10 {
        head = title_from(&n.text);
    }
    if words(&head) < 10 {
        // No sentence to name it by: not readable on its own.
        return None;
    }
    // A decision is kept with its reason in the title ("leave them separate since the
    // consolidation would add complexity"); "The cleanest fix is to use --create-only" says
    // what, not why, and a reader cannot weigh it.
    if kind == NoteKind::Decision && !has_reason(&head) {
        // The note's sentence that gives the reason ("I'll go with SQLite by default, because
        // most users run one machine") names the decision with it.
        let why = sentences(&n.text)
            .into_iter()
            .find(|s| has_reason(s) && crate::text::word_count(s) >= 6)?;
        head = super::wording::as_title(&why, open);
    }
    // A change of approach is titled by why the first one failed ("relative paths resolve
    // from the config file's folder"), not by the announcement ("I need a different
    // approach.").
    if kind == NoteKind::Pivot {
        if let Some(why) = sentences(&n.text).into_iter().find(|s| is_reason(s)) {
            head = super::wording::as_title(&why, open);
        }
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
            if REASONS.iter().chain(TRAITS).any(|w| body.contains(w)) {
                score += 0.2;
            }
        }
        NoteKind::Pivot => {
            // A change of approach teaches through why the first one failed; one announced
            // as the next thing to try ("Let me try a different approach - using the force
            // reinstall flag") is a guess unless it says why the first one failed ("because").
            if sentences(&n.text).iter().any(|s| is_reason(s)) {
                score += 0.1;
            } else {
                score -= 0.35;
            }
            let because = sentences(&n.text).iter().any(|s| {
                let l = s.to_lowercase();
                is_reason(s)
                    && ["because", " since ", "due to"]
                        .iter()
                        .any(|w| l.contains(w))
            });
            if is_trial(&n.sentence) && !because {
                score -= 0.1;
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
            // "... but the root cause is now fixed at the source" says the cause is gone, not
            // what it was.
            if only_says_fixed(&lesson) {
                score -= 0.35;
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
    // (Another sentence than the lesson's own: the two halves say different things.)
    let all = sentences(&content);
    let other = |s: &&String| !lesson.contains(s.trim_end_matches(['.', ':']));
    let observation = all
        .iter()
        .filter(other)
        .find(|s| is_reason(s))
        .or_else(|| all.iter().find(other))
        .map(|s| clip_chars(s, 300))
        .unwrap_or_else(|| first_sentence(&n.text));
    // A one-sentence decision: what was chosen is the observation, the choice with its reason
    // the lesson.
    let observation = match observation.to_lowercase().find(" because ") {
        Some(i) if observation.trim_end_matches('.') == lesson.trim_end_matches('.') => {
            // (Lower case may change byte lengths: cut safely.)
            match observation.get(..i) {
                Some(head) => format!("{}.", head.trim_end_matches([',', ' '])),
                None => observation,
            }
        }
        _ => observation,
    };
    // A change of approach is learnt through its reason: "why -> what instead"; a lesson
    // through when it applies.
    let (observation, lesson) = match (kind, observation) {
        (NoteKind::Pivot, why) if is_reason(&why) && !why.contains(lesson.as_str()) => {
            let l = format!("{} -> {}", why.trim_end_matches('.'), lesson);
            (why, l)
        }
        (NoteKind::Learning, _) => {
            let l = format!(
                "When {}, look for the same cause first: {lesson}",
                super::wording::trigger(open, Some(&lesson), None)
            );
            (lesson, l)
        }
        (_, o) => (o, lesson),
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

/// Whether a title gives a reason: a causal word of the episode's rules (`fix::is_explanation`)
/// or a reason word of a decision (see [`REASONS`]).
fn has_reason(title: &str) -> bool {
    let l = title.to_lowercase();
    is_explanation(title) || REASONS.iter().any(|w| l.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let text = "1. **Copy files during build** - no submodule\n2. **Use rewrites** - proxy\n\nI think option 1 is cleanest.";
        assert_eq!(
            name_option("I think option 1 is cleanest.", text),
            "I think option 1 is cleanest (option 1: Copy files during build)"
        );
        assert_eq!(name_option("No option here.", text), "No option here.");
        assert!(is_trial(
            "Let me try a different approach - using the force reinstall flag"
        ));
        assert!(!is_trial(
            "Switching to SQLite because the server is not always there."
        ));
        assert!(only_says_fixed(
            "The fallbacks stay useful, but the root cause is now fixed at the source."
        ));
        assert!(!only_says_fixed(
            "The root cause was a cache key that ignored the version."
        ));
        assert_eq!(
            lesson_sentence(
                "**Key insight:**",
                "**Key insight:**\nEach checkpoint saves the full state of modified files."
            ),
            "Each checkpoint saves the full state of modified files."
        );
    }
}
