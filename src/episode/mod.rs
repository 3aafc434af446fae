//! Cutting a session into turns and episodes and labelling each episode. Pure and synchronous:
//! records in, rows out. The snippets of an episode that closes are drafted by the [`Drafter`]
//! the caller passes in (`crate::snippet::draft`): drafting is the snippet module's concept,
//! and this stage names none of it (see `drafter.rs` for why).
//!
//! A **turn** is one human prompt (a feedback `message`, see [`crate::extract::feedback`]) and everything
//! until the next: assistant text, tool calls and their results, denials, interruptions, and the
//! sub-agents it started (linked by id, not inlined). An **episode** is a run of turns about one
//! task. In `topic` mode a new episode starts at the first prompt after a compaction boundary,
//! after an idle gap, or when a prompt shares too little with the current episode (its words and
//! the files it touched); in `window` mode every N turns.
//!
//! Why a serialisable [`Builder`]: transcripts are read in batches, across restarts. The builder
//! is the state between two batches (the open episode and what is needed to judge the next
//! line); it is stored as JSON with the file's checkpoint, in the same transaction as the rows,
//! so a restart resumes exactly where the committed rows stop and a crash replays the same
//! cuts. Everything it keeps is bounded (capped lists) and already redacted.
//!
//! Episodes tile their file's turns: an episode runs from its first prompt's line to the line
//! before the next episode's first prompt; the last one to the last line read. The last episode
//! of an active session is emitted as `open` with every batch and emitted `closed`, with its
//! snippets, when the next episode starts or the session finishes.

mod builder;
mod drafter;
pub(crate) mod fix;
mod open;
mod feed;
mod rules;
mod tags;
mod terms;
pub(crate) mod text;
mod tools;
mod triage;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

pub use builder::Input;
pub use drafter::{Closing, Drafter};
pub use feed::{feed, Feed, Last};
pub use rules::{EpisodesTable, Mode, Rules, RulesError, Settings, TriageTable};
pub use triage::{Label, Triage};

// Caps that keep the state (stored with every checkpoint) small whatever the session.
const MAX_VOCAB: usize = 2000;
const MAX_FILES: usize = 100;
const MAX_AGENTS: usize = 50;
const MAX_SIGNALS: usize = 24;
/// Signals kept per turn (the turn's label needs only its strongest few).
const MAX_TURN_SIGNALS: usize = 8;
/// Evidence items stored per turn label.
const TURN_EVIDENCE: usize = 3;
/// Turn labels kept per episode; past it, routine turns are no longer listed.
const MAX_TURN_LABELS: usize = 300;
const MAX_FAILURES: usize = 8;
const MAX_RECOVERIES: usize = 4;
const MAX_NOTES_PER_KIND: usize = 3;
const MAX_PENDING_CALLS: usize = 256;
const MAX_TRIED: usize = 2;
/// Changes (edits, commands) kept per failure, made between it and its fix.
const MAX_ACTIONS: usize = 4;
/// Longest description of one change.
const ACTION_CHARS: usize = 160;
/// Longest text kept for one piece of a snippet.
const PIECE_BYTES: usize = 2500;
/// Longest latest-assistant-text kept (the "what fixed it" / context of a snippet).
const LAST_TEXT_BYTES: usize = 1200;
/// Longest evidence text.
const EVIDENCE_CHARS: usize = 200;
/// Assistant text scanned for episode vocabulary.
const VOCAB_SCAN_BYTES: usize = 1024;
/// Prompt text scanned for correction phrases (a pasted log further down is not a correction).
const PROMPT_SCAN_BYTES: usize = 600;

/// Tools that change files: their calls after a failure are part of its fix.
const EDIT_TOOLS: &[&str] = &["Edit", "Write", "MultiEdit", "NotebookEdit"];

/// The phrase of a note made from laid-out options (not a phrase of the decision list): the
/// prompt after it may pick one (see [`Note::choice`]).
pub(crate) const OPTIONS: &str = "options";

/// One piece of evidence: an event or phrase that points at a label.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Signal {
    /// Line it was seen on.
    pub line: u64,
    /// Label it supports.
    pub label: Label,
    /// `tool_denial`, `interruption_redirect`, `phrase:<p>`, `error_then_success`, `revert`.
    pub signal: String,
    /// The phrase's sentence, the denial reason, the error line.
    pub text: String,
    /// How strongly it supports the label (0..1).
    pub weight: f64,
    /// For corrections: what the assistant said next (the lesson's second half).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub followup: Option<(u64, String)>,
}

/// A tool call that failed and has not (yet) been followed by a success on the same target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub(crate) line: u64,
    pub(crate) tool: String,
    key: String,
    pub(crate) target: Option<String>,
    pub(crate) error: String,
    kind: Option<String>,
    pub(crate) tried: Vec<(u64, String)>,
    /// What was changed after it (file edits, other commands): usually the actual fix, since
    /// the success is often a plain re-run.
    #[serde(default)]
    pub(crate) actions: Vec<(u64, String)>,
}

/// A failure followed by a success on the same tool or target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recovery {
    pub(crate) failure: Failure,
    pub(crate) line: u64,
    pub(crate) call: String,
    pub(crate) fix_text: Option<(u64, String)>,
}

/// What a note is evidence of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum NoteKind {
    Pivot,
    Decision,
    Learning,
}

