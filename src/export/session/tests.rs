use std::collections::HashMap;

use super::*;
use crate::store::SessionListing;

const SID: &str = "0e0e0e0e-0000-4000-8000-000000000001";

fn session() -> SessionListing {
    SessionListing {
        session_id: SID.into(),
        title: Some("Fix login".into()),
        cwd: Some("/w".into()),
        ..SessionListing::default()
    }
}

fn lines() -> Vec<u8> {
    let l = [
        r#"{"type":"user","message":{"role":"user","content":"why does <b>login</b> fail?"}}"#,
        r#"{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"look at the auth module"},{"type":"text","text":"Let me **check**. <script>alert(1)</script>"}]}}"#,
        r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"npm test","description":"run tests"}}]}}"#,
        r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"FAIL auth.test.js\nkey sk-ant-api03-Zq8Xw2Lr9Tn4Vb6Mc1Pd7Hs3Jk5Ge0Ya leaked"}]}}"#,
        r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t2","name":"Task","input":{"description":"find the config","prompt":"look"}}]}}"#,
        r#"{"type":"user","toolUseResult":{"agentId":"ab12"},"message":{"content":[{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"found it"}]},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}}"#,
        "not json at all",
        r#"{"type":"system","subtype":"compact_boundary"}"#,
    ];
    (l.join("\n") + "\n").into_bytes()
}

fn source() -> SessionSource {
    let mut agents = HashMap::new();
    agents.insert(
        "ab12".to_string(),
        Agent {
            agent_type: Some("Explore".into()),
            description: Some("find the config".into()),
            bytes: br#"{"type":"assistant","message":{"content":[{"type":"text","text":"config is in .env"}]}}"#.to_vec(),
        },
    );
    SessionSource {
        session: session(),
        resume: Some(format!("cd /w && claude --resume {SID}")),
        episodes: Vec::new(),
        files: Vec::new(),
        main: lines(),
        agents,
    }
}

#[test]
fn entries_keep_every_turn_in_order_with_results_and_agents() {
    let r = Redactor::builtin();
    let mut agents = source().agents;
    let e = entries(&lines(), &r, &mut agents, 0);
    let kinds: Vec<&str> = e
        .iter()
        .map(|x| match x {
            Entry::Prompt { .. } => "prompt",
            Entry::Reply { .. } => "reply",
            Entry::Thinking { .. } => "thinking",
            Entry::Tool(_) => "tool",
            Entry::Image { .. } => "image",
            Entry::Note { .. } => "note",
        })
        .collect();
    assert_eq!(
        kinds,
        ["prompt", "thinking", "reply", "tool", "tool", "image", "note"]
    );
    let Entry::Tool(bash) = &e[3] else { panic!() };
    assert_eq!(bash.target, "npm test");
    let (out, failed) = bash.output.clone().expect("output");
    assert!(failed && out.contains("FAIL auth.test.js"));
    assert!(
        !out.contains("sk-ant-api03-Zq8Xw2Lr9Tn4Vb6Mc1Pd7Hs3Jk5Ge0Ya"),
        "redacted: {out}"
    );
    assert_eq!(bash.output_line, Some(4));
    let Entry::Tool(task) = &e[4] else { panic!() };
    let (id, what, nested) = task.agent.clone().expect("the sub-agent, nested");
    assert_eq!((id.as_str(), what.as_str()), ("ab12", "find the config"));
    assert_eq!(nested.len(), 1);
    assert!(agents.is_empty(), "the agent is taken once");
}

#[test]
fn html_is_self_contained_escaped_and_folded() {
    let h = html(&source(), &Redactor::builtin(), Style::Inline);
    assert!(h.starts_with("<!DOCTYPE html>"));
    assert!(!h.contains("<script"), "no script, the reply's is text");
    assert!(h.contains("&lt;script&gt;"));
    assert!(h.contains("why does &lt;b&gt;login&lt;/b&gt; fail?"));
    assert!(h.contains("<strong>check</strong>"), "Markdown rendered");
    assert!(h.contains("<details class=\"tool failed\""), "{h}");
    assert!(h.contains("<details class=\"thinking\">"));
    assert!(h.contains("<details class=\"agent\">"));
    assert!(h.contains("src=\"data:image/png;base64,iVBORw0KGgo=\""));
    assert!(h.contains("claude --resume"));
    assert!(
        !h.contains("http://") && !h.contains("https://"),
        "nothing from the network"
    );
    assert!(!h.contains("sk-ant-api03-Zq8Xw2Lr9Tn4Vb6Mc1Pd7Hs3Jk5Ge0Ya"));
}

#[test]
fn markdown_fences_outlast_the_output() {
    let mut src = source();
    src.main.extend_from_slice(
        br#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t9","name":"Bash","input":{"command":"cat x"}}]}}
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t9","content":"````\nfenced\n````"}]}}
"#,
    );
    let md = markdown(&src, &Redactor::builtin());
    assert!(md.starts_with("# "), "{md}");
    assert!(
        md.contains("> why does &lt;b&gt;login&lt;/b&gt; fail?"),
        "{md}"
    );
    assert!(md.contains("`````\n````\nfenced\n````\n`````"), "{md}");
    assert!(
        md.contains("<details><summary>Sub-agent ab12: find the config</summary>"),
        "{md}"
    );
    assert!(!md.contains("sk-ant-api03-Zq8Xw2Lr9Tn4Vb6Mc1Pd7Hs3Jk5Ge0Ya"));
}

#[test]
fn times_say_their_zone() {
    assert_eq!(
        when(Some("2026-04-24T20:59:22.572Z")),
        "2026-04-24 20:59:22 UTC"
    );
    assert_eq!(
        when(Some("2026-04-24T22:59:22+02:00")),
        "2026-04-24 20:59:22 UTC"
    );
    assert_eq!(when(Some("yesterday")), "yesterday");
    assert_eq!(when(None), "?");
}
