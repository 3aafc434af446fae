//! Packing the archive (issue 48): the chunks of a project's finished sessions, which ingest
//! wrote at a fast level batch by batch, taken end to end into blocks of up to
//! [`BLOCK_BYTES`] compressed once at a moderate level with a window of the whole block
//! (`crate::archive::pack` says why and what it measured). It runs in the background of the
//! daemon (time-boxed passes on a reading thread at low priority, so live ingest keeps the
//! cores) and to completion in `gleaner pack`.
//!
//! Each block replaces the frames it covers in one transaction, only once it decodes to their
//! bytes, and only if those frames are all still there (`Store::add_block`): a crash or a
//! concurrent packer leaves either the old frames or the new block, never neither.
//!
//! **When a project is packed.** A block is never added to once written, so a project packed
//! after each of its sessions would get one small block per session, and blocks are what buy
//! size. The daemon therefore packs a project once it has settled: none of its sessions is
//! live and the last was active more than [`SETTLE`] ago; or as soon as its finished sessions
//! fill a whole block (then only whole blocks). `gleaner pack` packs every finished session.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::archive::{self, BLOCK_BYTES};
use crate::store::{NewMember, PackFile, PackProject, Store, StoreError, StoredChunk};

/// How long a project stays quiet before the daemon packs what it has (see the module docs).
/// Meanwhile its bytes are kept as ingest wrote them (level 1: about 19% of their size, against
/// about 15% packed).
pub const SETTLE: Duration = Duration::from_secs(3600);

/// Which projects a pass packs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// Every finished session's chunks (`gleaner pack`).
    All,
    /// The daemon's rule (module docs).
    Settled,
    /// Only the projects with bytes not archived yet, whole (`gleaner ingest` before it exits).
    Deferred,
}

/// What a packing pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct PackReport {
    /// File generations with bytes packed.
    pub files: u64,
    /// Chunks replaced.
    pub chunks: u64,
    /// Blocks written.
    pub blocks: u64,
    /// Transcript bytes they hold.
    pub raw_bytes: u64,
    /// Their stored size before.
    pub bytes_before: u64,
    /// Their stored size after.
    pub bytes_after: u64,
    /// Blocks left for later (their chunks changed meanwhile).
    pub skipped: u64,
    /// Retired dictionaries emptied once their chunks were compressed again without them
    /// (`retire_dicts`).
    pub retired: u64,
    /// Blocks a prune retired, deleted once their other chunks had frames of their own
    /// (`retire_blocks`).
    pub blocks_retired: u64,
    /// Of `raw_bytes`, those read again from their files (deferred at ingest).
    pub archived_bytes: u64,
    /// Deferred bytes their files no longer held (deleted or rewritten first): lost.
    pub lost_bytes: u64,
    /// The pass stopped on its deadline with work left.
    #[serde(skip)]
    pub more: bool,
}

/// Why packing stopped.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// The database.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A chunk that does not decode, or a block that does not decode back.
    #[error("archive data of file {file_id}: {source}")]
    Data {
        /// The file.
        file_id: i64,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// When a pass stops: `cancel`, or a deadline.
struct Stop<'a> {
    cancel: &'a CancellationToken,
    deadline: Option<Instant>,
}

impl Stop<'_> {
    fn now(&self) -> bool {
        self.cancel.is_cancelled() || self.deadline.is_some_and(|d| Instant::now() > d)
    }
}

/// Who packs, and how hard.
#[derive(Debug, Clone, Copy)]
pub struct Packer<'a> {
    /// This machine's id: only it reads again the bytes it deferred.
    pub machine: &'a str,
    /// The zstd level of blocks (`[archive] pack_level`).
    pub level: i32,
}

/// Pack what is waiting (`which` projects), until nothing is or `budget` has run out (`None`:
/// no limit) or `cancel` fires.
pub async fn pack_pending(
    store: &Store,
    packer: Packer<'_>,
    which: Which,
    budget: Option<Duration>,
    cancel: &CancellationToken,
) -> Result<PackReport, PackError> {
    let stop = Stop {
        cancel,
        deadline: budget.map(|b| Instant::now() + b),
    };
    let mut report = PackReport::default();
    // What a prune retired first: until it is gone the archive still holds what was pruned
    // (and a prune interrupted before it finished leaves it here). Left for the next pass when
    // it fails; packing goes on meanwhile.
    match retire_blocks(store, cancel, stop.deadline).await {
        Ok(n) => report.blocks_retired = n,
        Err(e) => tracing::warn!(error = %e, "retiring archive blocks failed"),
    }
    match retire_dicts(store, cancel, stop.deadline).await {
        Ok(n) => report.retired = n,
        Err(e) => tracing::warn!(error = %e, "retiring archive dictionaries failed"),
    }
    let settled_before =
        chrono::Utc::now() - chrono::Duration::from_std(SETTLE).unwrap_or(chrono::Duration::zero());
    let settled_before = settled_before.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let mut files = HashSet::new();
    for p in store.pack_projects(packer.machine).await? {
        if stop.now() {
            report.more = true;
            break;
        }
        // Bytes not archived yet are taken at once, and with them the project's other
        // finished sessions (one block rather than two).
        let whole_only = match which {
            Which::All => false,
            _ if p.deferred > 0 => false,
            Which::Deferred => continue,
            Which::Settled if settled(&p, &settled_before) => false,
            Which::Settled if p.pending >= BLOCK_BYTES as i64 => true,
            Which::Settled => continue,
        };
        let at = Place {
            packer,
            project: &p.project,
        };
        pack_project(store, at, whole_only, &stop, &mut report, &mut files).await?;
    }
    report.more |= stop.now();
    report.files = files.len() as u64;
    Ok(report)
}

