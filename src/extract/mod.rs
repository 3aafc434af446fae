//! From tailed lines to rows: the pure, synchronous heart of ingestion.
//!
//! [`extract`] turns one [`tailer::Batch`](crate::tail::Batch) into a [`PreparedBatch`]: a
//! message row per user / assistant / system / summary record, a diagnostic per unusable line,
//! tallies of record kinds and unknown fields, and the session facts the batch reveals. It does
//! no IO, so every rule here is unit-tested on literal lines.

pub mod feedback;
pub mod lexemes;
pub mod prompt;
pub mod redact;
pub mod rows;
pub mod tools;
mod usage;

use crate::metrics::{timed, Stage};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::extract::redact::Redactor;
use crate::extract::rows::{
    DiagnosticRow, FeedbackRow, KindCount, MessageRow, PreparedBatch, SessionUpdate, SummaryRow,
    UsageRow,
};
use crate::parse::{parse_line, Kind, LineError, Parsed, Record};
use crate::tail::discovery::{FileInfo, FileKind};
use crate::tail::{Batch, Line, TailDiagnostic};

/// A title from a first line: at most [`TITLE_CHARS`] characters, ending with `…` when cut.
pub fn title_line(first: &str) -> String {
    if first.chars().count() <= TITLE_CHARS {
        return first.to_string();
    }
    let mut t: String = first.chars().take(TITLE_CHARS - 1).collect();
    t.push('…');
    t
}

/// Longest title kept, in characters.
pub const TITLE_CHARS: usize = 200;

/// What extraction needs to know about the file being read. Lives as long as the file is tracked.
#[derive(Debug, Clone)]
pub struct FileContext {
    /// File row id.
    pub file_id: i64,
    /// Machine id written on session rows (shared by every file's context).
    pub machine: Arc<str>,
    /// The user of that machine (config `user`), written on session rows beside it.
    pub user: Arc<str>,
    /// Path-derived facts (its `session_id` moved into [`FileContext::session_id`]).
    pub info: FileInfo,
    /// The session the file belongs to, once decided (from the path, the database, or the
    /// first line that carries a `sessionId`).
    pub session_id: Option<String>,
    /// The sub-agent's `.meta.json` has been read (it is looked for until found).
    pub agent_meta_seen: bool,
    /// Set by the reader for a batch that ends at the end of a file still being written: with
    /// no session decided and no `sessionId` in the batch, the batch is left unread (see
    /// [`Extracted::waiting_for_session`]) instead of naming the session after the file.
    pub wait_for_session: bool,
}

impl FileContext {
    /// Context for a file whose session id may already be known.
    pub fn new(
        file_id: i64,
        (machine, user): (Arc<str>, Arc<str>),
        mut info: FileInfo,
        session_id: Option<String>,
    ) -> Self {
        // Taken, not cloned: one copy per tracked file (issue 30, peak RSS).
        let path_session = info.session_id.take();
        let session_id = session_id.or(path_session);
        FileContext {
            file_id,
            machine,
            user,
            info,
            session_id,
            agent_meta_seen: false,
            wait_for_session: false,
        }
    }
}

/// What extraction made of one batch: the rows to store, and the parsed records they came
/// from (the episode stage reads both).
#[derive(Debug)]
pub struct Extracted<'b> {
    /// The transaction content (without the checkpoint bookkeeping the pump adds).
    pub rows: PreparedBatch,
    /// Each line of the batch and what parsing it gave.
    pub parsed: Vec<(&'b Line, Parsed<'b>)>,
    /// The session the file belongs to, once known.
    pub session_id: Option<String>,
    /// The batch was not turned into rows: the file's session is not decided, no line of the
    /// batch names it, and the file is still being written (`FileContext::wait_for_session`).
    /// The caller commits nothing and reads the same lines again later, so the same bytes give
    /// the same session however they arrive: a daemon that reads a non-UUID file before its
    /// first `sessionId` line is written decides as a one-shot ingest of the finished file.
    pub waiting_for_session: bool,
}

