//! Writing episodes and snippets.
//!
//! An episode is written open while it is the last of an active session and again when it
//! closes; both writes are upserts on its natural key `(file_id, generation, start_line)`, so
//! the row keeps its id. A closed episode's automatic snippets replace the ones an earlier close
//! wrote (a finished session can resume and extend its last episode); identical content keeps
//! its row. Every snippet insert is `ON CONFLICT (session_id, content_hash) DO NOTHING`: the
//! same content twice in one session is stored once, whoever writes it.

use super::{with_pool, Store, StoreError};
use crate::extract::rows::SnippetRow;

/// Columns of an episode row, in bind order (20 binds: `created_at` and `updated_at` share one).
pub(super) const EPISODE_INSERT: &str =
    "INSERT INTO episodes (session_id, file_id, generation, ordinal, \
     first_turn, turns, start_line, end_line, started_at, ended_at, status, cut_reason, triage, \
     confidence, evidence, title, files_touched, tools, agents, created_at, updated_at) ";

/// Upsert on the natural key, keeping the row's id and `created_at`.
pub(super) const EPISODE_UPSERT: &str = " ON CONFLICT (file_id, generation, start_line) DO UPDATE \
     SET session_id = excluded.session_id, ordinal = excluded.ordinal, \
     first_turn = excluded.first_turn, turns = excluded.turns, end_line = excluded.end_line, \
     started_at = excluded.started_at, ended_at = excluded.ended_at, status = excluded.status, \
     cut_reason = excluded.cut_reason, triage = excluded.triage, \
     confidence = excluded.confidence, evidence = excluded.evidence, title = excluded.title, \
     files_touched = excluded.files_touched, tools = excluded.tools, agents = excluded.agents, \
     updated_at = excluded.updated_at \
     RETURNING id, file_id, generation, start_line";

/// Columns of a snippet row, in bind order.
pub(super) const SNIPPET_INSERT: &str = "INSERT INTO snippets (session_id, episode_id, origin, \
     snippet_type, title, content, content_hash, project, source_file, line_start, line_end, \
     tags, metadata, created_at) ";

/// The same content twice in one session is stored once.
pub(super) const SNIPPET_IGNORE: &str =
    " ON CONFLICT (session_id, content_hash) DO NOTHING RETURNING id, session_id, content_hash";

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

/// One episode to write, and the file it was cut from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EpisodeWrite<'a> {
    /// File row id.
    pub file_id: i64,
    /// The file's path (its snippets' source).
    pub path: &'a str,
    /// The file's project folder.
    pub project: &'a str,
    /// The episode.
    pub ep: &'a crate::extract::rows::EpisodeRow,
}

impl EpisodeWrite<'_> {
    fn key(&self) -> (i64, i64, i64) {
        (self.file_id, self.ep.generation, self.ep.start_line as i64)
    }
}

/// The last write of each episode (a group may carry one twice; a multi-row upsert must not
/// touch a row twice), in the order of those last writes.
pub(crate) fn last_writes<'a>(items: &[EpisodeWrite<'a>]) -> Vec<EpisodeWrite<'a>> {
    let mut last: std::collections::HashMap<(i64, i64, i64), usize> =
        std::collections::HashMap::with_capacity(items.len());
    for (i, w) in items.iter().enumerate() {
        last.insert(w.key(), i);
    }
    items
        .iter()
        .enumerate()
        .filter(|(i, w)| last.get(&w.key()) == Some(i))
        .map(|(_, w)| *w)
        .collect()
}

