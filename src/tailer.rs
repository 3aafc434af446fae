//! Byte-exact tailing of append-only JSONL transcripts.
//!
//! The database stores one [`Checkpoint`] per file and commits it in the same
//! transaction as the rows made from the lines before it, so everything here is
//! about exact byte offsets: a checkpoint always points just past a complete
//! `'\n'`-terminated line, and resuming from it must neither lose nor repeat a
//! line. The tailer deals only in bytes and lines; JSON is the parser's job.
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

use std::fs::{File, Metadata};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use xxhash_rust::xxh3::xxh3_64;

/// How many leading bytes of a file are fingerprinted: enough to tell two
/// transcripts apart (their first line carries a session id and timestamp)
/// while staying a single small read on validation.
pub const HEAD_BYTES: u64 = 1024;

/// How many bytes just before the checkpoint offset are fingerprinted: catches
/// rewrites that kept the head (and maybe the size) but changed what we consumed.
pub const TAIL_BYTES: u64 = 256;

/// Bytes just before the read position that are re-read and compared whenever
/// new data is read: a cheap live check that the bytes we already consumed are
/// still there, catching a truncate-and-rewrite that happened between two polls
/// and left the file at least as large as before.
pub const VERIFY_BYTES: u64 = 64;

/// What the database stores per file, and what the tailer resumes from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checkpoint {
    /// Device of the file the checkpoint was taken on, so a rename-over
    /// (new file under the same name) is recognised.
    pub dev: u64,
    /// Inode of the file the checkpoint was taken on (see `dev`).
    pub inode: u64,
    /// Starts at 1 for a new file; +1 each time the file is found
    /// truncated/rewritten/replaced with different content. A stored
    /// generation below 1 is treated as "never seen".
    pub generation: i64,
    /// Always just past the last complete '\n'-terminated line that was
    /// consumed (0 = nothing yet).
    pub offset: u64,
    /// Number of '\n' bytes in [0, offset), so line numbers survive restarts
    /// without rescanning the file.
    pub lines: u64,
    /// Length of the head fingerprint: `min(offset, HEAD_BYTES)`.
    pub head_len: u32,
    /// Fingerprint of the first `head_len` bytes of the file (0 when empty).
    pub head_hash: u64,
    /// Length of the tail fingerprint: `min(offset, TAIL_BYTES)`.
    pub tail_len: u32,
    /// Hash of the bytes [offset - tail_len, offset) (0 when empty): detects
    /// rewrites that kept the size.
    pub tail_hash: u64,
}

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

/// Why the tailer started a new generation from byte 0 (or why it continued).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// No checkpoint: the file is read from the start as generation 1.
    New,
    /// The checkpoint matches the file: reading continues at its offset.
    Continue,
    /// Rename-over with a byte-identical prefix: keep the offset, adopt the new
    /// identity, re-emit nothing.
    SameContentNewInode,
    /// The file is shorter than the checkpoint offset: new generation from 0.
    Truncated,
    /// Same file, but head or tail fingerprint mismatch: new generation from 0.
    Rewritten,
    /// A different file (new inode) with different content: new generation from 0.
    Replaced,
}

impl Resume {
    /// True when lines already stored for this path must be treated as a
    /// previous file (the consumer starts over at line 1).
    pub fn is_new_generation(self) -> bool {
        matches!(
            self,
            Resume::Truncated | Resume::Rewritten | Resume::Replaced
        )
    }
}

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
}

