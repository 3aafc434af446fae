//! Unit tests of the parent module.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::parse::parse_line;

fn run(line: &str, agent: bool) -> Vec<Item> {
    let p = parse_line(line.as_bytes());
    assert!(p.error.is_none(), "bad test line: {line}");
    assert_eq!(p.records.len(), 1);
    items(&p.records[0], agent)
}

fn main_items(line: &str) -> Vec<Item> {
    run(line, false)
}

/// A user line with the given `message.content` JSON and extra top-level fields.
fn user(content: &str, extra: &str) -> String {
    format!(
        r#"{{"type":"user",{extra}"uuid":"u1","message":{{"role":"user","content":{content}}}}}"#
    )
}

fn text_user(text: &str) -> String {
    user(&serde_json::to_string(text).unwrap(), "")
}

/// A user line with one error tool_result whose content is `text`.
fn tool_error(text: &str) -> String {
    let c = serde_json::to_string(text).unwrap();
    user(
        &format!(
            r#"[{{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":{c}}}]"#
        ),
        "",
    )
}

fn msg(content: &str) -> Item {
    Item {
        feedback_type: FeedbackType::Message,
        content: content.to_string(),
        reason: None,
        tool_use_id: None,
        block: 0,
    }
}

fn interruption(content: &str, block: u32) -> Item {
    Item {
        feedback_type: FeedbackType::Interruption,
        content: content.to_string(),
        reason: None,
        tool_use_id: None,
        block,
    }
}

const REJECTED: &str = "The user doesn't want to proceed with this tool use. The tool use \
    was rejected (eg. if it was a file edit, the new_string was NOT written to the file).";

// ------------------------------------------------------------------ is_trivial

#[test]
fn trivial_examples() {
    for t in ["", " ", "\n\t", "k", "K", ".", "?", "是", " y "] {
        assert!(is_trivial(t), "{t:?} should be trivial");
    }
    for w in TRIVIAL_WORDS {
        assert!(is_trivial(w), "{w}");
        assert!(is_trivial(&w.to_uppercase()), "{w}");
        let mut cap = w.to_string();
        cap[..1].make_ascii_uppercase();
        assert!(is_trivial(&cap), "{cap}");
        assert!(is_trivial(&format!("  {cap}\n")), "{cap}");
    }
    for t in [
        "OK", "Ok", "Continue", "CONTINUE", "Yes", "Okay", "Resume", "Proceed", "Sure",
    ] {
        assert!(is_trivial(t), "{t}");
    }
    for t in [
        "/model",
        "/clear",
        "/compact",
        " /model ",
        "/mcp:tool",
        "/a.b-c_d",
    ] {
        assert!(is_trivial(t), "{t}");
    }
    // The brief says "14 words" but lists these 13.
    assert_eq!(TRIVIAL_WORDS.len(), 13);
}

#[test]
fn non_trivial_examples() {
    for t in [
        "yesterday",
        "going",
        "yes I think that works",
        "Yes please",
        "/model opus",
        "ok let's go",
        "ok.",
        "no!",
        "/usr/bin/env",
        "fix it",
        "ko",
    ] {
        assert!(!is_trivial(t), "{t:?} should not be trivial");
    }
}

#[test]
fn type_names() {
    assert_eq!(FeedbackType::Message.as_str(), "message");
    assert_eq!(FeedbackType::ToolDenial.as_str(), "tool_denial");
    assert_eq!(FeedbackType::Interruption.as_str(), "interruption");
}

// ------------------------------------------------------------------ rule 1

