//! Logging: `tracing` to stderr (journald and launchd capture it), text or JSON.

use tracing_subscriber::EnvFilter;

use crate::config::{LogConfig, LogFormat};

/// Install the global subscriber. A level such as `info` also quiets sqlx's per-statement logs;
/// a full filter (`gleaner=debug,sqlx=info`) is used as given.
pub fn init(cfg: &LogConfig) {
    let directive = if cfg.level.contains('=') || cfg.level.contains(',') {
        cfg.level.clone()
    } else {
        format!("{},sqlx=warn", cfg.level)
    };
    let filter =
        EnvFilter::try_new(&directive).unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colours only for a person at a terminal: journald, launchd and MCP clients read
        // stderr as plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false);
    let _ = match cfg.format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
