//! The single writer: group commit of prepared batches.
//!
//! File pumps send [`PreparedBatch`]es here and wait for the outcome. The writer takes whatever
//! has queued up while the previous transaction ran (up to [`GROUP_ROWS`] rows or
//! [`GROUP_BATCHES`] batches) and commits it as one transaction through
//! [`Store::commit_group`]. A lone line appended to an idle file is committed alone and at once;
//! a backfill of thousands of small files shares transactions. One writer also means SQLite never
//! sees two writers contending for its lock.
//!
//! The writer is a future, not a task: the shell (`run`) spawns it as a named worker and awaits
//! it at shutdown. It ends once every [`Writer`] handle is dropped and the queue is drained.

use tokio::sync::{mpsc, oneshot};

use crate::extract::rows::PreparedBatch;
use crate::store::{CommitStats, Store, StoreError, WriterConn};

/// Most message rows in one group transaction.
pub const GROUP_ROWS: usize = 20_000;
/// Most batches (files) in one group transaction.
pub const GROUP_BATCHES: usize = 128;
/// Where the writer hands the batches it has committed, to be freed off its thread (see
/// [`Writer::new`]).
pub type Spent = std::sync::mpsc::Sender<Vec<PreparedBatch>>;

/// How long a group in a burst waits for more batches, at most...
const GROUP_LINGER: std::time::Duration = std::time::Duration::from_millis(20);
/// ...and at most this long after the last one came: when none comes for that long, the
/// readers are busy with their next batches and would keep the writer (ingest's critical path)
/// idle. The writer's cost per row falls with the group's size (bench tree, one thread: 159
/// groups 2.23 s, 40 groups 1.72 s, 10 groups 1.57 s: fewer commits, each index page and FTS
/// segment written once per group), so a burst waits a little for its group to fill: 20 / 5 ms
/// measured best back to back against 5 / 1 ms (which made groups of ~1,200 rows) and
/// 50 / 10 ms. A lone append to an idle file never waits.
const GROUP_GAP: std::time::Duration = std::time::Duration::from_millis(5);
/// An idle writer keeps its connection this long (the daemon gives memory back after a second
/// idle too: `run::memory`).
const RELEASE_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// What the writer is asked to do. (Nearly every job is a batch, which the queue held by
/// value before `Gone` existed: boxing it would add an allocation per batch for nothing.)
#[allow(clippy::large_enum_variant)]
enum Job {
    /// Commit a batch (with whatever else has queued up).
    Batch {
        batch: PreparedBatch,
        ack: oneshot::Sender<Result<CommitStats, StoreError>>,
    },
    /// Mark a file whose path no longer exists ([`Store::mark_gone`]). It goes through the
    /// writer like every other write: from a pump, beside a backfill's back-to-back group
    /// commits, SQLite's busy handler (which sleeps and retries, first come not first served)
    /// missed the gaps between them for its whole timeout, and an ingest of 25,000 replaced
    /// files failed with "database is locked".
    Gone {
        file_id: i64,
        ack: oneshot::Sender<Result<(), StoreError>>,
    },
}

/// Handle to send batches to the writer task. Cloneable; the task ends when every handle is
/// dropped and the queue is drained.
#[derive(Debug, Clone)]
pub struct Writer {
    tx: mpsc::Sender<Job>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Job::Batch { batch, .. } => f
                .debug_struct("Batch")
                .field("file_id", &batch.file_id)
                .finish(),
            Job::Gone { file_id, .. } => f.debug_struct("Gone").field("file_id", file_id).finish(),
        }
    }
}

impl Writer {
    /// A handle and the writer loop to run (spawn it; it ends when every handle is dropped).
    ///
    /// `spent` takes each group's batches once committed, to be freed elsewhere: a group's rows
    /// are hundreds of thousands of small strings, and freeing them was 3% of a backfill's CPU
    /// on the writer's thread, which is ingest's critical path (`run` frees them on a thread of
    /// its own). Without it they are freed here.
    pub fn new(
        store: Store,
        spent: Option<Spent>,
    ) -> (
        Writer,
        impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        let (tx, rx) = mpsc::channel(GROUP_BATCHES);
        let work = async move {
            let (done_tx, done_rx) = tokio::sync::watch::channel(false);
            let committed = std::sync::Arc::new(tokio::sync::Notify::new());
            let writer = async {
                run(store.clone(), rx, &committed, spent).await;
                let _ = done_tx.send(true);
            };
            tokio::join!(writer, checkpointer(store.clone(), done_rx, &committed));
        };
        (Writer { tx }, work)
    }

