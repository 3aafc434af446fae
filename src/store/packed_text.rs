//! Message text as SQLite keeps it: a zstd frame (a `BLOB`) where that is smaller by enough,
//! else the text itself (`TEXT`); SQL reads it through `gleaner_text(...)`.
//!
//! Why: message rows hold the text the doors show and search, and on a store of many small
//! projects they were the largest thing beside the archive (issue 48: the store is at most 35 %
//! of the transcript bytes at any moment, and was at that bound). Compressed one message at a
//! time, the corpus's message text keeps 47 % of its bytes, and a message shown costs a
//! decompression of a few hundred bytes, not a read of an archive block. PostgreSQL compresses
//! long values itself (TOAST); its rows keep plain text and `gleaner_text` is not called there
//! ([`Backend::stored_text`]).
//!
//! The full-text index is made of the plain text when the row is written
//! (`store::messages`), and the index's content view passes the stored value to
//! `gleaner_fts`, which reads a frame as its text, so excerpts and deletes see the text, never
//! the frame. Rows written before (plain `TEXT`) are read the same way. Migration 0036 changes
//! no table: its version marks the format, so an older build refuses to write here.

use super::sql::Backend;

/// Texts shorter than this stay plain: a frame's header and a short text's few repeats make
/// compression pay nothing.
pub(crate) const MIN_PACKED: usize = 128;

/// zstd level of a message's frame: the corpus's message texts keep 47 % at level 3 and 46 % at
/// level 9 (docs/benchmarks.md, "the store's floor"); the writer is on ingest's critical path.
const LEVEL: i32 = 3;

/// A frame is kept only when it saves at least this share of the text (an eighth): a text
/// that barely compresses is cheaper to read plain.
const MIN_SAVED_SHIFT: u32 = 3;

/// Largest text a frame may claim to hold (a damaged frame must not make a reader allocate
/// gigabytes). Message text is cut far below this at extraction.
const MAX_TEXT: u64 = 64 * 1024 * 1024;

/// A message text as bound for SQLite.
#[derive(Debug, PartialEq)]
pub(crate) enum Stored<'a> {
    /// Kept as it is.
    Text(&'a str),
    /// A zstd frame of it.
    Packed(Vec<u8>),
}

impl rusqlite::ToSql for Stored<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(match self {
            Stored::Text(t) => ToSqlOutput::Borrowed(ValueRef::Text(t.as_bytes())),
            Stored::Packed(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
        })
    }
}

/// Compresses message texts, one compression context for many rows (a context is costly to
/// make; a group writes thousands of rows).
pub(crate) struct Packer {
    ctx: Option<zstd::bulk::Compressor<'static>>,
}

impl Packer {
    /// A packer; when zstd cannot make a context every text stays plain (nothing is lost).
    pub(crate) fn new() -> Packer {
        let ctx = match zstd::bulk::Compressor::new(LEVEL) {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::warn!(error = %e, "message texts are stored uncompressed");
                None
            }
        };
        Packer { ctx }
    }

    /// `text` as SQLite should keep it.
    pub(crate) fn pack<'a>(&mut self, text: &'a str) -> Stored<'a> {
        if text.len() < MIN_PACKED {
            return Stored::Text(text);
        }
        let Some(ctx) = self.ctx.as_mut() else {
            return Stored::Text(text);
        };
        match ctx.compress(text.as_bytes()) {
            Ok(frame) if frame.len() <= text.len() - (text.len() >> MIN_SAVED_SHIFT) => {
                Stored::Packed(frame)
            }
            _ => Stored::Text(text),
        }
    }
}

/// Why a stored frame could not be read back.
#[derive(Debug, thiserror::Error)]
pub(crate) enum UnpackError {
    /// Not a zstd frame that says how long its text is, or a text too long to be ours.
    #[error("a stored message text is not a frame Gleaner wrote")]
    NotOurs,
    /// The frame is damaged.
    #[error("a stored message text cannot be decompressed: {0}")]
    Damaged(#[from] std::io::Error),
}

/// The bytes a frame written by [`Packer::pack`] holds.
pub(crate) fn unpack(frame: &[u8]) -> Result<Vec<u8>, UnpackError> {
    let size = zstd::zstd_safe::get_frame_content_size(frame)
        .ok()
        .flatten()
        .filter(|n| *n <= MAX_TEXT)
        .ok_or(UnpackError::NotOurs)?;
    let capacity = usize::try_from(size).map_err(|_| UnpackError::NotOurs)?;
    Ok(zstd::bulk::decompress(frame, capacity)?)
}

impl Backend {
    /// SQL for the text of a message column `column` (`m.text`): SQLite's may be a frame
    /// ([`Stored::Packed`]); PostgreSQL's is text.
    pub(crate) fn stored_text(self, column: &str) -> String {
        match self {
            Backend::Sqlite => format!("gleaner_text({column})"),
            Backend::Postgres => column.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_are_packed_and_come_back_whole() {
        let mut p = Packer::new();
        let text = "The build failed because the function returns a u32 where the signature \
                    says u64; the build failed because ... "
            .repeat(4);
        let Stored::Packed(frame) = p.pack(&text) else {
            panic!("a repetitive text of {} bytes is packed", text.len());
        };
        assert!(frame.len() < text.len() / 2);
        assert_eq!(unpack(&frame).expect("unpack"), text.as_bytes());
    }

    #[test]
    fn short_texts_stay_plain() {
        let mut p = Packer::new();
        assert_eq!(p.pack("yes, go ahead"), Stored::Text("yes, go ahead"));
        let just_short = "a".repeat(MIN_PACKED - 1);
        assert_eq!(p.pack(&just_short), Stored::Text(just_short.as_str()));
    }

    #[test]
    fn what_is_not_our_frame_is_an_error() {
        assert!(matches!(unpack(b"plain bytes"), Err(UnpackError::NotOurs)));
        let mut p = Packer::new();
        let text = "abc ".repeat(100);
        let Stored::Packed(mut frame) = p.pack(&text) else {
            panic!("packed");
        };
        let n = frame.len();
        frame.truncate(n - 4);
        assert!(unpack(&frame).is_err());
    }
}
