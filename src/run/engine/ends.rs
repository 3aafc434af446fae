//! Session ends (`gleaner hook session-end`, through the socket): the session's files are
//! pumped first, then the session is marked finished and the hook answered.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use tokio::sync::oneshot;

use super::super::finish::finish_session;
use super::{Engine, Slot};
use crate::tail::discovery;

/// A session-end request waiting for its files to be pumped.
pub(super) struct PendingEnd {
    session_id: String,
    paths: Vec<PathBuf>,
    reply: oneshot::Sender<bool>,
}

impl Engine {
    /// Queue every file of a session (known ones, the reported transcript and its sub-agent
    /// folder) and remember to finish the session once they are pumped.
    pub(super) fn session_end(
        &mut self,
        session_id: String,
        transcript: Option<PathBuf>,
        reply: oneshot::Sender<bool>,
    ) {
        let mut paths: Vec<PathBuf> = self
            .slots
            .iter()
            .filter(|(_, slot)| match slot {
                Slot::Idle(t) => t.ctx.session_id.as_deref() == Some(session_id.as_str()),
                // Unknown session while busy: wait for it too, it is re-pumped anyway.
                Slot::Busy { .. } => true,
            })
            .map(|(p, _)| p.to_path_buf())
            .collect();
        if let Some(t) = transcript.filter(|t| discovery::is_transcript(t)) {
            // `<session>.jsonl` has its sub-agents in `<session>/subagents/`.
            let dir = t.with_extension("");
            if dir.is_dir() {
                for p in discovery::scan(&dir) {
                    paths.push(p);
                }
            }
            paths.push(t);
        }
        paths.sort();
        paths.dedup();
        for p in &paths {
            self.ending.insert(p.clone());
            self.mark(p);
        }
        self.pending_ends.push(PendingEnd {
            session_id,
            paths,
            reply,
        });
    }

    /// Whether `p` still has work queued or running.
    pub(super) fn in_flight(&self, p: &Path) -> bool {
        self.queued.contains(p)
            || self.unregistered.contains(p)
            || matches!(self.slots.get(p), Some(Slot::Busy { .. }))
    }

    /// Finish the sessions whose end was reported and whose files are all pumped.
    pub(super) async fn settle_session_ends(&mut self) {
        let pending = std::mem::take(&mut self.pending_ends);
        let (ready, waiting): (Vec<PendingEnd>, Vec<PendingEnd>) = pending
            .into_iter()
            .partition(|e| !e.paths.iter().any(|p| self.in_flight(p)));
        self.pending_ends = waiting;
        for e in ready {
            let finished = match finish_session(&self.pipeline.store, &e.session_id, "hook").await {
                Ok(f) => f,
                Err(err) => {
                    tracing::error!(session = %e.session_id, error = %err, "cannot finish session");
                    self.pipeline.stats.errors.fetch_add(1, Ordering::Relaxed);
                    self.pipeline
                        .health
                        .record_error("finish session", &err.to_string());
                    false
                }
            };
            tracing::info!(session = %e.session_id, finished, "session ended by hook");
            let _ = e.reply.send(finished);
        }
    }
}
