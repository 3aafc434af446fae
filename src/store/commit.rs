//! The write path of ingestion: a group of batches and their files' checkpoints, in ONE
//! transaction.
//!
//! Order inside the transaction: each batch's checkpoint guard (which is also its checkpoint
//! write), then the other copies of their transcripts (`copies`: what another machine's copy
//! already holds is not stored again), then the rows of the accepted batches table by table in
//! multi-row statements (messages, diagnostics, kind tallies, knowledge, episodes), then the
//! session facts.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use super::direct::{run_now, Direct};
use super::late_docs::LateDocs;
use super::messages::{self, CommitStats};
use super::sql::{row_chunks, Conn, Pooled, Sql};
use super::{archive, copies, episodes, knowledge, usage, Store, StoreError};
use crate::extract::rows::{
    now_iso, DiagnosticRow, KindCount, PreparedBatch, SessionUpdate, RULES_VERSION,
};

/// Merge a batch's session facts: the cwd, project and title of the earliest line win, the
/// branch and version of the latest, timestamps widen, the message counter adds what was
/// actually inserted (`UPSERT_SESSION`: this head, `VALUES`, then
/// [`UPSERT_SESSIONS_CONFLICT`]). Why by the lines' times and not by which batch comes first:
/// a session's files (its main transcript, its sub-agents', a resumed copy) are read
/// concurrently, and a sub-agent that moved to another directory must not name the session's
/// working directory on the runs where it happens to be committed first.
const UPSERT_SESSIONS: &str = "INSERT INTO sessions (session_id, machine, project, cwd, \
     git_branch, version, title, started_at, last_activity_at, message_count, created_at, \
     updated_at, slug, user_name) ";

const UPSERT_SESSIONS_CONFLICT: &str = " ON CONFLICT (session_id) DO UPDATE SET \
     status = 'active', ended_at = NULL, duration_ms = NULL, end_reason = NULL, \
     slug = COALESCE(excluded.slug, sessions.slug), \
     user_name = COALESCE(sessions.user_name, excluded.user_name), \
     cwd = CASE WHEN excluded.started_at < sessions.started_at \
        THEN COALESCE(excluded.cwd, sessions.cwd) ELSE COALESCE(sessions.cwd, excluded.cwd) END, \
     project = CASE WHEN excluded.started_at < sessions.started_at \
        THEN excluded.project ELSE sessions.project END, \
     git_branch = CASE WHEN excluded.last_activity_at < sessions.last_activity_at \
        THEN COALESCE(sessions.git_branch, excluded.git_branch) \
        ELSE COALESCE(excluded.git_branch, sessions.git_branch) END, \
     version = CASE WHEN excluded.last_activity_at < sessions.last_activity_at \
        THEN COALESCE(sessions.version, excluded.version) \
        ELSE COALESCE(excluded.version, sessions.version) END, \
     title = CASE WHEN excluded.started_at < sessions.started_at \
        THEN COALESCE(excluded.title, sessions.title) ELSE COALESCE(sessions.title, excluded.title) END, \
     started_at = CASE WHEN sessions.started_at IS NULL \
        OR excluded.started_at < sessions.started_at \
        THEN COALESCE(excluded.started_at, sessions.started_at) \
        ELSE sessions.started_at END, \
     last_activity_at = CASE WHEN sessions.last_activity_at IS NULL \
        OR excluded.last_activity_at > sessions.last_activity_at \
        THEN COALESCE(excluded.last_activity_at, sessions.last_activity_at) \
        ELSE sessions.last_activity_at END, \
     message_count = sessions.message_count + excluded.message_count, \
     updated_at = excluded.updated_at";

/// The checkpoint writes of a group, guarded, in one statement per chunk: a file whose stored
/// `(generation, offset)` is not the one its batch was read from is not updated, and its id is
/// missing from what the statement returns. (One statement per file was a round trip each, in
/// series on the writer.)
const GUARDED_CHECKPOINTS: &str = "WITH v (id, expected_generation, expected_offset, generation, \
     byte_offset, lines, size, dev, inode, head_len, head_hash, tail_len, tail_hash, \
     session_id, mtime_ms, agent_type, agent_description, episode_state, episode_closed_offset, \
     updated_at) AS (";

