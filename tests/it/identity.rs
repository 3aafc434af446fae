//! A file's session does not depend on how its bytes arrive: a main transcript whose name is
//! not a UUID and whose first lines carry no `sessionId`, written in small chunks while the
//! daemon runs (and is killed with -9 between chunks), ends with the same rows and the same
//! session as a one-shot ingest of the finished file.

use std::time::Duration;

use gleaner::store::Store;

use crate::both_backends;
use crate::common::*;

/// A real transcript that opens with a `summary` and a `file-history-snapshot` line (no
/// `sessionId`), its first `sessionId` on line 3.
const SOURCE: &str = "entireio__cli__8e-0a64736bc7-0-full.jsonl";
const SESSION: &str = "8b418ea5-895d-4ad5-abe8-4489d36e454f";
const NAME: &str = "-Users-alex-workspace-cli/linear-notes.jsonl";

type Row = (String, i64, i64, String);

/// Every row's session: messages (line, seq, kind), summaries and feedback, sorted.
async fn rows(store: &Store) -> Vec<Row> {
    let sql = "SELECT f.session_id, m.line_no, m.seq, m.kind FROM messages m \
               JOIN files f ON f.id = m.file_id \
               UNION ALL SELECT session_id, line_no, 0, 'summary:' || kind FROM summaries \
               UNION ALL SELECT session_id, line_no, 0, 'feedback:' || feedback_type FROM feedback \
               ORDER BY 2, 3, 4";
    match store {
        Store::Sqlite(p) => sqlx::query_as::<_, Row>(sql).fetch_all(p).await,
        Store::Postgres(p) => sqlx::query_as::<_, Row>(sql).fetch_all(p).await,
    }
    .expect("rows")
}

async fn sessions(store: &Store) -> Vec<String> {
    let sql = "SELECT session_id FROM sessions ORDER BY 1";
    match store {
        Store::Sqlite(p) => sqlx::query_scalar::<_, String>(sql).fetch_all(p).await,
        Store::Postgres(p) => sqlx::query_scalar::<_, String>(sql).fetch_all(p).await,
    }
    .expect("sessions")
}

/// The offset the store holds for `path` (0 before its first commit).
async fn stored_offset(store: &Store, path: &std::path::Path) -> u64 {
    file(store, path).await.map_or(0, |f| f.offset as u64)
}

fn kill(mut d: std::process::Child) {
    d.kill().expect("kill -9");
    d.wait().expect("reap");
}

async fn chunked_writes(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let bytes = std::fs::read(corpus_dir().join(SOURCE)).expect("corpus file");
    let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
    assert!(lines.len() > 100, "{} lines", lines.len());
    let target = env.path(NAME);
    std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");

    // 1. The first line and half of the second, with the daemon running: no line names the
    // session yet, so nothing may be committed under the file's name.
    let half = lines[1].len() / 2;
    append(&target, lines[0]);
    append(&target, &lines[1][..half]);
    let d = env.spawn_daemon(&[("GLEANER_BATCH__MAX_LINES", "7")]);
    // A negative check (nothing may be committed), made once the daemon has read both.
    env.wait_read((lines[0].len() + half) as u64, "the first lines read");
    let store = env.store().await;
    assert!(
        sessions(&store).await.is_empty(),
        "a session was decided before any line named it: {:?}",
        sessions(&store).await
    );
    kill(d);

    // 2. The rest of line 2 with the daemon down, then line 3 (the first `sessionId`) in two
    // pieces with a daemon killed in between; then the rest in chunks of a few lines, killing
    // the daemon after every other chunk.
    append(&target, &lines[1][half..]);
    let mut d = env.spawn_daemon(&[("GLEANER_BATCH__MAX_LINES", "7")]);
    let third = lines[2].len() / 3;
    append(&target, &lines[2][..third]);
    // Killed once it has read the piece (a fresh daemon reads from the stored checkpoint, here
    // the file's start: nothing was committed).
    let size = |p: &std::path::Path| std::fs::metadata(p).map_or(0, |m| m.len());
    env.wait_read(
        size(&target) - stored_offset(&store, &target).await,
        "the third line's first piece read",
    );
    kill(d);
    d = env.spawn_daemon(&[("GLEANER_BATCH__MAX_LINES", "7")]);
    let mut from = stored_offset(&store, &target).await;
    append(&target, &lines[2][third..]);
    for (i, chunk) in lines[3..].chunks(13).enumerate() {
        for l in chunk {
            append(&target, l);
        }
        if i % 2 == 1 {
            // Killed once it has read what was appended since it started, wherever its
            // batches and commits then stand.
            env.wait_read(size(&target) - from, "the chunks read");
            kill(d);
            from = stored_offset(&store, &target).await;
            d = env.spawn_daemon(&[("GLEANER_BATCH__MAX_LINES", "7")]);
        }
    }
    let (end, _) = expected_checkpoint(&std::fs::read(&target).expect("read"));
    wait_offset(&store, &target, end).await;
    let (status, _) = terminate(&mut d);
    assert!(status.success(), "daemon exit {status:?}");
    let live = rows(&store).await;
    let live_sessions = sessions(&store).await;
    store.close().await;

    // 3. A one-shot ingest of the finished file.
    let clean_env = TestEnv::new(backend).await;
    let clean_target = clean_env.path(NAME);
    std::fs::create_dir_all(clean_target.parent().expect("parent")).expect("mkdir");
    std::fs::copy(&target, &clean_target).expect("copy");
    clean_env.ingest_dir(&clean_env.projects);
    let clean_store = clean_env.store().await;
    let clean = rows(&clean_store).await;
    assert_eq!(sessions(&clean_store).await, vec![SESSION.to_string()]);
    assert_eq!(live_sessions, vec![SESSION.to_string()]);
    assert!(clean.len() > 100, "{} rows", clean.len());
    assert!(clean.iter().all(|r| r.0 == SESSION), "{:?}", &clean[..3]);
    assert_eq!(live.len(), clean.len());
    assert!(
        live == clean,
        "rows differ between the chunked and the one-shot run"
    );
    clean_store.close().await;
    clean_env.cleanup().await;
    env.cleanup().await;
}

