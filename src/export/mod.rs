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

use serde::Serialize;

pub use learnings::{learnings, Learning};
pub use markdown::markdown;

use crate::store::{
    EpisodeFilter, EpisodeListing, FeedbackFilter, FeedbackListing, SessionFilter, SessionListing,
    SnippetFilter, SnippetListing, Store, StoreError, SummaryListing,
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

/// Sessions fetched per round of listing queries.
const CHUNK: usize = 200;

/// Gather the export of every session `f` selects, newest activity first.
pub async fn collect(store: &Store, f: &ExportFilter) -> Result<Vec<SessionExport>, StoreError> {
    let mut sessions = store
        .list_sessions(&SessionFilter {
            project: f.project.clone(),
            since: f.since.clone(),
            until: f.until.clone(),
            status: None,
            session_ids: f.session_ids.clone(),
        })
        .await?;
    if let Some(n) = f.limit {
        sessions.truncate(n);
    }
    let mut out = Vec::with_capacity(sessions.len());
    for chunk in sessions.chunks(CHUNK) {
        let ids: Vec<String> = chunk.iter().map(|s| s.session_id.clone()).collect();
        let summaries = store.list_summaries(Some(&ids), None).await?;
        let feedback = store
            .list_feedback(&FeedbackFilter {
                session_ids: Some(ids.clone()),
                ..FeedbackFilter::default()
            })
            .await?;
        let episodes = store
            .list_episodes(&EpisodeFilter {
                session_ids: Some(ids.clone()),
                triage: None,
            })
            .await?;
        let mut snippets = store
            .list_snippets(&SnippetFilter {
                session_ids: Some(ids.clone()),
                limit: u32::MAX,
                ..SnippetFilter::default()
            })
            .await?
            .snippets;
        snippets.reverse();
        for s in chunk {
            let mine = |id: &str| id == s.session_id;
            out.push(SessionExport {
                session: s.clone(),
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
            });
        }
    }
    Ok(out)
}

/// Render `sessions` in `format` to `out`.
pub fn render(
    format: Format,
    sessions: &[SessionExport],
    out: &mut impl std::io::Write,
) -> std::io::Result<()> {
    match format {
        Format::Markdown => out.write_all(markdown(sessions).as_bytes()),
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, sessions)?;
            writeln!(out)
        }
        Format::Jsonl => {
            for s in sessions {
                serde_json::to_writer(&mut *out, s)?;
                writeln!(out)?;
            }
            Ok(())
        }
        Format::Learnings => {
            for l in sessions.iter().flat_map(learnings) {
                serde_json::to_writer(&mut *out, &l)?;
                writeln!(out)?;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests;
