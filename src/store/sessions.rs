//! Session lifecycle writes: which sessions went idle, and finishing them together with the
//! episodes that closed with them.
//!
//! The store does not decide episodes: the caller reads the builder states of a session's main
//! files ([`Store::episode_states`]), lets the episode stage close the open episode, and hands
//! the rows back to [`Store::finish_session`] / [`Store::finish_idle`], which write them in the
//! same transaction as the session's end. A file that committed more lines after its state was
//! read (the session went on) keeps its open episode: its closed row is skipped. A file whose
//! last batch closed the episode already (it was idle when it was caught up) is not read again.

use std::collections::{HashMap, HashSet};

use super::episodes::{self, EpisodeWrite};
use super::sql::{row_chunks, Conn, Sql};
use super::{Store, StoreError};
use crate::extract::rows::{now_iso, unix_millis_from_iso, EpisodeRow};

/// A session that went quiet, as found by [`Store::idle_sessions`].
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct IdleSession {
    /// Session id.
    pub session_id: String,
    /// Files of the session that still exist.
    pub live_files: i64,
    /// First activity.
    pub started_at: Option<String>,
    /// Last activity.
    pub last_activity_at: Option<String>,
}

/// The stored episode builder state of a main transcript.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct EpisodeStateRow {
    /// File row id.
    pub file_id: i64,
    /// Its path (the source of its snippets).
    pub path: String,
    /// Its project folder.
    pub project: String,
    /// The session it belongs to.
    pub session_id: String,
    /// The builder state, packed (`extract::rows::unpack_state` gives the JSON).
    pub state: Vec<u8>,
    /// The committed offset the state goes with.
    pub byte_offset: i64,
}

/// An episode closed because its session finished, with the file it belongs to.
#[derive(Debug, Clone)]
pub struct ClosedEpisode {
    /// The file's row id.
    pub file_id: i64,
    /// The file's path.
    pub path: String,
    /// The file's project folder.
    pub project: String,
    /// The committed offset of the state it was built from: written only if it still holds.
    pub byte_offset: i64,
    /// The episode, closed, with its snippets.
    pub row: EpisodeRow,
}

/// How a session ended: its end is its last activity, its duration runs from its first.
fn end_of(started: Option<&str>, last: Option<&str>) -> (String, Option<i64>) {
    let ended = last.map_or_else(now_iso, str::to_string);
    let duration = match (
        started.and_then(unix_millis_from_iso),
        unix_millis_from_iso(&ended),
    ) {
        (Some(a), Some(b)) if b >= a => Some(b - a),
        _ => None,
    };
    (ended, duration)
}

const FINISH_SESSION: &str = "UPDATE sessions SET status = 'finished', ended_at = $1, \
     duration_ms = $2, end_reason = $3, updated_at = $4 \
     WHERE session_id = $5 AND status = 'active'";

/// The multi-row [`FINISH_SESSION`] of [`Store::finish_idle`]: `FINISH_MANY`, the rows, then
/// `FINISH_MANY_SET`; returns the sessions it changed.
const FINISH_MANY: &str = "WITH v (session_id, ended_at, duration_ms, end_reason, updated_at) AS (";

const FINISH_MANY_SET: &str = ") UPDATE sessions SET status = 'finished', \
     ended_at = v.ended_at, duration_ms = v.duration_ms, end_reason = v.end_reason, \
     updated_at = v.updated_at FROM v \
     WHERE sessions.session_id = v.session_id AND sessions.status = 'active' \
     RETURNING sessions.session_id";

/// Sessions per state query (a backfill finishes thousands at once).
const STATE_CHUNK: usize = 500;

impl Store {
    /// Active sessions with a file on `machine` and no live file modified at or after
    /// `cutoff_ms` (Unix ms). Sessions whose files are all gone qualify too.
    pub async fn idle_sessions(
        &self,
        machine: &str,
        cutoff_ms: i64,
    ) -> Result<Vec<IdleSession>, StoreError> {
        let q = Sql::new(
            "SELECT s.session_id, s.started_at, s.last_activity_at, \
             (SELECT COUNT(*) FROM files f WHERE f.session_id = s.session_id \
              AND f.state = 'active') AS live_files \
             FROM sessions s WHERE s.status = 'active' \
             AND EXISTS (SELECT 1 FROM files f WHERE f.session_id = s.session_id \
              AND f.machine = $1) \
             AND NOT EXISTS (SELECT 1 FROM files f WHERE f.session_id = s.session_id \
              AND f.state = 'active' AND f.mtime_ms >= $2)",
        )
        .arg(machine)
        .arg(cutoff_ms);
        self.fetch_all(&q).await
    }

