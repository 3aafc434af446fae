//! What the commands print: a reader that closes the pipe early (`| head`) ends them quietly
//! with exit 0; tables fit the terminal's width.

use std::io::Read;
use std::process::Stdio;

use crate::common::*;

/// Run `args` with a stdout pipe whose reader closes after `keep` bytes: exit 0, no panic and
/// no error on stderr.
fn closed_early(env: &TestEnv, args: &[&str], keep: usize) {
    let mut child = env
        .cmd()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut out = child.stdout.take().expect("stdout");
    let mut first = vec![0u8; keep];
    if keep > 0 {
        let _ = out.read(&mut first);
    }
    drop(out);
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("stderr");
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(0), "{args:?}: {err}");
    for bad in ["panick", "Broken pipe", "os error 32", "gleaner: "] {
        assert!(!err.contains(bad), "{args:?} said: {err}");
    }
}

#[tokio::test]
async fn a_closed_pipe_ends_every_command_quietly() {
    let env = TestEnv::new(Backend::Sqlite).await;
    copy_tree(
        &corpus_dir().join("4thehalibit__omarchy-backup/.claude/projects"),
        &env.projects,
    );
    env.ingest();
    let sid = "512f6c74-f82f-4adb-9719-4ae90076677c";
    let settings = env.dir.path().join("settings.json");
    let settings = settings.to_string_lossy().to_string();
    for args in [
        vec!["completions", "bash"],
        vec!["doctor"],
        vec!["config"],
        vec!["config", "--default"],
        vec![
            "hooks",
            "install",
            "--print",
            "--settings",
            settings.as_str(),
        ],
        vec!["service", "install", "--print"],
        vec!["text", sid, "--json"],
        vec!["text", sid],
        vec!["sessions", "--json"],
        vec!["export", "--format", "md"],
    ] {
        closed_early(&env, &args, 0);
        closed_early(&env, &args, 10);
    }
    env.cleanup().await;
}

/// At 80 columns every line of every listing fits (values cut with `…`, excerpts wrapped).
#[tokio::test]
async fn every_listing_fits_80_columns() {
    use unicode_width::UnicodeWidthStr;
    let env = TestEnv::new(Backend::Sqlite).await;
    let corpus = corpus_dir().canonicalize().expect("corpus");
    env.ingest_dir(&corpus);
    let sid = "2ab91b6f";
    for args in [
        vec!["files", "--limit", "500"],
        vec!["sessions", "--limit", "500"],
        vec!["diagnostics", "--limit", "500"],
        vec!["summaries", "--limit", "500"],
        vec!["feedback", "--limit", "500"],
        vec!["episodes", "--limit", "500"],
        vec!["snippets", "--limit", "500"],
        vec!["search", "the", "--limit", "200"],
        vec!["search", "error", "--limit", "200"],
        vec!["show", sid],
    ] {
        let out = env
            .cmd_for(&corpus)
            .env("COLUMNS", "80")
            .args(&args)
            .output()
            .expect("run");
        assert_ok(&out);
        let text = String::from_utf8_lossy(&out.stdout);
        // (The corpus has no diagnostics: that listing may be empty.)
        assert!(
            !text.trim().is_empty() || args[0] == "diagnostics",
            "{args:?} printed nothing"
        );
        // Every line but `show`'s resume command, printed whole to be copied.
        for l in text.lines().filter(|l| !l.starts_with("Resume ")) {
            assert!(l.width() <= 80, "{args:?}: {} columns: {l}", l.width());
        }
    }
    env.cleanup().await;
}
