//! One conversation stored once: the same transcript on several machines of a shared store
//! (people sync `~/.claude` between laptops) comes out the same as on one.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::both_backends;
use crate::common::*;

/// A real session with nine sub-agents (and their `.meta.json`).
const SID: &str = "512f6c74-f82f-4adb-9719-4ae90076677c";

fn corpus_session() -> PathBuf {
    corpus_dir().join("4thehalibit__omarchy-backup/.claude/projects/-home-vwestberg-Claude")
}

/// Copy the session (main file, sub-agents) into `projects/p/`, with a `summary` line (a line
/// without a uuid) on top.
fn place_copy(projects: &Path) {
    let src = corpus_session();
    let dst = projects.join("p");
    std::fs::create_dir_all(dst.join(format!("{SID}/subagents"))).expect("mkdir");
    let main = std::fs::read(src.join(format!("{SID}.jsonl"))).expect("corpus session");
    let mut bytes =
        br#"{"type":"summary","summary":"Omarchy backup review","leafUuid":"00000000-0000-4000-8000-000000000001"}"#
            .to_vec();
    bytes.push(b'\n');
    bytes.extend_from_slice(&main);
    std::fs::write(dst.join(format!("{SID}.jsonl")), bytes).expect("write");
    for e in std::fs::read_dir(src.join(format!("{SID}/subagents"))).expect("subagents") {
        let e = e.expect("entry");
        std::fs::copy(
            e.path(),
            dst.join(format!("{SID}/subagents")).join(e.file_name()),
        )
        .expect("copy");
    }
}

fn run_as(env: &TestEnv, projects: &Path, machine: &str, args: &[&str]) -> String {
    let out = env
        .cmd_as(projects, machine, machine)
        .args(args)
        .output()
        .expect("run");
    assert_ok(&out);
    String::from_utf8(out.stdout).expect("utf-8")
}

fn json(env: &TestEnv, projects: &Path, machine: &str, args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.push("--json");
    serde_json::from_str(&run_as(env, projects, machine, &args)).expect("JSON")
}

/// Everything the doors say about the session that copies must not change.
#[derive(Debug, PartialEq)]
struct Seen {
    text: String,
    with_agents: String,
    message_count: Value,
    subagent_count: Value,
    files: Value,
    episodes: usize,
    hits: usize,
    message_rows: i64,
}

async fn seen(env: &TestEnv, projects: &Path, machine: &str) -> Seen {
    let shown = json(env, projects, machine, &["show", SID]);
    let hits = json(
        env,
        projects,
        machine,
        &["search", "backup", "--session", SID, "--limit", "200"],
    )["results"]
        .as_array()
        .expect("results")
        .len();
    let store = env.store().await;
    let message_rows = counts(&store).await.messages as i64;
    store.close().await;
    Seen {
        text: run_as(env, projects, machine, &["text", SID]),
        with_agents: run_as(env, projects, machine, &["text", SID, "--subagents"]),
        message_count: shown["session"]["messages"].clone(),
        subagent_count: shown["session"]["subagent_count"].clone(),
        files: shown["session"]["files"].clone(),
        episodes: shown["episodes"].as_array().expect("episodes").len(),
        hits,
        message_rows,
    }
}

/// The session placed in the projects folders of machines alpha, beta and gamma.
fn three_copies(env: &TestEnv) -> Vec<PathBuf> {
    let dirs: Vec<PathBuf> = MACHINES.iter().map(|m| env.dir.path().join(m)).collect();
    for d in &dirs {
        place_copy(d);
    }
    dirs
}

const MACHINES: [&str; 3] = ["alpha", "beta", "gamma"];

