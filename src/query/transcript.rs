//! A transcript's lines for the doors that show them (MCP `get_transcript_lines` and
//! `extract_snippet`, the web view's raw lines, `snippet add --lines/--turns`): the file on disk
//! when this machine holds it, else the archive's copy (issue 29), so they keep working after
//! Claude Code deleted the file, and for another machine's transcripts in a shared store.

use std::path::{Path, PathBuf};

use crate::archive::{Body, ChunkReader, Encoded};
use crate::extract::redact::Redactor;
use crate::run::restore::{Shared, SharedError};
use crate::snippet::excerpt::{self, Excerpt, Selection, SourceError};
use crate::store::{Store, StoreError, TimelineFile};

/// Where a transcript's bytes are read from.
#[derive(Debug)]
pub enum Transcript {
    /// The file itself.
    Disk(PathBuf),
    /// The archive's copy of the file that was at `path`.
    Archived {
        /// Where it was.
        path: PathBuf,
        /// Its bytes.
        reader: ChunkReader,
    },
}

impl Transcript {
    /// Where the file is, or was.
    pub fn path(&self) -> &Path {
        match self {
            Transcript::Disk(p) | Transcript::Archived { path: p, .. } => p,
        }
    }

    /// Whether the bytes come from the archive.
    pub fn is_archived(&self) -> bool {
        matches!(self, Transcript::Archived { .. })
    }

    /// The selected lines or turns, rendered and redacted (blocking: run it off the runtime).
    pub fn excerpt(self, sel: Selection, redactor: &Redactor) -> Result<Excerpt, SourceError> {
        match self {
            Transcript::Disk(p) => excerpt::excerpt(&p, sel, redactor),
            Transcript::Archived { path, reader } => {
                excerpt::excerpt_from(&path, reader, sel, redactor)
            }
        }
    }
}

/// A range of a transcript's lines as every door reads it: `start..=end`, cut to the `known`
/// lines of the file, with a note when it was cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineRange {
    /// First line (1-based).
    pub start: u64,
    /// Last line, at most the file's last.
    pub end: u64,
    /// Said when `end` was cut to the file.
    pub note: Option<String>,
}

/// The range `start..=end` (the door's names for them in `names`) of `path`, which holds
/// `known` lines. Why one function: the doors answered the same range differently (MCP cut it
/// to the file, the web view showed nothing); a start past the end is an error naming the
/// file's length, an end past it is cut and said.
pub fn line_range(
    names: (&str, &str),
    (start, end): (u64, u64),
    path: &str,
    known: u64,
) -> Result<LineRange, String> {
    if start == 0 || start > end {
        return Err(format!(
            "invalid range {start}:{end}: expected 1 <= {} <= {}",
            names.0, names.1
        ));
    }
    if start > known.max(1) {
        return Err(format!(
            "{} {start} is past the end of {path}, which has {known} lines",
            names.0
        ));
    }
    let cut = end.min(known.max(start));
    Ok(LineRange {
        start,
        end: cut,
        note: (cut < end).then(|| {
            format!(
                "{} {end} is past the end of the file: lines {start}:{cut} shown",
                names.1
            )
        }),
    })
}

/// `file`'s bytes: on disk if this machine (`machine`) holds it there, else from the archive;
/// `None` when neither has them.
pub async fn open(
    store: &Store,
    file: &TimelineFile,
    machine: &str,
) -> Result<Option<Transcript>, StoreError> {
    let path = PathBuf::from(&file.path);
    if file.machine == machine && path.is_file() {
        return Ok(Some(Transcript::Disk(path)));
    }
    archived(store, file.id, file.generation, path).await
}

/// The archive's copy of file `id` (generation `generation`), once at `path`.
pub async fn archived(
    store: &Store,
    id: i64,
    generation: i64,
    path: PathBuf,
) -> Result<Option<Transcript>, StoreError> {
    let mut chunks = Vec::new();
    let mut shared = Shared::default();
    let at: std::sync::Arc<std::path::Path> = path.as_path().into();
    let mut from = 0;
    loop {
        let page = store.archive_chunks(id, generation, from).await?;
        let Some(last) = page.last() else { break };
        from = last.end_off;
        for c in page {
            let (start, end) = (c.start_off as u64, c.end_off as u64);
            match shared.encoded(store, c, &at).await {
                Ok(e) => chunks.push(e),
                Err(SharedError::Store(e)) => return Err(e),
                // An unreadable dictionary or block: the reader stops at its chunk with an
                // error that says why.
                Err(e) => {
                    tracing::warn!(file_id = id, error = %e, "archive chunk unreadable");
                    chunks.push(Encoded {
                        start,
                        end,
                        body: Body::Unreadable(e.to_string()),
                    });
                }
            }
        }
    }
    if chunks.is_empty() {
        return Ok(None);
    }
    Ok(Some(Transcript::Archived {
        path,
        reader: ChunkReader::new(chunks),
    }))
}
