//! End-to-end benchmark of the release `gleaner` binary: bulk ingest throughput into SQLite and
//! PostgreSQL, append-to-commit latency of a running daemon, its idle CPU and its shutdown.
//!
//! ```text
//! cargo run --release --example bench -- [--size-mb 1024] [--work DIR] [--corpus DIR]
//!     [--skip-postgres] [--latency-samples 200] [--one-file-mb 0] [--fresh-ids]
//!     [--baseline OLD_GLEANER [--rounds 3] [--compare-only] [--ccusage CCUSAGE_BIN]]
//! ```
//! `--baseline` runs the same cold ingest with an earlier build, alternating (see `compare`).
//! PostgreSQL admin URL: `GLEANER_BENCH_PG_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`).
//! Sizes are in MB of 10^6 bytes, like gleaner's own `mb_per_s`.
#![allow(unsafe_code)]

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::str::FromStr;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context, Result};
use clap::Parser;
use regex::bytes::Regex;
use sqlx::{ConnectOptions, Connection};

#[path = "common/mod.rs"]
mod common;
#[path = "bench/compare.rs"]
mod compare;
#[path = "bench/live.rs"]
mod live;
#[path = "bench/session.rs"]
mod session;
use common::proc::{cpu_secs, proc_status_kb, wait_pid};
use common::tree::{is_uuid, map_uuid, Corpus};
use common::{percentile, pg_connect, pg_exec, pg_url};

const DEFAULT_CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus/real");
const DEFAULT_PG: &str = "postgres://postgres@127.0.0.1:5432/postgres";
const MACHINE: &str = "bench";

/// Benchmark the release gleaner binary.
#[derive(Parser)]
struct Opts {
    /// Size of the generated transcript tree, in MB (at least this much is written).
    #[arg(long, default_value_t = 1024)]
    size_mb: u64,
    /// Work folder (kept). Default: a fresh temporary folder, removed at the end.
    #[arg(long)]
    work: Option<PathBuf>,
    /// Real transcripts copied to build the tree.
    #[arg(long, default_value = DEFAULT_CORPUS)]
    corpus: PathBuf,
    /// Do not benchmark PostgreSQL.
    #[arg(long)]
    skip_postgres: bool,
    /// Also ingest (SQLite) one transcript of this many MB, for its peak RSS (0: skip).
    #[arg(long, default_value_t = 0)]
    one_file_mb: u64,
    /// Lines appended one by one to measure the daemon's latency.
    #[arg(long, default_value_t = 200)]
    latency_samples: usize,
    /// An earlier gleaner binary to run back to back with this build (cold ingest, each backend).
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// Rounds per build and backend with --baseline (medians are reported).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Make every id of each copy fresh (messages, tools, requests), not only the session ids.
    /// Why: copies that share message ids are stored once (`store::copies`, as a resumed
    /// session's copied history is), so the default tree writes about one corpus's rows
    /// whatever its size; with fresh ids every copy is new work, as distinct real sessions are
    /// (issue 30's real-shaped tree).
    #[arg(long)]
    fresh_ids: bool,
    /// With --baseline: only the back-to-back comparison.
    #[arg(long, requires = "baseline")]
    compare_only: bool,
    /// With --baseline: also run ccusage (`ccusage daily --json --offline`, which parses every
    /// line of the same tree and stores nothing) in each round, as the yardstick of issue 30.
    #[arg(long, requires = "baseline")]
    ccusage: Option<PathBuf>,
}

/// The stages `gleaner ingest --json` times, in pipeline order.
const STAGES: [&str; 8] = [
    "read",
    "parse",
    "extract",
    "redact",
    "episodes",
    "search_index",
    "database_write",
    "archive",
];

/// The JSON printed by `gleaner ingest --json`.
#[derive(serde::Deserialize)]
struct Summary {
    files: u64,
    bytes: u64,
    lines: u64,
    rows: u64,
    diagnostics: u64,
    batches: u64,
    errors: u64,
    seconds: f64,
    mb_per_s: f64,
    peak_rss_bytes: Option<u64>,
    /// Seconds per stage, summed over threads (older builds print none).
    #[serde(default)]
    stage_seconds: std::collections::BTreeMap<String, f64>,
    /// Of `seconds`, the time spent archiving what was deferred, after everything was
    /// searchable (issue 48; older builds print none).
    #[serde(default)]
    archive_seconds: f64,
}

/// One `gleaner ingest` run: its summary and what `wait4` says (wall s, CPU s, peak RSS bytes).
struct Ingest(Summary, f64, f64, u64);

