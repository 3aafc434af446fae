//! The database: sink of extracted rows and checkpoint of every file's progress.
//!
//! [`Store`] holds a pool of one of the two backends. Every statement is an [`sql::Sql`]: one
//! text with `$n` placeholders (which SQLite accepts too) and portable SQL (`ON CONFLICT`,
//! `CASE` instead of `min`/`LEAST`), run through [`sql::Conn`], which executes it on either
//! backend; the conformance tests in `tests/it` run the same stories on both. Where the
//! backends store differently (search indexing, the SQLite writer's own handle:
//! [`messages`], [`direct`]) the module says so.
//!
//! Where things go: a new table is a migration pair (`migrations/sqlite`,
//! `migrations/postgres`), a row type in `extract::rows`, a write step in
//! [`commit`]`::group_body` (and a search hook in [`search::index`] if it is searchable); a new
//! query is a read in `read/<entity>.rs`, which the doors reach through `crate::query`.
//!
//! Exactly-once rests on [`Store::commit_group`] ([`commit`]): rows and each file's new
//! checkpoint are written in one transaction, guarded by an optimistic check that the file's
//! stored `(generation, offset)` is still the one the batch was read from, and every row has a
//! natural unique key with `ON CONFLICT DO NOTHING`. [`writer`] is its only caller in the
//! daemon and `ingest`.
//!
//! The store writes rows it is handed; it never runs a stage (the episodes of finished sessions
//! are closed by `run` and handed to [`sessions`]).

mod archive;
mod blocks;
mod commit;
mod conn;
mod copies;
mod direct;
mod episodes;
mod failure;
mod files;
mod knowledge;
mod late_docs;
mod tools;
pub mod lease;
mod lite;
mod messages;
mod model_names;
mod open;
mod packed_text;
mod page;
mod unnest;
mod plan;
mod prune;
mod retire;
mod reextract;
mod read;
mod refine;
pub mod search;
mod sessions;
mod snippet_query;
mod timeline;
mod usage;
mod vocab;
pub(crate) mod sql;
pub mod writer;
pub use refine::{DaemonFigures, EpisodeSnippet, PendingEpisode};

use std::time::Duration;

use sqlx::{PgPool, SqlitePool};

pub use open::Schema;
pub use page::{Page, Paged};
pub use vocab::{FeedbackType, SessionStatus, SummaryKind};

pub use archive::{
    ArchiveFilter, ArchiveTotals, ArchivedFile, BoundChunk, StoredChunk, StoredDict,
};
pub use blocks::{BlockMember, NewMember, PackFile, PackProject, StoredBlock};
pub use commit::WriterConn;
pub use episodes::SnippetSource;
pub use files::FileRecord;
pub use messages::CommitStats;
pub use prune::PruneCounts;
pub use read::context::{ContextCorrection, ContextItem, ContextSession};
pub use read::conversation::ConversationRow;
pub use read::diagnostics::DiagnosticListing;
pub use read::feedback::{FeedbackFilter, FeedbackListing};
pub use read::files::FileListing;
pub use read::projects::{ProjectFilter, ProjectListing};
pub use read::sessions::{
    FeedbackCounts, SessionCursor, SessionFilter, SessionListing, SessionSort, SubAgent,
    SummaryCounts, TokenTotals,
};
pub use read::stats::{Figure, TableCounts, Totals, ROWS_COUNTED};
pub use read::summaries::{SummaryFilter, SummaryListing};
pub use read::touched::{TouchedFile, MAX_TOUCHED};
pub use read::usage::{UsageCell, UsageFilter, UsageKey};
pub use read::Origin;
pub use reextract::RulesCounts;
pub use sessions::{ClosedEpisode, EpisodeStateRow, IdleSession};
pub use snippet_query::{
    EpisodeFilter, EpisodeListing, SnippetFilter, SnippetListing, SnippetPage, COUNT_CAP,
};
pub use sql::Backend;
pub use timeline::{
    Timeline, TimelineFeedback, TimelineFile, TimelineMessage, TimelineSummary, TimelineTool,
};

use sql::{Pooled, Record, Sql, Tx};

