//! Unit tests of per-turn labels: each turn is labelled from its own signals, the episode takes
//! its strongest turn's label and lists every label its turns hold.

use super::tests::*;
use super::*;

fn turn_labels(ep: &crate::extract::rows::EpisodeRow) -> Vec<(i64, u64, u64, String)> {
    let v: serde_json::Value = serde_json::from_str(&ep.turn_labels).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["ordinal"].as_i64().unwrap(),
                t["start_line"].as_u64().unwrap(),
                t["end_line"].as_u64().unwrap(),
                t["triage"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Three turns about one build: routine, then a failure fixed, then a denial.
fn three_turns() -> Vec<String> {
    vec![
        prompt(1, "Build the parser crate and run its tests"),
        say(2, "Building the parser crate now."),
        prompt(3, "Now fix the failing parser build"),
        call(4, "t1", "Bash", r#"{"command":"cargo build -p parser"}"#),
        result(5, "t1", true, "error[E0308]: mismatched types"),
        call(6, "t2", "Edit", r#"{"file_path":"/x/src/lib.rs"}"#),
        result(7, "t2", false, "ok"),
        call(8, "t3", "Bash", r#"{"command":"cargo build -p parser"}"#),
        result(9, "t3", false, "Finished"),
        prompt(10, "Then commit the parser fix"),
        call(11, "t4", "Bash", r#"{"command":"git push --force"}"#),
        result(
            12,
            "t4",
            true,
            "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). To tell you how to proceed, the user said:\nnever force-push the parser branch",
        ),
    ]
}

#[test]
fn every_turn_gets_its_own_label() {
    let (b, _) = run(&three_turns());
    let ep = b.finish(SID, &Auto).unwrap();
    assert_eq!(ep.turns, 3);
    assert_eq!(
        turn_labels(&ep),
        vec![
            (1, 1, 2, "routine".to_string()),
            (2, 3, 9, "error_recovery".to_string()),
            (3, 10, 12, "user_correction".to_string()),
        ]
    );
    // The strongest turn labels the episode (a denial with a reason: 0.95 > 0.85).
    assert_eq!(ep.triage, "user_correction");
    assert_eq!(ep.confidence, 0.95);
    let labels: Vec<String> = serde_json::from_str(&ep.labels).unwrap();
    assert_eq!(labels, vec!["user_correction", "error_recovery", "routine"]);
    let v: serde_json::Value = serde_json::from_str(&ep.turn_labels).unwrap();
    assert_eq!(v[1]["evidence"][0]["signal"], "error_then_success");
    assert_eq!(v[1]["evidence"][0]["line"], 5);
    assert_eq!(v[2]["evidence"][0]["signal"], "tool_denial");
    assert_eq!(v[0]["evidence"].as_array().unwrap().len(), 0);
}

#[test]
fn turn_labels_survive_batches_and_restarts() {
    let lines = three_turns();
    let rules = Rules::defaults().unwrap();
    let (whole, _) = run_split(&rules, &lines, usize::MAX);
    for split in [1, 2, 5] {
        let (b, _) = run_split(&rules, &lines, split);
        assert_eq!(
            b.finish(SID, &Auto).unwrap().turn_labels,
            whole.finish(SID, &Auto).unwrap().turn_labels,
            "split {split}"
        );
    }
}

#[test]
fn a_turn_ends_where_the_next_episode_starts() {
    let mut lines = three_turns();
    lines.push(compact(13));
    lines.push(prompt(14, "Write the release notes for version two"));
    let (b, rows) = run(&lines);
    let first = closed(&rows);
    assert_eq!(first.len(), 1);
    assert_eq!(turn_labels(first[0]).last().unwrap().2, 13);
    let second = b.finish(SID, &Auto).unwrap();
    assert_eq!(
        turn_labels(&second),
        vec![(4, 14, 14, "routine".to_string())]
    );
    assert_eq!(second.labels, r#"["routine"]"#);
}

#[test]
fn a_label_the_model_gave_alone_names_its_line_and_words() {
    let turn = Turn {
        ordinal: 2,
        start_line: 7,
        signals: Vec::new(),
        answered: true,
        prompt: "it still crashes on start".into(),
        facts: crate::triage_model::Facts {
            reply_line: 9,
            error_line: 11,
            ..Default::default()
        },
    };
    let because = |b: &[&str]| b.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let ev = triage::model_evidence(
        &turn,
        Label::UserCorrection,
        0.71,
        &because(&["p:still", "p2:still crashes"]),
    );
    assert_eq!((ev.line, ev.signal.as_str()), (7, "learned"));
    assert_eq!(
        ev.text,
        "prompt says \"still\"; prompt says \"still crashes\""
    );
    // Words of the reply point at the reply; a failure count at the failure.
    let ev = triage::model_evidence(&turn, Label::UserCorrection, 0.6, &because(&["r2:you re"]));
    assert_eq!(ev.line, 9);
    let ev = triage::model_evidence(&turn, Label::ErrorRecovery, 0.6, &because(&["errors:1"]));
    assert_eq!((ev.line, ev.text.as_str()), (11, "1 failed tool results"));
}