impl Batch {
    /// Content of `l` (without '\n', trailing '\r' or leading BOM).
    pub fn line_bytes(&self, l: &Line) -> &[u8] {
        &self.data[l.start..l.end]
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
    #[error("I/O error on {}", .path.display())]
    Io {
        /// The path that was tailed.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

fn io_err(path: &Path, e: io::Error) -> TailError {
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

/// Fingerprint of a byte range; the empty range hashes to 0 so that a default
/// (all-zero) checkpoint prefix is consistent.
fn fingerprint(b: &[u8]) -> u64 {
    if b.is_empty() {
        0
    } else {
        xxh3_64(b)
    }
}

#[cfg(unix)]
fn identity(m: &Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (m.dev(), m.ino())
}

#[cfg(not(unix))]
fn identity(_m: &Metadata) -> (u64, u64) {
    (0, 0)
}

/// Reads up to `len` bytes at `pos`; shorter only at end of file.
fn read_at(file: &mut File, pos: u64, len: usize, counter: &mut u64) -> io::Result<Vec<u8>> {
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

/// Appends `more` to a rolling window and keeps only its last `TAIL_BYTES`.
fn push_window(win: &mut Vec<u8>, more: &[u8]) {
    let cap = TAIL_BYTES as usize;
    if more.len() >= cap {
        win.clear();
        win.extend_from_slice(&more[more.len() - cap..]);
    } else {
        win.extend_from_slice(more);
        if win.len() > cap {
            let drop = win.len() - cap;
            win.drain(..drop);
        }
    }
}

/// Result of checking a file against a stored checkpoint.
struct Validated {
    resume: Resume,
    cp: Checkpoint,
    /// File bytes [0, min(offset, HEAD_BYTES)).
    head: Vec<u8>,
    /// File bytes [offset - min(offset, TAIL_BYTES), offset).
    win: Vec<u8>,
}

fn fresh(dev: u64, inode: u64, generation: i64) -> Checkpoint {
    Checkpoint {
        dev,
        inode,
        generation,
        ..Checkpoint::default()
    }
}

fn validate(
    path: &Path,
    file: &mut File,
    meta: &Metadata,
    prev: Option<&Checkpoint>,
    counter: &mut u64,
) -> Result<Validated, TailError> {
    if !meta.is_file() {
        return Err(TailError::NotAFile {
            path: path.to_path_buf(),
        });
    }
    let (dev, inode) = identity(meta);
    let size = meta.len();
    let p = match prev {
        Some(p) if p.generation >= 1 => p,
        _ => {
            return Ok(Validated {
                resume: Resume::New,
                cp: fresh(dev, inode, 1),
                head: Vec::new(),
                win: Vec::new(),
            })
        }
    };
    let same = dev == p.dev && inode == p.inode;
    let new_gen = |resume| Validated {
        resume,
        cp: fresh(dev, inode, p.generation + 1),
        head: Vec::new(),
        win: Vec::new(),
    };
    if size < p.offset {
        return Ok(new_gen(if same {
            Resume::Truncated
        } else {
            Resume::Replaced
        }));
    }
    let mismatch = if same {
        Resume::Rewritten
    } else {
        Resume::Replaced
    };
    let head_len = u64::from(p.head_len);
    let tail_len = u64::from(p.tail_len);
    if head_len > p.offset.min(HEAD_BYTES) || tail_len > p.offset.min(TAIL_BYTES) {
        tracing::warn!(path = %path.display(), "inconsistent checkpoint; starting over");
        return Ok(new_gen(mismatch));
    }
    let hl = p.offset.min(HEAD_BYTES);
    let wl = p.offset.min(TAIL_BYTES);
    let io = |e| io_err(path, e);
    let head = read_at(file, 0, hl as usize, counter).map_err(io)?;
    let win = if p.offset <= HEAD_BYTES {
        head.get((p.offset - wl) as usize..).unwrap_or(&[]).to_vec()
    } else {
        read_at(file, p.offset - wl, wl as usize, counter).map_err(io)?
    };
    let ok = head.len() as u64 == hl
        && win.len() as u64 == wl
        && fingerprint(&head[..head_len as usize]) == p.head_hash
        && fingerprint(&win[(wl - tail_len) as usize..]) == p.tail_hash;
    if !ok {
        return Ok(new_gen(mismatch));
    }
    let cp = Checkpoint {
        dev,
        inode,
        head_len: hl as u32,
        head_hash: fingerprint(&head),
        tail_len: wl as u32,
        tail_hash: fingerprint(&win),
        ..p.clone()
    };
    Ok(Validated {
        resume: if same {
            Resume::Continue
        } else {
            Resume::SameContentNewInode
        },
        cp,
        head,
        win,
    })
}

/// Accumulates one batch's output.
#[derive(Default)]
struct Out {
    data: Vec<u8>,
    lines: Vec<Line>,
    diags: Vec<TailDiagnostic>,
    /// On-disk bytes of all lines consumed in this batch (blank and too-long too).
    raw: u64,
}

/// Follows one transcript file; see the module docs.
#[derive(Debug)]
pub struct Tailer {
    path: PathBuf,
    cfg: TailerConfig,
    /// Checkpoint as of everything returned so far.
    cp: Checkpoint,
    /// File position up to which bytes have been read (>= cp.offset).
    read_pos: u64,
    /// File bytes [buf_start, read_pos) not yet discarded. When not skipping,
    /// `buf_start + consumed == cp.offset`.
    buf: Vec<u8>,
    buf_start: u64,
    /// Bytes of `buf` already turned into lines (0 between calls).
    consumed: usize,
    /// `buf[consumed..scanned]` is known to hold no '\n' (avoids rescans of a
    /// growing partial line).
    scanned: usize,
    /// Inside an over-long line: bytes are scanned for '\n' and dropped.
    skipping: bool,
    /// File bytes [0, min(read_pos, HEAD_BYTES)) while the head fingerprint is
    /// still shorter than HEAD_BYTES; empty afterwards.
    head: Vec<u8>,
    /// The last min(buf_start, TAIL_BYTES) file bytes before `buf_start`.
    win: Vec<u8>,
    /// cp.offset moved since the tail fingerprint was computed.
    tail_dirty: bool,
    /// New generation not yet reported in a batch.
    pending_resume: Option<Resume>,
    /// The bytes before `read_pos` were just fingerprinted by a validation, so
    /// the next overlap check would be redundant I/O.
    just_validated: bool,
    bytes_read: u64,
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
            read_pos: 0,
            buf: Vec::new(),
            buf_start: 0,
            consumed: 0,
            scanned: 0,
            skipping: false,
            head: Vec::new(),
            win: Vec::new(),
            tail_dirty: false,
            pending_resume: None,
            just_validated: false,
            bytes_read: counter,
        };
        t.apply(v);
        Ok((t, resume))
    }

    /// Resets the read state to a validated checkpoint.
    fn apply(&mut self, v: Validated) {
        if v.resume.is_new_generation() {
            self.pending_resume = Some(v.resume);
        }
        self.read_pos = v.cp.offset;
        self.buf_start = v.cp.offset;
        self.cp = v.cp;
        self.buf = Vec::new();
        self.consumed = 0;
        self.scanned = 0;
        self.skipping = false;
        self.head = if u64::from(self.cp.head_len) < HEAD_BYTES {
            v.head
        } else {
            Vec::new()
        };
        self.win = v.win;
        self.tail_dirty = false;
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
            && meta.len() == self.read_pos
            && self.scanned == self.buf.len()
            && self.pending_resume.is_none();
        if quiet {
            return Ok(None);
        }
        let mut file = File::open(&path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        let mut size = meta.len();
        let mut revalidate =
            identity(&meta) != (self.cp.dev, self.cp.inode) || size < self.read_pos;
        if !revalidate && size > self.read_pos && self.read_pos > 0 && !self.just_validated {
            revalidate = !self.verify_overlap(&mut file).map_err(io)?;
            if revalidate {
                tracing::debug!(path = %path.display(), offset = self.read_pos, "consumed bytes changed");
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
        let mut read_error = None;
        loop {
            if self.process(&mut out, max_bytes.max(1) as u64, max_lines.max(1)) {
                break;
            }
            if self.read_pos >= size {
                break;
            }
            self.compact();
            let want = chunk.min(size - self.read_pos) as usize;
            let old = self.buf.len();
            self.buf.resize(old + want, 0);
            let res = file
                .seek(SeekFrom::Start(self.read_pos))
                .and_then(|_| read_full(&mut file, &mut self.buf[old..]));
            let n = match res {
                Ok(n) => n,
                Err(e) => {
                    self.buf.truncate(old);
                    read_error = Some(e);
                    break;
                }
            };
            self.buf.truncate(old + n);
            if self.read_pos < HEAD_BYTES && u64::from(self.cp.head_len) < HEAD_BYTES {
                let take = n.min((HEAD_BYTES - self.read_pos) as usize);
                self.head.extend_from_slice(&self.buf[old..old + take]);
            }
            self.read_pos += n as u64;
            self.bytes_read += n as u64;
            self.just_validated = false;
            if n == 0 {
                // Shrank while we read; the next call re-validates.
                break;
            }
        }
        drop(file);
        self.compact();
        self.refresh_fingerprints();
        // Give memory back between calls: an idle file must not pin a read chunk, and a
        // tree of thousands of files would otherwise keep one each.
        let cap = self.buf.capacity();
        if self.buf.is_empty() {
            self.buf = Vec::new();
        } else if cap > 2 * self.buf.len() + 64 * 1024 {
            self.buf.shrink_to(self.buf.len() * 2);
        }
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
            data: out.data,
            lines: out.lines,
            diagnostics: out.diags,
            checkpoint: self.cp.clone(),
            start_offset,
        }))
    }

    /// Re-reads the bytes just before `read_pos` and checks they are unchanged.
    fn verify_overlap(&mut self, file: &mut File) -> io::Result<bool> {
        let k = VERIFY_BYTES.min(self.read_pos) as usize;
        let got = read_at(file, self.read_pos - k as u64, k, &mut self.bytes_read)?;
        // Expected: last k bytes of win ++ buf (which ends at read_pos).
        let from_buf = k.min(self.buf.len());
        let from_win = k - from_buf;
        if from_win > self.win.len() || got.len() != k {
            return Ok(false);
        }
        let (g_win, g_buf) = got.split_at(from_win);
        Ok(g_win == &self.win[self.win.len() - from_win..]
            && g_buf == &self.buf[self.buf.len() - from_buf..])
    }

    /// Turns buffered bytes into lines until the buffer holds no complete line
    /// or a limit is reached (returns true then).
    fn process(&mut self, out: &mut Out, max_bytes: u64, max_lines: usize) -> bool {
        loop {
            if out.lines.len() >= max_lines {
                return true;
            }
            let Some(i) = memchr::memchr(b'\n', &self.buf[self.scanned..]) else {
                self.scanned = self.buf.len();
                if self.skipping {
                    self.discard_all();
                } else if self.buf.len() - self.consumed > self.cfg.max_line_bytes {
                    tracing::debug!(path = %self.path.display(), offset = self.cp.offset, "over-long line; skipping");
                    self.skipping = true;
                    self.discard_all();
                }
                return false;
            };
            let nl = self.scanned + i;
            let end_pos = self.buf_start + nl as u64 + 1;
            let line_off = self.cp.offset;
            let disk_len = end_pos - line_off;
            if out.raw > 0 && out.raw + disk_len > max_bytes {
                self.scanned = nl;
                return true;
            }
            let line_no = self.cp.lines + 1;
            if self.skipping || nl - self.consumed > self.cfg.max_line_bytes {
                out.diags.push(TailDiagnostic::TooLong {
                    line_no,
                    offset: line_off,
                    len: disk_len,
                });
            } else {
                let mut c = &self.buf[self.consumed..nl];
                if let Some(rest) = c.strip_suffix(b"\r") {
                    c = rest;
                }
                if line_off == 0 {
                    if let Some(rest) = c.strip_prefix(b"\xEF\xBB\xBF") {
                        c = rest;
                    }
                }
                if !c.is_empty() {
                    let start = out.data.len();
                    out.data.extend_from_slice(c);
                    out.lines.push(Line {
                        line_no,
                        offset: line_off,
                        len: disk_len,
                        start,
                        end: out.data.len(),
                    });
                }
            }
            self.skipping = false;
            self.cp.offset = end_pos;
            self.cp.lines += 1;
            self.tail_dirty = true;
            out.raw += disk_len;
            self.consumed = nl + 1;
            self.scanned = nl + 1;
        }
    }

    /// Drops the whole buffer (entering or continuing a skip), keeping the
    /// tail window and fingerprint consistent.
    fn discard_all(&mut self) {
        self.refresh_tail();
        push_window(&mut self.win, &self.buf);
        self.buf_start += self.buf.len() as u64;
        self.buf.clear();
        self.consumed = 0;
        self.scanned = 0;
    }

    /// Moves consumed bytes out of the buffer into the tail window.
    fn compact(&mut self) {
        if self.consumed == 0 {
            return;
        }
        push_window(&mut self.win, &self.buf[..self.consumed]);
        self.buf.drain(..self.consumed);
        self.buf_start += self.consumed as u64;
        self.scanned -= self.consumed;
        self.consumed = 0;
    }

    /// Recomputes the tail fingerprint for cp.offset; only valid while
    /// `buf_start + consumed == cp.offset`, which holds whenever it is dirty.
    fn refresh_tail(&mut self) {
        if !self.tail_dirty {
            return;
        }
        self.tail_dirty = false;
        let want = self.cp.offset.min(TAIL_BYTES) as usize;
        let done = &self.buf[..self.consumed];
        let mut tail = Vec::with_capacity(want);
        if done.len() < want {
            let from_win = (want - done.len()).min(self.win.len());
            tail.extend_from_slice(&self.win[self.win.len() - from_win..]);
            tail.extend_from_slice(done);
        } else {
            tail.extend_from_slice(&done[done.len() - want..]);
        }
        debug_assert_eq!(tail.len(), want);
        self.cp.tail_len = tail.len() as u32;
        self.cp.tail_hash = fingerprint(&tail);
    }

    /// Refreshes both fingerprints; extends the head one until HEAD_BYTES.
    fn refresh_fingerprints(&mut self) {
        self.refresh_tail();
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
        self.buf.len()
    }

    /// Total bytes this tailer has read from disk (validation included), for
    /// metrics and to prove partial lines are not re-read.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }
}

#[cfg(test)]
// Tests fail loudly by design; unwrap is the clearest way to say "must not fail".
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::fs::OpenOptions;
    use std::io::Write;

    /// One observable event, comparable across runs.
    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Ev {
        Line {
            generation: i64,
            line_no: u64,
            offset: u64,
            len: u64,
            content: Vec<u8>,
        },
        TooLong {
            generation: i64,
            line_no: u64,
            offset: u64,
            len: u64,
        },
    }

    fn cfg(max_line: usize, chunk: usize) -> TailerConfig {
        TailerConfig {
            max_line_bytes: max_line,
            read_chunk: chunk,
        }
    }

    fn append(p: &Path, b: &[u8]) {
        let mut f = OpenOptions::new()
            .append(true)
            .create(true)
            .open(p)
            .unwrap();
        f.write_all(b).unwrap();
    }

    fn write(p: &Path, b: &[u8]) {
        std::fs::write(p, b).unwrap();
    }

    /// Writes `b` to a sibling temp file and renames it over `p` (new inode).
    fn rename_over(p: &Path, b: &[u8]) {
        let tmp = p.with_extension("tmp");
        std::fs::write(&tmp, b).unwrap();
        std::fs::rename(&tmp, p).unwrap();
    }

    fn batch_events(b: &Batch, out: &mut Vec<Ev>) {
        // Lines and diagnostics are each in file order; merge by offset.
        let mut evs: Vec<Ev> = b
            .lines
            .iter()
            .map(|l| Ev::Line {
                generation: b.generation,
                line_no: l.line_no,
                offset: l.offset,
                len: l.len,
                content: b.line_bytes(l).to_vec(),
            })
            .collect();
        for d in &b.diagnostics {
            let TailDiagnostic::TooLong {
                line_no,
                offset,
                len,
            } = *d;
            evs.push(Ev::TooLong {
                generation: b.generation,
                line_no,
                offset,
                len,
            });
        }
        evs.sort_by_key(|e| match e {
            Ev::Line { offset, .. } | Ev::TooLong { offset, .. } => *offset,
        });
        out.extend(evs);
    }

    /// Reads until caught up; returns events and the resumes seen.
    fn drain_with(t: &mut Tailer, max_bytes: usize, max_lines: usize) -> (Vec<Ev>, Vec<Resume>) {
        let mut evs = Vec::new();
        let mut resumes = Vec::new();
        let mut guard = 0;
        while let Some(b) = t.read_batch(max_bytes, max_lines).unwrap() {
            assert_eq!(b.generation, b.checkpoint.generation);
            assert!(b.lines.len() <= max_lines.max(1));
            if let Some(r) = b.resume {
                resumes.push(r);
                assert_eq!(b.start_offset, 0);
            }
            assert_eq!(&b.checkpoint, t.checkpoint());
            batch_events(&b, &mut evs);
            guard += 1;
            assert!(guard < 1_000_000);
        }
        (evs, resumes)
    }

    fn drain(t: &mut Tailer) -> Vec<Ev> {
        drain_with(t, usize::MAX, usize::MAX).0
    }

    /// Reference splitter: what reading `content` whole must produce.
    fn reference(content: &[u8], max_line: usize, generation: i64) -> Vec<Ev> {
        let mut evs = Vec::new();
        let mut off = 0usize;
        let mut line_no = 0u64;
        while let Some(i) = content[off..].iter().position(|&b| b == b'\n') {
            line_no += 1;
            let raw = &content[off..off + i];
            if raw.len() > max_line {
                evs.push(Ev::TooLong {
                    generation,
                    line_no,
                    offset: off as u64,
                    len: i as u64 + 1,
                });
            } else {
                let mut c = raw.strip_suffix(b"\r").unwrap_or(raw);
                if off == 0 {
                    c = c.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(c);
                }
                if !c.is_empty() {
                    evs.push(Ev::Line {
                        generation,
                        line_no,
                        offset: off as u64,
                        len: i as u64 + 1,
                        content: c.to_vec(),
                    });
                }
            }
            off += i + 1;
        }
        evs
    }

    fn committed_end(content: &[u8]) -> usize {
        content
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1)
    }

    /// Checkpoint invariants against the file content it describes.
    fn check_cp(cp: &Checkpoint, content: &[u8]) {
        let off = cp.offset as usize;
        assert!(off <= content.len());
        assert!(
            off == 0 || content[off - 1] == b'\n',
            "offset not after '\\n'"
        );
        let nl = content[..off].iter().filter(|&&b| b == b'\n').count() as u64;
        assert_eq!(cp.lines, nl);
        let hl = off.min(HEAD_BYTES as usize);
        assert_eq!(cp.head_len as usize, hl);
        assert_eq!(cp.head_hash, fingerprint(&content[..hl]));
        let tl = off.min(TAIL_BYTES as usize);
        assert_eq!(cp.tail_len as usize, tl);
        assert_eq!(cp.tail_hash, fingerprint(&content[off - tl..off]));
    }

    fn line(ev: &Ev) -> (u64, u64, &[u8]) {
        match ev {
            Ev::Line {
                line_no,
                offset,
                content,
                ..
            } => (*line_no, *offset, content),
            Ev::TooLong { .. } => panic!("not a line: {ev:?}"),
        }
    }

    fn setup() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        (dir, p)
    }

