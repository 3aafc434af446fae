//! The daemon, driven through the real binary, on both backends.

use std::time::Duration;

use crate::both_backends;
use crate::common::*;

mod socket;

const SID: &str = "aaaaaaaa-bbbb-4ccc-8ddd-000000000001";
const SID2: &str = "aaaaaaaa-bbbb-4ccc-8ddd-000000000002";

async fn live_file_lifecycle(backend: Backend) {
    let env = TestEnv::new(backend).await;
    // A long rescan interval: everything below must arrive through file-system events.
    let mut daemon = env.spawn_daemon(&[("GLEANER_DAEMON__RESCAN_INTERVAL_SECS", "600")]);
    let store = env.store().await;
    let main = env.path(&format!("-home-u-p/{SID}.jsonl"));

    // Growth, in a project folder created after the daemon started (its watch installed).
    wait_for(Duration::from_secs(10), "the watch installed", || async {
        env.status()["watch_mode"] == "events"
    })
    .await;
    let l1 = user_line(SID, "u1", "first prompt");
    append(&main, l1.as_bytes());
    wait_offset(&store, &main, l1.len() as u64).await;

    // A partial line grows across writes; it is committed once, when its newline arrives.
    let l2 = user_line(SID, "u2", "second prompt, written in pieces");
    let (a, b) = l2.as_bytes().split_at(40);
    let (b, c) = b.split_at(60);
    // A negative check (the partial line must not be committed), made once the daemon has
    // read each piece.
    let seen = env.read_bytes();
    append(&main, a);
    env.wait_read(seen + a.len() as u64, "the first piece read");
    let seen = env.read_bytes();
    append(&main, b);
    env.wait_read(seen + b.len() as u64, "the second piece read");
    assert_eq!(
        file(&store, &main).await.map(|f| f.offset),
        Some(l1.len() as i64)
    );
    append(&main, c);
    let end = (l1.len() + l2.len()) as u64;
    wait_offset(&store, &main, end).await;
    assert_eq!(counts(&store).await.messages, 2);
    let f = file(&store, &main).await.expect("row");
    assert_eq!((f.lines, f.generation), (2, 1));
    assert_eq!(f.session_id.as_deref(), Some(SID));

    // A freshly created nested sub-agent folder (notify misses its first events: catch-up scan).
    let agent = env.path(&format!("-home-u-p/{SID}/subagents/agent-a1b2c3.jsonl"));
    let la = user_line(SID, "a1", "explore");
    append(&agent, la.as_bytes());
    wait_offset(&store, &agent, la.len() as u64).await;
    let fa = file(&store, &agent).await.expect("agent row");
    assert_eq!(fa.session_id.as_deref(), Some(SID));
    assert_eq!(fa.agent_id.as_deref(), Some("a1b2c3"));

    // Blank lines, CRLF, a BOM-free malformed line: recorded, skipped, the rest flows.
    let tail = format!(
        "\n{}{{broken json\n",
        user_line(SID, "u3", "third").replace('\n', "\r\n")
    );
    append(&main, tail.as_bytes());
    let end = end + tail.len() as u64;
    wait_offset(&store, &main, end).await;
    let f = file(&store, &main).await.expect("row");
    assert_eq!((f.lines, f.diagnostics), (5, 1));
    assert_eq!(counts(&store).await.messages, 4);

    // Truncation and rewrite: a new generation from byte 0.
    let r1 = user_line(SID, "r1", "rewritten");
    std::fs::write(&main, r1.as_bytes()).expect("rewrite");
    wait_for(Duration::from_secs(20), "generation 2", || async {
        file(&store, &main)
            .await
            .is_some_and(|f| f.generation == 2 && f.offset as usize == r1.len())
    })
    .await;
    assert_eq!(counts(&store).await.messages, 5, "old rows kept, one new");

    // Byte-identical replacement under the same name: nothing new.
    let tmp = env.dir.path().join("same.jsonl");
    std::fs::write(&tmp, r1.as_bytes()).expect("write tmp");
    std::fs::rename(&tmp, &main).expect("rename over");
    let r2 = user_line(SID, "r2", "after identical rename");
    append(&main, r2.as_bytes());
    wait_offset(&store, &main, (r1.len() + r2.len()) as u64).await;
    let f = file(&store, &main).await.expect("row");
    assert_eq!(f.generation, 2, "identical content keeps the generation");
    assert_eq!(counts(&store).await.messages, 6);

    // Replacement with different content: a new generation.
    let n1 = user_line(SID, "n1", "a different file now");
    std::fs::write(&tmp, n1.as_bytes()).expect("write tmp");
    std::fs::rename(&tmp, &main).expect("rename over");
    wait_for(Duration::from_secs(20), "generation 3", || async {
        file(&store, &main)
            .await
            .is_some_and(|f| f.generation == 3 && f.offset as usize == n1.len())
    })
    .await;
    assert_eq!(counts(&store).await.messages, 7);

    // Deletion: rows kept, file marked gone.
    std::fs::remove_file(&agent).expect("delete");
    wait_for(Duration::from_secs(20), "agent file gone", || async {
        file(&store, &agent)
            .await
            .is_some_and(|f| f.state == "gone")
    })
    .await;
    assert_eq!(counts(&store).await.messages, 7);

    let (status, took) = terminate(&mut daemon);
    assert!(status.success(), "daemon exit {status:?}");
    assert!(took < Duration::from_secs(5), "shutdown took {took:?}");
    store.close().await;
    env.cleanup().await;
}

