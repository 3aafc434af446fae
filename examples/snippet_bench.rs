//! Query latency of `Store::list_snippets` (what `gleaner snippets` runs) on a large snippet
//! table, in SQLite and in PostgreSQL.
//!
//! ```text
//! cargo run --release --example snippet_bench -- [--count 100000] [--repeat 20]
//!     [--corpus DIR] [--skip-postgres]
//! ```
//! Snippet texts are real assistant text blocks of the corpus (100 to 4,000 bytes each), spread
//! over ~2,000 sessions, three types, 1 to 4 tags out of 50 (skewed: a few tags are common) and
//! 60 days. Each query runs once to warm up, then `--repeat` times; the table gives p50 and p99
//! in ms, the number of matches, and whether p99 stays under the 50 ms target.
//!
//! PostgreSQL admin URL: `GLEANER_BENCH_PG_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`); the bench database is created fresh and
//! dropped at the end. PostgreSQL gets `VACUUM ANALYZE` after the load (what autovacuum does
//! shortly after a bulk insert); SQLite gets nothing, as gleaner never runs `ANALYZE`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use clap::Parser;
use gleaner::extract::rows::iso_from_unix_millis;
use gleaner::parse::{parse_line, Block, Content, Kind};
use gleaner::store::Options as DatabaseConfig;
use gleaner::store::{SnippetFilter, Store};
use sqlx::{QueryBuilder, Row};

const DEFAULT_CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus/real");
const DEFAULT_PG: &str = "postgres://postgres@127.0.0.1:5432/postgres";
const TYPES: [&str; 3] = ["error_reasoning", "decision_rationale", "learning_pattern"];
const SESSIONS: usize = 2000;
const TAGS: usize = 50;
const DAYS: i64 = 60;
/// Rows per transaction, and per multi-row `INSERT` statement (14 columns x 500 binds).
const ROWS_PER_TX: usize = 1000;
const ROWS_PER_INSERT: usize = 500;
const TARGET_MS: f64 = 50.0;

/// Benchmark snippet queries.
#[derive(Parser)]
struct Opts {
    /// Snippets to insert.
    #[arg(long, default_value_t = 100_000)]
    count: usize,
    /// Timed runs per query.
    #[arg(long, default_value_t = 20)]
    repeat: usize,
    /// Real transcripts to take assistant text from.
    #[arg(long, default_value = DEFAULT_CORPUS)]
    corpus: PathBuf,
    /// Do not benchmark PostgreSQL.
    #[arg(long)]
    skip_postgres: bool,
    /// Write the SQLite database into this folder and keep it (default: a temporary folder).
    #[arg(long)]
    work: Option<PathBuf>,
    /// Keep the PostgreSQL database (its name is printed) for EXPLAIN sessions.
    #[arg(long)]
    keep_postgres: bool,
}

#[path = "common/mod.rs"]
mod common;
#[path = "snippet_bench/data.rs"]
mod data;
use common::mcp::McpClient;
use common::{percentile, pg_exec, pg_url};
use data::{generate, load_texts, pick_words, Words};
use serde_json::json;

