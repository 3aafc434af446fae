//! Opening the database: [`Store::connect`] for the commands that write (it creates the SQLite
//! file and migrates the schema), [`Store::open_existing`] for the commands that only read
//! (it creates nothing, migrates nothing, and checks the schema is one it can read).
//!
//! Why readers never migrate: a query command pointed at a mistyped path must say so instead
//! of creating an empty database and answering "nothing"; and on a shared PostgreSQL a
//! reader may have no right to change the schema, and an older reader must not block or race
//! the newer daemon that owns the upgrade.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{ConnectOptions, Connection};

use super::sql::{Backend, Sql};
use super::{collapse_whitespace, redact_url, Options, Store, StoreError, BUSY_TIMEOUT};

/// A statement slower than this is logged (at debug level).
const SLOW_STATEMENT: Duration = Duration::from_secs(1);

/// Page size of a new SQLite database (see `Store::connect`).
const SQLITE_PAGE_SIZE: u32 = 16 * 1024;

/// SQLite page cache of a query command's connections, in KiB: its reads walk indexes again
/// and again within one command.
const READER_CACHE_KIB: u32 = 16_000;

/// SQLite page cache of the pooled connections of a writing process (daemon, ingest), in KiB:
/// they read a file's episode state or a session's rows once each, so a large cache only held
/// memory (four connections each filled their 16 MB on a 25,000-file tree: 66 MB of the
/// 138 MB an `ingest` with nothing new peaked at). The OS page cache serves a page again in
/// microseconds. The writer's own connection keeps [`WRITER_CACHE_KIB`].
const POOL_CACHE_KIB: u32 = 2_000;

/// SQLite page cache of the writer's connection (`direct::Direct`), in KiB: its inserts walk
/// the same index pages group after group. 8 MB, not 16: back to back on the 5 GB fresh-ids
/// bench tree the same throughput (x0.99) and 8 MB less peak RSS (issue 30); the OS page cache
/// holds the rest.
pub(super) const WRITER_CACHE_KIB: u32 = 8_000;

static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("migrations/sqlite");
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("migrations/postgres");

/// The schema version of a database as a reader sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schema {
    /// The version this build writes.
    Current,
    /// A newer build migrated it (to this version): readable, with a notice.
    Newer(i64),
}

