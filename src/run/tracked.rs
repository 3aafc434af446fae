//! What the engine knows of each file it follows between pumps ([`Tracked`]), and the counters
//! every pump adds to ([`Stats`]).
//!
//! Why apart from `pump`: these are the engine's records, which outlive any one pump (a
//! tracked file holds no handle once idle); `pump` is the reading and committing of one file.

use std::collections::HashSet;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Instant;

use crate::config::Config;
use crate::episode;
use crate::extract::FileContext;
use crate::store::FileRecord;
use crate::tail::discovery::{classify, FileInfo};
use crate::tail::{Checkpoint, Tailer};

/// Counters shared by all file tasks; read by the progress bar, the summary and the status.
#[derive(Debug, Default)]
pub struct Stats {
    /// Transcript bytes committed.
    pub bytes: AtomicU64,
    /// Transcript bytes the tailers read off disk (partial lines, re-reads and checks of
    /// consumed bytes included): that the daemon has *seen* an append, whether or not it
    /// committed anything for it.
    pub read_bytes: AtomicU64,
    /// Physical lines committed.
    pub lines: AtomicU64,
    /// Message rows inserted.
    pub messages: AtomicU64,
    /// Diagnostics inserted.
    pub diagnostics: AtomicU64,
    /// Transactions committed.
    pub batches: AtomicU64,
    /// Files that reached their end at least once.
    pub files: AtomicU64,
    /// Commit or read failures (retried later).
    pub errors: AtomicU64,
    /// Files the engine tracks (set by the engine).
    pub tracked: AtomicU64,
    /// Episodes the `[refine]` command handled since start.
    pub refined: AtomicU64,
    /// Runs of the `[refine]` command that failed since start.
    pub refine_failed: AtomicU64,
    /// Turns of the engine's loop: the systemd watchdog is fed only while it moves.
    pub heartbeat: AtomicU64,
    /// 1 while file-system events are being received for the projects folder.
    pub watching: AtomicU64,
}

/// In-memory state of one tracked file between pumps. Holds no file handle; the tailer (and its
/// partial-line buffer) is dropped when the file goes idle.
#[derive(Debug)]
pub struct Tracked {
    /// Extraction context (file id, session).
    pub ctx: FileContext,
    /// Episode state of a main transcript, as of the last batch read. `None` until loaded from
    /// the database (loaded before reading, dropped when the file goes idle or a commit fails,
    /// so it never runs ahead of what is committed for long).
    pub episodes: Option<Box<episode::Builder>>,
    /// The checkpoint the database holds.
    pub stored: Option<Checkpoint>,
    /// `(generation, offset)` of `stored` (or `(1, 0)` for a new file).
    pub expected: (i64, u64),
    /// Open tailer while the file is active. Boxed: a tracked file without one (nearly all
    /// of a large tree, most of the time) then costs a pointer, not the tailer's 280 bytes.
    pub tailer: Option<Box<Tailer>>,
    /// When the file last produced data.
    pub last_growth: Instant,
    /// `(size, mtime ns, inode)` at the last look, to skip unchanged files on rescan.
    pub seen: Option<(u64, i128, u64)>,
    /// The database says the file is gone.
    pub gone: bool,
    /// Its lines were left unread until one names the session (see
    /// `Extracted::waiting_for_session`): every rescan reads it again, unchanged or not, so it
    /// is decided once the file goes idle.
    pub waiting_for_session: bool,
    /// Where the bytes are read from when not the file itself: `gleaner reextract` reads a
    /// copy of the archive's (the file may be gone); rows still name the file.
    pub source: Option<std::path::PathBuf>,
    /// Pumps in a row that ended in failure (a read error, a batch the database refused):
    /// the retry waits longer each time ([`Tracked::retry_delay`]), so a file that cannot be
    /// stored is not read again every few seconds for ever.
    pub failures: u32,
    /// Its session ended (the hook, or the idle sweep found its last line without a `\n`): a
    /// last line that is one whole JSON object is read as a line, not left for a newline that
    /// will not come.
    pub ended: bool,
}

/// What the records of all tracked files share instead of each keeping a copy (a tree has
/// tens of thousands of files, a handful of projects and one machine; issue 30, peak RSS).
#[derive(Debug)]
pub struct Shared {
    /// Machine id and user, written on session rows.
    who: (Arc<str>, Arc<str>),
    /// The project names seen.
    projects: HashSet<Arc<str>>,
}

impl Shared {
    /// For this machine's configuration.
    pub fn new(cfg: &Config) -> Shared {
        Shared {
            who: (
                Arc::from(cfg.machine_id.as_str()),
                Arc::from(cfg.user.as_str()),
            ),
            projects: HashSet::new(),
        }
    }

    /// The one shared copy of a project name.
    fn project(&mut self, name: &str) -> Arc<str> {
        if let Some(p) = self.projects.get(name) {
            return p.clone();
        }
        let p: Arc<str> = Arc::from(name);
        self.projects.insert(p.clone());
        p
    }
}

/// `first`, doubled for each failure after the first, at most ten minutes.
fn backoff(failures: u32, first: std::time::Duration) -> std::time::Duration {
    let doublings = failures.saturating_sub(1).min(16);
    first
        .saturating_mul(1 << doublings)
        .min(std::time::Duration::from_secs(600))
}

impl Tracked {
    /// How long to wait before pumping the file again after its `failures`-th failure in a
    /// row: `first`, doubled each time, at most ten minutes.
    pub fn retry_delay(&self, first: std::time::Duration) -> std::time::Duration {
        backoff(self.failures, first)
    }

    /// Rebuild from a stored file row.
    pub fn from_record(root: &std::path::Path, shared: &mut Shared, r: &FileRecord) -> Tracked {
        let info = classify(root, std::path::Path::new(&r.path));
        let info = FileInfo {
            project: shared.project(&r.project),
            agent_id: r.agent_id.clone().or(info.agent_id),
            ..info
        };
        let stored = r.checkpoint();
        Tracked {
            ctx: FileContext::new(r.id, shared.who.clone(), info, r.session_id.clone()),
            episodes: None,
            expected: (r.generation, r.byte_offset as u64),
            stored,
            tailer: None,
            last_growth: Instant::now(),
            seen: None,
            gone: r.state == "gone",
            waiting_for_session: false,
            source: None,
            failures: 0,
            ended: false,
        }
    }

    /// The file's path.
    pub fn path(&self) -> &std::path::Path {
        &self.ctx.info.path
    }

    /// Where its bytes are read from: [`Tracked::source`], else the file.
    pub fn read_path(&self) -> &std::path::Path {
        self.source.as_deref().unwrap_or(self.path())
    }
}

#[cfg(test)]
mod tests {
    use super::backoff;
    use std::time::Duration;

    #[test]
    fn failing_files_wait_longer_each_time() {
        let first = Duration::from_secs(2);
        let waits: Vec<u64> = (0..8).map(|n| backoff(n, first).as_secs()).collect();
        assert_eq!(waits, [2, 2, 4, 8, 16, 32, 64, 128]);
        assert_eq!(backoff(40, first), Duration::from_secs(600));
    }
}
