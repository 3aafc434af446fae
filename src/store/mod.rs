//! The database: sink of extracted rows and checkpoint of every file's progress.
//!
//! [`Store`] is an enum over the two sqlx pools. Every query is written once, with `$n`
//! placeholders (which SQLite accepts too) and portable SQL (`ON CONFLICT`, `CASE` instead of
//! `min`/`LEAST`), and the [`with_pool!`] macro expands it for each backend, so the two cannot
//! drift apart; the conformance tests in `tests/it` run the same stories on both.
//!
//! Exactly-once rests on [`Store::commit`]: rows and the file's new checkpoint are written in one
//! transaction, guarded by an optimistic check that the file's stored `(generation, offset)` is
//! still the one the batch was read from, and every row has a natural unique key with
//! `ON CONFLICT DO NOTHING`.

pub(crate) mod episodes;
mod query;
mod snippet_query;
pub mod writer;

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{PgPool, QueryBuilder, SqlitePool};

use crate::config::{redact_url, Backend, DatabaseConfig};
use crate::tail::discovery::FileInfo;
use std::collections::{HashMap, HashSet};

use crate::extract::rows::{
    now_iso, uuid_key, DiagnosticRow, FeedbackRow, KindCount, MessageRow, PreparedBatch,
    SummaryRow, ToolUseRow, UsageRow,
};
use crate::tail::Checkpoint;

pub use episodes::SnippetSource;
pub use query::{
    FeedbackCounts, FeedbackFilter, FeedbackListing, FileListing, IdleSession, SessionFilter,
    SessionListing, SubAgent, SummaryCounts, SummaryListing, TableCounts, TokenTotals,
};
pub use snippet_query::{
    EpisodeFilter, EpisodeListing, SnippetFilter, SnippetListing, SnippetPage, KEYWORD_COUNT_CAP,
};

/// Rows per multi-row `INSERT`: amortises the per-statement round trip (sqlx runs SQLite on a
/// worker thread, so a statement per row would cost more than the row). 19 columns × 500 stays
/// under SQLite's and PostgreSQL's bind-parameter limits.
const ROWS_PER_INSERT: usize = 500;

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
    /// Any other database error.
    #[error("database error: {0}")]
    Sqlx(#[from] sqlx::Error),
}

/// A connection pool to one of the two backends.
#[derive(Debug, Clone)]
pub enum Store {
    /// Embedded SQLite (WAL mode).
    Sqlite(SqlitePool),
    /// PostgreSQL server.
    Postgres(PgPool),
}

/// Run the same body against whichever pool the store holds.
macro_rules! with_pool {
    ($store:expr, $pool:ident => $body:expr) => {
        match $store {
            Store::Sqlite($pool) => $body,
            Store::Postgres($pool) => $body,
        }
    };
}
pub(crate) use with_pool;

