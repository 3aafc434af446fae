//! Packing the archive: the chunks of finished sessions recompressed as few large blocks at a
//! high level against their project's dictionary (`crate::archive::pack` says why and what it
//! measured). Ingest writes each batch at a fast level on its critical path; this runs after,
//! in the background of the daemon (time-boxed passes on a reading thread at low priority, so
//! live ingest keeps the cores) and to completion in `gleaner pack`.
//!
//! Each block replaces the chunks it covers in one transaction, only once it decodes to their
//! bytes, and only if those chunks are all still there: a crash or a concurrent packer leaves
//! either the old chunks or the new block, never neither.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::archive::{self, PackDict, BLOCK_BYTES, DICT_BYTES, MIN_DICT_BYTES};
use crate::extract::rows::ArchiveChunk;
use crate::store::{PackCandidate, Store, StoreError, StoredChunk};

/// What a packing pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct PackReport {
    /// File generations packed.
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
    /// Dictionaries made (each is stored once per project).
    pub dicts: u64,
    /// Stored size of those dictionaries.
    pub dict_bytes: u64,
    /// Files left for later (their chunks changed meanwhile).
    pub skipped: u64,
    /// Retired dictionaries emptied once their chunks were compressed again without them
    /// (`retire_dicts`).
    pub retired: u64,
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

/// The last project's dictionary, prepared (`None`: the project has none). One at a time: a
/// level-16 context prepared with 4 MiB holds tens of MB (holding every project's took 2 GB on
/// the 1 GB bench tree), and candidates come project by project.
type Dicts = Option<(String, Option<(i64, Arc<PackDict>)>)>;

/// Pack what is waiting, until nothing is or `budget` has run out (`None`: no limit) or
/// `cancel` fires.
pub async fn pack_pending(
    store: &Store,
    budget: Option<Duration>,
    cancel: &CancellationToken,
) -> Result<PackReport, PackError> {
    let started = Instant::now();
    // Dictionaries a prune retired first: until they are gone the archive still holds what
    // was pruned (and a prune interrupted before it finished leaves them here).
    let deadline = budget.map(|b| started + b);
    let retired = match retire_dicts(store, cancel, deadline).await {
        Ok(n) => n,
        Err(e) => {
            // Left retired: tried again by the next pass; packing goes on meanwhile.
            tracing::warn!(error = %e, "retiring archive dictionaries failed");
            0
        }
    };
    let mut report = PackReport {
        retired,
        ..PackReport::default()
    };
    let mut dicts: Dicts = None;
    let mut after_skip = std::collections::HashSet::new();
    loop {
        let candidates = store.archive_pack_candidates(64).await?;
        let fresh: Vec<PackCandidate> = candidates
            .into_iter()
            .filter(|c| !after_skip.contains(&c.file_id))
            .collect();
        if fresh.is_empty() {
            return Ok(report);
        }
        for c in fresh {
            if cancel.is_cancelled() || budget.is_some_and(|b| started.elapsed() > b) {
                return Ok(report);
            }
            if !pack_file(store, &c, &mut dicts, &mut report).await? {
                report.skipped += 1;
                after_skip.insert(c.file_id);
            }
        }
    }
}

/// The project's dictionary: the stored one, else one made of its first archived bytes (none
/// while it has fewer than [`MIN_DICT_BYTES`]).
async fn dict_for(
    store: &Store,
    project: &str,
    dicts: &mut Dicts,
    report: &mut PackReport,
) -> Result<Option<(i64, Arc<PackDict>)>, PackError> {
    if let Some((p, d)) = dicts {
        if p == project {
            return Ok(d.clone());
        }
    }
    // The previous project's goes before this one's is prepared.
    *dicts = None;
    let made = match store.archive_dict_of(project).await? {
        Some(d) => Some((d.id, prepare(d).await?)),
        None => {
            let (raw, sources) = first_bytes(store, project).await?;
            if raw.len() < MIN_DICT_BYTES {
                // Not cached: the project may grow enough by the next pass.
                return Ok(None);
            }
            let frame = archive::dict_frame(&raw)
                .map_err(|source| PackError::Data { file_id: 0, source })?;
            let id = store
                .add_archive_dict(project, raw.len() as i64, &frame)
                .await?;
            // A prune that removed some of those bytes meanwhile retired the dictionaries the
            // project had then, not this one: it is retired here (`store::retire`).
            if !store.dict_sources_present(&sources).await? {
                store.retire_dict(id).await?;
                *dicts = Some((project.to_string(), None));
                return Ok(None);
            }
            report.dicts += 1;
            report.dict_bytes += frame.len() as u64;
            // Another packer may have stored the first one: use whichever is first.
            match store.archive_dict(id).await? {
                Some(d) => Some((d.id, prepare(d).await?)),
                None => None,
            }
        }
    };
    *dicts = Some((project.to_string(), made.clone()));
    Ok(made)
}

/// The level a chunk of a retired dictionary is compressed again at, alone: fast, since packing
/// takes it again against the project's next dictionary.
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
                    let raw = archive::decode(&chunk.data, len, Some(d.dict()))?;
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
async fn prepare(d: crate::store::StoredDict) -> Result<Arc<PackDict>, PackError> {
    off_runtime(0, move || {
        let raw = archive::decode(&d.data, d.raw_len as u64, None)?;
        Ok(Arc::new(PackDict::new(Arc::from(raw))))
    })
    .await
}

