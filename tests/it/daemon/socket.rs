//! The daemon's status socket (protocol, location, figures) and its stop signals.

use super::*;

/// The socket protocol: one JSON request per line on one connection, one response per line,
/// each stating the protocol version; bad, unknown and wrong-version requests get an error
/// response and the daemon keeps serving.
#[cfg(unix)]
#[tokio::test]
async fn socket_protocol_many_requests_per_connection() {
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::net::UnixStream;
    let env = TestEnv::new(Backend::Sqlite).await;
    let mut daemon = env.spawn_daemon(&[]);
    let sock = env.dir.path().join("data/gleaner/gleaner.sock");
    let stream = UnixStream::connect(&sock).expect("connect");
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .expect("timeout");
    let mut writer = stream.try_clone().expect("clone");
    let mut reader = BufReader::new(stream);
    let requests = [
        r#"{"type":"status"}"#,
        "not json",
        r#"{"type":"launch_rockets"}"#,
        r#"{"type":"status","protocol":2}"#,
        r#"{"type":"rescan","protocol":1}"#,
        r#"{"type":"finish_session","session_id":"no-such-session"}"#,
        r#"{"type":"status"}"#,
    ];
    let mut answers = Vec::new();
    for r in requests {
        writer
            .write_all(format!("{r}\n").as_bytes())
            .expect("write");
        let mut line = String::new();
        reader.read_line(&mut line).expect("read answer");
        let v: serde_json::Value = serde_json::from_str(&line).expect("json answer");
        assert_eq!(v["protocol"], 1, "{line}");
        answers.push(v);
    }
    let (status, _) = terminate(&mut daemon);
    assert!(status.success());
    let types: Vec<&str> = answers
        .iter()
        .map(|a| a["type"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        types,
        [
            "status",
            "error",
            "error",
            "error",
            "accepted",
            "session_ended",
            "status"
        ],
        "{answers:?}"
    );
    assert!(answers[1]["message"]
        .as_str()
        .unwrap_or("")
        .contains("not JSON"));
    assert!(answers[3]["message"]
        .as_str()
        .unwrap_or("")
        .contains("protocol version 2"));
    assert_eq!(answers[5]["finished"], false);
}

/// With `XDG_RUNTIME_DIR` set, the socket lives in `$XDG_RUNTIME_DIR/gleaner/` (folder 0700,
/// socket 0600), clients find it there, and it is gone after shutdown.
#[cfg(unix)]
#[tokio::test]
async fn socket_in_the_runtime_folder() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new(Backend::Sqlite).await;
    let run = env.dir.path().join("run");
    std::fs::create_dir_all(&run).expect("runtime dir");
    let run_s = run.display().to_string();
    let mut daemon =
        env.spawn_daemon_unready(&[("XDG_RUNTIME_DIR", run_s.as_str()), ("USER", "ana")]);
    let folder = run.join("gleaner");
    let mut sock = None;
    poll_until(
        Duration::from_secs(10),
        "a socket in $XDG_RUNTIME_DIR/gleaner",
        || {
            sock = std::fs::read_dir(&folder).ok().and_then(|mut d| {
                d.find_map(|e| {
                    e.ok()
                        .map(|e| e.path())
                        .filter(|p| p.extension().is_some_and(|x| x == "sock"))
                })
            });
            sock.is_some()
        },
    );
    let sock = sock.expect("a socket in $XDG_RUNTIME_DIR/gleaner");
    let mode =
        |p: &std::path::Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&folder), 0o700);
    assert_eq!(mode(&sock), 0o600);
    assert!(!env.dir.path().join("data/gleaner/gleaner.sock").exists());
    let out = env
        .cmd()
        .env("XDG_RUNTIME_DIR", &run)
        .args(["status", "--json"])
        .output()
        .expect("status");
    assert_ok(&out);
    // This machine's figures and the store's, each under its own heading.
    let out = env
        .cmd()
        .env("XDG_RUNTIME_DIR", &run)
        .arg("status")
        .output()
        .expect("status");
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    let mine = text.find("this machine test (user ana):");
    let store = text.find("the store (all machines):");
    assert!(mine.zip(store).is_some_and(|(m, s)| m < s), "{text}");
    let (status, _) = terminate(&mut daemon);
    assert!(status.success());
    assert!(!sock.exists(), "removed at shutdown");
}