/// Rows of the knowledge tables for the accepted batches of a group (a macro because the
/// transaction type differs per backend, like [`with_pool!`]).
///
/// Keys that may repeat within a group (a tool use id or API message id seen in a resumed
/// session's copy) are merged first: PostgreSQL rejects an upsert that touches one row twice.
macro_rules! write_knowledge {
    ($tx:ident, $accepted:ident, $now:ident, $dialect:ident, $leaves:ident) => {{
        let summaries: Vec<(&PreparedBatch, &SummaryRow)> = $accepted
            .iter()
            .flat_map(|b| b.summaries.iter().map(move |r| (*b, r)))
            .collect();
        let summaries = dedup_by(summaries, |(_, r)| (r.kind, r.dedup_key.clone()));
        for chunk in ladder_chunks(&summaries) {
            let mut qb = QueryBuilder::new(
                INSERT_IGNORE[$dialect].to_string() + "summaries (kind, dedup_key, text, leaf_uuid, uuid, compact_trigger, \
                 pre_tokens, session_id, agent_id, ts, file_id, line_no, leaf_key) ",
            );
            qb.push_values(chunk, |mut row, (b, r)| {
                row.push_bind(r.kind)
                    .push_bind(r.dedup_key.as_str())
                    .push_bind(r.text.as_deref())
                    .push_bind(r.leaf_uuid.as_deref())
                    .push_bind(r.uuid.as_deref())
                    .push_bind(r.trigger.as_deref())
                    .push_bind(r.pre_tokens)
                    .push_bind(r.session_id.as_str())
                    .push_bind(r.agent_id.as_deref())
                    .push_bind(r.ts.as_deref())
                    .push_bind(b.file_id)
                    .push_bind(r.line_no as i64)
                    .push_bind(r.leaf_uuid.as_deref().map(uuid_key));
            });
            qb.push(ON_CONFLICT_IGNORE[$dialect].replace("{}", "kind, dedup_key"));
            qb.build().execute(&mut *$tx).await?;
        }
        // Summary leaves. A new leaf's message may already be stored (usually in a sibling file
        // of the same project): one scan of that project's messages by uuid_key per group.
        let mut new_leaves: HashMap<&str, Vec<i64>> = HashMap::new();
        for (b, r) in &summaries {
            if let (true, Some(leaf)) = (r.kind == "summary", r.leaf_uuid.as_deref()) {
                let k = uuid_key(leaf);
                if $leaves.insert(k) {
                    new_leaves.entry(b.project.as_str()).or_default().push(k);
                }
            }
        }
        for (project, keys) in &new_leaves {
            for chunk in keys.chunks(ROWS_PER_INSERT) {
                let mut qb = QueryBuilder::new(
                    INSERT_IGNORE[$dialect].to_string()
                        + "summary_leaves (leaf_uuid, session_id) SELECT m.uuid, m.session_id \
                           FROM messages m JOIN files f ON f.id = m.file_id WHERE f.project = ",
                );
                qb.push_bind(*project).push(" AND m.uuid_key IN (");
                let mut sep = qb.separated(", ");
                for k in chunk {
                    sep.push_bind(*k);
                }
                sep.push_unseparated(")");
                qb.push(ON_CONFLICT_IGNORE[$dialect].replace("{}", "leaf_uuid, session_id"));
                qb.build().execute(&mut *$tx).await?;
            }
        }
        // Messages committed now that a known summary names as its leaf.
        let hits: Vec<(&str, &str)> = dedup_by(
            $accepted
                .iter()
                .flat_map(|b| b.messages.iter())
                .filter_map(|m| {
                    let u = m.uuid.as_deref()?;
                    $leaves
                        .contains(&uuid_key(u))
                        .then_some((u, m.session_id.as_str()))
                })
                .collect(),
            |h| *h,
        );
        for chunk in ladder_chunks(&hits) {
            let mut qb = QueryBuilder::new(
                INSERT_IGNORE[$dialect].to_string() + "summary_leaves (leaf_uuid, session_id) ",
            );
            qb.push_values(chunk, |mut row, (u, sid)| {
                row.push_bind(*u).push_bind(*sid);
            });
            qb.push(ON_CONFLICT_IGNORE[$dialect].replace("{}", "leaf_uuid, session_id"));
            qb.build().execute(&mut *$tx).await?;
        }

        let feedback: Vec<(&PreparedBatch, &FeedbackRow)> = $accepted
            .iter()
            .flat_map(|b| b.feedback.iter().map(move |r| (*b, r)))
            .collect();
        let feedback = dedup_by(feedback, |(_, r)| r.dedup_key.clone());
        for chunk in ladder_chunks(&feedback) {
            let mut qb = QueryBuilder::new(
                INSERT_IGNORE[$dialect].to_string() + "feedback (dedup_key, ts, session_id, feedback_type, content, reason, \
                 agent_id, slug, tool_use_id, uuid, file_id, line_no) ",
            );
            qb.push_values(chunk, |mut row, (b, r)| {
                row.push_bind(r.dedup_key.as_str())
                    .push_bind(r.ts.as_deref())
                    .push_bind(r.session_id.as_str())
                    .push_bind(r.feedback_type.as_str())
                    .push_bind(r.content.as_str())
                    .push_bind(r.reason.as_deref())
                    .push_bind(r.agent_id.as_deref())
                    .push_bind(r.slug.as_deref())
                    .push_bind(r.tool_use_id.as_deref())
                    .push_bind(r.uuid.as_deref())
                    .push_bind(b.file_id)
                    .push_bind(r.line_no as i64);
            });
            qb.push(ON_CONFLICT_IGNORE[$dialect].replace("{}", "dedup_key"));
            qb.build().execute(&mut *$tx).await?;
        }

        for (rows, errors) in [(false, false), (true, true)] {
            let _ = rows;
            let list: Vec<(&PreparedBatch, &ToolUseRow)> = $accepted
                .iter()
                .flat_map(|b| {
                    let v = if errors { &b.tool_errors } else { &b.tool_uses };
                    v.iter().map(move |r| (*b, r))
                })
                .collect();
            let list = dedup_by(list, |(_, r)| r.tool_use_id.clone());
            for chunk in ladder_chunks(&list) {
                let mut qb = QueryBuilder::new(
                    "INSERT INTO tool_uses (tool_use_id, session_id, name, target, ts, is_error, \
                     file_id, line_no) ",
                );
                qb.push_values(chunk, |mut row, (b, r)| {
                    row.push_bind(r.tool_use_id.as_str())
                        .push_bind(r.session_id.as_str())
                        .push_bind(r.name.as_deref())
                        .push_bind(r.target.as_deref())
                        .push_bind(r.ts.as_deref())
                        .push_bind(errors)
                        .push_bind(b.file_id)
                        .push_bind(r.line_no as i64);
                });
                if errors {
                    qb.push(" ON CONFLICT (tool_use_id) DO UPDATE SET is_error = TRUE");
                } else {
                    qb.push(
                        " ON CONFLICT (tool_use_id) DO UPDATE SET \
                         name = COALESCE(tool_uses.name, excluded.name), \
                         target = COALESCE(tool_uses.target, excluded.target)",
                    );
                }
                qb.build().execute(&mut *$tx).await?;
            }
        }

        let mut usage: HashMap<&str, UsageRow> = HashMap::new();
        for b in $accepted.iter() {
            for u in &b.usage {
                let e = usage.entry(u.message_id.as_str()).or_insert_with(|| u.clone());
                e.input_tokens = e.input_tokens.max(u.input_tokens);
                e.output_tokens = e.output_tokens.max(u.output_tokens);
                e.cache_creation_input_tokens =
                    e.cache_creation_input_tokens.max(u.cache_creation_input_tokens);
                e.cache_read_input_tokens = e.cache_read_input_tokens.max(u.cache_read_input_tokens);
            }
        }
        let mut usage: Vec<UsageRow> = usage.into_values().collect();
        usage.sort_by(|a, b| a.message_id.cmp(&b.message_id));
        for chunk in ladder_chunks(&usage) {
            let mut qb = QueryBuilder::new(
                "INSERT INTO assistant_usage (message_id, session_id, input_tokens, output_tokens, \
                 cache_creation_input_tokens, cache_read_input_tokens) ",
            );
            qb.push_values(chunk, |mut row, u| {
                row.push_bind(u.message_id.as_str())
                    .push_bind(u.session_id.as_str())
                    .push_bind(u.input_tokens)
                    .push_bind(u.output_tokens)
                    .push_bind(u.cache_creation_input_tokens)
                    .push_bind(u.cache_read_input_tokens);
            });
            qb.push(
                " ON CONFLICT (message_id) DO UPDATE SET \
                 input_tokens = CASE WHEN excluded.input_tokens > assistant_usage.input_tokens \
                    THEN excluded.input_tokens ELSE assistant_usage.input_tokens END, \
                 output_tokens = CASE WHEN excluded.output_tokens > assistant_usage.output_tokens \
                    THEN excluded.output_tokens ELSE assistant_usage.output_tokens END, \
                 cache_creation_input_tokens = CASE WHEN excluded.cache_creation_input_tokens > \
                    assistant_usage.cache_creation_input_tokens \
                    THEN excluded.cache_creation_input_tokens \
                    ELSE assistant_usage.cache_creation_input_tokens END, \
                 cache_read_input_tokens = CASE WHEN excluded.cache_read_input_tokens > \
                    assistant_usage.cache_read_input_tokens \
                    THEN excluded.cache_read_input_tokens \
                    ELSE assistant_usage.cache_read_input_tokens END",
            );
            qb.build().execute(&mut *$tx).await?;
        }
    }};
}

