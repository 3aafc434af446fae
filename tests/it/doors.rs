//! One query layer, every door: the same bad inputs refused the same way by the CLI (one line,
//! exit 2), the MCP server (an error result naming the field, and the server goes on) and the
//! web view (400 naming the value); a read command on a missing database creates nothing; the
//! web view refuses other hosts (DNS rebinding) and writes from other origins; MCP reads and
//! stores only the session's own transcripts.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::json;

use crate::both_backends;
use crate::common::*;
use crate::mcp::Client;
use crate::web::{get, start_web};

const SID: &str = "d0025d00-0000-4000-8000-000000000025";

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A session of ten prompts, ingested.
async fn one_session(env: &TestEnv) -> std::path::PathBuf {
    let path = env.path(&format!("-home-u-p/{SID}.jsonl"));
    let mut text = String::new();
    for i in 0..10 {
        text.push_str(&user_line(
            SID,
            &format!("u{i}"),
            &format!("prompt number {i}"),
        ));
    }
    append(&path, text.as_bytes());
    env.ingest();
    path
}

async fn bad_inputs(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let transcript = one_session(&env).await;

    // The CLI: one line naming the value, exit 2, before or instead of any answer.
    let cli: Vec<(Vec<&str>, &str)> = vec![
        (vec!["sessions", "--since", "2026-13-45"], "2026-13-45"),
        (vec!["sessions", "--until", "2026-99-99"], "2026-99-99"),
        (
            vec!["search", "prompt", "--since", "2026-13-45"],
            "2026-13-45",
        ),
        (vec!["feedback", "--since", "last tuesday"], "last tuesday"),
        (vec!["snippets", "--until", "2026-02-30"], "2026-02-30"),
        (
            vec!["sessions", "--since", "2026-04-28", "--until", "2026-04-27"],
            "is not before --until \"2026-04-27\"",
        ),
        (
            vec!["usage", "--since", "2026-04-28", "--until", "2026-04-27"],
            "is not before",
        ),
        (vec!["export", "--format", "md", "--since", "7x"], "7x"),
        (vec!["sessions", "--limit", "0"], "--limit 0"),
        (vec!["sessions", "--limit", "-1"], "--limit"),
        (vec!["search", "x", "--limit", "-1"], "--limit"),
        (vec!["episodes", "--offset", "99999999999"], "--offset"),
        (vec!["sessions", "--status", "done"], "done"),
        (vec!["feedback", "--type", "praise"], "praise"),
        (vec!["summaries", "--kind", "poem"], "poem"),
        (vec!["episodes", "--triage", "drama"], "drama"),
        (vec!["--log-level", "warning", "sessions"], "warning"),
    ];
    for (args, needle) in cli {
        let out = env.cmd().args(&args).output().expect("run");
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: want {needle:?} in {err}");
        assert!(out.stdout.is_empty(), "{args:?} printed an answer");
    }
    for env_value in ["nonsense", "warning", "gleaner=loud"] {
        let out = env
            .cmd()
            .env("GLEANER_LOG", env_value)
            .arg("sessions")
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "GLEANER_LOG={env_value}");
        assert!(stderr_of(&out).contains("log.level"), "{}", stderr_of(&out));
    }
    // A valid filter still answers.
    let out = env
        .cmd()
        .args(["sessions", "--since", "2025-12-31T23:00:00+01:00", "--json"])
        .output()
        .expect("run");
    assert_ok(&out);
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(listed[0]["session_id"], SID, "{listed}");
    // A date alone as the end includes its day: the session of 2026-01-01 is in 1 to 1 January.
    let out = env
        .cmd()
        .env("TZ", "UTC")
        .args([
            "sessions",
            "--since",
            "2026-01-01",
            "--until",
            "2026-01-01",
            "--json",
        ])
        .output()
        .expect("run");
    assert_ok(&out);
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(listed[0]["session_id"], SID, "{listed}");

    // MCP: an error result naming the field and the value; the server keeps serving.
    let mut c = Client::ready(&env);
    let outside = env.dir.path().join("not-a-transcript.jsonl");
    std::fs::write(
        &outside,
        user_line(SID, "x1", "an unrelated file").repeat(20),
    )
    .expect("write");
    let bad = vec![
        (
            "list_sessions",
            json!({"since": "2026-13-45"}),
            "2026-13-45",
        ),
        (
            "list_sessions",
            json!({"until": "2026-99-99"}),
            "2026-99-99",
        ),
        (
            "search",
            json!({"query": "prompt", "since": "2026-13-45"}),
            "2026-13-45",
        ),
        ("get_summaries", json!({"until": "soon"}), "soon"),
        (
            "list_sessions",
            json!({"since": "2026-04-28", "until": "2026-04-27"}),
            "is not before",
        ),
        ("query_feedback", json!({"limit": 0}), "limit"),
        ("list_episodes", json!({"offset": 4_000_000}), "offset"),
        (
            "query_snippets",
            json!({"end_date": "2026-02-30"}),
            "2026-02-30",
        ),
        ("list_sessions", json!({"status": "done"}), "done"),
        (
            "extract_snippet",
            json!({"session_id": SID, "snippet_type": "learning_pattern", "title": "t",
                   "source_file": outside.display().to_string(),
                   "source_line_start": 1, "source_line_end": 5}),
            "is not a transcript of session",
        ),
        (
            "extract_snippet",
            json!({"session_id": SID, "snippet_type": "learning_pattern", "title": "t",
                   "source_file": "/etc/passwd", "source_line_start": 1, "source_line_end": 5}),
            "is not a transcript of session",
        ),
        (
            "get_transcript_lines",
            json!({"session_id": SID, "start_line": 50, "end_line": 60}),
            "has 10 lines",
        ),
    ];
    for (tool, args, needle) in bad {
        match c.call(tool, args.clone()) {
            Ok(v) => panic!("{tool} {args} succeeded: {v}"),
            Err(msg) => assert!(
                msg.contains(needle),
                "{tool} {args}: want {needle:?} in {msg}"
            ),
        }
    }
    // A range past the end is cut to the file, saying so.
    let lines = c
        .call(
            "get_transcript_lines",
            json!({"session_id": SID, "start_line": 8, "end_line": 500}),
        )
        .expect("clamped range");
    assert_eq!(lines["lines_in_file"], 10, "{lines}");
    assert_eq!(lines["end_line"], 10, "{lines}");
    assert!(
        lines["note"].as_str().is_some_and(|n| n.contains("500")),
        "{lines}"
    );
    // Still serving, and the session's own transcript is accepted.
    let ok = c
        .call(
            "extract_snippet",
            json!({"session_id": SID, "snippet_type": "learning_pattern",
                   "title": "Prompts one to five", "source_file": transcript.display().to_string(),
                   "source_line_start": 1, "source_line_end": 5}),
        )
        .expect("own transcript");
    assert_eq!(ok["success"], true, "{ok}");
    drop(c.stdin);
    let _ = c.child.wait();

    // The web view: 400 naming the value.
    let web = start_web(&env, &env.projects, "127.0.0.1:0");
    let lines = |range: &str| format!("/sessions/{SID}/lines?{range}");
    for (path, needle) in [
        ("/sessions?since=2026-13-45".to_string(), "2026-13-45"),
        ("/sessions?until=2026-99-99".to_string(), "2026-99-99"),
        (
            "/sessions?since=2026-04-28&until=2026-04-27".to_string(),
            "is not before",
        ),
        ("/?q=prompt&since=2026-13-45".to_string(), "2026-13-45"),
        ("/sessions?offset=ten".to_string(), "ten"),
        ("/sessions?sort=loudest".to_string(), "loudest"),
        ("/snippets?type=joke".to_string(), "joke"),
        ("/sessions?status=sleeping".to_string(), "sleeping"),
        ("/sessions?limit=501".to_string(), "501"),
        // A range starting past the end says how long the file is, as MCP does.
        (lines("from=50&to=60"), "has 10 lines"),
        (lines("from=5&to=2"), "invalid range"),
    ] {
        let (status, body) = get(&format!("{}{}", web.url.trim_end_matches('/'), path));
        assert_eq!(status, 400, "{path}: {body}");
        assert!(body.contains(needle), "{path}: want {needle:?}");
    }
    let (status, body) = get(&format!("{}sessions?since=2025-12-31", web.url));
    assert_eq!(status, 200);
    assert!(body.contains("prompt number 0"), "{body}");
    // The listing bound is the CLI's and MCP's; a status filters as it does there.
    let (status, body) = get(&format!("{}sessions?limit=500&status=active", web.url));
    assert_eq!(status, 200, "{body}");
    // A range running past the end is cut to the file, saying so (MCP's answer above).
    let (status, body) = get(&format!("{}sessions/{SID}/lines?from=8&to=500", web.url));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("prompt number 8"), "{body}");
    assert!(body.contains("to 500 is past the end"), "{body}");
    drop(web);
    env.cleanup().await;
}

