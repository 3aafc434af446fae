//! Moving one file from its committed checkpoint to its last complete line.
//!
//! [`Pipeline::pump`] is the only way lines reach the database, for the daemon and for
//! `gleaner ingest` alike. It reads and extracts batch N+1 on a blocking thread while batch N
//! commits, and it only ever advances its idea of the file's checkpoint after a commit
//! succeeded, so any failure (database down, checkpoint moved, shutdown) leaves it at a state the
//! database agrees with.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::archive;
use crate::config::Config;
use crate::episode;
use crate::extract::rows::{mtime_ms, unix_ms_now, PreparedBatch};
use crate::extract::{extract, FileContext};
use crate::store::writer::Writer;
use crate::store::{Store, StoreError};
use crate::tail::discovery::FileKind;
use crate::tail::{io_err, Checkpoint, TailError, Tailer, TailerConfig};

use super::health::Health;
pub use super::tracked::{Stats, Tracked};

mod outcome;
use crate::metrics::{timed, Stage};

/// How a pump ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PumpEnd {
    /// Reached the last complete line.
    Caught,
    /// The file no longer exists (now marked gone).
    Gone,
    /// Stopped by cancellation; the next pump resumes from the database checkpoint.
    Cancelled,
    /// A read error (or the checkpoint moved); retry this file later.
    Failed,
    /// The database did not take the batch (down, read-only, full): nothing was committed and
    /// [`Health`] now pauses every pump until a probe commits again.
    StoreDown,
}

/// `(agentType, description)` from `agent-<id>.meta.json` next to a sub-agent transcript.
/// Written by Claude Code 2.1.9x+ only, and possibly after the transcript starts, so callers
/// retry until it is found.
///
/// The description is the prompt's gist written by the parent agent and can quote a secret:
/// both fields are redacted like every other stored text.
/// Also returns the sidecar's file name and bytes, for the archive.
#[allow(clippy::type_complexity)]
fn read_agent_meta(
    transcript: &std::path::Path,
    redactor: &crate::extract::redact::Redactor,
) -> Option<((Option<String>, Option<String>), (String, Vec<u8>))> {
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(rename = "agentType")]
        agent_type: Option<String>,
        description: Option<String>,
    }
    let sidecar = transcript.with_extension("meta.json");
    let bytes = std::fs::read(&sidecar).ok()?;
    let m: Meta = serde_json::from_slice(&bytes).ok()?;
    let mut counts = std::collections::BTreeMap::new();
    let mut clean = |v: Option<String>| v.map(|t| redactor.redact(&t, &mut counts).into_owned());
    let name = sidecar.file_name()?.to_string_lossy().into_owned();
    Some(((clean(m.agent_type), clean(m.description)), (name, bytes)))
}

/// Shared machinery for reading files into the store.
#[derive(Debug)]
pub struct Pipeline {
    /// Configuration.
    pub cfg: Arc<Config>,
    /// Database (reads, registration, marking files gone).
    pub store: Store,
    /// Counters.
    pub stats: Arc<Stats>,
    /// Database outages, last error, ingest rate, repeated-error logging.
    pub health: Arc<Health>,
    /// The single writer every batch goes through.
    writer: Writer,
    /// Bytes of transcript that may be in flight (read but not yet committed), in KiB permits.
    /// Bounds memory whatever the number of pumps and the size of the files: a pump asks for
    /// what it may read next (the file's unread size, at most one batch) before reading.
    budget: Arc<Semaphore>,
    budget_kib: u32,
    /// Reads running at once (`daemon.workers`): each holds a blocking thread.
    read_slots: Arc<Semaphore>,
    /// Leave a file still being written unread while its session is undecided (the daemon;
    /// a one-shot ingest takes the files as they are). See `Extracted::waiting_for_session`.
    /// It is also how a pump knows it follows files: only then does a file's episode builder
    /// outlive its last batch (see `pump_loaded`).
    wait_for_sessions: bool,
}

/// A thread that frees the batches the writer has committed (see `Writer::new`), at the
/// reading threads' priority; it ends when the writer drops its sender. `None` (the writer
/// frees them itself) if the thread cannot be started.
fn spent_batches() -> Option<crate::store::writer::Spent> {
    let (tx, rx) = std::sync::mpsc::channel::<Vec<PreparedBatch>>();
    let started = std::thread::Builder::new()
        .name("gleaner-free".into())
        .spawn(move || {
            super::priority::reading_thread();
            use std::sync::mpsc::TryRecvError;
            loop {
                match rx.try_recv() {
                    Ok(batches) => drop(batches),
                    Err(TryRecvError::Empty) => {
                        // Caught up: what this thread's cache holds goes back (it never
                        // allocates, so it would keep it).
                        super::memory::flush_thread_cache();
                        match rx.recv() {
                            Ok(batches) => drop(batches),
                            Err(_) => break,
                        }
                    }
                    Err(TryRecvError::Disconnected) => break,
                }
            }
        });
    started.ok().map(|_| tx)
}

