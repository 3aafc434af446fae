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

/// Every value of every column of every table, as bytes, labelled `table.column`; on SQLite
/// also every term of the full-text index (its shadow tables hold terms prefix-compressed, so
/// a scan of their blobs alone could miss one).
///
/// Except the archive's compressed bytes (`archive_chunks.data`, `archive_sidecars.data`): the
/// archive is the transcript as Claude Code wrote it, by design (a restored file must be
/// byte-identical; `[archive] enabled = false` keeps it out, see `crate::archive`). Every value
/// derived from a transcript (texts, keys, hashes, indexes) is scanned.
async fn every_stored_value(store: &Store) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    match store {
        Store::Sqlite(p) => {
            let tables: Vec<String> = sqlx::query_scalar(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name <> '_sqlx_migrations'",
            )
            .fetch_all(p)
            .await
            .expect("tables");
            for t in tables {
                let cols: Vec<String> = sqlx::query_scalar("SELECT name FROM pragma_table_info(?)")
                    .bind(&t)
                    .fetch_all(p)
                    .await
                    .expect("columns");
                for c in cols.into_iter().filter(|c| !is_archive_bytes(&t, c)) {
                    // A message's text may be a zstd frame: scanned as the text it holds.
                    let value = match (t.as_str(), c.as_str()) {
                        ("messages", "text") => format!("gleaner_text(\"{c}\")"),
                        _ => format!("\"{c}\""),
                    };
                    let sql = format!("SELECT hex({value}) FROM \"{t}\" WHERE \"{c}\" IS NOT NULL");
                    let Ok(rows) = sqlx::query_scalar::<_, String>(&sql).fetch_all(p).await else {
                        continue; // a virtual table's hidden column
                    };
                    out.extend(rows.into_iter().map(|h| (format!("{t}.{c}"), unhex(&h))));
                }
            }
            let mut conn = p.acquire().await.expect("connection");
            sqlx::query("CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, search_fts, 'row')")
                .execute(&mut *conn)
                .await
                .expect("fts5vocab");
            let terms: Vec<String> = sqlx::query_scalar("SELECT term FROM temp.terms")
                .fetch_all(&mut *conn)
                .await
                .expect("terms");
            assert!(terms.len() > 100, "{} indexed terms", terms.len());
            out.extend(
                terms
                    .into_iter()
                    .map(|t| ("search_fts terms".to_string(), t.into_bytes())),
            );
        }
        Store::Postgres(p) => {
            let cols: Vec<(String, String)> = sqlx::query_as(
                "SELECT table_name::text, column_name::text FROM information_schema.columns \
                 WHERE table_schema = 'public' AND table_name <> '_sqlx_migrations'",
            )
            .fetch_all(p)
            .await
            .expect("columns");
            assert!(cols.len() > 50, "{} columns", cols.len());
            for (t, c) in cols.into_iter().filter(|(t, c)| !is_archive_bytes(t, c)) {
                let sql = format!("SELECT \"{c}\"::text FROM \"{t}\" WHERE \"{c}\" IS NOT NULL");
                let rows: Vec<String> =
                    sqlx::query_scalar(&sql).fetch_all(p).await.expect("values");
                out.extend(
                    rows.into_iter()
                        .map(|v| (format!("{t}.{c}"), v.into_bytes())),
                );
            }
        }
    }
    out
}

/// The archive's compressed transcript bytes (see [`every_stored_value`]).
fn is_archive_bytes(table: &str, column: &str) -> bool {
    table.starts_with("archive_") && column == "data"
}

fn unhex(h: &str) -> Vec<u8> {
    (0..h.len() / 2)
        .filter_map(|i| u8::from_str_radix(h.get(2 * i..2 * i + 2)?, 16).ok())
        .collect()
}

/// The pieces of a secret a tokenizer or a key could keep: its runs of letters and digits of
/// at least 8 characters, lower-cased, cut to their first 8 characters when longer (a stemmer
/// may have shortened the end).
fn secret_parts(secret: &str) -> Vec<Vec<u8>> {
    secret
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|p| p.len() >= 8)
        .map(|p| p[..8].to_ascii_lowercase().into_bytes())
        .collect()
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
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
    // A sub-agent of the session, whose sidecar description quotes a token.
    let agents = env.path(&format!("-home-u-proj/{SESSION}/subagents"));
    std::fs::create_dir_all(&agents).expect("mkdir");
    std::fs::copy(
        fixture("secrets-agent.meta.json"),
        agents.join("agent-a5ec2e7.meta.json"),
    )
    .expect("copy meta");
    std::fs::write(
        agents.join("agent-a5ec2e7.jsonl"),
        format!(
            "{{\"parentUuid\":null,\"isSidechain\":true,\"userType\":\"external\",\"cwd\":\"/home/u/proj\",\"sessionId\":\"{SESSION}\",\"version\":\"2.1.41\",\"agentId\":\"a5ec2e7\",\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"Check the mirror push\"}},\"uuid\":\"5ec2e700-0000-4000-8000-0000000009b1\",\"timestamp\":\"2026-02-01T10:01:00.000Z\"}}\n"
        ),
    )
    .expect("agent file");
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
    let values = every_stored_value(&store).await;
    assert!(
        values.iter().any(|(_, v)| contains(v, b"[REDACTED:")),
        "nothing was redacted"
    );
    let mut leaks = Vec::new();
    for secret in &secrets {
        let parts = secret_parts(secret);
        for (at, v) in &values {
            if contains(v, secret.as_bytes()) || parts.iter().any(|p| contains(v, p)) {
                leaks.push(format!(
                    "{at}: {secret:?} in {:?}",
                    String::from_utf8_lossy(v)
                ));
            }
        }
    }
    assert!(
        leaks.is_empty(),
        "{} leaks:\n{}",
        leaks.len(),
        leaks.join("\n")
    );
    let described: Vec<String> = values
        .iter()
        .filter(|(at, _)| at == "files.agent_description")
        .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
        .collect();
    assert!(
        described
            .iter()
            .any(|d| d.contains("[REDACTED:github_token]")),
        "the sub-agent's description was not stored redacted: {described:?}"
    );
    let summary_keys: Vec<String> = values
        .iter()
        .filter(|(at, _)| at == "summaries.dedup_key")
        .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
        .collect();
    assert!(
        summary_keys
            .iter()
            .any(|k| k.contains("[REDACTED:anthropic_key]")),
        "{summary_keys:?}"
    );
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