#[test]
fn injected_lines_are_skipped() {
    let c = r#""please fix the bug""#;
    assert_eq!(main_items(&user(c, "")), vec![msg("please fix the bug")]);
    assert!(main_items(&user(c, r#""isMeta":true,"#)).is_empty());
    assert!(main_items(&user(c, r#""isCompactSummary":true,"#)).is_empty());
    assert!(main_items(&user(c, r#""sourceToolUseID":"toolu_9","#)).is_empty());
    // Even interruptions and denials are skipped on such lines.
    let i = r#""[Request interrupted by user]""#;
    assert!(main_items(&user(i, r#""isMeta":true,"#)).is_empty());
    // false flags do not skip
    assert_eq!(
        main_items(&user(c, r#""isMeta":false,"isCompactSummary":false,"#)),
        vec![msg("please fix the bug")]
    );
}

#[test]
fn non_user_records_yield_nothing() {
    let l = r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"[Request interrupted by user]"}]}}"#;
    assert!(main_items(l).is_empty());
    let l = r#"{"type":"system","content":"please fix the bug"}"#;
    assert!(main_items(l).is_empty());
    let l = r#"{"type":"queue-operation","operation":"enqueue","content":"fix it"}"#;
    assert!(main_items(l).is_empty());
    // user line without message / with null content
    assert!(main_items(r#"{"type":"user"}"#).is_empty());
    assert!(main_items(&user("null", "")).is_empty());
}

// ------------------------------------------------------------------ rule 2

#[test]
fn denial_with_user_said_reason() {
    let text =
        format!("{REJECTED} To tell you how to proceed, the user said:\ndon't check this in");
    let got = main_items(&tool_error(&text));
    assert_eq!(
        got,
        vec![Item {
            feedback_type: FeedbackType::ToolDenial,
            content: text,
            reason: Some("don't check this in".to_string()),
            tool_use_id: Some("toolu_1".to_string()),
            block: 0,
        }]
    );
}

#[test]
fn denial_with_rejection_reason_two_spaces() {
    let text = format!(
        "{REJECTED} The user provided the following reason for the rejection:  use the other file"
    );
    let got = main_items(&tool_error(&text));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].feedback_type, FeedbackType::ToolDenial);
    assert_eq!(got[0].content, text);
    assert_eq!(got[0].reason.as_deref(), Some("use the other file"));
    assert_eq!(got[0].tool_use_id.as_deref(), Some("toolu_1"));
}

#[test]
fn plain_denial_has_no_reason() {
    let text = format!(
        "{REJECTED} STOP what you are doing and wait for the user to tell you how to proceed."
    );
    let got = main_items(&tool_error(&text));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].feedback_type, FeedbackType::ToolDenial);
    assert_eq!(got[0].reason, None);
    assert_eq!(got[0].content, text);
}

#[test]
fn denial_with_empty_reason_is_none() {
    let text = format!("{REJECTED} To tell you how to proceed, the user said:\n  \n");
    let got = main_items(&tool_error(&text));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].reason, None);
}

#[test]
fn denial_reason_keeps_inner_lines() {
    let text = format!("{REJECTED} To tell you how to proceed, the user said:\nfirst\nsecond\n");
    let got = main_items(&tool_error(&text));
    assert_eq!(got[0].reason.as_deref(), Some("first\nsecond"));
}

#[test]
fn denial_error_prefixed_and_wrapped() {
    let said = " To tell you how to proceed, the user said:\nuse pnpm";
    let variants = [
        format!("Error: {REJECTED}{said}"),
        format!("<tool_use_error>{REJECTED}{said}</tool_use_error>"),
        format!("<tool_use_error>Error: {REJECTED}{said}</tool_use_error>"),
        format!("Error: <tool_use_error>{REJECTED}{said}\n</tool_use_error>\n"),
    ];
    for text in variants {
        let got = main_items(&tool_error(&text));
        assert_eq!(got.len(), 1, "{text}");
        assert_eq!(got[0].feedback_type, FeedbackType::ToolDenial);
        assert_eq!(got[0].content, text, "content is the whole text");
        assert_eq!(got[0].reason.as_deref(), Some("use pnpm"), "{text}");
    }
    // Wrapped plain denial: no reason.
    let text = format!("<tool_use_error>{REJECTED}</tool_use_error>");
    let got = main_items(&tool_error(&text));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].reason, None);
}

#[test]
fn parallel_variant_is_not_a_separate_item() {
    let parallel = "The user doesn't want to take this action right now. STOP what you are \
        doing and wait for the user to tell you how to proceed.";
    assert!(main_items(&tool_error(parallel)).is_empty());
    // One denial plus its parallel echo on the same line: one item, for the denied call.
    let d = serde_json::to_string(&format!("{REJECTED} the user said: no")).unwrap();
    let p = serde_json::to_string(parallel).unwrap();
    let line = user(
        &format!(
            r#"[{{"type":"tool_result","tool_use_id":"toolu_a","is_error":true,"content":{d}}},{{"type":"tool_result","tool_use_id":"toolu_b","is_error":true,"content":{p}}}]"#
        ),
        "",
    );
    let got = main_items(&line);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].tool_use_id.as_deref(), Some("toolu_a"));
    assert_eq!(got[0].reason.as_deref(), Some("no"));
    assert_eq!(got[0].block, 0);
}

#[test]
fn tool_interrupt_in_result_is_denial() {
    let text = "[Request interrupted by user for tool use]";
    let got = main_items(&tool_error(text));
    assert_eq!(
        got,
        vec![Item {
            feedback_type: FeedbackType::ToolDenial,
            content: text.to_string(),
            reason: None,
            tool_use_id: Some("toolu_1".to_string()),
            block: 0,
        }]
    );
    // With tool output around it (seen in real files).
    let text = "partial output\n[Request interrupted by user for tool use]\nmore";
    let got = main_items(&tool_error(text));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].feedback_type, FeedbackType::ToolDenial);
    assert_eq!(got[0].content, text);
}

