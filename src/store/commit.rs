//! The write path of ingestion: a group of batches and their files' checkpoints, in ONE
//! transaction.
//!
//! Order inside the transaction: each batch's checkpoint guard (which is also its checkpoint
//! write), then the rows of the accepted batches table by table in multi-row statements
//! (messages, diagnostics, kind tallies, knowledge, episodes), then the session facts.

use std::collections::{HashMap, HashSet};

use super::sql::{ladder_chunks, Conn, Sql};
use super::{episodes, knowledge, Store, StoreError};
use crate::extract::rows::{
    now_iso, uuid_key, DiagnosticRow, KindCount, MessageRow, PreparedBatch,
};

/// What a commit wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommitStats {
    /// Message rows actually inserted (duplicates are skipped).
    pub messages: u64,
    /// Diagnostic rows actually inserted.
    pub diagnostics: u64,
}

/// Merge a batch's session facts: first cwd and title win, latest branch and version win,
/// timestamps widen, the message counter adds what was actually inserted.
const UPSERT_SESSION: &str =
    "INSERT INTO sessions (session_id, machine, project, cwd, git_branch, \
     version, title, started_at, last_activity_at, message_count, created_at, updated_at, slug) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11, $12) \
     ON CONFLICT (session_id) DO UPDATE SET \
     status = 'active', ended_at = NULL, duration_ms = NULL, end_reason = NULL, \
     slug = COALESCE(excluded.slug, sessions.slug), \
     cwd = COALESCE(sessions.cwd, excluded.cwd), \
     git_branch = COALESCE(excluded.git_branch, sessions.git_branch), \
     version = COALESCE(excluded.version, sessions.version), \
     title = COALESCE(sessions.title, excluded.title), \
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

