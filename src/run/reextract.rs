//! `gleaner reextract`: a session's derived rows made again from its archived bytes with this
//! build's rules and the current configuration (issue 29).
//!
//! How: each of the session's archived files is written to a scratch copy; the store rewinds
//! the session (`Store::rewind_session`: its derived rows removed, its files' checkpoints back
//! to byte 0 of the same generation, one transaction); the ordinary pump then reads the copies
//! as a first read would, into the same file rows (nothing is archived again: the archive
//! already holds these bytes); a session that was finished is finished again, its last episode
//! closed. Hand-made snippets stay. The copies take each file's stored modification time, so
//! the idle rule decides as it did.
//!
//! An interrupted re-extraction leaves the session rewound: `gleaner reextract` (or the
//! daemon's next pass, the session still being on older rules) reads it again; the daemon also
//! re-reads a rewound file that is still on disk on its own.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::pump::{Pipeline, PumpEnd, Tracked};
use super::restore::{materialize, Dicts, RestoreError};
use crate::config::Config;
use crate::store::{ArchiveFilter, Store, StoreError};

/// What a re-extraction did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ReextractReport {
    /// Sessions derived again.
    pub sessions: u64,
    /// Their files.
    pub files: u64,
    /// Transcript bytes read again.
    pub bytes: u64,
    /// Message rows written.
    pub messages: u64,
    /// Sessions left as they were (an incomplete archive, a file that could not be read).
    pub skipped: Vec<String>,
    /// Wall time.
    pub seconds: f64,
}

