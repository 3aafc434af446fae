//! Search what tools did (issue 49), on both backends: 30 phrases drawn from the corpus's tool
//! calls and results (commands, file paths, error lines, output lines) are each found in their
//! session at the line that holds them; a tool hit ranks below what people said in the same
//! words; `--tool` and `--kind tool` narrow a search, and a contradiction between them is an
//! error naming the value.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use crate::both_backends;
use crate::common::*;
use gleaner::extract::tools::QUIET_OUTPUT;

fn search(env: &TestEnv, args: &[&str]) -> Value {
    let out = env
        .cmd()
        .arg("search")
        .args(args)
        .arg("--json")
        .output()
        .expect("run search");
    assert_ok(&out);
    serde_json::from_slice(&out.stdout).expect("search JSON")
}

fn results(v: &Value) -> &Vec<Value> {
    v["results"].as_array().expect("results array")
}

/// A phrase a test looks for, and where it is.
#[derive(Debug, Clone)]
struct Phrase {
    what: &'static str,
    words: String,
    session: String,
    /// The transcript, relative to the corpus.
    file: String,
    line: u64,
}

/// The first `n` runs of ASCII letters and digits of `text` as a phrase, when the text's start
/// is plain ASCII words (a phrase must not depend on how accents or scripts are indexed) and
/// they are at least `min` with two of them at least three letters long.
fn phrase_of(text: &str, n: usize, min: usize) -> Option<String> {
    let head: String = text.chars().take(200).collect();
    if head.chars().any(|c| c.is_alphanumeric() && !c.is_ascii()) {
        return None;
    }
    let words: Vec<&str> = head
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(n)
        .collect();
    let long = words.iter().filter(|w| w.len() >= 3).count();
    // Long runs of letters and digits look like ids or keys, which redaction may replace.
    (words.len() >= min && long >= 2 && words.iter().all(|w| w.len() <= 20))
        .then(|| words.join(" "))
}

/// The text of a `tool_result` block's content.
fn result_text(b: &Value) -> String {
    match &b["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Candidate phrases of every kind from the corpus, each from a tool use id that occurs once in
/// it (a resumed session's copy stores the call once, under the session that held it first).
fn candidates(corpus: &Path) -> Vec<Phrase> {
    let mut files: Vec<_> = walkdir(corpus);
    files.sort();
    let mut seen: HashMap<String, usize> = HashMap::new();
    // Each call's tool, by id: a quiet tool's output is not searched (`QUIET_OUTPUT`).
    let mut names: HashMap<String, String> = HashMap::new();
    let mut found: Vec<(String, Phrase)> = Vec::new();
    for path in &files {
        let Ok(data) = std::fs::read_to_string(path) else {
            continue;
        };
        let rel = path
            .strip_prefix(corpus)
            .unwrap_or(path)
            .to_string_lossy()
            .to_string();
        for (i, line) in data.split('\n').enumerate() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let Some(session) = v["sessionId"].as_str() else {
                continue;
            };
            let Some(blocks) = v["message"]["content"].as_array() else {
                continue;
            };
            for b in blocks {
                let (id, what, text) = match b["type"].as_str() {
                    Some("tool_use") if v["type"] == "assistant" => {
                        names.insert(
                            b["id"].as_str().unwrap_or("").to_string(),
                            b["name"].as_str().unwrap_or("").to_string(),
                        );
                        let input = &b["input"];
                        let (what, text) = match b["name"].as_str() {
                            Some("Bash") => ("command", input["command"].as_str()),
                            Some("Read" | "Edit" | "Write") => {
                                ("path", input["file_path"].as_str())
                            }
                            _ => continue,
                        };
                        (b["id"].as_str(), what, text.unwrap_or("").to_string())
                    }
                    Some("tool_result") => {
                        let what = if b["is_error"] == true {
                            "error"
                        } else {
                            "output"
                        };
                        let tool = names
                            .get(b["tool_use_id"].as_str().unwrap_or(""))
                            .map(String::as_str)
                            .unwrap_or("");
                        if what == "output" && QUIET_OUTPUT.contains(&tool) {
                            continue;
                        }
                        let text = result_text(b);
                        let first = text
                            .lines()
                            .map(str::trim)
                            .find(|l| !l.is_empty())
                            .unwrap_or("")
                            .to_string();
                        (b["tool_use_id"].as_str(), what, first)
                    }
                    _ => continue,
                };
                let Some(id) = id else { continue };
                *seen.entry(format!("{what}:{id}")).or_default() += 1;
                let text = match what {
                    // A path by its last folders and its name.
                    "path" => {
                        let parts: Vec<&str> = text.split('/').collect();
                        parts[parts.len().saturating_sub(3)..].join("/")
                    }
                    _ => text,
                };
                if let Some(words) = phrase_of(&text, 6, 3) {
                    found.push((
                        format!("{what}:{id}"),
                        Phrase {
                            what,
                            words,
                            session: session.to_string(),
                            file: rel.clone(),
                            line: i as u64 + 1,
                        },
                    ));
                }
            }
        }
    }
    found
        .into_iter()
        .filter(|(key, _)| seen.get(key) == Some(&1))
        .map(|(_, p)| p)
        .collect()
}

fn walkdir(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walkdir(&p));
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
    out
}

