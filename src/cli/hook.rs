//! `gleaner hook ...`: entry points Claude Code runs as hooks.
//!
//! A hook must never fail or stall Claude Code. So: stdin is read only up to the end of the first
//! JSON object (Claude Code may keep stdin open), with a time limit; every wait is bounded; and
//! the caller maps any error to a one-line message and exit code 0.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use serde::Deserialize;

use crate::config::{self, Overrides};
use crate::run::socket::{self, ClientError, Request, Response};
use crate::run::RunError;
use crate::store::Store;

/// Which hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Claude Code's `SessionEnd` event.
    SessionEnd,
    /// Claude Code's `PreCompact` event: the transcript is about to be compacted.
    PreCompact,
}

/// Longest wait for the hook's JSON on stdin.
const STDIN_WAIT: Duration = Duration::from_secs(2);
/// Longest wait for the daemon to ingest and finish the session.
const DAEMON_WAIT: Duration = Duration::from_secs(8);

/// The fields of Claude Code's hook input that Gleaner uses (others are ignored).
#[derive(Debug, Deserialize)]
struct HookInput {
    session_id: Option<String>,
    transcript_path: Option<PathBuf>,
    #[allow(dead_code)]
    hook_event_name: Option<String>,
    #[allow(dead_code)]
    reason: Option<String>,
}

/// Run a hook. Errors are for the caller to print; it exits 0 regardless.
pub fn run(kind: Kind, overrides: &Overrides) -> anyhow::Result<()> {
    let input = read_input(STDIN_WAIT)?;
    let session_id = input
        .session_id
        .filter(|s| !s.is_empty())
        .context("hook input has no session_id")?;
    let cfg = Arc::new(config::load(overrides)?);
    crate::telemetry::init(&config::LogConfig {
        level: "warn".into(),
        format: cfg.log.format,
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    match kind {
        Kind::SessionEnd => runtime.block_on(session_end(cfg, session_id, input.transcript_path)),
        Kind::PreCompact => runtime.block_on(pre_compact(cfg, input.transcript_path)),
    }
}

/// Longest wait for the daemon to take a pre-compact request.
const PRE_COMPACT_WAIT: Duration = Duration::from_millis(150);

/// Ask the daemon to ingest the transcript now, before Claude Code compacts the conversation.
/// Without a daemon there is nothing to hurry: the next ingest reads the file anyway.
async fn pre_compact(cfg: Arc<config::Config>, path: Option<PathBuf>) -> anyhow::Result<()> {
    let Some(path) = path else {
        anyhow::bail!("hook input has no transcript_path");
    };
    let sock = socket::socket_path(&cfg.data_dir);
    match socket::request(&sock, &Request::IngestNow { path }, PRE_COMPACT_WAIT).await {
        Ok(Response::Accepted) | Err(ClientError::NotRunning { .. }) => Ok(()),
        Ok(Response::Error { message }) => anyhow::bail!("daemon: {message}"),
        Ok(other) => anyhow::bail!("unexpected answer from the daemon: {other:?}"),
        Err(e) => Err(e.into()),
    }
}

async fn session_end(
    cfg: Arc<config::Config>,
    session_id: String,
    transcript_path: Option<PathBuf>,
) -> anyhow::Result<()> {
    let sock = socket::socket_path(&cfg.data_dir);
    let req = Request::SessionEnd {
        session_id: session_id.clone(),
        transcript_path: transcript_path.clone(),
    };
    match socket::request(&sock, &req, DAEMON_WAIT).await {
        Ok(Response::SessionEnded { .. }) => Ok(()),
        Ok(Response::Error { message }) => anyhow::bail!("daemon: {message}"),
        Ok(other) => anyhow::bail!("unexpected answer from the daemon: {other:?}"),
        Err(ClientError::NotRunning { .. }) => {
            // No daemon: do the work here, through the same engine.
            let store = Store::connect(&cfg.database).await?;
            let r = crate::run::once::end_session(cfg, store.clone(), session_id, transcript_path)
                .await;
            store.close().await;
            match r {
                Ok(_) => Ok(()),
                // A daemon holds the lock but its socket did not answer: it will catch up.
                Err(RunError::Locked { .. }) => Ok(()),
                Err(e) => Err(e.into()),
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// Read the first JSON object from stdin, without waiting for end of input.
fn read_input(wait: Duration) -> anyhow::Result<HookInput> {
    // A thread, because a blocked stdin read cannot be cancelled; if it never completes, the
    // process exits without it.
    let first = crate::run::within(wait, || {
        let stdin = std::io::stdin();
        let mut values =
            serde_json::Deserializer::from_reader(stdin.lock()).into_iter::<HookInput>();
        values.next()
    });
    match first {
        Some(Some(Ok(v))) => Ok(v),
        Some(Some(Err(e))) => anyhow::bail!("invalid hook input: {e}"),
        Some(None) => anyhow::bail!("no hook input on stdin"),
        None => anyhow::bail!("no complete hook input on stdin within {wait:?}"),
    }
}
