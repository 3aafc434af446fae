//! `gleaner hook ...`: entry points Claude Code runs as hooks.
//!
//! A hook must never fail or stall Claude Code. So: stdin is read only up to the end of the first
//! JSON object (Claude Code may keep stdin open), with a time limit; the hook returns within
//! [`HOOK_BUDGET`] whatever happens; and the caller maps any error to a one-line message and exit
//! code 0.
//!
//! The work itself never runs in that budget. With a daemon, the request is handed over and the
//! daemon finishes it whether or not the hook is still there to hear the answer. Without one,
//! the hook starts itself again in the background ([`BACKGROUND_ENV`], the input passed in
//! [`INPUT_ENV`], no stdin) and that process ingests the session and marks it finished.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use serde::Deserialize;

use crate::config::{self, Overrides};
use crate::query::store::Store;
use crate::run::socket::{self, ClientError, Request, Response};
use crate::run::RunError;

/// Which hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Claude Code's `SessionEnd` event.
    SessionEnd,
    /// Claude Code's `PreCompact` event: the transcript is about to be compacted.
    PreCompact,
    /// Claude Code's `SessionStart` event: print the project's digest (`query::context`).
    SessionStart,
}

/// What a hook may take in all, from start to exit (Claude Code waits for it).
const HOOK_BUDGET: Duration = Duration::from_millis(200);
/// Longest wait for the hook's JSON on stdin.
const STDIN_WAIT: Duration = Duration::from_millis(100);
/// Longest wait for the daemon's answer in the foreground: the daemon does the work anyway.
const DAEMON_WAIT: Duration = Duration::from_millis(80);
/// Longest wait of the background process for the daemon to ingest and finish the session.
const BACKGROUND_DAEMON_WAIT: Duration = Duration::from_secs(8);
// The waits fit in the budget, with room for starting the process and reading the config.
const _: () = assert!(STDIN_WAIT.as_millis() + DAEMON_WAIT.as_millis() < HOOK_BUDGET.as_millis());
const _: () =
    assert!(STDIN_WAIT.as_millis() + PRE_COMPACT_WAIT.as_millis() < HOOK_BUDGET.as_millis());

/// Longest wait of the background process for the single-instance lock.
const LOCK_WAIT: Duration = Duration::from_secs(30);

/// Set (to `1`) in the environment of the hook's background process.
const BACKGROUND_ENV: &str = "GLEANER_HOOK_BACKGROUND";
/// The hook's input, handed to the background process.
const INPUT_ENV: &str = "GLEANER_HOOK_INPUT";

/// The fields of Claude Code's hook input that Gleaner uses (others are ignored).
#[derive(Debug, Deserialize, serde::Serialize)]
struct HookInput {
    session_id: Option<String>,
    transcript_path: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cwd: Option<String>,
    #[allow(dead_code)]
    hook_event_name: Option<String>,
    #[allow(dead_code)]
    reason: Option<String>,
}

/// Run a hook. Errors are for the caller to print; it exits 0 regardless.
pub fn run(kind: Kind, overrides: &Overrides) -> anyhow::Result<()> {
    if kind == Kind::SessionStart {
        return session_start(overrides);
    }
    let background = std::env::var_os(BACKGROUND_ENV).is_some();
    let input = if background {
        let text = std::env::var(INPUT_ENV).context("background hook without its input")?;
        serde_json::from_str(&text).context("background hook input")?
    } else {
        read_input(STDIN_WAIT)?
    };
    let session_id = input
        .session_id
        .clone()
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
        Kind::SessionEnd if background => runtime.block_on(session_end_background(
            cfg,
            session_id,
            input.transcript_path,
        )),
        Kind::SessionEnd => {
            let handed = runtime.block_on(session_end(cfg, session_id, &input))?;
            if !handed {
                start_background(&input)?;
            }
            // The runtime may hold a thread blocked on stdin: do not wait for it.
            runtime.shutdown_background();
            Ok(())
        }
        Kind::PreCompact => {
            let r = runtime.block_on(pre_compact(cfg, input.transcript_path));
            runtime.shutdown_background();
            r
        }
        Kind::SessionStart => Ok(()),
    }
}

