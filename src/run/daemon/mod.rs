//! `gleaner daemon`: follow the transcripts folder until SIGTERM / SIGINT.
//!
//! Workers, named as in watchexec and spawned into `JoinSet`s (one for the lifelong workers, one
//! per configuration generation): `socket` serves the status socket, `watcher` turns notify
//! events into debounced [`Hint`]s, `engine` pumps files, `writer` commits their batches and
//! `lease` keeps this machine's writer lease. Those three are critical: if one ends while the
//! daemon should run, the daemon stops with an error. The socket and the watcher are
//! recoverable (the periodic rescan covers a dead watcher).
//!
//! Shutdown: cancel; the engine lets in-flight pumps finish their current transaction (or drops
//! it, which rolls it back); the engine's end drops the last handle to the writer, which drains
//! its queue and ends. Every worker is awaited, all within [`SHUTDOWN_GRACE`]; one still running
//! then is named in the log and aborted. Then the pool is closed and the lock released.

mod lease;
mod reload;

pub(super) use lease::keep_lease;
use reload::{prepare_reload, same_database};

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::engine::{Engine, Hint, Mode};
use super::health::Health;
use super::lock::acquire_lock;
use super::pump::{Pipeline, Stats};
use super::socket::{self, Request};
use super::{watcher, RunError};
use crate::config::{Config, ConfigError};
use crate::store::lease::Holder;
use crate::store::Store;

/// Longest wait for the workers after a stop signal.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Workers whose end stops the daemon.
const CRITICAL: [&str; 3] = ["engine", "writer", "lease"];

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

/// Re-reads the configuration from the sources it was first read from (file, environment, the
/// command line's flags): what a reload applies.
pub type LoadConfig = Box<dyn Fn() -> Result<Config, ConfigError> + Send + Sync>;

/// A request to read the configuration again: from SIGHUP (no reply) or the socket.
#[derive(Debug)]
pub struct ReloadRequest {
    pub(super) reply: Option<oneshot::Sender<Result<Vec<String>, String>>>,
}

/// How the daemon is told to stop or reload: SIGTERM/SIGINT cancel `stop`, SIGHUP sends on
/// `reload` (see [`install_signals`]).
#[derive(Debug)]
pub struct Signals {
    /// Cancelled by the first SIGTERM or SIGINT.
    pub stop: CancellationToken,
    /// Reload requests (SIGHUP; the socket adds its own).
    pub reload_tx: mpsc::Sender<ReloadRequest>,
    reload_rx: mpsc::Receiver<ReloadRequest>,
}

impl Signals {
    /// Signals no OS signal feeds (tests, embedding): cancel `stop` to end the daemon.
    pub fn manual() -> Signals {
        let (reload_tx, reload_rx) = mpsc::channel(4);
        Signals {
            stop: CancellationToken::new(),
            reload_tx,
            reload_rx,
        }
    }
}

/// What the socket handler needs, shared across reloads.
pub(super) struct Shared {
    cfg: std::sync::RwLock<Arc<Config>>,
    hints: std::sync::RwLock<mpsc::Sender<Hint>>,
    store: std::sync::RwLock<Store>,
    pub(super) stats: Arc<Stats>,
    pub(super) health: Arc<Health>,
    pub(super) reload: mpsc::Sender<ReloadRequest>,
    pub(super) reloads: AtomicU64,
    pub(super) started: std::time::Instant,
}

impl Shared {
    pub(super) fn cfg(&self) -> Arc<Config> {
        read(&self.cfg).clone()
    }
    pub(super) fn hints(&self) -> mpsc::Sender<Hint> {
        read(&self.hints).clone()
    }
    pub(super) fn store(&self) -> Store {
        read(&self.store).clone()
    }
}

