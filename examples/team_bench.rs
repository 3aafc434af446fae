//! Many writers on one PostgreSQL: `--daemons` daemons (processes on this machine, each with
//! its own machine id and its own slice of a real-shaped tree: copies of the real corpus with
//! every id fresh) start at once on an empty database and catch up together. Reports the
//! throughput, the time until every file is read to its end, how often a connection waited on
//! a lock (sampled from `pg_stat_activity`), deadlocks (`pg_stat_database`), and checks that
//! nothing was lost or duplicated: each machine's files, lines and message rows equal what a
//! `gleaner ingest` of its slice alone gives (into its own SQLite file).
//!
//! ```text
//! cargo build --release
//! cargo run --release --example team_bench -- [--mb 1000] [--daemons 20] [--work DIR]
//! ```
//! PostgreSQL admin URL: `GLEANER_BENCH_PG_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Parser;

#[path = "common/mod.rs"]
mod common;
use common::tree::Corpus;
use common::{binary, pg_connect, pg_exec, pg_url};

const DEFAULT_CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus/real");
const DEFAULT_PG: &str = "postgres://postgres@127.0.0.1:5432/postgres";
const DB: &str = "gleaner_team_bench";

/// Many daemons writing to one PostgreSQL.
#[derive(Parser)]
struct Opts {
    /// Size of the whole tree in MB (10^6 bytes), split evenly between the daemons.
    #[arg(long, default_value_t = 1000)]
    mb: u64,
    /// Daemons (machine ids).
    #[arg(long, default_value_t = 20)]
    daemons: u64,
    /// Work folder (kept; its trees are reused when their size matches).
    #[arg(long)]
    work: Option<PathBuf>,
    /// Real transcripts copied to build the tree.
    #[arg(long, default_value = DEFAULT_CORPUS)]
    corpus: PathBuf,
    /// Give up waiting for the daemons to catch up after this many seconds.
    #[arg(long, default_value_t = 1800)]
    timeout: u64,
}

/// One machine's slice of the tree and what reading it alone gives.
struct Slice {
    dir: PathBuf,
    bytes: u64,
    files: u64,
    lines: u64,
    /// Message rows of a `gleaner ingest` of this slice alone.
    messages: u64,
}

