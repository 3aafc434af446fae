//! Writing episodes and snippets.
//!
//! An episode is written open while it is the last of an active session and again when it
//! closes; both writes are upserts on its natural key `(file_id, generation, start_line)`, so
//! the row keeps its id. A closed episode's automatic snippets replace the ones an earlier close
//! wrote (a finished session can resume and extend its last episode); identical content keeps
//! its row. Every snippet insert is `ON CONFLICT (session_id, content_hash) DO NOTHING`: the
//! same content twice in one session is stored once, whoever writes it.

use super::{with_pool, Store, StoreError};
use crate::model::SnippetRow;

/// Upsert one episode; evaluates to its id.
pub(super) const UPSERT_EPISODE: &str = "INSERT INTO episodes (session_id, file_id, generation, \
     ordinal, first_turn, turns, start_line, end_line, started_at, ended_at, status, cut_reason, \
     triage, confidence, evidence, title, files_touched, tools, agents, created_at, updated_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, \
     $19, $20, $20) \
     ON CONFLICT (file_id, generation, start_line) DO UPDATE SET \
     session_id = excluded.session_id, ordinal = excluded.ordinal, \
     first_turn = excluded.first_turn, turns = excluded.turns, end_line = excluded.end_line, \
     started_at = excluded.started_at, ended_at = excluded.ended_at, status = excluded.status, \
     cut_reason = excluded.cut_reason, triage = excluded.triage, \
     confidence = excluded.confidence, evidence = excluded.evidence, title = excluded.title, \
     files_touched = excluded.files_touched, tools = excluded.tools, agents = excluded.agents, \
     updated_at = excluded.updated_at \
     RETURNING id";

/// Insert one snippet unless the session already holds the same content; evaluates to its id.
pub(super) const INSERT_SNIPPET: &str = "INSERT INTO snippets (session_id, episode_id, origin, \
     snippet_type, title, content, content_hash, project, source_file, line_start, line_end, \
     tags, metadata, created_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
     ON CONFLICT (session_id, content_hash) DO NOTHING RETURNING id";

/// Where a snippet comes from, besides its own fields.
#[derive(Debug, Clone)]
pub struct SnippetSource<'a> {
    /// Session it belongs to.
    pub session_id: &'a str,
    /// Project folder of that session.
    pub project: &'a str,
    /// Transcript (or content file) it was cut from.
    pub source_file: &'a str,
    /// Episode it belongs to (automatic snippets).
    pub episode_id: Option<i64>,
    /// When the reasoning it holds happened (its last source line), or when it was added.
    pub created_at: &'a str,
}

/// Insert one snippet and its tags inside a transaction; evaluates to `Option<i64>` (`None`
/// when the session already holds the same content).
macro_rules! insert_snippet {
    ($tx:expr, $src:expr, $row:expr) => {{
        let src: &$crate::store::episodes::SnippetSource<'_> = $src;
        let row: &$crate::model::SnippetRow = $row;
        let tags = serde_json::to_string(&row.tags).unwrap_or_else(|_| "[]".into());
        let id: Option<i64> = sqlx::query_scalar($crate::store::episodes::INSERT_SNIPPET)
            .bind(src.session_id)
            .bind(src.episode_id)
            .bind(row.origin)
            .bind(row.snippet_type.as_str())
            .bind(row.title.as_str())
            .bind(row.content.as_str())
            .bind(row.content_hash.as_str())
            .bind(src.project)
            .bind(src.source_file)
            .bind(row.line_start as i64)
            .bind(row.line_end as i64)
            .bind(tags)
            .bind(row.metadata.as_str())
            .bind(src.created_at)
            .fetch_optional(&mut *$tx)
            .await?;
        if let (Some(id), false) = (id, row.tags.is_empty()) {
            // One statement for all tags (a round trip each would dominate on PostgreSQL).
            let mut qb = sqlx::QueryBuilder::new("INSERT INTO snippet_tags (tag, snippet_id) ");
            let mut tags: Vec<&str> = row.tags.iter().map(String::as_str).collect();
            tags.sort_unstable();
            tags.dedup();
            qb.push_values(tags, |mut b, tag| {
                b.push_bind(tag).push_bind(id);
            });
            qb.push(" ON CONFLICT (tag, snippet_id) DO NOTHING");
            qb.build().execute(&mut *$tx).await?;
        }
        id
    }};
}
pub(crate) use insert_snippet;

