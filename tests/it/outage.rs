//! The database goes away while transcripts keep growing: the daemon stays up, stops reading,
//! says so in status, retries with capped backoff, and catches up with rows identical to a
//! clean run.
//!
//! PostgreSQL is a private server of this test (its own data folder and port, started and
//! stopped with `pg_ctl`), so stopping it leaves the other tests' server alone. SQLite's disk
//! fills up for real: its folder is a small tmpfs that is then grown.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::*;

/// A PostgreSQL server of one test.
struct PrivatePg {
    dir: tempfile::TempDir,
    bindir: PathBuf,
    port: u16,
}

fn pg_bindir() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL server binaries in /usr/lib/postgresql (scripts/ensure-postgres.sh)")
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|b| b.join("pg_ctl").exists())
        .collect();
    found.sort();
    found.pop().expect("pg_ctl")
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

impl PrivatePg {
    fn start_new() -> PrivatePg {
        let dir = tempfile::tempdir().expect("tempdir");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("free port");
        if is_root() {
            // The server refuses to run as root.
            let ok = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir.path())
                .status()
                .expect("chown");
            assert!(ok.success());
        }
        let pg = PrivatePg {
            dir,
            bindir: pg_bindir(),
            port,
        };
        let data = pg.data();
        let out = pg
            .as_owner("initdb")
            .args(["-A", "trust", "-U", "postgres", "-D"])
            .arg(&data)
            .output()
            .expect("initdb");
        assert_ok(&out);
        pg.start();
        pg
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn as_owner(&self, tool: &str) -> Command {
        let path = self.bindir.join(tool);
        if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        }
    }

    fn pg_ctl(&self, args: &[&str]) {
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.path().display()
        );
        let out = self
            .as_owner("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-w", "-o", &opts, "-l"])
            .arg(self.dir.path().join("log"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("pg_ctl");
        assert_ok(&out);
    }

    fn start(&self) {
        self.pg_ctl(&["start"]);
    }

    /// Stop; `immediate` kills the server without letting transactions finish.
    fn stop(&self, mode: &str) {
        self.pg_ctl(&["-m", mode, "stop"]);
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for PrivatePg {
    fn drop(&mut self) {
        let _ = self
            .as_owner("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// Appends real transcript lines to `path`, a few every 20 ms, until told to stop.
fn appender(
    path: PathBuf,
    lines: Vec<Vec<u8>>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .expect("open");
        for chunk in lines.chunks(3) {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            for l in chunk {
                f.write_all(l).expect("append");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    })
}

/// Complete lines of a few real transcripts.
fn real_lines(min_size: u64, files: usize) -> Vec<Vec<u8>> {
    let mut found = gleaner::tail::discovery::scan(&corpus_dir());
    found.retain(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0) > min_size);
    found.truncate(files);
    let mut out = Vec::new();
    for p in found {
        let bytes = std::fs::read(&p).expect("read");
        let (end, _) = expected_checkpoint(&bytes);
        out.extend(
            bytes[..end as usize]
                .split_inclusive(|&b| b == b'\n')
                .filter(|l| l.len() < 200_000)
                .map(<[u8]>::to_vec),
        );
    }
    out
}

/// Copy a few corpus transcripts (fresh session ids) into the projects folder.
fn add_backlog(projects: &Path, tag: &str, count: usize, min_size: u64) -> Vec<PathBuf> {
    let mut found = gleaner::tail::discovery::scan(&corpus_dir());
    found.retain(|p| {
        std::fs::metadata(p).map(|m| m.len()).unwrap_or(0) > min_size
            && !p.to_string_lossy().contains("subagents")
    });
    found.truncate(count);
    found
        .iter()
        .enumerate()
        .map(|(i, src)| {
            let dst = projects.join(format!(
                "-outage-{tag}/dddddddd-0000-4000-8000-{tag}{i:011}.jsonl"
            ));
            std::fs::create_dir_all(dst.parent().expect("parent")).expect("mkdir");
            std::fs::copy(src, &dst).expect("copy");
            dst
        })
        .collect()
}

async fn wait_caught_up(store: &gleaner::store::Store, paths: &[PathBuf]) {
    for p in paths {
        let (end, _) = expected_checkpoint(&std::fs::read(p).expect("read"));
        wait_offset(store, p, end).await;
    }
}

fn stderr_of(child: &mut Child) -> String {
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    err
}

/// PostgreSQL stopped for several seconds while lines are appended, then killed mid-transaction
/// (`-m immediate`) during a backlog: the daemon stays up, reports the outage, and ends with
/// rows identical to a clean one-shot ingest of the same files.
#[tokio::test]
async fn postgres_stopped_and_killed_mid_transaction_loses_and_duplicates_nothing() {
    let pg = PrivatePg::start_new();
    let env = TestEnv::new(Backend::Sqlite).await;
    let live = env.path("-outage-live/eeeeeeee-0000-4000-8000-000000000001.jsonl");
    let stop = Arc::new(AtomicBool::new(false));
    let writer = appender(live.clone(), real_lines(100_000, 2), stop.clone());
    let mut daemon = env
        .cmd_with_url(&pg.url())
        .env("GLEANER_BATCH__MAX_LINES", "40")
        .arg("daemon")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("daemon");
    let sock = env.dir.path().join("data/gleaner/gleaner.sock");
    wait_for(Duration::from_secs(20), "daemon up", || async {
        status_pid(&sock) == Some(daemon.id())
    })
    .await;
    let store = gleaner::store::Store::connect(&gleaner::store::Options {
        url: pg.url(),
        max_connections: 2,
        connect_timeout: Duration::from_secs(5),
    })
    .await
    .expect("store");
    wait_for(Duration::from_secs(20), "first lines committed", || async {
        file(&store, &live).await.is_some_and(|f| f.offset > 0)
    })
    .await;

    // Outage 1: the server stopped for 8 s while the file grows.
    pg.stop("fast");
    wait_for(Duration::from_secs(15), "the outage in status", || async {
        let s = env.status();
        s["database_state"]
            .as_str()
            .is_some_and(|d| d.starts_with("unavailable since"))
            && s["database_unavailable_since"].is_string()
            && s["last_error"]["what"].is_string()
    })
    .await;
    let during = env.status();
    // Reading paused: the probes retry with a growing backoff (1, 2, 4 s ...), so three
    // errors take several seconds, and the count stays far below one per line appended.
    let paused_at = Instant::now();
    wait_for(Duration::from_secs(30), "three failed probes", || async {
        env.status_u64("errors") >= 3
    })
    .await;
    assert!(status_pid(&sock) == Some(daemon.id()), "daemon stayed up");
    let errors = env.status_u64("errors");
    assert!(
        errors < 40 && paused_at.elapsed() >= Duration::from_secs(2),
        "errors {errors} after {:?}: {during}",
        paused_at.elapsed()
    );
    pg.start();
    wait_for(
        Duration::from_secs(40),
        "the database back in status",
        || async { env.status()["database_state"] == "ok" },
    )
    .await;

    // Outage 2: killed mid-transaction while a backlog is read in small batches.
    let backlog = add_backlog(&env.projects, "b", 3, 300_000);
    // Mid-backlog: once the daemon has committed some of it.
    let bytes_before = env.status_u64("bytes");
    wait_for(
        Duration::from_secs(20),
        "the backlog being read",
        || async { env.status_u64("bytes") > bytes_before },
    )
    .await;
    let retries = env.status_u64("failed_retries");
    pg.stop("immediate");
    // The outage lasts until the daemon has met it and a retry has failed (appends go on
    // meanwhile).
    wait_for(
        Duration::from_secs(90),
        "a failed retry of the stopped server",
        || async { env.status_u64("failed_retries") > retries },
    )
    .await;
    pg.start();

    stop.store(true, Ordering::SeqCst);
    writer.join().expect("appender");
    let mut all = backlog.clone();
    all.push(live.clone());
    wait_caught_up(&store, &all).await;
    let s = env.status();
    assert_eq!(s["database_state"], "ok", "{s}");
    assert!(s["outages"].as_u64().unwrap_or(0) >= 1, "{s}");
    let (exit, _) = terminate(&mut daemon);
    let err = stderr_of(&mut daemon);
    assert!(exit.success(), "{exit:?}: {err}");
    // Logged once per interval and outage, not once per failed commit.
    let logged = err.matches(" commit failed path=").count();
    assert!(logged <= 2, "{logged} commit errors logged: {err}");

    let outage_rows = crate::crash::message_keys(&store).await;
    let outage_episodes = crate::crash::episode_keys(&store).await;
    let outage_counts = counts(&store).await;
    store.close().await;

    // A clean run over the same final files, on the shared server.
    let clean_env = TestEnv::new(Backend::Postgres).await;
    clean_env.ingest_dir(&env.projects);
    let clean = clean_env.store().await;
    let clean_rows = crate::crash::message_keys(&clean).await;
    assert!(clean_rows.len() > 1000, "a real workload");
    assert_eq!(outage_rows.len(), clean_rows.len());
    assert!(outage_rows == clean_rows, "message rows differ");
    assert_eq!(outage_episodes, crate::crash::episode_keys(&clean).await);
    let c = counts(&clean).await;
    assert_eq!(
        (
            outage_counts.files,
            outage_counts.summaries,
            outage_counts.feedback,
            outage_counts.diagnostics
        ),
        (c.files, c.summaries, c.feedback, c.diagnostics)
    );
    clean.close().await;
    clean_env.cleanup().await;
}

/// Mounts a tmpfs of `size` at `dir` (root only) and unmounts it when dropped.
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn mount(dir: &Path, size: &str) -> SmallDisk {
        std::fs::create_dir_all(dir).expect("mount point");
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .expect("mount");
        assert_ok(&out);
        SmallDisk(dir.to_path_buf())
    }

    fn grow(&self, size: &str) {
        let out = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .output()
            .expect("remount");
        assert_ok(&out);
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// SQLite's disk fills up during a backlog: the daemon pauses, says so, and once the disk has
/// room again it catches up with rows identical to a clean run.
/// The disk fills while batches are committed (5 MB: room for the schema and the files' rows).
#[cfg(target_os = "linux")]
#[tokio::test]
async fn sqlite_disk_full_then_room_again_loses_nothing() {
    sqlite_disk_full("5m", "failed_retries").await;
}

/// The disk fills while the files are registered (4.625 MB: a new database's migrations leave
/// about 4.66 MB of write-ahead log at version 36, and each migration adds a few KB, so this
/// size follows them): a failed registration's connection is
/// closed, not returned to the pool still holding a transaction SQLite had ended (that lost the
/// files' rows and refused every batch as "checkpoint moved" before).
#[cfg(target_os = "linux")]
#[tokio::test]
async fn sqlite_disk_full_while_registering_loses_nothing() {
    sqlite_disk_full("4736k", "errors").await;
}

/// A daemon on a SQLite database in a tmpfs of `size`, too small for the backlog: it reports the
/// outage, stays up while the disk stays full (the status counter `retried` grows: a failed
/// commit's probe is a failed retry; a registration is retried every 2 s, each failure an
/// error), and once the disk grows catches up with exactly the rows a clean ingest makes.
#[cfg(target_os = "linux")]
async fn sqlite_disk_full(size: &str, retried: &str) {
    assert!(
        is_root(),
        "this test mounts a small tmpfs: run the tests as root (CI does)"
    );
    let env = TestEnv::new(Backend::Sqlite).await;
    // Room for a new database's schema (16 KB pages: about 0.9 MB, and its write-ahead log
    // while it is made), not for the backlog (its database and log peak at about 7 MB).
    let disk = SmallDisk::mount(&env.dir.path().join("data"), size);
    let backlog = add_backlog(&env.projects, "c", 6, 1_000_000);
    let total: u64 = backlog
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .sum();
    assert!(
        total > 6_000_000,
        "a backlog larger than the disk ({total} bytes)"
    );
    let mut daemon = env.spawn_daemon(&[("GLEANER_BATCH__MAX_LINES", "200")]);
    let sock = env.dir.path().join("data/gleaner/gleaner.sock");
    wait_for(
        Duration::from_secs(60),
        "the disk-full outage in status",
        || async {
            env.status()["database_state"]
                .as_str()
                .is_some_and(|d| d.starts_with("unavailable since"))
        },
    )
    .await;
    let s = env.status();
    let msg = s["last_error"]["message"]
        .as_str()
        .unwrap_or("")
        .to_lowercase();
    assert!(msg.contains("full") || msg.contains("disk"), "{s}");
    // The daemon must not exit while the disk stays full: it is still there after another of
    // its retries has failed (the backoff doubles with every failure, up to 30 s).
    let before = env.status_u64(retried);
    wait_for(
        Duration::from_secs(90),
        "a failed retry on the full disk",
        || async { env.status_u64(retried) > before },
    )
    .await;
    assert!(status_pid(&sock) == Some(daemon.id()), "daemon stayed up");
    disk.grow("512m");
    let store = env.store().await;
    let start = Instant::now();
    let mut caught_up = false;
    while !caught_up && start.elapsed() < Duration::from_secs(60) {
        caught_up = true;
        for p in &backlog {
            let (end, _) = expected_checkpoint(&std::fs::read(p).expect("read"));
            caught_up &= file(&store, p)
                .await
                .is_some_and(|f| f.offset as u64 == end);
        }
        if !caught_up {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let s = env.status();
    let (exit, _) = terminate(&mut daemon);
    let err = stderr_of(&mut daemon);
    assert!(
        caught_up,
        "not caught up 60 s after the disk grew: {s}\n{err}"
    );
    eprintln!("caught up {:?} after the disk grew", start.elapsed());
    assert_eq!(s["database_state"], "ok", "{s}");
    assert!(exit.success(), "{exit:?}: {err}");
    let rows = crate::crash::message_keys(&store).await;
    store.close().await;

    let clean_env = TestEnv::new(Backend::Sqlite).await;
    clean_env.ingest_dir(&env.projects);
    let clean = clean_env.store().await;
    let clean_rows = crate::crash::message_keys(&clean).await;
    assert!(
        rows == clean_rows,
        "message rows differ ({} vs {})",
        rows.len(),
        clean_rows.len()
    );
    clean.close().await;
    let db = std::fs::metadata(clean_env.dir.path().join("data/test.db")).map(|m| m.len());
    assert!(
        db.as_ref().map_or(0, |d| *d) > 1 << 20,
        "the data would have fit the 1 MB disk: {db:?}"
    );
    drop(disk);
}

/// A batch the database refuses for its data (here a trigger that rejects one text, standing
/// for a value a column cannot take) is that file's problem: recorded as its diagnostic and
/// retried later, while every other file goes on and the database is not reported down.
async fn refused_batch(backend: crate::common::Backend) {
    const GOOD: &str = "600d0000-0000-4000-8000-000000000001";
    const BAD: &str = "bad00000-0000-4000-8000-000000000002";
    let env = TestEnv::new(backend).await;
    env.ingest(); // the schema
    let trigger: &[&str] = match backend {
        crate::common::Backend::Sqlite => &["CREATE TRIGGER refuse BEFORE INSERT ON messages \
             WHEN NEW.text LIKE '%POISON-PILL%' \
             BEGIN SELECT RAISE(ABORT, 'refused for the test'); END"],
        crate::common::Backend::Postgres => &[
            "CREATE FUNCTION refuse_poison() RETURNS trigger AS $$ BEGIN \
             IF NEW.text LIKE '%POISON-PILL%' THEN \
             RAISE EXCEPTION 'refused for the test' USING ERRCODE = 'check_violation'; \
             END IF; RETURN NEW; END $$ LANGUAGE plpgsql",
            "CREATE TRIGGER refuse BEFORE INSERT ON messages FOR EACH ROW \
             EXECUTE FUNCTION refuse_poison()",
        ],
    };
    match backend {
        crate::common::Backend::Sqlite => {
            let pool = sqlx::SqlitePool::connect(&env.url).await.expect("sqlite");
            for q in trigger {
                sqlx::query(q).execute(&pool).await.expect("trigger");
            }
            pool.close().await;
        }
        crate::common::Backend::Postgres => {
            let pool = sqlx::PgPool::connect(&env.url).await.expect("pg");
            for q in trigger {
                sqlx::query(q).execute(&pool).await.expect("trigger");
            }
            pool.close().await;
        }
    }
    let good = env.path(&format!("-home-u-p/{GOOD}.jsonl"));
    let bad = env.path(&format!("-home-u-p/{BAD}.jsonl"));
    let g1 = user_line(GOOD, "g1", "an ordinary prompt");
    append(&good, g1.as_bytes());
    append(
        &bad,
        user_line(BAD, "b1", "this one carries a POISON-PILL").as_bytes(),
    );
    let mut daemon = env.spawn_daemon(&[]);
    let store = env.store().await;
    wait_offset(&store, &good, g1.len() as u64).await;
    // The refused batch is recorded as the bad file's diagnostic.
    wait_for(
        Duration::from_secs(20),
        "the refused batch recorded",
        || {
            let store = store.clone();
            let bad = bad.clone();
            async move {
                file(&store, &bad)
                    .await
                    .is_some_and(|f| f.diagnostics > 0 && f.offset == 0)
            }
        },
    )
    .await;
    // Nothing is paused: the good file keeps being read.
    let g2 = user_line(GOOD, "g2", "a second prompt, after the refusal");
    append(&good, g2.as_bytes());
    wait_offset(&store, &good, (g1.len() + g2.len()) as u64).await;
    let out = env
        .cmd()
        .args(["status", "--json"])
        .output()
        .expect("status");
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).expect("status json");
    assert_eq!(s["database_state"], "ok", "{s}");
    assert!(
        s["last_error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("refused for the test")),
        "{s}"
    );
    terminate(&mut daemon);
    env.cleanup().await;
}

crate::both_backends!(a_refused_batch_pauses_nothing, refused_batch);
