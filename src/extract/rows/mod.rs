//! Plain row types that flow from extraction to the store.
//!
//! A [`PreparedBatch`] is the unit of work of the writer: everything read from one file between
//! two checkpoints, plus the checkpoint itself. The store writes it in ONE transaction, which is
//! what makes ingestion exactly-once (see ARCHITECTURE.md, "Checkpoint discipline").

use crate::tail::Checkpoint;

mod stored;
mod archive;
pub use archive::{ArchiveChunk, Sidecar};
pub use stored::{pack_state, unpack_state, uuid_bytes, uuid_from_bytes, uuid_stored, StoredUuid};

/// The version of the rules that turn transcript lines into derived rows (summaries, feedback,
/// episodes, triage, snippets). Bump it with any change to extraction, triage or snippet rules
/// that changes what is stored: each session records the version that read it
/// (`session_rules`), and sessions on older rules are derived again from the archive (`gleaner
/// reextract`, and the daemon in the background).
pub const RULES_VERSION: i64 = 9;

/// Everything one transaction writes for one file.
#[derive(Debug, Clone, Default)]
pub struct PreparedBatch {
    /// The file's row id.
    pub file_id: i64,
    /// `(generation, offset)` the database must still hold for this batch to apply. A mismatch
    /// means another writer (or an earlier crash) moved the file on; the batch is rolled back.
    pub expected: (i64, u64),
    /// The checkpoint committed with the rows.
    pub checkpoint: Checkpoint,
    /// File size seen when reading.
    pub size: u64,
    /// Session id to record on the file row (decided by the first batch that knows it).
    pub file_session_id: Option<String>,
    /// Project folder of the file (summary leaves are looked up within it).
    pub project: String,
    /// Session facts seen in this batch, merged into the session row.
    pub session: Option<SessionUpdate>,
    /// One row per user / assistant / system / summary record.
    pub messages: Vec<MessageRow>,
    /// Lines that could not be used.
    pub diagnostics: Vec<DiagnosticRow>,
    /// Record type and unknown-field tallies of this batch.
    pub kinds: Vec<KindCount>,
    /// Summary, compact-boundary and compact-summary records.
    pub summaries: Vec<SummaryRow>,
    /// User feedback items.
    pub feedback: Vec<FeedbackRow>,
    /// Tool calls (assistant `tool_use` blocks).
    pub tool_uses: Vec<ToolUseRow>,
    /// Tool results (user `tool_result` blocks), failed or not, their text bounded
    /// (`extract::tools`).
    pub tool_results: Vec<ToolUseRow>,
    /// Token usage, one row per API message id (merged within the batch).
    pub usage: Vec<UsageRow>,
    /// File modification time (Unix ms) seen when reading; drives the idle-session rule.
    pub mtime_ms: i64,
    /// `(agentType, description)` from the sub-agent's `.meta.json`, once found.
    pub agent_meta: Option<(Option<String>, Option<String>)>,
    /// Transcript bytes this batch covers (for throughput figures).
    pub bytes: u64,
    /// Physical lines this batch covers.
    pub lines: u64,
    /// Episodes that closed in this batch, and the open one (main files only).
    pub episodes: Vec<EpisodeRow>,
    /// The episode builder's state after this batch, stored with the checkpoint (JSON packed
    /// by [`pack_state`]).
    pub episode_state: Option<Vec<u8>>,
    /// The open episode was written closed in this batch ([`crate::episode::Last::Closed`]):
    /// the checkpoint records it (`files.episode_closed_offset`), so the idle sweep need not
    /// close it again.
    pub episode_closed: bool,
    /// The file's path as stored in `files.path` (the source of its snippets).
    pub path: String,
    /// The bytes this batch read, compressed (`crate::archive`); empty when the archive is off.
    pub archive: Vec<ArchiveChunk>,
    /// A file beside the transcript read with this batch (a sub-agent's `.meta.json`), archived
    /// whole.
    pub sidecar: Option<Sidecar>,
}

impl PreparedBatch {
    /// Whether a human prompt is among the feedback rows from `from` on (a record that adds
    /// one is a prompt), or a summary among the summaries from `summaries_from` on (the
    /// compaction summariser's reply): the line is found as that kind.
    pub fn found_as_other_since(&self, from: usize, summaries_from: usize) -> bool {
        self.prompt_since(from) || self.summaries.len() > summaries_from
    }

