//! Tests of `parse` (kept apart so the module itself stays readable).

use super::*;

fn one(line: &str) -> Record<'_> {
    let p = parse_line(line.as_bytes());
    assert!(p.error.is_none(), "{:?}", p.error);
    assert_eq!(p.records.len(), 1);
    p.records.into_iter().next().expect("one record")
}

#[test]
fn string_vs_block_content() {
    let r = one(r#"{"type":"user","message":{"role":"user","content":"continue"},"uuid":"u1"}"#);
    assert_eq!(r.kind, Kind::User);
    assert!(
        matches!(r.message.as_ref().map(|m| &m.content), Some(Content::Text(t)) if t == "continue")
    );
    assert!(matches!(&r.uuid, Some(Cow::Borrowed("u1"))));
    assert_eq!(r.text().as_deref(), Some("continue"));

    let r = one(
        r#"{"message":{"content":[{"text":"say lol","type":"text"},{"type":"text","text":"x"}]},"type":"user"}"#,
    );
    assert_eq!(r.kind, Kind::User);
    assert_eq!(r.blocks().len(), 2);
    assert_eq!(r.text().as_deref(), Some("say lol\nx"));
}

#[test]
fn assistant_thinking_text_tool_use() {
    let line = r#"{"parentUuid":"p","isSidechain":false,"type":"assistant","requestId":"req_1","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-opus-4","content":[{"type":"thinking","thinking":"secret plan","signature":"sig"},{"type":"text","text":"Hello"},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"description":"list","command":"ls -la","timeout":5}},{"type":"tool_use","id":"toolu_2","name":"Edit","input":{"old_string":"a","file_path":"/x/y.rs","new_string":"b"}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"cache_creation_input_tokens":10,"cache_read_input_tokens":20,"output_tokens":7,"service_tier":"standard","cache_creation":{"ephemeral_5m_input_tokens":0}}}}"#;
    let r = one(line);
    assert_eq!(r.kind, Kind::Assistant);
    let m = r.message.as_ref().expect("message");
    assert_eq!(m.id.as_deref(), Some("msg_1"));
    assert_eq!(m.model.as_deref(), Some("claude-opus-4"));
    assert_eq!(m.stop_reason.as_deref(), Some("tool_use"));
    assert_eq!(
        m.usage,
        Some(Usage {
            input_tokens: 3,
            output_tokens: 7,
            cache_creation_input_tokens: 10,
            cache_read_input_tokens: 20,
            cache_creation_1h_tokens: 0,
        })
    );
    assert_eq!(r.text().as_deref(), Some("Hello"));
    assert_eq!(r.tool_names(), vec!["Bash", "Edit"]);
    assert!(matches!(r.blocks()[0], Block::Thinking));
    match &r.blocks()[2] {
        Block::ToolUse { id, target, .. } => {
            assert_eq!(id, "toolu_1");
            assert_eq!(target.as_deref(), Some("ls -la"));
        }
        b => panic!("unexpected {b:?}"),
    }
    match &r.blocks()[3] {
        Block::ToolUse { target, .. } => assert_eq!(target.as_deref(), Some("/x/y.rs")),
        b => panic!("unexpected {b:?}"),
    }
    assert!(!r.has_tool_error());
    assert!(r.unknown_fields.is_empty());
}

#[test]
fn tool_result_error_and_denial_text() {
    let denial = "The user doesn't want to proceed with this tool use.";
    let line = format!(
        r#"{{"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"toolu_1","type":"tool_result","content":"{denial}","is_error":true}}]}},"toolUseResult":"Error: {denial}"}}"#
    );
    let r = one(&line);
    assert!(r.has_tool_error());
    assert_eq!(r.text(), None);
    assert_eq!(r.blocks()[0].tool_result_text().as_deref(), Some(denial));
    assert_eq!(r.tool_use_result_agent_id(), None);

    let r = one(
        r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"a\tb"},{"type":"image","source":{"data":"AAAA"}},{"type":"text","text":"c"}]}]},"toolUseResult":{"status":"completed","agentId":"a073139c8fe58ba03","content":[]}}"#,
    );
    assert!(!r.has_tool_error());
    assert_eq!(r.blocks()[0].tool_result_text().as_deref(), Some("a\tb\nc"));
    assert_eq!(
        r.tool_use_result_agent_id().as_deref(),
        Some("a073139c8fe58ba03")
    );
}

