//! The two halves of ingest measured apart, in process and on one thread each: the reading
//! side (read, parse and extract, episodes, PostgreSQL's search words) over every file of a
//! tree, then the writer (every batch committed in groups as `store::writer` groups them) into
//! a fresh database. `gleaner ingest` runs the two at once on two cores; its throughput is
//! bounded by the slower of them, and the bench (`examples/bench.rs`) measures that end to
//! end. Here each side's CPU cost shows without the other's noise, so a change to one side can
//! be compared between two builds (and, under `valgrind --tool=callgrind`, counted exactly).
//!
//! ```text
//! cargo run --release --example stage_bench -- --projects DIR [--backend sqlite|postgres]
//!     [--work DIR] [--skip-write]
//! ```
//! PostgreSQL: a fresh database on `GLEANER_BENCH_PG_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`), dropped at the end.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Parser;

use gleaner::episode::{Feed, Rules};
use gleaner::extract::redact::Redactor;
use gleaner::extract::rows::{mtime_ms, PreparedBatch};
use gleaner::extract::{extract, lexemes, FileContext};
use gleaner::store::writer::{GROUP_BATCHES, GROUP_ROWS};
use gleaner::store::{Backend, Options, Store, WriterConn};
use gleaner::tail::discovery::{self, FileKind};
use gleaner::tail::{Tailer, TailerConfig};

#[path = "common/mod.rs"]
mod common;

const DEFAULT_PG: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// Measure the reading side and the writer of ingest apart.
#[derive(Parser)]
struct Opts {
    /// The transcript tree (e.g. the `projects` folder `bench --work DIR` leaves).
    #[arg(long)]
    projects: PathBuf,
    /// Database to write into.
    #[arg(long, default_value = "sqlite")]
    backend: String,
    /// Folder for the SQLite database (default: a temporary one).
    #[arg(long)]
    work: Option<PathBuf>,
    /// Read only.
    #[arg(long)]
    skip_write: bool,
    /// Most batches in one group (the writer's `GROUP_BATCHES` by default).
    #[arg(long, default_value_t = GROUP_BATCHES)]
    group_batches: usize,
    /// Most message rows in one group (the writer's `GROUP_ROWS` by default).
    #[arg(long, default_value_t = GROUP_ROWS)]
    group_rows: usize,
}

/// Seconds per stage of the reading side.
#[derive(Default)]
struct Reading {
    read: Duration,
    extract: Duration,
    episodes: Duration,
    lexemes: Duration,
    bytes: u64,
}

fn main() -> Result<()> {
    let opts = Opts::parse();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let pg = opts.backend == "postgres";
    let tmp = tempfile::tempdir()?;
    let work = opts
        .work
        .clone()
        .unwrap_or_else(|| tmp.path().to_path_buf());
    let admin = std::env::var("GLEANER_BENCH_PG_URL").unwrap_or_else(|_| DEFAULT_PG.into());
    let pg_db = format!("gleaner_stage_{}", std::process::id());
    let url = if pg {
        rt.block_on(common::pg_exec(&admin, &format!("CREATE DATABASE {pg_db}")))?;
        common::pg_url(&admin, &pg_db)
    } else {
        let db = work.join("stage.db");
        for f in ["stage.db", "stage.db-wal", "stage.db-shm"] {
            let _ = std::fs::remove_file(work.join(f));
        }
        format!("sqlite://{}", db.display())
    };
    let r = run(&rt, &opts, &url);
    if pg {
        rt.block_on(common::pg_exec(
            &admin,
            &format!("DROP DATABASE IF EXISTS {pg_db} WITH (FORCE)"),
        ))?;
    }
    r
}

