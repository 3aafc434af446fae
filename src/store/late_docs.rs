//! SQLite: the search documents of summaries, feedback and snippets, written by the code that
//! inserts their rows, after the last statement of its transaction that opens a savepoint.
//!
//! Why not triggers, as before (migration 0035 drops them): a statement that needs a statement
//! journal (a multi-row `INSERT`, one with triggers or `RETURNING`) opens a savepoint, and FTS5
//! writes the terms it holds in memory to a new segment at every savepoint. Indexed by their
//! insert triggers, each statement's documents were flushed by the next statement: 495
//! segments for the 21 groups of the 520 MB bench tree, 47 without those triggers, and the
//! writer x0.82 (docs/benchmarks.md, issue 49). Written last, with single-row statements (which
//! open none), each index's terms reach disk once, at the commit.
//!
//! Architecture Invariant: every insert of a summary, a feedback or a snippet row on SQLite
//! goes with a [`LateDocs`] that is written before its transaction commits; updates and
//! deletes are still indexed by triggers (`snippets_fts_update`, the `*_delete` ones).

use super::sql::{Conn, Sql};
use super::StoreError;
use crate::extract::lexemes;

/// One search document of a summary, a feedback or a snippet row.
pub(super) struct KindDoc {
    /// `summary`, `feedback` or `snippet`.
    pub kind: &'static str,
    /// The row's id.
    pub ref_id: i64,
    /// Session, time, file and line of the document (`search_docs`).
    pub session_id: String,
    pub ts: Option<String>,
    pub file_id: Option<i64>,
    pub line_no: Option<i64>,
    /// The text searched.
    pub body: String,
    /// A snippet's title and content, for its own index (`snippets_fts`).
    pub snippet: Option<(String, String)>,
}

/// Documents waiting for the end of their transaction (see the module docs).
#[derive(Default)]
pub(super) struct LateDocs {
    pub kinds: Vec<KindDoc>,
}

impl LateDocs {
    /// Write them (nothing on PostgreSQL, whose rows carry their vectors). Their ids follow the
    /// largest in `search_docs`, read now.
    pub async fn write(self, c: &mut Conn<'_>) -> Result<(), StoreError> {
        if self.kinds.is_empty() {
            return Ok(());
        }
        let mut next_id = c
            .fetch_i64(&Sql::new("SELECT COALESCE(MAX(id), 0) FROM search_docs"))
            .await?;
        for d in self.kinds {
            next_id += 1;
            let doc = Sql::new(
                "INSERT INTO search_docs (id, kind, session_id, ts, file_id, line_no, ref_id) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .arg(next_id)
            .arg(d.kind)
            .arg(d.session_id.as_str())
            .arg(d.ts.as_deref())
            .arg(d.file_id)
            .arg(d.line_no)
            .arg(d.ref_id);
            c.execute(&doc).await?;
            let body = lexemes::fts_text(&d.body);
            let fts = Sql::new("INSERT INTO search_fts (rowid, body) VALUES ($1, $2)")
                .arg(next_id)
                .arg(body.as_ref());
            c.execute(&fts).await?;
            if let Some((title, content)) = &d.snippet {
                let own = Sql::new(
                    "INSERT INTO snippets_fts (rowid, title, content) VALUES ($1, $2, $3)",
                )
                .arg(d.ref_id)
                .arg(title.as_str())
                .arg(content.as_str());
                c.execute(&own).await?;
            }
        }
        Ok(())
    }
}