/// Insert snippets and their tags inside a transaction, in multi-row statements; evaluates to
/// `Vec<Option<i64>>`, one per input (`None` when the session already holds the same content,
/// or an earlier input of the same call does).
macro_rules! insert_snippets {
    ($tx:expr, $pairs:expr) => {{
        let pairs: &[(
            $crate::store::episodes::SnippetSource<'_>,
            &$crate::extract::rows::SnippetRow,
        )] = $pairs;
        let mut new_ids: std::collections::HashMap<(String, String), i64> =
            std::collections::HashMap::new();
        for chunk in $crate::store::ladder_chunks(pairs) {
            let tags: Vec<String> = chunk
                .iter()
                .map(|(_, row)| serde_json::to_string(&row.tags).unwrap_or_else(|_| "[]".into()))
                .collect();
            let mut qb = sqlx::QueryBuilder::new($crate::store::episodes::SNIPPET_INSERT);
            qb.push_values(chunk.iter().zip(&tags), |mut b, ((src, row), tags)| {
                b.push_bind(src.session_id)
                    .push_bind(src.episode_id)
                    .push_bind(row.origin)
                    .push_bind(row.snippet_type.as_str())
                    .push_bind(row.title.as_str())
                    .push_bind(row.content.as_str())
                    .push_bind(row.content_hash.as_str())
                    .push_bind(src.project)
                    .push_bind(src.source_file)
                    .push_bind(row.line_start as i64)
                    .push_bind(row.line_end as i64)
                    .push_bind(tags.as_str())
                    .push_bind(row.metadata.as_str())
                    .push_bind(src.created_at);
            });
            qb.push($crate::store::episodes::SNIPPET_IGNORE);
            let rows: Vec<(i64, String, String)> = qb.build_query_as().fetch_all(&mut *$tx).await?;
            new_ids.extend(rows.into_iter().map(|(id, s, h)| ((s, h), id)));
        }
        // The first input of each new (session, content) gets the id.
        let ids: Vec<Option<i64>> = pairs
            .iter()
            .map(|(src, row)| {
                new_ids.remove(&(src.session_id.to_string(), row.content_hash.clone()))
            })
            .collect();
        let mut tag_rows: Vec<(&str, i64)> = pairs
            .iter()
            .zip(&ids)
            .filter_map(|((_, row), id)| Some((row, (*id)?)))
            .flat_map(|(row, id)| row.tags.iter().map(move |t| (t.as_str(), id)))
            .collect();
        tag_rows.sort_unstable();
        tag_rows.dedup();
        for chunk in $crate::store::ladder_chunks(&tag_rows) {
            let mut qb = sqlx::QueryBuilder::new("INSERT INTO snippet_tags (tag, snippet_id) ");
            qb.push_values(chunk, |mut b, (tag, id)| {
                b.push_bind(*tag).push_bind(*id);
            });
            qb.push(" ON CONFLICT (tag, snippet_id) DO NOTHING");
            qb.build().execute(&mut *$tx).await?;
        }
        ids
    }};
}
pub(crate) use insert_snippets;