/// Transcript bytes allowed in flight, as a multiple of `batch.max_bytes`: 128 MB by default.
/// What a batch holds once extracted is its rows, about a third of its bytes at most (mostly
/// far less: tool outputs are not stored), so this bounds memory well under the RSS target
/// while letting the readers fill the writer's next group during its commit (4 made them wait
/// on each commit, the writer on them after it).
const BUDGET_BATCHES: usize = 16;

/// What one blocking read step produced.
struct ReadStep {
    tailer: Tailer,
    ctx: FileContext,
    episodes: Option<Box<episode::Builder>>,
    result: Result<Option<PreparedBatch>, TailError>,
    /// The batch ends at the file's current size: no need to ask again.
    at_eof: bool,
    /// The batch was left unread until a line names the file's session.
    waiting: bool,
}

/// Checkpoint and counters of a batch handed to the writer.
struct Sent {
    checkpoint: Checkpoint,
    bytes: u64,
    lines: u64,
}

impl Pipeline {
    /// New pipeline over a connected store, and the writer loop its batches go to: the caller
    /// spawns that loop and awaits it once the pipeline is dropped.
    pub fn new(
        cfg: Arc<Config>,
        store: Store,
    ) -> (
        Pipeline,
        impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        let (writer, writer_loop) = Writer::new(store.clone(), spent_batches());
        let cfg_workers = cfg.daemon.workers;
        let budget_kib = u32::try_from(cfg.batch.max_bytes * BUDGET_BATCHES / 1024)
            .unwrap_or(u32::MAX)
            .max(1);
        let pipeline = Pipeline {
            cfg,
            store,
            stats: Arc::new(Stats::default()),
            health: Arc::new(Health::default()),
            writer,
            budget: Arc::new(Semaphore::new(budget_kib as usize)),
            budget_kib,
            read_slots: Arc::new(Semaphore::new(cfg_workers)),
            wait_for_sessions: false,
        };
        (pipeline, writer_loop)
    }

    /// Count into `stats` and `health` kept by the caller (the daemon keeps them across
    /// reloads, which build a new pipeline).
    pub fn sharing(mut self, stats: Arc<Stats>, health: Arc<Health>) -> Pipeline {
        self.stats = stats;
        self.health = health;
        self
    }

    /// Wait for a file's `sessionId` while the file is being written (the daemon's mode).
    pub fn wait_for_sessions(mut self) -> Pipeline {
        self.wait_for_sessions = true;
        self
    }

    fn tailer_config(&self) -> TailerConfig {
        TailerConfig {
            max_line_bytes: self.cfg.tail.max_line_bytes,
            read_chunk: self.cfg.tail.read_chunk_bytes,
        }
    }

    /// Reserve budget for the next read of `t`: its unread bytes, at most one batch. `None`
    /// when cancelled while waiting.
    async fn reserve(&self, t: &Tracked, offset: u64) -> Option<OwnedSemaphorePermit> {
        let unread = std::fs::metadata(t.read_path())
            .map(|m| m.len().saturating_sub(offset))
            .unwrap_or(0);
        let want = unread.min(self.cfg.batch.max_bytes as u64) / 1024 + 1;
        let want = u32::try_from(want).unwrap_or(u32::MAX).min(self.budget_kib);
        self.budget.clone().acquire_many_owned(want).await.ok()
    }

