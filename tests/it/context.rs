//! What a new session is given at its start: `gleaner hook session-start` driven with Claude
//! Code's hook JSON over a store of real sessions, and `gleaner context`.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

use crate::both_backends;
use crate::common::*;

/// Ten real sessions of one project (`/home/vwestberg/Claude`).
fn projects() -> std::path::PathBuf {
    corpus_dir().join("4thehalibit__omarchy-backup/.claude/projects")
}
const CWD: &str = "/home/vwestberg/Claude";
const CURRENT: &str = "1fb5e404-604d-4a2b-baf1-3beb42a67371";

/// Run `cmd` with `input` on stdin.
fn with_stdin(mut cmd: Command, input: &str) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("wait")
}

fn hook_input(session: &str, cwd: &str) -> String {
    json!({
        "session_id": session,
        "transcript_path": format!("/home/vwestberg/.claude/projects/-home-vwestberg-Claude/{session}.jsonl"),
        "cwd": cwd,
        "hook_event_name": "SessionStart",
        "source": "startup",
    })
    .to_string()
}

/// The digest the hook gave (`None`: it printed nothing), checking it exited 0.
fn hook(cmd: Command, input: &str) -> Option<String> {
    let out = with_stdin(cmd, input);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    if out.stdout.is_empty() {
        return None;
    }
    let v: Value = serde_json::from_slice(&out.stdout).expect("hook JSON");
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    Some(
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .expect("additionalContext")
            .to_string(),
    )
}

fn start_cmd(env: &TestEnv, projects: &Path) -> Command {
    let mut c = env.cmd_for(projects);
    c.args(["hook", "session-start"]);
    c
}

async fn session_start(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let projects = projects();
    env.ingest_dir(&projects);

    let text = hook(start_cmd(&env, &projects), &hook_input(CURRENT, CWD)).expect("a digest");
    assert!(text.len() <= 2048, "{} bytes", text.len());
    assert!(text.starts_with("Gleaner: "), "{text}");
    for part in ["Recent sessions:", "Corrections and preferences:"] {
        assert!(text.contains(part), "{part}: {text}");
    }
    // The current session is left out; the others are named for a follow-up call.
    assert!(!text.contains(&format!("[{}]", &CURRENT[..8])), "{text}");
    assert!(
        text.matches("] ").count() + text.matches("]\n").count() >= 3,
        "{text}"
    );

    // People get the same text.
    let out = env
        .cmd_for(&projects)
        .args(["context", "--project", CWD, "--exclude", CURRENT])
        .output()
        .expect("context");
    assert_ok(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout), text);
    // The project's folder name (it starts with `-`) names it too, and a prefix the session.
    let out = env
        .cmd_for(&projects)
        .args([
            "context",
            "--project",
            "-home-vwestberg-Claude",
            "--exclude",
            &CURRENT[..8],
        ])
        .output()
        .expect("context");
    assert_ok(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout), text);

    // The size is configurable; a smaller digest still holds a line of each kind it has.
    let mut small = start_cmd(&env, &projects);
    small.env("GLEANER_CONTEXT__MAX_BYTES", "700");
    let short = hook(small, &hook_input(CURRENT, CWD)).expect("a short digest");
    assert!(short.len() <= 700 && short.len() < text.len(), "{short}");
    assert!(short.contains("Recent sessions:"), "{short}");

    // Another project, or no cwd: nothing at all.
    assert_eq!(
        hook(
            start_cmd(&env, &projects),
            &hook_input(CURRENT, "/srv/other")
        ),
        None
    );
    assert_eq!(
        hook(start_cmd(&env, &projects), r#"{"session_id": "x"}"#),
        None
    );
    // Fails open: broken input, a missing database, a file that is no database.
    assert_eq!(hook(start_cmd(&env, &projects), "not json"), None);
    let missing = env.dir.path().join("missing/g.db");
    let mut c = env.cmd_with_url(&format!("sqlite://{}", missing.display()));
    c.args(["hook", "session-start"]);
    assert_eq!(hook(c, &hook_input(CURRENT, CWD)), None);
    assert!(!missing.exists(), "the hook created a database");
    let junk = env.dir.path().join("junk.db");
    std::fs::write(&junk, b"this is not a database").expect("write");
    let mut c = env.cmd_with_url(&format!("sqlite://{}", junk.display()));
    c.args(["hook", "session-start"]);
    assert_eq!(hook(c, &hook_input(CURRENT, CWD)), None);
    let mut c = env.cmd_with_url("postgres://nobody@127.0.0.1:1/none");
    c.args(["hook", "session-start"]);
    assert_eq!(hook(c, &hook_input(CURRENT, CWD)), None);
    env.cleanup().await;
}
both_backends!(session_start_digest, session_start);

/// A Windows directory's drive letter in either case finds its project: Claude Code reports
/// `s:\02_DevOps` and `S:\02_DevOps` for one directory and keeps both in `S--02-DevOps`.
async fn drive_letter(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let projects = corpus_dir().join("Eduardodmb__ClaudeWork/projects");
    env.ingest_dir(&projects);
    let mut digests = Vec::new();
    for cwd in [r"S:\02_DevOps", r"s:\02_DevOps"] {
        let out = env
            .cmd_for(&projects)
            .args(["context", "--project", cwd, "--json"])
            .output()
            .expect("context");
        assert_ok(&out);
        let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(v["project"], "S--02-DevOps", "{cwd}: {v}");
        let text = v["context"].as_str().expect("context").to_string();
        assert!(text.contains("Recent sessions:"), "{cwd}: {text}");
        let hooked = hook(
            start_cmd(&env, &projects),
            &json!({"session_id": "x", "cwd": cwd, "hook_event_name": "SessionStart"}).to_string(),
        );
        assert_eq!(hooked.as_deref(), Some(text.as_str()), "{cwd}");
        digests.push(text);
    }
    assert_eq!(digests[0], digests[1]);
    env.cleanup().await;
}
both_backends!(drive_letter_either_case, drive_letter);