/// Where a pass packs: the project, this machine and the level.
#[derive(Clone, Copy)]
struct Place<'a> {
    packer: Packer<'a>,
    project: &'a str,
}

/// Whether project `p` has settled: no live session, and none active since `before`.
fn settled(p: &PackProject, before: &str) -> bool {
    !p.live && p.last_activity.as_deref().is_none_or(|at| at < before)
}

/// A block being gathered: its bytes so far, read straight into it (a frame decoded, a deferred
/// chunk read again from its file), and the files' stretches in it.
#[derive(Default)]
struct Gathered {
    raw: Vec<u8>,
    /// What the frames it takes held (their stored size).
    before: u64,
    members: Vec<NewMember>,
}

impl Gathered {
    /// Note the chunk `[start, end)` of file `file_id`'s generation `generation`, its bytes
    /// just appended: it extends the file's last stretch when it follows it.
    fn took(&mut self, file_id: i64, generation: i64, start: i64, end: i64) {
        let block_off = self.raw.len() as i64 - (end - start);
        match self.members.last_mut() {
            Some(m) if m.file_id == file_id && m.generation == generation && m.end == start => {
                m.end = end;
                m.replaces.push(start);
            }
            _ => self.members.push(NewMember {
                file_id,
                generation,
                start,
                end,
                block_off,
                replaces: vec![start],
            }),
        }
    }
}

/// Pack project `project`'s finished files into blocks, in file id order; with `whole_only`,
/// only full blocks (the rest waits for the project to settle).
async fn pack_project(
    store: &Store,
    at: Place<'_>,
    whole_only: bool,
    stop: &Stop<'_>,
    report: &mut PackReport,
    files: &mut HashSet<(i64, i64)>,
) -> Result<(), PackError> {
    let project = at.project;
    let mut block = Gathered::default();
    let mut after = 0;
    loop {
        let page = store
            .pack_files(at.packer.machine, project, after, 64)
            .await?;
        let Some(last) = page.last() else { break };
        after = last.file_id;
        for f in page {
            let (file_id, generation) = (f.file_id, f.generation);
            let path: Arc<std::path::Path> = std::path::Path::new(&f.path).into();
            let mut from = 0;
            loop {
                let chunks = store.archive_unpacked(file_id, generation, from).await?;
                if chunks.is_empty() {
                    break;
                }
                for c in chunks {
                    from = c.end_off;
                    if c.dict_id.is_some() || c.block_id.is_some() {
                        return Err(PackError::Data {
                            file_id,
                            source: std::io::Error::other(
                                "an unpacked chunk names a dictionary or a block",
                            ),
                        });
                    }
                    let deferred = c.codec == archive::CODEC_DEFERRED;
                    if deferred && f.machine != at.packer.machine {
                        // Another machine's to read again: a gap in this file's stretch.
                        continue;
                    }
                    let len = (c.end_off - c.start_off) as u64;
                    let held = block.raw.len() as u64;
                    if held > 0 && held + len > BLOCK_BYTES {
                        let full = std::mem::take(&mut block);
                        seal(store, at, full, report, files).await?;
                        if stop.now() {
                            return Ok(());
                        }
                    }
                    let (start, end) = (c.start_off, c.end_off);
                    if append(store, &mut block, &f, &path, c, report).await? {
                        block.took(file_id, generation, start, end);
                    }
                }
            }
        }
    }
    if !block.raw.is_empty() && !whole_only {
        seal(store, at, block, report, files).await?;
    }
    Ok(())
}