/// A file row as the pipeline needs it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct FileRecord {
    /// Row id.
    pub id: i64,
    /// Absolute path.
    pub path: String,
    /// `main` or `agent`.
    pub kind: String,
    /// Project folder.
    pub project: String,
    /// Session id, once known.
    pub session_id: Option<String>,
    /// Sub-agent id.
    pub agent_id: Option<String>,
    /// Device id.
    pub dev: i64,
    /// Inode.
    pub inode: i64,
    /// Generation.
    pub generation: i64,
    /// Committed offset.
    pub byte_offset: i64,
    /// Committed line count.
    pub lines: i64,
    /// Size at last commit.
    pub size: i64,
    /// Head fingerprint length.
    pub head_len: i64,
    /// Head fingerprint.
    pub head_hash: i64,
    /// Tail check length.
    pub tail_len: i64,
    /// Tail check hash.
    pub tail_hash: i64,
    /// `active` or `gone`.
    pub state: String,
}

impl FileRecord {
    /// The stored checkpoint, or `None` when nothing was ever committed for this file (so the
    /// tailer treats it as new instead of as a replaced file).
    pub fn checkpoint(&self) -> Option<Checkpoint> {
        if self.inode == 0 && self.byte_offset == 0 && self.head_len == 0 {
            return None;
        }
        Some(Checkpoint {
            dev: self.dev as u64,
            inode: self.inode as u64,
            generation: self.generation,
            offset: self.byte_offset as u64,
            lines: self.lines as u64,
            head_len: self.head_len as u32,
            head_hash: self.head_hash as u64,
            tail_len: self.tail_len as u32,
            tail_hash: self.tail_hash as u64,
        })
    }
}