    #[test]
    fn growth_returns_each_line_once_in_order() {
        let (_d, p) = setup();
        write(&p, b"{\"a\":1}\n{\"b\":2}\n");
        let (mut t, r) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
        assert_eq!(r, Resume::New);
        assert_eq!(t.checkpoint().generation, 1);
        let evs = drain(&mut t);
        assert_eq!(evs.len(), 2);
        assert_eq!(line(&evs[0]), (1, 0, &b"{\"a\":1}"[..]));
        assert_eq!(line(&evs[1]), (2, 8, &b"{\"b\":2}"[..]));
        assert!(t.read_batch(usize::MAX, usize::MAX).unwrap().is_none());
        append(&p, b"{\"c\":3}\n");
        let b = t.read_batch(usize::MAX, usize::MAX).unwrap().unwrap();
        assert_eq!(b.start_offset, 16);
        assert_eq!(b.resume, None);
        assert_eq!(b.lines.len(), 1);
        assert_eq!(b.lines[0].line_no, 3);
        assert_eq!(b.lines[0].offset, 16);
        assert_eq!(b.lines[0].len, 8);
        assert_eq!(b.line_bytes(&b.lines[0]), b"{\"c\":3}");
        check_cp(&b.checkpoint, &std::fs::read(&p).unwrap());
    }