both_backends!(live_file_lifecycle_through_events, live_file_lifecycle);

async fn changes_while_stopped(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let a = env.path(&format!("p/{SID}.jsonl"));
    let b = env.path(&format!("p/{SID2}.jsonl"));
    let la = user_line(SID, "a1", "alpha");
    let lb = user_line(SID2, "b1", "beta");
    append(&a, la.as_bytes());
    append(&b, lb.as_bytes());
    append(&b, lb.replace("b1", "b2").as_bytes());
    env.ingest();

    // While nothing runs: a grows, b is truncated and rewritten shorter, c appears.
    let la2 = user_line(SID, "a2", "alpha two");
    append(&a, la2.as_bytes());
    // (Written later than the lines it replaces: another conversation, not the same grown back.)
    let lb3 = user_line(SID2, "b3", "beta two")
        .replace("2026-01-01T00:00:00.000Z", "2026-01-01T00:05:00.000Z");
    std::fs::write(&b, lb3.as_bytes()).expect("rewrite b");
    let c = env.path(&format!("q/{SID}/subagents/agent-x.jsonl"));
    append(&c, user_line(SID, "c1", "gamma").as_bytes());

    let mut daemon = env.spawn_daemon(&[]);
    let store = env.store().await;
    wait_offset(&store, &a, (la.len() + la2.len()) as u64).await;
    wait_offset(&store, &b, lb3.len() as u64).await;
    wait_offset(&store, &c, std::fs::metadata(&c).expect("c").len()).await;
    let fb = file(&store, &b).await.expect("b");
    assert_eq!((fb.generation, fb.lines), (2, 1));
    assert_eq!(counts(&store).await.messages, 6);
    // The rewrite closed the old generation's episode; the new one is the only open one.
    let sql = format!(
        "SELECT e.generation, e.status FROM episodes e JOIN files f ON f.id = e.file_id \
         WHERE f.path = '{}' ORDER BY e.generation",
        b.display()
    );
    let eps: Vec<(i64, String)> = match &store {
        gleaner::store::Store::Sqlite(p) => sqlx::query_as(&sql).fetch_all(p).await,
        gleaner::store::Store::Postgres(p) => sqlx::query_as(&sql).fetch_all(p).await,
    }
    .expect("episodes of b");
    assert_eq!(eps, [(1, "closed".to_string()), (2, "open".to_string())]);

    // A second instance refuses to start and names the lock.
    let out = env.cmd().arg("daemon").output().expect("second daemon");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("gleaner.lock"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");

    let (status, _) = terminate(&mut daemon);
    assert!(status.success());
    store.close().await;
    env.cleanup().await;
}

both_backends!(
    restart_catches_up_on_changes_made_while_stopped,
    changes_while_stopped
);

async fn over_long_line(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let p = env.path(&format!("p/{SID}.jsonl"));
    let big = user_line(SID, "big", &"x".repeat(5000));
    let after = user_line(SID, "after", "still here");
    append(&p, big.as_bytes());
    append(&p, after.as_bytes());
    let out = env
        .cmd()
        .env("GLEANER_TAIL__MAX_LINE_BYTES", "2048")
        .args(["ingest", "--json"])
        .output()
        .expect("ingest");
    assert_ok(&out);
    let store = env.store().await;
    let f = file(&store, &p).await.expect("row");
    assert_eq!(
        (f.offset as usize, f.lines, f.diagnostics),
        (big.len() + after.len(), 2, 1)
    );
    assert_eq!(counts(&store).await.messages, 1);
    store.close().await;
    env.cleanup().await;
}

both_backends!(
    over_long_line_is_a_diagnostic_and_the_rest_flows,
    over_long_line
);

/// The systemd notify protocol, against a fake `NOTIFY_SOCKET`: READY first (with a STATUS),
/// WATCHDOG pings while the engine turns, STOPPING on SIGTERM, in that order.
#[cfg(unix)]
#[tokio::test]
async fn notify_protocol_ready_watchdog_stopping() {
    use std::os::unix::net::UnixDatagram;
    let env = TestEnv::new(Backend::Sqlite).await;
    let sock_path = env.dir.path().join("notify.sock");
    let sock = UnixDatagram::bind(&sock_path).expect("bind fake notify socket");
    sock.set_read_timeout(Some(std::time::Duration::from_millis(200)))
        .unwrap();
    let notify = sock_path.display().to_string();
    let mut daemon = env.spawn_daemon(&[
        ("NOTIFY_SOCKET", notify.as_str()),
        ("WATCHDOG_USEC", "900000"),
        ("GLEANER_DAEMON__RESCAN_INTERVAL_SECS", "1"),
    ]);
    let mut got: Vec<String> = Vec::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(4);
    let mut buf = [0u8; 4096];
    while std::time::Instant::now() < deadline {
        if let Ok(n) = sock.recv(&mut buf) {
            got.push(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
    }
    let (status, _) = terminate(&mut daemon);
    assert!(status.success());
    let stop_deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while std::time::Instant::now() < stop_deadline {
        if let Ok(n) = sock.recv(&mut buf) {
            got.push(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
    }
    assert!(got[0].contains("READY=1"), "{got:?}");
    assert!(got[0].contains("STATUS=watching"), "{got:?}");
    let pings = got.iter().filter(|m| m.contains("WATCHDOG=1")).count();
    assert!(pings >= 1, "{got:?}");
    assert!(
        got.last().is_some_and(|m| m.contains("STOPPING=1")),
        "{got:?}"
    );
}

/// A projects folder that does not exist yet: the daemon says so, waits, and ingests what
/// appears in it once it is created.
#[tokio::test]
async fn a_missing_projects_folder_is_waited_for() {
    let env = TestEnv::new(Backend::Sqlite).await;
    let missing = env.dir.path().join("later/projects");
    let mut daemon = env
        .cmd_for(&missing)
        .env("GLEANER_DAEMON__RESCAN_INTERVAL_SECS", "1")
        .env("GLEANER_LOG__LEVEL", "info")
        .arg("daemon")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn daemon");
    // Up, and looking for a folder that is not there yet: its log says so.
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let reader = {
        let log = log.clone();
        let stderr = daemon.stderr.take().expect("stderr");
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                let mut l = log.lock().expect("log");
                l.push_str(&line);
                l.push('\n');
            }
        })
    };
    poll_until(
        Duration::from_secs(20),
        "the daemon to say the folder is missing",
        || log.lock().expect("log").contains("does not exist yet"),
    );
    let project = missing.join("-home-u-proj");
    std::fs::create_dir_all(&project).expect("create projects");
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/snippet_session.jsonl"),
        project.join("11111111-2222-4333-8444-555555555555.jsonl"),
    )
    .expect("copy transcript");
    let mut files = 0;
    let ingested = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        poll_until(Duration::from_secs(15), "the transcript ingested", || {
            let out = env
                .cmd_for(&missing)
                .args(["files", "--json"])
                .output()
                .expect("files");
            if out.status.success() {
                let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
                files = v.as_array().map_or(0, |a| a.len());
            }
            files > 0
        })
    }));
    let (status, _) = terminate(&mut daemon);
    assert!(status.success());
    reader.join().expect("log reader");
    let err = log.lock().expect("log").clone();
    assert!(ingested.is_ok(), "never ingested: {err}");
    assert_eq!(
        files, 1,
        "the transcript was ingested once the folder appeared: {err}"
    );
}

