//! What a turn is judged by: the facts gathered while it is read ([`Facts`]) and the named
//! features made of them at its end ([`features`]).
//!
//! Features are names (`p:still`, `a2:rather than`, `s:tool_denial`), not hashed buckets: the
//! weight file stays readable, and a label can say which words decided it. Word features are
//! kept in the facts only when the model weighs them (or while training collects every one),
//! so a turn's stored state holds a few dozen words, not its whole text.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::extract::lexemes::words;

/// Bytes of a prompt read for words: a correction says so in its opening.
pub const PROMPT_BYTES: usize = 600;
/// Bytes of the assistant's first reply read for words ("You're right", "The error is").
pub const REPLY_BYTES: usize = 300;
/// Bytes of each later assistant text read for words, and of all its texts in a turn.
pub const TEXT_BYTES: usize = 1_000;
/// See [`TEXT_BYTES`].
pub const TURN_TEXT_BYTES: usize = 4_000;
/// Bytes of a failed tool result read for words ("not found", "permission denied").
pub const ERROR_BYTES: usize = 200;
/// Word features a turn keeps at most.
pub const MAX_WORDS: usize = 400;
/// Longest word taken (longer runs are hashes, ids and paths).
const MAX_WORD_CHARS: usize = 24;

/// What was seen in one turn, kept in the episode state between batches.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Facts {
    /// Tool calls the assistant made.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub calls: u32,
    /// Of which edits or writes of files.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub edits: u32,
    /// Tool results that failed (not denials or interruptions).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub errors: u32,
    /// Tool results that succeeded after the turn's first failure.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ok_after_error: u32,
    /// Assistant texts.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub texts: u32,
    /// Bytes of assistant text read for words so far (bounded by [`TURN_TEXT_BYTES`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub text_bytes: u32,
    /// Bytes of the prompt.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub prompt_bytes: u32,
    /// The assistant's last word before the prompt was a question to the user.
    #[serde(default, skip_serializing_if = "is_false")]
    pub after_question: bool,
    /// The previous turn was interrupted (by the user) before this prompt.
    #[serde(default, skip_serializing_if = "is_false")]
    pub after_interruption: bool,
    /// The assistant edited files in the previous turn.
    #[serde(default, skip_serializing_if = "is_false")]
    pub after_edits: bool,
    /// Line of the assistant's first text in the turn (0: none yet).
    #[serde(default, skip_serializing_if = "is_zero64")]
    pub reply_line: u64,
    /// Line of the turn's first failed tool result (0: none).
    #[serde(default, skip_serializing_if = "is_zero64")]
    pub error_line: u64,
    /// Nothing happened in the file before this prompt.
    #[serde(default, skip_serializing_if = "is_false")]
    pub first_of_file: bool,
    /// The prompt holds a pasted failure (an error line, a traceback).
    #[serde(default, skip_serializing_if = "is_false")]
    pub pasted_failure: bool,
    /// Word features seen (prompt, first reply, later texts), at most [`MAX_WORDS`].
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub words: BTreeSet<String>,
    /// Hashes of the words already in `words`: a common word met again is known without a
    /// string built or compared. Not stored (after a restart it fills again).
    #[serde(skip)]
    pub seen: Seen,
}

/// [`Facts::words`]' hashes; a cache, so equal to any other.
#[derive(Debug, Clone, Default)]
pub struct Seen(std::collections::HashSet<u64, std::hash::BuildHasherDefault<super::Prehashed>>);