/// Errors of the storage layer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be reached or opened at startup. The URL is shown without password.
    #[error("cannot open database {url}: {message}")]
    Connect {
        /// Redacted URL.
        url: String,
        /// Driver message.
        message: String,
    },
    /// Applying the schema migrations failed.
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The file's stored checkpoint is not the one this batch was read from (another writer or a
    /// crash moved it). Nothing was written; the caller re-reads from the stored checkpoint.
    #[error(
        "checkpoint of file {file_id} moved (expected generation {generation}, offset {offset})"
    )]
    CheckpointMoved {
        /// File row id.
        file_id: i64,
        /// Expected generation.
        generation: i64,
        /// Expected offset.
        offset: u64,
    },
    /// The writer task is gone (shutdown): the batch was not written.
    #[error("the writer has stopped; the batch was not written")]
    WriterGone,
    /// The group transaction this batch was part of failed as a whole: nothing of it was
    /// written. Shared by every batch of the group.
    #[error("group commit failed: {0}")]
    Group(std::sync::Arc<StoreError>),
    /// Any other database error.
    #[error("database error: {0}")]
    Sqlx(#[from] sqlx::Error),
    /// An error of the statements SQLite runs through the writer's own handle
    /// (`store::direct`, `store::lite`).
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// An operation the connection cannot run: a bug, named (the direct SQLite path reads
    /// only tuples and never waits).
    #[error("internal error: {0}")]
    Unsupported(&'static str),
    /// A command that only reads was pointed at an SQLite file that does not exist.
    #[error(
        "no database at {} (start `gleaner daemon` or run `gleaner ingest` first)",
        path.display()
    )]
    Missing {
        /// The file looked for.
        path: std::path::PathBuf,
    },
    /// The database's schema is older than this build's (or absent): readers never migrate.
    #[error(
        "the database schema is at version {found}, this gleaner reads version {wanted}: \
         run `gleaner migrate` (or start the daemon, which migrates)"
    )]
    SchemaBehind {
        /// The latest migration applied (0: none).
        found: i64,
        /// The latest migration this build knows.
        wanted: i64,
    },
    /// The database's schema is newer than this build's: a writer never writes to a schema
    /// it does not know (its rows could miss columns or rules a newer build relies on).
    #[error(
        "the database schema is at version {found}, newer than this gleaner's ({known}): \
         upgrade gleaner on this machine before writing (commands that only read still work)"
    )]
    SchemaAhead {
        /// The latest migration applied.
        found: i64,
        /// The latest migration this build knows.
        known: i64,
    },
    /// Another host's live writer holds this machine id's lease (`store::lease`).
    #[error(
        "machine id {machine:?} is in use by a gleaner on host {host_name} (pid {pid}, last \
         heard of at {heartbeat_at}); give this machine its own id: `machine_id` in the config, \
         GLEANER_MACHINE_ID or --machine-id"
    )]
    MachineInUse {
        /// The machine id.
        machine: String,
        /// The host name of the holder.
        host_name: String,
        /// Its process id.
        pid: i64,
        /// Its last heartbeat.
        heartbeat_at: String,
    },
}

/// Which database and how to reach it (`[database]` in the configuration).
#[derive(Clone)]
pub struct Options {
    /// `sqlite://...` or `postgres://...`.
    pub url: String,
    /// Pool size.
    pub max_connections: u32,
    /// How long to wait for the database at startup.
    pub connect_timeout: Duration,
}

impl Options {
    /// The backend the URL selects (SQLite unless it says PostgreSQL; the configuration
    /// rejects other schemes when it loads).
    pub fn backend(&self) -> Backend {
        Backend::of_url(&self.url).unwrap_or(Backend::Sqlite)
    }
}

impl std::fmt::Debug for Options {
    /// Never print a password, not even in debug logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("url", &redact_url(&self.url))
            .field("max_connections", &self.max_connections)
            .field("connect_timeout", &self.connect_timeout)
            .finish()
    }
}

/// Hide the passwords of a URL so it can be printed: the one of `scheme://user:password@host/...`
/// and the values of `password` and `sslpassword` query parameters (libpq and sqlx take a
/// password there too: `postgres://u@h/db?password=...`).
pub fn redact_url(url: &str) -> String {
    let url = redact_userinfo(url);
    let Some(q) = url.find('?') else {
        return url;
    };
    let (head, query) = url.split_at(q + 1);
    let params: Vec<String> = query
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((k, _))
                if k.eq_ignore_ascii_case("password") || k.eq_ignore_ascii_case("sslpassword") =>
            {
                format!("{k}=***")
            }
            _ => p.to_string(),
        })
        .collect();
    format!("{head}{}", params.join("&"))
}

