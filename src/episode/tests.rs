//! Unit tests of episode cuts, triage and automatic snippets on literal lines. The helpers are
//! shared with the drafting tests (`crate::snippet::draft`), and the builder is fed with the
//! real drafter: what these tests check of snippets is what the daemon stores.

use super::text::sentence_around;
use super::*;
use crate::extract::redact::Redactor;
use crate::extract::rows::EpisodeRow;
pub(crate) use crate::snippet::draft::Auto;

pub(crate) const SID: &str = "11111111-2222-4333-8444-555555555555";

pub(crate) fn ts(min: u32) -> String {
    format!("2025-03-01T{:02}:{:02}:00.000Z", 10 + min / 60, min % 60)
}

pub(crate) fn env(kind: &str, min: u32, uuid: &str, body: &str) -> String {
    format!(
        r#"{{"type":"{kind}","uuid":"{uuid}","sessionId":"{SID}","timestamp":"{}","cwd":"/home/u/src/gleaner","version":"2.0.5","isSidechain":false,{body}}}"#,
        ts(min)
    )
}

pub(crate) fn prompt(min: u32, text: &str) -> String {
    let t = serde_json::to_string(text).unwrap();
    env(
        "user",
        min,
        &format!("p{min}"),
        &format!(r#""message":{{"role":"user","content":{t}}}"#),
    )
}

pub(crate) fn say(min: u32, text: &str) -> String {
    let t = serde_json::to_string(text).unwrap();
    env(
        "assistant",
        min,
        &format!("a{min}-{}", text.len()),
        &format!(r#""message":{{"role":"assistant","content":[{{"type":"text","text":{t}}}]}}"#),
    )
}

pub(crate) fn call(min: u32, id: &str, name: &str, input: &str) -> String {
    env(
        "assistant",
        min,
        &format!("c{id}"),
        &format!(
            r#""message":{{"role":"assistant","content":[{{"type":"tool_use","id":"{id}","name":"{name}","input":{input}}}]}}"#
        ),
    )
}

pub(crate) fn result(min: u32, id: &str, is_error: bool, text: &str) -> String {
    let t = serde_json::to_string(text).unwrap();
    env(
        "user",
        min,
        &format!("r{id}"),
        &format!(
            r#""message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"{id}","is_error":{is_error},"content":{t}}}]}}"#
        ),
    )
}

pub(crate) fn compact(min: u32) -> String {
    env(
        "system",
        min,
        &format!("b{min}"),
        r#""subtype":"compact_boundary","content":"Conversation compacted","compactMetadata":{"trigger":"auto","preTokens":150000}"#,
    )
}

/// Feed `lines` (line numbers from 1) through the real extraction path (tailer, parse, rows,
/// redaction, builder) in batches of `split` lines, round-tripping the builder's state through
/// JSON between batches as the database does. Returns the builder and every row emitted.
pub(crate) fn run_split(
    rules: &Rules,
    lines: &[String],
    split: usize,
) -> (Builder, Vec<EpisodeRow>) {
    use crate::extract::{extract, FileContext};
    use crate::tail::{Tailer, TailerConfig};
    use std::io::Write;

    let dir = tempfile::tempdir().unwrap();
    let proj = dir.path().join("-home-u-gleaner");
    std::fs::create_dir_all(&proj).unwrap();
    let path = proj.join(format!("{SID}.jsonl"));
    let mut f = std::fs::File::create(&path).unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
    drop(f);
    let info = crate::tail::discovery::classify(dir.path(), &path);
    let mut ctx = FileContext::new(1, ("m".into(), "u".into()), info, None);
    let (mut t, _) = Tailer::open(&path, None, TailerConfig::default()).unwrap();
    let redactor = Redactor::builtin();
    let mut rows = Vec::new();
    let mut state = Builder::new(1);
    let mut slot = None;
    let how = Feed {
        rules,
        redactor: &redactor,
        last: crate::episode::Last::Open,
        drafter: &Auto,
    };
    while let Some(b) = t.read_batch(usize::MAX, split.max(1)).unwrap() {
        let mut ex = extract(&mut ctx, &b, &redactor);
        feed(&mut slot, &mut ex, &how);
        let pb = ex.rows;
        rows.extend(pb.episodes);
        state = Builder::from_json(
            &crate::extract::rows::unpack_state(pb.episode_state.as_deref().unwrap()).unwrap(),
        )
        .unwrap();
        slot = Some(Box::new(state.clone()));
    }
    (state, rows)
}

pub(crate) fn run(lines: &[String]) -> (Builder, Vec<EpisodeRow>) {
    run_split(&Rules::defaults().unwrap(), lines, usize::MAX)
}

pub(crate) fn closed(rows: &[EpisodeRow]) -> Vec<&EpisodeRow> {
    rows.iter().filter(|r| r.closed).collect()
}

#[test]
fn default_settings_match_the_config_file() {
    let cfg = crate::config::load_with_env(
        &crate::config::Overrides::default(),
        &crate::config::Env::default(),
    )
    .unwrap();
    assert_eq!(cfg.rules.settings, Settings::defaults().unwrap());
}

#[test]
fn a_change_of_subject_cuts_and_ranges_touch() {
    let lines = vec![
        say(0, "preamble before any prompt"),
        prompt(
            1,
            "Add a retry loop to the postgres connection pool in store",
        ),
        say(
            2,
            "I'll add the retry loop to the connection pool with backoff in the store module.",
        ),
        call(
            3,
            "t1",
            "Edit",
            r#"{"file_path":"/home/u/src/gleaner/src/store/pool.rs"}"#,
        ),
        result(4, "t1", false, "ok"),
        prompt(5, "Make the retry backoff in the pool configurable"),
        say(6, "Done."),
        prompt(7, "Write a haiku about autumn leaves falling slowly"),
        say(8, "Leaves drift."),
    ];
    let (b, rows) = run(&lines);
    let c = closed(&rows);
    assert_eq!(c.len(), 1, "{rows:#?}");
    assert_eq!((c[0].start_line, c[0].end_line), (2, 7));
    assert_eq!(c[0].cut_reason, "start");
    assert_eq!(c[0].turns, 2);
    assert_eq!(
        c[0].files_touched,
        r#"["/home/u/src/gleaner/src/store/pool.rs"]"#
    );
    let open = rows.last().unwrap();
    assert!(!open.closed);
    assert_eq!((open.start_line, open.end_line), (8, 9));
    assert_eq!(
        (open.ordinal, open.first_turn, open.cut_reason.as_str()),
        (2, 3, "topic")
    );
    let fin = b.finish(SID, &Auto).unwrap();
    assert!(fin.closed);
    assert_eq!((fin.start_line, fin.end_line), (8, 9));
}

#[test]
fn short_prompts_never_cut_by_topic() {
    let lines = vec![
        prompt(1, "Refactor the tailer partial line buffer handling"),
        say(2, "Refactoring the tailer."),
        prompt(3, "go on then"),
        prompt(4, "yes, run it"),
    ];
    let (_, rows) = run(&lines);
    assert!(closed(&rows).is_empty());
    assert_eq!(rows.last().unwrap().turns, 3);
}

#[test]
fn idle_gap_and_compaction_cut() {
    let lines = vec![
        prompt(1, "Refactor the tailer partial line buffer handling"),
        say(2, "Refactoring the tailer partial line buffer."),
        prompt(40, "Refactor the tailer partial line buffer handling more"),
        say(41, "More tailer buffer refactoring."),
        compact(42),
        prompt(43, "Refactor the tailer partial line buffer handling again"),
    ];
    let (_, rows) = run(&lines);
    let c = closed(&rows);
    let reasons: Vec<&str> = c.iter().map(|r| r.cut_reason.as_str()).collect();
    assert_eq!(reasons, ["start", "idle_gap"]);
    assert_eq!(rows.last().unwrap().cut_reason, "compaction");
    assert_eq!((c[1].start_line, c[1].end_line), (3, 5));
}

#[test]
fn an_old_compaction_without_boundary_cuts_too() {
    // Before 2.0.76 a compaction wrote only its summary line (`isCompactSummary`).
    let summary = env(
        "user",
        42,
        "cs1",
        r#""isCompactSummary":true,"message":{"role":"user","content":"This session is being continued from a previous conversation that ran out of context."}"#,
    );
    let lines = vec![
        prompt(1, "Refactor the tailer partial line buffer handling"),
        say(2, "Refactoring the tailer partial line buffer."),
        summary,
        prompt(43, "Refactor the tailer partial line buffer handling again"),
    ];
    let (_, rows) = run(&lines);
    assert_eq!(rows.last().unwrap().cut_reason, "compaction");
    assert_eq!(closed(&rows).len(), 1);
}

#[test]
fn window_mode_cuts_every_n_turns() {
    let rules = Rules::new(Settings {
        mode: Mode::Window,
        window_turns: 2,
        ..Settings::defaults().unwrap()
    })
    .unwrap();
    let lines: Vec<String> = (0..5)
        .map(|i| prompt(i, "Refactor the tailer partial line buffer handling"))
        .collect();
    let (_, rows) = run_split(&rules, &lines, usize::MAX);
    let c = closed(&rows);
    assert_eq!(c.len(), 2);
    assert!(c.iter().all(|r| r.turns == 2 && r.cut_reason != "topic"));
    assert_eq!(rows.last().unwrap().turns, 1);
}

#[test]
fn lessons_qualify_in_routine_episodes() {
    let lines = vec![
        prompt(1, "Why does the daemon miss new folders sometimes"),
        say(2, "Found it. The root cause was that inotify does not report files created inside a directory before the watch on that directory is added, so a freshly created nested folder can hold files the daemon never hears about; a catch-up scan of every new directory closes that gap."),
    ];
    let (b, _) = run(&lines);
    let ep = b.finish(SID, &Auto).unwrap();
    assert_eq!(ep.triage, "routine");
    assert_eq!(ep.snippets.len(), 1);
    assert_eq!(ep.snippets[0].snippet_type, "learning_pattern");
    assert!(ep.snippets[0].title.starts_with("Lesson: "));
    // A one-liner "next time" is chatter, not a lesson.
    let lines = vec![
        prompt(1, "Why does the daemon miss new folders sometimes"),
        say(
            2,
            "It will take effect next time the daemon starts up again.",
        ),
    ];
    let (b, _) = run(&lines);
    assert!(b.finish(SID, &Auto).unwrap().snippets.is_empty());
}

#[test]
fn batches_and_restarts_give_the_same_rows() {
    let lines = vec![
        prompt(1, "Fix the failing build of the parser crate please"),
        call(2, "t1", "Bash", r#"{"command":"cargo build"}"#),
        result(3, "t1", true, "error[E0308]: mismatched types in the parser crate"),
        say(4, "The return type is wrong; widening it to u64 fixes the mismatch for every caller of parse."),
        call(5, "t2", "Bash", r#"{"command":"cargo build"}"#),
        result(6, "t2", false, "ok"),
        prompt(7, "Write a haiku about autumn leaves falling slowly"),
        say(8, "Leaves drift."),
        prompt(50, "Now document the parser crate error handling in the readme"),
    ];
    let (whole, rows) = run(&lines);
    let finals = |rows: &[EpisodeRow]| -> Vec<EpisodeRow> {
        rows.iter().filter(|r| r.closed).cloned().collect()
    };
    for split in 1..lines.len() {
        let (b, r) = run_split(&Rules::defaults().unwrap(), &lines, split);
        assert_eq!(finals(&r), finals(&rows), "split {split}");
        assert_eq!(
            b.finish(SID, &Auto),
            whole.finish(SID, &Auto),
            "split {split}"
        );
    }
}

#[test]
fn sidechain_lines_and_secrets() {
    let side = say(2, "sub-agent chatter that is not part of the turn")
        .replace(r#""isSidechain":false"#, r#""isSidechain":true"#);
    let lines = vec![
        prompt(
            1,
            "Deploy with token ghp_abcdefghijklmnopqrstuvwxyz0123456789 to staging",
        ),
        side,
    ];
    let (b, _) = run(&lines);
    let ep = b.finish(SID, &Auto).unwrap();
    let title = ep.title.unwrap();
    assert!(!title.contains("ghp_abc"), "{title}");
    assert!(title.contains("[REDACTED:"), "{title}");
    assert!(!b.to_json().contains("ghp_abc"));
    assert!(!b.to_json().contains("sub-agent chatter"));
}

#[test]
fn state_stays_small() {
    let mut lines = vec![prompt(
        0,
        "Refactor the tailer partial line buffer handling",
    )];
    for i in 0..3000u32 {
        lines.push(say(
            1,
            &format!("word{i} another{i} thing{i} more text to read here"),
        ));
        lines.push(call(
            1,
            &format!("t{i}"),
            "Read",
            &format!(r#"{{"file_path":"/x/f{i}.rs"}}"#),
        ));
    }
    let (b, _) = run(&lines);
    let json = b.to_json();
    assert!(json.len() < 200_000, "{} bytes", json.len());
}

#[test]
fn tool_mechanics_and_silent_reruns_are_not_lessons() {
    let lines = vec![
        prompt(1, "Fix the failing build of the parser crate please"),
        call(2, "t1", "Edit", r#"{"file_path":"/x/src/lib.rs"}"#),
        result(
            3,
            "t1",
            true,
            "<tool_use_error>String to replace not found in file.</tool_use_error>",
        ),
        call(4, "t2", "Edit", r#"{"file_path":"/x/src/lib.rs"}"#),
        result(5, "t2", false, "ok"),
    ];
    let (b, _) = run(&lines);
    // The rubric counts "String to replace not found" made to work as a recovery (the learned
    // triage says so); tool mechanics are still no lesson to keep.
    let ep = b.finish(SID, &Auto).unwrap();
    assert_eq!(ep.triage, "error_recovery");
    assert!(ep.snippets.is_empty(), "{:?}", ep.snippets);
    // A real failure fixed by a silent re-run: labelled, but no snippet to learn from.
    let lines = vec![
        prompt(1, "Fix the failing build of the parser crate please"),
        call(2, "t1", "Bash", r#"{"command":"cargo build"}"#),
        result(
            3,
            "t1",
            true,
            "error: could not compile `parser` due to a network hiccup",
        ),
        call(4, "t2", "Bash", r#"{"command":"cargo build"}"#),
        result(5, "t2", false, "ok"),
    ];
    let (b, _) = run(&lines);
    let ep = b.finish(SID, &Auto).unwrap();
    assert_eq!(ep.triage, "error_recovery");
    assert!(ep.snippets.is_empty(), "{:#?}", ep.snippets);
}

#[test]
fn abbreviations_do_not_start_sentences() {
    let t = "Fallbacks stay useful for edge cases (e.g., states written by older versions), but the root cause is fixed.";
    let at = t.find("root cause").unwrap();
    assert!(sentence_around(t, at, at + 10).starts_with("Fallbacks"));
}

#[test]
fn stored_state_carries_its_format_version() {
    let lines = vec![prompt(
        1,
        "Add a retry loop to the postgres connection pool",
    )];
    let (b, _) = run(&lines);
    let json = b.to_json();
    assert!(json.starts_with(r#"{"v":"1","#), "{json}");
    assert_eq!(Builder::from_json(&json), Some(b.clone()));
    // Written before the format carried a version: read as version 1.
    let legacy = json.replacen(r#""v":"1","#, "", 1);
    assert_eq!(Builder::from_json(&legacy), Some(b));
    // Another version is not guessed at: the caller starts afresh.
    let future = json.replacen(r#""v":"1""#, r#""v":"2""#, 1);
    assert_eq!(Builder::from_json(&future), None);
    assert_eq!(Builder::from_json("not json"), None);
}

#[test]
fn vocabulary_of_64_bit_terms_reads_as_their_low_32_bits() {
    // Builds before terms were 32 bits stored the whole xxh3 hash; the low half is the term now.
    let lines = vec![prompt(
        1,
        "Add a retry loop to the postgres connection pool",
    )];
    let (b, _) = run(&lines);
    let mut v: serde_json::Value = serde_json::from_str(&b.to_json()).unwrap();
    let vocab = v["open"]["vocab"].as_array_mut().unwrap();
    assert!(!vocab.is_empty());
    for t in vocab.iter_mut() {
        let low = t.as_u64().unwrap();
        assert!(low <= u64::from(u32::MAX));
        *t = serde_json::json!(low | (0xdead_beef_u64 << 32));
    }
    let wide = v.to_string();
    assert_eq!(Builder::from_json(&wide), Some(b));
}

/// An empty open episode that touched `files` (for drafting tests that need only its files).
pub(crate) fn open_with_files(files: &[&str]) -> super::Open {
    let mut open = super::Open::new(1, 1, 1, None, "start".into(), None);
    open.files = files.iter().map(|f| f.to_string()).collect();
    open
}
