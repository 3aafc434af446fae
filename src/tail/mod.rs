//! Byte-exact tailing of append-only JSONL transcripts.
//!
//! The database stores one [`Checkpoint`] per file and commits it in the same
//! transaction as the rows made from the lines before it, so everything here is
//! about exact byte offsets: a checkpoint always points just past a complete
//! `'\n'`-terminated line (or, once the caller says the file is finished, past a
//! last line it accepted without its `'\n'`), and resuming from it must neither
//! lose nor repeat a line. The tailer deals only in bytes and lines; whether a
//! last line is whole JSON is the caller's test.
//!
//! Design points (the *why*):
//! - No file handle is held between calls (open, seek, read, close per call), so
//!   thousands of idle transcripts cost no descriptors and deleted files are not
//!   pinned on disk.
//! - A partial last line is kept in memory and never re-read, so a line that
//!   grows over many small writes costs O(n) bytes of I/O, not O(n²).
//! - Over-long lines are skipped by scanning for `'\n'` without buffering them,
//!   so one runaway line cannot exhaust memory.
//! - Head and tail fingerprints in the checkpoint let a restart tell "same file,
//!   more data" from truncation, in-place rewrites and rename-over replacement.

mod batch;
mod checkpoint;
pub mod discovery;
pub mod lines;

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

pub use batch::{Batch, Line, TailDiagnostic};
use checkpoint::{fingerprint, validate, Validated};
pub use checkpoint::{identity, Checkpoint, Resume, HEAD_BYTES, TAIL_BYTES, VERIFY_BYTES};
use lines::{LineSplitter, Next};

/// A line holding this many bytes with no `\n` yet is measured on disk before more is held
/// ([`Tailer::read_batch`] skips it at once when it runs past the limit).
const PROBE_BYTES: usize = 4 << 20;

/// Tuning knobs for a [`Tailer`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TailerConfig {
    /// Longest line (bytes before its '\n') that is returned; longer lines are
    /// skipped with a [`TailDiagnostic::TooLong`] so memory stays bounded.
    /// Default 64 MiB.
    pub max_line_bytes: usize,
    /// Bytes requested per `read()` call; bounds the transient buffer while
    /// skipping and the I/O granularity. Default 1 MiB.
    pub read_chunk: usize,
}

impl Default for TailerConfig {
    fn default() -> Self {
        TailerConfig {
            max_line_bytes: 64 * 1024 * 1024,
            read_chunk: 1024 * 1024,
        }
    }
}

