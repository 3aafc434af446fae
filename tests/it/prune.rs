//! `prune` removes what it says from every place it was kept: the packed blocks that held the
//! pruned sessions' bytes beside other sessions', and the files' episode states.

use crate::both_backends;
use crate::common::*;

/// Two of the five sessions of the fixture project last active before 2026-04-10: packing puts
/// them in a block with sessions that stay.
const PRUNED: [&str; 2] = [
    "44ef5cbf-9cc3-4f7b-ac40-337a4d39713b",
    "5fbb940a-c7f3-404d-bf66-a028fcc250ec",
];

async fn scalar(store: &gleaner::store::Store, sql: &str) -> i64 {
    match store {
        gleaner::store::Store::Sqlite(p) => sqlx::query_scalar(sql).fetch_one(p).await,
        gleaner::store::Store::Postgres(p) => sqlx::query_scalar(sql).fetch_one(p).await,
    }
    .expect(sql)
}

/// Every block's raw bytes.
async fn blocks(store: &gleaner::store::Store) -> Vec<Vec<u8>> {
    let sql = "SELECT data FROM archive_blocks ORDER BY id";
    let frames: Vec<Vec<u8>> = match store {
        gleaner::store::Store::Sqlite(p) => sqlx::query_scalar(sql).fetch_all(p).await,
        gleaner::store::Store::Postgres(p) => sqlx::query_scalar(sql).fetch_all(p).await,
    }
    .expect("blocks");
    frames
        .iter()
        .map(|f| zstd::decode_all(&f[..]).expect("a block decodes"))
        .collect()
}

/// Whether `raw` holds a line of session `sid` (its id as the lines' own field: other sessions
/// of the fixture quote the ids in their tool output, escaped).
fn holds(raw: &[u8], sid: &str) -> bool {
    let field = format!("\"sessionId\":\"{sid}\"");
    raw.windows(field.len()).any(|w| w == field.as_bytes())
}

fn run(env: &TestEnv, args: &[&str]) -> serde_json::Value {
    let out = env.cmd().args(args).output().expect("run");
    assert_ok(&out);
    serde_json::from_slice(&out.stdout).expect("JSON")
}

async fn prune_everywhere(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let corpus = corpus_dir().join("4thehalibit__omarchy-backup/.claude/projects");
    copy_tree(&corpus, &env.projects);
    env.ingest();
    run(&env, &["pack", "--json"]);
    let store = env.store().await;
    let before = blocks(&store).await;
    let shared = before
        .iter()
        .filter(|b| PRUNED.iter().any(|s| holds(b, s)))
        .count();
    assert!(shared > 0, "a block holds a session to prune");
    let loose = "SELECT COUNT(*) FROM archive_chunks WHERE NOT packed AND NOT partial";
    let loose_before = scalar(&store, loose).await;

    let done = run(
        &env,
        &["prune", "--before", "2026-04-10", "--yes", "--json"],
    );
    assert_eq!(done["sessions"], 5, "{done}");
    assert_eq!(done["blocks_retired"], shared, "{done}");
    assert!(
        scalar(&store, loose).await > loose_before,
        "the sessions that stay, taken out of those blocks, have frames of their own"
    );
    for b in blocks(&store).await {
        for s in PRUNED {
            assert!(!holds(&b, s), "a block still holds pruned session {s}");
        }
    }
    assert_eq!(
        scalar(
            &store,
            "SELECT COUNT(*) FROM files WHERE episode_state IS NOT NULL AND session_id IN \
             ('44ef5cbf-9cc3-4f7b-ac40-337a4d39713b', '5fbb940a-c7f3-404d-bf66-a028fcc250ec')"
        )
        .await,
        0,
        "the pruned files' episode states are gone"
    );

    // Packing again takes what is left into new blocks.
    let packed = run(&env, &["pack", "--json"]);
    assert!(packed["blocks"].as_u64().is_some_and(|n| n > 0), "{packed}");
    for b in blocks(&store).await {
        for s in PRUNED {
            assert!(!holds(&b, s), "a block still holds pruned session {s}");
        }
    }

    // Every session left comes back byte for byte from the new blocks.
    let out_dir = env.dir.path().join("restored");
    let out = env
        .cmd()
        .args(["restore", "--all", "--to"])
        .arg(&out_dir)
        .output()
        .expect("restore");
    assert_ok(&out);
    let mut compared = 0;
    for (f, restored) in crate::archive::tree(&out_dir) {
        let rel = f.strip_prefix(&out_dir).expect("under --to");
        let original = std::fs::read(env.projects.join(rel)).expect("original");
        assert!(restored == original, "{rel:?}");
        assert!(PRUNED.iter().all(|s| !rel.to_string_lossy().contains(s)));
        compared += 1;
    }
    assert!(compared >= 10, "{compared} files restored");

    // A line appended to a pruned transcript starts afresh: the pruned episode stays gone.
    let main = env
        .projects
        .join(format!("-home-vwestberg-Claude/{}.jsonl", PRUNED[1]));
    let lines = std::fs::read_to_string(&main)
        .expect("read")
        .lines()
        .count() as i64;
    append(
        &main,
        user_line(
            PRUNED[1],
            "9d3c1a52-0000-4000-8000-000000000001",
            "one more thing",
        )
        .as_bytes(),
    );
    env.ingest();
    let first = scalar(
        &store,
        "SELECT COALESCE(MIN(start_line), 0) FROM episodes \
         WHERE session_id = '5fbb940a-c7f3-404d-bf66-a028fcc250ec'",
    )
    .await;
    assert!(
        first == 0 || first > lines,
        "episode from line {first} of {lines}"
    );

    // A packer that read frames before the prune took them cannot store a block of them.
    let (file_id, generation, start) = match &store {
        gleaner::store::Store::Sqlite(p) => {
            sqlx::query_as::<_, (i64, i64, i64)>(UNPACKED)
                .fetch_one(p)
                .await
        }
        gleaner::store::Store::Postgres(p) => {
            sqlx::query_as::<_, (i64, i64, i64)>(UNPACKED)
                .fetch_one(p)
                .await
        }
    }
    .expect("an unpacked chunk");
    let count = "SELECT COUNT(*) FROM archive_blocks";
    let stored = scalar(&store, count).await;
    let gone = gleaner::store::NewMember {
        file_id,
        generation,
        start,
        end: start + 2,
        block_off: 0,
        replaces: vec![start, start + 1],
    };
    let added = store
        .add_block("-home-vwestberg-Claude", 2, &[0, 0], &[gone])
        .await
        .expect("add a block");
    assert!(!added, "a block whose frames are gone is refused");
    assert_eq!(
        scalar(&store, count).await,
        stored,
        "and nothing is written"
    );
    store.close().await;
    env.cleanup().await;
}

/// One chunk packing has not taken: `(file_id, generation, start_off)`.
const UNPACKED: &str = "SELECT file_id, generation, start_off FROM archive_chunks \
                        WHERE NOT packed AND NOT partial ORDER BY file_id, start_off LIMIT 1";

both_backends!(prune_leaves_nothing_of_a_session_behind, prune_everywhere);
