//! What the episode stage asks of snippet drafting: the snippets of an episode that closes.
//!
//! Why a trait: drafting a snippet (which candidates, their wording, their scores, the
//! per-session cap) is the snippet module's concept, and it reads the episode's state (the
//! failures, recoveries, notes and signals the builder kept); yet the builder is the one that
//! knows when an episode closes. With the call behind [`Drafter`], defined here and implemented
//! by `crate::snippet::draft`, this stage names no drafting code and the two modules import
//! each other in one direction only (`snippet::draft` reads `episode`). Whoever feeds or
//! finishes a builder (`run::pump`, `run::finish`, the examples, the tests) passes the drafter
//! in: through [`super::Feed`], and to [`super::Builder::finish`].

use super::{Open, Triage};
use crate::extract::rows::SnippetRow;

/// An episode being closed, as its drafter reads it.
#[derive(Debug, Clone, Copy)]
pub struct Closing<'a> {
    /// Its state: what the builder kept of its turns (failures, recoveries, notes, signals).
    pub open: &'a Open,
    /// Its label.
    pub triage: &'a Triage,
    /// The latest Claude Code version of its file.
    pub version: Option<&'a str>,
    /// Basename of the session's first working directory.
    pub project: Option<&'a str>,
    /// Its last line.
    pub end_line: u64,
}

/// Drafts the snippets of the episodes that close (`crate::snippet::draft::Auto`).
pub trait Drafter: std::fmt::Debug {
    /// The snippets to store with `episode`, best first. `kept` and `titles` are what this
    /// drafter asked the builder to remember of the file's earlier snippets (see
    /// [`Drafter::keep`]).
    fn snippets(&self, episode: &Closing<'_>, kept: &[f64], titles: &[String]) -> Vec<SnippetRow>;

    /// Note in `kept` and `titles` (stored with the builder's state, so they survive batches
    /// and restarts) the snippets a closed episode stored.
    fn keep(&self, kept: &mut Vec<f64>, titles: &mut Vec<String>, stored: &[SnippetRow]);
}