/// Errors from [`Tailer`]; every one names the path so logs are actionable.
#[derive(Debug, thiserror::Error)]
pub enum TailError {
    /// The path does not exist (deleted or renamed away): the owner should
    /// drop the tailer but may keep the checkpoint in case the file returns.
    #[error("transcript {} is gone", .path.display())]
    Gone {
        /// The path that was tailed.
        path: PathBuf,
    },
    /// The path exists but is not a regular file (e.g. a directory), so it
    /// cannot be tailed.
    #[error("{} is not a regular file", .path.display())]
    NotAFile {
        /// The path that was tailed.
        path: PathBuf,
    },
    /// Any other I/O failure (permissions, EIO, ...); retrying later may work.
    #[error("cannot read {}: {source}", .path.display())]
    Io {
        /// The path that was tailed.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

/// An IO error on `path` as the tailer reports it (a missing file is [`TailError::Gone`]).
pub fn io_err(path: &Path, e: io::Error) -> TailError {
    if e.kind() == io::ErrorKind::NotFound {
        TailError::Gone {
            path: path.to_path_buf(),
        }
    } else {
        TailError::Io {
            path: path.to_path_buf(),
            source: e,
        }
    }
}

/// Reads up to `len` bytes at `pos`; shorter only at end of file.
pub(super) fn read_at(
    file: &mut File,
    pos: u64,
    len: usize,
    counter: &mut u64,
) -> io::Result<Vec<u8>> {
    let mut out = vec![0u8; len];
    file.seek(SeekFrom::Start(pos))?;
    let n = read_full(file, &mut out)?;
    *counter += n as u64;
    out.truncate(n);
    Ok(out)
}

/// Fills `buf` as far as the file allows; returns the bytes read.
fn read_full(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Accumulates one batch's output.
#[derive(Default)]
struct Out {
    lines: Vec<Line>,
    diags: Vec<TailDiagnostic>,
    /// On-disk bytes of all lines consumed in this batch (blank and too-long too).
    raw: u64,
}

impl Out {
    /// A line with content, kept: its bytes stay in the splitter's buffer, which becomes the
    /// batch's data (a blank line counts but is not returned).
    fn keep(&mut self, l: &lines::Split) {
        if let Some(c) = l.content.as_ref().filter(|c| !c.is_empty()) {
            self.lines.push(Line {
                line_no: l.line_no,
                offset: l.offset,
                len: l.len,
                start: c.start,
                end: c.end,
            });
        }
    }
}

/// Follows one transcript file; see the module docs.
#[derive(Debug)]
pub struct Tailer {
    path: PathBuf,
    cfg: TailerConfig,
    /// Checkpoint as of everything returned so far.
    cp: Checkpoint,
    /// The bytes read past the checkpoint, split into lines (and the tail window before them).
    /// Its end is the file position read up to.
    split: LineSplitter,
    /// File bytes [0, min(read_pos, HEAD_BYTES)) while the head fingerprint is
    /// still shorter than HEAD_BYTES; empty afterwards.
    head: Vec<u8>,
    /// New generation not yet reported in a batch.
    pending_resume: Option<Resume>,
    /// The bytes before `read_pos` were just fingerprinted by a validation, so
    /// the next overlap check would be redundant I/O.
    just_validated: bool,
    bytes_read: u64,
    /// When set, the file is finished (its session ended or it went idle): bytes after the last
    /// `\n` that this test accepts (one whole JSON object) are taken as its last line.
    last_line: Option<fn(&[u8]) -> bool>,
    /// The line being read (its offset) was measured on disk: whether it runs past the limit.
    probed: Option<(u64, bool)>,
}

impl Tailer {
    /// Stat + validate `path` against a stored checkpoint (None = never seen).
    /// Opens the file briefly, closes it before returning. A new generation
    /// found here is also reported in the first batch's `resume`.
    pub fn open(
        path: &Path,
        checkpoint: Option<Checkpoint>,
        cfg: TailerConfig,
    ) -> Result<(Tailer, Resume), TailError> {
        let mut file = File::open(path).map_err(|e| io_err(path, e))?;
        let meta = file.metadata().map_err(|e| io_err(path, e))?;
        let mut counter = 0;
        let v = validate(path, &mut file, &meta, checkpoint.as_ref(), &mut counter)?;
        drop(file);
        let resume = v.resume;
        if resume != Resume::Continue && resume != Resume::New {
            tracing::debug!(path = %path.display(), ?resume, generation = v.cp.generation, "tailer open");
        }
        let mut t = Tailer {
            path: path.to_path_buf(),
            cfg,
            cp: Checkpoint::default(),
            split: LineSplitter::new(0, 0, cfg.max_line_bytes, 0, Vec::new()).keeping(),
            head: Vec::new(),
            pending_resume: None,
            just_validated: false,
            bytes_read: counter,
            last_line: None,
            probed: None,
        };
        t.apply(v);
        Ok((t, resume))
    }

    /// Resets the read state to a validated checkpoint.
    fn apply(&mut self, v: Validated) {
        if v.resume.is_new_generation() {
            self.pending_resume = Some(v.resume);
        }
        self.split = LineSplitter::new(
            v.cp.offset,
            v.cp.lines,
            self.cfg.max_line_bytes,
            TAIL_BYTES as usize,
            v.win,
        )
        .keeping();
        self.cp = v.cp;
        self.head = if u64::from(self.cp.head_len) < HEAD_BYTES {
            v.head
        } else {
            Vec::new()
        };
        self.just_validated = true;
    }

    /// Read new data and return complete lines, at most about `max_bytes` of
    /// line data (counted as on-disk bytes; always at least one complete line
    /// if one is available, even if longer than max_bytes, up to
    /// cfg.max_line_bytes) and at most `max_lines` lines.
    ///
    /// Returns Ok(None) when there is nothing new (no new complete line; a
    /// growing partial line may have been buffered): the caller has caught up
    /// with the file and can wait for the next change. Any `Some` means "call
    /// again soon", since limits may have stopped the batch early.
    ///
    /// Before reading it re-stats the path: if the inode changed or the size
    /// dropped below what was consumed, it re-validates like `open` and may
    /// start a new generation (reported in the batch's `resume`).
    pub fn read_batch(
        &mut self,
        max_bytes: usize,
        max_lines: usize,
    ) -> Result<Option<Batch>, TailError> {
        let path = self.path.clone();
        let io = |e| io_err(&path, e);
        let meta = std::fs::metadata(&path).map_err(io)?;
        let quiet = identity(&meta) == (self.cp.dev, self.cp.inode)
            && meta.len() == self.split.end()
            && self.split.all_scanned()
            && self.pending_resume.is_none()
            && self
                .last_line
                .is_none_or(|accept| !self.unfinished_accepted(accept));
        if quiet {
            return Ok(None);
        }
        let mut file = File::open(&path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        let mut size = meta.len();
        let read_pos = self.split.end();
        let mut revalidate = identity(&meta) != (self.cp.dev, self.cp.inode) || size < read_pos;
        if !revalidate && size > read_pos && read_pos > 0 && !self.just_validated {
            revalidate = !self.verify_overlap(&mut file).map_err(io)?;
            if revalidate {
                tracing::debug!(path = %path.display(), offset = read_pos, "consumed bytes changed");
            }
        }
        if revalidate {
            let v = validate(
                &path,
                &mut file,
                &meta,
                Some(&self.cp),
                &mut self.bytes_read,
            )?;
            if v.resume != Resume::Continue {
                tracing::debug!(path = %path.display(), resume = ?v.resume, generation = v.cp.generation, "tailer revalidated");
            }
            self.apply(v);
            size = meta.len();
        }

        let start_offset = self.cp.offset;
        let mut out = Out::default();
        let chunk = self.cfg.read_chunk.max(1) as u64;
        // The batch's bytes are read into the splitter's buffer and handed over as they are
        // (`take_consumed`); sized up front, it never regrows (each doubling would copy what
        // it holds): the unread bytes, at most a batch and the chunk read past its end.
        let unread = size.saturating_sub(self.split.end());
        let room = (self.split.buffered() as u64)
            .saturating_add(unread)
            .min((max_bytes.max(1) as u64).saturating_add(chunk));
        self.split
            .reserve((room as usize).saturating_sub(self.split.buffered()));
        let mut read_error = None;
        loop {
            if self.process(&mut out, max_bytes.max(1) as u64, max_lines.max(1)) {
                break;
            }
            let read_pos = self.split.end();
            if read_pos >= size {
                break;
            }
            if self.split.partial_len() >= PROBE_BYTES && !self.split.is_skipping() {
                self.probe_long_line(&mut file, size).map_err(io)?;
            }
            let want = chunk.min(size - read_pos) as usize;
            let track_head = read_pos < HEAD_BYTES && u64::from(self.cp.head_len) < HEAD_BYTES;
            let res = file
                .seek(SeekFrom::Start(read_pos))
                .and_then(|_| self.split.fill(want, &mut file));
            let n = match res {
                Ok(n) => n,
                Err(e) => {
                    read_error = Some(e);
                    break;
                }
            };
            if track_head {
                let take = n.min((HEAD_BYTES - read_pos) as usize);
                self.head.extend_from_slice(&self.split.last(n)[..take]);
            }
            self.bytes_read += n as u64;
            self.just_validated = false;
            if n == 0 {
                // Shrank while we read; the next call re-validates.
                break;
            }
        }
        drop(file);
        let drained = read_error.is_none() && self.split.end() >= size && self.split.all_scanned();
        if drained && out.lines.len() < max_lines.max(1) {
            if let Some(accept) = self.last_line {
                self.take_last_line(&mut out, accept);
            }
        }
        let data = self.split.take_consumed();
        self.refresh_fingerprints();
        // Give memory back between calls: an idle file must not pin a read chunk, and a
        // tree of thousands of files would otherwise keep one each.
        self.split.shrink();
        if out.raw == 0 && self.pending_resume.is_none() {
            return match read_error {
                Some(e) => Err(io(e)),
                None => Ok(None),
            };
        }
        // A read error after progress is not lost: it recurs on the next call.
        Ok(Some(Batch {
            resume: self.pending_resume.take(),
            generation: self.cp.generation,
            data,
            lines: out.lines,
            diagnostics: out.diags,
            checkpoint: self.cp.clone(),
            start_offset,
            drained,
        }))
    }

    /// Treat the file as finished from now on (or not): a last line without its `\n` that
    /// `accept` takes (the caller's test: one whole JSON object) is read as a line. Why the
    /// caller decides: only it knows the session ended (the hook, the idle timeout); a line
    /// without its newline in a live file may still be being written.
    pub fn finish_last_line(&mut self, accept: Option<fn(&[u8]) -> bool>) {
        self.last_line = accept;
    }

    /// The unfinished last line held whole, without the `\n` that may lead it, if `accept`
    /// takes it.
    fn unfinished_accepted(&self, accept: fn(&[u8]) -> bool) -> bool {
        self.split.unfinished().is_some_and(|u| {
            let u = u.strip_prefix(b"\n").unwrap_or(u);
            !u.is_empty() && accept(u)
        })
    }

    /// The unfinished last line as the batch's last line, when `accept` takes it.
    fn take_last_line(&mut self, out: &mut Out, accept: fn(&[u8]) -> bool) {
        if !self.unfinished_accepted(accept) {
            return;
        }
        if let Some(l) = self.split.finish() {
            out.keep(&l);
            out.raw += l.len;
        }
    }

    /// The line being read holds [`PROBE_BYTES`] already: find its end on disk with a small
    /// buffer, and if it runs past `max_line_bytes`, skip it now rather than hold up to that
    /// many bytes first (one 70 MB line took the daemon from 26 to 154 MB).
    fn probe_long_line(&mut self, file: &mut File, size: u64) -> io::Result<()> {
        let start = self.split.offset();
        let over = match self.probed {
            Some((at, over)) if at == start => over,
            _ => {
                let over = self.runs_past_limit(file, size)?;
                self.probed = Some((start, over));
                over
            }
        };
        if over {
            tracing::debug!(path = %self.path.display(), offset = start, "over-long line: skipped as it streams");
            self.split.skip_line();
        }
        Ok(())
    }

    /// Whether the line being read has no `\n` within `max_line_bytes` of its start, read
    /// from disk with a small buffer (its bytes are not kept). A line that the file's end cuts
    /// short of the limit is not (yet) over it.
    fn runs_past_limit(&mut self, file: &mut File, size: u64) -> io::Result<bool> {
        let limit = self.split.offset() + self.cfg.max_line_bytes as u64 + 1;
        let mut pos = self.split.end();
        let mut buf = vec![0u8; self.cfg.read_chunk.clamp(4096, 1 << 20)];
        file.seek(SeekFrom::Start(pos))?;
        while pos < size.min(limit) {
            let want = buf.len().min((size.min(limit) - pos) as usize);
            let n = read_full(file, &mut buf[..want])?;
            self.bytes_read += n as u64;
            if n == 0 || memchr::memchr(b'\n', &buf[..n]).is_some() {
                return Ok(false);
            }
            pos += n as u64;
        }
        Ok(pos >= limit)
    }

    /// Re-reads the bytes just before the read position and checks they are unchanged.
    fn verify_overlap(&mut self, file: &mut File) -> io::Result<bool> {
        let read_pos = self.split.end();
        let k = VERIFY_BYTES.min(read_pos) as usize;
        let got = read_at(file, read_pos - k as u64, k, &mut self.bytes_read)?;
        Ok(got.len() == k && self.split.ends_with(&got))
    }

    /// Turns buffered bytes into lines until the buffer holds no complete line
    /// or a limit is reached (returns true then).
    fn process(&mut self, out: &mut Out, max_bytes: u64, max_lines: usize) -> bool {
        loop {
            if out.lines.len() >= max_lines {
                return true;
            }
            // At least one line per batch, whatever its size.
            let budget = if out.raw > 0 {
                max_bytes.saturating_sub(out.raw)
            } else {
                u64::MAX
            };
            let l = match self.split.next(budget) {
                Next::Line(l) => l,
                Next::OverBudget => return true,
                Next::NeedMore => return false,
            };
            if l.content.is_none() {
                tracing::debug!(path = %self.path.display(), offset = l.offset, "over-long line skipped");
                out.diags.push(TailDiagnostic::TooLong {
                    line_no: l.line_no,
                    offset: l.offset,
                    len: l.len,
                });
            } else {
                out.keep(&l);
            }
            out.raw += l.len;
        }
    }

    /// Moves the checkpoint to the splitter's position and refreshes both fingerprints;
    /// extends the head one until HEAD_BYTES.
    fn refresh_fingerprints(&mut self) {
        if self.cp.offset != self.split.offset() {
            self.cp.offset = self.split.offset();
            self.cp.lines = self.split.lines();
            let tail = self.split.tail();
            self.cp.tail_len = tail.len() as u32;
            self.cp.tail_hash = fingerprint(&tail);
        }
        let hl = self.cp.offset.min(HEAD_BYTES);
        if hl != u64::from(self.cp.head_len) {
            let hl = (hl as usize).min(self.head.len());
            self.cp.head_len = hl as u32;
            self.cp.head_hash = fingerprint(&self.head[..hl]);
        }
        if u64::from(self.cp.head_len) == HEAD_BYTES && !self.head.is_empty() {
            self.head = Vec::new();
        }
    }

    /// Checkpoint as of everything returned so far (what to commit after the
    /// last batch).
    pub fn checkpoint(&self) -> &Checkpoint {
        &self.cp
    }

    /// The tailed path, as given to [`Tailer::open`].
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes currently buffered (partial line, or complete lines held back by
    /// batch limits) — lets the owner evict idle tailers to free memory;
    /// re-opening from [`Tailer::checkpoint`] re-reads exactly these bytes.
    pub fn buffered_bytes(&self) -> usize {
        self.split.buffered()
    }

    /// The last line of the file as far as it was read, when it has no newline yet and is held
    /// whole: the bytes from the checkpoint to the read position (see
    /// [`LineSplitter::unfinished`]).
    pub fn unfinished_line(&self) -> Option<&[u8]> {
        self.split
            .unfinished()
            .filter(|r| !r.is_empty() && self.split.end() == self.cp.offset + r.len() as u64)
    }

    /// Total bytes this tailer has read from disk (validation included), for
    /// metrics and to prove partial lines are not re-read.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }
}

#[cfg(test)]
mod tests;
