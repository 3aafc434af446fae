//! What the daemon knows about its own health: whether the database takes writes, the last
//! error, the ingest rate, and logging of errors that repeat.
//!
//! Why here and not in the store: an outage is a property of the running shell (it decides to
//! stop reading and when to try again), not of one query. The engine asks [`Health::paused`]
//! before starting a pump; a pump whose commit fails with a database error reports it with
//! [`Health::store_failed`], which pauses every pump and schedules one probe with capped
//! exponential backoff. The probe is the next pump itself (a real write, so a read-only or
//! full SQLite file is detected as surely as a stopped server); its success ends the outage.
//! While paused nothing is read: the dirty paths wait in the engine's queue, no batch is
//! buffered.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};

/// First wait after a failed commit before the database is tried again.
pub const BACKOFF_START: Duration = Duration::from_secs(1);
/// Longest wait between two tries while the database stays unavailable.
pub const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// Width of the ingest-rate window.
const RATE_WINDOW_SECS: u64 = 60;

/// The last error the daemon met, for `gleaner status`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct LastError {
    /// What failed (`commit`, `read`, `register`, `sweep`, ...).
    pub what: String,
    /// The error, one line.
    pub message: String,
    /// When (RFC 3339, UTC).
    pub at: String,
}

#[derive(Debug, Default)]
struct Outage {
    /// Wall-clock start of the current outage.
    since: Option<SystemTime>,
    /// When the next probe may run.
    next_try: Option<Instant>,
    /// The wait after the next failure.
    backoff: Duration,
    /// A probe pump is running: no other pump starts until it ends.
    probing: bool,
}

/// Shared health state (one per daemon, kept across reloads).
#[derive(Debug, Default)]
pub struct Health {
    outage: Mutex<Outage>,
    last_error: Mutex<Option<LastError>>,
    /// Bytes committed per second, over the last minute: `(unix second, bytes)` slots.
    rate: Mutex<Vec<(u64, u64)>>,
    /// Outages since start.
    pub outages: AtomicU64,
    /// Probes of an unavailable database that failed, since start: the daemon kept trying
    /// (and stayed up) through an outage.
    pub failed_retries: AtomicU64,
}

/// What the engine may do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// The database takes writes: pump freely.
    Open,
    /// Paused: start one pump as a probe now.
    Probe,
    /// Paused: start nothing until this instant.
    Wait(Instant),
    /// Paused: a probe is running.
    Probing,
}

impl Health {
    /// Record a commit that failed for a database reason: pause every pump, try again after
    /// the backoff (doubling up to [`BACKOFF_MAX`]).
    pub fn store_failed(&self, message: &str) {
        let mut o = lock(&self.outage);
        let now = Instant::now();
        // A retry: a probe pump, or a ping once the backoff is over (not a pump that was
        // already writing when the outage began).
        if o.since.is_some() && (o.probing || o.next_try.is_some_and(|at| at <= now)) {
            self.failed_retries.fetch_add(1, Ordering::Relaxed);
        }
        if o.since.is_none() {
            o.since = Some(SystemTime::now());
            o.backoff = BACKOFF_START;
            self.outages.fetch_add(1, Ordering::Relaxed);
            tracing::error!(error = %message, "database unavailable; reading paused, will retry");
        }
        o.next_try = Some(now + o.backoff);
        o.backoff = (o.backoff * 2).min(BACKOFF_MAX);
        o.probing = false;
        drop(o);
        self.record_error("commit", message);
    }

    /// Record a commit that succeeded: an outage, if any, is over.
    pub fn store_ok(&self) {
        let mut o = lock(&self.outage);
        if let Some(since) = o.since.take() {
            let secs = since.elapsed().map(|d| d.as_secs_f64()).unwrap_or(0.0);
            tracing::info!(
                down_secs = format!("{secs:.1}"),
                "database available again; catching up"
            );
        }
        *o = Outage::default();
    }

    /// Whether pumps may start, and how.
    pub fn gate(&self) -> Gate {
        let mut o = lock(&self.outage);
        if o.since.is_none() {
            return Gate::Open;
        }
        if o.probing {
            return Gate::Probing;
        }
        match o.next_try {
            Some(at) if at > Instant::now() => Gate::Wait(at),
            _ => {
                o.probing = true;
                Gate::Probe
            }
        }
    }

