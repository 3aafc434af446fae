//! The tool rows of a group of batches: one `tool_uses` row per tool use id, holding the call
//! (its tool, target and line) and its result (its bounded text, line and failure).
//!
//! A call and its result read in the same group (nearly always: the result is the next line)
//! are written as one row by one `INSERT`; a result whose call was written by an earlier group
//! updates that row (an `UPDATE` of the row just written doubled the writes).
//!
//! On SQLite the writer indexes the rows it inserts itself in `tool_fts`, the tool documents'
//! own index (migration 0034: one row per tool use, the call and the result its two columns),
//! with prepared single-row statements on its own handle, as it does messages
//! (`store::messages`: a trigger per row cost twice as much); the rarer `UPDATE` that names a
//! row or gives it its result is indexed by the triggers of migration 0034. On PostgreSQL the
//! vectors come with the rows.
//!
//! Architecture Invariant: a row's name and target, and its result's text and line, are
//! written once and never changed: a later copy only fills what is missing, and a result
//! counts only from the call's own file (its line means nothing in another). A call is a
//! document once it is named and has a target, a result once its text is there; deleting from
//! an FTS5 external-content index needs the text it indexed (the delete trigger reads it back).

use std::collections::HashMap;

use super::search::index::{tsvector_arg, tsvector_arg_with};
use super::sql::{dedup_sorted_by, row_chunks, Arg, Backend, Conn, Sql};
use super::StoreError;
use crate::extract::lexemes;
use crate::extract::rows::{PreparedBatch, ToolUseRow};

/// One row to write: a call, its result, or both.
#[derive(Clone, Copy)]
struct Merged<'a> {
    batch: &'a PreparedBatch,
    call: Option<&'a ToolUseRow>,
    result: Option<&'a ToolUseRow>,
}

impl Merged<'_> {
    fn id(&self) -> &str {
        self.call
            .or(self.result)
            .map_or("", |r| r.tool_use_id.as_str())
    }
}

/// Write the tool rows of the accepted batches.
pub(super) async fn write(c: &mut Conn<'_>, accepted: &[&PreparedBatch]) -> Result<(), StoreError> {
    let mut calls: Vec<Merged> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for b in accepted {
        for r in &b.tool_uses {
            if !at.contains_key(r.tool_use_id.as_str()) {
                at.insert(&r.tool_use_id, calls.len());
                calls.push(Merged {
                    batch: b,
                    call: Some(r),
                    result: None,
                });
            }
        }
    }
    let mut results: Vec<Merged> = Vec::new();
    for b in accepted {
        for r in &b.tool_results {
            match at.get(r.tool_use_id.as_str()).map(|&i| &mut calls[i]) {
                Some(m) if m.result.is_none() && m.batch.file_id == b.file_id => m.result = Some(r),
                _ => results.push(Merged {
                    batch: b,
                    call: None,
                    result: Some(r),
                }),
            }
        }
    }
    let calls = dedup_sorted_by(calls, |m| m.id().to_string());
    let results = dedup_sorted_by(results, |m| m.id().to_string());
    if let Conn::Direct(db) = c {
        return write_direct(db, calls.iter().chain(&results));
    }
    write_rows(c, &calls, false).await?;
    write_rows(c, &results, true).await
}

const INSERT_ROW: &str = "INSERT INTO tool_uses (tool_use_id, session_id, name, target, ts, \
     is_error, file_id, line_no, result_line, result) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) \
     ON CONFLICT (tool_use_id) DO NOTHING";

/// What a row already stored takes of a later copy (the `ON CONFLICT` rules of [`write_rows`]);
/// every right-hand side reads the row as it was.
const UPDATE_ROW: &str = "UPDATE tool_uses SET is_error = is_error OR ?6, \
     result_line = CASE WHEN result IS NULL AND file_id = ?7 THEN ?9 ELSE result_line END, \
     result = CASE WHEN result IS NULL AND file_id = ?7 THEN ?10 ELSE result END, \
     name = CASE WHEN name IS NULL THEN ?3 ELSE name END, \
     target = CASE WHEN name IS NULL THEN ?4 ELSE target END, \
     line_no = CASE WHEN name IS NULL AND ?3 IS NOT NULL THEN ?8 ELSE line_no END, \
     ts = CASE WHEN name IS NULL AND ?3 IS NOT NULL THEN ?5 ELSE ts END \
     WHERE tool_use_id = ?1";

/// A tool row's words, in the index of tool documents (migration 0034); its rowid is the row's.
const INSERT_FTS: &str = "INSERT INTO tool_fts (rowid, call, result) VALUES (?1, ?2, ?3)";