    #[test]
    fn partial_line_is_buffered_not_reread() {
        let (_d, p) = setup();
        write(&p, b"first\n");
        let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
        assert_eq!(drain(&mut t).len(), 1);
        let n = 1000u64;
        for i in 0..n {
            append(&p, &[b'a' + (i % 26) as u8]);
            assert!(t.read_batch(usize::MAX, usize::MAX).unwrap().is_none());
            assert_eq!(t.buffered_bytes() as u64, i + 1);
            assert_eq!(t.checkpoint().offset, 6);
        }
        append(&p, b"\n");
        let evs = drain(&mut t);
        assert_eq!(evs.len(), 1);
        let (no, off, c) = line(&evs[0]);
        assert_eq!((no, off, c.len() as u64), (2, 6, n));
        assert_eq!(t.buffered_bytes(), 0);
        // Each call reads its new byte plus a fixed overlap check: O(n), not O(n^2).
        let bound = 6 + (n + 1) * (1 + VERIFY_BYTES) + 64;
        assert!(t.bytes_read() <= bound, "read {} > {bound}", t.bytes_read());
        check_cp(t.checkpoint(), &std::fs::read(&p).unwrap());
    }

    #[test]
    fn reopen_rereads_only_the_partial_line() {
        let (_d, p) = setup();
        let big = vec![b'x'; 5000];
        let mut content = big;
        content.push(b'\n');
        content.extend_from_slice(b"partial");
        write(&p, &content);
        let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
        assert_eq!(drain(&mut t).len(), 1);
        assert_eq!(t.buffered_bytes(), 7);
        let cp = t.checkpoint().clone();
        drop(t);
        let (mut t, r) = Tailer::open(&p, Some(cp), TailerConfig::default()).unwrap();
        assert_eq!(r, Resume::Continue);
        let validation = t.bytes_read();
        assert!(validation <= HEAD_BYTES + TAIL_BYTES);
        assert!(drain(&mut t).is_empty());
        assert_eq!(t.bytes_read() - validation, 7);
        append(&p, b" done\n");
        let evs = drain(&mut t);
        assert_eq!(line(&evs[0]), (2, 5001, &b"partial done"[..]));
    }

