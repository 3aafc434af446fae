//! `gleaner export` over the corpus on both backends: every format, the filters, the atomic
//! `--output`, and bad arguments.

use serde_json::Value;

use crate::both_backends;
use crate::common::*;

/// A corpus session with episodes, feedback and compaction summaries.
const SID: &str = "3dae6bc4-bf52-4a30-a961-09999364d8c6";

async fn export_formats(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let corpus = corpus_dir().canonicalize().expect("corpus");
    env.ingest_dir(&corpus);
    let export = |args: &[&str]| {
        env.cmd()
            .arg("export")
            .args(args)
            .output()
            .expect("run gleaner export")
    };

    // json: every session once, with its parts.
    let out = export(&["--format", "json"]);
    assert_ok(&out);
    let all: Value = serde_json::from_slice(&out.stdout).expect("json");
    let all = all.as_array().expect("array");
    let store = env.store().await;
    let n_sessions = counts(&store).await.sessions as usize;
    assert_eq!(all.len(), n_sessions);
    let one = all
        .iter()
        .find(|s| s["session"]["session_id"] == SID)
        .expect("the session");
    for part in ["summaries", "feedback", "episodes", "snippets"] {
        assert!(one[part].is_array(), "{part}");
    }
    assert!(!one["episodes"].as_array().expect("eps").is_empty());
    assert!(one["episodes"][0]["turn_labels"].is_array());

    // jsonl: the same sessions, one per line.
    let out = export(&["--format", "jsonl"]);
    assert_ok(&out);
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("jsonl line"))
        .collect();
    assert_eq!(lines.len(), n_sessions);

    // md of one session, by prefix.
    let out = export(&["--format", "md", "--session", &SID[..8]]);
    assert_ok(&out);
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.starts_with("# "), "{md}");
    assert!(md.contains(&format!("- Session: `{SID}`")), "{md}");
    assert!(md.contains("## Episodes"), "{md}");
    assert_eq!(md.matches("- Session: `").count(), 1, "one session only");

    // learnings: the five keys, the types, the tags; only non-routine automatic snippets.
    let out = export(&["--format", "learnings"]);
    assert_ok(&out);
    let learnings: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("learning line"))
        .collect();
    assert!(learnings.len() > 10, "{} learnings", learnings.len());
    for l in &learnings {
        let keys: Vec<&str> = l
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys.len(),
            5,
            "{l}: observation, generalization, project, type, tags"
        );
        assert!(["pattern", "mistake", "decision", "preference"]
            .contains(&l["type"].as_str().unwrap_or("")));
        let tags: Vec<&str> = l["tags"]
            .as_array()
            .expect("tags")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(tags[0].starts_with("session:"), "{l}");
        assert!(tags.iter().any(|t| t.starts_with("episode:")), "{l}");
        assert!(tags.iter().any(|t| t.starts_with("turn:")), "{l}");
    }
    assert!(learnings.iter().any(|l| l["type"] == "mistake"));
    let auto_non_routine: usize = all
        .iter()
        .flat_map(|s| s["snippets"].as_array().cloned().unwrap_or_default())
        .filter(|sn| sn["metadata"]["triage"] != "routine")
        .count();
    assert_eq!(learnings.len(), auto_non_routine);

    // --output: written whole, nothing left beside it; the same bytes as stdout.
    let file = env.dir.path().join("out/learned.jsonl");
    std::fs::create_dir_all(file.parent().expect("dir")).expect("mkdir");
    let out = export(&["--format", "learnings", "--output", &file.to_string_lossy()]);
    assert_ok(&out);
    let written = std::fs::read_to_string(&file).expect("output file");
    assert_eq!(written.lines().count(), learnings.len());
    let entries = std::fs::read_dir(file.parent().expect("dir"))
        .expect("dir")
        .count();
    assert_eq!(entries, 1, "a temporary file was left behind");

    // Filters that match nothing, and bad arguments.
    let out = export(&["--format", "json", "--since", "2099-01-01"]);
    assert_ok(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "[]");
    let out = export(&["--format", "md", "--until", "2000-01-01"]);
    assert_ok(&out);
    let out = export(&["--format", "json", "--since", "last tuesday"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--since"));
    let out = export(&["--format", "csv"]);
    assert_eq!(out.status.code(), Some(2));
    let out = export(&["--format", "md", "--output", "/nonexistent-dir/x.md"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent-dir/x.md"));
    store.close().await;
    env.cleanup().await;
}

both_backends!(export_every_format_over_the_corpus, export_formats);
