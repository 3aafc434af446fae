//! The shape every draft shares, and the text tests drafts use: a text's first sentence, the
//! words two texts share.
//!
//! Why a file of its own: each kind of draft (`recovery`, `corrections`, `notes`, `options`)
//! builds a [`Draft`], and `wording` and the drafts test texts for the words they share; kept
//! in `mod.rs`, which calls every draft, they would make each draft import the file that
//! imports it. This file imports no other file of `snippet/draft/`.

use std::collections::BTreeSet;

use crate::episode::{Label, Open};
use crate::snippet::SnippetType;
use crate::text::clip_chars;
use crate::text::sentence::sentences;

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

/// The first sentence of `text` (its first line when there is no sentence end), clipped.
pub(super) fn first_sentence(text: &str) -> String {
    sentences(text)
        .into_iter()
        .next()
        .map(|s| clip_chars(&s, 300))
        .unwrap_or_default()
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

/// Whether a decision made at `line` was undone later in the episode: a change of approach
/// (a pivot phrase, changes thrown away with `git checkout --`, `git reset --hard` ...) came
/// after it. A decision the session went back on is not a lesson to keep.
pub(super) fn undone(open: &Open, line: u64) -> bool {
    open.signals
        .iter()
        .any(|s| s.line > line && s.label == Label::Pivot)
}
