//! The knowledge rows of a group of batches: summaries and their leaves, feedback, and through
//! `store::tools` tool uses (token usage: `store::usage`).
//!
//! Keys that may repeat within a group (a tool use id or API message id seen in a resumed
//! session's copy) are merged first: PostgreSQL rejects an upsert that touches one row twice.

use std::collections::{HashMap, HashSet};

use super::late_docs::{KindDoc, LateDocs};
use super::search::index::tsvector_arg;
use super::sql::{dedup_sorted_by, row_chunks, Backend, Conn, Sql};
use super::StoreError;
use crate::extract::lexemes;
use crate::extract::rows::{uuid_bytes, uuid_key, FeedbackRow, PreparedBatch, SummaryRow};

/// Write the knowledge rows of the accepted batches of a group. `leaves` is the writer's set of
/// known summary-leaf keys; it gains the leaves of the summaries written here.
///
/// SQLite: the summaries' and feedback's search documents go to `late`, written at the end of
/// the group (`store::late_docs`).
pub(super) async fn write(
    c: &mut Conn<'_>,
    accepted: &[&PreparedBatch],
    leaves: &mut HashSet<i64>,
    late: &mut LateDocs,
) -> Result<(), StoreError> {
    write_summaries(c, accepted, leaves, late).await?;
    write_feedback(c, accepted, late).await?;
    super::tools::write(c, accepted).await
}

async fn write_summaries(
    c: &mut Conn<'_>,
    accepted: &[&PreparedBatch],
    leaves: &mut HashSet<i64>,
    late: &mut LateDocs,
) -> Result<(), StoreError> {
    let backend = c.backend();
    let summaries: Vec<(&PreparedBatch, &SummaryRow)> = accepted
        .iter()
        .flat_map(|b| b.summaries.iter().map(move |r| (*b, r)))
        .collect();
    let summaries = dedup_sorted_by(summaries, |(_, r)| (r.kind, r.dedup_key.clone()));
    let pg = backend == Backend::Postgres;
    for chunk in row_chunks(backend, &summaries) {
        let mut q = Sql::new(format!(
            "{}summaries (kind, dedup_key, text, leaf_uuid, uuid, compact_trigger, \
             pre_tokens, session_id, agent_id, ts, file_id, line_no, leaf_key{}) ",
            backend.insert_ignore(),
            if pg { ", search_vec" } else { "" }
        ));
        q.push_rows(backend, chunk, |row, (b, r)| {
            row.bind(r.kind)
                .bind(r.dedup_key.as_str())
                .bind(r.text.as_deref())
                .bind(r.leaf_uuid.as_deref())
                .bind(r.uuid.as_deref())
                .bind(r.trigger.as_deref())
                .bind(r.pre_tokens)
                .bind(r.session_id.as_str())
                .bind(r.agent_id.as_deref())
                .bind(r.ts.as_deref())
                .bind(b.file_id)
                .bind(r.line_no as i64)
                .bind(r.leaf_uuid.as_deref().map(uuid_key));
            if pg {
                row.bind(tsvector_arg(&r.search_vec, r.text.as_deref()));
            }
        });
        q.push(&backend.on_conflict_ignore("kind, dedup_key"));
        if pg {
            c.execute(&q).await?;
            continue;
        }
        q.push(" RETURNING id, session_id, ts, file_id, line_no, text");
        late_docs(late, "summary", c.fetch_rows(&q).await?);
    }
    // Summary leaves. A new leaf's message may already be stored (usually in a sibling file
    // of the same project): one scan of that project's messages per group.
    // Messages store their uuid as bytes (`uuid_bytes`): the leaves are matched by those
    // bytes, and the summary's own text of the uuid is what is written.
    let mut new_leaves: HashMap<&str, Vec<&str>> = HashMap::new();
    for (b, r) in &summaries {
        if let (true, Some(leaf)) = (r.kind == "summary", r.leaf_uuid.as_deref()) {
            if leaves.insert(uuid_key(leaf)) {
                new_leaves.entry(b.project.as_str()).or_default().push(leaf);
            }
        }
    }
    for (project, uuids) in &new_leaves {
        for chunk in uuids.chunks(500) {
            // The project's files first, then their messages by the key's file id: joined
            // the other way, SQLite scanned every message of the database per new leaf (53 ms
            // at 233,662 rows, growing with the store).
            let mut q = Sql::new(
                "SELECT DISTINCT m.uuid, f.session_id FROM messages m \
                 JOIN files f ON f.id = m.file_id \
                 WHERE m.file_id IN (SELECT id FROM files WHERE project = ",
            );
            q.push_bind(*project)
                .push(") AND f.session_id IS NOT NULL AND ");
            q.push_in("m.uuid", chunk.iter().map(|u| uuid_bytes(u)));
            let found: Vec<(Vec<u8>, String)> = c.fetch_rows(&q.not_persistent()).await?;
            let mut hits: Vec<(&str, String)> = found
                .into_iter()
                .filter_map(|(bytes, sid)| {
                    let leaf = chunk.iter().find(|u| uuid_bytes(u).as_ref() == bytes)?;
                    Some((*leaf, sid))
                })
                .collect();
            hits.sort();
            for rows in row_chunks(backend, &hits) {
                let mut q = Sql::new(format!(
                    "{}summary_leaves (leaf_uuid, session_id) ",
                    backend.insert_ignore()
                ));
                q.push_rows(backend, rows, |row, (u, sid)| {
                    row.bind(*u).bind(sid.as_str());
                });
                q.push(&backend.on_conflict_ignore("leaf_uuid, session_id"));
                c.execute(&q).await?;
            }
        }
    }
    // Messages committed now that a known summary names as its leaf.
    let hits: Vec<(&str, &str)> = dedup_sorted_by(
        accepted
            .iter()
            .flat_map(|b| b.messages.iter())
            .filter_map(|m| {
                let u = m.uuid.as_deref()?;
                leaves
                    .contains(&uuid_key(u))
                    .then_some((u, m.session_id.as_str()))
            })
            .collect(),
        |h| *h,
    );
    for chunk in row_chunks(backend, &hits) {
        let mut q = Sql::new(format!(
            "{}summary_leaves (leaf_uuid, session_id) ",
            backend.insert_ignore()
        ));
        q.push_rows(backend, chunk, |row, (u, sid)| {
            row.bind(*u).bind(*sid);
        });
        q.push(&backend.on_conflict_ignore("leaf_uuid, session_id"));
        c.execute(&q).await?;
    }
    Ok(())
}

