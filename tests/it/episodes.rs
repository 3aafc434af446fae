//! Episodes and automatic snippets over the real corpus, on both backends: episodes tile every
//! session, every snippet passes the gates and limits and points at lines that exist, a second
//! ingest adds nothing, and the database itself refuses a bad snippet. Live: an episode is
//! written open, closed when the next one starts, and the last one closed when the session
//! ends.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use gleaner::store::Store;

use crate::both_backends;
use crate::common::*;

type EpisodeRow = (i64, i64, String, i64, i64, i64, String, String, f64, String);

async fn episodes(store: &Store) -> Vec<EpisodeRow> {
    let sql = "SELECT e.id, e.file_id, f.path, e.generation, e.start_line, e.end_line, e.status, \
               e.triage, e.confidence, e.evidence FROM episodes e JOIN files f ON f.id = e.file_id \
               ORDER BY e.file_id, e.generation, e.start_line";
    match store {
        Store::Sqlite(p) => sqlx::query_as(sql).fetch_all(p).await,
        Store::Postgres(p) => sqlx::query_as(sql).fetch_all(p).await,
    }
    .expect("episodes")
}

type SnippetRow = (
    i64,
    Option<i64>,
    String,
    String,
    String,
    String,
    i64,
    i64,
    String,
    String,
);

async fn snippets(store: &Store) -> Vec<SnippetRow> {
    let sql = "SELECT id, episode_id, snippet_type, title, content, source_file, line_start, \
               line_end, content_hash, tags FROM snippets ORDER BY id";
    match store {
        Store::Sqlite(p) => sqlx::query_as(sql).fetch_all(p).await,
        Store::Postgres(p) => sqlx::query_as(sql).fetch_all(p).await,
    }
    .expect("snippets")
}

async fn scalar_i64(store: &Store, sql: &str) -> i64 {
    match store {
        Store::Sqlite(p) => sqlx::query_scalar::<_, i64>(sql).fetch_one(p).await,
        Store::Postgres(p) => sqlx::query_scalar::<_, i64>(sql).fetch_one(p).await,
    }
    .expect(sql)
}

/// Physical lines of a file, as the tailer counts them (complete lines).
fn line_count(path: &str) -> i64 {
    let bytes = std::fs::read(path).expect("read source");
    bytes.iter().filter(|&&b| b == b'\n').count() as i64
}

/// Files holding a transcript another file holds too (store::copies).
async fn copy_files(store: &Store) -> HashSet<i64> {
    let sql = "SELECT f.id FROM files f WHERE f.session_id IS NOT NULL AND EXISTS \
               (SELECT 1 FROM files o WHERE o.session_id = f.session_id AND o.kind = f.kind \
               AND COALESCE(o.agent_id, '') = COALESCE(f.agent_id, '') AND o.id <> f.id)";
    let rows: Vec<(i64,)> = match store {
        Store::Sqlite(p) => sqlx::query_as(sql).fetch_all(p).await,
        Store::Postgres(p) => sqlx::query_as(sql).fetch_all(p).await,
    }
    .expect("copies");
    rows.into_iter().map(|(id,)| id).collect()
}

