//! Query benchmark at scale: does what a door costs stay flat as the store grows?
//!
//! Builds a store from a real-shaped tree (copies of `../shared/corpus/real` with fresh ids) of
//! `--gb` GB, on SQLite and PostgreSQL, then times every MCP tool with its default arguments,
//! every web page and every CLI listing with its default page (p50 / p99 of `--runs` calls)
//! and the peak RSS of each CLI command (`wait4`). With `--grow N` the store is then grown to
//! N times that size (more copies ingested, a part at a time, each part deleted after its
//! ingest so the disk holds one part) and everything is timed again.
//!
//! ```text
//! cargo build --release
//! cargo run --release --example query_bench -- [--gb 5] [--grow 10] [--runs 30]
//!     [--work DIR] [--skip-postgres] [--skip-sqlite] [--build-only] [--pg-db NAME]
//!     [--time-only GB]
//! ```
//! PostgreSQL admin URL: `GLEANER_BENCH_PG_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`).
//! A work folder given with `--work` is kept (its stores are built anew each run).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Parser;
use serde_json::{json, Value};

#[path = "common/mod.rs"]
mod common;
use common::mcp::McpClient;
use common::proc::wait_pid;
use common::tree::Corpus;
use common::{binary, percentile, pg_exec, pg_url};

const DEFAULT_CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus/real");
const DEFAULT_PG: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// Time the doors on a large store.
#[derive(Parser)]
struct Opts {
    /// Size of the real-shaped tree the first store is built from, in GB (10^9 bytes).
    #[arg(long, default_value_t = 5.0)]
    gb: f64,
    /// Then grow the store to this many times the first size and time again (1: do not).
    #[arg(long, default_value_t = 10)]
    grow: u64,
    /// Timed calls per probe.
    #[arg(long, default_value_t = 30)]
    runs: usize,
    /// Work folder (kept).
    #[arg(long)]
    work: Option<PathBuf>,
    /// Real transcripts copied to build the tree.
    #[arg(long, default_value = DEFAULT_CORPUS)]
    corpus: PathBuf,
    /// Do not benchmark PostgreSQL.
    #[arg(long)]
    skip_postgres: bool,
    /// Do not benchmark SQLite.
    #[arg(long)]
    skip_sqlite: bool,
    /// Build nothing: time the stores already in `--work` (built by an earlier run, its last
    /// part's tree still there), reporting them as a tree of this many GB.
    #[arg(long, value_name = "GB")]
    time_only: Option<f64>,
    /// Build (and grow) the stores, time nothing, keep the last part's tree: the stores are
    /// then timed with `--time-only`, several sizes back to back with one binary (a build runs
    /// for long; timing wants a quiet machine).
    #[arg(long)]
    build_only: bool,
    /// The PostgreSQL database of the store (two sizes side by side need two names).
    #[arg(long, default_value = "gleaner_qbench")]
    pg_db: String,
}

/// One probe's timings.
struct Row {
    door: &'static str,
    probe: String,
    ms: Vec<f64>,
    rss_mb: Option<f64>,
}

fn gleaner(bin: &Path, home: &Path, projects: &Path, url: &str) -> Command {
    common::gleaner_cmd(bin, home, projects, url, "qbench")
}

