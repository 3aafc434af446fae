//! The archive's pure half (issue 29): the bytes a batch read, as compressed chunks, and chunks
//! back as the file's bytes.
//!
//! Claude Code deletes transcripts after 30 days; the rows Gleaner extracts are not the
//! transcript (tool results, thinking and attachments are not rows), so every byte read is also
//! kept, compressed, in the same transaction as the rows and the checkpoint made from it (the
//! store's `archive_chunks`). What the archive holds is the transcript as Claude Code wrote it:
//! it is the one stored value not derived from redacted text, by design (a restored file must
//! be byte-identical, for `claude --resume`); `[archive] enabled = false` keeps it out.
//!
//! Why zstd level 1 for a batch: it runs on the reading threads, on ingest's critical path
//! (about 1 GB/s a core, against 3 for level 3 here). Every frame carries zstd's content
//! checksum, so a damaged chunk fails to decode instead of restoring wrong bytes.
//!
//! **Each byte compressed once** (issue 48). A file idle past the session timeout when it is
//! read (a backfill's history, a session that ended) will not change again, and packing will
//! take its bytes into a project block (`pack`) soon after: compressing them at level 1 first
//! only to decode them for the block was half of a backfill's CPU. Its batches are therefore
//! *deferred*: the chunk row is written with the batch, as any other, but holds the 64-bit XXH3
//! digest of the bytes instead of a frame (`CODEC_DEFERRED`), and packing reads them again from
//! the file, checks the digest and compresses them once, into the block. A live file's bytes
//! are at risk and are framed as they are read, as before. Until packing has taken it, a
//! deferred chunk is read from the file (`Body::Disk`); if the file no longer holds those bytes
//! (deleted, rewritten) they are lost, which is why the daemon archives deferred chunks right
//! after its catch-up, oldest files first (Claude Code deletes the oldest first), and
//! `gleaner ingest` does before it exits. The digest, like the frames' own checksums, derives
//! from the raw bytes: it is part of the archive, the one stored value that is not redacted.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::extract::rows::{ArchiveChunk, Sidecar};
use crate::tail::Batch;

/// `archive_chunks.codec` of a zstd frame.
pub const CODEC_ZSTD: i64 = 1;

/// `archive_chunks.codec` of bytes read but left in the file for packing to archive (module
/// docs): `data` is [`digest`] of them, little-endian.
pub const CODEC_DEFERRED: i64 = 0;

/// `archive_chunks.codec` of deferred bytes their file no longer held when packing came to read
/// them again (deleted or rewritten first): the row says what is missing, and why.
pub const CODEC_LOST: i64 = 2;

/// The digest a deferred chunk keeps of its bytes: XXH3, 64 bits (about 30 GB/s a core, so
/// deferring costs ingest almost nothing).
pub fn digest(raw: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(raw)
}

/// The bytes `[start, end)` of a deferred chunk (stored `data`, its digest) read again from the
/// file at `path`: an error when the file is gone or shorter (`NotFound`, `UnexpectedEof`) or
/// holds other bytes there now (`InvalidData`).
pub fn read_deferred(path: &Path, start: u64, end: u64, data: &[u8]) -> io::Result<Vec<u8>> {
    let mut raw = Vec::new();
    read_deferred_into(path, start, end, data, &mut raw)?;
    Ok(raw)
}

/// [`read_deferred`] appended to `out` (left as it was on an error): packing reads a block's
/// bytes straight into the block.
pub fn read_deferred_into(
    path: &Path,
    start: u64,
    end: u64,
    data: &[u8],
    out: &mut Vec<u8>,
) -> io::Result<()> {
    let want = stored_digest(data)?;
    let len = usize::try_from(end.saturating_sub(start))
        .map_err(|_| io::Error::other("a deferred chunk larger than memory"))?;
    let mut f = File::open(path)?;
    f.seek(SeekFrom::Start(start))?;
    let at = out.len();
    out.resize(at + len, 0);
    let read = f.read_exact(&mut out[at..]);
    if let Err(e) = read {
        out.truncate(at);
        return Err(e);
    }
    if digest(&out[at..]) != want {
        out.truncate(at);
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} no longer holds the bytes {start}-{end} read from it (not archived yet)",
                path.display()
            ),
        ));
    }
    Ok(())
}

/// The digest a deferred chunk stored.
fn stored_digest(data: &[u8]) -> io::Result<u64> {
    let bytes: [u8; 8] = data.try_into().map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a deferred chunk holds {} bytes, not a digest", data.len()),
        )
    })?;
    Ok(u64::from_le_bytes(bytes))
}