/// What a commit wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommitStats {
    /// Message rows actually inserted (duplicates are skipped).
    pub messages: u64,
    /// Diagnostic rows actually inserted.
    pub diagnostics: u64,
}

const FILE_COLUMNS: &str =
    "id, path, kind, project, session_id, agent_id, dev, inode, generation, \
     byte_offset, lines, size, head_len, head_hash, tail_len, tail_hash, state";

impl Store {
    /// Open (creating the SQLite file and its folder if needed) and migrate the database.
    pub async fn connect(cfg: &DatabaseConfig) -> Result<Store, StoreError> {
        let url = redact_url(&cfg.url);
        let connect_err = |e: sqlx::Error| StoreError::Connect {
            url: url.clone(),
            message: one_line(&e.to_string()),
        };
        let store = match cfg.backend() {
            Backend::Sqlite => {
                let opts = SqliteConnectOptions::from_str(&cfg.url)
                    .map_err(connect_err)?
                    .create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal)
                    .synchronous(SqliteSynchronous::Normal)
                    .busy_timeout(Duration::from_secs(10))
                    // The REFERENCES clauses document the schema; enforcing them per row forces a
                    // statement journal on every multi-row insert (~7% of ingest time), and the
                    // writer creates file rows before any row that points at them.
                    .foreign_keys(false)
                    .pragma("cache_size", "-64000")
                    .pragma("wal_autocheckpoint", "8000");
                let db_file = opts.get_filename().to_path_buf();
                if let Some(parent) = opts.get_filename().parent() {
                    if !parent.as_os_str().is_empty() {
                        std::fs::create_dir_all(parent).map_err(|e| StoreError::Connect {
                            url: url.clone(),
                            message: format!("cannot create {}: {e}", parent.display()),
                        })?;
                    }
                }
                // sqlx takes no migration lock on SQLite: two processes opening a new database
                // at once (a daemon starting while `gleaner sessions` runs) would both try to
                // create the tables, and switching a new file to WAL needs an exclusive lock
                // that SQLite refuses at once instead of waiting. An advisory lock next to the
                // file, held from before the first connection until migrations are done,
                // serialises all of it.
                let _migrate_lock =
                    lock_for_migration(&db_file)
                        .await
                        .map_err(|e| StoreError::Connect {
                            url: url.clone(),
                            message: format!(
                                "cannot lock {} for migration: {e}",
                                db_file.display()
                            ),
                        })?;
                // No liveness ping before each acquire: an embedded file connection does not go
                // stale, and the ping was a round trip per transaction.
                let pool = SqlitePoolOptions::new()
                    .max_connections(cfg.max_connections)
                    .test_before_acquire(false)
                    .acquire_timeout(cfg.connect_timeout)
                    .connect_with(opts)
                    .await
                    .map_err(connect_err)?;
                sqlx::migrate!("migrations/sqlite").run(&pool).await?;
                Store::Sqlite(pool)
            }
            Backend::Postgres => {
                let opts = PgConnectOptions::from_str(&cfg.url).map_err(connect_err)?;
                let pool = PgPoolOptions::new()
                    .max_connections(cfg.max_connections)
                    .acquire_timeout(cfg.connect_timeout)
                    .connect_with(opts)
                    .await
                    .map_err(connect_err)?;
                sqlx::migrate!("migrations/postgres").run(&pool).await?;
                Store::Postgres(pool)
            }
        };
        Ok(store)
    }

    /// Which backend this is.
    pub fn backend(&self) -> Backend {
        match self {
            Store::Sqlite(_) => Backend::Sqlite,
            Store::Postgres(_) => Backend::Postgres,
        }
    }

    /// Close the pool, waiting for connections to finish (SQLite checkpoints its WAL).
    pub async fn close(&self) {
        with_pool!(self, pool => pool.close().await)
    }

    /// All file rows of one machine.
    pub async fn files_of(&self, machine: &str) -> Result<Vec<FileRecord>, StoreError> {
        let sql = format!("SELECT {FILE_COLUMNS} FROM files WHERE machine = $1");
        Ok(
            with_pool!(self, pool => sqlx::query_as::<_, FileRecord>(&sql)
            .bind(machine)
            .fetch_all(pool)
            .await?),
        )
    }

    /// The file rows for `infos`, created where they do not exist yet, in one transaction
    /// (a backfill registers thousands of files; one round trip each would dominate).
    pub async fn register_files(
        &self,
        machine: &str,
        infos: &[FileInfo],
    ) -> Result<Vec<FileRecord>, StoreError> {
        let now = now_iso();
        let paths: Vec<String> = infos
            .iter()
            .map(|i| i.path.to_string_lossy().into_owned())
            .collect();
        with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let mut out = Vec::with_capacity(infos.len());
            let rows: Vec<(&FileInfo, &String)> = infos.iter().zip(paths.iter()).collect();
            for chunk in ladder_chunks(&rows) {
                let mut qb = QueryBuilder::new(
                    "INSERT INTO files (machine, path, project, kind, session_id, agent_id, \
                     first_seen_at, updated_at) ",
                );
                qb.push_values(chunk, |mut row, (info, path)| {
                    row.push_bind(machine)
                        .push_bind(path.as_str())
                        .push_bind(info.project.as_str())
                        .push_bind(info.kind.as_str())
                        .push_bind(info.session_id.as_deref())
                        .push_bind(info.agent_id.as_deref())
                        .push_bind(now.as_str())
                        .push_bind(now.as_str());
                });
                // A no-op update so RETURNING also yields rows that already existed.
                qb.push(" ON CONFLICT (machine, path) DO UPDATE SET machine = excluded.machine RETURNING ");
                qb.push(FILE_COLUMNS);
                let mut recs: Vec<FileRecord> =
                    qb.build_query_as::<FileRecord>().fetch_all(&mut *tx).await?;
                out.append(&mut recs);
            }
            tx.commit().await?;
            Ok(out)
        })
    }

    /// Mark a file whose path no longer exists. Its rows are kept.
    pub async fn mark_gone(&self, file_id: i64) -> Result<(), StoreError> {
        let sql = "UPDATE files SET state = 'gone', updated_at = $1 WHERE id = $2";
        let now = now_iso();
        with_pool!(self, pool => {
            sqlx::query(sql).bind(&now).bind(file_id).execute(pool).await?;
        });
        Ok(())
    }

    /// Write one batch: rows, tallies, session facts and the new checkpoint, in ONE transaction.
    /// (The daemon goes through the writer; this is for one-off callers.)
    pub async fn commit(&self, b: &PreparedBatch) -> Result<CommitStats, StoreError> {
        let mut leaves = self.summary_leaf_keys().await?;
        let mut results = self
            .commit_group(std::slice::from_ref(b), &mut leaves)
            .await?;
        results.pop().unwrap_or(Ok(CommitStats::default()))
    }

    /// Keys of all summary leaf uuids (few: one per `summary` line).
    pub async fn summary_leaf_keys(&self) -> Result<HashSet<i64>, StoreError> {
        let sql = "SELECT DISTINCT leaf_key FROM summaries \
                   WHERE kind = 'summary' AND leaf_key IS NOT NULL";
        let keys: Vec<i64> =
            with_pool!(self, pool => sqlx::query_scalar(sql).fetch_all(pool).await?);
        Ok(keys.into_iter().collect())
    }

    /// Write several batches (of distinct files) in ONE transaction.
    ///
    /// Each batch is applied only if its checkpoint guard holds; a batch whose guard fails gets
    /// `Err(CheckpointMoved)` in its slot and writes nothing, while the others commit. The outer
    /// `Err` means the whole transaction failed and nothing was written. Grouping amortises the
    /// per-statement and per-commit cost over many small files, which dominates a backfill.
    ///
    /// `leaves` is the writer's set of known summary-leaf keys; it gains the leaves of the
    /// summaries written here.
    pub async fn commit_group(
        &self,
        batches: &[PreparedBatch],
        leaves: &mut HashSet<i64>,
    ) -> Result<Vec<Result<CommitStats, StoreError>>, StoreError> {
        let now = now_iso();
        let dialect = usize::from(self.backend() == Backend::Postgres);
        with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let mut results: Vec<Result<CommitStats, StoreError>> = Vec::with_capacity(batches.len());
            let mut accepted: Vec<&PreparedBatch> = Vec::with_capacity(batches.len());
            for b in batches {
                let cp = &b.checkpoint;
                // The optimistic guard doubles as the checkpoint write: zero rows updated means
                // the stored checkpoint is not the one the batch was read from.
                let moved = sqlx::query(
                    "UPDATE files SET generation = $1, byte_offset = $2, lines = $3, size = $4, \
                     dev = $5, inode = $6, head_len = $7, head_hash = $8, tail_len = $9, \
                     tail_hash = $10, state = 'active', updated_at = $11, \
                     session_id = COALESCE(session_id, $12), \
                     mtime_ms = CASE WHEN $16 > mtime_ms THEN $16 ELSE mtime_ms END, \
                     agent_type = COALESCE($17, agent_type), \
                     agent_description = COALESCE($18, agent_description), \
                     episode_state = COALESCE($19, episode_state) \
                     WHERE id = $13 AND generation = $14 AND byte_offset = $15",
                )
                .bind(cp.generation)
                .bind(cp.offset as i64)
                .bind(cp.lines as i64)
                .bind(b.size as i64)
                .bind(cp.dev as i64)
                .bind(cp.inode as i64)
                .bind(i64::from(cp.head_len))
                .bind(cp.head_hash as i64)
                .bind(i64::from(cp.tail_len))
                .bind(cp.tail_hash as i64)
                .bind(&now)
                .bind(b.file_session_id.as_deref())
                .bind(b.file_id)
                .bind(b.expected.0)
                .bind(b.expected.1 as i64)
                .bind(b.mtime_ms)
                .bind(b.agent_meta.as_ref().and_then(|m| m.0.as_deref()))
                .bind(b.agent_meta.as_ref().and_then(|m| m.1.as_deref()))
                .bind(b.episode_state.as_deref())
                .execute(&mut *tx)
                .await?
                .rows_affected();
                if moved == 1 {
                    accepted.push(b);
                    results.push(Ok(CommitStats::default()));
                } else {
                    results.push(Err(StoreError::CheckpointMoved {
                        file_id: b.file_id,
                        generation: b.expected.0,
                        offset: b.expected.1,
                    }));
                }
            }

            // The guard above means these lines were never committed in this generation, so
            // every row is new and per-file counts are the batch sizes. The unique keys are the
            // belt and braces: if a conflict ever skipped rows, the totals disagree and the
            // affected counters are recomputed from the table below.
            let mut inserted: HashMap<i64, CommitStats> = accepted
                .iter()
                .map(|b| {
                    let st = CommitStats {
                        messages: b.messages.len() as u64,
                        diagnostics: b.diagnostics.len() as u64,
                    };
                    (b.file_id, st)
                })
                .collect();
            let messages: Vec<(&PreparedBatch, &MessageRow)> = accepted
                .iter()
                .flat_map(|b| b.messages.iter().map(move |m| (*b, m)))
                .collect();
            let mut message_rows = 0;
            for chunk in ladder_chunks(&messages) {
                let mut qb = QueryBuilder::new(
                    INSERT_IGNORE[dialect].to_string() + "messages (file_id, generation, line_no, seq, byte_start, byte_end, \
                     session_id, uuid, parent_uuid, kind, subtype, ts, is_sidechain, agent_id, \
                     model, tool_names, is_error, text, uuid_key) ",
                );
                qb.push_values(chunk, |mut row, (b, m)| {
                    row.push_bind(b.file_id)
                        .push_bind(b.checkpoint.generation)
                        .push_bind(m.line_no as i64)
                        .push_bind(i64::from(m.seq))
                        .push_bind(m.byte_start as i64)
                        .push_bind(m.byte_end as i64)
                        .push_bind(m.session_id.as_str())
                        .push_bind(m.uuid.as_deref())
                        .push_bind(m.parent_uuid.as_deref())
                        .push_bind(m.kind.as_str())
                        .push_bind(m.subtype.as_deref())
                        .push_bind(m.ts.as_deref())
                        .push_bind(m.is_sidechain)
                        .push_bind(m.agent_id.as_deref())
                        .push_bind(m.model.as_deref())
                        .push_bind(m.tool_names.as_deref())
                        .push_bind(m.is_error)
                        .push_bind(m.text.as_deref())
                        .push_bind(m.uuid.as_deref().map(uuid_key));
                });
                qb.push(ON_CONFLICT_IGNORE[dialect].replace("{}", "file_id, generation, line_no, seq"));
                message_rows += qb.build().execute(&mut *tx).await?.rows_affected();
            }
            let recount = message_rows != messages.len() as u64;
            if recount {
                tracing::error!(
                    expected = messages.len(),
                    inserted = message_rows,
                    "duplicate message rows skipped despite the checkpoint guard; recounting"
                );
                for b in &accepted {
                    let n: i64 = sqlx::query_scalar(
                        "SELECT COUNT(*) FROM messages WHERE file_id = $1 AND generation = $2 \
                         AND byte_start >= $3",
                    )
                    .bind(b.file_id)
                    .bind(b.checkpoint.generation)
                    .bind(b.expected.1 as i64)
                    .fetch_one(&mut *tx)
                    .await?;
                    if let Some(st) = inserted.get_mut(&b.file_id) {
                        st.messages = n as u64;
                    }
                }
            }

            let diags: Vec<(&PreparedBatch, &DiagnosticRow)> = accepted
                .iter()
                .flat_map(|b| b.diagnostics.iter().map(move |d| (*b, d)))
                .collect();
            for chunk in ladder_chunks(&diags) {
                let mut qb = QueryBuilder::new(
                    INSERT_IGNORE[dialect].to_string() + "diagnostics (file_id, generation, line_no, byte_start, byte_len, \
                     kind, detail, created_at) ",
                );
                qb.push_values(chunk, |mut row, (b, d)| {
                    row.push_bind(b.file_id)
                        .push_bind(b.checkpoint.generation)
                        .push_bind(d.line_no as i64)
                        .push_bind(d.byte_start as i64)
                        .push_bind(d.byte_len as i64)
                        .push_bind(d.kind)
                        .push_bind(d.detail.as_deref())
                        .push_bind(now.as_str());
                });
                qb.push(ON_CONFLICT_IGNORE[dialect].replace("{}", "file_id, generation, line_no, kind"));
                qb.build().execute(&mut *tx).await?;
            }
            for b in &accepted {
                if !b.diagnostics.is_empty() {
                    // Recomputed rather than added: exact even if a duplicate was skipped.
                    sqlx::query(
                        "UPDATE files SET diagnostics = \
                         (SELECT COUNT(*) FROM diagnostics WHERE file_id = $1) WHERE id = $1",
                    )
                    .bind(b.file_id)
                    .execute(&mut *tx)
                    .await?;
                }
            }

            let kinds: Vec<(&PreparedBatch, &KindCount)> = accepted
                .iter()
                .flat_map(|b| b.kinds.iter().map(move |k| (*b, k)))
                .collect();
            for chunk in ladder_chunks(&kinds) {
                let mut qb = QueryBuilder::new(
                    "INSERT INTO record_kinds (file_id, generation, category, name, count) ",
                );
                qb.push_values(chunk, |mut row, (b, k)| {
                    row.push_bind(b.file_id)
                        .push_bind(b.checkpoint.generation)
                        .push_bind(k.category)
                        .push_bind(k.name.as_str())
                        .push_bind(k.count);
                });
                // Exact despite being additive: the checkpoint guard makes a batch apply at
                // most once.
                qb.push(
                    " ON CONFLICT (file_id, generation, category, name) \
                     DO UPDATE SET count = record_kinds.count + excluded.count",
                );
                qb.build().execute(&mut *tx).await?;
            }

            write_knowledge!(tx, accepted, now, dialect, leaves);

            let mut episode_writes = Vec::new();
            for b in &accepted {
                if b.checkpoint.generation != b.expected.0 {
                    // Truncated or rewritten: the old generation's last episode will never
                    // grow again (its line numbers refer to content that is gone).
                    sqlx::query(
                        "UPDATE episodes SET status = 'closed', updated_at = $1 \
                         WHERE file_id = $2 AND generation < $3 AND status = 'open'",
                    )
                    .bind(&now)
                    .bind(b.file_id)
                    .bind(b.checkpoint.generation)
                    .execute(&mut *tx)
                    .await?;
                }
                episode_writes.extend(b.episodes.iter().map(|ep| episodes::EpisodeWrite {
                    file_id: b.file_id,
                    path: &b.path,
                    project: &b.project,
                    ep,
                }));
            }
            if !episode_writes.is_empty() {
                episodes::write_episodes!(tx, &episode_writes, now.as_str());
            }

            for b in &accepted {
                let Some(s) = &b.session else { continue };
                let added = inserted.get(&b.file_id).map_or(0, |st| st.messages);
                sqlx::query(UPSERT_SESSION)
                    .bind(&s.session_id)
                    .bind(&s.machine)
                    .bind(&s.project)
                    .bind(s.cwd.as_deref())
                    .bind(s.git_branch.as_deref())
                    .bind(s.version.as_deref())
                    .bind(s.title.as_deref())
                    .bind(s.started_at.as_deref())
                    .bind(s.last_activity_at.as_deref())
                    .bind(added as i64)
                    .bind(&now)
                    .bind(s.slug.as_deref())
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            for (b, r) in batches.iter().zip(results.iter_mut()) {
                if let Ok(st) = r {
                    *st = inserted.get(&b.file_id).copied().unwrap_or_default();
                }
            }
            Ok(results)
        })
    }
}

