//! `gleaner mcp` driven over the real binary's stdin/stdout with protocol version 2025-06-18:
//! initialize, tools/list, every tool with valid and with invalid input, and the server still
//! answering afterwards; stdout carries nothing but JSON-RPC.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

use serde_json::{json, Value};

use crate::both_backends;
use crate::common::*;

pub(crate) struct Client {
    pub(crate) child: Child,
    pub(crate) stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: i64,
}

impl Client {
    pub(crate) fn start(env: &TestEnv) -> Client {
        Client::start_cmd(env.cmd())
    }

    /// `gleaner mcp` run by `cmd`, initialized.
    pub(crate) fn ready_cmd(cmd: std::process::Command) -> Client {
        let mut c = Client::start_cmd(cmd);
        c.initialize();
        c
    }

    fn start_cmd(mut cmd: std::process::Command) -> Client {
        let mut child = cmd
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn mcp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Client {
            child,
            stdin,
            stdout,
            next_id: 1,
        }
    }

    /// Started and initialized (protocol 2025-06-18), ready for tool calls.
    pub(crate) fn ready(env: &TestEnv) -> Client {
        let mut c = Client::start(env);
        c.initialize();
        c
    }

    fn initialize(&mut self) {
        self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "gleaner-test", "version": "1"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    pub(crate) fn send(&mut self, v: &Value) {
        writeln!(self.stdin, "{v}").expect("write request");
        self.stdin.flush().expect("flush");
    }

    /// Send a request and return its response (every line read must be JSON-RPC).
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).expect("read response");
            assert!(
                n > 0,
                "server closed stdout while {method} {id} was pending"
            );
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
            assert_eq!(v["jsonrpc"], "2.0", "{v}");
            if v["id"] == id {
                return v;
            }
        }
    }

    /// Call a tool: `Ok(structured result)` or `Err(error text)` (an error result or a
    /// JSON-RPC error).
    pub(crate) fn call(&mut self, name: &str, args: Value) -> Result<Value, String> {
        let r = self.request("tools/call", json!({"name": name, "arguments": args}));
        if let Some(e) = r.get("error") {
            return Err(e["message"].as_str().unwrap_or_default().to_string());
        }
        let res = &r["result"];
        let text = res["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if res["isError"] == true {
            return Err(text);
        }
        Ok(serde_json::from_str(&text).expect("tool result JSON"))
    }
}

const TOOLS: [&str; 13] = [
    "search",
    "list_sessions",
    "list_projects",
    "get_session",
    "get_summaries",
    "query_feedback",
    "query_snippets",
    "extract_snippet",
    "get_transcript_lines",
    "get_conversation",
    "list_episodes",
    "export_learnings",
    "get_usage",
];

