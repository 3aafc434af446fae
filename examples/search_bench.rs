//! Full-text search benchmark: `gleaner ingest` of the 1 GB tree into SQLite and PostgreSQL,
//! then p50/p99 of `Store::search` (the query behind `gleaner search` and the MCP `search`
//! tool) for a common word, a rare word, a phrase, a prefix, a negation and kind/project
//! filters, and the share of the database the index takes.
//!
//! ```text
//! cargo run --release --example search_bench -- [--size-mb 1024] [--work DIR] [--runs 50]
//!     [--skip-postgres]
//! ```
//! PostgreSQL admin URL: `GLEANER_BENCH_PG_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`).
//! PostgreSQL gets `VACUUM ANALYZE` after the load, as autovacuum does shortly after a bulk
//! insert; SQLite gets nothing.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Parser;
use gleaner::store::search::{parse, SearchFilter, SearchKind};
use gleaner::store::{Options, Store};

#[path = "common/mod.rs"]
mod common;
use common::tree::Corpus;
use common::{binary, percentile, pg_exec, pg_url};

const DEFAULT_CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus/real");
const DEFAULT_PG: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// Benchmark full-text search.
#[derive(Parser)]
struct Opts {
    /// Size of the generated transcript tree, in MB.
    #[arg(long, default_value_t = 1024)]
    size_mb: u64,
    /// Work folder (kept; its tree is reused). Default: a temporary folder.
    #[arg(long)]
    work: Option<PathBuf>,
    /// Real transcripts copied to build the tree.
    #[arg(long, default_value = DEFAULT_CORPUS)]
    corpus: PathBuf,
    /// Timed runs per query.
    #[arg(long, default_value_t = 50)]
    runs: usize,
    /// Do not benchmark PostgreSQL.
    #[arg(long)]
    skip_postgres: bool,
}

/// One query of the table: its label, text, kinds, tool and project.
struct Case {
    label: &'static str,
    query: &'static str,
    kinds: Vec<SearchKind>,
    tool: Option<&'static str>,
    project: Option<&'static str>,
}

