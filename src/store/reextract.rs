//! Re-extraction (issue 29): which sessions were read by older rules, and the rewind that lets
//! `run::reextract` read their archived bytes again through the pump.
//!
//! The rewind removes what a session's lines produced (messages with their search entries,
//! summaries, feedback, tool calls, token usage, episodes with their automatic snippets and
//! refinements, diagnostics, tallies) and sets its files' checkpoints back to byte 0 of the same
//! generation, in one transaction; the archive, the file rows' identity and hand-made snippets
//! (detached from their episode) stay. The pump then writes everything again, exactly once, as a
//! first read would.

use super::sql::{Backend, Sql};
use super::{Store, StoreError};
use crate::extract::rows::RULES_VERSION;

/// How many sessions are on older rules.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RulesCounts {
    /// Sessions read by rules older than this build's.
    pub older: i64,
    /// Of those, the ones the archive can re-read.
    pub archived: i64,
    /// This build's rules version.
    pub current: i64,
}

/// A session on older rules the archive holds: its id, whether finished.
const OLDER_ARCHIVED: &str = "SELECT r.session_id FROM session_rules r \
     WHERE r.rules_version < $1 AND r.session_id > $2 \
     AND EXISTS (SELECT 1 FROM files f JOIN archive_chunks a ON a.file_id = f.id \
     AND a.generation = f.generation WHERE f.session_id = r.session_id)";

impl Store {
    /// Sessions on older rules, and how many of them the archive holds.
    pub async fn rules_counts(&self) -> Result<RulesCounts, StoreError> {
        let q = Sql::new(format!(
            "SELECT (SELECT COUNT(*) FROM session_rules WHERE rules_version < $1), \
             (SELECT COUNT(*) FROM ({}) o)",
            OLDER_ARCHIVED.replace("$2", "''")
        ))
        .arg(RULES_VERSION);
        let (older, archived): (i64, i64) = self
            .fetch_optional(&q.not_persistent())
            .await?
            .unwrap_or_default();
        Ok(RulesCounts {
            older,
            archived,
            current: RULES_VERSION,
        })
    }

    /// Up to `limit` archived sessions on older rules after `after` (by id); with `finished`,
    /// only finished ones (what the daemon takes in the background).
    pub async fn sessions_on_older_rules(
        &self,
        after: &str,
        limit: i64,
        finished: bool,
    ) -> Result<Vec<String>, StoreError> {
        let extra = if finished {
            " AND EXISTS (SELECT 1 FROM sessions s WHERE s.session_id = r.session_id \
             AND s.status = 'finished')"
        } else {
            ""
        };
        let q = Sql::new(format!(
            "{OLDER_ARCHIVED}{extra} ORDER BY r.session_id LIMIT $3"
        ))
        .arg(RULES_VERSION)
        .arg(after)
        .arg(limit);
        let ids: Vec<(String,)> = self.fetch_all(&q.not_persistent()).await?;
        Ok(ids.into_iter().map(|(s,)| s).collect())
    }

    /// Every archived session after `after` (by id), at most `limit`.
    pub async fn archived_sessions(
        &self,
        after: &str,
        limit: i64,
    ) -> Result<Vec<String>, StoreError> {
        let q = Sql::new(
            "SELECT s.session_id FROM sessions s WHERE s.session_id > $1 \
             AND EXISTS (SELECT 1 FROM files f JOIN archive_chunks a ON a.file_id = f.id \
             AND a.generation = f.generation WHERE f.session_id = s.session_id) \
             ORDER BY s.session_id LIMIT $2",
        )
        .arg(after)
        .arg(limit);
        let ids: Vec<(String,)> = self.fetch_all(&q).await?;
        Ok(ids.into_iter().map(|(s,)| s).collect())
    }

