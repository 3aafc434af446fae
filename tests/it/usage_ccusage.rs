//! `gleaner usage` against ccusage (pinned, installed by `scripts/ensure-ccusage.sh`) on the
//! real corpus, laid out as Claude Code lays it out.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::both_backends;
use crate::common::*;
use crate::usage::{cost, report, tokens};

/// The ccusage binary the test script installed (pinned version).
fn ccusage() -> PathBuf {
    let p = std::env::var("GLEANER_TEST_CCUSAGE").unwrap_or_else(|_| {
        panic!("GLEANER_TEST_CCUSAGE is not set: run the tests with scripts/test.sh")
    });
    PathBuf::from(p)
}

/// The corpus laid out as Claude Code lays out `~/.claude/projects`: a folder per project,
/// `<session>.jsonl` in it, sub-agents under `<session>/subagents/` (ccusage keys a session
/// by that layout). Files outside such a layout go flat into a folder of their source.
/// Files not in Claude Code's compact JSON are left out (see below).
fn claude_tree(corpus: &Path, to: &Path) {
    let mut stack = vec![corpus.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("read corpus").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().and_then(|x| x.to_str()) != Some("jsonl") {
                continue;
            }
            // Hand-formatted documentation fixtures (`"usage": {`, not Claude Code's compact
            // JSON): ccusage's byte scan for `"usage":{` skips their replies, Gleaner counts
            // them; left out of the comparison.
            let text = std::fs::read(&p).expect("read");
            if text.windows(10).any(|w| w == b"\"usage\": {") {
                continue;
            }
            let rel: Vec<String> = p
                .strip_prefix(corpus)
                .expect("under corpus")
                .iter()
                .map(|c| c.to_string_lossy().into_owned())
                .collect();
            let source = rel[0].clone();
            let dest = match rel.iter().rposition(|c| c == "projects") {
                Some(i) if rel.len() > i + 2 => {
                    let mut d = to.join(format!("{source}--{}", rel[i + 1]));
                    for c in &rel[i + 2..] {
                        d = d.join(c);
                    }
                    d
                }
                _ if rel.len() == 1 => to.join("corpus-top").join(&source),
                _ => to
                    .join(format!("corpus-{source}"))
                    .join(rel[1..].join("__")),
            };
            if dest.exists() {
                continue;
            }
            std::fs::create_dir_all(dest.parent().expect("parent")).expect("mkdir");
            std::fs::copy(&p, &dest).expect("copy");
        }
    }
}

