//! Ending sessions: by the hook, when idle, when their files are gone.
//!
//! A session's last episode is open until the session ends. Ending it reads the builder state
//! of each of its main files, lets the episode stage close the open episode
//! ([`episode::Builder::finish`]), and hands the closed rows to the store, which writes them in
//! the transaction that marks the session finished. The stored state is left as it is, so a
//! session that resumes continues that episode and writes it again.

use crate::config::Config;
use crate::episode;
use crate::store::{ClosedEpisode, Store, StoreError};

/// The open episode of every main file of these sessions, closed.
pub async fn close_episodes(
    store: &Store,
    session_ids: &[&str],
) -> Result<Vec<ClosedEpisode>, StoreError> {
    let states = store.episode_states(session_ids).await?;
    let mut closed = Vec::with_capacity(states.len());
    for s in states {
        let json = crate::extract::rows::unpack_state(&s.state);
        let Some(builder) = json.as_deref().and_then(episode::Builder::from_json) else {
            tracing::warn!(
                file_id = s.file_id,
                "unreadable episode state; last episode left open"
            );
            continue;
        };
        if let Some(row) = builder.finish(&s.session_id, &crate::snippet::draft::Auto) {
            closed.push(ClosedEpisode {
                file_id: s.file_id,
                path: s.path,
                project: s.project,
                byte_offset: s.byte_offset,
                row,
            });
        }
    }
    Ok(closed)
}

/// Finish one session (`reason`: `hook`, ...) with its episodes. False if it was not active.
pub async fn finish_session(
    store: &Store,
    session_id: &str,
    reason: &str,
) -> Result<bool, StoreError> {
    let closed = close_episodes(store, &[session_id]).await?;
    store.finish_session(session_id, reason, &closed).await
}

/// Finish every active session of this machine whose files have not grown for
/// `sessions.idle_timeout` (file modification times), or whose files are all gone. Returns how
/// many were finished.
///
/// A file of such a session with bytes after its checkpoint (a last line without its `\n`) is
/// offered to `defer` first, with its size: the engine pumps it as finished (a whole JSON
/// object there is read as a line) and says `true`, and the session waits for the next sweep.
/// A tail that is not taken so (`defer` says `false`: not JSON, or already tried at that size)
/// is archived as it is, so a restored file is whole.
pub async fn sweep_idle_sessions(
    store: &Store,
    cfg: &Config,
    mut defer: impl FnMut(&std::path::Path, u64) -> bool,
) -> Result<usize, StoreError> {
    let t0 = std::time::Instant::now();
    let cutoff = crate::extract::rows::unix_ms_now() - cfg.sessions.idle_timeout.as_millis() as i64;
    let mut idle = store.idle_sessions(&cfg.machine_id, cutoff).await?;
    if idle.is_empty() {
        return Ok(0);
    }
    let found_ms = t0.elapsed().as_millis() as u64;
    let mut kept = Vec::with_capacity(idle.len());
    for s in idle.drain(..) {
        let mut deferred = false;
        for (f, tail) in unread_tails(store, cfg, &s.session_id).await? {
            if defer(std::path::Path::new(&f.path), tail.size) {
                deferred = true;
            } else if cfg.archive.enabled {
                archive_tail(store, &f, tail).await?;
            }
        }
        if !deferred {
            kept.push(s);
        }
    }
    let idle = kept;
    let ids: Vec<&str> = idle.iter().map(|s| s.session_id.as_str()).collect();
    let closed = close_episodes(store, &ids).await?;
    let closed_ms = t0.elapsed().as_millis() as u64;
    let n = store.finish_idle(&idle, &closed).await?;
    tracing::debug!(
        finished = n,
        found_ms,
        closed_ms,
        ms = t0.elapsed().as_millis() as u64,
        "idle sessions finished"
    );
    Ok(n as usize)
}

/// Bytes after a file's checkpoint: its size then, and the bytes when they are one line
/// without a newline (what is archived as a `partial` chunk).
struct Tail {
    size: u64,
    line: Option<Vec<u8>>,
}

/// This machine's files of a session holding bytes after their checkpoint: the file that was
/// read (same identity: not another machine's path, not a replacement).
async fn unread_tails(
    store: &Store,
    cfg: &Config,
    session_id: &str,
) -> Result<Vec<(crate::store::FileRecord, Tail)>, StoreError> {
    let mut out = Vec::new();
    for f in store.files_of_session(session_id).await? {
        let (path, start) = (std::path::PathBuf::from(&f.path), f.byte_offset as u64);
        let (dev, inode) = (f.dev as u64, f.inode as u64);
        let max = cfg.tail.max_line_bytes as u64;
        // Read off the runtime; the bytes never reached a batch, so the stored size does not
        // count them.
        let tail = crate::run::blocking(move || -> std::io::Result<Option<Tail>> {
            use std::io::{Read, Seek, SeekFrom};
            let mut file = std::fs::File::open(&path)?;
            let meta = file.metadata()?;
            let size = meta.len();
            if crate::tail::identity(&meta) != (dev, inode) || size <= start {
                return Ok(None);
            }
            if size - start > max {
                return Ok(Some(Tail { size, line: None }));
            }
            file.seek(SeekFrom::Start(start))?;
            let mut line = Vec::with_capacity((size - start) as usize);
            file.take(size - start).read_to_end(&mut line)?;
            let whole = line.len() as u64 == size - start && !line.contains(&b'\n');
            Ok(Some(Tail {
                size,
                line: whole.then_some(line),
            }))
        })
        .await;
        match tail {
            Ok(Ok(Some(t))) => out.push((f, t)),
            Ok(Ok(None)) => {}
            Ok(Err(e)) => tracing::debug!(file_id = f.id, error = %e, "unread tail not checked"),
            Err(e) => tracing::warn!(file_id = f.id, error = %e, "unread tail not checked"),
        }
    }
    Ok(out)
}

/// A last line without its newline that was not read as a line is archived as it is (a
/// `partial` chunk).
async fn archive_tail(
    store: &Store,
    f: &crate::store::FileRecord,
    tail: Tail,
) -> Result<(), StoreError> {
    let Some(line) = tail.line else {
        return Ok(());
    };
    match crate::archive::unfinished_chunk(f.generation, f.byte_offset as u64, &line) {
        Ok(c) => store.add_partial_chunk(f.id, &c).await,
        Err(e) => {
            tracing::warn!(file_id = f.id, error = %e, "unfinished line not archived");
            Ok(())
        }
    }
}
