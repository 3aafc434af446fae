//! `kill -9` at random moments of packing (issue 48): however often `gleaner pack` is killed
//! while it writes project blocks, or `gleaner ingest` while it reads the corpus and archives
//! what it deferred, every transcript of the corpus comes back byte for byte.

use std::process::Stdio;
use std::time::Duration;

use gleaner::store::Store;

use crate::both_backends;
use crate::common::*;
use crate::crash::Rng;

/// The setting that frames an idle file's bytes as they are read instead of deferring them.
const NO_DEFER: &str = "GLEANER_ARCHIVE__DEFER_FINISHED";

/// Chunks packing has not taken yet (partial last lines aside).
async fn unpacked(store: &Store) -> i64 {
    let sql = "SELECT COUNT(*) FROM archive_chunks WHERE NOT packed AND NOT partial";
    match store {
        Store::Sqlite(p) => sqlx::query_scalar(sql).fetch_one(p).await,
        Store::Postgres(p) => sqlx::query_scalar(sql).fetch_one(p).await,
    }
    .expect("unpacked chunks")
}

/// Kills packing passes (at least 20) at random moments, then packs to the end and restores
/// everything to a new folder: each file equals the original.
async fn kill_packing(backend: Backend) {
    let env = TestEnv::new(backend).await;
    copy_tree(&corpus_dir(), &env.projects);
    let before = crate::archive::tree(&env.projects);
    // Framed as they are read, so that `pack` has them to take (deferred, ingest would archive
    // them itself: `ingest_kills` below).
    let summary = env.ingest_dir_env(&env.projects, &[(NO_DEFER, "false")]);
    assert_eq!(summary["errors"], 0, "{summary}");
    let store = env.store().await;
    let waiting = unpacked(&store).await;
    assert!(waiting > 200, "{waiting} chunks to pack");

    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(42);
    eprintln!("pack crash test seed {seed}");
    let mut rng = Rng(seed.rotate_left(29) | 1);
    let (mut kills, mut midway) = (0, 0);
    while kills < 20 {
        let mut pack = env
            .cmd()
            .arg("pack")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn pack");
        // One kill in four lands at random in the first 100 ms (start-up, the first block);
        // the others once a block has been stored, at random within the next ones.
        let seen = unpacked(&store).await;
        if rng.below(4) > 0 {
            let start = std::time::Instant::now();
            while pack.try_wait().expect("poll").is_none()
                && unpacked(&store).await == seen
                && start.elapsed() < Duration::from_secs(60)
            {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        std::thread::sleep(Duration::from_millis(rng.below(100)));
        let ended = pack.try_wait().expect("poll").is_some();
        pack.kill().expect("kill -9");
        pack.wait().expect("reap");
        kills += 1;
        let left = unpacked(&store).await;
        if !ended && left > 0 && left < waiting {
            midway += 1;
        }
    }
    eprintln!("{kills} kills, {midway} with blocks written and chunks still waiting");
    assert!(
        midway >= 3,
        "only {midway} kills landed mid-packing; seed {seed}"
    );

    let out = env.cmd().args(["pack", "--json"]).output().expect("pack");
    assert_ok(&out);
    let last: serde_json::Value = serde_json::from_slice(&out.stdout).expect("pack JSON");
    assert_eq!(last["skipped"], 0, "{last}");
    let out = env.cmd().args(["pack", "--json"]).output().expect("pack");
    let again: serde_json::Value = serde_json::from_slice(&out.stdout).expect("pack JSON");
    assert_eq!(again["blocks"], 0, "everything packed: {again}");
    restores_all(&env, &before, seed);
    store.close().await;
    env.cleanup().await;
}

both_backends!(kill_nine_while_packing_loses_nothing, kill_packing);

/// `restore --all` to a new folder writes every file of `before` (the tree as copied) byte for
/// byte, and nothing else.
fn restores_all(
    env: &TestEnv,
    before: &std::collections::BTreeMap<std::path::PathBuf, Vec<u8>>,
    seed: u64,
) {
    let to = env.dir.path().join("restored");
    let out = env
        .cmd()
        .args(["restore", "--all", "--to"])
        .arg(&to)
        .output()
        .expect("restore");
    assert_ok(&out);
    let after = crate::archive::tree(&to);
    assert_eq!(after.len(), before.len(), "files restored; seed {seed}");
    for (p, bytes) in before {
        let rel = p.strip_prefix(&env.projects).expect("below projects");
        assert!(
            after.get(&to.join(rel)) == Some(bytes),
            "{} differs after 20 kills; seed {seed}",
            rel.display()
        );
    }
}

/// Where an ingest stands: bytes committed, chunks deferred (read, not archived yet), blocks.
async fn progress(store: &Store) -> (i64, i64, i64) {
    let sql = "SELECT CAST(COALESCE((SELECT SUM(byte_offset) FROM files), 0) AS BIGINT), \
               (SELECT COUNT(*) FROM archive_chunks WHERE codec = 0), \
               (SELECT COUNT(*) FROM archive_blocks)";
    match store {
        Store::Sqlite(p) => sqlx::query_as(sql).fetch_one(p).await,
        Store::Postgres(p) => sqlx::query_as(sql).fetch_one(p).await,
    }
    .unwrap_or((0, 0, 0))
}

/// Kills `gleaner ingest` (at least 20 times) at random moments of reading the corpus (whose
/// files are old, so deferred) and of archiving what it deferred, then lets one run to its end
/// and restores everything to a new folder: each file equals the original.
async fn ingest_kills(backend: Backend) {
    let env = TestEnv::new(backend).await;
    copy_tree(&corpus_dir(), &env.projects);
    let before = crate::archive::tree(&env.projects);
    let store = env.store().await;
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(42);
    eprintln!("ingest crash test seed {seed}");
    let mut rng = Rng(seed.rotate_left(17) | 1);
    let mut kills = Vec::new();
    while kills.len() < 20 {
        let seen = progress(&store).await;
        let mut run = env
            .cmd()
            .args(["ingest", "--json"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn ingest");
        // The first eight kills while it reads: one in three at random in the first 300 ms,
        // the others once this run has committed, at random within the next 100 ms. The next
        // twelve while it archives what it deferred: once this run has written a block, at
        // random within the next 100 ms.
        let reading = kills.len() < 8;
        if reading && rng.below(3) == 0 {
            std::thread::sleep(Duration::from_millis(rng.below(300)));
        } else {
            let start = std::time::Instant::now();
            while run.try_wait().expect("poll").is_none()
                && start.elapsed() < Duration::from_secs(120)
            {
                let now = progress(&store).await;
                if (reading && now != seen) || now.2 != seen.2 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            std::thread::sleep(Duration::from_millis(rng.below(100)));
        }
        let at = progress(&store).await;
        let ended = run.try_wait().expect("poll").is_some();
        run.kill().expect("kill -9");
        run.wait().expect("reap");
        kills.push((at, ended));
    }
    let summary = env.ingest();
    assert_eq!(summary["errors"], 0, "{summary}");
    let (_, deferred, _) = progress(&store).await;
    assert_eq!(deferred, 0, "everything read is archived; seed {seed}");
    // Where the kills landed: before any block was written (reading), or while what was
    // deferred was being archived (blocks are written only once everything was read).
    let reading = kills
        .iter()
        .filter(|(at, ended)| !ended && at.2 == 0)
        .count();
    let archiving = kills
        .iter()
        .filter(|(at, ended)| !ended && at.2 > 0 && at.1 > 0)
        .count();
    eprintln!(
        "{} kills: {reading} while reading, {archiving} while archiving",
        kills.len()
    );
    assert!(
        reading >= 2 && archiving >= 5,
        "kills landed {reading} times while reading and {archiving} while archiving; seed {seed}"
    );
    restores_all(&env, &before, seed);
    store.close().await;
    env.cleanup().await;
}

both_backends!(kill_nine_while_ingest_archives_loses_nothing, ingest_kills);