/// Why a re-extraction stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReextractError {
    /// The database.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Writing or reading a scratch copy.
    #[error(transparent)]
    Restore(#[from] RestoreError),
    /// The scratch folder.
    #[error("cannot use {}: {source}", .path.display())]
    Scratch {
        /// The folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Derive `sessions` again, `at_once` at a time (the command: [`AT_ONCE`]; the daemon's
/// background pass: one, live ingest keeps the cores), until done, `budget` is spent or
/// `cancel` fires.
pub async fn reextract(
    cfg: &Arc<Config>,
    store: &Store,
    sessions: &[String],
    at_once: usize,
    budget: Option<Duration>,
    cancel: &CancellationToken,
) -> Result<ReextractReport, ReextractError> {
    let started = Instant::now();
    let scratch = cfg.data_dir.join("reextract");
    std::fs::create_dir_all(&scratch).map_err(|source| ReextractError::Scratch {
        path: scratch.clone(),
        source,
    })?;
    // The copies are read as they are: the archive already holds these bytes.
    let mut quiet = (**cfg).clone();
    quiet.archive.enabled = false;
    let quiet = Arc::new(quiet);
    let mut report = ReextractReport::default();
    // One pipeline (one writer, one connection, the summary leaves loaded once) for every
    // session, and a few sessions at a time: a pump returns once its batches are committed, so
    // each session is whole in the database before it counts as done, and the writer groups
    // the batches of the sessions in flight into one transaction. (A pipeline per session,
    // one session at a time, took five times the corpus's ingest: every step waited on the
    // one before.)
    let (pipeline, writer) = Pipeline::new(quiet.clone(), store.clone());
    let pipeline = Arc::new(pipeline);
    let writer = tokio::spawn(writer);
    let mut result = Ok(());
    let mut running = tokio::task::JoinSet::new();
    let mut next = sessions.iter();
    loop {
        let stop = cancel.is_cancelled() || budget.is_some_and(|b| started.elapsed() > b);
        while !stop && result.is_ok() && running.len() < at_once.max(1) {
            let Some(id) = next.next() else { break };
            let (p, id, scratch) = (pipeline.clone(), id.clone(), scratch.clone());
            running.spawn(async move {
                let r = one(&p, &id, &scratch).await;
                (id, r)
            });
        }
        let Some(done) = running.join_next().await else {
            break;
        };
        match done {
            Ok((_, Ok(Some(d)))) => {
                report.sessions += 1;
                report.files += d.files;
                report.bytes += d.bytes;
            }
            Ok((id, Ok(None))) => report.skipped.push(id),
            Ok((_, Err(e))) => result = Err(e),
            Err(join) => tracing::error!(error = %join, "a re-extraction task failed"),
        }
    }
    report.messages = pipeline
        .stats
        .messages
        .load(std::sync::atomic::Ordering::Relaxed);
    drop(pipeline);
    let _ = writer.await;
    let _ = std::fs::remove_dir_all(&scratch);
    report.skipped.sort();
    result?;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Sessions `gleaner reextract` derives at once: on the corpus (2 cores, debug build) 4 at a
/// time took 2.7 s against 3.4 s one at a time (the reading, the rewinding and the copies
/// overlap; the CPU is then the limit).
pub const AT_ONCE: usize = 4;

/// What one session's re-extraction read.
struct Done {
    files: u64,
    bytes: u64,
}

/// One session; `None` when it was left as it was.
async fn one(
    pipeline: &Pipeline,
    session_id: &str,
    scratch: &Path,
) -> Result<Option<Done>, ReextractError> {
    let mut report = Done { files: 0, bytes: 0 };
    let (cfg, store) = (&pipeline.cfg, &pipeline.store);
    let filter = ArchiveFilter {
        session_ids: Some(vec![session_id.to_string()]),
        ..ArchiveFilter::default()
    };
    let archived = store.archived_files(&filter, 0, 10_000).await?;
    let records = store.files_of_session(session_id).await?;
    // Every file of the session must come from the archive: one that does not would lose its
    // rows.
    if archived.is_empty() || archived.len() != records.len() {
        tracing::warn!(
            session_id,
            "not every file of the session is archived; left as it is"
        );
        return Ok(None);
    }
    let mut dicts = Dicts::default();
    let mut copies = Vec::with_capacity(archived.len());
    for f in &archived {
        let copy = scratch.join(format!("{}.jsonl", f.id));
        match materialize(store, f, &mut dicts, &copy).await? {
            Ok(n) => report.bytes += n,
            Err(why) => {
                tracing::warn!(
                    session_id,
                    file_id = f.id,
                    why,
                    "archive incomplete; left as it is"
                );
                return Ok(None);
            }
        }
        copies.push((f.id, copy));
    }
    let finished = store
        .session(session_id)
        .await?
        .filter(|s| s.status == "finished")
        .map(|s| s.end_reason.unwrap_or_else(|| "reextract".into()));
    let ids: Vec<i64> = records.iter().map(|r| r.id).collect();
    store.rewind_session(session_id, &ids).await?;
    let cancel = CancellationToken::new();
    let mut ok = true;
    for r in &records {
        // The rewound row: its checkpoint at byte 0 of its generation.
        let rewound = crate::store::FileRecord {
            byte_offset: 0,
            lines: 0,
            head_len: 0,
            head_hash: 0,
            tail_len: 0,
            tail_hash: 0,
            // Any identity: the copy is another file; a zero one reads as "never seen".
            inode: r.inode.max(1),
            ..r.clone()
        };
        let mut t = Tracked::from_record(&cfg.projects_dir, cfg, &rewound);
        t.source = copies
            .iter()
            .find(|(id, _)| *id == r.id)
            .map(|(_, p)| p.clone());
        t.ctx.agent_meta_seen = true;
        if let (Some(copy), true) = (&t.source, r.mtime_ms > 0) {
            let when = std::time::UNIX_EPOCH + Duration::from_millis(r.mtime_ms as u64);
            if let Ok(f) = std::fs::File::options().write(true).open(copy) {
                let _ = f.set_modified(when);
            }
        }
        let end = pipeline.pump(&mut t, &cancel).await;
        if end != PumpEnd::Caught {
            tracing::warn!(session_id, file_id = r.id, ?end, "re-reading a file failed");
            ok = false;
        }
        report.files += 1;
    }
    for (_, copy) in &copies {
        let _ = std::fs::remove_file(copy);
    }
    if !ok {
        // Left rewound: the next pass reads it again.
        return Ok(None);
    }
    if let Some(reason) = finished {
        super::finish::finish_session(store, session_id, &reason).await?;
    }
    store.set_rules_current(session_id).await?;
    Ok(Some(report))
}

/// The daemon's background re-extraction of finished sessions on older rules: a pass of at
/// most a few seconds every `interval` (live ingest keeps priority: the pass runs between its
/// batches, its reading at low priority like every read).
///
/// A session the archive cannot give back whole (read before the archive existed, then resumed:
/// its chunks start past byte 0) is left as it is and not tried again while the daemon runs.
pub async fn worker(cfg: Arc<Config>, store: Store, interval: Duration, cancel: CancellationToken) {
    const PASS: Duration = Duration::from_secs(5);
    let mut skipped = std::collections::HashSet::new();
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(interval) => {}
        }
        let started = Instant::now();
        let mut after = String::new();
        while started.elapsed() < PASS && !cancel.is_cancelled() {
            let ids = match store.sessions_on_older_rules(&after, 20, true).await {
                Ok(ids) => ids,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot list sessions on older rules");
                    break;
                }
            };
            let Some(last) = ids.last() else { break };
            after = last.clone();
            let todo: Vec<String> = ids.into_iter().filter(|i| !skipped.contains(i)).collect();
            if todo.is_empty() {
                continue;
            }
            let left = PASS.saturating_sub(started.elapsed());
            match reextract(&cfg, &store, &todo, 1, Some(left), &cancel).await {
                Ok(r) => {
                    if r.sessions > 0 {
                        tracing::info!(
                            sessions = r.sessions,
                            skipped = r.skipped.len(),
                            "sessions on older rules derived again"
                        );
                    }
                    skipped.extend(r.skipped);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "re-extraction failed; retrying later");
                    break;
                }
            }
        }
    }
}