    /// Record that these sessions' derived rows are this build's (one transaction), and
    /// remove the automatic snippets the rewind detached that the new reading did not give
    /// again.
    pub async fn set_rules_current(&self, session_ids: &[&str]) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        if !session_ids.is_empty() {
            let mut q =
                Sql::new("DELETE FROM snippets WHERE origin = 'auto' AND episode_id IS NULL AND ");
            q.push_in("session_id", session_ids.iter().copied());
            tx.conn().execute(&q.not_persistent()).await?;
        }
        for id in session_ids {
            let q = Sql::new(
                "INSERT INTO session_rules (session_id, rules_version) VALUES ($1, $2) \
                 ON CONFLICT (session_id) DO UPDATE SET rules_version = excluded.rules_version",
            )
            .arg(*id)
            .arg(RULES_VERSION);
            tx.conn().execute(&q).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Remove what these sessions' lines produced and set their files `file_ids` back to byte
    /// 0 of their generation (see the module docs), in one transaction: a group of sessions is
    /// rewound at once, so the pages of the indexes are written once for all of them.
    pub async fn rewind_sessions(
        &self,
        session_ids: &[&str],
        file_ids: &[i64],
    ) -> Result<(), StoreError> {
        let mut pooled = self.acquire().await?;
        let mut tx = pooled.begin().await?;
        let backend = self.backend();
        let by_file = |head: &str| {
            let mut q = Sql::new(head);
            q.push_in("file_id", file_ids.iter().copied());
            q.not_persistent()
        };
        let by_session = |head: &str, tail: &str| {
            let mut q = Sql::new(head);
            q.push_in("session_id", session_ids.iter().copied());
            q.push(tail);
            q.not_persistent()
        };
        if backend == Backend::Sqlite {
            // The sessions' documents of the kinds their lines produce (snippets go with their
            // rows' trigger), read back through the index's content before the rows go.
            let docs = |head: &str| {
                let mut q = Sql::new(format!(
                    "{head} (SELECT d.id FROM search_docs d WHERE d.kind IN ('message', \
                     'summary', 'feedback') AND ("
                ));
                q.push_in("d.session_id", session_ids.iter().copied());
                q.push(" OR ");
                q.push_in("d.file_id", file_ids.iter().copied());
                q.push("))");
                q.not_persistent()
            };
            tx.conn()
                .execute(&docs(
                    "INSERT INTO search_fts (search_fts, rowid, body) SELECT 'delete', c.id, \
                     c.body FROM search_content c WHERE c.id IN",
                ))
                .await?;
            tx.conn()
                .execute(&docs("DELETE FROM search_docs WHERE id IN"))
                .await?;
        }
        for table in ["messages", "diagnostics", "record_kinds"] {
            tx.conn()
                .execute(&by_file(&format!("DELETE FROM {table} WHERE ")))
                .await?;
        }
        for (head, tail) in [
            (
                "DELETE FROM refinements WHERE episode_id IN (SELECT id FROM episodes WHERE ",
                ")",
            ),
            // Automatic snippets stay, detached, until the session is read again: the ones
            // its source still gives are rewritten in place, keeping their ids
            // (`store::episodes::reuse_snippet`); the rest go in `set_rules_current`.
            ("UPDATE snippets SET episode_id = NULL WHERE ", ""),
            ("DELETE FROM episodes WHERE ", ""),
            ("DELETE FROM summaries WHERE ", ""),
            ("DELETE FROM summary_leaves WHERE ", ""),
            ("DELETE FROM feedback WHERE ", ""),
            ("DELETE FROM tool_uses WHERE ", ""),
            ("UPDATE sessions SET message_count = 0 WHERE ", ""),
        ] {
            tx.conn().execute(&by_session(head, tail)).await?;
        }
        let mut q = Sql::new(
            "UPDATE files SET byte_offset = 0, lines = 0, head_len = 0, head_hash = 0, \
             tail_len = 0, tail_hash = 0, diagnostics = 0, episode_state = NULL, \
             episode_closed_offset = NULL WHERE ",
        );
        q.push_in("id", file_ids.iter().copied());
        tx.conn().execute(&q.not_persistent()).await?;
        tx.commit().await?;
        Ok(())
    }
}
