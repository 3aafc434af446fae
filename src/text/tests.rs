//! Unit tests of the parent module.

use super::*;

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