async fn mcp_session(backend: Backend) {
    let env = TestEnv::new(backend).await;
    // The corpus, plus one transcript of our own that is then deleted.
    let corpus = corpus_dir().canonicalize().expect("corpus");
    env.ingest_dir(&corpus);
    let gone_sid = "6c0ffee0-1111-4222-8333-944455556666";
    let gone = env.path(&format!("-home-u-gone/{gone_sid}.jsonl"));
    std::fs::create_dir_all(gone.parent().expect("dir")).expect("dir");
    std::fs::write(
        &gone,
        user_line(gone_sid, "g1", "a transcript that will be deleted"),
    )
    .expect("write");
    env.ingest();
    std::fs::remove_file(&gone).expect("delete");

    let mut c = Client::start(&env);
    let init = c.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "gleaner-test", "version": "1"}}),
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    assert_eq!(init["result"]["serverInfo"]["name"], "gleaner");
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );
    c.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    let list = c.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    for t in TOOLS {
        assert!(names.contains(&t), "{t} missing from {names:?}");
    }
    for t in tools {
        assert!(
            t["description"].as_str().is_some_and(|d| d.len() > 60),
            "{t}"
        );
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
    }

    // Valid calls.
    let s = c
        .call("search", json!({"query": "migration", "limit": 3}))
        .expect("search");
    assert_eq!(s["results"].as_array().map(Vec::len), Some(3));
    assert_eq!(s["has_more"], true);
    assert_eq!(s["next_offset"], 3);
    let sessions = c
        .call("list_sessions", json!({"limit": 5}))
        .expect("list_sessions");
    c.call("list_sessions", json!({"limit": 300}))
        .expect("list_sessions takes what `gleaner sessions --limit` takes");
    assert_eq!(sessions["sessions"].as_array().map(Vec::len), Some(5));
    let sid = "3dae6bc4-bf52-4a30-a961-09999364d8c6"; // a corpus session with feedback
    let overview = c
        .call("get_session", json!({"session_id": &sid[..8]}))
        .expect("get_session");
    assert_eq!(overview["session"]["session_id"], sid);
    assert!(overview["episodes"].is_array() && overview["summaries"].is_array());
    // `gleaner show --json` is the same view; the human form shows its parts.
    let out = env
        .cmd()
        .args(["show", &sid[..8], "--json"])
        .output()
        .expect("show");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown: Value = serde_json::from_slice(&out.stdout).expect("show json");
    if overview.get("truncated").is_none() {
        assert_eq!(shown, overview);
    } else {
        assert_eq!(shown["session"], overview["session"]);
    }
    let out = env
        .cmd()
        .env("COLUMNS", "100")
        .args(["show", &sid[..8]])
        .output()
        .expect("show");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with(&format!("Session   {sid}\n")), "{text}");
    for part in ["\nWhen      ", "\nFeedback  ", "\nEpisodes ("] {
        assert!(text.contains(part), "{part}: {text}");
    }
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    let sums = c
        .call(
            "get_summaries",
            json!({"kind": "compact_summary", "limit": 2}),
        )
        .expect("get_summaries");
    assert!(sums["summaries"]
        .as_array()
        .is_some_and(|a| a.iter().all(|x| x["kind"] == "compact_summary")));
    let fb = c
        .call(
            "query_feedback",
            json!({"session_id": sid, "feedback_type": "message"}),
        )
        .expect("query_feedback");
    assert!(
        fb["feedback"].as_array().is_some_and(|a| !a.is_empty()),
        "{fb}"
    );
    let sn = c
        .call("query_snippets", json!({"limit": 2}))
        .expect("query_snippets");
    assert_eq!(sn["success"], true);
    let first = &sn["snippets"][0];
    assert!(first["source_line_start"].is_number() && first["source_line_end"].is_number());
    let content = "When the migration lock is held by a crashed process the advisory lock \
                   is released by the OS, so a retry after the crash always proceeds safely.";
    let added = c
        .call(
            "extract_snippet",
            json!({"session_id": sid, "snippet_type": "learning_pattern",
                   "title": "Advisory locks die with their process", "content": content,
                   "tags": ["topic:locks"], "metadata": {"source": "test"}}),
        )
        .expect("extract_snippet");
    assert_eq!(added["success"], true);
    assert!(added["snippet_id"].is_number(), "{added}");
    let cut = c
        .call(
            "extract_snippet",
            json!({"session_id": sid, "snippet_type": "decision_rationale",
                   "title": "First turn", "start_turn": 1, "end_turn": 1}),
        )
        .expect("extract_snippet by turn");
    assert_eq!(cut["session_id"], sid);
    let lines = c
        .call(
            "get_transcript_lines",
            json!({"session_id": sid, "start_line": 1, "end_line": 40}),
        )
        .expect("get_transcript_lines");
    assert!(
        lines["text"].as_str().is_some_and(|t| t.contains("[L")),
        "{lines}"
    );
    // A result is cut to the cap (20,000 characters by default) as the client receives it,
    // escapes included (a large corpus session).
    let big = "0fae0449-64d3-4788-8622-d3a47d82c14b";
    let all = c
        .call(
            "get_transcript_lines",
            json!({"session_id": big, "start_line": 1, "end_line": 100000}),
        )
        .expect("every line");
    assert_eq!(all["truncated"], true, "the session is larger than the cap");
    assert!(all.to_string().chars().count() <= 20_000);
    let whole = c
        .call("get_conversation", json!({"session_id": big}))
        .expect("the whole conversation");
    assert!(
        whole["dropped_chars"].as_u64() > Some(0),
        "larger than the cap"
    );
    assert!(whole.to_string().chars().count() <= 20_000);
    // The deleted transcript's lines come from the archive.
    let archived = c
        .call(
            "get_transcript_lines",
            json!({"session_id": gone_sid, "start_line": 1, "end_line": 5}),
        )
        .expect("lines of a deleted transcript");
    assert_eq!(archived["from_archive"], true, "{archived}");
    assert_eq!(archived["lines_in_file"], 1, "{archived}");
    assert!(
        archived["text"]
            .as_str()
            .is_some_and(|t| t.contains("a transcript that will be deleted")),
        "{archived}"
    );
    let conv = c
        .call(
            "get_conversation",
            json!({"session_id": sid, "max_chars": 500}),
        )
        .expect("get_conversation");
    assert!(conv["text"]
        .as_str()
        .is_some_and(|t| t.chars().count() <= 500));
    let eps = c
        .call("list_episodes", json!({"session_id": sid}))
        .expect("list_episodes");
    assert!(eps["episodes"].is_array());
    let learned = c
        .call("export_learnings", json!({"limit": 5}))
        .expect("export_learnings");
    let items = learned["learnings"].as_array().expect("learnings");
    assert_eq!(items.len(), 5, "{learned}");
    assert_eq!(learned["has_more"], true, "{learned}");
    assert_eq!(learned["next_offset"], 5, "{learned}");
    for l in items {
        assert!(
            ["pattern", "mistake", "decision", "preference"]
                .contains(&l["type"].as_str().unwrap_or("")),
            "{l}"
        );
        assert!(
            l["observation"].as_str().is_some_and(|t| !t.is_empty()),
            "{l}"
        );
        assert!(
            l["generalization"].as_str().is_some_and(|t| !t.is_empty()),
            "{l}"
        );
        assert!(
            l["tags"][0]
                .as_str()
                .is_some_and(|t| t.starts_with("session:")),
            "{l}"
        );
    }

    // Invalid calls: each says what is wrong.
    let bad: Vec<(&str, Value, &str)> = vec![
        ("search", json!({}), "query"),
        ("search", json!({"query": "\"open"}), "unbalanced quote"),
        ("search", json!({"query": "x", "limit": "ten"}), "limit"),
        (
            "search",
            json!({"query": "x", "kinds": ["emails"]}),
            "invalid kind",
        ),
        ("list_sessions", json!({"status": "sleeping"}), "status"),
        ("list_sessions", json!({"project": " "}), "invalid project"),
        // Listings take the CLI's bound (500), one number for every door.
        ("list_sessions", json!({"limit": 501}), "1 to 500"),
        ("get_summaries", json!({"limit": 501}), "1 to 500"),
        (
            "get_session",
            json!({"session_id": "zzzzzzzz"}),
            "no session",
        ),
        ("get_session", json!({"session": sid}), "session"),
        ("get_summaries", json!({"kind": "poem"}), "kind"),
        ("query_feedback", json!({"since": "last tuesday"}), "since"),
        (
            "query_snippets",
            json!({"snippet_type": "joke"}),
            "snippet_type",
        ),
        (
            "extract_snippet",
            json!({"session_id": sid, "snippet_type": "learning_pattern", "title": "t",
                   "content": "too short"}),
            "bytes",
        ),
        (
            "extract_snippet",
            json!({"session_id": sid, "snippet_type": "nope", "title": "t", "content": content}),
            "invalid snippet_type \"nope\"",
        ),
        (
            "get_transcript_lines",
            json!({"session_id": sid, "start_line": 5, "end_line": 2}),
            "invalid range",
        ),
        ("get_conversation", json!({"session_id": 42}), "session_id"),
        ("list_episodes", json!({"triage": "drama"}), "triage"),
        ("export_learnings", json!({"limit": 0}), "limit"),
        (
            "export_learnings",
            json!({"since": "yesterday-ish"}),
            "since",
        ),
        ("get_usage", json!({"by": "fortnight"}), "fortnight"),
        ("get_usage", json!({"until": "2026-02-30"}), "until"),
        ("no_such_tool", json!({}), "no tool \"no_such_tool\""),
    ];
    for (tool, args, want) in bad {
        match c.call(tool, args.clone()) {
            Ok(v) => panic!("{tool} {args} succeeded: {v}"),
            Err(msg) => assert!(
                msg.to_lowercase().contains(&want.to_lowercase()),
                "{tool} {args}: want {want:?} in {msg:?}"
            ),
        }
    }

    // A value of the wrong type is an error result the model reads, like an out-of-range one;
    // only an unknown tool is a JSON-RPC error.
    for args in [
        json!({"query": "x", "limit": "ten"}),
        json!({"query": "x", "limit": 501}),
    ] {
        let r = c.request("tools/call", json!({"name": "search", "arguments": args}));
        assert!(r.get("error").is_none(), "{args}: {r}");
        assert_eq!(r["result"]["isError"], true, "{args}: {r}");
        let text = r["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(text.contains("limit"), "{args}: {text}");
    }
    let r = c.request(
        "tools/call",
        json!({"name": "no_such_tool", "arguments": {}}),
    );
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let msg = r["error"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("search") && msg.contains("get_session"),
        "{msg}"
    );

    // Still serving.
    let again = c.request("tools/list", json!({}));
    assert!(again["result"]["tools"].is_array(), "{again}");
    let s = c
        .call("search", json!({"query": "migration", "limit": 1}))
        .expect("search");
    assert_eq!(s["results"].as_array().map(Vec::len), Some(1));

    // A line that is not JSON gets JSON-RPC's Parse error (id null), and the server goes on.
    writeln!(c.stdin, "this is not json").expect("write");
    c.stdin.flush().expect("flush");
    let mut line = String::new();
    c.stdout.read_line(&mut line).expect("read");
    let v: Value = serde_json::from_str(&line).expect("answer is JSON");
    assert_eq!(v["error"]["code"], -32700, "{v}");
    assert!(v["id"].is_null(), "{v}");
    let again = c.request("tools/list", json!({}));
    assert!(again["result"]["tools"].is_array(), "{again}");

    // Closing stdin ends the server cleanly.
    drop(c.stdin);
    let status = c.child.wait().expect("wait");
    assert!(status.success(), "{status}");
    env.cleanup().await;
}

