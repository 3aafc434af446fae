//! Deciding which file to pump next: the dispatcher shared by `gleaner daemon` and
//! `gleaner ingest`.
//!
//! [`Engine`] owns the table of tracked files. Hints arrive as [`Hint`]s (file-system events,
//! rescans); the engine queues dirty paths and keeps many files in flight (reading is capped at
//! `daemon.workers` by the pipeline's read slots; a file waiting for its commit costs nothing),
//! never two pumps for the same file, and re-queues a file that got dirty again while it was being pumped.
//! In [`Mode::Once`] it stops when every file has been pumped to its end; in [`Mode::Follow`] it
//! runs until cancelled.

mod ends;
use ends::PendingEnd;
mod outage;

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::finish::sweep_idle_sessions;
use super::health::Gate;
use super::pump::{Pipeline, PumpEnd, Tracked};
use super::tracked::Shared;
use crate::store::StoreError;
use crate::tail::discovery;
use std::sync::atomic::Ordering;

/// Something that suggests files may have changed. Only a hint: correctness comes from reading
/// from the stored offset to the last newline, whatever the hint said.
#[derive(Debug)]
pub enum Hint {
    /// These paths may have changed (file events).
    Paths(Vec<PathBuf>),
    /// A directory appeared: scan it (events for files created in it before its watch was set
    /// are lost).
    Dir(PathBuf),
    /// Scan everything (periodic safety net, or event overflow).
    Rescan,
    /// Claude Code ended this session: pump its files now, then mark it finished and answer
    /// whether it was (`gleaner hook session-end`).
    SessionEnd {
        /// Session id.
        session_id: String,
        /// Its main transcript, when known.
        transcript_path: Option<PathBuf>,
        /// Where the outcome goes.
        reply: oneshot::Sender<bool>,
    },
}

/// Whether to stop when caught up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One pass to the end of every file (`gleaner ingest`).
    Once,
    /// Keep following until cancelled (`gleaner daemon`).
    Follow,
}

enum Slot {
    Idle(Box<Tracked>),
    Busy { dirty_again: bool },
}

/// The dispatcher.
///
/// A tracked file's path is one `Arc` shared by its slot's key, its record and the queue: the
/// engine keeps every file of the tree, and a copy per place was a third of a backfill's peak
/// heap on the 5 GB bench tree (issue 30).
pub struct Engine {
    pipeline: Arc<Pipeline>,
    slots: HashMap<Arc<Path>, Slot>,
    /// What the records share (machine, user, project names).
    shared: Shared,
    queue: VecDeque<Arc<Path>>,
    queued: HashSet<Arc<Path>>,
    /// Paths seen for the first time, registered in bulk before they are pumped.
    unregistered: HashSet<PathBuf>,
    retry: Vec<(Instant, Arc<Path>)>,
    pending_ends: Vec<PendingEnd>,
    /// Files whose session ended (hook, idle sweep): their next pump reads them as finished
    /// ([`Tracked::ended`]).
    ending: HashSet<PathBuf>,
    /// The size at which the idle sweep last had a file pumped as finished (it is not asked
    /// again at the same size: a tail that is not whole JSON is archived as it is).
    last_line_tried: HashMap<PathBuf, u64>,
    /// The file whose pump is probing the database during an outage.
    probe: Option<Arc<Path>>,
    /// Follow mode pauses on a database outage; a one-shot ingest gives up instead.
    mode: Mode,
}

type TaskResult = (Arc<Path>, Box<Tracked>, PumpEnd);

/// Files in flight per read worker. A file in flight waits for its commit at no cost; many of
/// them let the writer make large groups (fewer commits, each index page written once per
/// group): 16 per worker gave groups of ~1,200 rows on the bench tree, 64 groups of the
/// writer's cap (back to back with the larger budget and linger: +25%, `pump::BUDGET_BATCHES`,
/// `store::writer::GROUP_LINGER`).
const FILES_PER_WORKER: usize = 64;

/// Quiet time after work before the daemon gives memory back (`run::memory::release`).
const RELEASE_AFTER: Duration = Duration::from_secs(1);

/// Delay before a file whose pump failed (database down, read error) is tried again.
const RETRY_DELAY: Duration = Duration::from_secs(2);

