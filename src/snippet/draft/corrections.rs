//! `learning_pattern` drafts of the user's corrections: a denial with the reason typed, a
//! redirect after an interruption, a prompt that corrects, a correction the assistant
//! acknowledged; scored by how clearly the answer shows it was one (see [`super`]).

use super::candidate::{first_sentence, shares_word, Draft};
use crate::episode::{Label, Open};
use crate::snippet::{title_from, SnippetType};
use crate::text::clip_chars;
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
fn acknowledged(open: &Open, s: &crate::episode::Signal) -> Option<Draft> {
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
        .filter(|x| {
            !crate::episode::fix::is_announcement(x) && !x.to_lowercase().starts_with("step ")
        })
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    let mut score: f64 = 0.45;
    if crate::text::word_count(&conceded) < 6
        || crate::episode::fix::is_announcement(&conceded)
        || crate::text::word_count(words) < 3
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