    /// Whether a human prompt is among the feedback rows from `from` on (a record that adds
    /// one is a prompt).
    pub fn prompt_since(&self, from: usize) -> bool {
        self.feedback
            .get(from..)
            .unwrap_or_default()
            .iter()
            .any(|f| f.feedback_type == crate::extract::feedback::FeedbackType::Message)
    }

    /// Give back what the row vectors grew beyond their rows. A batch waits for its commit
    /// with a few hundred others (`run::engine`'s files in flight), and vectors grown by
    /// doubling hold a quarter more than their rows on average (issue 30, peak RSS; measured
    /// only together with dropping the builder early, see `run::pump`: no slower).
    pub fn shrink(&mut self) {
        self.messages.shrink_to_fit();
        self.tool_uses.shrink_to_fit();
        self.tool_results.shrink_to_fit();
        self.usage.shrink_to_fit();
        self.kinds.shrink_to_fit();
        self.diagnostics.shrink_to_fit();
        self.summaries.shrink_to_fit();
        self.feedback.shrink_to_fit();
        self.episodes.shrink_to_fit();
        self.archive.shrink_to_fit();
    }
}

/// Facts about a session learnt from one batch; merged with `min`/`max`/first-wins rules.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionUpdate {
    /// Session UUID.
    pub session_id: String,
    /// Machine that first saw it.
    pub machine: String,
    /// The user of that machine (config `user`).
    pub user: String,
    /// Project folder.
    pub project: String,
    /// First working directory seen (first wins).
    pub cwd: Option<String>,
    /// Latest git branch seen.
    pub git_branch: Option<String>,
    /// Latest Claude Code version seen.
    pub version: Option<String>,
    /// First line of the first real user prompt (first wins).
    pub title: Option<String>,
    /// Earliest timestamp.
    pub started_at: Option<String>,
    /// Latest timestamp.
    pub last_activity_at: Option<String>,
    /// Latest human-readable session slug.
    pub slug: Option<String>,
}

/// One transcript record worth a row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MessageRow {
    /// 1-based physical line number.
    pub line_no: u64,
    /// Index of the JSON object within the line (more than one when objects are glued).
    pub seq: u32,
    /// Byte range of the physical line in the file.
    pub byte_start: u64,
    /// End of that range (exclusive, after the `\n`).
    pub byte_end: u64,
    /// Owning session.
    pub session_id: String,
    /// Line uuid.
    pub uuid: Option<String>,
    /// Parent uuid.
    pub parent_uuid: Option<String>,
    /// `user`, `assistant`, `system` or `summary`.
    pub kind: String,
    /// System subtype.
    pub subtype: Option<String>,
    /// ISO-8601 timestamp.
    pub ts: Option<String>,
    /// Sub-agent line.
    pub is_sidechain: bool,
    /// Sub-agent id.
    pub agent_id: Option<String>,
    /// Model of an assistant line.
    pub model: Option<String>,
    /// Comma-separated tool names used by an assistant line.
    pub tool_names: Option<String>,
    /// A tool result with `is_error`, or a synthetic API error.
    pub is_error: bool,
    /// Plain text of user and assistant text blocks only.
    pub text: Option<String>,
    /// Injected by Claude Code (`isMeta`, a compaction summary in a user line): kept, but left
    /// out of search and of the conversation text.
    pub is_meta: bool,
    /// Search finds this line as another kind (not stored): a human prompt by its feedback
    /// row of type `message`, the compaction summariser's reply by its summary. One hit per
    /// line, not two.
    pub found_as_other: bool,
    /// PostgreSQL only: the text's search words as a binary `tsvector`, computed on the
    /// reading threads (see [`crate::extract::lexemes`]); `None` elsewhere.
    pub search_vec: Option<Vec<u8>>,
}

