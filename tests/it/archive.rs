//! The archive (issue 29): every byte ingest read comes back from the database, byte for byte.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::both_backends;
use crate::common::*;

/// Every file below `root` (transcripts and sidecars), by path.
pub(crate) fn tree(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("read dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).expect("read"));
            }
        }
    }
    out
}

pub(crate) fn restore(env: &TestEnv, args: &[&str]) -> std::process::Output {
    env.cmd()
        .arg("restore")
        .args(args)
        .output()
        .expect("run restore")
}

/// The whole corpus: ingested, the tree deleted, `restore --all` writes every transcript and
/// every sub-agent `.meta.json` back byte for byte (files whose last line has no newline
/// included: they are idle), and a second restore finds them all present.
async fn corpus_round_trip(backend: Backend) {
    let env = TestEnv::new(backend).await;
    // `cp -a`: the corpus files keep their old modification times (idle sessions).
    copy_tree(&corpus_dir(), &env.projects);
    let before = tree(&env.projects);
    let transcripts = before
        .keys()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .count();
    let sidecars = before
        .keys()
        .filter(|p| p.to_string_lossy().ends_with(".meta.json"))
        .count();
    assert!(
        transcripts >= 250 && sidecars > 10,
        "{transcripts} / {sidecars}"
    );
    let unterminated = before
        .iter()
        .filter(|(p, b)| p.extension().is_some_and(|e| e == "jsonl") && !b.ends_with(b"\n"))
        .count();
    // Framed as they are read, then packed (`deferred.rs` has the other way, the default for
    // old files).
    let summary = env.ingest_dir_env(
        &env.projects,
        &[("GLEANER_ARCHIVE__DEFER_FINISHED", "false")],
    );
    assert_eq!(summary["errors"], 0, "{summary}");

    std::fs::remove_dir_all(&env.projects).expect("delete the tree");
    let out = restore(&env, &["--all", "--json"]);
    assert_ok(&out);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report["written"], transcripts as u64, "{report}");
    assert_eq!(report["incomplete"], 0, "{report}");
    assert_eq!(report["short"], 0, "{report}");
    let after = tree(&env.projects);
    let missing: Vec<_> = before.keys().filter(|p| !after.contains_key(*p)).collect();
    assert!(missing.is_empty(), "not restored: {missing:?}");
    for (p, bytes) in &before {
        assert!(after[p] == *bytes, "{} differs", p.display());
    }
    assert_eq!(after.len(), before.len(), "nothing else is written");
    eprintln!(
        "{transcripts} transcripts ({unterminated} without a final newline), {sidecars} sidecars"
    );

    // Again: everything is there already; a changed file is left alone, or written beside.
    let out = restore(&env, &["--all", "--json"]);
    assert_ok(&out);
    let again: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(again["written"], 0, "{again}");
    assert_eq!(again["present"], transcripts as u64, "{again}");
    let (victim, original) = before
        .iter()
        .find(|(p, b)| p.extension().is_some_and(|e| e == "jsonl") && b.len() > 1000)
        .expect("a transcript");
    std::fs::write(victim, b"{\"changed\":true}\n").expect("overwrite");
    let out = restore(&env, &["--all"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a file left alone shows in the exit code"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("not restored"));
    assert_eq!(
        std::fs::read(victim).expect("read"),
        b"{\"changed\":true}\n"
    );
    let out = restore(&env, &["--all", "--force-suffix"]);
    assert_ok(&out);
    let beside = PathBuf::from(format!("{}.restored", victim.display()));
    assert!(std::fs::read(&beside).expect("written beside") == *original);
    // Again: the copy beside is there already, no second one is written.
    let out = restore(&env, &["--all", "--force-suffix", "--json"]);
    assert_ok(&out);
    let again: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(again["written"], 0, "{again}");
    assert!(!PathBuf::from(format!("{}.restored.2", victim.display())).exists());

    // One session, elsewhere, in Claude Code's layout.
    let sid = victim
        .file_stem()
        .expect("stem")
        .to_string_lossy()
        .to_string();
    let elsewhere = env.dir.path().join("elsewhere");
    let out = restore(
        &env,
        &[&sid[..8], "--to", elsewhere.to_str().expect("utf-8")],
    );
    assert_ok(&out);
    // Its place below the projects folder (the corpus nests its projects folders).
    let there = elsewhere.join(victim.strip_prefix(&env.projects).expect("below projects"));
    assert!(std::fs::read(&there).expect("restored elsewhere") == *original);

    // Archive figures.
    let raw: u64 = before.values().map(|b| b.len() as u64).sum();
    let archive = doctor_check(&env, "archive")["figures"].clone();
    assert_eq!(
        archive["raw_bytes"].as_u64().map(|b| b <= raw),
        Some(true),
        "{archive}"
    );
    let stored = archive["stored_bytes"].as_u64().expect("stored bytes");
    assert!(stored > 0 && stored < raw / 3, "{stored} of {raw}");
    eprintln!(
        "archive: {stored} bytes for {raw} ({:.1}%)",
        100.0 * stored as f64 / raw as f64
    );

    // Packed: smaller, and every file still comes back byte for byte.
    let out = env.cmd().args(["pack", "--json"]).output().expect("pack");
    assert_ok(&out);
    let packed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("pack JSON");
    assert!(
        packed["files"].as_u64().is_some_and(|n| n > 200),
        "{packed}"
    );
    assert_eq!(packed["skipped"], 0, "{packed}");
    let out = env
        .cmd()
        .args(["pack", "--json"])
        .output()
        .expect("pack again");
    let again: serde_json::Value = serde_json::from_slice(&out.stdout).expect("pack JSON");
    assert_eq!(again["blocks"], 0, "nothing left: {again}");
    std::fs::remove_dir_all(&env.projects).expect("delete the tree again");
    let out = restore(&env, &["--all", "--json"]);
    assert_ok(&out);
    let after = tree(&env.projects);
    for (p, bytes) in &before {
        assert!(
            after.get(p) == Some(bytes),
            "{} differs after packing",
            p.display()
        );
    }
    let figures = doctor_check(&env, "archive")["figures"].clone();
    let packed_size = figures["stored_bytes"].as_u64().expect("stored bytes");
    assert!(
        packed_size < stored,
        "{packed_size} after packing, {stored} before"
    );
    eprintln!(
        "packed: {packed_size} bytes for {raw} ({:.1}%)",
        100.0 * packed_size as f64 / raw as f64
    );
    env.cleanup().await;
}

both_backends!(
    restore_writes_back_every_byte_of_the_corpus,
    corpus_round_trip
);

/// `[archive] enabled = false` keeps nothing, and restore says there is nothing to restore.
async fn archive_off(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let dst = copy_clockhelp(&env);
    env.ingest_dir_env(&env.projects, &[("GLEANER_ARCHIVE__ENABLED", "false")]);
    std::fs::remove_file(&dst).expect("delete");
    let out = restore(&env, &["--all"]);
    assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing archived"));
    assert!(!dst.exists());
    env.cleanup().await;
}

both_backends!(archive_off_keeps_nothing, archive_off);

/// `(unpacked, packed)` chunks (partial lines left out).
async fn chunk_counts(store: &gleaner::store::Store) -> (i64, i64) {
    let sql = "SELECT CAST(COALESCE(SUM(CASE WHEN packed THEN 0 ELSE 1 END), 0) AS BIGINT), \
               CAST(COALESCE(SUM(CASE WHEN packed THEN 1 ELSE 0 END), 0) AS BIGINT) \
               FROM archive_chunks WHERE NOT partial";
    match store {
        gleaner::store::Store::Sqlite(p) => sqlx::query_as(sql).fetch_one(p).await,
        gleaner::store::Store::Postgres(p) => sqlx::query_as(sql).fetch_one(p).await,
    }
    .expect("chunk counts")
}

/// A session the daemon follows as it is written: a chunk per append, packed in the background
/// once the session is finished, and restored byte for byte.
async fn daemon_packs(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let bytes = std::fs::read(corpus_dir().join(CLOCKHELP)).expect("read");
    let (end, _) = expected_checkpoint(&bytes);
    let whole = &bytes[..end as usize];
    let dst = env.path("-x-clock/3dae6bc4-bf52-4a30-a961-09999364d8c6.jsonl");
    std::fs::create_dir_all(dst.parent().expect("parent")).expect("mkdir");
    let mut daemon = env.spawn_daemon(&[
        ("GLEANER_ARCHIVE__PACK_INTERVAL_SECS", "1"),
        ("GLEANER_SESSIONS__IDLE_TIMEOUT_SECS", "2"),
    ]);
    let store = env.store().await;
    // Five appends at line ends, each committed before the next.
    let cuts: Vec<usize> = (1..5)
        .filter_map(|k| {
            let at = whole.len() * k / 5;
            whole[at..]
                .iter()
                .position(|&b| b == b'\n')
                .map(|i| at + i + 1)
        })
        .chain(std::iter::once(whole.len()))
        .collect();
    let mut from = 0;
    for to in cuts {
        if to <= from {
            continue;
        }
        append(&dst, &whole[from..to]);
        wait_offset(&store, &dst, to as u64).await;
        from = to;
    }
    let (unpacked, _) = chunk_counts(&store).await;
    assert!(unpacked >= 3, "{unpacked} chunks for the appends");
    wait_for(
        std::time::Duration::from_secs(60),
        "the daemon to pack the finished session",
        || async { chunk_counts(&store).await == (0, 1) },
    )
    .await;
    let (status, _) = terminate(&mut daemon);
    assert!(status.success(), "{status:?}");
    std::fs::remove_file(&dst).expect("delete");
    let out = restore(&env, &["--all"]);
    assert_ok(&out);
    assert!(std::fs::read(&dst).expect("restored") == whole);
    store.close().await;
    env.cleanup().await;
}

both_backends!(the_daemon_packs_a_finished_session, daemon_packs);

/// Rows of `table` (tests only: a name from this file).
async fn rows(store: &gleaner::store::Store, table: &str) -> i64 {
    let sql = format!("SELECT COUNT(*) FROM {table}");
    match store {
        gleaner::store::Store::Sqlite(p) => sqlx::query_scalar(&sql).fetch_one(p).await,
        gleaner::store::Store::Postgres(p) => sqlx::query_scalar(&sql).fetch_one(p).await,
    }
    .expect("count")
}

/// `prune`: refused without a terminal or --yes; with --keep-knowledge the archive and messages
/// go and the knowledge stays; then everything goes; the search index stays consistent, and the
/// files are not read again.
async fn prune_sessions(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let corpus = corpus_dir().join("4thehalibit__omarchy-backup/.claude/projects");
    copy_tree(&corpus, &env.projects);
    env.ingest();
    let store = env.store().await;
    let (messages, summaries, episodes) = (
        rows(&store, "messages").await,
        rows(&store, "summaries").await,
        rows(&store, "episodes").await,
    );
    assert!(messages > 100 && episodes > 0, "{messages} / {episodes}");
    let search = |q: &str| -> serde_json::Value {
        let out = env
            .cmd()
            .args(["search", q, "--json"])
            .output()
            .expect("search");
        assert_ok(&out);
        serde_json::from_slice(&out.stdout).expect("search JSON")
    };
    let hits = |v: &serde_json::Value| v["results"].as_array().map_or(0, Vec::len);
    assert!(hits(&search("file")) > 0);

    // Not from a terminal: refused, nothing removed.
    let out = env
        .cmd()
        .args(["prune", "--before", "2100-01-01", "--keep-knowledge"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("prune");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--yes"));
    assert_eq!(rows(&store, "messages").await, messages);
    // With --json a script reads what it would remove, still refused.
    let out = env
        .cmd()
        .args([
            "prune",
            "--before",
            "2100-01-01",
            "--keep-knowledge",
            "--json",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("prune");
    assert_eq!(out.status.code(), Some(2));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the plan as JSON");
    assert_eq!(plan["messages"], messages, "{plan}");
    assert_eq!(rows(&store, "messages").await, messages);

    let out = env
        .cmd()
        .args([
            "prune",
            "--before",
            "2100-01-01",
            "--keep-knowledge",
            "--yes",
            "--json",
        ])
        .output()
        .expect("prune");
    assert_ok(&out);
    let done: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(done["messages"], messages, "{done}");
    assert!(done["chunks"].as_i64().is_some_and(|n| n > 0), "{done}");
    assert_eq!(rows(&store, "messages").await, 0);
    assert_eq!(rows(&store, "archive_chunks").await, 0);
    assert_eq!(rows(&store, "summaries").await, summaries);
    assert_eq!(rows(&store, "episodes").await, episodes);
    // Messages are no longer found; the index holds nothing stale (SQLite checks it).
    let found = search("file");
    assert!(
        found["results"]
            .as_array()
            .is_some_and(|r| r.iter().all(|h| h["kind"] != "message")),
        "{found}"
    );
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
    // The session says its messages are gone, instead of answering nothing.
    let out = env.cmd().args(["text", "5fbb940a"]).output().expect("text");
    assert_ok(&out);
    assert!(out.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("messages were pruned"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown: serde_json::Value = serde_json::from_slice(
        &env.cmd()
            .args(["show", "5fbb940a", "--json"])
            .output()
            .expect("show")
            .stdout,
    )
    .expect("show JSON");
    assert_eq!(shown["session"]["messages"], 0, "{shown}");
    // The files are not read again.
    let again = env.ingest();
    assert_eq!(again["rows"], 0, "{again}");

    let out = env
        .cmd()
        .args(["prune", "--before", "2100-01-01", "--yes", "--json"])
        .output()
        .expect("prune all");
    assert_ok(&out);
    for table in [
        "sessions",
        "summaries",
        "episodes",
        "snippets",
        "feedback",
        "tool_uses",
    ] {
        assert_eq!(rows(&store, table).await, 0, "{table}");
    }
    assert_eq!(hits(&search("file")), 0);
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
    store.close().await;
    env.cleanup().await;
}

both_backends!(prune_removes_what_it_says, prune_sessions);

/// A live file whose last line has no newline, then goes idle: the daemon archives that line
/// when the session finishes, so the restored file is whole.
async fn idle_unfinished_line(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let sid = "7e570000-0000-4000-8000-00000000aa01";
    let dst = env.path(&format!("-x-tail/{sid}.jsonl"));
    std::fs::create_dir_all(dst.parent().expect("parent")).expect("mkdir");
    let mut daemon = env.spawn_daemon(&[("GLEANER_SESSIONS__IDLE_TIMEOUT_SECS", "1")]);
    let store = env.store().await;
    let first = user_line(sid, "u1", "a line with its newline");
    append(&dst, first.as_bytes());
    wait_offset(&store, &dst, first.len() as u64).await;
    let tail = b"{\"type\":\"user\",\"sessionId\":\"7e570000-0000-4000-8000-00000000aa01\",\"message\":{\"role\":\"user\",\"content\":\"cut";
    append(&dst, tail);
    let partial = || async { rows(&store, "archive_chunks WHERE partial").await == 1 };
    wait_for(
        std::time::Duration::from_secs(30),
        "the unfinished line archived once the session is idle",
        partial,
    )
    .await;
    let (status, _) = terminate(&mut daemon);
    assert!(status.success(), "{status:?}");
    let whole = std::fs::read(&dst).expect("read");
    std::fs::remove_file(&dst).expect("delete");
    let out = restore(&env, &["--all"]);
    assert_ok(&out);
    assert!(std::fs::read(&dst).expect("restored") == whole);
    store.close().await;
    env.cleanup().await;
}

both_backends!(
    the_unfinished_line_of_an_idle_file_is_archived,
    idle_unfinished_line
);

/// A file whose unfinished last line was never archived (it went away while still live) is
/// restored as far as the archive holds it, and the restore says it is short.
async fn short_of_an_unarchived_line(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let sid = "7e570000-0000-4000-8000-00000000aa02";
    let dst = env.path(&format!("-x-short/{sid}.jsonl"));
    std::fs::create_dir_all(dst.parent().expect("parent")).expect("mkdir");
    let first = user_line(sid, "u1", "a line with its newline");
    append(&dst, first.as_bytes());
    append(&dst, b"{\"type\":\"user\",\"message\":{\"content\":\"cut");
    // Fresh: not idle, so the unfinished line is not archived by this ingest.
    env.ingest();
    std::fs::remove_file(&dst).expect("delete");
    let out = restore(&env, &["--all", "--json"]);
    // Written short is never a success: the exit code says the archive lacked bytes.
    assert_eq!(out.status.code(), Some(2));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report["written"], 1, "{report}");
    assert_eq!(report["short"], 1, "{report}");
    assert_eq!(
        report["problems"][0]["outcome"], "written_short",
        "{report}"
    );
    assert!(std::fs::read(&dst).expect("restored") == first.as_bytes());
    // People are told too.
    std::fs::remove_file(&dst).expect("delete");
    let out = restore(&env, &["--all"]);
    assert_eq!(out.status.code(), Some(2));
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        all.contains("written short") && all.contains("never archived"),
        "{all}"
    );
    env.cleanup().await;
}

both_backends!(
    a_file_short_of_an_unarchived_line_is_reported,
    short_of_an_unarchived_line
);
