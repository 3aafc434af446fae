//! Episode settings and the phrase matchers of triage, compiled once from the configuration.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

/// How episodes are cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Compaction, idle gap, or a change of subject.
    Topic,
    /// Every `window_turns` turns (plus compaction and idle gaps).
    Window,
}

/// Episode and triage settings (`[episodes]` and `[triage]` in the config file).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Build episodes and snippets at all (off: ingestion stores messages, feedback and
    /// summaries only).
    pub enabled: bool,
    /// Cutting mode.
    pub mode: Mode,
    /// A prompt after this much silence starts a new episode (milliseconds).
    pub idle_gap_ms: i64,
    /// Topic mode: a prompt whose words are found in the current episode less than this
    /// fraction starts a new episode.
    pub topic_threshold: f64,
    /// Topic mode: prompts with fewer distinct content words never cut ("fix it", "go on").
    pub min_prompt_terms: usize,
    /// Window mode: turns per episode.
    pub window_turns: usize,
    /// Prompt phrases that correct the assistant.
    pub correction_phrases: Vec<String>,
    /// Assistant phrases that abandon an approach.
    pub pivot_phrases: Vec<String>,
    /// Assistant phrases that weigh alternatives.
    pub decision_phrases: Vec<String>,
    /// Assistant phrases that state a lesson.
    pub learning_phrases: Vec<String>,
    /// Words that make a sentence a choice; phrases written `~phrase` count only in a
    /// sentence holding one ("X rather than Y" describes, "I'll use X rather than Y" decides).
    pub choice_words: Vec<String>,
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

impl Default for Settings {
    /// The values of the embedded `config/gleaner.toml`.
    fn default() -> Self {
        Settings {
            enabled: true,
            mode: Mode::Topic,
            idle_gap_ms: 30 * 60 * 1000,
            topic_threshold: 0.2,
            min_prompt_terms: 4,
            window_turns: 5,
            correction_phrases: strings(DEFAULT_CORRECTION),
            pivot_phrases: strings(DEFAULT_PIVOT),
            decision_phrases: strings(DEFAULT_DECISION),
            learning_phrases: strings(DEFAULT_LEARNING),
            choice_words: strings(DEFAULT_CHOICE),
        }
    }
}

/// Default `triage.correction_phrases`. A leading `^` means "only at the start of a clause":
/// "No, keep it" and "ok, don't" correct, while "columns No. 1", "a $1 hard stop", "we don't
/// log it" and "it never actually worked" describe (see [`Phrases::hits`]).
pub const DEFAULT_CORRECTION: &[&str] = &[
    "^no,",
    "^no.",
    "^nope",
    "^don't",
    "^do not",
    "instead",
    "that's wrong",
    "that is wrong",
    "that's not",
    "^actually",
    "why did you",
    "you shouldn't",
    "not what i",
    "^stop",
    "wrong",
];
/// Default `triage.pivot_phrases`.
pub const DEFAULT_PIVOT: &[&str] = &[
    "different approach",
    "another approach",
    "try a different",
    "instead, i'll",
    "instead, let me",
    "let me try another",
    "let's try another",
    "this approach won't work",
    "this approach doesn't work",
    "that approach",
    "abandon",
    "revert my",
    "revert the change",
    "let me revert",
    "i'll revert",
    "back out",
    "start over",
];
/// Default `triage.decision_phrases`. A leading `~` means "only in a sentence that makes a
/// choice" (holds one of `triage.choice_words`): "names rather than IDs" describes, "I'll shell
/// out to the CLI rather than add the SDK" decides. Options laid out ("Option 1 ... Option 2")
/// are alternatives weighed even when the user is left to pick.
pub const DEFAULT_DECISION: &[&str] = &[
    "trade-off",
    "tradeoff",
    "option a",
    "option b",
    "option 1",
    "option 2",
    "i'll go with",
    "i will go with",
    "let's go with",
    "~rather than",
    "decided to",
    "pros and cons",
    "~the alternative",
    "~alternatives",
    "i chose",
    "i'm choosing",
    "the better choice",
];
/// Default `triage.choice_words`: what turns a sentence naming alternatives into a choice.
pub const DEFAULT_CHOICE: &[&str] = &[
    "i'll",
    "i will",
    "we'll",
    "we will",
    "let's",
    "let me",
    "i'd",
    "we'd",
    "go with",
    "going with",
    "decide",
    "decided",
    "decision",
    "choose",
    "chose",
    "chosen",
    "prefer",
    "recommend",
    "opt for",
    "pick",
    "better",
    "because",
    "so that",
    "simpler",
    "safer",
];
/// Default `triage.learning_phrases`.
pub const DEFAULT_LEARNING: &[&str] = &[
    "the root cause was",
    "root cause:",
    "the root cause is",
    "lesson",
    "key insight",
    "next time",
    "note to self",
    "takeaway",
    "the real problem was",
    "the issue was that",
];