/// A `summary` line, a compact boundary, or a compact summary.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SummaryRow {
    /// `summary`, `compact_boundary` or `compact_summary`.
    pub kind: &'static str,
    /// Natural key: `leaf_uuid` + text for summaries, the line uuid for compact kinds.
    pub dedup_key: String,
    /// Summary text (the boundary's `content` for boundaries).
    pub text: Option<String>,
    /// `leafUuid` of a summary.
    pub leaf_uuid: Option<String>,
    /// Uuid of the line.
    pub uuid: Option<String>,
    /// `compactMetadata.trigger` (`auto` / `manual`).
    pub trigger: Option<String>,
    /// `compactMetadata.preTokens`.
    pub pre_tokens: Option<i64>,
    /// The file's session (re-attributed through `leaf_uuid` by the store when known).
    pub session_id: String,
    /// Sub-agent id for sub-agent files.
    pub agent_id: Option<String>,
    /// Line timestamp.
    pub ts: Option<String>,
    /// 1-based line number.
    pub line_no: u64,
    /// PostgreSQL only: the text's search words as a binary `tsvector`, computed on the
    /// reading threads (see [`crate::extract::lexemes`]); `None` elsewhere.
    pub search_vec: Option<Vec<u8>>,
}

/// One user-feedback item.
#[derive(Debug, Clone, PartialEq)]
pub struct FeedbackRow {
    /// Line uuid + type + block or tool_use_id.
    pub dedup_key: String,
    /// Line timestamp.
    pub ts: Option<String>,
    /// Session.
    pub session_id: String,
    /// `message`, `tool_denial` or `interruption`.
    pub feedback_type: crate::extract::feedback::FeedbackType,
    /// The text.
    pub content: String,
    /// What the user typed when rejecting a tool use.
    pub reason: Option<String>,
    /// Sub-agent id.
    pub agent_id: Option<String>,
    /// Session slug.
    pub slug: Option<String>,
    /// Denied tool use.
    pub tool_use_id: Option<String>,
    /// Line uuid.
    pub uuid: Option<String>,
    /// 1-based line number.
    pub line_no: u64,
    /// Position of its record on the line (glued objects share a line); not stored.
    pub seq: u32,
    /// PostgreSQL only: the text's search words as a binary `tsvector`, computed on the
    /// reading threads (see [`crate::extract::lexemes`]); `None` elsewhere.
    pub search_vec: Option<Vec<u8>>,
}

/// A tool call or a tool result, keyed by the tool use id: both are one row of `tool_uses`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolUseRow {
    /// `toolu_…` id.
    pub tool_use_id: String,
    /// Session.
    pub session_id: String,
    /// Tool name (calls only).
    pub name: Option<String>,
    /// File path, command, URL or pattern the call targets.
    pub target: Option<String>,
    /// Line timestamp.
    pub ts: Option<String>,
    /// 1-based line number.
    pub line_no: u64,
    /// A result that failed (`is_error`: failures and denials).
    pub is_error: bool,
    /// A result's text, bounded (`extract::tools::result_text`) and redacted.
    pub result: Option<String>,
    /// PostgreSQL only: the search words of the call ([`crate::extract::tools::call_text`]) or
    /// of the result's text, computed on the reading threads; `None` elsewhere.
    pub search_vec: Option<Vec<u8>>,
}

/// Token usage of one API message: what `gleaner usage` counts. One reply spans several lines
/// (and resumed copies of a file repeat them), so one row per `message.id`; of its lines the one
/// ccusage would keep wins ([`UsageRow::offer`]), so the two tools agree.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UsageRow {
    /// `message.id`.
    pub message_id: String,
    /// Session.
    pub session_id: String,
    /// Input tokens.
    pub input_tokens: i64,
    /// Output tokens.
    pub output_tokens: i64,
    /// Cache-creation input tokens (both lifetimes).
    pub cache_creation_input_tokens: i64,
    /// Cache-read input tokens.
    pub cache_read_input_tokens: i64,
    /// The one-hour part of `cache_creation_input_tokens` (priced higher).
    pub cache_creation_1h_tokens: i64,
    /// `message.model` (`None` when the line names none).
    pub model: Option<String>,
    /// The line's timestamp, Unix milliseconds.
    pub ts_ms: Option<i64>,
    /// `costUSD` written on the line by older Claude Code versions.
    pub cost_usd: Option<f64>,
    /// Written by a sub-agent (`isSidechain`).
    pub sidechain: bool,
}

impl UsageRow {
    /// All four counters.
    pub fn total(&self) -> i64 {
        self.input_tokens
            + self.output_tokens
            + self.cache_creation_input_tokens
            + self.cache_read_input_tokens
    }

