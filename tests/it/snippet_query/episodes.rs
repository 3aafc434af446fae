//! `Store::list_episodes` and the `episodes` command: filters, paging and JSON through the
//! real binary.

use super::*;

/// Two episodes of session 0, one of session 1, through a files row each.
async fn seed_episodes(store: &Store) {
    for s in 0..2 {
        exec(
            store,
            &format!(
                "INSERT INTO files (machine, path, project, kind, session_id, first_seen_at, \
                 updated_at) VALUES ('test', '/t/{0}.jsonl', '{1}', 'main', '{0}', \
                 '2026-01-01', '2026-01-01')",
                SESSIONS[s], PROJECTS[s]
            ),
        )
        .await;
    }
    let rows = [
        // session, generation, ordinal, first_turn, turns, start, end, started, ended, status,
        // cut, triage, confidence, evidence, title
        (
            0,
            1,
            2,
            3,
            2,
            40,
            90,
            "'2026-01-01T10:00:00.000Z'",
            "open",
            "idle_gap",
            "error_recovery",
            0.875,
            r#"[{"line": 55, "signal": "tool_error", "label": "error_recovery", "text": "cargo test failed"}]"#,
            "'fix the failing test'",
        ),
        (
            0,
            1,
            1,
            1,
            2,
            1,
            39,
            "'2026-01-01T09:00:00.000Z'",
            "closed",
            "start",
            "routine",
            0.5,
            "[]",
            "'add a flag'",
        ),
        (
            1, 1, 1, 1, 4, 1, 120, "NULL", "closed", "start", "pivot", 1.0, "[]", "NULL",
        ),
    ];
    for (
        s,
        generation,
        ordinal,
        first,
        turns,
        a,
        b,
        started,
        status,
        cut,
        triage,
        conf,
        ev,
        title,
    ) in rows
    {
        exec(
            store,
            &format!(
                "INSERT INTO episodes (session_id, file_id, generation, ordinal, first_turn, turns, \
                 start_line, end_line, started_at, ended_at, status, cut_reason, triage, \
                 confidence, evidence, title, files_touched, tools, agents, created_at, \
                 updated_at) VALUES ('{sid}', (SELECT id FROM files WHERE path = '/t/{sid}.jsonl'), \
                 {generation}, {ordinal}, {first}, {turns}, {a}, {b}, {started}, {started}, \
                 '{status}', '{cut}', '{triage}', {conf}, '{ev}', {title}, '[\"src/a.rs\"]', \
                 '{{\"Bash\": 2}}', '[]', '2026-01-01', '2026-01-01')",
                sid = SESSIONS[s]
            ),
        )
        .await;
    }
}

