//! Answering the daemon's socket requests (`status`, `rescan`, `ingest_now`, `reload`,
//! `session_end`, `reextract`), from the state the daemon shares across reloads.

use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::oneshot;

use super::daemon::{ReloadRequest, Shared};
use super::engine::Hint;
use super::socket::{Request, Response, StatusReport};
use crate::store::redact_url;

/// Longest time a session-end request waits for the session's files to be ingested.
const SESSION_END_WAIT: Duration = Duration::from_secs(10);

/// Longest wait for a reload to be applied before the `reload` request is answered.
const RELOAD_WAIT: Duration = Duration::from_secs(30);

/// Serve one status-socket request.
pub(super) async fn answer(req: Request, shared: &Shared) -> Response {
    let shutting_down = || Response::Error {
        message: "daemon is shutting down".into(),
    };
    match req {
        Request::Status => Response::Status(Box::new(status(shared).await)),
        Request::Rescan => match shared.hints().send(Hint::Rescan).await {
            Ok(()) => Response::Accepted,
            Err(_) => shutting_down(),
        },
        Request::IngestNow { path } => match shared.hints().send(Hint::Paths(vec![path])).await {
            Ok(()) => Response::Accepted,
            Err(_) => shutting_down(),
        },
        Request::Reload => {
            let (reply, rx) = oneshot::channel();
            let req = ReloadRequest { reply: Some(reply) };
            if shared.reload.send(req).await.is_err() {
                return shutting_down();
            }
            match tokio::time::timeout(RELOAD_WAIT, rx).await {
                Ok(Ok(Ok(changed))) => Response::Reloaded { changed },
                Ok(Ok(Err(message))) => Response::Error {
                    message: format!("reload refused, running configuration kept: {message}"),
                },
                Ok(Err(_)) => shutting_down(),
                Err(_) => Response::Error {
                    message: format!("reload not applied within {RELOAD_WAIT:?}"),
                },
            }
        }
        Request::Reextract { session_ids } => {
            let (cfg, store) = (shared.cfg(), shared.store());
            let cancel = tokio_util::sync::CancellationToken::new();
            let at_once = super::reextract::AT_ONCE;
            match super::reextract::reextract(&cfg, &store, &session_ids, at_once, None, &cancel)
                .await
            {
                Ok(r) => Response::Reextracted(Box::new(r)),
                Err(e) => Response::Error {
                    message: format!("re-extraction failed: {e}"),
                },
            }
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
            if shared.hints().send(hint).await.is_err() {
                return shutting_down();
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

/// The answer to a `status` request.
async fn status(shared: &Shared) -> StatusReport {
    let cfg = shared.cfg();
    let stats = &shared.stats;
    let health = &shared.health;
    // The database's own figures, within a second: a slow or unreachable database is
    // reported, not waited for.
    let store = shared.store();
    // Both within the same second, side by side: a status answer never waits longer than it
    // did before today's usage was part of it (an outage must not make the daemon look dead).
    let budget = Duration::from_secs(1);
    let (figures, today) = tokio::join!(
        tokio::time::timeout(budget, store.daemon_figures(&cfg.machine_id)),
        tokio::time::timeout(budget, today(&store, &cfg.prices)),
    );
    let today = today.ok().and_then(Result::ok);
    let since = health.unavailable_since().map(super::health::iso);
    let (database_state, figures) = match (figures, &since) {
        (Ok(Ok(f)), None) => ("ok".to_string(), Some(f)),
        // Answers queries but refused the last write (read-only, full): still unavailable.
        (Ok(Ok(f)), Some(t)) => (format!("unavailable since {t}"), Some(f)),
        (Ok(Err(e)), Some(t)) => (format!("unavailable since {t}: {e}"), None),
        (Ok(Err(e)), None) => (format!("unavailable: {e}"), None),
        (Err(_), Some(t)) => (format!("unavailable since {t}"), None),
        (Err(_), None) => ("unavailable: no answer within 1 s".to_string(), None),
    };
    StatusReport {
        pid: std::process::id(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        uptime_secs: shared.started.elapsed().as_secs(),
        projects_dir: cfg.projects_dir.display().to_string(),
        database: redact_url(&cfg.database.url),
        machine: cfg.machine_id.clone(),
        user: cfg.user.clone(),
        files: stats.tracked.load(Ordering::Relaxed),
        bytes: stats.bytes.load(Ordering::Relaxed),
        read_bytes: stats.read_bytes.load(Ordering::Relaxed),
        lines: stats.lines.load(Ordering::Relaxed),
        messages: stats.messages.load(Ordering::Relaxed),
        diagnostics: stats.diagnostics.load(Ordering::Relaxed),
        batches: stats.batches.load(Ordering::Relaxed),
        errors: stats.errors.load(Ordering::Relaxed),
        refined: stats.refined.load(Ordering::Relaxed),
        refine_failed: stats.refine_failed.load(Ordering::Relaxed),
        watch_mode: super::watcher::watch_mode_name(stats.watching.load(Ordering::Relaxed))
            .to_string(),
        database_state,
        figures,
        ingest_rate_bytes_per_sec: health.bytes_per_sec(),
        database_unavailable_since: since,
        outages: health.outages.load(Ordering::Relaxed),
        failed_retries: health.failed_retries.load(Ordering::Relaxed),
        last_error: health.last_error(),
        reloads: shared.reloads.load(Ordering::Relaxed),
        today,
    }
}

/// Today's (local) usage from the store's hourly aggregate: the hours since local midnight,
/// a few rows per model.
async fn today(
    store: &crate::store::Store,
    prices: &crate::usage::Prices,
) -> Result<super::socket::TodayUsage, crate::store::StoreError> {
    use chrono::{Local, TimeZone};
    let now = Local::now();
    let midnight = now
        .date_naive()
        .and_hms_opt(0, 0, 0)
        .and_then(|t| Local.from_local_datetime(&t).earliest())
        .map_or(now.timestamp(), |t| t.timestamp());
    let filter = crate::store::UsageFilter {
        since_hour: Some(midnight.div_euclid(3600)),
        ..Default::default()
    };
    let cells = store
        .usage_cells(&filter, crate::store::UsageKey::Model)
        .await?;
    let (n, cost_usd) = prices.sum(
        cells
            .iter()
            .map(|c| (c.model.as_str(), c.recorded, &c.counts)),
    );
    let t = super::socket::TodayUsage {
        date: now.format("%Y-%m-%d").to_string(),
        tokens: [n.input, n.output, n.creation, n.read],
        messages: n.messages,
        cost_usd,
    };
    Ok(t)
}
