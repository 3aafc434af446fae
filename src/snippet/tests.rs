//! Unit tests of the parent module.

use super::*;

#[test]
fn types_parse_both_spellings() {
    assert_eq!(
        "error-reasoning".parse::<SnippetType>(),
        Ok(SnippetType::ErrorReasoning)
    );
    assert_eq!(
        "learning_pattern".parse::<SnippetType>(),
        Ok(SnippetType::LearningPattern)
    );
    let e = "tip".parse::<SnippetType>().unwrap_err();
    assert!(e.to_string().contains("decision_rationale"), "{e}");
}

#[test]
fn gates_reject_each_kind_of_noise() {
    let cases = [
        ("**Summary**:", "shorter"),
        ("**Root cause analysis of it**:", "markdown label"),
        ("## Implementation details here:", "markdown label"),
        ("────────────────────────────", "fewer than 3"),
        ("│ box │ drawing │ table │ here ─────", "box"),
        ("|------|--------|-------------|", "fewer than 3"),
        ("| col a | col b |\n|---|---|\n| one | two |", "table"),
        ("[1] first thing\n[2] second thing", "bracketed"),
        ("Phase 2: Implementation", "step header"),
        ("## OBSERVE\n**THINK**", "step header"),
        ("short text", "shorter"),
        ("!!! ??? ... ,,, ;;; ::: a", "fewer than 3"),
        ("** __ ## -- ab ** __ ## -- cd **", "under 10"),
    ];
    for (text, why) in cases {
        let got = noise_reason(text);
        assert!(
            got.is_some_and(|g| g.contains(why)),
            "{text:?}: got {got:?}, want {why}"
        );
    }
}

#[test]
fn gates_accept_prose() {
    for text in [
        "The root cause was a stale lock file left by the previous run.",
        "Plan the migration so that old rows keep their ids and nothing is lost.",
        "**Root cause**: the parser assumed every line ends with a newline.",
    ] {
        assert_eq!(noise_reason(text), None, "{text}");
    }
}

#[test]
fn validate_limits() {
    let ok = "x ".repeat(60);
    assert_eq!(validate("A title", &ok), Ok(()));
    assert_eq!(
        validate("A title", "too small but words"),
        Err(SnippetError::ContentSize { bytes: 19 })
    );
    assert!(matches!(
        validate(&"t".repeat(257), &ok),
        Err(SnippetError::TitleTooLong { chars: 257 })
    ));
    assert_eq!(validate("  ", &ok), Err(SnippetError::EmptyTitle));
    let big = "word ".repeat(2100);
    assert!(matches!(
        validate("t", &big),
        Err(SnippetError::ContentSize { .. })
    ));
}

#[test]
fn hash_ignores_case_and_spacing() {
    assert_eq!(
        normalized_hash("The  Fix\nwas here"),
        normalized_hash("the fix was   HERE ")
    );
    assert_ne!(normalized_hash("the fix"), normalized_hash("the fox"));
}

#[test]
fn tool_output_keeps_error_lines() {
    let mut out = String::new();
    for i in 0..100 {
        out.push_str(&format!("   Compiling crate{i} v0.1.0\n"));
    }
    out.push_str("error[E0308]: mismatched types\n  --> src/main.rs:4:5\n");
    out.push_str("warning: build failed\n");
    let cut = cut_tool_output(&out, 10);
    assert!(cut.contains("error[E0308]"), "{cut}");
    assert!(cut.contains("src/main.rs:4:5"), "{cut}");
    assert!(!cut.contains("crate5 "), "{cut}");
    // The first line is the tool's own summary: always kept.
    assert!(cut.starts_with("   Compiling crate0 v0.1.0\n…\n"), "{cut}");
    // A traceback ends with the exception: kept even when earlier lines fill the budget.
    let mut tb = String::from("Exit code 1\nTraceback (most recent call last):\n");
    for i in 0..20 {
        tb.push_str(&format!(
            "  File \"m{i}.py\", line {i}, in f\n    raise_error_{i}()\n"
        ));
    }
    tb.push_str("odoo.tools.convert.ParseError: while parsing views.xml:12\n");
    let cut = cut_tool_output(&tb, 6);
    assert!(cut.contains("ParseError: while parsing"), "{cut}");
    assert!(cut.starts_with("Exit code 1"), "{cut}");
    let plain: String = (0..50).map(|i| format!("line {i}\n")).collect();
    let cut = cut_tool_output(&plain, 4);
    assert_eq!(cut, "line 0\nline 1\n…\nline 48\nline 49");
}