impl PartialEq for Seen {
    fn eq(&self, _: &Seen) -> bool {
        true
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_zero64(n: &u64) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Where words come from, as the prefix of their features.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The prompt: `p:` words, `p2:` pairs, `p0:` its first word.
    Prompt,
    /// The assistant's first reply: `r:` words, `r2:` pairs.
    Reply,
    /// Any assistant text of the turn: `a:` words, `a2:` pairs.
    Text,
    /// A failed tool result's text (its first three): `e:` words, `e2:` pairs.
    Error,
}

impl Source {
    fn prefixes(self) -> (&'static str, &'static str) {
        match self {
            Source::Prompt => ("p:", "p2:"),
            Source::Reply => ("r:", "r2:"),
            Source::Text => ("a:", "a2:"),
            Source::Error => ("e:", "e2:"),
        }
    }
}

/// FNV-1a over the parts of a feature's name, as if they were one string: a word is checked
/// against the model by this hash before any string is made of it (most words are not weighed).
pub fn name_hash(parts: &[&str]) -> u64 {
    parts.iter().fold(FNV_START, |h, p| fnv_more(h, p))
}

/// FNV-1a's starting state.
const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a state `h` carried on over `s`: `name_hash` of parts is the state carried over each
/// in turn, so a prefix's state can be kept and carried on.
fn fnv_more(mut h: u64, s: &str) -> u64 {
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl Facts {
    /// Take the words of `text` (its first `limit` bytes) as features from `source`, those
    /// whose name's [`name_hash`] `keep` accepts. No string is built for a word not kept: this
    /// runs on every assistant text ingested.
    pub fn add_words(
        &mut self,
        source: Source,
        text: &str,
        limit: usize,
        keep: &dyn Fn(u64) -> bool,
    ) {
        let head = crate::text::head_bytes(text, limit);
        let (one, two) = source.prefixes();
        // Each word is hashed on from its prefixes' states, kept between words: a pair's hash
        // is the previous word's `two`-prefixed state carried on over this word.
        let (one_state, two_state) = (fnv_more(FNV_START, one), fnv_more(FNV_START, two));
        let p0_state = fnv_more(FNV_START, "p0:");
        let (mut cur, mut prev) = (String::with_capacity(32), String::with_capacity(32));
        let mut pair_state: Option<u64> = None;
        for (i, w) in words(head) {
            if self.full() {
                break;
            }
            let ascii = w.is_ascii();
            let chars = if ascii { w.len() } else { w.chars().count() };
            if w.len() > MAX_WORD_CHARS * 4 || chars > MAX_WORD_CHARS {
                pair_state = None;
                continue;
            }
            cur.clear();
            if ascii {
                cur.push_str(w);
                cur.make_ascii_lowercase();
            } else {
                for c in w.chars() {
                    cur.extend(c.to_lowercase());
                }
            }
            if i == 1 && source == Source::Prompt {
                self.keep_hashed(fnv_more(p0_state, &cur), &["p0:", &cur], keep);
            }
            self.keep_hashed(fnv_more(one_state, &cur), &[one, &cur], keep);
            if let Some(state) = pair_state {
                self.keep_hashed(fnv_more(state, &cur), &[two, &prev, " ", &cur], keep);
            }
            pair_state = Some(fnv_more(fnv_more(two_state, &cur), " "));
            std::mem::swap(&mut cur, &mut prev);
        }
    }

    /// Take one named feature (`t:Bash`, a tool used), if `keep` accepts it.
    pub fn add_feature(&mut self, parts: &[&str], keep: &dyn Fn(u64) -> bool) {
        self.keep(parts, keep);
    }

    /// Whether the turn holds its bound of words. Not while training collects every word: a
    /// turn then keeps all, so that the words the model comes to weigh are the very ones a
    /// turn keeps at inference, where only those are kept and the bound is never reached.
    fn full(&self) -> bool {
        self.words.len() >= MAX_WORDS && !super::is_collecting()
    }

    fn keep(&mut self, parts: &[&str], keep: &dyn Fn(u64) -> bool) {
        self.keep_hashed(name_hash(parts), parts, keep);
    }

    /// [`Facts::keep`] of a name whose [`name_hash`] is `h` already.
    fn keep_hashed(&mut self, h: u64, parts: &[&str], keep: &dyn Fn(u64) -> bool) {
        if self.seen.0.contains(&h) || self.full() || !keep(h) {
            return;
        }
        self.seen.0.insert(h);
        let name = parts.concat();
        if !self.words.contains(&name) {
            self.words.insert(name);
        }
    }
}

/// Bucket of a count: `0`, `1`, `2-3`, `4-9`, `10+`.
fn bucket(n: u32) -> &'static str {
    match n {
        0 => "0",
        1 => "1",
        2..=3 => "2-3",
        4..=9 => "4-9",
        _ => "10+",
    }
}

/// The rule signals of a turn as the model sees them: `(kind, label)`, `kind` being the
/// signal's name (`phrase:<p>` for a phrase).
pub struct RuleSignal<'s> {
    /// `tool_denial`, `phrase:instead`, `error_then_success`, ...
    pub kind: &'s str,
    /// The label the rule gives it.
    pub label: &'s str,
    /// The rule's weight.
    pub weight: f64,
}

