//! Plain row types that flow from extraction to the store.
//!
//! A [`PreparedBatch`] is the unit of work of the writer: everything read from one file between
//! two checkpoints, plus the checkpoint itself. The store writes it in ONE transaction, which is
//! what makes ingestion exactly-once (see ARCHITECTURE.md, "Checkpoint discipline").

use crate::tailer::Checkpoint;

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
    /// Session facts seen in this batch, merged into the session row.
    pub session: Option<SessionUpdate>,
    /// One row per user / assistant / system / summary record.
    pub messages: Vec<MessageRow>,
    /// Lines that could not be used.
    pub diagnostics: Vec<DiagnosticRow>,
    /// Record type and unknown-field tallies of this batch.
    pub kinds: Vec<KindCount>,
    /// Transcript bytes this batch covers (for throughput figures).
    pub bytes: u64,
    /// Physical lines this batch covers.
    pub lines: u64,
}

/// Facts about a session learnt from one batch; merged with `min`/`max`/first-wins rules.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionUpdate {
    /// Session UUID.
    pub session_id: String,
    /// Machine that first saw it.
    pub machine: String,
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

/// Current UTC time as ISO-8601 with milliseconds, the format the transcripts use.
pub fn now_iso() -> String {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    iso_from_unix_millis(d.as_millis() as i64)
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
}