    /// Whether `candidate`, another line of the same message, replaces this one: a main-chain
    /// line wins over a sub-agent's replay, then the larger total (streamed lines of one reply
    /// repeat a usage that only grows). ccusage keeps the same line.
    pub fn replaced_by(&self, candidate: &UsageRow) -> bool {
        if self.sidechain != candidate.sidechain {
            return self.sidechain;
        }
        candidate.total() > self.total()
    }

    /// Keep `candidate` instead of this row when it wins ([`Self::replaced_by`]).
    pub fn offer(&mut self, candidate: UsageRow) {
        if self.replaced_by(&candidate) {
            *self = candidate;
        }
    }

    /// The counters as a [`crate::parse::Usage`].
    pub fn usage(&self) -> crate::parse::Usage {
        crate::parse::Usage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cache_creation_input_tokens: self.cache_creation_input_tokens,
            cache_read_input_tokens: self.cache_read_input_tokens,
            cache_creation_1h_tokens: self.cache_creation_1h_tokens,
        }
    }
}

/// Why a line could not be used.
#[derive(Debug, Clone, PartialEq)]
pub struct DiagnosticRow {
    /// 1-based physical line number.
    pub line_no: u64,
    /// Byte offset of the line.
    pub byte_start: u64,
    /// Length of the line on disk.
    pub byte_len: u64,
    /// `too_long`, `invalid_utf8`, `malformed_json` or `not_an_object`.
    pub kind: &'static str,
    /// Human-readable detail.
    pub detail: Option<String>,
}

/// A tally of record types (`category = "type"`) or unknown top-level fields
/// (`category = "unknown_field"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindCount {
    /// `type`, `unknown_type` or `unknown_field`.
    pub category: &'static str,
    /// The type (with `/subtype` for system lines) or field name.
    pub name: String,
    /// How many.
    pub count: i64,
}

/// One episode of a main transcript: a run of turns about one task. Written open while it is
/// the last episode of an active session, then again (upserted on its natural key
/// `(file_id, generation, start_line)`) when it closes, with its snippets.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EpisodeRow {
    /// Session of the file.
    pub session_id: String,
    /// File generation the line numbers refer to.
    pub generation: i64,
    /// 1-based position in the file.
    pub ordinal: i64,
    /// 1-based number (in the file) of its first turn.
    pub first_turn: i64,
    /// Turns in it.
    pub turns: i64,
    /// Line of its first prompt.
    pub start_line: u64,
    /// Line before the next episode's first prompt, or the last line read.
    pub end_line: u64,
    /// Timestamp of its first prompt.
    pub started_at: Option<String>,
    /// Latest timestamp seen in it.
    pub ended_at: Option<String>,
    /// Closed (no more turns will join it).
    pub closed: bool,
    /// `start`, `compaction`, `idle_gap`, `topic` or `window`.
    pub cut_reason: String,
    /// `routine`, `error_recovery`, `user_correction`, `pivot` or `design_decision`.
    pub triage: String,
    /// 0..=1.
    pub confidence: f64,
    /// JSON array of evidence items.
    pub evidence: String,
    /// JSON array of every label its turns hold, the episode's own first.
    pub labels: String,
    /// JSON array of `{ordinal, start_line, end_line, triage, confidence, evidence}`, one per
    /// turn.
    pub turn_labels: String,
    /// First line of its first prompt.
    pub title: Option<String>,
    /// JSON array of files touched.
    pub files_touched: String,
    /// JSON object tool name -> calls.
    pub tools: String,
    /// JSON array of linked sub-agents (agent ids, or Task tool-use ids).
    pub agents: String,
    /// Automatic snippets (closed episodes only).
    pub snippets: Vec<SnippetRow>,
}

/// A snippet ready to store: validated, redacted, hashed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SnippetRow {
    /// `auto` or `manual`.
    pub origin: &'static str,
    /// `error_reasoning`, `decision_rationale` or `learning_pattern`.
    pub snippet_type: String,
    /// At most 256 characters.
    pub title: String,
    /// 100 to 10,240 bytes.
    pub content: String,
    /// Hash of the normalized content (dedup key within a session).
    pub content_hash: String,
    /// First source line (1-based).
    pub line_start: u64,
    /// Last source line.
    pub line_end: u64,
    /// Tags: tools, file extensions, error kinds, project.
    pub tags: Vec<String>,
    /// JSON object: word_count, reading_time_s, triage, confidence, version.
    pub metadata: String,
}

