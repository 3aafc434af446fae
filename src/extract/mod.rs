//! From tailed lines to rows: the pure, synchronous heart of ingestion.
//!
//! [`extract`] turns one [`tailer::Batch`](crate::tail::Batch) into a [`PreparedBatch`]: a
//! message row per user / assistant / system / summary record, a diagnostic per unusable line,
//! tallies of record kinds and unknown fields, and the session facts the batch reveals. It does
//! no IO, so every rule here is unit-tested on literal lines.

pub mod feedback;
pub mod prompt;
pub mod redact;
pub mod rows;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use crate::episode;
use crate::extract::redact::Redactor;
use crate::extract::rows::{
    DiagnosticRow, FeedbackRow, KindCount, MessageRow, PreparedBatch, SessionUpdate, SummaryRow,
    ToolUseRow, UsageRow,
};
use crate::parse::{parse_line, Block, Kind, LineError, Parsed, Record};
use crate::tail::discovery::{FileInfo, FileKind};
use crate::tail::{Batch, Line, TailDiagnostic};

/// Longest title kept, in characters.
const TITLE_CHARS: usize = 200;

/// What extraction needs to know about the file being read. Lives as long as the file is tracked.
#[derive(Debug, Clone)]
pub struct FileContext {
    /// File row id.
    pub file_id: i64,
    /// Machine id written on session rows.
    pub machine: String,
    /// Path-derived facts.
    pub info: FileInfo,
    /// The session the file belongs to, once decided (from the path, the database, or the
    /// first line that carries a `sessionId`).
    pub session_id: Option<String>,
    /// The sub-agent's `.meta.json` has been read (it is looked for until found).
    pub agent_meta_seen: bool,
    /// Episode state of a main transcript, as of the last batch extracted. `None` until loaded
    /// from the database (the pipeline loads it before extracting, and drops it when the file
    /// goes idle or a commit fails, so it never runs ahead of what is committed for long).
    pub episodes: Option<Box<episode::Builder>>,
}

impl FileContext {
    /// Context for a file whose session id may already be known.
    pub fn new(file_id: i64, machine: String, info: FileInfo, session_id: Option<String>) -> Self {
        let session_id = session_id.or_else(|| info.session_id.clone());
        FileContext {
            file_id,
            machine,
            info,
            session_id,
            agent_meta_seen: false,
            episodes: None,
        }
    }
}

