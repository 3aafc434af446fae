//! Writing episodes and snippets.
//!
//! An episode is written open while it is the last of an active session and again when it
//! closes; both writes are upserts on its natural key `(file_id, generation, start_line)`, so
//! the row keeps its id. A closed episode's automatic snippets replace the ones an earlier close
//! wrote (a finished session can resume and extend its last episode); identical content keeps
//! its row. Every snippet insert is `ON CONFLICT (session_id, content_hash) DO NOTHING`: the
//! same content twice in one session is stored once, whoever writes it.

use std::borrow::Cow;
use std::collections::HashMap;

use super::copies::{self, Copies};
use super::late_docs::{KindDoc, LateDocs};
use super::sql::{row_chunks, Arg, Backend, Conn, Sql};
use super::{Store, StoreError};
use crate::extract::lexemes;
use crate::extract::rows::{EpisodeRow, PreparedBatch, SnippetRow};

/// Columns of an episode row, in bind order.
const EPISODE_INSERT: &str = "INSERT INTO episodes (session_id, file_id, generation, ordinal, \
     first_turn, turns, start_line, end_line, started_at, ended_at, status, cut_reason, triage, \
     confidence, evidence, labels, turn_labels, title, files_touched, tools, agents, created_at, \
     updated_at) ";

/// Upsert on the natural key, keeping the row's id and `created_at`.
const EPISODE_UPSERT: &str = " ON CONFLICT (file_id, generation, start_line) DO UPDATE \
     SET session_id = excluded.session_id, ordinal = excluded.ordinal, \
     first_turn = excluded.first_turn, turns = excluded.turns, end_line = excluded.end_line, \
     started_at = excluded.started_at, ended_at = excluded.ended_at, status = excluded.status, \
     cut_reason = excluded.cut_reason, triage = excluded.triage, \
     confidence = excluded.confidence, evidence = excluded.evidence, labels = excluded.labels, \
     turn_labels = excluded.turn_labels, title = excluded.title, \
     files_touched = excluded.files_touched, tools = excluded.tools, agents = excluded.agents, \
     updated_at = excluded.updated_at \
     RETURNING id, file_id, generation, start_line";

/// Columns of a snippet row, in bind order.
const SNIPPET_INSERT: &str = "INSERT INTO snippets (session_id, episode_id, origin, \
     snippet_type, title, content, content_hash, project, source_file, line_start, line_end, \
     tags, metadata, created_at) ";

/// The same content twice in one session is stored once.
const SNIPPET_IGNORE: &str =
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
pub(super) struct EpisodeWrite<'a> {
    /// File row id.
    pub file_id: i64,
    /// The file's path (its snippets' source).
    pub path: &'a str,
    /// The file's project folder.
    pub project: &'a str,
    /// The episode.
    pub ep: &'a EpisodeRow,
}

impl EpisodeWrite<'_> {
    fn key(&self) -> (i64, i64, i64) {
        (self.file_id, self.ep.generation, self.ep.start_line as i64)
    }
}

/// The last write of each episode (a group may carry one twice; a multi-row upsert must not
/// touch a row twice), in the order of those last writes.
fn last_writes<'a>(items: &[EpisodeWrite<'a>]) -> Vec<EpisodeWrite<'a>> {
    let mut last: HashMap<(i64, i64, i64), usize> = HashMap::with_capacity(items.len());
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

/// The episodes of a group's accepted batches. A batch of a new generation (its file was
/// truncated or rewritten) first closes the old generation's last episode: its line numbers
/// refer to content that is gone, so it will never grow again.
pub(super) async fn write_batches(
    c: &mut Conn<'_>,
    accepted: &[&PreparedBatch],
    copies: &Copies,
    now: &str,
    late: &mut LateDocs,
) -> Result<(), StoreError> {
    let mut writes = Vec::new();
    for b in accepted {
        if b.checkpoint.generation != b.expected.0 {
            let q = Sql::new(
                "UPDATE episodes SET status = 'closed', updated_at = $1 \
                 WHERE file_id = $2 AND generation < $3 AND status = 'open'",
            )
            .arg(now)
            .arg(b.file_id)
            .arg(b.checkpoint.generation);
            c.execute(&q).await?;
        }
        writes.extend(b.episodes.iter().map(|ep| EpisodeWrite {
            file_id: b.file_id,
            path: &b.path,
            project: &b.project,
            ep,
        }));
    }
    write_with(c, &writes, copies, now, late).await
}