/// 30 phrases: commands, paths, error lines and output lines, spread over the corpus's sources
/// (its top folders) and files, evenly through each list, deterministic.
fn draw(corpus: &Path) -> Vec<Phrase> {
    let all = candidates(corpus);
    let mut out = Vec::new();
    for (what, n) in [("command", 8), ("path", 8), ("error", 8), ("output", 6)] {
        let mut of: Vec<&Phrase> = all.iter().filter(|p| p.what == what).collect();
        // One phrase per distinct text: a phrase found twice in one session is ambiguous.
        let mut texts: HashMap<(String, String), usize> = HashMap::new();
        for p in &of {
            *texts
                .entry((p.session.clone(), p.words.clone()))
                .or_default() += 1;
        }
        of.retain(|p| texts[&(p.session.clone(), p.words.clone())] == 1);
        assert!(of.len() >= n, "{what}: {} candidates", of.len());
        let step = of.len() / n;
        out.extend((0..n).map(|i| of[i * step].clone()));
    }
    out
}

async fn corpus_tool_phrases(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let corpus = corpus_dir();
    env.ingest_dir(&corpus);
    let phrases = draw(&corpus);
    assert_eq!(phrases.len(), 30);
    let sources: std::collections::HashSet<&str> = phrases
        .iter()
        .filter_map(|p| p.file.split('/').next())
        .collect();
    assert!(sources.len() >= 8, "phrases from {} sources", sources.len());
    let mut missed = Vec::new();
    for p in &phrases {
        let quoted = format!("\"{}\"", p.words);
        let v = search(
            &env,
            &[
                &quoted,
                "--kind",
                "tool",
                "--session",
                &p.session,
                "--limit",
                "200",
            ],
        );
        let at_line = results(&v).iter().any(|r| {
            r["line"].as_u64() == Some(p.line)
                && r["source_file"]
                    .as_str()
                    .is_some_and(|f| f.ends_with(&p.file))
                && r["kind"] == "tool"
        });
        if !at_line {
            missed.push(format!("{p:?} -> {v}"));
        }
    }
    assert!(
        missed.is_empty(),
        "{} of 30 not found at their line:\n{}",
        missed.len(),
        missed.join("\n")
    );
    env.cleanup().await;
}
both_backends!(
    corpus_tool_phrases_are_found_at_their_line,
    corpus_tool_phrases
);

/// A session whose prompt and assistant reply name `frobnicator`, and whose Bash call runs it
/// and fails.
fn frob_session(env: &TestEnv) {
    let sid = "5e551011-0000-4000-8000-000000000049";
    let lines = [
        format!(
            r#"{{"type":"user","sessionId":"{sid}","uuid":"u1","timestamp":"2026-11-01T10:00:00Z","cwd":"/w/frob","message":{{"role":"user","content":"why does the frobnicator crash on start"}}}}"#
        ),
        format!(
            r#"{{"type":"assistant","sessionId":"{sid}","uuid":"a1","parentUuid":"u1","timestamp":"2026-11-01T10:00:05Z","message":{{"id":"m1","role":"assistant","model":"claude-sonnet-4-5","content":[{{"type":"tool_use","id":"toolu_frob1","name":"Bash","input":{{"command":"./frobnicator --check --verbose"}}}}]}}}}"#
        ),
        format!(
            r#"{{"type":"user","sessionId":"{sid}","uuid":"u2","parentUuid":"a1","timestamp":"2026-11-01T10:00:06Z","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"toolu_frob1","is_error":true,"content":"bash: ./frobnicator: No such file or directory\nExit code 127"}}]}}}}"#
        ),
        format!(
            r#"{{"type":"assistant","sessionId":"{sid}","uuid":"a2","parentUuid":"u2","timestamp":"2026-11-01T10:00:09Z","message":{{"id":"m2","role":"assistant","model":"claude-sonnet-4-5","content":[{{"type":"text","text":"The frobnicator binary is not built yet: run make first."}}]}}}}"#
        ),
    ];
    write_file(
        &env.projects,
        "-w-frob/5e551011-0000-4000-8000-000000000049.jsonl",
        &(lines.join("\n") + "\n"),
    );
}

