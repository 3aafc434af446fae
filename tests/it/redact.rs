//! Secrets never reach the database: realistic fake secrets of every kind, embedded in real
//! transcript lines (`tests/fixtures/secrets.jsonl`), on both backends.

use gleaner::store::Store;

use crate::both_backends;
use crate::common::*;

const SESSION: &str = "5ec2e700-0000-4000-8000-000000000001";

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Every text the store keeps, one string per value.
async fn stored_texts(store: &Store) -> Vec<String> {
    let sql = "SELECT text FROM messages WHERE text IS NOT NULL \
               UNION ALL SELECT content FROM feedback \
               UNION ALL SELECT reason FROM feedback WHERE reason IS NOT NULL \
               UNION ALL SELECT text FROM summaries WHERE text IS NOT NULL \
               UNION ALL SELECT title FROM sessions WHERE title IS NOT NULL \
               UNION ALL SELECT target FROM tool_uses WHERE target IS NOT NULL \
               UNION ALL SELECT title FROM episodes WHERE title IS NOT NULL \
               UNION ALL SELECT evidence FROM episodes \
               UNION ALL SELECT files_touched FROM episodes \
               UNION ALL SELECT title FROM snippets \
               UNION ALL SELECT content FROM snippets \
               UNION ALL SELECT episode_state FROM files WHERE episode_state IS NOT NULL";
    match store {
        Store::Sqlite(p) => sqlx::query_scalar::<_, String>(sql).fetch_all(p).await,
        Store::Postgres(p) => sqlx::query_scalar::<_, String>(sql).fetch_all(p).await,
    }
    .expect("stored texts")
}

async fn redaction_counts(store: &Store) -> Vec<(String, i64)> {
    let sql = "SELECT name, CAST(SUM(count) AS BIGINT) FROM record_kinds \
               WHERE category = 'redacted' GROUP BY name ORDER BY name";
    match store {
        Store::Sqlite(p) => sqlx::query_as::<_, (String, i64)>(sql).fetch_all(p).await,
        Store::Postgres(p) => sqlx::query_as::<_, (String, i64)>(sql).fetch_all(p).await,
    }
    .expect("redaction counts")
}

async fn no_secret_is_stored(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let target = env.path(&format!("-home-u-proj/{SESSION}.jsonl"));
    std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
    std::fs::copy(fixture("secrets.jsonl"), &target).expect("copy fixture");
    // A one-second idle timeout finishes the session, so its episodes close and their
    // snippets (made of the same lines) are written and checked too.
    let summary = env.ingest_dir_env(
        &env.projects,
        &[("GLEANER_SESSIONS__IDLE_TIMEOUT_SECS", "1")],
    );
    assert_eq!(
        summary["diagnostics"], 0,
        "fixture lines are valid JSON: {summary}"
    );

    let secrets: Vec<String> = std::fs::read_to_string(fixture("secrets.txt"))
        .expect("secrets list")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    assert!(secrets.len() >= 60, "{} fake secrets", secrets.len());

    let store = env.store().await;
    let texts = stored_texts(&store).await;
    assert!(
        texts.iter().any(|t| t.contains("[REDACTED:")),
        "nothing was redacted"
    );
    for secret in &secrets {
        for t in &texts {
            assert!(
                !t.contains(secret.as_str()),
                "secret {secret:?} stored in {t:?}"
            );
        }
    }
    let redacted_snippets = {
        let sql = "SELECT COUNT(*) FROM snippets WHERE content LIKE '%[REDACTED:%'";
        match &store {
            Store::Sqlite(p) => sqlx::query_scalar::<_, i64>(sql).fetch_one(p).await,
            Store::Postgres(p) => sqlx::query_scalar::<_, i64>(sql).fetch_one(p).await,
        }
        .expect("snippets")
    };
    assert!(
        redacted_snippets >= 1,
        "no automatic snippet carried a redacted secret"
    );
    let counts = redaction_counts(&store).await;
    let total: i64 = counts.iter().map(|(_, n)| n).sum();
    assert!(total >= 60, "{counts:?}");
    store.close().await;
    env.cleanup().await;
}

both_backends!(no_fake_secret_reaches_the_database, no_secret_is_stored);
