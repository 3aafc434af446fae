//! Conversation text: roles, what is left out, truncation at paragraph boundaries.

use super::*;
use crate::parse::parse_line;

fn turn(role: Role, text: &str) -> Turn<'_> {
    Turn {
        role,
        text: text.into(),
        agent: None,
    }
}

/// The turn of one transcript line, through the parser.
fn of_line(line: &str) -> Option<(Role, String)> {
    parse_line(line.as_bytes())
        .records
        .first()
        .and_then(turn_of)
}

#[test]
fn string_content_and_block_arrays() {
    assert_eq!(
        of_line(r#"{"type":"user","message":{"role":"user","content":"fix the flaky test"}}"#),
        Some((Role::User, "fix the flaky test".into()))
    );
    assert_eq!(
        of_line(
            r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"Looking at it."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}"#
        ),
        Some((Role::Assistant, "Looking at it.".into()))
    );
}

#[test]
fn tools_meta_and_plumbing_are_left_out() {
    // A tool result only.
    assert_eq!(
        of_line(
            r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}"#
        ),
        None
    );
    // Injected.
    assert_eq!(
        of_line(r#"{"type":"user","isMeta":true,"message":{"role":"user","content":"Caveat"}}"#),
        None
    );
    // Command plumbing, a plumbing block beside a real one.
    assert_eq!(
        of_line(
            r#"{"type":"user","message":{"role":"user","content":"<command-name>/clear</command-name>"}}"#
        ),
        None
    );
    assert_eq!(
        of_line(
            r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"now run it"}]}}"#
        ),
        Some((Role::User, "now run it".into()))
    );
    // Other line types.
    assert_eq!(
        of_line(r#"{"type":"summary","summary":"x","leafUuid":"u"}"#),
        None
    );
    assert_eq!(user_text("  [Request interrupted by user]"), None);
    assert_eq!(user_text("<local-command-stdout>x"), None);
    assert_eq!(user_text(" go on ").as_deref(), Some("go on"));
    assert_eq!(
        user_text("<ide_opened_file>The user opened the file /a/b.rs in the IDE.</ide_opened_file>\nfix it").as_deref(),
        Some("fix it")
    );
}

#[test]
fn malformed_and_empty_input() {
    assert_eq!(of_line("{not json"), None);
    assert_eq!(
        of_line(r#"{"type":"assistant","message":{"content":7}}"#),
        None
    );
    assert_eq!(of_line(""), None);
    let c = build(Vec::new(), None);
    assert_eq!(c.text, "");
    assert_eq!((c.turns, c.total_chars, c.dropped_chars), (0, 0, 0));
    let c = build(vec![turn(Role::User, "  \n ")], Some(10));
    assert_eq!(c.text, "");
}

#[test]
fn turns_are_labelled_and_separated_by_a_blank_line() {
    let c = build(
        vec![
            turn(Role::User, "fix it"),
            turn(Role::Assistant, "Done.\nTwo lines."),
            Turn {
                role: Role::Assistant,
                text: "sub".into(),
                agent: Some("a1"),
            },
        ],
        None,
    );
    assert_eq!(
        c.text,
        "User: fix it\n\nAssistant:\nDone.\nTwo lines.\n\nAssistant (agent a1): sub"
    );
    assert_eq!(c.turns, 3);
    assert_eq!(c.total_chars, c.text.chars().count());
}

#[test]
fn truncation_keeps_the_end_from_a_paragraph_boundary() {
    let turns = vec![
        turn(Role::User, "first question"),
        turn(Role::Assistant, "first answer"),
        turn(Role::User, "second question"),
    ];
    let full = build(turns.clone(), None).text;
    // Cut inside the second turn: kept from the third.
    let c = build(turns.clone(), Some("second question".len() + 12));
    assert_eq!(c.text, "User: second question");
    assert_eq!(
        c.dropped_chars + c.text.chars().count(),
        full.chars().count()
    );
    // Cut exactly at a turn's start: nothing more is dropped.
    let keep = "Assistant: first answer\n\nUser: second question".len();
    assert_eq!(
        build(turns.clone(), Some(keep)).text,
        &full[full.len() - keep..]
    );
    // Cut between the two newlines of a boundary.
    let c = build(turns.clone(), Some(keep + 1));
    assert_eq!(c.text, &full[full.len() - keep..]);
    // Larger than the text: untouched.
    assert_eq!(build(turns.clone(), Some(10_000)).dropped_chars, 0);
    // No boundary after the cut: kept from the next word, never from inside one.
    let c = build(turns.clone(), Some("ond question".len()));
    assert_eq!(c.text, "question");
    assert_eq!(
        c.dropped_chars + c.text.chars().count(),
        full.chars().count()
    );
    // A cut already at a word's start keeps it.
    assert_eq!(build(turns.clone(), Some(8)).text, "question");
    // The cut inside the last word: that word is kept whole, never half of it.
    let c = build(turns, Some(5));
    assert_eq!(c.text, "question");
}

#[test]
fn truncation_counts_characters_not_bytes() {
    let c = build(vec![turn(Role::User, "ééééé ééé")], Some(3));
    assert_eq!(c.text, "ééé");
    assert_eq!(c.dropped_chars, "User: ééééé ".chars().count());
}

#[test]
fn a_window_reads_forward_from_paragraph_to_paragraph() {
    let c = build(
        [
            turn(Role::User, "first question here"),
            turn(Role::Assistant, "a long answer with many words"),
            turn(Role::User, "second"),
        ],
        None,
    );
    let mut pages = Vec::new();
    let mut at = Some(0);
    while let Some(start) = at {
        let (text, next) = c.window(start, 40);
        assert!(text.chars().count() <= 40, "{text:?}");
        pages.push(text);
        at = next;
    }
    assert_eq!(pages.concat(), c.text);
    assert!(pages[0].ends_with("\n\n"), "{:?}", pages[0]);
    // A page shorter than a word still moves forward.
    let (text, next) = c.window(0, 3);
    assert_eq!(text, "Use");
    assert_eq!(next, Some(3));
    assert_eq!(c.window(c.total_chars, 10), (String::new(), None));
}