async fn held_by_three_machines(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let dirs = three_copies(&env);
    run_as(&env, &dirs[0], "alpha", &["ingest"]);
    let one = seen(&env, &dirs[0], "alpha").await;
    assert!(one.hits > 0 && one.episodes > 0, "{one:?}");
    assert_eq!(one.subagent_count, 9, "{one:?}");
    assert!(
        one.message_count.as_i64().is_some_and(|n| n > 400),
        "{one:?}"
    );
    assert!(one.with_agents.len() > one.text.len(), "{one:?}");
    for (d, m) in dirs.iter().zip(MACHINES).skip(1) {
        run_as(&env, d, m, &["ingest"]);
        assert_eq!(seen(&env, &dirs[0], "alpha").await, one, "after {m}");
    }
    // Every machine sees the same, and the session names all three holders.
    assert_eq!(seen(&env, &dirs[2], "gamma").await, one);
    let shown = json(&env, &dirs[1], "beta", &["show", SID]);
    assert_eq!(
        shown["session"]["machines"],
        serde_json::json!(["alpha", "beta", "gamma"])
    );
    // Each copy keeps its own checkpoint: all three machines' files are read to the end.
    let store = env.store().await;
    for m in MACHINES {
        let files = store.list_files(m).await.expect("files");
        assert_eq!(files.len(), 10, "{m}: main + 9 sub-agents");
        assert!(files.iter().all(|f| f.offset == f.size), "{files:?}");
    }
    store.close().await;
    env.cleanup().await;

    // The three machines writing at the same moment store it once too (on PostgreSQL each
    // group locks the transcripts it writes before looking their copies up).
    let env = TestEnv::new(backend).await;
    let dirs = three_copies(&env);
    let children: Vec<_> = dirs
        .iter()
        .zip(MACHINES)
        .map(|(d, m)| {
            // Each machine has its own data folder (and single-instance lock).
            env.cmd_as(d, m, m)
                .env("XDG_DATA_HOME", env.dir.path().join(format!("data-{m}")))
                .arg("ingest")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().expect("wait");
        assert_ok(&out);
    }
    assert_eq!(seen(&env, &dirs[1], "beta").await, one);
    env.cleanup().await;
}
both_backends!(three_machines, held_by_three_machines);

/// A line of the session at `ts`, said by `kind`.
fn line(kind: &str, uuid: &str, parent: &str, ts: &str, text: &str) -> String {
    let content = serde_json::to_string(text).expect("json");
    let message = if kind == "user" {
        format!(r#"{{"role":"user","content":{content}}}"#)
    } else {
        format!(
            r#"{{"role":"assistant","model":"claude-x","content":[{{"type":"text","text":{content}}}]}}"#
        )
    };
    let parent = if parent.is_empty() {
        "null".to_string()
    } else {
        format!("\"{parent}\"")
    };
    format!(
        r#"{{"parentUuid":{parent},"isSidechain":false,"userType":"external","cwd":"/home/u/p","sessionId":"{SID}","version":"2.1.12","type":"{kind}","message":{message},"uuid":"{uuid}","timestamp":"{ts}"}}"#
    ) + "\n"
}

async fn diverged_copies_merge(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let main = |d: &Path| d.join(format!("p/{SID}.jsonl"));
    let (a, b, c) = (
        env.dir.path().join("alpha"),
        env.dir.path().join("beta"),
        env.dir.path().join("gamma"),
    );
    let u = |n: u32| format!("00000000-0000-4000-8000-{n:012}");
    let common = [
        line(
            "user",
            &u(1),
            "",
            "2026-03-01T10:00:00.000Z",
            "the build of the parser fails",
        ),
        line(
            "assistant",
            &u(2),
            &u(1),
            "2026-03-01T10:00:05.000Z",
            "the grammar file is missing",
        ),
    ]
    .concat();
    // Alpha went on on one laptop; the session was resumed on beta and grew otherwise.
    let alpha_tail = line(
        "user",
        &u(3),
        &u(2),
        "2026-03-01T10:01:00.000Z",
        "alpha: regenerate it",
    );
    let beta_tail = [
        line(
            "user",
            &u(10),
            &u(2),
            "2026-03-01T10:02:00.000Z",
            "beta: vendor the grammar",
        ),
        line(
            "assistant",
            &u(11),
            &u(10),
            "2026-03-01T10:02:05.000Z",
            "beta: vendored",
        ),
    ]
    .concat();
    append(&main(&a), format!("{common}{alpha_tail}").as_bytes());
    append(&main(&b), format!("{common}{beta_tail}").as_bytes());
    append(&main(&c), common.as_bytes()); // behind both
    run_as(&env, &a, "alpha", &["ingest"]);
    run_as(&env, &b, "beta", &["ingest"]);
    run_as(&env, &c, "gamma", &["ingest"]);
    let text = run_as(&env, &c, "gamma", &["text", SID]);
    let order = [
        "the build of the parser fails",
        "the grammar file is missing",
        "alpha: regenerate it",
        "beta: vendor the grammar",
        "beta: vendored",
    ];
    let at: Vec<usize> = order
        .iter()
        .map(|s| {
            assert_eq!(text.matches(s).count(), 1, "{s} once in:\n{text}");
            text.find(s).expect("present")
        })
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "time order:\n{text}");
    let shown = json(&env, &a, "alpha", &["show", SID]);
    assert_eq!(shown["session"]["messages"], 5, "{shown}");
    // The web view's timeline is the merged transcript too, from any machine.
    for (d, m) in [(&a, "alpha"), (&c, "gamma")] {
        let web = crate::web::start_web_cmd(env.cmd_as(d, m, m), "127.0.0.1:0");
        let (code, page) =
            crate::web::get(&format!("{}/sessions/{SID}", web.url.trim_end_matches('/')));
        assert_eq!(code, 200, "{page}");
        // (The first prompt is the session's title too.)
        let at: Vec<usize> = order[1..]
            .iter()
            .map(|s| {
                assert_eq!(
                    page.matches(s).count(),
                    1,
                    "{s} once on {m}'s page:\n{page}"
                );
                page.find(s).expect("present")
            })
            .collect();
        assert!(
            at.windows(2).all(|w| w[0] < w[1]),
            "time order on {m}'s page"
        );
    }

    // Alpha goes on: only its new line is added; a search finds each message once.
    append(
        &main(&a),
        line(
            "assistant",
            &u(4),
            &u(3),
            "2026-03-01T10:03:00.000Z",
            "alpha: regenerated parser",
        )
        .as_bytes(),
    );
    run_as(&env, &a, "alpha", &["ingest"]);
    let shown = json(&env, &b, "beta", &["show", SID]);
    assert_eq!(shown["session"]["messages"], 6, "{shown}");
    let hits = json(&env, &b, "beta", &["search", "parser"])["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter(|h| {
            h["kinds"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "message"))
        })
        .count();
    assert_eq!(hits, 2, "'parser' is in two messages");
    env.cleanup().await;
}
both_backends!(diverged, diverged_copies_merge);

