//! Gathering a session's export: its overview, all its episodes, and each transcript's bytes
//! (the main one and every sub-agent's), from the files where this machine holds them, else
//! from the archive (so a session Claude Code deleted still exports whole).

use std::collections::HashMap;
use std::io::Read;

use super::{Agent, SessionSource};
use crate::query::overview::session_overview;
use crate::query::store::{EpisodeFilter, Page, Store, TimelineFile};
use crate::query::transcript::{self, Transcript};
use crate::query::{transcript_copy, unreadable_copy, Error};

/// Why a session cannot be exported.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The query layer or the store failed.
    #[error(transparent)]
    Query(#[from] Error),
    /// A transcript is neither on disk here nor archived.
    #[error("{0}")]
    Unreadable(String),
    /// Reading a transcript failed.
    #[error("reading {path}: {error}")]
    Read {
        /// The transcript.
        path: String,
        /// Why.
        error: String,
    },
}

/// The bytes of `file` (blocking reads, off the runtime).
async fn bytes_of(
    store: &Store,
    file: &TimelineFile,
    machine: &str,
) -> Result<Vec<u8>, SourceError> {
    let t = transcript::open(store, file, machine)
        .await
        .map_err(Error::from)?
        .ok_or_else(|| SourceError::Unreadable(unreadable_copy(file, machine)))?;
    let path = t.path().display().to_string();
    let read = crate::run::blocking(move || -> std::io::Result<Vec<u8>> {
        match t {
            Transcript::Disk(p) => std::fs::read(p),
            Transcript::Archived { mut reader, .. } => {
                let mut v = Vec::new();
                reader.read_to_end(&mut v)?;
                Ok(v)
            }
        }
    })
    .await
    .map_err(|e| SourceError::Read {
        path: path.clone(),
        error: e.to_string(),
    })?;
    read.map_err(|e| SourceError::Read {
        path,
        error: e.to_string(),
    })
}

/// Session `id` (a full id) as an export reads it, or `None` when there is no such session.
/// A sub-agent whose transcript cannot be read is left out (its call still shows); the main
/// transcript must be readable.
pub async fn gather(
    store: &Store,
    id: &str,
    machine: &str,
) -> Result<Option<SessionSource>, SourceError> {
    let Some(o) = session_overview(store, id)
        .await
        .map_err(SourceError::Query)?
    else {
        return Ok(None);
    };
    let episodes = store
        .episodes(
            &EpisodeFilter {
                session_ids: Some(vec![id.to_string()]),
                ..EpisodeFilter::default()
            },
            Page {
                limit: 100_000,
                offset: 0,
            },
        )
        .await
        .map_err(Error::from)?;
    let mut episodes = episodes.items;
    episodes.reverse();
    let files = store.session_files(id).await.map_err(Error::from)?;
    let main = match transcript_copy(&files, machine, None) {
        Some(f) => bytes_of(store, f, machine).await?,
        None => Vec::new(),
    };
    let mut agents = HashMap::new();
    let mut ids: Vec<&str> = files.iter().filter_map(|f| f.agent_id.as_deref()).collect();
    ids.sort_unstable();
    ids.dedup();
    for a in ids {
        let Some(f) = transcript_copy(&files, machine, Some(a)) else {
            continue;
        };
        match bytes_of(store, f, machine).await {
            Ok(bytes) => {
                agents.insert(
                    a.to_string(),
                    Agent {
                        agent_type: f.agent_type.clone(),
                        description: f.agent_description.clone(),
                        bytes,
                    },
                );
            }
            Err(e) => {
                tracing::warn!(agent = a, error = %e, "sub-agent transcript left out of the export")
            }
        }
    }
    Ok(Some(SessionSource {
        session: o.session,
        resume: o.resume,
        episodes,
        files: o.files,
        main,
        agents,
    }))
}
