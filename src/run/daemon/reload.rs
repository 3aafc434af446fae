//! A reload (SIGHUP or the `reload` request): the configuration read again, checked, and
//! what changed named.

use std::sync::Arc;

use super::LoadConfig;
use crate::config::Config;
use crate::store::Store;

/// Read the configuration again and check it can be applied: `(config, store, what changed)`,
/// or why it cannot (one line).
pub(super) async fn prepare_reload(
    old: &Arc<Config>,
    store: &Store,
    load: &LoadConfig,
) -> Result<(Arc<Config>, Store, Vec<String>), String> {
    let new = load().map_err(|e| e.to_string())?;
    if new.data_dir != old.data_dir {
        return Err(format!(
            "data_dir changed ({} -> {}): the lock lives there (and the socket's name depends on it); restart the daemon to move it",
            old.data_dir.display(),
            new.data_dir.display()
        ));
    }
    let changed = changes(old, &new);
    let new_store = if same_database(old, &new) {
        store.clone()
    } else {
        Store::connect(&new.database)
            .await
            .map_err(|e| e.to_string())?
    };
    crate::telemetry::set_level(&new.log.level).map_err(|e| format!("log.level: {e}"))?;
    Ok((Arc::new(new), new_store, changed))
}

/// Whether two configurations write to the same database.
pub(super) fn same_database(a: &Config, b: &Config) -> bool {
    a.database.url == b.database.url && a.database.max_connections == b.database.max_connections
}

/// The settings that differ between two configurations, by their config key.
fn changes(old: &Config, new: &Config) -> Vec<String> {
    let mut out = Vec::new();
    let mut diff = |key: &str, differs: bool| {
        if differs {
            out.push(key.to_string());
        }
    };
    diff("projects_dir", old.projects_dir != new.projects_dir);
    diff("machine_id", old.machine_id != new.machine_id);
    diff("user", old.user != new.user);
    diff("database.url", old.database.url != new.database.url);
    diff("log.level", old.log.level != new.log.level);
    diff(
        "sessions.idle_timeout_secs",
        old.sessions.idle_timeout != new.sessions.idle_timeout,
    );
    diff(
        "daemon.rescan_interval_secs",
        old.daemon.rescan_interval != new.daemon.rescan_interval,
    );
    diff(
        "daemon.poll_interval_ms",
        old.daemon.poll_interval != new.daemon.poll_interval,
    );
    diff(
        "daemon.debounce_ms",
        old.daemon.debounce != new.daemon.debounce,
    );
    diff("daemon.workers", old.daemon.workers != new.daemon.workers);
    diff(
        "archive.enabled",
        old.archive.enabled != new.archive.enabled,
    );
    diff(
        "archive.pack_interval_secs",
        old.archive.pack_interval != new.archive.pack_interval,
    );
    diff("refine.command", old.refine.command != new.refine.command);
    out
}
