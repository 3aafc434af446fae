//! The `watcher` worker: notify events debounced into [`Hint`]s.
//!
//! Events are only hints: a lost or coalesced event costs latency, never data, because the
//! engine reads every file from its stored offset to its last newline and the periodic rescan
//! catches whatever the events missed. Overflow of the raw channel asks for a rescan.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use notify::{EventKind, RecursiveMode, Watcher};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::engine::Hint;
use crate::config::Config;

/// Raw notify output, before debouncing.
enum Raw {
    Event(notify::Event),
    Error(notify::Error),
}

/// `Stats::watching` values: no events (the folder is missing or cannot be watched).
pub const WATCH_POLL: u64 = 0;
/// Events for the whole folder.
pub const WATCH_EVENTS: u64 = 1;
/// Events for part of it: the inotify watch limit was reached; the whole tree is polled.
pub const WATCH_DEGRADED: u64 = 2;

/// The name `gleaner status` shows for a `Stats::watching` value.
pub fn watch_mode_name(v: u64) -> &'static str {
    match v {
        WATCH_EVENTS => "events",
        WATCH_DEGRADED => "degraded",
        _ => "poll",
    }
}

fn is_watch_limit(e: &notify::Error) -> bool {
    matches!(e.kind, notify::ErrorKind::MaxFilesWatch)
}

/// Switch to polling for folders without a watch; said once, in the log and in status.
fn degrade(stats: &super::pump::Stats) {
    if stats.watching.swap(WATCH_DEGRADED, Ordering::Relaxed) != WATCH_DEGRADED {
        tracing::warn!(
            "inotify watch limit reached: some folders are polled instead of watched \
             (raise fs.inotify.max_user_watches, e.g. sysctl fs.inotify.max_user_watches=524288)"
        );
    }
}

/// Watch the projects folder (re-trying until it exists), debounce events into hints.
pub async fn watch(
    cfg: Arc<Config>,
    hints: mpsc::Sender<Hint>,
    stats: Arc<super::pump::Stats>,
    cancel: CancellationToken,
) {
    let (raw_tx, mut raw_rx) = mpsc::channel::<Raw>(4096);
    // Set when the raw channel overflowed: events were lost, so ask for a full rescan.
    let overflow = Arc::new(AtomicBool::new(false));
    let overflow_cb = overflow.clone();
    let mut watcher = match notify::recommended_watcher(
        move |res: notify::Result<notify::Event>| {
            let msg = match res {
                Ok(ev) => Raw::Event(ev),
                Err(e) => Raw::Error(e),
            };
            if raw_tx.try_send(msg).is_err() {
                overflow_cb.store(true, Ordering::Relaxed);
            }
        },
    ) {
        Ok(w) => w,
        Err(e) => {
            tracing::error!(error = %e, "cannot create file watcher; relying on periodic rescans");
            return;
        }
    };
    let root = cfg.projects_dir.clone();
    let mut watching = false;
    let mut retry = tokio::time::interval(cfg.daemon.rescan_interval);
    loop {
        if !watching && root.is_dir() {
            match watcher.watch(&root, RecursiveMode::Recursive) {
                Ok(()) => {
                    watching = true;
                    stats.watching.store(WATCH_EVENTS, Ordering::Relaxed);
                    tracing::info!(dir = %root.display(), "watching the projects folder");
                    // Files created before the watch existed.
                    if hints.send(Hint::Rescan).await.is_err() {
                        return;
                    }
                }
                Err(e) if is_watch_limit(&e) => {
                    // Some folders are watched, the rest are not: poll the whole tree.
                    watching = true;
                    degrade(&stats);
                    if hints.send(Hint::Rescan).await.is_err() {
                        return;
                    }
                }
                Err(e) => tracing::warn!(dir = %root.display(), error = %e, "cannot watch"),
            }
        }
        let first = tokio::select! {
            _ = cancel.cancelled() => return,
            _ = retry.tick(), if !watching => continue,
            m = raw_rx.recv() => match m { Some(m) => m, None => return },
        };
        // Debounce: collect what arrives within the window into one hint.
        let mut paths = BTreeSet::new();
        let mut dirs = BTreeSet::new();
        let mut rescan = false;
        let deadline = tokio::time::Instant::now() + cfg.daemon.debounce;
        let mut next = Some(first);
        loop {
            match next.take() {
                // Our own reads show up as Access (open/close-nowrite) events: reacting to
                // them would make every read trigger another read.
                Some(Raw::Event(ev)) if matches!(ev.kind, EventKind::Access(_)) => {
                    rescan |= ev.need_rescan();
                }
                Some(Raw::Event(ev)) => {
                    if ev.need_rescan() {
                        rescan = true;
                    }
                    for p in ev.paths {
                        if matches!(ev.kind, EventKind::Create(_)) && p.is_dir() {
                            dirs.insert(p);
                        } else if crate::tail::discovery::is_transcript(&p)
                            || matches!(ev.kind, EventKind::Remove(_))
                        {
                            paths.insert(p);
                        }
                    }
                }
                Some(Raw::Error(e)) if is_watch_limit(&e) => {
                    // A folder created later could not be watched.
                    degrade(&stats);
                    rescan = true;
                }
                Some(Raw::Error(e)) => {
                    tracing::warn!(error = %e, "watch error; rescanning");
                    rescan = true;
                    if !root.is_dir() {
                        watching = false;
                        stats.watching.store(WATCH_POLL, Ordering::Relaxed);
                    }
                }
                None => {}
            }
            match tokio::time::timeout_at(deadline, raw_rx.recv()).await {
                Ok(Some(m)) => next = Some(m),
                Ok(None) | Err(_) => break,
            }
        }
        if overflow.swap(false, Ordering::Relaxed) {
            rescan = true;
        }
        let mut out = Vec::new();
        if rescan {
            out.push(Hint::Rescan);
        }
        out.extend(dirs.into_iter().map(Hint::Dir));
        if !paths.is_empty() {
            out.push(Hint::Paths(paths.into_iter().collect()));
        }
        for h in out {
            if hints.send(h).await.is_err() {
                return;
            }
        }
    }
}