/// The zstd level of a batch's chunk (see the module docs).
pub const LIVE_LEVEL: i32 = 1;

/// Raw bytes per chunk when an over-long line is read back from the file (the tailer skipped it
/// without keeping it): memory stays bounded whatever the line's length.
const PIECE: usize = 4 << 20;

/// `raw` as one zstd frame at `level`, with a content checksum.
///
/// The frame is given back at its size: the compressor's output buffer is sized for the worst
/// case (the input's size), and a batch in flight would otherwise hold that much (measured:
/// +60 MB of peak RSS in a backfill). At [`LIVE_LEVEL`] the thread's context is kept (see
/// [`compress_live`]); other levels (packing's, a few calls per block) get a new one.
pub fn compress(raw: &[u8], level: i32) -> io::Result<Vec<u8>> {
    if level == LIVE_LEVEL {
        return compress_live(raw);
    }
    let mut c = zstd::bulk::Compressor::new(level)?;
    c.include_checksum(true)?;
    let mut out = c.compress(raw)?;
    out.shrink_to_fit();
    Ok(out)
}

/// [`compress`] at [`LIVE_LEVEL`] with this thread's context. Why kept: every batch of every
/// file is compressed on a reading thread, and a new context per chunk (allocating and
/// clearing its tables, then faulting them in) cost a tenth of a backfill's CPU (measured on the
/// 1 GB bench tree, SQLite, back to back: 8.44 -> 7.59 CPU s, 211 -> 240 MB/s). Level -1 was
/// tried too: no faster within the noise, and 17% more archive bytes.
fn compress_live(raw: &[u8]) -> io::Result<Vec<u8>> {
    thread_local! {
        static LIVE: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
            const { std::cell::RefCell::new(None) };
    }
    LIVE.with(|c| {
        let mut c = c.borrow_mut();
        let c = match &mut *c {
            Some(c) => c,
            slot => {
                let mut made = zstd::bulk::Compressor::new(LIVE_LEVEL)?;
                made.include_checksum(true)?;
                slot.insert(made)
            }
        };
        let mut out = c.compress(raw)?;
        out.shrink_to_fit();
        Ok(out)
    })
}

/// The chunks of what `batch` (read from `path`) consumed: the file's bytes from the offset it
/// started at to its checkpoint. The batch holds them all unless the tailer skipped an
/// over-long line (its bytes were dropped as they came, so they are read again from `path`, in
/// pieces of at most 4 MiB); `batch.data` is always the stretch just before the checkpoint.
/// With `defer` (the file is idle: module docs) what the batch holds is a deferred chunk, its
/// digest only; a stretch read again for a skipped line is framed as ever.
pub fn batch_chunks(batch: &Batch, path: &Path, defer: bool) -> io::Result<Vec<ArchiveChunk>> {
    let (start, end) = (batch.start_offset, batch.checkpoint.offset);
    let generation = batch.checkpoint.generation;
    let held = batch.data.len() as u64;
    if end <= start {
        return Ok(Vec::new());
    }
    if held > end - start {
        return Err(io::Error::other(format!(
            "batch of {} holds {held} bytes for the {} between offsets {start} and {end}",
            path.display(),
            end - start
        )));
    }
    let mut out = Vec::new();
    let gap_end = end - held;
    if gap_end > start {
        let mut f = File::open(path)?;
        f.seek(SeekFrom::Start(start))?;
        let mut buf = vec![0u8; PIECE];
        let mut pos = start;
        while pos < gap_end {
            let want = PIECE.min((gap_end - pos) as usize);
            f.read_exact(&mut buf[..want])?;
            out.push(ArchiveChunk {
                generation,
                start: pos,
                end: pos + want as u64,
                data: compress(&buf[..want], LIVE_LEVEL)?,
                ..ArchiveChunk::default()
            });
            pos += want as u64;
        }
    }
    if held > 0 && defer {
        out.push(ArchiveChunk {
            generation,
            start: gap_end,
            end,
            data: digest(&batch.data).to_le_bytes().to_vec(),
            deferred: true,
            ..ArchiveChunk::default()
        });
    } else if held > 0 {
        out.push(ArchiveChunk {
            generation,
            start: gap_end,
            end,
            data: compress(&batch.data, LIVE_LEVEL)?,
            ..ArchiveChunk::default()
        });
    }
    Ok(out)
}