    /// The episode builder states of the main files of these sessions, by file id: those whose
    /// open episode has not been written closed at the file's present offset already (the
    /// pump closes it in the batch that catches up a file idle past the session timeout,
    /// `files.episode_closed_offset`; closing it again would write the same row).
    pub async fn episode_states(
        &self,
        session_ids: &[&str],
    ) -> Result<Vec<EpisodeStateRow>, StoreError> {
        let mut out = Vec::new();
        for chunk in session_ids.chunks(STATE_CHUNK) {
            let mut q = Sql::new(
                "SELECT id AS file_id, path, project, session_id, episode_state AS state, \
                 byte_offset FROM files \
                 WHERE kind = 'main' AND episode_state IS NOT NULL \
                 AND (episode_closed_offset IS NULL OR episode_closed_offset <> byte_offset) AND ",
            );
            q.push_in("session_id", chunk.iter().copied());
            q.push(" ORDER BY id");
            out.extend(
                self.fetch_all::<EpisodeStateRow>(&q.not_persistent())
                    .await?,
            );
        }
        Ok(out)
    }

    /// Mark a session finished (`reason`: `idle`, `hook` or `deleted`) and write the episodes
    /// that closed with it. Its end is its last activity; its duration runs from its first.
    /// Returns false if it was not active (then nothing is written).
    pub async fn finish_session(
        &self,
        session_id: &str,
        reason: &str,
        closed: &[ClosedEpisode],
    ) -> Result<bool, StoreError> {
        let q = Sql::new("SELECT started_at, last_activity_at FROM sessions WHERE session_id = $1")
            .arg(session_id);
        let times: Option<(Option<String>, Option<String>)> = self.fetch_optional(&q).await?;
        let Some((started, last)) = times else {
            return Ok(false);
        };
        let (ended, duration) = end_of(started.as_deref(), last.as_deref());
        let now = now_iso();
        let mut tx = self.begin().await?;
        let mut c = tx.conn();
        let q = Sql::new(FINISH_SESSION)
            .arg(ended)
            .arg(duration)
            .arg(reason)
            .arg(now.as_str())
            .arg(session_id);
        let finished = c.execute(&q).await? == 1;
        if finished {
            write_closed(&mut c, closed, &now).await?;
        }
        tx.commit().await?;
        Ok(finished)
    }

    /// Finish many idle sessions in one transaction (a backfill finds thousands at once), with
    /// the episodes that closed with them. Returns how many changed.
    pub async fn finish_idle(
        &self,
        sessions: &[IdleSession],
        closed: &[ClosedEpisode],
    ) -> Result<u64, StoreError> {
        let now = now_iso();
        let mut tx = self.begin().await?;
        let mut c = tx.conn();
        let backend = c.backend();
        // Multi-row updates: one statement per session was a round trip each (2,748 of them,
        // a quarter of a second, at the end of a backfill of the bench tree).
        let rows: Vec<(&str, String, Option<i64>, &str)> = sessions
            .iter()
            .map(|s| {
                let (ended, duration) =
                    end_of(s.started_at.as_deref(), s.last_activity_at.as_deref());
                let reason = if s.live_files == 0 { "deleted" } else { "idle" };
                (s.session_id.as_str(), ended, duration, reason)
            })
            .collect();
        let mut changed: HashSet<String> = HashSet::with_capacity(sessions.len());
        for chunk in row_chunks(backend, &rows) {
            let mut q = Sql::new(FINISH_MANY);
            q.push_rows(backend, chunk, |row, (id, ended, duration, reason)| {
                row.bind(*id)
                    .bind(ended.as_str())
                    .bind(*duration)
                    .bind(*reason)
                    .bind(now.as_str());
            });
            q.push(FINISH_MANY_SET);
            let ids: Vec<(String,)> = c.fetch_all(&q).await?;
            changed.extend(ids.into_iter().map(|(id,)| id));
        }
        let n = changed.len() as u64;
        let finished: HashSet<&str> = changed.iter().map(String::as_str).collect();
        let closed: Vec<ClosedEpisode> = closed
            .iter()
            .filter(|e| finished.contains(&e.row.session_id.as_str()))
            .cloned()
            .collect();
        write_closed(&mut c, &closed, &now).await?;
        tx.commit().await?;
        Ok(n)
    }
}

/// Write closed episodes whose file still stands at the offset their state was read at.
async fn write_closed(
    c: &mut Conn<'_>,
    closed: &[ClosedEpisode],
    now: &str,
) -> Result<(), StoreError> {
    if closed.is_empty() {
        return Ok(());
    }
    let mut offsets: HashMap<i64, i64> = HashMap::with_capacity(closed.len());
    for chunk in closed.chunks(STATE_CHUNK) {
        let mut q = Sql::new("SELECT id, byte_offset FROM files WHERE ");
        q.push_in("id", chunk.iter().map(|e| e.file_id));
        let rows: Vec<(i64, i64)> = c.fetch_all(&q.not_persistent()).await?;
        offsets.extend(rows);
    }
    let writes: Vec<EpisodeWrite<'_>> = closed
        .iter()
        .filter(|e| offsets.get(&e.file_id) == Some(&e.byte_offset))
        .map(|e| EpisodeWrite {
            file_id: e.file_id,
            path: &e.path,
            project: &e.project,
            ep: &e.row,
        })
        .collect();
    episodes::write(c, &writes, now).await
}
