//! `gleaner hooks install | uninstall` on a settings file that already has other hooks (merged,
//! idempotent, backup of the original kept), and `gleaner hook pre-compact` returning at once
//! without waiting for end of input.

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::*;

#[tokio::test]
async fn hooks_install_merge_and_uninstall() {
    let env = TestEnv::new(Backend::Sqlite).await;
    let settings = env.dir.path().join("claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    // The user's own hook is written with `type` after `command` and `matcher` after `hooks`:
    // an install keeps that order (it re-sorted every key before).
    let original = r#"{"model": "opus", "hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "echo other"}]}], "Stop": [{"hooks": [{"command": "notify-send done", "type": "command"}], "matcher": ""}]}}"#;
    std::fs::write(&settings, original).unwrap();
    let hooks = |args: &[&str]| {
        env.cmd()
            .arg("hooks")
            .args(args)
            .arg("--settings")
            .arg(&settings)
            .output()
            .expect("run")
    };
    assert_ok(&hooks(&["install"]));
    let written = std::fs::read_to_string(&settings).unwrap();
    let compact: String = written.split_whitespace().collect();
    assert!(
        compact
            .contains(r#"{"hooks":[{"command":"notify-senddone","type":"command"}],"matcher":""}"#),
        "the user's keys re-sorted: {written}"
    );
    let v: Value = serde_json::from_str(&written).unwrap();
    assert_eq!(v["model"], "opus", "other keys kept");
    assert_eq!(
        v["hooks"]["Stop"][0]["hooks"][0]["command"],
        "notify-send done"
    );
    let end: Vec<&str> = v["hooks"]["SessionEnd"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["hooks"].as_array().unwrap())
        .filter_map(|h| h["command"].as_str())
        .collect();
    assert_eq!(end.len(), 2, "{end:?}");
    assert!(
        end[0] == "echo other" && end[1].ends_with(" hook session-end"),
        "{end:?}"
    );
    // The hooks read the database and transcripts the install was told about.
    assert!(
        end[1].contains(&format!("--database-url {}", env.url))
            && end[1].contains("--projects-dir /"),
        "{end:?}"
    );
    let pre = v["hooks"]["PreCompact"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(pre.ends_with(" hook pre-compact"), "{pre}");
    let start = v["hooks"]["SessionStart"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(start.ends_with(" hook session-start"), "{start}");
    let backup = settings.with_extension("json.gleaner-backup");
    assert_eq!(std::fs::read_to_string(&backup).unwrap(), original);

    // Idempotent: nothing changes, nothing is written.
    let before = std::fs::read_to_string(&settings).unwrap();
    let out = hooks(&["install"]);
    assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("unchanged"));
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), before);

    // --print shows, writes nothing.
    let out = hooks(&["uninstall", "--print"]);
    assert_ok(&out);
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), before);

    assert_ok(&hooks(&["uninstall"]));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    let o: Value = serde_json::from_str(original).unwrap();
    assert_eq!(v, o, "uninstall restores the hooks that were there");
    assert_eq!(
        std::fs::read_to_string(&backup).unwrap(),
        original,
        "backup kept"
    );

    // A settings file that does not exist yet is created; one that is not JSON is refused.
    let fresh = env.dir.path().join("fresh/settings.json");
    let out = env
        .cmd()
        .args(["hooks", "install", "--settings"])
        .arg(&fresh)
        .output()
        .unwrap();
    assert_ok(&out);
    assert!(fresh.is_file());
    std::fs::write(&settings, "not json").unwrap();
    let out = hooks(&["install"]);
    assert_ne!(out.status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), "not json");

    // A password in the URL is not written into Claude Code's settings.
    let secret = env.dir.path().join("secret/settings.json");
    let out = env
        .cmd_with_url("postgres://u:hunter2@127.0.0.1:1/db")
        .args(["hooks", "install", "--settings"])
        .arg(&secret)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--database-url") && !err.contains("hunter2"),
        "{err}"
    );
    assert!(!secret.exists());
}

/// A binary not named `gleaner` knows the hooks it wrote: installing twice changes nothing,
/// and uninstalling removes them.
#[tokio::test]
async fn hooks_of_a_renamed_binary() {
    let env = TestEnv::new(Backend::Sqlite).await;
    let renamed = env.dir.path().join("bin/g0");
    std::fs::create_dir_all(renamed.parent().unwrap()).unwrap();
    std::fs::copy(bin(), &renamed).unwrap();
    let settings = env.dir.path().join("claude/settings.json");
    let hooks = |args: &[&str]| {
        let out = std::process::Command::new(&renamed)
            .env_clear()
            .env("HOME", env.dir.path().join("home"))
            .arg("hooks")
            .args(args)
            .arg("--settings")
            .arg(&settings)
            .output()
            .expect("run");
        assert_ok(&out);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    hooks(&["install"]);
    let once = std::fs::read_to_string(&settings).unwrap();
    assert!(once.contains("g0 hook session-start"), "{once}");
    assert!(hooks(&["install"]).starts_with("unchanged"));
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), once);
    hooks(&["uninstall"]);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert!(v.get("hooks").is_none(), "{v}");
}

#[tokio::test]
async fn pre_compact_returns_at_once_with_stdin_left_open() {
    let env = TestEnv::new(Backend::Sqlite).await;
    let started = Instant::now();
    let mut child = env
        .cmd()
        .args(["hook", "pre-compact"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    let input = serde_json::json!({
        "session_id": "11111111-2222-4333-8444-555555555555",
        "transcript_path": env.projects.join("p/x.jsonl"),
        "hook_event_name": "PreCompact",
        "trigger": "auto",
    });
    stdin.write_all(input.to_string().as_bytes()).unwrap();
    stdin.flush().unwrap();
    // stdin stays open, as Claude Code may leave it.
    let mut status = None;
    poll_until(Duration::from_secs(3), "the hook to exit", || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    let status = status.expect("exited");
    drop(stdin);
    assert_eq!(status.code(), Some(0));
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?} (the hook itself is bounded to 200 ms of waiting; process start-up is extra)",
        started.elapsed()
    );
}