/// SQLite: every row inserted (a row already stored updated: the triggers of migration 0034
/// index what the update fills in), then the inserted rows indexed.
///
/// Why in two passes, and no `RETURNING`: a statement that needs a statement journal (one with
/// triggers, and `RETURNING` is run as one) opens a savepoint, and FTS5 writes its pending
/// terms to disk at every savepoint. Indexing each row right after inserting it with
/// `RETURNING id` flushed the index once per tool call, tiny segments merged again and again
/// (`fts5IndexFlush` from `fts5SavepointMethod`: the database write stage 2.6 times the build
/// before). A plain single-row `INSERT` opens none.
fn write_direct<'a>(
    db: &rusqlite::Connection,
    rows: impl Iterator<Item = &'a Merged<'a>>,
) -> Result<(), StoreError> {
    let mut insert = db.prepare_cached(INSERT_ROW)?;
    let mut update = db.prepare_cached(UPDATE_ROW)?;
    let mut docs: Vec<(i64, Option<String>, Option<&str>)> = Vec::new();
    for m in rows {
        let first = m.call.or(m.result);
        let (session, ts, line) = first.map_or(("", None, 0), |r| {
            (r.session_id.as_str(), r.ts.as_deref(), r.line_no as i64)
        });
        let name = m.call.and_then(|r| r.name.as_deref());
        let target = m.call.and_then(|r| r.target.as_deref());
        let result = m.result.and_then(|r| r.result.as_deref());
        let params = rusqlite::params![
            m.id(),
            session,
            name,
            target,
            ts,
            m.result.is_some_and(|r| r.is_error),
            m.batch.file_id,
            line,
            m.result.map(|r| r.line_no as i64),
            result,
        ];
        // No `RETURNING`: SQLite runs it as a trigger, which opens a statement savepoint per
        // row; the row inserted is the connection's last.
        if insert.execute(params)? == 0 {
            update.execute(params)?;
            continue;
        }
        let call = crate::extract::tools::call_text(name, target);
        if call.is_some() || result.is_some() {
            docs.push((db.last_insert_rowid(), call, result));
        }
    }
    let mut fts = db.prepare_cached(INSERT_FTS)?;
    for (id, call, result) in docs {
        fts.execute(rusqlite::params![
            id,
            call.as_deref().map(lexemes::fts_text).as_deref(),
            result.map(lexemes::fts_text).as_deref(),
        ])?;
    }
    Ok(())
}

/// One statement per chunk of `rows`: calls (with the results read beside them), or results
/// alone (`results_only`), each merged into what the row already holds.
async fn write_rows(
    c: &mut Conn<'_>,
    rows: &[Merged<'_>],
    results_only: bool,
) -> Result<(), StoreError> {
    let backend = c.backend();
    let pg = backend == Backend::Postgres;
    for chunk in row_chunks(backend, rows) {
        let mut q = Sql::new(if pg {
            "INSERT INTO tool_uses (tool_use_id, session_id, name, target, ts, is_error, \
             file_id, line_no, result_line, result, call_vec, result_vec) "
        } else {
            "INSERT INTO tool_uses (tool_use_id, session_id, name, target, ts, is_error, \
             file_id, line_no, result_line, result) "
        });
        q.push_rows(backend, chunk, |row, m| {
            // A row made by a result alone takes the result's line as its own.
            let first = m.call.or(m.result);
            let (session, ts, line) = first.map_or(("", None, 0), |r| {
                (r.session_id.as_str(), r.ts.as_deref(), r.line_no as i64)
            });
            row.bind(m.id())
                .bind(session)
                .bind(m.call.and_then(|r| r.name.as_deref()))
                .bind(m.call.and_then(|r| r.target.as_deref()))
                .bind(ts)
                .bind(m.result.is_some_and(|r| r.is_error))
                .bind(m.batch.file_id)
                .bind(line)
                .bind(m.result.map(|r| r.line_no as i64))
                .bind(m.result.and_then(|r| r.result.as_deref()));
            if pg {
                let call = match m.call {
                    Some(r) => tsvector_arg_with(&r.search_vec, || call_text(r).map(Into::into)),
                    None => Arg::TsVector(None),
                };
                let result = match m.result {
                    Some(r) => tsvector_arg(&r.search_vec, r.result.as_deref()),
                    None => Arg::TsVector(None),
                };
                row.bind(call).bind(result);
            }
        });
        let same = "tool_uses.result IS NULL AND tool_uses.file_id = excluded.file_id";
        let mut set = vec![
            "is_error = tool_uses.is_error OR excluded.is_error".to_string(),
            format!(
                "result_line = CASE WHEN {same} THEN excluded.result_line \
                 ELSE tool_uses.result_line END"
            ),
            format!("result = CASE WHEN {same} THEN excluded.result ELSE tool_uses.result END"),
        ];
        if pg {
            set.push(format!(
                "result_vec = CASE WHEN {same} THEN excluded.result_vec ELSE tool_uses.result_vec END"
            ));
        }
        if !results_only {
            let unnamed = "tool_uses.name IS NULL";
            for col in ["name", "target", "line_no", "ts"] {
                set.push(format!(
                    "{col} = CASE WHEN {unnamed} THEN excluded.{col} ELSE tool_uses.{col} END"
                ));
            }
            if pg {
                set.push(format!(
                    "call_vec = CASE WHEN {unnamed} THEN excluded.call_vec ELSE tool_uses.call_vec END"
                ));
            }
        }
        q.push(&format!(
            " ON CONFLICT (tool_use_id) DO UPDATE SET {}",
            set.join(", ")
        ));
        c.execute(&q).await?;
    }
    Ok(())
}

/// The text a call's vector is made of (`extract::tools::call_text`).
fn call_text(r: &ToolUseRow) -> Option<String> {
    crate::extract::tools::call_text(r.name.as_deref(), r.target.as_deref())
}
