//! Unit tests of the parent module.
#![allow(clippy::unwrap_used)]

use super::*;
use std::io::Write;

/// Twelve real lines (lines 301 and 303-313 of a corpus transcript): a Read call, an
/// interruption, then three prompts with Bash calls, a failed one and another interruption.
const FIXTURE: &str = include_str!("../../../tests/fixtures/snippet_session.jsonl");

fn write(bytes: &[u8]) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(bytes).unwrap();
    f.flush().unwrap();
    f
}

/// The built-in rules (what the CLI uses without `redact.extra`).
fn rd() -> Redactor {
    Redactor::builtin()
}

fn fixture_lines() -> Vec<&'static str> {
    FIXTURE.lines().collect()
}

#[test]
fn parse_range_accepts_only_ordered_positive_ranges() {
    assert_eq!(parse_range("3:7").unwrap(), (3, 7));
    assert_eq!(parse_range(" 4 : 4 ").unwrap(), (4, 4));
    for bad in ["9:2", "0:3", "3", "a:b", "3:", ":3", "-1:2", "1:2:3", ""] {
        let e = parse_range(bad).unwrap_err();
        assert!(matches!(e, SourceError::BadRange(_)), "{bad}");
    }
    assert_eq!(
        parse_range("9:2").unwrap_err().to_string(),
        "invalid range \"9:2\": expected A:B with 1 <= A <= B"
    );
}

#[test]
fn lines_render_each_kind_with_its_physical_line() {
    let f = write(FIXTURE.as_bytes());
    let ex = excerpt(f.path(), Selection::Lines(1, 12), &rd()).unwrap();
    assert_eq!((ex.line_start, ex.line_end, ex.lines_in_file), (1, 12, 12));
    let c = &ex.content;
    assert!(c.starts_with("[L1] tool Read: /Users/testuser/"), "{c}");
    assert!(
        c.contains("\n[L2] user: [Request interrupted by user]"),
        "{c}"
    );
    assert!(c.contains("\n[L3] user: it seems to work."), "{c}");
    assert!(c.contains("\n[L4] assistant: Perfect!"), "{c}");
    assert!(
        c.contains("\n[L5] tool Bash: git status --porcelain"),
        "{c}"
    );
    assert!(
        c.contains("\n[L10] tool result (error): fatal: 'main' is already used by worktree"),
        "{c}"
    );
    assert!(
        c.ends_with("[L12] user: sorry. push up and make a pr"),
        "{c}"
    );
    assert_eq!(ex.tools, vec!["Bash".to_string(), "Read".to_string()]);
    assert_eq!(ex.paths.len(), 1);
    assert!(
        ex.paths[0].ends_with("handlers/ai-chat.ts"),
        "{:?}",
        ex.paths
    );
    assert_eq!(ex.version.as_deref(), Some("1.0.120"));
    // No JSON leaks into the text.
    assert!(!c.contains("\"type\""), "{c}");
}

#[test]
fn a_line_range_stops_at_its_end() {
    let f = write(FIXTURE.as_bytes());
    let ex = excerpt(f.path(), Selection::Lines(3, 5), &rd()).unwrap();
    assert_eq!((ex.line_start, ex.line_end, ex.lines_in_file), (3, 5, 5));
    let labels: Vec<&str> = ex
        .content
        .lines()
        .filter(|l| l.starts_with("[L"))
        .map(|l| l.split(']').next().unwrap())
        .collect();
    assert_eq!(labels, ["[L3", "[L4", "[L5"]);
    assert_eq!(ex.tools, vec!["Bash".to_string()]);
    assert!(ex.paths.is_empty());
}

#[test]
fn turns_run_from_a_prompt_to_the_line_before_the_next() {
    let f = write(FIXTURE.as_bytes());
    let t1 = excerpt(f.path(), Selection::Turns(1, 1), &rd()).unwrap();
    assert_eq!((t1.line_start, t1.line_end), (3, 7));
    // The same lines selected by number give the same text.
    let l = excerpt(f.path(), Selection::Lines(3, 7), &rd()).unwrap();
    assert_eq!(t1.content, l.content);
    let t2 = excerpt(f.path(), Selection::Turns(2, 2), &rd()).unwrap();
    assert_eq!((t2.line_start, t2.line_end), (8, 11));
    assert!(
        t2.content.starts_with("[L8] user: we merged that PR"),
        "{}",
        t2.content
    );
    assert!(t2.content.contains("[L10] tool result (error):"));
    // The last turn runs to the end of the file.
    let t = excerpt(f.path(), Selection::Turns(2, 3), &rd()).unwrap();
    assert_eq!((t.line_start, t.line_end, t.lines_in_file), (8, 12, 12));
    // Lines before the first prompt belong to no turn.
    let all = excerpt(f.path(), Selection::Turns(1, 3), &rd()).unwrap();
    assert_eq!((all.line_start, all.line_end), (3, 12));
    assert!(!all.content.contains("[L1]"));
    assert!(!all.content.contains("[L2]"));
}

