//! Test harness: an isolated HOME with a projects folder, a database per test on the chosen
//! backend (a fresh PostgreSQL database per test, dropped afterwards), and helpers to run the
//! real `gleaner` binary and poll the database.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use gleaner::store::Options as DatabaseConfig;
use gleaner::store::{FileListing, Store, TableCounts};

/// The two backends every storage test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Expand one async test body into a SQLite test and a PostgreSQL test.
#[macro_export]
macro_rules! both_backends {
    ($name:ident, $body:path) => {
        mod $name {
            use super::*;
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                $body($crate::common::Backend::Sqlite).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                $body($crate::common::Backend::Postgres).await;
            }
        }
    };
}

/// Admin URL used to create per-test databases. `.ci/run` exports it after making sure a
/// server runs; the default matches the local trust-auth server of the dev machines.
pub fn pg_admin_url() -> String {
    std::env::var("GLEANER_TEST_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

fn pg_base(admin: &str) -> &str {
    admin.rsplit_once('/').map(|(b, _)| b).unwrap_or(admin)
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// The real transcripts corpus shared by the project.
pub fn corpus_dir() -> PathBuf {
    // `scripts/test.sh` sets the variable (it finds the corpus for clones made anywhere).
    std::env::var_os("GLEANER_CORPUS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/real"))
}

/// Path of the compiled binary.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_gleaner")
}

/// One test's world.
pub struct TestEnv {
    pub dir: tempfile::TempDir,
    pub url: String,
    pub projects: PathBuf,
    pg_db: Option<String>,
}

impl TestEnv {
    pub async fn new(backend: Backend) -> TestEnv {
        let dir = tempfile::tempdir().expect("tempdir");
        let projects = dir.path().join("projects");
        std::fs::create_dir_all(&projects).expect("projects dir");
        let (url, pg_db) = match backend {
            Backend::Sqlite => (
                format!("sqlite://{}", dir.path().join("data/test.db").display()),
                None,
            ),
            Backend::Postgres => {
                let name = format!(
                    "gleaner_t_{}_{}_{}",
                    std::process::id(),
                    COUNTER.fetch_add(1, Ordering::Relaxed),
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map(|d| d.subsec_nanos())
                        .unwrap_or(0)
                );
                let admin = pg_admin_url();
                let pool = sqlx::PgPool::connect(&admin)
                    .await
                    .unwrap_or_else(|e| panic!("PostgreSQL at {admin} is required: {e}"));
                sqlx::query(&format!("CREATE DATABASE {name}"))
                    .execute(&pool)
                    .await
                    .expect("create test database");
                pool.close().await;
                (format!("{}/{name}", pg_base(&admin)), Some(name))
            }
        };
        TestEnv {
            dir,
            url,
            projects,
            pg_db,
        }
    }

    /// Drop the PostgreSQL database (call at the end of a test; a failed test leaves it for
    /// inspection).
    pub async fn cleanup(self) {
        if let Some(name) = &self.pg_db {
            if let Ok(pool) = sqlx::PgPool::connect(&pg_admin_url()).await {
                let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .execute(&pool)
                    .await;
                pool.close().await;
            }
        }
    }

    pub async fn store(&self) -> Store {
        Store::connect(&DatabaseConfig {
            url: self.url.clone(),
            max_connections: 2,
            connect_timeout: Duration::from_secs(10),
        })
        .await
        .expect("connect test store")
    }

    /// A `gleaner` command with HOME, XDG dirs, projects folder and database set.
    pub fn cmd(&self) -> Command {
        self.cmd_for(&self.projects)
    }

    pub fn cmd_for(&self, projects: &Path) -> Command {
        self.command(projects, &self.url)
    }

    /// `gleaner` with the test's folders but another database URL.
    pub fn cmd_with_url(&self, url: &str) -> Command {
        self.command(&self.projects, url)
    }

    fn command(&self, projects: &Path, url: &str) -> Command {
        self.command_as(projects, url, "test")
    }

    /// `gleaner` as another machine of a shared store: its own projects folder, machine id
    /// and user (`$USER`, the default of config `user`).
    pub fn cmd_as(&self, projects: &Path, machine: &str, user: &str) -> Command {
        let mut c = self.command_as(projects, &self.url, machine);
        c.env("USER", user);
        c
    }

    fn command_as(&self, projects: &Path, url: &str, machine: &str) -> Command {
        let mut c = Command::new(bin());
        let home = self.dir.path().join("home");
        c.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("XDG_DATA_HOME", self.dir.path().join("data"))
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .env("GLEANER_LOG__LEVEL", "warn")
            .arg("--projects-dir")
            .arg(projects)
            .arg("--database-url")
            .arg(url)
            .arg("--machine-id")
            .arg(machine);
        c
    }

    /// `gleaner status --json` (`Null` when no daemon answers).
    pub fn status(&self) -> serde_json::Value {
        let out = self
            .cmd()
            .args(["status", "--json"])
            .output()
            .expect("gleaner status");
        serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
    }

    /// Run `gleaner hook session-end` for `session_id` (transcript `path`) as Claude Code does:
    /// the hook's JSON on stdin, stdin left open; it must exit 0 within Claude Code's patience
    /// (the 200 ms budget, with slack for a loaded test machine). Then wait until the session is
    /// finished: the work runs in the daemon or in the hook's background process.
    pub async fn hook_session_end(&self, session_id: &str, path: &Path) {
        use std::io::Write;
        let store = self.store().await;
        let before = session_state(&store, session_id).await;
        let start = Instant::now();
        let mut hook = self
            .cmd()
            .args(["hook", "session-end"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("hook");
        let input = serde_json::json!({
            "session_id": session_id,
            "transcript_path": path,
            "reason": "exit",
        });
        let mut stdin = hook.stdin.take().expect("stdin");
        stdin
            .write_all(input.to_string().as_bytes())
            .expect("hook input");
        assert!(hook.wait().expect("hook").success());
        let took = start.elapsed();
        assert!(took < Duration::from_secs(2), "hook took {took:?}");
        drop(stdin);
        // Its lines, then its end: finished, and written after the hook started (a finished
        // session that grew is finished again, with a new `updated_at`).
        let (end, _) = expected_checkpoint(&std::fs::read(path).expect("read transcript"));
        wait_offset(&store, path, end).await;
        wait_for(
            Duration::from_secs(20),
            "session finished after the hook",
            || async {
                let now = session_state(&store, session_id).await;
                // Nothing may change (the session ended already and did not grow): then the
                // background process is done once it has let go of the lock.
                now.as_ref().is_some_and(|(s, _)| s == "finished")
                    && (now != before
                        || lock_free(&self.dir.path().join("data/gleaner/gleaner.lock")))
            },
        )
        .await;
        store.close().await;
    }

    /// Run `gleaner ingest --json` to completion and return its summary.
    pub fn ingest(&self) -> serde_json::Value {
        self.ingest_dir(&self.projects)
    }

    pub fn ingest_dir(&self, projects: &Path) -> serde_json::Value {
        self.ingest_dir_env(projects, &[])
    }

    pub fn ingest_dir_env(&self, projects: &Path, env: &[(&str, &str)]) -> serde_json::Value {
        let mut c = self.cmd_for(projects);
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.args(["ingest", "--json"]).output().expect("run");
        assert_ok(&out);
        serde_json::from_slice(&out.stdout).expect("ingest JSON")
    }

    /// Transcript bytes the running daemon has read off disk since it started (status
    /// `read_bytes`; 0 when none answers).
    pub fn read_bytes(&self) -> u64 {
        self.status_u64("read_bytes")
    }

    /// A counter of the running daemon's status (0 when none answers).
    pub fn status_u64(&self, field: &str) -> u64 {
        self.status()[field].as_u64().unwrap_or(0)
    }

    /// Wait until the running daemon has read at least `bytes` off disk: it has seen what was
    /// appended, so a negative check (nothing committed for it) is made after the fact, not
    /// after a guessed moment.
    pub fn wait_read(&self, bytes: u64, what: &str) {
        poll_until(Duration::from_secs(20), what, || self.read_bytes() >= bytes);
    }

    /// Start `gleaner daemon` with extra environment and wait until it is up (its status
    /// socket exists), so a stop signal sent afterwards finds its handlers installed.
    pub fn spawn_daemon(&self, env: &[(&str, &str)]) -> Child {
        let mut child = self.spawn_daemon_unready(env);
        let sock = self.dir.path().join("data/gleaner/gleaner.sock");
        // A socket file may be left over by a killed daemon: ask, and check the pid.
        poll_until(Duration::from_secs(20), "the daemon to start", || {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("daemon exited during startup: {status:?}");
            }
            status_pid(&sock) == Some(child.id())
        });
        child
    }

    /// Start `gleaner daemon` and return at once (it may still be starting).
    pub fn spawn_daemon_unready(&self, env: &[(&str, &str)]) -> Child {
        let mut c = self.cmd();
        for (k, v) in env {
            c.env(k, v);
        }
        c.arg("daemon")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn daemon")
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.projects.join(rel)
    }
}

/// The pid the daemon behind `sock` reports, if one answers.
pub fn status_pid(sock: &Path) -> Option<u32> {
    use std::io::{BufRead, Write};
    let mut stream = std::os::unix::net::UnixStream::connect(sock).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream.write_all(b"{\"type\":\"status\"}\n").ok()?;
    let mut line = String::new();
    std::io::BufReader::new(stream).read_line(&mut line).ok()?;
    let v: serde_json::Value = serde_json::from_str(&line).ok()?;
    v.get("pid")?.as_u64().map(|p| p as u32)
}

pub fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Files of machine `test`, by path.
pub async fn files(store: &Store) -> Vec<FileListing> {
    store.list_files("test").await.expect("list files")
}

pub async fn file(store: &Store, path: &Path) -> Option<FileListing> {
    let p = path.to_string_lossy();
    files(store).await.into_iter().find(|f| f.path == p)
}

pub async fn counts(store: &Store) -> TableCounts {
    store.counts().await.expect("counts")
}

/// Call `check` every 10 ms until it returns true; panic naming `what` once `timeout` passes.
/// (The blocking twin of [`wait_for`], for checks that run a command or read a socket.)
pub fn poll_until(timeout: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(
            start.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Poll `check` every 10 ms until it returns true or `timeout` passes.
pub async fn wait_for<F, Fut>(timeout: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while start.elapsed() < timeout {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out after {timeout:?} waiting for {what}");
}

/// Wait until the stored offset of `path` equals `offset`.
pub async fn wait_offset(store: &Store, path: &Path, offset: u64) {
    wait_for(
        Duration::from_secs(20),
        &format!("{} at {offset}", path.display()),
        || async {
            file(store, path)
                .await
                .is_some_and(|f| f.offset as u64 == offset)
        },
    )
    .await;
}

/// Send SIGTERM and wait for the exit status.
pub fn terminate(child: &mut Child) -> (std::process::ExitStatus, Duration) {
    let start = Instant::now();
    let pid = child.id().to_string();
    let _ = Command::new("kill").args(["-TERM", &pid]).status();
    loop {
        if let Ok(Some(st)) = child.try_wait() {
            return (st, start.elapsed());
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("daemon did not exit within 20 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Offset just past the last `\n` and the number of `\n` before it.
pub fn expected_checkpoint(bytes: &[u8]) -> (u64, u64) {
    match bytes.iter().rposition(|&b| b == b'\n') {
        Some(i) => (
            (i + 1) as u64,
            bytes[..=i].iter().filter(|&&b| b == b'\n').count() as u64,
        ),
        None => (0, 0),
    }
}

/// The checkpoint of a finished file (its session ended, or idle past the timeout): past the
/// last `\n`, or past a last line without one that is whole JSON (then read as a line).
pub fn finished_checkpoint(bytes: &[u8]) -> (u64, u64) {
    let (end, lines) = expected_checkpoint(bytes);
    let rest = &bytes[end as usize..];
    let whole = !rest.is_empty()
        && serde_json::Deserializer::from_slice(rest)
            .into_iter::<serde_json::Value>()
            .all(|v| v.is_ok_and(|v| v.is_object()));
    if whole {
        (bytes.len() as u64, lines + 1)
    } else {
        (end, lines)
    }
}

/// A realistic user line for session `sid`.
pub fn user_line(sid: &str, uuid: &str, text: &str) -> String {
    format!(
        r#"{{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/home/u/p","sessionId":"{sid}","version":"2.1.12","gitBranch":"main","type":"user","message":{{"role":"user","content":{}}},"uuid":"{uuid}","timestamp":"2026-01-01T00:00:00.000Z"}}"#,
        serde_json::to_string(text).expect("json")
    ) + "\n"
}

/// Append bytes to a file (creating it).
pub fn append(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("mkdir");
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open for append");
    f.write_all(bytes).expect("append");
}

/// Whether no process holds Gleaner's single-instance lock (`flock` from util-linux).
pub fn lock_free(lock: &Path) -> bool {
    !lock.exists()
        || Command::new("flock")
            .args(["-n", "-E", "75"])
            .arg(lock)
            .arg("true")
            .status()
            .is_ok_and(|s| s.success())
}

/// `(status, updated_at)` of a session.
pub async fn session_state(store: &Store, session_id: &str) -> Option<(String, String)> {
    let sql = "SELECT status, updated_at FROM sessions WHERE session_id = $1";
    match store {
        Store::Sqlite(p) => sqlx::query_as(&sql.replace("$1", "?"))
            .bind(session_id)
            .fetch_optional(p)
            .await
            .ok()
            .flatten(),
        Store::Postgres(p) => sqlx::query_as(sql)
            .bind(session_id)
            .fetch_optional(p)
            .await
            .ok()
            .flatten(),
    }
}

/// Run one statement on either backend (tests that set up a state no command makes).
pub async fn execute(store: &Store, sql: &str) -> Result<u64, sqlx::Error> {
    match store {
        Store::Sqlite(p) => sqlx::query(sql).execute(p).await.map(|r| r.rows_affected()),
        Store::Postgres(p) => sqlx::query(sql).execute(p).await.map(|r| r.rows_affected()),
    }
}

/// Copy the folder `from`'s contents into `to` as `cp -a` does, then make every copy at least a
/// day old: the corpus's sessions are idle, as after a backfill, even on a machine provisioned
/// minutes before the tests run (its corpus files are then minutes old, and a last line
/// without its newline would wait for the file to go idle). Older times are kept.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(from.join("."))
        .arg(to)
        .status()
        .expect("cp");
    assert!(
        status.success(),
        "cp -a {} {}",
        from.display(),
        to.display()
    );
    age_tree(to);
}

/// Every file below `dir` at least a day old (its mtime); older times are kept.
fn age_tree(dir: &Path) {
    let day_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(86_400);
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("entry").path();
        let meta = std::fs::symlink_metadata(&path).expect("metadata");
        if meta.is_dir() {
            age_tree(&path);
        } else if meta.is_file() && meta.modified().expect("mtime") > day_ago {
            age_a_day(&path);
        }
    }
}

/// One check of `gleaner doctor --json` by name (`archive`, `rules`, ...).
pub fn doctor_check(env: &TestEnv, name: &str) -> serde_json::Value {
    let out = env
        .cmd()
        .args(["doctor", "--json"])
        .output()
        .expect("doctor");
    let all: serde_json::Value = serde_json::from_slice(&out.stdout).expect("doctor JSON");
    all.as_array()
        .and_then(|c| c.iter().find(|c| c["check"] == name).cloned())
        .unwrap_or_else(|| panic!("no {name} check in {all}"))
}

/// A real session of the corpus (a short one, finished) that single-session tests use.
pub const CLOCKHELP: &str = "Eduardodmb__ClaudeHome/projects.bak-20260511-072525/X--01-Edmb-Clockhelp/3dae6bc4-bf52-4a30-a961-09999364d8c6.jsonl";

/// [`CLOCKHELP`] copied into the test's projects folder (project `-x-clock`); its path.
pub fn copy_clockhelp(env: &TestEnv) -> PathBuf {
    let dst = env.path("-x-clock/3dae6bc4-bf52-4a30-a961-09999364d8c6.jsonl");
    std::fs::create_dir_all(dst.parent().expect("parent")).expect("mkdir");
    std::fs::copy(corpus_dir().join(CLOCKHELP), &dst).expect("copy");
    dst
}

/// Make `path` a day old (its mtime): a transcript at rest, whose session the ingest finishes
/// and whose last line it reads even without a newline.
pub fn age_a_day(path: &Path) {
    let day_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(86_400);
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(day_ago))
        .expect("mtime");
}

/// Write `text` to `root/rel`, making its folders.
pub fn write_file(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, text).expect("write");
}