    #[test]
    fn blank_lines_count_but_are_not_returned() {
        let (_d, p) = setup();
        write(&p, b"\n\r\na\n\n\nb\n\n");
        let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
        let evs = drain(&mut t);
        assert_eq!(evs.len(), 2);
        assert_eq!(line(&evs[0]), (3, 3, &b"a"[..]));
        assert_eq!(line(&evs[1]), (6, 7, &b"b"[..]));
        assert_eq!(t.checkpoint().offset, 10);
        assert_eq!(t.checkpoint().lines, 7);
        // Only blank lines: still a batch, so the checkpoint can advance.
        append(&p, b"\n\n");
        let b = t.read_batch(100, 100).unwrap().unwrap();
        assert!(b.lines.is_empty());
        assert_eq!(b.checkpoint.offset, 12);
        assert_eq!(b.checkpoint.lines, 9);
        check_cp(&b.checkpoint, &std::fs::read(&p).unwrap());
    }

    #[test]
    fn crlf_is_stripped() {
        let (_d, p) = setup();
        write(&p, b"one\r\ntwo\r\r\n");
        let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
        let evs = drain(&mut t);
        assert_eq!(line(&evs[0]), (1, 0, &b"one"[..]));
        assert_eq!(line(&evs[1]), (2, 5, &b"two\r"[..]));
        match &evs[0] {
            Ev::Line { len, .. } => assert_eq!(*len, 5),
            Ev::TooLong { .. } => unreachable!(),
        }
    }

    #[test]
    fn bom_is_stripped_only_at_file_start() {
        let (_d, p) = setup();
        write(&p, b"\xEF\xBB\xBF{}\r\n\xEF\xBB\xBF{}\n");
        let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
        let evs = drain(&mut t);
        assert_eq!(line(&evs[0]), (1, 0, &b"{}"[..]));
        assert_eq!(line(&evs[1]), (2, 7, &b"\xEF\xBB\xBF{}"[..]));
    }

    #[test]
    fn over_long_line_is_skipped_without_buffering() {
        let (_d, p) = setup();
        let c = cfg(64, 16);
        write(&p, b"ok1\n");
        let (mut t, _) = Tailer::open(&p, None, c).unwrap();
        assert_eq!(drain(&mut t).len(), 1);
        let long = vec![b'L'; 1000];
        for piece in long.chunks(37) {
            append(&p, piece);
            assert!(t.read_batch(usize::MAX, usize::MAX).unwrap().is_none());
            assert!(
                t.buffered_bytes() <= 64 + 16,
                "buffered {}",
                t.buffered_bytes()
            );
        }
        append(&p, b"\nok2\n");
        let evs = drain(&mut t);
        assert_eq!(
            evs[0],
            Ev::TooLong {
                generation: 1,
                line_no: 2,
                offset: 4,
                len: 1001
            }
        );
        assert_eq!(line(&evs[1]), (3, 1005, &b"ok2"[..]));
        check_cp(t.checkpoint(), &std::fs::read(&p).unwrap());
        // Exactly max_line_bytes is fine; one more is too long.
        let mut exact = vec![b'e'; 64];
        exact.push(b'\n');
        exact.extend(vec![b'f'; 65]);
        exact.push(b'\n');
        append(&p, &exact);
        let evs = drain(&mut t);
        assert_eq!(line(&evs[0]).2.len(), 64);
        assert!(matches!(
            evs[1],
            Ev::TooLong {
                line_no: 5,
                len: 66,
                ..
            }
        ));
    }