/// The zstd level of packing by default (see [`pack`]; `[archive] pack_level`): 9, not 6, to
/// keep the archive within issue 29's 15 % of the transcript bytes on the corpus (level 6
/// measured 15.4 % there; the study: 9 keeps 0.5 point more for 1.4 times the CPU, still a
/// twentieth of the former packing's).
pub const PACK_LEVEL: i32 = 9;

/// The window of a packed block, as a power of two: its whole length (a block is at most
/// [`BLOCK_BYTES`]), so any session of the block can refer back to any earlier one. Decoders
/// accept up to 2^27 without being told.
pub const PACK_WINDOW_LOG: u32 = 24;

/// Raw bytes per packed block, at most, unless one chunk alone is larger (a block is made of
/// whole chunks, so of whole lines): what packing holds in memory at once, with its copy
/// decoded for the check, and what a reader decodes to read any part of it.
pub const BLOCK_BYTES: u64 = 16 << 20;

/// One packed block: the bytes of one project's finished files, end to end (`raw`), at
/// [`PACK_LEVEL`] with a window of the block's whole length, with a content checksum, checked
/// by decoding it again before it replaces anything.
///
/// Why this (issue 48, `docs/benchmarks.md`, measured by bytes saved per CPU second on the
/// corpus): sessions of one project read the same files and repeat the same prompts and tool
/// output, which one file alone cannot share; a window across many sessions is what buys size.
/// Blocks of up to 16 MiB that span files keep 15.2% of the bytes at level 6 and 14.7% at level
/// 9 for 4.3 and 6.0 CPU s per 520 MB, where the former scheme (each file alone at level 16
/// against a 4 MiB dictionary of its project's first bytes) kept 15.5% for 90 CPU s.
/// Long-distance matching, trained dictionaries and levels above 9 did not pay.
///
/// The check decodes the block as a stream and compares it with `raw` piece by piece: a second
/// copy of the block would be 16 MiB more of peak memory.
pub fn pack(raw: &[u8], level: i32) -> io::Result<Vec<u8>> {
    let mut c = zstd::bulk::Compressor::new(level)?;
    c.include_checksum(true)?;
    c.set_parameter(zstd::stream::raw::CParameter::WindowLog(PACK_WINDOW_LOG))?;
    let data = c.compress(raw)?;
    drop(c);
    let mismatch = || {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "a packed block does not decode to its bytes",
        )
    };
    let mut d = zstd::stream::read::Decoder::new(&data[..])?;
    let mut buf = vec![0u8; 1 << 16];
    let mut at = 0;
    loop {
        let n = d.read(&mut buf)?;
        if n == 0 {
            break;
        }
        if raw.get(at..at + n) != Some(&buf[..n]) {
            return Err(mismatch());
        }
        at += n;
    }
    if at != raw.len() {
        return Err(mismatch());
    }
    Ok(data)
}

/// A dictionary prepared for decoding once. Packing no longer makes dictionaries (issue 48);
/// chunks a store packed against one before are read with it until the packer has taken them
/// into blocks (`run::pack::retire_dicts`).
pub struct Dict {
    raw: std::sync::Arc<[u8]>,
    prepared: zstd::dict::DecoderDictionary<'static>,
}

impl std::fmt::Debug for Dict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Dict({} bytes)", self.raw.len())
    }
}

impl Dict {
    /// Prepare `raw` for decoding.
    pub fn new(raw: std::sync::Arc<[u8]>) -> Dict {
        let prepared = zstd::dict::DecoderDictionary::copy(&raw);
        Dict { raw, prepared }
    }

    /// Its raw bytes.
    pub fn raw(&self) -> &[u8] {
        &self.raw
    }
}

/// The chunk of a last line without its newline (`partial`), from the checkpoint on: archived
/// once its file has gone idle, so a restored file is whole; replaced if the line is completed.
pub fn unfinished_chunk(generation: i64, offset: u64, line: &[u8]) -> io::Result<ArchiveChunk> {
    Ok(ArchiveChunk {
        generation,
        start: offset,
        end: offset + line.len() as u64,
        data: compress(line, LIVE_LEVEL)?,
        packed: false,
        partial: true,
        deferred: false,
    })
}

/// A file beside a transcript (`name` in its folder), archived whole.
pub fn sidecar(name: &str, raw: &[u8]) -> io::Result<Sidecar> {
    Ok(Sidecar {
        name: name.to_string(),
        data: compress(raw, LIVE_LEVEL)?,
    })
}

