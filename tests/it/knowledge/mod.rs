//! Summaries, user feedback, tool calls, token usage and the session lifecycle, on both
//! backends. Corpus counts are checked against an independent oracle written over
//! `serde_json::Value` (not the crate's parser).

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use gleaner::store::{FeedbackFilter, SessionFilter, Store, SummaryFilter, SummaryKind};
use serde_json::Value;

use crate::both_backends;
use crate::common::*;

mod lifecycle;

/// What the oracle expects from the corpus.
#[derive(Debug, Default)]
struct Expected {
    summaries: HashSet<(String, String)>,
    boundaries: HashSet<String>,
    compact_summaries: HashSet<String>,
    denials: HashSet<(String, String)>,
    interruptions: HashSet<(String, usize)>,
    tool_calls: HashSet<String>,
    tool_errors: HashSet<String>,
    /// Per API message id: the line that counts (sidechain, total, output), chosen as
    /// `gleaner usage` and ccusage choose it.
    output_tokens: HashMap<String, (bool, i64, i64)>,
}

/// A line's usage candidate: (message id, sidechain, total tokens, output tokens). An
/// assistant line's reply (not an API error, not `<synthetic>`), or the sub-agent reply an
/// `agent_progress` line carries (with the carrying line's sidechain flag).
fn usage_candidate(v: &Value) -> Option<(String, bool, i64, i64)> {
    let side = v
        .get("isSidechain")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let msg = match v.get("type").and_then(Value::as_str) {
        Some("assistant") => {
            let m = v.get("message")?;
            let model = m.get("model").and_then(Value::as_str);
            if v.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true)
                || model == Some("<synthetic>")
            {
                return None;
            }
            m
        }
        Some("progress") => v.get("data")?.get("message")?.get("message")?,
        _ => return None,
    };
    let id = msg.get("id")?.as_str()?;
    let u = msg.get("usage")?;
    let n = |k: &str| u.get(k).and_then(Value::as_i64).unwrap_or(0);
    let total = n("input_tokens")
        + n("output_tokens")
        + n("cache_creation_input_tokens")
        + n("cache_read_input_tokens");
    Some((id.to_string(), side, total, n("output_tokens")))
}

fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => Some(
            items
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        _ => None,
    }
}

fn is_denial(text: &str) -> bool {
    let mut t = text.trim_start();
    loop {
        if let Some(r) = t.strip_prefix("Error: ") {
            t = r.trim_start();
        } else if let Some(r) = t.strip_prefix("<tool_use_error>") {
            t = r.trim_start();
        } else {
            break;
        }
    }
    t.starts_with("The user doesn't want to proceed with this tool use")
        || text.contains("[Request interrupted by user for tool use]")
}

