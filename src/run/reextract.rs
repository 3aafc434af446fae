//! `gleaner reextract`: a session's derived rows made again from its archived bytes with this
//! build's rules and the current configuration (issue 29).
//!
//! How: each of the session's archived files is written to a scratch copy; the store rewinds
//! the session with the others of its group (`Store::rewind_sessions`: their derived rows
//! removed, their files' checkpoints back to byte 0 of the same generation, one transaction);
//! the ordinary pump then reads the copies
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
use super::restore::{materialize, RestoreError, Shared};
use crate::config::Config;
use crate::store::{ArchiveFilter, Store, StoreError};

/// Held while a re-extraction runs (see [`reextract`]).
static RUNNING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// What a re-extraction did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
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

/// Derive `sessions` again, in groups of `at_once` (the command: [`AT_ONCE`]; the daemon's
/// background pass: one at a time, live ingest keeps the cores), until done, `budget` is spent
/// or `cancel` fires.
pub async fn reextract(
    cfg: &Arc<Config>,
    store: &Store,
    sessions: &[String],
    at_once: usize,
    budget: Option<Duration>,
    cancel: &CancellationToken,
) -> Result<ReextractReport, ReextractError> {
    // One re-extraction at a time in a process: the daemon's background pass and a request
    // over its socket (`gleaner reextract` while it runs) never rewind the same session twice.
    let _one = RUNNING.lock().await;
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
    // session, and the sessions in groups of `at_once`: a group is rewound in one transaction,
    // its files read concurrently (the writer commits them together), and recorded as current
    // in one more, while a reader prepares the next group's copies out of the archive (reads
    // only, one cache of blocks and dictionaries for all). A pipeline per session, each step waiting on the
    // one before, took five times the corpus's ingest; sessions written concurrently, each in
    // its own transactions, spent their time in SQLite's busy waits.
    let (pipeline, writer) = Pipeline::new(quiet.clone(), store.clone());
    let pipeline = Arc::new(pipeline);
    let writer = tokio::spawn(writer);
    let group = at_once.max(1);
    let (tx, mut rx) = tokio::sync::mpsc::channel(group);
    let reader = {
        let (store, scratch, ids, cancel) = (
            store.clone(),
            scratch.clone(),
            sessions.to_vec(),
            cancel.clone(),
        );
        tokio::spawn(async move {
            let mut shared = Shared::default();
            for id in ids {
                if cancel.is_cancelled() {
                    break;
                }
                let r = prepare(&store, &id, &scratch, &mut shared).await;
                if tx.send((id, r)).await.is_err() {
                    break;
                }
            }
        })
    };
    let mut result = Ok(());
    loop {
        if cancel.is_cancelled() || budget.is_some_and(|b| started.elapsed() > b) {
            break;
        }
        let mut ready = Vec::with_capacity(group);
        while ready.len() < group {
            match rx.recv().await {
                Some((_, Ok(Some(p)))) => ready.push(p),
                Some((id, Ok(None))) => report.skipped.push(id),
                Some((_, Err(e))) => {
                    result = Err(e);
                    break;
                }
                None => break,
            }
        }
        if ready.is_empty() || result.is_err() {
            remove_copies(ready.iter().flat_map(|p| &p.copies));
            break;
        }
        match apply(&pipeline, ready).await {
            Ok(done) => {
                report.sessions += done.sessions;
                report.files += done.files;
                report.bytes += done.bytes;
                report.skipped.extend(done.skipped);
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    drop(rx);
    let _ = reader.await;
    report.messages = pipeline
        .stats
        .messages
        .load(std::sync::atomic::Ordering::Relaxed);
    drop(pipeline);
    let _ = writer.await;
    let _ = std::fs::remove_dir_all(&scratch);
    result?;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Sessions `gleaner reextract` derives together (see [`reextract`]).
pub const AT_ONCE: usize = 16;

/// What a group's re-extraction did.
#[derive(Default)]
struct Done {
    sessions: u64,
    files: u64,
    bytes: u64,
    skipped: Vec<String>,
}

/// A session ready to be derived again: its file rows, their copies out of the archive.
struct Prepared {
    session_id: String,
    records: Vec<crate::store::FileRecord>,
    copies: Vec<(i64, PathBuf)>,
    /// It was finished, and why (it is finished again once read).
    finished: Option<String>,
    bytes: u64,
}

/// The copies of a session's files, read out of the archive (reads only); `None` when the
/// archive cannot give every file back whole (the session is left as it is).
async fn prepare(
    store: &Store,
    session_id: &str,
    scratch: &Path,
    shared: &mut Shared,
) -> Result<Option<Prepared>, ReextractError> {
    let filter = ArchiveFilter {
        session_ids: Some(vec![session_id.to_string()]),
        ..ArchiveFilter::default()
    };
    let archived = store.archived_files(&filter, ("", 0), 10_000).await?;
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
    let mut p = Prepared {
        session_id: session_id.to_string(),
        records,
        copies: Vec::with_capacity(archived.len()),
        finished: None,
        bytes: 0,
    };
    for f in &archived {
        let copy = scratch.join(format!("{}.jsonl", f.id));
        let written = materialize(store, f, shared, &copy).await;
        p.copies.push((f.id, copy));
        match written {
            Ok(Ok(n)) => p.bytes += n,
            Ok(Err(why)) => {
                tracing::warn!(
                    session_id,
                    file_id = f.id,
                    why,
                    "archive incomplete; left as it is"
                );
                remove_copies(&p.copies);
                return Ok(None);
            }
            Err(e) => {
                remove_copies(&p.copies);
                return Err(e.into());
            }
        }
    }
    p.finished = store
        .session(session_id)
        .await?
        .filter(|s| s.status == "finished")
        .map(|s| s.end_reason.unwrap_or_else(|| "reextract".into()));
    Ok(Some(p))
}

fn remove_copies<'a>(copies: impl IntoIterator<Item = &'a (i64, PathBuf)>) {
    for (_, copy) in copies {
        let _ = std::fs::remove_file(copy);
    }
}

/// Rewind a group of prepared sessions (one transaction), read their copies again
/// concurrently, finish the ones that were finished and record them as current (one more). A
/// session with a file that could not be read is left rewound (the next pass reads it again).
async fn apply(pipeline: &Arc<Pipeline>, group: Vec<Prepared>) -> Result<Done, ReextractError> {
    let store = &pipeline.store;
    let sessions: Vec<&str> = group.iter().map(|p| p.session_id.as_str()).collect();
    let ids: Vec<i64> = group
        .iter()
        .flat_map(|p| p.records.iter().map(|r| r.id))
        .collect();
    let rewound = store.rewind_sessions(&sessions, &ids).await;
    if let Err(e) = rewound {
        remove_copies(group.iter().flat_map(|p| &p.copies));
        return Err(e.into());
    }
    let mut reads = tokio::task::JoinSet::new();
    for (i, p) in group.iter().enumerate() {
        for r in &p.records {
            let copy = p
                .copies
                .iter()
                .find(|(id, _)| *id == r.id)
                .map(|(_, path)| path.clone());
            let (pipeline, r) = (pipeline.clone(), r.clone());
            reads.spawn(async move { (i, read_again(&pipeline, &r, copy).await) });
        }
    }
    let mut failed = vec![false; group.len()];
    let mut done = Done::default();
    while let Some(r) = reads.join_next().await {
        match r {
            Ok((i, ok)) => {
                failed[i] |= !ok;
                done.files += 1;
            }
            Err(join) => {
                tracing::error!(error = %join, "a re-read task failed");
                failed.iter_mut().for_each(|f| *f = true);
            }
        }
    }
    remove_copies(group.iter().flat_map(|p| &p.copies));
    let mut current = Vec::with_capacity(group.len());
    for (p, failed) in group.iter().zip(failed) {
        if failed {
            done.skipped.push(p.session_id.clone());
            continue;
        }
        if let Some(reason) = &p.finished {
            super::finish::finish_session(store, &p.session_id, reason).await?;
        }
        current.push(p.session_id.as_str());
        done.sessions += 1;
        done.bytes += p.bytes;
    }
    store.set_rules_current(&current).await?;
    Ok(done)
}

/// Read a rewound file's copy from byte 0 into its own file row; whether it was read whole.
async fn read_again(
    pipeline: &Pipeline,
    r: &crate::store::FileRecord,
    copy: Option<PathBuf>,
) -> bool {
    let cfg = &pipeline.cfg;
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
    let mut shared = super::tracked::Shared::new(cfg);
    let mut t = Tracked::from_record(&cfg.projects_dir, &mut shared, &rewound);
    t.source = copy;
    t.ctx.agent_meta_seen = true;
    if let (Some(copy), true) = (&t.source, r.mtime_ms > 0) {
        let when = std::time::UNIX_EPOCH + Duration::from_millis(r.mtime_ms as u64);
        if let Ok(f) = std::fs::File::options().write(true).open(copy) {
            let _ = f.set_modified(when);
        }
    }
    let end = pipeline.pump(&mut t, &CancellationToken::new()).await;
    if end != PumpEnd::Caught {
        tracing::warn!(session_id = ?r.session_id, file_id = r.id, ?end, "re-reading a file failed");
    }
    end == PumpEnd::Caught
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