fn read<T>(l: &std::sync::RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write<T>(l: &std::sync::RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How one generation of workers ended.
enum Ended {
    /// Stop signal, or a critical worker failed (the outcome says which).
    Stop(Result<(), RunError>),
    /// A valid new configuration: start the next generation with it.
    Reload(Arc<Config>, Store),
}

/// Run the daemon until `signals.stop` fires (see [`install_signals`]).
///
/// The lock, the socket, the counters and the systemd notifier live for the whole run; the
/// workers that depend on the configuration (engine, writer, watcher, refine) form a
/// *generation*. A reload (SIGHUP or the `reload` request) reads the configuration again; if it
/// is valid, the generation is stopped as at shutdown (in-flight batches commit or roll back)
/// and the next one starts with it, so every setting takes effect without losing anything. An
/// invalid configuration is logged and answered as an error, and the running one is kept.
pub async fn run(
    cfg: Arc<Config>,
    store: Store,
    signals: Signals,
    load: LoadConfig,
) -> Result<(), RunError> {
    let Signals {
        stop: cancel,
        reload_tx,
        mut reload_rx,
    } = signals;
    let _lock = acquire_lock(&cfg.lock_path())?;
    let sock = socket::socket_path(&cfg.data_dir);
    let listener = socket::bind(&sock).map_err(|source| RunError::Socket {
        path: sock.clone(),
        source,
    })?;
    let (placeholder, _) = mpsc::channel(1);
    let shared = Arc::new(Shared {
        cfg: std::sync::RwLock::new(cfg.clone()),
        hints: std::sync::RwLock::new(placeholder),
        store: std::sync::RwLock::new(store.clone()),
        stats: Arc::new(Stats::default()),
        health: Arc::new(Health::default()),
        reload: reload_tx,
        reloads: AtomicU64::new(0),
        started: std::time::Instant::now(),
    });
    let handler = {
        let shared = shared.clone();
        move |req: Request| {
            let shared = shared.clone();
            async move { super::requests::answer(req, &shared).await }
        }
    };
    // Lifelong workers: the socket and the systemd notifier.
    let mut lifelong = Workers::default();
    lifelong.spawn(
        "socket",
        socket::serve(listener, sock, handler, cancel.clone()),
    );

    let (mut cfg, mut store) = (cfg, store);
    let mut first = true;
    let outcome = loop {
        let generation = cancel.child_token();
        let mut workers = match start_generation(&cfg, &store, &shared, &generation).await {
            Ok(w) => w,
            Err(e) => break Err(e),
        };
        if first {
            // systemd (Type=notify): ready once the lock, the database, its migrations, the
            // watcher and the first directory scan are done, not after the backlog.
            let ready = format!(
                "watching {} files",
                shared.stats.tracked.load(Ordering::Relaxed)
            );
            notify(&[
                sd_notify::NotifyState::Ready,
                sd_notify::NotifyState::Status(&ready),
            ]);
            lifelong.spawn(
                "notify",
                notify_progress(shared.stats.clone(), cancel.clone()),
            );
            first = false;
        }
        let ended = supervise(
            &mut workers,
            &cancel,
            &mut reload_rx,
            (&cfg, &store, &load),
            &shared,
        )
        .await;
        match ended {
            Ended::Stop(outcome) => {
                tracing::info!("stopping: finishing in-flight batches");
                notify(&[sd_notify::NotifyState::Stopping]);
                generation.cancel();
                shutdown(&mut workers).await;
                break outcome;
            }
            Ended::Reload(new_cfg, new_store) => {
                tracing::info!("reloading: finishing in-flight batches");
                notify(&[sd_notify::NotifyState::Reloading]);
                generation.cancel();
                shutdown(&mut workers).await;
                if !same_database(&cfg, &new_cfg) {
                    store.close().await;
                }
                *write(&shared.cfg) = new_cfg.clone();
                *write(&shared.store) = new_store.clone();
                (cfg, store) = (new_cfg, new_store);
                shared.reloads.fetch_add(1, Ordering::Relaxed);
                notify(&[sd_notify::NotifyState::Ready]);
            }
        }
    };
    cancel.cancel();
    shutdown(&mut lifelong).await;
    store.close().await;
    tracing::info!(
        bytes = shared.stats.bytes.load(Ordering::Relaxed),
        messages = shared.stats.messages.load(Ordering::Relaxed),
        "daemon stopped"
    );
    outcome
}

/// Start the workers of one generation: writer, watcher, engine (and refine when configured).
async fn start_generation(
    cfg: &Arc<Config>,
    store: &Store,
    shared: &Arc<Shared>,
    cancel: &CancellationToken,
) -> Result<Workers, RunError> {
    // Refused before anything is read when another host's daemon writes under this id.
    let holder = Holder::this_process();
    store.take_lease(&cfg.machine_id, &holder).await?;
    let (pipeline, writer) = Pipeline::new(cfg.clone(), store.clone());
    let pipeline = pipeline
        .wait_for_sessions()
        .sharing(shared.stats.clone(), shared.health.clone());
    let pipeline = Arc::new(pipeline);
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
    *write(&shared.hints) = hint_tx.clone();
    shared
        .stats
        .watching
        .store(super::watcher::WATCH_POLL, Ordering::Relaxed);
    let mut workers = Workers::default();
    workers.spawn("writer", writer);
    workers.spawn(
        "lease",
        keep_lease(
            store.clone(),
            cfg.machine_id.clone(),
            holder,
            cancel.clone(),
        ),
    );
    workers.spawn(
        "watcher",
        watcher::watch(cfg.clone(), hint_tx, shared.stats.clone(), cancel.clone()),
    );
    let engine_cancel = cancel.clone();
    workers.spawn("engine", async move {
        // The engine (and with it the last handle to the writer) is dropped when it returns.
        engine
            .run(Mode::Follow, Hint::Rescan, hint_rx, engine_cancel)
            .await;
    });
    if cfg.archive.enabled {
        // Recoverable: a packer that stops leaves ingestion running (the archive stays whole,
        // only larger).
        workers.spawn(
            "pack",
            super::pack::worker(
                store.clone(),
                cfg.machine_id.clone(),
                cfg.archive.pack_level,
                cfg.archive.pack_interval,
                cancel.clone(),
            ),
        );
        // After an upgrade whose rules read transcripts differently: finished sessions derived
        // again from the archive, a few seconds per pass.
        workers.spawn(
            "reextract",
            super::reextract::worker(
                cfg.clone(),
                store.clone(),
                cfg.archive.pack_interval,
                cancel.clone(),
            ),
        );
    }
    if cfg.refine.command.is_some() {
        // Recoverable: a refine worker that stops leaves ingestion running.
        workers.spawn(
            "refine",
            super::refine::worker(
                store.clone(),
                cfg.refine.clone(),
                cfg.redactor.clone(),
                shared.stats.clone(),
                cancel.clone(),
            ),
        );
    }
    Ok(workers)
}

/// Watch a generation until the daemon must stop or a valid reload arrives.
async fn supervise(
    workers: &mut Workers,
    cancel: &CancellationToken,
    reloads: &mut mpsc::Receiver<ReloadRequest>,
    (cfg, store, load): (&Arc<Config>, &Store, &LoadConfig),
    shared: &Shared,
) -> Ended {
    loop {
        tokio::select! {
            biased;
            _ = cancel.cancelled() => return Ended::Stop(Ok(())),
            Some(req) = reloads.recv() => {
                match prepare_reload(cfg, store, load).await {
                    Ok((new_cfg, new_store, changed)) => {
                        tracing::info!(changed = ?changed, "configuration reloaded");
                        if let Some(reply) = req.reply {
                            let _ = reply.send(Ok(changed));
                        }
                        return Ended::Reload(new_cfg, new_store);
                    }
                    Err(message) => {
                        tracing::error!(error = %message, "reload refused; keeping the running configuration");
                        shared.health.record_error("reload", &message);
                        if let Some(reply) = req.reply {
                            let _ = reply.send(Err(message));
                        }
                    }
                }
            }
            ended = workers.next() => match ended {
                // Workers end on their own once the stop signal is seen: not a failure.
                Some(Ok(name)) if cancel.is_cancelled() => {
                    tracing::debug!(worker = name, "worker stopped");
                    return Ended::Stop(Ok(()));
                }
                Some(Ok(name)) if CRITICAL.contains(&name) => {
                    tracing::error!(worker = name, "critical worker stopped; shutting down");
                    return Ended::Stop(Err(RunError::WorkerEnded(name)));
                }
                Some(Ok(name)) => tracing::warn!(worker = name, "worker stopped"),
                Some(Err(e)) => {
                    tracing::error!(error = %e, "worker panicked; shutting down");
                    return Ended::Stop(Err(RunError::WorkerEnded("unknown")));
                }
                None => return Ended::Stop(Ok(())),
            },
        }
    }
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

/// Install the SIGTERM/SIGINT (stop) and SIGHUP (reload) handlers now.
///
/// Called first thing by `gleaner daemon`, before the database is even opened: a stop signal
/// that arrives during startup must still mean "stop cleanly, exit 0", never the default
/// action (death by signal); a SIGHUP during startup is kept and applied once running. Must
/// run inside the runtime.
pub fn install_signals() -> std::io::Result<Signals> {
    let signals = Signals::manual();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        let mut hup = signal(SignalKind::hangup())?;
        let c = signals.stop.clone();
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
        let reload = signals.reload_tx.clone();
        tokio::spawn(async move {
            while hup.recv().await.is_some() {
                tracing::info!(signal = "SIGHUP", "reload requested");
                // A reload already queued covers this one.
                let _ = reload.try_send(ReloadRequest { reply: None });
            }
        });
    }
    #[cfg(not(unix))]
    {
        let c = signals.stop.clone();
        tokio::spawn(async move {
            let _ = tokio::signal::ctrl_c().await;
            c.cancel();
        });
    }
    Ok(signals)
}