/// A tree whose files are all replaced at once (a backfill of new files while as many are
/// marked gone): every file marked gone goes through the one writer, between its group
/// commits, so none waits on SQLite's lock (it once failed an ingest: "database is locked").
async fn replaced_tree(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let sid = |part: usize, i: usize| format!("aaaaaaaa-bbbb-4ccc-8ddd-{part:06}{i:06}");
    let write_part = |part: usize| {
        for i in 0..150 {
            let p = env.path(&format!("p{part}/{}.jsonl", sid(part, i)));
            let lines: String = (0..20)
                .map(|n| user_line(&sid(part, i), &format!("u{n}"), "a line of the backfill"))
                .collect();
            append(&p, lines.as_bytes());
        }
    };
    write_part(1);
    env.ingest();
    std::fs::remove_dir_all(env.path("p1")).expect("remove part 1");
    write_part(2);
    let summary = env.ingest();
    assert_eq!(
        (&summary["errors"], &summary["rows"]),
        (&0.into(), &3000.into()),
        "{summary}"
    );
    let store = env.store().await;
    let all = files(&store).await;
    let state = |prefix: &str| {
        let mut s: Vec<&str> = all
            .iter()
            .filter(|f| f.path.contains(prefix))
            .map(|f| f.state.as_str())
            .collect();
        s.dedup();
        (all.iter().filter(|f| f.path.contains(prefix)).count(), s)
    };
    assert_eq!(state("/p1/"), (150, vec!["gone"]));
    assert_eq!(state("/p2/"), (150, vec!["active"]));
    assert_eq!(counts(&store).await.messages, 2 * 150 * 20);
    store.close().await;
    env.cleanup().await;
}