const GUARDED_CHECKPOINTS_SET: &str = ") UPDATE files SET generation = v.generation, \
     byte_offset = v.byte_offset, lines = v.lines, size = v.size, dev = v.dev, inode = v.inode, \
     head_len = v.head_len, head_hash = v.head_hash, tail_len = v.tail_len, \
     tail_hash = v.tail_hash, state = 'active', updated_at = v.updated_at, \
     session_id = COALESCE(files.session_id, v.session_id), \
     mtime_ms = CASE WHEN v.mtime_ms > files.mtime_ms THEN v.mtime_ms ELSE files.mtime_ms END, \
     agent_type = COALESCE(v.agent_type, files.agent_type), \
     agent_description = COALESCE(v.agent_description, files.agent_description), \
     episode_state = COALESCE(v.episode_state, files.episode_state), \
     episode_closed_offset = v.episode_closed_offset \
     FROM v WHERE files.id = v.id AND files.generation = v.expected_generation \
     AND files.byte_offset = v.expected_offset RETURNING files.id";

impl Store {
    /// Keys of all summary leaf uuids (few: one per `summary` line).
    pub async fn summary_leaf_keys(&self) -> Result<HashSet<i64>, StoreError> {
        let q = Sql::new(
            "SELECT DISTINCT leaf_key FROM summaries \
             WHERE kind = 'summary' AND leaf_key IS NOT NULL",
        );
        let keys: Vec<(i64,)> = self.fetch_all(&q).await?;
        Ok(keys.into_iter().map(|(k,)| k).collect())
    }

    /// Write several batches (of distinct files) in ONE transaction.
    ///
    /// Each batch is applied only if its checkpoint guard holds; a batch whose guard fails gets
    /// `Err(CheckpointMoved)` in its slot and writes nothing, while the others commit. The outer
    /// `Err` means the whole transaction failed and nothing was written. Grouping amortises the
    /// per-statement and per-commit cost over many small files, which dominates a backfill.
    ///
    /// `conn` is what the writer keeps between groups ([`WriterConn`]); `leaves` is its set of
    /// known summary-leaf keys, which gains the leaves of the summaries written here.
    pub async fn commit_group(
        &self,
        conn: &mut WriterConn,
        batches: &[PreparedBatch],
        leaves: &mut HashSet<i64>,
    ) -> Result<Vec<Result<CommitStats, StoreError>>, StoreError> {
        // A connection whose transaction failed (disk full, server gone) is closed, not reused:
        // SQLite may have rolled the transaction back on its own while the driver still counts
        // it as open, and the next transaction on that connection would then nest in a
        // savepoint that never takes the write lock properly ("database is locked" for good).
        let t = std::time::Instant::now();
        let mut index = std::time::Duration::ZERO;
        let r = match self {
            Store::Sqlite(pool) => {
                let direct = match &mut conn.sqlite {
                    Some(d) => d,
                    slot => slot.insert(Direct::open(pool).await?),
                };
                let r = commit_group_direct(direct, batches, leaves, &mut index).await;
                if r.is_err() {
                    conn.release().await;
                }
                r
            }
            Store::Postgres(_) => {
                let mut pooled = self.acquire().await?;
                let r = commit_group_on(&mut pooled, batches, leaves, &mut index).await;
                if r.is_err() {
                    pooled.close().await;
                }
                r
            }
        };
        // The writer's wall time, less the search index written inside the transaction.
        crate::metrics::add_stage(crate::metrics::Stage::Index, index);
        crate::metrics::add_stage(
            crate::metrics::Stage::Write,
            t.elapsed().saturating_sub(index),
        );
        r
    }
}

/// What the writer keeps from one group to the next: on SQLite its own connection with the
/// statements prepared on it (`direct::Direct`), opened by the first group; on PostgreSQL
/// nothing (each group checks a connection out of the pool, whose statements sqlx caches).
#[derive(Debug, Default)]
pub struct WriterConn {
    sqlite: Option<Direct>,
}

impl WriterConn {
    /// Whether a connection is kept.
    pub fn is_open(&self) -> bool {
        self.sqlite.is_some()
    }

    /// Close the connection kept, if any: an idle writer gives back its page cache and
    /// statements (the next group opens one again, about a millisecond).
    pub async fn release(&mut self) {
        if let Some(d) = self.sqlite.take() {
            d.close().await;
        }
    }
}

/// PostgreSQL: the group in one transaction opened through sqlx.
async fn commit_group_on(
    pooled: &mut Pooled,
    batches: &[PreparedBatch],
    leaves: &mut HashSet<i64>,
    index_time: &mut std::time::Duration,
) -> Result<Vec<Result<CommitStats, StoreError>>, StoreError> {
    let mut tx = pooled.begin().await?;
    let results = group_body(&mut tx.conn(), batches, leaves, index_time).await?;
    tx.commit().await?;
    Ok(results)
}