    #[test]
    fn restart_mid_skip_rescans_from_committed_offset() {
        let (_d, p) = setup();
        let c = cfg(64, 16);
        write(&p, b"a\n");
        append(&p, &[b'L'; 200]);
        let (mut t, _) = Tailer::open(&p, None, c).unwrap();
        assert_eq!(drain(&mut t).len(), 1);
        let cp = t.checkpoint().clone();
        assert_eq!(cp.offset, 2);
        drop(t);
        append(&p, b"\nb\n");
        let (mut t, r) = Tailer::open(&p, Some(cp), c).unwrap();
        assert_eq!(r, Resume::Continue);
        let evs = drain(&mut t);
        assert!(matches!(
            evs[0],
            Ev::TooLong {
                line_no: 2,
                offset: 2,
                len: 201,
                ..
            }
        ));
        assert_eq!(line(&evs[1]), (3, 203, &b"b"[..]));
    }

    #[test]
    fn truncation_starts_new_generation() {
        let (_d, p) = setup();
        write(&p, b"aaa\nbbb\n");
        let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
        assert_eq!(drain(&mut t).len(), 2);
        write(&p, b"c\n");
        let b = t.read_batch(usize::MAX, usize::MAX).unwrap().unwrap();
        assert_eq!(b.resume, Some(Resume::Truncated));
        assert_eq!(b.generation, 2);
        assert_eq!(b.start_offset, 0);
        assert_eq!(b.lines.len(), 1);
        assert_eq!((b.lines[0].line_no, b.lines[0].offset), (1, 0));
        assert_eq!(b.line_bytes(&b.lines[0]), b"c");
        check_cp(&b.checkpoint, b"c\n");
        // Emptied with nothing new yet: the reset is still reported.
        write(&p, b"");
        let b = t.read_batch(usize::MAX, usize::MAX).unwrap().unwrap();
        assert_eq!(b.resume, Some(Resume::Truncated));
        assert_eq!(b.generation, 3);
        assert!(b.lines.is_empty());
        assert_eq!(b.checkpoint.offset, 0);
        assert!(t.read_batch(usize::MAX, usize::MAX).unwrap().is_none());
    }

    #[test]
    fn truncation_mid_skip_resets_skip_state() {
        let (_d, p) = setup();
        let c = cfg(64, 16);
        write(&p, b"a\n");
        append(&p, &[b'L'; 200]);
        let (mut t, _) = Tailer::open(&p, None, c).unwrap();
        assert_eq!(drain(&mut t).len(), 1);
        // Size 2 is not below the committed offset 2, but the head differs.
        write(&p, b"b\n");
        let (evs, resumes) = drain_with(&mut t, usize::MAX, usize::MAX);
        assert_eq!(resumes, vec![Resume::Rewritten]);
        assert_eq!(evs.len(), 1);
        assert_eq!(line(&evs[0]), (1, 0, &b"b"[..]));
    }

    #[test]
    fn truncation_while_stopped() {
        let (_d, p) = setup();
        write(&p, b"aaa\nbbb\n");
        let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
        drain(&mut t);
        let cp = t.checkpoint().clone();
        drop(t);
        write(&p, b"x\n");
        let (mut t, r) = Tailer::open(&p, Some(cp), TailerConfig::default()).unwrap();
        assert_eq!(r, Resume::Truncated);
        assert_eq!(t.checkpoint().generation, 2);
        let (evs, resumes) = drain_with(&mut t, usize::MAX, usize::MAX);
        assert_eq!(resumes, vec![Resume::Truncated]);
        assert_eq!(line(&evs[0]), (1, 0, &b"x"[..]));
    }

    #[test]
    fn same_size_rewrite_is_detected() {
        let (_d, p) = setup();
        write(&p, b"aaa\nbbb\n");
        let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
        drain(&mut t);
        let cp = t.checkpoint().clone();
        drop(t);
        // Same size, same head byte, different tail.
        write(&p, b"aaa\nbXb\n");
        let (mut t, r) = Tailer::open(&p, Some(cp), TailerConfig::default()).unwrap();
        assert_eq!(r, Resume::Rewritten);
        let evs = drain(&mut t);
        assert_eq!(evs.len(), 2);
        assert_eq!(line(&evs[1]), (2, 4, &b"bXb"[..]));
        assert!(matches!(evs[0], Ev::Line { generation: 2, .. }));
    }

    #[test]
    fn larger_rewrite_while_running_is_detected() {
        let (_d, p) = setup();
        write(&p, b"aaa\nbbb\n");
        let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
        drain(&mut t);
        write(&p, b"zzz\nyyy\nxxx\n");
        let (evs, resumes) = drain_with(&mut t, usize::MAX, usize::MAX);
        assert_eq!(resumes, vec![Resume::Rewritten]);
        assert_eq!(evs.len(), 3);
        assert_eq!(line(&evs[0]), (1, 0, &b"zzz"[..]));
    }

    #[test]
    fn head_rewrite_detected_on_open() {
        let (_d, p) = setup();
        let mut content = b"head-one\n".to_vec();
        content.extend(std::iter::repeat_n(b"0123456789\n", 200).flatten());
        write(&p, &content);
        let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
        drain(&mut t);
        let cp = t.checkpoint().clone();
        drop(t);
        content[0] = b'H';
        write(&p, &content);
        let (_t, r) = Tailer::open(&p, Some(cp), TailerConfig::default()).unwrap();
        assert_eq!(r, Resume::Rewritten);
    }

    #[test]
    fn rename_over_with_identical_content_keeps_offset() {
        let (_d, p) = setup();
        write(&p, b"aaa\nbbb\npart");
        let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
        assert_eq!(drain(&mut t).len(), 2);
        let old_inode = t.checkpoint().inode;
        rename_over(&p, b"aaa\nbbb\npartial\nccc\n");
        let (evs, resumes) = drain_with(&mut t, usize::MAX, usize::MAX);
        assert!(resumes.is_empty());
        assert_eq!(evs.len(), 2);
        assert_eq!(line(&evs[0]), (3, 8, &b"partial"[..]));
        assert_eq!(line(&evs[1]), (4, 16, &b"ccc"[..]));
        assert_eq!(t.checkpoint().generation, 1);
        #[cfg(unix)]
        assert_ne!(t.checkpoint().inode, old_inode);
        let _ = old_inode;
        // And while stopped.
        let cp = t.checkpoint().clone();
        drop(t);
        let content = std::fs::read(&p).unwrap();
        rename_over(&p, &content);
        let (mut t, r) = Tailer::open(&p, Some(cp), TailerConfig::default()).unwrap();
        #[cfg(unix)]
        assert_eq!(r, Resume::SameContentNewInode);
        let _ = r;
        assert!(drain(&mut t).is_empty());
        check_cp(t.checkpoint(), &content);
    }