both_backends!(bad_inputs_are_refused_at_every_door, bad_inputs);

/// The raw answer to one HTTP/1.1 request (status line and headers included).
fn raw_http(addr: &str, request: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    s.write_all(request.as_bytes()).expect("send");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

#[tokio::test]
async fn the_web_view_refuses_other_hosts_and_origins() {
    let env = TestEnv::new(Backend::Sqlite).await;
    one_session(&env).await;
    let web = start_web(&env, &env.projects, "127.0.0.1:0");
    let addr = web
        .url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let ask = |host: &str, extra: &str, method: &str| {
        raw_http(
            &addr,
            &format!(
                "{method} /sessions HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n"
            ),
        )
    };
    // DNS rebinding: a name that is not ours gets 421, and no stored text.
    let evil = ask("evil.example", "", "GET");
    assert!(evil.starts_with("HTTP/1.1 421"), "{evil}");
    assert!(!evil.contains("prompt number"), "{evil}");
    let evil = ask(
        &format!("evil.example:{}", addr.rsplit(':').next().unwrap_or("")),
        "",
        "GET",
    );
    assert!(evil.starts_with("HTTP/1.1 421"), "{evil}");
    // Loopback names are served, with the security headers.
    for host in [addr.as_str(), "localhost", "127.0.0.1"] {
        let ok = ask(host, "", "GET");
        assert!(ok.starts_with("HTTP/1.1 200"), "{host}: {ok}");
        assert!(ok.contains("prompt number"), "{host}");
        let lower = ok.to_ascii_lowercase();
        for h in [
            "content-security-policy: default-src 'none'",
            "x-content-type-options: nosniff",
            "referrer-policy: no-referrer",
            "x-frame-options: deny",
        ] {
            assert!(lower.contains(h), "{h} missing: {ok}");
        }
        assert!(!lower.contains("<script"), "{ok}");
    }
    // A write from another origin is refused before any route sees it.
    let cross = ask(
        &addr,
        "Origin: http://evil.example\r\nContent-Length: 0\r\n",
        "POST",
    );
    assert!(cross.starts_with("HTTP/1.1 403"), "{cross}");
    // The style sheet is a file of its own (no inline style under the policy).
    let css = raw_http(
        &addr,
        &format!("GET /style.css HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
    );
    assert!(
        css.starts_with("HTTP/1.1 200") && css.contains("text/css"),
        "{css}"
    );
    drop(web);
    env.cleanup().await;
}

#[tokio::test]
async fn read_commands_create_no_database() {
    let env = TestEnv::new(Backend::Sqlite).await;
    let dir = env.dir.path().join("some/typo/dir");
    let url = format!("sqlite://{}", dir.join("g.db").display());
    for args in [
        vec!["sessions"],
        vec!["files"],
        vec!["search", "x"],
        vec!["summaries"],
        vec!["feedback"],
        vec!["episodes"],
        vec!["snippets"],
        vec!["export", "--format", "json"],
        vec!["text", "abcd"],
        vec!["show", "abcd"],
        vec!["diagnostics"],
        vec!["snippet", "show", "1"],
        // A writing command with nothing to work on: no database, no lock file either.
        vec!["reextract", "--all"],
    ] {
        let out = env.cmd_with_url(&url).args(&args).output().expect("run");
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("no database at") && err.contains("gleaner ingest"),
            "{err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            !env.dir.path().join("some").exists(),
            "{args:?} created folders"
        );
        assert!(
            !env.dir.path().join("data/gleaner/gleaner.lock").exists(),
            "{args:?} took the lock"
        );
    }
    // doctor says so too, and creates nothing either.
    let out = env.cmd_with_url(&url).arg("doctor").output().expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("no database at"), "{text}");
    assert!(!env.dir.path().join("some").exists());
    env.cleanup().await;
}