/// Up to [`DICT_BYTES`] of the project's archived bytes, its files in id order, and the file
/// generations they came from.
async fn first_bytes(
    store: &Store,
    project: &str,
) -> Result<(Vec<u8>, Vec<(i64, i64)>), PackError> {
    let mut raw = Vec::new();
    let mut sources = Vec::new();
    let mut after = 0;
    'files: loop {
        let files = store.project_archived(project, after, 32).await?;
        let Some(&(last, _)) = files.last() else {
            break;
        };
        after = last;
        for (id, generation) in files {
            let mut from = 0;
            loop {
                let chunks = store.archive_chunks(id, generation, from).await?;
                let Some(l) = chunks.last() else { break };
                from = l.end_off;
                for c in &chunks {
                    if c.dict_id.is_some() {
                        // A chunk already packed against a dictionary: this project has one.
                        continue;
                    }
                    let bytes = decode_chunk(id, c)?;
                    if sources.last() != Some(&(id, generation)) {
                        sources.push((id, generation));
                    }
                    let room = DICT_BYTES - raw.len();
                    raw.extend_from_slice(&bytes[..bytes.len().min(room)]);
                    if raw.len() >= DICT_BYTES {
                        break 'files;
                    }
                }
            }
        }
    }
    Ok((raw, sources))
}

/// A chunk compressed alone.
fn decode_chunk(file_id: i64, c: &StoredChunk) -> Result<Vec<u8>, PackError> {
    archive::decode(&c.data, (c.end_off - c.start_off) as u64, None)
        .map_err(|source| PackError::Data { file_id, source })
}

/// Pack one file generation's unpacked chunks into blocks of at most [`BLOCK_BYTES`]; `false`
/// when its chunks changed meanwhile (left for a later pass).
async fn pack_file(
    store: &Store,
    c: &PackCandidate,
    dicts: &mut Dicts,
    report: &mut PackReport,
) -> Result<bool, PackError> {
    let dict = dict_for(store, &c.project, dicts, report).await?;
    let prepared = dict.as_ref().map(|(_, d)| d.clone());
    let mut from = 0;
    let mut run: Vec<StoredChunk> = Vec::new();
    let mut run_raw: u64 = 0;
    let mut blocks = 0;
    loop {
        let chunks = store
            .archive_unpacked(c.file_id, c.generation, from)
            .await?;
        let done = chunks.is_empty();
        for ch in chunks {
            from = ch.end_off;
            // A block is a contiguous run of whole chunks.
            let contiguous = run.last().is_none_or(|l| l.end_off == ch.start_off);
            if !run.is_empty()
                && (!contiguous || run_raw + (ch.end_off - ch.start_off) as u64 > BLOCK_BYTES)
            {
                let taken = std::mem::take(&mut run);
                let id = dict.as_ref().map(|d| d.0);
                if !pack_run(store, c, &taken, id, prepared.clone(), report).await? {
                    return Ok(false);
                }
                blocks += 1;
                run_raw = 0;
            }
            run_raw += (ch.end_off - ch.start_off) as u64;
            run.push(ch);
        }
        if done {
            break;
        }
    }
    if !run.is_empty() {
        let id = dict.as_ref().map(|d| d.0);
        if !pack_run(store, c, &run, id, prepared, report).await? {
            return Ok(false);
        }
        blocks += 1;
    }
    if blocks > 0 {
        report.files += 1;
    }
    Ok(true)
}

/// Pack one run of chunks as one block, off the runtime; `false` when the swap found them
/// changed.
async fn pack_run(
    store: &Store,
    c: &PackCandidate,
    run: &[StoredChunk],
    dict_id: Option<i64>,
    dict: Option<Arc<PackDict>>,
    report: &mut PackReport,
) -> Result<bool, PackError> {
    let (Some(first), Some(last)) = (run.first(), run.last()) else {
        return Ok(true);
    };
    // A single chunk packed already at this level and dictionary gains nothing: still it is
    // marked packed, so that it is not taken again.
    let file_id = c.file_id;
    let frames: Vec<(Vec<u8>, u64, Option<i64>)> = run
        .iter()
        .map(|ch| {
            (
                ch.data.clone(),
                (ch.end_off - ch.start_off) as u64,
                ch.dict_id,
            )
        })
        .collect();
    let before: u64 = run.iter().map(|ch| ch.data.len() as u64).sum();
    let packed = off_runtime(file_id, move || {
        super::priority::reading_thread();
        let mut raw = Vec::new();
        for (data, len, id) in &frames {
            if id.is_some() {
                return Err(std::io::Error::other(
                    "an unpacked chunk names a dictionary",
                ));
            }
            archive::decode_into(data, *len, None, &mut raw)?;
        }
        archive::pack(&raw, dict.as_deref())
    })
    .await?;
    let block = ArchiveChunk {
        generation: c.generation,
        start: first.start_off as u64,
        end: last.end_off as u64,
        data: packed,
        packed: true,
        partial: false,
    };
    let old: Vec<i64> = run.iter().map(|ch| ch.start_off).collect();
    let after = block.data.len() as u64;
    let raw = block.end - block.start;
    if !store
        .swap_archive_chunks(c.file_id, &old, std::slice::from_ref(&block), dict_id)
        .await?
    {
        return Ok(false);
    }
    report.chunks += run.len() as u64;
    report.blocks += 1;
    report.raw_bytes += raw;
    report.bytes_before += before;
    report.bytes_after += after;
    Ok(true)
}

/// The daemon's packer: a pass of at most a few seconds every `interval` until `cancel`.
pub async fn worker(store: Store, interval: Duration, cancel: CancellationToken) {
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(interval) => {}
        }
        match pack_pending(&store, Some(Duration::from_secs(5)), &cancel).await {
            Ok(r) if r.blocks > 0 => tracing::debug!(
                files = r.files,
                blocks = r.blocks,
                raw_bytes = r.raw_bytes,
                bytes_before = r.bytes_before,
                bytes_after = r.bytes_after,
                "archive packed"
            ),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "archive packing failed; retrying later"),
        }
    }
}