/// Build the rows of one tailer batch: parse every line, make rows, redact them.
pub fn extract<'b>(ctx: &mut FileContext, batch: &'b Batch, redactor: &Redactor) -> Extracted<'b> {
    let mut redacted: BTreeMap<&'static str, u64> = BTreeMap::new();
    let parsed: Vec<(&Line, Parsed<'_>)> = timed(Stage::Parse, || {
        batch
            .lines
            .iter()
            .map(|line| (line, parse_line(batch.line_bytes(line))))
            .collect()
    });
    if ctx.session_id.is_none() && ctx.wait_for_session && first_session_id(&parsed).is_none() {
        return Extracted {
            rows: PreparedBatch::default(),
            parsed,
            session_id: None,
            waiting_for_session: true,
        };
    }
    let mut rows = timed(Stage::Extract, || extract_rows(ctx, batch, &parsed));
    timed(Stage::Redact, || {
        scrub_batch(&mut rows, redactor, &mut redacted)
    });
    rows.kinds
        .extend(redacted.into_iter().map(|(kind, n)| KindCount {
            category: "redacted",
            name: kind.to_string(),
            count: n as i64,
        }));
    Extracted {
        rows,
        parsed,
        session_id: ctx.session_id.clone(),
        waiting_for_session: false,
    }
}

/// The first `sessionId` a line of the batch carries.
fn first_session_id(parsed: &[(&Line, Parsed<'_>)]) -> Option<String> {
    parsed
        .iter()
        .flat_map(|(_, p)| p.records.iter())
        .find_map(|r| r.session_id.as_deref().map(str::to_string))
}

/// Replace secrets in every text a batch would store: message text, feedback, summaries, the
/// session's title, working directory, branch and slug, tool targets (commands can carry
/// tokens) and tool results. Keys built from text are rebuilt from the redacted text afterwards: a summary's
/// de-duplication key is its leaf uuid and text, and must not keep what the text lost.
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
        f.slug.as_mut().map(&mut scrub);
    }
    for s in &mut out.summaries {
        if let Some(text) = s.text.as_mut() {
            scrub(text);
            if s.kind == "summary" {
                s.dedup_key = summary_key(s.leaf_uuid.as_deref(), Some(text));
            }
        }
    }
    for t in &mut out.tool_uses {
        t.target.as_mut().map(&mut scrub);
    }
    for t in &mut out.tool_results {
        t.result.as_mut().map(&mut scrub);
    }
    if let Some(s) = &mut out.session {
        s.title.as_mut().map(&mut scrub);
        s.cwd.as_mut().map(&mut scrub);
        s.git_branch.as_mut().map(&mut scrub);
        s.slug.as_mut().map(&mut scrub);
    }
}

/// De-duplication key of a `summary` line: the same summary of the same leaf is one row however
/// often Claude Code copies it into later files. Built from the redacted text (see
/// [`scrub_batch`]); migration 0005 rebuilds the keys of databases written before that.
fn summary_key(leaf_uuid: Option<&str>, text: Option<&str>) -> String {
    format!("{}\n{}", leaf_uuid.unwrap_or(""), text.unwrap_or(""))
}