fn main() -> ExitCode {
    match run(Opts::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("team_bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(o: Opts) -> Result<()> {
    let bin = binary()?;
    let work = match &o.work {
        Some(w) => w.clone(),
        None => std::env::temp_dir().join("gleaner-team-bench"),
    };
    std::fs::create_dir_all(&work)?;
    let admin = std::env::var("GLEANER_BENCH_PG_URL").unwrap_or_else(|_| DEFAULT_PG.into());
    let corpus = Corpus::scan(&o.corpus)?.with_fresh_ids();
    let per = o.mb * 1_000_000 / o.daemons.max(1);
    eprintln!(
        "{} slices of {:.0} MB from {}",
        o.daemons,
        per as f64 / 1e6,
        o.corpus.display()
    );
    let mut slices = Vec::new();
    for i in 0..o.daemons {
        slices.push(slice(&bin, &work, &corpus, i, per)?);
    }
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(pg_exec(
        &admin,
        &format!("DROP DATABASE IF EXISTS {DB} WITH (FORCE)"),
    ))?;
    rt.block_on(pg_exec(&admin, &format!("CREATE DATABASE {DB}")))?;
    let url = pg_url(&admin, DB);
    let total: u64 = slices.iter().map(|s| s.bytes).sum();

    // All at once, on an empty database: the migration race is part of the run.
    let start = Instant::now();
    let mut children: Vec<Child> = slices
        .iter()
        .enumerate()
        .map(|(i, s)| daemon(&bin, &work, i, &s.dir, &url))
        .collect::<Result<_>>()?;
    let watched = rt.block_on(watch(
        &url,
        total,
        Duration::from_secs(o.timeout),
        &mut children,
    ));
    let caught_up = start.elapsed().as_secs_f64();
    for c in &children {
        // SIGTERM: the daemons finish in-flight batches and stop.
        // SAFETY: kill(2) on our own child's pid.
        #[allow(unsafe_code)]
        unsafe {
            libc::kill(c.id() as i32, libc::SIGTERM);
        }
    }
    let mut failed = 0;
    for (i, c) in children.iter_mut().enumerate() {
        let status = c.wait()?;
        if !status.success() {
            failed += 1;
            eprintln!(
                "daemon {i} exited with {status}: see {}",
                work.join(format!("daemon-{i}.log")).display()
            );
        }
    }
    let samples = watched?;
    let check = rt.block_on(check(&url, &slices))?;
    let waits = samples.iter().filter(|s| s.lock_waiters > 0).count();
    let max_waiters = samples.iter().map(|s| s.lock_waiters).max().unwrap_or(0);
    println!(
        "\n{} daemons, {:.0} MB ({} files): caught up in {caught_up:.1} s = {:.1} MB/s",
        o.daemons,
        total as f64 / 1e6,
        slices.iter().map(|s| s.files).sum::<u64>(),
        total as f64 / 1e6 / caught_up
    );
    println!(
        "lock waits: {waits} of {} samples (every 250 ms) had a connection waiting on a lock, \
         at most {max_waiters} at once; deadlocks: {}; daemons that failed: {failed}",
        samples.len(),
        check.deadlocks
    );
    let mut kinds: BTreeMap<&str, (usize, i64)> = BTreeMap::new();
    for s in &samples {
        for (k, n) in &s.by_kind {
            let e = kinds.entry(k.as_str()).or_default();
            e.0 += 1;
            e.1 = e.1.max(*n);
        }
    }
    let kinds: Vec<String> = kinds
        .iter()
        .map(|(k, (samples, max))| format!("{k}: {samples} samples, at most {max}"))
        .collect();
    println!("waiting on: {}", kinds.join("; "));
    println!(
        "per machine: files, lines and messages equal to its own ingest: {}",
        {
            if check.mismatches.is_empty() {
                "all".to_string()
            } else {
                check.mismatches.join("; ")
            }
        }
    );
    if failed > 0 || !check.mismatches.is_empty() || check.deadlocks > 0 {
        bail!("the run lost, duplicated or failed something (above)");
    }
    Ok(())
}

/// Daemon `i`'s slice: its tree (made once, kept) and its own-ingest baseline.
fn slice(bin: &Path, work: &Path, corpus: &Corpus, i: u64, bytes: u64) -> Result<Slice> {
    let dir = work.join(format!("slice-{i}"));
    let done = dir.join("tree.done");
    let marker = corpus.marker(bytes);
    if std::fs::read_to_string(&done).ok().as_deref() != Some(marker.as_str()) {
        let _ = std::fs::remove_dir_all(&dir);
        let tree = dir.join("projects");
        std::fs::create_dir_all(&tree)?;
        // Copy numbers far apart: every slice's ids differ from every other's.
        corpus.generate_copies(&tree, bytes, i * 10_000)?;
        std::fs::write(&done, &marker)?;
    }
    let tree = dir.join("projects");
    let (mut files, mut lines, mut size) = (0u64, 0u64, 0u64);
    let mut stack = vec![tree.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)?.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                let b = std::fs::read(&p)?;
                files += 1;
                // Up to the last complete line: a partial last line is never read (the real
                // corpus has transcripts cut mid-line), so it is not waited for.
                size += b.iter().rposition(|&c| c == b'\n').map_or(0, |i| i + 1) as u64;
                lines += b.iter().filter(|&&c| c == b'\n').count() as u64;
            }
        }
    }
    let db = dir.join("alone.db");
    let _ = std::fs::remove_file(&db);
    let out = gleaner(bin, &dir, &tree, &format!("sqlite://{}", db.display()), i)
        .args(["ingest", "--json"])
        .output()
        .context("gleaner ingest")?;
    if !out.status.success() {
        bail!(
            "ingest of slice {i}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    Ok(Slice {
        dir: tree,
        bytes: size,
        files,
        lines,
        messages: v["rows"].as_u64().context("ingest --json has rows")?,
    })
}

fn gleaner(bin: &Path, home: &Path, projects: &Path, url: &str, i: u64) -> Command {
    common::gleaner_cmd(bin, home, projects, url, &format!("machine-{i:02}"))
}