/// Daemon figures: latencies (ms), CPU seconds over the 10 s after the last append and over
/// the 30 s after those (steady idle, one periodic rescan included), RSS bytes.
struct Live(Vec<f64>, f64, f64, u64);

/// Shared state: the binary, the work folder, a runtime for sqlx, and failed checks.
struct Bench {
    bin: PathBuf,
    work: PathBuf,
    rt: tokio::runtime::Runtime,
    problems: Vec<String>,
    /// Extra environment for the next runs (e.g. the episode stage switched off).
    env: Vec<(String, String)>,
}

/// Size of the database behind `url`: the SQLite file with its WAL, or PostgreSQL's
/// `pg_database_size`.
async fn database_bytes(url: &str) -> Result<u64> {
    if let Some(path) = url.strip_prefix("sqlite://") {
        let size = |p: String| fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        return Ok(size(path.to_string()) + size(format!("{path}-wal")));
    }
    let mut c = pg_connect(url).await?;
    let (n,): (i64,) = sqlx::query_as("SELECT pg_database_size(current_database())")
        .fetch_one(&mut c)
        .await?;
    c.close().await.ok();
    Ok(n as u64)
}

/// `--baseline`: the back-to-back comparison (with ccusage when asked), if a baseline is given.
fn compare_builds(b: &mut Bench, opts: &Opts, projects: &Path, pg: Option<&str>) -> Result<()> {
    match &opts.baseline {
        Some(old) => compare::compare(b, old, opts.ccusage.as_deref(), opts.rounds, projects, pg),
        None => Ok(()),
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(0) => ExitCode::SUCCESS,
        Ok(n) => {
            eprintln!("bench: {n} check(s) failed (see above)");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("bench: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<usize> {
    let opts = Opts::parse();
    let bin = find_binary()?;
    let _tmp; // removes the temporary work folder when dropped
    let work = match &opts.work {
        Some(w) => {
            fs::create_dir_all(w).with_context(|| format!("cannot create {}", w.display()))?;
            w.canonicalize()?
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix("gleaner-bench-")
                .tempdir_in("/tmp")?;
            _tmp = t;
            _tmp.path().to_path_buf()
        }
    };
    println!("work folder: {}", work.display());
    fs::create_dir_all(work.join("home"))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut b = Bench {
        bin,
        work: work.clone(),
        rt,
        problems: Vec::new(),
        env: Vec::new(),
    };

    // 1. The transcript tree (kept and reused with --work).
    let corpus = match opts.fresh_ids {
        true => Corpus::scan(&opts.corpus)?.with_fresh_ids(),
        false => Corpus::scan(&opts.corpus)?,
    };
    let projects = work.join("projects");
    let target = opts.size_mb * 1_000_000;
    let marker = work.join("tree.done");
    if fs::read_to_string(&marker).ok() == Some(corpus.marker(target)) {
        println!(
            "reusing {} (delete {} to regenerate)",
            projects.display(),
            marker.display()
        );
    } else {
        let _ = fs::remove_dir_all(&projects);
        let t0 = Instant::now();
        let (bytes, files) = corpus.generate(&projects, target)?;
        let (mb, secs) = (bytes as f64 / 1e6, t0.elapsed().as_secs_f64());
        let n = corpus.files.len();
        println!("generated {mb:.1} MB in {files} files in {secs:.1} s from {n} corpus files");
        fs::write(&marker, corpus.marker(target))?;
    }
    let admin = (!opts.skip_postgres)
        .then(|| std::env::var("GLEANER_BENCH_PG_URL").unwrap_or_else(|_| DEFAULT_PG.into()));
    if opts.compare_only {
        let pg = admin.as_deref().filter(|a| reachable(&b, a));
        compare_builds(&mut b, &opts, &projects, pg)?;
        return Ok(b.problems.len());
    }
    let lines = corpus.live_lines(20 + opts.latency_samples)?;
    let (mut table, mut lives) = (Vec::new(), Vec::new());

    // 2. SQLite.
    for f in [
        "bench.db",
        "bench.db-wal",
        "bench.db-shm",
        "live.db",
        "live.db-wal",
        "live.db-shm",
    ] {
        let _ = fs::remove_file(work.join(f));
    }
    let url = format!("sqlite://{}", work.join("bench.db").display());
    table.push(("sqlite", b.bulk("sqlite", &projects, &url)?));
    // The episode stage's cost: the same tree without it.
    for f in ["noep.db", "noep.db-wal", "noep.db-shm"] {
        let _ = fs::remove_file(work.join(f));
    }
    let url = format!("sqlite://{}", work.join("noep.db").display());
    b.env = vec![("GLEANER_EPISODES__ENABLED".into(), "false".into())];
    println!("sqlite without episodes: ingest into noep.db");
    let without = b.ingest(&projects, &url, &work.join("ingest-noep.log"))?;
    b.env.clear();
    let mut without = vec![("sqlite", without)];
    let url = format!("sqlite://{}", work.join("live.db").display());
    lives.push(("sqlite", b.latency("sqlite", &url, &lines)?));
    let session = b.session(&corpus, 11_000_000)?;
    if opts.one_file_mb > 0 {
        let one = work.join("one");
        let _ = fs::remove_dir_all(&one);
        let size = corpus.one_file(&one.join("projects"), opts.one_file_mb * 1_000_000)?;
        println!("one transcript of {:.1} MB", size as f64 / 1e6);
        let url = format!("sqlite://{}", one.join("one.db").display());
        table.push(("one-file", b.bulk("one-file", &one.join("projects"), &url)?));
        let _ = fs::remove_dir_all(&one);
    }

    // 3. PostgreSQL, in fresh databases dropped at the end.
    let pg = admin.as_deref().filter(|a| reachable(&b, a));
    if let Some(admin) = pg {
        let secs = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
        let db = format!("gleaner_bench_{}_{secs}", std::process::id());
        let live_db = format!("{db}_live");
        let noep_db = format!("{db}_noep");
        let mut result = (|| -> Result<()> {
            b.rt.block_on(pg_exec(admin, &format!("CREATE DATABASE \"{db}\"")))?;
            table.push((
                "postgres",
                b.bulk("postgres", &projects, &pg_url(admin, &db))?,
            ));
            b.rt.block_on(pg_exec(admin, &format!("CREATE DATABASE \"{noep_db}\"")))?;
            b.env = vec![("GLEANER_EPISODES__ENABLED".into(), "false".into())];
            println!("postgres without episodes: ingest into {noep_db}");
            let wo = b.ingest(
                &projects,
                &pg_url(admin, &noep_db),
                &work.join("ingest-pg-noep.log"),
            );
            b.env.clear();
            without.push(("postgres", wo?));
            b.rt.block_on(pg_exec(admin, &format!("CREATE DATABASE \"{live_db}\"")))?;
            lives.push((
                "postgres",
                b.latency("postgres", &pg_url(admin, &live_db), &lines)?,
            ));
            Ok(())
        })();
        for d in [&db, &live_db, &noep_db] {
            let sql = format!("DROP DATABASE IF EXISTS \"{d}\" WITH (FORCE)");
            if let Err(e) = b.rt.block_on(pg_exec(admin, &sql)) {
                result = result.and(Err(e.context(format!("cannot drop database {d}"))));
            }
        }
        result?;
    }

    // 4. Summary.
    println!(
        "\n{:<9} {:>8} {:>7} {:>7} {:>7} {:>9} {:>6} {:>11}",
        "backend", "MB", "secs", "MB/s", "CPU s", "rows", "files", "peak RSS MB"
    );
    for (name, Ingest(s, _, cpu, rss)) in &table {
        let (mb, rss) = (s.bytes as f64 / 1e6, *rss as f64 / 1e6);
        println!(
            "{name:<9} {mb:>8.1} {:>7.2} {:>7.1} {cpu:>7.2} {:>9} {:>6} {rss:>11.1}",
            s.seconds, s.mb_per_s, s.rows, s.files
        );
    }
    for (name, Live(lat, ..)) in &lives {
        let p = |q| percentile(lat, q);
        let (p50, p90, p99, max, n) = (p(0.5), p(0.9), p(0.99), p(1.0), lat.len());
        println!("latency {name:<8} p50 {p50:.1} ms  p90 {p90:.1} ms  p99 {p99:.1} ms  max {max:.1} ms  ({n} samples)");
    }
    for (name, Live(_, cpu, steady, rss)) in &lives {
        let (pct, rss) = (cpu * 10.0, *rss as f64 / 1e6);
        println!("idle CPU {name:<8} {cpu:.2} s over 10 s ({pct:.1}% of a core), then {steady:.2} s over 30 s  RSS {rss:.1} MB");
    }
    for (name, Ingest(wo, wo_wall, cpu_wo, _)) in &without {
        let Some((_, Ingest(with, wall, cpu_with, _))) = table.iter().find(|t| t.0 == *name) else {
            continue;
        };
        println!(
            "episodes {name:<8} with {:.1} MB/s, CPU {cpu_with:.2} s; without {:.1} MB/s, CPU {cpu_wo:.2} s: stage costs {:.1}% CPU, {:.1}% wall",
            with.mb_per_s,
            wo.mb_per_s,
            (cpu_with - cpu_wo) / cpu_wo.max(1e-9) * 100.0,
            (wall - wo_wall) / wo_wall.max(1e-9) * 100.0
        );
    }
    println!(
        "session {:.1} MB ({} lines): extraction in process {:.0} ms (of which episodes {:.0} ms), gleaner ingest end to end {:.0} ms; {} episodes, {} snippets; gleaner text {:.0} ms ({:.1} MB of conversation)",
        session.bytes as f64 / 1e6,
        session.lines,
        session.extract_ms,
        session.episode_ms,
        session.ingest_ms,
        session.episodes,
        session.snippets,
        session.text_ms,
        session.text_bytes as f64 / 1e6
    );
    compare_builds(&mut b, &opts, &projects, pg)?;
    for p in &b.problems {
        println!("CHECK FAILED: {p}");
    }
    Ok(b.problems.len())
}

/// Whether the PostgreSQL server at `admin` answers (said when it does not).
fn reachable(b: &Bench, admin: &str) -> bool {
    match b.rt.block_on(pg_connect(admin)) {
        Ok(conn) => {
            b.rt.block_on(conn.close()).ok();
            true
        }
        Err(e) => {
            println!("postgres: unreachable at {admin} ({e:#}); skipped");
            false
        }
    }
}

/// `target/release/gleaner`, next to this example's folder; built when missing.
fn find_binary() -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .context("cannot locate the target folder")?;
    let bin = dir.join("gleaner");
    if !bin.is_file() {
        println!(
            "{} is missing: running cargo build --release --bin gleaner",
            bin.display()
        );
        let st = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["build", "--release", "--bin", "gleaner"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .context("cannot run cargo")?;
        if !st.success() || !bin.is_file() {
            bail!("cargo build --release --bin gleaner failed ({st})");
        }
    }
    let built = fs::metadata(&bin)?.modified()?;
    if newest_mtime(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src"))) > Some(built) {
        println!(
            "warning: {} is older than src/ (cargo build --release to refresh)",
            bin.display()
        );
    }
    println!("binary: {}", bin.display());
    Ok(bin)
}

fn newest_mtime(dir: &Path) -> Option<SystemTime> {
    let mut newest = None;
    for e in fs::read_dir(dir).ok()?.flatten() {
        let p = e.path();
        newest = newest.max(if p.is_dir() {
            newest_mtime(&p)
        } else {
            e.metadata().ok()?.modified().ok()
        });
    }
    newest
}

impl Bench {
    /// gleaner with the global flags, and HOME/XDG folders inside the work folder.
    fn cmd(&self, projects: &Path, url: &str) -> Command {
        let mut c = Command::new(&self.bin);
        for (k, _) in
            std::env::vars_os().filter(|(k, _)| k.to_string_lossy().starts_with("GLEANER_"))
        {
            c.env_remove(k);
        }
        let home = self.work.join("home");
        c.env("HOME", &home)
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env_remove("CLAUDE_CONFIG_DIR");
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c.arg("--projects-dir").arg(projects).args([
            "--database-url",
            url,
            "--machine-id",
            MACHINE,
        ]);
        c
    }

    fn ingest(&self, projects: &Path, url: &str, log: &Path) -> Result<Ingest> {
        let t0 = Instant::now();
        let mut child = (self.cmd(projects, url).args(["ingest", "--json"]))
            .stdout(Stdio::piped())
            .stderr(File::create(log)?)
            .spawn()
            .with_context(|| format!("cannot start {}", self.bin.display()))?;
        let mut out = String::new();
        child
            .stdout
            .take()
            .context("no stdout pipe")?
            .read_to_string(&mut out)?;
        let (code, cpu, rss) = wait_pid(child.id() as i32, true)?.context("child vanished")?;
        let wall = t0.elapsed().as_secs_f64();
        let s: Summary = serde_json::from_str(&out).map_err(|e| {
            anyhow!(
                "gleaner ingest exited with {code} and no JSON summary ({e}); {}",
                log_tail(log)
            )
        })?;
        if code != 0 {
            println!(
                "  warning: gleaner ingest exited with {code}; {}",
                log_tail(log)
            );
        }
        Ok(Ingest(s, wall, cpu, rss))
    }

    /// Two ingest passes (the second must add nothing), then a row count check.
    fn bulk(&mut self, name: &str, projects: &Path, url: &str) -> Result<Ingest> {
        println!(
            "{name}: ingest into {}",
            url.rsplit('/').next().unwrap_or(url)
        );
        let first = self.ingest(
            projects,
            url,
            &self.work.join(format!("ingest-{name}-1.log")),
        )?;
        let Ingest(s, wall, cpu, rss) = &first;
        let (mb, rss, self_rss) = (
            s.bytes as f64 / 1e6,
            *rss as f64 / 1e6,
            s.peak_rss_bytes.unwrap_or(0) as f64 / 1e6,
        );
        println!(
            "  {mb:.1} MB in {:.2} s (wall {wall:.2} s, CPU {cpu:.2} s) = {:.1} MB/s",
            s.seconds, s.mb_per_s
        );
        println!(
            "  {} files, {} lines, {} rows, {} diagnostics, {} batches, {} errors",
            s.files, s.lines, s.rows, s.diagnostics, s.batches, s.errors
        );
        println!("  peak RSS {rss:.1} MB (wait4), {self_rss:.1} MB (self-reported)");
        if !s.stage_seconds.is_empty() {
            // Where the time goes: each stage's time summed over the threads that ran it.
            let parts: Vec<String> = STAGES
                .iter()
                .filter_map(|k| s.stage_seconds.get(*k).map(|v| (k, v)))
                .map(|(k, v)| format!("{k} {v:.2}"))
                .collect();
            println!("  stages (s, all threads): {}", parts.join(", "));
        }
        let db_bytes = self.rt.block_on(database_bytes(url))?;
        println!(
            "  database size {:.1} MB = {:.1}% of the transcript bytes",
            db_bytes as f64 / 1e6,
            db_bytes as f64 * 100.0 / s.bytes.max(1) as f64
        );
        if s.errors > 0 {
            self.problems
                .push(format!("{name}: first ingest reported {} errors", s.errors));
        }
        let Ingest(again, wall, ..) = self.ingest(
            projects,
            url,
            &self.work.join(format!("ingest-{name}-2.log")),
        )?;
        println!(
            "  second pass: {} rows, {} bytes added in {:.2} s (wall {wall:.2} s)",
            again.rows, again.bytes, again.seconds
        );
        if again.rows != 0 || again.bytes != 0 {
            self.problems.push(format!(
                "{name}: second ingest added {} rows, {} bytes",
                again.rows, again.bytes
            ));
        }
        let (msgs, files) = self.rt.block_on(async {
            let mut db = Reader::connect(url).await?;
            let m = db.count("SELECT COUNT(*) FROM messages").await?;
            anyhow::Ok((m, db.count("SELECT COUNT(*) FROM files").await?))
        })?;
        println!("  database: {msgs} messages, {files} files");
        if msgs as u64 != s.rows || files as u64 != s.files {
            self.problems.push(format!(
                "{name}: database has {msgs} messages, {files} files; summary said {}, {}",
                s.rows, s.files
            ));
        }
        Ok(first)
    }
}

fn log_tail(log: &Path) -> String {
    let text = fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(3)..].join(" | ");
    format!(
        "log {}: {}",
        log.display(),
        if tail.is_empty() { "(empty)" } else { &tail }
    )
}

/// Read-only connection polling gleaner's tables.
enum Reader {
    Lite(sqlx::SqliteConnection),
    Pg(sqlx::PgConnection),
}

impl Reader {
    async fn connect(url: &str) -> Result<Reader> {
        if !url.starts_with("sqlite:") {
            return Ok(Reader::Pg(pg_connect(url).await?));
        }
        let o = sqlx::sqlite::SqliteConnectOptions::from_str(url)?;
        Ok(Reader::Lite(
            o.read_only(true)
                .busy_timeout(Duration::from_secs(5))
                .connect()
                .await?,
        ))
    }

    async fn count(&mut self, sql: &str) -> Result<i64> {
        Ok(match self {
            Reader::Lite(c) => sqlx::query_scalar(sql).fetch_one(c).await?,
            Reader::Pg(c) => sqlx::query_scalar(sql).fetch_one(c).await?,
        })
    }

    async fn offset(&mut self, path: &str) -> Result<Option<i64>> {
        const Q: &str = "SELECT byte_offset FROM files WHERE machine = $1 AND path = $2";
        Ok(match self {
            Reader::Lite(c) => {
                sqlx::query_scalar(Q)
                    .bind(MACHINE)
                    .bind(path)
                    .fetch_optional(c)
                    .await?
            }
            Reader::Pg(c) => {
                sqlx::query_scalar(Q)
                    .bind(MACHINE)
                    .bind(path)
                    .fetch_optional(c)
                    .await?
            }
        })
    }

    async fn close(self) {
        let _ = match self {
            Reader::Lite(c) => c.close().await,
            Reader::Pg(c) => c.close().await,
        };
    }
}