both_backends!(a_tree_replaced_at_once_is_marked_gone, replaced_tree);

/// A fresh daemon over old transcripts says once that it has caught up, and finishes the
/// sessions already idle then, as `ingest` does (not at the next sweep, a minute later).
async fn first_pass(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let p = env.path(&format!("old/{SID}.jsonl"));
    append(&p, user_line(SID, "u1", "an old session").as_bytes());
    let two_hours_ago = std::time::SystemTime::now() - Duration::from_secs(7200);
    std::fs::File::options()
        .append(true)
        .open(&p)
        .and_then(|f| f.set_modified(two_hours_ago))
        .expect("mtime");
    let mut daemon = env.spawn_daemon(&[("GLEANER_LOG__LEVEL", "info")]);
    let store = env.store().await;
    wait_for(
        Duration::from_secs(10),
        "the old session finished",
        || async {
            store
                .session(SID)
                .await
                .ok()
                .flatten()
                .is_some_and(|s| s.status == "finished")
        },
    )
    .await;
    let (status, _) = terminate(&mut daemon);
    assert!(status.success());
    let mut err = String::new();
    if let Some(mut e) = daemon.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    assert_eq!(err.matches("caught up").count(), 1, "{err}");
    store.close().await;
    env.cleanup().await;
}

both_backends!(first_pass_catches_up_and_finishes_idle_sessions, first_pass);