/// SQLite: the group in one transaction on the writer's own handle (`store::direct`). The
/// caller drops the connection when this fails.
async fn commit_group_direct(
    direct: &mut Direct,
    batches: &[PreparedBatch],
    leaves: &mut HashSet<i64>,
    index_time: &mut std::time::Duration,
) -> Result<Vec<Result<CommitStats, StoreError>>, StoreError> {
    let t = std::time::Instant::now();
    let mut tx = direct.begin().await?;
    let begun_us = t.elapsed().as_micros() as u64;
    let results = run_now(group_body(&mut tx.conn(), batches, leaves, index_time))?;
    tx.commit()?;
    tracing::debug!(
        begun_us,
        total_us = t.elapsed().as_micros() as u64,
        "sqlite group"
    );
    Ok(results)
}

/// Everything a group writes, inside the transaction the caller opened and commits: on
/// PostgreSQL through sqlx, on SQLite through its own handle ([`Conn::Direct`]).
async fn group_body(
    c: &mut Conn<'_>,
    batches: &[PreparedBatch],
    leaves: &mut HashSet<i64>,
    index_time: &mut std::time::Duration,
) -> Result<Vec<Result<CommitStats, StoreError>>, StoreError> {
    let now = now_iso();
    let moved = advance_checkpoints(c, batches, &now).await?;
    let mut results: Vec<Result<CommitStats, StoreError>> = Vec::with_capacity(batches.len());
    let mut accepted: Vec<&PreparedBatch> = Vec::with_capacity(batches.len());
    for b in batches {
        if moved.contains(&b.file_id) {
            accepted.push(b);
            results.push(Ok(CommitStats::default()));
        } else {
            results.push(Err(StoreError::CheckpointMoved {
                file_id: b.file_id,
                generation: b.expected.0,
                offset: b.expected.1,
            }));
        }
    }
    let ids: Vec<(i64, i64)> = accepted
        .iter()
        .map(|b| (b.file_id, b.checkpoint.generation))
        .collect();
    let copies = copies::find(c, &ids).await?;
    let keep = copies.keep_messages(c, &accepted).await?;
    let models = super::model_names::ids(c, &accepted).await?;
    let inserted = messages::write(c, &accepted, &keep, &models, index_time).await?;
    archive::write(c, &accepted).await?;
    write_diagnostics(c, &accepted, &now).await?;
    write_kinds(c, &accepted).await?;
    let mut late = LateDocs::default();
    knowledge::write(c, &accepted, leaves, &mut late).await?;
    episodes::write_batches(c, &accepted, &copies, &now, &mut late).await?;
    upsert_sessions(c, &accepted, &inserted, &now).await?;
    usage::write(c, &accepted).await?;
    // Last, after every statement that opens a savepoint (`store::late_docs`).
    late.write(c).await?;
    for (b, r) in batches.iter().zip(results.iter_mut()) {
        if let Ok(st) = r {
            *st = inserted.get(&b.file_id).copied().unwrap_or_default();
        }
    }
    Ok(results)
}

/// The optimistic guards, which double as the checkpoint writes: the ids of the files whose
/// checkpoint moved (the others wrote nothing). A group holds at most one batch per file.
async fn advance_checkpoints(
    c: &mut Conn<'_>,
    batches: &[PreparedBatch],
    now: &str,
) -> Result<HashSet<i64>, StoreError> {
    let backend = c.backend();
    let mut moved = HashSet::with_capacity(batches.len());
    for chunk in row_chunks(backend, batches) {
        let mut q = Sql::new(GUARDED_CHECKPOINTS);
        q.push_rows(backend, chunk, |row, b| {
            let cp = &b.checkpoint;
            row.bind(b.file_id)
                .bind(b.expected.0)
                .bind(b.expected.1 as i64)
                .bind(cp.generation)
                .bind(cp.offset as i64)
                .bind(cp.lines as i64)
                .bind(b.size as i64)
                .bind(cp.dev as i64)
                .bind(cp.inode as i64)
                .bind(i64::from(cp.head_len))
                .bind(cp.head_hash as i64)
                .bind(i64::from(cp.tail_len))
                .bind(cp.tail_hash as i64)
                .bind(b.file_session_id.as_deref())
                .bind(b.mtime_ms)
                .bind(b.agent_meta.as_ref().and_then(|m| m.0.as_deref()))
                .bind(b.agent_meta.as_ref().and_then(|m| m.1.as_deref()))
                .bind(b.episode_state.as_deref().map(Cow::Borrowed))
                .bind(b.episode_closed.then_some(cp.offset as i64))
                .bind(now);
        });
        q.push(GUARDED_CHECKPOINTS_SET);
        let ids: Vec<(i64,)> = c.fetch_rows(&q).await?;
        moved.extend(ids.into_iter().map(|(id,)| id));
    }
    Ok(moved)
}

