//! Counters the pure stages and the shell both touch: where ingest time goes ([`Stage`],
//! [`timed`]) and which repeated errors to log ([`should_log`]).
//!
//! A leaf: it imports nothing of the crate, so a stage that counts its time or throttles a log
//! line depends on no configuration, store or shell. Logging itself (the subscriber, its
//! level) is `telemetry`'s, which reads the configuration.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// An error that repeats is logged at most once per this interval, with the count since.
pub const LOG_INTERVAL: Duration = Duration::from_secs(60);

static THROTTLE: OnceLock<Mutex<HashMap<String, (Instant, u64)>>> = OnceLock::new();

/// Whether an error with this key should be logged now, and how many times it was left out
/// since it last was. The first occurrence is always logged; later ones at most once per
/// [`LOG_INTERVAL`]. Counting every occurrence is the caller's job (status counters).
///
/// Why global: the same bad folder or the same database error is met by many files and
/// workers; one log line a minute per cause is what a journal reader can use.
pub fn should_log(key: &str) -> Option<u64> {
    should_log_at(key, Instant::now())
}

fn should_log_at(key: &str, now: Instant) -> Option<u64> {
    let mut t = THROTTLE
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match t.get_mut(key) {
        Some((last, suppressed)) => {
            if now.saturating_duration_since(*last) >= LOG_INTERVAL {
                let n = *suppressed;
                *last = now;
                *suppressed = 0;
                Some(n)
            } else {
                *suppressed += 1;
                None
            }
        }
        None => {
            if t.len() > 1024 {
                // Bounded: forget keys not seen for an interval.
                t.retain(|_, (last, _)| now.saturating_duration_since(*last) < LOG_INTERVAL);
            }
            t.insert(key.to_string(), (now, 0));
            Some(0)
        }
    }
}

/// Where ingest time goes, summed over every thread (per batch, so the clock is read a few times
/// per batch, not per line): what `gleaner ingest --json` reports as `stage_seconds` and the
/// benchmark prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Reading lines from the file (tailer).
    Read,
    /// JSON parsing of the lines.
    Parse,
    /// Turning records into rows.
    Extract,
    /// Secret redaction of every stored text.
    Redact,
    /// Turns, episodes, triage, snippets.
    Episodes,
    /// Search words (PostgreSQL's vectors on the reading threads; SQLite's FTS5 rows in the
    /// writer's transaction).
    Index,
    /// The writer's transactions, the search index excepted (wall time, server waits included).
    Write,
    /// Compressing what a batch read for the archive.
    Archive,
}

const STAGES: [(Stage, &str); 8] = [
    (Stage::Read, "read"),
    (Stage::Parse, "parse"),
    (Stage::Extract, "extract"),
    (Stage::Redact, "redact"),
    (Stage::Episodes, "episodes"),
    (Stage::Index, "search_index"),
    (Stage::Write, "database_write"),
    (Stage::Archive, "archive"),
];

static STAGE_NS: [std::sync::atomic::AtomicU64; 8] =
    [const { std::sync::atomic::AtomicU64::new(0) }; 8];

/// Add `d` to a stage's total.
pub fn add_stage(stage: Stage, d: Duration) {
    let i = STAGES.iter().position(|(s, _)| *s == stage).unwrap_or(0);
    STAGE_NS[i].fetch_add(
        u64::try_from(d.as_nanos()).unwrap_or(u64::MAX),
        std::sync::atomic::Ordering::Relaxed,
    );
}

/// Run `f`, adding its time to `stage`.
pub fn timed<T>(stage: Stage, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let r = f();
    add_stage(stage, t.elapsed());
    r
}

/// Seconds spent in each stage since the process started, by name.
pub fn stage_seconds() -> Vec<(&'static str, f64)> {
    STAGES
        .iter()
        .enumerate()
        .map(|(i, (_, name))| {
            let ns = STAGE_NS[i].load(std::sync::atomic::Ordering::Relaxed);
            (*name, ns as f64 / 1e9)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_errors_are_logged_once_per_interval_with_a_count() {
        let t0 = Instant::now();
        assert_eq!(should_log_at("test:db", t0), Some(0));
        assert_eq!(should_log_at("test:db", t0), None);
        assert_eq!(should_log_at("test:db", t0), None);
        assert_eq!(should_log_at("test:other", t0), Some(0));
        // An interval later: logged again, saying two were left out.
        assert_eq!(should_log_at("test:db", t0 + LOG_INTERVAL), Some(2));
        assert_eq!(should_log_at("test:db", t0 + LOG_INTERVAL), None);
    }
}
