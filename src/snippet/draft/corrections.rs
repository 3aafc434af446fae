//! `learning_pattern` drafts of the user's corrections: a denial with the reason typed, a
//! redirect after an interruption, a prompt that corrects, a correction the assistant
//! acknowledged; scored by how clearly the answer shows it was one (see [`super`]).
//!
//! A correction is kept only when the session states its lesson, and the title is that
//! lesson: the user's words when they state a rule ("Use the md-card like the other views"),
//! else what the assistant conceded in its answer ("If the repository cannot be opened there,
//! do not go on with an empty `baseCommit`"). A quote that states neither ("no when i sign out
//! it closes the session") tells a later reader nothing they can act on, and pasted output is
//! never the user's words.

use super::candidate::{first_sentence, shares_word, Draft};
use super::wording::{as_title, rule_title};
use crate::episode::{Label, Open};
use crate::snippet::{title_from, SnippetType};
use crate::text::clip_chars;
use crate::text::rule::{looks_pasted, states_a_rule, typed_words};
use crate::text::sentence::sentences;

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
pub(super) fn corrections(open: &Open) -> Vec<Draft> {
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
            if looks_pasted(words) {
                return None;
            }
            let words = typed_words(words);
            // The lesson: the rule the user stated, else what the assistant conceded.
            let rule = states_a_rule(words);
            let title = if rule {
                rule_title(words, open)
            } else {
                as_title(&conceded(follow)?, open)
            };
            if opens_with_a_reference(&title) {
                return None;
            }
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
            if question || crate::text::word_count(words) < 2 {
                score -= 0.3;
            }
            if !denial && crate::text::word_count(words) >= 8 {
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
            let (observation, lesson) = if denial {
                (
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
                    format!(
                        "The user corrected the assistant: \"{quoted}\"; the assistant then: {}",
                        first_sentence(follow)
                    ),
                    if rule {
                        format!(
                            "When {}, keep to the user's correction: \"{quoted}\"",
                            super::wording::trigger(open, None, Some(words))
                        )
                    } else {
                        format!(
                            "When {}, mind what the user pointed out: {title}",
                            super::wording::trigger(open, None, Some(words))
                        )
                    },
                )
            };
            Some(Draft {
                kind: SnippetType::LearningPattern,
                title: title_from(&title),
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
fn acknowledged(open: &Open, s: &crate::episode::Signal) -> Option<Draft> {
    let (pl, prompt) = s.followup.as_ref()?;
    if looks_pasted(prompt) {
        return None;
    }
    let words = typed_words(prompt);
    // What the assistant conceded is the lesson; without it there is none.
    let conceded = after_concession(&s.text);
    if !states_a_lesson(&conceded) {
        return None;
    }
    let title = as_title(&conceded, open);
    if opens_with_a_reference(&title) {
        return None;
    }
    let mut score: f64 = 0.45;
    if crate::text::word_count(words) < 3 {
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
        title,
        observation,
        lesson: format!("{lesson}."),
        content,
        lines: (*pl, s.line),
        score: score.clamp(0.0, 1.0),
    })
}

/// What an answer concedes after its opening ("You're right - if we can't open the repository
/// there, we shouldn't silently continue."): its first two statements after the concession,
/// without the steps it announces next ("Let me fix that.").
fn after_concession(text: &str) -> String {
    let rest = text
        .split_once(['!', '.', '-', '—', ','])
        .map_or("", |(_, rest)| rest)
        .replace("**", "");
    sentences(rest.trim_start_matches(['!', '.', '-', '—', ',', ' ']))
        .into_iter()
        .filter(|x| {
            !crate::episode::fix::is_announcement(x) && !x.to_lowercase().starts_with("step ")
        })
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The lesson an answer states when it opens by taking a correction on board ("Got it - the
/// config lives in `~/.config`, not the repository."): what it concedes, as a title, when that
/// says something (six words or more, not an announcement); else `None`.
fn conceded(answer: &str) -> Option<String> {
    let lower = answer.trim_start().to_lowercase();
    if !ACKNOWLEDGED.iter().any(|a| lower.starts_with(a)) {
        return None;
    }
    let said = after_concession(answer.trim_start());
    states_a_lesson(&said).then_some(said)
}

/// Whether what an answer conceded states a lesson as a title: six words or more, not an
/// announcement of the next step, and about the work rather than the assistant ("I can see
/// the library sets inline styles", "I can check the filter states directly" say what it saw
/// or will do; the readers of the held-out snippets found them marginal at best).
fn states_a_lesson(said: &str) -> bool {
    let point = title_from(super::wording::without_lead(said));
    let first = point.split_whitespace().next().unwrap_or("");
    crate::text::word_count(&point) >= 6
        && !crate::episode::fix::is_announcement(said)
        && !matches!(
            first,
            "I" | "I'm" | "I've" | "I'll" | "I'd" | "I’m" | "I’ve" | "I’ll"
        )
}

/// Whether a title opens with a word that points back at something it does not name ("It
/// should also check ...", "This breaks ..."): read later, away from its session, it says
/// nothing a reader can place.
fn opens_with_a_reference(title: &str) -> bool {
    let first = title
        .split_whitespace()
        .next()
        .unwrap_or("")
        .trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
        .to_lowercase()
        .replace('\u{2019}', "'");
    matches!(
        first.as_str(),
        "it" | "it's" | "its" | "this" | "that" | "these" | "those" | "they" | "them" | "there"
    )
}