    /// Commit `batch` (possibly together with other files' batches) and return what it wrote.
    pub async fn commit(&self, batch: PreparedBatch) -> Result<CommitStats, StoreError> {
        let (ack, rx) = oneshot::channel();
        self.tx
            .send(Job::Batch { batch, ack })
            .await
            .map_err(|_| StoreError::WriterGone)?;
        rx.await.unwrap_or(Err(StoreError::WriterGone))
    }

    /// Mark a file gone (its rows are kept), between two group commits.
    pub async fn mark_gone(&self, file_id: i64) -> Result<(), StoreError> {
        let (ack, rx) = oneshot::channel();
        self.tx
            .send(Job::Gone { file_id, ack })
            .await
            .map_err(|_| StoreError::WriterGone)?;
        rx.await.unwrap_or(Err(StoreError::WriterGone))
    }
}

/// How often the SQLite write-ahead log is checkpointed while the writer runs. With passive
/// checkpoints only, every 2 s was 6% faster than every 250 ms (each re-reads the WAL index and
/// copies pages the next commit dirties again) but let the log grow past the database; since
/// the checkpoint restarts a large log (`Store::checkpoint`), every 500 ms was 4-7% faster than
/// every 2 s back to back on the 1 GB tree (250 ms: no faster), the log peaking at 56 MB
/// instead of 180 and the final checkpoint at close taking 35 ms instead of 100-190.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// SQLite only: copy the write-ahead log into the database file from another connection
/// ([`Store::checkpoint`]), so the writer's own commits never checkpoint
/// (`wal_autocheckpoint` is off on these connections): the copying runs on that connection's
/// thread, beside the writer's, which waits only while a large log is restarted (a few ms).
/// Ends with the writer; the pool's close checkpoints what is left.
async fn checkpointer(
    store: Store,
    mut done: tokio::sync::watch::Receiver<bool>,
    committed: &tokio::sync::Notify,
) {
    if store.backend() != crate::store::Backend::Sqlite {
        return;
    }
    loop {
        // Idle until a commit (an idle daemon does nothing), then gather a few.
        tokio::select! {
            _ = done.changed() => return,
            _ = committed.notified() => {}
        }
        tokio::select! {
            _ = done.changed() => return,
            _ = tokio::time::sleep(CHECKPOINT_EVERY) => {}
        }
        if let Err(e) = store.checkpoint().await {
            tracing::debug!(error = %e, "WAL checkpoint failed; retried");
        }
    }
}

async fn run(
    store: Store,
    mut rx: mpsc::Receiver<Job>,
    committed: &tokio::sync::Notify,
    spent: Option<Spent>,
) {
    // Keys of every summary leaf uuid known so far: a committed message with one of these uuids
    // is recorded as that leaf's holder (see `Store::commit_group`).
    let mut leaves = match store.summary_leaf_keys().await {
        Ok(k) => k,
        Err(e) => {
            tracing::warn!(error = %e, "cannot load summary leaves; resolving new ones only");
            std::collections::HashSet::new()
        }
    };
    let mut conn = WriterConn::default();
    let mut idle_since = std::time::Instant::now();
    loop {
        // An idle writer closes its connection after a moment (its page cache and statements
        // are memory an idle daemon should not hold); a burst keeps it. With none held (on
        // PostgreSQL always) there is nothing to wait for.
        let next = if conn.is_open() {
            match tokio::time::timeout(RELEASE_AFTER, rx.recv()).await {
                Ok(next) => next,
                Err(_) => {
                    conn.release().await;
                    rx.recv().await
                }
            }
        } else {
            rx.recv().await
        };
        let Some(first) = next else { break };
        let waited = idle_since.elapsed();
        let mut jobs = Vec::new();
        let mut rows = 0;
        // A file marked gone is written at once, alone (it is one row, and rare): the jobs
        // queued behind it form the next group.
        let mut gone = take(first, &mut jobs, &mut rows);
        while gone.is_none() && rows < GROUP_ROWS && jobs.len() < GROUP_BATCHES {
            match rx.try_recv() {
                Ok(j) => gone = take(j, &mut jobs, &mut rows),
                Err(_) => break,
            }
        }
        // In a burst (a backfill: more than one batch was already waiting) wait a moment for
        // more: bigger groups write each index page once per commit instead of once per few
        // rows. A lone append to an idle file never waits.
        if jobs.len() > 1 {
            let deadline = tokio::time::Instant::now() + GROUP_LINGER;
            while gone.is_none() && rows < GROUP_ROWS && jobs.len() < GROUP_BATCHES {
                let until = deadline.min(tokio::time::Instant::now() + GROUP_GAP);
                match tokio::time::timeout_at(until, rx.recv()).await {
                    Ok(Some(j)) => gone = take(j, &mut jobs, &mut rows),
                    Ok(None) | Err(_) => break,
                }
            }
        }
        if !jobs.is_empty() {
            commit(
                &store,
                &mut conn,
                jobs,
                rows,
                waited,
                &mut leaves,
                committed,
                &spent,
            )
            .await;
        }
        if let Some((file_id, ack)) = gone {
            let _ = ack.send(store.mark_gone(file_id).await);
        }
        idle_since = std::time::Instant::now();
    }
    conn.release().await;
}

