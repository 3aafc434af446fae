//! `gleaner ingest`: one full pass to the end of every file, then exit.
//!
//! It is the daemon's [`Engine`] in [`Mode::Once`] with no file-system watcher: the same pump,
//! the same transactions, the same checkpoints, so a one-shot ingest and a running daemon can
//! never disagree about what was read.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::engine::{Engine, Hint, Mode};
use super::finish::sweep_idle_sessions;
use super::lock::acquire_lock;
use super::pump::{Pipeline, Stats};
use super::RunError;
use crate::config::Config;
use crate::store::Store;

/// What one ingest pass did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct IngestSummary {
    /// Files known after the pass.
    pub files: u64,
    /// Transcript bytes committed in this pass.
    pub bytes: u64,
    /// Physical lines committed.
    pub lines: u64,
    /// Message rows inserted.
    pub rows: u64,
    /// Diagnostics recorded.
    pub diagnostics: u64,
    /// Transactions.
    pub batches: u64,
    /// Read or commit failures.
    pub errors: u64,
    /// Wall time.
    pub seconds: f64,
    /// Throughput in MB/s (10^6 bytes).
    pub mb_per_s: f64,
    /// Peak resident memory of this process, when the OS tells.
    pub peak_rss_bytes: Option<u64>,
    /// Time per stage, summed over threads (see `metrics::Stage`).
    pub stage_seconds: std::collections::BTreeMap<String, f64>,
    /// Bytes of idle transcripts left in their files at reading and archived at the end, read
    /// again straight into project blocks (`crate::archive`: deferred).
    pub archived_bytes: u64,
    /// Of `seconds`, the time that took (everything was searchable before it).
    pub archive_seconds: f64,
}

/// Progress callback: `(bytes done, bytes total)`.
pub type Progress = Box<dyn Fn(u64, u64) + Send + Sync>;

/// Run one pass, holding `_lock` (the caller takes it before it opens the store: a refusal
/// for a running daemon then creates no database). `progress` is called a few times per
/// second.
pub async fn run_once(
    cfg: Arc<Config>,
    store: Store,
    progress: Option<Progress>,
    _lock: super::lock::InstanceLock,
) -> Result<IngestSummary, RunError> {
    // As the daemon: refused when another host writes under this machine id; renewed while
    // a long backfill runs.
    let holder = crate::store::lease::Holder::this_process();
    store.take_lease(&cfg.machine_id, &holder).await?;
    let lease_cancel = CancellationToken::new();
    let lease = tokio::spawn(super::daemon::keep_lease(
        store.clone(),
        cfg.machine_id.clone(),
        holder,
        lease_cancel.clone(),
    ));
    let (pipeline, writer) = Pipeline::new(cfg.clone(), store.clone());
    let writer = tokio::spawn(writer);
    let pipeline = Arc::new(pipeline);
    let stats = pipeline.stats.clone();
    let engine = Engine::new(pipeline).await?;
    let total = if progress.is_some() {
        engine.backlog_bytes()
    } else {
        0
    };
    let start = Instant::now();
    // No watcher: the sender is dropped at once, the engine's initial scan is the whole input.
    let (_, hint_rx) = mpsc::channel(1);
    let cancel = CancellationToken::new();
    let ticker = progress.map(|cb| {
        let stats = stats.clone();
        tokio::spawn(async move {
            loop {
                cb(stats.bytes.load(Ordering::Relaxed), total);
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    });
    let engine = engine.run(Mode::Once, Hint::Rescan, hint_rx, cancel).await;
    if let Some(t) = ticker {
        t.abort();
    }
    lease_cancel.cancel();
    let _ = lease.await;
    let files = engine.tracked() as u64;
    // The engine held the last handle to the writer: the writer drains and ends.
    drop(engine);
    await_writer(writer).await?;
    tracing::debug!(ms = start.elapsed().as_millis() as u64, "writer drained");
    if stats.lines.load(Ordering::Relaxed) >= super::BULK_LINES {
        if let Err(e) = store.analyze_after_bulk().await {
            tracing::warn!(error = %e, "cannot refresh the planner's statistics");
        }
    }
    // Old transcripts are finished sessions: apply the idle rule now rather than at the next
    // daemon start.
    // Its pumps read every finished file's last line already: nothing is deferred.
    if let Err(e) = sweep_idle_sessions(&store, &cfg, |_, _| false).await {
        tracing::warn!(error = %e, "idle-session sweep failed");
    }
    // What was left in the files to be archived once is archived now, before this command
    // returns: no daemon may run to do it, and Claude Code may delete the files.
    let archived = Instant::now();
    let mut packed = None;
    if cfg.archive.enabled {
        let packer = super::pack::Packer {
            machine: &cfg.machine_id,
            level: cfg.archive.pack_level,
        };
        let r = super::pack::pack_pending(
            &store,
            packer,
            super::pack::Which::Deferred,
            None,
            &CancellationToken::new(),
        )
        .await;
        match r {
            Ok(r) => packed = Some(r),
            Err(e) => {
                tracing::warn!(error = %e, "archiving what was read failed; the daemon or `gleaner pack` will");
                stats.errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    let mut s = summary(&stats, files, start.elapsed());
    if let Some(r) = packed {
        s.archived_bytes = r.archived_bytes;
        s.archive_seconds = archived.elapsed().as_secs_f64();
    }
    Ok(s)
}

/// Ingest one session's files and mark it finished: what `gleaner hook session-end` does when no
/// daemon runs. Returns whether the session was finished by this call.
pub async fn end_session(
    cfg: Arc<Config>,
    store: Store,
    session_id: String,
    transcript_path: Option<std::path::PathBuf>,
) -> Result<bool, RunError> {
    let _lock = acquire_lock(&cfg.lock_path())?;
    let (pipeline, writer) = Pipeline::new(cfg, store);
    let writer = tokio::spawn(writer);
    let engine = Engine::new(Arc::new(pipeline)).await?;
    let (_, hint_rx) = mpsc::channel(1);
    let (reply, rx) = tokio::sync::oneshot::channel();
    let initial = Hint::SessionEnd {
        session_id,
        transcript_path,
        reply,
    };
    let engine = engine
        .run(Mode::Once, initial, hint_rx, CancellationToken::new())
        .await;
    drop(engine);
    await_writer(writer).await?;
    Ok(rx.await.unwrap_or(false))
}

/// Wait for the writer to drain and end (every pump has already seen its commits).
async fn await_writer(writer: tokio::task::JoinHandle<()>) -> Result<(), RunError> {
    writer.await.map_err(|source| RunError::TaskFailed {
        task: "writer",
        source,
    })
}

fn summary(s: &Stats, files: u64, elapsed: Duration) -> IngestSummary {
    let bytes = s.bytes.load(Ordering::Relaxed);
    let seconds = elapsed.as_secs_f64();
    IngestSummary {
        files,
        bytes,
        lines: s.lines.load(Ordering::Relaxed),
        rows: s.messages.load(Ordering::Relaxed),
        diagnostics: s.diagnostics.load(Ordering::Relaxed),
        batches: s.batches.load(Ordering::Relaxed),
        errors: s.errors.load(Ordering::Relaxed),
        seconds,
        mb_per_s: if seconds > 0.0 {
            bytes as f64 / 1e6 / seconds
        } else {
            0.0
        },
        peak_rss_bytes: peak_rss_bytes(),
        stage_seconds: crate::metrics::stage_seconds()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        archived_bytes: 0,
        archive_seconds: 0.0,
    }
}

/// Peak resident set size of this process (Linux: `VmHWM` of /proc/self/status).
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