/// The checkpoint write, guarded: zero rows updated means the stored checkpoint is not the one
/// the batch was read from.
const GUARDED_CHECKPOINT: &str =
    "UPDATE files SET generation = $1, byte_offset = $2, lines = $3, size = $4, \
     dev = $5, inode = $6, head_len = $7, head_hash = $8, tail_len = $9, \
     tail_hash = $10, state = 'active', updated_at = $11, \
     session_id = COALESCE(session_id, $12), \
     mtime_ms = CASE WHEN $16 > mtime_ms THEN $16 ELSE mtime_ms END, \
     agent_type = COALESCE($17, agent_type), \
     agent_description = COALESCE($18, agent_description), \
     episode_state = COALESCE($19, episode_state) \
     WHERE id = $13 AND generation = $14 AND byte_offset = $15";

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
    /// `leaves` is the writer's set of known summary-leaf keys; it gains the leaves of the
    /// summaries written here.
    pub async fn commit_group(
        &self,
        batches: &[PreparedBatch],
        leaves: &mut HashSet<i64>,
    ) -> Result<Vec<Result<CommitStats, StoreError>>, StoreError> {
        let now = now_iso();
        let mut tx = self.begin().await?;
        let mut c = tx.conn();
        let mut results: Vec<Result<CommitStats, StoreError>> = Vec::with_capacity(batches.len());
        let mut accepted: Vec<&PreparedBatch> = Vec::with_capacity(batches.len());
        for b in batches {
            if advance_checkpoint(&mut c, b, &now).await? {
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
        let inserted = write_messages(&mut c, &accepted).await?;
        write_diagnostics(&mut c, &accepted, &now).await?;
        write_kinds(&mut c, &accepted).await?;
        knowledge::write(&mut c, &accepted, leaves).await?;
        episodes::write_batches(&mut c, &accepted, &now).await?;
        upsert_sessions(&mut c, &accepted, &inserted, &now).await?;
        tx.commit().await?;
        for (b, r) in batches.iter().zip(results.iter_mut()) {
            if let Ok(st) = r {
                *st = inserted.get(&b.file_id).copied().unwrap_or_default();
            }
        }
        Ok(results)
    }
}

/// The optimistic guard, which doubles as the checkpoint write. False: the guard failed and
/// nothing was written for this batch.
async fn advance_checkpoint(
    c: &mut Conn<'_>,
    b: &PreparedBatch,
    now: &str,
) -> Result<bool, StoreError> {
    let cp = &b.checkpoint;
    let q = Sql::new(GUARDED_CHECKPOINT)
        .arg(cp.generation)
        .arg(cp.offset as i64)
        .arg(cp.lines as i64)
        .arg(b.size as i64)
        .arg(cp.dev as i64)
        .arg(cp.inode as i64)
        .arg(i64::from(cp.head_len))
        .arg(cp.head_hash as i64)
        .arg(i64::from(cp.tail_len))
        .arg(cp.tail_hash as i64)
        .arg(now)
        .arg(b.file_session_id.as_deref())
        .arg(b.file_id)
        .arg(b.expected.0)
        .arg(b.expected.1 as i64)
        .arg(b.mtime_ms)
        .arg(b.agent_meta.as_ref().and_then(|m| m.0.as_deref()))
        .arg(b.agent_meta.as_ref().and_then(|m| m.1.as_deref()))
        .arg(b.episode_state.as_deref());
    Ok(c.execute(&q).await? == 1)
}

/// Message rows of the accepted batches; what each file actually gained.
///
/// The guard means these lines were never committed in this generation, so every row is new
/// and per-file counts are the batch sizes. The unique keys are the belt and braces: if a
/// conflict ever skipped rows, the totals disagree and the counts are recomputed from the table.
async fn write_messages(
    c: &mut Conn<'_>,
    accepted: &[&PreparedBatch],
) -> Result<HashMap<i64, CommitStats>, StoreError> {
    let backend = c.backend();
    let mut inserted: HashMap<i64, CommitStats> = accepted
        .iter()
        .map(|b| {
            let st = CommitStats {
                messages: b.messages.len() as u64,
                diagnostics: b.diagnostics.len() as u64,
            };
            (b.file_id, st)
        })
        .collect();
    let messages: Vec<(&PreparedBatch, &MessageRow)> = accepted
        .iter()
        .flat_map(|b| b.messages.iter().map(move |m| (*b, m)))
        .collect();
    let mut message_rows = 0;
    for chunk in ladder_chunks(&messages) {
        let mut q = Sql::new(format!(
            "{}messages (file_id, generation, line_no, seq, byte_start, byte_end, \
             session_id, uuid, parent_uuid, kind, subtype, ts, is_sidechain, agent_id, \
             model, tool_names, is_error, text, uuid_key, is_meta) ",
            backend.insert_ignore()
        ));
        q.push_values(chunk, |row, (b, m)| {
            row.bind(b.file_id)
                .bind(b.checkpoint.generation)
                .bind(m.line_no as i64)
                .bind(i64::from(m.seq))
                .bind(m.byte_start as i64)
                .bind(m.byte_end as i64)
                .bind(m.session_id.as_str())
                .bind(m.uuid.as_deref())
                .bind(m.parent_uuid.as_deref())
                .bind(m.kind.as_str())
                .bind(m.subtype.as_deref())
                .bind(m.ts.as_deref())
                .bind(m.is_sidechain)
                .bind(m.agent_id.as_deref())
                .bind(m.model.as_deref())
                .bind(m.tool_names.as_deref())
                .bind(m.is_error)
                .bind(m.text.as_deref())
                .bind(m.uuid.as_deref().map(uuid_key))
                .bind(m.is_meta);
        });
        q.push(&backend.on_conflict_ignore("file_id, generation, line_no, seq"));
        message_rows += c.execute(&q).await?;
    }
    if message_rows != messages.len() as u64 {
        tracing::error!(
            expected = messages.len(),
            inserted = message_rows,
            "duplicate message rows skipped despite the checkpoint guard; recounting"
        );
        for b in accepted {
            let q = Sql::new(
                "SELECT COUNT(*) FROM messages WHERE file_id = $1 AND generation = $2 \
                 AND byte_start >= $3",
            )
            .arg(b.file_id)
            .arg(b.checkpoint.generation)
            .arg(b.expected.1 as i64);
            let n = c.fetch_i64(&q).await?;
            if let Some(st) = inserted.get_mut(&b.file_id) {
                st.messages = n as u64;
            }
        }
    }
    Ok(inserted)
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
    for chunk in ladder_chunks(&diags) {
        let mut q = Sql::new(format!(
            "{}diagnostics (file_id, generation, line_no, byte_start, byte_len, \
             kind, detail, created_at) ",
            backend.insert_ignore()
        ));
        q.push_values(chunk, |row, (b, d)| {
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
    for chunk in ladder_chunks(&kinds) {
        let mut q =
            Sql::new("INSERT INTO record_kinds (file_id, generation, category, name, count) ");
        q.push_values(chunk, |row, (b, k)| {
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

/// Each accepted batch's session facts, with the messages its file actually gained.
async fn upsert_sessions(
    c: &mut Conn<'_>,
    accepted: &[&PreparedBatch],
    inserted: &HashMap<i64, CommitStats>,
    now: &str,
) -> Result<(), StoreError> {
    for b in accepted {
        let Some(s) = &b.session else { continue };
        let added = inserted.get(&b.file_id).map_or(0, |st| st.messages);
        let q = Sql::new(UPSERT_SESSION)
            .arg(s.session_id.as_str())
            .arg(s.machine.as_str())
            .arg(s.project.as_str())
            .arg(s.cwd.as_deref())
            .arg(s.git_branch.as_deref())
            .arg(s.version.as_deref())
            .arg(s.title.as_deref())
            .arg(s.started_at.as_deref())
            .arg(s.last_activity_at.as_deref())
            .arg(added as i64)
            .arg(now)
            .arg(s.slug.as_deref());
        c.execute(&q).await?;
    }
    Ok(())
}
