//! Unit tests of the labels a prompt's words do not show: a failure put right by a different
//! action, an answer saying the last fix did not take, a file that continues a conversation.

use super::tests::*;

/// The label of the turn that starts at `line`.
fn label_at(lines: &[String], line: u64) -> String {
    let (b, rows) = run(lines);
    let mut eps: Vec<_> = rows.into_iter().filter(|e| e.closed).collect();
    eps.extend(b.finish(SID, &Auto));
    for ep in eps {
        let v: serde_json::Value = serde_json::from_str(&ep.turn_labels).unwrap();
        for t in v.as_array().unwrap() {
            if t["start_line"] == line {
                return t["triage"].as_str().unwrap().to_string();
            }
        }
    }
    panic!("no turn starts at line {line}");
}

#[test]
fn a_missing_module_installed_is_a_recovery() {
    let lines = vec![
        prompt(1, "I need this in a word doc so i can easily share"),
        call(
            2,
            "t1",
            "Bash",
            r#"{"command":"python3 -c \"import docx\""}"#,
        ),
        result(
            3,
            "t1",
            true,
            "Exit code 1\nModuleNotFoundError: No module named 'docx'",
        ),
        call(
            4,
            "t2",
            "Bash",
            r#"{"command":"pip install python-docx --break-system-packages"}"#,
        ),
        result(5, "t2", false, "Successfully installed python-docx-1.1.2"),
    ];
    assert_eq!(label_at(&lines, 1), "error_recovery");
    // An install whose output shows it failed (its exit code lost in a pipe) put nothing right.
    let mut failed = lines;
    failed[4] = result(
        5,
        "t2",
        false,
        "sudo: a terminal is required to read the password",
    );
    failed[3] = call(
        4,
        "t2",
        "Bash",
        r#"{"command":"sudo pacman -S figlet 2>&1 | tail -3"}"#,
    );
    failed[2] = result(3, "t1", true, "Exit code 1\nwhich: no figlet in (/usr/bin)");
    assert_eq!(label_at(&failed, 1), "routine");
}

