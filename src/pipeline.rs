//! Moving one file from its committed checkpoint to its last complete line.
//!
//! [`Pipeline::pump`] is the only way lines reach the database, for the daemon and for
//! `gleaner ingest` alike. It reads and extracts batch N+1 on a blocking thread while batch N
//! commits, and it only ever advances its idea of the file's checkpoint after a commit
//! succeeded, so any failure (database down, checkpoint moved, shutdown) leaves it at a state the
//! database agrees with.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use crate::config::{Backend, Config};
use crate::discovery::{classify, FileInfo};
use crate::extract::{extract, FileContext};
use crate::model::PreparedBatch;
use crate::store::{CommitStats, FileRecord, Store, StoreError};
use crate::tailer::{Checkpoint, TailError, Tailer, TailerConfig};

/// Counters shared by all file tasks; read by the progress bar, the summary and the status.
#[derive(Debug, Default)]
pub struct Stats {
    /// Transcript bytes committed.
    pub bytes: AtomicU64,
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
}

impl Stats {
    fn add(&self, b: &PreparedBatch, s: CommitStats) {
        self.bytes.fetch_add(b.bytes, Ordering::Relaxed);
        self.lines.fetch_add(b.lines, Ordering::Relaxed);
        self.messages.fetch_add(s.messages, Ordering::Relaxed);
        self.diagnostics.fetch_add(s.diagnostics, Ordering::Relaxed);
        self.batches.fetch_add(1, Ordering::Relaxed);
    }
}

/// In-memory state of one tracked file between pumps. Holds no file handle; the tailer (and its
/// partial-line buffer) is dropped when the file goes idle.
#[derive(Debug)]
pub struct Tracked {
    /// Extraction context (file id, session).
    pub ctx: FileContext,
    /// The checkpoint the database holds.
    pub stored: Option<Checkpoint>,
    /// `(generation, offset)` of `stored` (or `(1, 0)` for a new file).
    pub expected: (i64, u64),
    /// Open tailer while the file is active.
    pub tailer: Option<Tailer>,
    /// When the file last produced data.
    pub last_growth: Instant,
    /// `(size, mtime ns, inode)` at the last look, to skip unchanged files on rescan.
    pub seen: Option<(u64, i128, u64)>,
    /// The database says the file is gone.
    pub gone: bool,
}

impl Tracked {
    /// Rebuild from a stored file row.
    pub fn from_record(root: &std::path::Path, machine: &str, r: &FileRecord) -> Tracked {
        let info = classify(root, std::path::Path::new(&r.path));
        let info = FileInfo {
            project: r.project.clone(),
            agent_id: r.agent_id.clone().or(info.agent_id),
            ..info
        };
        let stored = r.checkpoint();
        Tracked {
            ctx: FileContext::new(r.id, machine.to_string(), info, r.session_id.clone()),
            expected: (r.generation, r.byte_offset as u64),
            stored,
            tailer: None,
            last_growth: Instant::now(),
            seen: None,
            gone: r.state == "gone",
        }
    }

    /// The file's path.
    pub fn path(&self) -> &std::path::Path {
        &self.ctx.info.path
    }
}

/// How a pump ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PumpEnd {
    /// Reached the last complete line.
    Caught,
    /// The file no longer exists (now marked gone).
    Gone,
    /// Stopped by cancellation; the next pump resumes from the database checkpoint.
    Cancelled,
    /// A read or database error; retry later.
    Failed,
}

/// Shared machinery for reading files into the store.
#[derive(Debug)]
pub struct Pipeline {
    /// Configuration.
    pub cfg: Arc<Config>,
    /// Database.
    pub store: Store,
    /// Counters.
    pub stats: Arc<Stats>,
    /// SQLite allows one writer at a time; serialising commits here avoids busy-waiting inside
    /// the database. PostgreSQL commits run concurrently.
    write_lock: Mutex<()>,
}

impl Pipeline {
    /// New pipeline over a connected store.
    pub fn new(cfg: Arc<Config>, store: Store) -> Pipeline {
        Pipeline {
            cfg,
            store,
            stats: Arc::new(Stats::default()),
            write_lock: Mutex::new(()),
        }
    }

    fn tailer_config(&self) -> TailerConfig {
        TailerConfig {
            max_line_bytes: self.cfg.tail.max_line_bytes,
            read_chunk: self.cfg.tail.read_chunk_bytes,
        }
    }

    /// Register a newly seen path and build its tracked state.
    pub async fn track(&self, path: PathBuf) -> Result<Tracked, StoreError> {
        let info = classify(&self.cfg.projects_dir, &path);
        let rec = self
            .store
            .register_file(&self.cfg.machine_id, &info)
            .await?;
        Ok(Tracked::from_record(
            &self.cfg.projects_dir,
            &self.cfg.machine_id,
            &rec,
        ))
    }

    async fn commit(&self, b: &PreparedBatch) -> Result<CommitStats, StoreError> {
        let _guard = match self.store.backend() {
            Backend::Sqlite => Some(self.write_lock.lock().await),
            Backend::Postgres => None,
        };
        self.store.commit(b).await
    }

