//! `--baseline BIN`: the same cold ingest by this build and by an earlier one, alternated round by
//! round (new, old, old, new, ...) into fresh databases, so both builds meet the same machine
//! weather. This VM drifts by up to 1.8x between runs; only ratios between builds run together
//! say anything, and medians over a few rounds damp the remaining noise.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::common::{percentile, pg_exec, pg_url};
use super::{database_bytes, Bench, Ingest, STAGES};

/// Figures of one cold ingest.
struct Run {
    mb_per_s: f64,
    /// Throughput to searchable: the bytes over the time before the deferred bytes' archiving
    /// (the same as `mb_per_s` for builds that defer nothing).
    search_mb_per_s: f64,
    cpu: f64,
    rss_mb: f64,
    db_pct: f64,
    stages: BTreeMap<String, f64>,
}

/// Where a round writes: a SQLite file or a PostgreSQL database (created and dropped here).
enum Target<'a> {
    Sqlite(&'a Path),
    Postgres(&'a str),
}

/// Runs `rounds` rounds per backend and prints one table of medians with the new/old ratios;
/// with `ccusage`, that tool's run over the same tree joins each round (new/ccusage ratios).
pub fn compare(
    b: &mut Bench,
    baseline: &Path,
    ccusage: Option<&Path>,
    rounds: usize,
    projects: &Path,
    pg_admin: Option<&str>,
) -> Result<()> {
    let builds: [(&str, PathBuf); 2] = [("new", b.bin.clone()), ("old", baseline.to_path_buf())];
    let work = b.work.clone();
    let mut targets = vec![("sqlite", Target::Sqlite(&work))];
    if let Some(admin) = pg_admin {
        targets.push(("postgres", Target::Postgres(admin)));
    }
    println!(
        "\nback to back against {} ({rounds} rounds per backend, order alternating)",
        baseline.display()
    );
    let mut lines = Vec::new();
    let tree = tree_bytes(projects)?;
    for (backend, target) in &targets {
        let mut runs: [Vec<Run>; 2] = [Vec::new(), Vec::new()];
        let mut cc: Vec<Run> = Vec::new();
        for round in 0..rounds {
            // ABBA order: neither build always runs first after the other's writes.
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            if let Some(bin) = ccusage.filter(|_| round % 2 == 1) {
                cc.push(ccusage_run(bin, projects, tree, backend, round)?);
            }
            for i in order {
                let (name, bin) = &builds[i];
                b.bin = bin.clone();
                let run = one(b, target, &format!("{backend}-{name}-{round}"), projects);
                b.bin = builds[0].1.clone();
                let run = run?;
                println!(
                    "  {backend} {name} round {}: {:.1} MB/s ({:.1} to searchable), CPU {:.2} s, peak RSS {:.1} MB, database {:.1}%",
                    round + 1,
                    run.mb_per_s,
                    run.search_mb_per_s,
                    run.cpu,
                    run.rss_mb,
                    run.db_pct
                );
                runs[i].push(run);
            }
            if let Some(bin) = ccusage.filter(|_| round % 2 == 0) {
                cc.push(ccusage_run(bin, projects, tree, backend, round)?);
            }
        }
        let med = |i: usize, f: &dyn Fn(&Run) -> f64| {
            percentile(&runs[i].iter().map(f).collect::<Vec<_>>(), 0.5)
        };
        for (i, (name, _)) in builds.iter().enumerate() {
            let stages = stage_medians(&runs[i]);
            lines.push(format!(
                "{backend:<9} {name:<4} {:>7.1} {:>7.1} {:>7.2} {:>8.1} {:>7.1}%  {stages}",
                med(i, &|r| r.mb_per_s),
                med(i, &|r| r.search_mb_per_s),
                med(i, &|r| r.cpu),
                med(i, &|r| r.rss_mb),
                med(i, &|r| r.db_pct),
            ));
        }
        let ratio = |f: &dyn Fn(&Run) -> f64| med(0, f) / med(1, f).max(1e-9);
        lines.push(format!(
            "{backend:<9} new/old: throughput x{:.2} (to searchable x{:.2}), CPU x{:.2}, peak RSS x{:.2}, database x{:.2}",
            ratio(&|r| r.mb_per_s),
            ratio(&|r| r.search_mb_per_s),
            ratio(&|r| r.cpu),
            ratio(&|r| r.rss_mb),
            ratio(&|r| r.db_pct),
        ));
        if !cc.is_empty() {
            let m =
                |f: &dyn Fn(&Run) -> f64| percentile(&cc.iter().map(f).collect::<Vec<_>>(), 0.5);
            lines.push(format!(
                "{backend:<9} ccusage {:>5.1} {:>7.2} {:>8.1}",
                m(&|r| r.mb_per_s),
                m(&|r| r.cpu),
                m(&|r| r.rss_mb),
            ));
            lines.push(format!(
                "{backend:<9} new/ccusage: throughput x{:.2} (to searchable x{:.2}), CPU x{:.2}, peak RSS x{:.2}",
                med(0, &|r| r.mb_per_s) / m(&|r| r.mb_per_s).max(1e-9),
                med(0, &|r| r.search_mb_per_s) / m(&|r| r.mb_per_s).max(1e-9),
                med(0, &|r| r.cpu) / m(&|r| r.cpu).max(1e-9),
                med(0, &|r| r.rss_mb) / m(&|r| r.rss_mb).max(1e-9),
            ));
        }
    }
    println!(
        "\n{:<9} {:<4} {:>7} {:>7} {:>7} {:>8} {:>8}  median stage seconds (all threads)",
        "backend", "build", "MB/s", "search", "CPU s", "RSS MB", "DB"
    );
    for l in lines {
        println!("{l}");
    }
    Ok(())
}

/// The bytes of the tree's transcripts (what both tools read).
fn tree_bytes(dir: &Path) -> Result<u64> {
    let mut n = 0;
    for e in fs::read_dir(dir)? {
        let e = e?;
        let t = e.file_type()?;
        if t.is_dir() {
            n += tree_bytes(&e.path())?;
        } else if e.path().extension().is_some_and(|x| x == "jsonl") {
            n += e.metadata()?.len();
        }
    }
    Ok(n)
}

/// One `ccusage daily --json --offline` over `projects` (its `CLAUDE_CONFIG_DIR` is the tree's
/// parent folder), timed like an ingest: wall, CPU and peak RSS from `wait4`.
fn ccusage_run(bin: &Path, projects: &Path, tree: u64, backend: &str, round: usize) -> Result<Run> {
    let config = projects.parent().unwrap_or(projects);
    let t0 = std::time::Instant::now();
    let child = std::process::Command::new(bin)
        .args(["daily", "--json", "--offline"])
        .env("CLAUDE_CONFIG_DIR", config)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let Some((code, cpu, rss)) = super::common::proc::wait_pid(child.id() as i32, true)? else {
        anyhow::bail!("ccusage did not end");
    };
    let wall = t0.elapsed().as_secs_f64();
    anyhow::ensure!(code == 0, "ccusage exited with {code}");
    let run = Run {
        mb_per_s: tree as f64 / 1e6 / wall,
        search_mb_per_s: tree as f64 / 1e6 / wall,
        cpu,
        rss_mb: rss as f64 / 1e6,
        db_pct: 0.0,
        stages: BTreeMap::new(),
    };
    println!(
        "  {backend} ccusage round {}: {:.1} MB/s, CPU {:.2} s, peak RSS {:.1} MB",
        round + 1,
        run.mb_per_s,
        run.cpu,
        run.rss_mb
    );
    Ok(run)
}

/// One cold ingest into a fresh database, which is removed afterwards.
fn one(b: &Bench, target: &Target, tag: &str, projects: &Path) -> Result<Run> {
    let log = b.work.join(format!("ab-{tag}.log"));
    let (url, db) = match target {
        Target::Sqlite(dir) => {
            let file = dir.join("ab.db");
            for ext in ["", "-wal", "-shm"] {
                let _ = fs::remove_file(format!("{}{ext}", file.display()));
            }
            (format!("sqlite://{}", file.display()), None)
        }
        Target::Postgres(admin) => {
            let db = format!(
                "gleaner_ab_{}_{}",
                std::process::id(),
                tag.replace('-', "_")
            );
            b.rt.block_on(pg_exec(admin, &format!("CREATE DATABASE \"{db}\"")))?;
            (pg_url(admin, &db), Some((admin, db)))
        }
    };
    let result = b
        .ingest(projects, &url, &log)
        .and_then(|Ingest(s, _, cpu, rss)| {
            let bytes = b.rt.block_on(database_bytes(&url))?;
            let searchable = (s.seconds - s.archive_seconds).max(1e-9);
            Ok(Run {
                mb_per_s: s.mb_per_s,
                search_mb_per_s: s.bytes as f64 / 1e6 / searchable,
                cpu,
                rss_mb: rss as f64 / 1e6,
                db_pct: bytes as f64 * 100.0 / s.bytes.max(1) as f64,
                stages: s.stage_seconds,
            })
        });
    if let Some((admin, db)) = db {
        let sql = format!("DROP DATABASE IF EXISTS \"{db}\" WITH (FORCE)");
        b.rt.block_on(pg_exec(admin, &sql))?;
    }
    result
}

/// "read 0.51, parse 0.80, ..." from the rounds' medians (empty for builds that report none).
fn stage_medians(runs: &[Run]) -> String {
    STAGES
        .iter()
        .filter_map(|k| {
            let v: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.stages.get(*k).copied())
                .collect();
            (!v.is_empty()).then(|| format!("{k} {:.2}", percentile(&v, 0.5)))
        })
        .collect::<Vec<_>>()
        .join(", ")
}
