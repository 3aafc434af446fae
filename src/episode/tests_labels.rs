//! Unit tests of episode labels from literal lines: recoveries, corrections, pivots,
//! decisions, and which label wins.

use super::tests::*;

#[test]
fn error_then_success_is_error_recovery_with_a_snippet() {
    let lines = vec![
        prompt(1, "Fix the failing build of the parser crate please"),
        call(2, "t1", "Bash", r#"{"command":"cd /x && cargo build -p parser"}"#),
        result(
            3,
            "t1",
            true,
            "Exit code 101\n   Compiling parser v0.1.0\nerror[E0308]: mismatched types\n  --> src/lib.rs:10:5\nerror: could not compile `parser`",
        ),
        say(4, "It fails because the function returns a u32 where the signature says u64; I'll widen the return type so callers keep working."),
        call(5, "t2", "Edit", r#"{"file_path":"/x/src/lib.rs","old_string":"fn len() -> u64 {\n    self.n\n}","new_string":"fn len() -> u64 {\n    u64::from(self.n)\n}"}"#),
        result(6, "t2", false, "ok"),
        call(7, "t3", "Bash", r#"{"command":"cargo build"}"#),
        result(8, "t3", false, "Finished"),
    ];
    let (b, _) = run(&lines);
    let ep = b.finish(SID, &Auto).unwrap();
    assert_eq!(ep.triage, "error_recovery");
    assert_eq!(ep.confidence, 0.85);
    let ev: serde_json::Value = serde_json::from_str(&ep.evidence).unwrap();
    assert_eq!(ev[0]["line"], 3);
    assert_eq!(ev[0]["signal"], "error_then_success");
    assert_eq!(ep.snippets.len(), 1, "{:#?}", ep.snippets);
    let s = &ep.snippets[0];
    assert_eq!(s.snippet_type, "error_reasoning");
    assert!(s.title.starts_with("`cargo build` failed"), "{}", s.title);
    // The title says why it failed and what fixed it, not the error's headline.
    assert!(
        s.title
            .contains("returns a u32 where the signature says u64"),
        "{}",
        s.title
    );
    assert!(
        s.title
            .ends_with("changing `self.n` to `u64::from(self.n)` in lib.rs fixed it"),
        "{}",
        s.title
    );
    assert!(s.content.contains("widen the return type"), "{}", s.content);
    // The edit between the failure and the re-run is the fix; the re-run is not a change.
    assert!(
        s.content.contains(
            "The fix:\n- (line 5) Edit /x/src/lib.rs\n```diff\n- self.n\n+ u64::from(self.n)\n```\n"
        ),
        "{}",
        s.content
    );
    assert!(
        s.content
            .contains("Then it worked (line 8): Bash cargo build"),
        "{}",
        s.content
    );
    let m: serde_json::Value = serde_json::from_str(&s.metadata).unwrap();
    assert!(
        m["generalization"]
            .as_str()
            .is_some_and(|g| g.contains("changing `self.n` to `u64::from(self.n)` in lib.rs")),
        "{m}"
    );
    assert!(m["score"].as_f64().is_some_and(|v| v >= 0.8), "{m}");
    assert!(!s.content.contains("- (line 7)"), "{}", s.content);
    assert_eq!((s.line_start, s.line_end), (3, 8));
    assert!(
        s.tags.contains(&"error:compile".to_string()),
        "{:?}",
        s.tags
    );
    assert!(s.tags.contains(&"tool:bash".to_string()));
    assert!(s.tags.contains(&"project:gleaner".to_string()));
    assert!(s.tags.contains(&"ext:rs".to_string()));
    let m: serde_json::Value = serde_json::from_str(&s.metadata).unwrap();
    assert_eq!(m["triage"], "error_recovery");
    assert_eq!(m["version"], "2.0.5");
}

#[test]
fn a_failure_never_fixed_is_not_recovery() {
    let lines = vec![
        prompt(1, "Fix the failing build of the parser crate please"),
        call(2, "t1", "Bash", r#"{"command":"cargo build"}"#),
        result(3, "t1", true, "error: could not compile"),
        call(4, "t2", "Bash", r#"{"command":"ls -la"}"#),
        result(5, "t2", false, "files"),
    ];
    let (b, _) = run(&lines);
    assert_eq!(b.finish(SID, &Auto).unwrap().triage, "routine");
}

#[test]
fn denial_with_reason_is_a_user_correction_and_a_lesson() {
    let lines = vec![
        prompt(1, "Install the dependencies for the web frontend"),
        call(2, "t1", "Bash", r#"{"command":"npm install"}"#),
        result(
            3,
            "t1",
            true,
            "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). To tell you how to proceed, the user said:\nuse pnpm, this repository has a pnpm lockfile",
        ),
        say(4, "Understood, this repository uses pnpm with a lockfile, so I will install the dependencies with pnpm install instead of npm."),
    ];
    let (b, _) = run(&lines);
    let ep = b.finish(SID, &Auto).unwrap();
    assert_eq!(ep.triage, "user_correction");
    assert_eq!(ep.confidence, 0.95);
    assert_eq!(ep.snippets.len(), 1, "{:#?}", ep.snippets);
    let s = &ep.snippets[0];
    assert_eq!(s.snippet_type, "learning_pattern");
    assert!(s.content.contains("use pnpm"), "{}", s.content);
    assert!(s.content.contains("pnpm install instead"), "{}", s.content);
    assert_eq!((s.line_start, s.line_end), (3, 4));
}

#[test]
fn interruption_then_prompt_and_correcting_phrases() {
    let lines = vec![
        prompt(1, "Rename the config loader module to settings"),
        say(2, "Renaming the config loader."),
        prompt(3, "[Request interrupted by user]"),
        prompt(4, "Keep the config loader name and only rename the struct"),
    ];
    let (b, _) = run(&lines);
    let ep = b.finish(SID, &Auto).unwrap();
    assert_eq!(ep.triage, "user_correction");
    let ev: serde_json::Value = serde_json::from_str(&ep.evidence).unwrap();
    assert_eq!(ev[0]["signal"], "interruption_redirect");
    assert_eq!(ev[0]["line"], 4);

    let lines = vec![
        prompt(1, "Rename the config loader module to settings"),
        say(2, "Renaming the config loader module now."),
        prompt(
            3,
            "No, keep the config loader module name, rename the struct",
        ),
    ];
    let (b, _) = run(&lines);
    let ep = b.finish(SID, &Auto).unwrap();
    assert_eq!(
        (ep.triage.as_str(), ep.confidence),
        ("user_correction", 0.8)
    );
    // The session's first prompt corrects nothing.
    let (b, _) = run(&[prompt(
        1,
        "Actually, let's start with the config loader module",
    )]);
    assert_eq!(b.finish(SID, &Auto).unwrap().triage, "routine");
    // "piano," is not "no,".
    let lines = vec![
        prompt(1, "Describe the piano tuning module in the config loader"),
        prompt(2, "The piano, the config loader module and tuning code"),
    ];
    let (b, _) = run(&lines);
    assert_eq!(b.finish(SID, &Auto).unwrap().triage, "routine");
}

#[test]
fn pivot_and_decision_phrases() {
    let lines = vec![
        prompt(1, "Speed up the ingest loop of the tailer module"),
        say(2, "Batching the reads did not help at all because the parser dominates the profile, as the flame graph shows clearly.\n\nLet's try a different approach: parse lazily and skip tool outputs without allocating, which removes most of the work."),
    ];
    let (b, _) = run(&lines);
    let ep = b.finish(SID, &Auto).unwrap();
    assert_eq!((ep.triage.as_str(), ep.confidence), ("pivot", 0.75));
    assert_eq!(ep.snippets[0].snippet_type, "decision_rationale");
    assert!(ep.snippets[0].content.contains("parser dominates"));

    let lines = vec![
        prompt(1, "Pick a storage engine for the tailer checkpoints"),
        say(2, "There is a trade-off here: SQLite is embedded and needs no setup, while PostgreSQL can be shared by a team. I'll go with SQLite by default and keep PostgreSQL optional, because most users run one machine."),
    ];
    let (b, _) = run(&lines);
    let ep = b.finish(SID, &Auto).unwrap();
    assert_eq!(ep.triage, "design_decision");
    // Two distinct phrases: 0.7 + 0.05.
    assert_eq!(ep.confidence, 0.75);
    assert_eq!(ep.snippets[0].snippet_type, "decision_rationale");
    assert!(
        ep.snippets[0].title.starts_with("Decision: "),
        "{}",
        ep.snippets[0].title
    );

    // Options laid out for the user to pick from: the choice is handed over, nothing was
    // decided there: no decision, and no rationale is kept.
    let lines = vec![
        prompt(1, "Pick a storage engine for the tailer checkpoints"),
        say(2, "There are two ways to store the checkpoints, each with its own costs:\n\n1. **Option 1** is simpler: SQLite, embedded and zero setup for a single machine\n2. **Option 2** is better for teams: PostgreSQL, shared across machines\n\nWhich direction feels right to you?"),
    ];
    let (b, _) = run(&lines);
    let ep = b.finish(SID, &Auto).unwrap();
    assert_eq!(ep.triage, "routine");
    assert!(ep.snippets.is_empty(), "{:?}", ep.snippets);

    // "rather than" in a description decides nothing; with a choice word it does.
    let lines = vec![
        prompt(1, "Why do the provider counts of the care teams come out empty"),
        say(2, "The route matches provider IDs directly, but care teams contain provider names rather than IDs, so nothing matches and every count stays at zero."),
    ];
    let (b, _) = run(&lines);
    assert_eq!(b.finish(SID, &Auto).unwrap().triage, "routine");
    let lines = vec![
        prompt(1, "How should the summaries be generated for each session"),
        say(2, "I'll shell out to the claude CLI rather than add the Anthropic SDK, because the user already has Claude Code installed and authenticated, so no new dependency or key management is needed."),
    ];
    let (b, _) = run(&lines);
    let ep = b.finish(SID, &Auto).unwrap();
    assert_eq!(ep.triage, "design_decision");
    assert_eq!(ep.snippets.len(), 1, "{:?}", ep.snippets);

    // In a code block a phrase is an example, not a statement.
    let lines = vec![
        prompt(1, "Pick a storage engine for the tailer checkpoints"),
        say(2, "Here is the config:\n```toml\n# option 1: sqlite, trade-off free\nurl = \"sqlite://x\"\n```"),
    ];
    let (b, _) = run(&lines);
    assert_eq!(b.finish(SID, &Auto).unwrap().triage, "routine");
}

#[test]
fn the_assistant_taking_back_its_own_plan_is_a_pivot() {
    // Nobody asked: the assistant reverses what it had set up itself.
    let lines = vec![
        prompt(1, "Commit the user configuration to the repository"),
        say(2, "Since `user.nix` is gitignored, the installer will not find it, so we need to rethink the gitignore. The hash is safe to commit, it is one-way. The gitignore was overcautious: I'll remove it."),
    ];
    let (b, _) = run(&lines);
    assert_eq!(b.finish(SID, &Auto).unwrap().triage, "pivot");
}

#[test]
fn a_revert_command_is_a_pivot() {
    let lines = vec![
        prompt(1, "Speed up the ingest loop of the tailer module"),
        call(
            2,
            "t1",
            "Bash",
            r#"{"command":"git checkout -- src/tailer.rs"}"#,
        ),
        result(3, "t1", false, ""),
    ];
    let (b, _) = run(&lines);
    let ep = b.finish(SID, &Auto).unwrap();
    assert_eq!((ep.triage.as_str(), ep.confidence), ("pivot", 0.8));
}

#[test]
fn ties_follow_precedence_and_strongest_wins() {
    let lines = vec![
        prompt(1, "Speed up the ingest loop of the tailer module"),
        call(2, "t1", "Bash", r#"{"command":"cargo bench"}"#),
        result(3, "t1", true, "error: bench failed"),
        call(4, "t2", "Bash", r#"{"command":"cargo bench"}"#),
        result(5, "t2", false, "ok"),
        prompt(6, "[Request interrupted by user]"),
        prompt(
            7,
            "Speed up the ingest loop of the tailer module, bench only parse",
        ),
    ];
    let (b, _) = run(&lines);
    // error_recovery 0.85 and interruption_redirect 0.85: user_correction wins the tie.
    let ep = b.finish(SID, &Auto).unwrap();
    assert_eq!(
        (ep.triage.as_str(), ep.confidence),
        ("user_correction", 0.85)
    );
    let ev: serde_json::Value = serde_json::from_str(&ep.evidence).unwrap();
    let labels: Vec<&str> = ev
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["user_correction", "error_recovery"]);
}

/// Mistakes new users saw shown as facts: a word cut in two at the scan's end, a log line
/// pasted in, a numbered review list.
#[test]
fn cut_words_pasted_logs_and_review_lists_are_no_signals() {
    // "nowhere" cut to "no" by the 600-byte window (119 x 5 bytes, then "no|where") is not
    // the word "no".
    let lines = vec![
        prompt(1, "Set up the RDP client for the office machine"),
        say(2, "Done: the client connects with the saved profile."),
        prompt(3, &format!("{}nowhere to be seen", "aaaa ".repeat(119))),
        say(4, "Let me check."),
    ];
    let (b, _) = run(&lines);
    let ep = b.finish(SID, &Auto).unwrap();
    assert_eq!(ep.triage, "routine", "{}", ep.evidence);
    // A pasted log line whose words open with "No".
    let lines = vec![
        prompt(1, "Set up the RDP client for the office machine"),
        say(2, "Done: the client connects with the saved profile."),
        prompt(
            3,
            "when i sign out it closes the rdp session\n[12:01:02:123] [1234:5678] [WARN][com.freerdp.client.common] - No user name set",
        ),
        say(4, "Let me check."),
    ];
    let (b, _) = run(&lines);
    let ep = b.finish(SID, &Auto).unwrap();
    assert_eq!(ep.triage, "routine", "{}", ep.evidence);
    // A review's numbered findings are not options to choose between.
    let lines = vec![
        prompt(1, "Review the pull request for the parser"),
        say(
            2,
            "Here is my review of the changes:\n\n1. **Missing null check** - `parse` dereferences `cfg` before checking it.\n2. **Leaky file handle** - `load` never closes the file.\n3. **Naming** - `tmp2` says nothing.\n\nWhich should I fix first?",
        ),
    ];
    let (b, _) = run(&lines);
    let ep = b.finish(SID, &Auto).unwrap();
    assert_eq!(ep.triage, "routine", "{}", ep.evidence);
}
