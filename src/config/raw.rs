//! The configuration as the file holds it (`config/gleaner.toml`'s sections, every key
//! required: the embedded default file supplies what the user's leaves out), before `load`
//! validates it into [`super::Config`].

use serde::Deserialize;

use crate::episode::{EpisodesTable, TriageTable};

/// The merged, not yet validated configuration (mirrors `config/gleaner.toml`).
#[derive(Debug, Clone, Deserialize)]
pub struct RawConfig {
    pub(super) projects_dir: String,
    pub(super) data_dir: String,
    pub(super) machine_id: String,
    pub(super) user: String,
    pub(super) database: RawDatabase,
    pub(super) tail: RawTail,
    pub(super) batch: RawBatch,
    pub(super) archive: RawArchive,
    pub(super) daemon: RawDaemon,
    pub(super) sessions: RawSessions,
    pub(super) episodes: EpisodesTable,
    pub(super) triage: TriageTable,
    pub(super) redact: RawRedact,
    pub(super) mcp: RawMcp,
    pub(super) context: RawContext,
    pub(super) web: RawWeb,
    pub(super) refine: RawRefine,
    /// Model name -> prices (`[pricing."<model>"]`); empty in the embedded defaults.
    #[serde(default)]
    pub(super) pricing: std::collections::BTreeMap<String, crate::usage::Price>,
    pub(super) log: RawLog,
}

#[derive(Debug, Clone, Deserialize)]
pub(super) struct RawRefine {
    pub(super) command: String,
    pub(super) timeout_secs: u64,
    pub(super) max_attempts: u64,
    pub(super) interval_secs: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub(super) struct RawWeb {
    pub(super) bind: String,
}

#[derive(Debug, Clone, Deserialize)]
pub(super) struct RawArchive {
    pub(super) enabled: bool,
    pub(super) defer_finished: bool,
    pub(super) pack_interval_secs: u64,
    pub(super) pack_level: i64,
}

#[derive(Debug, Clone, Deserialize)]
pub(super) struct RawContext {
    pub(super) max_bytes: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub(super) struct RawMcp {
    pub(super) max_result_chars: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub(super) struct RawRedact {
    pub(super) extra: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Clone, Deserialize)]
pub(super) struct RawSessions {
    pub(super) idle_timeout_secs: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub(super) struct RawDatabase {
    pub(super) url: String,
    pub(super) max_connections: u32,
    pub(super) connect_timeout_secs: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub(super) struct RawTail {
    pub(super) max_line_bytes: u64,
    pub(super) read_chunk_bytes: u64,
    pub(super) idle_evict_secs: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub(super) struct RawBatch {
    pub(super) max_bytes: u64,
    pub(super) max_lines: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub(super) struct RawDaemon {
    pub(super) rescan_interval_secs: u64,
    pub(super) poll_interval_ms: u64,
    pub(super) debounce_ms: u64,
    pub(super) workers: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub(super) struct RawLog {
    pub(super) level: String,
    pub(super) format: String,
}
