//! `gleaner snippet add` through the real binary, on both backends: snippets from a content
//! file, from transcript lines and from turns; redaction before storage; dedup; and a one-line
//! error with a nonzero exit for every way the command can be misused.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::both_backends;
use crate::common::*;

/// Session of the fixture (lines 301 and 303-313 of a real corpus transcript).
const SID: &str = "0fae0449-64d3-4788-8622-d3a47d82c14b";
const PROJECT: &str = "-Users-testuser-proj";
/// The fixture's working directory is `.../example-project/.worktrees/streaming`.
const PROJECT_TAG: &str = "project:streaming";
/// A fake GitHub token (the shape the redactor knows).
const TOKEN: &str = "ghp_L5sffHkGClQPZR42lO8kvAd4FyXmzDW9I9hN";

/// Twelve lines: L1 Read, L2 interruption, turn 1 = L3-L7, turn 2 = L8-L11 (a failed Bash),
/// turn 3 = L12.
fn fixture() -> &'static [u8] {
    include_bytes!("../fixtures/snippet_session.jsonl")
}

/// Put the fixture in the projects folder and ingest it, so the session exists.
fn setup(env: &TestEnv) -> PathBuf {
    let p = env.path(&format!("{PROJECT}/{SID}.jsonl"));
    append(&p, fixture());
    env.ingest();
    p
}

/// `gleaner snippet add <args>`, logging only errors (a slow-statement warning on a busy
/// machine must not count as an error line).
fn add(env: &TestEnv, args: &[&str]) -> Output {
    env.cmd()
        .env("GLEANER_LOG__LEVEL", "error,sqlx=off")
        .args(["snippet", "add"])
        .args(args)
        .output()
        .expect("run gleaner")
}

fn add_path(env: &TestEnv, args: &[&str], flag: &str, path: &Path) -> Output {
    let mut all: Vec<&str> = args.to_vec();
    let p = path.to_str().expect("utf-8 path");
    all.extend([flag, p]);
    add(env, &all)
}

fn json_of(out: &Output) -> serde_json::Value {
    assert_ok(out);
    serde_json::from_slice(&out.stdout).expect("snippet JSON")
}

fn stdout_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A manual snippet as stored.
#[derive(Debug)]
struct Stored {
    id: i64,
    session_id: String,
    snippet_type: String,
    title: String,
    content: String,
    project: String,
    source_file: String,
    line_start: i64,
    line_end: i64,
    tags: Vec<String>,
    metadata: serde_json::Value,
}

type RawRow = (
    i64,
    String,
    String,
    String,
    String,
    String,
    String,
    i64,
    i64,
    String,
    String,
);

const SELECT: &str = "SELECT id, session_id, snippet_type, title, content, project, source_file, \
     line_start, line_end, tags, metadata FROM snippets WHERE origin = 'manual' ORDER BY id";
const TAG_ROWS: &str =
    "SELECT COUNT(*) FROM snippet_tags t JOIN snippets s ON s.id = t.snippet_id \
     WHERE s.origin = 'manual'";

/// Manual snippets and the number of their `snippet_tags` rows, read with plain SQL.
async fn stored(env: &TestEnv, backend: Backend) -> (Vec<Stored>, i64) {
    let (rows, tag_rows): (Vec<RawRow>, i64) = match backend {
        Backend::Sqlite => {
            let pool = sqlx::SqlitePool::connect(&env.url).await.expect("sqlite");
            let rows = sqlx::query_as(SELECT).fetch_all(&pool).await.expect("rows");
            let n = sqlx::query_scalar(TAG_ROWS)
                .fetch_one(&pool)
                .await
                .expect("tags");
            pool.close().await;
            (rows, n)
        }
        Backend::Postgres => {
            let pool = sqlx::PgPool::connect(&env.url).await.expect("postgres");
            let rows = sqlx::query_as(SELECT).fetch_all(&pool).await.expect("rows");
            let n = sqlx::query_scalar(TAG_ROWS)
                .fetch_one(&pool)
                .await
                .expect("tags");
            pool.close().await;
            (rows, n)
        }
    };
    let rows = rows
        .into_iter()
        .map(|r| Stored {
            id: r.0,
            session_id: r.1,
            snippet_type: r.2,
            title: r.3,
            content: r.4,
            project: r.5,
            source_file: r.6,
            line_start: r.7,
            line_end: r.8,
            tags: serde_json::from_str(&r.9).expect("tags JSON"),
            metadata: serde_json::from_str(&r.10).expect("metadata JSON"),
        })
        .collect();
    (rows, tag_rows)
}