impl Engine {
    /// Load the files this machine already tracks from the database.
    pub async fn new(pipeline: Arc<Pipeline>) -> Result<Engine, StoreError> {
        let cfg = &pipeline.cfg;
        let records = pipeline.store.files_of(&cfg.machine_id).await?;
        let mut shared = Shared::new(cfg);
        let slots = records
            .iter()
            .map(|r| {
                let t = Tracked::from_record(&cfg.projects_dir, &mut shared, r);
                (t.ctx.info.path.clone(), Slot::Idle(Box::new(t)))
            })
            .collect();
        Ok(Engine {
            pipeline,
            slots,
            shared,
            queue: VecDeque::new(),
            queued: HashSet::new(),
            unregistered: HashSet::new(),
            retry: Vec::new(),
            pending_ends: Vec::new(),
            ending: HashSet::new(),
            last_line_tried: HashMap::new(),
            probe: None,
            mode: Mode::Once,
        })
    }

    /// Number of files known.
    pub fn tracked(&self) -> usize {
        self.slots.len()
    }

    /// Bytes not yet committed across known and new files (for the progress bar).
    pub fn backlog_bytes(&self) -> u64 {
        let mut total = 0;
        for p in discovery::scan(&self.pipeline.cfg.projects_dir) {
            let size = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
            let done = match self.slots.get(p.as_path()) {
                Some(Slot::Idle(t)) => t.expected.1,
                _ => 0,
            };
            total += size.saturating_sub(done);
        }
        total
    }

    fn mark(&mut self, p: &Path) {
        match self.slots.get_key_value(p) {
            Some((_, Slot::Busy { .. })) => {
                if let Some(Slot::Busy { dirty_again }) = self.slots.get_mut(p) {
                    *dirty_again = true;
                }
            }
            Some((key, Slot::Idle(_))) => {
                // The slot's own key: the queue shares its path instead of copying it.
                let key = key.clone();
                if self.queued.insert(key.clone()) {
                    self.queue.push_back(key);
                }
            }
            None => {
                if discovery::is_transcript(p) && p.is_file() && !self.unregistered.contains(p) {
                    self.unregistered.insert(p.to_path_buf());
                }
            }
        }
    }

    /// Create database rows for newly seen paths, all in one transaction, and queue them.
    async fn register_new(&mut self) {
        let cfg = self.pipeline.cfg.clone();
        let mut paths: Vec<PathBuf> = self.unregistered.drain().collect();
        paths.sort();
        let infos: Vec<_> = paths
            .iter()
            .map(|p| discovery::classify(&cfg.projects_dir, p))
            .collect();
        match self
            .pipeline
            .store
            .register_files((&cfg.machine_id, &cfg.user), &infos)
            .await
        {
            Ok(records) => {
                for r in records {
                    let t = Tracked::from_record(&cfg.projects_dir, &mut self.shared, &r);
                    let p = t.ctx.info.path.clone();
                    self.slots.insert(p.clone(), Slot::Idle(Box::new(t)));
                    self.mark(&p);
                }
            }
            Err(e) => {
                let health = &self.pipeline.health;
                self.pipeline.stats.errors.fetch_add(1, Ordering::Relaxed);
                if let Some(repeated) = crate::metrics::should_log("store:register") {
                    tracing::error!(files = paths.len(), error = %e, repeated, "cannot register files; will retry");
                }
                health.store_failed(&e.to_string());
                let at = Instant::now() + RETRY_DELAY;
                self.retry
                    .extend(paths.into_iter().map(|p| (at, Arc::from(p.as_path()))));
            }
        }
    }

    /// Scan `dir` (the whole tree for a rescan) and queue every file that changed since it was
    /// last looked at, is new, or has disappeared.
    fn scan(&mut self, dir: &Path) {
        let found = discovery::scan(dir);
        let found_set: HashSet<&Path> = found.iter().map(PathBuf::as_path).collect();
        for p in &found {
            let changed = match self.slots.get(p.as_path()) {
                Some(Slot::Idle(t)) => t.gone || t.waiting_for_session || t.seen != stat_key(p),
                Some(Slot::Busy { .. }) => true,
                None => true,
            };
            if changed {
                self.mark(p);
            }
        }
        let missing: Vec<Arc<Path>> = self
            .slots
            .iter()
            .filter(|(p, s)| {
                p.starts_with(dir)
                    && !found_set.contains(&***p)
                    && matches!(s, Slot::Idle(t) if !t.gone)
            })
            .map(|(p, _)| p.clone())
            .collect();
        for p in missing {
            self.mark(&p);
        }
    }