async fn episodes(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let store = env.store().await;
    seed(&store).await;
    seed_episodes(&store).await;

    // Store: newest first (no timestamp last), typed columns, JSON decoded.
    let all = store
        .list_episodes(&EpisodeFilter::default())
        .await
        .expect("episodes");
    let order: Vec<(&str, i64)> = all
        .iter()
        .map(|e| (&e.session_id[..4], e.ordinal))
        .collect();
    assert_eq!(order, [("aaaa", 2), ("aaaa", 1), ("bbbb", 1)]);
    let e = &all[0];
    assert_eq!(e.source_file, format!("/t/{}.jsonl", SESSIONS[0]));
    assert_eq!(
        (e.first_turn, e.turns, e.start_line, e.end_line),
        (3, 2, 40, 90)
    );
    assert_eq!(e.status, "open");
    assert_eq!(e.cut_reason, "idle_gap");
    assert_eq!(e.triage, "error_recovery");
    assert!((e.confidence - 0.875).abs() < 1e-9);
    assert_eq!(e.evidence[0]["line"], 55);
    assert_eq!(e.files_touched, serde_json::json!(["src/a.rs"]));
    assert_eq!(e.tools["Bash"], 2);
    assert_eq!(e.title.as_deref(), Some("fix the failing test"));
    assert_eq!(all[2].started_at, None);
    assert!((all[2].confidence - 1.0).abs() < 1e-9);
    let f = EpisodeFilter {
        session_ids: Some(vec![SESSIONS[1].into()]),
        ..EpisodeFilter::default()
    };
    assert_eq!(store.list_episodes(&f).await.expect("episodes").len(), 1);
    // Oldest first: the same rows reversed (no timestamp first).
    let oldest = store
        .list_episodes(&EpisodeFilter {
            oldest_first: true,
            ..EpisodeFilter::default()
        })
        .await
        .expect("episodes");
    let reversed: Vec<(&str, i64)> = oldest
        .iter()
        .rev()
        .map(|e| (&e.session_id[..4], e.ordinal))
        .collect();
    assert_eq!(reversed, order);

    // CLI.
    let episodes = |args: &[&str]| {
        env.cmd()
            .arg("episodes")
            .args(args)
            .output()
            .expect("run gleaner episodes")
    };
    let v = json_of(&episodes(&["--json"]));
    assert_eq!(v.as_array().map(Vec::len), Some(3));
    let v = json_of(&episodes(&["--json", "--triage", "error-recovery"]));
    let arr = v.as_array().expect("array");
    assert_eq!(arr.len(), 1);
    let e = &arr[0];
    assert_eq!(e["triage"], "error_recovery");
    assert_eq!(e["confidence"], 0.875);
    assert_eq!(e["evidence"][0]["signal"], "tool_error");
    assert_eq!(e["files_touched"][0], "src/a.rs");
    assert_eq!(e["tools"]["Bash"], 2);
    assert_eq!(e["agents"], serde_json::json!([]));
    assert_eq!(e["start_line"], 40);
    assert_eq!(e["end_line"], 90);
    let v = json_of(&episodes(&["--json", "bbbb"]));
    assert_eq!(v[0]["triage"], "pivot");
    assert_eq!(v.as_array().map(Vec::len), Some(1));

    let out = episodes(&["aaaa"]);
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("aaaaaaaa"), "{text}");
    assert!(text.contains("40-90"), "{text}");
    assert!(text.contains("0.88") || text.contains("0.87"), "{text}");
    assert!(text.contains("error_recovery"), "{text}");
    assert!(text.contains("L55 tool_error"), "{text}");
    assert!(text.contains("cargo test failed"), "{text}");
    assert!(!text.contains("pivot"), "{text}");

    // An episode holding a turn of another label matches that label too.
    exec(
        &store,
        "UPDATE episodes SET labels = '[\"error_recovery\",\"pivot\",\"routine\"]', \
         turn_labels = '[{\"ordinal\":3,\"start_line\":40,\"end_line\":60,\"triage\":\"pivot\",\"confidence\":0.8,\"evidence\":[]}]' \
         WHERE triage = 'error_recovery'",
    )
    .await;
    let v = json_of(&episodes(&["--json", "--triage", "pivot"]));
    let labels: Vec<&str> = v
        .as_array()
        .expect("array")
        .iter()
        .map(|e| e["triage"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(labels, ["error_recovery", "pivot"], "{v}");
    assert_eq!(v[0]["turn_labels"][0]["triage"], "pivot");
    assert_eq!(v[0]["labels"][1], "pivot");
    let text = String::from_utf8_lossy(&episodes(&["aaaa"]).stdout).into_owned();
    assert!(text.contains("turn 3 (L40-60): pivot 0.80"), "{text}");

    let out = episodes(&["--triage", "design_decision"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no episodes"));
    let v = json_of(&episodes(&["--json", "--triage", "design_decision"]));
    assert_eq!(v, serde_json::json!([]));
    let out = episodes(&["ffff"]);
    assert_eq!(out.status.code(), Some(1));

    env.cleanup().await;
}
both_backends!(episode_listing, episodes);