/// Upsert episodes (multi-row statements) and, for the closed ones, replace their automatic
/// snippets: the ones an earlier close wrote and that are no longer produced are deleted (a
/// finished session can resume and extend its last episode), identical content keeps its row,
/// new content is inserted.
pub(super) async fn write(
    c: &mut Conn<'_>,
    items: &[EpisodeWrite<'_>],
    now: &str,
) -> Result<(), StoreError> {
    if items.is_empty() {
        return Ok(());
    }
    let mut ids: Vec<(i64, i64)> = items.iter().map(|w| (w.file_id, w.ep.generation)).collect();
    // The latest generation written of each file.
    ids.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    ids.dedup_by_key(|(f, _)| *f);
    let copies = copies::find(c, &ids).await?;
    let mut late = LateDocs::default();
    write_with(c, items, &copies, now, &mut late).await?;
    late.write(c).await
}

/// [`write`], the other copies of the episodes' transcripts known: an episode another copy
/// holds is not stored again (`store::copies`).
async fn write_with(
    c: &mut Conn<'_>,
    items: &[EpisodeWrite<'_>],
    copies: &Copies,
    now: &str,
    late: &mut LateDocs,
) -> Result<(), StoreError> {
    let mut items = last_writes(items);
    if !copies.is_empty() {
        let pairs: Vec<(i64, &EpisodeRow)> = items.iter().map(|w| (w.file_id, w.ep)).collect();
        let mask = copies.keep_episodes(c, &pairs).await?;
        let mut kept = mask.into_iter();
        items.retain(|_| kept.next().unwrap_or(true));
    }
    if items.is_empty() {
        return Ok(());
    }
    let mut ids: HashMap<(i64, i64, i64), i64> = HashMap::with_capacity(items.len());
    let backend = c.backend();
    for chunk in row_chunks(backend, &items) {
        let mut q = Sql::new(EPISODE_INSERT);
        q.push_rows(backend, chunk, |row, w| {
            let ep = w.ep;
            row.bind(ep.session_id.as_str())
                .bind(w.file_id)
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
                .bind(ep.labels.as_str())
                .bind(ep.turn_labels.as_str())
                .bind(ep.title.as_deref())
                .bind(ep.files_touched.as_str())
                .bind(ep.tools.as_str())
                .bind(ep.agents.as_str())
                .bind(now)
                .bind(now);
        });
        q.push(EPISODE_UPSERT);
        let rows: Vec<(i64, i64, i64, i64)> = c.fetch_rows(&q).await?;
        ids.extend(rows.into_iter().map(|(id, f, g, l)| ((f, g, l), id)));
    }
    let closed: Vec<(i64, &EpisodeWrite<'_>)> = items
        .iter()
        .filter(|w| w.ep.closed)
        .filter_map(|w| Some((*ids.get(&w.key())?, w)))
        .collect();
    for chunk in closed.chunks(100) {
        delete_stale_snippets(c, chunk).await?;
    }
    let mut pairs: Vec<(SnippetSource<'_>, &SnippetRow)> = closed
        .iter()
        .flat_map(|(id, w)| {
            w.ep.snippets.iter().map(move |s| {
                let src = SnippetSource {
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
    let candidates = reusable(c, &pairs).await?;
    let mut kept = Vec::with_capacity(pairs.len());
    for (src, row) in &pairs {
        let place = (
            src.session_id.to_string(),
            src.source_file.to_string(),
            row.snippet_type.clone(),
            row.line_start as i64,
            row.line_end as i64,
        );
        kept.push(candidates.contains(&place) && reuse_snippet(c, src, row).await?);
    }
    let mut reused = kept.into_iter();
    pairs.retain(|_| !reused.next().unwrap_or(false));
    insert_snippets(c, &pairs, late).await?;
    Ok(())
}

/// Where a snippet was: session, transcript, type, first and last line.
type Place = (String, String, String, i64, i64);

/// The places of `pairs` an automatic snippet already holds: only those can be reused
/// ([`reuse_snippet`]). One query per chunk (over the `snippets_source` index), so a group
/// whose snippets are all new (a first ingest) makes one statement, not one per snippet (533
/// per 512 MB on PostgreSQL).
async fn reusable(
    c: &mut Conn<'_>,
    pairs: &[(SnippetSource<'_>, &SnippetRow)],
) -> Result<std::collections::HashSet<Place>, StoreError> {
    let mut found = std::collections::HashSet::new();
    for chunk in pairs.chunks(200) {
        let mut sessions: Vec<&str> = chunk.iter().map(|(s, _)| s.session_id).collect();
        sessions.sort_unstable();
        sessions.dedup();
        let mut starts: Vec<i64> = chunk.iter().map(|(_, r)| r.line_start as i64).collect();
        starts.sort_unstable();
        starts.dedup();
        let mut q = Sql::new(
            "SELECT session_id, COALESCE(source_file, ''), snippet_type, line_start, line_end \
             FROM snippets WHERE origin = 'auto' AND ",
        );
        q.push_in("session_id", sessions);
        q.push(" AND ");
        q.push_in("line_start", starts);
        let rows: Vec<(String, String, String, i64, i64)> =
            c.fetch_rows(&q.not_persistent()).await?;
        found.extend(rows);
    }
    Ok(found)
}

/// Write an automatic snippet over the one its source gave before (same session, transcript,
/// type and lines: a re-closed episode, a re-extraction), keeping that row's id: ids handed to
/// agents, links and notes stay valid. False when there is none to reuse (or another snippet of
/// the session already holds this content: the insert then skips it, as it would).
async fn reuse_snippet(
    c: &mut Conn<'_>,
    src: &SnippetSource<'_>,
    row: &SnippetRow,
) -> Result<bool, StoreError> {
    let backend = c.backend();
    let tags = serde_json::to_string(&row.tags).unwrap_or_else(|_| "[]".into());
    let mut q = Sql::new("UPDATE snippets SET episode_id = ");
    q.push_bind(src.episode_id)
        .push(", title = ")
        .push_bind(row.title.as_str())
        .push(", content = ")
        .push_bind(row.content.as_str())
        .push(", content_hash = ")
        .push_bind(row.content_hash.as_str())
        .push(", project = ")
        .push_bind(src.project)
        .push(", tags = ")
        .push_bind(tags.as_str())
        .push(", metadata = ")
        .push_bind(row.metadata.as_str())
        .push(", created_at = ")
        .push_bind(src.created_at);
    if backend == Backend::Postgres {
        q.push(", search_vec = ")
            .push_bind(Arg::TsVector(Some(Cow::Owned(lexemes::tsvector_binary(
                &format!("{}\n{}", row.title, row.content),
            )))));
    }
    q.push(" WHERE id = (SELECT o.id FROM snippets o WHERE o.origin = 'auto' AND o.session_id = ")
        .push_bind(src.session_id)
        .push(" AND o.source_file = ")
        .push_bind(src.source_file)
        .push(" AND o.snippet_type = ")
        .push_bind(row.snippet_type.as_str())
        .push(" AND o.line_start = ")
        .push_bind(row.line_start as i64)
        .push(" AND o.line_end = ")
        .push_bind(row.line_end as i64)
        .push(" AND (o.episode_id IS NULL OR o.episode_id = ")
        .push_bind(src.episode_id)
        .push(
            ") ORDER BY o.id LIMIT 1) AND NOT EXISTS (SELECT 1 FROM snippets d \
               WHERE d.session_id = ",
        )
        .push_bind(src.session_id)
        .push(" AND d.content_hash = ")
        .push_bind(row.content_hash.as_str())
        .push(" AND d.id <> snippets.id) RETURNING id");
    let ids: Vec<(i64,)> = c.fetch_rows(&q.not_persistent()).await?;
    let Some((id,)) = ids.first() else {
        return Ok(false);
    };
    let mut q = Sql::new("DELETE FROM snippet_tags WHERE snippet_id = ");
    q.push_bind(*id);
    c.execute(&q).await?;
    let mut tags: Vec<&str> = row.tags.iter().map(String::as_str).collect();
    tags.sort_unstable();
    tags.dedup();
    for chunk in row_chunks(backend, &tags) {
        let mut q = Sql::new("INSERT INTO snippet_tags (tag, snippet_id) ");
        q.push_rows(backend, chunk, |b, tag| {
            b.bind(*tag).bind(*id);
        });
        q.push(" ON CONFLICT (tag, snippet_id) DO NOTHING");
        c.execute(&q).await?;
    }
    Ok(true)
}

/// Stale automatic snippets of an earlier close of these episodes: one statement for the
/// chunk, the snippets still produced kept by (episode, content) or by their source's lines
/// and type (rewritten in place by [`reuse_snippet`], keeping their ids).
async fn delete_stale_snippets(
    c: &mut Conn<'_>,
    chunk: &[(i64, &EpisodeWrite<'_>)],
) -> Result<(), StoreError> {
    let mut q = Sql::new("DELETE FROM snippets WHERE origin = 'auto' AND ");
    q.push_in("episode_id", chunk.iter().map(|(id, _)| *id));
    let keep: Vec<(i64, &str)> = chunk
        .iter()
        .flat_map(|(id, w)| {
            w.ep.snippets
                .iter()
                .map(move |s| (*id, s.content_hash.as_str()))
        })
        .collect();
    if !keep.is_empty() {
        q.push(" AND (episode_id, content_hash) NOT IN (VALUES ");
        for (i, (id, hash)) in keep.iter().enumerate() {
            q.push(if i == 0 { "(" } else { ", (" });
            q.push_bind(*id).push(", ").push_bind(*hash).push(")");
        }
        q.push(")");
        q.push(" AND (episode_id, snippet_type, line_start, line_end) NOT IN (VALUES ");
        let sources = chunk
            .iter()
            .flat_map(|(id, w)| w.ep.snippets.iter().map(move |s| (*id, s)));
        for (i, (id, s)) in sources.enumerate() {
            q.push(if i == 0 { "(" } else { ", (" });
            q.push_bind(id)
                .push(", ")
                .push_bind(s.snippet_type.as_str())
                .push(", ")
                .push_bind(s.line_start as i64)
                .push(", ")
                .push_bind(s.line_end as i64)
                .push(")");
        }
        q.push(")");
    }
    c.execute(&q.not_persistent()).await?;
    Ok(())
}

/// Insert snippets and their tags, in multi-row statements. One id per input: `None` when the
/// session already holds the same content, or an earlier input of the same call does.
/// Insert snippets (a content already in its session is skipped); their ids, in order (`None`:
/// skipped). SQLite: their search documents go to `late` (`store::late_docs`).
async fn insert_snippets(
    c: &mut Conn<'_>,
    pairs: &[(SnippetSource<'_>, &SnippetRow)],
    late: &mut LateDocs,
) -> Result<Vec<Option<i64>>, StoreError> {
    let mut new_ids: HashMap<(String, String), i64> = HashMap::new();
    // PostgreSQL indexes snippets through a `search_vec` column (SQLite: `late`).
    let backend = c.backend();
    let pg = backend == Backend::Postgres;
    for chunk in row_chunks(backend, pairs) {
        let tags: Vec<String> = chunk
            .iter()
            .map(|(_, row)| serde_json::to_string(&row.tags).unwrap_or_else(|_| "[]".into()))
            .collect();
        let rows: Vec<(&(SnippetSource<'_>, &SnippetRow), &String)> =
            chunk.iter().zip(&tags).collect();
        let mut q = Sql::new(if pg {
            SNIPPET_INSERT.replace(", created_at) ", ", created_at, search_vec) ")
        } else {
            SNIPPET_INSERT.to_string()
        });
        q.push_rows(backend, &rows, |b, ((src, row), tags)| {
            b.bind(src.session_id)
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
                .bind(tags.as_str())
                .bind(row.metadata.as_str())
                .bind(src.created_at);
            if pg {
                b.bind(Arg::TsVector(Some(Cow::Owned(lexemes::tsvector_binary(
                    &format!("{}\n{}", row.title, row.content),
                )))));
            }
        });
        q.push(SNIPPET_IGNORE);
        if pg {
            let inserted: Vec<(i64, String, String)> = c.fetch_rows(&q).await?;
            new_ids.extend(inserted.into_iter().map(|(id, s, h)| ((s, h), id)));
            continue;
        }
        q.push(", created_at, title, content");
        let inserted: Vec<(i64, String, String, String, String, String)> = c.fetch_rows(&q).await?;
        for (id, session_id, hash, created_at, title, content) in inserted {
            late.kinds.push(KindDoc {
                kind: "snippet",
                ref_id: id,
                session_id: session_id.clone(),
                ts: Some(created_at),
                file_id: None,
                line_no: None,
                body: format!("{title}\n{content}"),
                snippet: Some((title, content)),
            });
            new_ids.insert((session_id, hash), id);
        }
    }
    // The first input of each new (session, content) gets the id.
    let ids: Vec<Option<i64>> = pairs
        .iter()
        .map(|(src, row)| new_ids.remove(&(src.session_id.to_string(), row.content_hash.clone())))
        .collect();
    let mut tag_rows: Vec<(&str, i64)> = pairs
        .iter()
        .zip(&ids)
        .filter_map(|((_, row), id)| Some((row, (*id)?)))
        .flat_map(|(row, id)| row.tags.iter().map(move |t| (t.as_str(), id)))
        .collect();
    tag_rows.sort_unstable();
    tag_rows.dedup();
    for chunk in row_chunks(backend, &tag_rows) {
        let mut q = Sql::new("INSERT INTO snippet_tags (tag, snippet_id) ");
        q.push_rows(backend, chunk, |b, (tag, id)| {
            b.bind(*tag).bind(*id);
        });
        q.push(" ON CONFLICT (tag, snippet_id) DO NOTHING");
        c.execute(&q).await?;
    }
    Ok(ids)
}

impl Store {
    /// Store one snippet (`gleaner snippet add`). Returns its id, or `None` when the session
    /// already holds the same content.
    pub async fn insert_snippet(
        &self,
        src: &SnippetSource<'_>,
        row: &SnippetRow,
    ) -> Result<Option<i64>, StoreError> {
        let mut tx = self.begin().await?;
        let mut late = LateDocs::default();
        let ids = insert_snippets(&mut tx.conn(), &[(src.clone(), row)], &mut late).await?;
        late.write(&mut tx.conn()).await?;
        tx.commit().await?;
        Ok(ids.into_iter().next().flatten())
    }
}