#[test]
fn crlf_bom_and_blank_lines_keep_physical_numbers() {
    let lines = fixture_lines();
    // BOM on line 1, CRLF endings, blank lines (one of them CRLF only), no final newline.
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend_from_slice(lines[2].as_bytes()); // L1: prompt
    bytes.extend_from_slice(b"\r\n\r\n\n"); // L2, L3 blank
    bytes.extend_from_slice(lines[4].as_bytes()); // L4: Bash
    bytes.extend_from_slice(b"\r\n");
    bytes.extend_from_slice(lines[7].as_bytes()); // L5: prompt, no final newline
    let f = write(&bytes);
    let ex = excerpt(f.path(), Selection::Lines(1, 5), &rd()).unwrap();
    assert!(
        ex.content.starts_with("[L1] user: it seems to work."),
        "{}",
        ex.content
    );
    assert!(
        ex.content.contains("\n[L4] tool Bash: git status"),
        "{}",
        ex.content
    );
    assert!(ex
        .content
        .ends_with("[L5] user: we merged that PR. we need a new one"));
    assert!(!ex.content.contains('\r'));
    let t1 = excerpt(f.path(), Selection::Turns(1, 1), &rd()).unwrap();
    assert_eq!((t1.line_start, t1.line_end), (1, 4));
    let t2 = excerpt(f.path(), Selection::Turns(2, 2), &rd()).unwrap();
    assert_eq!((t2.line_start, t2.line_end), (5, 5));
    // Blank lines alone hold nothing.
    let e = excerpt(f.path(), Selection::Lines(2, 3), &rd()).unwrap_err();
    assert!(matches!(e, SourceError::Empty { .. }), "{e}");
}

#[test]
fn bad_and_unparseable_lines_are_skipped() {
    let lines = fixture_lines();
    let text = format!(
        "{{\"type\":\"user\",\"message\":{{\n[1,2]\n{}\n\u{0}\n{}\n",
        lines[2], lines[7]
    );
    let f = write(text.as_bytes());
    let ex = excerpt(f.path(), Selection::Lines(1, 5), &rd()).unwrap();
    let labels: Vec<&str> = ex.content.lines().filter(|l| l.starts_with("[L")).collect();
    assert_eq!(labels.len(), 2, "{}", ex.content);
    assert!(labels[0].starts_with("[L3] user:"));
    assert!(labels[1].starts_with("[L5] user:"));
}

#[test]
fn out_of_range_names_the_file_and_what_it_has() {
    let f = write(FIXTURE.as_bytes());
    let p = f.path().display().to_string();
    let e = excerpt(f.path(), Selection::Lines(900, 950), &rd()).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("lines 900:950 are outside {p}, which has 12 lines")
    );
    let e = excerpt(f.path(), Selection::Lines(10, 13), &rd()).unwrap_err();
    assert!(
        matches!(e, SourceError::RangeOutsideFile { available: 12, .. }),
        "{e}"
    );
    let e = excerpt(f.path(), Selection::Turns(7, 9), &rd()).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("turns 7:9 are outside {p}, which has 3 turns")
    );
    let one = write(fixture_lines()[2].as_bytes());
    let e = excerpt(one.path(), Selection::Turns(2, 2), &rd()).unwrap_err();
    assert!(e.to_string().ends_with("which has 1 turn"), "{e}");
    let e = excerpt(f.path(), Selection::Lines(5, 2), &rd()).unwrap_err();
    assert!(matches!(e, SourceError::BadRange(_)), "{e}");
}

#[test]
fn unreadable_and_empty_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.jsonl");
    let e = excerpt(&missing, Selection::Lines(1, 1), &rd()).unwrap_err();
    assert!(matches!(e, SourceError::Unreadable { .. }));
    assert_eq!(e.to_string(), format!("cannot read {}", missing.display()));
    // A folder opens but cannot be read.
    let e = excerpt(dir.path(), Selection::Lines(1, 1), &rd()).unwrap_err();
    assert!(matches!(e, SourceError::Unreadable { .. }), "{e}");
    // Bookkeeping only: a snapshot and a progress line.
    let f = write(
        b"{\"type\":\"file-history-snapshot\",\"messageId\":\"m\",\"snapshot\":{}}\n\
          {\"type\":\"progress\",\"data\":{\"type\":\"hook_progress\"}}\n",
    );
    let e = excerpt(f.path(), Selection::Lines(1, 2), &rd()).unwrap_err();
    assert!(e.to_string().starts_with("lines 1:2 of "), "{e}");
    assert!(e.to_string().contains("nothing readable"), "{e}");
}

