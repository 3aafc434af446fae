//! The daemon's Unix socket: `gleaner status` and `gleaner hook session-end` talk to it.
//!
//! Protocol: one JSON object per line each way ([`Request`] → [`Response`]), several requests
//! per connection. The socket lives in `$XDG_RUNTIME_DIR/gleaner/` when there is one (named
//! after a hash of the data folder, so that two daemons with two data folders do not meet),
//! else in the data folder; its folder is created private (0700) and the socket itself is
//! chmod 0600: only its user can connect. Server shape after
//! mini-redis: an accept loop that stops on cancellation, one task per connection, a semaphore
//! capping connections; the socket file is removed on shutdown.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Most concurrent connections served.
const MAX_CONNECTIONS: usize = 16;
/// Longest request line accepted.
const MAX_REQUEST_BYTES: usize = 64 * 1024;
/// The protocol every response states (`"protocol": 1`); a request may state the version it
/// speaks, and another version gets an error.
pub const PROTOCOL_VERSION: u64 = 1;

/// A request to the daemon.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    /// What is the daemon doing?
    Status,
    /// Scan the projects folder now (answered at once).
    Rescan,
    /// Claude Code ended a session: ingest its files now and mark it finished
    /// (`finish_session` is the same request under its protocol name).
    #[serde(alias = "finish_session")]
    SessionEnd {
        /// Session id.
        session_id: String,
        /// The main transcript, as Claude Code reported it.
        transcript_path: Option<PathBuf>,
    },
    /// Ingest this transcript now (Claude Code is about to compact it): answered at once,
    /// the ingest runs in the background.
    IngestNow {
        /// The transcript.
        path: PathBuf,
    },
    /// Read the configuration again (as SIGHUP does) and apply it; an invalid one is refused
    /// and the running one kept.
    Reload,
    /// Derive these sessions again from the archive (`gleaner reextract` while the daemon runs:
    /// one writer per machine); answered when done.
    Reextract {
        /// Session ids (resolved by the client).
        session_ids: Vec<String>,
    },
}

/// The daemon's state, as `gleaner status` prints it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StatusReport {
    /// Daemon process id.
    pub pid: u32,
    /// Gleaner version.
    pub version: String,
    /// Seconds since start.
    pub uptime_secs: u64,
    /// Transcripts folder.
    pub projects_dir: String,
    /// Database URL, password hidden.
    pub database: String,
    /// This machine's id: the files, backlog and "since start" figures are its own; the
    /// sessions and rows (`figures`) are the whole store's (a shared one holds several).
    #[serde(default)]
    pub machine: String,
    /// This machine's user (config `user`).
    #[serde(default)]
    pub user: String,
    /// Files known.
    pub files: u64,
    /// Transcript bytes committed since start.
    pub bytes: u64,
    /// Transcript bytes read off disk since start, uncommitted partial lines and re-reads
    /// included: it moves when the daemon has seen an append, `bytes` when it kept one.
    #[serde(default)]
    pub read_bytes: u64,
    /// Lines committed since start.
    pub lines: u64,
    /// Message rows inserted since start.
    pub messages: u64,
    /// Diagnostics since start.
    pub diagnostics: u64,
    /// Transactions since start.
    pub batches: u64,
    /// Read or commit failures since start.
    pub errors: u64,
    /// Episodes the `[refine]` command handled since start.
    #[serde(default)]
    pub refined: u64,
    /// Failed runs of the `[refine]` command since start.
    #[serde(default)]
    pub refine_failed: u64,
    /// `events` (file-system notifications) or `poll` (periodic rescans only).
    #[serde(default)]
    pub watch_mode: String,
    /// `ok`, or `unavailable: <error>` when the figures below could not be read.
    #[serde(default)]
    pub database_state: String,
    /// Backlog, sessions, rows and redactions, from the database.
    #[serde(default)]
    pub figures: Option<crate::store::DaemonFigures>,
    /// Transcript bytes committed per second over the last minute.
    #[serde(default)]
    pub ingest_rate_bytes_per_sec: f64,
    /// When the database became unavailable (RFC 3339), while it is.
    #[serde(default)]
    pub database_unavailable_since: Option<String>,
    /// Database outages since start.
    #[serde(default)]
    pub outages: u64,
    /// Retries of an unavailable database that failed, since start.
    #[serde(default)]
    pub failed_retries: u64,
    /// The last error met, with its time.
    #[serde(default)]
    pub last_error: Option<super::health::LastError>,
    /// Configuration reloads applied since start.
    #[serde(default)]
    pub reloads: u64,
    /// Today's token usage and cost in the whole store (the local calendar day).
    #[serde(default)]
    pub today: Option<TodayUsage>,
}

