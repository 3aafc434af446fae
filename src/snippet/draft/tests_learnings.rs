//! Regression tests for the snippets a reader would not keep (issue 28's bad cases, rebuilt
//! here in the shape they had in real transcripts) and for learnings worth importing: two
//! halves that are sentences, differ, and carry no transcript line or machine path.

use crate::episode::tests::*;

fn one_episode(lines: &[String]) -> crate::extract::rows::EpisodeRow {
    let (b, _) = run(lines);
    b.finish(SID, &Auto).unwrap()
}

fn halves(s: &crate::extract::rows::SnippetRow) -> (String, String) {
    let m: serde_json::Value = serde_json::from_str(&s.metadata).unwrap();
    (
        m["observation"].as_str().unwrap_or("").to_string(),
        m["generalization"].as_str().unwrap_or("").to_string(),
    )
}

#[test]
fn a_no_that_answers_a_question_is_no_correction() {
    // The assistant offered something and asked; "no, then it's good" answers the question.
    let ep = one_episode(&[
        prompt(1, "Can you see the skills I created on the web version of Claude"),
        say(
            2,
            "No — skills you create on claude.ai are not synced to Claude Code; they live as local files in `~/.claude/skills/`. Do you want me to recreate one here?",
        ),
        prompt(3, "no, then it's good. Does the same rule apply to the Windows app as well"),
        say(
            4,
            "Yes, the same rule applies on every platform: Claude Code skills are local files, stored under `%APPDATA%` on Windows.",
        ),
    ]);
    assert!(ep.snippets.is_empty(), "{:#?}", ep.snippets);
    // The same words turning down what the assistant did are a correction.
    let ep = one_episode(&[
        prompt(1, "Make the screensaver nicer, it is boring"),
        say(2, "There's a built-in toggle: I disabled the screensaver for you."),
        call(3, "t1", "Bash", r#"{"command":"omarchy-toggle-screensaver"}"#),
        result(4, "t1", false, "screensaver off"),
        prompt(5, "no, I don't want to disable the screensaver, I would rather change the text and the effects it shows"),
        say(6, "Got it — I'll turn it back on and change the text and effects it shows instead."),
    ]);
    assert_eq!(ep.triage, "user_correction", "{}", ep.evidence);
    let s = &ep.snippets[0];
    let (obs, gen) = halves(s);
    assert!(
        obs.starts_with(
            "The user corrected the assistant: \"no, I don't want to disable the screensaver"
        ),
        "{obs}"
    );
    assert!(
        gen.starts_with("When ") && gen.contains("keep to the user's correction"),
        "{gen}"
    );
    assert_ne!(obs, gen);
}

#[test]
fn a_change_of_approach_announced_as_a_trial_is_no_snippet() {
    let ep = one_episode(&[
        prompt(1, "Install the package into the virtualenv"),
        call(2, "t1", "Bash", r#"{"command":"pip install ./dist/pkg.whl"}"#),
        result(3, "t1", true, "ERROR: pkg 1.2.0 is already installed with the same version"),
        say(
            4,
            "It still did not pick up the new build. Let me try a different approach - using the force reinstall flag:",
        ),
        call(5, "t2", "Bash", r#"{"command":"pip install --force-reinstall ./dist/pkg.whl"}"#),
        result(6, "t2", false, "Successfully installed pkg-1.2.0"),
    ]);
    assert!(
        !ep.snippets
            .iter()
            .any(|s| s.title.starts_with("Change of approach")),
        "{:#?}",
        ep.snippets
    );
}

#[test]
fn a_heading_is_never_an_observation_and_options_are_named() {
    let ep = one_episode(&[
        prompt(1, "How should the tokenizer page be served from the site"),
        say(
            2,
            "## My Instinct\n\nThe submodule files are in `public/` but Next.js treats `/tokenizer/` as a route, so they are not served.\n\n1. **Copy files during build** - no submodule at runtime\n2. **Use rewrites** - proxy to the files\n3. **Move the submodule outside public/**\n\nI think option 1 is cleanest because the build then owns what is deployed.",
        ),
    ]);
    let s = ep
        .snippets
        .iter()
        .find(|s| s.snippet_type == "decision_rationale")
        .unwrap_or_else(|| panic!("{:#?}", ep.snippets));
    let (obs, gen) = halves(s);
    assert!(!obs.contains('#') && !obs.contains("My Instinct"), "{obs}");
    assert!(gen.contains("(option 1: Copy files during build)"), "{gen}");
    assert!(!s.title.contains("My Instinct"), "{}", s.title);
}

#[test]
fn a_file_name_does_not_end_the_sentence_of_a_lesson() {
    let ep = one_episode(&[
        prompt(1, "Why does the trailer test fail on existing trailers"),
        say(
            2,
            "The root cause is in `manual_commit_git.go`: the loop breaks at the trailer line before it sees the blank line above it, so an extra blank line is added.",
        ),
    ]);
    let s = &ep.snippets[0];
    assert!(s.title.contains("manual_commit_git.go"), "{}", s.title);
    let (obs, gen) = halves(s);
    assert!(
        obs.contains("manual_commit_git.go: the loop breaks")
            || obs.contains("`manual_commit_git.go`: the loop breaks"),
        "{obs}"
    );
    assert!(gen.starts_with("When "), "{gen}");
    assert_ne!(obs, gen);
}

#[test]
fn a_missing_file_then_written_is_no_fix() {
    // A Read of a file that is not there, unrelated migrations written, then the file written:
    // nothing was fixed, the file was created.
    let ep = one_episode(&[
        prompt(
            1,
            "Add the migrations for the new tables and the settings file",
        ),
        call(
            2,
            "t1",
            "Read",
            r#"{"file_path":"/Users/a/app/config/settings.yaml"}"#,
        ),
        result(
            3,
            "t1",
            true,
            "<tool_use_error>File does not exist.</tool_use_error>",
        ),
        say(
            4,
            "The settings file does not exist yet because the project never had one.",
        ),
        call(
            5,
            "t2",
            "Write",
            r#"{"file_path":"/Users/a/app/migrations/0001_tables.sql","content":"CREATE TABLE a (id int);"}"#,
        ),
        result(6, "t2", false, "ok"),
        call(
            7,
            "t3",
            "Write",
            r#"{"file_path":"/Users/a/app/config/settings.yaml","content":"debug: false"}"#,
        ),
        result(8, "t3", false, "ok"),
    ]);
    assert!(
        !ep.snippets
            .iter()
            .any(|s| s.snippet_type == "error_reasoning"),
        "{:#?}",
        ep.snippets
    );
}

#[test]
fn learning_halves_carry_no_lines_or_machine_paths() {
    let ep = one_episode(&[
        prompt(1, "Run the build of the input module tool"),
        call(2, "t1", "Bash", r#"{"command":"cd /home/v/src/inputmodule && cargo build --release -p inputmodule-control"}"#),
        result(3, "t1", true, "Exit code 101\nerror[E0463]: can't find crate for `std`"),
        say(4, "The issue is that the workspace default target is `thumbv6m-none-eabi`, so the host tool is built for the embedded target."),
        call(5, "t2", "Bash", r#"{"command":"cd /home/v/src/inputmodule && cargo build --release -p inputmodule-control --target x86_64-unknown-linux-gnu"}"#),
        result(6, "t2", false, "Finished"),
    ]);
    let s = &ep.snippets[0];
    let (obs, gen) = halves(s);
    for half in [&obs, &gen] {
        assert!(
            !half.contains("(line") && !half.contains("at line"),
            "{half}"
        );
        assert!(!half.contains("/home/v"), "{half}");
        assert!(half.ends_with(['.', ')', '"', '`']), "{half}");
    }
    assert!(obs.starts_with("`cargo build` failed with"), "{obs}");
    assert!(gen.starts_with("When `cargo build` fails with"), "{gen}");
    assert_ne!(obs, gen);
}
