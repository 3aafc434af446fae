//! `gleaner prune`: removing old sessions on purpose (issue 29).
//!
//! What goes: for every finished session last active before a date, its archive (chunks and
//! sidecars) and its message rows with their search entries; without `keep_knowledge` also what
//! was kept about it (summaries, feedback, tool calls, token usage, episodes, snippets and their
//! refinements, diagnostics, tallies) and the session row. Either way the files' episode states
//! go (they hold the last words of the conversation, and a line appended to a pruned transcript
//! would otherwise bring its pruned episode back), and the packed blocks that held the sessions'
//! bytes beside others' are retired (`store::blocks`; `gleaner prune` rewrites them without the
//! pruned bytes before it returns), as are any dictionaries of their projects (`store::retire`). What stays: each file's row and checkpoint, so a
//! transcript still on disk is not read again (its rows would come back).
//!
//! Sessions go a hundred at a time, each hundred in one transaction: an interrupted prune has
//! removed whole sessions, never half of one. On SQLite the full-text entries are deleted
//! through the index's external content before the rows they read (`search_content`).

use super::sql::{Backend, Conn, Sql};
use super::{Store, StoreError};

/// What a prune removes (or removed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, sqlx::FromRow)]
pub struct PruneCounts {
    /// Sessions.
    pub sessions: i64,
    /// Their transcript files (rows kept).
    pub files: i64,
    /// Message rows.
    pub messages: i64,
    /// Archive chunks.
    pub chunks: i64,
    /// Transcript bytes those chunks held.
    pub archived_bytes: i64,
    /// Their stored size.
    pub stored_bytes: i64,
    /// Summaries, feedback, episodes and snippets (0 with `keep_knowledge`).
    pub knowledge: i64,
    /// Of the sessions, those an earlier prune took with `keep_knowledge`: without it now,
    /// the knowledge kept on purpose goes too.
    pub kept_before: i64,
}

/// Sessions per transaction.
const SESSIONS_PER_STEP: i64 = 100;

/// The sessions a prune takes: finished, last active before `before`.
fn selected(before_bind: &str) -> String {
    format!(
        "SELECT session_id FROM sessions WHERE status = 'finished' \
         AND last_activity_at IS NOT NULL AND last_activity_at < {before_bind}"
    )
}

impl Store {
    /// When `session_id` was pruned (as stored), if it was.
    pub async fn pruned_at(&self, session_id: &str) -> Result<Option<String>, StoreError> {
        let q =
            Sql::new("SELECT pruned_at FROM pruned_sessions WHERE session_id = $1").arg(session_id);
        Ok(self.fetch_optional::<(String,)>(&q).await?.map(|(t,)| t))
    }

    /// What pruning the sessions finished before `before` (as stored) would remove.
    pub async fn prune_plan(
        &self,
        before: &str,
        keep_knowledge: bool,
    ) -> Result<PruneCounts, StoreError> {
        let sel = selected("$1");
        // Sessions kept-knowledge before matter only to a prune that now takes knowledge.
        let kept = match (keep_knowledge, self.backend()) {
            (true, _) => "NULL",
            (false, Backend::Sqlite) => "1",
            (false, Backend::Postgres) => "TRUE",
        };
        let knowledge = if keep_knowledge {
            "0".to_string()
        } else {
            format!(
                "(SELECT COUNT(*) FROM summaries WHERE session_id IN ({sel})) \
                 + (SELECT COUNT(*) FROM feedback WHERE session_id IN ({sel})) \
                 + (SELECT COUNT(*) FROM episodes WHERE session_id IN ({sel})) \
                 + (SELECT COUNT(*) FROM snippets WHERE session_id IN ({sel}))"
            )
        };
        let q = Sql::new(format!(
            "SELECT (SELECT COUNT(*) FROM ({sel}) s) AS sessions, \
             (SELECT COUNT(*) FROM files WHERE session_id IN ({sel})) AS files, \
             (SELECT COUNT(*) FROM messages m JOIN files f ON f.id = m.file_id \
              WHERE f.session_id IN ({sel})) AS messages, \
             (SELECT COUNT(*) FROM archive_chunks a JOIN files f ON f.id = a.file_id \
              WHERE f.session_id IN ({sel})) AS chunks, \
             CAST(COALESCE((SELECT SUM(a.end_off - a.start_off) FROM archive_chunks a \
              JOIN files f ON f.id = a.file_id WHERE f.session_id IN ({sel})), 0) AS BIGINT) \
              AS archived_bytes, \
             CAST(COALESCE((SELECT SUM(CASE WHEN a.block_id IS NULL THEN LENGTH(a.data) \
              ELSE (SELECT LENGTH(b.data) * (a.end_off - a.start_off) / b.raw_len \
              FROM archive_blocks b WHERE b.id = a.block_id) END) FROM archive_chunks a \
              JOIN files f ON f.id = a.file_id WHERE f.session_id IN ({sel})), 0) AS BIGINT) \
              AS stored_bytes, \
             CAST({knowledge} AS BIGINT) AS knowledge, \
             (SELECT COUNT(*) FROM pruned_sessions p WHERE p.kept_knowledge = {kept} \
              AND p.session_id IN ({sel})) AS kept_before"
        ))
        .arg(before);
        Ok(self
            .fetch_optional(&q.not_persistent())
            .await?
            .unwrap_or_default())
    }

