//! `gleaner reextract` (issue 29): derived rows made again from the archive, with the rules and
//! configuration of now; nothing else changes.

use crate::both_backends;
use crate::common::*;

/// `SELECT` of one column set, as sorted strings (tests only: queries from this file).
async fn rows(store: &gleaner::store::Store, sql: &str) -> Vec<String> {
    let mut out: Vec<String> = match store {
        // SQLite may keep a message's text as a frame (`gleaner_text` reads it).
        gleaner::store::Store::Sqlite(p) => {
            let sql = sql.replace("COALESCE(text, '')", "COALESCE(gleaner_text(text), '')");
            sqlx::query_scalar(&sql).fetch_all(p).await
        }
        gleaner::store::Store::Postgres(p) => sqlx::query_scalar(sql).fetch_all(p).await,
    }
    .expect(sql);
    out.sort();
    out
}

/// What must not change, and what re-extraction makes again.
async fn snapshot(store: &gleaner::store::Store) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    let kept = vec![
        rows(
            store,
            "SELECT CAST(file_id AS TEXT) || ':' || CAST(line_no AS TEXT) || ':' || \
                     CAST(seq AS TEXT) || ':' || COALESCE(text, '') FROM messages",
        )
        .await,
        rows(
            store,
            "SELECT CAST(id AS TEXT) || ':' || CAST(generation AS TEXT) || ':' || \
                     CAST(byte_offset AS TEXT) || ':' || CAST(lines AS TEXT) FROM files",
        )
        .await,
        rows(
            store,
            "SELECT CAST(file_id AS TEXT) || ':' || CAST(start_off AS TEXT) || ':' || \
                     CAST(end_off AS TEXT) FROM archive_chunks",
        )
        .await,
        rows(
            store,
            "SELECT session_id || ':' || status || ':' || \
                     CAST(message_count AS TEXT) FROM sessions",
        )
        .await,
        rows(store, "SELECT title FROM snippets WHERE origin = 'manual'").await,
    ];
    let derived = vec![
        rows(
            store,
            "SELECT session_id || ':' || CAST(start_line AS TEXT) || ':' || \
                     CAST(end_line AS TEXT) || ':' || triage || ':' || status FROM episodes",
        )
        .await,
        rows(
            store,
            "SELECT session_id || ':' || kind || ':' || COALESCE(text, '') \
                     FROM summaries",
        )
        .await,
        rows(
            store,
            "SELECT session_id || ':' || feedback_type || ':' || content FROM feedback",
        )
        .await,
        rows(
            store,
            "SELECT session_id || ':' || title FROM snippets WHERE origin = 'auto'",
        )
        .await,
    ];
    (kept, derived)
}

fn reextract(env: &TestEnv, args: &[&str], envs: &[(&str, &str)]) -> serde_json::Value {
    let mut c = env.cmd();
    for (k, v) in envs {
        c.env(k, v);
    }
    let out = c
        .arg("reextract")
        .args(args)
        .arg("--json")
        .output()
        .expect("reextract");
    assert_ok(&out);
    serde_json::from_slice(&out.stdout).expect("reextract JSON")
}

