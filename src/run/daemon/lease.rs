//! The `lease` worker: keeps this machine id's lease in the store (`store::lease`) while the
//! daemon runs.

use tokio_util::sync::CancellationToken;

use crate::store::lease::{self, Holder};
use crate::store::Store;

/// Renew the machine id's lease every [`lease::HEARTBEAT`] until cancelled. Returns (which
/// stops the daemon: a critical worker) when another host holds the lease now (it found this
/// one stale, so both would write under one id), or when a newer gleaner migrated the schema
/// (a writer never writes to a schema it does not know).
pub(in crate::run) async fn keep_lease(
    store: Store,
    machine: String,
    holder: Holder,
    cancel: CancellationToken,
) {
    let mut tick = tokio::time::interval(lease::HEARTBEAT);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tick.tick() => {}
        }
        match store.applied_schema().await {
            Ok(Some(found)) if found > store.known_schema() => {
                tracing::error!(
                    schema = found,
                    known = store.known_schema(),
                    "a newer gleaner migrated the database; stopping (upgrade gleaner on this \
                     machine)"
                );
                return;
            }
            _ => {}
        }
        match store.renew_lease(&machine, &holder).await {
            Ok(true) => {}
            Ok(false) => {
                tracing::error!(
                    machine = %machine,
                    "another host took this machine id's lease (this daemon was stopped or \
                     cut off from the database for longer than {} s); stopping",
                    lease::STALE.as_secs()
                );
                return;
            }
            // The database is down: the engine reports it; the lease is renewed when it is back.
            Err(e) => tracing::debug!(error = %e, "cannot renew the machine id's lease"),
        }
    }
}