fn main() -> ExitCode {
    match run() {
        Ok(0) => ExitCode::SUCCESS,
        Ok(n) => {
            eprintln!("snippet_bench: {n} query type(s) over {TARGET_MS} ms at p99");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("snippet_bench: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Deterministic generator (SplitMix64): the same data on every run and on both backends.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// One generated snippet.
struct Gen {
    session: usize,
    snippet_type: &'static str,
    origin: &'static str,
    title: String,
    text: usize,
    tags: Vec<String>,
    line_start: i64,
    line_end: i64,
    created_at: String,
    hash: String,
}

fn session_id(s: usize) -> String {
    format!("{s:08x}-5eed-4000-8000-{:012x}", s * 7919)
}

fn project(s: usize) -> String {
    format!("-home-dev-src-project{:02}", s % 40)
}

fn tag(t: usize) -> String {
    const KINDS: [&str; 5] = ["tool", "ext", "error", "topic", "lang"];
    format!("{}:{t:02}", KINDS[t % KINDS.len()])
}

fn run() -> Result<usize> {
    let opts = Opts::parse();
    let t0 = Instant::now();
    let texts = load_texts(&opts.corpus)?;
    anyhow::ensure!(
        !texts.is_empty(),
        "no assistant text found in {}",
        opts.corpus.display()
    );
    println!(
        "{} distinct assistant texts (100..4000 bytes) from {} in {:.1} s",
        texts.len(),
        opts.corpus.display(),
        t0.elapsed().as_secs_f64()
    );
    // One clock for the data and for `--since 7d`, so both backends see the same window.
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let rows = generate(opts.count, &texts, now);
    let since = iso_from_unix_millis(now - 7 * 86_400_000);
    let words = pick_words(&rows, &texts);
    println!(
        "keywords: common {:?} (~{} rows), rare {:?} (~{} rows), 2-char {:?} (~{} rows)",
        words.common.0, words.common.1, words.rare.0, words.rare.1, words.short.0, words.short.1
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let mut misses = 0;

    let tmp = tempfile::Builder::new()
        .prefix("gleaner-snippet-bench-")
        .tempdir_in(std::env::temp_dir())?;
    let dir = opts
        .work
        .clone()
        .unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir)?;
    for f in ["bench.db", "bench.db-wal", "bench.db-shm"] {
        let _ = std::fs::remove_file(dir.join(f));
    }
    let url = format!("sqlite://{}", dir.join("bench.db").display());
    misses += rt.block_on(bench("sqlite", &url, &rows, &texts, &words, &since, &opts))?;

    if !opts.skip_postgres {
        let admin = std::env::var("GLEANER_BENCH_PG_URL").unwrap_or_else(|_| DEFAULT_PG.into());
        let db = format!("gleaner_bench_{}", std::process::id());
        match rt.block_on(pg_exec(&admin, &format!("CREATE DATABASE \"{db}\""))) {
            Err(e) => println!("postgres: cannot create a database at {admin} ({e:#}); skipped"),
            Ok(()) => {
                let url = pg_url(&admin, &db);
                let result = rt.block_on(bench(
                    "postgres", &url, &rows, &texts, &words, &since, &opts,
                ));
                if opts.keep_postgres {
                    println!("kept PostgreSQL database {db}");
                    misses += result?;
                } else {
                    let sql = format!("DROP DATABASE IF EXISTS \"{db}\" WITH (FORCE)");
                    let dropped = rt.block_on(pg_exec(&admin, &sql));
                    misses += result?;
                    dropped.with_context(|| format!("cannot drop database {db}"))?;
                }
            }
        }
    }
    Ok(misses)
}

/// Insert one chunk of rows in one transaction; a macro because the pool type differs.
macro_rules! insert_chunk {
    ($pool:expr, $chunk:expr, $texts:expr) => {{
        let mut tx = $pool.begin().await?;
        let mut ids: HashMap<String, i64> = HashMap::new();
        for part in $chunk.chunks(ROWS_PER_INSERT) {
            let mut qb = QueryBuilder::new(
                "INSERT INTO snippets (session_id, episode_id, origin, snippet_type, title, \
                 content, content_hash, project, source_file, line_start, line_end, tags, \
                 metadata, created_at) ",
            );
            qb.push_values(part, |mut b, r: &Gen| {
                let sid = session_id(r.session);
                let content = &$texts[r.text];
                let words = content.split_whitespace().count();
                b.push_bind(sid.clone())
                    .push_bind(None::<i64>)
                    .push_bind(r.origin)
                    .push_bind(r.snippet_type)
                    .push_bind(r.title.clone())
                    .push_bind(content.clone())
                    .push_bind(r.hash.clone())
                    .push_bind(project(r.session))
                    .push_bind(format!(
                        "/home/dev/.claude/projects/{}/{sid}.jsonl",
                        project(r.session)
                    ))
                    .push_bind(r.line_start)
                    .push_bind(r.line_end)
                    .push_bind(serde_json::to_string(&r.tags).unwrap_or_default())
                    .push_bind(format!(
                        r#"{{"word_count":{words},"reading_time_s":{},"version":1}}"#,
                        words / 4
                    ))
                    .push_bind(r.created_at.clone());
            });
            qb.push(" RETURNING id, content_hash");
            for row in qb.build().fetch_all(&mut *tx).await? {
                ids.insert(row.try_get("content_hash")?, row.try_get("id")?);
            }
        }
        let tags: Vec<(String, i64)> = $chunk
            .iter()
            .flat_map(|r: &Gen| {
                let id = ids.get(&r.hash).copied().unwrap_or_default();
                r.tags.iter().map(move |t| (t.clone(), id))
            })
            .collect();
        for part in tags.chunks(ROWS_PER_INSERT * 4) {
            let mut qb = QueryBuilder::new("INSERT INTO snippet_tags (tag, snippet_id) ");
            qb.push_values(part, |mut b, (t, id)| {
                b.push_bind(t.clone()).push_bind(*id);
            });
            qb.build().execute(&mut *tx).await?;
        }
        tx.commit().await?;
    }};
}

/// Sessions rows, so `--project` can also look at working directories.
macro_rules! insert_sessions {
    ($pool:expr) => {{
        let mut tx = $pool.begin().await?;
        let all: Vec<usize> = (0..SESSIONS).collect();
        for part in all.chunks(ROWS_PER_INSERT) {
            let mut qb = QueryBuilder::new(
                "INSERT INTO sessions (session_id, machine, project, cwd, created_at, updated_at) ",
            );
            qb.push_values(part, |mut b, s| {
                b.push_bind(session_id(*s))
                    .push_bind("bench")
                    .push_bind(project(*s))
                    .push_bind(format!("/home/dev/src/project{:02}", s % 40))
                    .push_bind("2026-01-01T00:00:00.000Z")
                    .push_bind("2026-01-01T00:00:00.000Z");
            });
            qb.build().execute(&mut *tx).await?;
        }
        tx.commit().await?;
    }};
}

async fn load(store: &Store, rows: &[Gen], texts: &[String]) -> Result<()> {
    match store {
        Store::Sqlite(pool) => insert_sessions!(pool),
        Store::Postgres(pool) => insert_sessions!(pool),
    }
    for chunk in rows.chunks(ROWS_PER_TX) {
        match store {
            Store::Sqlite(pool) => insert_chunk!(pool, chunk, texts),
            Store::Postgres(pool) => insert_chunk!(pool, chunk, texts),
        }
    }
    if let Store::Postgres(pool) = store {
        sqlx::query("VACUUM ANALYZE").execute(pool).await?;
    }
    Ok(())
}

/// Load the rows into a fresh database at `url`, time every query type, print the table.
/// Returns the number of query types whose p99 misses the target.
async fn bench(
    name: &str,
    url: &str,
    rows: &[Gen],
    texts: &[String],
    words: &Words,
    since: &str,
    opts: &Opts,
) -> Result<usize> {
    let store = Store::connect(&DatabaseConfig {
        url: url.to_string(),
        max_connections: 2,
        connect_timeout: Duration::from_secs(10),
    })
    .await?;
    let t0 = Instant::now();
    load(&store, rows, texts).await?;
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "\n{name}: inserted {} snippets in {secs:.1} s ({:.0} rows/s)",
        rows.len(),
        rows.len() as f64 / secs
    );

    let base = SnippetFilter::default();
    let cases: Vec<(String, SnippetFilter)> = vec![
        ("newest 50".into(), base.clone()),
        (
            "--type".into(),
            SnippetFilter {
                snippet_type: Some(TYPES[1].parse().expect("type")),
                ..base.clone()
            },
        ),
        (
            "--session".into(),
            SnippetFilter {
                session_ids: Some(vec![session_id(7)]),
                ..base.clone()
            },
        ),
        (
            "--project".into(),
            SnippetFilter {
                project: Some("project07".into()),
                ..base.clone()
            },
        ),
        (
            format!("--tag {}", tag(3)),
            SnippetFilter {
                tags: vec![tag(3)],
                ..base.clone()
            },
        ),
        (
            format!("--tag {} (rare)", tag(45)),
            SnippetFilter {
                tags: vec![tag(45)],
                ..base.clone()
            },
        ),
        (
            format!("--tag {} --tag {}", tag(0), tag(1)),
            SnippetFilter {
                tags: vec![tag(0), tag(1)],
                ..base.clone()
            },
        ),
        (
            format!("--keyword {} (common)", words.common.0),
            SnippetFilter {
                keyword: Some(words.common.0.clone()),
                ..base.clone()
            },
        ),
        (
            format!("--keyword {} (rare)", words.rare.0),
            SnippetFilter {
                keyword: Some(words.rare.0.clone()),
                ..base.clone()
            },
        ),
        (
            format!("--keyword {} (2 chars)", words.short.0),
            SnippetFilter {
                keyword: Some(words.short.0.clone()),
                ..base.clone()
            },
        ),
        (
            "--since 7d".into(),
            SnippetFilter {
                since: Some(since.to_string()),
                ..base.clone()
            },
        ),
        (
            format!(
                "--type --tag {} --since 7d --keyword {}",
                tag(2),
                words.common.0
            ),
            SnippetFilter {
                snippet_type: Some(TYPES[0].parse().expect("type")),
                tags: vec![tag(2)],
                since: Some(since.to_string()),
                keyword: Some(words.common.0.clone()),
                ..base.clone()
            },
        ),
        (
            "--offset 5000".into(),
            SnippetFilter {
                offset: 5000,
                ..base.clone()
            },
        ),
    ];

    println!(
        "{:<58} {:>8} {:>8} {:>8}  target",
        format!("{name} query ({} runs)", opts.repeat),
        "p50 ms",
        "p99 ms",
        "matches"
    );
    let mut misses = 0;
    for (label, f) in &cases {
        let total = store.list_snippets(f).await?.total_count; // warm-up
        let mut ms = Vec::with_capacity(opts.repeat);
        for _ in 0..opts.repeat {
            let t = Instant::now();
            let page = store.list_snippets(f).await?;
            ms.push(t.elapsed().as_secs_f64() * 1e3);
            std::hint::black_box(page);
        }
        ms.sort_by(f64::total_cmp);
        let (p50, p99) = (percentile(&ms, 0.50), percentile(&ms, 0.99));
        let ok = if p99 < TARGET_MS { "ok" } else { "MISS" };
        misses += usize::from(p99 >= TARGET_MS);
        println!("{label:<58} {p50:>8.2} {p99:>8.2} {total:>8}  {ok}");
    }
    store.close().await;
    misses += mcp_leg(name, url, words, opts)?;
    Ok(misses)
}

/// The same store through `gleaner mcp` (JSON-RPC over stdio, one client): `query_snippets`
/// (target 50 ms) and `extract_snippet` (target 500 ms), per call, round trip included.
fn mcp_leg(name: &str, url: &str, words: &Words, opts: &Opts) -> Result<usize> {
    let bin = std::env::current_exe()?
        .parent()
        .and_then(Path::parent)
        .context("cannot locate the target folder")?
        .join("gleaner");
    let mut c = McpClient::start(&bin, url)?;
    let transcript = opts
        .corpus
        .join("entireio__cli__8e-0a64736bc7-0-full.jsonl");
    let calls: Vec<(String, &str, serde_json::Value, f64)> = vec![
        (
            "query_snippets newest 50".into(),
            "query_snippets",
            json!({}),
            TARGET_MS,
        ),
        (
            "query_snippets snippet_type".into(),
            "query_snippets",
            json!({"snippet_type": TYPES[1]}),
            TARGET_MS,
        ),
        (
            "query_snippets session_id".into(),
            "query_snippets",
            json!({"session_id": session_id(7)}),
            TARGET_MS,
        ),
        (
            "query_snippets project".into(),
            "query_snippets",
            json!({"project": "project07"}),
            TARGET_MS,
        ),
        (
            format!("query_snippets tags [{}]", tag(3)),
            "query_snippets",
            json!({"tags": [tag(3)]}),
            TARGET_MS,
        ),
        (
            format!("query_snippets keyword {} (common)", words.common.0),
            "query_snippets",
            json!({"keyword": words.common.0}),
            TARGET_MS,
        ),
        (
            "query_snippets type + tag + start_date + keyword".into(),
            "query_snippets",
            json!({"snippet_type": TYPES[0], "tags": [tag(2)], "start_date": "7d",
                   "keyword": words.common.0}),
            TARGET_MS,
        ),
        (
            "extract_snippet content".into(),
            "extract_snippet",
            json!({}),
            500.0,
        ),
        (
            "extract_snippet lines 1:40 of a transcript".into(),
            "extract_snippet",
            json!({"session_id": session_id(9), "snippet_type": "learning_pattern",
                   "title": "Lines of a real transcript", "source_file": transcript,
                   "source_line_start": 1, "source_line_end": 40}),
            500.0,
        ),
    ];
    println!(
        "{:<58} {:>8} {:>8}",
        format!("{name} through gleaner mcp ({} runs)", opts.repeat),
        "p50 ms",
        "p99 ms"
    );
    let mut misses = 0;
    let mut n = 0;
    for (label, tool, args, target) in &calls {
        let mut ms = Vec::with_capacity(opts.repeat);
        for i in 0..=opts.repeat {
            let args =
                if args.as_object().is_some_and(|o| o.is_empty()) && *tool == "extract_snippet" {
                    n += 1;
                    json!({"session_id": session_id(7), "snippet_type": "learning_pattern",
                       "title": format!("Lesson {n}"),
                       "content": format!("Lesson {n}: when a migration fails halfway, the \
                           advisory lock file tells which process held it; restart that one \
                           first, then rerun the migration so the schema matches again.")})
                } else {
                    args.clone()
                };
            let t = Instant::now();
            std::hint::black_box(c.call(tool, args)?);
            if i > 0 {
                ms.push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
        let (p50, p99) = (percentile(&ms, 0.50), percentile(&ms, 0.99));
        let ok = if p99 < *target { "ok" } else { "MISS" };
        misses += usize::from(p99 >= *target);
        println!("{label:<58} {p50:>8.2} {p99:>8.2}  {ok} (target {target} ms)");
    }
    Ok(misses)
}
