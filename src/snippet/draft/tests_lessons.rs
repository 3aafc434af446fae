//! A snippet states a lesson (issue 46): its title is the rule, the decision with its reason, or
//! what fixed what; without a lesson stated in the session, or with one the session later took
//! back, no snippet is written.

use crate::episode::tests::*;

fn one_episode(lines: &[String]) -> crate::extract::rows::EpisodeRow {
    let (b, _) = run(lines);
    b.finish(SID, &Auto).unwrap()
}

fn titles(ep: &crate::extract::rows::EpisodeRow, kind: &str) -> Vec<String> {
    ep.snippets
        .iter()
        .filter(|s| s.snippet_type == kind)
        .map(|s| s.title.clone())
        .collect()
}

/// A failed build, the reason, the edit and the passing build, then `after`.
fn fixed_build(after: &[String]) -> Vec<String> {
    let mut lines = vec![
        prompt(1, "Fix the failing build of the parser crate please"),
        call(2, "t1", "Bash", r#"{"command":"cargo build -p parser"}"#),
        result(
            3,
            "t1",
            true,
            "Exit code 101\nerror[E0308]: mismatched types\n  --> src/lib.rs:10:5",
        ),
        say(4, "It fails because the function returns a u32 where the signature says u64; I'll widen the return type."),
        call(5, "t2", "Edit", r#"{"file_path":"/x/src/lib.rs","old_string":"self.n","new_string":"u64::from(self.n)"}"#),
        result(6, "t2", false, "ok"),
        call(7, "t3", "Bash", r#"{"command":"cargo build -p parser"}"#),
        result(8, "t3", false, "Finished"),
    ];
    lines.extend_from_slice(after);
    lines
}

#[test]
fn a_fix_that_held_says_why_and_what_fixed_it() {
    let ep = one_episode(&fixed_build(&[]));
    let t = titles(&ep, "error_reasoning");
    assert_eq!(
        t,
        ["`cargo build` failed: It fails because the function returns a u32 where the signature says u64; changing `self.n` to `u64::from(self.n)` in lib.rs fixed it"],
        "{:#?}",
        ep.snippets
    );
}

#[test]
fn a_fix_that_did_not_hold_is_no_snippet() {
    // The same build fails again after the "fix".
    let ep = one_episode(&fixed_build(&[
        call(
            9,
            "t4",
            "Bash",
            r#"{"command":"cargo build -p parser --release"}"#,
        ),
        result(
            10,
            "t4",
            true,
            "Exit code 101\nerror[E0308]: mismatched types",
        ),
    ]));
    assert!(
        titles(&ep, "error_reasoning").is_empty(),
        "{:#?}",
        ep.snippets
    );
    // The user reports the same problem again.
    let ep = one_episode(&fixed_build(&[
        say(9, "The build passes now."),
        prompt(10, "no, still mismatched types in the parser build"),
    ]));
    assert!(
        titles(&ep, "error_reasoning").is_empty(),
        "{:#?}",
        ep.snippets
    );
}

#[test]
fn an_error_without_a_reason_is_no_snippet() {
    let ep = one_episode(&[
        prompt(1, "Fix the failing build of the parser crate please"),
        call(2, "t1", "Bash", r#"{"command":"cargo build -p parser"}"#),
        result(
            3,
            "t1",
            true,
            "Exit code 101\nerror[E0308]: mismatched types",
        ),
        call(
            4,
            "t2",
            "Edit",
            r#"{"file_path":"/x/src/lib.rs","old_string":"self.n","new_string":"u64::from(self.n)"}"#,
        ),
        result(5, "t2", false, "ok"),
        call(6, "t3", "Bash", r#"{"command":"cargo build -p parser"}"#),
        result(7, "t3", false, "Finished"),
    ]);
    assert_eq!(ep.triage, "error_recovery");
    assert!(
        titles(&ep, "error_reasoning").is_empty(),
        "{:#?}",
        ep.snippets
    );
}

/// A correction after some work, answered by `answer`.
fn corrected(words: &str, answer: &str) -> Vec<String> {
    vec![
        prompt(1, "Add a card for the weather on the dashboard view"),
        call(
            2,
            "t1",
            "Edit",
            r#"{"file_path":"/x/src/views/dash.vue","old_string":"<div>","new_string":"<div class=\"card\">"}"#,
        ),
        result(3, "t1", false, "ok"),
        say(
            4,
            "Added the weather card to the dashboard view with a plain div wrapper.",
        ),
        prompt(5, words),
        say(6, answer),
    ]
}

#[test]
fn a_correction_that_states_a_rule_is_titled_by_it() {
    let ep = one_episode(&corrected(
        "No, use the md-card component like the other views do",
        "Switching the weather card to md-card so it matches the other views.",
    ));
    assert_eq!(
        titles(&ep, "learning_pattern"),
        ["Use the md-card component like the other views do"],
        "{:#?}",
        ep.snippets
    );
}

#[test]
fn a_correction_that_states_no_lesson_is_no_snippet() {
    // A report of what the user saw, and an answer that concedes nothing.
    let ep = one_episode(&corrected(
        "no i dont see the weather card anywhere on the dashboard",
        "Let me check where the dashboard view is mounted.",
    ));
    assert!(
        titles(&ep, "learning_pattern").is_empty(),
        "{:#?}",
        ep.snippets
    );
    // The same report, answered by a concession that states the lesson: that is the title.
    let ep = one_episode(&corrected(
        "no i dont see the weather card anywhere on the dashboard",
        "You're right - the dashboard renders only cards registered in widgets.ts, so a card must be registered there to show. Let me add it.",
    ));
    assert_eq!(
        titles(&ep, "learning_pattern"),
        ["The dashboard renders only cards registered in widgets.ts, so a card must be registered there to show."],
        "{:#?}",
        ep.snippets
    );
}

#[test]
fn pasted_output_is_never_a_lesson() {
    let ep = one_episode(&corrected(
        "[12:03:44:120] [4521:4522] [WARN][com.freerdp.core] - you should not close the session",
        "You're right - the session closes because the sign-out hook ends it instead of locking the screen.",
    ));
    assert!(
        titles(&ep, "learning_pattern").is_empty(),
        "{:#?}",
        ep.snippets
    );
}

#[test]
fn a_decision_undone_later_is_not_kept() {
    let decided = "There is a trade-off here: SQLite is embedded and needs no setup, while PostgreSQL can be shared by a team. I'll go with SQLite by default and keep PostgreSQL optional, because most users run one machine.";
    let ep = one_episode(&[
        prompt(1, "Pick a storage engine for the tailer checkpoints"),
        say(2, decided),
    ]);
    assert_eq!(
        titles(&ep, "decision_rationale").len(),
        1,
        "{:#?}",
        ep.snippets
    );
    let ep = one_episode(&[
        prompt(1, "Pick a storage engine for the tailer checkpoints"),
        say(2, decided),
        call(3, "t1", "Bash", r#"{"command":"git checkout -- src/store.rs"}"#),
        result(4, "t1", false, ""),
        say(5, "On second thought, a plain file is enough here; scratch that plan and keep checkpoints in a JSON file."),
    ]);
    assert!(
        !ep.snippets.iter().any(|s| s.title.contains("SQLite")),
        "{:#?}",
        ep.snippets
    );
}

#[test]
fn the_first_statement_naming_what_failed_is_its_reason() {
    // No causal word, but it names what the error named, and it came first after the failure.
    let ep = one_episode(&[
        prompt(1, "Apply the Mission Control theme I made"),
        call(2, "t1", "Bash", r#"{"command":"omarchy-theme-set \"Mission Control\""}"#),
        result(3, "t1", true, "Exit code 1\nTheme 'mission-control' does not exist"),
        say(4, "The theme name gets converted to lowercase with hyphens for the folder name. Need to rename it:"),
        call(5, "t2", "Edit", r#"{"file_path":"/home/u/.config/omarchy/themes.conf","old_string":"dir = Mission Control","new_string":"dir = mission-control"}"#),
        result(6, "t2", false, "ok"),
        call(7, "t3", "Bash", r#"{"command":"omarchy-theme-set \"Mission Control\""}"#),
        result(8, "t3", false, "Effect: 1"),
    ]);
    let t = titles(&ep, "error_reasoning");
    assert!(
        t.len() == 1 && t[0].starts_with("`omarchy-theme-set` failed: The theme name gets converted to lowercase with hyphens for the folder name; "),
        "{:#?}",
        ep.snippets
    );
}

#[test]
fn options_pasted_back_are_no_choice() {
    let laid_out = "Which command should we add first?\n\n- **/test** — test generation is critical for quality\n- **/review-pr** — reviews every pull request\n- **/deploy** — ships the build\n\nWhich one do you want?";
    let pick = |prompt_text: &str| {
        one_episode(&[
            prompt(1, "Suggest some slash commands for this repository"),
            say(2, laid_out),
            prompt(3, prompt_text),
        ])
    };
    let ep = pick("the first one");
    assert_eq!(
        titles(&ep, "decision_rationale").len(),
        1,
        "{:#?}",
        ep.snippets
    );
    let ep = pick("- /test\n- /review-pr\n- /deploy\nadd all of these");
    assert!(
        titles(&ep, "decision_rationale").is_empty(),
        "{:#?}",
        ep.snippets
    );
}

#[test]
fn a_lesson_must_name_what_it_is_about() {
    // A rule whose subject is "it": no reader can place it.
    let ep = one_episode(&corrected(
        "It should also check if it's the last of the unique commits",
        "Adding the check for the last unique commit.",
    ));
    assert!(
        titles(&ep, "learning_pattern").is_empty(),
        "{:#?}",
        ep.snippets
    );
    // A decision without its reason.
    let ep = one_episode(&[
        prompt(1, "Pick a way to apply the migration on the shared database"),
        say(2, "I'll go with the cleanest fix: use --create-only to generate the migration SQL without applying it, then baseline it."),
    ]);
    assert!(
        titles(&ep, "decision_rationale").is_empty(),
        "{:#?}",
        ep.snippets
    );
}

#[test]
fn a_lesson_kept_by_an_earlier_episode_is_not_stored_again() {
    // The same rule in two episodes of one file (a compaction between them), worded a little
    // differently: the second episode stores no snippet saying it again.
    let episode = |at: u32, words: &str, answer: &str| {
        vec![
            prompt(at, "Add a card for the weather on the dashboard view"),
            call(
                at + 1,
                &format!("t{at}"),
                "Edit",
                r#"{"file_path":"/x/src/views/dash.vue","old_string":"<div>","new_string":"<div class=\"card\">"}"#,
            ),
            result(at + 2, &format!("t{at}"), false, "ok"),
            say(
                at + 3,
                "Added the weather card to the dashboard view with a plain div wrapper.",
            ),
            prompt(at + 4, words),
            say(at + 5, answer),
        ]
    };
    let mut lines = episode(
        1,
        "No, use the md-card component like the other views do",
        "Switching the weather card to md-card so it matches the other views.",
    );
    lines.push(compact(7));
    lines.extend(episode(
        8,
        "no, please use the md-card component like other views do",
        "Using md-card for the weather card, as the other views do.",
    ));
    let (b, rows) = run(&lines);
    let last = b.finish(SID, &Auto).unwrap();
    let all: Vec<&str> = rows
        .iter()
        .chain(std::iter::once(&last))
        .flat_map(|e| e.snippets.iter())
        .filter(|s| s.snippet_type == "learning_pattern")
        .map(|s| s.title.as_str())
        .collect();
    assert_eq!(
        all,
        ["Use the md-card component like the other views do"],
        "{all:?}"
    );
}