#[test]
fn other_tool_errors_are_not_feedback() {
    for text in [
        "<tool_use_error>File does not exist.</tool_use_error>",
        "Error: Exit code 1\nfailed",
        "<tool_use_error>Sibling tool call errored</tool_use_error>",
        "The user said: hi", // marker alone is not a denial
    ] {
        assert!(main_items(&tool_error(text)).is_empty(), "{text}");
    }
}

#[test]
fn denial_requires_is_error() {
    let c = serde_json::to_string(&format!("{REJECTED} the user said: x")).unwrap();
    let line = user(
        &format!(r#"[{{"type":"tool_result","tool_use_id":"toolu_1","content":{c}}}]"#),
        "",
    );
    assert!(main_items(&line).is_empty());
    let line = user(
        &format!(
            r#"[{{"type":"tool_result","tool_use_id":"toolu_1","is_error":false,"content":{c}}}]"#
        ),
        "",
    );
    assert!(main_items(&line).is_empty());
}

#[test]
fn denial_with_block_array_content_and_index() {
    let t = serde_json::to_string(&format!("{REJECTED} the user said:\nnope")).unwrap();
    let line = user(
        &format!(
            r#"[{{"type":"tool_result","tool_use_id":"toolu_0","content":"ok"}},{{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":[{{"type":"text","text":{t}}}]}}]"#
        ),
        "",
    );
    let got = main_items(&line);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].block, 1);
    assert_eq!(got[0].tool_use_id.as_deref(), Some("toolu_1"));
    assert_eq!(got[0].reason.as_deref(), Some("nope"));
}

#[test]
fn denial_counts_in_agent_file_and_sidechain() {
    let text = format!("{REJECTED} the user said: stop");
    assert_eq!(run(&tool_error(&text), true).len(), 1);
    let c = serde_json::to_string(&text).unwrap();
    let line = user(
        &format!(
            r#"[{{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":{c}}}]"#
        ),
        r#""isSidechain":true,"#,
    );
    assert_eq!(main_items(&line).len(), 1);
}

// ------------------------------------------------------------------ rule 3

#[test]
fn interruption_as_string_content() {
    let t = "[Request interrupted by user]";
    assert_eq!(main_items(&text_user(t)), vec![interruption(t, 0)]);
    assert_eq!(run(&text_user(t), true), vec![interruption(t, 0)]);
    // leading whitespace is allowed; content is kept verbatim
    let t = "  \n[Request interrupted by user]";
    assert_eq!(main_items(&text_user(t)), vec![interruption(t, 0)]);
}

#[test]
fn interruption_as_text_block() {
    let line = user(
        r#"[{"type":"text","text":"[Request interrupted by user for tool use]"}]"#,
        "",
    );
    let want = vec![interruption(
        "[Request interrupted by user for tool use]",
        0,
    )];
    assert_eq!(main_items(&line), want);
    assert_eq!(run(&line, true), want, "in a sub-agent file too");
}

#[test]
fn interruption_on_sidechain_line_counts() {
    let line = user(
        r#"[{"type":"text","text":"[Request interrupted by user]"}]"#,
        r#""isSidechain":true,"#,
    );
    assert_eq!(
        main_items(&line),
        vec![interruption("[Request interrupted by user]", 0)]
    );
}

#[test]
fn interruption_plus_text_gives_both() {
    let line = user(
        r#"[{"type":"text","text":"[Request interrupted by user]"},{"type":"text","text":"no, use the other API"}]"#,
        "",
    );
    assert_eq!(
        main_items(&line),
        vec![
            interruption("[Request interrupted by user]", 0),
            msg("no, use the other API")
        ]
    );
    // In an agent file only the interruption remains.
    assert_eq!(
        run(&line, true),
        vec![interruption("[Request interrupted by user]", 0)]
    );
}

#[test]
fn interruption_block_index() {
    let line = user(
        r#"[{"type":"image","source":{"type":"base64","data":"xx"}},{"type":"text","text":"[Request interrupted by user]"}]"#,
        "",
    );
    assert_eq!(
        main_items(&line),
        vec![interruption("[Request interrupted by user]", 1)]
    );
}

// ------------------------------------------------------------------ rule 4