fn canonical(p: &Path) -> String {
    std::fs::canonicalize(p)
        .expect("canonicalize")
        .to_string_lossy()
        .into_owned()
}

async fn stores_from_each_source(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let transcript = setup(&env);

    // 1. A content file written by hand, with a secret in it and in the title.
    let note = env.dir.path().join("note.md");
    std::fs::write(
        &note,
        format!(
            "The deploy failed because the CI token {TOKEN} had expired.\n\
             Rotating it in the repository secrets fixed the pipeline.\n\
             Lesson: check token expiry before blaming the runner.\n"
        ),
    )
    .expect("write note");
    let title = format!("Expired CI token {TOKEN} broke deploys");
    let v = json_of(&add_path(
        &env,
        &[
            "--session",
            "0fae0449",
            "--type",
            "learning-pattern",
            "--title",
            &title,
            "--json",
        ],
        "--content-file",
        &note,
    ));
    let note_id = v["id"].as_i64().expect("id");
    assert_eq!(v["duplicate"], false);
    // `snippet show ID`: the whole snippet (its title not cut), its metadata; JSON the same
    // fields as a listing; an unknown id is exit 1.
    let shown = env
        .cmd()
        .args(["snippet", "show", &note_id.to_string()])
        .output()
        .expect("snippet show");
    let text = stdout_of(&shown);
    assert!(
        text.starts_with(&format!("Snippet   {note_id} (learning_pattern, ")),
        "{text}"
    );
    assert!(text.contains(&format!("Session   {SID}")), "{text}");
    assert!(
        text.contains("broke deploys") && !text.contains(TOKEN),
        "{text}"
    );
    let shown = env
        .cmd()
        .args(["snippet", "show", &note_id.to_string(), "--json"])
        .output()
        .expect("snippet show --json");
    let j = json_of(&shown);
    assert_eq!(
        (j["id"].as_i64(), j["session_id"].as_str()),
        (Some(note_id), Some(SID))
    );
    let missing = env
        .cmd()
        .args(["snippet", "show", "999999"])
        .output()
        .expect("snippet show");
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(v["session_id"], SID);
    assert_eq!(v["type"], "learning_pattern");
    assert_eq!(
        (v["line_start"].as_u64(), v["line_end"].as_u64()),
        (Some(1), Some(3))
    );
    assert_eq!(v["source_file"], canonical(&note).as_str());
    for field in ["content", "title"] {
        let text = v[field].as_str().expect("text");
        assert!(text.contains("[REDACTED:"), "{field}: {text}");
        assert!(!text.contains(TOKEN), "{field}: {text}");
    }
    let tags: Vec<&str> = v["tags"]
        .as_array()
        .expect("tags")
        .iter()
        .filter_map(|t| t.as_str())
        .collect();
    // The project tag names the session's working directory, as automatic snippets do.
    assert_eq!(tags, ["manual", PROJECT_TAG]);

    // 2. Physical lines of the transcript: tools and file extensions become tags.
    let out = add_path(
        &env,
        &[
            "--session",
            SID,
            "--type",
            "error_reasoning",
            "--title",
            "Reading the stream handler",
            "--lines",
            "1:12",
        ],
        "--file",
        &transcript,
    );
    assert_ok(&out);
    let lines_id: i64 = stdout_of(&out)
        .trim()
        .strip_prefix("stored snippet ")
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("unexpected output: {}", stdout_of(&out)));

    // 3. One turn: from its prompt to the line before the next prompt.
    let v = json_of(&add_path(
        &env,
        &[
            "--session",
            "0fae",
            "--type",
            "error_reasoning",
            "--title",
            "Worktree blocks checkout of main",
            "--turns",
            "2:2",
            "--json",
        ],
        "--file",
        &transcript,
    ));
    let turn_id = v["id"].as_i64().expect("id");
    assert_eq!(
        (v["line_start"].as_u64(), v["line_end"].as_u64()),
        (Some(8), Some(11))
    );

    // 4. Turn 1 by number...
    let out = add_path(
        &env,
        &[
            "--session",
            "0fae",
            "--type",
            "decision_rationale",
            "--title",
            "Commit the streaming fixes",
            "--turns",
            "1:1",
        ],
        "--file",
        &transcript,
    );
    assert_ok(&out);
    // ... and the same lines by line numbers: same content, stored once.
    let out = add_path(
        &env,
        &[
            "--session",
            "0fae",
            "--type",
            "decision_rationale",
            "--title",
            "Again",
            "--lines",
            "3:7",
        ],
        "--file",
        &transcript,
    );
    assert_ok(&out);
    assert_eq!(
        stdout_of(&out).trim(),
        "already stored: the session holds the same content"
    );
    // The content file again, re-wrapped and under another title: still the same content.
    let rewrapped = env.dir.path().join("note2.md");
    let again = std::fs::read_to_string(&note)
        .expect("read note")
        .replace('\n', "  \n\n");
    std::fs::write(&rewrapped, again).expect("write");
    let v = json_of(&add_path(
        &env,
        &[
            "--session",
            SID,
            "--type",
            "learning_pattern",
            "--title",
            "Another title",
            "--json",
        ],
        "--content-file",
        &rewrapped,
    ));
    assert_eq!(v["duplicate"], true);
    assert!(v["id"].is_null());

    let (rows, tag_rows) = stored(&env, backend).await;
    assert_eq!(rows.len(), 4, "{rows:#?}");
    assert_eq!(
        tag_rows,
        rows.iter().map(|r| r.tags.len() as i64).sum::<i64>()
    );
    for r in &rows {
        assert_eq!(r.session_id, SID);
        assert_eq!(r.project, PROJECT);
        assert!(r.tags.contains(&"manual".to_string()), "{r:?}");
        assert!(r.tags.contains(&PROJECT_TAG.to_string()), "{r:?}");
        assert!(
            r.tags.windows(2).all(|w| w[0] < w[1]),
            "sorted, no duplicates: {r:?}"
        );
        assert_eq!(r.metadata["version"], "1.0.120", "{r:?}");
        assert!(r.metadata["word_count"].as_u64().unwrap_or(0) > 10, "{r:?}");
        assert!(!r.content.contains(TOKEN) && !r.title.contains(TOKEN));
    }
    let by_id = |id: i64| rows.iter().find(|r| r.id == id).expect("row");

    let n = by_id(note_id);
    assert_eq!(n.snippet_type, "learning_pattern");
    assert!(n.content.contains("[REDACTED:"), "{}", n.content);
    assert!(n.title.contains("[REDACTED:"), "{}", n.title);
    assert_eq!((n.line_start, n.line_end), (1, 3));
    assert_eq!(n.source_file, canonical(&note));

    let l = by_id(lines_id);
    assert_eq!(l.snippet_type, "error_reasoning");
    assert_eq!((l.line_start, l.line_end), (1, 12));
    assert_eq!(l.source_file, canonical(&transcript));
    for tag in ["ext:ts", "tool:bash", "tool:read"] {
        assert!(l.tags.contains(&tag.to_string()), "{tag}: {:?}", l.tags);
    }
    assert!(l.content.starts_with("[L1] tool Read: "), "{}", l.content);
    assert!(l
        .content
        .contains("\n[L5] tool Bash: git status --porcelain"));

    let t = by_id(turn_id);
    assert_eq!((t.line_start, t.line_end), (8, 11));
    assert!(
        t.content.starts_with("[L8] user: we merged that PR"),
        "{}",
        t.content
    );
    assert!(
        t.content
            .contains("[L10] tool result (error): fatal: 'main' is already used"),
        "{}",
        t.content
    );
    assert!(!t.tags.contains(&"tool:read".to_string()));

    let first = rows
        .iter()
        .find(|r| r.snippet_type == "decision_rationale")
        .expect("turn 1");
    assert_eq!((first.line_start, first.line_end), (3, 7));
    assert_eq!(first.title, "Commit the streaming fixes");
    env.cleanup().await;
}

