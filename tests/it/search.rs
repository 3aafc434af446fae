//! `gleaner search` on both backends over the real corpus: known words found, phrases,
//! prefixes and operators, kind/project/date filters, pagination, the summary boost,
//! malformed queries, and the backfill of a database that predates the index.

use std::process::Output;

use serde_json::Value;

use crate::both_backends;
use crate::common::*;
use gleaner::store::Store;

fn search(env: &TestEnv, args: &[&str]) -> Output {
    env.cmd()
        .arg("search")
        .args(args)
        .output()
        .expect("run search")
}

fn json(env: &TestEnv, args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.push("--json");
    let out = search(env, &a);
    assert_ok(&out);
    serde_json::from_slice(&out.stdout).expect("search JSON")
}

fn results(v: &Value) -> &Vec<Value> {
    v["results"].as_array().expect("results array")
}

fn total(env: &TestEnv, args: &[&str]) -> i64 {
    json(env, args)["total_count"]
        .as_i64()
        .expect("total_count")
}

fn excerpt(r: &Value) -> String {
    r["excerpt"].as_str().unwrap_or("").to_lowercase()
}

async fn corpus_search(backend: Backend) {
    let env = TestEnv::new(backend).await;
    env.ingest_dir(&corpus_dir());

    // A rare word: found, its match marked in the first excerpt.
    let v = json(&env, &["AudioWorklet"]);
    let first = &results(&v)[0];
    assert!(excerpt(first).contains("audioworklet"), "{first}");
    let spans = first["highlights"].as_array().expect("highlights");
    assert!(!spans.is_empty(), "{first}");
    let text: Vec<char> = first["excerpt"].as_str().unwrap_or("").chars().collect();
    let [s, e] = [
        spans[0][0].as_u64().unwrap_or(0),
        spans[0][1].as_u64().unwrap_or(0),
    ];
    let marked: String = text[s as usize..e as usize].iter().collect();
    assert!(
        marked.to_lowercase().starts_with("audioworklet"),
        "{marked}"
    );
    for key in [
        "kind",
        "session_id",
        "score",
        "source_file",
        "line",
        "timestamp",
    ] {
        assert!(!first[key].is_null(), "{key} missing: {first}");
    }

    // A word that appears in exactly one session ranks it first (the files its tools read
    // that import it are not searched: `QUIET_OUTPUT`).
    let v = json(&env, &["zustand"]);
    assert_eq!(v["total_count"], 2, "{v}");
    assert!(results(&v)
        .iter()
        .all(|r| r["session_id"] == "3dae6bc4-bf52-4a30-a961-09999364d8c6"));

    // Phrases are stricter than their words; a reversed phrase finds less.
    let words = total(&env, &["pull request"]);
    let phrase = total(&env, &["\"pull request\""]);
    let reversed = total(&env, &["\"request pull\""]);
    assert!(phrase > 0 && phrase <= words, "{phrase} {words}");
    assert!(reversed < phrase, "{reversed} {phrase}");
    for r in results(&json(&env, &["\"pull request\"", "--limit", "10"])) {
        let t = excerpt(r);
        assert!(t.contains("pull") && t.contains("request"), "{r}");
    }

    // Prefixes find every word that starts so (stems included).
    let prefix = total(&env, &["migrat*"]);
    let word = total(&env, &["migration"]);
    assert!(prefix >= word && word > 0, "{prefix} {word}");

    // Operators.
    let a = total(&env, &["Prisma"]);
    let b = total(&env, &["tenant_id"]);
    let or = total(&env, &["Prisma OR tenant_id"]);
    let and = total(&env, &["Prisma AND tenant_id"]);
    let not = total(&env, &["Prisma -tenant_id"]);
    assert!(or >= a.max(b) && or <= a + b, "{a} {b} {or}");
    assert!(and <= a.min(b), "{a} {b} {and}");
    assert_eq!(not + and, a, "NOT and AND split Prisma's results");

    // Kinds.
    let v = json(&env, &["session", "--kind", "summary", "--limit", "50"]);
    assert!(!results(&v).is_empty());
    assert!(results(&v).iter().all(|r| r["kind"] == "summary"), "{v}");
    let v = json(
        &env,
        &[
            "test", "--kind", "feedback", "--kind", "snippet", "--limit", "50",
        ],
    );
    assert!(results(&v)
        .iter()
        .all(|r| r["kind"] == "feedback" || r["kind"] == "snippet"));

    // Project filter.
    let v = json(&env, &["Prisma", "--project", "UTAGE3", "--limit", "50"]);
    assert!(!results(&v).is_empty());
    assert!(results(&v)
        .iter()
        .all(|r| r["project"].as_str().unwrap_or("").contains("UTAGE3")));

    // Dates: since/until split the results of a word.
    let all = total(&env, &["error"]);
    let before = total(&env, &["error", "--until", "2026-01-01"]);
    let after = total(&env, &["error", "--since", "2026-01-01"]);
    assert!(before > 0 && after > 0, "{before} {after}");
    assert!(before + after <= all, "{before} {after} {all}");
    for r in results(&json(
        &env,
        &["error", "--since", "2026-01-01", "--limit", "50"],
    )) {
        assert!(r["timestamp"].as_str().unwrap_or("") >= "2026-01-01", "{r}");
    }

    // Pagination: pages do not overlap and add up (what was said only: with what tools
    // printed, "error" matches more than PostgreSQL ranks, and pages end there).
    let said = [
        "error", "--kind", "message", "--kind", "summary", "--kind", "feedback", "--kind",
        "snippet",
    ];
    let all = total(&env, &said);
    let with =
        |more: &[&str]| -> Vec<String> { said.iter().chain(more).map(|s| s.to_string()).collect() };
    let args = with(&["--limit", "5"]);
    let p1 = json(&env, &args.iter().map(String::as_str).collect::<Vec<_>>());
    let args = with(&["--limit", "5", "--offset", "5"]);
    let p2 = json(&env, &args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(p1["has_more"], true);
    assert_eq!(p1["total_count"], p2["total_count"]);
    let key = |r: &Value| format!("{}:{}:{}", r["kind"], r["source_file"], r["line"]);
    let k1: Vec<String> = results(&p1).iter().map(key).collect();
    assert!(results(&p2).iter().all(|r| !k1.contains(&key(r))));
    let args = with(&["--limit", "5", "--offset", &(all - 2).to_string()]);
    let last = json(&env, &args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(results(&last).len(), 2);
    assert_eq!(last["has_more"], false);

    // Malformed queries: one line naming the problem, exit 2, no SQL in sight.
    for (q, want) in [
        ("\"unbalanced", "unbalanced quote"),
        ("OR", "operator OR"),
        ("*", "lone *"),
        ("x*y", "\"x*y\": a * can only end a word"),
        ("🙂", "has no letters or digits"),
        ("-alone", "not negated"),
        ("(a OR b", "parenthesis"),
    ] {
        let out = search(&env, &[q]);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{q}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{q}: {err}");
        assert!(err.contains(want), "{q}: {err}");
        for sql in ["syntax", "fts5", "tsquery", "SQL"] {
            assert!(!err.contains(sql), "{q}: {err}");
        }
    }
    // FTS5 syntax inside words is just text.
    let out = search(&env, &["NEAR(col:x^)"]);
    assert_ok(&out);
    env.cleanup().await;
}

both_backends!(
    finds_phrases_prefixes_and_filters_on_the_corpus,
    corpus_search
);

/// A summary and a message with the same words: the summary ranks first.
async fn summary_boost(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let sid = "5b0c4a51-1111-4222-8333-944455556666";
    let dir = env.path("-home-u-boost");
    std::fs::create_dir_all(&dir).expect("project dir");
    let text = "the quokka migration plan keeps the schema";
    let lines = [
        user_line(sid, "u1", text),
        format!(
            r#"{{"type":"summary","summary":"{text}","leafUuid":"u1","uuid":"s1","sessionId":"{sid}"}}"#
        ),
    ];
    std::fs::write(dir.join(format!("{sid}.jsonl")), lines.join("\n") + "\n").expect("write");
    env.ingest();
    let v = json(&env, &["quokka migration"]);
    let kinds: Vec<&str> = results(&v)
        .iter()
        .filter_map(|r| r["kind"].as_str())
        .collect();
    assert_eq!(kinds.first(), Some(&"summary"), "{v}");
    // The prompt is one hit, of both kinds it is.
    let prompt = results(&v)
        .iter()
        .find(|r| r["kind"] == "feedback")
        .unwrap_or_else(|| panic!("the prompt: {v}"));
    assert_eq!(
        prompt["kinds"],
        serde_json::json!(["feedback", "message"]),
        "{v}"
    );
    assert_eq!(results(&v).len(), 2, "one hit per line: {v}");
    env.cleanup().await;
}

both_backends!(summaries_rank_above_equal_messages, summary_boost);

/// A database made before the index existed gets its rows indexed by the migration.
async fn backfill(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let dir = match backend {
        Backend::Sqlite => "migrations/sqlite",
        Backend::Postgres => "migrations/postgres",
    };
    let old = env.dir.path().join("old-migrations");
    std::fs::create_dir_all(&old).expect("dir");
    for f in std::fs::read_dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir))
        .expect("migrations")
        .flatten()
    {
        let name = f.file_name().to_string_lossy().into_owned();
        if name.as_str() < "0004" {
            std::fs::copy(f.path(), old.join(&name)).expect("copy");
        }
    }
    let migrator = sqlx::migrate::Migrator::new(old.as_path())
        .await
        .expect("migrator");
    let rows = [
        // The first file row of a new database has id 1 on both backends.
        "INSERT INTO files (machine, path, project, kind, session_id, first_seen_at, \
         updated_at) VALUES ('test', '/x/s.jsonl', 'p', 'main', 'sess-old', 't', 't')",
        "INSERT INTO messages (file_id, generation, line_no, seq, byte_start, byte_end, \
         session_id, uuid, parent_uuid, kind, is_sidechain, is_error, text) VALUES \
         (1, 1, 3, 0, 0, 10, 'sess-old', '0b5e7c2a-91d4-4f3e-8a6b-2c1d0e9f8a7b', 'msg-1', \
         'assistant', FALSE, FALSE, 'the wombat cache was stale')",
        "INSERT INTO summaries (kind, dedup_key, text, session_id, file_id, line_no) VALUES \
         ('summary', 'k', 'wombat cache fix', 'sess-old', 1, 1)",
        "INSERT INTO sessions (session_id, machine, project, created_at, updated_at) VALUES \
         ('sess-old', 'test', 'p', 't', 't')",
    ];
    match backend {
        Backend::Sqlite => {
            let path = env.dir.path().join("data/test.db");
            std::fs::create_dir_all(path.parent().expect("parent")).expect("data dir");
            let opts = sqlx::sqlite::SqliteConnectOptions::new()
                .filename(&path)
                .create_if_missing(true);
            let pool = sqlx::SqlitePool::connect_with(opts).await.expect("sqlite");
            migrator.run(&pool).await.expect("old migrations");
            for r in rows {
                sqlx::query(r).execute(&pool).await.expect(r);
            }
            pool.close().await;
        }
        Backend::Postgres => {
            let pool = sqlx::PgPool::connect(&env.url).await.expect("postgres");
            migrator.run(&pool).await.expect("old migrations");
            for r in rows {
                sqlx::query(r).execute(&pool).await.expect(r);
            }
            pool.close().await;
        }
    }
    // A reader does not migrate: it says what to run. `gleaner migrate` applies 0004 and
    // later, which index what is there.
    let out = env.cmd().args(["search", "wombat"]).output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("gleaner migrate"));
    assert_ok(&env.cmd().arg("migrate").output().expect("migrate"));
    let v = json(&env, &["wombat"]);
    let kinds: Vec<&str> = results(&v)
        .iter()
        .filter_map(|r| r["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["summary", "message"], "{v}");
    assert_eq!(results(&v)[1]["line"], 3);
    // 0008 stored the ids as bytes: 16 for a UUID, the text's own for anything else.
    let sql = "SELECT uuid, parent_uuid FROM messages";
    let store = env.store().await;
    let (uuid, parent): (Vec<u8>, Vec<u8>) = match &store {
        Store::Sqlite(p) => sqlx::query_as(sql).fetch_one(p).await,
        Store::Postgres(p) => sqlx::query_as(sql).fetch_one(p).await,
    }
    .expect("ids");
    assert_eq!(uuid.len(), 16);
    assert_eq!(
        gleaner::extract::rows::uuid_from_bytes(&uuid),
        "0b5e7c2a-91d4-4f3e-8a6b-2c1d0e9f8a7b"
    );
    assert_eq!(parent, b"msg-1");
    if let Store::Sqlite(p) = &store {
        // An existing database keeps its page size; a new one gets 16 KB pages.
        assert_eq!(page_size(p).await, 4096);
        let fresh = TestEnv::new(backend).await;
        let new_store = fresh.store().await;
        if let Store::Sqlite(p) = &new_store {
            assert_eq!(page_size(p).await, 16384);
        }
        new_store.close().await;
        fresh.cleanup().await;
    }
    store.close().await;
    env.cleanup().await;
}

both_backends!(migration_indexes_existing_rows, backfill);

async fn page_size(p: &sqlx::SqlitePool) -> i64 {
    sqlx::query_scalar("PRAGMA page_size")
        .fetch_one(p)
        .await
        .expect("page size")
}

/// A word found in more documents than a search ranks or counts: the count stops at its cap
/// and says it is a lower bound, pages go on, and no page starts past the newest matches it
/// ranks.
async fn common_word(backend: Backend) {
    const SID: &str = "c0330000-0000-4000-8000-000000000025";
    let env = TestEnv::new(backend).await;
    let path = env.path(&format!("-home-u-p/{SID}.jsonl"));
    let mut text = String::new();
    for i in 0..2_100 {
        // Assistant lines: messages, one search document each, in line order (a prompt is
        // found as its feedback row, whose order within a batch is its key's).
        text.push_str(
            &user_line(SID, &format!("w{i}"), &format!("wombat number {i} went by")).replace(
                r#""type":"user","message":{"role":"user""#,
                r#""type":"assistant","message":{"role":"assistant""#,
            ),
        );
    }
    append(&path, text.as_bytes());
    env.ingest();
    let v = json(&env, &["wombat", "--limit", "20"]);
    assert_eq!(results(&v).len(), 20);
    assert_eq!(v["total_count"], 1000, "{}", v["total_count"]);
    assert_eq!(v["total_count_exact"], false);
    assert_eq!(v["has_more"], true);
    // The newest 1,000 matches are ranked (on PostgreSQL 250 of each kind): this is the last
    // page.
    let reach = gleaner::store::search::ranked_candidates(match backend {
        Backend::Sqlite => gleaner::store::Backend::Sqlite,
        Backend::Postgres => gleaner::store::Backend::Postgres,
    });
    let last_page = (reach - 20).to_string();
    let v = json(&env, &["wombat", "--limit", "20", "--offset", &last_page]);
    assert_eq!(results(&v).len(), 20);
    assert_eq!(v["has_more"], false, "{}", v["has_more"]);
    // Equal scores: the newest first, and the oldest lines were not among the candidates.
    let first = json(&env, &["wombat", "--limit", "1", "--kind", "message"]);
    assert!(first.to_string().contains("number 2099"), "{first}");
    let deepest = (reach - 200).to_string();
    let last = json(
        &env,
        &[
            "wombat", "--limit", "200", "--offset", &deepest, "--kind", "message",
        ],
    );
    assert!(!last.to_string().contains("number 5 "), "{last}");
    // A narrower query is counted and ranked whole.
    let v = json(&env, &["wombat number 7*"]);
    assert_eq!(v.get("total_count_exact"), None, "{v}");
    env.cleanup().await;
}

both_backends!(
    common_words_are_counted_and_ranked_within_bounds,
    common_word
);

/// Accents are ignored on both backends: `regimen` and `régimen` find the same texts, and so
/// do they on PostgreSQL for a text indexed with its accents (by an earlier build, or by the
/// server's `to_tsvector` in the first migrations).
async fn accents(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let sid = "5b0c4a51-1111-4222-8333-9444555566ac";
    let dir = env.path("-home-u-accents");
    std::fs::create_dir_all(&dir).expect("project dir");
    let lines = [
        user_line(sid, "u1", "el régimen del receptor también cambia"),
        format!(
            r#"{{"type":"summary","summary":"Quokka régimen notes","leafUuid":"u1","uuid":"s1","sessionId":"{sid}"}}"#
        ),
    ];
    std::fs::write(dir.join(format!("{sid}.jsonl")), lines.join("\n") + "\n").expect("write");
    env.ingest();
    for q in [
        "regimen",
        "régimen",
        "REGIMEN",
        "tambien",
        "\"regimen del\"",
        "régi*",
    ] {
        assert!(total(&env, &[q]) >= 1, "{q}");
    }
    assert_eq!(total(&env, &["regimen"]), total(&env, &["régimen"]));
    if backend == Backend::Postgres {
        let store = env.store().await;
        if let Store::Postgres(p) = &store {
            sqlx::query("UPDATE summaries SET search_vec = to_tsvector('english', text)")
                .execute(p)
                .await
                .expect("an accented vector");
        }
        store.close().await;
        let v = json(&env, &["régimen", "--kind", "summary"]);
        assert_eq!(results(&v).len(), 1, "{v}");
        assert!(excerpt(&results(&v)[0]).contains("régimen"), "{v}");
    }
    env.cleanup().await;
}

both_backends!(accents_are_ignored, accents);

/// Chinese and Japanese are written without spaces: a word inside a run is found (each
/// character is a word, a query's run a phrase), ranked like other hits, highlighted whole;
/// Korean (spaced) and Latin words keep working; on both backends.
async fn cjk(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let sid = "5b0c4a51-1111-4222-8333-9444555566cf";
    let dir = env.path("-home-u-cjk");
    std::fs::create_dir_all(&dir).expect("project dir");
    let lines = [
        user_line(sid, "u1", "幫我修正 device 的權限問題"),
        user_line(sid, "u2", "日本語の文章を分析してください").replace(
            r#""type":"user","message":{"role":"user""#,
            r#""type":"assistant","message":{"role":"assistant""#,
        ),
        user_line(sid, "u3", "권한 수정 부탁해요"),
    ];
    std::fs::write(dir.join(format!("{sid}.jsonl")), lines.concat()).expect("write");
    env.ingest();
    for (q, want) in [
        ("修正", "幫我修正"),
        ("權限", "權限問題"),
        ("分析", "分析して"),
        ("device", "device"),
        ("권한", "권한"),
        ("\"的權限\"", "的權限"),
    ] {
        let v = json(&env, &[q]);
        let r = results(&v);
        assert_eq!(r.len(), 1, "{q}: {v}");
        let excerpt = r[0]["excerpt"].as_str().expect("excerpt");
        assert!(excerpt.contains(want), "{q}: {excerpt}");
        assert!(
            !excerpt.contains('\u{200B}'),
            "{q}: separator shown: {excerpt:?}"
        );
        let h = &r[0]["highlights"][0];
        let hit: String = excerpt
            .chars()
            .skip(h[0].as_u64().unwrap_or(0) as usize)
            .take((h[1].as_u64().unwrap_or(0) - h[0].as_u64().unwrap_or(0)) as usize)
            .collect();
        assert!(!hit.is_empty(), "{q}: no highlight in {v}");
    }
    // A character that is in no text finds nothing; two that are, but apart, no phrase.
    assert!(results(&json(&env, &["龍"])).is_empty());
    assert!(results(&json(&env, &["修限"])).is_empty());
    env.cleanup().await;
}

both_backends!(chinese_and_japanese_words_inside_runs_are_found, cjk);