impl Store {
    /// Open (creating the SQLite file and its folder if needed) and migrate the database.
    /// For the commands that write: `daemon`, `ingest`, the hooks, `snippet add`, `migrate`.
    pub async fn connect(cfg: &Options) -> Result<Store, StoreError> {
        let url = redact_url(&cfg.url);
        let store = match cfg.backend() {
            Backend::Sqlite => {
                let opts = sqlite_options(cfg, POOL_CACHE_KIB)?
                    .create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal)
                    .synchronous(SqliteSynchronous::Normal)
                    // 16 KB pages for a new database (an existing one keeps its own until a
                    // VACUUM): a backfill writes a quarter as many pages, B-tree levels and WAL
                    // frames (docs/benchmarks.md).
                    .page_size(SQLITE_PAGE_SIZE)
                    // Checkpoints run beside the writer (`writer::checkpointer`), never inside
                    // one of its commits.
                    .pragma("wal_autocheckpoint", "0");
                let db_file = opts.get_filename().to_path_buf();
                if let Some(parent) = db_file.parent() {
                    if !parent.as_os_str().is_empty() {
                        std::fs::create_dir_all(parent).map_err(|e| StoreError::Connect {
                            url: url.clone(),
                            message: format!("cannot create {}: {e}", parent.display()),
                        })?;
                    }
                }
                // sqlx takes no migration lock on SQLite: two processes opening a new database
                // at once (a daemon starting while `gleaner ingest` runs) would both try to
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
                let store = sqlite_pool(cfg, opts).await?;
                store.migrate().await?;
                store
            }
            Backend::Postgres => {
                let store = postgres_pool(cfg).await?;
                store.migrate().await?;
                store
            }
        };
        Ok(store)
    }

    /// Open a database that exists, for the commands that only read: nothing is created or
    /// migrated. A missing SQLite file is [`StoreError::Missing`]; a schema older than this
    /// build's is [`StoreError::SchemaBehind`] (run `gleaner migrate`); a newer one is read
    /// on, with a notice on stderr, as long as the columns read here are still there.
    pub async fn open_existing(cfg: &Options) -> Result<Store, StoreError> {
        let store = match cfg.backend() {
            Backend::Sqlite => {
                let opts = sqlite_options(cfg, READER_CACHE_KIB)?.create_if_missing(false);
                let path = opts.get_filename().to_path_buf();
                if !path.is_file() {
                    return Err(StoreError::Missing { path });
                }
                sqlite_pool(cfg, opts).await?
            }
            Backend::Postgres => postgres_pool(cfg).await?,
        };
        if let Schema::Newer(v) = store.check_schema().await? {
            tracing::warn!(
                schema = v,
                known = store.migrator().migrations.len(),
                "the database was upgraded by a newer gleaner; reading it as this version"
            );
        }
        Ok(store)
    }

    /// Apply the migrations this build knows that the database lacks; refused
    /// ([`StoreError::SchemaAhead`]) when a newer build has migrated it further.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        let known = self.known_schema();
        if let Some(found) = self.applied_schema().await? {
            if found > known {
                return Err(StoreError::SchemaAhead { found, known });
            }
        }
        match self {
            Store::Sqlite(p) => SQLITE_MIGRATIONS.run(p).await?,
            Store::Postgres(p) => POSTGRES_MIGRATIONS.run(p).await?,
        }
        Ok(())
    }

    fn migrator(&self) -> &'static Migrator {
        match self {
            Store::Sqlite(_) => &SQLITE_MIGRATIONS,
            Store::Postgres(_) => &POSTGRES_MIGRATIONS,
        }
    }

    /// The latest migration this build knows.
    pub fn known_schema(&self) -> i64 {
        self.migrator().iter().map(|m| m.version).max().unwrap_or(0)
    }

    /// The latest migration applied to the database (`None`: no Gleaner schema at all).
    pub async fn applied_schema(&self) -> Result<Option<i64>, StoreError> {
        let exists = match self.backend() {
            Backend::Sqlite => Sql::new(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' \
                 AND name = '_sqlx_migrations'",
            ),
            Backend::Postgres => Sql::new(
                "SELECT COUNT(*) FROM information_schema.tables \
                 WHERE table_name = '_sqlx_migrations' AND table_schema = current_schema()",
            ),
        };
        if self.fetch_i64(&exists).await? == 0 {
            return Ok(None);
        }
        let v = self
            .fetch_i64(&Sql::new(
                "SELECT COALESCE(MAX(version), 0) FROM _sqlx_migrations WHERE success",
            ))
            .await?;
        Ok(Some(v))
    }

    /// Whether a reader can use the schema: older or absent is an error saying what to run.
    pub async fn check_schema(&self) -> Result<Schema, StoreError> {
        let known = self.known_schema();
        match self.applied_schema().await? {
            None => Err(StoreError::SchemaBehind {
                found: 0,
                wanted: known,
            }),
            Some(v) if v < known => Err(StoreError::SchemaBehind {
                found: v,
                wanted: known,
            }),
            Some(v) if v > known => Ok(Schema::Newer(v)),
            Some(_) => Ok(Schema::Current),
        }
    }
}

/// Connection settings shared by writers and readers; `cache_kib` is the page cache of each
/// connection.
fn sqlite_options(cfg: &Options, cache_kib: u32) -> Result<SqliteConnectOptions, StoreError> {
    let opts = SqliteConnectOptions::from_str(&cfg.url).map_err(|e| StoreError::Connect {
        url: redact_url(&cfg.url),
        message: collapse_whitespace(&e.to_string()),
    })?;
    Ok(opts
        .busy_timeout(BUSY_TIMEOUT)
        // The REFERENCES clauses document the schema; enforcing them per row forces a
        // statement journal on every multi-row insert, and the writer creates file rows
        // before any row that points at them.
        .foreign_keys(false)
        .pragma("cache_size", format!("-{cache_kib}"))
        // Statement logging follows Gleaner's level: a slow statement is a debug detail,
        // not a warning on a query command's stderr.
        .log_statements(log::LevelFilter::Trace)
        .log_slow_statements(log::LevelFilter::Debug, SLOW_STATEMENT))
}