/// The frob session, then a Read and an Edit of `src/main.rs` on a branch with a model's
/// usage; and a warm-up session beside it.
pub(crate) fn frob_edits(env: &TestEnv) -> &'static str {
    frob_session(env);
    let sid = "5e551011-0000-4000-8000-000000000049";
    let line = |uuid: &str, kind: &str, content: &str| {
        let usage = match kind {
            "assistant" => {
                r#","id":"m-UUID","model":"claude-sonnet-4-5","usage":{"input_tokens":10,"output_tokens":5}"#
                    .replace("UUID", uuid)
            }
            _ => String::new(),
        };
        format!(
            r#"{{"type":"{kind}","sessionId":"{sid}","uuid":"{uuid}","timestamp":"2026-11-01T10:01:00Z","cwd":"/w/frob","gitBranch":"feature/frob","message":{{"role":"{kind}"{usage},"content":{content}}}}}"#
        )
    };
    let more = [
        line(
            "a3",
            "assistant",
            r#"[{"type":"tool_use","id":"toolu_r1","name":"Read","input":{"file_path":"/w/frob/src/main.rs"}}]"#,
        ),
        line(
            "u3",
            "user",
            r#"[{"type":"tool_result","tool_use_id":"toolu_r1","content":"fn main() {}"}]"#,
        ),
        line(
            "a4",
            "assistant",
            r#"[{"type":"tool_use","id":"toolu_e1","name":"Edit","input":{"file_path":"/w/frob/src/main.rs","old_string":"fn main() {}","new_string":"fn main() { run() }"}}]"#,
        ),
        line(
            "u4",
            "user",
            r#"[{"type":"tool_result","tool_use_id":"toolu_e1","content":"The file has been updated."}]"#,
        ),
        // A Windows path: its tails follow backslashes.
        line(
            "a5",
            "assistant",
            r#"[{"type":"tool_use","id":"toolu_w1","name":"Write","input":{"file_path":"C:\\Users\\me\\SAT\\parse_sat.py","content":"print(1)"}}]"#,
        ),
    ];
    append(
        &env.projects
            .join("-w-frob/5e551011-0000-4000-8000-000000000049.jsonl"),
        (more.join("\n") + "\n").as_bytes(),
    );
    let warm = "7a7a7a7a-0000-4000-8000-00000000beef";
    write_file(
        &env.projects,
        &format!("-w-frob/{warm}.jsonl"),
        &format!(
            r#"{{"type":"user","sessionId":"{warm}","uuid":"w1","timestamp":"2026-11-01T11:00:00Z","cwd":"/w/frob","message":{{"role":"user","content":"Warmup"}}}}
"#
        ),
    );
    sid
}

fn sessions(env: &TestEnv, args: &[&str]) -> Vec<String> {
    let out = env
        .cmd()
        .arg("sessions")
        .args(args)
        .arg("--json")
        .output()
        .expect("run sessions");
    assert_ok(&out);
    let v: Value = serde_json::from_slice(&out.stdout).expect("sessions JSON");
    v.as_array()
        .expect("array")
        .iter()
        .map(|s| s["session_id"].as_str().unwrap_or("").to_string())
        .collect()
}