#[test]
fn the_next_command_running_the_program_another_way_is_a_recovery() {
    let lines = vec![
        prompt(1, "Add a calendar widget to the bar"),
        call(2, "t1", "Bash", r#"{"command":"chmod +x ~/s/calendar.py && python3 ~/s/calendar.py"}"#),
        result(3, "t1", true, "Exit code 1\nImportError: cannot import name 'monthrange' from partially initialized module 'calendar'"),
        call(4, "t2", "Bash", r#"{"command":"mv ~/s/calendar.py ~/s/cal-widget.py && python3 ~/s/cal-widget.py"}"#),
        result(5, "t2", false, "{\"text\": \"ok\"}"),
    ];
    assert_eq!(label_at(&lines, 1), "error_recovery");
    // Looking around after a failure fixes nothing, and neither does a run of the program
    // after other commands came between.
    let looked = vec![
        prompt(1, "What is in the old commit of the users repo"),
        call(
            2,
            "t1",
            "Bash",
            r#"{"command":"git show 1e11881:users/user.nix"}"#,
        ),
        result(3, "t1", true, "Exit code 128\nfatal: path does not exist"),
        call(
            4,
            "t2",
            "Bash",
            r#"{"command":"git show 1e11881 --name-only"}"#,
        ),
        result(5, "t2", false, "commit 1e11881"),
    ];
    assert_eq!(label_at(&looked, 1), "routine");
    let later = vec![
        prompt(1, "Run the report script for March"),
        call(
            2,
            "t1",
            "Bash",
            r#"{"command":"python3 report.py --month 3"}"#,
        ),
        result(3, "t1", true, "Exit code 2\nerror: no data for March"),
        call(4, "t2", "Bash", r#"{"command":"mkdir -p out"}"#),
        result(5, "t2", false, ""),
        call(6, "t3", "Bash", r#"{"command":"python3 summary.py"}"#),
        result(7, "t3", false, "done"),
    ];
    assert_eq!(label_at(&later, 1), "routine");
}

#[test]
fn a_conflict_is_recovered_when_the_merge_concludes() {
    let conflict = "Exit code 1\nAuto-merging go.mod\nCONFLICT (content): Merge conflict in go.mod";
    let mut lines = vec![
        prompt(1, "Merge main into the feature branch"),
        call(2, "t1", "Bash", r#"{"command":"git merge main"}"#),
        result(3, "t1", true, conflict),
        call(
            4,
            "t2",
            "Bash",
            r#"{"command":"git checkout --theirs go.mod && git add go.mod"}"#,
        ),
        result(5, "t2", false, ""),
    ];
    // Staging the resolution concludes nothing yet.
    assert_eq!(label_at(&lines, 1), "routine");
    lines.push(call(
        6,
        "t3",
        "Bash",
        r#"{"command":"git commit --no-edit"}"#,
    ));
    lines.push(result(
        7,
        "t3",
        false,
        "[feature 1a2b3c4] Merge branch 'main'",
    ));
    assert_eq!(label_at(&lines, 1), "error_recovery");
}

#[test]
fn an_answer_saying_the_fix_did_not_take_marks_a_correction() {
    let lines = vec![
        prompt(1, "Hide the action buttons in the grouped list view"),
        say(2, "Done: the CSS hides them."),
        prompt(3, "<td class=\"o_list_button\"><button>Email</button></td>"),
        say(
            4,
            "The buttons are still showing. Let me use a more specific selector:",
        ),
    ];
    assert_eq!(label_at(&lines, 3), "user_correction");
    // "still" later in the answer, or about something else, is no such admission.
    let mut other = lines;
    other[3] = say(
        4,
        "Here is the list view. We still need the grouped case next.",
    );
    assert_eq!(label_at(&other, 3), "routine");
}

#[test]
fn asking_to_undo_the_last_change_is_a_correction() {
    for words in [
        "oof revert the workspace icon to original",
        "lets just go back to solid orange for now",
        "workspace indicator still bad",
    ] {
        let lines = vec![
            prompt(1, "Make the workspace icon stand out"),
            say(2, "Changed the icon colour to blue."),
            prompt(3, words),
            say(4, "Done."),
        ];
        assert_eq!(label_at(&lines, 3), "user_correction", "{words}");
    }
}

#[test]
fn an_apology_for_a_wish_left_out_is_no_correction() {
    let lines = |words: &str| {
        vec![
            prompt(1, "Extract the issuer and the total from each invoice"),
            say(2, "Added issuer and total columns."),
            prompt(3, words),
            say(4, "Adding it."),
        ]
    };
    assert_eq!(
        label_at(&lines("sorry regimen fiscal receptor tambien"), 3),
        "routine"
    );
    assert_eq!(
        label_at(&lines("sorry, the date column as well"), 3),
        "routine"
    );
    assert_eq!(
        label_at(&lines("sorry that is the wrong total"), 3),
        "user_correction"
    );
}

#[test]
fn a_file_that_begins_mid_conversation_can_open_with_a_correction() {
    let lines = vec![
        say(1, "All changes are committed."),
        prompt(2, "I see four uncommitted files?"),
        say(3, "You're right! The formatter rewrote them."),
    ];
    assert_eq!(label_at(&lines, 2), "user_correction");
    // A session's own first prompt corrects nothing, whatever the answer says.
    let first = vec![
        prompt(1, "I see four uncommitted files?"),
        say(2, "You're right! Let me look."),
    ];
    assert_eq!(label_at(&first, 1), "routine");
}

/// Options laid out for the user, who picks one in the next prompt.
fn options_then(choice: &str) -> Vec<String> {
    vec![
        prompt(1, "Light the LED when a Teams message arrives"),
        say(2, "The main question is **authentication**. A few options:\n\n- **Graph API + device code flow** — simplest, you authenticate once in a browser, token is cached\n- **Use your existing Teams session** — trickier to extract tokens\n- **Polling via the MCP tools** — use the tools already connected here\n\nWhich direction sounds best to you?"),
        prompt(3, choice),
        say(4, "Setting up the device code flow now."),
    ]
}

#[test]
fn options_and_the_users_pick_make_a_decision_snippet() {
    let (b, _) = run(&options_then("first option sounds easy"));
    let ep = b.finish(SID, &Auto).unwrap();
    let d = ep
        .snippets
        .iter()
        .find(|s| s.snippet_type == "decision_rationale")
        .unwrap_or_else(|| panic!("{:#?}", ep.snippets));
    assert_eq!(
        d.title,
        "Chose Graph API + device code flow over Use your existing Teams session and Polling via the MCP tools: simplest, you authenticate once in a browser, token is cached"
    );
    assert!(d.content.contains("Chosen: Graph API + device code flow (the user chose it (line 3): \"first option sounds easy\")"), "{}", d.content);
    let m: serde_json::Value = serde_json::from_str(&d.metadata).unwrap();
    assert_eq!(
        m["generalization"],
        "When choosing between Graph API + device code flow, Use your existing Teams session and Polling via the MCP tools, prefer Graph API + device code flow: simplest, you authenticate once in a browser, token is cached."
    );
    assert_ne!(m["observation"], m["generalization"]);
    // Without a pick, the assistant's own recommendation decides ("simplest" stands in the
    // first option's description) ...
    let (b, _) = run(&options_then("how long does the token last?"));
    let ep = b.finish(SID, &Auto).unwrap();
    assert!(
        ep.snippets
            .iter()
            .any(|s| s.content.contains("(the assistant recommended it)")),
        "{:#?}",
        ep.snippets
    );
    // ... and with neither, nothing was decided.
    for reply in [
        "how long does the token last?",
        "hmm let me think about the budget",
    ] {
        let mut lines = options_then(reply);
        lines[1] = lines[1].replace("simplest, ", "");
        let (b, _) = run(&lines);
        let ep = b.finish(SID, &Auto).unwrap();
        assert!(
            !ep.snippets
                .iter()
                .any(|s| s.snippet_type == "decision_rationale"),
            "{reply}: {:#?}",
            ep.snippets
        );
    }
}

#[test]
fn an_acknowledged_correction_keeps_what_was_conceded() {
    let reply = |r: &str| {
        vec![
            prompt(1, "Open the repository in the commit hook handler"),
            say(2, "Done: when the repository cannot be opened the hook goes on with an empty base commit."),
            prompt(3, "for the change in hooks.go I think if we fail to open the repository in that case we should bail out and return an error, or?"),
            say(4, r),
        ]
    };
    let (b, _) = run(&reply("You're right - if we can't open the repository there, something is fundamentally wrong and we shouldn't silently continue with an empty `baseCommit`. Let me fix that."));
    let ep = b.finish(SID, &Auto).unwrap();
    let s = ep
        .snippets
        .iter()
        .find(|s| s.snippet_type == "learning_pattern")
        .unwrap_or_else(|| panic!("{:#?}", ep.snippets));
    assert!(
        s.title
            .starts_with("If we can't open the repository there, something is fundamentally wrong"),
        "{}",
        s.title
    );
    let m: serde_json::Value = serde_json::from_str(&s.metadata).unwrap();
    let g = m["generalization"].as_str().unwrap();
    assert!(g.contains("mind what the user pointed out: if we can't open the repository there, something is fundamentally wrong"), "{g}");
    assert!(!g.contains("Let me fix"), "{g}");
    // "You're absolutely right!" and nothing more concedes nothing to learn from.
    let (b, _) = run(&reply("You're absolutely right! Let me fix that."));
    let ep = b.finish(SID, &Auto).unwrap();
    assert!(ep.snippets.is_empty(), "{:#?}", ep.snippets);
}