both_backends!(
    adds_from_content_file_lines_and_turns,
    stores_from_each_source
);

async fn errors_are_one_line(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let transcript = setup(&env);
    let t = transcript.to_str().expect("utf-8 path").to_string();
    let small = env.dir.path().join("small.txt");
    std::fs::write(
        &small,
        "Too short to be worth keeping, on purpose: 57 bytes long.",
    )
    .expect("write");
    assert_eq!(std::fs::metadata(&small).expect("meta").len(), 57);
    let small = small.to_str().expect("utf-8 path").to_string();
    let table = env.dir.path().join("table.md");
    std::fs::write(
        &table,
        "| step | result |\n|------|--------|\n| build | ok |\n| test | failed twice |\n| deploy | skipped |\n| lint | passed after a fix |\n",
    )
    .expect("write");
    let table = table.to_str().expect("utf-8 path").to_string();
    let binary = env.dir.path().join("binary.txt");
    let mut bytes =
        b"Fine text first, long enough to pass the size gate once it is decoded. ".to_vec();
    bytes.extend_from_slice(&[0xff, 0xfe, 0x00, 0x80]);
    bytes.extend_from_slice(&[b'x'; 64]);
    std::fs::write(&binary, bytes).expect("write");
    let binary = binary.to_str().expect("utf-8 path").to_string();
    let missing = env.dir.path().join("missing.txt");
    let missing = missing.to_str().expect("utf-8 path").to_string();

    let base = |session: &str, ty: &str| -> Vec<String> {
        ["--session", session, "--type", ty, "--title", "A title"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    };
    let with = |mut v: Vec<String>, more: &[&str]| {
        v.extend(more.iter().map(|s| s.to_string()));
        v
    };
    let cases: Vec<(Vec<String>, i32, String)> = vec![
        (
            with(base("ffffffff", "error_reasoning"), &["--file", &t, "--lines", "1:12"]),
            1,
            "No session found with prefix ffffffff".into(),
        ),
        (
            with(base(SID, "foo"), &["--file", &t, "--lines", "1:12"]),
            2,
            "invalid type \"foo\": expected error_reasoning, decision_rationale or learning_pattern"
                .into(),
        ),
        (
            with(base(SID, "error_reasoning"), &["--content-file", &small]),
            2,
            "content is 57 bytes; a snippet must be 100 to 10240 bytes".into(),
        ),
        (
            with(base(SID, "error_reasoning"), &["--content-file", &table]),
            2,
            "content rejected: table".into(),
        ),
        (
            with(base(SID, "error_reasoning"), &["--file", &t, "--lines", "900:950"]),
            2,
            format!("lines 900:950 are outside {t}, which has 12 lines"),
        ),
        (
            with(base(SID, "error_reasoning"), &["--file", &t, "--turns", "7:9"]),
            2,
            format!("turns 7:9 are outside {t}, which has 3 turns"),
        ),
        (
            with(base(SID, "error_reasoning"), &["--file", &t, "--lines", "9:2"]),
            2,
            "invalid range \"9:2\": expected A:B with 1 <= A <= B".into(),
        ),
        (
            with(base(SID, "error_reasoning"), &["--content-file", &missing]),
            2,
            format!("cannot read {missing}"),
        ),
        (
            with(base(SID, "error_reasoning"), &["--file", &missing, "--turns", "1:1"]),
            2,
            format!("cannot read {missing}"),
        ),
        (
            with(base(SID, "error_reasoning"), &["--content-file", &binary]),
            2,
            "is not UTF-8 text".into(),
        ),
        (
            with(base(SID, "error_reasoning"), &["--file", &t]),
            2,
            "--file needs exactly one of --lines A:B or --turns A:B".into(),
        ),
        (
            base(SID, "error_reasoning"),
            2,
            "no content".into(),
        ),
    ];
    for (args, code, want) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = add(&env, &args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(*code), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains(want.as_str()),
            "{args:?}: want {want:?}, got {err}"
        );
        assert_eq!(err.matches(want.as_str()).count(), 1, "said once: {err}");
        assert!(out.stdout.is_empty(), "{args:?}: {}", stdout_of(&out));
    }
    let (rows, tag_rows) = stored(&env, backend).await;
    assert!(rows.is_empty(), "{rows:#?}");
    assert_eq!(tag_rows, 0);
    env.cleanup().await;
}

