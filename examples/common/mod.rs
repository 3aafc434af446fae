//! Helpers shared by the benchmark examples (`bench`, `snippet_bench`): reaching a
//! PostgreSQL server to create and drop throwaway databases, and percentiles.

pub mod mcp;
pub mod proc;
pub mod tree;

use std::time::Duration;

use anyhow::{Context, Result};
use sqlx::Connection;

/// Connect, giving up after 5 s.
pub async fn pg_connect(url: &str) -> Result<sqlx::PgConnection> {
    let conn = tokio::time::timeout(Duration::from_secs(5), sqlx::PgConnection::connect(url));
    Ok(conn.await.context("timed out after 5 s")??)
}

/// Run one statement on its own connection (CREATE / DROP DATABASE).
pub async fn pg_exec(admin: &str, sql: &str) -> Result<()> {
    let mut c = pg_connect(admin).await?;
    sqlx::query(sql)
        .execute(&mut c)
        .await
        .with_context(|| sql.to_string())?;
    c.close().await.ok();
    Ok(())
}

/// The admin URL with its database name replaced (query string kept).
pub fn pg_url(admin: &str, db: &str) -> String {
    let (base, query) = admin
        .split_once('?')
        .map_or((admin, None), |(b, q)| (b, Some(q)));
    let host_end = base
        .find("://")
        .map(|i| i + 3)
        .and_then(|s| base[s..].find('/').map(|j| s + j));
    let base = &base[..host_end.unwrap_or(base.len())];
    query.map_or(format!("{base}/{db}"), |q| format!("{base}/{db}?{q}"))
}

/// The `gleaner` binary to measure: `$GLEANER_BENCH_BIN`, else the release one next to this
/// example's folder (`target/release/gleaner`).
#[allow(dead_code)] // `bench` and `snippet_bench` build it when missing instead.
pub fn binary() -> Result<std::path::PathBuf> {
    // A build to measure other than this one's (a copy kept aside, an older release).
    if let Some(bin) = std::env::var_os("GLEANER_BENCH_BIN") {
        return Ok(bin.into());
    }
    let exe = std::env::current_exe()?;
    let bin = exe
        .parent()
        .and_then(std::path::Path::parent)
        .context("cannot locate the target folder")?
        .join("gleaner");
    if !bin.is_file() {
        anyhow::bail!("{} is missing: cargo build --release first", bin.display());
    }
    Ok(bin)
}

/// `gleaner` with its own home and XDG folders under `home`, the projects folder, database and
/// machine id set, logging warnings only: how the benches run every command.
#[allow(dead_code)] // not every example runs commands this way
pub fn gleaner_cmd(
    bin: &std::path::Path,
    home: &std::path::Path,
    projects: &std::path::Path,
    url: &str,
    machine: &str,
) -> std::process::Command {
    let mut c = std::process::Command::new(bin);
    c.env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_RUNTIME_DIR", home.join("run"))
        .env("GLEANER_LOG__LEVEL", "warn")
        .arg("--projects-dir")
        .arg(projects)
        .arg("--database-url")
        .arg(url)
        .arg("--machine-id")
        .arg(machine);
    c
}

/// The `q` quantile (nearest rank) of `v`, which need not be sorted; NaN when empty.
#[allow(dead_code)] // not every example reports percentiles
pub fn percentile(v: &[f64], q: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(((s.len() as f64 * q).ceil() as usize).clamp(1, s.len().max(1)) - 1)
        .copied()
        .unwrap_or(f64::NAN)
}
