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
        }
    }
}

/// Default `triage.correction_phrases`.
pub const DEFAULT_CORRECTION: &[&str] = &[
    "no,",
    "no.",
    "nope",
    "don't",
    "do not",
    "instead",
    "that's wrong",
    "that is wrong",
    "that's not",
    "actually",
    "why did you",
    "you shouldn't",
    "not what i",
    "stop",
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
/// Default `triage.decision_phrases`.
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
    "rather than",
    "decided to",
    "pros and cons",
    "the alternative",
    "alternatives",
    "i chose",
    "i'm choosing",
    "the better choice",
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
}

/// Case-insensitive phrases matched at word boundaries.
#[derive(Debug, Clone)]
pub(super) struct Phrases {
    list: Vec<String>,
    ac: Option<AhoCorasick>,
}

/// A phrase found in a text: which, and where (byte offsets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Hit {
    pub(super) phrase: String,
    pub(super) start: usize,
    pub(super) end: usize,
}

impl Phrases {
    fn new(list: &[String]) -> Result<Phrases, String> {
        let list: Vec<String> = list
            .iter()
            .map(|p| p.trim().to_lowercase())
            .filter(|p| !p.is_empty())
            .collect();
        if list.is_empty() {
            return Ok(Phrases { list, ac: None });
        }
        let ac = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostLongest)
            .build(&list)
            .map_err(|e| e.to_string())?;
        Ok(Phrases { list, ac: Some(ac) })
    }

    /// Matches whose ends fall on word boundaries (so "no," does not match "piano, ").
    pub(super) fn hits(&self, text: &str, max: usize) -> Vec<Hit> {
        let Some(ac) = &self.ac else {
            return Vec::new();
        };
        let bytes = text.as_bytes();
        let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        let mut out = Vec::new();
        for m in ac.find_iter(text) {
            let p = &self.list[m.pattern().as_usize()];
            let pb = p.as_bytes();
            let left_ok = m.start() == 0
                || !pb.first().copied().is_some_and(is_word)
                || !is_word(bytes[m.start() - 1]);
            let right_ok = m.end() >= bytes.len()
                || !pb.last().copied().is_some_and(is_word)
                || !is_word(bytes[m.end()]);
            if left_ok && right_ok {
                out.push(Hit {
                    phrase: p.clone(),
                    start: m.start(),
                    end: m.end(),
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