/// Episodes of each file generation tile its turns: consecutive ranges touch, each starts on a
/// user line, the last ends at the file's last line; labels, confidence and evidence are sane.
async fn assert_tiling(store: &Store, eps: &[EpisodeRow]) {
    let lines: HashMap<i64, i64> = {
        let sql = "SELECT id, lines FROM files";
        let rows: Vec<(i64, i64)> = match store {
            Store::Sqlite(p) => sqlx::query_as(sql).fetch_all(p).await,
            Store::Postgres(p) => sqlx::query_as(sql).fetch_all(p).await,
        }
        .expect("files");
        rows.into_iter().collect()
    };
    // Files holding a transcript another file holds too (the corpus keeps excerpts of some
    // sessions in other files): each episode is stored once, by the copy that reaches
    // furthest (store::copies), so a copy need not tile; none holds an episode twice.
    let copies = copy_files(store).await;
    let twice = {
        let sql = "SELECT COUNT(*) FROM (SELECT e.session_id, \
                   COALESCE(e.started_at, CAST(e.start_line AS TEXT)) FROM episodes e \
                   JOIN files f ON f.id = e.file_id AND f.generation = e.generation \
                   GROUP BY 1, 2 HAVING COUNT(*) > 1) t";
        scalar_i64(store, sql).await
    };
    assert_eq!(twice, 0, "an episode stored twice");
    let mut by_file: BTreeMap<(i64, i64), Vec<&EpisodeRow>> = BTreeMap::new();
    for e in eps.iter().filter(|e| !copies.contains(&e.1)) {
        by_file.entry((e.1, e.3)).or_default().push(e);
    }
    assert!(by_file.len() > 80, "{} files tile", by_file.len());
    for ((file_id, generation), list) in &by_file {
        for w in list.windows(2) {
            assert_eq!(w[1].4, w[0].5 + 1, "gap or overlap in {}", w[0].2);
            assert_eq!(
                w[0].6, "closed",
                "an episode before the last is open in {}",
                w[0].2
            );
        }
        let last = list.last().expect("non-empty");
        assert_eq!(
            last.5, lines[file_id],
            "last episode of {} ends early",
            last.2
        );
        for e in list {
            let kind: String = {
                let sql = format!(
                    "SELECT kind FROM messages WHERE file_id = {file_id} AND generation = \
                     {generation} AND line_no = {} ORDER BY seq LIMIT 1",
                    e.4
                );
                match store {
                    Store::Sqlite(p) => sqlx::query_scalar(&sql).fetch_one(p).await,
                    Store::Postgres(p) => sqlx::query_scalar(&sql).fetch_one(p).await,
                }
                .expect("message at episode start")
            };
            assert_eq!(kind, "user", "episode of {} starts on a {kind} line", e.2);
            assert!([
                "routine",
                "error_recovery",
                "user_correction",
                "pivot",
                "design_decision"
            ]
            .contains(&e.7.as_str()));
            assert!((0.0..=1.0).contains(&e.8));
            let ev: serde_json::Value = serde_json::from_str(&e.9).expect("evidence JSON");
            let ev = ev.as_array().expect("evidence array");
            if e.7 != "routine" {
                assert!(!ev.is_empty(), "{} has no evidence", e.7);
                assert_eq!(ev[0]["label"], e.7.as_str());
            }
            for item in ev {
                let line = item["line"].as_i64().expect("evidence line");
                assert!(
                    (e.4..=e.5).contains(&line),
                    "evidence line {line} outside {}..{} of {}",
                    e.4,
                    e.5,
                    e.2
                );
                assert!(!item["signal"].as_str().unwrap_or("").is_empty());
            }
        }
    }
}

