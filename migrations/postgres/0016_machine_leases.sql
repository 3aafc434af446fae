-- One live writer per machine id: a daemon (or `gleaner ingest`) holds its machine id's lease,
-- naming the host it runs on (a fingerprint: host name and OS machine id, hashed) and renewing
-- `heartbeat_at` every 30 s. A writer from another host finds a fresh lease and refuses to
-- start: two machines writing under one id would take each other's files for truncated ones.
CREATE TABLE IF NOT EXISTS machine_leases (
    machine      TEXT PRIMARY KEY,
    host         TEXT NOT NULL,
    host_name    TEXT NOT NULL,
    pid          BIGINT NOT NULL,
    started_at   TEXT NOT NULL,
    heartbeat_at TEXT NOT NULL
);
