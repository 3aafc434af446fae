//! `gleaner usage`: each API message counted once (streamed lines, sub-agent replays, copies),
//! error and synthetic lines left out, recorded costs used, unknown prices unknown, and the
//! figures unchanged by a re-read, `reextract`, deleted transcripts and `prune`; MCP's answer,
//! the daemon's `status`, a team's shares. The corpus against ccusage: `usage_ccusage`.

use std::path::Path;

use serde_json::{json, Value};

use crate::both_backends;
use crate::common::*;

const S1: &str = "11111111-1111-4111-8111-111111111111";
const S2: &str = "22222222-2222-4222-8222-222222222222";

fn usage(i: i64, o: i64, cc: i64, cr: i64) -> Value {
    json!({"input_tokens": i, "output_tokens": o, "cache_creation_input_tokens": cc,
           "cache_read_input_tokens": cr})
}

fn assistant(sid: &str, n: u32, id: &str, model: &str, ts: &str, u: Value) -> Value {
    json!({"type": "assistant", "sessionId": sid, "uuid": format!("a{n}-{sid}"),
           "requestId": format!("req_{id}"), "timestamp": ts, "cwd": "/home/u/alpha",
           "version": "2.1.0",
           "message": {"id": id, "role": "assistant", "model": model,
                       "content": [{"type": "text", "text": "ok"}], "usage": u}})
}

fn lines(v: &[Value]) -> String {
    v.iter().map(|l| format!("{l}\n")).collect()
}

/// Two sessions: S1 with a streamed reply (three lines), a long-context reply with one-hour
/// cache writes, a synthetic and an API-error line, and a sub-agent reply seen both through an
/// `agent_progress` line and in the sub-agent's own file; S2 the next day with a recorded
/// `costUSD` and a model without a price. S1 also has a copy in another folder.
pub(crate) fn write_fixture(projects: &Path) {
    let user = json!({"type": "user", "sessionId": S1, "uuid": "u1", "timestamp":
        "2026-03-02T10:00:00.000Z", "cwd": "/home/u/alpha",
        "message": {"role": "user", "content": "count my tokens"}});
    let mut long = usage(5, 50, 1000, 300_000);
    long["cache_creation"] =
        json!({"ephemeral_5m_input_tokens": 400, "ephemeral_1h_input_tokens": 600});
    let mut error = assistant(
        S1,
        6,
        "msg_err",
        "claude-sonnet-4-5",
        "2026-03-02T10:06:00.000Z",
        usage(7, 7, 0, 0),
    );
    error["isApiErrorMessage"] = json!(true);
    let agent_usage = usage(3, 30, 300, 3000);
    let progress = json!({"type": "progress", "sessionId": S1, "uuid": "p1",
        "timestamp": "2026-03-02T10:10:00.500Z", "cwd": "/home/u/alpha",
        "data": {"type": "agent_progress", "agentId": "abc", "message": {"type": "assistant",
            "timestamp": "2026-03-02T10:10:00.000Z", "requestId": "req_msg_c",
            "message": {"id": "msg_c", "model": "claude-haiku-4-5-20251001", "role": "assistant",
                        "content": [], "usage": agent_usage}}}});
    let s1 = lines(&[
        user,
        assistant(
            S1,
            2,
            "msg_a",
            "claude-sonnet-4-5-20250929",
            "2026-03-02T10:00:01.000Z",
            usage(10, 1, 100, 1000),
        ),
        assistant(
            S1,
            3,
            "msg_a",
            "claude-sonnet-4-5-20250929",
            "2026-03-02T10:00:02.000Z",
            usage(10, 5, 100, 1000),
        ),
        assistant(
            S1,
            4,
            "msg_a",
            "claude-sonnet-4-5-20250929",
            "2026-03-02T10:00:03.000Z",
            usage(10, 20, 100, 1000),
        ),
        assistant(
            S1,
            5,
            "msg_b",
            "claude-sonnet-4-5-20250929",
            "2026-03-02T10:05:00.000Z",
            long,
        ),
        assistant(
            S1,
            7,
            "msg_syn",
            "<synthetic>",
            "2026-03-02T10:06:30.000Z",
            usage(0, 0, 0, 0),
        ),
        error,
        progress,
    ]);
    let mut sub = assistant(
        S1,
        8,
        "msg_c",
        "claude-haiku-4-5-20251001",
        "2026-03-02T10:10:00.000Z",
        usage(3, 30, 300, 3000),
    );
    sub["isSidechain"] = json!(true);
    sub["agentId"] = json!("abc");
    let mut recorded = assistant(
        S2,
        9,
        "msg_d",
        "claude-opus-4-5-20251101",
        "2026-03-03T09:00:00.000Z",
        usage(100, 100, 0, 0),
    );
    recorded["costUSD"] = json!(0.5);
    recorded["cwd"] = json!("/home/u/beta");
    let mut mystery = assistant(
        S2,
        10,
        "msg_e",
        "gpt-mystery",
        "2026-03-03T09:30:00.000Z",
        usage(1000, 0, 0, 0),
    );
    mystery["cwd"] = json!("/home/u/beta");
    let write = |rel: &str, text: &str| write_file(projects, rel, text);
    write(&format!("-home-u-alpha/{S1}.jsonl"), &s1);
    write(
        &format!("-home-u-alpha/{S1}/subagents/agent-abc.jsonl"),
        &lines(&[sub]),
    );
    write(&format!("-home-u-alpha-copy/{S1}.jsonl"), &s1);
    write(
        &format!("-home-u-beta/{S2}.jsonl"),
        &lines(&[recorded, mystery]),
    );
}

