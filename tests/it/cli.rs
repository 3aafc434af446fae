//! Exit codes, one-line errors, JSON shapes and flag placement.

use crate::both_backends;
use crate::common::*;

const SID: &str = "dddddddd-0000-4000-8000-000000000001";

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test]
async fn config_default_prints_the_embedded_file() {
    let env = TestEnv::new(Backend::Sqlite).await;
    let out = env
        .cmd()
        .args(["config", "--default"])
        .output()
        .expect("run");
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text, gleaner::config::DEFAULT_CONFIG_TOML);
    assert!(text.contains("max_line_bytes = 67108864"));
}

#[tokio::test]
async fn bad_config_is_one_line_naming_the_key_and_exit_2() {
    let env = TestEnv::new(Backend::Sqlite).await;
    let cfg = env.dir.path().join("bad.toml");
    std::fs::write(&cfg, "[daemon]\nrescan_interval_secs = \"soon\"\n").expect("write");
    let out = env
        .cmd()
        .arg("--config")
        .arg(&cfg)
        .arg("files")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr_of(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("rescan_interval_secs"), "{err}");

    std::fs::write(&cfg, "[daemon]\nrescan_intervall_secs = 5\n").expect("write");
    let out = env
        .cmd()
        .arg("--config")
        .arg(&cfg)
        .arg("files")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr_of(&out);
    assert!(err.contains("daemon.rescan_intervall_secs"), "{err}");

    let out = env
        .cmd()
        .env("GLEANER_LOG__FORMAT", "xml")
        .arg("files")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("log.format"));
}