/// The `SessionStart` hook: the digest of the session's project as
/// `hookSpecificOutput.additionalContext`, within [`HOOK_BUDGET`]. It fails open: any problem
/// (no input, no database, a schema it cannot read, no time left) prints nothing at all, since
/// what it prints goes into the session's context.
fn session_start(overrides: &Overrides) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let work = || -> anyhow::Result<Option<String>> {
        let input = read_input(STDIN_WAIT)?;
        let Some(cwd) = input.cwd.filter(|c| !c.is_empty()) else {
            return Ok(None);
        };
        let cfg = config::load(overrides)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        let exclude = input.session_id.filter(|s| !s.is_empty());
        let max_bytes = cfg.context.max_bytes;
        let left = HOOK_BUDGET.saturating_sub(started.elapsed());
        let text = runtime.block_on(async {
            let work = async {
                let store = super::open_store(&cfg).await?;
                // A session started in a subfolder of a project gets the project's digest.
                let req = crate::query::context::ContextRequest {
                    project: crate::query::context::resolve_project(&store, &cwd).await?,
                    exclude,
                    max_bytes,
                };
                let text = crate::query::context::digest(&store, &req).await;
                store.close().await;
                anyhow::Ok(text?)
            };
            match tokio::time::timeout(left, work).await {
                Ok(r) => r,
                Err(_) => anyhow::bail!("no digest within {HOOK_BUDGET:?}"),
            }
        });
        runtime.shutdown_background();
        Ok(Some(text?).filter(|t| !t.is_empty()))
    };
    if let Ok(Some(text)) = work() {
        let out = serde_json::json!({
            "hookSpecificOutput": {
                "hookEventName": "SessionStart",
                "additionalContext": text,
            }
        });
        println!("{out}");
    }
    Ok(())
}

/// Start this hook again in the background to do the work without a daemon.
fn start_background(input: &HookInput) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("cannot find the gleaner binary")?;
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    std::process::Command::new(exe)
        .args(args)
        .env(BACKGROUND_ENV, "1")
        .env(INPUT_ENV, serde_json::to_string(input)?)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("cannot start the background hook")?;
    Ok(())
}

/// Longest wait for the daemon to take a pre-compact request.
const PRE_COMPACT_WAIT: Duration = Duration::from_millis(80);

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

/// Hand the session end to the daemon. `Ok(false)` when no daemon runs (the caller starts the
/// background process); a daemon that takes the request but has not answered within
/// [`DAEMON_WAIT`] is still doing the work.
async fn session_end(
    cfg: Arc<config::Config>,
    session_id: String,
    input: &HookInput,
) -> anyhow::Result<bool> {
    let sock = socket::socket_path(&cfg.data_dir);
    let req = Request::SessionEnd {
        session_id,
        transcript_path: input.transcript_path.clone(),
    };
    match socket::request(&sock, &req, DAEMON_WAIT).await {
        Ok(Response::SessionEnded { .. }) | Err(ClientError::Timeout(_)) => Ok(true),
        Ok(Response::Error { message }) => anyhow::bail!("daemon: {message}"),
        Ok(other) => anyhow::bail!("unexpected answer from the daemon: {other:?}"),
        Err(ClientError::NotRunning { .. }) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// The background process: through the daemon if one has started since, else by itself.
async fn session_end_background(
    cfg: Arc<config::Config>,
    session_id: String,
    transcript_path: Option<PathBuf>,
) -> anyhow::Result<()> {
    let sock = socket::socket_path(&cfg.data_dir);
    let req = Request::SessionEnd {
        session_id: session_id.clone(),
        transcript_path: transcript_path.clone(),
    };
    match socket::request(&sock, &req, BACKGROUND_DAEMON_WAIT).await {
        Ok(Response::SessionEnded { .. }) => Ok(()),
        Ok(Response::Error { message }) => anyhow::bail!("daemon: {message}"),
        Ok(other) => anyhow::bail!("unexpected answer from the daemon: {other:?}"),
        Err(ClientError::NotRunning { .. }) => {
            // No daemon: do the work here, through the same engine. The lock may be held by
            // the background process of the previous hook (or an `ingest`) for a moment: wait
            // for it rather than drop this session's end.
            let store = Store::connect(&cfg.database).await?;
            let deadline = std::time::Instant::now() + LOCK_WAIT;
            let r = loop {
                let r = crate::run::once::end_session(
                    cfg.clone(),
                    store.clone(),
                    session_id.clone(),
                    transcript_path.clone(),
                )
                .await;
                match r {
                    Err(RunError::Locked { .. }) if std::time::Instant::now() < deadline => {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    r => break r,
                }
            };
            store.close().await;
            match r {
                Ok(_) => Ok(()),
                // Still locked: a daemon whose socket did not answer; it will catch up.
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
