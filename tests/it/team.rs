//! A store shared by several machines: who and where every door shows and filters by.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;

use serde_json::{json, Value};

use crate::both_backends;
use crate::common::*;
use crate::mcp::Client;

const A: &str = "a1a1a1a1-0000-4000-8000-00000000000a";
const B: &str = "b2b2b2b2-0000-4000-8000-00000000000b";

/// `gleaner ARGS --json` as `machine`, parsed.
fn json_as(env: &TestEnv, machine: &str, args: &[&str]) -> Value {
    let out = env
        .cmd_as(&env.projects, machine, "ana")
        .args(args)
        .arg("--json")
        .output()
        .expect("run");
    assert_ok(&out);
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn ids(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|s| s["session_id"].as_str().expect("id").to_string())
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn ingest_as(env: &TestEnv, projects: &Path, machine: &str, user: &str) {
    let out = env
        .cmd_as(projects, machine, user)
        .args(["ingest", "--json"])
        .output()
        .expect("run");
    assert_ok(&out);
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

async fn machine_and_user_filters(backend: Backend) {
    let env = TestEnv::new(backend).await;
    // Ana's laptop holds session A, Bob's desktop session B.
    let pa = env.dir.path().join("alpha");
    let pb = env.dir.path().join("beta");
    append(
        &pa.join(format!("p/{A}.jsonl")),
        user_line(A, "a-1", "no, use the other parser").as_bytes(),
    );
    append(
        &pb.join(format!("q/{B}.jsonl")),
        user_line(B, "b-1", "no, keep the old cache").as_bytes(),
    );
    ingest_as(&env, &pa, "alpha", "ana");
    ingest_as(&env, &pb, "beta", "bob");

    // Every session says who and where.
    let all = json_as(&env, "alpha", &["sessions"]);
    assert_eq!(ids(&all), set(&[A, B]));
    for s in all.as_array().expect("array") {
        let (machine, user) = if s["session_id"] == A {
            ("alpha", "ana")
        } else {
            ("beta", "bob")
        };
        assert_eq!(s["machine"], machine, "{s}");
        assert_eq!(s["user"], user, "{s}");
        assert_eq!(s["machines"], json!([machine]), "{s}");
    }

    // Filters at the CLI: listings, search, export.
    assert_eq!(
        ids(&json_as(&env, "alpha", &["sessions", "--machine", "beta"])),
        set(&[B])
    );
    assert_eq!(
        ids(&json_as(&env, "alpha", &["sessions", "--user", "ana"])),
        set(&[A])
    );
    assert_eq!(
        ids(&json_as(
            &env,
            "alpha",
            &["feedback", "--user", "bob", "--machine", "beta"]
        )),
        set(&[B])
    );
    assert!(ids(&json_as(
        &env,
        "alpha",
        &["feedback", "--user", "bob", "--machine", "alpha"]
    ))
    .is_empty());
    let hit_sessions = |args: &[&str]| -> BTreeSet<String> {
        json_as(&env, "alpha", args)["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|h| h["session_id"].as_str().expect("id").to_string())
            .collect()
    };
    assert_eq!(hit_sessions(&["search", "parser OR cache"]), set(&[A, B]));
    assert_eq!(
        hit_sessions(&["search", "parser OR cache", "--machine", "alpha"]),
        set(&[A])
    );
    let out = env
        .cmd()
        .args(["export", "--format", "md", "--user", "bob"])
        .output()
        .expect("run");
    assert_ok(&out);
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains(B) && !md.contains(A), "{md}");
    assert!(md.contains("- By bob on beta"), "{md}");

    // A blank value is an error naming the flag, never an empty answer.
    for (flag, cmd) in [("--machine", "sessions"), ("--user", "episodes")] {
        let out = env.cmd().args([cmd, flag, " "]).output().expect("run");
        assert_eq!(out.status.code(), Some(2), "{cmd} {flag}");
        assert!(stderr(&out).contains(flag), "{}", stderr(&out));
    }
    // An unknown machine is an empty answer (exit 0), as any filter that matches nothing.
    assert!(ids(&json_as(&env, "alpha", &["sessions", "--machine", "gamma"])).is_empty());

    // `files` lists one machine's files and says whose.
    let out = env
        .cmd_as(&pa, "alpha", "ana")
        .args(["files"])
        .output()
        .expect("run");
    assert_ok(&out);
    assert!(
        stderr(&out).contains("files of machine alpha (this machine)"),
        "{}",
        stderr(&out)
    );
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.contains(A) && !listed.contains(B), "{listed}");
    let v = json_as(&env, "alpha", &["files", "--machine", "beta"]);
    let paths: Vec<&str> = v
        .as_array()
        .expect("array")
        .iter()
        .map(|f| f["path"].as_str().expect("path"))
        .collect();
    assert_eq!(paths.len(), 1, "{v}");
    assert!(paths[0].contains(B), "{v}");

    // MCP: the same filters, and an error result for a blank one; the server keeps serving.
    let mut c = Client::ready(&env);
    let r = c
        .call("list_sessions", json!({"machine": "beta"}))
        .expect("list_sessions");
    let got: BTreeSet<String> = r["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| s["session_id"].as_str().expect("id").to_string())
        .collect();
    assert_eq!(got, set(&[B]), "{r}");
    let e = c
        .call("query_feedback", json!({"user": ""}))
        .expect_err("blank user");
    assert!(e.contains("user"), "{e}");
    let r = c
        .call("query_feedback", json!({"user": "ana"}))
        .expect("query_feedback");
    assert_eq!(r["feedback"].as_array().map(Vec::len), Some(1), "{r}");
    // Bob's transcript is on his machine: its lines come from the archive his daemon wrote.
    let lines = c
        .call(
            "get_transcript_lines",
            json!({"session_id": B, "start_line": 1, "end_line": 1}),
        )
        .expect("another machine's transcript, from the archive");
    assert_eq!(lines["from_archive"], true, "{lines}");
    let _ = c.child.kill();
    let _ = c.child.wait();
    env.cleanup().await;
}

both_backends!(machine_and_user, machine_and_user_filters);

/// Set `machine`'s lease to another host, heard of `age_secs` ago.
async fn lease_held_elsewhere(env: &TestEnv, machine: &str, age_secs: i64) {
    let store = env.store().await;
    let at = (chrono::Utc::now() - chrono::Duration::seconds(age_secs))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let n = execute(
        &store,
        &format!(
            "UPDATE machine_leases SET host = 'fingerprint-of-otherbox', host_name = 'otherbox', \
             pid = 4242, heartbeat_at = '{at}' WHERE machine = '{machine}'"
        ),
    )
    .await
    .expect("update lease");
    assert_eq!(n, 1);
    store.close().await;
}

async fn machine_id_collision(backend: Backend) {
    let env = TestEnv::new(backend).await;
    append(
        &env.path(&format!("p/{A}.jsonl")),
        user_line(A, "a-1", "first").as_bytes(),
    );
    env.ingest();
    // Another host's live daemon writes as `test`: this one refuses, saying how to fix it.
    lease_held_elsewhere(&env, "test", 5).await;
    append(
        &env.path(&format!("p/{A}.jsonl")),
        user_line(A, "a-2", "second").as_bytes(),
    );
    let out = env.cmd().args(["ingest"]).output().expect("run");
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("machine id \"test\" is in use by a gleaner on host otherbox (pid 4242")
            && err.contains("--machine-id"),
        "{err}"
    );
    let mut daemon = env.spawn_daemon_unready(&[]);
    let status = daemon.wait().expect("daemon exits");
    assert!(!status.success());
    // Nothing of the second line was read.
    let v = json_as(&env, "test", &["feedback"]);
    assert_eq!(v.as_array().map(Vec::len), Some(1), "{v}");
    // A lease not renewed for minutes is free: the holder died.
    lease_held_elsewhere(&env, "test", 600).await;
    env.ingest();
    let v = json_as(&env, "test", &["feedback"]);
    assert_eq!(v.as_array().map(Vec::len), Some(2), "{v}");
    env.cleanup().await;
}

both_backends!(collision, machine_id_collision);

/// A role with SELECT rights only (people reading a team's store) runs every reading door:
/// the listings, search, show, text, export, `web` and `mcp`; writing through MCP
/// (`extract_snippet`) answers with the permission error, and the server keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_select_only_role_reads_through_every_door() {
    let env = TestEnv::new(Backend::Postgres).await;
    append(
        &env.path(&format!("p/{A}.jsonl")),
        user_line(A, "a-1", "no, use the other parser").as_bytes(),
    );
    env.ingest();
    let db = env
        .url
        .rsplit('/')
        .next()
        .expect("database name")
        .to_string();
    let role = format!("reader_{db}");
    let store = env.store().await;
    for sql in [
        format!("CREATE ROLE {role} LOGIN"),
        format!("GRANT CONNECT ON DATABASE {db} TO {role}"),
        format!("GRANT USAGE ON SCHEMA public TO {role}"),
        format!("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}"),
    ] {
        execute(&store, &sql).await.expect(&sql);
    }
    store.close().await;
    let url = env.url.replacen("postgres@", &format!("{role}@"), 1);
    assert_ne!(url, env.url, "the test URL names the postgres user");
    for args in [
        vec!["sessions"],
        vec!["feedback", "--user", "ana"],
        vec!["summaries"],
        vec!["episodes"],
        vec!["snippets"],
        vec!["search", "parser"],
        vec!["show", A],
        vec!["text", A],
        vec!["files"],
        vec!["diagnostics"],
        vec!["export", "--format", "json"],
    ] {
        let out = env.cmd_with_url(&url).args(&args).output().expect("run");
        assert_ok(&out);
    }
    let web = crate::web::start_web_cmd(env.cmd_with_url(&url), "127.0.0.1:0");
    let base = web.url.trim_end_matches('/').to_string();
    let (code, body) = crate::web::get(&format!("{base}/sessions"));
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("use the other parser"), "{body}");
    let (code, _) = crate::web::get(&format!("{base}/?q=parser"));
    assert_eq!(code, 200);
    drop(web);
    let mut c = Client::ready_cmd(env.cmd_with_url(&url));
    let r = c.call("list_sessions", json!({})).expect("list_sessions");
    assert_eq!(r["sessions"].as_array().map(Vec::len), Some(1), "{r}");
    let e = c
        .call(
            "extract_snippet",
            json!({"session_id": A, "snippet_type": "learning_pattern",
                   "title": "Parsers", "content": "Use the other parser when the first one fails on nested input: it keeps the spans, so the error messages still point at the right line and column."}),
        )
        .expect_err("no right to write");
    assert!(e.contains("permission denied"), "{e}");
    c.call("get_session", json!({"session_id": A}))
        .expect("still serving");
    let _ = c.child.kill();
    let _ = c.child.wait();
    env.cleanup().await;
    // The role outlives the database: drop it too.
    if let Ok(pool) = sqlx::PgPool::connect(&pg_admin_url()).await {
        let _ = sqlx::query(&format!("DROP ROLE IF EXISTS {role}"))
            .execute(&pool)
            .await;
        pool.close().await;
    }
}