/// Phrase matchers compiled once from [`Settings`].
#[derive(Debug, Clone)]
pub struct Rules {
    /// The settings they come from.
    pub settings: Settings,
    pub(super) correction: Phrases,
    pub(super) pivot: Phrases,
    pub(super) decision: Phrases,
    pub(super) learning: Phrases,
    pub(super) choice: Phrases,
}

/// Case-insensitive phrases matched at word boundaries; those written with a leading `^` only
/// at the start of a clause; those written with a leading `~` are flagged (the caller checks
/// their sentence for a choice word).
#[derive(Debug, Clone)]
pub(super) struct Phrases {
    list: Vec<String>,
    /// Per phrase: must it open a clause?
    clause_initial: Vec<bool>,
    /// Per phrase: does it need a choice word in its sentence?
    needs_choice: Vec<bool>,
    ac: Option<AhoCorasick>,
}

/// Words that may stand between a clause boundary and a clause-initial phrase ("ok, please
/// don't", "hmm no, ..."): fillers and politeness, not content.
const LEAD_INS: &[&str] = &[
    "and", "but", "so", "oh", "ok", "okay", "uh", "um", "hmm", "wait", "please", "hey", "no",
    "nah", "well", "yeah", "yes", "sorry", "again", "then", "just",
];

/// Whether byte `at` of `text` opens a clause: only lead-in words (at most two) stand between
/// it and the start of the text or a clause boundary (`. ! ? , ; :`, a dash, a bracket, a
/// line break). A hyphen is no boundary ("top-level").
fn opens_clause(text: &str, at: usize) -> bool {
    let before = &text[..at];
    let boundary = before
        .rfind(|c: char| ".!?,;:\n()[]—–".contains(c))
        .map_or(0, |i| {
            i + before[i..].chars().next().map_or(1, char::len_utf8)
        });
    let words: Vec<&str> = before[boundary..].split_whitespace().collect();
    words.len() <= 2
        && words.iter().all(|w| {
            let w = w
                .trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase();
            w.is_empty() || LEAD_INS.contains(&w.as_str())
        })
}

/// A phrase found in a text: which, and where (byte offsets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Hit {
    pub(super) phrase: String,
    pub(super) start: usize,
    pub(super) end: usize,
    /// Written `~phrase`: counts only in a sentence that makes a choice.
    pub(super) needs_choice: bool,
}