/// A second SIGTERM during a slow shutdown exits at once (here the shutdown waits for a refine
/// command that sleeps).
#[cfg(unix)]
#[tokio::test]
async fn a_second_sigterm_exits_at_once() {
    let env = TestEnv::new(Backend::Sqlite).await;
    let src = corpus_dir().join(
        "Eduardodmb__ClaudeHome/projects.bak-20260511-072525/X--03-ACG-Odoo-Docs/7ef88c1a-6238-45b9-8285-0c4e268276c9.jsonl",
    );
    let dst = env.path("-x-odoo/7ef88c1a-6238-45b9-8285-0c4e268276c9.jsonl");
    std::fs::create_dir_all(dst.parent().expect("parent")).expect("mkdir");
    std::fs::copy(&src, &dst).expect("copy session");
    let mut daemon = env.spawn_daemon(&[
        ("GLEANER_REFINE__COMMAND", "sleep 60"),
        ("GLEANER_REFINE__INTERVAL_SECS", "1"),
    ]);
    // Wait until the refine pass runs its sleeping command (a child of one of the daemon's
    // threads).
    let tasks = format!("/proc/{}/task", daemon.id());
    let has_child = || {
        std::fs::read_dir(&tasks)
            .into_iter()
            .flatten()
            .flatten()
            .any(|t| {
                std::fs::read_to_string(t.path().join("children"))
                    .is_ok_and(|c| !c.trim().is_empty())
            })
    };
    poll_until(
        Duration::from_secs(30),
        "the refine command to start",
        has_child,
    );
    let pid = daemon.id().to_string();
    let started = std::time::Instant::now();
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status();
    // The second signal comes while the first one's shutdown waits on the refine command:
    // once the status socket is gone (the shutdown has begun) and the daemon still runs.
    let sock = env.dir.path().join("data/gleaner/gleaner.sock");
    poll_until(Duration::from_secs(10), "the shutdown to begin", || {
        !sock.exists()
    });
    assert!(
        daemon.try_wait().expect("wait").is_none(),
        "exited on the first signal"
    );
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status();
    let mut status = None;
    poll_until(Duration::from_secs(4), "the daemon to exit", || {
        status = daemon.try_wait().expect("wait");
        status.is_some()
    });
    let status = status.expect("exited");
    assert!(status.code() == Some(130) || status.success(), "{status:?}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

/// `gleaner status --json` reports the watch mode, the database state and the database's own
/// figures (backlog, sessions, rows, redactions) once a session is ingested.
async fn status_figures(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let src = corpus_dir().join(
        "Eduardodmb__ClaudeHome/projects.bak-20260511-072525/X--01-Edmb-Clockhelp/3dae6bc4-bf52-4a30-a961-09999364d8c6.jsonl",
    );
    let dst = env.path("-x-clock/3dae6bc4-bf52-4a30-a961-09999364d8c6.jsonl");
    std::fs::create_dir_all(dst.parent().expect("parent")).expect("mkdir");
    std::fs::copy(&src, &dst).expect("copy");
    let mut daemon = env.spawn_daemon(&[]);
    let mut last = serde_json::Value::Null;
    poll_until(Duration::from_secs(20), "the session in status", || {
        let out = env
            .cmd()
            .args(["status", "--json"])
            .output()
            .expect("status");
        if out.status.success() {
            last = serde_json::from_slice(&out.stdout).expect("json");
        }
        last["figures"]["rows"]["messages"].as_i64().unwrap_or(0) > 0
            && last["figures"]["bytes_behind"] == 0
    });
    let (status, _) = terminate(&mut daemon);
    assert!(status.success());
    assert_eq!(last["watch_mode"], "events", "{last}");
    assert_eq!(last["database_state"], "ok", "{last}");
    let f = &last["figures"];
    assert_eq!(f["bytes_behind"], 0, "{last}");
    assert_eq!(
        f["sessions_active"].as_i64().unwrap_or(0) + f["sessions_finished"].as_i64().unwrap_or(0),
        1,
        "{last}"
    );
    for kind in ["messages", "summaries", "feedback", "episodes", "snippets"] {
        assert!(f["rows"][kind].is_i64(), "{kind}: {last}");
    }
    assert!(f["rows"]["messages"].as_i64().unwrap_or(0) >= 100, "{last}");
    assert!(f["redactions"].is_object(), "{last}");
}

both_backends!(status_reports_database_figures, status_figures);