/// One `gleaner ingest` of `projects` into `url`; its wall time.
fn ingest(bin: &Path, home: &Path, projects: &Path, url: &str) -> Result<f64> {
    let t = Instant::now();
    let out = gleaner(bin, home, projects, url)
        .args(["ingest", "--json"])
        .stderr(Stdio::inherit())
        .output()
        .context("gleaner ingest")?;
    if !out.status.success() {
        bail!(
            "gleaner ingest failed: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    Ok(t.elapsed().as_secs_f64())
}

/// Add one part of `part_bytes` to every store in `urls`, copies numbered from `first`: the
/// part is written to `tree` (replacing the previous part: the disk holds one) and ingested
/// into each store. Returns the next copy number.
fn add_part(
    o: &Ctx,
    urls: &[(&str, String)],
    tree: &Path,
    part_bytes: u64,
    first: u64,
) -> Result<u64> {
    let _ = std::fs::remove_dir_all(tree);
    std::fs::create_dir_all(tree)?;
    let t = Instant::now();
    let (bytes, files, next) = o.corpus.generate_copies(tree, part_bytes, first)?;
    eprint!(
        "  part of {:.2} GB ({files} files) made in {:.0} s; ingested:",
        bytes as f64 / 1e9,
        t.elapsed().as_secs_f64()
    );
    for (name, url) in urls {
        let secs = ingest(&o.bin, &o.home, tree, url)?;
        eprint!(" {name} {secs:.0} s");
    }
    eprintln!();
    Ok(next)
}

struct Ctx {
    bin: PathBuf,
    home: PathBuf,
    corpus: Corpus,
    runs: usize,
}

/// Time `f` `runs` times (after one warm-up call), in ms.
fn time(runs: usize, mut f: impl FnMut() -> Result<()>) -> Result<Vec<f64>> {
    f()?;
    let mut ms = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        f()?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(ms)
}

/// A session whose main transcript is on disk (the last part's tree is kept), of a few hundred
/// KB: what `get_session`, `get_transcript_lines` and the session page are timed on.
fn pick_session(tree: &Path) -> Result<String> {
    let mut best: Option<(u64, String)> = None;
    let mut stack = vec![tree.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)?.flatten() {
            let p = e.path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n != "subagents") {
                    stack.push(p);
                }
                continue;
            }
            let Some(stem) = p.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            let size = e.metadata().map_or(0, |m| m.len());
            let is_session = stem.len() == 36 && stem.bytes().filter(|b| *b == b'-').count() == 4;
            // Closest to 300 KB: an ordinary session, not the corpus's largest.
            let score = size.abs_diff(300_000);
            if is_session && size > 50_000 && best.as_ref().is_none_or(|(s, _)| score < *s) {
                best = Some((score, stem.to_string()));
            }
        }
    }
    best.map(|(_, id)| id)
        .context("no session transcript in the tree")
}

fn mcp_probes(o: &Ctx, url: &str, sid: &str, rows: &mut Vec<Row>) -> Result<()> {
    let mut c = McpClient::start(&o.bin, url)?;
    let content = "When the store grows, every listing must page in SQL over an index, so that \
                   the cost of one call depends on the page and never on the size of the store.";
    let probes: Vec<(&str, Value)> = vec![
        ("search", json!({"query": "error"})),
        ("list_sessions", json!({})),
        ("get_session", json!({"session_id": sid})),
        ("get_summaries", json!({})),
        ("query_feedback", json!({})),
        ("query_snippets", json!({})),
        ("list_episodes", json!({})),
        ("export_learnings", json!({})),
        ("get_usage", json!({})),
        ("get_conversation", json!({"session_id": sid})),
        (
            "get_transcript_lines",
            json!({"session_id": sid, "start_line": 1, "end_line": 50}),
        ),
        (
            "extract_snippet",
            json!({"session_id": sid, "snippet_type": "learning_pattern",
                   "title": "Listings page in SQL", "content": content}),
        ),
    ];
    for (tool, args) in probes {
        let ms = time(o.runs, || c.call(tool, args.clone()).map(|_| ()))?;
        rows.push(Row {
            door: "mcp",
            probe: tool.to_string(),
            ms,
            rss_mb: None,
        });
    }
    Ok(())
}

