//! Gleaner keeps what matters from Claude Code sessions.
//!
//! It tails the JSONL transcripts Claude Code writes under `~/.claude/projects`, extracts rows
//! and commits them, together with each file's new offset, to SQLite or PostgreSQL.
//!
//! # Layout
//! Pure, synchronous core (no IO beyond reading a file):
//! - [`discovery`]: find `*.jsonl` files and classify them (main / sub-agent, session, agent).
//! - [`tailer`]: per-file offset, identity and partial-line state; yields complete lines.
//! - [`parse`]: one line to typed records; never fails, unknown input is data.
//! - [`prompt`]: what a human typed versus what Claude Code injected.
//! - [`feedback`]: which user lines are feedback (messages, tool denials, interruptions).
//! - [`redact`]: secrets out of every text before it is stored.
//! - [`extract`]: records to rows ([`model`]).
//!
//! Async shell:
//! - [`store`]: the database, sink and checkpoint; both backends.
//! - [`pipeline`]: pump one file from its checkpoint to its last line, batch by batch.
//! - [`writer`]: the single writer task; group commit of batches from many files.
//! - [`engine`]: decide which file to pump; shared by the daemon and `ingest`.
//! - [`daemon`]: watcher, signals, lock, shutdown.
//! - [`ingest`]: one pass, then exit.
//! - [`status`]: the daemon's Unix socket (status, session end).
//! - [`cli`], [`telemetry`], [`config`]: the edges.

pub mod cli;
pub mod config;
pub mod daemon;
pub mod discovery;
pub mod engine;
pub mod episode;
pub mod extract;
pub mod feedback;
pub mod ingest;
pub mod model;
pub mod parse;
pub mod pipeline;
pub mod prompt;
pub mod redact;
pub mod snippet;
pub mod status;
pub mod store;
pub mod tailer;
pub mod telemetry;
pub mod writer;

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
        let files = crate::discovery::scan(&root);
        assert!(!files.is_empty(), "no corpus at {}", root.display());
        files
    }
}