async fn corpus(backend: Backend) {
    let env = TestEnv::new(backend).await;
    // Sessions finish by file mtime, and a freshly provisioned machine (CI) copies the corpus
    // minutes before the tests run. So the timeout is set both ways: first so long that every
    // session is active (each file's last episode must be visible, open, even in files whose
    // last line never got its newline), then one second, which finishes them all.
    let long_idle = [("GLEANER_SESSIONS__IDLE_TIMEOUT_SECS", "315360000")];
    let quick_idle = [("GLEANER_SESSIONS__IDLE_TIMEOUT_SECS", "1")];
    env.ingest_dir_env(&corpus_dir(), &long_idle);
    let store = env.store().await;

    let live = episodes(&store).await;
    assert!(live.len() > 100, "{} episodes", live.len());
    assert_tiling(&store, &live).await;
    // One open episode per file (a copy's may be held by the copy that reaches further).
    let copies = copy_files(&store).await;
    let alone = |e: &&EpisodeRow| !copies.contains(&e.1);
    let files_with_episodes: std::collections::BTreeSet<i64> =
        live.iter().filter(alone).map(|e| e.1).collect();
    let open = live.iter().filter(alone).filter(|e| e.6 == "open").count();
    assert_eq!(open, files_with_episodes.len(), "one open episode per file");
    assert_eq!(
        scalar_i64(
            &store,
            "SELECT COUNT(*) FROM snippets s JOIN episodes e ON e.id = s.episode_id \
             WHERE e.status = 'open'"
        )
        .await,
        0,
        "open episodes carry no snippets yet"
    );
    let prompted_files_without_episode = scalar_i64(
        &store,
        "SELECT COUNT(DISTINCT fb.file_id) FROM feedback fb JOIN files f ON f.id = fb.file_id \
         WHERE fb.feedback_type = 'message' AND f.kind = 'main' \
         AND NOT EXISTS (SELECT 1 FROM episodes e WHERE e.file_id = fb.file_id) \
         AND NOT EXISTS (SELECT 1 FROM files o WHERE o.session_id = f.session_id \
         AND o.kind = f.kind AND o.id <> f.id)",
    )
    .await;
    // (A file holding a copy of another's transcript may leave its episodes to the copy that
    // reaches furthest: store::copies.)
    assert_eq!(prompted_files_without_episode, 0);

    // The sessions finish: the same episodes (same ids), all closed, still tiling.
    env.ingest_dir_env(&corpus_dir(), &quick_idle);
    let eps = episodes(&store).await;
    assert_eq!(
        scalar_i64(
            &store,
            "SELECT COUNT(*) FROM sessions WHERE status <> 'finished'"
        )
        .await,
        0,
        "sessions left active"
    );
    assert!(eps.iter().all(|e| e.6 == "closed"), "open episodes left");
    assert_eq!(
        eps.iter().map(|e| e.0).collect::<Vec<_>>(),
        live.iter().map(|e| e.0).collect::<Vec<_>>(),
        "closing changed the set of episodes"
    );
    assert_tiling(&store, &eps).await;

    let labels: std::collections::BTreeSet<&str> = eps.iter().map(|e| e.7.as_str()).collect();
    for l in [
        "routine",
        "error_recovery",
        "user_correction",
        "design_decision",
    ] {
        assert!(
            labels.contains(l),
            "no {l} episode in the corpus: {labels:?}"
        );
    }

    // Snippets: gates, limits, sources.
    let snips = snippets(&store).await;
    assert!(snips.len() > 30, "{} snippets", snips.len());
    let ep_by_id: HashMap<i64, &EpisodeRow> = eps.iter().map(|e| (e.0, e)).collect();
    let mut per_episode: HashMap<i64, usize> = HashMap::new();
    let mut lines_of: HashMap<String, i64> = HashMap::new();
    let mut types = std::collections::BTreeSet::new();
    for s in &snips {
        let (_, episode_id, kind, title, content, source, start, end, _, tags) = s;
        types.insert(kind.clone());
        gleaner::snippet::validate(title, content)
            .unwrap_or_else(|e| panic!("snippet {} fails the gates: {e}\n{content}", s.0));
        assert!((100..=10_240).contains(&content.len()));
        assert!(title.chars().count() <= 256);
        let ep = ep_by_id[&episode_id.expect("auto snippets have an episode")];
        *per_episode.entry(ep.0).or_default() += 1;
        assert_eq!(source, &ep.2);
        assert!(
            ep.4 <= *start && start <= end && *end <= ep.5,
            "snippet {} lines {start}..{end} outside its episode {}..{}",
            s.0,
            ep.4,
            ep.5
        );
        let n = *lines_of
            .entry(source.clone())
            .or_insert_with(|| line_count(source));
        assert!(*end <= n, "snippet {} points past the end of {source}", s.0);
        if ep.7 == "routine" {
            assert_eq!(
                kind, "learning_pattern",
                "routine episodes only keep lessons"
            );
        }
        let tags: Vec<String> = serde_json::from_str(tags).expect("tags JSON");
        assert!(tags.iter().any(|t| t.starts_with("project:")), "{tags:?}");
        let stored_tags = scalar_i64(
            &store,
            &format!(
                "SELECT COUNT(*) FROM snippet_tags WHERE snippet_id = {}",
                s.0
            ),
        )
        .await;
        assert_eq!(stored_tags as usize, tags.len());
    }
    assert!(
        per_episode.values().all(|&n| n <= 2),
        "more than two per episode"
    );
    assert_eq!(
        types.into_iter().collect::<Vec<_>>(),
        ["decision_rationale", "error_reasoning", "learning_pattern"]
    );

    // A second ingest adds and changes nothing.
    let before = (episodes(&store).await, snippets(&store).await);
    env.ingest_dir_env(&corpus_dir(), &quick_idle);
    let after = (episodes(&store).await, snippets(&store).await);
    assert_eq!(before, after);

    // The database enforces the type list and the size range.
    let good = "x".repeat(120);
    let insert = |kind: &str, content: &str| {
        format!(
            "INSERT INTO snippets (session_id, origin, snippet_type, title, content, \
             content_hash, project, source_file, line_start, line_end, tags, metadata, \
             created_at) VALUES ('s', 'manual', '{kind}', 't', '{content}', '{}', 'p', 'f', 1, \
             1, '[]', '{{}}', '2026-01-01')",
            content.len()
        )
    };
    execute(&store, &insert("error_reasoning", &good))
        .await
        .expect("a valid row is accepted");
    for (kind, content) in [
        ("tip", good.clone()),
        ("error_reasoning", "x".repeat(99)),
        ("error_reasoning", "x".repeat(10_241)),
    ] {
        let r = execute(&store, &insert(kind, &content)).await;
        assert!(
            r.is_err(),
            "{kind} with {} bytes was accepted",
            content.len()
        );
    }

    // A backfill of old files closes each last episode in the batch that catches its file up
    // (not in the idle sweep, which then skips those files): the same episodes and snippets.
    let direct = TestEnv::new(backend).await;
    direct.ingest_dir_env(&corpus_dir(), &quick_idle);
    let other = direct.store().await;
    assert_eq!(
        scalar_i64(
            &other,
            "SELECT COUNT(*) FROM files WHERE kind = 'main' AND episode_state IS NOT NULL \
             AND (episode_closed_offset IS NULL OR episode_closed_offset <> byte_offset)"
        )
        .await,
        0,
        "a main file left for the sweep to close"
    );
    assert_eq!(
        scalar_i64(
            &other,
            "SELECT COUNT(*) FROM sessions WHERE status <> 'finished'"
        )
        .await,
        0
    );
    let strip_ids = |eps: Vec<EpisodeRow>| -> Vec<_> {
        eps.into_iter()
            .map(|(_, _, path, g, start, end, status, triage, conf, ev)| {
                (path, g, start, end, status, triage, conf.to_bits(), ev)
            })
            .collect()
    };
    let strip_snippets = |s: Vec<SnippetRow>| -> Vec<_> {
        let mut v: Vec<_> = s
            .into_iter()
            .map(
                |(_, _, kind, title, content, source, start, end, hash, tags)| {
                    (source, start, end, kind, title, content, hash, tags)
                },
            )
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        strip_ids(episodes(&other).await),
        strip_ids(before.0),
        "closing at catch-up differs from closing in the sweep"
    );
    assert_eq!(
        strip_snippets(snippets(&other).await),
        strip_snippets(before.1)
    );
    other.close().await;
    direct.cleanup().await;
    store.close().await;
    env.cleanup().await;
}

