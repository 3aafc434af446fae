//! Old transcripts archived once (issue 48): bytes of a file idle when it is read are left in it,
//! a digest kept, and packing reads them again straight into project blocks; until then they
//! are read from the file, and bytes the file lost first are reported missing, never wrong.

use crate::archive::{restore, tree};
use crate::both_backends;
use crate::common::*;

/// A backfill of the corpus (old files): `gleaner ingest` archives what it deferred before it
/// returns, so nothing is left for `pack`, and every file comes back byte for byte.
async fn backfill_round_trip(backend: Backend) {
    let env = TestEnv::new(backend).await;
    copy_tree(&corpus_dir(), &env.projects);
    let before = tree(&env.projects);
    let raw: u64 = before.values().map(|b| b.len() as u64).sum();
    let summary = env.ingest();
    assert_eq!(summary["errors"], 0, "{summary}");
    let archived = summary["archived_bytes"].as_u64().expect("archived bytes");
    assert!(
        archived > raw / 2,
        "{archived} of {raw} bytes deferred and archived"
    );
    let figures = doctor_check(&env, "archive")["figures"].clone();
    assert_eq!(figures["unarchived_bytes"], 0, "{figures}");
    let stored = figures["stored_bytes"].as_u64().expect("stored bytes");
    assert!(stored < raw / 5, "{stored} of {raw}");
    eprintln!(
        "deferred: {archived} bytes archived at the end; {stored} stored for {raw} ({:.1}%)",
        100.0 * stored as f64 / raw as f64
    );
    if backend == Backend::Sqlite {
        // Issue 48's promise: the whole store is at most 35 % of the transcripts' bytes at any
        // moment (35.0 % before message texts were compressed: docs/benchmarks.md).
        let db = env.dir.path().join("data/test.db");
        let size = |p: &std::path::Path| std::fs::metadata(p).map_or(0, |m| m.len());
        let total = size(&db) + size(&db.with_extension("db-wal"));
        eprintln!(
            "database {total} bytes ({:.1}%)",
            100.0 * total as f64 / raw as f64
        );
        assert!(
            total * 100 <= raw * 35,
            "the database holds {total} bytes for {raw} of transcripts ({:.1}%)",
            100.0 * total as f64 / raw as f64
        );
        let store = env.store().await;
        let (packed, plain): (i64, i64) = match &store {
            gleaner::store::Store::Sqlite(p) => sqlx::query_as(
                "SELECT COUNT(*) FILTER (WHERE typeof(text) = 'blob'), \
                 COUNT(*) FILTER (WHERE typeof(text) = 'text') FROM messages",
            )
            .fetch_one(p)
            .await
            .expect("count texts"),
            gleaner::store::Store::Postgres(_) => unreachable!("SQLite"),
        };
        assert!(
            packed > 1_000 && plain > 1_000,
            "{packed} packed, {plain} plain"
        );
    }
    let out = env.cmd().args(["pack", "--json"]).output().expect("pack");
    assert_ok(&out);
    let packed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("pack JSON");
    assert_eq!(
        packed["archived_bytes"], 0,
        "nothing left deferred: {packed}"
    );
    std::fs::remove_dir_all(&env.projects).expect("delete the tree");
    let out = restore(&env, &["--all", "--json"]);
    assert_ok(&out);
    let after = tree(&env.projects);
    assert_eq!(after.len(), before.len(), "every file restored");
    for (p, bytes) in &before {
        assert!(after.get(p) == Some(bytes), "{} differs", p.display());
    }
    env.cleanup().await;
}

both_backends!(
    a_backfill_is_archived_once_before_ingest_returns,
    backfill_round_trip
);

/// Deferred bytes not yet archived (the daemon killed before its packer ran): status and doctor
/// show them, restore reads them from the file; once the file is gone they are missing (never
/// wrong bytes), and `pack` archives what is still there and counts what was lost.
async fn until_archived(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let kept = copy_clockhelp(&env);
    age_a_day(&kept);
    let sid = "7e570000-0000-4000-8000-00000000de01";
    let gone = env.path(&format!("-x-gone/{sid}.jsonl"));
    std::fs::create_dir_all(gone.parent().expect("parent")).expect("mkdir");
    let lines = [
        user_line(sid, "u1", "a first line"),
        user_line(sid, "u2", "a second line"),
    ]
    .concat();
    std::fs::write(&gone, &lines).expect("write");
    age_a_day(&gone);
    let originals = tree(&env.projects);
    // The packer's first pass comes an interval after start: killed before it, the bytes stay
    // deferred.
    let mut daemon = env.spawn_daemon(&[("GLEANER_ARCHIVE__PACK_INTERVAL_SECS", "3600")]);
    let store = env.store().await;
    wait_offset(&store, &kept, originals[&kept].len() as u64).await;
    wait_offset(&store, &gone, lines.len() as u64).await;
    let out = env.cmd().arg("status").output().expect("status");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("read but not archived yet"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    daemon.kill().expect("kill -9");
    daemon.wait().expect("reap");
    let figures = doctor_check(&env, "archive")["figures"].clone();
    let total = (originals[&kept].len() + lines.len()) as u64;
    assert_eq!(
        figures["unarchived_bytes"].as_u64(),
        Some(total),
        "{figures}"
    );
    // Read from the files while they hold the bytes.
    let out = restore(&env, &["--all", "--check", "--json"]);
    assert_ok(&out);
    let check: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(check["present"], 2, "{check}");

    std::fs::remove_file(&gone).expect("delete");
    let out = restore(&env, &["--all", "--check", "--json"]);
    let check: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(check["incomplete"], 1, "{check}");
    assert!(
        check.to_string().contains("not archived yet"),
        "the reason is given: {check}"
    );
    let out = env.cmd().args(["pack", "--json"]).output().expect("pack");
    assert_ok(&out);
    let packed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("pack JSON");
    assert_eq!(
        packed["archived_bytes"].as_u64(),
        Some(originals[&kept].len() as u64),
        "{packed}"
    );
    assert_eq!(
        packed["lost_bytes"].as_u64(),
        Some(lines.len() as u64),
        "{packed}"
    );
    let figures = doctor_check(&env, "archive")["figures"].clone();
    assert_eq!(figures["unarchived_bytes"], 0, "{figures}");

    // The kept file now comes from its block, once the transcript is gone too.
    std::fs::remove_file(&kept).expect("delete");
    let out = restore(&env, &["--all", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report["written"], 1, "{report}");
    assert_eq!(report["incomplete"], 1, "{report}");
    assert!(std::fs::read(&kept).expect("restored") == originals[&kept]);
    assert!(!gone.exists(), "nothing is made up for the lost file");
    store.close().await;
    env.cleanup().await;
}

both_backends!(
    deferred_bytes_are_read_from_the_file_until_archived,
    until_archived
);