#[test]
fn human_message_in_main_file_only() {
    let line = text_user("please use the other file");
    assert_eq!(main_items(&line), vec![msg("please use the other file")]);
    assert!(run(&line, true).is_empty(), "same text in an agent file");
    let side = user(r#""please use the other file""#, r#""isSidechain":true,"#);
    assert!(main_items(&side).is_empty(), "sidechain line in main file");
}

#[test]
fn trivial_messages_are_dropped() {
    for t in ["ok", "Continue", "/model", "y", "  "] {
        assert!(main_items(&text_user(t)).is_empty(), "{t}");
    }
    assert_eq!(
        main_items(&text_user("Yes please")),
        vec![msg("Yes please")]
    );
    assert_eq!(
        main_items(&text_user("/model opus")),
        vec![msg("/model opus")]
    );
}

#[test]
fn plumbing_dropped_rest_joined() {
    let line = user(
        r#"[{"type":"text","text":"<ide_opened_file>The user opened a.rs</ide_opened_file>"},{"type":"text","text":"fix the parser"},{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"image","source":{}},{"type":"text","text":"and add tests"}]"#,
        "",
    );
    assert_eq!(
        main_items(&line),
        vec![msg("fix the parser\nand add tests")]
    );
}

#[test]
fn only_plumbing_yields_nothing() {
    for t in [
        "<command-name>/model</command-name>\n<command-message>model</command-message>\n<command-args>opus</command-args>",
        "<local-command-stdout>Set model to opus</local-command-stdout>",
        "<local-command-stderr>boom</local-command-stderr>",
        "<local-command-caveat>Caveat: ...</local-command-caveat>",
        "<bash-input>ls</bash-input>",
        "<bash-stdout>a b</bash-stdout><bash-stderr></bash-stderr>",
        "<bash-stderr>err</bash-stderr>",
        "<task-notification>done</task-notification>",
        "<ide_selection>sel</ide_selection>",
        "<command-message>m</command-message>",
        "Caveat: The messages below were generated by the user while running local commands.",
    ] {
        assert!(main_items(&text_user(t)).is_empty(), "{t}");
    }
    let line = user(
        r#"[{"type":"text","text":"<command-name>/clear</command-name>"},{"type":"text","text":"<local-command-stdout></local-command-stdout>"}]"#,
        "",
    );
    assert!(main_items(&line).is_empty());
}

#[test]
fn trivial_after_join_is_dropped() {
    let line = user(
        r#"[{"type":"text","text":"<ide_selection>lots of code</ide_selection>"},{"type":"text","text":"ok"}]"#,
        "",
    );
    assert!(main_items(&line).is_empty());
}

#[test]
fn image_only_and_tool_results_yield_nothing() {
    let line = user(
        r#"[{"type":"image","source":{"type":"base64","data":"x"}}]"#,
        "",
    );
    assert!(main_items(&line).is_empty());
    let line = user(
        r#"[{"type":"tool_result","tool_use_id":"t","content":"The user doesn't want to proceed with this tool use"}]"#,
        "",
    );
    assert!(main_items(&line).is_empty(), "not is_error");
}

// ------------------------------------------------------------------ corpus

#[test]
fn corpus_tally() {
    let files = crate::test_support::corpus_files();
    let (mut n_msg, mut n_den, mut n_int, mut n_user) = (0usize, 0usize, 0usize, 0usize);
    let mut n_den_reason = 0usize;
    let mut samples = Vec::new();
    let mut reasons = Vec::new();
    for f in &files {
        let agent = f
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("agent-"));
        let data = std::fs::read(f).unwrap();
        for line in data.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            for rec in parse_line(line).records {
                if rec.kind == Kind::User {
                    n_user += 1;
                }
                for it in items(&rec, agent) {
                    match it.feedback_type {
                        FeedbackType::Message => {
                            n_msg += 1;
                            assert!(!is_trivial(&it.content));
                            assert!(!agent && !rec.is_sidechain);
                            if samples.len() < 10 {
                                samples.push(it.content);
                            }
                        }
                        FeedbackType::ToolDenial => {
                            n_den += 1;
                            assert!(it.tool_use_id.is_some());
                            if let Some(r) = it.reason {
                                n_den_reason += 1;
                                reasons.push(r);
                            }
                        }
                        FeedbackType::Interruption => n_int += 1,
                    }
                }
            }
        }
    }
    eprintln!(
        "files {} user records {n_user}: message {n_msg}, tool_denial {n_den} \
         ({n_den_reason} with reason), interruption {n_int}",
        files.len()
    );
    for (i, s) in samples.iter().enumerate() {
        let short: String = s.chars().take(160).collect();
        eprintln!("sample message {i}: {short:?}");
    }
    for r in &reasons {
        eprintln!("denial reason: {r:?}");
    }
    assert!(n_msg > 0 && n_den > 0 && n_int > 0);
}