both_backends!(misuse_is_one_line_and_stores_nothing, errors_are_one_line);

/// Once Claude Code deleted the transcript, `--lines` and `--turns` cut from the archive's copy,
/// with the same content as from the file.
async fn from_the_archive(backend: Backend) {
    let env = TestEnv::new(backend).await;
    let transcript = setup(&env);
    let args = |title: &'static str| {
        vec![
            "--session",
            SID,
            "--type",
            "error_reasoning",
            "--title",
            title,
            "--turns",
            "2:2",
            "--json",
        ]
    };
    let on_disk = json_of(&add_path(
        &env,
        &args("From the file"),
        "--file",
        &transcript,
    ));
    std::fs::remove_file(&transcript).expect("delete the transcript");
    let archived = json_of(&add_path(
        &env,
        &args("From the archive"),
        "--file",
        &transcript,
    ));
    assert_eq!(archived["duplicate"], true, "{archived}");
    assert_eq!(on_disk["content"], archived["content"], "{archived}");
    let out = add_path(
        &env,
        &[
            "--session",
            SID,
            "--type",
            "decision_rationale",
            "--title",
            "Lines",
            "--lines",
            "3:7",
        ],
        "--file",
        &transcript,
    );
    assert_ok(&out);
    assert!(
        stdout_of(&out).starts_with("stored snippet "),
        "{}",
        stdout_of(&out)
    );
    env.cleanup().await;
}

both_backends!(
    lines_of_a_deleted_transcript_come_from_the_archive,
    from_the_archive
);
