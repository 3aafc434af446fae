//! Controlling the running daemon: configuration reload by SIGHUP and by socket request (valid
//! and invalid), the status figures, and the inotify watch limit (polling, `degraded`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::*;

const SID_A: &str = "aaaaaaaa-bbbb-4ccc-8ddd-00000000000a";
const SID_B: &str = "aaaaaaaa-bbbb-4ccc-8ddd-00000000000b";

/// One request on the daemon's socket, its JSON answer.
fn request(sock: &Path, req: &str) -> serde_json::Value {
    use std::io::{BufRead, Write};
    let mut stream = std::os::unix::net::UnixStream::connect(sock).expect("connect socket");
    stream
        .set_read_timeout(Some(Duration::from_secs(40)))
        .expect("timeout");
    stream
        .write_all(format!("{req}\n").as_bytes())
        .expect("send");
    let mut line = String::new();
    std::io::BufReader::new(stream)
        .read_line(&mut line)
        .expect("answer");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad answer {line:?}: {e}"))
}

fn status(sock: &Path) -> serde_json::Value {
    request(sock, r#"{"type":"status"}"#)
}

fn sock_of(env: &TestEnv) -> PathBuf {
    env.dir.path().join("data/gleaner/gleaner.sock")
}

/// `gleaner daemon` reading its projects folder, level and timeouts from `config` only (flags
/// would win over the file on every reload).
fn spawn_with_config(env: &TestEnv, config: &Path) -> Child {
    let home = env.dir.path().join("home");
    let mut child = Command::new(bin())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("XDG_DATA_HOME", env.dir.path().join("data"))
        .env("XDG_CONFIG_HOME", env.dir.path().join("config"))
        .args(["--config"])
        .arg(config)
        .arg("--database-url")
        .arg(&env.url)
        .args(["--machine-id", "test", "daemon"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn daemon");
    let sock = sock_of(env);
    poll_until(Duration::from_secs(20), "the daemon to start", || {
        if let Ok(Some(s)) = child.try_wait() {
            panic!("daemon exited during startup: {s:?}");
        }
        status_pid(&sock) == Some(child.id())
    });
    child
}

fn write_config(path: &Path, projects: &Path, idle_secs: u64, level: &str) {
    let text = format!(
        "projects_dir = {projects:?}\n\n[log]\nlevel = {level:?}\n\n[daemon]\nrescan_interval_secs = 600\n\n\
         [sessions]\nidle_timeout_secs = {idle_secs}\n",
        projects = projects.display().to_string(),
    );
    std::fs::write(path, text).expect("write config");
}

fn hup(child: &Child) {
    let ok = Command::new("kill")
        .args(["-HUP", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(ok.success(), "SIGHUP");
}

async fn session_status(env: &TestEnv, sid: &str) -> Option<String> {
    let out = env
        .cmd()
        .args(["sessions", "--json"])
        .output()
        .expect("sessions");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    v.as_array()?
        .iter()
        .find(|s| s["session_id"] == sid)
        .and_then(|s| s["status"].as_str().map(str::to_string))
}

/// A valid configuration is applied without a restart (a new projects folder, the idle timeout,
/// the log level), by the `reload` request and by SIGHUP; an invalid one is refused, named, and
/// the running configuration kept. Status reports reloads, the rate and the last error.
#[cfg(unix)]
#[tokio::test]
async fn reload_applies_valid_config_and_keeps_running_one_on_invalid() {
    let env = TestEnv::new(Backend::Sqlite).await;
    let (a, b) = (env.dir.path().join("pa"), env.dir.path().join("pb"));
    let file_a = a.join(format!("-home-u-a/{SID_A}.jsonl"));
    let file_b = b.join(format!("-home-u-b/{SID_B}.jsonl"));
    let la = user_line(SID_A, "ua1", "first prompt in folder a");
    let lb = user_line(SID_B, "ub1", "first prompt in folder b");
    append(&file_a, la.as_bytes());
    append(&file_b, lb.as_bytes());
    let config = env.dir.path().join("gleaner.toml");
    write_config(&config, &a, 600, "warn");
    let mut daemon = spawn_with_config(&env, &config);
    let sock = sock_of(&env);
    let store = env.store().await;
    wait_offset(&store, &file_a, la.len() as u64).await;
    // The daemon counts a batch's bytes just after its commit: wait for the count.
    let mut s = status(&sock);
    poll_until(Duration::from_secs(10), "bytes counted in status", || {
        s = status(&sock);
        s["bytes"].as_u64().unwrap_or(0) > 0
    });
    assert_eq!(s["reloads"], 0);
    assert!(
        s["ingest_rate_bytes_per_sec"].as_f64().unwrap_or(0.0) > 0.0,
        "{s}"
    );
    assert!(s["last_error"].is_null(), "{s}");
    assert!(file(&store, &file_b).await.is_none());

    // A valid change by request: another folder, a 1 s idle timeout, another level.
    write_config(&config, &b, 1, "info");
    let r = request(&sock, r#"{"type":"reload"}"#);
    assert_eq!(r["type"], "reloaded", "{r}");
    let changed: Vec<&str> = r["changed"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        changed,
        ["projects_dir", "log.level", "sessions.idle_timeout_secs"],
        "{r}"
    );
    wait_offset(&store, &file_b, lb.len() as u64).await;
    let s = status(&sock);
    assert_eq!(s["projects_dir"], b.display().to_string());
    assert_eq!(s["reloads"], 1);
    // The new idle timeout finishes B's session without a restart.
    wait_for(
        Duration::from_secs(15),
        "session b finished by idle time",
        || async { session_status(&env, SID_B).await.as_deref() == Some("finished") },
    )
    .await;

    // Invalid configurations: by request (answered with the reason) and by SIGHUP (logged).
    std::fs::write(&config, "projects_dir = [\n").expect("bad toml");
    let r = request(&sock, r#"{"type":"reload"}"#);
    assert_eq!(r["type"], "error", "{r}");
    let msg = r["message"].as_str().unwrap_or("");
    assert!(msg.contains("running configuration kept"), "{msg}");
    assert!(msg.contains("gleaner.toml"), "names the file: {msg}");
    std::fs::write(&config, "[daemon]\nworkers = 0\n").expect("invalid value");
    hup(&daemon);
    wait_for(
        Duration::from_secs(10),
        "the refused reload in status",
        || async {
            let s = status(&sock);
            s["last_error"]["what"] == "reload"
                && s["last_error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("daemon.workers"))
        },
    )
    .await;
    let s = status(&sock);
    assert_eq!(
        s["projects_dir"],
        b.display().to_string(),
        "old config kept"
    );
    assert_eq!(s["reloads"], 1);
    let lb2 = user_line(SID_B, "ub2", "still followed after the refused reloads");
    append(&file_b, lb2.as_bytes());
    wait_offset(&store, &file_b, (lb.len() + lb2.len()) as u64).await;

    // A valid change by SIGHUP: back to folder a.
    write_config(&config, &a, 600, "warn");
    hup(&daemon);
    wait_for(
        Duration::from_secs(10),
        "the SIGHUP reload applied",
        || async { status(&sock)["reloads"] == 2 },
    )
    .await;
    assert_eq!(status(&sock)["projects_dir"], a.display().to_string());
    let la2 = user_line(SID_A, "ua2", "folder a again");
    append(&file_a, la2.as_bytes());
    wait_offset(&store, &file_a, (la.len() + la2.len()) as u64).await;

    let (exit, _) = terminate(&mut daemon);
    assert!(exit.success(), "{exit:?}");
    // Nothing was read twice across the reloads.
    assert_eq!(counts(&store).await.messages, 4);
    store.close().await;
}

/// With the inotify watch limit reached (3 watches, set in a user namespace of its own), the
/// daemon says `degraded` and polls: a line appended in an unwatched folder still arrives,
/// although the full rescan is 10 minutes away.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn watch_limit_falls_back_to_polling() {
    let env = TestEnv::new(Backend::Sqlite).await;
    let mut paths = Vec::new();
    for i in 0..6 {
        let sid = format!("aaaaaaaa-bbbb-4ccc-8ddd-00000000010{i}");
        let p = env.path(&format!("-home-u-p{i}/{sid}.jsonl"));
        append(&p, user_line(&sid, "u1", "hello").as_bytes());
        paths.push((sid, p));
    }
    let inner = env.cmd();
    let mut cmd = Command::new("unshare");
    cmd.env_clear();
    for (k, v) in inner.get_envs() {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    cmd.env("GLEANER_DAEMON__RESCAN_INTERVAL_SECS", "600")
        .env("GLEANER_DAEMON__POLL_INTERVAL_MS", "200")
        .args([
            "-U",
            "-r",
            "sh",
            "-c",
            "echo 3 > /proc/sys/user/max_inotify_watches && exec \"$0\" \"$@\"",
        ])
        .arg(inner.get_program())
        .args(inner.get_args())
        .arg("daemon")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut daemon = cmd.spawn().expect("unshare (util-linux) runs the daemon");
    let sock = sock_of(&env);
    let store = env.store().await;
    wait_for(Duration::from_secs(20), "the daemon answers", || async {
        status_pid(&sock).is_some()
    })
    .await;
    // The socket answers before the watcher has started (it reports `poll` until then).
    wait_for(
        Duration::from_secs(20),
        "the watcher to report degraded",
        || async { status(&sock)["watch_mode"] == "degraded" },
    )
    .await;
    for (sid, p) in &paths {
        let before = std::fs::metadata(p).expect("stat").len();
        let line = user_line(sid, "u2", "appended while only polling covers this folder");
        append(p, line.as_bytes());
        wait_offset(&store, p, before + line.len() as u64).await;
    }
    let (exit, _) = terminate(&mut daemon);
    let mut err = String::new();
    if let Some(mut e) = daemon.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    assert!(exit.success(), "{exit:?}: {err}");
    assert!(err.contains("inotify watch limit reached"), "{err}");
    assert_eq!(
        err.matches("inotify watch limit reached").count(),
        1,
        "said once: {err}"
    );
    store.close().await;
}