async fn derive_again(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let corpus = corpus_dir().join("4thehalibit__omarchy-backup/.claude/projects");
    copy_tree(&corpus, &env.projects);
    env.ingest();
    let store = env.store().await;
    // A hand-made snippet, which re-extraction keeps.
    let sid = rows(&store, "SELECT session_id FROM sessions").await[0].clone();
    let note = env.dir.path().join("note.md");
    std::fs::write(
        &note,
        "The deploy script must run from the repository root: it reads ./config relative to \
         the working directory and fails with a missing-file error elsewhere.",
    )
    .expect("note");
    let out = env
        .cmd()
        .args([
            "snippet",
            "add",
            "--session",
            &sid,
            "--type",
            "learning_pattern",
        ])
        .args([
            "--title",
            "Run the deploy script from the root",
            "--content-file",
        ])
        .arg(&note)
        .output()
        .expect("snippet add");
    assert_ok(&out);
    let (kept, derived) = snapshot(&store).await;
    assert!(!derived[0].is_empty(), "the corpus has episodes");
    // An automatic snippet keeps its id while its source is the same (ids are handed to
    // agents, links and notes).
    let ids = "SELECT CAST(id AS TEXT) || ':' || session_id || ':' || source_file || ':' || \
               CAST(line_start AS TEXT) || ':' || snippet_type FROM snippets WHERE origin = 'auto'";
    let snippet_ids = rows(&store, ids).await;
    assert!(!snippet_ids.is_empty(), "the corpus has automatic snippets");

    // Same rules, same configuration: the same rows.
    let r = reextract(&env, &["--all"], &[]);
    let sessions = rows(&store, "SELECT session_id FROM sessions").await.len() as u64;
    assert_eq!(r["sessions"], sessions, "{r}");
    assert_eq!(r["skipped"].as_array().map(Vec::len), Some(0), "{r}");
    let (kept2, derived2) = snapshot(&store).await;
    assert_eq!(kept2, kept);
    assert_eq!(derived2, derived);
    assert_eq!(rows(&store, ids).await, snippet_ids, "snippet ids changed");

    // Another configuration (no episodes): the derived rows change, nothing else does.
    reextract(&env, &["--all"], &[("GLEANER_EPISODES__ENABLED", "false")]);
    let (kept3, derived3) = snapshot(&store).await;
    assert_eq!(kept3, kept);
    assert!(
        derived3[0].is_empty() && derived3[3].is_empty(),
        "{:?}",
        derived3[0]
    );
    assert_eq!(derived3[1..3], derived[1..3]);
    // And back.
    reextract(&env, &["--all"], &[]);
    assert_eq!(snapshot(&store).await, (kept.clone(), derived.clone()));
    if let gleaner::store::Store::Sqlite(p) = &store {
        sqlx::query("INSERT INTO search_fts (search_fts) VALUES ('integrity-check')")
            .execute(p)
            .await
            .expect("the full-text index is consistent");
        sqlx::query("INSERT INTO tool_fts (tool_fts) VALUES ('integrity-check')")
            .execute(p)
            .await
            .expect("the tool index is consistent");
    }

    // Sessions read by older rules: doctor says so, --older-than-rules takes exactly those.
    let doctor = || doctor_check(&env, "rules");
    assert_eq!(doctor()["verdict"], "ok");
    let r = reextract(&env, &["--older-than-rules"], &[]);
    assert_eq!(r["sessions"], 0, "{r}");
    execute(
        &store,
        &format!("UPDATE session_rules SET rules_version = 0 WHERE session_id = '{sid}'"),
    )
    .await
    .expect("older rules");
    let d = doctor();
    assert_eq!(
        (d["verdict"].as_str(), d["figures"]["older"].as_i64()),
        (Some("warn"), Some(1)),
        "{d}"
    );
    let r = reextract(&env, &["--older-than-rules"], &[]);
    assert_eq!(r["sessions"], 1, "{r}");
    assert_eq!(doctor()["verdict"], "ok");
    assert_eq!(snapshot(&store).await, (kept, derived));
    store.close().await;
    env.cleanup().await;
}

both_backends!(
    reextract_changes_the_derived_rows_and_nothing_else,
    derive_again
);

/// The daemon derives finished sessions on older rules again by itself.
async fn daemon_derives_again(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let dst = copy_clockhelp(&env);
    // A day old: the session is finished by the ingest.
    age_a_day(&dst);
    env.ingest();
    let store = env.store().await;
    let (kept, derived) = snapshot(&store).await;
    execute(&store, "UPDATE session_rules SET rules_version = 0")
        .await
        .expect("older rules");
    assert_eq!(doctor_check(&env, "rules")["verdict"], "warn");
    let mut daemon = env.spawn_daemon(&[("GLEANER_ARCHIVE__PACK_INTERVAL_SECS", "1")]);
    wait_for(
        std::time::Duration::from_secs(60),
        "the daemon to derive the session again",
        || async { doctor_check(&env, "rules")["verdict"] == "ok" },
    )
    .await;
    let (status, _) = terminate(&mut daemon);
    assert!(status.success(), "{status:?}");
    assert_eq!(snapshot(&store).await, (kept, derived));
    store.close().await;
    env.cleanup().await;
}

both_backends!(
    the_daemon_derives_sessions_on_older_rules_again,
    daemon_derives_again
);

/// `gleaner reextract` while the daemon runs: the daemon does it (one writer per machine) and
/// the command prints what was done; an unknown prefix is the usual one-line answer.
async fn beside_the_daemon(backend: Backend) {
    let env = TestEnv::new(backend).await;
    copy_tree(
        &corpus_dir().join("4thehalibit__omarchy-backup/.claude/projects"),
        &env.projects,
    );
    env.ingest();
    let store = env.store().await;
    let (kept, derived) = snapshot(&store).await;
    let mut daemon = env.spawn_daemon(&[]);
    let r = reextract(&env, &["512f6c74"], &[]);
    assert_eq!(r["sessions"], 1, "{r}");
    let r = reextract(&env, &["--all"], &[]);
    assert!(r["sessions"].as_u64() > Some(3), "{r}");
    let out = env.cmd().args(["reextract", "zzzz"]).output().expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("No session found"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (status, _) = terminate(&mut daemon);
    assert!(status.success(), "{status:?}");
    assert_eq!(snapshot(&store).await, (kept, derived));
    store.close().await;
    env.cleanup().await;
}

both_backends!(reextract_runs_beside_the_daemon, beside_the_daemon);