async fn sqlite_pool(cfg: &Options, opts: SqliteConnectOptions) -> Result<Store, StoreError> {
    // No liveness ping before each acquire: an embedded file connection does not go stale,
    // and the ping was a round trip per transaction.
    let pool = SqlitePoolOptions::new()
        .max_connections(cfg.max_connections)
        .test_before_acquire(false)
        .acquire_timeout(cfg.connect_timeout)
        // The full-text index's content view and triggers call Gleaner's functions.
        .after_connect(|conn, _meta| Box::pin(super::direct::register_functions(conn)))
        .connect_with(opts)
        .await
        .map_err(|e| StoreError::Connect {
            url: redact_url(&cfg.url),
            message: collapse_whitespace(&e.to_string()),
        })?;
    Ok(Store::Sqlite(pool))
}

async fn postgres_pool(cfg: &Options) -> Result<Store, StoreError> {
    let url = redact_url(&cfg.url);
    let connect_err = |e: sqlx::Error| StoreError::Connect {
        url: url.clone(),
        message: collapse_whitespace(&e.to_string()),
    };
    let opts = PgConnectOptions::from_str(&cfg.url)
        .map_err(connect_err)?
        .log_statements(log::LevelFilter::Trace)
        .log_slow_statements(log::LevelFilter::Debug, SLOW_STATEMENT);
    // One direct connection first: a pool only says "timed out" when the server refuses,
    // rejects the password or lacks the database; this names the cause.
    match tokio::time::timeout(cfg.connect_timeout, PgConnection::connect_with(&opts)).await {
        Ok(Ok(conn)) => {
            let _ = conn.close().await;
        }
        Ok(Err(e)) => return Err(connect_err(e)),
        Err(_) => {
            return Err(StoreError::Connect {
                url: url.clone(),
                message: format!(
                    "no answer from the server within {} s",
                    cfg.connect_timeout.as_secs()
                ),
            })
        }
    }
    let pool = PgPoolOptions::new()
        .max_connections(cfg.max_connections)
        .acquire_timeout(cfg.connect_timeout)
        // Why JIT off: Gleaner's statements read a page over an index, but the planner's
        // cost estimates for the correlated subqueries grow with the tables, and past
        // `jit_above_cost` PostgreSQL spends 150-600 ms compiling a query that then runs in
        // under 1 ms (measured on a 20 GB store: a session's summary counts took 667 ms, 567
        // of them JIT). A `SET` after connecting, not a startup option, so that poolers
        // (PgBouncer) that refuse unknown startup parameters still work; a server without JIT
        // (before 11) just says no.
        .after_connect(|conn, _meta| {
            Box::pin(async move {
                if let Err(e) = sqlx::query("SET jit = off").execute(conn).await {
                    tracing::debug!(error = %e, "could not turn JIT off");
                }
                Ok(())
            })
        })
        .connect_with(opts)
        .await
        .map_err(connect_err)?;
    Ok(Store::Postgres(pool))
}

/// Hold an exclusive advisory lock on `<db>-migrate.lock` (none for in-memory databases).
/// Polled with `try_lock` so the wait never blocks a runtime thread.
async fn lock_for_migration(db: &Path) -> std::io::Result<Option<std::fs::File>> {
    let name = db.as_os_str().to_string_lossy();
    if name.is_empty() || name == ":memory:" {
        return Ok(None);
    }
    let path = PathBuf::from(format!("{name}-migrate.lock"));
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)?;
    loop {
        match f.try_lock() {
            Ok(()) => return Ok(Some(f)),
            Err(std::fs::TryLockError::WouldBlock) => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
    }
}
