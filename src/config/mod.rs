//! Configuration: layered loading and validation.
//!
//! Sources, lowest to highest precedence: the embedded default file (`config/gleaner.toml`, the
//! single source of truth for keys and defaults) < the user's config file < `GLEANER_*`
//! environment variables (`__` separates nested keys) < command-line flags ([`Overrides`]).
//! Loading happens in two stages, as ripgrep's low/high args: the `config` crate merges the
//! sources into [`RawConfig`], then [`Config::from_raw`] validates once and resolves paths, so
//! the rest of the program only ever sees a valid [`Config`].

mod effective;
mod load;
mod raw;
#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::episode::{Rules, RulesError};
use crate::extract::redact::Redactor;
use crate::store::Options;

pub use crate::DEFAULT_CONFIG_TOML;
pub use effective::{effective_toml, effective_toml_with_env};
pub use load::{check_log_level, config_file, load, load_with_env, Env, Overrides};
pub use raw::RawConfig;

/// Prefix of the environment variables that override configuration keys.
pub const ENV_PREFIX: &str = "GLEANER";

/// Why a configuration could not be loaded. Each message is one line naming the key or file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file exists but could not be read or is not valid TOML.
    #[error("config file {path}: {message}")]
    File {
        /// The file that failed.
        path: PathBuf,
        /// What the parser said.
        message: String,
    },
    /// The config file names a key Gleaner does not know (most often a typo).
    #[error("config file {path}: unknown key `{key}`")]
    UnknownKey {
        /// The file holding the key.
        path: PathBuf,
        /// The dotted key.
        key: String,
    },
    /// A key has a value of the wrong type or out of range.
    #[error("invalid config value for `{key}`: {message}")]
    Invalid {
        /// The dotted key (or environment variable) at fault.
        key: String,
        /// What is wrong with it.
        message: String,
    },
    /// Merging the sources failed (the `config` crate's message names the key).
    #[error("invalid configuration: {0}")]
    Merge(String),
}

impl From<RulesError> for ConfigError {
    fn from(e: RulesError) -> Self {
        match e {
            RulesError::Invalid { key, message } => ConfigError::Invalid { key, message },
            RulesError::Defaults(message) => ConfigError::Merge(message),
        }
    }
}

/// Validated configuration used by every part of Gleaner.
#[derive(Debug, Clone)]
pub struct Config {
    /// Root of the transcripts tree (`~/.claude/projects`).
    pub projects_dir: PathBuf,
    /// Gleaner's state folder (lock file, default database).
    pub data_dir: PathBuf,
    /// This machine's id in shared databases.
    pub machine_id: String,
    /// Who this machine's sessions belong to (config `user`, default the login name).
    pub user: String,
    /// Database settings.
    pub database: Options,
    /// Tailer settings.
    pub tail: TailSettings,
    /// Transaction size limits.
    pub batch: BatchConfig,
    /// The transcript archive.
    pub archive: ArchiveConfig,
    /// Daemon timing.
    pub daemon: DaemonConfig,
    /// Session lifecycle.
    pub sessions: SessionsConfig,
    /// Episode cutting and triage rules (settings and compiled phrase lists), built once.
    pub rules: Arc<Rules>,
    /// Secret redaction (built-in rules plus `[redact.extra]`), built once.
    pub redactor: Arc<Redactor>,
    /// Logging.
    pub log: LogConfig,
    /// The MCP server.
    pub mcp: McpConfig,
    /// The digest given to a new session (`gleaner hook session-start`, `gleaner context`).
    pub context: ContextConfig,
    /// The web view.
    pub web: WebConfig,
    /// Optional refinement of closed episodes by a command the user chose.
    pub refine: RefineConfig,
    /// Model prices for `gleaner usage` (the embedded table with `[pricing]` over it).
    pub prices: crate::usage::Prices,
    /// The config file that was read, if any.
    pub file: Option<PathBuf>,
}

impl Config {
    /// Path of the single-instance lock file.
    pub fn lock_path(&self) -> PathBuf {
        self.data_dir.join("gleaner.lock")
    }
}

/// Tailer limits.
#[derive(Debug, Clone)]
pub struct TailSettings {
    /// Longest line kept; longer ones become diagnostics.
    pub max_line_bytes: usize,
    /// Bytes per read call.
    pub read_chunk_bytes: usize,
    /// Idle time after which a file's partial-line buffer is dropped.
    pub idle_evict: Duration,
}

/// Bounds of one transaction.
#[derive(Debug, Clone)]
pub struct BatchConfig {
    /// Transcript bytes per transaction.
    pub max_bytes: usize,
    /// Lines per transaction.
    pub max_lines: usize,
}

/// `[archive]`: the transcripts' bytes kept in the database (`crate::archive`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchiveConfig {
    /// Archive what ingest reads.
    pub enabled: bool,
    /// Leave an idle file's bytes in it for packing to archive once (`crate::archive`: deferred).
    pub defer_finished: bool,
    /// Time between the daemon's packing passes.
    pub pack_interval: Duration,
    /// The zstd level of packed blocks.
    pub pack_level: i32,
}

/// Daemon timing.
#[derive(Debug, Clone)]
pub struct DaemonConfig {
    /// Period of the safety-net rescan.
    pub rescan_interval: Duration,
    /// Period of the rescan while file-system events are missing or partial (no watch, or the
    /// inotify watch limit reached).
    pub poll_interval: Duration,
    /// Delay after an fs event before reading.
    pub debounce: Duration,
    /// Files read in parallel.
    pub workers: usize,
}

/// Session lifecycle.
#[derive(Debug, Clone)]
pub struct SessionsConfig {
    /// A session whose files have not grown for this long is finished.
    pub idle_timeout: Duration,
}

/// The web view (`gleaner web`).
#[derive(Debug, Clone)]
pub struct WebConfig {
    /// Where it listens; a taken port falls back to a free one unless `--bind` named it.
    pub bind: std::net::SocketAddr,
}

/// The MCP server (`gleaner mcp`).
#[derive(Debug, Clone)]
pub struct McpConfig {
    /// Longest tool result, in characters.
    pub max_result_chars: usize,
}

/// `[context]`: the digest given to a new session at its start.
#[derive(Debug, Clone)]
pub struct ContextConfig {
    /// Longest digest, in bytes.
    pub max_bytes: usize,
}

/// `[refine]`: a command (a local model runner, `claude -p`, ...) that turns a closed
/// non-routine episode into at most two learnings. Off when `command` is empty.
#[derive(Debug, Clone)]
pub struct RefineConfig {
    /// Run through `sh -c`; `None` when refinement is off.
    pub command: Option<String>,
    /// Longest run of the command for one episode.
    pub timeout: Duration,
    /// Runs per episode before it is left as failed.
    pub max_attempts: u32,
    /// How often the daemon looks for episodes to refine.
    pub interval: Duration,
}

/// Log output.
#[derive(Debug, Clone)]
pub struct LogConfig {
    /// A tracing filter directive.
    pub level: String,
    /// Output format.
    pub format: LogFormat,
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Human readable.
    Text,
    /// One JSON object per line.
    Json,
}
