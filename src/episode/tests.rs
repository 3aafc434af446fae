//! Unit tests of episode cuts, triage and automatic snippets on literal lines.

use super::text::sentence_around;
use super::*;
use crate::extract::redact::Redactor;
use crate::extract::rows::EpisodeRow;

pub(super) const SID: &str = "11111111-2222-4333-8444-555555555555";

pub(super) fn ts(min: u32) -> String {
    format!("2025-03-01T{:02}:{:02}:00.000Z", 10 + min / 60, min % 60)
}

pub(super) fn env(kind: &str, min: u32, uuid: &str, body: &str) -> String {
    format!(
        r#"{{"type":"{kind}","uuid":"{uuid}","sessionId":"{SID}","timestamp":"{}","cwd":"/home/u/src/gleaner","version":"2.0.5","isSidechain":false,{body}}}"#,
        ts(min)
    )
}

pub(super) fn prompt(min: u32, text: &str) -> String {
    let t = serde_json::to_string(text).unwrap();
    env(
        "user",
        min,
        &format!("p{min}"),
        &format!(r#""message":{{"role":"user","content":{t}}}"#),
    )
}

pub(super) fn say(min: u32, text: &str) -> String {
    let t = serde_json::to_string(text).unwrap();
    env(
        "assistant",
        min,
        &format!("a{min}-{}", text.len()),
        &format!(r#""message":{{"role":"assistant","content":[{{"type":"text","text":{t}}}]}}"#),
    )
}

pub(super) fn call(min: u32, id: &str, name: &str, input: &str) -> String {
    env(
        "assistant",
        min,
        &format!("c{id}"),
        &format!(
            r#""message":{{"role":"assistant","content":[{{"type":"tool_use","id":"{id}","name":"{name}","input":{input}}}]}}"#
        ),
    )
}

pub(super) fn result(min: u32, id: &str, is_error: bool, text: &str) -> String {
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

pub(super) fn compact(min: u32) -> String {
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
pub(super) fn run_split(
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

pub(super) fn run(lines: &[String]) -> (Builder, Vec<EpisodeRow>) {
    run_split(&Rules::defaults().unwrap(), lines, usize::MAX)
}

pub(super) fn closed(rows: &[EpisodeRow]) -> Vec<&EpisodeRow> {
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
    let fin = b.finish(SID).unwrap();
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
fn error_then_success_is_error_recovery_with_a_snippet() {
    let lines = vec![
        prompt(1, "Fix the failing build of the parser crate please"),
        call(2, "t1", "Bash", r#"{"command":"cd /x && cargo build -p parser"}"#),
        result(
            3,
            "t1",
            true,
            "Exit code 101\n   Compiling parser v0.1.0\nerror[E0308]: mismatched types\n  --> src/lib.rs:10:5\nerror: could not compile `parser`",
        ),
        say(4, "It fails because the function returns a u32 where the signature says u64; I'll widen the return type so callers keep working."),
        call(5, "t2", "Edit", r#"{"file_path":"/x/src/lib.rs","old_string":"fn len() -> u64 {\n    self.n\n}","new_string":"fn len() -> u64 {\n    u64::from(self.n)\n}"}"#),
        result(6, "t2", false, "ok"),
        call(7, "t3", "Bash", r#"{"command":"cargo build"}"#),
        result(8, "t3", false, "Finished"),
    ];
    let (b, _) = run(&lines);
    let ep = b.finish(SID).unwrap();
    assert_eq!(ep.triage, "error_recovery");
    assert_eq!(ep.confidence, 0.85);
    let ev: serde_json::Value = serde_json::from_str(&ep.evidence).unwrap();
    assert_eq!(ev[0]["line"], 3);
    assert_eq!(ev[0]["signal"], "error_then_success");
    assert_eq!(ep.snippets.len(), 1, "{:#?}", ep.snippets);
    let s = &ep.snippets[0];
    assert_eq!(s.snippet_type, "error_reasoning");
    assert!(s.title.starts_with("`cargo build` failed"), "{}", s.title);
    assert!(s.title.contains("mismatched types"), "{}", s.title);
    assert!(s.content.contains("widen the return type"), "{}", s.content);
    // The edit between the failure and the re-run is the fix; the re-run is not a change.
    assert!(
        s.content.contains(
            "The fix:\n- (line 5) Edit /x/src/lib.rs\n```diff\n- self.n\n+ u64::from(self.n)\n```\n"
        ),
        "{}",
        s.content
    );
    assert!(
        s.content
            .contains("Then it worked (line 8): Bash cargo build"),
        "{}",
        s.content
    );
    let m: serde_json::Value = serde_json::from_str(&s.metadata).unwrap();
    assert!(
        m["generalization"]
            .as_str()
            .is_some_and(|g| g.contains("changing `self.n` to `u64::from(self.n)` in lib.rs")),
        "{m}"
    );
    assert!(m["score"].as_f64().is_some_and(|v| v >= 0.8), "{m}");
    assert!(!s.content.contains("- (line 7)"), "{}", s.content);
    assert_eq!((s.line_start, s.line_end), (3, 8));
    assert!(
        s.tags.contains(&"error:compile".to_string()),
        "{:?}",
        s.tags
    );
    assert!(s.tags.contains(&"tool:bash".to_string()));
    assert!(s.tags.contains(&"project:gleaner".to_string()));
    assert!(s.tags.contains(&"ext:rs".to_string()));
    let m: serde_json::Value = serde_json::from_str(&s.metadata).unwrap();
    assert_eq!(m["triage"], "error_recovery");
    assert_eq!(m["version"], "2.0.5");
}

#[test]
fn a_failure_never_fixed_is_not_recovery() {
    let lines = vec![
        prompt(1, "Fix the failing build of the parser crate please"),
        call(2, "t1", "Bash", r#"{"command":"cargo build"}"#),
        result(3, "t1", true, "error: could not compile"),
        call(4, "t2", "Bash", r#"{"command":"ls -la"}"#),
        result(5, "t2", false, "files"),
    ];
    let (b, _) = run(&lines);
    assert_eq!(b.finish(SID).unwrap().triage, "routine");
}

#[test]
fn denial_with_reason_is_a_user_correction_and_a_lesson() {
    let lines = vec![
        prompt(1, "Install the dependencies for the web frontend"),
        call(2, "t1", "Bash", r#"{"command":"npm install"}"#),
        result(
            3,
            "t1",
            true,
            "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). To tell you how to proceed, the user said:\nuse pnpm, this repository has a pnpm lockfile",
        ),
        say(4, "Understood, this repository uses pnpm with a lockfile, so I will install the dependencies with pnpm install instead of npm."),
    ];
    let (b, _) = run(&lines);
    let ep = b.finish(SID).unwrap();
    assert_eq!(ep.triage, "user_correction");
    assert_eq!(ep.confidence, 0.95);
    assert_eq!(ep.snippets.len(), 1, "{:#?}", ep.snippets);
    let s = &ep.snippets[0];
    assert_eq!(s.snippet_type, "learning_pattern");
    assert!(s.content.contains("use pnpm"), "{}", s.content);
    assert!(s.content.contains("pnpm install instead"), "{}", s.content);
    assert_eq!((s.line_start, s.line_end), (3, 4));
}

#[test]
fn interruption_then_prompt_and_correcting_phrases() {
    let lines = vec![
        prompt(1, "Rename the config loader module to settings"),
        say(2, "Renaming the config loader."),
        prompt(3, "[Request interrupted by user]"),
        prompt(4, "Keep the config loader name and only rename the struct"),
    ];
    let (b, _) = run(&lines);
    let ep = b.finish(SID).unwrap();
    assert_eq!(ep.triage, "user_correction");
    let ev: serde_json::Value = serde_json::from_str(&ep.evidence).unwrap();
    assert_eq!(ev[0]["signal"], "interruption_redirect");
    assert_eq!(ev[0]["line"], 3);

    let lines = vec![
        prompt(1, "Rename the config loader module to settings"),
        say(2, "Renaming the config loader module now."),
        prompt(
            3,
            "No, keep the config loader module name, rename the struct",
        ),
    ];
    let (b, _) = run(&lines);
    let ep = b.finish(SID).unwrap();
    assert_eq!(
        (ep.triage.as_str(), ep.confidence),
        ("user_correction", 0.8)
    );
    // The session's first prompt corrects nothing.
    let (b, _) = run(&[prompt(
        1,
        "Actually, let's start with the config loader module",
    )]);
    assert_eq!(b.finish(SID).unwrap().triage, "routine");
    // "piano," is not "no,".
    let lines = vec![
        prompt(1, "Describe the piano tuning module in the config loader"),
        prompt(2, "The piano, the config loader module and tuning code"),
    ];
    let (b, _) = run(&lines);
    assert_eq!(b.finish(SID).unwrap().triage, "routine");
}

#[test]
fn pivot_and_decision_phrases() {
    let lines = vec![
        prompt(1, "Speed up the ingest loop of the tailer module"),
        say(2, "Batching the reads did not help at all because the parser dominates the profile, as the flame graph shows clearly.\n\nLet's try a different approach: parse lazily and skip tool outputs without allocating, which removes most of the work."),
    ];
    let (b, _) = run(&lines);
    let ep = b.finish(SID).unwrap();
    assert_eq!((ep.triage.as_str(), ep.confidence), ("pivot", 0.75));
    assert_eq!(ep.snippets[0].snippet_type, "decision_rationale");
    assert!(ep.snippets[0].content.contains("parser dominates"));

    let lines = vec![
        prompt(1, "Pick a storage engine for the tailer checkpoints"),
        say(2, "There is a trade-off here: SQLite is embedded and needs no setup, while PostgreSQL can be shared by a team. I'll go with SQLite by default and keep PostgreSQL optional, because most users run one machine."),
    ];
    let (b, _) = run(&lines);
    let ep = b.finish(SID).unwrap();
    assert_eq!(ep.triage, "design_decision");
    // Two distinct phrases: 0.7 + 0.05.
    assert_eq!(ep.confidence, 0.75);
    assert_eq!(ep.snippets[0].snippet_type, "decision_rationale");
    assert!(
        ep.snippets[0].title.starts_with("Decision: "),
        "{}",
        ep.snippets[0].title
    );

    // Options laid out for the user to pick from: the choice is handed over, nothing was
    // decided there: no decision, and no rationale is kept.
    let lines = vec![
        prompt(1, "Pick a storage engine for the tailer checkpoints"),
        say(2, "There are two ways to store the checkpoints, each with its own costs:\n\n1. **Option 1** is simpler: SQLite, embedded and zero setup for a single machine\n2. **Option 2** is better for teams: PostgreSQL, shared across machines\n\nWhich direction feels right to you?"),
    ];
    let (b, _) = run(&lines);
    let ep = b.finish(SID).unwrap();
    assert_eq!(ep.triage, "routine");
    assert!(ep.snippets.is_empty(), "{:?}", ep.snippets);

    // "rather than" in a description decides nothing; with a choice word it does.
    let lines = vec![
        prompt(1, "Why do the provider counts of the care teams come out empty"),
        say(2, "The route matches provider IDs directly, but care teams contain provider names rather than IDs, so nothing matches and every count stays at zero."),
    ];
    let (b, _) = run(&lines);
    assert_eq!(b.finish(SID).unwrap().triage, "routine");
    let lines = vec![
        prompt(1, "How should the summaries be generated for each session"),
        say(2, "I'll shell out to the claude CLI rather than add the Anthropic SDK, because the user already has Claude Code installed and authenticated, so no new dependency or key management is needed."),
    ];
    let (b, _) = run(&lines);
    let ep = b.finish(SID).unwrap();
    assert_eq!(ep.triage, "design_decision");
    assert_eq!(ep.snippets.len(), 1, "{:?}", ep.snippets);

    // In a code block a phrase is an example, not a statement.
    let lines = vec![
        prompt(1, "Pick a storage engine for the tailer checkpoints"),
        say(2, "Here is the config:\n```toml\n# option 1: sqlite, trade-off free\nurl = \"sqlite://x\"\n```"),
    ];
    let (b, _) = run(&lines);
    assert_eq!(b.finish(SID).unwrap().triage, "routine");
}

#[test]
fn a_revert_command_is_a_pivot() {
    let lines = vec![
        prompt(1, "Speed up the ingest loop of the tailer module"),
        call(
            2,
            "t1",
            "Bash",
            r#"{"command":"git checkout -- src/tailer.rs"}"#,
        ),
        result(3, "t1", false, ""),
    ];
    let (b, _) = run(&lines);
    let ep = b.finish(SID).unwrap();
    assert_eq!((ep.triage.as_str(), ep.confidence), ("pivot", 0.8));
}

#[test]
fn ties_follow_precedence_and_strongest_wins() {
    let lines = vec![
        prompt(1, "Speed up the ingest loop of the tailer module"),
        call(2, "t1", "Bash", r#"{"command":"cargo bench"}"#),
        result(3, "t1", true, "error: bench failed"),
        call(4, "t2", "Bash", r#"{"command":"cargo bench"}"#),
        result(5, "t2", false, "ok"),
        prompt(6, "[Request interrupted by user]"),
        prompt(
            7,
            "Speed up the ingest loop of the tailer module, bench only parse",
        ),
    ];
    let (b, _) = run(&lines);
    // error_recovery 0.85 and interruption_redirect 0.85: user_correction wins the tie.
    let ep = b.finish(SID).unwrap();
    assert_eq!(
        (ep.triage.as_str(), ep.confidence),
        ("user_correction", 0.85)
    );
    let ev: serde_json::Value = serde_json::from_str(&ep.evidence).unwrap();
    let labels: Vec<&str> = ev
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["user_correction", "error_recovery"]);
}

#[test]
fn lessons_qualify_in_routine_episodes() {
    let lines = vec![
        prompt(1, "Why does the daemon miss new folders sometimes"),
        say(2, "Found it. The root cause was that inotify does not report files created inside a directory before the watch on that directory is added, so a freshly created nested folder can hold files the daemon never hears about; a catch-up scan of every new directory closes that gap."),
    ];
    let (b, _) = run(&lines);
    let ep = b.finish(SID).unwrap();
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
    assert!(b.finish(SID).unwrap().snippets.is_empty());
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
        assert_eq!(b.finish(SID), whole.finish(SID), "split {split}");
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
    let ep = b.finish(SID).unwrap();
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
    assert_eq!(b.finish(SID).unwrap().triage, "routine");
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
    let ep = b.finish(SID).unwrap();
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