pub(crate) fn report(env: &TestEnv, args: &[&str]) -> Value {
    let out = env
        .cmd()
        .env("TZ", "UTC")
        .arg("usage")
        .args(args)
        .arg("--json")
        .output()
        .expect("run usage");
    assert_ok(&out);
    serde_json::from_slice(&out.stdout).expect("usage JSON")
}

pub(crate) fn tokens(v: &Value) -> [i64; 4] {
    [
        "input_tokens",
        "output_tokens",
        "cache_creation_tokens",
        "cache_read_tokens",
    ]
    .map(|k| v[k].as_i64().unwrap_or_else(|| panic!("{k} in {v}")))
}

pub(crate) fn cost(v: &Value) -> Option<f64> {
    v["cost_usd"].as_f64()
}

/// S1's cost, priced by hand from src/usage/prices.toml: msg_a (sonnet 4.5) 10*3 + 20*15 +
/// 100*3.75 + 1000*0.3; msg_b 5*3 + 50*15 + 400*3.75 + 600*6 (one-hour writes at twice the
/// input rate) + 200,000*0.3 + 100,000*0.6 (past 200k); msg_c (haiku 4.5) 3*1 + 30*5 + 300*1.25
/// + 3000*0.1. USD per million tokens.
const S1_COST: f64 = (1005.0 + 125_865.0 + 828.0) / 1e6;

