//! A store packed before issue 48 (each file compressed against a dictionary of its project's
//! first bytes) upgrades: its chunks read as before, and packing gives them frames of their
//! own, takes them into a block and empties the dictionary.

use gleaner::store::Store;

use crate::both_backends;
use crate::common::*;

type Chunk = (i64, i64, Vec<u8>);

async fn chunks(store: &Store) -> Vec<Chunk> {
    let sql = "SELECT file_id, start_off, data FROM archive_chunks WHERE NOT partial \
               ORDER BY file_id, start_off";
    match store {
        Store::Sqlite(p) => sqlx::query_as(sql).fetch_all(p).await,
        Store::Postgres(p) => sqlx::query_as(sql).fetch_all(p).await,
    }
    .expect("chunks")
}

async fn scalar(store: &Store, sql: &str) -> i64 {
    match store {
        Store::Sqlite(p) => sqlx::query_scalar(sql).fetch_one(p).await,
        Store::Postgres(p) => sqlx::query_scalar(sql).fetch_one(p).await,
    }
    .expect(sql)
}

/// The former packing's state, made by hand: a dictionary of the transcript's first 64 KiB,
/// every chunk compressed against it at level 16 and marked packed, the dictionary retired (as
/// migration 0031 retires every one).
async fn pack_the_old_way(store: &Store, project: &str, original: &[u8]) -> i64 {
    let dict = &original[..original.len().min(64 << 10)];
    let frame = zstd::encode_all(dict, 3).expect("dictionary frame");
    let insert = "INSERT INTO archive_dicts (project, raw_len, data, created_at) \
                  VALUES ($1, $2, $3, '2026-01-01T00:00:00.000Z') RETURNING id";
    let id: i64 = match store {
        Store::Sqlite(p) => {
            sqlx::query_scalar(insert)
                .bind(project)
                .bind(dict.len() as i64)
                .bind(&frame)
                .fetch_one(p)
                .await
        }
        Store::Postgres(p) => {
            sqlx::query_scalar(insert)
                .bind(project)
                .bind(dict.len() as i64)
                .bind(&frame)
                .fetch_one(p)
                .await
        }
    }
    .expect("a dictionary");
    let update = "UPDATE archive_chunks SET data = $1, dict_id = $2, packed = TRUE \
                  WHERE file_id = $3 AND start_off = $4";
    for (file_id, start, data) in chunks(store).await {
        let raw = zstd::decode_all(&data[..]).expect("a level-1 frame");
        let mut c = zstd::bulk::Compressor::with_dictionary(16, dict).expect("compressor");
        c.include_checksum(true).expect("checksum");
        let bound = c.compress(&raw).expect("compress");
        match store {
            Store::Sqlite(p) => sqlx::query(update)
                .bind(&bound)
                .bind(id)
                .bind(file_id)
                .bind(start)
                .execute(p)
                .await
                .map(drop),
            Store::Postgres(p) => sqlx::query(update)
                .bind(&bound)
                .bind(id)
                .bind(file_id)
                .bind(start)
                .execute(p)
                .await
                .map(drop),
        }
        .expect("bind a chunk to the dictionary");
    }
    let retire = format!("INSERT INTO archive_dicts_retired (dict_id) VALUES ({id})");
    match store {
        Store::Sqlite(p) => sqlx::query(&retire).execute(p).await.map(drop),
        Store::Postgres(p) => sqlx::query(&retire).execute(p).await.map(drop),
    }
    .expect("retire");
    id
}

async fn upgrade(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let dst = copy_clockhelp(&env);
    age_a_day(&dst);
    let original = std::fs::read(&dst).expect("read");
    // Framed as read (the former packing's input), not deferred.
    let summary = env.ingest_dir_env(
        &env.projects,
        &[("GLEANER_ARCHIVE__DEFER_FINISHED", "false")],
    );
    assert_eq!(summary["errors"], 0, "{summary}");
    let store = env.store().await;
    let id = pack_the_old_way(&store, "-x-clock", &original).await;
    let bound = format!("SELECT COUNT(*) FROM archive_chunks WHERE dict_id = {id}");
    assert!(scalar(&store, &bound).await > 0);

    // Read as before: every byte through the dictionary.
    let out = env
        .cmd()
        .args(["restore", "--all", "--check", "--json"])
        .output()
        .expect("check");
    assert_ok(&out);

    // Packing takes them into a block and empties the dictionary.
    let out = env.cmd().args(["pack", "--json"]).output().expect("pack");
    assert_ok(&out);
    let packed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("pack JSON");
    assert_eq!(packed["retired"], 1, "{packed}");
    assert_eq!(packed["blocks"], 1, "{packed}");
    assert_eq!(scalar(&store, &bound).await, 0, "no chunk names it");
    let left = format!("SELECT raw_len FROM archive_dicts WHERE id = {id}");
    assert_eq!(scalar(&store, &left).await, 0, "emptied");

    std::fs::remove_file(&dst).expect("delete");
    let out = env
        .cmd()
        .args(["restore", "--all"])
        .output()
        .expect("restore");
    assert_ok(&out);
    assert!(std::fs::read(&dst).expect("restored") == original);
    store.close().await;
    env.cleanup().await;
}

both_backends!(a_store_packed_with_dictionaries_upgrades, upgrade);