    /// One blocking step: open the tailer if needed, read the next batch, extract it.
    fn read_step(
        &self,
        tailer: Option<Tailer>,
        path: PathBuf,
        stored: Option<Checkpoint>,
        (mut ctx, mut episodes): (FileContext, Option<Box<episode::Builder>>),
        (expected, ended): ((i64, u64), bool),
    ) -> impl FnOnce() -> Result<ReadStep, TailError> + Send + 'static {
        let cfg = self.tailer_config();
        let (max_bytes, max_lines) = (self.cfg.batch.max_bytes, self.cfg.batch.max_lines);
        let idle_ms = self.cfg.sessions.idle_timeout.as_millis() as i64;
        let redactor = self.cfg.redactor.clone();
        let rules = self.cfg.rules.clone();
        // PostgreSQL stores the search words the reading threads find (see extract::lexemes).
        let lexemes = self.store.backend() == crate::store::Backend::Postgres;
        let wait_for_sessions = self.wait_for_sessions;
        let archive = self.cfg.archive.enabled;
        let defer = self.cfg.archive.defer_finished;
        let stats = self.stats.clone();
        move || {
            // A new tailer's count starts at zero (its opening checks included).
            let read_before = tailer.as_ref().map_or(0, Tailer::bytes_read);
            let mut tailer = match tailer {
                Some(t) => t,
                None => {
                    let (t, resume) = Tailer::open(&path, stored, cfg)?;
                    tracing::debug!(path = %path.display(), ?resume, "opened");
                    t
                }
            };
            let before = tailer.checkpoint().clone();
            // A file whose session ended, or idle past the session timeout, is finished: its
            // last line is read even without a newline when it is one whole JSON object.
            let finished = ended
                || std::fs::metadata(tailer.path())
                    .is_ok_and(|m| unix_ms_now() - mtime_ms(&m) > idle_ms);
            tailer.finish_last_line(finished.then_some(whole_json as fn(&[u8]) -> bool));
            let mut at_eof = false;
            let mut waiting = false;
            let read = timed(Stage::Read, || tailer.read_batch(max_bytes, max_lines));
            stats.read_bytes.fetch_add(
                tailer.bytes_read().saturating_sub(read_before),
                std::sync::atomic::Ordering::Relaxed,
            );
            let result = read.and_then(|opt| {
                let Some(batch) = opt else { return Ok(None) };
                {
                    let meta = std::fs::metadata(tailer.path()).ok();
                    let size = meta
                        .as_ref()
                        .map(|m| m.len())
                        .unwrap_or(batch.checkpoint.offset)
                        .max(batch.checkpoint.offset);
                    // Caught up: nothing but (at most) a partial last line is left.
                    at_eof = batch.drained || size == batch.checkpoint.offset;
                    let file_mtime_ms = meta.as_ref().map_or(0, mtime_ms);
                    let now_ms = unix_ms_now();
                    // The open episode is written when the file is caught up (its state travels
                    // with every batch anyway): open while the session may go on, closed for a
                    // file idle past the session timeout (the idle sweep will end that session;
                    // closing the episode here, on a reading thread, spares it decoding the
                    // state again: a backfill's thousands of old files).
                    let idle = now_ms - file_mtime_ms > idle_ms;
                    let emit_open = at_eof && !idle;
                    // Only a batch that ends at the end of a live file waits for its session:
                    // a full batch, or a file idle past the session timeout, decides as a
                    // one-shot ingest of the same bytes would.
                    ctx.wait_for_session = wait_for_sessions && emit_open;
                    let mut ex = extract(&mut ctx, &batch, &redactor);
                    if ex.waiting_for_session {
                        waiting = true;
                        return Ok(None);
                    }
                    if ctx.info.kind == FileKind::Main && rules.settings.enabled {
                        let how = episode::Feed {
                            rules: &rules,
                            redactor: &redactor,
                            last: match (at_eof, idle) {
                                (false, _) => episode::Last::Keep,
                                (true, false) => episode::Last::Open,
                                (true, true) => episode::Last::Closed,
                            },
                            drafter: &crate::snippet::draft::Auto,
                        };
                        timed(Stage::Episodes, || {
                            episode::feed(&mut episodes, &mut ex, &how)
                        });
                    }
                    let mut prepared = ex.rows;
                    if lexemes {
                        timed(Stage::Index, || {
                            crate::extract::lexemes::index_batch(&mut prepared);
                        });
                    }
                    prepared.expected = expected;
                    prepared.size = size;
                    prepared.mtime_ms = file_mtime_ms;
                    if ctx.info.kind == FileKind::Agent && !ctx.agent_meta_seen {
                        let found = read_agent_meta(tailer.path(), &redactor);
                        if let Some((meta, raw)) = found {
                            prepared.agent_meta = Some(meta);
                            ctx.agent_meta_seen = true;
                            if archive {
                                prepared.sidecar = Some(
                                    archive::sidecar(&raw.0, &raw.1)
                                        .map_err(|e| io_err(tailer.path(), e))?,
                                );
                            }
                        }
                    }
                    if archive {
                        prepared.archive = timed(Stage::Archive, || {
                            // An idle file's bytes are left in it for packing to archive
                            // once, into a block (`crate::archive`'s docs: deferred).
                            let mut chunks =
                                archive::batch_chunks(&batch, tailer.path(), idle && defer)?;
                            // A file idle past the session timeout whose last line has no
                            // newline: that line is archived too (some transcripts end so).
                            if at_eof && idle {
                                if let Some(line) = tailer.unfinished_line() {
                                    let cp = &batch.checkpoint;
                                    chunks.push(archive::unfinished_chunk(
                                        cp.generation,
                                        cp.offset,
                                        line,
                                    )?);
                                }
                            }
                            Ok::<_, std::io::Error>(chunks)
                        })
                        .map_err(|e| io_err(tailer.path(), e))?;
                    }
                    prepared.lines = if batch.checkpoint.generation == before.generation {
                        batch.checkpoint.lines.saturating_sub(before.lines)
                    } else {
                        batch.checkpoint.lines
                    };
                    prepared.shrink();
                    Ok(Some(prepared))
                }
            });
            Ok(ReadStep {
                tailer,
                ctx,
                episodes,
                result,
                at_eof,
                waiting,
            })
        }
    }

    /// Read `t` from its checkpoint to its last complete line, committing bounded batches.
    pub async fn pump(&self, t: &mut Tracked, cancel: &CancellationToken) -> PumpEnd {
        if t.ctx.info.kind == FileKind::Main && t.episodes.is_none() {
            match self.load_episodes(t).await {
                Ok(()) => {}
                Err(e) => return self.store_down(t, "load episode state", &e),
            }
        }
        let end = self.pump_loaded(t, cancel).await;
        if end != PumpEnd::Caught {
            // The in-memory state may be ahead of the database (a batch read but not
            // committed): reload it before the next read.
            t.episodes = None;
        }
        end
    }

    /// The episode state the database holds for `t` (a fresh one if none or unreadable).
    async fn load_episodes(&self, t: &mut Tracked) -> Result<(), StoreError> {
        // Nothing committed yet (a new file): no state to load, and no query either (a
        // backfill of thousands of files would pay one round trip each).
        let stored = match t.stored {
            None => None,
            Some(_) => self.store.episode_state(t.ctx.file_id).await?,
        };
        let generation = t.expected.0;
        let builder = match stored.as_deref().map(episode::Builder::from_json) {
            Some(Some(b)) => b,
            Some(None) => {
                tracing::warn!(path = %t.path().display(), "unreadable episode state; starting afresh");
                episode::Builder::new(generation)
            }
            None => episode::Builder::new(generation),
        };
        t.episodes = Some(Box::new(builder));
        Ok(())
    }

    async fn pump_loaded(&self, t: &mut Tracked, cancel: &CancellationToken) -> PumpEnd {
        let mut inflight: Option<(PreparedBatch, bool, OwnedSemaphorePermit)> = None;
        loop {
            // Read the next batch on a blocking thread while the previous one commits.
            let expected = match &inflight {
                Some((b, _, _)) => (b.checkpoint.generation, b.checkpoint.offset),
                None => t.expected,
            };
            // Hand the previous batch to the writer first: it must never wait behind this
            // pump's budget reservation (that could deadlock when the budget is exhausted).
            let commit = inflight.take().map(|(b, eof, permit)| {
                let sent = Sent {
                    checkpoint: b.checkpoint.clone(),
                    bytes: b.bytes,
                    lines: b.lines,
                };
                let writer = self.writer.clone();
                let handle = tokio::spawn(async move {
                    let r = writer.commit(b).await;
                    drop(permit);
                    r
                });
                (sent, eof, handle)
            });
            let read = if commit.as_ref().is_some_and(|(_, eof, _)| *eof) {
                None
            } else {
                let Some(permit) = self.reserve(t, expected.1).await else {
                    return PumpEnd::Cancelled;
                };
                // The episode builder moves into the step instead of being copied; it comes
                // back with the step's context (and is reloaded if the step fails).
                let step = self.read_step(
                    t.tailer.take().map(|b| *b),
                    t.read_path().to_path_buf(),
                    t.stored.clone(),
                    (t.ctx.clone(), t.episodes.take()),
                    (expected, t.ended),
                );
                let Ok(slot) = self.read_slots.clone().acquire_owned().await else {
                    return PumpEnd::Cancelled;
                };
                // The budget permit travels with the batch until it is committed (or dropped).
                Some(
                    tokio::task::spawn_blocking(move || {
                        super::priority::reading_thread();
                        let r = step().map(|st| (st, permit));
                        drop(slot);
                        r
                    })
                    .await,
                )
            };
            let committed = match commit {
                Some((sent, _, handle)) => match handle.await {
                    Ok(r) => Some((sent, r)),
                    Err(join) => {
                        // The commit task panicked or was aborted: whether its transaction
                        // committed is unknown, so start again from what the database holds.
                        tracing::error!(path = %t.path().display(), error = %join, "commit task failed");
                        self.stats.errors.fetch_add(1, Ordering::Relaxed);
                        t.tailer = None;
                        self.reload_checkpoint(t).await;
                        return PumpEnd::Failed;
                    }
                },
                None => None,
            };
            if let Some((sent, c)) = committed {
                match c {
                    Ok(s) => self.committed(t, &sent, s),
                    Err(e) => return self.commit_failed(t, &sent, e).await,
                }
            }
            let Some(read) = read else {
                // The last batch ended at the file's end and is committed.
                self.stats.files.fetch_add(1, Ordering::Relaxed);
                t.tailer = None;
                return PumpEnd::Caught;
            };
            let (step, permit) = match read {
                Ok(Ok(step)) => step,
                Ok(Err(e)) => return self.read_failed(t, e).await,
                Err(join) => {
                    tracing::error!(path = %t.path().display(), error = %join, "tailer task failed");
                    return PumpEnd::Failed;
                }
            };
            t.ctx = step.ctx;
            t.episodes = step.episodes;
            let tailer = step.tailer;
            if step.waiting {
                // Nothing is committed: the next pump (a change, or the rescan once the file
                // has gone idle) reads the same lines again from the stored checkpoint.
                tracing::debug!(path = %t.path().display(), "waiting for the file's sessionId");
                t.waiting_for_session = true;
                self.stats.files.fetch_add(1, Ordering::Relaxed);
                return PumpEnd::Caught;
            }
            t.waiting_for_session = false;
            match step.result {
                Ok(Some(batch)) => {
                    t.last_growth = Instant::now();
                    if cancel.is_cancelled() {
                        // Drop the unsent batch: the database still holds the previous
                        // checkpoint, and the next run re-reads from there.
                        return PumpEnd::Cancelled;
                    }
                    // Keep the tailer only while it holds a partial line (so that line is
                    // never re-read from disk); reopening otherwise costs two small reads.
                    if !step.at_eof || tailer.buffered_bytes() > 0 {
                        t.tailer = Some(Box::new(tailer));
                    }
                    let last = step.at_eof && t.tailer.is_none();
                    if last && !self.wait_for_sessions {
                        // A one-shot read (ingest, reextract) never reads this file again:
                        // its episode state is in the batch, so the builder need not wait
                        // with it for the commit. Hundreds of files wait so where the writer
                        // is the slow stage (PostgreSQL): with this and `shrink`, that
                        // backfill's peak RSS fell about 3 MB (5 GB tree, median of six; issue
                        // 30). The daemon keeps it for the file's next growth.
                        t.episodes = None;
                    }
                    inflight = Some((batch, last, permit));
                }
                Ok(None) => {
                    // Blank lines, an over-long line, a new inode with the same content or a
                    // truncation can move the checkpoint without producing a batch.
                    let cp = tailer.checkpoint().clone();
                    if tailer.buffered_bytes() > 0 {
                        t.tailer = Some(Box::new(tailer));
                    }
                    if t.stored.as_ref() != Some(&cp) && (cp.offset > 0 || t.stored.is_some()) {
                        let b = PreparedBatch {
                            file_id: t.ctx.file_id,
                            expected: t.expected,
                            size: cp.offset,
                            checkpoint: cp.clone(),
                            ..PreparedBatch::default()
                        };
                        let sent = Sent {
                            checkpoint: cp,
                            bytes: 0,
                            lines: 0,
                        };
                        match self.writer.commit(b).await {
                            Ok(s) => self.committed(t, &sent, s),
                            Err(e) => return self.commit_failed(t, &sent, e).await,
                        }
                    }
                    self.stats.files.fetch_add(1, Ordering::Relaxed);
                    return PumpEnd::Caught;
                }
                Err(e) => return self.read_failed(t, e).await,
            }
        }
    }
}

/// Whether a last line without its newline is a line: one whole JSON object (or several glued),
/// as the parser reads it. What a writer cut off mid-object is not.
fn whole_json(bytes: &[u8]) -> bool {
    let p = crate::parse::parse_line(bytes);
    p.error.is_none() && !p.records.is_empty()
}