    #[test]
    fn rename_over_with_different_content_replaces() {
        let (_d, p) = setup();
        write(&p, b"aaa\nbbb\n");
        let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
        drain(&mut t);
        rename_over(&p, b"other\nfile\nlonger\n");
        let (evs, resumes) = drain_with(&mut t, usize::MAX, usize::MAX);
        #[cfg(unix)]
        assert_eq!(resumes, vec![Resume::Replaced]);
        let _ = resumes;
        assert_eq!(evs.len(), 3);
        assert_eq!(line(&evs[0]), (1, 0, &b"other"[..]));
        assert_eq!(t.checkpoint().generation, 2);
        // While stopped.
        let cp = t.checkpoint().clone();
        drop(t);
        rename_over(&p, b"third\n");
        let (mut t, r) = Tailer::open(&p, Some(cp), TailerConfig::default()).unwrap();
        assert_eq!(r, Resume::Replaced);
        assert_eq!(line(&drain(&mut t)[0]), (1, 0, &b"third"[..]));
    }

    #[test]
    fn byte_identical_rewrite_in_place_emits_nothing() {
        let (_d, p) = setup();
        let content = b"aaa\nbbb\n";
        write(&p, content);
        let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
        drain(&mut t);
        write(&p, content);
        assert!(t.read_batch(usize::MAX, usize::MAX).unwrap().is_none());
        let cp = t.checkpoint().clone();
        drop(t);
        write(&p, content);
        let (mut t, r) = Tailer::open(&p, Some(cp), TailerConfig::default()).unwrap();
        assert_eq!(r, Resume::Continue);
        assert!(t.read_batch(usize::MAX, usize::MAX).unwrap().is_none());
    }

    #[test]
    fn deleted_file_is_gone() {
        let (_d, p) = setup();
        write(&p, b"a\n");
        let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
        std::fs::remove_file(&p).unwrap();
        assert!(matches!(t.read_batch(10, 10), Err(TailError::Gone { .. })));
        assert!(matches!(
            Tailer::open(&p, None, TailerConfig::default()),
            Err(TailError::Gone { .. })
        ));
        let dir = p.parent().unwrap();
        assert!(matches!(
            Tailer::open(dir, None, TailerConfig::default()),
            Err(TailError::NotAFile { .. })
        ));
    }

    #[test]
    fn batch_limits() {
        let (_d, p) = setup();
        let mut content = Vec::new();
        for i in 0..100 {
            content.extend_from_slice(format!("line-{i:03}\n").as_bytes());
        }
        write(&p, &content);
        let (mut t, _) = Tailer::open(&p, None, cfg(1024, 64)).unwrap();
        let b = t.read_batch(usize::MAX, 7).unwrap().unwrap();
        assert_eq!(b.lines.len(), 7);
        assert_eq!(b.checkpoint.offset, 7 * 9);
        check_cp(&b.checkpoint, &content);
        // 30 bytes of line data = 3 lines of 9 bytes.
        let b = t.read_batch(30, usize::MAX).unwrap().unwrap();
        assert_eq!(b.lines.len(), 3);
        assert_eq!(b.start_offset, 63);
        assert_eq!(b.lines[0].line_no, 8);
        // A single line larger than max_bytes still comes out.
        let b = t.read_batch(1, usize::MAX).unwrap().unwrap();
        assert_eq!(b.lines.len(), 1);
        let (evs, _) = drain_with(&mut t, 50, 4);
        assert_eq!(evs.len(), 100 - 11);
        assert_eq!(reference(&content, 1024, 1)[11..], evs[..]);
        check_cp(t.checkpoint(), &content);
    }

    #[test]
    fn head_fingerprint_extends_as_file_grows() {
        let (_d, p) = setup();
        let mut content = vec![b'h'; 99];
        content.push(b'\n');
        write(&p, &content);
        let (mut t, _) = Tailer::open(&p, None, cfg(4096, 128)).unwrap();
        drain(&mut t);
        assert_eq!(t.checkpoint().head_len, 100);
        let cp100 = t.checkpoint().clone();
        let more: Vec<u8> = std::iter::repeat_n(b"x".repeat(49), 40)
            .flat_map(|mut v| {
                v.push(b'\n');
                v
            })
            .collect();
        append(&p, &more);
        content.extend_from_slice(&more);
        drain(&mut t);
        assert_eq!(t.checkpoint().head_len, 1024);
        check_cp(t.checkpoint(), &content);
        // An old short-head checkpoint still validates and gets extended.
        drop(t);
        let (t, r) = Tailer::open(&p, Some(cp100), cfg(4096, 128)).unwrap();
        assert_eq!(r, Resume::Continue);
        assert_eq!(t.checkpoint().head_len, 100);
        check_cp(t.checkpoint(), &content);
    }

    #[test]
    fn default_checkpoint_means_new() {
        let (_d, p) = setup();
        write(&p, b"a\n");
        let (_t, r) =
            Tailer::open(&p, Some(Checkpoint::default()), TailerConfig::default()).unwrap();
        assert_eq!(r, Resume::New);
    }

    // ---- property tests -------------------------------------------------

    const PMAX: usize = 24;

