//! `gleaner export --format html|md --session ID` (issue 49) on the real corpus, both backends:
//! every session's HTML parses as HTML5 without one error (html5ever, exact errors), loads
//! nothing from the network, holds every prompt and reply of its main transcript; a session
//! whose transcript Claude Code deleted exports from the archive; the Markdown holds the same
//! turns; a headless browser renders the file offline.

use std::path::Path;

use html5ever::tendril::TendrilSink;
use html5ever::{parse_document, ParseOpts};
use markup5ever_rcdom::{Handle, NodeData, RcDom};
use serde_json::Value;

use crate::both_backends;
use crate::common::*;
use gleaner::export::session::printable;

/// Parse errors of `html` (a repeated `id` counts as one: a link to it would land on the first),
/// and the classes of every element with their counts.
fn parse(html: &str) -> (Vec<String>, Vec<String>, String) {
    let mut opts = ParseOpts::default();
    opts.tokenizer.exact_errors = true;
    let dom = parse_document(RcDom::default(), opts)
        .from_utf8()
        .read_from(&mut html.as_bytes())
        .expect("parse");
    let errors: Vec<String> = dom.errors.borrow().iter().map(|e| e.to_string()).collect();
    let mut classes = Vec::new();
    let mut text = String::new();
    let mut ids = Vec::new();
    fn walk(h: &Handle, classes: &mut Vec<String>, text: &mut String, ids: &mut Vec<String>) {
        match &h.data {
            NodeData::Element { attrs, .. } => {
                for a in attrs.borrow().iter() {
                    if &*a.name.local == "class" {
                        classes.push(a.value.to_string());
                    }
                    if &*a.name.local == "id" {
                        ids.push(a.value.to_string());
                    }
                }
            }
            NodeData::Text { contents } => text.push_str(&contents.borrow()),
            _ => {}
        }
        for c in h.children.borrow().iter() {
            walk(c, classes, text, ids);
        }
    }
    walk(&dom.document, &mut classes, &mut text, &mut ids);
    let mut errors = errors;
    ids.sort();
    for w in ids.windows(2).filter(|w| w[0] == w[1]) {
        errors.push(format!("id {:?} repeated", w[0]));
    }
    (errors, classes, text)
}

/// The prompts and non-empty reply texts of a main transcript, as the export counts them.
fn turns(bytes: &[u8]) -> (usize, usize, Vec<String>) {
    let (mut prompts, mut replies, mut firsts) = (0, 0, Vec::new());
    for raw in bytes.split(|b| *b == b'\n') {
        let Ok(v) = serde_json::from_slice::<Value>(raw) else {
            continue;
        };
        let content = &v["message"]["content"];
        match v["type"].as_str() {
            Some("user") if v["isMeta"] != true && v["isCompactSummary"] != true => match content {
                Value::String(s) => {
                    prompts += 1;
                    firsts.push(s.clone());
                }
                Value::Array(bs) => {
                    prompts += bs.iter().filter(|b| b["type"] == "text").count();
                }
                _ => {}
            },
            Some("assistant") => {
                if let Value::Array(bs) = content {
                    replies += bs
                        .iter()
                        .filter(|b| {
                            b["type"] == "text"
                                && !b["text"].as_str().unwrap_or("").trim().is_empty()
                        })
                        .count();
                }
            }
            _ => {}
        }
    }
    (prompts, replies, firsts)
}

fn export(env: &TestEnv, projects: &Path, sid: &str, format: &str) -> String {
    let out = env
        .cmd_for(projects)
        .args(["export", "--format", format, "--session", sid])
        .output()
        .expect("export");
    assert_ok(&out);
    String::from_utf8(out.stdout).expect("UTF-8")
}

