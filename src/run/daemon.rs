//! `gleaner daemon`: follow the transcripts folder until SIGTERM / SIGINT.
//!
//! Workers (named as in watchexec): `watcher` turns notify events into debounced [`Hint`]s,
//! `signals` turns SIGTERM/SIGINT into cancellation, and the [`Engine`] pumps files. Shutdown:
//! cancel, let in-flight pumps finish their current transaction (or drop it, which rolls it back)
//! within [`SHUTDOWN_GRACE`], close the pool, release the lock.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use notify::{EventKind, RecursiveMode, Watcher};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::run::engine::{Engine, Hint, Mode};
use crate::run::pump::{Pipeline, Stats};
use crate::run::socket::{self, Request, Response, StatusReport};
use crate::store::{Store, StoreError};

/// Longest wait for in-flight batches after a stop signal.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Why the daemon (or a one-shot ingest) could not run.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
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
    /// A database error at startup.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A redaction pattern does not compile.
    #[error(transparent)]
    Redact(#[from] crate::extract::redact::PatternError),
}

/// The single-instance lock: an exclusive advisory lock on `<data_dir>/gleaner.lock`, released
/// by the OS when the process dies (so a `kill -9` never leaves a stale lock behind).
#[derive(Debug)]
pub struct InstanceLock {
    _file: File,
}

/// Take the lock or say who holds it.
pub fn acquire_lock(path: &Path) -> Result<InstanceLock, DaemonError> {
    let io_err = |source| DaemonError::LockIo {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io_err)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(io_err)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let holder = std::fs::read_to_string(path)
                .ok()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .map(|pid| format!(" by pid {pid}"))
                .unwrap_or_default();
            return Err(DaemonError::Locked {
                path: path.to_path_buf(),
                holder,
            });
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(io_err(e)),
    }
    file.set_len(0).map_err(io_err)?;
    writeln!(file, "{}", std::process::id()).map_err(io_err)?;
    Ok(InstanceLock { _file: file })
}

/// Run the daemon until `cancel` fires (see [`install_signals`]).
pub async fn run(
    cfg: Arc<Config>,
    store: Store,
    cancel: CancellationToken,
) -> Result<(), DaemonError> {
    let _lock = acquire_lock(&cfg.lock_path())?;
    let pipeline = Arc::new(Pipeline::new(cfg.clone(), store.clone())?);
    let engine = Engine::new(pipeline.clone()).await?;
    tracing::info!(
        projects_dir = %cfg.projects_dir.display(),
        machine = %cfg.machine_id,
        files = engine.tracked(),
        "daemon started"
    );
    let (hint_tx, hint_rx) = mpsc::channel(256);

    let sock = socket::socket_path(&cfg.data_dir);
    let listener = socket::bind(&sock).map_err(|source| DaemonError::Socket {
        path: sock.clone(),
        source,
    })?;
    let started = std::time::Instant::now();
    let handler = {
        let (cfg, stats, hints) = (cfg.clone(), pipeline.stats.clone(), hint_tx.clone());
        move |req: Request| {
            let (cfg, stats, hints) = (cfg.clone(), stats.clone(), hints.clone());
            async move { answer(req, &cfg, &stats, &hints, started).await }
        }
    };
    let server = tokio::spawn(socket::serve(listener, sock, handler, cancel.clone()));
    let watcher = tokio::spawn(watch(cfg.clone(), hint_tx, cancel.clone()));
    let engine_task = tokio::spawn(engine.run(Mode::Follow, Hint::Rescan, hint_rx, cancel.clone()));

    cancel.cancelled().await;
    tracing::info!("stopping: finishing in-flight batches");
    match tokio::time::timeout(SHUTDOWN_GRACE, engine_task).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => tracing::error!(error = %e, "engine task failed"),
        Err(_) => tracing::warn!("in-flight batches did not finish in time; rolled back"),
    }
    watcher.abort();
    let _ = tokio::time::timeout(Duration::from_secs(1), server).await;
    store.close().await;
    let s = &pipeline.stats;
    tracing::info!(
        bytes = s.bytes.load(Ordering::Relaxed),
        messages = s.messages.load(Ordering::Relaxed),
        "daemon stopped"
    );
    Ok(())
}

/// Longest time a session-end request waits for the session's files to be ingested.
const SESSION_END_WAIT: Duration = Duration::from_secs(10);

/// Serve one status-socket request.
async fn answer(
    req: Request,
    cfg: &Config,
    stats: &Stats,
    hints: &mpsc::Sender<Hint>,
    started: std::time::Instant,
) -> Response {
    match req {
        Request::Status => Response::Status(StatusReport {
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            uptime_secs: started.elapsed().as_secs(),
            projects_dir: cfg.projects_dir.display().to_string(),
            database: crate::config::redact_url(&cfg.database.url),
            files: stats.tracked.load(Ordering::Relaxed),
            bytes: stats.bytes.load(Ordering::Relaxed),
            lines: stats.lines.load(Ordering::Relaxed),
            messages: stats.messages.load(Ordering::Relaxed),
            diagnostics: stats.diagnostics.load(Ordering::Relaxed),
            batches: stats.batches.load(Ordering::Relaxed),
            errors: stats.errors.load(Ordering::Relaxed),
        }),
        Request::SessionEnd {
            session_id,
            transcript_path,
        } => {
            let (reply, rx) = oneshot::channel();
            let hint = Hint::SessionEnd {
                session_id: session_id.clone(),
                transcript_path,
                reply,
            };
            if hints.send(hint).await.is_err() {
                return Response::Error {
                    message: "daemon is shutting down".into(),
                };
            }
            match tokio::time::timeout(SESSION_END_WAIT, rx).await {
                Ok(Ok(finished)) => Response::SessionEnded {
                    session_id,
                    finished,
                },
                _ => Response::Error {
                    message: format!(
                        "session {session_id} not settled within {SESSION_END_WAIT:?}"
                    ),
                },
            }
        }
    }
}

/// Install the SIGTERM/SIGINT handlers now and return the token they cancel.
///
/// Called first thing by `gleaner daemon`, before the database is even opened: a stop signal
/// that arrives during startup must still mean "stop cleanly, exit 0", never the default
/// action (death by signal). Must run inside the runtime.
pub fn install_signals() -> std::io::Result<CancellationToken> {
    let cancel = CancellationToken::new();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        let c = cancel.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = term.recv() => tracing::info!(signal = "SIGTERM", "stop requested"),
                _ = int.recv() => tracing::info!(signal = "SIGINT", "stop requested"),
            }
            c.cancel();
        });
    }
    #[cfg(not(unix))]
    {
        let c = cancel.clone();
        tokio::spawn(async move {
            let _ = tokio::signal::ctrl_c().await;
            c.cancel();
        });
    }
    Ok(cancel)
}

/// Raw notify output, before debouncing.
enum Raw {
    Event(notify::Event),
    Error(notify::Error),
}

/// Watch the projects folder (re-trying until it exists), debounce events into hints.
async fn watch(cfg: Arc<Config>, hints: mpsc::Sender<Hint>, cancel: CancellationToken) {
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
                    tracing::debug!(dir = %root.display(), "watching");
                    // Files created before the watch existed.
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
                Some(Raw::Error(e)) => {
                    tracing::warn!(error = %e, "watch error; rescanning");
                    rescan = true;
                    if !root.is_dir() {
                        watching = false;
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
