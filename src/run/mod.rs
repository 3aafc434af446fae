//! The async shell: moves files through the pure stages and into the store.
//!
//! Only this module spawns tasks. [`engine`] decides which file to pump next, [`pump`] moves one
//! file from its checkpoint to its last line, [`finish`] ends sessions (closing their episodes
//! through the episode stage), [`daemon`] and [`once`] are the two ways to run them, [`watcher`]
//! turns file-system events into hints, [`socket`] is the daemon's Unix socket and [`lock`] its
//! single-instance lock.

pub mod daemon;
pub mod engine;
pub mod finish;
pub mod health;
pub mod lock;
pub mod memory;
pub mod once;
pub mod pack;
mod priority;
pub mod pump;
pub mod reextract;
pub mod refine;
pub mod restore;
mod requests;
pub mod socket;
pub mod tracked;
pub mod watcher;

use std::path::PathBuf;
use std::time::Duration;

use crate::store::StoreError;

/// Lines a pass must commit before it refreshes the planner's statistics
/// (`Store::analyze_after_bulk`): a backfill moves them, a few sessions' worth does not, and
/// twenty daemons of a shared store each analysing every table after a small first pass
/// queued on each other's table locks (`examples/team_bench.rs`).
pub const BULK_LINES: u64 = 10_000;

/// Run blocking IO (reading a transcript, a file) off the runtime's threads: the shell's one
/// door to the blocking pool, so every task and thread Gleaner starts is started here.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, tokio::task::JoinError> {
    tokio::task::spawn_blocking(f).await
}

/// Start an async task on the runtime, for a door that needs one beside its work (the MCP
/// server's stdio filter): like [`blocking`], the shell's one door to spawning.
pub fn task<F>(f: F) -> tokio::task::JoinHandle<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(f)
}

/// Run `f` on a thread of its own and wait for it at most `wait`: for a read that cannot be
/// cancelled (stdin). `None` when it did not finish in time; the thread is then left to end
/// with the process.
pub fn within<T: Send + 'static>(
    wait: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(wait).ok()
}

/// Why the daemon, a one-shot ingest or the hook's fallback could not run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Another process holds the single-instance lock.
    #[error("another gleaner process is running (lock {path} is held{holder})")]
    Locked {
        /// The lock file.
        path: PathBuf,
        /// `" by pid N"` when the holder wrote its pid.
        holder: String,
    },
    /// The lock file could not be created.
    #[error("cannot create lock file {path}: {source}")]
    LockIo {
        /// The lock file.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// The status socket could not be created.
    #[error("cannot create socket {path}: {source}")]
    Socket {
        /// The socket path.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// A critical worker (engine or writer) ended while the daemon was meant to run.
    #[error("the {0} worker stopped unexpectedly")]
    WorkerEnded(&'static str),
    /// A task panicked or was aborted (its join failed): what it was doing is unknown, so the
    /// run reports it instead of claiming success.
    #[error("the {task} task failed: {source}")]
    TaskFailed {
        /// Which task.
        task: &'static str,
        /// The join error.
        #[source]
        source: tokio::task::JoinError,
    },
    /// A database error at startup.
    #[error(transparent)]
    Store(#[from] StoreError),
}
