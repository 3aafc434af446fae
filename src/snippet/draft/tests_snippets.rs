//! Regression tests for the snippet defects found by reading real transcripts (cascade errors,
//! fixes that were another action, fixes without their change, churn kept as a lesson,
//! lessons cut from how-tos, decisions without options) and for the triage rules tuned against
//! the hand labels (acknowledged corrections, pasted failures, laid-out options, precedence).

use crate::episode::tests::*;

fn one_episode(lines: &[String]) -> crate::extract::rows::EpisodeRow {
    let (b, _) = run(lines);
    b.finish(SID, &Auto).unwrap()
}

fn types(ep: &crate::extract::rows::EpisodeRow) -> Vec<&str> {
    ep.snippets
        .iter()
        .map(|s| s.snippet_type.as_str())
        .collect()
}

#[test]
fn a_cascade_error_is_no_failure() {
    let ep = one_episode(&[
        prompt(1, "Update the two config files for the parser"),
        call(
            2,
            "t1",
            "Edit",
            r#"{"file_path":"/x/a.toml","old_string":"a","new_string":"b"}"#,
        ),
        call(2, "t2", "Bash", r#"{"command":"cargo build -p parser"}"#),
        result(
            3,
            "t2",
            true,
            "<tool_use_error>Sibling tool call errored</tool_use_error>",
        ),
        call(4, "t3", "Bash", r#"{"command":"cargo build -p parser"}"#),
        result(5, "t3", false, "Finished"),
    ]);
    assert_eq!(ep.triage, "routine", "{}", ep.evidence);
    assert!(ep.snippets.is_empty(), "{:#?}", ep.snippets);
}

#[test]
fn another_action_is_no_fix() {
    // `cp` of another file after `cannot stat` shares the program, not the goal.
    let ep = one_episode(&[
        prompt(1, "Copy the release rules into place for the parser"),
        call(
            2,
            "t1",
            "Bash",
            r#"{"command":"cp rules/a.rules /etc/udev/"}"#,
        ),
        result(
            3,
            "t1",
            true,
            "cp: cannot stat 'rules/a.rules': No such file or directory",
        ),
        say(
            4,
            "That file is not there; copying the other rules instead.",
        ),
        call(
            5,
            "t2",
            "Bash",
            r#"{"command":"cp release/b.conf /tmp/out/"}"#,
        ),
        result(6, "t2", false, ""),
    ]);
    assert_ne!(ep.triage, "error_recovery", "{}", ep.evidence);
    assert!(
        !types(&ep).contains(&"error_reasoning"),
        "{:#?}",
        ep.snippets
    );
}

#[test]
fn the_fix_shows_its_diff_and_a_suppression_is_churn() {
    let lines = |new: &str| {
        let input = serde_json::json!({
            "file_path": "/x/cmd/main.go",
            "old_string": "f, err := os.Open(path)\n",
            "new_string": new,
        })
        .to_string();
        vec![
            prompt(1, "Make the linter pass on the main command"),
            call(2, "t1", "Bash", r#"{"command":"golangci-lint run ./..."}"#),
            result(3, "t1", true, "Exit code 1\ncmd/main.go:19:13: G304: Potential file inclusion via variable (gosec)"),
            say(4, "The linter flags the open because the path comes from a variable."),
            call(5, "t2", "Edit", &input),
            result(6, "t2", false, "ok"),
            call(7, "t3", "Bash", r#"{"command":"golangci-lint run ./..."}"#),
            result(8, "t3", false, "0 issues."),
        ]
    };
    // A real fix: the diff and the passing command are in the snippet.
    let ep = one_episode(&lines("f, err := os.Open(filepath.Clean(path))\n"));
    assert_eq!(ep.triage, "error_recovery");
    let s = &ep.snippets[0];
    assert!(
        s.content.contains(
            "```diff\n- f, err := os.Open(path)\n+ f, err := os.Open(filepath.Clean(path))\n```"
        ),
        "{}",
        s.content
    );
    assert!(
        s.content
            .contains("Then it worked (line 8): Bash golangci-lint run ./..."),
        "{}",
        s.content
    );
    // The same failure silenced by a comment is routine churn: no snippet.
    let ep = one_episode(&lines("f, err := os.Open(path) //nolint:gosec\n"));
    assert_eq!(ep.triage, "error_recovery");
    assert!(ep.snippets.is_empty(), "{:#?}", ep.snippets);
}

#[test]
fn narration_and_announcements_are_not_what_was_tried() {
    let ep = one_episode(&[
        prompt(1, "Run the parser tests"),
        call(2, "t1", "Bash", r#"{"command":"pytest tests/test_parser.py"}"#),
        result(3, "t1", true, "FAILED tests/test_parser.py::test_dates - AssertionError: 2024 != 2025"),
        say(4, "Let me check the fixture:"),
        say(5, "The fixture date is hard-coded to 2024 because it was written last year, so the expectation is stale."),
        call(6, "t2", "Edit", r#"{"file_path":"/x/tests/test_parser.py","old_string":"year = 2024\n","new_string":"year = 2025\n"}"#),
        result(7, "t2", false, "ok"),
        call(8, "t3", "Bash", r#"{"command":"pytest tests/test_parser.py"}"#),
        result(9, "t3", false, "1 passed"),
    ]);
    let s = &ep.snippets[0];
    assert!(
        !s.content.contains("Let me check the fixture"),
        "{}",
        s.content
    );
    assert!(
        s.content
            .contains("Why (line 5): The fixture date is hard-coded"),
        "{}",
        s.content
    );
}

#[test]
fn a_lesson_out_of_a_how_to_and_a_heading_only_decision_are_dropped() {
    let ep = one_episode(&[
        prompt(1, "How do I build the docs site on Windows"),
        say(
            2,
            "Next time run these:\n```\ncd \"S:\\repo\\docs\"\nnpm run build\n```",
        ),
        say(3, "## Possible Approaches\n\nI'll go with the first."),
    ]);
    assert!(ep.snippets.is_empty(), "{:#?}", ep.snippets);
}

#[test]
fn an_acknowledged_correction_labels_the_turn() {
    let ep = one_episode(&[
        prompt(1, "Add the export button to the report page"),
        say(2, "Added the export button to the report page header."),
        prompt(
            3,
            "the export should live in the settings tab for the report",
        ),
        say(
            4,
            "You're right, the settings tab is where exports belong. Moving it.",
        ),
    ]);
    let v: serde_json::Value = serde_json::from_str(&ep.turn_labels).unwrap();
    assert_eq!(v[1]["triage"], "user_correction", "{v}");
    assert_eq!(v[1]["evidence"][0]["signal"], "acknowledged", "{v}");
    // Not in the session's first turn: nothing was there to correct.
    let ep = one_episode(&[
        prompt(1, "Is the export button on the report page?"),
        say(2, "You're right to ask: it is in the header."),
    ]);
    assert_eq!(ep.triage, "routine");
}

#[test]
fn a_pasted_failure_and_laid_out_options() {
    let lines = [
        prompt(1, "Add the submission column to the leads view"),
        say(2, "Added the column."),
        prompt(3, "psycopg2 said:\nTraceback (most recent call last):\nKeyError: 'submission_done'"),
        say(4, "The module needs an upgrade to create the column."),
        prompt(5, "How should we store the telemetry preference for the leads view"),
        say(6, "Two ways:\n- **A) Environment variable** - simple\n- **B) Settings file** - one source of truth\n\nI'd lean toward B."),
    ];
    // The turns may fall in more than one episode: gather them all.
    let (b, rows) = run(&lines);
    let mut eps: Vec<_> = rows.into_iter().filter(|r| r.closed).collect();
    eps.extend(b.finish(SID, &Auto));
    let mut labels: Vec<String> = Vec::new();
    for ep in &eps {
        let v: serde_json::Value = serde_json::from_str(&ep.turn_labels).unwrap();
        for t in v.as_array().unwrap() {
            labels.push(t["triage"].as_str().unwrap().to_string());
        }
    }
    assert_eq!(labels, ["routine", "user_correction", "design_decision"]);
}

#[test]
fn a_correction_outranks_a_recovery_in_its_turn() {
    let ep = one_episode(&[
        prompt(1, "Build the parser crate"),
        say(2, "Built."),
        prompt(3, "still not working, the parser build fails on my machine"),
        call(4, "t1", "Bash", r#"{"command":"cargo build -p parser"}"#),
        result(5, "t1", true, "error[E0308]: mismatched types"),
        call(
            6,
            "t2",
            "Bash",
            r#"{"command":"cargo build -p parser --locked"}"#,
        ),
        result(7, "t2", false, "Finished"),
    ]);
    let v: serde_json::Value = serde_json::from_str(&ep.turn_labels).unwrap();
    assert_eq!(v[1]["triage"], "user_correction", "{v}");
    assert!(ep.labels.contains("user_correction"));
}