fn cases() -> Vec<Case> {
    let case = |label, query| Case {
        label,
        query,
        kinds: Vec::new(),
        tool: None,
        project: None,
    };
    vec![
        case("common word", "error"),
        case("rare word", "AudioWorklet"),
        case("phrase", "\"pull request\""),
        case("prefix", "migrat*"),
        case("two words", "database migration"),
        case("negation", "Prisma -tenant_id"),
        Case {
            label: "kind: summary",
            query: "error",
            kinds: vec![SearchKind::Summary],
            tool: None,
            project: None,
        },
        Case {
            label: "kind: tool",
            query: "error",
            kinds: vec![SearchKind::Tool],
            tool: None,
            project: None,
        },
        Case {
            label: "tool: Bash",
            query: "\"exit code\"",
            kinds: vec![SearchKind::Tool],
            tool: Some("Bash"),
            project: None,
        },
        Case {
            label: "project filter",
            query: "error",
            kinds: Vec::new(),
            tool: None,
            project: Some("UTAGE3"),
        },
    ]
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("search_bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let opts = Opts::parse();
    let bin = binary()?;
    let _tmp;
    let work = match &opts.work {
        Some(w) => {
            fs::create_dir_all(w)?;
            w.canonicalize()?
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix("gleaner-search-bench-")
                .tempdir_in("/tmp")?;
            _tmp = t;
            _tmp.path().to_path_buf()
        }
    };
    let projects = work.join("projects");
    let target = opts.size_mb * 1_000_000;
    let marker = work.join("tree.done");
    // Every id fresh: copies that shared message ids would be stored once (`store::copies`),
    // and the store would hold one corpus's messages whatever the tree's size.
    let corpus = Corpus::scan(&opts.corpus)?.with_fresh_ids();
    if fs::read_to_string(&marker).ok() != Some(corpus.marker(target)) {
        let _ = fs::remove_dir_all(&projects);
        let (bytes, files) = corpus.generate(&projects, target)?;
        println!("generated {:.1} MB in {files} files", bytes as f64 / 1e6);
        fs::write(&marker, corpus.marker(target))?;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let db = work.join("search.db");
    for f in ["search.db", "search.db-wal", "search.db-shm"] {
        let _ = fs::remove_file(work.join(f));
    }
    let sqlite_url = format!("sqlite://{}", db.display());
    ingest(&bin, &work, &projects, &sqlite_url)?;
    rt.block_on(bench_backend("sqlite", &sqlite_url, opts.runs, Some(&db)))?;
    if !opts.skip_postgres {
        let admin = std::env::var("GLEANER_BENCH_PG_URL").unwrap_or_else(|_| DEFAULT_PG.into());
        let name = format!("gleaner_search_bench_{}", std::process::id());
        rt.block_on(pg_exec(&admin, &format!("CREATE DATABASE {name}")))?;
        let url = pg_url(&admin, &name);
        // VACUUM ANALYZE after the load: what autovacuum does shortly after a bulk insert (it
        // also moves the GIN indexes' pending entries into the index proper).
        let r = ingest(&bin, &work, &projects, &url)
            .and_then(|()| rt.block_on(pg_exec(&url, "VACUUM ANALYZE")))
            .and_then(|()| rt.block_on(bench_backend("postgres", &url, opts.runs, None)));
        rt.block_on(pg_exec(
            &admin,
            &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        ))?;
        r?;
    }
    Ok(())
}

/// `gleaner ingest` of the tree, timed.
fn ingest(bin: &Path, work: &Path, projects: &Path, url: &str) -> Result<()> {
    let t0 = Instant::now();
    let out = Command::new(bin)
        .env("HOME", work.join("home"))
        .env("XDG_DATA_HOME", work.join("data"))
        .args([
            "ingest",
            "--json",
            "--machine-id",
            "bench",
            "--projects-dir",
        ])
        .arg(projects)
        .args(["--database-url", url])
        .output()
        .context("cannot run gleaner")?;
    if !out.status.success() {
        bail!("ingest failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    println!(
        "ingest into {}: {:.1} MB in {:.2} s = {:.1} MB/s",
        url.split('/').next_back().unwrap_or(url),
        v["bytes"].as_f64().unwrap_or(0.0) / 1e6,
        t0.elapsed().as_secs_f64(),
        v["mb_per_s"].as_f64().unwrap_or(0.0)
    );
    Ok(())
}

async fn bench_backend(name: &str, url: &str, runs: usize, sqlite: Option<&Path>) -> Result<()> {
    let store = Store::connect(&Options {
        url: url.to_string(),
        max_connections: 2,
        connect_timeout: Duration::from_secs(10),
    })
    .await?;
    println!("\n{name}: query              matches   p50 ms   p99 ms");
    for c in cases() {
        let filter = SearchFilter {
            query: parse(c.query)?,
            kinds: c.kinds.clone(),
            tool: c.tool.map(str::to_string),
            project: c.project.map(str::to_string),
            origin: Default::default(),
            session_ids: None,
            since: None,
            until: None,
            limit: 20,
            offset: 0,
        };
        let mut ms = Vec::with_capacity(runs);
        let mut total = 0;
        for i in 0..runs + 2 {
            let t0 = Instant::now();
            let page = store.search(&filter).await?;
            if i >= 2 {
                ms.push(t0.elapsed().as_secs_f64() * 1000.0);
            }
            total = page.total_count;
        }
        println!(
            "{name}: {:<18} {:>8} {:>8.2} {:>8.2}",
            c.label,
            total,
            percentile(&ms, 0.5),
            percentile(&ms, 0.99)
        );
    }
    store.close().await;
    index_share(name, url, sqlite).await
}

/// Database size with the index, and without it (dropped, then compacted).
async fn index_share(name: &str, url: &str, sqlite: Option<&Path>) -> Result<()> {
    let (with, without) = match sqlite {
        Some(db) => {
            let pool = sqlx::SqlitePool::connect(url).await?;
            sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
                .execute(&pool)
                .await?;
            let with = fs::metadata(db)?.len();
            for sql in [
                "DROP TABLE search_fts",
                "DROP VIEW search_content",
                "DROP TABLE search_docs",
                "VACUUM",
            ] {
                sqlx::query(sql).execute(&pool).await?;
            }
            sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
                .execute(&pool)
                .await?;
            pool.close().await;
            (with, fs::metadata(db)?.len())
        }
        None => {
            let pool = sqlx::PgPool::connect(url).await?;
            let size = |pool: sqlx::PgPool| async move {
                sqlx::query_scalar::<_, i64>("SELECT pg_database_size(current_database())")
                    .fetch_one(&pool)
                    .await
            };
            sqlx::query("VACUUM FULL").execute(&pool).await?;
            let with = size(pool.clone()).await? as u64;
            // A message's vector has a table of its own (migration 0022).
            sqlx::query("DROP TABLE message_search")
                .execute(&pool)
                .await?;
            for t in ["summaries", "feedback", "snippets"] {
                sqlx::query(&format!("ALTER TABLE {t} DROP COLUMN search_vec"))
                    .execute(&pool)
                    .await?;
            }
            sqlx::query("VACUUM FULL").execute(&pool).await?;
            let without = size(pool.clone()).await? as u64;
            pool.close().await;
            (with, without)
        }
    };
    println!(
        "{name}: database {:.1} MB with the index, {:.1} MB without: the index adds {:.1}%",
        with as f64 / 1e6,
        without as f64 / 1e6,
        (with as f64 / without as f64 - 1.0) * 100.0
    );
    Ok(())
}
