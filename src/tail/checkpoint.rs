//! A file's checkpoint (identity, generation, offset, line count, fingerprints) and the
//! validation that decides, on open, whether reading continues or starts a new generation.

use std::fs::{File, Metadata};
use std::path::Path;

use xxhash_rust::xxh3::xxh3_64;

use super::{io_err, read_at, TailError};

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

/// Fingerprint of a byte range; the empty range hashes to 0 so that a default
/// (all-zero) checkpoint prefix is consistent.
pub(super) fn fingerprint(b: &[u8]) -> u64 {
    if b.is_empty() {
        0
    } else {
        xxh3_64(b)
    }
}

/// `(device, inode)` of a file: what tells the file that was read from another one at the same
/// path.
#[cfg(unix)]
pub fn identity(m: &Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (m.dev(), m.ino())
}

/// `(device, inode)` of a file (none known here).
#[cfg(not(unix))]
pub fn identity(_m: &Metadata) -> (u64, u64) {
    (0, 0)
}

/// Result of checking a file against a stored checkpoint.
pub(super) struct Validated {
    pub resume: Resume,
    pub cp: Checkpoint,
    /// File bytes [0, min(offset, HEAD_BYTES)).
    pub head: Vec<u8>,
    /// File bytes [offset - min(offset, TAIL_BYTES), offset).
    pub win: Vec<u8>,
}

fn fresh(dev: u64, inode: u64, generation: i64) -> Checkpoint {
    Checkpoint {
        dev,
        inode,
        generation,
        ..Checkpoint::default()
    }
}

pub(super) fn validate(
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