/// Diagnostic rows, and each file's diagnostics counter recomputed (exact even if a
/// duplicate was skipped).
async fn write_diagnostics(
    c: &mut Conn<'_>,
    accepted: &[&PreparedBatch],
    now: &str,
) -> Result<(), StoreError> {
    let backend = c.backend();
    let diags: Vec<(&PreparedBatch, &DiagnosticRow)> = accepted
        .iter()
        .flat_map(|b| b.diagnostics.iter().map(move |d| (*b, d)))
        .collect();
    for chunk in row_chunks(backend, &diags) {
        let mut q = Sql::new(format!(
            "{}diagnostics (file_id, generation, line_no, byte_start, byte_len, \
             kind, detail, created_at) ",
            backend.insert_ignore()
        ));
        q.push_rows(backend, chunk, |row, (b, d)| {
            row.bind(b.file_id)
                .bind(b.checkpoint.generation)
                .bind(d.line_no as i64)
                .bind(d.byte_start as i64)
                .bind(d.byte_len as i64)
                .bind(d.kind)
                .bind(d.detail.as_deref())
                .bind(now);
        });
        q.push(&backend.on_conflict_ignore("file_id, generation, line_no, kind"));
        c.execute(&q).await?;
    }
    for b in accepted.iter().filter(|b| !b.diagnostics.is_empty()) {
        let q = Sql::new(
            "UPDATE files SET diagnostics = \
             (SELECT COUNT(*) FROM diagnostics WHERE file_id = $1) WHERE id = $1",
        )
        .arg(b.file_id);
        c.execute(&q).await?;
    }
    Ok(())
}

/// Record-kind tallies: exact despite being additive, since the checkpoint guard makes a batch
/// apply at most once.
async fn write_kinds(c: &mut Conn<'_>, accepted: &[&PreparedBatch]) -> Result<(), StoreError> {
    let kinds: Vec<(&PreparedBatch, &KindCount)> = accepted
        .iter()
        .flat_map(|b| b.kinds.iter().map(move |k| (*b, k)))
        .collect();
    let backend = c.backend();
    for chunk in row_chunks(backend, &kinds) {
        let mut q =
            Sql::new("INSERT INTO record_kinds (file_id, generation, category, name, count) ");
        q.push_rows(backend, chunk, |row, (b, k)| {
            row.bind(b.file_id)
                .bind(b.checkpoint.generation)
                .bind(k.category)
                .bind(k.name.as_str())
                .bind(k.count);
        });
        q.push(
            " ON CONFLICT (file_id, generation, category, name) \
             DO UPDATE SET count = record_kinds.count + excluded.count",
        );
        c.execute(&q).await?;
    }
    Ok(())
}

/// The session facts of the accepted batches, merged per session in batch order by the rules
/// of [`UPSERT_SESSIONS_CONFLICT`] (a group may hold a main file and its sub-agents, and PostgreSQL
/// rejects an upsert that touches one row twice), then upserted in multi-row statements.
async fn upsert_sessions(
    c: &mut Conn<'_>,
    accepted: &[&PreparedBatch],
    inserted: &HashMap<i64, CommitStats>,
    now: &str,
) -> Result<(), StoreError> {
    let mut merged: Vec<(SessionUpdate, i64)> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for b in accepted {
        let Some(s) = &b.session else { continue };
        let added = inserted.get(&b.file_id).map_or(0, |st| st.messages) as i64;
        match at.get(s.session_id.as_str()) {
            None => {
                at.insert(s.session_id.as_str(), merged.len());
                merged.push((s.clone(), added));
            }
            Some(&i) => {
                let (m, n) = &mut merged[i];
                merge_session(m, s);
                *n += added;
            }
        }
    }
    // In key order, as every upsert of a group (`sql::dedup_sorted_by`).
    merged.sort_by(|a, b| a.0.session_id.cmp(&b.0.session_id));
    let backend = c.backend();
    for chunk in row_chunks(backend, &merged) {
        let mut q = Sql::new(UPSERT_SESSIONS);
        q.push_rows(backend, chunk, |row, (s, added)| {
            row.bind(s.session_id.as_str())
                .bind(s.machine.as_str())
                .bind(s.project.as_str())
                .bind(s.cwd.as_deref())
                .bind(s.git_branch.as_deref())
                .bind(s.version.as_deref())
                .bind(s.title.as_deref())
                .bind(s.started_at.as_deref())
                .bind(s.last_activity_at.as_deref())
                .bind(*added)
                .bind(now)
                .bind(now)
                .bind(s.slug.as_deref())
                .bind(s.user.as_str());
        });
        q.push(UPSERT_SESSIONS_CONFLICT);
        c.execute(&q).await?;
        // The rules that read them: a session keeps the oldest version any part of it was
        // read with (`session_rules`, migration 0021).
        let mut q = Sql::new("INSERT INTO session_rules (session_id, rules_version) ");
        q.push_rows(backend, chunk, |row, (s, _)| {
            row.bind(s.session_id.as_str()).bind(RULES_VERSION);
        });
        q.push(
            " ON CONFLICT (session_id) DO UPDATE SET rules_version = CASE \
             WHEN session_rules.rules_version < excluded.rules_version \
             THEN session_rules.rules_version ELSE excluded.rules_version END",
        );
        c.execute(&q).await?;
    }
    Ok(())
}