    fn apply(&mut self, hint: Hint) {
        match hint {
            Hint::Paths(paths) => {
                for p in paths {
                    if discovery::is_transcript(&p) {
                        self.mark(&p);
                    } else if p.is_dir() {
                        self.scan(&p);
                    } else if !p.exists() {
                        // A removed directory: its tracked files are gone too.
                        let under: Vec<Arc<Path>> = self
                            .slots
                            .keys()
                            .filter(|k| k.starts_with(&p))
                            .cloned()
                            .collect();
                        for k in under {
                            self.mark(&k);
                        }
                    }
                }
            }
            Hint::Dir(d) => self.scan(&d),
            Hint::SessionEnd {
                session_id,
                transcript_path,
                reply,
            } => self.session_end(session_id, transcript_path, reply),
            Hint::Rescan => {
                let root = self.pipeline.cfg.projects_dir.clone();
                self.scan(&root);
            }
        }
    }

    /// Finish sessions none of whose files grew for `sessions.idle_timeout` (or whose files are
    /// all gone).
    async fn sweep_idle(&mut self) {
        let pipeline = self.pipeline.clone();
        let defer = |p: &Path, size: u64| self.defer_last_line(p, size);
        if let Err(e) = sweep_idle_sessions(&pipeline.store, &pipeline.cfg, defer).await {
            let health = &self.pipeline.health;
            self.pipeline.stats.errors.fetch_add(1, Ordering::Relaxed);
            if let Some(repeated) = crate::metrics::should_log("store:sweep") {
                tracing::warn!(error = %e, repeated, "idle-session sweep failed");
            }
            health.record_error("idle-session sweep", &e.to_string());
        }
    }

    /// A file of an idle session ends with bytes after its checkpoint: pump it once as
    /// finished (a whole JSON object there is its last line) before the session is finished.
    /// False when it was tried at this size already, or is not tracked here.
    fn defer_last_line(&mut self, p: &Path, size: u64) -> bool {
        if !self.slots.contains_key(p) || self.last_line_tried.get(p) == Some(&size) {
            return false;
        }
        self.last_line_tried.insert(p.to_path_buf(), size);
        self.ending.insert(p.to_path_buf());
        self.mark(p);
        true
    }

    /// Drop the partial-line buffers of files that have been quiet for `idle`.
    fn evict_idle(&mut self, idle: Duration) {
        let now = Instant::now();
        for slot in self.slots.values_mut() {
            if let Slot::Idle(t) = slot {
                if now.duration_since(t.last_growth) >= idle {
                    t.tailer = None;
                    // The episode state is in the database; reloaded when the file grows.
                    t.episodes = None;
                }
            }
        }
    }

    fn spawn_ready(&mut self, tasks: &mut JoinSet<TaskResult>, cancel: &CancellationToken) {
        // Files in flight: reading is capped at `workers` by the pipeline's read slots, but a
        // file waiting for its commit costs nothing, and many files in flight is what lets the
        // writer build large groups (fewer commits, far fewer index pages written per row).
        let in_flight = self.allowed(tasks.len());
        while tasks.len() < in_flight {
            let Some(path) = self.queue.pop_front() else {
                break;
            };
            self.queued.remove(&path);
            let busy = Slot::Busy { dirty_again: false };
            let mut t = match self.slots.insert(path.clone(), busy) {
                Some(Slot::Idle(t)) => t,
                other => {
                    // Cannot happen: only registered, idle paths are queued. Restore and skip.
                    match other {
                        Some(slot) => self.slots.insert(path.clone(), slot),
                        None => self.slots.remove(&path),
                    };
                    continue;
                }
            };
            t.ended = self.ending.remove(&*path);
            let pipeline = self.pipeline.clone();
            let cancel = cancel.clone();
            tasks.spawn(async move {
                // Stat before reading: growth during the pump then shows up as a change on the
                // next rescan instead of being hidden by a stat taken afterwards.
                let seen = stat_key(&path);
                let end = pipeline.pump(&mut t, &cancel).await;
                t.seen = seen;
                (path, t, end)
            });
        }
    }