#[tokio::test]
async fn unreachable_database_is_one_line_without_password_and_exit_2() {
    let env = TestEnv::new(Backend::Sqlite).await;
    let out = env
        .cmd()
        .env("GLEANER_DATABASE__CONNECT_TIMEOUT_SECS", "2")
        .args([
            "files",
            "--database-url",
            "postgres://bob:hunter2@127.0.0.1:1/nope",
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr_of(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("postgres://bob:***@127.0.0.1:1/nope"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
    // The cause is named at once, not "pool timed out" after the timeout.
    assert!(err.to_lowercase().contains("refused"), "{err}");
    assert!(!err.contains("timed out"), "{err}");

    // A database that does not exist, on a server that answers.
    if let Ok(pg) = std::env::var("GLEANER_TEST_PG_URL") {
        let base = pg
            .rsplit_once('/')
            .map_or(pg.as_str(), |(b, _)| b)
            .to_string();
        let started = std::time::Instant::now();
        let out = env
            .cmd()
            .args([
                "files",
                "--database-url",
                &format!("{base}/gleaner_no_such_db"),
            ])
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2));
        let err = stderr_of(&out);
        assert!(err.contains("does not exist"), "{err}");
        assert!(started.elapsed().as_secs() < 5, "named within 5 s");
    }

    let out = env
        .cmd()
        .args(["files", "--database-url", "sqlite:///proc/no/such/dir/x.db"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("/proc/no/such/dir"),
        "{}",
        stderr_of(&out)
    );
}

async fn json_shapes(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let p = env.path(&format!("-home-u-p/{SID}.jsonl"));
    append(
        &p,
        user_line(SID, "u1", "Make the build green\nplease").as_bytes(),
    );
    append(&p, b"{\"type\":\"mystery\"}\n{\"half\":");
    let summary = env.ingest();
    for k in [
        "files",
        "bytes",
        "lines",
        "rows",
        "diagnostics",
        "seconds",
        "mb_per_s",
    ] {
        assert!(summary.get(k).is_some(), "summary lacks {k}: {summary}");
    }
    assert_eq!(summary["rows"], 1);

    // Global flags after the subcommand work as well as before it.
    let out = std::process::Command::new(bin())
        .env("HOME", env.dir.path())
        .env("XDG_DATA_HOME", env.dir.path().join("data"))
        .args([
            "files",
            "--json",
            "--machine-id",
            "test",
            "--database-url",
            &env.url,
        ])
        .arg("--projects-dir")
        .arg(&env.projects)
        .output()
        .expect("run");
    assert_ok(&out);
    let files: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let f = &files[0];
    for k in [
        "path",
        "session_id",
        "agent_id",
        "size",
        "offset",
        "lines",
        "diagnostics",
        "generation",
        "state",
    ] {
        assert!(f.get(k).is_some(), "files entry lacks {k}: {f}");
    }
    let bytes = std::fs::read(&p).expect("read");
    let (offset, lines) = expected_checkpoint(&bytes);
    assert_eq!(f["offset"].as_u64(), Some(offset));
    assert_eq!(f["lines"].as_u64(), Some(lines));
    assert_eq!(f["size"].as_u64(), Some(bytes.len() as u64));
    assert_eq!(f["session_id"], SID);

    let out = env
        .cmd()
        .args(["sessions", "--json"])
        .output()
        .expect("run");
    assert_ok(&out);
    let sessions: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let s = &sessions[0];
    for k in [
        "session_id",
        "project",
        "cwd",
        "git_branch",
        "version",
        "title",
        "started_at",
        "last_activity_at",
        "files",
        "lines",
        "messages",
    ] {
        assert!(s.get(k).is_some(), "sessions entry lacks {k}: {s}");
    }
    assert_eq!(s["title"], "Make the build green");
    assert_eq!(s["project"], "-home-u-p");
    assert_eq!(s["messages"], 1);
    assert_eq!(s["files"], 1);

    let out = env.cmd().arg("sessions").output().expect("run");
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().expect("header").split_whitespace().collect();
    assert_eq!(
        head,
        ["ID", "STARTED", "DUR", "PROJECT", "MSGS", "FB", "SNIP", "STATUS", "TITLE"]
    );
    let row = lines.next().expect("a row");
    assert!(
        row.starts_with("dddddddd ") && row.ends_with("Make the build green"),
        "{text}"
    );
    env.cleanup().await;
}

both_backends!(json_output_shapes, json_shapes);

#[tokio::test]
async fn a_missing_projects_folder_is_named_and_exit_2() {
    let env = TestEnv::new(Backend::Sqlite).await;
    let out = env
        .cmd()
        .args(["ingest", "--projects-dir", "/no/such/dir"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr_of(&out);
    assert!(
        err.contains("/no/such/dir") && err.contains("does not exist"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[tokio::test]
async fn completions_for_each_shell() {
    let env = TestEnv::new(Backend::Sqlite).await;
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef gleaner"),
        ("fish", "complete -c gleaner"),
    ] {
        let out = env
            .cmd()
            .args(["completions", shell])
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(marker),
            "{shell}: {}",
            &text[..text.len().min(200)]
        );
        assert!(text.contains("export"), "{shell} lists the subcommands");
    }
    let out = env
        .cmd()
        .args(["completions", "tcsh"])
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown shell is a usage error"
    );
}

#[tokio::test]
async fn project_accepts_the_encoded_folder_name_and_the_real_path() {
    let env = TestEnv::new(Backend::Sqlite).await;
    let tree = corpus_dir()
        .join("4thehalibit__omarchy-backup")
        .canonicalize()
        .expect("corpus tree");
    env.ingest_dir(&tree);
    for project in ["-home-vwestberg-Claude", "/home/vwestberg/Claude"] {
        let out = env
            .cmd()
            .args(["sessions", "--project", project, "--json"])
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(0), "{project}: {}", stderr_of(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        assert!(!v.as_array().expect("array").is_empty(), "{project}");
    }
}

#[tokio::test]
async fn log_level_from_gleaner_log_and_log_format_flag() {
    let env = TestEnv::new(Backend::Sqlite).await;
    let out = env
        .cmd()
        .env("GLEANER_LOG", "gleaner=debug,sqlx=warn")
        .args(["--log-format", "json", "config"])
        .output()
        .expect("run");
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    // The effective configuration is TOML: every key, its value and where it came from.
    let v: toml::Table = text.parse().expect("config prints TOML");
    assert_eq!(v["log"]["level"].as_str(), Some("gleaner=debug,sqlx=warn"));
    assert_eq!(v["log"]["format"].as_str(), Some("json"));
    assert!(
        text.contains("level = \"gleaner=debug,sqlx=warn\"  # from: env"),
        "{text}"
    );
    assert!(text.contains("format = \"json\"  # from: flag"), "{text}");
    let defaults: toml::Table = gleaner::config::DEFAULT_CONFIG_TOML
        .parse()
        .expect("defaults");
    for (table, keys) in &defaults {
        match keys.as_table() {
            Some(keys) => {
                for k in keys.keys() {
                    assert!(v[table].get(k).is_some(), "{table}.{k} missing:\n{text}");
                }
            }
            None => assert!(v.contains_key(table), "{table} missing"),
        }
    }
    // A value from the file says so; a password in the URL is hidden.
    let file = env.dir.path().join("cfg.toml");
    std::fs::write(&file, "[batch]\nmax_lines = 321\n").expect("write");
    let out = env
        .cmd_with_url("postgres://u:hunter2@127.0.0.1:1/x")
        .arg("--config")
        .arg(&file)
        .arg("config")
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("max_lines = 321  # from: file"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
    // So is one given as a query parameter, in `config` and in the error of a command that
    // cannot connect.
    let url = "postgres://u@127.0.0.1:1/x?connect_timeout=1&password=hunter3";
    for args in [&["config"][..], &["sessions"][..]] {
        let out = env.cmd_with_url(url).args(args).output().expect("run");
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!all.contains("hunter3"), "{args:?}: {all}");
        assert!(all.contains("password=***"), "{args:?}: {all}");
    }
    // No daemon: `status --json` still answers JSON, and exit 1.
    let out = env.cmd().args(["status", "--json"]).output().expect("run");
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("status JSON");
    assert_eq!(v["running"], false, "{v}");
    // A bad flag or value is one line naming it, exit 2 (not clap's usage block).
    for (args, want) in [
        (&["search", "x", "--limit", "0"][..], "--limit"),
        (&["sessions", "--no-such-flag"][..], "--no-such-flag"),
        (&["search"][..], "<QUERY>"),
    ] {
        let out = env.cmd().args(args).output().expect("run");
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // --log-level wins over GLEANER_LOG; a bad format is one line and exit 2.
    let out = env
        .cmd()
        .env("GLEANER_LOG", "debug")
        .args(["--log-level", "warn", "config"])
        .output()
        .expect("run");
    assert!(String::from_utf8_lossy(&out.stdout).contains("level = \"warn\"  # from: flag"));
    let out = env
        .cmd()
        .args(["--log-format", "xml", "config"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("log.format"),
        "{}",
        stderr_of(&out)
    );
}

/// An empty answer is not an error: exit 0, nothing on stdout, a word on stderr; a closed pipe
/// ends quietly.
async fn empty_answers(backend: Backend) {
    let env = TestEnv::new(backend).await;
    append(
        &env.path(&format!("-home-u-p/{SID}.jsonl")),
        user_line(SID, "u1", "a prompt about wombats").as_bytes(),
    );
    env.ingest();
    for (args, said) in [
        (
            &["sessions", "--project", "no-such-project"][..],
            "no sessions",
        ),
        (&["summaries"][..], "no summaries"),
        (
            &["feedback", "--offset", "40"][..],
            "no feedback at offset 40",
        ),
        (&["search", "zebra"][..], "no results"),
    ] {
        let out = env.cmd().args(args).output().expect("run");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr_of(&out));
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_eq!(stderr_of(&out).trim(), said, "{args:?}");
    }
    // A blank project would match every session: it is an error naming the flag.
    for args in [
        &["sessions", "--project", ""][..],
        &["search", "wombats", "--project", " "][..],
        &["context", "--project", ""][..],
    ] {
        let out = env.cmd().args(args).output().expect("run");
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(err.contains("invalid --project"), "{args:?}: {err}");
    }
    // `gleaner sessions | head -0`: the reader is gone before anything is written.
    let mut child = env
        .cmd()
        .args(["feedback"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(stderr_of(&out).is_empty(), "{}", stderr_of(&out));
    env.cleanup().await;
}

both_backends!(empty_answers_exit_0_and_say_so, empty_answers);

/// The sessions table fits the width it is given, and wide (CJK, emoji) titles keep the
/// columns aligned: compared by display width.
async fn table_width(backend: Backend) {
    use unicode_width::UnicodeWidthStr;
    let env = TestEnv::new(backend).await;
    let titles = [
        "日本語のセッションタイトル、とても長いタイトルがここに続きます",
        "修复数据库连接池的问题并添加测试",
        "Fix the flaky test 🚀 and ship it before the weekend, with a long tail",
        "short",
    ];
    for (i, t) in titles.iter().enumerate() {
        let sid = format!("eeeeeeee-0000-4000-8000-00000000000{i}");
        append(
            &env.path(&format!("-home-u-p{i}/{sid}.jsonl")),
            user_line(&sid, &format!("u{i}"), t).as_bytes(),
        );
    }
    env.ingest();
    for cols in [60usize, 200] {
        let out = env
            .cmd()
            .env("COLUMNS", cols.to_string())
            .arg("sessions")
            .output()
            .expect("run");
        assert_ok(&out);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut lines = text.lines();
        let head = lines.next().expect("header");
        let title_at = head[..head.find("TITLE").expect("TITLE")].width();
        let mut rows = 0;
        for line in lines {
            assert!(line.width() <= cols, "{} > {cols}: {line}", line.width());
            let t = titles
                .iter()
                .find(|t| line.contains(&t.chars().take(2).collect::<String>()))
                .expect("a known title");
            let at = line
                .find(&t.chars().take(2).collect::<String>())
                .expect("title");
            assert_eq!(
                line[..at].width(),
                title_at,
                "misaligned at {cols}:\n{text}"
            );
            if cols == 200 {
                assert!(line.ends_with(t), "whole at 200 columns: {line}");
            }
            rows += 1;
        }
        assert_eq!(rows, titles.len(), "{text}");
        // The other listings cut their last column to the width too.
        let out = env
            .cmd()
            .env("COLUMNS", cols.to_string())
            .arg("feedback")
            .output()
            .expect("run");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(text.lines().count(), titles.len(), "{text}");
        for line in text.lines() {
            assert!(line.width() <= cols, "{} > {cols}: {line}", line.width());
        }
    }
    env.cleanup().await;
}

both_backends!(session_table_fits_the_width_with_wide_titles, table_width);

/// Skipped lines are logged and listed by `gleaner diagnostics` (all, or one file's); a file
/// this user cannot read is named with the OS's reason and shown `unreadable` with its size.
async fn diagnostics_listed(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let p = env.path(&format!("-home-u-p/{SID}.jsonl"));
    let big = user_line(SID, "big", &"x".repeat(5000));
    append(&p, big.as_bytes());
    append(&p, b"{not json\n");
    append(&p, user_line(SID, "after", "still here").as_bytes());
    let out = env
        .cmd()
        .env("GLEANER_TAIL__MAX_LINE_BYTES", "2048")
        .env("GLEANER_LOG__LEVEL", "warn")
        .args(["ingest"])
        .output()
        .expect("ingest");
    assert_ok(&out);
    let log = stderr_of(&out);
    assert!(
        log.contains("line skipped") && log.contains(&p.display().to_string()),
        "{log}"
    );
    let out = env
        .cmd()
        .args(["diagnostics", "--json"])
        .output()
        .expect("diagnostics");
    assert_ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let kinds: Vec<(&str, i64)> = v
        .as_array()
        .expect("array")
        .iter()
        .map(|d| {
            (
                d["kind"].as_str().unwrap_or(""),
                d["line_no"].as_i64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(kinds, [("malformed_json", 2), ("too_long", 1)], "{v}");
    let out = env
        .cmd()
        .args(["diagnostics", "--file"])
        .arg(&p)
        .output()
        .expect("diagnostics --file");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("{}:1 too_long", p.display())),
        "{text}"
    );
    let out = env
        .cmd()
        .args(["diagnostics", "--file", "/no/such/file.jsonl"])
        .output()
        .expect("diagnostics --file");
    // A file Gleaner does not track is said, not an empty answer.
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr_of(&out).contains("no tracked file at /no/such/file.jsonl"),
        "{}",
        stderr_of(&out)
    );

    // Unreadable: only a user without CAP_DAC_OVERRIDE can be refused (root reads anything).
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !root {
        use std::os::unix::fs::PermissionsExt;
        let q = env.path("-home-u-p/aaaaaaaa-0000-4000-8000-00000000dead.jsonl");
        append(&q, user_line(SID, "q", "locked away").as_bytes());
        std::fs::set_permissions(&q, std::fs::Permissions::from_mode(0o000)).expect("chmod");
        let out = env.cmd().args(["ingest"]).output().expect("ingest");
        assert!(
            stderr_of(&out).contains("Permission denied"),
            "{}",
            stderr_of(&out)
        );
        let out = env.cmd().args(["files"]).output().expect("files");
        let text = String::from_utf8_lossy(&out.stdout);
        let row = text
            .lines()
            .find(|l| l.contains("dead.jsonl"))
            .expect("row");
        assert!(row.contains("unreadable"), "{row}");
        std::fs::set_permissions(&q, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    }
    env.cleanup().await;
}

both_backends!(diagnostics_are_logged_and_listed, diagnostics_listed);
