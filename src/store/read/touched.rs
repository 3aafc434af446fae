//! The files a session's tools read, edited and wrote (`show`, MCP `get_session`), and the
//! sessions that touched a file (`sessions --file`, MCP `list_sessions` `file`).
//!
//! Read from `tool_uses`: a file tool's target is its path. A session's files are one indexed
//! lookup by session (its sub-agents' calls carry the session too). Finding the sessions of a
//! path takes the path's words through the search index (tool calls are documents there), so
//! its cost follows how many calls name those words, not the store's size; the exact rule (the
//! path, or a tail of it after a `/`, or a `\` in a Windows path) is then checked on the few
//! rows found.

use serde::Serialize;

use super::super::search::{tsquery, Query};
use super::super::sql::{like_escape, Sql};
use super::super::{Backend, Store, StoreError};
use crate::extract::lexemes;

/// Tools whose target is a file they read.
pub const READ_TOOLS: &[&str] = &["Read", "NotebookRead", "mcp__acp__Read"];
/// Tools whose target is a file they change in place.
pub const EDIT_TOOLS: &[&str] = &["Edit", "MultiEdit", "NotebookEdit", "mcp__acp__Edit"];
/// Tools whose target is a file they write whole.
pub const WRITE_TOOLS: &[&str] = &["Write", "mcp__acp__Write"];

/// Most files an overview lists (most changed first).
pub const MAX_TOUCHED: u32 = 200;

/// A file a session's tools touched, with how often each way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow)]
pub struct TouchedFile {
    /// Its path as the tool call named it.
    pub path: String,
    /// Reads.
    pub reads: i64,
    /// Edits in place.
    pub edits: i64,
    /// Whole writes.
    pub writes: i64,
}

fn file_tools() -> impl Iterator<Item = &'static str> {
    READ_TOOLS
        .iter()
        .chain(EDIT_TOOLS)
        .chain(WRITE_TOOLS)
        .copied()
}

fn sum_of(tools: &[&str], name: &str) -> String {
    let list: Vec<String> = tools.iter().map(|t| format!("'{t}'")).collect();
    format!(
        "CAST(SUM(CASE WHEN name IN ({}) THEN 1 ELSE 0 END) AS BIGINT) AS {name}",
        list.join(", ")
    )
}

/// ` AND <session> IN (sessions whose file tools named `path` or a tail of it)`.
pub(crate) fn push_file_filter<'a>(
    q: &mut Sql<'a>,
    backend: Backend,
    path: &'a str,
    session: &str,
) {
    let phrase = Query::Phrase {
        words: lexemes::words(path)
            .map(|(_, w)| w.to_lowercase())
            .collect(),
        prefix: false,
    };
    q.push(&format!(
        " AND {session} IN (SELECT ft.session_id FROM tool_uses ft WHERE "
    ));
    q.push_in("ft.name", file_tools().map(String::from));
    // A tail follows a separator: `/`, or `\` in a Windows path (`C:\src\app.py`), either
    // written either way (`src/app.py` finds it too).
    let slashed = path.replace('\\', "/");
    let tail = like_escape(slashed.trim_start_matches('/'));
    q.push(" AND (ft.target = ")
        .push_bind(path)
        .push(" OR replace(ft.target, '\\', '/') LIKE ")
        .push_bind(format!("%/{tail}"))
        .push(" ESCAPE '\\')");
    match backend {
        Backend::Sqlite => {
            // The calls' column of the tool index (migration 0034).
            q.push(" AND ft.id IN (SELECT rowid FROM tool_fts WHERE tool_fts MATCH ")
                .push_bind(format!("call : {}", phrase.fts5()))
                .push(")");
        }
        Backend::Postgres => {
            // A path of stop words only has no lexeme: the exact test alone decides.
            if let Some(t) = tsquery(&phrase) {
                q.push(" AND ft.call_vec @@ ")
                    .push_bind(t)
                    .push("::tsquery");
            }
        }
    }
    q.push(")");
}

impl Store {
    /// The files session `session_id` touched: most changed first, then most read, at most
    /// `limit`; and whether there are more.
    pub async fn touched_files(
        &self,
        session_id: &str,
        limit: u32,
    ) -> Result<(Vec<TouchedFile>, bool), StoreError> {
        let mut q = Sql::new(format!(
            "SELECT * FROM (SELECT target AS path, {}, {}, {} FROM tool_uses WHERE session_id = ",
            sum_of(READ_TOOLS, "reads"),
            sum_of(EDIT_TOOLS, "edits"),
            sum_of(WRITE_TOOLS, "writes"),
        ));
        q.push_bind(session_id)
            .push(" AND target IS NOT NULL AND ")
            .push_in("name", file_tools().map(String::from))
            .push(" GROUP BY target) t ORDER BY edits + writes DESC, reads DESC, path LIMIT ")
            .push_bind(i64::from(limit) + 1);
        let mut rows: Vec<TouchedFile> = self.fetch_all(&q.not_persistent()).await?;
        let more = rows.len() > limit as usize;
        rows.truncate(limit as usize);
        Ok((rows, more))
    }
}