#[test]
fn long_tool_output_is_cut() {
    let lines = fixture_lines();
    let mut v: serde_json::Value = serde_json::from_str(lines[9]).unwrap();
    let big: String = (0..500).map(|i| format!("output line {i}\n")).collect();
    v["message"]["content"][0]["content"] = serde_json::Value::String(big);
    let f = write(format!("{v}\n").as_bytes());
    let ex = excerpt(f.path(), Selection::Lines(1, 1), &rd()).unwrap();
    assert!(ex.content.len() < 1000, "{}", ex.content.len());
    assert!(ex.content.contains('…'));
}

#[test]
fn secrets_are_redacted_before_outputs_are_cut() {
    let lines = fixture_lines();
    let mut v: serde_json::Value = serde_json::from_str(lines[9]).unwrap();
    // A private key printed in a long output: cutting first would keep its last base64
    // lines without the BEGIN line that makes them recognisable.
    let mut out: String = (0..30).map(|i| format!("config line {i}\n")).collect();
    out.push_str("-----BEGIN PRIVATE KEY-----\n");
    for i in 0..25 {
        out.push_str(&format!(
            "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC{i:02}\n"
        ));
    }
    out.push_str("-----END PRIVATE KEY-----\n");
    v["message"]["content"][0]["content"] = serde_json::Value::String(out);
    // A token right at the byte limit of one output, and one in a command.
    let token = "ghp_L5sffHkGClQPZR42lO8kvAd4FyXmzDW9I9hN";
    let mut w = v.clone();
    let long = format!("{} {token} tail", "x".repeat(TOOL_OUTPUT_BYTES - 20));
    w["message"]["content"][0]["content"] = serde_json::Value::String(long);
    let mut c: serde_json::Value = serde_json::from_str(lines[4]).unwrap();
    c["message"]["content"][0]["input"]["command"] =
        serde_json::Value::String(format!("curl -H 'Authorization: token {token}' x"));
    let f = write(format!("{v}\n{w}\n{c}\n").as_bytes());
    let ex = excerpt(f.path(), Selection::Lines(1, 3), &rd()).unwrap();
    assert!(!ex.content.contains("MIIEvQIBADAN"), "{}", ex.content);
    assert!(!ex.content.contains("ghp_"), "{}", ex.content);
    assert!(ex.content.contains("[REDACTED:"), "{}", ex.content);
    assert!(ex.redacted >= 3, "{}", ex.redacted);
    // Redacting the result again changes nothing (the CLI redacts the whole once more).
    let mut counts = BTreeMap::new();
    assert_eq!(rd().redact(&ex.content, &mut counts), ex.content);
    assert!(counts.is_empty(), "{counts:?}");
}

/// Over the real corpus: the number of turns of a main file is its number of human
/// message items, and the excerpt of its last turn ends at its last line.
#[test]
fn corpus_turns_match_feedback_messages() {
    let mut checked = 0;
    for p in crate::test_support::corpus_files() {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("agent-") || p.components().any(|c| c.as_os_str() == "subagents") {
            continue;
        }
        let bytes = std::fs::read(&p).unwrap();
        if bytes.len() > 4 * 1024 * 1024 {
            continue;
        }
        let mut parts: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
        if parts.last().is_some_and(|l| l.is_empty()) {
            parts.pop(); // after the final '\n'
        }
        let lines = parts.len() as u64;
        let mut messages = 0u64;
        for (i, line) in parts.into_iter().enumerate() {
            let mut line = line.strip_suffix(b"\r").unwrap_or(line);
            if i == 0 {
                line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
            }
            for r in parse_line(line).records {
                messages += feedback::items(&r, false)
                    .iter()
                    .filter(|it| it.feedback_type == FeedbackType::Message)
                    .count() as u64;
            }
        }
        let past = excerpt(&p, Selection::Turns(messages + 1, messages + 1), &rd()).unwrap_err();
        assert!(
            matches!(past, SourceError::RangeOutsideFile { available, .. } if available == messages),
            "{}: {past}",
            p.display()
        );
        if messages > 0 {
            match excerpt(&p, Selection::Turns(messages, messages), &rd()) {
                Ok(ex) => {
                    assert_eq!(ex.line_end, lines, "{}", p.display());
                    assert_eq!(ex.lines_in_file, lines, "{}", p.display());
                }
                Err(e) => panic!("{}: {e}", p.display()),
            }
            let first = excerpt(&p, Selection::Turns(1, 1), &rd()).unwrap();
            assert!(first.content.contains("user: "), "{}", p.display());
            checked += 1;
        }
    }
    assert!(checked > 20, "only {checked} corpus files with prompts");
}