/// Plain inserts that skip rows whose natural key exists, per backend (index 0 SQLite, 1
/// PostgreSQL). SQLite's `OR IGNORE` form cannot abort midway, so SQLite needs no statement
/// journal for it (that journal was ~8% of ingest time with `ON CONFLICT DO NOTHING`).
const INSERT_IGNORE: [&str; 2] = ["INSERT OR IGNORE INTO ", "INSERT INTO "];
/// The matching suffix; `{}` is replaced by the conflict columns.
const ON_CONFLICT_IGNORE: [&str; 2] = ["", " ON CONFLICT ({}) DO NOTHING"];

/// Keep the first item of each key, in order.
fn dedup_by<T, K: std::hash::Hash + Eq>(items: Vec<T>, key: impl Fn(&T) -> K) -> Vec<T> {
    let mut seen = std::collections::HashSet::new();
    items.into_iter().filter(|i| seen.insert(key(i))).collect()
}

/// Merge a batch's session facts: first cwd and title win, latest branch and version win,
/// timestamps widen, the message counter adds what was actually inserted.
const UPSERT_SESSION: &str =
    "INSERT INTO sessions (session_id, machine, project, cwd, git_branch, \
     version, title, started_at, last_activity_at, message_count, created_at, updated_at, slug) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11, $12) \
     ON CONFLICT (session_id) DO UPDATE SET \
     status = 'active', ended_at = NULL, duration_ms = NULL, end_reason = NULL, \
     slug = COALESCE(excluded.slug, sessions.slug), \
     cwd = COALESCE(sessions.cwd, excluded.cwd), \
     git_branch = COALESCE(excluded.git_branch, sessions.git_branch), \
     version = COALESCE(excluded.version, sessions.version), \
     title = COALESCE(sessions.title, excluded.title), \
     started_at = CASE WHEN sessions.started_at IS NULL \
        OR excluded.started_at < sessions.started_at \
        THEN COALESCE(excluded.started_at, sessions.started_at) \
        ELSE sessions.started_at END, \
     last_activity_at = CASE WHEN sessions.last_activity_at IS NULL \
        OR excluded.last_activity_at > sessions.last_activity_at \
        THEN COALESCE(excluded.last_activity_at, sessions.last_activity_at) \
        ELSE sessions.last_activity_at END, \
     message_count = sessions.message_count + excluded.message_count, \
     updated_at = excluded.updated_at";