#[tokio::test]
async fn doctor_reports_a_broken_config_and_goes_on() {
    let env = TestEnv::new(Backend::Sqlite).await;
    one_session(&env).await;
    let cfg_dir = env.dir.path().join("config/gleaner");
    std::fs::create_dir_all(&cfg_dir).expect("mkdir");
    let file = cfg_dir.join("config.toml");
    std::fs::write(&file, "[daemon]\nrescan_interval_secs = \"soon\"\n").expect("write");
    let out = env.cmd().args(["doctor", "--json"]).output().expect("run");
    let checks: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let by = |name: &str| {
        checks
            .as_array()
            .and_then(|a| a.iter().find(|c| c["check"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("no {name} check in {checks}"))
    };
    let config = by("config");
    assert_eq!(config["verdict"], "fail", "{config}");
    let detail = config["detail"].as_str().unwrap_or_default();
    assert!(detail.contains(&file.display().to_string()), "{detail}");
    assert!(detail.contains("rescan_interval_secs"), "{detail}");
    // The other checks ran, on the defaults and the flags.
    assert_eq!(by("database")["verdict"], "ok", "{checks}");
    assert_eq!(by("projects")["verdict"], "ok", "{checks}");
    env.cleanup().await;
}

async fn readers_never_migrate(backend: Backend) {
    let env = TestEnv::new(backend).await;
    one_session(&env).await;
    // Take the database back one migration, as an older gleaner left it.
    let store = env.store().await;
    let latest = store.applied_schema().await.expect("schema").expect("some");
    store.close().await;
    match backend {
        Backend::Sqlite => {
            let pool = sqlx::SqlitePool::connect(&env.url).await.expect("sqlite");
            sqlx::query("DELETE FROM _sqlx_migrations WHERE version = $1")
                .bind(latest)
                .execute(&pool)
                .await
                .expect("forget");
            pool.close().await;
        }
        Backend::Postgres => {
            let pool = sqlx::PgPool::connect(&env.url).await.expect("pg");
            sqlx::query("DELETE FROM _sqlx_migrations WHERE version = $1")
                .bind(latest)
                .execute(&pool)
                .await
                .expect("forget");
            pool.close().await;
        }
    }
    let out = env.cmd().arg("sessions").output().expect("run");
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("gleaner migrate"), "{err}");
    // The reader changed nothing; `gleaner migrate` brings it up, and readers read again.
    let out = env.cmd().arg("sessions").output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    let out = env.cmd().arg("migrate").output().expect("run");
    assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains(&latest.to_string()));
    let out = env
        .cmd()
        .args(["sessions", "--json"])
        .output()
        .expect("run");
    assert_ok(&out);
    env.cleanup().await;
}

both_backends!(
    readers_never_migrate_and_say_what_to_run,
    readers_never_migrate
);