fn oracle(corpus: &std::path::Path) -> Expected {
    let mut e = Expected::default();
    for p in gleaner::tail::discovery::scan(corpus) {
        let bytes = std::fs::read(&p).expect("read");
        let (end, _) = finished_checkpoint(&bytes);
        for (n, line) in bytes[..end as usize].split(|&b| b == b'\n').enumerate() {
            for v in serde_json::Deserializer::from_slice(line).into_iter::<Value>() {
                let Ok(v) = v else { break };
                let uuid = v
                    .get("uuid")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let uuid = if uuid.is_empty() {
                    format!("{}:{n}", p.display())
                } else {
                    uuid
                };
                if let Some((id, side, total, out)) = usage_candidate(&v) {
                    let cur = e.output_tokens.entry(id).or_insert((side, total, out));
                    let wins = if cur.0 != side { cur.0 } else { total > cur.1 };
                    if wins {
                        *cur = (side, total, out);
                    }
                }
                let flag = |k: &str| v.get(k).and_then(Value::as_bool).unwrap_or(false);
                let content = v.get("message").and_then(|m| m.get("content"));
                match v.get("type").and_then(Value::as_str) {
                    Some("summary") => {
                        let leaf = v.get("leafUuid").and_then(Value::as_str).unwrap_or("");
                        let text = v.get("summary").and_then(Value::as_str).unwrap_or("");
                        e.summaries.insert((leaf.into(), text.into()));
                    }
                    Some("system")
                        if v.get("subtype").and_then(Value::as_str) == Some("compact_boundary") =>
                    {
                        e.boundaries.insert(uuid.clone());
                    }
                    Some("user") => {
                        if flag("isCompactSummary") {
                            e.compact_summaries.insert(uuid.clone());
                        }
                        let injected = flag("isMeta")
                            || flag("isCompactSummary")
                            || v.get("sourceToolUseID").is_some();
                        let blocks: Vec<Value> = match content {
                            Some(Value::Array(a)) => a.clone(),
                            Some(s @ Value::String(_)) => {
                                vec![serde_json::json!({"type": "text", "text": s})]
                            }
                            _ => vec![],
                        };
                        for (i, b) in blocks.iter().enumerate() {
                            let kind = b.get("type").and_then(Value::as_str);
                            if kind == Some("tool_result")
                                && b.get("is_error").and_then(Value::as_bool) == Some(true)
                            {
                                let id = b.get("tool_use_id").and_then(Value::as_str).unwrap_or("");
                                e.tool_errors.insert(id.to_string());
                                let text = b.get("content").and_then(text_of).unwrap_or_default();
                                if !injected && is_denial(&text) {
                                    e.denials.insert((uuid.clone(), id.to_string()));
                                }
                            }
                            if kind == Some("text") && !injected {
                                let t = b.get("text").and_then(Value::as_str).unwrap_or("");
                                if t.trim_start().starts_with("[Request interrupted") {
                                    e.interruptions.insert((uuid.clone(), i));
                                }
                            }
                        }
                    }
                    Some("assistant") => {
                        // The compaction summariser's reply is a compaction summary (2.1.39+).
                        let compactor = p
                            .file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with("agent-acompact"));
                        let said = match content {
                            Some(Value::Array(a)) => a
                                .iter()
                                .filter(|b| b["type"] == "text")
                                .filter_map(|b| b["text"].as_str())
                                .any(|t| !t.trim().is_empty()),
                            _ => false,
                        };
                        if compactor && said {
                            e.compact_summaries.insert(uuid.clone());
                        }
                        if let Some(Value::Array(a)) = content {
                            for b in a {
                                if b.get("type").and_then(Value::as_str) == Some("tool_use") {
                                    if let Some(id) = b.get("id").and_then(Value::as_str) {
                                        e.tool_calls.insert(id.to_string());
                                    }
                                }
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    e
}

async fn scalar(store: &Store, sql: &str) -> i64 {
    match store {
        Store::Sqlite(p) => sqlx::query_scalar::<_, i64>(sql).fetch_one(p).await,
        Store::Postgres(p) => sqlx::query_scalar::<_, i64>(sql).fetch_one(p).await,
    }
    .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

async fn corpus_knowledge(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let corpus = corpus_dir().canonicalize().expect("corpus");
    // The corpus may have been checked out seconds ago: idle after 1 s, not 10 min, and
    // waiting (only) until its newest file is older than that.
    let idle = [("GLEANER_SESSIONS__IDLE_TIMEOUT_SECS", "1")];
    let newest = walk_mtimes(&corpus);
    poll_until(Duration::from_secs(5), "the corpus idle for 1.1 s", || {
        newest
            .elapsed()
            .is_ok_and(|age| age >= Duration::from_millis(1100))
    });
    env.ingest_dir_env(&corpus, &idle);
    let store = env.store().await;
    let e = oracle(&corpus);
    let count = |sql: &'static str| {
        let store = &store;
        async move { scalar(store, sql).await }
    };

    assert_eq!(
        count("SELECT COUNT(*) FROM summaries WHERE kind = 'summary'").await as usize,
        e.summaries.len()
    );
    assert_eq!(
        count("SELECT COUNT(*) FROM summaries WHERE kind = 'compact_boundary'").await as usize,
        e.boundaries.len()
    );
    assert_eq!(
        count("SELECT COUNT(*) FROM summaries WHERE kind = 'compact_summary'").await as usize,
        e.compact_summaries.len()
    );
    assert!(e.boundaries.len() >= 3 && e.summaries.len() > 50);
    assert_eq!(
        count(
            "SELECT COUNT(*) FROM summaries WHERE kind = 'compact_boundary' \
               AND pre_tokens > 0 AND compact_trigger IS NOT NULL"
        )
        .await as usize,
        e.boundaries.len()
    );
    assert_eq!(
        count("SELECT COUNT(*) FROM feedback WHERE feedback_type = 'tool_denial'").await as usize,
        e.denials.len()
    );
    assert_eq!(
        count("SELECT COUNT(*) FROM feedback WHERE feedback_type = 'interruption'").await as usize,
        e.interruptions.len()
    );
    assert!(e.denials.len() > 20 && e.interruptions.len() > 20);
    assert_eq!(
        count("SELECT COUNT(*) FROM tool_uses WHERE name IS NOT NULL").await as usize,
        e.tool_calls.len()
    );
    let errors_with_calls = e.tool_errors.intersection(&e.tool_calls).count();
    assert!(
        count("SELECT COUNT(*) FROM tool_uses WHERE is_error").await as usize >= errors_with_calls
    );
    assert_eq!(
        count("SELECT CAST(SUM(output_tokens) AS BIGINT) FROM usage_messages").await,
        e.output_tokens.values().map(|(_, _, out)| out).sum::<i64>()
    );

    // Human messages: never trivial, never plumbing, never from a sub-agent.
    let all = store
        .list_feedback(&FeedbackFilter::default())
        .await
        .expect("feedback");
    let messages: Vec<_> = all
        .iter()
        .filter(|f| f.feedback_type == "message")
        .collect();
    assert!(messages.len() > 300, "{} messages", messages.len());
    for m in &messages {
        assert!(
            !gleaner::extract::feedback::is_trivial(&m.content),
            "{:?}",
            m.content
        );
        assert!(
            !gleaner::extract::prompt::is_plumbing(&m.content),
            "{:?}",
            m.content
        );
        assert!(m.agent_id.is_none(), "{m:?}");
        assert!(!m.source_file.contains("/subagents/"), "{m:?}");
    }
    // Sub-agent items belong to the parent session and name their agent.
    let files = files(&store).await;
    let by_path: HashMap<&str, _> = files.iter().map(|f| (f.path.as_str(), f)).collect();
    let mut agent_items = 0;
    for f in &all {
        let file = by_path[f.source_file.as_str()];
        assert_eq!(file.session_id.as_deref(), Some(f.session_id.as_str()));
        if file.agent_id.is_some() {
            agent_items += 1;
            assert_eq!(f.agent_id, file.agent_id, "{f:?}");
        }
    }
    assert!(
        agent_items > 0,
        "the corpus has feedback inside sub-agent files"
    );

    // Session aggregates agree with the rows they summarise.
    let sessions = store
        .list_sessions(&SessionFilter::default())
        .await
        .expect("sessions");
    let mut per_session: HashMap<&str, (i64, i64, i64)> = HashMap::new();
    for f in &all {
        let c = per_session.entry(f.session_id.as_str()).or_default();
        match f.feedback_type.as_str() {
            "message" => c.0 += 1,
            "tool_denial" => c.1 += 1,
            _ => c.2 += 1,
        }
    }
    for s in &sessions {
        let c = per_session
            .get(s.session_id.as_str())
            .copied()
            .unwrap_or_default();
        let got = (
            s.feedback.message,
            s.feedback.tool_denial,
            s.feedback.interruption,
        );
        assert_eq!(got, c, "{}", s.session_id);
        assert_eq!(
            s.status, "finished",
            "old transcripts are idle: {}",
            s.session_id
        );
        assert_eq!(s.end_reason.as_deref(), Some("idle"));
    }
    let with_agents = sessions.iter().filter(|s| s.subagent_count > 0).count();
    assert!(with_agents > 5);
    assert!(sessions
        .iter()
        .flat_map(|s| &s.subagents)
        .any(|a| a.agent_type.as_deref() == Some("Explore")));
    let summaries = store
        .list_summaries(&SummaryFilter::default())
        .await
        .expect("summaries");
    // Each summary belongs to a session holding its leaf message when the corpus has it.
    let mut holders: HashMap<String, HashSet<String>> = HashMap::new();
    for f in &files {
        let bytes = std::fs::read(&f.path).expect("read");
        for line in bytes.split(|&b| b == b'\n') {
            if let Ok(v) = serde_json::from_slice::<Value>(line) {
                if let (Some(u), Some(sid)) = (v.get("uuid").and_then(Value::as_str), &f.session_id)
                {
                    holders
                        .entry(u.to_string())
                        .or_default()
                        .insert(sid.clone());
                }
            }
        }
    }
    let mut resolved = 0;
    for s in summaries.iter().filter(|s| s.kind == "summary") {
        let file_session = by_path[s.source_file.as_str()].session_id.clone();
        match s.leaf_uuid.as_ref().and_then(|l| holders.get(l)) {
            Some(h) => {
                resolved += 1;
                assert!(h.contains(&s.session_id), "{s:?} not in {h:?}");
            }
            None => assert_eq!(Some(s.session_id.clone()), file_session, "{s:?}"),
        }
    }
    assert!(
        resolved > 40,
        "{resolved} summaries resolved through their leaf"
    );
    let total: i64 = sessions
        .iter()
        .map(|s| s.summaries.summary + s.summaries.compact_boundary + s.summaries.compact_summary)
        .sum();
    assert_eq!(total as usize, summaries.len());

    // Re-ingest adds nothing.
    let before = counts(&store).await;
    env.ingest_dir_env(&corpus, &idle);
    assert_eq!(counts(&store).await, before);
    store.close().await;
    env.cleanup().await;
}

both_backends!(
    corpus_summaries_feedback_and_sessions_match_an_oracle,
    corpus_knowledge
);

const A: &str = "eeeeeeee-0000-4000-8000-00000000000a";
const B: &str = "eeeeeeee-0000-4000-8000-00000000000b";

async fn resumed_copies(backend: Backend) {
    let env = TestEnv::new(backend).await;
    // Session B resumes A: its file starts with A's lines, uuids and sessionId unchanged.
    let first = user_line(
        A,
        "11111111-1111-4111-8111-111111111111",
        "fix the flaky login test",
    );
    let second = user_line(
        A,
        "22222222-2222-4222-8222-222222222222",
        "[Request interrupted by user]",
    );
    append(
        &env.path(&format!("p/{A}.jsonl")),
        format!("{first}{second}").as_bytes(),
    );
    let later = user_line(
        B,
        "33333333-3333-4333-8333-333333333333",
        "now update the docs too",
    );
    append(
        &env.path(&format!("p/{B}.jsonl")),
        format!("{first}{second}{later}").as_bytes(),
    );
    let summary = format!(
        "{{\"type\":\"summary\",\"summary\":\"Login test fix\",\"leafUuid\":\"{}\"}}\n",
        "22222222-2222-4222-8222-222222222222"
    );
    append(&env.path(&format!("p/{B}.jsonl")), summary.as_bytes());
    append(&env.path(&format!("p/{A}.jsonl")), summary.as_bytes());
    env.ingest();
    let store = env.store().await;
    let fb = store
        .list_feedback(&FeedbackFilter::default())
        .await
        .expect("feedback");
    let msgs: Vec<&str> = fb
        .iter()
        .filter(|f| f.feedback_type == "message")
        .map(|f| f.content.as_str())
        .collect();
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    assert_eq!(
        fb.iter()
            .filter(|f| f.feedback_type == "interruption")
            .count(),
        1
    );
    let sums = store
        .list_summaries(&SummaryFilter {
            kind: Some(SummaryKind::Summary),
            ..SummaryFilter::default()
        })
        .await
        .expect("summaries");
    assert_eq!(sums.len(), 1, "one row per (leaf, text)");
    // The leaf message lives in A's file (and in B's copy); A's file is read first.
    assert_eq!(sums[0].session_id, A);
    env.cleanup().await;
}

both_backends!(resumed_session_copies_count_once, resumed_copies);

async fn prefix_errors(backend: Backend) {
    let env = TestEnv::new(backend).await;
    append(
        &env.path(&format!("p/{A}.jsonl")),
        user_line(A, "a1", "alpha").as_bytes(),
    );
    append(
        &env.path(&format!("p/{B}.jsonl")),
        user_line(B, "b1", "beta").as_bytes(),
    );
    env.ingest();
    let out = env.cmd().args(["feedback", "zzzz"]).output().expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("No session found with prefix zzzz"));
    let out = env
        .cmd()
        .args(["summaries", "eeeeeeee"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Multiple sessions match prefix eeeeeeee"),
        "{err}"
    );
    assert!(err.contains(A) && err.contains(B), "{err}");
    // A prefix is a prefix, not a pattern; any case.
    for p in ["eeee%", "eeee_eee", "eeeeeeee-0000-4000-8000-00000000000a0"] {
        let out = env.cmd().args(["feedback", p]).output().expect("run");
        assert_eq!(out.status.code(), Some(1), "{p}");
    }
    let out = env
        .cmd()
        .args(["feedback", "EEEEEEEE-0000-4000-8000-00000000000A", "--json"])
        .output()
        .expect("run");
    assert_ok(&out);
    let out = env
        .cmd()
        .args(["feedback", "eeeeeeee-0000-4000-8000-00000000000a", "--json"])
        .output()
        .expect("run");
    assert_ok(&out);
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v.as_array().map(Vec::len), Some(1));
    for k in [
        "timestamp",
        "session_id",
        "feedback_type",
        "content",
        "reason",
        "agent_id",
        "slug",
        "tool_use_id",
        "uuid",
        "source_file",
        "line",
    ] {
        assert!(v[0].get(k).is_some(), "feedback lacks {k}: {v}");
    }
    // Files written just now: active under the 10-minute idle rule.
    let out = env
        .cmd()
        .args([
            "sessions",
            "--status",
            "active",
            "--project",
            "p",
            "--since",
            "2020-01-01",
        ])
        .output()
        .expect("run");
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    // A header and the two active sessions.
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("eeeeeeee ") && l.ends_with(" alpha")),
        "{text}"
    );
    let out = env
        .cmd()
        .args(["sessions", "--status", "finished", "--json"])
        .output()
        .expect("run");
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v.as_array().map(Vec::len), Some(0));
    let out = env
        .cmd()
        .args(["sessions", "--since", "2030-01-01"])
        .output()
        .expect("run");
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 0);
    let out = env
        .cmd()
        .args(["sessions", "--project", "nope"])
        .output()
        .expect("run");
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 0);
    env.cleanup().await;
}

