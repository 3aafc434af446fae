//! `gleaner doctor` on a healthy setup (daemon running, service and hooks installed) and on a
//! broken one (no transcripts folder, unreachable database).

use serde_json::Value;

use crate::common::*;

fn verdicts(out: &std::process::Output) -> Vec<(String, String)> {
    let v: Value = serde_json::from_slice(&out.stdout).expect("json checks");
    v.as_array()
        .expect("array")
        .iter()
        .map(|c| {
            (
                c["check"].as_str().expect("check").to_string(),
                c["verdict"].as_str().expect("verdict").to_string(),
            )
        })
        .collect()
}

fn verdict<'a>(all: &'a [(String, String)], check: &str) -> &'a str {
    &all.iter().find(|(c, _)| c == check).expect(check).1
}

#[tokio::test]
async fn doctor_on_a_healthy_and_a_broken_setup() {
    let env = TestEnv::new(Backend::Sqlite).await;
    assert_ok(
        &env.cmd()
            .args(["service", "install", "--target", "systemd"])
            .output()
            .unwrap(),
    );
    assert_ok(&env.cmd().args(["hooks", "install"]).output().unwrap());
    let settings = env.dir.path().join("home/.claude/settings.json");
    let mut s: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    s["cleanupPeriodDays"] = Value::from(365);
    std::fs::write(&settings, s.to_string()).unwrap();
    let mut daemon = env.spawn_daemon(&[]);
    let out = env.cmd().args(["doctor", "--json"]).output().unwrap();
    let (status, _) = terminate(&mut daemon);
    assert!(status.success());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let all = verdicts(&out);
    for check in ["projects", "database", "daemon", "hooks", "retention"] {
        assert_eq!(verdict(&all, check), "ok", "{check}: {all:?}");
    }
    if !cfg!(target_os = "macos") {
        assert_eq!(verdict(&all, "service"), "ok", "{all:?}");
    }

    let out = env
        .cmd()
        .args([
            "doctor",
            "--json",
            "--projects-dir",
            "/no/such/dir",
            "--database-url",
            "postgres://bob:hunter2@127.0.0.1:1/x",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let all = verdicts(&out);
    assert_eq!(verdict(&all, "projects"), "fail");
    assert_eq!(verdict(&all, "database"), "fail");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("hunter2"));
}

/// A transcript the daemon cannot open is named, not hidden behind "all ok" (a dangling link
/// here: the tests run as root, whom no permission stops).
#[tokio::test]
async fn an_unreadable_transcript_is_named() {
    let env = TestEnv::new(Backend::Sqlite).await;
    copy_clockhelp(&env);
    assert_eq!(doctor_check(&env, "transcripts")["verdict"], "ok");
    let dead = env
        .projects
        .join("-x-clock/0b0b0b0b-0000-4000-8000-000000000001.jsonl");
    std::os::unix::fs::symlink(env.dir.path().join("gone.jsonl"), &dead).expect("link");
    let c = doctor_check(&env, "transcripts");
    assert_eq!(c["verdict"], "warn", "{c}");
    assert!(
        c["detail"]
            .as_str()
            .is_some_and(|d| d.contains("1 of 2") && d.contains("0b0b0b0b")),
        "{c}"
    );
    env.cleanup().await;
}