fn daemon(bin: &Path, work: &Path, i: usize, tree: &Path, url: &str) -> Result<Child> {
    let home = work.join(format!("home-{i}"));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(home.join("run"))?;
    let log = std::fs::File::create(work.join(format!("daemon-{i}.log")))?;
    Ok(gleaner(bin, &home, tree, url, i as u64)
        .arg("daemon")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()?)
}

/// One poll of the database: connections waiting on a lock, by what they wait for
/// (`advisory`: the migration lock at start; `relation`: a table lock such as `ANALYZE`'s;
/// `transactionid`: a row another transaction is writing).
struct Sample {
    lock_waiters: i64,
    by_kind: Vec<(String, i64)>,
}

/// Poll every 250 ms until every file is read to its end (the committed offsets add up to
/// the tree's size) or `timeout`; a daemon that exits early is an error.
async fn watch(
    url: &str,
    total: u64,
    timeout: Duration,
    children: &mut [Child],
) -> Result<Vec<Sample>> {
    let start = Instant::now();
    let mut samples = Vec::new();
    let mut conn = None;
    loop {
        for (i, c) in children.iter_mut().enumerate() {
            if let Some(status) = c.try_wait()? {
                bail!("daemon {i} exited early with {status}");
            }
        }
        if conn.is_none() {
            conn = pg_connect(url).await.ok();
        }
        if let Some(c) = conn.as_mut() {
            let by_kind: Vec<(String, i64)> = sqlx::query_as(
                "SELECT COALESCE(wait_event, '?'), COUNT(*) FROM pg_stat_activity \
                 WHERE datname = $1 AND wait_event_type = 'Lock' GROUP BY 1",
            )
            .bind(DB)
            .fetch_all(&mut *c)
            .await?;
            samples.push(Sample {
                lock_waiters: by_kind.iter().map(|(_, n)| n).sum(),
                by_kind,
            });
            // `files` exists once the first daemon has migrated.
            let read: Option<i64> =
                sqlx::query_scalar("SELECT CAST(SUM(byte_offset) AS BIGINT) FROM files")
                    .fetch_one(&mut *c)
                    .await
                    .unwrap_or(None);
            if read.unwrap_or(0) as u64 >= total {
                return Ok(samples);
            }
        }
        if start.elapsed() > timeout {
            bail!("not caught up after {} s", timeout.as_secs());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

struct Checked {
    deadlocks: i64,
    mismatches: Vec<String>,
}

/// Each machine's files, lines and messages against its slice's own ingest.
async fn check(url: &str, slices: &[Slice]) -> Result<Checked> {
    let mut c = pg_connect(url).await?;
    let deadlocks: i64 =
        sqlx::query_scalar("SELECT deadlocks FROM pg_stat_database WHERE datname = $1")
            .bind(DB)
            .fetch_one(&mut c)
            .await?;
    let rows: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT machine, COUNT(*), CAST(SUM(lines) AS BIGINT) FROM files GROUP BY machine",
    )
    .fetch_all(&mut c)
    .await?;
    let files: BTreeMap<String, (i64, i64)> =
        rows.into_iter().map(|(m, f, l)| (m, (f, l))).collect();
    let rows: Vec<(String, i64)> = sqlx::query_as(
        "SELECT f.machine, COUNT(*) FROM messages m JOIN files f ON f.id = m.file_id \
         GROUP BY f.machine",
    )
    .fetch_all(&mut c)
    .await?;
    let messages: BTreeMap<String, i64> = rows.into_iter().collect();
    let mut mismatches = Vec::new();
    for (i, s) in slices.iter().enumerate() {
        let m = format!("machine-{i:02}");
        let (f, l) = files.get(&m).copied().unwrap_or((0, 0));
        let n = messages.get(&m).copied().unwrap_or(0);
        if (f as u64, l as u64, n as u64) != (s.files, s.lines, s.messages) {
            mismatches.push(format!(
                "{m}: files {f}/{}, lines {l}/{}, messages {n}/{}",
                s.files, s.lines, s.messages
            ));
        }
    }
    Ok(Checked {
        deadlocks,
        mismatches,
    })
}