both_backends!(corpus_episodes_tile_and_snippets_pass_the_gates, corpus);

const S: &str = "eeeeeeee-0000-4000-8000-000000000001";

fn assistant_line(uuid: &str, text: &str) -> String {
    format!(
        r#"{{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/home/u/p","sessionId":"{S}","version":"2.1.12","type":"assistant","message":{{"role":"assistant","model":"m","content":[{{"type":"text","text":{}}}]}},"uuid":"{uuid}","timestamp":"2026-01-01T00:00:01.000Z"}}"#,
        serde_json::to_string(text).expect("json")
    ) + "\n"
}

async fn live(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let path = env.path(&format!("p/{S}.jsonl"));
    append(
        &path,
        user_line(S, "u1", "Refactor the tailer partial line buffer handling").as_bytes(),
    );
    let mut daemon = env.spawn_daemon(&[]);
    let store = env.store().await;
    let open = |store: Store| async move {
        scalar_i64(
            &store,
            "SELECT COUNT(*) FROM episodes WHERE status = 'open'",
        )
        .await
    };
    wait_for(Duration::from_secs(10), "open episode", || {
        let store = store.clone();
        async move { open(store).await == 1 }
    })
    .await;
    append(
        &path,
        assistant_line(
            "a1",
            "The root cause was that the tailer dropped its partial line buffer whenever the \
             file went idle, so the next read started in the middle of a line and the JSON \
             parser rejected it; keeping the buffer until the line completes fixes it.",
        )
        .as_bytes(),
    );
    append(
        &path,
        user_line(S, "u2", "Write a haiku about autumn leaves falling slowly").as_bytes(),
    );
    wait_for(Duration::from_secs(10), "first episode closed", || {
        let store = store.clone();
        async move {
            scalar_i64(
                &store,
                "SELECT COUNT(*) FROM episodes WHERE status = 'closed'",
            )
            .await
                == 1
        }
    })
    .await;
    let eps = episodes(&store).await;
    assert_eq!(
        eps.iter()
            .map(|e| (e.4, e.5, e.6.as_str()))
            .collect::<Vec<_>>(),
        [(1, 2, "closed"), (3, 3, "open")]
    );
    let snips = snippets(&store).await;
    assert_eq!(snips.len(), 1, "the lesson of the first episode");
    assert_eq!(snips[0].2, "learning_pattern");

    // The session ends: the last episode is closed.
    env.hook_session_end(S, &path).await;
    let eps = episodes(&store).await;
    assert!(eps.iter().all(|e| e.6 == "closed"), "{eps:?}");
    assert_eq!(eps.len(), 2);

    // The CLI shows them.
    let out = env
        .cmd()
        .args(["episodes", &S[..8], "--json"])
        .output()
        .expect("episodes");
    assert_ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("episodes JSON");
    assert_eq!(v.as_array().map(Vec::len), Some(2), "{v}");
    // One label per turn, in order, tiling the episode.
    for e in v.as_array().into_iter().flatten() {
        let turns = e["turn_labels"].as_array().expect("turn_labels");
        assert_eq!(turns.len() as i64, e["turns"].as_i64().unwrap_or(-1), "{e}");
        assert_eq!(turns[0]["start_line"], e["start_line"], "{e}");
        assert_eq!(turns[turns.len() - 1]["end_line"], e["end_line"], "{e}");
        assert_eq!(e["labels"][0], e["triage"], "{e}");
    }

    let (status, _) = terminate(&mut daemon);
    assert!(status.success());
    store.close().await;
    env.cleanup().await;
}