both_backends!(
    session_identity_does_not_depend_on_how_bytes_arrive,
    chunked_writes
);

/// A non-UUID file that never names its session takes the file's name, by a one-shot ingest
/// at once and by the daemon once the file has been idle for the session timeout.
async fn never_named(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let target = env.path("-p/notes-only.jsonl");
    std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
    append(
        &target,
        b"{\"type\":\"summary\",\"summary\":\"Linear API access\",\"leafUuid\":\"f3f06261-248b-4e9d-947a-a75627a84214\"}\n",
    );
    let mut d = env.spawn_daemon(&[
        ("GLEANER_SESSIONS__IDLE_TIMEOUT_SECS", "1"),
        ("GLEANER_DAEMON__RESCAN_INTERVAL_SECS", "1"),
    ]);
    let store = env.store().await;
    wait_for(Duration::from_secs(15), "the stem session", || async {
        sessions(&store).await == vec!["notes-only".to_string()]
    })
    .await;
    let (status, _) = terminate(&mut d);
    assert!(status.success());
    store.close().await;
    env.cleanup().await;
}

both_backends!(
    a_file_that_never_names_its_session_takes_its_name,
    never_named
);

/// A line of session `S` at `ts`, in `cwd`, by Claude Code `version`; a sub-agent's when
/// `agent` is given.
fn fact_line(uuid: &str, ts: &str, cwd: &str, version: &str, agent: Option<&str>) -> String {
    let (side, agent) = match agent {
        Some(a) => ("true", format!(",\"agentId\":\"{a}\"")),
        None => ("false", String::new()),
    };
    format!(
        "{{\"parentUuid\":null,\"isSidechain\":{side}{agent},\"userType\":\"external\",\"cwd\":\"{cwd}\",\
         \"sessionId\":\"{FACTS_SID}\",\"version\":\"{version}\",\"type\":\"user\",\
         \"message\":{{\"role\":\"user\",\"content\":\"look at {cwd}\"}},\"uuid\":\"{uuid}\",\
         \"timestamp\":\"{ts}\"}}\n"
    )
}

const FACTS_SID: &str = "5e55a0f1-0000-4000-8000-00000000fac7";

/// The session's facts after ingesting the main file and its sub-agent's in `order`, one
/// ingest each.
async fn facts_after(backend: Backend, main_first: bool) -> (String, String, String) {
    let env = TestEnv::new(backend).await;
    let main = env.path(&format!("-home-u-p/{FACTS_SID}.jsonl"));
    let agent = env.path(&format!("-home-u-p/{FACTS_SID}/subagents/agent-a1.jsonl"));
    let main_line = fact_line(
        "00000000-0000-4000-8000-000000000001",
        "2026-01-01T10:00:00.000Z",
        "/home/u/p",
        "2.1.10",
        None,
    );
    let agent_line = fact_line(
        "00000000-0000-4000-8000-000000000002",
        "2026-01-01T10:05:00.000Z",
        "/home/u/p/sub",
        "2.1.12",
        Some("a1"),
    );
    let files = [(&main, main_line), (&agent, agent_line)];
    let order: Vec<usize> = if main_first { vec![0, 1] } else { vec![1, 0] };
    for i in order {
        let (path, line) = &files[i];
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        append(path, line.as_bytes());
        env.ingest();
    }
    let out = env
        .cmd()
        .args(["sessions", "--json"])
        .output()
        .expect("run");
    assert_ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let s = &v[0];
    let get = |k: &str| s[k].as_str().unwrap_or_default().to_string();
    let facts = (get("cwd"), get("project"), get("version"));
    env.cleanup().await;
    facts
}

/// A session's facts do not depend on which of its files is read first: its working directory
/// and project are those of its earliest line (the main transcript's, not a sub-agent's that
/// moved elsewhere), its version that of its latest.
async fn facts_in_any_order(backend: Backend) {
    let main_first = facts_after(backend, true).await;
    let agent_first = facts_after(backend, false).await;
    assert_eq!(main_first, agent_first);
    assert_eq!(
        main_first,
        ("/home/u/p".into(), "-home-u-p".into(), "2.1.12".into())
    );
}

both_backends!(
    session_facts_do_not_depend_on_the_order_files_are_read,
    facts_in_any_order
);
