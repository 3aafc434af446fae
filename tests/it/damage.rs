//! Damage in the archive is one file's problem, never every file's: a flipped byte in a chunk,
//! a chunk cut in half, a damaged `.meta.json`: `restore --all` writes every other file byte for
//! byte, names each damaged one with its session and what is wrong (also in `--json`), and
//! exits 2; `restore --check` finds the same without writing. A pruned session's files are not
//! restored (nor its empty ones), and the doors say when its messages were pruned.

use crate::archive::tree;
use crate::both_backends;
use crate::common::*;

/// A SQL expression of `data` with one byte flipped, or cut to half its length.
fn flipped(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => {
            "substr(data, 1, 40) || CASE WHEN substr(data, 41, 1) = X'00' THEN X'01' \
             ELSE X'00' END || substr(data, 42)"
        }
        Backend::Postgres => "set_byte(data, 40, get_byte(data, 40) # 255)",
    }
}

fn halved(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => "substr(data, 1, length(data) / 2)",
        Backend::Postgres => "substring(data from 1 for length(data) / 2)",
    }
}

async fn first_id(store: &gleaner::store::Store, sql: &str) -> i64 {
    let v: i64 = match store {
        gleaner::store::Store::Sqlite(p) => sqlx::query_scalar(sql).fetch_one(p).await,
        gleaner::store::Store::Postgres(p) => sqlx::query_scalar(sql).fetch_one(p).await,
    }
    .expect(sql);
    v
}

async fn damaged_archive(backend: Backend) {
    let env = TestEnv::new(backend).await;
    copy_tree(
        &corpus_dir().join("4thehalibit__omarchy-backup/.claude/projects"),
        &env.projects,
    );
    let before = tree(&env.projects);
    // Each chunk a frame of its own (old files are otherwise archived straight into blocks).
    env.ingest_dir_env(
        &env.projects,
        &[("GLEANER_ARCHIVE__DEFER_FINISHED", "false")],
    );
    let store = env.store().await;
    // Three files damaged three ways: the largest main transcript's first chunk has a byte
    // flipped, another's chunk is cut in half, a sub-agent's .meta.json is damaged.
    let big = first_id(
        &store,
        "SELECT f.id FROM files f WHERE f.kind = 'main' ORDER BY f.size DESC LIMIT 1",
    )
    .await;
    let other = first_id(
        &store,
        &format!(
            "SELECT f.id FROM files f WHERE f.kind = 'main' AND f.id <> {big} AND f.size > 5000 \
             ORDER BY f.id LIMIT 1"
        ),
    )
    .await;
    let meta = first_id(
        &store,
        "SELECT file_id FROM archive_sidecars ORDER BY file_id LIMIT 1",
    )
    .await;
    let flip = flipped(backend);
    let half = halved(backend);
    for sql in [
        format!("UPDATE archive_chunks SET data = {flip} WHERE file_id = {big} AND start_off = 0"),
        format!(
            "UPDATE archive_chunks SET data = {half} WHERE file_id = {other} AND start_off = 0"
        ),
        format!("UPDATE archive_sidecars SET data = {half} WHERE file_id = {meta}"),
    ] {
        assert_eq!(execute(&store, &sql).await.expect(&sql), 1, "{sql}");
    }
    let path_of = |id: i64| {
        let store = &store;
        async move {
            let sql = format!("SELECT path FROM files WHERE id = {id}");
            match store {
                gleaner::store::Store::Sqlite(p) => {
                    sqlx::query_scalar::<_, String>(&sql).fetch_one(p).await
                }
                gleaner::store::Store::Postgres(p) => {
                    sqlx::query_scalar::<_, String>(&sql).fetch_one(p).await
                }
            }
            .expect("path")
        }
    };
    let (big_path, other_path) = (path_of(big).await, path_of(other).await);

    // --check finds them, writes nothing.
    std::fs::remove_dir_all(&env.projects).expect("delete the tree");
    let out = env
        .cmd()
        .args(["restore", "--all", "--check", "--json"])
        .output()
        .expect("check");
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let checked: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(checked["damaged"], 3, "{checked}");
    assert!(!env.projects.exists(), "--check wrote files");

    // The restore writes everything else, names the damaged ones, exits 2.
    let out = env
        .cmd()
        .args(["restore", "--all", "--json"])
        .output()
        .expect("restore");
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(report["damaged"], 3, "{report}");
    let problems = report["problems"].as_array().expect("problems");
    for p in [&big_path, &other_path] {
        let named = problems
            .iter()
            .find(|x| x["path"].as_str() == Some(p.as_str()))
            .unwrap_or_else(|| panic!("{p} not named: {report}"));
        assert_eq!(named["outcome"], "damaged", "{named}");
        assert!(named["session_id"].is_string(), "{named}");
        assert!(
            named["detail"]
                .as_str()
                .is_some_and(|d| d.contains("bytes 0-")),
            "{named}"
        );
    }
    assert!(
        problems.iter().any(|x| x["path"]
            .as_str()
            .is_some_and(|p| p.ends_with(".meta.json"))),
        "{report}"
    );
    let after = tree(&env.projects);
    for (p, bytes) in &before {
        let s = p.to_string_lossy();
        let damaged = s == big_path.as_str()
            || s == other_path.as_str()
            || (s.ends_with(".meta.json") && problems.iter().any(|x| x["path"] == *s));
        if damaged {
            assert!(!after.contains_key(p), "{s} written although damaged");
        } else {
            assert!(
                after.get(p) == Some(bytes),
                "{s} not restored byte for byte"
            );
        }
    }
    // Without --json, the damaged file is named with its session on stderr.
    let out = env
        .cmd()
        .args(["restore", "--all"])
        .output()
        .expect("restore");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("damaged: session ") && err.contains(&big_path),
        "{err}"
    );
    store.close().await;
    env.cleanup().await;
}
both_backends!(one_damaged_chunk_stops_one_file, damaged_archive);