/// Fold a later batch's facts of one session into an earlier one's, as two upserts in a row
/// would: first cwd and title win, latest branch, version and slug win, times widen.
fn merge_session(into: &mut SessionUpdate, later: &SessionUpdate) {
    /// `COALESCE(sessions.x, excluded.x)`.
    fn keep(a: &mut Option<String>, b: &Option<String>) {
        if a.is_none() {
            a.clone_from(b);
        }
    }
    /// `COALESCE(excluded.x, sessions.x)`.
    fn take(a: &mut Option<String>, b: &Option<String>) {
        if b.is_some() {
            a.clone_from(b);
        }
    }
    // As SQL compares: a missing time is neither earlier nor later.
    let earlier = matches!((&later.started_at, &into.started_at), (Some(t), Some(s)) if t < s);
    let older = matches!(
        (&later.last_activity_at, &into.last_activity_at),
        (Some(t), Some(s)) if t < s
    );
    if earlier {
        take(&mut into.cwd, &later.cwd);
        take(&mut into.title, &later.title);
        into.project.clone_from(&later.project);
    } else {
        keep(&mut into.cwd, &later.cwd);
        keep(&mut into.title, &later.title);
    }
    if older {
        keep(&mut into.git_branch, &later.git_branch);
        keep(&mut into.version, &later.version);
    } else {
        take(&mut into.git_branch, &later.git_branch);
        take(&mut into.version, &later.version);
    }
    take(&mut into.slug, &later.slug);
    if let Some(t) = &later.started_at {
        if into.started_at.as_ref().is_none_or(|s| t < s) {
            into.started_at = Some(t.clone());
        }
    }
    if let Some(t) = &later.last_activity_at {
        if into.last_activity_at.as_ref().is_none_or(|s| t > s) {
            into.last_activity_at = Some(t.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_session_facts_follow_the_upsert_rules() {
        let s = |cwd: Option<&str>, branch: Option<&str>, start: &str, last: &str| SessionUpdate {
            session_id: "s".into(),
            cwd: cwd.map(str::to_string),
            title: cwd.map(|c| format!("title {c}")),
            git_branch: branch.map(str::to_string),
            started_at: Some(start.into()),
            last_activity_at: Some(last.into()),
            ..SessionUpdate::default()
        };
        let mut a = s(None, Some("main"), "2026-01-02", "2026-01-03");
        merge_session(&mut a, &s(Some("/a"), None, "2026-01-01", "2026-01-02"));
        merge_session(
            &mut a,
            &s(Some("/b"), Some("dev"), "2026-01-05", "2026-01-09"),
        );
        assert_eq!(a.cwd.as_deref(), Some("/a"));
        assert_eq!(a.title.as_deref(), Some("title /a"));
        assert_eq!(a.git_branch.as_deref(), Some("dev"));
        assert_eq!(a.started_at.as_deref(), Some("2026-01-01"));
        assert_eq!(a.last_activity_at.as_deref(), Some("2026-01-09"));
        // The order facts arrive in does not matter: the earliest line's cwd and title, the
        // latest line's branch (a sub-agent's file read before its main transcript).
        let mut b = s(Some("/b"), Some("dev"), "2026-01-05", "2026-01-09");
        merge_session(&mut b, &s(None, Some("main"), "2026-01-02", "2026-01-03"));
        merge_session(&mut b, &s(Some("/a"), None, "2026-01-01", "2026-01-02"));
        assert_eq!(
            (
                b.cwd,
                b.title,
                b.git_branch,
                b.started_at,
                b.last_activity_at
            ),
            (
                a.cwd,
                a.title,
                a.git_branch,
                a.started_at,
                a.last_activity_at
            )
        );
    }
}
