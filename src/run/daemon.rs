//! `gleaner daemon`: follow the transcripts folder until SIGTERM / SIGINT.
//!
//! Workers, named as in watchexec and spawned into one `JoinSet`: `socket` serves the status
//! socket, `watcher` turns notify events into debounced [`Hint`]s, `engine` pumps files and
//! `writer` commits their batches. The engine and the writer are critical: if either ends
//! while the daemon should run, the daemon stops with an error. The socket and the watcher are
//! recoverable (the periodic rescan covers a dead watcher).
//!
//! Shutdown: cancel; the engine lets in-flight pumps finish their current transaction (or drops
//! it, which rolls it back); the engine's end drops the last handle to the writer, which drains
//! its queue and ends. Every worker is awaited, all within [`SHUTDOWN_GRACE`]; one still running
//! then is named in the log and aborted. Then the pool is closed and the lock released.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::engine::{Engine, Hint, Mode};
use super::lock::acquire_lock;
use super::pump::{Pipeline, Stats};
use super::socket::{self, Request, Response, StatusReport};
use super::{watcher, RunError};
use crate::config::Config;
use crate::store::{redact_url, Store};

/// Longest wait for the workers after a stop signal.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Workers whose end stops the daemon.
const CRITICAL: [&str; 2] = ["engine", "writer"];

/// The daemon's workers, by name.
#[derive(Default)]
struct Workers {
    set: JoinSet<&'static str>,
    running: Vec<&'static str>,
}

impl Workers {
    /// Run `work` as the worker `name`.
    fn spawn(&mut self, name: &'static str, work: impl Future<Output = ()> + Send + 'static) {
        self.running.push(name);
        self.set.spawn(async move {
            work.await;
            name
        });
    }

    /// The next worker to end: `Some(Ok(name))`, `Some(Err(_))` if it panicked, `None` when
    /// none is left.
    async fn next(&mut self) -> Option<Result<&'static str, tokio::task::JoinError>> {
        let ended = self.set.join_next().await?;
        if let Ok(name) = &ended {
            self.running.retain(|n| n != name);
        }
        Some(ended)
    }
}

/// Run the daemon until `cancel` fires (see [`install_signals`]).
pub async fn run(
    cfg: Arc<Config>,
    store: Store,
    cancel: CancellationToken,
) -> Result<(), RunError> {
    let _lock = acquire_lock(&cfg.lock_path())?;
    let (pipeline, writer) = Pipeline::new(cfg.clone(), store.clone());
    let pipeline = pipeline.wait_for_sessions();
    let pipeline = Arc::new(pipeline);
    let stats = pipeline.stats.clone();
    let engine = Engine::new(pipeline).await?;
    tracing::info!(
        projects_dir = %cfg.projects_dir.display(),
        machine = %cfg.machine_id,
        files = engine.tracked(),
        "daemon started"
    );
    if !cfg.projects_dir.is_dir() {
        tracing::warn!(
            projects_dir = %cfg.projects_dir.display(),
            "projects folder does not exist yet; waiting for it to appear"
        );
    }
    let (hint_tx, hint_rx) = mpsc::channel(256);

    let sock = socket::socket_path(&cfg.data_dir);
    let listener = socket::bind(&sock).map_err(|source| RunError::Socket {
        path: sock.clone(),
        source,
    })?;
    let started = std::time::Instant::now();
    let handler = {
        let (cfg, stats, hints, db) = (cfg.clone(), stats.clone(), hint_tx.clone(), store.clone());
        move |req: Request| {
            let (cfg, stats, hints, db) = (cfg.clone(), stats.clone(), hints.clone(), db.clone());
            async move { answer(req, &cfg, &stats, &hints, &db, started).await }
        }
    };
    let mut workers = Workers::default();
    workers.spawn("writer", writer);
    workers.spawn(
        "socket",
        socket::serve(listener, sock, handler, cancel.clone()),
    );
    workers.spawn(
        "watcher",
        watcher::watch(cfg.clone(), hint_tx, stats.clone(), cancel.clone()),
    );
    let engine_cancel = cancel.clone();
    workers.spawn("engine", async move {
        // The engine (and with it the last handle to the writer) is dropped when it returns.
        engine
            .run(Mode::Follow, Hint::Rescan, hint_rx, engine_cancel)
            .await;
    });

    if cfg.refine.command.is_some() {
        // Recoverable: a refine worker that stops leaves ingestion running.
        workers.spawn(
            "refine",
            super::refine::worker(
                store.clone(),
                cfg.refine.clone(),
                cfg.redactor.clone(),
                stats.clone(),
                cancel.clone(),
            ),
        );
    }

    // systemd (Type=notify): ready once the lock, the database, its migrations, the watcher
    // and the first directory scan are done, not after the backlog is ingested.
    let ready = format!("watching {} files", stats.tracked.load(Ordering::Relaxed));
    notify(&[
        sd_notify::NotifyState::Ready,
        sd_notify::NotifyState::Status(&ready),
    ]);
    workers.spawn("notify", notify_progress(stats.clone(), cancel.clone()));

    let mut outcome = Ok(());
    loop {
        tokio::select! {
            biased;
            _ = cancel.cancelled() => break,
            ended = workers.next() => match ended {
                // Workers end on their own once the stop signal is seen: not a failure.
                Some(Ok(name)) if cancel.is_cancelled() => {
                    tracing::debug!(worker = name, "worker stopped");
                    break;
                }
                Some(Ok(name)) if CRITICAL.contains(&name) => {
                    tracing::error!(worker = name, "critical worker stopped; shutting down");
                    outcome = Err(RunError::WorkerEnded(name));
                    cancel.cancel();
                    break;
                }
                Some(Ok(name)) => tracing::warn!(worker = name, "worker stopped"),
                Some(Err(e)) => {
                    tracing::error!(error = %e, "worker panicked; shutting down");
                    outcome = Err(RunError::WorkerEnded("unknown"));
                    cancel.cancel();
                    break;
                }
                None => break,
            },
        }
    }
    tracing::info!("stopping: finishing in-flight batches");
    notify(&[sd_notify::NotifyState::Stopping]);
    shutdown(&mut workers).await;
    store.close().await;
    tracing::info!(
        bytes = stats.bytes.load(Ordering::Relaxed),
        messages = stats.messages.load(Ordering::Relaxed),
        "daemon stopped"
    );
    outcome
}