    /// Read `t` from its checkpoint to its last complete line, committing bounded batches.
    pub async fn pump(&self, t: &mut Tracked, cancel: &CancellationToken) -> PumpEnd {
        let max_bytes = self.cfg.batch.max_bytes;
        let max_lines = self.cfg.batch.max_lines;
        let mut inflight: Option<PreparedBatch> = None;
        loop {
            let tailer = match t.tailer.take() {
                Some(tl) => tl,
                None => {
                    let path = t.path().to_path_buf();
                    let stored = t.stored.clone();
                    let cfg = self.tailer_config();
                    let opened =
                        tokio::task::spawn_blocking(move || Tailer::open(&path, stored, cfg)).await;
                    match opened {
                        Ok(Ok((tl, resume))) => {
                            tracing::debug!(path = %t.path().display(), ?resume, "opened");
                            tl
                        }
                        Ok(Err(e)) => return self.read_failed(t, e).await,
                        Err(join) => {
                            tracing::error!(path = %t.path().display(), error = %join, "tailer task failed");
                            return PumpEnd::Failed;
                        }
                    }
                }
            };

            // Read the next batch on a blocking thread while the previous one commits.
            let mut ctx = t.ctx.clone();
            let expected = match &inflight {
                Some(b) => (b.checkpoint.generation, b.checkpoint.offset),
                None => t.expected,
            };
            let read = tokio::task::spawn_blocking(move || {
                let mut tailer = tailer;
                let before = tailer.checkpoint().clone();
                let res = tailer.read_batch(max_bytes, max_lines).map(|opt| {
                    opt.map(|batch| {
                        let size = std::fs::metadata(tailer.path())
                            .map(|m| m.len())
                            .unwrap_or(batch.checkpoint.offset)
                            .max(batch.checkpoint.offset);
                        let mut prepared = extract(&mut ctx, &batch, expected, size);
                        prepared.lines = if batch.checkpoint.generation == before.generation {
                            batch.checkpoint.lines.saturating_sub(before.lines)
                        } else {
                            batch.checkpoint.lines
                        };
                        prepared
                    })
                });
                (tailer, ctx, res)
            });
            let (read, committed) = match inflight.take() {
                Some(b) => {
                    let (r, c) = tokio::join!(read, self.commit(&b));
                    (r, Some((b, c)))
                }
                None => (read.await, None),
            };
            if let Some((b, c)) = committed {
                match c {
                    Ok(s) => self.committed(t, &b, s),
                    Err(e) => return self.commit_failed(t, e).await,
                }
            }
            let (tailer, ctx, res) = match read {
                Ok(v) => v,
                Err(join) => {
                    tracing::error!(path = %t.path().display(), error = %join, "tailer task failed");
                    return PumpEnd::Failed;
                }
            };
            match res {
                Ok(Some(batch)) => {
                    t.ctx = ctx;
                    t.tailer = Some(tailer);
                    t.last_growth = Instant::now();
                    if cancel.is_cancelled() {
                        // Drop the unsent batch: the database still holds the previous
                        // checkpoint, and the next run re-reads from there.
                        t.tailer = None;
                        return PumpEnd::Cancelled;
                    }
                    inflight = Some(batch);
                }
                Ok(None) => {
                    t.ctx = ctx;
                    // Blank lines, an over-long line, a new inode with the same content or a
                    // truncation can move the checkpoint without producing a batch.
                    let cp = tailer.checkpoint().clone();
                    t.tailer = Some(tailer);
                    if t.stored.as_ref() != Some(&cp) && (cp.offset > 0 || t.stored.is_some()) {
                        let b = PreparedBatch {
                            file_id: t.ctx.file_id,
                            expected: t.expected,
                            size: cp.offset,
                            checkpoint: cp,
                            ..PreparedBatch::default()
                        };
                        match self.commit(&b).await {
                            Ok(s) => self.committed(t, &b, s),
                            Err(e) => return self.commit_failed(t, e).await,
                        }
                    }
                    self.stats.files.fetch_add(1, Ordering::Relaxed);
                    return PumpEnd::Caught;
                }
                Err(e) => return self.read_failed(t, e).await,
            }
        }
    }

    fn committed(&self, t: &mut Tracked, b: &PreparedBatch, s: CommitStats) {
        t.expected = (b.checkpoint.generation, b.checkpoint.offset);
        t.stored = Some(b.checkpoint.clone());
        t.gone = false;
        self.stats.add(b, s);
        tracing::trace!(
            path = %t.path().display(),
            offset = b.checkpoint.offset,
            messages = s.messages,
            "committed"
        );
    }

    async fn commit_failed(&self, t: &mut Tracked, e: StoreError) -> PumpEnd {
        self.stats.errors.fetch_add(1, Ordering::Relaxed);
        // The tailer ran ahead of the database; restart from what the database holds.
        t.tailer = None;
        if let StoreError::CheckpointMoved { .. } = e {
            tracing::warn!(path = %t.path().display(), error = %e, "reloading checkpoint");
            if let Ok(files) = self.store.files_of(&self.cfg.machine_id).await {
                if let Some(r) = files.iter().find(|r| r.id == t.ctx.file_id) {
                    t.stored = r.checkpoint();
                    t.expected = (r.generation, r.byte_offset as u64);
                }
            }
        } else {
            tracing::error!(path = %t.path().display(), error = %e, "commit failed");
        }
        PumpEnd::Failed
    }

    async fn read_failed(&self, t: &mut Tracked, e: TailError) -> PumpEnd {
        t.tailer = None;
        if let TailError::Gone { .. } = e {
            if !t.gone {
                if let Err(err) = self.store.mark_gone(t.ctx.file_id).await {
                    tracing::error!(path = %t.path().display(), error = %err, "cannot mark file gone");
                    return PumpEnd::Failed;
                }
                tracing::info!(path = %t.path().display(), "file gone; rows kept");
                t.gone = true;
            }
            return PumpEnd::Gone;
        }
        self.stats.errors.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(path = %t.path().display(), error = %e, "read failed");
        PumpEnd::Failed
    }
}
