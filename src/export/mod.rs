//! Export: what Gleaner kept about some sessions, for people (`md`), for tools (`json`, `jsonl`)
//! and for learning stores (`learnings`).
//!
//! A front door like `mcp`: it reads the store's listings and renders them; it writes nothing
//! to the database. [`collect`] gathers one [`SessionExport`] per session (its row, summaries,
//! feedback, episodes with their turn labels, snippets); the renderers are pure functions of
//! that, so the CLI, the MCP server and the tests share them.
//!
//! Why `learnings` takes only non-routine snippets: a learning store wants what was learned
//! (a failure and its fix, a correction, a decision); a lesson noted in passing during routine
//! work is kept in Gleaner and in `json`, but is not pushed on other tools.

mod learnings;
mod markdown;
pub mod session;

use serde::Serialize;

pub use learnings::{is_learning, learning, learnings, Learning};
pub use markdown::markdown;

use crate::store::{
    EpisodeFilter, EpisodeListing, FeedbackFilter, FeedbackListing, Origin, Page, SessionCursor,
    SessionFilter, SessionListing, SnippetFilter, SnippetListing, Store, StoreError, SummaryFilter,
    SummaryListing,
};

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Markdown for people.
    Markdown,
    /// One JSON array of sessions.
    Json,
    /// One JSON object per session per line.
    Jsonl,
    /// One learning per line (`{observation, generalization, project, type, tags}`).
    Learnings,
}

/// Which sessions to export (all filters ANDed).
#[derive(Debug, Clone, Default)]
pub struct ExportFilter {
    /// Only these sessions.
    pub session_ids: Option<Vec<String>>,
    /// Project folder or working directory containing this text.
    pub project: Option<String>,
    /// Who and where: sessions held by this machine or user.
    pub origin: Origin,
    /// Sessions active at or after this ISO-8601 time.
    pub since: Option<String>,
    /// Sessions started before this ISO-8601 time.
    pub until: Option<String>,
    /// Most sessions (newest activity first); `None` for all.
    pub limit: Option<usize>,
}

/// Everything kept about one session.
#[derive(Debug, Clone, Serialize)]
pub struct SessionExport {
    /// The session row and its aggregates.
    pub session: SessionListing,
    /// Its summaries, oldest first.
    pub summaries: Vec<SummaryListing>,
    /// The user's feedback, oldest first.
    pub feedback: Vec<FeedbackListing>,
    /// Its episodes in order, each with its turn labels.
    pub episodes: Vec<EpisodeListing>,
    /// Its snippets, oldest first.
    pub snippets: Vec<SnippetListing>,
}

/// Sessions fetched per round of listing queries: what an export holds in memory at once.
const CHUNK: u32 = 100;