/// ccusage's key for a file's rows: its name for `<project>/<name>.jsonl`, the session folder
/// for a sub-agent, else its folder.
fn ccusage_key(projects: &Path, path: &str) -> String {
    let rel: Vec<String> = Path::new(path)
        .strip_prefix(projects)
        .map(|r| r.iter().map(|c| c.to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    match rel.len() {
        2 => rel[1].trim_end_matches(".jsonl").to_string(),
        n if n >= 4 && rel[n - 2] == "subagents" => rel[n - 3].clone(),
        n if n >= 2 => rel[n - 2].clone(),
        _ => String::new(),
    }
}

const CC: [&str; 4] = [
    "inputTokens",
    "outputTokens",
    "cacheCreationTokens",
    "cacheReadTokens",
];

fn cc_tokens(v: &Value) -> [i64; 4] {
    CC.map(|k| v[k].as_i64().unwrap_or(0))
}

fn run_ccusage(home: &Path, what: &str) -> Value {
    let out = std::process::Command::new(ccusage())
        .args([what, "--json", "--offline"])
        .env("CLAUDE_CONFIG_DIR", home)
        .env("TZ", "UTC")
        .output()
        .expect("run ccusage");
    assert!(
        out.status.success(),
        "ccusage {what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("ccusage JSON")
}

/// The corpus against ccusage: totals within 0.5 % (tokens; 0.11 % measured) and 1 % (cost),
/// and at least 90 % of days and 85 % of sessions equal to the token. What still differs is
/// printed; docs/usage.md says why (a message copied into sessions with other ids, which
/// ccusage counts once per session and Gleaner once; lines ccusage's schema rejects).
async fn usage_agrees_with_ccusage(backend: Backend) {
    let env = TestEnv::new(backend).await;
    claude_tree(&corpus_dir(), &env.projects);
    env.ingest();
    let home = env.dir.path().join("claude");
    std::fs::create_dir_all(&home).expect("mkdir");
    std::os::unix::fs::symlink(&env.projects, home.join("projects")).expect("link");

    let cc_daily = run_ccusage(&home, "daily");
    let cc_sessions = run_ccusage(&home, "session");
    let days = report(&env, &["--by", "day", "--limit", "500"]);
    let sessions = report(&env, &["--by", "session", "--limit", "500"]);

    let g = tokens(&days["totals"]);
    let c = cc_tokens(&cc_daily["totals"]);
    for i in 0..4 {
        let rel = (g[i] - c[i]).abs() as f64 / c[i].max(1) as f64;
        assert!(rel < 0.005, "{}: gleaner {} ccusage {}", CC[i], g[i], c[i]);
    }
    let gc = cost(&days["totals"]).expect("every corpus model has a price");
    let ccc = cc_daily["totals"]["totalCost"]
        .as_f64()
        .expect("ccusage cost");
    assert!(
        (gc - ccc).abs() / ccc < 0.01,
        "cost: gleaner {gc} ccusage {ccc}"
    );

    let cc_days: std::collections::HashMap<String, [i64; 4]> = cc_daily["daily"]
        .as_array()
        .expect("daily")
        .iter()
        .map(|d| (d["period"].as_str().unwrap_or("").to_string(), cc_tokens(d)))
        .collect();
    let g_days = days["rows"].as_array().expect("rows");
    let same_days = g_days
        .iter()
        .filter(|r| cc_days.get(r["key"].as_str().unwrap_or("")) == Some(&tokens(r)))
        .count();
    for r in g_days {
        let k = r["key"].as_str().unwrap_or("");
        if cc_days.get(k) != Some(&tokens(r)) {
            eprintln!(
                "day {k}: gleaner {:?} ccusage {:?}",
                tokens(r),
                cc_days.get(k)
            );
        }
    }
    assert!(
        same_days * 10 >= g_days.len() * 9,
        "{same_days} of {} days equal",
        g_days.len()
    );

    // ccusage's rows summed per Gleaner session (through the files Gleaner read).
    let store = env.store().await;
    let mut key_session: std::collections::HashMap<String, String> = Default::default();
    for f in files(&store).await {
        if let Some(s) = &f.session_id {
            key_session.insert(ccusage_key(&env.projects, &f.path), s.clone());
        }
    }
    let mut cc_by_session: std::collections::HashMap<String, [i64; 4]> = Default::default();
    for r in cc_sessions["session"].as_array().expect("sessions") {
        let key = r["period"].as_str().unwrap_or("");
        if let Some(s) = key_session.get(key) {
            let t = cc_by_session.entry(s.clone()).or_default();
            for (a, b) in t.iter_mut().zip(cc_tokens(r)) {
                *a += b;
            }
        }
    }
    let g_sessions = sessions["rows"].as_array().expect("rows");
    let same = g_sessions
        .iter()
        .filter(|r| cc_by_session.get(r["key"].as_str().unwrap_or("")) == Some(&tokens(r)))
        .count();
    assert!(
        same * 100 >= g_sessions.len() * 85,
        "{same} of {} sessions equal",
        g_sessions.len()
    );
    eprintln!(
        "ccusage agreement: {same_days}/{} days, {same}/{} sessions; totals {g:?} vs {c:?}, \
         cost {gc:.4} vs {ccc:.4}",
        g_days.len(),
        g_sessions.len()
    );
    env.cleanup().await;
}
both_backends!(agrees_with_ccusage, usage_agrees_with_ccusage);