#[test]
fn glued_objects() {
    let p =
        parse_line(br#"{"type":"user","uuid":"a"}{"type":"summary","summary":"t","leafUuid":"l"}"#);
    assert!(p.error.is_none());
    assert_eq!(p.records.len(), 2);
    assert_eq!(p.records[0].kind, Kind::User);
    assert_eq!(p.records[1].kind, Kind::Summary);
    assert_eq!(p.records[1].leaf_uuid.as_deref(), Some("l"));

    let p = parse_line(br#"{"type":"user"} {"type":"system","content":"x"}"#);
    assert_eq!(p.records.len(), 2);
    assert!(p.error.is_none());
}

#[test]
fn glued_then_broken() {
    let p = parse_line(br#"{"type":"user","uuid":"a"}{"type":"summ"#);
    assert_eq!(p.records.len(), 1);
    assert!(
        matches!(p.error, Some(LineError::MalformedJson { column, .. }) if column > 0),
        "{:?}",
        p.error
    );
    let p = parse_line(br#"{"type":"user","message":{"content":[{"type":"text","text":1,]}}"#);
    assert!(p.records.is_empty());
    assert!(matches!(p.error, Some(LineError::MalformedJson { .. })));
}

#[test]
fn invalid_utf8() {
    let p = parse_line(b"{\"type\":\"user\",\"x\":\"\xff\"}");
    assert!(p.records.is_empty());
    assert_eq!(p.error, Some(LineError::InvalidUtf8 { valid_up_to: 20 }));
}

#[test]
fn not_an_object() {
    for line in [&b"[1,2]"[..], b"\"x\"", b"42", b"null", b"true"] {
        let p = parse_line(line);
        assert!(p.records.is_empty());
        assert_eq!(p.error, Some(LineError::NotAnObject), "{line:?}");
    }
    let p = parse_line(br#"{"type":"user"}[1]"#);
    assert_eq!(p.records.len(), 1);
    assert_eq!(p.error, Some(LineError::NotAnObject));
    let p = parse_line(b"");
    assert!(p.records.is_empty() && p.error.is_none());
}

#[test]
fn unknown_type_and_fields() {
    let r = one(r#"{"type":"frame-link","x":1}"#);
    assert_eq!(r.kind, Kind::Other(Cow::Borrowed("frame-link")));
    assert_eq!(r.type_name, "frame-link");
    assert_eq!(r.unknown_fields, vec![Cow::Borrowed("x")]);
    let r = one(r#"{"x\u0041":{"deep":[1,2,{"a":null}]},"uuid":"u"}"#);
    assert_eq!(r.kind, Kind::Other(Cow::Borrowed("")));
    assert_eq!(r.unknown_fields, vec![Cow::<str>::Owned("xA".into())]);
}

#[test]
fn unknown_block_type_and_lenient_fields() {
    let r = one(
        r#"{"type":"assistant","uuid":5,"isMeta":"yes","message":{"content":[{"citations":[],"type":"server_tool_use"},7,{"type":"image","source":{"data":"AAA"}}],"usage":"lots"}}"#,
    );
    assert_eq!(r.uuid, None);
    assert!(!r.is_meta);
    assert!(matches!(&r.blocks()[0], Block::Other(t) if t == "server_tool_use"));
    assert!(matches!(&r.blocks()[1], Block::Image));
    assert_eq!(r.message.as_ref().and_then(|m| m.usage), None);
    let r = one(r#"{"type":"user","message":"oops"}"#);
    assert!(r.message.is_none());
}

#[test]
fn escapes_decode() {
    let r =
        one(r#"{"type":"user","message":{"content":[{"type":"text","text":"a\nb \u00e9\"q\""}]}}"#);
    assert_eq!(r.text().as_deref(), Some("a\nb é\"q\""));
    let r = one(r#"{"type":"user","message":{"content":"x\\y"}}"#);
    assert_eq!(r.text().as_deref(), Some("x\\y"));
}

#[test]
fn system_compact_boundary_and_metadata_lines() {
    let r = one(
        r#"{"parentUuid":null,"logicalParentUuid":"L","type":"system","subtype":"compact_boundary","content":"Conversation compacted","level":"info","compactMetadata":{"trigger":"auto","preTokens":155000,"postTokens":1,"durationMs":2}}"#,
    );
    assert_eq!(r.kind, Kind::System);
    assert_eq!(r.parent_uuid, None);
    assert_eq!(r.logical_parent_uuid.as_deref(), Some("L"));
    assert_eq!(
        r.compact_metadata,
        Some(CompactMetadata {
            trigger: Some("auto".into()),
            pre_tokens: Some(155000)
        })
    );
    assert_eq!(r.content.as_deref(), Some("Conversation compacted"));
    let r = one(r#"{"type":"ai-title","aiTitle":"Fix bug","sessionId":"s"}"#);
    assert_eq!(r.kind, Kind::AiTitle);
    assert_eq!(r.ai_title.as_deref(), Some("Fix bug"));
    let r = one(
        r#"{"type":"attachment","attachment":{"content":{"big":[1]},"type":"queued_command"}}"#,
    );
    assert_eq!(r.attachment_type.as_deref(), Some("queued_command"));
    let r = one(r#"{"type":"progress","data":{"type":"bash_progress","output":"..."}}"#);
    assert_eq!(r.progress_type.as_deref(), Some("bash_progress"));
}

#[test]
fn target_truncated_at_char_boundary() {
    let long = "é".repeat(MAX_TARGET_LEN);
    let line = format!(
        r#"{{"type":"assistant","message":{{"content":[{{"type":"tool_use","id":"i","name":"Bash","input":{{"command":"{long}"}}}}]}}}}"#
    );
    let r = one(&line);
    match &r.blocks()[0] {
        Block::ToolUse {
            target: Some(t), ..
        } => {
            assert!(t.len() <= MAX_TARGET_LEN && !t.is_empty());
        }
        b => panic!("unexpected {b:?}"),
    }
}

#[test]
fn deep_nesting_does_not_panic() {
    let deep = format!("{{\"x\":{}{}}}", "[".repeat(100_000), "]".repeat(100_000));
    let p = parse_line(deep.as_bytes());
    assert!(p.records.len() + usize::from(p.error.is_some()) == 1);
    let deep = format!(
        "{{\"type\":\"user\",\"message\":{}}}",
        "{\"a\":".repeat(10_000)
    );
    let p = parse_line(deep.as_bytes());
    assert!(matches!(p.error, Some(LineError::MalformedJson { .. })));
}

// ------------------------------------------------------------------ corpus

fn lines(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    data.split(|b| *b == b'\n').filter(|l| !l.is_empty())
}

#[test]
fn corpus_parses() {
    use std::collections::BTreeMap;
    let files = crate::test_support::corpus_files();
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    let mut unknown: BTreeMap<String, usize> = BTreeMap::new();
    let mut blocks: BTreeMap<String, usize> = BTreeMap::new();
    let mut malformed = Vec::new();
    let (mut n_lines, mut n_other, mut glued) = (0usize, 0usize, 0usize);
    for f in &files {
        let data = std::fs::read(f).expect("read corpus file");
        for (i, line) in lines(&data).enumerate() {
            n_lines += 1;
            let p = parse_line(line);
            if let Some(e) = &p.error {
                malformed.push(format!("{}:L{}: {e}", f.display(), i + 1));
            }
            if p.records.len() > 1 {
                glued += 1;
            }
            for r in &p.records {
                let key = match &r.subtype {
                    Some(s) => format!("{}/{s}", r.type_name),
                    None => r.type_name.to_string(),
                };
                *kinds.entry(key).or_default() += 1;
                for u in &r.unknown_fields {
                    *unknown.entry(u.to_string()).or_default() += 1;
                }
                for b in r.blocks() {
                    let name = match b {
                        Block::Text(_) => "text".to_string(),
                        Block::ToolUse { .. } => "tool_use".into(),
                        Block::ToolResult { .. } => "tool_result".into(),
                        Block::Thinking => "thinking".into(),
                        Block::Image => "image".into(),
                        Block::Document => "document".into(),
                        Block::Other(t) => format!("other:{t}"),
                    };
                    *blocks.entry(name).or_default() += 1;
                }
                match r.kind {
                    Kind::User | Kind::Assistant => {
                        assert!(r.message.is_some(), "{}:L{} no message", f.display(), i + 1)
                    }
                    Kind::Summary => {
                        assert!(r.leaf_uuid.is_some(), "{}:L{}", f.display(), i + 1)
                    }
                    Kind::System if r.subtype.as_deref() == Some("compact_boundary") => {
                        let pre = r.compact_metadata.as_ref().and_then(|m| m.pre_tokens);
                        assert!(pre.is_some(), "{}:L{}", f.display(), i + 1);
                    }
                    Kind::Other(_) => n_other += 1,
                    _ => {}
                }
                for b in r.blocks() {
                    // Decoding on demand must never panic.
                    let _ = b.tool_result_text();
                }
                let _ = r.tool_use_result_agent_id();
            }
        }
    }
    eprintln!(
        "files: {}, lines: {n_lines}, glued lines: {glued}",
        files.len()
    );
    eprintln!("kinds/subtypes: {kinds:#?}");
    eprintln!("blocks: {blocks:#?}");
    eprintln!("unknown top-level fields: {unknown:#?}");
    eprintln!("malformed lines ({}): {malformed:#?}", malformed.len());
    assert!(n_lines > 15_000);
    assert_eq!(n_other, 0, "all corpus line kinds are known variants");
    assert!(
        malformed.is_empty(),
        "the real corpus has no malformed lines"
    );
    assert!(unknown.is_empty(), "all corpus top-level keys are known");
}

#[test]
fn edit_inputs_decode_on_demand() {
    let r = one(
        r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"a","name":"Edit","input":{"file_path":"/x.rs","old_string":"let a = 1;\n","new_string":"let a = \"2\";\n"}},{"type":"tool_use","id":"b","name":"MultiEdit","input":{"file_path":"/y.rs","edits":[{"old_string":"x","new_string":"y"},{"old_string":"p","new_string":"q"}]}},{"type":"tool_use","id":"c","name":"Write","input":{"file_path":"/z.md","content":"hi"}},{"type":"tool_use","id":"d","name":"Bash","input":{"command":"ls"}}]}}"#,
    );
    let pairs: Vec<Vec<(String, String)>> = r
        .blocks()
        .iter()
        .map(|b| match b {
            Block::ToolUse { edit, .. } => edit.pairs(5),
            _ => panic!("unexpected {b:?}"),
        })
        .collect();
    assert_eq!(
        pairs[0],
        vec![("let a = 1;\n".to_string(), "let a = \"2\";\n".to_string())]
    );
    assert_eq!(pairs[1].len(), 2);
    assert_eq!(pairs[1][1], ("p".to_string(), "q".to_string()));
    assert_eq!(pairs[2], vec![(String::new(), "hi".to_string())]);
    assert!(pairs[3].is_empty());
    match &r.blocks()[3] {
        Block::ToolUse { edit, target, .. } => {
            assert!(edit.is_empty());
            assert_eq!(target.as_deref(), Some("ls"));
        }
        b => panic!("unexpected {b:?}"),
    }
}