async fn pruned_sessions(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let dir = env.projects.join("p");
    std::fs::create_dir_all(&dir).expect("mkdir");
    // A session with a conversation and an empty sub-agent transcript.
    let sid = "9a000000-0000-4000-8000-000000000001";
    std::fs::write(
        dir.join(format!("{sid}.jsonl")),
        user_line(sid, "u1", "prune me later"),
    )
    .expect("write");
    let agents = dir.join(format!("{sid}/subagents"));
    std::fs::create_dir_all(&agents).expect("mkdir");
    let empty = agents.join("agent-a1.jsonl");
    std::fs::write(&empty, b"").expect("write empty");
    env.ingest_dir_env(
        &env.projects,
        &[("GLEANER_SESSIONS__IDLE_TIMEOUT_SECS", "1")],
    );
    let run = |args: &[&str]| env.cmd().args(args).output().expect("run");
    // Idle: the sessions finish at the next ingest.
    poll_until(
        std::time::Duration::from_secs(20),
        "the session to finish",
        || {
            env.ingest_dir_env(
                &env.projects,
                &[("GLEANER_SESSIONS__IDLE_TIMEOUT_SECS", "1")],
            );
            let v: serde_json::Value =
                serde_json::from_slice(&run(&["sessions", "--json"]).stdout).expect("JSON");
            v.as_array()
                .is_some_and(|a| a.iter().all(|s| s["status"] == "finished"))
        },
    );
    let out = run(&[
        "prune",
        "--before",
        "2100-01-01",
        "--keep-knowledge",
        "--yes",
    ]);
    assert_ok(&out);
    // The doors say the messages were pruned, and when.
    let out = run(&["text", sid]);
    assert_ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("pruned on"), "{err}");
    // A later prune that takes the knowledge says it takes what was kept on purpose.
    let out = run(&["prune", "--before", "2100-01-01"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("an earlier prune kept on purpose"), "{err}");
    // Nothing of a pruned session is restored, not even an empty file.
    std::fs::remove_dir_all(&env.projects).expect("delete the tree");
    let out = run(&["restore", "--all", "--json"]);
    assert_ok(&out);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report["written"], 0, "{report}");
    assert!(
        !empty.exists(),
        "an empty file of a pruned session written back"
    );
    env.cleanup().await;
}
both_backends!(pruned_sessions_are_named_and_not_restored, pruned_sessions);