    /// What [`Health::gate`] would answer, without taking the probe.
    pub fn peek(&self) -> Gate {
        let o = lock(&self.outage);
        match (o.since, o.probing, o.next_try) {
            (None, _, _) => Gate::Open,
            (Some(_), true, _) => Gate::Probing,
            (Some(_), false, Some(at)) if at > Instant::now() => Gate::Wait(at),
            _ => Gate::Probe,
        }
    }

    /// A probe pump ended without reaching the database (a read error, a cancelled pump):
    /// let the next one probe.
    pub fn probe_inconclusive(&self) {
        lock(&self.outage).probing = false;
    }

    /// Since when the database has been unavailable, if it is.
    pub fn unavailable_since(&self) -> Option<SystemTime> {
        lock(&self.outage).since
    }

    /// Remember `message` as the last error.
    pub fn record_error(&self, what: &str, message: &str) {
        *lock(&self.last_error) = Some(LastError {
            what: what.to_string(),
            message: message.to_string(),
            at: iso(SystemTime::now()),
        });
    }

    /// The last error met, if any.
    pub fn last_error(&self) -> Option<LastError> {
        lock(&self.last_error).clone()
    }

    /// Count `bytes` committed now in the rate window.
    pub fn add_bytes(&self, bytes: u64) {
        let sec = unix_secs();
        let mut r = lock(&self.rate);
        if r.is_empty() {
            r.resize(RATE_WINDOW_SECS as usize, (0, 0));
        }
        let slot = &mut r[(sec % RATE_WINDOW_SECS) as usize];
        if slot.0 != sec {
            *slot = (sec, 0);
        }
        slot.1 += bytes;
    }

    /// Bytes per second committed over the last minute.
    pub fn bytes_per_sec(&self) -> f64 {
        let now = unix_secs();
        let r = lock(&self.rate);
        let total: u64 = r
            .iter()
            .filter(|(s, _)| now.saturating_sub(*s) < RATE_WINDOW_SECS)
            .map(|(_, b)| b)
            .sum();
        total as f64 / RATE_WINDOW_SECS as f64
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding one of these locks leaves plain data behind: keep using it.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn unix_secs() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `t` as the ISO-8601 UTC text used everywhere else (`2026-11-25T06:01:02.123Z`).
pub fn iso(t: SystemTime) -> String {
    crate::extract::rows::iso_from_unix_millis(crate::extract::rows::unix_ms(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outage_pauses_then_probes_with_capped_backoff() {
        let h = Health::default();
        assert_eq!(h.gate(), Gate::Open);
        h.store_failed("connection refused");
        assert!(h.unavailable_since().is_some());
        assert!(matches!(h.gate(), Gate::Wait(_)));
        // A pump that was writing when the outage began is not a retry.
        h.store_failed("connection refused");
        assert_eq!(h.failed_retries.load(Ordering::Relaxed), 0);
        // Backoff doubles up to the cap.
        for _ in 0..10 {
            h.store_failed("connection refused");
        }
        let o = lock(&h.outage);
        assert_eq!(o.backoff, BACKOFF_MAX);
        let wait = o
            .next_try
            .map(|t| t.saturating_duration_since(Instant::now()));
        drop(o);
        assert!(wait.is_some_and(|w| w <= BACKOFF_MAX));
        assert_eq!(h.outages.load(Ordering::Relaxed), 1);
        assert_eq!(
            h.last_error().map(|e| e.message),
            Some("connection refused".into())
        );
        // Due: exactly one probe at a time.
        lock(&h.outage).next_try = Some(Instant::now());
        assert_eq!(h.gate(), Gate::Probe);
        assert_eq!(h.gate(), Gate::Probing);
        // The probe fails: a failed retry, counted once.
        h.store_failed("connection refused");
        assert_eq!(h.failed_retries.load(Ordering::Relaxed), 1);
        lock(&h.outage).next_try = Some(Instant::now());
        assert_eq!(h.gate(), Gate::Probe);
        h.probe_inconclusive();
        assert_eq!(h.gate(), Gate::Probe);
        h.store_ok();
        assert_eq!(h.gate(), Gate::Open);
        assert!(h.unavailable_since().is_none());
    }

    #[test]
    fn rate_counts_the_last_minute() {
        let h = Health::default();
        h.add_bytes(6_000);
        h.add_bytes(600);
        assert!((h.bytes_per_sec() - 110.0).abs() < 1e-9);
        // A slot from over a minute ago no longer counts.
        lock(&h.rate)[((unix_secs() + 30) % 60) as usize] = (unix_secs() - 120, 1_000_000);
        assert!(h.bytes_per_sec() < 200.0);
    }
}