/// After a newer gleaner migrated the store, this one reads on (saying so) and never writes.
async fn newer_schema_is_read_never_written(backend: Backend) {
    let env = TestEnv::new(backend).await;
    append(
        &env.path(&format!("p/{A}.jsonl")),
        user_line(A, "a-1", "first").as_bytes(),
    );
    env.ingest();
    let store = env.store().await;
    let bytes = match backend {
        Backend::Sqlite => "X'00'",
        Backend::Postgres => "'\\x00'::bytea",
    };
    execute(
        &store,
        &format!(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, \
             execution_time) VALUES (9999, 'from the future', TRUE, {bytes}, 0)"
        ),
    )
    .await
    .expect("a newer migration");
    store.close().await;
    let out = env.cmd().args(["sessions"]).output().expect("run");
    assert_ok(&out);
    assert!(
        stderr(&out).contains("upgraded by a newer gleaner"),
        "{}",
        stderr(&out)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("first"));
    append(
        &env.path(&format!("p/{A}.jsonl")),
        user_line(A, "a-2", "second").as_bytes(),
    );
    for args in [vec!["ingest"], vec!["migrate"]] {
        let out = env.cmd().args(&args).output().expect("run");
        assert!(!out.status.success(), "{args:?}");
        assert!(
            stderr(&out).contains("newer than this gleaner's"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    let mut daemon = env.spawn_daemon_unready(&[]);
    assert!(!daemon.wait().expect("daemon exits").success());
    let v = json_as(&env, "test", &["feedback"]);
    assert_eq!(v.as_array().map(Vec::len), Some(1), "nothing written: {v}");
    env.cleanup().await;
}

both_backends!(newer_schema, newer_schema_is_read_never_written);

/// "Newest first" puts what has no time last, on both backends (PostgreSQL sorts NULL first
/// in a plain `DESC`).
async fn untimed_last(backend: Backend) {
    let env = TestEnv::new(backend).await;
    const C: &str = "c3c3c3c3-0000-4000-8000-00000000000c";
    append(
        &env.path(&format!("p/{A}.jsonl")),
        user_line(A, "a-1", "no, timed").as_bytes(),
    );
    let untimed = user_line(C, "c-1", "no, untimed")
        .replace(r#","timestamp":"2026-01-01T00:00:00.000Z""#, "");
    assert!(!untimed.contains("timestamp"));
    append(&env.path(&format!("p/{C}.jsonl")), untimed.as_bytes());
    env.ingest();
    let order = |args: &[&str]| -> Vec<String> {
        json_as(&env, "test", args)
            .as_array()
            .expect("array")
            .iter()
            .map(|s| s["session_id"].as_str().expect("id").to_string())
            .collect()
    };
    assert_eq!(order(&["sessions"]), vec![A, C]);
    assert_eq!(order(&["feedback"]), vec![A, C]);
    env.cleanup().await;
}

both_backends!(nulls_last, untimed_last);