    /// Prune the sessions finished before `before` (as stored); what was removed.
    pub async fn prune(
        &self,
        before: &str,
        keep_knowledge: bool,
    ) -> Result<PruneCounts, StoreError> {
        let total = self.prune_plan(before, keep_knowledge).await?;
        let mut done = 0;
        // The sessions already pruned with `keep_knowledge` still match: walk them by id.
        let mut after = String::new();
        loop {
            let q = Sql::new(format!(
                "SELECT session_id FROM ({}) s WHERE session_id > $2 ORDER BY session_id LIMIT $3",
                selected("$1")
            ))
            .arg(before)
            .arg(after.as_str())
            .arg(SESSIONS_PER_STEP);
            let ids: Vec<(String,)> = self.fetch_all(&q.not_persistent()).await?;
            let Some((last,)) = ids.last() else { break };
            after = last.clone();
            let ids: Vec<String> = ids.into_iter().map(|(s,)| s).collect();
            let mut pooled = self.acquire().await?;
            let mut tx = pooled.begin().await?;
            prune_sessions(&mut tx.conn(), &ids, keep_knowledge).await?;
            tx.commit().await?;
            done += ids.len() as i64;
            tracing::debug!(sessions = done, of = total.sessions, "pruned");
        }
        Ok(total)
    }
}

/// Remove what a prune removes of sessions `ids`, inside the caller's transaction.
async fn prune_sessions(
    c: &mut Conn<'_>,
    ids: &[String],
    keep_knowledge: bool,
) -> Result<(), StoreError> {
    let backend = c.backend();
    let in_ids = |head: &str, tail: &str| {
        let mut q = Sql::new(head);
        q.push_in("session_id", ids.iter().map(String::as_str));
        q.push(tail);
        q.not_persistent()
    };
    let files = "file_id IN (SELECT id FROM files WHERE ";
    if backend == Backend::Sqlite {
        // Full-text entries first, read back through the index's content view.
        let which = if keep_knowledge {
            "d.kind = 'message' AND d.file_id IN (SELECT id FROM files WHERE "
        } else {
            "(d.kind <> 'snippet' AND d.file_id IN (SELECT id FROM files WHERE "
        };
        let tail = if keep_knowledge { ")" } else { "))" };
        c.execute(&in_ids(
            &format!(
                "INSERT INTO search_fts (search_fts, rowid, body) SELECT 'delete', c.id, c.body \
                 FROM search_content c WHERE c.id IN (SELECT d.id FROM search_docs d WHERE {which}"
            ),
            &format!("{tail})"),
        ))
        .await?;
        c.execute(&in_ids(
            &format!(
                "DELETE FROM search_docs WHERE id IN (SELECT d.id FROM search_docs d WHERE {which}"
            ),
            &format!("{tail})"),
        ))
        .await?;
    }
    c.execute(&in_ids(
        "INSERT INTO archive_dicts_retired (dict_id) SELECT id FROM archive_dicts \
         WHERE project IN (SELECT f.project FROM files f WHERE EXISTS (SELECT 1 FROM \
         archive_chunks a WHERE a.file_id = f.id) AND f.",
        ") ON CONFLICT (dict_id) DO NOTHING",
    ))
    .await?;
    super::blocks::retire_pruned(
        c,
        in_ids(
            &format!("DELETE FROM archive_chunks WHERE block_id IS NOT NULL AND {files}"),
            ") RETURNING block_id",
        ),
    )
    .await?;
    for table in ["archive_chunks", "archive_sidecars", "messages"] {
        c.execute(&in_ids(&format!("DELETE FROM {table} WHERE {files}"), ")"))
            .await?;
    }
    c.execute(&in_ids(
        "UPDATE files SET episode_state = NULL, episode_closed_offset = NULL WHERE ",
        "",
    ))
    .await?;
    // Remembered, and how (a later prune of the same sessions updates it).
    let now = crate::extract::rows::now_iso();
    for chunk in ids.chunks(200) {
        let mut q =
            Sql::new("INSERT INTO pruned_sessions (session_id, pruned_at, kept_knowledge) ");
        q.push_rows(backend, chunk, |row, id| {
            row.bind(id.as_str())
                .bind(now.as_str())
                .bind(keep_knowledge);
        });
        q.push(
            " ON CONFLICT (session_id) DO UPDATE SET pruned_at = excluded.pruned_at, \
             kept_knowledge = excluded.kept_knowledge",
        );
        c.execute(&q.not_persistent()).await?;
    }
    if keep_knowledge {
        c.execute(&in_ids("UPDATE sessions SET message_count = 0 WHERE ", ""))
            .await?;
        return Ok(());
    }
    // Snippets (their triggers take their search entries), refinements and episodes, then
    // the rest of what was kept about the sessions.
    c.execute(&in_ids(
        "DELETE FROM refinements WHERE episode_id IN (SELECT id FROM episodes WHERE ",
        ")",
    ))
    .await?;
    for table in [
        "snippets",
        "episodes",
        "summaries",
        "summary_leaves",
        "feedback",
        "tool_uses",
    ] {
        c.execute(&in_ids(&format!("DELETE FROM {table} WHERE "), ""))
            .await?;
    }
    for table in ["diagnostics", "record_kinds"] {
        c.execute(&in_ids(&format!("DELETE FROM {table} WHERE {files}"), ")"))
            .await?;
    }
    c.execute(&in_ids("DELETE FROM sessions WHERE ", ""))
        .await?;
    Ok(())
}
