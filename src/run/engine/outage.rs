//! The engine during a database outage: how many pumps may start (none, or one probe once
//! its backoff has passed), when to wake for the next probe, and the ping that probes when
//! nothing is queued. The gate itself is [`Health`](crate::run::health::Health).

use super::*;

impl Engine {
    /// How many pumps may start now: all of them, or during a database outage none but one
    /// probe when its backoff has passed (see [`Health`](crate::run::health::Health)).
    ///
    /// The probe is taken only when it will really start: with pumps still out (their commits
    /// may hang until the pool gives up), their outcome decides first; with nothing queued,
    /// the engine's wake-up pings the database instead.
    pub(super) fn allowed(&mut self, running: usize) -> usize {
        let all = self.pipeline.cfg.daemon.workers * FILES_PER_WORKER;
        if self.mode == Mode::Once {
            return all;
        }
        match self.pipeline.health.peek() {
            Gate::Open => all,
            Gate::Wait(_) | Gate::Probing => 0,
            Gate::Probe if running > 0 => 0,
            Gate::Probe => match self.queue.front().cloned() {
                Some(p) if self.pipeline.health.gate() == Gate::Probe => {
                    self.probe = Some(p);
                    1
                }
                _ => 0,
            },
        }
    }

    /// During an outage, when the engine must wake to probe the database: at the end of the
    /// backoff, or at once when a probe is due and no file is queued to serve as one.
    pub(super) fn outage_wake(&self) -> Option<Instant> {
        if self.mode == Mode::Once {
            return None;
        }
        match self.pipeline.health.peek() {
            Gate::Wait(at) => Some(at),
            Gate::Probe if self.queue.is_empty() => Some(Instant::now()),
            Gate::Open | Gate::Probe | Gate::Probing => None,
        }
    }

    /// During an outage with nothing queued to write: end the outage if the database answers.
    pub(super) async fn ping_store(&self) {
        let health = &self.pipeline.health;
        if health.unavailable_since().is_none() {
            return;
        }
        let ping = tokio::time::timeout(RETRY_DELAY, self.pipeline.store.ping()).await;
        match ping {
            Ok(Ok(())) => health.store_ok(),
            Ok(Err(e)) => health.store_failed(&e.to_string()),
            Err(_) => health.store_failed("no answer from the database"),
        }
    }
}