/// Upsert one episode of file `$file_id` and, when it is closed, replace its automatic
/// snippets. `$path` is the file's path, `$project` its project folder.
macro_rules! write_episode {
    ($tx:expr, $file_id:expr, $path:expr, $project:expr, $ep:expr, $now:expr) => {{
        let ep: &$crate::model::EpisodeRow = $ep;
        let id: i64 = sqlx::query_scalar($crate::store::episodes::UPSERT_EPISODE)
            .bind(ep.session_id.as_str())
            .bind($file_id)
            .bind(ep.generation)
            .bind(ep.ordinal)
            .bind(ep.first_turn)
            .bind(ep.turns)
            .bind(ep.start_line as i64)
            .bind(ep.end_line as i64)
            .bind(ep.started_at.as_deref())
            .bind(ep.ended_at.as_deref())
            .bind(if ep.closed { "closed" } else { "open" })
            .bind(ep.cut_reason.as_str())
            .bind(ep.triage.as_str())
            .bind(ep.confidence)
            .bind(ep.evidence.as_str())
            .bind(ep.title.as_deref())
            .bind(ep.files_touched.as_str())
            .bind(ep.tools.as_str())
            .bind(ep.agents.as_str())
            .bind($now)
            .fetch_one(&mut *$tx)
            .await?;
        if ep.closed {
            // Stale automatic snippets of an earlier close of this episode.
            let keep: Vec<&str> = ep
                .snippets
                .iter()
                .map(|s| s.content_hash.as_str())
                .collect();
            let mut qb = sqlx::QueryBuilder::new(
                "DELETE FROM snippets WHERE origin = 'auto' AND episode_id = ",
            );
            qb.push_bind(id);
            if !keep.is_empty() {
                qb.push(" AND content_hash NOT IN (");
                let mut sep = qb.separated(", ");
                for h in &keep {
                    sep.push_bind(*h);
                }
                qb.push(")");
            }
            qb.build().execute(&mut *$tx).await?;
            let fallback = $now.to_string();
            for s in &ep.snippets {
                let src = $crate::store::episodes::SnippetSource {
                    session_id: ep.session_id.as_str(),
                    project: $project,
                    source_file: $path,
                    episode_id: Some(id),
                    created_at: ep.ended_at.as_deref().unwrap_or(fallback.as_str()),
                };
                $crate::store::episodes::insert_snippet!($tx, &src, s);
            }
        }
        id
    }};
}
pub(crate) use write_episode;

/// Close the open episode of every main file of the sessions `$sessions` (a slice of session
/// ids that just finished): written closed, with its snippets. The stored builder state is left
/// as it is, so a session that resumes continues that episode and writes it again. States are
/// read in chunks: a backfill finishes thousands of sessions at once.
macro_rules! close_session_episodes {
    ($tx:expr, $sessions:expr, $now:expr) => {{
        type Row = (i64, String, String, String, String);
        let sessions: &[&str] = $sessions;
        for chunk in sessions.chunks(500) {
            let mut qb = sqlx::QueryBuilder::new(
                "SELECT id, path, project, episode_state, session_id FROM files \
                 WHERE kind = 'main' AND episode_state IS NOT NULL AND session_id IN (",
            );
            let mut sep = qb.separated(", ");
            for s in chunk {
                sep.push_bind(*s);
            }
            qb.push(") ORDER BY id");
            let files: Vec<Row> = qb.build_query_as().fetch_all(&mut *$tx).await?;
            for (file_id, path, project, state, session_id) in files {
                let Some(builder) = $crate::episode::Builder::from_json(&state) else {
                    tracing::warn!(file_id, "unreadable episode state; last episode left open");
                    continue;
                };
                if let Some(ep) = builder.finish(&session_id) {
                    $crate::store::episodes::write_episode!(
                        $tx,
                        file_id,
                        path.as_str(),
                        project.as_str(),
                        &ep,
                        $now
                    );
                }
            }
        }
    }};
}
pub(crate) use close_session_episodes;

impl Store {
    /// Store one snippet (`gleaner snippet add`). Returns its id, or `None` when the session
    /// already holds the same content.
    pub async fn insert_snippet(
        &self,
        src: &SnippetSource<'_>,
        row: &SnippetRow,
    ) -> Result<Option<i64>, StoreError> {
        with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let id = insert_snippet!(tx, src, row);
            tx.commit().await?;
            Ok(id)
        })
    }

    /// The episode builder state of a file (JSON), if any was stored.
    pub async fn episode_state(&self, file_id: i64) -> Result<Option<String>, StoreError> {
        let state: Option<Option<String>> = with_pool!(self, pool => sqlx::query_scalar(
            "SELECT episode_state FROM files WHERE id = $1",
        )
        .bind(file_id)
        .fetch_optional(pool)
        .await?);
        Ok(state.flatten())
    }
}