async fn what_a_session_did(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let sid = frob_edits(&env);
    env.ingest();

    // `show`: the line back into the session, and the files its tools touched.
    let out = env
        .cmd()
        .args(["show", "5e551011", "--json"])
        .output()
        .expect("show");
    assert_ok(&out);
    let v: Value = serde_json::from_slice(&out.stdout).expect("show JSON");
    assert_eq!(v["resume"], format!("cd /w/frob && claude --resume {sid}"));
    assert_eq!(
        v["files_touched"],
        serde_json::json!([
            {"path": "/w/frob/src/main.rs", "reads": 1, "edits": 1, "writes": 0},
            {"path": "C:\\Users\\me\\SAT\\parse_sat.py", "reads": 0, "edits": 0, "writes": 1}
        ])
    );
    let out = env.cmd().args(["show", "5e551011"]).output().expect("show");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("claude --resume"), "{text}");
    assert!(
        text.contains("edited 1x, read 1x") && text.contains("/w/frob/src/main.rs"),
        "{text}"
    );
    // On a narrow terminal every line is cut but the command to copy.
    let out = env
        .cmd()
        .env("COLUMNS", "40")
        .args(["show", "5e551011"])
        .output()
        .expect("show");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("cd /w/frob && claude --resume {sid}\n")),
        "{text}"
    );
    assert!(text.contains('…'), "nothing was cut at 40 columns: {text}");

    // Listings: the warm-up is hidden unless asked for; file, branch and model filters.
    assert_eq!(sessions(&env, &[]), [sid]);
    assert_eq!(sessions(&env, &["--all"]).len(), 2);
    for (args, found) in [
        (&["--file", "src/main.rs"][..], true),
        (&["--file", "main.rs"][..], true),
        (&["--file", "/w/frob/src/main.rs"][..], true),
        (&["--file", "ain.rs"][..], false),
        (&["--file", "src/other.rs"][..], false),
        (&["--file", "parse_sat.py"][..], true),
        (&["--file", "SAT\\parse_sat.py"][..], true),
        (&["--file", "SAT/parse_sat.py"][..], true),
        (&["--file", "C:\\Users\\me\\SAT\\parse_sat.py"][..], true),
        (&["--file", "at.py"][..], false),
        (&["--branch", "feature/frob"][..], true),
        (&["--branch", "main"][..], false),
        (&["--model", "sonnet"][..], true),
        (&["--model", "opus"][..], false),
    ] {
        let want: Vec<&str> = if found { vec![sid] } else { vec![] };
        assert_eq!(sessions(&env, args), want, "{args:?}");
    }
    for (args, says) in [
        (&["--file", " "][..], "--file"),
        (&["--file", "//"][..], "--file"),
        (&["--branch", ""][..], "--branch"),
    ] {
        let out = env.cmd().arg("sessions").args(args).output().expect("run");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says) && err.lines().count() == 1, "{err}");
    }

    // MCP: the same filters, and a bad one is an error result while the server serves on.
    let mut c = crate::mcp::Client::ready(&env);
    let v = c
        .call("list_sessions", serde_json::json!({"file": "src/main.rs"}))
        .expect("list_sessions file");
    assert_eq!(v["sessions"][0]["session_id"], sid, "{v}");
    let err = c
        .call("list_sessions", serde_json::json!({"file": "  "}))
        .expect_err("blank file");
    assert!(err.contains("file"), "{err}");
    let v = c
        .call(
            "search",
            serde_json::json!({"query": "frobnicator", "tool": "Bash"}),
        )
        .expect("search tool");
    assert_eq!(v["results"].as_array().map(Vec::len), Some(2), "{v}");
    let v = c
        .call(
            "get_session",
            serde_json::json!({"session_id": "5e551011-0000-4000-8000-000000000049"}),
        )
        .expect("get_session");
    assert_eq!(v["files_touched"][0]["edits"], 1, "{v}");
    env.cleanup().await;
}
both_backends!(what_a_session_did_and_how_to_get_back, what_a_session_did);