    fn finish(&mut self, (path, mut t, end): TaskResult) {
        t.ended = false;
        let dirty_again = matches!(
            self.slots.get(&path),
            Some(Slot::Busy { dirty_again: true })
        );
        if matches!(end, PumpEnd::Failed | PumpEnd::StoreDown) {
            t.seen = None;
        }
        match end {
            PumpEnd::Failed => t.failures = t.failures.saturating_add(1),
            PumpEnd::Caught | PumpEnd::Gone => t.failures = 0,
            PumpEnd::StoreDown | PumpEnd::Cancelled => {}
        }
        let retry_in = t.retry_delay(RETRY_DELAY);
        if self.probe.as_ref() == Some(&path) {
            self.probe = None;
            // A probe that wrote nothing (nothing new, a read error) says nothing about the
            // database: the next queued file probes.
            if end != PumpEnd::StoreDown && self.pipeline.health.unavailable_since().is_some() {
                self.pipeline.health.probe_inconclusive();
            }
        }
        if matches!(end, PumpEnd::Caught | PumpEnd::Gone) && self.stale(&t) {
            t.tailer = None;
            t.episodes = None;
        }
        self.slots.insert(path.clone(), Slot::Idle(t));
        match end {
            PumpEnd::Failed => self.retry.push((Instant::now() + retry_in, path)),
            // Paused, not dropped: the file waits in the queue (nothing read is kept) until a
            // probe finds the database writable again. A one-shot ingest gives up on it.
            PumpEnd::StoreDown if self.mode == Mode::Follow => self.mark(&path),
            PumpEnd::StoreDown => {}
            PumpEnd::Cancelled => {}
            PumpEnd::Caught | PumpEnd::Gone => {
                if dirty_again {
                    self.mark(&path);
                }
            }
        }
    }

    /// Whether a caught-up file can give up its tailer and episode builder at once instead of
    /// after `tail.idle_evict_secs`: a one-shot ingest never reads it again, and a file last
    /// modified longer ago than that is not being written. (Kept, they were ~3 KB a file: 10,000
    /// old files took a backfill past its memory target.) Reading it again reloads both.
    fn stale(&self, t: &Tracked) -> bool {
        if self.mode == Mode::Once {
            return true;
        }
        let Some((_, mtime_ns, _)) = t.seen else {
            return false;
        };
        let now_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        now_ns - mtime_ns > self.pipeline.cfg.tail.idle_evict.as_nanos() as i128
    }

