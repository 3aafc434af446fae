//! Unit tests of the renderers on literal listings.

use super::*;
use crate::store::{FeedbackCounts, SummaryCounts, TokenTotals};

fn session() -> SessionExport {
    let s = SessionListing {
        session_id: "5ec2e700-0000-4000-8000-000000000001".into(),
        machine: "m1".into(),
        user: Some("ana".into()),
        machines: vec!["m1".into()],
        project: "-home-u-proj".into(),
        cwd: Some("/home/u/proj".into()),
        git_branch: Some("main".into()),
        version: Some("2.1.41".into()),
        slug: None,
        title: Some("Fix the parser build".into()),
        started_at: Some("2026-02-01T10:00:00Z".into()),
        last_activity_at: Some("2026-02-01T11:00:00Z".into()),
        status: "finished".into(),
        ended_at: None,
        duration_ms: None,
        end_reason: None,
        messages: 12,
        files: 1,
        lines: 40,
        subagent_count: 0,
        subagents: Vec::new(),
        tool_calls: 5,
        tool_errors: 1,
        feedback: FeedbackCounts::default(),
        summaries: SummaryCounts::default(),
        tokens: TokenTotals::default(),
        snippets: 1,
        notable_episodes: 1,
    };
    let snippet = |id: i64, ty: &str, triage: &str, meta: serde_json::Value, content: &str| {
        let mut m = meta;
        m["triage"] = triage.into();
        SnippetListing {
            id,
            session_id: s.session_id.clone(),
            episode_id: Some(7),
            origin: "auto".into(),
            snippet_type: ty.into(),
            title: format!("title {id}"),
            content: content.into(),
            project: s.project.clone(),
            source_file: "/p/x.jsonl".into(),
            line_start: 12,
            line_end: 20,
            tags: vec!["tool:bash".into()],
            metadata: m,
            created_at: "2026-02-01T10:30:00Z".into(),
        }
    };
    let episode = EpisodeListing {
        id: 7,
        session_id: s.session_id.clone(),
        source_file: "/p/x.jsonl".into(),
        ordinal: 1,
        first_turn: 1,
        turns: 2,
        start_line: 1,
        end_line: 30,
        started_at: None,
        ended_at: None,
        status: "closed".into(),
        cut_reason: "start".into(),
        triage: "error_recovery".into(),
        confidence: 0.85,
        evidence: serde_json::json!([{"line": 12, "signal": "error_then_success", "text": "cargo build failed"}]),
        labels: serde_json::json!(["error_recovery", "routine"]),
        turn_labels: serde_json::json!([
            {"ordinal": 1, "start_line": 1, "end_line": 9, "triage": "routine", "confidence": 0.75, "evidence": []},
            {"ordinal": 2, "start_line": 10, "end_line": 30, "triage": "error_recovery", "confidence": 0.85,
             "evidence": [{"line": 12, "signal": "error_then_success", "text": "cargo build failed"}]}
        ]),
        title: Some("Fix the parser build".into()),
        files_touched: serde_json::json!([]),
        tools: serde_json::json!({}),
        agents: serde_json::json!([]),
    };
    SessionExport {
        snippets: vec![
            snippet(
                1,
                "error_reasoning",
                "error_recovery",
                serde_json::json!({"observation": "cargo build failed with E0308", "generalization": "widen the return type"}),
                "What failed: cargo build\n```rust\nlet x = 1;\n```",
            ),
            snippet(
                2,
                "learning_pattern",
                "routine",
                serde_json::json!({}),
                "A lesson in passing.",
            ),
            snippet(
                3,
                "learning_pattern",
                "user_correction",
                serde_json::json!({}),
                "The user corrected it.\n\nMore.",
            ),
        ],
        session: s,
        summaries: Vec::new(),
        feedback: Vec::new(),
        episodes: vec![episode],
    }
}

#[test]
fn learnings_keep_non_routine_snippets_with_their_turn() {
    let l = learnings(&session());
    assert_eq!(l.len(), 2, "{l:#?}");
    assert_eq!(l[0].kind, "mistake");
    assert_eq!(l[0].observation, "cargo build failed with E0308");
    assert_eq!(l[0].generalization, "widen the return type");
    assert_eq!(
        l[0].tags,
        vec![
            "session:5ec2e700-0000-4000-8000-000000000001",
            "episode:7",
            "turn:2",
            "tool:bash"
        ]
    );
    // Without stored halves: the content's opening and the title.
    assert_eq!(l[1].kind, "preference");
    assert_eq!(l[1].observation, "The user corrected it.");
    assert_eq!(l[1].generalization, "title 3");
    assert_eq!(l[1].project, "-home-u-proj");
}

#[test]
fn markdown_holds_every_part_and_fences_code() {
    let md = markdown(&[session()]);
    assert!(md.starts_with("# Fix the parser build\n"), "{md}");
    assert!(md.contains("## Episodes"), "{md}");
    assert!(
        md.contains("### #1 Fix the parser build — error_recovery (0.85)"),
        "{md}"
    );
    assert!(
        md.contains("- turn 2 (lines 10–30): error_recovery 0.85 — cargo build failed"),
        "{md}"
    );
    assert!(md.contains("## Snippets"), "{md}");
    // The content's own ``` fence cannot close the export's.
    assert!(
        md.contains("````text\nWhat failed: cargo build\n```rust"),
        "{md}"
    );
    assert_eq!(markdown(&[]), "_No session matched._\n");
}

#[test]
fn json_lines_are_one_session_each() {
    let mut out = Vec::new();
    render(Format::Jsonl, &[session(), session()], &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(text.lines().count(), 2);
    let v: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(
        v["session"]["session_id"],
        "5ec2e700-0000-4000-8000-000000000001"
    );
    assert_eq!(
        v["episodes"][0]["turn_labels"][1]["triage"],
        "error_recovery"
    );
    let mut out = Vec::new();
    render(Format::Learnings, &[session()], &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(text.lines().count(), 2);
    let v: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(v["type"], "mistake");
}

#[test]
fn a_hand_made_excerpt_is_a_learning_without_lines_or_paths() {
    let mut sn = session().snippets[1].clone();
    sn.origin = "manual".into();
    sn.title = "Lesson: read the lock file first".into();
    sn.metadata = serde_json::json!({"triage": "user_correction"});
    sn.content = "[L2] user: the build fails again\n[L3] tool Read: /home/u/proj/Cargo.lock\n\
                  [L4] assistant: The lock file at /home/u/proj/Cargo.lock pins an old serde"
        .into();
    let l = learning(&sn, None);
    assert_eq!(
        l.observation,
        "User: the build fails again. Assistant: The lock file at Cargo.lock pins an old serde."
    );
    assert_eq!(
        l.kind, "pattern",
        "a lesson is a pattern, whatever the episode"
    );
}
