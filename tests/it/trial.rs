//! Doors that tripped two new users (issue 45): a busy port said once, `status` beside a daemon
//! whose configuration file broke since, `context` for part of a project's name and for a
//! subfolder, `ingest` refused for a running daemon before it creates a database, `text
//! --max-chars 0`.

use std::io::Write;
use std::process::Stdio;

use crate::common::*;

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test]
async fn doors_that_tripped_new_users() {
    let env = TestEnv::new(Backend::Sqlite).await;
    copy_tree(
        &corpus_dir().join("4thehalibit__omarchy-backup/.claude/projects"),
        &env.projects,
    );
    env.ingest();

    // A port in use: one line, the cause said once.
    let first = crate::web::start_web(&env, &env.projects, "127.0.0.1:0");
    let port = first
        .url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .expect("port")
        .to_string();
    let out = env
        .cmd()
        .args(["web", "--bind", &format!("127.0.0.1:{port}")])
        .output()
        .expect("second web");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(err.matches("in use").count(), 1, "{err}");
    drop(first);

    // A denial names what was denied: the tool and its command or file.
    let out = env
        .cmd()
        .args([
            "feedback",
            "--type",
            "tool_denial",
            "--json",
            "--limit",
            "500",
        ])
        .output()
        .expect("feedback");
    assert_ok(&out);
    let denials: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let denials = denials.as_array().expect("a list");
    assert!(!denials.is_empty());
    assert!(
        denials.iter().all(|d| d["tool_name"].is_string()),
        "{denials:?}"
    );
    let out = env
        .cmd()
        .args(["feedback", "--type", "tool_denial", "--limit", "500"])
        .output()
        .expect("feedback");
    let text = String::from_utf8_lossy(&out.stdout);
    let named = denials[0]["tool_name"].as_str().expect("name");
    assert!(text.contains(&format!("denied {named}")), "{text}");

    // `context` takes part of a project's name, and a subfolder gets its project's digest.
    let out = env
        .cmd()
        .args(["context", "--project", "vwestberg-Cla", "--json"])
        .output()
        .expect("context");
    assert_ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["project"], "-home-vwestberg-Claude", "{v}");
    assert!(v["context"].as_str().is_some_and(|c| !c.is_empty()), "{v}");
    let out = env
        .cmd()
        .args([
            "context",
            "--project",
            "/home/vwestberg/Claude/scripts/deep",
            "--json",
        ])
        .output()
        .expect("context");
    let sub: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(sub["project"], "-home-vwestberg-Claude", "{sub}");

    // `text --max-chars 0` is refused, naming the value.
    let out = env
        .cmd()
        .args(["text", "1fb5e404", "--max-chars", "0"])
        .output()
        .expect("text");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("max-chars"), "{}", stderr(&out));

    // With a daemon running: `status` answers though the configuration file broke since, and
    // `ingest` into a new database is refused before the database is made.
    let mut daemon = env.spawn_daemon(&[]);
    let config = env.dir.path().join("config/gleaner/config.toml");
    std::fs::create_dir_all(config.parent().expect("dir")).expect("mkdir");
    std::fs::File::create(&config)
        .and_then(|mut f| f.write_all(b"this is = not [valid toml\n"))
        .expect("broken config");
    let out = env
        .cmd()
        .args(["status", "--json"])
        .stderr(Stdio::piped())
        .output()
        .expect("status");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("status JSON");
    assert!(v["pid"].as_u64().is_some(), "{v}");
    assert!(stderr(&out).contains("warning"), "{}", stderr(&out));
    std::fs::remove_file(&config).expect("rm config");
    let fresh = env.dir.path().join("data/other.db");
    let out = env
        .cmd_with_url(&format!("sqlite://{}", fresh.display()))
        .arg("ingest")
        .output()
        .expect("ingest");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!fresh.exists(), "a database was made before the refusal");
    let (status, _) = terminate(&mut daemon);
    assert!(status.success());
    env.cleanup().await;
}
