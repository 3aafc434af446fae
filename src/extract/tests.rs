//! Extraction rules on literal lines.

use super::*;
use crate::tail::discovery::classify;
use crate::tail::{Tailer, TailerConfig};
use std::io::Write;
use std::path::Path;

const SID: &str = "11111111-2222-4333-8444-555555555555";

fn run(name: &str, content: &str) -> (FileContext, Vec<PreparedBatch>) {
    let dir = tempfile::tempdir().unwrap();
    let proj = dir.path().join("-home-u-proj");
    std::fs::create_dir_all(&proj).unwrap();
    let path = proj.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::File::create(&path)
        .unwrap()
        .write_all(content.as_bytes())
        .unwrap();
    let info = classify(dir.path(), &path);
    let mut ctx = FileContext::new(1, ("m".into(), "u".into()), info, None);
    let cfg = TailerConfig {
        max_line_bytes: 1 << 20,
        read_chunk: 1 << 16,
    };
    let (mut t, _) = Tailer::open(&path, None, cfg).unwrap();
    let mut out = Vec::new();
    let mut expected = (1, 0);
    while let Some(b) = t.read_batch(1 << 20, 10_000).unwrap() {
        let redactor = Redactor::new(&[]).unwrap();
        let mut pb = extract(&mut ctx, &b, &redactor).rows;
        pb.expected = expected;
        expected = (pb.checkpoint.generation, pb.checkpoint.offset);
        out.push(pb);
    }
    (ctx, out)
}

fn user(text: &str, extra: &str) -> String {
    format!(
        r#"{{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"{SID}","timestamp":"2025-01-01T00:00:01.000Z","cwd":"/home/u/proj","version":"2.0.1","gitBranch":"main"{extra},"message":{{"role":"user","content":{}}}}}"#,
        serde_json::to_string(text).unwrap()
    )
}