fn run(rt: &tokio::runtime::Runtime, opts: &Opts, url: &str) -> Result<()> {
    let store = rt.block_on(Store::connect(&Options {
        url: url.to_string(),
        max_connections: 2,
        connect_timeout: Duration::from_secs(5),
    }))?;
    let backend = store.backend();
    let mut paths = discovery::scan(&opts.projects);
    paths.sort();
    let infos: Vec<_> = paths
        .iter()
        .map(|p| discovery::classify(&opts.projects, p))
        .collect();
    let records = rt.block_on(store.register_files(("bench", "bench"), &infos))?;

    // The reading side, one thread.
    let redactor = Redactor::builtin();
    let rules = Rules::defaults()?;
    let cfg = TailerConfig {
        max_line_bytes: 64 << 20,
        read_chunk: 1 << 20,
    };
    let mut t = Reading::default();
    let mut batches: Vec<PreparedBatch> = Vec::new();
    let wall = Instant::now();
    for r in &records {
        let info = discovery::classify(&opts.projects, std::path::Path::new(&r.path));
        let kind = info.kind;
        let mut ctx = FileContext::new(
            r.id,
            ("bench".into(), "bench".into()),
            info,
            r.session_id.clone(),
        );
        let (mut tailer, _) = Tailer::open(std::path::Path::new(&r.path), None, cfg)
            .with_context(|| r.path.clone())?;
        let mut episodes = None;
        let mut expected = (1i64, 0u64);
        loop {
            let t0 = Instant::now();
            let Some(batch) = tailer.read_batch(8 << 20, 20_000)? else {
                break;
            };
            let t1 = Instant::now();
            t.read += t1 - t0;
            let meta = std::fs::metadata(&r.path).ok();
            // As the pump does for a backfill: the batch that catches up a file the bench tree
            // made a day old writes its open episode closed.
            let at_eof =
                batch.drained || meta.as_ref().map(|m| m.len()) == Some(batch.checkpoint.offset);
            let mut ex = extract(&mut ctx, &batch, &redactor);
            let t2 = Instant::now();
            t.extract += t2 - t1;
            if kind == FileKind::Main {
                let how = Feed {
                    rules: &rules,
                    redactor: &redactor,
                    last: if at_eof {
                        gleaner::episode::Last::Closed
                    } else {
                        gleaner::episode::Last::Keep
                    },
                    drafter: &gleaner::snippet::draft::Auto,
                };
                gleaner::episode::feed(&mut episodes, &mut ex, &how);
            }
            let t3 = Instant::now();
            t.episodes += t3 - t2;
            let mut prepared = ex.rows;
            if backend == Backend::Postgres {
                lexemes::index_batch(&mut prepared);
            }
            t.lexemes += t3.elapsed();
            prepared.expected = expected;
            prepared.size = meta.as_ref().map_or(0, |m| m.len());
            prepared.mtime_ms = meta.as_ref().map_or(0, mtime_ms);
            prepared.lines = batch.lines.len() as u64;
            expected = (prepared.checkpoint.generation, prepared.checkpoint.offset);
            t.bytes += batch.checkpoint.offset.saturating_sub(batch.start_offset);
            batches.push(prepared);
        }
    }
    let reading = wall.elapsed();
    let mb = t.bytes as f64 / 1e6;
    println!(
        "reading: {mb:.1} MB in {:.2} s = {:.1} MB/s on one thread; read {:.2}, parse+extract {:.2}, episodes {:.2}, search words {:.2} s",
        reading.as_secs_f64(),
        mb / reading.as_secs_f64(),
        t.read.as_secs_f64(),
        t.extract.as_secs_f64(),
        t.episodes.as_secs_f64(),
        t.lexemes.as_secs_f64(),
    );
    if opts.skip_write {
        return Ok(());
    }

    // The writer, one thread: groups as `store::writer` makes them in a backfill.
    let write = Instant::now();
    let mut conn = WriterConn::default();
    let mut leaves = std::collections::HashSet::new();
    let (mut groups, mut rows) = (0, 0usize);
    let mut rest = batches.as_slice();
    while !rest.is_empty() {
        let mut n = 0;
        let mut group_rows = 0;
        while n < rest.len() && n < opts.group_batches && group_rows < opts.group_rows {
            group_rows += rest[n].messages.len();
            n += 1;
        }
        let (group, tail) = rest.split_at(n);
        let results = rt.block_on(store.commit_group(&mut conn, group, &mut leaves))?;
        for r in results {
            r?;
        }
        rest = tail;
        groups += 1;
        rows += group_rows;
    }
    rt.block_on(conn.release());
    let writing = write.elapsed();
    let t0 = Instant::now();
    rt.block_on(store.close());
    println!(
        "writer ({}): {rows} message rows in {groups} groups in {:.2} s = {:.1} MB/s of transcript; close {:.2} s",
        opts.backend,
        writing.as_secs_f64(),
        mb / writing.as_secs_f64(),
        t0.elapsed().as_secs_f64(),
    );
    Ok(())
}