/// A store written before copies were folded held each copy's rows: made here by copying the
/// rows the way the old writer stored them, then the fold migration run again.
async fn stored_twice_before_is_folded(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let (a, b) = (env.dir.path().join("alpha"), env.dir.path().join("beta"));
    place_copy(&a);
    place_copy(&b);
    run_as(&env, &a, "alpha", &["ingest"]);
    let one = seen(&env, &a, "alpha").await;
    run_as(&env, &b, "beta", &["ingest"]);

    let store = env.store().await;
    let pg = backend == Backend::Postgres;
    let pair = "FROM messages m JOIN files fa ON fa.id = m.file_id AND fa.machine = 'alpha' \
         JOIN files fb ON fb.session_id = fa.session_id AND fb.kind = fa.kind \
         AND COALESCE(fb.agent_id, '') = COALESCE(fa.agent_id, '') AND fb.machine = 'beta'";
    let cols = "generation, line_no, seq, byte_start, byte_end, uuid, parent_uuid, kind, \
         subtype, ts, is_sidechain, agent_id, model_id, tool_names, is_error, is_meta, text";
    let copied = execute(
        &store,
        &format!(
            "INSERT INTO messages (file_id, {cols}) SELECT fb.id, {} {pair}",
            cols.split(", ")
                .map(|c| format!("m.{c}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
    .await
    .expect("copy messages");
    assert!(copied > 400, "{copied}");
    if pg {
        // The copies' vectors (`message_search`, migration 0022), which the fold's deletes
        // must take with the rows.
        execute(
            &store,
            "INSERT INTO message_search (file_id, generation, line_no, seq, ts, search_vec) \
             SELECT fb.id, s.generation, s.line_no, s.seq, s.ts, s.search_vec \
             FROM message_search s JOIN files fa ON fa.id = s.file_id AND fa.machine = 'alpha' \
             JOIN files fb ON fb.session_id = fa.session_id AND fb.kind = fa.kind \
             AND COALESCE(fb.agent_id, '') = COALESCE(fa.agent_id, '') AND fb.machine = 'beta'",
        )
        .await
        .expect("copy vectors");
    } else {
        execute(
            &store,
            "INSERT INTO search_docs (kind, session_id, ts, file_id, generation, line_no, seq) \
             SELECT 'message', '', NULL, m.file_id, m.generation, m.line_no, m.seq \
             FROM messages m JOIN files f ON f.id = m.file_id AND f.machine = 'beta' \
             WHERE m.text IS NOT NULL AND m.kind IN ('user', 'assistant') AND NOT m.is_meta",
        )
        .await
        .expect("index copies");
        execute(
            &store,
            "INSERT INTO search_fts (search_fts) VALUES ('rebuild')",
        )
        .await
        .expect("rebuild");
    }
    let ecols = "session_id, generation, ordinal, first_turn, turns, start_line, end_line, \
         started_at, ended_at, status, cut_reason, triage, confidence, evidence, labels, \
         turn_labels, title, files_touched, tools, agents, created_at, updated_at";
    execute(
        &store,
        &format!(
            "INSERT INTO episodes (file_id, {ecols}) SELECT fb.id, {} FROM episodes e \
             JOIN files fa ON fa.id = e.file_id AND fa.machine = 'alpha' \
             JOIN files fb ON fb.session_id = fa.session_id AND fb.kind = fa.kind \
             AND fb.machine = 'beta'",
            ecols
                .split(", ")
                .map(|c| format!("e.{c}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
    .await
    .expect("copy episodes");
    execute(
        &store,
        &format!("UPDATE sessions SET message_count = message_count + {copied}"),
    )
    .await
    .expect("count");
    let twice = seen(&env, &a, "alpha").await;
    assert_eq!(twice.message_rows, one.message_rows * 2);
    assert!(
        twice.hits > one.hits && twice.episodes == one.episodes * 2,
        "{twice:?}"
    );

    execute(&store, "DELETE FROM _sqlx_migrations WHERE version = 17")
        .await
        .expect("forget the fold");
    store.close().await;
    run_as(&env, &a, "alpha", &["migrate"]);
    assert_eq!(seen(&env, &a, "alpha").await, one);
    // And ingest goes on exactly-once over the folded store.
    run_as(&env, &b, "beta", &["ingest"]);
    assert_eq!(seen(&env, &b, "beta").await, one);
    env.cleanup().await;
}
both_backends!(folded, stored_twice_before_is_folded);

/// Hundreds of copies of one transcript in one tree (a corpus copied into every project, a
/// synced folder restored many times): each group's lookup of the other copies stays a
/// statement the database takes. As a chain of `OR`s it grew past SQLite's expression depth
/// limit of 1,000 (2,000 copies failed every file), and the group could never commit.
async fn hundreds_of_copies_commit(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let body = [
        line("user", "u1", "", "2026-03-01T10:00:00Z", "Count the copies"),
        line(
            "assistant",
            "a1",
            "u1",
            "2026-03-01T10:00:05Z",
            "One conversation, stored once.",
        ),
    ]
    .concat();
    let write = |i: usize| {
        let dir = env.projects.join(format!("p{i}"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join(format!("{SID}.jsonl")), &body).expect("write");
    };
    write(0);
    let out = env.cmd().args(["ingest"]).output().expect("ingest");
    assert_ok(&out);
    let store = env.store().await;
    let one = counts(&store).await;
    for i in 1..2000 {
        write(i);
    }
    let out = env.cmd().args(["ingest"]).output().expect("ingest");
    assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("failed"), "{stderr}");
    let all = counts(&store).await;
    assert_eq!(all.messages, one.messages);
    assert_eq!(all.diagnostics, 0);
    assert_eq!(files(&store).await.len(), 2000);
    store.close().await;
    env.cleanup().await;
}
both_backends!(hundreds_of_copies, hundreds_of_copies_commit);

/// A transcript cut short and then grown back (a sync tool, a restored backup: `head -10 f >
/// f`, then the whole file put back) starts a new generation from byte 0; the lines the first
/// generation stored are not stored again: the same messages, one search hit per line, the
/// same episodes and the same conversation as a single reading.
async fn cut_short_and_grown_back(backend: Backend) {
    const S: &str = "5fbb940a-c7f3-404d-bf66-a028fcc250ec";
    let env = TestEnv::new(backend).await;
    let whole = std::fs::read(corpus_session().join(format!("{S}.jsonl"))).expect("corpus");
    let dir = env.projects.join("p");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let path = dir.join(format!("{S}.jsonl"));
    let me = env.projects.clone();
    std::fs::write(&path, &whole).expect("write");
    run_as(&env, &me, "test", &["ingest"]);
    let once = json(&env, &me, "test", &["show", S]);
    let text = run_as(&env, &me, "test", &["text", S]);
    let episodes = json(&env, &me, "test", &["episodes", S])
        .as_array()
        .map(Vec::len);
    let word = "settings";
    let hits = |env: &TestEnv| {
        json(
            env,
            &me,
            "test",
            &["search", word, "--session", S, "--limit", "200"],
        )["total_count"]
            .clone()
    };
    let found = hits(&env);
    assert!(found.as_i64() > Some(2), "{found}");
    // Cut to its first ten lines (a new generation), then the whole file back.
    let ten: Vec<u8> = whole
        .split_inclusive(|&b| b == b'\n')
        .take(10)
        .flatten()
        .copied()
        .collect();
    std::fs::write(&path, &ten).expect("cut");
    run_as(&env, &me, "test", &["ingest"]);
    std::fs::write(&path, &whole).expect("back");
    run_as(&env, &me, "test", &["ingest"]);
    let files = json(&env, &me, "test", &["files"]);
    assert_eq!(files[0]["generation"], 2, "{files}");
    let again = json(&env, &me, "test", &["show", S]);
    assert_eq!(
        again["session"]["messages"], once["session"]["messages"],
        "messages stored twice"
    );
    assert_eq!(run_as(&env, &me, "test", &["text", S]), text);
    assert_eq!(
        json(&env, &me, "test", &["episodes", S])
            .as_array()
            .map(Vec::len),
        episodes
    );
    assert_eq!(hits(&env), found, "search hits doubled");
    env.cleanup().await;
}
both_backends!(grown_back, cut_short_and_grown_back);