both_backends!(episodes_open_close_live_and_at_session_end, live);

fn tool_call_line(uuid: &str, id: &str, command: &str) -> String {
    format!(
        r#"{{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/home/u/p","sessionId":"{S}","version":"2.1.12","type":"assistant","message":{{"role":"assistant","model":"m","content":[{{"type":"tool_use","id":"{id}","name":"Bash","input":{{"command":{}}}}}]}},"uuid":"{uuid}","timestamp":"2026-01-01T00:00:02.000Z"}}"#,
        serde_json::to_string(command).expect("json")
    ) + "\n"
}

fn tool_result_line(uuid: &str, id: &str, is_error: bool, output: &str) -> String {
    format!(
        r#"{{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/home/u/p","sessionId":"{S}","version":"2.1.12","type":"user","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"{id}","is_error":{is_error},"content":{}}}]}},"uuid":"{uuid}","timestamp":"2026-01-01T00:00:03.000Z"}}"#,
        serde_json::to_string(output).expect("json")
    ) + "\n"
}

async fn snippet_types(store: &Store) -> Vec<(i64, String)> {
    let sql = "SELECT id, snippet_type FROM snippets ORDER BY id";
    match store {
        Store::Sqlite(p) => sqlx::query_as(sql).fetch_all(p).await,
        Store::Postgres(p) => sqlx::query_as(sql).fetch_all(p).await,
    }
    .expect("snippets")
}