/// Today's usage, as `gleaner status` shows it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TodayUsage {
    /// The local date.
    pub date: String,
    /// Input, output, cache-creation and cache-read tokens.
    pub tokens: [i64; 4],
    /// API messages.
    pub messages: i64,
    /// USD; `None` when a model has no price.
    pub cost_usd: Option<f64>,
}

/// A reply.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Response {
    /// Answer to [`Request::Status`].
    Status(Box<StatusReport>),
    /// Answer to [`Request::SessionEnd`].
    SessionEnded {
        /// Session id.
        session_id: String,
        /// False if it was already finished or unknown.
        finished: bool,
    },
    /// The request was taken; the work runs in the background.
    Accepted,
    /// Answer to [`Request::Reextract`].
    Reextracted(Box<super::reextract::ReextractReport>),
    /// The configuration was read again and applied.
    Reloaded {
        /// What changed (`projects_dir`, `log.level`, ...); empty when nothing did.
        changed: Vec<String>,
    },
    /// The request could not be served.
    Error {
        /// Why.
        message: String,
    },
}

/// Why talking to the daemon failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No daemon listens (socket missing or refusing).
    #[error("gleaner daemon is not running (no socket at {path})")]
    NotRunning {
        /// Socket path.
        path: PathBuf,
    },
    /// The daemon did not answer in time.
    #[error("gleaner daemon did not answer within {0:?}")]
    Timeout(Duration),
    /// Socket IO failed mid-conversation.
    #[error("talking to the daemon: {0}")]
    Io(#[from] std::io::Error),
    /// The answer was not a valid response.
    #[error("bad answer from the daemon: {0}")]
    Protocol(String),
}

/// Longest socket path the platforms accept (`sun_path` holds 104 to 108 bytes).
const MAX_SOCKET_PATH: usize = 100;

/// Where the daemon of `data_dir` listens: `$XDG_RUNTIME_DIR/gleaner/gleaner-<hash>.sock` when the
/// runtime folder is set (private, cleared at logout; the hash keeps two data folders apart),
/// else `<data_dir>/gleaner.sock`; a path too long for a socket falls back to
/// `/tmp/gleaner-<hash>/gleaner.sock` (the folder made 0700 by [`bind`], which fails rather than
/// use a folder someone else owns). Client and daemon compute the same path.
pub fn socket_path(data_dir: &Path) -> PathBuf {
    let hash = format!(
        "{:08x}",
        xxhash_rust::xxh3::xxh3_64(data_dir.as_os_str().as_encoded_bytes()) as u32
    );
    let preferred = match std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute())
    {
        Some(run) => run.join("gleaner").join(format!("gleaner-{hash}.sock")),
        None => data_dir.join("gleaner.sock"),
    };
    if preferred.as_os_str().len() <= MAX_SOCKET_PATH {
        return preferred;
    }
    PathBuf::from(format!("/tmp/gleaner-{hash}")).join("gleaner.sock")
}

/// Bind the socket (replacing a stale one: the caller holds the single-instance lock, so no
/// other daemon can own it) and make it private to this user.
pub fn bind(path: &Path) -> std::io::Result<UnixListener> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
    }
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let listener = UnixListener::bind(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(listener)
}

/// Serve requests until `cancel` fires, then remove the socket file.
pub async fn serve<H, Fut>(
    listener: UnixListener,
    path: PathBuf,
    handler: H,
    cancel: CancellationToken,
) where
    H: Fn(Request) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Response> + Send + 'static,
{
    let handler = Arc::new(handler);
    let limit = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    // The socket file is ours: its owner is the one user allowed to connect.
    #[cfg(unix)]
    let owner = {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(&path).map(|m| m.uid()).ok()
    };
    loop {
        let accepted = tokio::select! {
            _ = cancel.cancelled() => break,
            a = listener.accept() => a,
        };
        let stream = match accepted {
            // Only this user's processes talk to the daemon (the folder is 0700 and the socket
            // 0600 too; this also covers a socket in a shared folder).
            Ok((s, _))
                if s.peer_cred()
                    .is_ok_and(|c| owner.is_some_and(|o| c.uid() != o)) =>
            {
                tracing::warn!("refused a status connection from another user");
                continue;
            }
            Ok((s, _)) => s,
            Err(e) => {
                tracing::warn!(error = %e, "status socket accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = limit.clone().acquire_owned().await else {
            break;
        };
        let handler = handler.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = cancel.cancelled() => {}
                r = handle(stream, handler.as_ref()) => {
                    if let Err(e) = r {
                        tracing::debug!(error = %e, "status connection failed");
                    }
                }
            }
            drop(permit);
        });
    }
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tracing::warn!(path = %path.display(), error = %e, "cannot remove socket"),
    }
}

