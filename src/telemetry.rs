//! Logging: `tracing` to stderr (journald and launchd capture it), text or JSON.
//!
//! The level filter sits behind a reload handle so that a daemon reload (SIGHUP) applies a new
//! `log.level` without a restart; the format is fixed for the life of the process.

use std::sync::OnceLock;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{reload, EnvFilter, Registry};

use crate::config::{LogConfig, LogFormat};

static FILTER: OnceLock<reload::Handle<EnvFilter, Registry>> = OnceLock::new();

/// The filter for a configured level. A level such as `info` also quiets sqlx's per-statement
/// logs; a full filter (`gleaner=debug,sqlx=info`) is used as given.
fn filter(level: &str) -> Result<EnvFilter, String> {
    let directive = if level.contains('=') || level.contains(',') {
        level.to_string()
    } else {
        format!("{level},sqlx=warn")
    };
    EnvFilter::try_new(&directive).map_err(|e| format!("invalid log filter {level:?}: {e}"))
}

/// Install the global subscriber.
pub fn init(cfg: &LogConfig) {
    let f = filter(&cfg.level).unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn"));
    let (f, handle) = reload::Layer::new(f);
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        // Colours only for a person at a terminal: journald, launchd and MCP clients read
        // stderr as plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false);
    let registry = tracing_subscriber::registry().with(f);
    let installed = match cfg.format {
        LogFormat::Text => registry.with(fmt).try_init(),
        LogFormat::Json => registry.with(fmt.json()).try_init(),
    };
    if installed.is_ok() {
        let _ = FILTER.set(handle);
    }
}

/// Apply a new level (a reload). An invalid level is an error and the old one stays.
pub fn set_level(level: &str) -> Result<(), String> {
    let f = filter(level)?;
    match FILTER.get() {
        Some(handle) => handle.reload(f).map_err(|e| e.to_string()),
        // No subscriber of ours (a test, an embedding program): nothing to change.
        None => Ok(()),
    }
}