both_backends!(every_tool_valid_and_invalid_over_stdio, mcp_session);

/// A session whose only transcript is a sub-agent's: `text` says so and how to see it, and MCP
/// `get_conversation` says so and takes `subagents: true`.
async fn only_subagents(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let sid = "5ab00000-0000-4000-8000-000000000001";
    let line = user_line(sid, "a1", "explore the parser and report").replace(
        r#""isSidechain":false"#,
        r#""isSidechain":true,"agentId":"x1""#,
    );
    append(
        &env.path(&format!("-home-u-p/{sid}/subagents/agent-x1.jsonl")),
        line.as_bytes(),
    );
    env.ingest();
    let out = env.cmd().args(["text", &sid[..8]]).output().expect("text");
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--subagents"), "{err}");
    let out = env
        .cmd()
        .args(["text", &sid[..8], "--subagents"])
        .output()
        .expect("text");
    assert!(String::from_utf8_lossy(&out.stdout).contains("explore the parser"));

    let mut c = Client::ready(&env);
    let v = c
        .call("get_conversation", json!({"session_id": sid}))
        .expect("get_conversation");
    assert!(
        v["note"].as_str().is_some_and(|n| n.contains("subagents")),
        "{v}"
    );
    let v = c
        .call(
            "get_conversation",
            json!({"session_id": sid, "subagents": true}),
        )
        .expect("get_conversation");
    assert!(
        v["text"]
            .as_str()
            .is_some_and(|t| t.contains("explore the parser")),
        "{v}"
    );
    assert!(v.get("note").is_none(), "{v}");
    env.cleanup().await;
}

both_backends!(a_session_of_sub_agents_only_points_at_them, only_subagents);
