//! Machine-id leases: one live writer per machine id in a shared store.
//!
//! Why: files are keyed by (machine, path). Two daemons on two hosts writing under one id (the
//! id defaults to the host name, and cloned VMs or laptops share names) each take the other's
//! checkpoints for their own: the lagging one sees a file "truncated", reads it again as a new
//! version and stores every message twice. So a writer holds its id's lease: the host it runs
//! on (a fingerprint, not the name alone), its pid and a heartbeat renewed every
//! [`HEARTBEAT`]. A lease whose heartbeat is older than [`STALE`] is free (its holder died
//! without letting go); one held by the same host is taken over (a restart, or `ingest` beside
//! the daemon, which the single-instance lock already orders).
//!
//! Heartbeats are compared in the writer's own clock: hosts whose clocks differ by more than
//! [`STALE`] minus [`HEARTBEAT`] could take a live lease for stale. NTP keeps them far closer.

use std::time::Duration;

use super::sql::Sql;
use super::{Store, StoreError};

/// How often a daemon renews its lease.
pub const HEARTBEAT: Duration = Duration::from_secs(30);

/// A lease not renewed for this long is free.
pub const STALE: Duration = Duration::from_secs(120);

/// Who holds (or wants) a lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// The host's fingerprint: a hash of its name and OS machine id.
    pub host: String,
    /// The host's name, for messages.
    pub host_name: String,
    /// The writer's process id.
    pub pid: i64,
}

impl Holder {
    /// This process on this host.
    pub fn this_process() -> Holder {
        let host_name = gethostname::gethostname().to_string_lossy().into_owned();
        // The OS's own id of the installation (systemd and D-Bus keep one): two hosts with
        // the same name still differ. Where there is none, the name alone.
        let os_id = ["/etc/machine-id", "/var/lib/dbus/machine-id"]
            .iter()
            .find_map(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_default();
        let host = format!(
            "{:016x}",
            xxhash_rust::xxh3::xxh3_64(format!("{host_name}\n{}", os_id.trim()).as_bytes())
        );
        Holder {
            host,
            host_name,
            pid: i64::from(std::process::id()),
        }
    }
}

fn iso(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

impl Store {
    /// Take `machine`'s lease for `me`, or [`StoreError::MachineInUse`] when another host's
    /// writer renewed it within [`STALE`].
    pub async fn take_lease(&self, machine: &str, me: &Holder) -> Result<(), StoreError> {
        let now = chrono::Utc::now();
        let stale_before = iso(now - chrono::Duration::from_std(STALE).unwrap_or_default());
        let now = iso(now);
        let q = Sql::new(
            "INSERT INTO machine_leases (machine, host, host_name, pid, started_at, heartbeat_at) \
             VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (machine) DO UPDATE SET \
             host = excluded.host, host_name = excluded.host_name, pid = excluded.pid, \
             started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at \
             WHERE machine_leases.host = excluded.host OR machine_leases.heartbeat_at < $6",
        )
        .arg(machine)
        .arg(me.host.as_str())
        .arg(me.host_name.as_str())
        .arg(me.pid)
        .arg(now.as_str())
        .arg(stale_before);
        if self.execute(&q).await? > 0 {
            return Ok(());
        }
        let q =
            Sql::new("SELECT host_name, pid, heartbeat_at FROM machine_leases WHERE machine = $1")
                .arg(machine);
        let (host_name, pid, heartbeat_at): (String, i64, String) = self
            .fetch_optional(&q)
            .await?
            .unwrap_or_else(|| ("?".into(), 0, "?".into()));
        Err(StoreError::MachineInUse {
            machine: machine.to_string(),
            host_name,
            pid,
            heartbeat_at,
        })
    }

    /// Renew `machine`'s lease held by `me`; `false` when another host holds it now (it found
    /// the lease stale: this writer was stopped or cut off for longer than [`STALE`]).
    pub async fn renew_lease(&self, machine: &str, me: &Holder) -> Result<bool, StoreError> {
        let q = Sql::new(
            "UPDATE machine_leases SET heartbeat_at = $1, pid = $2 \
             WHERE machine = $3 AND host = $4",
        )
        .arg(iso(chrono::Utc::now()))
        .arg(me.pid)
        .arg(machine)
        .arg(me.host.as_str());
        Ok(self.execute(&q).await? > 0)
    }
}