#[test]
fn rows_per_kind_and_title() {
    let lines = [
        r#"{"type":"summary","summary":"Old title","leafUuid":"x"}"#.to_string(),
        r#"{"type":"file-history-snapshot","messageId":"m","snapshot":{},"isSnapshotUpdate":false}"#.to_string(),
        user("<command-name>/clear</command-name>", ""),
        user("Fix the flaky test\nin ci", ""),
        r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"S","timestamp":"2025-01-01T00:00:03.000Z","message":{"id":"msg_1","role":"assistant","model":"claude-x","content":[{"type":"thinking","thinking":"hmm","signature":"s"},{"type":"text","text":"On it."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}"#.to_string(),
        r#"{"type":"user","uuid":"u2","parentUuid":"a1","sessionId":"S","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"boom"}]}}"#.to_string(),
        r#"{"type":"system","subtype":"turn_duration","uuid":"s1","durationMs":5,"timestamp":"2025-01-01T00:00:04.000Z"}"#.to_string(),
        r#"{"type":"brand-new","weird":1}"#.to_string(),
        "{not json".to_string(),
    ];
    let content = lines.join("\n") + "\n";
    let (ctx, batches) = run(&format!("{SID}.jsonl"), &content);
    assert_eq!(ctx.session_id.as_deref(), Some(SID));
    assert_eq!(batches.len(), 1);
    let b = &batches[0];
    let kinds: Vec<&str> = b.messages.iter().map(|m| m.kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["summary", "user", "user", "assistant", "user", "system"]
    );
    assert_eq!(b.messages[0].line_no, 1);
    assert_eq!(b.messages[3].line_no, 5);
    assert_eq!(b.messages[3].text.as_deref(), Some("On it."));
    assert_eq!(b.messages[3].tool_names.as_deref(), Some("Bash"));
    assert_eq!(b.messages[3].model.as_deref(), Some("claude-x"));
    assert!(b.messages[4].is_error);
    assert_eq!(b.messages[4].text, None);
    assert_eq!(b.messages[5].subtype.as_deref(), Some("turn_duration"));
    assert!(b.messages.iter().all(|m| m.session_id == SID));
    let s = b.session.as_ref().unwrap();
    assert_eq!(s.title.as_deref(), Some("Fix the flaky test"));
    assert_eq!(s.started_at.as_deref(), Some("2025-01-01T00:00:01.000Z"));
    assert_eq!(
        s.last_activity_at.as_deref(),
        Some("2025-01-01T00:00:04.000Z")
    );
    assert_eq!(s.cwd.as_deref(), Some("/home/u/proj"));
    assert_eq!(s.git_branch.as_deref(), Some("main"));
    assert_eq!(s.project, "-home-u-proj");
    assert_eq!(b.diagnostics.len(), 1);
    assert_eq!(b.diagnostics[0].kind, "malformed_json");
    assert_eq!(b.diagnostics[0].line_no, 9);
    assert!(b
        .kinds
        .iter()
        .any(|k| k.category == "unknown_type" && k.name == "brand-new"));
    assert!(b
        .kinds
        .iter()
        .any(|k| k.category == "unknown_field" && k.name == "weird"));
    assert!(b.kinds.iter().any(|k| k.name == "system/turn_duration"));
    assert_eq!(b.bytes, content.len() as u64);
}

#[test]
fn session_from_first_line_when_name_is_not_uuid() {
    let content = format!(
        "{}\n{}\n",
        r#"{"type":"summary","summary":"t","leafUuid":"x"}"#,
        user("hello there", "")
    );
    let (ctx, batches) = run("notes.jsonl", &content);
    assert_eq!(ctx.session_id.as_deref(), Some(SID));
    assert_eq!(batches[0].file_session_id.as_deref(), Some(SID));
    assert!(batches[0].messages.iter().all(|m| m.session_id == SID));
}

#[test]
fn agent_files_have_no_title_and_carry_agent_id() {
    let content = format!("{}\n", user("Explore the repo", r#","isSidechain":true"#));
    let (ctx, batches) = run("agent-abc123.jsonl", &content);
    assert_eq!(ctx.session_id.as_deref(), Some(SID));
    let b = &batches[0];
    assert_eq!(b.session.as_ref().unwrap().title, None);
    assert_eq!(b.messages[0].agent_id.as_deref(), Some("abc123"));
    assert!(b.messages[0].is_sidechain);
}

#[test]
fn glued_objects_become_two_rows() {
    let content = format!("{}{}\n", user("first prompt", ""), user("second", ""));
    let (_, batches) = run(&format!("{SID}.jsonl"), &content);
    let m = &batches[0].messages;
    assert_eq!(m.len(), 2);
    assert_eq!((m[0].line_no, m[0].seq), (1, 0));
    assert_eq!((m[1].line_no, m[1].seq), (1, 1));
}

#[test]
fn sidechain_and_meta_do_not_title() {
    let content = format!(
        "{}\n{}\n{}\n",
        user("sub prompt", r#","isSidechain":true"#),
        user(
            "Caveat: The messages below were generated by the user",
            r#","isMeta":true"#
        ),
        user("[Request interrupted by user]", "")
    );
    let (_, batches) = run(&format!("{SID}.jsonl"), &content);
    assert_eq!(batches[0].session.as_ref().unwrap().title, None);
    let _ = Path::new("");
}

#[test]
fn knowledge_rows() {
    let lines = [
        r#"{"type":"summary","summary":"Fixing CI","leafUuid":"leaf-1"}"#.to_string(),
        r#"{"type":"system","subtype":"compact_boundary","uuid":"cb1","content":"Conversation compacted","compactMetadata":{"trigger":"auto","preTokens":155250},"timestamp":"2025-01-01T00:00:05.000Z"}"#.to_string(),
        user("This session is being continued from a previous conversation", r#","isCompactSummary":true"#),
        r#"{"type":"assistant","uuid":"a1","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"x"}],"usage":{"input_tokens":10,"output_tokens":1,"cache_read_input_tokens":5}}}"#.to_string(),
        r#"{"type":"assistant","uuid":"a2","message":{"id":"msg_1","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Edit","input":{"file_path":"/src/a.rs","old_string":"x"}}],"usage":{"input_tokens":10,"output_tokens":42,"cache_read_input_tokens":5}}}"#.to_string(),
        r#"{"type":"user","uuid":"u9","timestamp":"2025-01-01T00:00:06.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":"The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). To tell you how to proceed, the user said:\nuse the other file"}]}}"#.to_string(),
        user("please also update the README", ""),
    ];
    let (_, batches) = run(&format!("{SID}.jsonl"), &(lines.join("\n") + "\n"));
    let b = &batches[0];
    let kinds: Vec<&str> = b.summaries.iter().map(|s| s.kind).collect();
    assert_eq!(kinds, ["summary", "compact_boundary", "compact_summary"]);
    assert_eq!(b.summaries[0].dedup_key, "leaf-1\nFixing CI");
    assert_eq!(b.summaries[0].leaf_uuid.as_deref(), Some("leaf-1"));
    assert_eq!(b.summaries[1].trigger.as_deref(), Some("auto"));
    assert_eq!(b.summaries[1].pre_tokens, Some(155_250));
    assert_eq!(b.summaries[1].dedup_key, "cb1");
    assert_eq!(b.summaries[2].line_no, 3);
    assert!(b.summaries[2]
        .text
        .as_deref()
        .unwrap_or("")
        .starts_with("This session"));

    assert_eq!(b.tool_uses.len(), 1);
    assert_eq!(b.tool_uses[0].name.as_deref(), Some("Edit"));
    assert_eq!(b.tool_uses[0].target.as_deref(), Some("/src/a.rs"));
    let errors: Vec<_> = b.tool_results.iter().filter(|t| t.is_error).collect();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].tool_use_id, "toolu_1");

    // One reply over two lines: counted once, with the larger usage.
    assert_eq!(b.usage.len(), 1);
    assert_eq!(
        (
            b.usage[0].input_tokens,
            b.usage[0].output_tokens,
            b.usage[0].cache_read_input_tokens
        ),
        (10, 42, 5)
    );

    let fb: Vec<(&str, Option<&str>)> = b
        .feedback
        .iter()
        .map(|f| (f.feedback_type.as_str(), f.reason.as_deref()))
        .collect();
    assert_eq!(
        fb,
        [
            ("tool_denial", Some("use the other file")),
            ("message", None)
        ]
    );
    assert_eq!(b.feedback[0].dedup_key, "u9:tool_denial:toolu_1");
    assert_eq!(b.feedback[0].tool_use_id.as_deref(), Some("toolu_1"));
    assert_eq!(b.feedback[1].dedup_key, "u1:message:0");
    assert_eq!(b.feedback[1].content, "please also update the README");
}

#[test]
fn kind_tallies_count_each_name_exactly() {
    let mut kinds = Vec::new();
    let names: [&[&str]; 6] = [
        &["system/", "turn"],
        &["system/turn"],
        &["system/", "turn_duration"],
        &["user"],
        &["system/", "turn"],
        &["system/", "tur"],
    ];
    for parts in names {
        super::bump(&mut kinds, "type", parts);
    }
    super::bump(&mut kinds, "unknown_field", &["user"]);
    let count = |category: &str, name: &str| {
        kinds
            .iter()
            .find(|k| k.category == category && k.name == name)
            .map(|k| k.count)
    };
    assert_eq!(count("type", "system/turn"), Some(3));
    assert_eq!(count("type", "system/turn_duration"), Some(1));
    assert_eq!(count("type", "system/tur"), Some(1));
    assert_eq!(count("type", "user"), Some(1));
    assert_eq!(count("unknown_field", "user"), Some(1));
    assert_eq!(kinds.len(), 5);
}

#[test]
fn the_compactors_reply_is_a_compaction_summary_and_its_prompt_no_title() {
    let lines = [
        r#"{"type":"user","uuid":"c1","isSidechain":true,"agentId":"acompact-9dce12","sessionId":"SID","message":{"role":"user","content":"Your task is to create a detailed summary of the conversation so far"}}"#,
        r#"{"type":"assistant","uuid":"c2","isSidechain":true,"agentId":"acompact-9dce12","sessionId":"SID","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"<analysis>working</analysis>\n<summary>1. Primary Request and Intent:\n   Add a dark theme.</summary>"}]}}"#,
    ]
    .map(|l| l.replace("SID", SID));
    let name = format!("{SID}/subagents/agent-acompact-9dce12.jsonl");
    let (_, batches) = run(&name, &(lines.join("\n") + "\n"));
    let b = &batches[0];
    assert_eq!(b.summaries.len(), 1, "{:?}", b.summaries);
    assert_eq!(b.summaries[0].kind, "compact_summary");
    assert_eq!(
        b.summaries[0].text.as_deref(),
        Some("1. Primary Request and Intent:\n   Add a dark theme.")
    );
    // A sub-agent's prompt never titles its session at extraction (only main files do).
    assert_eq!(b.session.as_ref().and_then(|s| s.title.clone()), None);
    // The reply is found as its summary, not again as a message: one hit per line. The
    // prompt to the summariser is a message as any sub-agent's is.
    let reply = b.messages.iter().find(|m| m.kind == "assistant").unwrap();
    assert!(!crate::extract::lexemes::searchable(reply), "{reply:?}");
    let prompt = b.messages.iter().find(|m| m.kind == "user").unwrap();
    assert!(crate::extract::lexemes::searchable(prompt), "{prompt:?}");
}
