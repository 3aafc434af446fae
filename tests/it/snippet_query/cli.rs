//! The `snippets` command through the real binary: filters, paging and JSON.

use super::*;

async fn cli(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let store = env.store().await;
    let specs = seed(&store).await;
    let newest = expect(&specs, |_| true);
    let snippets = |args: &[&str]| {
        env.cmd()
            .arg("snippets")
            .args(args)
            .output()
            .expect("run gleaner snippets")
    };

    // JSON: exactly {snippets, total_count, has_more}; JSON columns nested, not quoted.
    let v = json_of(&snippets(&["--json", "--limit", "3"]));
    let keys: BTreeSet<&str> = v
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        BTreeSet::from(["snippets", "total_count", "has_more"])
    );
    assert_eq!(v["total_count"], 30);
    assert_eq!(v["has_more"], true);
    let first = &v["snippets"][0];
    let sp = &specs[newest[0]];
    assert_eq!(first["id"], sp.id);
    assert_eq!(first["title"], sp.title.as_str());
    assert_eq!(first["session_id"], SESSIONS[sp.session]);
    assert_eq!(first["created_at"], sp.created_at.as_str());
    assert_eq!(first["tags"], serde_json::json!(sp.tags));
    assert_eq!(first["metadata"]["version"], 1);
    assert!(first["episode_id"].is_null());
    for k in [
        "origin",
        "snippet_type",
        "content",
        "project",
        "source_file",
        "source_line_start",
        "source_line_end",
    ] {
        assert!(!first[k].is_null(), "{k} missing: {first}");
    }
    assert_eq!(v["snippets"].as_array().map(Vec::len), Some(3));

    // Flags reach the filter: session prefix, repeated tags, type (kebab-case too), times.
    let v = json_of(&snippets(&[
        "--json",
        "--session",
        "bbbb",
        "--tag",
        "even",
        "--tag",
        "all",
    ]));
    let ids: Vec<i64> = v["snippets"]
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|s| s["id"].as_i64())
        .collect();
    let want: Vec<i64> = expect(&specs, |s| s.session == 1 && s.i.is_multiple_of(2))
        .iter()
        .map(|&i| specs[i].id)
        .collect();
    assert_eq!(ids, want);
    assert_eq!(v["total_count"], want.len());
    assert_eq!(v["has_more"], false);
    let v = json_of(&snippets(&[
        "--json",
        "--type",
        "decision-rationale",
        "--keyword",
        "LOREM",
        "--project",
        "gamma",
        "--since",
        "2026-01-01T05",
        "--until",
        "2026-01-02",
    ]));
    let want = expect(&specs, |s| {
        s.snippet_type == "decision_rationale" && s.session == 2 && (5..24).contains(&s.i)
    });
    assert_eq!(v["total_count"], want.len(), "{v}");
    let v = json_of(&snippets(&["--json", "--limit", "5", "--offset", "27"]));
    assert_eq!(v["snippets"].as_array().map(Vec::len), Some(3));
    assert_eq!(v["has_more"], false);

    // Table: a header and one row per snippet; the count on stderr.
    let out = snippets(&["--limit", "2"]);
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].starts_with("ID"), "{text}");
    assert!(lines[1].contains(&specs[newest[0]].title), "{text}");
    assert!(lines[1].contains("2026-01-02 04:00"), "{text}");
    assert!(
        lines[1].contains(&SESSIONS[specs[newest[0]].session][..8]),
        "{text}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("of 30"));

    // Nothing matched: not an error.
    let out = snippets(&["--keyword", "no such text anywhere"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no snippets"));
    let v = json_of(&snippets(&["--json", "--tag", "nope"]));
    assert_eq!(
        v,
        serde_json::json!({"snippets": [], "total_count": 0, "has_more": false})
    );

    // Bad input.
    let out = snippets(&["--limit", "501"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("501"));
    let out = snippets(&["--limit", "0"]);
    assert_eq!(out.status.code(), Some(2));
    let out = snippets(&["--session", "ffff"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("No session found with prefix ffff"));
    let out = snippets(&["--until", "yesterday"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--until"));

    env.cleanup().await;
}
both_backends!(snippet_cli, cli);
