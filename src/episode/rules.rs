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
    /// Openings of the assistant's first reply in a turn that take a correction on board
    /// ("You're right", "Good catch").
    pub acknowledgement_phrases: Vec<String>,
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

/// Why settings or phrase lists are unusable. Names the configuration key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RulesError {
    /// A value is out of range, or a phrase list does not compile.
    #[error("invalid config value for `{key}`: {message}")]
    Invalid {
        /// The dotted key (`episodes.mode`, `triage.pivot_phrases`, ...).
        key: String,
        /// What is wrong with it.
        message: String,
    },
    /// The embedded default configuration does not hold valid `[episodes]` / `[triage]`
    /// tables (a build defect, caught by the unit tests).
    #[error("embedded default configuration: {0}")]
    Defaults(String),
}

fn invalid(key: &str, message: String) -> RulesError {
    RulesError::Invalid {
        key: key.into(),
        message,
    }
}

/// `[episodes]` as written in the configuration.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct EpisodesTable {
    enabled: bool,
    mode: String,
    idle_gap_mins: u64,
    topic_threshold: f64,
    min_prompt_terms: u64,
    window_turns: u64,
}

/// `[triage]` as written in the configuration.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct TriageTable {
    correction_phrases: Vec<String>,
    acknowledgement_phrases: Vec<String>,
    pivot_phrases: Vec<String>,
    decision_phrases: Vec<String>,
    learning_phrases: Vec<String>,
    choice_words: Vec<String>,
}

impl Settings {
    /// Validate the two tables of the configuration. The one conversion: the configuration
    /// loader and [`Settings::defaults`] both come through here.
    pub fn from_tables(e: EpisodesTable, t: TriageTable) -> Result<Settings, RulesError> {
        let mode = match e.mode.trim().to_ascii_lowercase().as_str() {
            "topic" => Mode::Topic,
            "window" => Mode::Window,
            other => {
                return Err(invalid(
                    "episodes.mode",
                    format!("expected \"topic\" or \"window\", got {other:?}"),
                ))
            }
        };
        if !(0.0..=1.0).contains(&e.topic_threshold) {
            return Err(invalid(
                "episodes.topic_threshold",
                format!("must be between 0 and 1, got {}", e.topic_threshold),
            ));
        }
        let at_least_one = |key: &str, v: u64| {
            if v == 0 {
                Err(invalid(key, "must be at least 1, got 0".into()))
            } else {
                Ok(v)
            }
        };
        let to_usize = |key: &str, v: u64| {
            usize::try_from(v).map_err(|_| invalid(key, format!("{v} is too large")))
        };
        let idle_gap_mins = at_least_one("episodes.idle_gap_mins", e.idle_gap_mins)?;
        let window_turns = at_least_one("episodes.window_turns", e.window_turns)?;
        Ok(Settings {
            enabled: e.enabled,
            mode,
            idle_gap_ms: i64::try_from(idle_gap_mins)
                .unwrap_or(i64::MAX / 60_000)
                .saturating_mul(60_000),
            topic_threshold: e.topic_threshold,
            min_prompt_terms: to_usize("episodes.min_prompt_terms", e.min_prompt_terms)?,
            window_turns: to_usize("episodes.window_turns", window_turns)?,
            correction_phrases: t.correction_phrases,
            acknowledgement_phrases: t.acknowledgement_phrases,
            pivot_phrases: t.pivot_phrases,
            decision_phrases: t.decision_phrases,
            learning_phrases: t.learning_phrases,
            choice_words: t.choice_words,
        })
    }

    /// The settings of the embedded `config/gleaner.toml`, the one source of the phrase lists
    /// (for tests and benchmarks that need rules without loading a configuration).
    pub fn defaults() -> Result<Settings, RulesError> {
        #[derive(serde::Deserialize)]
        struct Tables {
            episodes: EpisodesTable,
            triage: TriageTable,
        }
        let t: Tables = toml::from_str(crate::DEFAULT_CONFIG_TOML)
            .map_err(|e| RulesError::Defaults(e.to_string()))?;
        Settings::from_tables(t.episodes, t.triage)
    }
}

/// Phrase matchers compiled once from [`Settings`].
#[derive(Debug, Clone)]
pub struct Rules {
    /// The settings they come from.
    pub settings: Settings,
    pub(super) correction: Phrases,
    pub(super) acknowledgement: Phrases,
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
    fn new(list: &[String]) -> Result<Phrases, aho_corasick::BuildError> {
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
            .build(&list)?;
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
    pub fn new(settings: Settings) -> Result<Rules, RulesError> {
        let build = |name: &str, l: &[String]| {
            Phrases::new(l).map_err(|e| invalid(&format!("triage.{name}"), e.to_string()))
        };
        Ok(Rules {
            correction: build("correction_phrases", &settings.correction_phrases)?,
            acknowledgement: build("acknowledgement_phrases", &settings.acknowledgement_phrases)?,
            pivot: build("pivot_phrases", &settings.pivot_phrases)?,
            decision: build("decision_phrases", &settings.decision_phrases)?,
            learning: build("learning_phrases", &settings.learning_phrases)?,
            choice: build("choice_words", &settings.choice_words)?,
            settings,
        })
    }

    /// Rules with the settings of the embedded default configuration.
    pub fn defaults() -> Result<Rules, RulesError> {
        Rules::new(Settings::defaults()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phrases(list: &[&str]) -> Phrases {
        let list: Vec<String> = list.iter().map(|s| s.to_string()).collect();
        Phrases::new(&list).unwrap()
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