/// 64-bit key of a uuid: `summaries.leaf_key`, and the writer's in-memory set of summary leaves
/// (collisions are harmless: lookups also compare the uuid itself).
pub fn uuid_key(uuid: &str) -> i64 {
    xxhash_rust::xxh3::xxh3_64(uuid.as_bytes()) as i64
}

/// Current UTC time as ISO-8601 with milliseconds, the format the transcripts use.
pub fn now_iso() -> String {
    iso_from_unix_millis(unix_ms_now())
}

/// A time filter as people write it: an ISO-8601 date or time (returned as written: stored
/// times compare as text) or an age like `30m`, `12h`, `7d`, `2w` counted back from now.
/// `None` when it is neither.
pub fn time_or_age(s: &str) -> Option<String> {
    let s = s.trim();
    let unit = s.chars().last()?;
    if let (Some(n), true) = (
        s.get(..s.len().saturating_sub(1))
            .and_then(|n| n.parse::<i64>().ok()),
        "smhdw".contains(unit),
    ) {
        let secs = match unit {
            's' => n,
            'm' => n * 60,
            'h' => n * 3600,
            'd' => n * 86_400,
            _ => n * 7 * 86_400,
        };
        return Some(iso_from_unix_millis(
            unix_ms_now().saturating_sub(secs.saturating_mul(1000)),
        ));
    }
    let b = s.as_bytes();
    (b.len() >= 10 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-' && b[7] == b'-')
        .then(|| s.to_string())
}

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn unix_ms_now() -> i64 {
    unix_ms(std::time::SystemTime::now())
}

/// A file's modification time in Unix milliseconds (0 when the OS does not tell).
pub fn mtime_ms(m: &std::fs::Metadata) -> i64 {
    m.modified().map_or(0, unix_ms)
}

/// Unix milliseconds of `t` (0 before the epoch).
pub fn unix_ms(t: std::time::SystemTime) -> i64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Format Unix milliseconds as `YYYY-MM-DDTHH:MM:SS.mmmZ` (civil-from-days, H. Hinnant).
pub fn iso_from_unix_millis(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let milli = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{milli:03}Z",
        sod / 3600,
        (sod / 60) % 60,
        sod % 60
    )
}

/// Parse `YYYY-MM-DDTHH:MM:SS[.fff]Z` (or a `+00:00` suffix) into Unix milliseconds. `None` for
/// anything else; only used for durations, so other offsets are not needed.
pub fn unix_millis_from_iso(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> { s.get(r)?.parse().ok() };
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut ms = 0;
    let rest = &s[19..];
    let rest = if let Some(frac) = rest.strip_prefix('.') {
        let digits: String = frac.chars().take_while(char::is_ascii_digit).collect();
        let scaled = format!("{digits:0<3}");
        ms = scaled.get(..3)?.parse().ok()?;
        &frac[digits.len()..]
    } else {
        rest
    };
    if !matches!(rest, "Z" | "" | "+00:00") || !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    // days-from-civil (H. Hinnant)
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 86_400 + hh * 3600 + mm * 60 + ss) * 1000) + ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_format() {
        assert_eq!(iso_from_unix_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            iso_from_unix_millis(1_763_721_000_123),
            "2025-11-21T10:30:00.123Z"
        );
        assert_eq!(
            iso_from_unix_millis(951_782_400_000),
            "2000-02-29T00:00:00.000Z"
        );
    }

    #[test]
    fn iso_parse_round_trips() {
        for ms in [0, 951_782_400_000, 1_763_721_000_123, 1_798_761_599_999] {
            assert_eq!(unix_millis_from_iso(&iso_from_unix_millis(ms)), Some(ms));
        }
        assert_eq!(
            unix_millis_from_iso("2025-06-01T12:00:00Z"),
            Some(1_748_779_200_000)
        );
        assert_eq!(
            unix_millis_from_iso("2025-06-01T12:00:00.5Z"),
            Some(1_748_779_200_500)
        );
        assert_eq!(unix_millis_from_iso("yesterday"), None);
        assert_eq!(unix_millis_from_iso("2025-13-01T12:00:00Z"), None);
    }
}
