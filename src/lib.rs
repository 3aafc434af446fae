//! Gleaner keeps what matters from Claude Code sessions.
//!
//! It tails the JSONL transcripts Claude Code writes under `~/.claude/projects`, extracts rows
//! and commits them, together with each file's new offset, to SQLite or PostgreSQL.
//!
//! # Layout, in dependency order (each module imports only modules listed before it)
//! - [`metrics`]: a leaf: stage timings and the log throttle, which stages and shell share.
//! - [`text`]: a leaf: plain-text helpers (clipping, sentences, noise lines, headlines) that
//!   the stages and the doors share.
//! - [`usage`]: a leaf: token counts and what they cost (the price table, `[pricing]`), which
//!   the store's aggregate and the `usage` report share.
//! - [`config`]: settings, validated once, and what is built from them (redactor, rules); the
//!   one exception to the order, as the builder of the stages' settings.
//! - [`telemetry`]: logging, set up from the configuration (level, format, reload).
//! - [`tail`]: stage 1, files on disk to complete lines ([`tail::discovery`] finds them).
//! - [`parse`]: stage 2, one line to typed records; never fails, unknown input is data.
//! - [`extract`]: stage 3, records to rows ([`extract::rows`]), human prompts versus plumbing
//!   ([`extract::prompt`]), user feedback ([`extract::feedback`]), secrets out of every text
//!   ([`extract::redact`]).
//! - [`archive`]: the bytes a batch read as compressed chunks, and back (the transcript kept
//!   whole in the database, for restore and re-extraction).
//! - [`triage_model`]: the learned triage of a turn (a logistic regression over its facts).
//! - [`episode`]: stage 4, turns, episodes and triage; the snippets of an episode that closes
//!   are drafted by the [`episode::Drafter`] its caller passes in.
//! - [`snippet`]: what a snippet is (gates, tags, hash), excerpts cut for `snippet add`, and
//!   the drafting of automatic snippets ([`snippet::draft`], which reads the episode's state).
//! - [`conversation`]: a session's conversation as plain text (from stored rows or records).
//! - [`store`]: the database, sink and checkpoint, both backends; its single writer.
//! - [`run`]: the async shell: engine, pump, daemon, one-shot ingest, status socket.
//! - [`query`]: what the front doors read the store through: typed filters parsed once,
//!   session references, pages in SQL, and the one use case they share that writes
//!   (`snippet add`).
//! - [`export`]: what was kept about some sessions as Markdown, JSON or learnings.
//! - [`mcp`]: the Model Context Protocol server for coding agents (`gleaner mcp`).
//! - [`web`]: the read-only web view (`gleaner web`).
//! - [`cli`]: the command line, one function per subcommand.
//!
//! The stages `tail`, `parse`, `extract`, `archive`, `episode`, `snippet` and `conversation`,
//! and the `text` leaf, are synchronous and know nothing of the configuration, the store, the
//! shell or the doors (see ARCHITECTURE.md, "Dependency rules"; `tests/it/layout.rs` checks it on
//! the import graph).

/// The fully commented default configuration: the one source of every key and default value
/// (`gleaner config --default` prints it; the configuration loader and the episode stage's
/// defaults both read it).
pub const DEFAULT_CONFIG_TOML: &str = include_str!("../config/gleaner.toml");

pub mod metrics;
pub mod text;
pub mod usage;
pub mod config;
pub mod telemetry;
pub mod tail;
pub mod parse;
pub mod extract;
pub mod archive;
pub mod triage_model;
pub mod episode;
pub mod snippet;
pub mod conversation;
pub mod store;
pub mod run;
pub mod query;
pub mod export;
pub mod mcp;
pub mod web;
pub mod cli;

/// Helpers shared by the unit tests.
#[cfg(test)]
pub(crate) mod test_support {
    /// Every `*.jsonl` of the shared real corpus: `$GLEANER_CORPUS_DIR` (set by
    /// `scripts/test.sh`, which finds it for clones made anywhere), else `../shared/corpus/real`
    /// beside the checkout. Panics when it is missing: the corpus tests must not pass by
    /// skipping.
    pub fn corpus_files() -> Vec<std::path::PathBuf> {
        let root = std::env::var_os("GLEANER_CORPUS_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/real")
            });
        let files = crate::tail::discovery::scan(&root);
        assert!(!files.is_empty(), "no corpus at {}", root.display());
        files
    }
}