/// Send states to systemd when it started us with a notify socket (a no-op otherwise).
fn notify(states: &[sd_notify::NotifyState<'_>]) {
    if let Err(e) = sd_notify::notify(false, states) {
        tracing::debug!(error = %e, "sd_notify failed");
    }
}

/// Report progress to systemd (`STATUS=`) and feed its watchdog (`WATCHDOG=1`) only while the
/// engine's loop turns: a hung engine stops the pings and systemd restarts the daemon.
async fn notify_progress(stats: Arc<super::pump::Stats>, cancel: CancellationToken) {
    // sd_watchdog_enabled(3): WATCHDOG_USEC set, and WATCHDOG_PID, when set, is this process.
    let usec: u64 = std::env::var("WATCHDOG_USEC")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let for_us = std::env::var("WATCHDOG_PID")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .is_none_or(|pid| pid == std::process::id());
    let watchdog = usec > 0 && for_us;
    let every = if watchdog {
        Duration::from_micros(usec / 3).max(Duration::from_millis(100))
    } else {
        Duration::from_secs(10)
    };
    let mut seen = stats.heartbeat.load(Ordering::Relaxed);
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        let beat = stats.heartbeat.load(Ordering::Relaxed);
        let status = format!(
            "{} files, {:.1} MB and {} messages ingested since start",
            stats.tracked.load(Ordering::Relaxed),
            stats.bytes.load(Ordering::Relaxed) as f64 / 1e6,
            stats.messages.load(Ordering::Relaxed)
        );
        if watchdog && beat != seen {
            notify(&[
                sd_notify::NotifyState::Watchdog,
                sd_notify::NotifyState::Status(&status),
            ]);
        } else {
            notify(&[sd_notify::NotifyState::Status(&status)]);
        }
        seen = beat;
    }
}

/// Await every worker within [`SHUTDOWN_GRACE`]; abort (and name) the ones still running.
async fn shutdown(workers: &mut Workers) {
    let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
    loop {
        match tokio::time::timeout_at(deadline, workers.next()).await {
            Ok(Some(Ok(name))) => tracing::debug!(worker = name, "worker stopped"),
            Ok(Some(Err(e))) => tracing::error!(error = %e, "worker failed during shutdown"),
            Ok(None) => break,
            Err(_) => {
                tracing::warn!(
                    workers = ?workers.running,
                    "workers did not stop in time; in-flight batches rolled back"
                );
                workers.set.abort_all();
                while workers.set.join_next().await.is_some() {}
                break;
            }
        }
    }
}

/// Longest time a session-end request waits for the session's files to be ingested.
const SESSION_END_WAIT: Duration = Duration::from_secs(10);

/// Serve one status-socket request.
async fn answer(
    req: Request,
    cfg: &Config,
    stats: &Stats,
    hints: &mpsc::Sender<Hint>,
    store: &Store,
    started: std::time::Instant,
) -> Response {
    match req {
        Request::Status => {
            // The database's own figures, within a second: a slow or unreachable database is
            // reported, not waited for.
            let figures = tokio::time::timeout(
                Duration::from_secs(1),
                store.daemon_figures(&cfg.machine_id),
            )
            .await;
            let (database_state, figures) = match figures {
                Ok(Ok(f)) => ("ok".to_string(), Some(f)),
                Ok(Err(e)) => (format!("unavailable: {e}"), None),
                Err(_) => ("unavailable: no answer within 1 s".to_string(), None),
            };
            Response::Status(Box::new(StatusReport {
                pid: std::process::id(),
                version: env!("CARGO_PKG_VERSION").to_string(),
                uptime_secs: started.elapsed().as_secs(),
                projects_dir: cfg.projects_dir.display().to_string(),
                database: redact_url(&cfg.database.url),
                files: stats.tracked.load(Ordering::Relaxed),
                bytes: stats.bytes.load(Ordering::Relaxed),
                lines: stats.lines.load(Ordering::Relaxed),
                messages: stats.messages.load(Ordering::Relaxed),
                diagnostics: stats.diagnostics.load(Ordering::Relaxed),
                batches: stats.batches.load(Ordering::Relaxed),
                errors: stats.errors.load(Ordering::Relaxed),
                refined: stats.refined.load(Ordering::Relaxed),
                refine_failed: stats.refine_failed.load(Ordering::Relaxed),
                watch_mode: if stats.watching.load(Ordering::Relaxed) == 1 {
                    "events".into()
                } else {
                    "poll".into()
                },
                database_state,
                figures,
            }))
        }
        Request::Rescan => {
            if hints.send(Hint::Rescan).await.is_err() {
                return Response::Error {
                    message: "daemon is shutting down".into(),
                };
            }
            Response::Accepted
        }
        Request::IngestNow { path } => {
            if hints.send(Hint::Paths(vec![path])).await.is_err() {
                return Response::Error {
                    message: "daemon is shutting down".into(),
                };
            }
            Response::Accepted
        }
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
            // A second signal while shutting down: the person means it. Exit at once; the
            // transaction in flight rolls back and is read again at the next start.
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            tracing::warn!("second stop signal: exiting now");
            std::process::exit(130);
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