/// Export every session `f` selects, newest activity first, handing each to `sink` as soon as
/// its rows are read: memory holds one chunk of sessions, whatever the size of the export.
/// Returns how many sessions were exported.
pub async fn stream<E>(
    store: &Store,
    f: &ExportFilter,
    mut sink: impl FnMut(SessionExport) -> Result<(), E>,
) -> Result<u64, E>
where
    E: From<StoreError>,
{
    let mut filter = SessionFilter {
        project: f.project.clone(),
        origin: f.origin.clone(),
        since: f.since.clone(),
        until: f.until.clone(),
        session_ids: f.session_ids.clone(),
        ..SessionFilter::default()
    };
    let mut done = 0u64;
    loop {
        let left = f.limit.map(|n| n.saturating_sub(done as usize));
        if left == Some(0) {
            return Ok(done);
        }
        let page = Page {
            limit: left.map_or(CHUNK, |n| CHUNK.min(u32::try_from(n).unwrap_or(CHUNK))),
            offset: 0,
        };
        // Keyset paging: each chunk starts after the last session of the one before, so the
        // last chunk of a large export costs what the first did.
        let sessions = store.sessions(&filter, page).await?;
        filter.after = sessions.items.last().map(SessionCursor::after);
        let more = sessions.has_more;
        let ids: Vec<String> = sessions
            .items
            .iter()
            .map(|s| s.session_id.clone())
            .collect();
        if ids.is_empty() {
            return Ok(done);
        }
        let only = Some(ids.clone());
        let summaries = store
            .list_summaries(&SummaryFilter {
                session_ids: only.clone(),
                oldest_first: true,
                ..SummaryFilter::default()
            })
            .await?;
        let feedback = store
            .list_feedback(&FeedbackFilter {
                session_ids: only.clone(),
                oldest_first: true,
                ..FeedbackFilter::default()
            })
            .await?;
        let mut episodes = store
            .list_episodes(&EpisodeFilter {
                session_ids: only.clone(),
                ..EpisodeFilter::default()
            })
            .await?;
        episodes.reverse();
        let mut snippets = store
            .list_snippets(&SnippetFilter {
                session_ids: only,
                limit: u32::MAX,
                ..SnippetFilter::default()
            })
            .await?
            .snippets;
        snippets.reverse();
        for s in sessions.items {
            let mine = |id: &str| id == s.session_id;
            let export = SessionExport {
                summaries: summaries
                    .iter()
                    .filter(|x| mine(&x.session_id))
                    .cloned()
                    .collect(),
                feedback: feedback
                    .iter()
                    .filter(|x| mine(&x.session_id))
                    .cloned()
                    .collect(),
                episodes: episodes
                    .iter()
                    .filter(|x| mine(&x.session_id))
                    .cloned()
                    .collect(),
                snippets: snippets
                    .iter()
                    .filter(|x| mine(&x.session_id))
                    .cloned()
                    .collect(),
                session: s,
            };
            sink(export)?;
            done += 1;
        }
        if !more {
            return Ok(done);
        }
    }
}

/// Gather the export of every session `f` selects, newest activity first (tests and small
/// selections; [`stream`] for the rest).
pub async fn collect(store: &Store, f: &ExportFilter) -> Result<Vec<SessionExport>, StoreError> {
    let mut out = Vec::new();
    stream(store, f, |s| {
        out.push(s);
        Ok::<(), StoreError>(())
    })
    .await?;
    Ok(out)
}

/// Writes sessions in one format as they come: what comes before, between and after them.
pub struct Renderer {
    format: Format,
    written: u64,
}

impl Renderer {
    /// A renderer of `format` that has written nothing yet.
    pub fn new(format: Format) -> Renderer {
        Renderer { format, written: 0 }
    }

    /// Write one session.
    pub fn session(
        &mut self,
        s: &SessionExport,
        out: &mut impl std::io::Write,
    ) -> std::io::Result<()> {
        let first = self.written == 0;
        self.written += 1;
        match self.format {
            Format::Markdown => {
                if !first {
                    out.write_all(b"\n---\n\n")?;
                }
                out.write_all(markdown::session_text(s).as_bytes())
            }
            Format::Json => {
                out.write_all(if first { b"[\n" } else { b",\n" })?;
                serde_json::to_writer_pretty(&mut *out, s)?;
                Ok(())
            }
            Format::Jsonl => {
                serde_json::to_writer(&mut *out, s)?;
                writeln!(out)
            }
            Format::Learnings => {
                for l in learnings(s) {
                    serde_json::to_writer(&mut *out, &l)?;
                    writeln!(out)?;
                }
                Ok(())
            }
        }
    }

    /// Close the output (the JSON array's end; a Markdown note when nothing matched).
    pub fn finish(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        match (self.format, self.written) {
            (Format::Json, 0) => writeln!(out, "[]"),
            (Format::Json, _) => writeln!(out, "\n]"),
            (Format::Markdown, 0) => out.write_all(b"_No session matched._\n"),
            _ => Ok(()),
        }
    }
}

/// Render `sessions` in `format` to `out`.
pub fn render(
    format: Format,
    sessions: &[SessionExport],
    out: &mut impl std::io::Write,
) -> std::io::Result<()> {
    let mut r = Renderer::new(format);
    for s in sessions {
        r.session(s, out)?;
    }
    r.finish(out)
}

#[cfg(test)]
mod tests;