both_backends!(session_prefix_errors_and_filters, prefix_errors);

async fn leaf_orders(backend: Backend) {
    const X: &str = "ffffffff-0000-4000-8000-0000000000a1";
    const Y: &str = "ffffffff-0000-4000-8000-0000000000b2";
    let leaf = "44444444-4444-4444-8444-444444444444";
    let summary =
        |t: &str| format!("{{\"type\":\"summary\",\"summary\":\"{t}\",\"leafUuid\":\"{leaf}\"}}\n");
    for leaf_first in [true, false] {
        let env = TestEnv::new(backend).await;
        let x = env.path(&format!("proj/{X}.jsonl"));
        let y = env.path(&format!("proj/{Y}.jsonl"));
        let first_write = |first: bool| {
            if first == leaf_first {
                append(&y, user_line(Y, leaf, "the leaf message").as_bytes());
            } else {
                append(&x, summary("Titled by leaf").as_bytes());
                append(&x, user_line(X, "x1", "a later session").as_bytes());
            }
        };
        // Two separate processes, so the second one starts with the first one's state.
        first_write(true);
        env.ingest();
        first_write(false);
        env.ingest();
        let store = env.store().await;
        let sums = store
            .list_summaries(&SummaryFilter {
                kind: Some(SummaryKind::Summary),
                ..SummaryFilter::default()
            })
            .await
            .expect("summaries");
        assert_eq!(sums.len(), 1);
        assert_eq!(sums[0].session_id, Y, "leaf first: {leaf_first}");
        assert!(sums[0].source_file.ends_with(&format!("{X}.jsonl")));
        store.close().await;
        env.cleanup().await;
    }
}

both_backends!(summary_leaf_resolution_in_either_order, leaf_orders);

/// The newest modification time of the files below `dir`.
fn walk_mtimes(dir: &std::path::Path) -> std::time::SystemTime {
    let mut newest = std::time::UNIX_EPOCH;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(m) = e.metadata().and_then(|m| m.modified()) {
                newest = newest.max(m);
            }
        }
    }
    newest
}