/// Append chunk `c` of file `f` (at `path`) to `block` (off the runtime): its frame decoded, or,
/// deferred, its bytes read again from the file and checked against its digest. `false` when a
/// deferred chunk's bytes cannot be had now: lost (the file no longer holds them: the chunk is
/// marked so, and restore names the gap) or unreadable for now (left for the next pass).
async fn append(
    store: &Store,
    block: &mut Gathered,
    f: &PackFile,
    path: &Arc<std::path::Path>,
    c: StoredChunk,
    report: &mut PackReport,
) -> Result<bool, PackError> {
    let (start, end) = (c.start_off, c.end_off);
    let len = (end - start) as u64;
    let deferred = c.codec == archive::CODEC_DEFERRED;
    let stored = c.data.len() as u64;
    let mut raw = std::mem::take(&mut block.raw);
    if raw.capacity() == 0 {
        // One allocation per block (pages are touched as they fill), not a doubling one.
        raw.reserve_exact(usize::try_from(BLOCK_BYTES.max(len)).unwrap_or(0));
    }
    let p = path.clone();
    let (raw, read) = super::blocking(move || {
        super::priority::reading_thread();
        let read = if deferred {
            archive::read_deferred_into(&p, start as u64, end as u64, &c.data, &mut raw)
        } else {
            archive::decode_into(&c.data, len, None, &mut raw).map(drop)
        };
        (raw, read)
    })
    .await
    .map_err(|e| PackError::Data {
        file_id: f.file_id,
        source: std::io::Error::other(e.to_string()),
    })?;
    block.raw = raw;
    let e = match read {
        Ok(()) if deferred => {
            report.archived_bytes += len;
            return Ok(true);
        }
        Ok(()) => {
            block.before += stored;
            return Ok(true);
        }
        Err(source) if !deferred => {
            return Err(PackError::Data {
                file_id: f.file_id,
                source,
            })
        }
        Err(e) => e,
    };
    use std::io::ErrorKind::{InvalidData, NotFound, UnexpectedEof};
    if matches!(e.kind(), NotFound | UnexpectedEof | InvalidData) {
        tracing::warn!(
            path = %path.display(),
            start,
            end,
            error = %e,
            "bytes read but not archived are gone from the transcript; the archive lacks them"
        );
        if store.lose_deferred(f.file_id, f.generation, start).await? {
            report.lost_bytes += len;
        }
    } else {
        tracing::warn!(path = %path.display(), error = %e, "cannot read a transcript again to archive it; retrying later");
    }
    Ok(false)
}

/// Compress a gathered block (off the runtime, at low priority) and store it in place of its
/// frames; counted as skipped when they changed meanwhile.
async fn seal(
    store: &Store,
    at: Place<'_>,
    block: Gathered,
    report: &mut PackReport,
    files: &mut HashSet<(i64, i64)>,
) -> Result<(), PackError> {
    let Gathered {
        raw,
        before,
        members,
    } = block;
    let first = members.first().map_or(0, |m| m.file_id);
    let raw_len = raw.len() as u64;
    let level = at.packer.level;
    let data = off_runtime(first, move || {
        super::priority::reading_thread();
        archive::pack(&raw, level)
    })
    .await?;
    if !store
        .add_block(at.project, raw_len as i64, &data, &members)
        .await?
    {
        report.skipped += 1;
        return Ok(());
    }
    report.blocks += 1;
    report.chunks += members.iter().map(|m| m.replaces.len() as u64).sum::<u64>();
    report.raw_bytes += raw_len;
    report.bytes_before += before;
    report.bytes_after += data.len() as u64;
    files.extend(members.iter().map(|m| (m.file_id, m.generation)));
    Ok(())
}

/// Give the other chunks of every block a prune retired frames of their own (packing takes
/// them again), then delete the block; the blocks deleted. Stops early on `cancel` or at
/// `deadline`, leaving the rest for the next pass.
pub async fn retire_blocks(
    store: &Store,
    cancel: &CancellationToken,
    deadline: Option<Instant>,
) -> Result<u64, PackError> {
    let mut dropped = 0;
    loop {
        let ids = store.retired_blocks(16).await?;
        if ids.is_empty() {
            return Ok(dropped);
        }
        let mut progress = false;
        for id in ids {
            if cancel.is_cancelled() || deadline.is_some_and(|d| Instant::now() > d) {
                return Ok(dropped);
            }
            let members = store.block_members(id).await?;
            if let (Some(first), Some(block)) = (members.first(), store.archive_block(id).await?) {
                let file_id = first.file_id;
                let parts = members.clone();
                let frames = off_runtime(file_id, move || {
                    super::priority::reading_thread();
                    let raw = archive::decode(&block.data, block.raw_len as u64, None)?;
                    parts
                        .iter()
                        .map(|m| {
                            let len = (m.end_off - m.start_off) as u64;
                            let bytes = archive::member(&raw, m.block_off as u64, len)?;
                            archive::compress(bytes, archive::LIVE_LEVEL)
                        })
                        .collect::<std::io::Result<Vec<_>>>()
                })
                .await?;
                for (m, data) in members.iter().zip(frames) {
                    store.unpack_member(id, m, &data).await?;
                }
            }
            if store.drop_block(id).await? {
                dropped += 1;
                progress = true;
                tracing::info!(block = id, "retired archive block deleted");
            }
        }
        if !progress {
            return Ok(dropped);
        }
    }
}