/// Split `rows` into chunks whose sizes come from a fixed ladder (500, 100, 20, 5, 1).
///
/// Every distinct row count is a distinct SQL text that SQLite must parse (a 500-row insert has
/// 9,000 parameters); with a fixed ladder only five texts per table exist and all of them stay in
/// sqlx's prepared-statement cache.
pub(crate) fn ladder_chunks<T>(rows: &[T]) -> impl Iterator<Item = &[T]> {
    const LADDER: [usize; 5] = [ROWS_PER_INSERT, 100, 20, 5, 1];
    let mut rest = rows;
    std::iter::from_fn(move || {
        let n = LADDER.iter().copied().find(|&n| n <= rest.len())?;
        let (chunk, tail) = rest.split_at(n);
        rest = tail;
        Some(chunk)
    })
}

/// Hold an exclusive advisory lock on `<db>-migrate.lock` (none for in-memory databases).
async fn lock_for_migration(db: &std::path::Path) -> std::io::Result<Option<std::fs::File>> {
    let name = db.as_os_str().to_string_lossy();
    if name.is_empty() || name == ":memory:" {
        return Ok(None);
    }
    let path = std::path::PathBuf::from(format!("{name}-migrate.lock"));
    tokio::task::spawn_blocking(move || {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)?;
        f.lock()?;
        Ok(Some(f))
    })
    .await
    .map_err(std::io::Error::other)?
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ladder_covers_every_row_once_with_few_sizes() {
        for n in [0usize, 1, 4, 5, 19, 45, 499, 500, 501, 1234] {
            let rows: Vec<usize> = (0..n).collect();
            let chunks: Vec<&[usize]> = ladder_chunks(&rows).collect();
            let flat: Vec<usize> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
            assert_eq!(flat, rows);
            assert!(chunks
                .iter()
                .all(|c| [500, 100, 20, 5, 1].contains(&c.len())));
        }
    }
}
