//! `[refine]` with fake commands, on both backends: a command that answers stores at most two
//! redacted learnings with origin `refined` and records each episode once; a failing, a slow and
//! a missing command are recorded as failures (retried up to `max_attempts`) and never break
//! anything; without a command, `gleaner refine` says refinement is off.

use std::path::Path;

use serde_json::Value;

use crate::both_backends;
use crate::common::*;

/// A corpus session with closed non-routine episodes.
const SESSION_DIR: &str = "Eduardodmb__ClaudeHome";

fn write_script(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write script");
    format!("sh {}", path.display())
}

async fn scalar(store: &gleaner::store::Store, sql: &str) -> i64 {
    use gleaner::store::Store;
    match store {
        Store::Sqlite(p) => sqlx::query_scalar::<_, i64>(sql).fetch_one(p).await,
        Store::Postgres(p) => sqlx::query_scalar::<_, i64>(sql).fetch_one(p).await,
    }
    .expect(sql)
}

fn refine(env: &TestEnv, command: &str, extra: &[(&str, &str)]) -> Value {
    let mut c = env.cmd();
    c.env("GLEANER_REFINE__COMMAND", command)
        .env("GLEANER_REFINE__TIMEOUT_SECS", "2");
    for (k, v) in extra {
        c.env(k, v);
    }
    let out = c
        .args(["refine", "--limit", "3", "--json"])
        .output()
        .expect("run gleaner refine");
    assert_ok(&out);
    serde_json::from_slice(&out.stdout).expect("json report")
}

async fn refine_with_fake_commands(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let corpus = corpus_dir()
        .join(SESSION_DIR)
        .canonicalize()
        .expect("corpus");
    env.ingest_dir(&corpus);
    let store = env.store().await;
    let pending = scalar(
        &store,
        "SELECT COUNT(*) FROM episodes WHERE status = 'closed' AND triage <> 'routine'",
    )
    .await;
    assert!(pending >= 3, "{pending} closed non-routine episodes");
    let scripts = env.dir.path().join("scripts");
    std::fs::create_dir_all(&scripts).expect("scripts dir");

    // Off: one line, exit 2.
    let out = env.cmd().args(["refine"]).output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("refine is off"));

    // A failing command and a slow one: failures recorded, nothing stored.
    let fail = write_script(&scripts, "fail.sh", "cat >/dev/null; echo boom >&2; exit 3");
    let r = refine(&env, &fail, &[]);
    assert_eq!(
        (r["refined"].as_i64(), r["failed"].as_i64()),
        (Some(0), Some(3)),
        "{r}"
    );
    let slow = write_script(&scripts, "slow.sh", "sleep 30");
    let started = std::time::Instant::now();
    let r = refine(&env, &slow, &[("GLEANER_REFINE__MAX_ATTEMPTS", "3")]);
    assert_eq!(r["failed"].as_i64(), Some(3), "{r}");
    assert!(started.elapsed().as_secs() < 20, "timeouts of 2 s each");
    let errors = scalar(
        &store,
        "SELECT COUNT(*) FROM refinements WHERE state = 'failed' AND error LIKE 'timed out%'",
    )
    .await;
    assert_eq!(errors, 3);
    assert_eq!(
        scalar(
            &store,
            "SELECT COUNT(*) FROM snippets WHERE origin = 'refined'"
        )
        .await,
        0
    );

    // A command that answers: it reads the episode (checked through a copy of its input) and
    // returns three learnings, one carrying a fake secret and one too short for the gates.
    let input_copy = env.dir.path().join("last-input.json");
    let answer = serde_json::json!([
        {"observation": "The Odoo module upgrade failed with an XML tag mismatch and was fixed by closing the groups.",
         "generalization": "Validate Odoo view XML (matching group and xpath tags) before upgrading the module in the container; the upgrade stops at the first mismatch.",
         "type": "mistake", "title": "Check Odoo view XML before upgrading"},
        {"observation": "The token ghp_L5sffHkGClQPZR42lO8kvAd4FyXmzDW9I9hN was pasted into a prompt while configuring the remote.",
         "generalization": "Never paste credentials into prompts such as ghp_L5sffHkGClQPZR42lO8kvAd4FyXmzDW9I9hN; use the credential helper so the token stays out of transcripts.",
         "type": "preference"},
        {"observation": "x", "generalization": "short", "type": "pattern"}
    ]);
    // The episode id goes into each learning: learnings are stored once per session by content.
    let body = answer
        .to_string()
        .replace("upgrade stops", "upgrade stops (episode $EP)")
        .replace("out of transcripts", "out of transcripts (episode $EP)");
    let good = write_script(
        &scripts,
        "good.sh",
        &format!(
            "cat > {input}\nEP=$(grep -o '\"id\":[0-9]*' {input} | head -1 | cut -d: -f2)\n\
             cat <<EOF\nHere you go:\n{body}\nHope this helps.\nEOF",
            input = input_copy.display(),
        ),
    );
    let r = refine(&env, &good, &[("GLEANER_REFINE__MAX_ATTEMPTS", "9")]);
    assert_eq!(r["refined"].as_i64(), Some(3), "{r}");
    assert_eq!(r["learnings"].as_i64(), Some(6), "two per episode: {r}");
    let input: Value =
        serde_json::from_str(&std::fs::read_to_string(&input_copy).expect("input copy"))
            .expect("input is JSON");
    for key in ["episode", "text", "snippets", "instructions"] {
        assert!(input.get(key).is_some(), "{key} in {input}");
    }
    assert!(input["episode"]["triage"].as_str() != Some("routine"));
    assert!(
        !input["text"].as_str().unwrap_or("").is_empty(),
        "the episode's lines"
    );
    let refined = scalar(
        &store,
        "SELECT COUNT(*) FROM snippets WHERE origin = 'refined' AND episode_id IS NOT NULL",
    )
    .await;
    assert_eq!(refined, 6);
    let leaked = scalar(
        &store,
        "SELECT COUNT(*) FROM snippets WHERE content LIKE '%ghp_L5sff%' OR title LIKE '%ghp_L5sff%' \
         OR metadata LIKE '%ghp_L5sff%'",
    )
    .await;
    assert_eq!(leaked, 0, "the command's output is redacted too");
    assert_eq!(
        scalar(
            &store,
            "SELECT COUNT(*) FROM snippets WHERE origin = 'refined' AND tags LIKE '%refined%'"
        )
        .await,
        6
    );

    // Each episode is refined once: a second pass finds nothing new among the first three.
    let done = scalar(
        &store,
        "SELECT COUNT(*) FROM refinements WHERE state = 'done'",
    )
    .await;
    assert_eq!(done, 3);
    // Refined learnings are searchable and exported like the others.
    let out = env
        .cmd()
        .args(["snippets", "--keyword", "Odoo view XML", "--json"])
        .output()
        .expect("snippets");
    assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("refined"));
}

both_backends!(refine_with_fake_commands, refine_with_fake_commands);