/// A paragraph of assistant text holding a phrase worth a snippet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Note {
    pub(crate) kind: NoteKind,
    pub(crate) line: u64,
    pub(crate) phrase: String,
    pub(crate) sentence: String,
    pub(crate) text: String,
    pub(crate) context: Option<(u64, String)>,
    /// Options laid out for the user: the next prompt (line, words), which may pick one.
    #[serde(default)]
    pub(crate) choice: Option<(u64, String)>,
}

/// A tool call waiting for its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Call {
    name: String,
    key: String,
    target: Option<String>,
    line: u64,
    seq: u64,
}

/// The label of one turn, decided from that turn's own signals when it ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnLabel {
    /// Turn number in the file (1-based).
    pub ordinal: i64,
    /// Line of its prompt.
    pub start_line: u64,
    /// Line before the next prompt (or the last line read).
    pub end_line: u64,
    /// Its label.
    pub triage: Label,
    /// 0..1.
    pub confidence: f64,
    /// The signals that decided it (at most [`TURN_EVIDENCE`]).
    pub evidence: Vec<Signal>,
}

/// The turn being read: its prompt and the signals seen since.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Turn {
    ordinal: i64,
    start_line: u64,
    signals: Vec<Signal>,
    /// The assistant has replied in this turn (its first reply is checked for an
    /// acknowledgement of a correction).
    #[serde(default)]
    answered: bool,
    /// The prompt's first words (an acknowledged correction quotes them).
    #[serde(default)]
    prompt: String,
    /// What the learned triage judges it by.
    #[serde(default)]
    facts: crate::triage_model::Facts,
}

/// The episode being built.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Open {
    ordinal: i64,
    first_turn: i64,
    turns: i64,
    pub(crate) start_line: u64,
    started_at: Option<String>,
    ended_at: Option<String>,
    cut_reason: String,
    pub(crate) title: Option<String>,
    #[serde(deserialize_with = "terms::stored_vocab")]
    vocab: BTreeSet<terms::Term>,
    pub(crate) files: Vec<String>,
    pub(crate) tools: BTreeMap<String, i64>,
    agents: Vec<String>,
    pub(crate) signals: Vec<Signal>,
    pub(crate) failures: Vec<Failure>,
    pub(crate) recoveries: Vec<Recovery>,
    pub(crate) notes: Vec<Note>,
    pub(crate) error_kinds: BTreeSet<String>,
    /// The labels of its ended turns (states written before turns had labels have none).
    #[serde(default)]
    turn_log: Vec<TurnLabel>,
    /// The turn being read.
    #[serde(default)]
    turn: Option<Turn>,
}

impl Open {
    /// A new episode, opened by the prompt at `start_line` (turn `first_turn` of the file).
    fn new(
        ordinal: i64,
        first_turn: i64,
        start_line: u64,
        timestamp: Option<&str>,
        cut_reason: String,
        title: Option<String>,
    ) -> Self {
        Self {
            ordinal,
            first_turn,
            turns: 1,
            start_line,
            started_at: timestamp.map(str::to_string),
            ended_at: timestamp.map(str::to_string),
            cut_reason,
            title,
            vocab: BTreeSet::new(),
            files: Vec::new(),
            tools: BTreeMap::new(),
            agents: Vec::new(),
            signals: Vec::new(),
            failures: Vec::new(),
            recoveries: Vec::new(),
            notes: Vec::new(),
            error_kinds: BTreeSet::new(),
            turn_log: Vec::new(),
            turn: None,
        }
    }
}

/// Episode state of one main transcript between two batches.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Builder {
    /// File generation the line numbers refer to.
    pub generation: i64,
    /// Turns seen in the file.
    turns: i64,
    /// Episodes started in the file.
    episodes: i64,
    /// Last physical line read.
    last_line: u64,
    /// Latest timestamp seen.
    last_ts: Option<String>,
    /// A compaction boundary was seen since the last prompt.
    pending_cut: Option<String>,
    /// Line of an interruption not yet followed by a prompt.
    interrupted_at: Option<u64>,
    /// Index in `open.signals` of a correction awaiting the assistant's answer.
    awaiting_followup: Option<usize>,
    /// Latest assistant text (for "what fixed it").
    last_text: Option<(u64, String)>,
    /// The assistant's last word was a question to the user (its last text asked, and no tool
    /// call came after it): a "no" in the next prompt answers it and corrects nothing.
    #[serde(default)]
    asked: bool,
    /// The assistant spoke or called a tool before the file's first prompt: the file continues
    /// a conversation (a resumed session's copy begins mid-work), so that prompt can correct.
    #[serde(default)]
    spoke_first: bool,
    /// Latest Claude Code version.
    version: Option<String>,
    /// Basename of the session's first working directory.
    project: Option<String>,
    calls: BTreeMap<String, Call>,
    call_seq: u64,
    open: Option<Open>,
    /// Scores of the best automatic snippets the file has kept (the per-session cap): what the
    /// drafter asks the builder to remember ([`Drafter::keep`]).
    #[serde(default)]
    kept: Vec<f64>,
    /// Titles of the file's latest automatic snippets: a later episode of the file must not
    /// store one saying the same thing ([`Drafter::keep`]).
    #[serde(default)]
    kept_titles: Vec<String>,
}

#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod tests_labels;
#[cfg(test)]
mod tests_other_way;
#[cfg(test)]
mod tests_turns;