async fn handle<H, Fut>(stream: UnixStream, handler: &H) -> std::io::Result<()>
where
    H: Fn(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    // One JSON request per line, one JSON response per line, until the client closes.
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut line = String::new();
    loop {
        line.clear();
        let n = (&mut reader)
            .take(MAX_REQUEST_BYTES as u64 + 1)
            .read_line(&mut line)
            .await?;
        if n == 0 {
            break;
        }
        let too_long = line.len() > MAX_REQUEST_BYTES && !line.ends_with('\n');
        let response = if too_long {
            Response::Error {
                message: format!("bad request: longer than {MAX_REQUEST_BYTES} bytes"),
            }
        } else if line.trim().is_empty() {
            continue;
        } else {
            match parse_request(line.trim()) {
                Ok(req) => handler(req).await,
                Err(message) => Response::Error { message },
            }
        };
        let mut v = serde_json::to_value(&response).map_err(std::io::Error::other)?;
        if let Some(o) = v.as_object_mut() {
            o.insert("protocol".into(), PROTOCOL_VERSION.into());
        }
        let mut out = serde_json::to_vec(&v).map_err(std::io::Error::other)?;
        out.push(b'\n');
        write.write_all(&out).await?;
        if too_long {
            break;
        }
    }
    write.shutdown().await
}

/// A request line: JSON with a known `type`, and, when it states one, this protocol version.
fn parse_request(line: &str) -> Result<Request, String> {
    let v: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("bad request: not JSON: {e}"))?;
    if let Some(p) = v.get("protocol") {
        if p.as_u64() != Some(PROTOCOL_VERSION) {
            return Err(format!(
                "unsupported protocol version {p} (this daemon speaks {PROTOCOL_VERSION})"
            ));
        }
    }
    serde_json::from_value(v).map_err(|e| format!("bad request: {e}"))
}

/// Send one request and wait at most `timeout` for the answer.
pub async fn request(
    path: &Path,
    req: &Request,
    timeout: Duration,
) -> Result<Response, ClientError> {
    let exchange = async {
        let stream = UnixStream::connect(path)
            .await
            .map_err(|_| ClientError::NotRunning {
                path: path.to_path_buf(),
            })?;
        let (read, mut write) = stream.into_split();
        let mut msg = serde_json::to_vec(req).map_err(|e| ClientError::Protocol(e.to_string()))?;
        msg.push(b'\n');
        write.write_all(&msg).await?;
        let mut line = String::new();
        BufReader::new(read).read_line(&mut line).await?;
        serde_json::from_str::<Response>(line.trim())
            .map_err(|e| ClientError::Protocol(e.to_string()))
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| ClientError::Timeout(timeout))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn round_trip_and_privacy() {
        let dir = tempfile::tempdir().unwrap();
        let path = socket_path(&dir.path().join("data"));
        let listener = bind(&path).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let cancel = CancellationToken::new();
        let server = tokio::spawn(serve(
            listener,
            path.clone(),
            |req| async move {
                match req {
                    Request::Status => Response::Status(Box::new(StatusReport {
                        files: 3,
                        ..StatusReport::default()
                    })),
                    Request::SessionEnd { session_id, .. } => Response::SessionEnded {
                        session_id,
                        finished: true,
                    },
                    Request::IngestNow { .. } | Request::Rescan => Response::Accepted,
                    Request::Reload => Response::Reloaded { changed: vec![] },
                    Request::Reextract { .. } => Response::Accepted,
                }
            },
            cancel.clone(),
        ));
        let r = request(&path, &Request::Status, Duration::from_secs(5))
            .await
            .unwrap();
        assert!(matches!(r, Response::Status(s) if s.files == 3));
        let r = request(
            &path,
            &Request::SessionEnd {
                session_id: "s".into(),
                transcript_path: None,
            },
            Duration::from_secs(5),
        )
        .await
        .unwrap();
        assert_eq!(
            r,
            Response::SessionEnded {
                session_id: "s".into(),
                finished: true
            }
        );
        cancel.cancel();
        server.await.unwrap();
        assert!(!path.exists(), "socket removed on shutdown");
        let e = request(&path, &Request::Status, Duration::from_secs(1))
            .await
            .unwrap_err();
        assert!(matches!(e, ClientError::NotRunning { .. }));
    }
}
