//! `kill -9` at random moments while lines are appended: the end state equals a clean run.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gleaner::store::Store;

use crate::both_backends;
use crate::common::*;

/// xorshift64*: reproducible randomness without a dependency; the seed is printed.
pub(crate) struct Rng(pub(crate) u64);
impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

type Key = (String, i64, i64, i64, Option<Vec<u8>>, String);

/// Every message row as (path, generation, line, seq, uuid, kind), sorted.
pub(crate) async fn message_keys(store: &Store) -> Vec<Key> {
    let sql = "SELECT f.path, m.generation, m.line_no, m.seq, m.uuid, m.kind \
               FROM messages m JOIN files f ON f.id = m.file_id \
               ORDER BY f.path, m.generation, m.line_no, m.seq";
    match store {
        Store::Sqlite(p) => sqlx::query_as::<_, Key>(sql).fetch_all(p).await,
        Store::Postgres(p) => sqlx::query_as::<_, Key>(sql).fetch_all(p).await,
    }
    .expect("message keys")
}

type EpisodeKey = (String, i64, i64, i64, i64, String, String, String);

/// Every episode as (path, generation, start, end, turns, status, triage, evidence), sorted,
/// and every snippet's (path, content hash).
pub(crate) async fn episode_keys(store: &Store) -> (Vec<EpisodeKey>, Vec<(String, String)>) {
    let sql = "SELECT f.path, e.generation, e.start_line, e.end_line, e.turns, e.status, \
               e.triage, e.evidence FROM episodes e JOIN files f ON f.id = e.file_id \
               ORDER BY f.path, e.generation, e.start_line";
    let snip = "SELECT source_file, content_hash FROM snippets ORDER BY source_file, content_hash";
    let (episodes, snippets) = match store {
        Store::Sqlite(p) => (
            sqlx::query_as(sql).fetch_all(p).await,
            sqlx::query_as(snip).fetch_all(p).await,
        ),
        Store::Postgres(p) => (
            sqlx::query_as(sql).fetch_all(p).await,
            sqlx::query_as(snip).fetch_all(p).await,
        ),
    };
    (
        episodes.expect("episode keys"),
        snippets.expect("snippet keys"),
    )
}

/// Real transcript lines to replay (several corpus files, complete lines only).
fn source_lines() -> Vec<Vec<u8>> {
    let corpus = corpus_dir();
    let mut files = gleaner::tail::discovery::scan(&corpus);
    files.retain(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0) > 100_000);
    files.truncate(3);
    let mut out = Vec::new();
    for p in files {
        let bytes = std::fs::read(&p).expect("read");
        let (end, _) = expected_checkpoint(&bytes);
        for l in bytes[..end as usize].split_inclusive(|&b| b == b'\n') {
            if l.len() < 200_000 {
                out.push(l.to_vec());
            }
        }
    }
    out
}

fn writer(paths: Vec<PathBuf>, lines: Vec<Vec<u8>>, seed: u64, done: Arc<AtomicBool>) {
    let mut rng = Rng(seed | 1);
    let mut handles: Vec<std::fs::File> = paths
        .iter()
        .map(|p| {
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .expect("open")
        })
        .collect();
    for line in &lines {
        let f = &mut handles[rng.below(paths.len() as u64) as usize];
        // Split each line into up to three writes so the daemon sees partial lines.
        let mut rest: &[u8] = line;
        while !rest.is_empty() {
            let n = if rng.below(3) == 0 {
                rest.len()
            } else {
                (1 + rng.below(rest.len() as u64)) as usize
            };
            let (a, b) = rest.split_at(n);
            f.write_all(a).expect("write");
            rest = b;
            if rng.below(4) == 0 {
                std::thread::sleep(Duration::from_micros(rng.below(3000)));
            }
        }
    }
    done.store(true, Ordering::SeqCst);
}

async fn kill_nine(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(42);
    eprintln!("crash test seed {seed}");
    let paths: Vec<PathBuf> = (0..3)
        .map(|i| env.path(&format!("-p/cccccccc-0000-4000-8000-00000000000{i}.jsonl")))
        .collect();
    let lines = source_lines();
    assert!(
        lines.len() > 500,
        "need a real workload, got {} lines",
        lines.len()
    );

    let done = Arc::new(AtomicBool::new(false));
    let w = {
        let (paths, done) = (paths.clone(), done.clone());
        std::thread::spawn(move || writer(paths, lines, seed, done))
    };
    let mut rng = Rng(seed.rotate_left(17) | 1);
    let mut kills = 0;
    let start = Instant::now();
    while !done.load(Ordering::SeqCst) || kills < 5 {
        // Not waiting for readiness: a kill may land during startup too.
        let mut d = env.spawn_daemon_unready(&[("GLEANER_BATCH__MAX_LINES", "50")]);
        std::thread::sleep(Duration::from_millis(40 + rng.below(400)));
        d.kill().expect("kill -9");
        d.wait().expect("reap");
        kills += 1;
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "writer too slow"
        );
    }
    w.join().expect("writer thread");

    // Restart once more and let it catch up.
    let mut d = env.spawn_daemon(&[]);
    let store = env.store().await;
    for p in &paths {
        let (end, _) = expected_checkpoint(&std::fs::read(p).expect("read"));
        wait_offset(&store, p, end).await;
    }
    let (status, _) = terminate(&mut d);
    let mut err = String::new();
    if let Some(mut e) = d.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    assert!(status.success(), "daemon exit {status:?}: {err}");
    let crashed = message_keys(&store).await;
    let crashed_episodes = episode_keys(&store).await;
    let crashed_counts = counts(&store).await;
    store.close().await;

    // The archive written across the kills restores every file byte for byte.
    let written: Vec<Vec<u8>> = paths
        .iter()
        .map(|p| std::fs::read(p).expect("read"))
        .collect();
    std::fs::remove_dir_all(env.path("-p")).expect("delete the files");
    let out = env
        .cmd()
        .args(["restore", "--all", "--json"])
        .output()
        .expect("restore");
    assert_ok(&out);
    for (p, bytes) in paths.iter().zip(&written) {
        let back = std::fs::read(p).expect("restored");
        assert!(
            back == *bytes,
            "{} restored with {} of {} bytes differing in length or content; seed {seed}",
            p.display(),
            back.len(),
            bytes.len()
        );
    }

    // A clean run over the same final files.
    let clean_env = TestEnv::new(backend).await;
    let clean_projects: &Path = &env.projects;
    clean_env.ingest_dir(clean_projects);
    let clean_store = clean_env.store().await;
    let clean = message_keys(&clean_store).await;
    assert_eq!(crashed.len(), clean.len(), "{kills} kills; seed {seed}");
    assert!(
        crashed == clean,
        "rows differ after {kills} kills; seed {seed}"
    );
    assert_eq!(crashed_counts.messages, counts(&clean_store).await.messages);
    let clean_episodes = episode_keys(&clean_store).await;
    assert!(!clean_episodes.0.is_empty(), "the workload has prompts");
    assert_eq!(
        crashed_episodes, clean_episodes,
        "episodes differ after {kills} kills; seed {seed}"
    );
    for p in &paths {
        let a = file(&clean_store, p).await.expect("clean row");
        assert_eq!(a.generation, 1);
    }
    clean_store.close().await;
    clean_env.cleanup().await;
    env.cleanup().await;
}

both_backends!(
    kill_nine_while_appending_loses_and_duplicates_nothing,
    kill_nine
);