async fn usage_counts_once_and_outlives_transcripts(backend: Backend) {
    let env = TestEnv::new(backend).await;
    write_fixture(&env.projects);
    env.ingest();

    let days = report(&env, &["--by", "day"]);
    let rows = days["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2, "{days}");
    assert_eq!(rows[0]["key"], "2026-03-03", "newest first: {days}");
    assert_eq!(tokens(&rows[0]), [1100, 100, 0, 0]);
    assert_eq!(
        cost(&rows[0]),
        None,
        "a model without a price makes the cost unknown"
    );
    assert_eq!(rows[1]["key"], "2026-03-02");
    assert_eq!(tokens(&rows[1]), [18, 100, 1400, 304_000], "{days}");
    assert!(
        (cost(&rows[1]).expect("priced") - S1_COST).abs() < 1e-9,
        "{days}"
    );
    assert_eq!(
        rows[1]["messages"], 3,
        "streamed lines, replays and copies count once"
    );
    assert_eq!(tokens(&days["totals"]), [1118, 200, 1400, 304_000]);
    assert_eq!(cost(&days["totals"]), None);

    let models = report(&env, &["--by", "model"]);
    let by_model = |m: &str| {
        models["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .find(|r| r["key"] == m)
            .unwrap_or_else(|| panic!("{m} in {models}"))
            .clone()
    };
    assert_eq!(
        cost(&by_model("claude-opus-4-5-20251101")),
        Some(0.5),
        "costUSD is used"
    );
    assert_eq!(cost(&by_model("gpt-mystery")), None);
    assert_eq!(
        tokens(&by_model("claude-haiku-4-5-20251001")),
        [3, 30, 300, 3000]
    );
    assert!(
        models["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .all(|r| r["key"] != "<synthetic>"),
        "synthetic lines are left out: {models}"
    );

    let sessions = report(&env, &["--by", "session", "--breakdown"]);
    assert_eq!(sessions["rows"][0]["key"], S2, "{sessions}");
    assert_eq!(sessions["rows"][1]["key"], S1);
    assert_eq!(
        sessions["rows"][1]["breakdown"].as_array().map(Vec::len),
        Some(2)
    );
    let projects = report(&env, &["--by", "project"]);
    let keys: Vec<&str> = projects["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter_map(|r| r["key"].as_str())
        .collect();
    assert_eq!(keys.len(), 2, "{projects}");
    rollups_agree(&env);
    let alpha = report(&env, &["--by", "day", "--project", "alpha"]);
    assert_eq!(
        tokens(&alpha["totals"]),
        [18, 100, 1400, 304_000],
        "{alpha}"
    );
    let since = report(&env, &["--by", "day", "--since", "2026-03-03"]);
    assert_eq!(since["rows"].as_array().map(Vec::len), Some(1), "{since}");

    // MCP: the same arguments give the same JSON.
    let mut mcp = crate::mcp::Client::ready(&env);
    let by_mcp = mcp
        .call("get_usage", json!({"by": "model", "breakdown": true}))
        .expect("get_usage");
    assert_eq!(by_mcp, report(&env, &["--by", "model", "--breakdown"]));
    drop(mcp);
    // A model's row is not split again into itself.
    for r in by_mcp["rows"].as_array().expect("rows") {
        assert!(r["breakdown"].as_array().is_none_or(|b| b.len() > 1), "{r}");
    }

    // Nothing counts twice: a re-read, a re-extraction, the transcripts gone, a prune.
    let before = report(&env, &["--by", "session"]);
    env.ingest();
    assert_eq!(
        report(&env, &["--by", "session"]),
        before,
        "a re-read adds nothing"
    );
    let out = env
        .cmd()
        .args(["reextract", "--all", "--json"])
        .output()
        .expect("reextract");
    assert_ok(&out);
    env.ingest();
    assert_eq!(
        report(&env, &["--by", "session"]),
        before,
        "reextract adds nothing"
    );
    std::fs::remove_dir_all(&env.projects).expect("delete the transcripts");
    std::fs::create_dir_all(&env.projects).expect("mkdir");
    env.ingest();
    assert_eq!(
        report(&env, &["--by", "session"]),
        before,
        "kept when transcripts go"
    );
    let out = env
        .cmd()
        .args(["prune", "--before", "2030-01-01", "--yes", "--json"])
        .output()
        .expect("prune");
    assert_ok(&out);
    assert_eq!(
        report(&env, &["--by", "session"]),
        before,
        "kept after prune"
    );
    assert_eq!(
        report(&env, &["--by", "project"]),
        projects,
        "projects kept after prune"
    );
    rollups_agree(&env);

    // A bad flag is one line naming the value, exit 2.
    let out = env
        .cmd()
        .args(["usage", "--by", "fortnight"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("fortnight") && err.contains("--by"), "{err}");
    env.cleanup().await;
}
both_backends!(
    usage_counts_once,
    usage_counts_once_and_outlives_transcripts
);

/// The per-key rollups ingest keeps (`usage_groups`, read when nothing narrows a report) give
/// the rows the hourly aggregate gives (read when a date does).
fn rollups_agree(env: &TestEnv) {
    for by in ["session", "project", "machine", "user"] {
        let whole = report(env, &["--by", by, "--breakdown"]);
        let dated = report(env, &["--by", by, "--breakdown", "--since", "2000-01-01"]);
        assert!(
            !whole["rows"].as_array().expect("rows").is_empty(),
            "{by}: {whole}"
        );
        assert_eq!(whole["rows"], dated["rows"], "--by {by}");
        assert_eq!(whole["totals"], dated["totals"], "--by {by}");
    }
}

/// `gleaner status` shows today's tokens and cost, read from the aggregate while the daemon
/// runs.
async fn status_shows_today(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let now = chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string();
    let line = assistant(
        S1,
        1,
        "msg_today",
        "claude-haiku-4-5-20251001",
        &now,
        usage(1000, 2000, 0, 0),
    );
    let path = env.projects.join(format!("-home-u-alpha/{S1}.jsonl"));
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(&path, lines(&[line])).expect("write");
    let mut daemon = env.spawn_daemon(&[("TZ", "UTC")]);
    let mut last = Value::Null;
    poll_until(
        std::time::Duration::from_secs(30),
        "today's usage in status",
        || {
            last = env.status();
            last["today"]["messages"] == 1
        },
    );
    let today = &last["today"];
    assert_eq!(today["tokens"], json!([1000, 2000, 0, 0]), "{last}");
    // Haiku 4.5: 1000 * 1 + 2000 * 5 USD per million.
    let cost = today["cost_usd"].as_f64().expect("priced");
    assert!((cost - 0.011).abs() < 1e-9, "{last}");
    assert_eq!(
        today["date"],
        chrono::Utc::now().format("%Y-%m-%d").to_string()
    );
    let out = env.cmd().arg("status").output().expect("status");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("today     3000 tokens"), "{text}");
    terminate(&mut daemon);
    env.cleanup().await;
}
both_backends!(status_today, status_shows_today);

/// A team's store: each machine's share (`--by machine`, `--by user`, `--user`); a session
/// held by two machines counts once, for the machine that wrote it first.
async fn each_members_share(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let (pa, pb) = (env.dir.path().join("ana"), env.dir.path().join("bo"));
    // Ana's laptop holds S1; Bo's desk holds S2 and a copy of S1.
    write_fixture(&pa);
    std::fs::remove_dir_all(pa.join("-home-u-beta")).expect("rm");
    write_fixture(&pb);
    for (projects, machine, user) in [(&pa, "laptop", "ana"), (&pb, "desk", "bo")] {
        let out = env
            .cmd_as(projects, machine, user)
            .args(["ingest", "--json"])
            .output()
            .expect("ingest");
        assert_ok(&out);
    }
    let share = |args: &[&str]| -> Vec<(String, [i64; 4])> {
        report(&env, args)["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| (r["key"].as_str().unwrap_or("").to_string(), tokens(r)))
            .collect()
    };
    let s1 = [18, 100, 1400, 304_000];
    let s2 = [1100, 100, 0, 0];
    assert_eq!(
        share(&["--by", "machine"]),
        [("desk".to_string(), s2), ("laptop".to_string(), s1)]
    );
    assert_eq!(
        share(&["--by", "user"]),
        [("bo".to_string(), s2), ("ana".to_string(), s1)]
    );
    let bo = report(&env, &["--by", "day", "--user", "bo"]);
    assert_eq!(tokens(&bo["totals"]), s2, "{bo}");
    let laptop = report(&env, &["--by", "day", "--machine", "laptop"]);
    assert_eq!(tokens(&laptop["totals"]), s1, "{laptop}");
    rollups_agree(&env);
    env.cleanup().await;
}
both_backends!(members_share, each_members_share);

/// A session counts under the project of its earliest file: when an earlier-started file of a
/// session arrives after its usage was counted under another project, the per-project rollup
/// moves the session's sums there and the emptied project leaves the report.
async fn usage_follows_a_session_that_moves(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let late = assistant(
        S1,
        2,
        "msg_late",
        "claude-sonnet-4-5-20250929",
        "2026-03-02T12:00:00.000Z",
        usage(10, 20, 30, 40),
    );
    let early = assistant(
        S1,
        1,
        "msg_early",
        "claude-sonnet-4-5-20250929",
        "2026-03-02T09:00:00.000Z",
        usage(1, 2, 3, 4),
    );
    let write = |rel: &str, text: &str| write_file(&env.projects, rel, text);
    write(
        &format!("-home-u-later/{S1}.jsonl"),
        &lines(std::slice::from_ref(&late)),
    );
    env.ingest();
    let keys = |v: &Value| -> Vec<String> {
        v["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| r["key"].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(keys(&report(&env, &["--by", "project"])), ["-home-u-later"]);
    write(
        &format!("-home-u-earlier/{S1}.jsonl"),
        &lines(&[early, late]),
    );
    env.ingest();
    let projects = report(&env, &["--by", "project"]);
    assert_eq!(keys(&projects), ["-home-u-earlier"], "{projects}");
    assert_eq!(tokens(&projects["rows"][0]), [11, 22, 33, 44], "{projects}");
    assert_eq!(tokens(&projects["totals"]), [11, 22, 33, 44]);
    rollups_agree(&env);
    env.cleanup().await;
}
both_backends!(usage_moves, usage_follows_a_session_that_moves);

/// A message counted in one session moves to another when a line that wins arrives there (a
/// main-chain line over a sub-agent's replay): each project's rollup loses or gains it, and
/// nothing is filed under an empty key.
async fn usage_follows_a_message_that_moves(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let own = assistant(
        S1,
        1,
        "msg_own",
        "claude-sonnet-4-5-20250929",
        "2026-03-02T09:00:00.000Z",
        usage(1, 2, 3, 4),
    );
    let mut replay = assistant(
        S1,
        2,
        "msg_shared",
        "claude-sonnet-4-5-20250929",
        "2026-03-02T09:30:00.000Z",
        usage(10, 20, 30, 40),
    );
    replay["isSidechain"] = json!(true);
    let mut main = assistant(
        S2,
        3,
        "msg_shared",
        "claude-sonnet-4-5-20250929",
        "2026-03-02T11:30:00.000Z",
        usage(10, 20, 30, 40),
    );
    main["cwd"] = json!("/home/u/second");
    let write = |rel: &str, text: &str| write_file(&env.projects, rel, text);
    write(&format!("-home-u-first/{S1}.jsonl"), &lines(&[own, replay]));
    env.ingest();
    let first = report(&env, &["--by", "project"]);
    assert_eq!(tokens(&first["rows"][0]), [11, 22, 33, 44], "{first}");
    write(&format!("-home-u-second/{S2}.jsonl"), &lines(&[main]));
    env.ingest();
    let projects = report(&env, &["--by", "project"]);
    let rows: Vec<(String, [i64; 4])> = projects["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| (r["key"].as_str().unwrap_or("").to_string(), tokens(r)))
        .collect();
    assert_eq!(
        rows,
        [
            ("-home-u-second".to_string(), [10, 20, 30, 40]),
            ("-home-u-first".to_string(), [1, 2, 3, 4])
        ],
        "{projects}"
    );
    assert_eq!(tokens(&projects["totals"]), [11, 22, 33, 44]);
    rollups_agree(&env);
    env.cleanup().await;
}
both_backends!(message_moves, usage_follows_a_message_that_moves);