fn extract_rows(
    ctx: &mut FileContext,
    batch: &Batch,
    parsed: &[(&Line, Parsed<'_>)],
) -> PreparedBatch {
    let mut out = PreparedBatch {
        file_id: ctx.file_id,
        checkpoint: batch.checkpoint.clone(),
        bytes: batch.checkpoint.offset.saturating_sub(batch.start_offset),
        project: ctx.info.project.to_string(),
        path: ctx.info.path.to_string_lossy().into_owned(),
        ..PreparedBatch::default()
    };
    let mut kinds: Vec<KindCount> = Vec::new();

    for d in &batch.diagnostics {
        match d {
            TailDiagnostic::TooLong {
                line_no,
                offset,
                len,
            } => {
                // Skipped, so said: the line is not stored anywhere else.
                tracing::warn!(
                    path = %ctx.info.path.display(),
                    line = line_no,
                    bytes = len,
                    "line skipped: longer than tail.max_line_bytes (recorded; see gleaner diagnostics)"
                );
                out.diagnostics.push(DiagnosticRow {
                    line_no: *line_no,
                    byte_start: *offset,
                    byte_len: *len,
                    kind: "too_long",
                    detail: Some(format!("line of {len} bytes exceeds tail.max_line_bytes")),
                })
            }
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
        ctx.session_id =
            first_session_id(parsed).or_else(|| (!parsed.is_empty()).then(|| ctx.info.stem()));
        out.file_session_id = ctx.session_id.clone();
    }
    let Some(session_id) = ctx.session_id.clone() else {
        return out;
    };
    out.file_session_id
        .get_or_insert_with(|| session_id.clone());

    let mut session = SessionUpdate {
        session_id: session_id.clone(),
        machine: ctx.machine.to_string(),
        user: ctx.user.to_string(),
        project: ctx.info.project.to_string(),
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
            let (feedback_before, summaries_before) = (out.feedback.len(), out.summaries.len());
            knowledge(&mut out, &mut usage, rec, &session_id, ctx, &at);
            if let Some(row) = message_row(rec, &session_id, ctx) {
                out.messages.push(MessageRow {
                    line_no: line.line_no,
                    seq: seq as u32,
                    byte_start: line.offset,
                    byte_end: line.offset + line.len,
                    // Its typed text is searchable as the prompt (feedback) it gave, a
                    // compactor's reply as its summary: one hit per line, not two.
                    found_as_other: out.found_as_other_since(feedback_before, summaries_before),
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
    // Made when a row needs them: most records give no knowledge row, and three strings made
    // for every record were a tenth of the reading threads' allocations.
    let owned = |v: &Option<std::borrow::Cow<'_, str>>| v.as_deref().map(str::to_string);
    let agent_id = || owned(&rec.agent_id).or_else(|| ctx.info.agent_id.clone());
    let ts = || owned(&rec.timestamp);
    let uuid = || owned(&rec.uuid);

    let summary = |kind: &'static str, dedup_key: String, text: Option<String>| SummaryRow {
        kind,
        dedup_key,
        text,
        leaf_uuid: owned(&rec.leaf_uuid),
        uuid: uuid(),
        trigger: rec
            .compact_metadata
            .as_ref()
            .and_then(|m| m.trigger.clone()),
        pre_tokens: rec.compact_metadata.as_ref().and_then(|m| m.pre_tokens),
        session_id: session_id.to_string(),
        agent_id: agent_id(),
        ts: ts(),
        line_no: at.line_no,
        search_vec: None,
    };
    match rec.kind {
        Kind::Summary => {
            let text = owned(&rec.summary);
            let key = summary_key(rec.leaf_uuid.as_deref(), text.as_deref());
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
        // Claude Code 2.1.39+ summarises in a sub-agent of its own (`agent-acompact-*`): its
        // reply is the compaction's summary, and the main transcript may hold none.
        Kind::Assistant if is_compactor(rec, ctx) => {
            if let Some(text) = rec.text().as_deref().and_then(compactor_summary) {
                let key = at.key(rec.uuid.as_deref());
                out.summaries
                    .push(summary("compact_summary", key, Some(text)));
            }
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
                ts: ts(),
                session_id: session_id.to_string(),
                feedback_type: item.feedback_type,
                content: item.content,
                reason: item.reason,
                agent_id: agent_id(),
                slug: owned(&rec.slug),
                tool_use_id: item.tool_use_id,
                uuid: uuid(),
                line_no: at.line_no,
                seq: at.seq,
                search_vec: None,
            });
        }
    }

    tools::collect(
        &mut out.tool_uses,
        &mut out.tool_results,
        rec,
        session_id,
        at.line_no,
    );

    usage::collect(usage, rec, session_id);
}

fn tally(kinds: &mut Vec<KindCount>, rec: &Record<'_>) {
    match (&rec.kind, &rec.subtype) {
        (Kind::Other(t), _) => bump(kinds, "unknown_type", &[t]),
        (Kind::System, Some(sub)) => bump(kinds, "type", &["system/", sub]),
        _ => bump(kinds, "type", &[&rec.type_name]),
    }
    for f in &rec.unknown_fields {
        bump(kinds, "unknown_field", &[f]);
    }
}

/// Count one more of `category` / the concatenation of `name`. A batch holds a few distinct
/// kinds, so a list searched in place beats a map whose key had to be made (a string per
/// record) to be looked up.
fn bump(kinds: &mut Vec<KindCount>, category: &'static str, name: &[&str]) {
    let is = |k: &KindCount| {
        let mut rest = k.name.as_str();
        k.category == category
            && name.iter().all(|part| match rest.strip_prefix(part) {
                Some(r) => {
                    rest = r;
                    true
                }
                None => false,
            })
            && rest.is_empty()
    };
    match kinds.iter_mut().find(|k| is(k)) {
        Some(k) => k.count += 1,
        None => kinds.push(KindCount {
            category,
            name: name.concat(),
            count: 1,
        }),
    }
}

fn merge_session(s: &mut SessionUpdate, rec: &Record<'_>, kind: FileKind) {
    if let Some(ts) = rec.timestamp.as_deref() {
        if s.started_at.as_deref().is_none_or(|cur| ts < cur) {
            set(&mut s.started_at, ts);
        }
        if s.last_activity_at.as_deref().is_none_or(|cur| ts > cur) {
            set(&mut s.last_activity_at, ts);
        }
    }
    if s.cwd.is_none() {
        s.cwd = rec.cwd.as_deref().map(str::to_string);
    }
    if let Some(b) = rec.git_branch.as_deref().filter(|b| !b.is_empty()) {
        set(&mut s.git_branch, b);
    }
    if let Some(v) = rec.version.as_deref() {
        set(&mut s.version, v);
    }
    if let Some(slug) = rec.slug.as_deref() {
        set(&mut s.slug, slug);
    }
    if s.title.is_none() && kind == FileKind::Main && !rec.is_sidechain {
        s.title = title_of(rec);
    }
}

/// `slot = Some(v)`, reusing the string already there (these facts are set from nearly every
/// record, mostly to the same or a slightly later value).
fn set(slot: &mut Option<String>, v: &str) {
    match slot {
        Some(cur) if cur == v => {}
        Some(cur) => {
            cur.clear();
            cur.push_str(v);
        }
        None => *slot = Some(v.to_string()),
    }
}

/// Whether a record is the compaction summariser's (`agent-acompact-<id>.jsonl`, agent id
/// `acompact-<id>`).
pub fn is_compactor(rec: &Record<'_>, ctx: &FileContext) -> bool {
    let agent = rec.agent_id.as_deref().or(ctx.info.agent_id.as_deref());
    ctx.info.kind == FileKind::Agent && agent.is_some_and(|a| a.starts_with("acompact"))
}

/// The summary in a compactor's reply: what its `<summary>` holds (the `<analysis>` before it is
/// its working), else the whole reply; `None` when blank.
fn compactor_summary(text: &str) -> Option<String> {
    let inner = match (text.find("<summary>"), text.rfind("</summary>")) {
        (Some(a), Some(b)) if a + "<summary>".len() <= b => &text[a + "<summary>".len()..b],
        _ => text,
    };
    let inner = inner.trim();
    (!inner.is_empty()).then(|| inner.to_string())
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
    Some(title_line(first))
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
        is_meta: rec.is_meta || rec.is_compact_summary,
        ..MessageRow::default()
    })
}

#[cfg(test)]
mod tests;
