//! What a read hands back: a batch of whole lines over one buffer, and where each lies.

use super::{Checkpoint, Resume};

/// One complete line, pointing into [`Batch::data`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// 1-based physical line number = 1 + count of '\n' before it, so rows can
    /// be keyed stably even though blank lines are not returned.
    pub line_no: u64,
    /// File byte offset of the line's first byte (BOM included).
    pub offset: u64,
    /// Bytes of the line on disk including its '\n'.
    pub len: u64,
    /// Start of the content in [`Batch::data`].
    pub start: usize,
    /// End (exclusive) of the content in [`Batch::data`]; the content has the
    /// '\n', a trailing '\r', and (at file offset 0) a UTF-8 BOM stripped.
    pub end: usize,
}

/// Something the consumer should record but that is not a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TailDiagnostic {
    /// A line longer than [`TailerConfig::max_line_bytes`] was skipped; the
    /// checkpoint moved past it.
    TooLong {
        /// Its 1-based line number.
        line_no: u64,
        /// File offset of its first byte.
        offset: u64,
        /// Its length on disk including the '\n'.
        len: u64,
    },
}

/// A group of consecutive lines plus the checkpoint to commit with them.
#[derive(Debug, Clone)]
pub struct Batch {
    /// Set when this batch begins a new generation (Truncated/Rewritten/Replaced):
    /// the consumer must treat lines as a fresh file. Such a batch is returned
    /// even when it has no lines, so the reset can be committed.
    pub resume: Option<Resume>,
    /// Generation the lines belong to (equals `checkpoint.generation`).
    pub generation: i64,
    /// One contiguous buffer holding the line bytes; each Line points into it,
    /// to avoid one allocation per line.
    pub data: Vec<u8>,
    /// Non-blank complete lines, in file order.
    pub lines: Vec<Line>,
    /// Skipped over-long lines, in file order.
    pub diagnostics: Vec<TailDiagnostic>,
    /// Checkpoint to commit together with the rows made from this batch.
    pub checkpoint: Checkpoint,
    /// The checkpoint offset the batch started from (for optimistic "offset
    /// unchanged" checks in the DB). 0 when `resume` is set: the new generation
    /// starts from scratch, so compare the generation as well.
    pub start_offset: u64,
    /// No complete line was left unread: the file, as large as it was when read,
    /// is consumed up to its last '\n' (what follows, if anything, is a partial
    /// line). A file whose final line never gets its newline is caught up here
    /// even though its size stays above the checkpoint offset.
    pub drained: bool,
}

impl Batch {
    /// Content of `l` (without '\n', trailing '\r' or leading BOM).
    pub fn line_bytes(&self, l: &Line) -> &[u8] {
        &self.data[l.start..l.end]
    }
}