/// The password of `scheme://user:password@host/...` hidden.
fn redact_userinfo(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_string();
    };
    let rest_start = scheme_end + 3;
    let rest = &url[rest_start..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let Some(at) = authority.rfind('@') else {
        return url.to_string();
    };
    let userinfo = &authority[..at];
    match userinfo.find(':') {
        Some(colon) => format!(
            "{}{}:***{}",
            &url[..rest_start],
            &userinfo[..colon],
            &rest[at..]
        ),
        None => url.to_string(),
    }
}

/// Runs of whitespace (driver messages span lines) as single spaces: errors are one line.
pub fn collapse_whitespace(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A connection pool to one of the two backends.
#[derive(Debug, Clone)]
pub enum Store {
    /// Embedded SQLite (WAL mode).
    Sqlite(SqlitePool),
    /// PostgreSQL server.
    Postgres(PgPool),
}

/// How long an SQLite statement waits for a lock held by another connection.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Write-ahead log size from which [`Store::checkpoint`] restarts the log.
const RESTART_AFTER_BYTES: i64 = 16 << 20;

/// How long a restarting checkpoint waits for the writer and readers (the writer waits too
/// while it does).
const RESTART_WAIT: Duration = Duration::from_millis(20);

impl Store {
    /// Which backend this is.
    pub fn backend(&self) -> Backend {
        match self {
            Store::Sqlite(_) => Backend::Sqlite,
            Store::Postgres(_) => Backend::Postgres,
        }
    }

    /// Close the pool, waiting for connections to finish. SQLite: the write-ahead log is
    /// checkpointed and truncated first. (Closing the last connection would do it too, but not
    /// always: a 185 MB log was seen left beside a finished ingest, which is disk the user
    /// pays for until the next start.)
    pub async fn close(&self) {
        match self {
            Store::Sqlite(p) => {
                // A reader in another process (`gleaner web`) would make TRUNCATE wait through
                // the busy timeout: give it a fifth of a second, then leave the log as it is.
                if let Ok(mut c) = p.acquire().await {
                    let r =
                        sqlx::query("PRAGMA busy_timeout = 200; PRAGMA wal_checkpoint(TRUNCATE)")
                            .execute(&mut *c)
                            .await;
                    if let Err(e) = r {
                        tracing::debug!(error = %e, "final WAL checkpoint failed");
                    }
                    c.close().await.ok();
                }
                p.close().await
            }
            Store::Postgres(p) => p.close().await,
        }
    }

    /// SQLite: checkpoint the write-ahead log beside the writer (PostgreSQL: nothing to do).
    ///
    /// First `PASSIVE`, which never waits for the writer or readers. A passive checkpoint
    /// beside a busy writer never catches up with it, so the log never starts over: it grew
    /// past the database itself during a backfill (180 MB for the 1 GB bench tree), every
    /// commit appended to new file pages, and the final truncation at close freed them all
    /// (50 ms). So when the log holds [`RESTART_AFTER_BYTES`] or more, a `RESTART` follows:
    /// it waits up to [`RESTART_WAIT`] for the writer to be between two transactions, copies
    /// the few frames committed since the passive one (7-19 ms measured, the writer waiting),
    /// and the next commit writes the log from its start again. If the writer or a reader
    /// stays busy, it gives up (`SQLITE_BUSY` in the result, not an error) until next time.
    pub async fn checkpoint(&self) -> Result<(), StoreError> {
        let Store::Sqlite(p) = self else {
            return Ok(());
        };
        let mut c = p.acquire().await?;
        let (_, frames, _): (i64, i64, i64) = sqlx::query_as("PRAGMA wal_checkpoint(PASSIVE)")
            .fetch_one(&mut *c)
            .await?;
        let page: i64 = sqlx::query_scalar("PRAGMA page_size")
            .fetch_one(&mut *c)
            .await?;
        if frames.saturating_mul(page) < RESTART_AFTER_BYTES {
            return Ok(());
        }
        let t = std::time::Instant::now();
        sqlx::query(&format!(
            "PRAGMA busy_timeout = {}",
            RESTART_WAIT.as_millis()
        ))
        .execute(&mut *c)
        .await?;
        let restart: Result<(i64, i64, i64), _> = sqlx::query_as("PRAGMA wal_checkpoint(RESTART)")
            .fetch_one(&mut *c)
            .await;
        // The pool's busy timeout again, whatever the checkpoint did.
        let reset = sqlx::query(&format!(
            "PRAGMA busy_timeout = {}",
            BUSY_TIMEOUT.as_millis()
        ))
        .execute(&mut *c)
        .await;
        let (busy, _, _) = restart?;
        reset?;
        tracing::debug!(
            frames,
            busy = busy != 0,
            us = t.elapsed().as_micros() as u64,
            "WAL restart checkpoint"
        );
        Ok(())
    }

    /// SQLite: close the idle connections, which keep a page cache (up to `cache_size`) and
    /// their prepared statements after a burst of work; the next statement opens one again
    /// (about a millisecond). PostgreSQL: nothing to do (the memory is the server's).
    pub async fn release_memory(&self) {
        let Store::Sqlite(p) = self else { return };
        for _ in 0..p.num_idle() {
            match p.try_acquire() {
                Some(c) => c.close().await.ok(),
                None => break,
            };
        }
    }

    /// PostgreSQL: refresh the planner's statistics of the tables the doors read after a
    /// bulk ingest (`gleaner ingest`, a daemon's first pass). Autovacuum gets there later, and
    /// until then the planner takes grown tables for what they were: it chose a bitmap AND
    /// over all of a machine's files for every session in the idle-session sweep (0.7 s at
    /// 5,000 files), and a hash join over every summary for one session's summary counts
    /// (60 ms on a 20 GB store, 0.3 ms once analysed). `ANALYZE` samples a fixed number of
    /// rows per table: about a second on a 20 GB store. SQLite: nothing (no statistics kept).
    pub async fn analyze_after_bulk(&self) -> Result<(), StoreError> {
        if let Store::Postgres(p) = self {
            sqlx::query(
                "ANALYZE files, sessions, messages, summaries, summary_leaves, feedback, \
                 tool_uses, usage_messages, usage_hours, usage_group_keys, episodes, snippets",
            )
            .execute(p)
            .await?;
        }
        Ok(())
    }

    /// Whether the database answers a query (the daemon's probe while it has nothing to write
    /// during an outage; a write that fails later starts the outage again).
    pub async fn ping(&self) -> Result<(), StoreError> {
        match self {
            Store::Sqlite(p) => {
                sqlx::query("SELECT 1").execute(p).await?;
            }
            Store::Postgres(p) => {
                sqlx::query("SELECT 1").execute(p).await?;
            }
        }
        Ok(())
    }

    /// Begin a transaction.
    pub(crate) async fn begin(&self) -> Result<Tx<'static>, StoreError> {
        Ok(match self {
            Store::Sqlite(p) => Tx::Sqlite(p.begin().await?),
            Store::Postgres(p) => Tx::Postgres(p.begin().await?),
        })
    }

    /// Check a connection out of the pool.
    pub(crate) async fn acquire(&self) -> Result<Pooled, StoreError> {
        Ok(match self {
            Store::Sqlite(p) => Pooled::acquire_sqlite(p).await?,
            Store::Postgres(p) => Pooled::acquire_pg(p).await?,
        })
    }

    /// Run one statement outside a transaction.
    pub(crate) async fn execute(&self, q: &Sql<'_>) -> Result<u64, StoreError> {
        let mut c = self.acquire().await?;
        c.conn().execute(q).await
    }

    /// Every row of one query.
    pub(crate) async fn fetch_all<T: Record>(&self, q: &Sql<'_>) -> Result<Vec<T>, StoreError> {
        let mut c = self.acquire().await?;
        c.conn().fetch_all(q).await
    }

    /// The first row of one query, if any.
    pub(crate) async fn fetch_optional<T: Record>(
        &self,
        q: &Sql<'_>,
    ) -> Result<Option<T>, StoreError> {
        let mut c = self.acquire().await?;
        c.conn().fetch_optional(q).await
    }

    /// The value of a one-row, one-column query (a count).
    pub(crate) async fn fetch_i64(&self, q: &Sql<'_>) -> Result<i64, StoreError> {
        let mut c = self.acquire().await?;
        c.conn().fetch_i64(q).await
    }
}