fn web_probes(o: &Ctx, url: &str, projects: &Path, sid: &str, rows: &mut Vec<Row>) -> Result<()> {
    let mut child = gleaner(&o.bin, &o.home, projects, url)
        .args(["web", "--bind", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut out = std::io::BufReader::new(child.stdout.take().context("stdout")?);
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line)?;
    let base = line
        .trim()
        .strip_prefix("Gleaner web view: ")
        .context("no URL printed")?
        .trim_end_matches('/')
        .to_string();
    let pages = [
        ("/".to_string(), "home"),
        ("/?q=error".to_string(), "search"),
        ("/sessions".to_string(), "sessions"),
        (format!("/sessions/{sid}"), "session"),
        (format!("/sessions/{sid}/lines?from=1&to=50"), "lines"),
        ("/snippets".to_string(), "snippets"),
    ];
    let result = (|| -> Result<()> {
        for (path, name) in &pages {
            let u = format!("{base}{path}");
            let ms = time(o.runs, || {
                let r = ureq::get(&u).timeout(Duration::from_secs(60)).call()?;
                r.into_string()?;
                Ok(())
            })?;
            rows.push(Row {
                door: "web",
                probe: name.to_string(),
                ms,
                rss_mb: None,
            });
        }
        Ok(())
    })();
    let _ = child.kill();
    let _ = child.wait();
    result
}

fn cli_probes(o: &Ctx, url: &str, projects: &Path, sid: &str, rows: &mut Vec<Row>) -> Result<()> {
    let probes: Vec<Vec<&str>> = vec![
        vec!["sessions"],
        vec!["summaries"],
        vec!["feedback"],
        vec!["episodes"],
        vec!["snippets"],
        vec!["search", "error"],
        vec!["files"],
        vec!["text", sid],
        vec!["export", "--format", "md", "--session", sid],
        vec!["usage"],
        vec!["usage", "--by", "month"],
        vec!["usage", "--by", "session"],
        vec!["usage", "--by", "project"],
        vec!["usage", "--by", "machine"],
        vec!["usage", "--by", "model"],
        vec!["usage", "--by", "block"],
    ];
    for args in probes {
        rows.push(cli_row(o, url, projects, &args, args.join(" "))?);
    }
    context_probes(o, url, projects, sid, rows)?;
    // A whole export streams: its memory must not follow the store.
    let t = Instant::now();
    let child = gleaner(&o.bin, &o.home, projects, url)
        .args(["export", "--format", "jsonl"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let (code, _, peak) = wait_pid(child.id() as i32, true)?.context("vanished")?;
    if code != 0 {
        bail!("gleaner export exited {code}");
    }
    rows.push(Row {
        door: "cli",
        probe: "export --format jsonl (every session)".into(),
        ms: vec![t.elapsed().as_secs_f64() * 1e3],
        rss_mb: Some(peak as f64 / 1e6),
    });
    Ok(())
}

/// The digest of a new session's start: the `SessionStart` hook (process start to exit, as
/// Claude Code waits for it) and `gleaner context`, for the project of session `sid`. Skipped
/// for a binary without them (an older baseline).
fn context_probes(
    o: &Ctx,
    url: &str,
    projects: &Path,
    sid: &str,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let has = gleaner(&o.bin, &o.home, projects, url)
        .args(["context", "--help"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    if !has.success() {
        return Ok(());
    }
    let shown = gleaner(&o.bin, &o.home, projects, url)
        .args(["show", sid, "--json"])
        .output()?;
    let shown: serde_json::Value = serde_json::from_slice(&shown.stdout)?;
    // The project's folder (the tree's copies keep their source's working directories, whose
    // folders are not the copies'): the hook takes a folder name as it takes a path.
    let cwd = shown["session"]["project"]
        .as_str()
        .unwrap_or("/")
        .to_string();
    let input = serde_json::json!({
        "session_id": sid, "cwd": cwd, "hook_event_name": "SessionStart", "source": "startup",
    })
    .to_string();
    let mut bytes = 0;
    let ms = time(o.runs, || {
        use std::io::Write;
        let mut child = gleaner(&o.bin, &o.home, projects, url)
            .args(["hook", "session-start"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        child
            .stdin
            .take()
            .context("stdin")?
            .write_all(input.as_bytes())?;
        let out = child.wait_with_output()?;
        bytes = out.stdout.len();
        Ok(())
    })?;
    rows.push(Row {
        door: "cli",
        probe: format!("hook session-start ({bytes} bytes out)"),
        ms,
        rss_mb: None,
    });
    let args = ["context", "--project", &cwd, "--exclude", sid];
    rows.push(cli_row(o, url, projects, &args, "context".into())?);
    Ok(())
}

/// `gleaner ARGS` timed `o.runs` times (output discarded), with its peak RSS.
fn cli_row(o: &Ctx, url: &str, projects: &Path, args: &[&str], probe: String) -> Result<Row> {
    let mut rss = 0u64;
    let ms = time(o.runs, || {
        let child = gleaner(&o.bin, &o.home, projects, url)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let (code, _, peak) = wait_pid(child.id() as i32, true)?.context("vanished")?;
        if code != 0 {
            bail!("gleaner {args:?} exited {code}");
        }
        rss = rss.max(peak);
        Ok(())
    })?;
    Ok(Row {
        door: "cli",
        probe,
        ms,
        rss_mb: Some(rss as f64 / 1e6),
    })
}

/// Sessions and files in the store, and its size on disk.
fn store_figures(o: &Ctx, url: &str, projects: &Path) -> Result<String> {
    let _ = (o, projects);
    let sessions = sql_count(url, "SELECT COUNT(*) FROM sessions")?;
    let files = sql_count(url, "SELECT COUNT(*) FROM files")?;
    let messages = sql_count(url, "SELECT COUNT(*) FROM messages")?;
    let size = if let Some(path) = url.strip_prefix("sqlite://") {
        std::fs::metadata(path).map_or(0, |m| m.len())
    } else {
        let db = url.rsplit('/').next().unwrap_or_default();
        sql_count(url, &format!("SELECT pg_database_size('{db}')"))? as u64
    };
    Ok(format!(
        "{sessions} sessions, {files} files, {messages} messages, database {:.0} MB",
        size as f64 / 1e6
    ))
}

/// PostgreSQL: refresh the planner's statistics (what autovacuum does on a store in use).
fn analyze(url: &str) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        use sqlx::Connection;
        let mut c = sqlx::PgConnection::connect(url).await?;
        sqlx::query("ANALYZE").execute(&mut c).await?;
        Ok(())
    })
}

fn sql_count(url: &str, q: &str) -> Result<i64> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        use sqlx::Connection;
        if url.starts_with("sqlite://") {
            let mut c = sqlx::SqliteConnection::connect(url).await?;
            let n: i64 = sqlx::query_scalar(q).fetch_one(&mut c).await?;
            Ok(n)
        } else {
            let mut c = sqlx::PgConnection::connect(url).await?;
            let n: i64 = sqlx::query_scalar(q).fetch_one(&mut c).await?;
            Ok(n)
        }
    })
}

fn report(title: &str, rows: &[Row]) {
    println!("\n{title}");
    println!(
        "{:<5} {:<42} {:>9} {:>9} {:>10}",
        "door", "probe", "p50 ms", "p99 ms", "peak RSS"
    );
    for r in rows {
        let rss = r.rss_mb.map_or(String::new(), |m| format!("{m:.1} MB"));
        println!(
            "{:<5} {:<42} {:>9.1} {:>9.1} {:>10}",
            r.door,
            r.probe,
            percentile(&r.ms, 0.5),
            percentile(&r.ms, 0.99),
            rss
        );
    }
}

fn measure(o: &Ctx, url: &str, projects: &Path, sid: &str) -> Result<Vec<Row>> {
    let sid = sid.to_string();
    let mut rows = Vec::new();
    mcp_probes(o, url, &sid, &mut rows)?;
    web_probes(o, url, projects, &sid, &mut rows)?;
    cli_probes(o, url, projects, &sid, &mut rows)?;
    Ok(rows)
}

fn run(opts: Opts) -> Result<()> {
    let bin = binary()?;
    let keep = opts.work.is_some();
    let work = match &opts.work {
        Some(w) => w.clone(),
        None => std::env::temp_dir().join(format!("gleaner-qbench-{}", std::process::id())),
    };
    std::fs::create_dir_all(&work)?;
    let home = work.join("home");
    std::fs::create_dir_all(home.join("run"))?;
    let o = Ctx {
        bin,
        home,
        corpus: Corpus::scan(&opts.corpus)?.with_fresh_ids(),
        runs: opts.runs,
    };
    let part = (opts.gb * 1e9) as u64;
    let admin = std::env::var("GLEANER_BENCH_PG_URL").unwrap_or_else(|_| DEFAULT_PG.into());
    let mut backends: Vec<(&str, String)> = Vec::new();
    if !opts.skip_sqlite {
        backends.push((
            "SQLite",
            format!(
                "sqlite://{}",
                work.join(format!("store-{}gb.db", opts.gb)).display()
            ),
        ));
    }
    if !opts.skip_postgres {
        backends.push(("PostgreSQL", pg_url(&admin, &opts.pg_db)));
    }
    let tree = work.join("tree");
    let rt = tokio::runtime::Runtime::new()?;
    for (name, url) in backends.iter().filter(|_| opts.time_only.is_none()) {
        match *name {
            "SQLite" => {
                let path = url.trim_start_matches("sqlite://");
                for suffix in ["", "-wal", "-shm", "-migrate.lock"] {
                    let _ = std::fs::remove_file(format!("{path}{suffix}"));
                }
            }
            _ => {
                let db = &opts.pg_db;
                rt.block_on(pg_exec(
                    &admin,
                    &format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"),
                ))?;
                rt.block_on(pg_exec(&admin, &format!("CREATE DATABASE {db}")))?;
            }
        }
    }
    // Rows gathered per backend and size, printed together at the end.
    let mut results: Vec<(String, Vec<Row>)> = Vec::new();
    let time_all = |label: f64, results: &mut Vec<(String, Vec<Row>)>| -> Result<()> {
        let sid = pick_session(&tree)?;
        for (name, url) in &backends {
            // A store in use has its statistics kept by autovacuum; one just built in minutes
            // has not had them yet.
            if *name == "PostgreSQL" {
                analyze(url)?;
            }
            let figures = store_figures(&o, url, &work)?;
            eprintln!("{name}: {figures}; timing on session {sid}");
            let rows = measure(&o, url, &work, &sid)?;
            let title = format!("{name}, {label} GB tree: {figures}");
            report(&title, &rows);
            results.push((title, rows));
        }
        Ok(())
    };
    if let Some(gb) = opts.time_only {
        time_all(gb, &mut results)?;
        return Ok(());
    }
    eprintln!("building the {} GB stores", opts.gb);
    let mut next = add_part(&o, &backends, &tree, part, 0)?;
    if !opts.build_only {
        time_all(opts.gb, &mut results)?;
    }
    if opts.grow > 1 {
        eprintln!("growing the stores to {}x", opts.grow);
        for _ in 1..opts.grow {
            next = add_part(&o, &backends, &tree, part, next)?;
        }
        if !opts.build_only {
            time_all(opts.gb * opts.grow as f64, &mut results)?;
        }
    }
    if opts.build_only {
        for (name, url) in &backends {
            if *name == "PostgreSQL" {
                analyze(url)?;
            }
            eprintln!("{name}: {}", store_figures(&o, url, &work)?);
        }
        return Ok(());
    }
    let _ = std::fs::remove_dir_all(&tree);
    if !keep && !opts.skip_postgres {
        rt.block_on(pg_exec(
            &admin,
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", opts.pg_db),
        ))?;
    }
    println!("\n(every table above, again)");
    for (title, rows) in &results {
        report(title, rows);
    }
    if !keep {
        let _ = std::fs::remove_dir_all(&work);
    }
    Ok(())
}

fn main() -> ExitCode {
    match run(Opts::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("query_bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}