async fn every_corpus_session(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let corpus = corpus_dir().canonicalize().expect("corpus");
    env.ingest_dir(&corpus);
    let store = env.store().await;
    let files = files(&store).await;
    let sessions = store
        .list_sessions(&gleaner::store::SessionFilter::default())
        .await
        .expect("sessions");
    store.close().await;
    let mut checked = 0;
    for s in &sessions {
        let sid = s.session_id.clone();
        let html = export(&env, &corpus, &sid, "html");
        let (errors, classes, text) = parse(&html);
        assert!(errors.is_empty(), "{sid}: {errors:?}");
        for bad in ["<script", "<link", "src=\"http", "src=\"//", "<iframe"] {
            assert!(!html.contains(bad), "{sid}: {bad}");
        }
        // Every prompt and reply of the transcript the export read (the file's first copy).
        let Some(f) = files
            .iter()
            .find(|f| f.session_id.as_deref() == Some(&sid) && f.agent_id.is_none())
        else {
            checked += 1;
            continue;
        };
        let bytes = std::fs::read(&f.path).expect("transcript");
        let (prompts, replies, firsts) = turns(&bytes);
        let count = |c: &str| classes.iter().filter(|x| x.as_str() == c).count();
        assert!(count("turn user") >= prompts, "{sid}: {prompts} prompts");
        // Sub-agents' turns are nested in the page too: at least the main transcript's.
        assert!(
            count("turn assistant") >= replies,
            "{sid}: {replies} replies"
        );
        let r = gleaner::extract::redact::Redactor::builtin();
        for p in &firsts {
            // As stored and shown: redacted, without control characters.
            let shown = printable(&r.redact(p, &mut Default::default()));
            let head: String = shown.chars().take(40).collect();
            assert!(text.contains(head.trim()), "{sid}: prompt {head:?} missing");
        }
        checked += 1;
    }
    assert!(checked > 50, "{checked} sessions");
    env.cleanup().await;
}
both_backends!(
    every_corpus_session_exports_as_valid_html,
    every_corpus_session
);

async fn from_the_archive(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let sid = crate::tool_search::frob_edits(&env);
    // A compaction summary: the Markdown reading shows it where it was written, and the part
    // on what was kept does not show it again.
    let file = env.projects.join(format!("-w-frob/{sid}.jsonl"));
    let mut text = std::fs::read_to_string(&file).expect("read");
    text.push_str(&format!(
        r#"{{"type":"user","isCompactSummary":true,"sessionId":"{sid}","uuid":"cs1","timestamp":"2026-11-01T10:05:00Z","cwd":"/w/frob","message":{{"role":"user","content":"This session is being continued from a previous conversation. Summary: the frobnicator quartzline check was fixed."}}}}
"#
    ));
    std::fs::write(&file, text).expect("write");
    env.ingest();
    let before = export(&env, &env.projects, sid, "html");
    let md = export(&env, &env.projects, sid, "md");
    // Claude Code deletes the transcript: the export reads the archive's copy, the same.
    std::fs::remove_dir_all(env.projects.join("-w-frob")).expect("delete");
    let after = export(&env, &env.projects, sid, "html");
    assert_eq!(before, after);
    assert!(after.contains("Exit code 127") && after.contains("frobnicator --check"));
    assert!(after.contains("claude --resume"));
    assert!(
        md.contains("**User** (line 1)") && md.contains("# What Gleaner kept"),
        "{md}"
    );
    assert_eq!(md.matches("quartzline").count(), 1, "{md}");
    assert!(before.contains("quartzline"));
    // html needs one session: a clear error, exit 2.
    let out = env
        .cmd()
        .args(["export", "--format", "html"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--session"));

    // A headless browser renders the file with no network at all.
    let file = env.dir.path().join("session.html");
    std::fs::write(&file, &after).expect("write");
    let shot = env.dir.path().join("export.png");
    let out = std::process::Command::new(crate::web::browser())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1280,900",
            "--proxy-server=127.0.0.1:9",
        ])
        .arg(format!(
            "--user-data-dir={}",
            env.dir.path().join("chrome").display()
        ))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", file.display()))
        .output()
        .expect("chromium");
    let png = std::fs::read(&shot).unwrap_or_else(|e| {
        panic!(
            "no screenshot ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "a real picture"
    );
    env.cleanup().await;
}
both_backends!(
    exports_from_the_archive_and_renders_offline,
    from_the_archive
);
