//! What a pump does with the outcome of a step: a committed batch moves the file's state on; a
//! failed one is sorted (the checkpoint moved, the writer stopped, the database is down, or
//! the database refused this batch's data) and counted, logged and recorded accordingly.

use std::sync::atomic::Ordering;

use super::{Pipeline, PumpEnd, Sent, Tracked};
use crate::store::{CommitStats, StoreError};
use crate::tail::TailError;

impl Pipeline {
    pub(super) fn committed(&self, t: &mut Tracked, b: &Sent, s: CommitStats) {
        t.expected = (b.checkpoint.generation, b.checkpoint.offset);
        t.stored = Some(b.checkpoint.clone());
        t.gone = false;
        self.stats.bytes.fetch_add(b.bytes, Ordering::Relaxed);
        self.stats.lines.fetch_add(b.lines, Ordering::Relaxed);
        self.stats.messages.fetch_add(s.messages, Ordering::Relaxed);
        self.stats
            .diagnostics
            .fetch_add(s.diagnostics, Ordering::Relaxed);
        self.stats.batches.fetch_add(1, Ordering::Relaxed);
        self.health.store_ok();
        self.health.add_bytes(b.bytes);
        tracing::trace!(
            path = %t.path().display(),
            offset = b.checkpoint.offset,
            messages = s.messages,
            "committed"
        );
    }

    pub(super) async fn commit_failed(
        &self,
        t: &mut Tracked,
        sent: &Sent,
        e: StoreError,
    ) -> PumpEnd {
        // The tailer ran ahead of the database; restart from what the database holds.
        t.tailer = None;
        match e {
            StoreError::CheckpointMoved { .. } => {
                self.stats.errors.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(path = %t.path().display(), error = %e, "reloading checkpoint");
                self.reload_checkpoint(t).await;
                PumpEnd::Failed
            }
            // Shutdown: the batch was not written and is read again at the next start.
            StoreError::WriterGone => PumpEnd::Cancelled,
            e if e.is_transient() => self.store_down(t, "commit", &e),
            // This batch's data: the file's problem, not the database's. Recorded, retried
            // later (the rule may be fixed by an upgrade); every other file goes on.
            e => self.batch_refused(t, sent, &e).await,
        }
    }

    /// A batch the database refused for its data: count it, log it (once a minute per file),
    /// record it as the file's diagnostic (redacted: a driver's message can quote a value).
    pub(super) async fn batch_refused(&self, t: &Tracked, sent: &Sent, e: &StoreError) -> PumpEnd {
        self.stats.errors.fetch_add(1, Ordering::Relaxed);
        let mut counts = std::collections::BTreeMap::new();
        let message = self
            .cfg
            .redactor
            .redact(&e.to_string(), &mut counts)
            .into_owned();
        let first_line = sent.checkpoint.lines.saturating_sub(sent.lines) + 1;
        let start = sent.checkpoint.offset.saturating_sub(sent.bytes);
        if let Some(repeated) =
            crate::metrics::should_log(&format!("refused:{}", t.path().display()))
        {
            tracing::warn!(
                path = %t.path().display(),
                line = first_line,
                error = %message,
                repeated,
                "the database refused a batch of this file; it is retried later"
            );
        }
        self.health.record_error("commit", &message);
        let recorded = self
            .store
            .record_batch_failure(
                t.ctx.file_id,
                sent.checkpoint.generation,
                (first_line, start, sent.bytes),
                &message,
            )
            .await;
        if let Err(err) = recorded {
            tracing::debug!(error = %err, "cannot record the refused batch");
        }
        PumpEnd::Failed
    }

    /// The database refused a write or a read the pump needs: count it exactly, log it at
    /// most once a minute, and pause every pump (see [`Health`]).
    pub(super) fn store_down(&self, t: &Tracked, what: &str, e: &StoreError) -> PumpEnd {
        self.stats.errors.fetch_add(1, Ordering::Relaxed);
        let message = e.to_string();
        if let Some(repeated) = crate::metrics::should_log(&format!("store:{what}")) {
            tracing::error!(path = %t.path().display(), error = %message, repeated, "{what} failed");
        }
        self.health.store_failed(&message);
        PumpEnd::StoreDown
    }

    /// Take the file's checkpoint from the database again (after it moved under us, or after
    /// a commit whose outcome is unknown).
    pub(super) async fn reload_checkpoint(&self, t: &mut Tracked) {
        match self.store.files_of(&self.cfg.machine_id).await {
            Ok(files) => match files.iter().find(|r| r.id == t.ctx.file_id) {
                Some(r) => {
                    t.stored = r.checkpoint();
                    t.expected = (r.generation, r.byte_offset as u64);
                }
                // Its row is gone (a registration the database did not keep): nothing to
                // reload; said, since every batch of the file is then refused.
                None => {
                    if let Some(repeated) =
                        crate::metrics::should_log(&format!("unregistered:{}", t.ctx.file_id))
                    {
                        tracing::error!(path = %t.path().display(), file_id = t.ctx.file_id, repeated, "the file's row is missing from the database");
                    }
                }
            },
            Err(e) => {
                tracing::warn!(path = %t.path().display(), error = %e, "cannot reload the checkpoint; retried with the next batch");
            }
        }
    }

    pub(super) async fn read_failed(&self, t: &mut Tracked, e: TailError) -> PumpEnd {
        t.tailer = None;
        if let TailError::Gone { .. } = e {
            if !t.gone {
                if let Err(err) = self.writer.mark_gone(t.ctx.file_id).await {
                    return self.store_down(t, "mark file gone", &err);
                }
                tracing::info!(path = %t.path().display(), "file gone; rows kept");
                t.gone = true;
            }
            return PumpEnd::Gone;
        }
        self.stats.errors.fetch_add(1, Ordering::Relaxed);
        let message = e.to_string();
        if let Some(repeated) = crate::metrics::should_log(&format!("read:{}", t.path().display()))
        {
            tracing::warn!(path = %t.path().display(), error = %message, repeated, "read failed");
        }
        self.health.record_error("read", &message);
        PumpEnd::Failed
    }
}