async fn tool_filters(backend: Backend) {
    let env = TestEnv::new(backend).await;
    frob_session(&env);
    env.ingest();

    // Every kind: what people and the assistant said first, what the tool did after.
    let v = search(&env, &["frobnicator"]);
    let kinds: Vec<&str> = results(&v)
        .iter()
        .map(|r| r["kind"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(kinds.len(), 4, "{v}");
    let first_tool = kinds.iter().position(|k| *k == "tool").expect("a tool hit");
    assert!(
        kinds[..first_tool].len() == 2 && kinds[first_tool..].iter().all(|k| *k == "tool"),
        "{kinds:?}"
    );

    // Page by page, the same hits in the same order as in one page, and the count and
    // `has_more` right across the step from what people said to what tools did (on SQLite
    // the tool index is read only once a page reaches past the other kinds).
    let whole: Vec<(Value, Value)> = results(&v)
        .iter()
        .map(|r| (r["kind"].clone(), r["line"].clone()))
        .collect();
    for at in 0..whole.len() {
        let page = search(
            &env,
            &["frobnicator", "--limit", "1", "--offset", &at.to_string()],
        );
        let hit = &results(&page)[0];
        assert_eq!(
            (hit["kind"].clone(), hit["line"].clone()),
            whole[at],
            "{page}"
        );
        assert_eq!(page["total_count"], whole.len(), "{page}");
        assert_eq!(page["has_more"], at + 1 < whole.len(), "{page}");
    }

    // The call at its line (2), the failure at its line (3), each naming its tool.
    let v = search(&env, &["\"exit code 127\"", "--kind", "tool"]);
    let hits = results(&v);
    assert_eq!(hits.len(), 1, "{v}");
    assert_eq!(hits[0]["line"], 3);
    assert_eq!(hits[0]["tool"], "Bash");
    let v = search(&env, &["frobnicator", "--tool", "bash"]);
    let mut lines: Vec<i64> = results(&v)
        .iter()
        .map(|r| r["line"].as_i64().unwrap_or(0))
        .collect();
    lines.sort();
    assert_eq!(lines, [2, 3], "{v}");
    assert!(results(&search(&env, &["frobnicator", "--tool", "Read"])).is_empty());
    assert!(results(&search(&env, &["verbose", "--kind", "message"])).is_empty());

    // Contradictions and blanks are errors naming the value, exit 2.
    for (args, says) in [
        (&["x", "--kind", "message", "--tool", "Bash"][..], "--kind"),
        (&["x", "--tool", " "][..], "--tool"),
        (&["x", "--kind", "tools"][..], "tools"),
    ] {
        let out = env.cmd().arg("search").args(args).output().expect("run");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says) && err.lines().count() == 1, "{err}");
    }
    env.cleanup().await;
}
both_backends!(tool_filters_and_ranking, tool_filters);

/// A project of more than `NARROW_PROJECT` (1,000) sessions is searched by looking up each
/// match's session, a narrower one through the list of its rows: both give the same hits, counts
/// and pages, tools included.
async fn narrow_and_broad_projects(backend: Backend) {
    let env = TestEnv::new(backend).await;
    frob_session(&env);
    for i in 0..1_000 {
        let sid = format!("9ad9ad00-0000-4000-8000-{i:012}");
        let lines = [
            format!(
                r#"{{"type":"user","sessionId":"{sid}","uuid":"p{i}","timestamp":"2026-11-02T10:00:00Z","cwd":"/w/pad","message":{{"role":"user","content":"pad the table"}}}}"#
            ),
            format!(
                r#"{{"type":"assistant","sessionId":"{sid}","uuid":"q{i}","parentUuid":"p{i}","timestamp":"2026-11-02T10:00:01Z","message":{{"id":"n{i}","role":"assistant","model":"claude-sonnet-4-5","content":[{{"type":"tool_use","id":"toolu_pad{i}","name":"Bash","input":{{"command":"./pad --table {i}"}}}}]}}}}"#
            ),
        ];
        write_file(
            &env.projects,
            &format!("-w-pad/{sid}.jsonl"),
            &(lines.join("\n") + "\n"),
        );
    }
    env.ingest();
    let hits = |v: &Value| -> Vec<(Value, Value, Value)> {
        results(v)
            .iter()
            .map(|r| {
                (
                    r["kind"].clone(),
                    r["line"].clone(),
                    r["session_id"].clone(),
                )
            })
            .collect()
    };
    // `/w/` names all 1,001 sessions (broad), `frob` one (narrow).
    for args in [
        &["frobnicator"][..],
        &["frobnicator", "--kind", "tool"],
        &["frobnicator", "--tool", "Bash"],
        &["frobnicator", "--limit", "2", "--offset", "1"],
    ] {
        let narrow = search(&env, &[args, &["--project", "frob"]].concat());
        let broad = search(&env, &[args, &["--project", "/w/"]].concat());
        assert!(!results(&narrow).is_empty(), "{args:?}: {narrow}");
        assert_eq!(hits(&narrow), hits(&broad), "{args:?}");
        for field in ["total_count", "has_more"] {
            assert_eq!(narrow[field], broad[field], "{args:?} {field}");
        }
    }
    let v = search(&env, &["table", "--project", "/w/", "--kind", "tool"]);
    assert_eq!(v["total_count"], 1_000, "{v}");
    let v = search(&env, &["table", "--project", "frob"]);
    assert_eq!(v["total_count"], 0, "{v}");
    env.cleanup().await;
}
both_backends!(
    narrow_and_broad_projects_search_alike,
    narrow_and_broad_projects
);