    /// Run until caught up (`Mode::Once`) or cancelled (`Mode::Follow`).
    ///
    /// In `Once` mode files that keep failing are given up on after the queue drains, so a
    /// broken database ends the run with an error count instead of hanging.
    pub async fn run(
        mut self,
        mode: Mode,
        initial: Hint,
        mut hints: mpsc::Receiver<Hint>,
        cancel: CancellationToken,
    ) -> Engine {
        let cfg = self.pipeline.cfg.clone();
        self.mode = mode;
        self.apply(initial);
        if mode == Mode::Follow {
            self.sweep_idle().await;
        }
        let sweep_every =
            (cfg.sessions.idle_timeout / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
        let mut sweep =
            tokio::time::interval_at(tokio::time::Instant::now() + sweep_every, sweep_every);
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut tasks: JoinSet<TaskResult> = JoinSet::new();
        let mut rescan = tokio::time::interval_at(
            tokio::time::Instant::now() + cfg.daemon.rescan_interval,
            cfg.daemon.rescan_interval,
        );
        rescan.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let evict_every = (cfg.tail.idle_evict / 2).max(Duration::from_secs(1));
        let mut evict =
            tokio::time::interval_at(tokio::time::Instant::now() + evict_every, evict_every);
        evict.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // While events cover only part of the folder (or none of it), the tree is polled.
        let mut poll = tokio::time::interval_at(
            tokio::time::Instant::now() + cfg.daemon.poll_interval,
            cfg.daemon.poll_interval,
        );
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut hints_open = true;
        // The first pass over the folder (the backlog) is done once nothing is queued, in flight
        // or waiting for registration: said once, and the sessions it found already idle are
        // finished then (as `ingest` does), not at the next sweep a minute later.
        let (started, mut caught_up) = (Instant::now(), mode != Mode::Follow);
        // Memory is given back once the daemon has been quiet a moment after work.
        let (mut worked, mut quiet_at) = (false, None);

        loop {
            self.pipeline
                .stats
                .heartbeat
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if !self.unregistered.is_empty() && !cancel.is_cancelled() {
                self.register_new().await;
            }
            if !cancel.is_cancelled() {
                self.spawn_ready(&mut tasks, &cancel);
            }
            if !self.pending_ends.is_empty() {
                self.settle_session_ends().await;
            }
            self.pipeline.stats.tracked.store(
                self.slots.len() as u64,
                std::sync::atomic::Ordering::Relaxed,
            );
            if mode == Mode::Once && tasks.is_empty() && self.queue.is_empty() {
                break;
            }
            if !caught_up
                && tasks.is_empty()
                && self.queue.is_empty()
                && self.unregistered.is_empty()
                && !cancel.is_cancelled()
            {
                caught_up = true;
                let stats = &self.pipeline.stats;
                tracing::info!(
                    files = self.slots.len(),
                    bytes = stats.bytes.load(Ordering::Relaxed),
                    lines = stats.lines.load(Ordering::Relaxed),
                    seconds = format_args!("{:.1}", started.elapsed().as_secs_f64()),
                    "caught up"
                );
                // A first pass that wrote a backfill leaves the planner's statistics behind
                // the tables (see `Store::analyze_after_bulk`).
                if stats.lines.load(Ordering::Relaxed) >= super::BULK_LINES {
                    if let Err(e) = self.pipeline.store.analyze_after_bulk().await {
                        tracing::warn!(error = %e, "cannot refresh the planner's statistics");
                    }
                }
                self.sweep_idle().await;
            }
            if cancel.is_cancelled() && tasks.is_empty() {
                break;
            }
            if !tasks.is_empty() {
                (worked, quiet_at) = (true, None);
            } else if worked && quiet_at.is_none() && mode == Mode::Follow {
                quiet_at = Some(Instant::now() + RELEASE_AFTER);
            }
            let next_retry = self.retry.iter().map(|(at, _)| *at).min();
            // During an outage: wake when the next probe is due.
            let wake = self.outage_wake();
            tokio::select! {
                _ = sleep_until(wake), if wake.is_some() && !cancel.is_cancelled() => {
                    if self.queue.is_empty() {
                        self.ping_store().await;
                    }
                }
                Some(res) = tasks.join_next(), if !tasks.is_empty() => match res {
                    Ok(r) => self.finish(r),
                    Err(e) => tracing::error!(error = %e, "file task panicked or was aborted"),
                },
                hint = hints.recv(), if hints_open && !cancel.is_cancelled() => match hint {
                    Some(h) => self.apply(h),
                    None => hints_open = false,
                },
                _ = rescan.tick(), if mode == Mode::Follow && !cancel.is_cancelled() => {
                    self.apply(Hint::Rescan);
                }
                _ = poll.tick(), if mode == Mode::Follow && !cancel.is_cancelled() => {
                    let watching = self.pipeline.stats.watching.load(Ordering::Relaxed);
                    if watching != super::watcher::WATCH_EVENTS {
                        self.apply(Hint::Rescan);
                    }
                }
                _ = evict.tick(), if mode == Mode::Follow => self.evict_idle(cfg.tail.idle_evict),
                _ = sleep_until(quiet_at), if quiet_at.is_some() => {
                    (worked, quiet_at) = (false, None);
                    self.pipeline.store.release_memory().await;
                    super::memory::release();
                }
                _ = sweep.tick(), if mode == Mode::Follow && !cancel.is_cancelled() => {
                    self.sweep_idle().await;
                }
                _ = sleep_until(next_retry), if next_retry.is_some() && !cancel.is_cancelled() => {
                    let now = Instant::now();
                    let (due, later): (Vec<_>, Vec<_>) =
                        self.retry.drain(..).partition(|(at, _)| *at <= now);
                    self.retry = later;
                    if mode == Mode::Follow {
                        for (_, p) in due {
                            self.mark(&p);
                        }
                    }
                }
                _ = cancel.cancelled(), if !cancel.is_cancelled() => {}
            }
            if mode == Mode::Once && tasks.is_empty() && self.queue.is_empty() {
                self.retry.clear();
            }
        }
        self
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// `(size, mtime in ns, inode)` of a path, or `None` if it cannot be read.
pub fn stat_key(p: &Path) -> Option<(u64, i128, u64)> {
    let m = std::fs::metadata(p).ok()?;
    let mtime = m
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0);
    #[cfg(unix)]
    let ino = std::os::unix::fs::MetadataExt::ino(&m);
    #[cfg(not(unix))]
    let ino = 0;
    Some((m.len(), mtime, ino))
}
