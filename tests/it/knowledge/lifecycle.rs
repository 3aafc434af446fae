//! A session's life in the store: finished when idle or by the hook, with or without a
//! daemon.

use super::*;

async fn session_status(store: &Store, id: &str) -> Option<(String, Option<String>)> {
    let f = SessionFilter {
        session_ids: Some(vec![id.to_string()]),
        ..SessionFilter::default()
    };
    let s = store.list_sessions(&f).await.expect("sessions");
    s.first().map(|s| (s.status.clone(), s.end_reason.clone()))
}

async fn wait_status(store: &Store, id: &str, want: &str) {
    wait_for(Duration::from_secs(20), &format!("{id} {want}"), || async {
        session_status(store, id)
            .await
            .is_some_and(|(s, _)| s == want)
    })
    .await;
}

async fn idle_and_hook(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let a = env.path(&format!("p/{A}.jsonl"));
    let b = env.path(&format!("p/{B}.jsonl"));
    append(&a, user_line(A, "a1", "start something").as_bytes());
    let mut daemon = env.spawn_daemon(&[("GLEANER_SESSIONS__IDLE_TIMEOUT_SECS", "2")]);
    let store = env.store().await;

    // Idle: no file grew for 2 s.
    wait_status(&store, A, "finished").await;
    assert_eq!(
        session_status(&store, A).await.and_then(|s| s.1).as_deref(),
        Some("idle")
    );
    // It grows again: active again, then idle again.
    append(&a, user_line(A, "a2", "one more thing").as_bytes());
    wait_status(&store, A, "active").await;
    wait_status(&store, A, "finished").await;

    // The hook: a session written just now, ended by Claude Code. The daemon ingests and
    // finishes it at once (long before the idle timeout could), and the hook does not wait for
    // stdin to close.
    let lb = user_line(B, "b1", "quick question");
    append(&b, lb.as_bytes());
    append(
        &env.path(&format!("p/{B}/subagents/agent-x1.jsonl")),
        user_line(B, "x1", "[Request interrupted by user]").as_bytes(),
    );
    let start = Instant::now();
    let mut hook = env
        .cmd()
        .args(["hook", "session-end"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("hook");
    let input = serde_json::json!({
        "session_id": B,
        "transcript_path": b,
        "cwd": "/home/u/p",
        "hook_event_name": "SessionEnd",
        "reason": "exit"
    });
    let mut stdin = hook.stdin.take().expect("stdin");
    stdin
        .write_all(input.to_string().as_bytes())
        .expect("write hook input");
    // stdin stays open on purpose.
    let mut status = None;
    poll_until(Duration::from_secs(10), "the hook to exit", || {
        status = hook.try_wait().expect("wait");
        status.is_some()
    });
    let status = status.expect("exited");
    drop(stdin);
    assert!(status.success());
    // Claude Code's budget for a hook; the daemon finishes the work after the hook returned.
    let took = start.elapsed();
    assert!(took < Duration::from_millis(600), "hook took {took:?}");
    wait_for(
        Duration::from_secs(10),
        "the daemon finished the session",
        || async {
            session_status(&store, B).await == Some(("finished".into(), Some("hook".into())))
        },
    )
    .await;
    assert_eq!(
        file(&store, &b).await.map(|f| f.offset as usize),
        Some(lb.len())
    );
    let fb = store
        .list_feedback(&FeedbackFilter {
            session_ids: Some(vec![B.to_string()]),
            ..FeedbackFilter::default()
        })
        .await
        .expect("feedback");
    assert_eq!(
        fb.len(),
        2,
        "the message and the sub-agent's interruption: {fb:?}"
    );

    // `gleaner status` talks to the same socket.
    let out = env
        .cmd()
        .args(["status", "--json"])
        .output()
        .expect("status");
    assert_ok(&out);
    let st: Value = serde_json::from_slice(&out.stdout).expect("status json");
    assert!(st["files"].as_u64().unwrap_or(0) >= 3, "{st}");

    let (status, _) = terminate(&mut daemon);
    assert!(status.success());
    assert!(!env.dir.path().join("data/gleaner/gleaner.sock").exists());
    store.close().await;
    env.cleanup().await;
}

both_backends!(
    sessions_finish_by_idle_time_and_hook_then_reopen,
    idle_and_hook
);

async fn hook_without_daemon(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let b = env.path(&format!("p/{B}.jsonl"));
    append(&b, user_line(B, "b1", "no daemon here").as_bytes());
    env.hook_session_end(B, &b).await;
    let store = env.store().await;
    assert_eq!(
        session_status(&store, B).await,
        Some(("finished".into(), Some("hook".into())))
    );

    // Garbage input, or none at all: still exit 0.
    for input in ["not json", ""] {
        let out = env
            .cmd()
            .args(["hook", "session-end"])
            .stdin(Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                c.stdin.take().expect("stdin").write_all(input.as_bytes())?;
                c.wait_with_output()
            })
            .expect("hook");
        assert!(out.status.success());
    }
    store.close().await;
    env.cleanup().await;
}

both_backends!(hook_ingests_itself_when_no_daemon_runs, hook_without_daemon);
