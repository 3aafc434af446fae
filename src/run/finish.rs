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
        if let Some(row) = builder.finish(&s.session_id) {
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
pub async fn sweep_idle_sessions(store: &Store, cfg: &Config) -> Result<usize, StoreError> {
    let t0 = std::time::Instant::now();
    let cutoff = crate::extract::rows::unix_ms_now() - cfg.sessions.idle_timeout.as_millis() as i64;
    let idle = store.idle_sessions(&cfg.machine_id, cutoff).await?;
    if idle.is_empty() {
        return Ok(0);
    }
    let found_ms = t0.elapsed().as_millis() as u64;
    let ids: Vec<&str> = idle.iter().map(|s| s.session_id.as_str()).collect();
    if cfg.archive.enabled {
        for id in &ids {
            archive_unfinished_lines(store, cfg, id).await?;
        }
    }
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

/// A session going idle whose files end with a line without its newline: that line is
/// archived (a `partial` chunk), so a restored file is whole. A batch that reads a file already
/// idle does it itself (`run::pump`); this is the file that went idle after its last batch.
async fn archive_unfinished_lines(
    store: &Store,
    cfg: &Config,
    session_id: &str,
) -> Result<(), StoreError> {
    for f in store.files_of_session(session_id).await? {
        let (path, start) = (std::path::PathBuf::from(&f.path), f.byte_offset as u64);
        let (dev, inode) = (f.dev as u64, f.inode as u64);
        let max = cfg.tail.max_line_bytes as u64;
        // Read off the runtime; only the file that was read (same identity: not another
        // machine's path, not a replacement), holding one line without a newline after the
        // checkpoint (its bytes never reached a batch, so the stored size does not count them).
        let chunk = crate::run::blocking(move || -> std::io::Result<Option<_>> {
            use std::io::{Read, Seek, SeekFrom};
            let mut file = std::fs::File::open(&path)?;
            let meta = file.metadata()?;
            let size = meta.len();
            if crate::tail::identity(&meta) != (dev, inode) || size <= start || size - start > max {
                return Ok(None);
            }
            file.seek(SeekFrom::Start(start))?;
            let mut line = Vec::with_capacity((size - start) as usize);
            file.take(size - start).read_to_end(&mut line)?;
            if line.len() as u64 != size - start || line.contains(&b'\n') {
                return Ok(None);
            }
            crate::archive::unfinished_chunk(f.generation, start, &line).map(Some)
        })
        .await;
        match chunk {
            Ok(Ok(Some(c))) => store.add_partial_chunk(f.id, &c).await?,
            Ok(Ok(None)) => {}
            Ok(Err(e)) => {
                tracing::debug!(file_id = f.id, error = %e, "unfinished line not archived")
            }
            Err(e) => tracing::warn!(file_id = f.id, error = %e, "unfinished line not archived"),
        }
    }
    Ok(())
}