/// Commit one group of batches and answer each batch's pump.
#[allow(clippy::too_many_arguments)]
async fn commit(
    store: &Store,
    conn: &mut WriterConn,
    jobs: Vec<(
        PreparedBatch,
        oneshot::Sender<Result<CommitStats, StoreError>>,
    )>,
    rows: usize,
    waited: std::time::Duration,
    leaves: &mut std::collections::HashSet<i64>,
    committed: &tokio::sync::Notify,
    spent: &Option<Spent>,
) {
    let (batches, acks): (Vec<PreparedBatch>, Vec<_>) = jobs.into_iter().unzip();
    let t0 = std::time::Instant::now();
    let r = store.commit_group(conn, &batches, leaves).await;
    tracing::debug!(
        batches = batches.len(),
        rows,
        waited_us = waited.as_micros() as u64,
        commit_us = t0.elapsed().as_micros() as u64,
        "group"
    );
    match r {
        Ok(results) => {
            committed.notify_one();
            for (ack, r) in acks.into_iter().zip(results) {
                let _ = ack.send(r);
            }
        }
        // One batch's data failed the whole group: commit each batch alone, so that only
        // that batch fails (its file's, see `StoreError::is_transient`) and the others
        // are stored.
        Err(e) if !e.is_transient() && batches.len() > 1 => {
            tracing::debug!(batches = batches.len(), error = %e, "group failed on its data; committing its batches one by one");
            for (ack, b) in acks.into_iter().zip(&batches) {
                let r = store
                    .commit_group(conn, std::slice::from_ref(b), leaves)
                    .await
                    .and_then(|mut r| r.pop().unwrap_or(Err(StoreError::WriterGone)));
                if r.is_ok() {
                    committed.notify_one();
                }
                let _ = ack.send(r);
            }
        }
        Err(e) => {
            // Each batch's pump reports it (counted exactly, logged once a minute).
            tracing::debug!(batches = batches.len(), error = %e, "group commit failed");
            let e = std::sync::Arc::new(e);
            for ack in acks {
                let _ = ack.send(Err(StoreError::Group(e.clone())));
            }
        }
    }
    if let Some(spent) = &spent {
        // A closed receiver gives the batches back: then they are freed here.
        let _ = spent.send(batches);
    }
}

/// Put `j` in the group (`None`) or hand back the file to mark gone.
#[allow(clippy::type_complexity)]
fn take(
    j: Job,
    jobs: &mut Vec<(
        PreparedBatch,
        oneshot::Sender<Result<CommitStats, StoreError>>,
    )>,
    rows: &mut usize,
) -> Option<(i64, oneshot::Sender<Result<(), StoreError>>)> {
    match j {
        Job::Batch { batch, ack } => {
            *rows += batch.messages.len();
            jobs.push((batch, ack));
            None
        }
        Job::Gone { file_id, ack } => Some((file_id, ack)),
    }
}
