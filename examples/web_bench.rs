//! Web view benchmark: `gleaner ingest` of the real corpus into SQLite and PostgreSQL, then
//! `gleaner web`, and p50/p99 of a page load (HTTP GET to the last byte) for the home page, the
//! sessions page, a search, and the session page of the largest corpus session (most stored
//! messages) and of the one with most episodes.
//!
//! ```text
//! cargo run --release --example web_bench -- [--runs 50] [--skip-postgres]
//! ```
//! PostgreSQL admin URL: `GLEANER_BENCH_PG_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`).

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Parser;

#[path = "common/mod.rs"]
mod common;
use common::{binary, percentile, pg_exec, pg_url};

const DEFAULT_CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus/real");
const DEFAULT_PG: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// Benchmark the web view.
#[derive(Parser)]
struct Opts {
    /// Real transcripts to ingest.
    #[arg(long, default_value = DEFAULT_CORPUS)]
    corpus: PathBuf,
    /// Timed loads per page.
    #[arg(long, default_value_t = 50)]
    runs: usize,
    /// Do not benchmark PostgreSQL.
    #[arg(long)]
    skip_postgres: bool,
}

fn gleaner(bin: &Path, home: &Path, corpus: &Path, url: &str) -> Command {
    let mut c = Command::new(bin);
    c.env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("GLEANER_LOG__LEVEL", "warn")
        .arg("--projects-dir")
        .arg(corpus)
        .arg("--database-url")
        .arg(url);
    c
}

fn load(url: &str) -> Result<(Duration, usize)> {
    let t = Instant::now();
    let body = ureq::get(url)
        .timeout(Duration::from_secs(30))
        .call()
        .with_context(|| format!("GET {url}"))?
        .into_string()?;
    Ok((t.elapsed(), body.len()))
}

fn leg(bin: &Path, corpus: &Path, url: &str, label: &str, runs: usize) -> Result<()> {
    let home = tempfile::tempdir()?;
    let out = gleaner(bin, home.path(), corpus, url)
        .args(["ingest", "--json"])
        .output()?;
    if !out.status.success() {
        bail!("ingest failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let mut web = gleaner(bin, home.path(), corpus, url)
        .args(["web", "--bind", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut line = String::new();
    std::io::BufReader::new(web.stdout.take().context("stdout")?).read_line(&mut line)?;
    let base = line
        .trim()
        .strip_prefix("Gleaner web view: ")
        .context("no URL printed")?
        .trim_end_matches('/')
        .to_string();
    let rt = tokio::runtime::Runtime::new()?;
    let store = rt.block_on(gleaner::store::Store::connect(&gleaner::store::Options {
        url: url.to_string(),
        max_connections: 2,
        connect_timeout: Duration::from_secs(5),
    }))?;
    let (largest, most_episodes, biggest) = rt.block_on(async {
        let store = &store;
        let q = |sql: &'static str| async move {
            let v: Option<(String, i64)> = match store {
                gleaner::store::Store::Sqlite(p) => sqlx::query_as(sql).fetch_optional(p).await,
                gleaner::store::Store::Postgres(p) => sqlx::query_as(sql).fetch_optional(p).await,
            }
            .with_context(|| sql.to_string())?;
            anyhow::Ok(v.unwrap_or_default())
        };
        // A message's session is its file's (messages keep no session id since migration 0008).
        anyhow::Ok((
            q("SELECT f.session_id, COUNT(*) AS n FROM messages m JOIN files f ON f.id = m.file_id \
               WHERE f.session_id IS NOT NULL GROUP BY f.session_id ORDER BY n DESC LIMIT 1")
            .await?,
            q("SELECT session_id, COUNT(*) AS n FROM episodes GROUP BY session_id ORDER BY n DESC LIMIT 1").await?,
            q("SELECT session_id, size FROM files WHERE kind = 'main' ORDER BY size DESC LIMIT 1").await?,
        ))
    })?;
    rt.block_on(store.close());
    let pages = [
        ("home", format!("{base}/")),
        (
            "sessions (50 of all, by recent)",
            format!("{base}/sessions"),
        ),
        (
            "sessions sorted by snippets",
            format!("{base}/sessions?sort=snippets"),
        ),
        ("search \"error\"", format!("{base}/?q=error")),
        (
            "session with most messages",
            format!("{base}/sessions/{}", largest.0),
        ),
        (
            "largest transcript's session page",
            format!("{base}/sessions/{}", biggest.0),
        ),
        (
            "session with most episodes",
            format!("{base}/sessions/{}", most_episodes.0),
        ),
        ("snippets", format!("{base}/snippets")),
    ];
    println!(
        "\n{label}: most messages {} ({}), largest transcript {} ({} bytes), most episodes {} ({})",
        largest.0, largest.1, biggest.0, biggest.1, most_episodes.0, most_episodes.1
    );
    println!(
        "{:<34} {:>9} {:>9} {:>10}",
        "page", "p50 ms", "p99 ms", "bytes"
    );
    for (name, url) in &pages {
        load(url)?; // warm
        let mut times = Vec::with_capacity(runs);
        let mut size = 0;
        for _ in 0..runs {
            let (t, n) = load(url)?;
            times.push(t.as_secs_f64() * 1000.0);
            size = n;
        }
        println!(
            "{name:<34} {:>9.1} {:>9.1} {size:>10}",
            percentile(&times, 0.5),
            percentile(&times, 0.99)
        );
    }
    let _ = web.kill();
    let _ = web.wait();
    Ok(())
}

fn run() -> Result<()> {
    let opts = Opts::parse();
    let bin = binary()?;
    let corpus = opts.corpus.canonicalize()?;
    let sqlite = tempfile::tempdir()?;
    let url = format!("sqlite://{}", sqlite.path().join("web.db").display());
    leg(&bin, &corpus, &url, "SQLite", opts.runs)?;
    if !opts.skip_postgres {
        let admin = std::env::var("GLEANER_BENCH_PG_URL").unwrap_or_else(|_| DEFAULT_PG.into());
        let db = format!("gleaner_web_bench_{}", std::process::id());
        let rt = tokio::runtime::Runtime::new()?;
        rt.block_on(pg_exec(&admin, &format!("CREATE DATABASE {db}")))?;
        let r = leg(&bin, &corpus, &pg_url(&admin, &db), "PostgreSQL", opts.runs);
        rt.block_on(pg_exec(
            &admin,
            &format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"),
        ))?;
        r?;
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("web_bench: {e:#}");
            ExitCode::from(2)
        }
    }
}