/// The level a chunk of a retired dictionary is compressed again at, alone: fast, since packing
/// takes it again into a block.
const UNBOUND_LEVEL: i32 = 3;

/// Compress every chunk packed against a retired dictionary again without it, then empty the
/// dictionary (see `store::retire`); the dictionaries emptied. Stops early on `cancel` or at
/// `deadline`, leaving the rest for the next pass.
pub async fn retire_dicts(
    store: &Store,
    cancel: &CancellationToken,
    deadline: Option<Instant>,
) -> Result<u64, PackError> {
    let mut dropped = 0;
    for (id, project) in store.retired_dicts().await? {
        // Emptied meanwhile by another process retiring it (a prune beside the daemon).
        let Some(stored) = store.archive_dict(id).await?.filter(|d| d.raw_len > 0) else {
            continue;
        };
        let dict = prepare(stored).await?;
        let mut after = (0, 0, -1);
        loop {
            if cancel.is_cancelled() || deadline.is_some_and(|d| Instant::now() > d) {
                return Ok(dropped);
            }
            let chunks = store.chunks_of_dict(id, &project, after, 8).await?;
            let Some(last) = chunks.last() else { break };
            after = (last.file_id, last.generation, last.start_off);
            for chunk in chunks {
                let d = dict.clone();
                let file_id = chunk.file_id;
                let (chunk, data) = off_runtime(file_id, move || {
                    super::priority::reading_thread();
                    let len = (chunk.end_off - chunk.start_off) as u64;
                    let raw = archive::decode(&chunk.data, len, Some(&d))?;
                    let data = archive::compress(&raw, UNBOUND_LEVEL)?;
                    Ok((chunk, data))
                })
                .await?;
                store.unbind_chunk(&chunk, id, &data).await?;
            }
        }
        if store.drop_retired_dict(id).await? {
            dropped += 1;
            tracing::info!(dict = id, project = %project, "retired archive dictionary emptied");
        }
    }
    Ok(dropped)
}

/// Run `f` (decoding and compressing) on a reading thread; its failure, or the thread's, as
/// file `file_id`'s.
async fn off_runtime<T: Send + 'static>(
    file_id: i64,
    f: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> Result<T, PackError> {
    super::blocking(f)
        .await
        .map_err(|e| PackError::Data {
            file_id,
            source: std::io::Error::other(e.to_string()),
        })?
        .map_err(|source| PackError::Data { file_id, source })
}

/// A stored dictionary, decoded and prepared off the runtime.
async fn prepare(d: crate::store::StoredDict) -> Result<Arc<archive::Dict>, PackError> {
    off_runtime(0, move || {
        let raw = archive::decode(&d.data, d.raw_len as u64, None)?;
        Ok(Arc::new(archive::Dict::new(Arc::from(raw))))
    })
    .await
}

/// The daemon's packer: a pass of at most a few seconds every `interval` until `cancel`, and
/// the next one a second later while a pass runs out of time with work left (bytes not
/// archived yet are at risk until it has read them again; at low priority, live ingest still
/// comes first). So a backfill's deferred bytes are archived from `interval` after the daemon
/// starts, a minute by default, for as long as packing them takes.
pub async fn worker(
    store: Store,
    machine: String,
    level: i32,
    interval: Duration,
    cancel: CancellationToken,
) {
    let mut wait = interval;
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(wait) => {}
        }
        wait = interval;
        let packer = Packer {
            machine: &machine,
            level,
        };
        match pack_pending(
            &store,
            packer,
            Which::Settled,
            Some(Duration::from_secs(5)),
            &cancel,
        )
        .await
        {
            Ok(r) => {
                if r.more {
                    wait = Duration::from_secs(1).min(interval);
                }
                if r.blocks > 0 {
                    tracing::debug!(
                        files = r.files,
                        blocks = r.blocks,
                        raw_bytes = r.raw_bytes,
                        archived_bytes = r.archived_bytes,
                        lost_bytes = r.lost_bytes,
                        bytes_before = r.bytes_before,
                        bytes_after = r.bytes_after,
                        "archive packed"
                    );
                }
            }
            Err(e) => tracing::warn!(error = %e, "archive packing failed; retrying later"),
        }
    }
}
