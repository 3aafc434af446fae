//! MCP details agents trip on: a long range of lines says where to go on, a sub-agent's
//! transcript can be read, numbers sent as strings are taken, every tool says whether it
//! writes, and `extract_snippet` refuses content that would cite lines it does not come from.

use serde_json::json;

use crate::common::*;
use crate::mcp::Client;

#[tokio::test]
async fn long_answers_agents_and_loose_numbers() {
    let env = TestEnv::new(Backend::Sqlite).await;
    let projects = corpus_dir().join("4thehalibit__omarchy-backup/.claude/projects");
    copy_tree(&projects, &env.projects);
    env.ingest();
    let sid = "512f6c74-f82f-4adb-9719-4ae90076677c"; // 437 lines, nine sub-agents
    let mut c = Client::ready(&env);

    // Every tool carries its hints: all read only but extract_snippet, which adds.
    let list = c.request("tools/list", json!({}));
    for t in list["result"]["tools"].as_array().expect("tools") {
        let a = &t["annotations"];
        let writes = t["name"] == "extract_snippet";
        assert_eq!(a["readOnlyHint"], !writes, "{t}");
        if writes {
            assert_eq!(a["destructiveHint"], false, "{t}");
        }
    }

    // A range too long for one answer ends at a whole line and says where to go on; reading
    // on from there reaches the end with every line once.
    let mut at = 1;
    let mut seen = Vec::new();
    for _ in 0..100 {
        let page = c
            .call(
                "get_transcript_lines",
                json!({"session_id": sid, "start_line": at, "end_line": 100000}),
            )
            .expect("lines");
        let end = page["end_line"].as_u64().expect("end_line");
        let text = page["text"].as_str().expect("text");
        for l in text.lines().filter_map(|l| l.strip_prefix("[L")) {
            let n: u64 = l[..l.find(']').expect("]")].parse().expect("line number");
            assert!(n >= at && n <= end, "line {n} outside {at}-{end}");
            seen.push(n);
        }
        match page["next_start_line"].as_u64() {
            Some(next) => {
                assert_eq!(page["truncated"], true);
                assert!(next > end, "{page}");
                at = next;
            }
            None => {
                assert_eq!(page["truncated"], false);
                break;
            }
        }
    }
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "lines repeated or out of order"
    );
    assert!(
        seen.last().is_some_and(|n| *n > 400),
        "did not reach the end"
    );

    // A sub-agent's transcript.
    let overview = c
        .call("get_session", json!({"session_id": sid}))
        .expect("get_session");
    let agent = overview["session"]["subagents"][0]["agent_id"]
        .as_str()
        .expect("a sub-agent")
        .to_string();
    let lines = c
        .call(
            "get_transcript_lines",
            json!({"session_id": sid, "start_line": 1, "end_line": 3, "agent_id": agent}),
        )
        .expect("agent lines");
    assert!(
        lines["source_file"]
            .as_str()
            .is_some_and(|f| f.contains("/subagents/")),
        "{lines}"
    );
    let e = c
        .call(
            "get_transcript_lines",
            json!({"session_id": sid, "start_line": 1, "end_line": 3, "agent_id": "nope"}),
        )
        .expect_err("unknown agent");
    assert!(e.contains("nope"), "{e}");

    // Numbers and booleans sent as strings.
    let s = c
        .call("list_sessions", json!({"limit": "2", "offset": "1"}))
        .expect("strings holding numbers");
    assert_eq!(s["sessions"].as_array().map(Vec::len), Some(2), "{s}");
    c.call(
        "get_conversation",
        json!({"session_id": sid, "subagents": "true", "max_chars": "500"}),
    )
    .expect("a string holding a boolean");
    let e = c
        .call("list_sessions", json!({"limit": "two"}))
        .expect_err("not a number");
    assert!(e.contains("limit"), "{e}");

    // Content given with a line range: refused (the lines would not be its source).
    let e = c
        .call(
            "extract_snippet",
            json!({"session_id": sid, "snippet_type": "learning_pattern",
                   "title": "t", "content": "x".repeat(200),
                   "source_line_start": 1, "source_line_end": 5}),
        )
        .expect_err("content and lines");
    assert!(e.contains("not both"), "{e}");
    // The server still serves.
    c.call("list_sessions", json!({"limit": 1}))
        .expect("still serving");
    env.cleanup().await;
}