/// The named features of a turn: a bias, its facts, its words, the rules' signals and the
/// label the rules alone would give it.
pub fn features(
    facts: &Facts,
    ordinal: i64,
    signals: &[RuleSignal<'_>],
    rule_label: &str,
) -> Vec<String> {
    let mut f = vec![
        "bias".to_string(),
        format!("calls:{}", bucket(facts.calls)),
        format!("edits:{}", bucket(facts.edits)),
        format!("errors:{}", bucket(facts.errors)),
        format!("texts:{}", bucket(facts.texts)),
        format!(
            "prompt:{}",
            match facts.prompt_bytes {
                0..=40 => "short",
                41..=200 => "medium",
                201..=1000 => "long",
                _ => "very_long",
            }
        ),
        format!(
            "turn:{}",
            match ordinal {
                ..=1 => "1",
                2..=3 => "2-3",
                4..=10 => "4-10",
                _ => "11+",
            }
        ),
        format!("rule:{rule_label}"),
    ];
    if facts.after_question {
        f.push("after_question".into());
    }
    if facts.after_interruption {
        f.push("after_interruption".into());
    }
    if facts.after_edits {
        f.push("after_edits".into());
    }
    if facts.first_of_file {
        f.push("first_of_file".into());
    }
    if facts.pasted_failure {
        f.push("pasted_failure".into());
    }
    if facts.errors > 0 && facts.calls > facts.errors {
        f.push("errors_then_more_calls".into());
    }
    if facts.errors > 0 {
        f.push(format!("ok_after_error:{}", bucket(facts.ok_after_error)));
    }
    for s in signals {
        f.push(format!("sl:{}", s.label));
        let kind = match s.kind.split_once(':') {
            Some(("phrase", p)) => {
                f.push(format!("s:phrase:{p}"));
                "phrase"
            }
            _ => s.kind,
        };
        f.push(format!("s:{kind}"));
        if s.weight >= 0.8 {
            f.push(format!("sl_strong:{}", s.label));
        }
    }
    f.extend(facts.words.iter().cloned());
    f.sort_unstable();
    f.dedup();
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_pairs_and_first_word_are_named_by_source() {
        let mut facts = Facts::default();
        facts.add_words(Source::Prompt, "No, use podman instead", 600, &|_| true);
        let pair = name_hash(&["a2:", "rather", " ", "than"]);
        for want in ["p0:no", "p:podman", "p2:podman instead", "p2:no use"] {
            assert!(facts.words.contains(want), "{want} in {:?}", facts.words);
        }
        assert_eq!(pair, name_hash(&["a2:rather than"]));
        facts.add_words(Source::Text, "Rather than Docker", 600, &|h| h == pair);
        assert!(facts.words.contains("a2:rather than"));
        assert!(!facts.words.contains("a:rather"));
    }

    #[test]
    fn a_turn_keeps_at_most_its_bound_of_words() {
        let mut facts = Facts::default();
        let text: String = (0..2_000).map(|i| format!("w{i} ")).collect();
        facts.add_words(Source::Text, &text, usize::MAX, &|_| true);
        assert_eq!(facts.words.len(), MAX_WORDS);
    }

    #[test]
    fn features_name_facts_signals_and_the_rules_label() {
        let facts = Facts {
            calls: 5,
            errors: 1,
            ..Facts::default()
        };
        let sig = [RuleSignal {
            kind: "phrase:instead",
            label: "user_correction",
            weight: 0.8,
        }];
        let f = features(&facts, 3, &sig, "user_correction");
        for want in [
            "bias",
            "calls:4-9",
            "errors:1",
            "errors_then_more_calls",
            "turn:2-3",
            "rule:user_correction",
            "s:phrase",
            "s:phrase:instead",
            "sl:user_correction",
            "sl_strong:user_correction",
        ] {
            assert!(f.contains(&want.to_string()), "{want} in {f:?}");
        }
    }
}