    fn arb_line() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            4 => proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'{'), Just(b'}'), Just(b'\r'), Just(b' ')], 0..12),
            1 => Just(Vec::new()),
            1 => Just(b"\r".to_vec()),
            1 => proptest::collection::vec(Just(b'L'), PMAX - 2..PMAX * 3),
        ]
        .prop_map(|mut v| {
            v.push(b'\n');
            v
        })
    }

    fn arb_content() -> impl Strategy<Value = Vec<u8>> {
        (
            any::<bool>(),
            proptest::collection::vec(arb_line(), 0..25),
            proptest::collection::vec(b'p'..=b'q', 0..30),
        )
            .prop_map(|(bom, lines, tail)| {
                let mut c = if bom {
                    b"\xEF\xBB\xBF".to_vec()
                } else {
                    Vec::new()
                };
                c.extend(lines.into_iter().flatten());
                c.extend(tail);
                c
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// Random appends + restarts yield exactly the events of a one-shot read.
        #[test]
        fn incremental_equals_whole(
            content in arb_content(),
            cuts in proptest::collection::vec((any::<prop::sample::Index>(), any::<bool>()), 0..12),
            chunk in 1usize..40,
            max_bytes in 1usize..200,
            max_lines in 1usize..6,
        ) {
            let (_d, p) = setup();
            let c = cfg(PMAX, chunk);
            let mut points: Vec<(usize, bool)> =
                cuts.iter().map(|(i, r)| (i.index(content.len() + 1), *r)).collect();
            points.sort();
            points.push((content.len(), false));
            write(&p, b"");
            let (mut t, _) = Tailer::open(&p, None, c).unwrap();
            let mut evs = Vec::new();
            let mut written = 0;
            for (cut, restart) in points {
                append(&p, &content[written..cut]);
                written = cut;
                let (e, resumes) = drain_with(&mut t, max_bytes, max_lines);
                prop_assert!(resumes.is_empty());
                evs.extend(e);
                check_cp(t.checkpoint(), &content[..committed_end(&content[..written])]);
                prop_assert_eq!(t.checkpoint().offset as usize, committed_end(&content[..written]));
                if restart {
                    let cp = t.checkpoint().clone();
                    drop(t);
                    let (nt, r) = Tailer::open(&p, Some(cp), c).unwrap();
                    prop_assert_eq!(r, Resume::Continue);
                    t = nt;
                }
            }
            prop_assert_eq!(evs, reference(&content, PMAX, 1));
        }
    }

    #[derive(Debug, Clone)]
    enum Action {
        Append(Vec<u8>),
        /// Truncate to this fraction (0..=255 of 255) of the current length.
        Truncate(u8),
        RenameOverWithNewContent(Vec<u8>),
        Restart,
        Read,
    }

    fn arb_bytes() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(
            prop_oneof![4 => b'a'..=b'c', 2 => Just(b'\n'), 1 => Just(b'\r')],
            0..40,
        )
    }

    fn arb_action() -> impl Strategy<Value = Action> {
        prop_oneof![
            6 => arb_bytes().prop_map(Action::Append),
            1 => proptest::collection::vec(Just(b'L'), PMAX / 2..PMAX * 2).prop_map(Action::Append),
            1 => any::<u8>().prop_map(Action::Truncate),
            1 => arb_bytes().prop_map(Action::RenameOverWithNewContent),
            2 => Just(Action::Restart),
            4 => Just(Action::Read),
        ]
    }

    /// In-memory model of what the tailer must emit.
    struct Model {
        content: Vec<u8>,
        generation: i64,
        /// What the tailer has read (after a Read: everything).
        read_pos: usize,
        /// Committed offset: just past the last '\n' the tailer has seen.
        committed: usize,
        emitted: Vec<Ev>,
    }

    impl Model {
        /// The tailer noticed the file changed under what it read.
        fn reset(&mut self) {
            if self.committed > 0 {
                self.generation += 1;
                self.committed = 0;
            }
            self.read_pos = self.committed;
        }

        fn read(&mut self) {
            let end = committed_end(&self.content);
            if end > self.committed {
                let all = reference(&self.content[..end], PMAX, self.generation);
                let start = self.committed as u64;
                self.emitted.extend(all.into_iter().filter(|e| match e {
                    Ev::Line { offset, .. } | Ev::TooLong { offset, .. } => *offset >= start,
                }));
                self.committed = end;
            }
            self.read_pos = self.content.len();
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// Model-based test in the style of vector's file-source tests.
        #[test]
        fn model_based(actions in proptest::collection::vec(arb_action(), 1..40), chunk in 1usize..32) {
            let (_d, p) = setup();
            let c = cfg(PMAX, chunk);
            write(&p, b"");
            let (mut t, _) = Tailer::open(&p, None, c).unwrap();
            let mut m = Model { content: Vec::new(), generation: 1, read_pos: 0, committed: 0, emitted: Vec::new() };
            let mut got = Vec::new();
            for a in actions {
                let mut force_read = false;
                match a {
                    Action::Append(b) => {
                        append(&p, &b);
                        m.content.extend_from_slice(&b);
                    }
                    Action::Truncate(frac) => {
                        let len = m.content.len() * usize::from(frac) / 255;
                        OpenOptions::new().write(true).open(&p).unwrap().set_len(len as u64).unwrap();
                        m.content.truncate(len);
                        if len < m.read_pos {
                            if len < m.committed {
                                m.reset();
                            } else {
                                m.read_pos = m.committed;
                            }
                        }
                        force_read = true;
                    }
                    Action::RenameOverWithNewContent(b) => {
                        // First byte differs from the old first byte, so the head
                        // fingerprint cannot match by chance.
                        let marker = if m.content.first() == Some(&b'M') { b'N' } else { b'M' };
                        let mut new = vec![marker];
                        new.extend_from_slice(&b);
                        rename_over(&p, &new);
                        m.content = new;
                        m.reset();
                        force_read = true;
                    }
                    Action::Restart => {
                        let cp = t.checkpoint().clone();
                        drop(t);
                        let (nt, r) = Tailer::open(&p, Some(cp), c).unwrap();
                        prop_assert_eq!(r, Resume::Continue);
                        t = nt;
                        m.read_pos = m.committed;
                    }
                    Action::Read => force_read = true,
                }
                if force_read {
                    let (e, _) = drain_with(&mut t, 64, 3);
                    got.extend(e);
                    m.read();
                    prop_assert_eq!(&got, &m.emitted);
                    prop_assert_eq!(t.checkpoint().generation, m.generation);
                    check_cp(t.checkpoint(), &m.content);
                    prop_assert_eq!(t.checkpoint().offset as usize, m.committed);
                }
            }
            let (e, _) = drain_with(&mut t, 64, 3);
            got.extend(e);
            m.read();
            prop_assert_eq!(got, m.emitted);
        }
    }
}
