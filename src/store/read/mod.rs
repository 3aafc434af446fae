//! The store's read side, one file per entity: what the query layer (`crate::query`) asks of
//! the database. Every listing takes a [`Page`](super::Page) and runs `LIMIT`/`OFFSET` over an
//! indexed order; aggregates are computed for the rows of the page only, so a call costs the
//! same on a store of a hundred sessions or of a hundred thousand.
//!
//! Session aggregates (files, sub-agents, tool calls, feedback, summaries, tokens, snippets,
//! episodes) are computed from their tables at query time rather than kept as counters: every
//! one of them is keyed so that re-reads and resumed-session copies count once, and a `COUNT`
//! over those keys is exact by construction.

pub(super) mod context;
pub(super) mod conversation;
pub(super) mod diagnostics;
pub(super) mod feedback;
pub(super) mod files;
pub(super) mod projects;
pub(super) mod sessions;
pub(super) mod stats;
pub(super) mod summaries;
pub(super) mod touched;
pub(super) mod usage;
mod titles;

use super::sql::{contains_pattern, Sql};
use super::{Page, Paged, StoreError};

/// ` AND (<a> LIKE pat OR <b> LIKE pat)`: the project filter of every listing (the session's
/// project folder or working directory contains the text).
pub(crate) fn push_project_filter(q: &mut Sql<'_>, project: &str, folder: &str, cwd: &str) {
    let pat = contains_pattern(project);
    q.push(&format!(" AND ({folder} LIKE "))
        .push_bind(pat.clone())
        .push(&format!(" ESCAPE '\\' OR {cwd} LIKE "))
        .push_bind(pat)
        .push(" ESCAPE '\\')");
}

/// Who and where (`--machine`, `--user`): the sessions a copy of whose transcripts a machine
/// holds, or a user of such a machine. Every listing, search and export takes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origin {
    /// Only sessions with a transcript on this machine (its `machine_id`).
    pub machine: Option<String>,
    /// Only sessions with a transcript on a machine of this user (its config `user`).
    pub user: Option<String>,
}

impl Origin {
    /// Neither is asked for.
    pub fn is_empty(&self) -> bool {
        self.machine.is_none() && self.user.is_none()
    }
}

/// ` AND EXISTS (...)`: the [`Origin`] filter for the session named by the SQL expression
/// `session`. One probe of `files_session_machine` per row.
pub(crate) fn push_origin_filter<'a>(q: &mut Sql<'a>, origin: &'a Origin, session: &str) {
    if origin.is_empty() {
        return;
    }
    q.push(&format!(
        " AND EXISTS (SELECT 1 FROM files o WHERE o.session_id = {session}"
    ));
    if let Some(m) = &origin.machine {
        q.push(" AND o.machine = ").push_bind(m.as_str());
    }
    if let Some(u) = &origin.user {
        q.push(" AND o.user_name = ").push_bind(u.as_str());
    }
    q.push(")");
}

/// How many rows the "every match" listings (exports, tests) fetch per statement.
const BATCH: u32 = 500;

/// Every row of a paged listing, fetched [`BATCH`] at a time (exports and tests: the cost is
/// that of the answer).
pub(in crate::store) async fn every_page<T, F, Fut>(mut fetch: F) -> Result<Vec<T>, StoreError>
where
    F: FnMut(Page) -> Fut,
    Fut: std::future::Future<Output = Result<Paged<T>, StoreError>>,
{
    let mut all = Vec::new();
    let mut page = Page {
        limit: BATCH,
        offset: 0,
    };
    loop {
        let p = fetch(page).await?;
        all.extend(p.items);
        match p.next_offset {
            Some(next) => page.offset = u32::try_from(next).unwrap_or(u32::MAX),
            None => return Ok(all),
        }
    }
}