/// Upsert episodes (multi-row statements) and, for the closed ones, replace their automatic
/// snippets: the ones an earlier close wrote and that are no longer produced are deleted (a
/// finished session can resume and extend its last episode), identical content keeps its row,
/// new content is inserted. `$items`: `&[EpisodeWrite]`.
macro_rules! write_episodes {
    ($tx:expr, $items:expr, $now:expr) => {{
        let items = $crate::store::episodes::last_writes($items);
        let now: &str = $now;
        let mut ids: std::collections::HashMap<(i64, i64, i64), i64> =
            std::collections::HashMap::with_capacity(items.len());
        for chunk in $crate::store::ladder_chunks(&items) {
            let mut qb = sqlx::QueryBuilder::new($crate::store::episodes::EPISODE_INSERT);
            qb.push_values(chunk, |mut b, w| {
                let ep = w.ep;
                b.push_bind(ep.session_id.as_str())
                    .push_bind(w.file_id)
                    .push_bind(ep.generation)
                    .push_bind(ep.ordinal)
                    .push_bind(ep.first_turn)
                    .push_bind(ep.turns)
                    .push_bind(ep.start_line as i64)
                    .push_bind(ep.end_line as i64)
                    .push_bind(ep.started_at.as_deref())
                    .push_bind(ep.ended_at.as_deref())
                    .push_bind(if ep.closed { "closed" } else { "open" })
                    .push_bind(ep.cut_reason.as_str())
                    .push_bind(ep.triage.as_str())
                    .push_bind(ep.confidence)
                    .push_bind(ep.evidence.as_str())
                    .push_bind(ep.title.as_deref())
                    .push_bind(ep.files_touched.as_str())
                    .push_bind(ep.tools.as_str())
                    .push_bind(ep.agents.as_str())
                    .push_bind(now)
                    .push_bind(now);
            });
            qb.push($crate::store::episodes::EPISODE_UPSERT);
            let rows: Vec<(i64, i64, i64, i64)> = qb.build_query_as().fetch_all(&mut *$tx).await?;
            ids.extend(rows.into_iter().map(|(id, f, g, l)| ((f, g, l), id)));
        }
        let closed: Vec<(i64, &$crate::store::episodes::EpisodeWrite<'_>)> = items
            .iter()
            .filter(|w| w.ep.closed)
            .filter_map(|w| {
                Some((
                    *ids.get(&(w.file_id, w.ep.generation, w.ep.start_line as i64))?,
                    w,
                ))
            })
            .collect();
        for chunk in closed.chunks(100) {
            // Stale automatic snippets of an earlier close: one statement for the chunk, the
            // snippets still produced kept by (episode, content).
            let mut qb = sqlx::QueryBuilder::new(
                "DELETE FROM snippets WHERE origin = 'auto' AND episode_id IN (",
            );
            let mut sep = qb.separated(", ");
            for (id, _) in chunk {
                sep.push_bind(*id);
            }
            qb.push(")");
            let keep: Vec<(i64, &str)> = chunk
                .iter()
                .flat_map(|(id, w)| {
                    w.ep.snippets
                        .iter()
                        .map(move |s| (*id, s.content_hash.as_str()))
                })
                .collect();
            if !keep.is_empty() {
                qb.push(" AND (episode_id, content_hash) NOT IN (VALUES ");
                let mut sep = qb.separated(", ");
                for (id, hash) in &keep {
                    sep.push("(")
                        .push_bind_unseparated(*id)
                        .push_unseparated(", ")
                        .push_bind_unseparated(*hash)
                        .push_unseparated(")");
                }
                qb.push(")");
            }
            qb.build().persistent(false).execute(&mut *$tx).await?;
        }
        let pairs: Vec<(
            $crate::store::episodes::SnippetSource<'_>,
            &$crate::extract::rows::SnippetRow,
        )> = closed
            .iter()
            .flat_map(|(id, w)| {
                w.ep.snippets.iter().map(move |s| {
                    let src = $crate::store::episodes::SnippetSource {
                        session_id: w.ep.session_id.as_str(),
                        project: w.project,
                        source_file: w.path,
                        episode_id: Some(*id),
                        created_at: w.ep.ended_at.as_deref().unwrap_or(now),
                    };
                    (src, s)
                })
            })
            .collect();
        if !pairs.is_empty() {
            $crate::store::episodes::insert_snippets!($tx, &pairs);
        }
    }};
}
pub(crate) use write_episodes;

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
            let mut closed = Vec::with_capacity(files.len());
            for (file_id, path, project, state, session_id) in &files {
                let Some(builder) = $crate::episode::Builder::from_json(state) else {
                    tracing::warn!(file_id, "unreadable episode state; last episode left open");
                    continue;
                };
                if let Some(ep) = builder.finish(session_id) {
                    closed.push((*file_id, path.as_str(), project.as_str(), ep));
                }
            }
            let writes: Vec<$crate::store::episodes::EpisodeWrite<'_>> = closed
                .iter()
                .map(
                    |(file_id, path, project, ep)| $crate::store::episodes::EpisodeWrite {
                        file_id: *file_id,
                        path,
                        project,
                        ep,
                    },
                )
                .collect();
            $crate::store::episodes::write_episodes!($tx, &writes, $now);
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
            let ids = insert_snippets!(tx, &[(src.clone(), row)]);
            tx.commit().await?;
            Ok(ids.into_iter().next().flatten())
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