/// Build the transaction content for one tailer batch.
///
/// `expected` is the `(generation, offset)` the database holds for this file; `size` is the file
/// size observed while reading.
pub fn extract(
    ctx: &mut FileContext,
    batch: &Batch,
    expected: (i64, u64),
    size: u64,
    redactor: &Redactor,
    rules: &episode::Rules,
    emit_open: bool,
) -> PreparedBatch {
    let mut redacted: BTreeMap<&'static str, u64> = BTreeMap::new();
    let parsed: Vec<(&Line, Parsed<'_>)> = batch
        .lines
        .iter()
        .map(|line| (line, parse_line(batch.line_bytes(line))))
        .collect();
    let mut out = extract_rows(ctx, batch, &parsed, expected, size);
    scrub_batch(&mut out, redactor, &mut redacted);
    if ctx.info.kind == FileKind::Main && rules.settings.enabled {
        episodes(ctx, batch, &parsed, &mut out, redactor, rules, emit_open);
    }
    out.kinds
        .extend(redacted.into_iter().map(|(kind, n)| KindCount {
            category: "redacted",
            name: kind.to_string(),
            count: n as i64,
        }));
    out
}

/// Replace secrets in every text a batch would store: message text, feedback, summaries, the
/// session title and tool targets (commands can carry tokens).
fn scrub_batch(out: &mut PreparedBatch, r: &Redactor, counts: &mut BTreeMap<&'static str, u64>) {
    let mut scrub = |s: &mut String| {
        if let Cow::Owned(clean) = r.redact(s, counts) {
            *s = clean;
        }
    };
    for m in &mut out.messages {
        m.text.as_mut().map(&mut scrub);
    }
    for f in &mut out.feedback {
        scrub(&mut f.content);
        f.reason.as_mut().map(&mut scrub);
    }
    for s in &mut out.summaries {
        s.text.as_mut().map(&mut scrub);
    }
    for t in &mut out.tool_uses {
        t.target.as_mut().map(&mut scrub);
    }
    if let Some(s) = &mut out.session {
        s.title.as_mut().map(&mut scrub);
    }
}

/// Feed the batch to the file's episode builder: the episodes it closes and (with
/// `emit_open`) the open one go into the batch, with the builder's new state. The builder gets
/// the rows extraction made (message text, feedback, tool targets), already redacted.
fn episodes(
    ctx: &mut FileContext,
    batch: &Batch,
    parsed: &[(&Line, Parsed<'_>)],
    out: &mut PreparedBatch,
    redactor: &Redactor,
    rules: &episode::Rules,
    emit_open: bool,
) {
    let Some(session_id) = ctx.session_id.clone() else {
        return;
    };
    let generation = batch.checkpoint.generation;
    let builder = ctx
        .episodes
        .get_or_insert_with(|| Box::new(episode::Builder::new(generation)));
    if builder.generation != generation {
        // Truncated or rewritten: line numbers start again.
        **builder = episode::Builder::new(generation);
    }
    // Message and feedback rows are in record order, each tagged with its (line, seq).
    let mut texts = out.messages.iter().peekable();
    let mut fb = 0;
    let mut inputs = Vec::new();
    for (line, p) in parsed {
        for (seq, rec) in p.records.iter().enumerate() {
            let at = (line.line_no, seq as u32);
            let mut text = None;
            while let Some(m) = texts.peek() {
                if (m.line_no, m.seq) < at {
                    texts.next();
                    continue;
                }
                if (m.line_no, m.seq) == at {
                    text = m.text.as_deref();
                }
                break;
            }
            while out
                .feedback
                .get(fb)
                .is_some_and(|f| (f.line_no, f.seq) < at)
            {
                fb += 1;
            }
            let start = fb;
            while out
                .feedback
                .get(fb)
                .is_some_and(|f| (f.line_no, f.seq) == at)
            {
                fb += 1;
            }
            inputs.push(episode::Input {
                line_no: line.line_no,
                rec,
                text,
                feedback: &out.feedback[start..fb],
            });
        }
    }
    let targets: HashMap<&str, &str> = out
        .tool_uses
        .iter()
        .filter_map(|t| Some((t.tool_use_id.as_str(), t.target.as_deref()?)))
        .collect();
    let rows = builder.feed(
        rules,
        redactor,
        &session_id,
        inputs,
        batch.checkpoint.lines,
        &targets,
        emit_open,
    );
    if !rows.is_empty() {
        out.path = ctx.info.path.to_string_lossy().into_owned();
    }
    out.episodes = rows;
    out.episode_state = Some(builder.to_json());
}

fn extract_rows(
    ctx: &mut FileContext,
    batch: &Batch,
    parsed: &[(&Line, Parsed<'_>)],
    expected: (i64, u64),
    size: u64,
) -> PreparedBatch {
    let mut out = PreparedBatch {
        file_id: ctx.file_id,
        expected,
        checkpoint: batch.checkpoint.clone(),
        size,
        bytes: batch.checkpoint.offset.saturating_sub(batch.start_offset),
        project: ctx.info.project.clone(),
        ..PreparedBatch::default()
    };
    let mut kinds: HashMap<(&'static str, String), i64> = HashMap::new();

    for d in &batch.diagnostics {
        match d {
            TailDiagnostic::TooLong {
                line_no,
                offset,
                len,
            } => out.diagnostics.push(DiagnosticRow {
                line_no: *line_no,
                byte_start: *offset,
                byte_len: *len,
                kind: "too_long",
                detail: Some(format!("line of {len} bytes exceeds tail.max_line_bytes")),
            }),
        }
    }

    for (line, p) in parsed {
        if let Some(err) = &p.error {
            out.diagnostics.push(DiagnosticRow {
                line_no: line.line_no,
                byte_start: line.offset,
                byte_len: line.len,
                kind: match err {
                    LineError::InvalidUtf8 { .. } => "invalid_utf8",
                    LineError::MalformedJson { .. } => "malformed_json",
                    LineError::NotAnObject => "not_an_object",
                },
                detail: Some(err.to_string()),
            });
        }
    }

    // Decide the session before building rows: the first `sessionId` of a main file whose name
    // is not a UUID, or of a flat agent file, names the session of every row of the file.
    if ctx.session_id.is_none() {
        ctx.session_id = parsed
            .iter()
            .flat_map(|(_, p)| p.records.iter())
            .find_map(|r| r.session_id.as_deref().map(str::to_string))
            .or_else(|| (!parsed.is_empty()).then(|| ctx.info.stem.clone()));
        out.file_session_id = ctx.session_id.clone();
    }
    let Some(session_id) = ctx.session_id.clone() else {
        return out;
    };
    out.file_session_id
        .get_or_insert_with(|| session_id.clone());

    let mut session = SessionUpdate {
        session_id: session_id.clone(),
        machine: ctx.machine.clone(),
        project: ctx.info.project.clone(),
        ..SessionUpdate::default()
    };
    let mut saw_record = false;
    let mut usage: HashMap<String, UsageRow> = HashMap::new();
    let generation = batch.checkpoint.generation;

    for (line, p) in parsed {
        for (seq, rec) in p.records.iter().enumerate() {
            saw_record = true;
            tally(&mut kinds, rec);
            merge_session(&mut session, rec, ctx.info.kind);
            let at = LineAt {
                file_id: ctx.file_id,
                generation,
                line_no: line.line_no,
                seq: seq as u32,
            };
            knowledge(&mut out, &mut usage, rec, &session_id, ctx, &at);
            if let Some(row) = message_row(rec, &session_id, ctx) {
                out.messages.push(MessageRow {
                    line_no: line.line_no,
                    seq: seq as u32,
                    byte_start: line.offset,
                    byte_end: line.offset + line.len,
                    ..row
                });
            }
        }
    }
    if saw_record {
        out.session = Some(session);
    }
    let mut usage: Vec<UsageRow> = usage.into_values().collect();
    usage.sort_by(|a, b| a.message_id.cmp(&b.message_id));
    out.usage = usage;
    let mut kinds: Vec<KindCount> = kinds
        .into_iter()
        .map(|((category, name), count)| KindCount {
            category,
            name,
            count,
        })
        .collect();
    kinds.sort_by(|a, b| (a.category, &a.name).cmp(&(b.category, &b.name)));
    out.kinds = kinds;
    out
}

/// Where a record sits, for natural keys of records without a uuid.
struct LineAt {
    file_id: i64,
    generation: i64,
    line_no: u64,
    seq: u32,
}

impl LineAt {
    /// The line uuid, or a key unique to this physical position.
    fn key(&self, uuid: Option<&str>) -> String {
        match uuid {
            Some(u) => u.to_string(),
            None => format!(
                "@{}:{}:{}:{}",
                self.file_id, self.generation, self.line_no, self.seq
            ),
        }
    }
}

/// Summaries, feedback, tool calls and errors, and token usage of one record.
fn knowledge(
    out: &mut PreparedBatch,
    usage: &mut HashMap<String, UsageRow>,
    rec: &Record<'_>,
    session_id: &str,
    ctx: &FileContext,
    at: &LineAt,
) {
    let owned = |v: &Option<std::borrow::Cow<'_, str>>| v.as_deref().map(str::to_string);
    let agent_id = owned(&rec.agent_id).or_else(|| ctx.info.agent_id.clone());
    let ts = owned(&rec.timestamp);
    let uuid = owned(&rec.uuid);

    let summary = |kind: &'static str, dedup_key: String, text: Option<String>| SummaryRow {
        kind,
        dedup_key,
        text,
        leaf_uuid: owned(&rec.leaf_uuid),
        uuid: uuid.clone(),
        trigger: rec
            .compact_metadata
            .as_ref()
            .and_then(|m| m.trigger.clone()),
        pre_tokens: rec.compact_metadata.as_ref().and_then(|m| m.pre_tokens),
        session_id: session_id.to_string(),
        agent_id: agent_id.clone(),
        ts: ts.clone(),
        line_no: at.line_no,
    };
    match rec.kind {
        Kind::Summary => {
            let text = owned(&rec.summary);
            let key = format!(
                "{}\n{}",
                rec.leaf_uuid.as_deref().unwrap_or(""),
                text.as_deref().unwrap_or("")
            );
            out.summaries.push(summary("summary", key, text));
        }
        Kind::System if rec.subtype.as_deref() == Some("compact_boundary") => {
            let key = at.key(rec.uuid.as_deref());
            out.summaries
                .push(summary("compact_boundary", key, owned(&rec.content)));
        }
        Kind::User if rec.is_compact_summary => {
            let key = at.key(rec.uuid.as_deref());
            out.summaries
                .push(summary("compact_summary", key, rec.text()));
        }
        _ => {}
    }

    if rec.kind == Kind::User {
        let in_agent_file = ctx.info.kind == FileKind::Agent;
        for item in feedback::items(rec, in_agent_file) {
            let which = match &item.tool_use_id {
                Some(id) => id.clone(),
                None => item.block.to_string(),
            };
            out.feedback.push(FeedbackRow {
                dedup_key: format!(
                    "{}:{}:{which}",
                    at.key(rec.uuid.as_deref()),
                    item.feedback_type.as_str()
                ),
                ts: ts.clone(),
                session_id: session_id.to_string(),
                feedback_type: item.feedback_type,
                content: item.content,
                reason: item.reason,
                agent_id: agent_id.clone(),
                slug: owned(&rec.slug),
                tool_use_id: item.tool_use_id,
                uuid: uuid.clone(),
                line_no: at.line_no,
                seq: at.seq,
            });
        }
    }

    for block in rec.blocks() {
        match block {
            Block::ToolUse { id, name, target } if rec.kind == Kind::Assistant => {
                out.tool_uses.push(ToolUseRow {
                    tool_use_id: id.to_string(),
                    session_id: session_id.to_string(),
                    name: Some(name.to_string()),
                    target: target.as_deref().map(str::to_string),
                    ts: ts.clone(),
                    line_no: at.line_no,
                });
            }
            Block::ToolResult {
                tool_use_id,
                is_error: true,
                ..
            } => out.tool_errors.push(ToolUseRow {
                tool_use_id: tool_use_id.to_string(),
                session_id: session_id.to_string(),
                ts: ts.clone(),
                line_no: at.line_no,
                ..ToolUseRow::default()
            }),
            _ => {}
        }
    }

    if rec.kind == Kind::Assistant {
        let Some(msg) = &rec.message else { return };
        let (Some(id), Some(u)) = (msg.id.as_deref(), msg.usage.as_ref()) else {
            return;
        };
        // One reply spans several lines that repeat a growing `usage`: keep the largest.
        let row = usage.entry(id.to_string()).or_insert_with(|| UsageRow {
            message_id: id.to_string(),
            session_id: session_id.to_string(),
            ..UsageRow::default()
        });
        row.input_tokens = row.input_tokens.max(u.input_tokens);
        row.output_tokens = row.output_tokens.max(u.output_tokens);
        row.cache_creation_input_tokens = row
            .cache_creation_input_tokens
            .max(u.cache_creation_input_tokens);
        row.cache_read_input_tokens = row.cache_read_input_tokens.max(u.cache_read_input_tokens);
    }
}

fn tally(kinds: &mut HashMap<(&'static str, String), i64>, rec: &Record<'_>) {
    let (category, name) = match (&rec.kind, &rec.subtype) {
        (Kind::Other(t), _) => ("unknown_type", t.to_string()),
        (Kind::System, Some(sub)) => ("type", format!("system/{sub}")),
        _ => ("type", rec.type_name.to_string()),
    };
    *kinds.entry((category, name)).or_default() += 1;
    for f in &rec.unknown_fields {
        *kinds.entry(("unknown_field", f.to_string())).or_default() += 1;
    }
}

fn merge_session(s: &mut SessionUpdate, rec: &Record<'_>, kind: FileKind) {
    if let Some(ts) = rec.timestamp.as_deref() {
        if s.started_at.as_deref().is_none_or(|cur| ts < cur) {
            s.started_at = Some(ts.to_string());
        }
        if s.last_activity_at.as_deref().is_none_or(|cur| ts > cur) {
            s.last_activity_at = Some(ts.to_string());
        }
    }
    if s.cwd.is_none() {
        s.cwd = rec.cwd.as_deref().map(str::to_string);
    }
    if let Some(b) = rec.git_branch.as_deref().filter(|b| !b.is_empty()) {
        s.git_branch = Some(b.to_string());
    }
    if let Some(v) = rec.version.as_deref() {
        s.version = Some(v.to_string());
    }
    if let Some(slug) = rec.slug.as_deref() {
        s.slug = Some(slug.to_string());
    }
    if s.title.is_none() && kind == FileKind::Main && !rec.is_sidechain {
        s.title = title_of(rec);
    }
}

/// The title a record gives its session: the first line of a real user prompt.
fn title_of(rec: &Record<'_>) -> Option<String> {
    if rec.kind != Kind::User || rec.is_meta || rec.is_compact_summary {
        return None;
    }
    if rec.source_tool_use_id.is_some() {
        return None;
    }
    let text = prompt::human_text(rec)?;
    let first = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(first.chars().take(TITLE_CHARS).collect())
}

fn message_row(rec: &Record<'_>, session_id: &str, ctx: &FileContext) -> Option<MessageRow> {
    let is_conversation = matches!(rec.kind, Kind::User | Kind::Assistant);
    if !is_conversation && !matches!(rec.kind, Kind::System | Kind::Summary) {
        return None;
    }
    let tools = rec.tool_names();
    Some(MessageRow {
        session_id: session_id.to_string(),
        uuid: rec.uuid.as_deref().map(str::to_string),
        parent_uuid: rec.parent_uuid.as_deref().map(str::to_string),
        kind: rec.type_name.to_string(),
        subtype: rec.subtype.as_deref().map(str::to_string),
        ts: rec.timestamp.as_deref().map(str::to_string),
        is_sidechain: rec.is_sidechain,
        agent_id: rec
            .agent_id
            .as_deref()
            .map(str::to_string)
            .or_else(|| ctx.info.agent_id.clone()),
        model: rec
            .message
            .as_ref()
            .and_then(|m| m.model.as_deref())
            .map(str::to_string),
        tool_names: (!tools.is_empty()).then(|| tools.join(",")),
        is_error: rec.has_tool_error() || rec.is_api_error_message,
        text: if is_conversation { rec.text() } else { None },
        ..MessageRow::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tail::discovery::classify;
    use crate::tail::{Tailer, TailerConfig};
    use std::io::Write;
    use std::path::Path;

    const SID: &str = "11111111-2222-4333-8444-555555555555";

    fn run(name: &str, content: &str) -> (FileContext, Vec<PreparedBatch>) {
        let dir = tempfile::tempdir().unwrap();
        let proj = dir.path().join("-home-u-proj");
        std::fs::create_dir_all(&proj).unwrap();
        let path = proj.join(name);
        std::fs::File::create(&path)
            .unwrap()
            .write_all(content.as_bytes())
            .unwrap();
        let info = classify(dir.path(), &path);
        let mut ctx = FileContext::new(1, "m".into(), info, None);
        let cfg = TailerConfig {
            max_line_bytes: 1 << 20,
            read_chunk: 1 << 16,
        };
        let (mut t, _) = Tailer::open(&path, None, cfg).unwrap();
        let mut out = Vec::new();
        let mut expected = (1, 0);
        while let Some(b) = t.read_batch(1 << 20, 10_000).unwrap() {
            let redactor = Redactor::new(&[]).unwrap();
            let pb = extract(
                &mut ctx,
                &b,
                expected,
                0,
                &redactor,
                &episode::Rules::defaults(),
                true,
            );
            expected = (pb.checkpoint.generation, pb.checkpoint.offset);
            out.push(pb);
        }
        (ctx, out)
    }

    fn user(text: &str, extra: &str) -> String {
        format!(
            r#"{{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"{SID}","timestamp":"2025-01-01T00:00:01.000Z","cwd":"/home/u/proj","version":"2.0.1","gitBranch":"main"{extra},"message":{{"role":"user","content":{}}}}}"#,
            serde_json::to_string(text).unwrap()
        )
    }

    #[test]
    fn rows_per_kind_and_title() {
        let lines = [
            r#"{"type":"summary","summary":"Old title","leafUuid":"x"}"#.to_string(),
            r#"{"type":"file-history-snapshot","messageId":"m","snapshot":{},"isSnapshotUpdate":false}"#.to_string(),
            user("<command-name>/clear</command-name>", ""),
            user("Fix the flaky test\nin ci", ""),
            r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"S","timestamp":"2025-01-01T00:00:03.000Z","message":{"id":"msg_1","role":"assistant","model":"claude-x","content":[{"type":"thinking","thinking":"hmm","signature":"s"},{"type":"text","text":"On it."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}"#.to_string(),
            r#"{"type":"user","uuid":"u2","parentUuid":"a1","sessionId":"S","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"boom"}]}}"#.to_string(),
            r#"{"type":"system","subtype":"turn_duration","uuid":"s1","durationMs":5,"timestamp":"2025-01-01T00:00:04.000Z"}"#.to_string(),
            r#"{"type":"brand-new","weird":1}"#.to_string(),
            "{not json".to_string(),
        ];
        let content = lines.join("\n") + "\n";
        let (ctx, batches) = run(&format!("{SID}.jsonl"), &content);
        assert_eq!(ctx.session_id.as_deref(), Some(SID));
        assert_eq!(batches.len(), 1);
        let b = &batches[0];
        let kinds: Vec<&str> = b.messages.iter().map(|m| m.kind.as_str()).collect();
        assert_eq!(
            kinds,
            ["summary", "user", "user", "assistant", "user", "system"]
        );
        assert_eq!(b.messages[0].line_no, 1);
        assert_eq!(b.messages[3].line_no, 5);
        assert_eq!(b.messages[3].text.as_deref(), Some("On it."));
        assert_eq!(b.messages[3].tool_names.as_deref(), Some("Bash"));
        assert_eq!(b.messages[3].model.as_deref(), Some("claude-x"));
        assert!(b.messages[4].is_error);
        assert_eq!(b.messages[4].text, None);
        assert_eq!(b.messages[5].subtype.as_deref(), Some("turn_duration"));
        assert!(b.messages.iter().all(|m| m.session_id == SID));
        let s = b.session.as_ref().unwrap();
        assert_eq!(s.title.as_deref(), Some("Fix the flaky test"));
        assert_eq!(s.started_at.as_deref(), Some("2025-01-01T00:00:01.000Z"));
        assert_eq!(
            s.last_activity_at.as_deref(),
            Some("2025-01-01T00:00:04.000Z")
        );
        assert_eq!(s.cwd.as_deref(), Some("/home/u/proj"));
        assert_eq!(s.git_branch.as_deref(), Some("main"));
        assert_eq!(s.project, "-home-u-proj");
        assert_eq!(b.diagnostics.len(), 1);
        assert_eq!(b.diagnostics[0].kind, "malformed_json");
        assert_eq!(b.diagnostics[0].line_no, 9);
        assert!(b
            .kinds
            .iter()
            .any(|k| k.category == "unknown_type" && k.name == "brand-new"));
        assert!(b
            .kinds
            .iter()
            .any(|k| k.category == "unknown_field" && k.name == "weird"));
        assert!(b.kinds.iter().any(|k| k.name == "system/turn_duration"));
        assert_eq!(b.bytes, content.len() as u64);
    }

    #[test]
    fn session_from_first_line_when_name_is_not_uuid() {
        let content = format!(
            "{}\n{}\n",
            r#"{"type":"summary","summary":"t","leafUuid":"x"}"#,
            user("hello there", "")
        );
        let (ctx, batches) = run("notes.jsonl", &content);
        assert_eq!(ctx.session_id.as_deref(), Some(SID));
        assert_eq!(batches[0].file_session_id.as_deref(), Some(SID));
        assert!(batches[0].messages.iter().all(|m| m.session_id == SID));
    }

    #[test]
    fn agent_files_have_no_title_and_carry_agent_id() {
        let content = format!("{}\n", user("Explore the repo", r#","isSidechain":true"#));
        let (ctx, batches) = run("agent-abc123.jsonl", &content);
        assert_eq!(ctx.session_id.as_deref(), Some(SID));
        let b = &batches[0];
        assert_eq!(b.session.as_ref().unwrap().title, None);
        assert_eq!(b.messages[0].agent_id.as_deref(), Some("abc123"));
        assert!(b.messages[0].is_sidechain);
    }

    #[test]
    fn glued_objects_become_two_rows() {
        let content = format!("{}{}\n", user("first prompt", ""), user("second", ""));
        let (_, batches) = run(&format!("{SID}.jsonl"), &content);
        let m = &batches[0].messages;
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].line_no, m[0].seq), (1, 0));
        assert_eq!((m[1].line_no, m[1].seq), (1, 1));
    }

    #[test]
    fn sidechain_and_meta_do_not_title() {
        let content = format!(
            "{}\n{}\n{}\n",
            user("sub prompt", r#","isSidechain":true"#),
            user(
                "Caveat: The messages below were generated by the user",
                r#","isMeta":true"#
            ),
            user("[Request interrupted by user]", "")
        );
        let (_, batches) = run(&format!("{SID}.jsonl"), &content);
        assert_eq!(batches[0].session.as_ref().unwrap().title, None);
        let _ = Path::new("");
    }

    #[test]
    fn knowledge_rows() {
        let lines = [
            r#"{"type":"summary","summary":"Fixing CI","leafUuid":"leaf-1"}"#.to_string(),
            r#"{"type":"system","subtype":"compact_boundary","uuid":"cb1","content":"Conversation compacted","compactMetadata":{"trigger":"auto","preTokens":155250},"timestamp":"2025-01-01T00:00:05.000Z"}"#.to_string(),
            user("This session is being continued from a previous conversation", r#","isCompactSummary":true"#),
            r#"{"type":"assistant","uuid":"a1","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"x"}],"usage":{"input_tokens":10,"output_tokens":1,"cache_read_input_tokens":5}}}"#.to_string(),
            r#"{"type":"assistant","uuid":"a2","message":{"id":"msg_1","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Edit","input":{"file_path":"/src/a.rs","old_string":"x"}}],"usage":{"input_tokens":10,"output_tokens":42,"cache_read_input_tokens":5}}}"#.to_string(),
            r#"{"type":"user","uuid":"u9","timestamp":"2025-01-01T00:00:06.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":"The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). To tell you how to proceed, the user said:\nuse the other file"}]}}"#.to_string(),
            user("please also update the README", ""),
        ];
        let (_, batches) = run(&format!("{SID}.jsonl"), &(lines.join("\n") + "\n"));
        let b = &batches[0];
        let kinds: Vec<&str> = b.summaries.iter().map(|s| s.kind).collect();
        assert_eq!(kinds, ["summary", "compact_boundary", "compact_summary"]);
        assert_eq!(b.summaries[0].dedup_key, "leaf-1\nFixing CI");
        assert_eq!(b.summaries[0].leaf_uuid.as_deref(), Some("leaf-1"));
        assert_eq!(b.summaries[1].trigger.as_deref(), Some("auto"));
        assert_eq!(b.summaries[1].pre_tokens, Some(155_250));
        assert_eq!(b.summaries[1].dedup_key, "cb1");
        assert_eq!(b.summaries[2].line_no, 3);
        assert!(b.summaries[2]
            .text
            .as_deref()
            .unwrap_or("")
            .starts_with("This session"));

        assert_eq!(b.tool_uses.len(), 1);
        assert_eq!(b.tool_uses[0].name.as_deref(), Some("Edit"));
        assert_eq!(b.tool_uses[0].target.as_deref(), Some("/src/a.rs"));
        assert_eq!(b.tool_errors.len(), 1);
        assert_eq!(b.tool_errors[0].tool_use_id, "toolu_1");

        // One reply over two lines: counted once, with the larger usage.
        assert_eq!(b.usage.len(), 1);
        assert_eq!(
            (
                b.usage[0].input_tokens,
                b.usage[0].output_tokens,
                b.usage[0].cache_read_input_tokens
            ),
            (10, 42, 5)
        );

        let fb: Vec<(&str, Option<&str>)> = b
            .feedback
            .iter()
            .map(|f| (f.feedback_type.as_str(), f.reason.as_deref()))
            .collect();
        assert_eq!(
            fb,
            [
                ("tool_denial", Some("use the other file")),
                ("message", None)
            ]
        );
        assert_eq!(b.feedback[0].dedup_key, "u9:tool_denial:toolu_1");
        assert_eq!(b.feedback[0].tool_use_id.as_deref(), Some("toolu_1"));
        assert_eq!(b.feedback[1].dedup_key, "u1:message:0");
        assert_eq!(b.feedback[1].content, "please also update the README");
    }
}