/// A summary's or a feedback's new row as SQLite's `RETURNING` gives it: id, session, time,
/// file, line, and the text searched.
type Returned = (
    i64,
    String,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<String>,
);

/// The search documents of the rows `RETURNING` gave, for the end of the group; a row with no
/// text (a summary without one) has none.
fn late_docs(late: &mut LateDocs, kind: &'static str, rows: Vec<Returned>) {
    for (ref_id, session_id, ts, file_id, line_no, body) in rows {
        if let Some(body) = body {
            late.kinds.push(KindDoc {
                kind,
                ref_id,
                session_id,
                ts,
                file_id,
                line_no,
                body,
                snippet: None,
            });
        }
    }
}

async fn write_feedback(
    c: &mut Conn<'_>,
    accepted: &[&PreparedBatch],
    late: &mut LateDocs,
) -> Result<(), StoreError> {
    let backend = c.backend();
    let feedback: Vec<(&PreparedBatch, &FeedbackRow)> = accepted
        .iter()
        .flat_map(|b| b.feedback.iter().map(move |r| (*b, r)))
        .collect();
    let feedback = dedup_sorted_by(feedback, |(_, r)| r.dedup_key.clone());
    let pg = backend == Backend::Postgres;
    for chunk in row_chunks(backend, &feedback) {
        let mut q = Sql::new(format!(
            "{}feedback (dedup_key, ts, session_id, feedback_type, content, reason, \
             agent_id, slug, tool_use_id, uuid, file_id, line_no{}) ",
            backend.insert_ignore(),
            if pg { ", search_vec" } else { "" }
        ));
        q.push_rows(backend, chunk, |row, (b, r)| {
            row.bind(r.dedup_key.as_str())
                .bind(r.ts.as_deref())
                .bind(r.session_id.as_str())
                .bind(r.feedback_type.as_str())
                .bind(r.content.as_str())
                .bind(r.reason.as_deref())
                .bind(r.agent_id.as_deref())
                .bind(r.slug.as_deref())
                .bind(r.tool_use_id.as_deref())
                .bind(r.uuid.as_deref())
                .bind(b.file_id)
                .bind(r.line_no as i64);
            if pg {
                let text = lexemes::feedback_text(&r.content, r.reason.as_deref());
                row.bind(tsvector_arg(&r.search_vec, Some(&text)));
            }
        });
        q.push(&backend.on_conflict_ignore("dedup_key"));
        if pg {
            c.execute(&q).await?;
            continue;
        }
        // The text the search index held for a feedback row (its insert trigger, before 0035).
        q.push(
            " RETURNING id, session_id, ts, file_id, line_no, \
             content || COALESCE(char(10) || reason, '')",
        );
        late_docs(late, "feedback", c.fetch_rows(&q).await?);
    }
    Ok(())
}