/// Decode one stored frame (compressed against `dict` when it names one) into `out`; the
/// number of bytes written. A frame whose checksum or length does not match is an error
/// (`InvalidData`).
pub fn decode_into(
    data: &[u8],
    expected: u64,
    dict: Option<&Dict>,
    out: &mut impl Write,
) -> io::Result<u64> {
    let n = match dict {
        None => io::copy(&mut zstd::stream::read::Decoder::new(data)?, out)?,
        Some(d) => io::copy(
            &mut zstd::stream::read::Decoder::with_prepared_dictionary(
                io::BufReader::new(data),
                &d.prepared,
            )?,
            out,
        )?,
    };
    if n != expected {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("archived chunk decodes to {n} bytes, {expected} expected"),
        ));
    }
    Ok(n)
}

/// Decode a stored frame of unrecorded length whole (a sidecar: a few hundred bytes).
pub fn decode_all(data: &[u8]) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    io::copy(&mut zstd::stream::read::Decoder::new(data)?, &mut out)?;
    Ok(out)
}

/// Decode one stored frame whole.
pub fn decode(data: &[u8], expected: u64, dict: Option<&Dict>) -> io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(usize::try_from(expected).unwrap_or(0));
    decode_into(data, expected, dict, &mut out)?;
    Ok(out)
}

/// One stored chunk as the readers take it.
#[derive(Debug, Clone)]
pub struct Encoded {
    /// File offset of its first byte.
    pub start: u64,
    /// File offset past its last byte.
    pub end: u64,
    /// Where its bytes are.
    pub body: Body,
}

/// Where a chunk's bytes are.
#[derive(Debug, Clone)]
pub enum Body {
    /// Its own frame, compressed against `dict` when it names one.
    Frame {
        /// The frame.
        data: Vec<u8>,
        /// The dictionary it was compressed against, if any.
        dict: Option<std::sync::Arc<Dict>>,
    },
    /// A stretch of a packed block, decoded (a block holds several files' bytes).
    Block {
        /// The block's bytes.
        raw: std::sync::Arc<[u8]>,
        /// Where the chunk's bytes start in it.
        at: u64,
    },
    /// A deferred chunk: its bytes are still only in the file at `path`, with this digest.
    Disk {
        /// Where the file is.
        path: std::sync::Arc<Path>,
        /// The chunk's stored data (the digest).
        data: Vec<u8>,
    },
    /// Bytes that cannot be read (their dictionary or block is missing or damaged): why.
    Unreadable(String),
}

impl Encoded {
    /// The chunk's bytes.
    pub fn bytes(&self) -> io::Result<std::borrow::Cow<'_, [u8]>> {
        let len = self.end - self.start;
        match &self.body {
            Body::Frame { data, dict } => decode(data, len, dict.as_deref()).map(Into::into),
            Body::Block { raw, at } => member(raw, *at, len).map(Into::into),
            Body::Disk { path, data } => {
                read_deferred(path, self.start, self.end, data).map(Into::into)
            }
            Body::Unreadable(why) => Err(io::Error::new(io::ErrorKind::InvalidData, why.clone())),
        }
    }
}

/// Bytes `[at, at + len)` of a decoded block; an error when the block is shorter (a member row
/// that does not match its block is damage, never a short read).
pub fn member(raw: &[u8], at: u64, len: u64) -> io::Result<&[u8]> {
    usize::try_from(at)
        .ok()
        .zip(usize::try_from(at.saturating_add(len)).ok())
        .and_then(|(a, b)| raw.get(a..b))
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "a packed block of {} bytes lacks bytes {at} to {}",
                    raw.len(),
                    at.saturating_add(len)
                ),
            )
        })
}

/// A file's bytes read back from its chunks, in order, one chunk decoded at a time (a chunk is
/// at most a batch, or a packed block): the lines of a transcript that is gone are read through
/// it as through the file.
#[derive(Debug)]
pub struct ChunkReader {
    chunks: std::vec::IntoIter<Encoded>,
    cur: io::Cursor<Vec<u8>>,
    pos: u64,
}

impl ChunkReader {
    /// Over chunks in offset order; a gap between them is a read error.
    pub fn new(chunks: Vec<Encoded>) -> ChunkReader {
        ChunkReader {
            chunks: chunks.into_iter(),
            cur: io::Cursor::new(Vec::new()),
            pos: 0,
        }
    }
}

impl Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let n = self.cur.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            let Some(c) = self.chunks.next() else {
                return Ok(0);
            };
            if c.start != self.pos {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("the archive lacks bytes {} to {}", self.pos, c.start),
                ));
            }
            self.cur = io::Cursor::new(c.bytes()?.into_owned());
            self.pos = c.end;
        }
    }
}

#[cfg(test)]
mod tests;