#[test]
fn titles_are_clean_and_short() {
    assert_eq!(
        title_from("**Decision**:\n## Use SQLite by default. Postgres is optional."),
        "Use SQLite by default."
    );
    let long = "word ".repeat(100);
    let t = title_from(&long);
    assert_eq!(t.chars().count(), MAX_TITLE_CHARS);
    assert!(t.ends_with('…'));
}

#[test]
fn project_tags() {
    assert_eq!(
        project_tag("S:\\OneDrive\\Grand Rapids  IT Hub").as_deref(),
        Some("project:grand-rapids-it-hub")
    );
    assert_eq!(
        project_tag("/home/u/Gleaner/").as_deref(),
        Some("project:gleaner")
    );
    assert_eq!(
        project_tag("-Users-testuser-proj").as_deref(),
        Some("project:-users-testuser-proj")
    );
    assert_eq!(project_tag("/"), None);
}

#[test]
fn tags_and_metadata() {
    assert_eq!(path_tags("/a/b/main.RS").as_deref(), Some("ext:rs"));
    assert_eq!(path_tags("/a/Makefile"), None);
    assert_eq!(path_tags("/a/.env"), None);
    let m: serde_json::Value = serde_json::from_str(&metadata_json(
        &"w ".repeat(400),
        Some("pivot"),
        Some(0.8),
        None,
    ))
    .unwrap();
    assert_eq!(m["word_count"], 400);
    assert_eq!(m["reading_time_s"], 120);
    assert_eq!(m["triage"], "pivot");
}

#[test]
fn ansi_and_headlines() {
    assert_eq!(
        strip_ansi("\u{1b}[34mChecked\u{1b}[0m 1 file"),
        "Checked 1 file"
    );
    assert_eq!(
        headline("Exit code 1\n   Compiling x\nerror[E0425]: cannot find value `y`"),
        "error[E0425]: cannot find value `y`"
    );
    assert_eq!(
        headline("<tool_use_error>String to replace not found in file.</tool_use_error>"),
        "String to replace not found in file."
    );
    assert_eq!(headline("Exit code 2"), "Exit code 2");
    assert_eq!(
        headline("Traceback (most recent call last):\n  File \"a.py\"\nKeyError: 'x'"),
        "KeyError: 'x'"
    );
    // Closing brackets and quotes belong to the message.
    assert_eq!(
        headline("x.go:68:13: Error return value is not checked (errcheck)"),
        "x.go:68:13: Error return value is not checked (errcheck)"
    );
    assert_eq!(
        headline("a::test_cache_invalidation PASSED\n==== FAILURES ====\nboom"),
        "FAILURES"
    );
    // Log-level warnings and weak words give way to a failure.
    assert_eq!(
        headline("Exit code 255\nWarn: Can't find .pfb for face 'Courier'\n12:00 ERROR db: Failed to load registry"),
        "12:00 ERROR db: Failed to load registry"
    );
    // Decoration is not a headline; a sentence is.
    assert_eq!(
        headline(
            "┃  biome-fix ❯\nThe following paths are ignored by your .gitignore:\nexit status 1"
        ),
        "The following paths are ignored by your .gitignore"
    );
}

#[test]
fn truncation_respects_char_boundaries() {
    let s = "é".repeat(100);
    let t = truncate_bytes(&s, 51);
    assert!(t.len() <= 51);
    assert!(t.ends_with('…'));
}

#[test]
fn a_compaction_preview_says_what_it_is_about() {
    use crate::snippet::text::summary_preview;
    let t = "This session is being continued from a previous conversation that ran out of \
             context. The conversation is summarized below:\nAnalysis:\nLet me chronologically \
             analyze the conversation:\n\n1. **Initial Problem**: RangeError: Invalid Date";
    assert_eq!(
        summary_preview(t),
        "1. **Initial Problem**: RangeError: Invalid Date"
    );
    let t = "<analysis>...</analysis>\nSummary:\n1. Primary Request and Intent:\n   The user \
             asked for a dark theme.\n2. Key Technical Concepts:";
    assert_eq!(summary_preview(t), "The user asked for a dark theme.");
    assert_eq!(
        summary_preview("Fixed the login bug"),
        "Fixed the login bug"
    );
}