impl Phrases {
    fn new(list: &[String]) -> Result<Phrases, String> {
        let mut phrases = Vec::new();
        let (mut clause_initial, mut needs_choice) = (Vec::new(), Vec::new());
        for p in list {
            let p = p.trim();
            let (initial, p) = match p.strip_prefix('^') {
                Some(rest) => (true, rest.trim()),
                None => (false, p),
            };
            let (choice, p) = match p.strip_prefix('~') {
                Some(rest) => (true, rest.trim()),
                None => (false, p),
            };
            if p.is_empty() {
                continue;
            }
            phrases.push(p.to_lowercase());
            clause_initial.push(initial);
            needs_choice.push(choice);
        }
        let list = phrases;
        if list.is_empty() {
            return Ok(Phrases {
                list,
                clause_initial,
                needs_choice,
                ac: None,
            });
        }
        let ac = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostLongest)
            .build(&list)
            .map_err(|e| e.to_string())?;
        Ok(Phrases {
            list,
            clause_initial,
            needs_choice,
            ac: Some(ac),
        })
    }

    /// Matches whose ends fall on word boundaries (so "no," does not match "piano, "), and
    /// that open a clause where the phrase asks for it.
    pub(super) fn hits(&self, text: &str, max: usize) -> Vec<Hit> {
        let Some(ac) = &self.ac else {
            return Vec::new();
        };
        let bytes = text.as_bytes();
        let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        let mut out = Vec::new();
        for m in ac.find_iter(text) {
            let i = m.pattern().as_usize();
            let p = &self.list[i];
            let pb = p.as_bytes();
            let left_ok = m.start() == 0
                || !pb.first().copied().is_some_and(is_word)
                || !is_word(bytes[m.start() - 1]);
            let right_ok = m.end() >= bytes.len()
                || !pb.last().copied().is_some_and(is_word)
                || !is_word(bytes[m.end()]);
            if left_ok && right_ok && (!self.clause_initial[i] || opens_clause(text, m.start())) {
                out.push(Hit {
                    phrase: p.clone(),
                    start: m.start(),
                    end: m.end(),
                    needs_choice: self.needs_choice[i],
                });
                if out.len() >= max {
                    break;
                }
            }
        }
        out
    }
}

impl Rules {
    /// Compile the phrase lists. The error names the list.
    pub fn new(settings: Settings) -> Result<Rules, String> {
        let build =
            |name: &str, l: &[String]| Phrases::new(l).map_err(|e| format!("triage.{name}: {e}"));
        Ok(Rules {
            correction: build("correction_phrases", &settings.correction_phrases)?,
            pivot: build("pivot_phrases", &settings.pivot_phrases)?,
            decision: build("decision_phrases", &settings.decision_phrases)?,
            learning: build("learning_phrases", &settings.learning_phrases)?,
            choice: build("choice_words", &settings.choice_words)?,
            settings,
        })
    }

    /// Rules with the default settings.
    pub fn defaults() -> Rules {
        match Rules::new(Settings::default()) {
            Ok(r) => r,
            // The defaults are literals that always compile.
            Err(_) => unreachable!("default phrase lists compile"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phrases(list: &[&str]) -> Phrases {
        Phrases::new(&strings(list)).unwrap()
    }

    #[test]
    fn clause_initial_phrases_need_a_clause_start() {
        let p = phrases(&["^no.", "^stop", "^don't", "instead"]);
        let found = |t: &str| {
            p.hits(t, 4)
                .into_iter()
                .map(|h| h.phrase)
                .collect::<Vec<_>>()
        };
        assert_eq!(found("No. Use the other file"), ["no."]);
        assert_eq!(found("ok. uh. no. the ci checks main"), ["no."]);
        assert_eq!(found("ok, please don't touch the lock"), ["don't"]);
        assert_eq!(found("it works.\nStop changing the tests"), ["stop"]);
        assert!(found("columns order is No. Opportunity, Stage").is_empty());
        assert!(found("max_cost: 1.00  # $1 hard stop").is_empty());
        assert!(found("in that case we don't report anything").is_empty());
        // Without `^` a phrase counts anywhere.
        assert_eq!(found("replace them with one link instead?"), ["instead"]);
    }

    #[test]
    fn tilde_flags_phrases_that_need_a_choice() {
        let p = phrases(&["~rather than", "trade-off"]);
        let hits = p.hits("names rather than IDs; a trade-off", 4);
        assert_eq!(
            hits.iter()
                .map(|h| (h.phrase.as_str(), h.needs_choice))
                .collect::<Vec<_>>(),
            [("rather than", true), ("trade-off", false)]
        );
    }

    #[test]
    fn caret_is_not_part_of_the_phrase() {
        let p = phrases(&["  ^Actually "]);
        assert_eq!(p.hits("Actually, revert it", 1)[0].phrase, "actually");
    }
}