/// A finished session resumes and its last episode changes: closing it again replaces the
/// automatic snippets that are no longer produced (and their tags), keeps the ones that still
/// are, and adds the new ones.
async fn reclose(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let path = env.path(&format!("p/{S}.jsonl"));
    append(
        &path,
        user_line(
            S,
            "u1",
            "Pick the storage engine for the tailer checkpoints",
        )
        .as_bytes(),
    );
    append(
        &path,
        assistant_line(
            "a1",
            "There is a trade-off between the two engines. I'll go with SQLite by default rather \
             than PostgreSQL, because most users run a single machine and an embedded database \
             needs no setup at all.",
        )
        .as_bytes(),
    );
    env.hook_session_end(S, &path).await;
    let store = env.store().await;
    let first = snippet_types(&store).await;
    assert_eq!(
        first.iter().map(|s| s.1.as_str()).collect::<Vec<_>>(),
        ["decision_rationale"]
    );

    // The session resumes in the same episode: a failure fixed, with its root cause. The
    // episode becomes error_recovery; its two best snippets are the error reasoning (which
    // quotes the root cause, so the lesson is not kept twice) and the unchanged rationale,
    // which keeps its row and id.
    let lines = [
        tool_call_line("a2", "t1", "cargo build -p store"),
        tool_result_line(
            "r1",
            "t1",
            true,
            "Exit code 101\nerror[E0433]: failed to resolve: use of undeclared crate `sqlx`",
        ),
        assistant_line(
            "a3",
            "The root cause was that the sqlx dependency sat under dev-dependencies only, so the \
             library build could not see it; moving it to dependencies fixes the build for good.",
        ),
        tool_call_line("a4", "t2", "cargo build -p store"),
        tool_result_line("r2", "t2", false, "Finished dev profile"),
    ];
    for l in &lines {
        append(&path, l.as_bytes());
    }
    env.hook_session_end(S, &path).await;
    let second = snippet_types(&store).await;
    let mut types: Vec<&str> = second.iter().map(|s| s.1.as_str()).collect();
    types.sort_unstable();
    assert_eq!(
        types,
        ["decision_rationale", "error_reasoning"],
        "{second:?}"
    );
    assert!(
        second
            .iter()
            .any(|s| s.0 == first[0].0 && s.1 == "decision_rationale"),
        "identical content keeps its row: {second:?}"
    );
    assert_eq!(
        scalar_i64(
            &store,
            "SELECT COUNT(*) FROM snippet_tags t WHERE NOT EXISTS \
             (SELECT 1 FROM snippets s WHERE s.id = t.snippet_id)"
        )
        .await,
        0,
        "its tags are gone too"
    );
    let eps = episodes(&store).await;
    assert_eq!(eps.len(), 1, "{eps:?}");
    assert_eq!(
        (eps[0].6.as_str(), eps[0].7.as_str()),
        ("closed", "error_recovery")
    );

    // Closing once more with nothing new changes nothing.
    env.hook_session_end(S, &path).await;
    assert_eq!(snippet_types(&store).await, second);
    store.close().await;
    env.cleanup().await;
}

both_backends!(reclosing_an_episode_replaces_stale_snippets, reclose);
