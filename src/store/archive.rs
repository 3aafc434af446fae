//! The archive's tables (migration 0019): chunks written with a group's rows, and read back for
//! `restore` and for lines of a transcript that is gone.
//!
//! The store keeps the chunks as it is handed them: compressing and decoding is
//! `crate::archive`'s (a pure stage), writing files back is `run::restore`'s.

use std::borrow::Cow;

use super::read::push_project_filter;
use super::sql::{row_chunks, Conn, Sql};
use super::{Store, StoreError};
use crate::extract::rows::{ArchiveChunk, PreparedBatch, Sidecar};

/// `archive_chunks.codec` of a zstd frame (`crate::archive::CODEC_ZSTD`).
pub(super) const CODEC_ZSTD: i64 = 1;

/// `archive_chunks.codec` of a deferred chunk (`crate::archive::CODEC_DEFERRED`): bytes read but
/// left in the file for packing; `data` is their digest.
pub(super) const CODEC_DEFERRED: i64 = 0;

/// `archive_chunks.codec` of deferred bytes lost (`crate::archive::CODEC_LOST`).
pub(super) const CODEC_LOST: i64 = 2;

/// The chunks and sidecars of the accepted batches of a group, in its transaction. A chunk that
/// starts where a stored one does replaces it: only a partial last line (migration 0019) can be
/// there, since a batch starts at its file's committed checkpoint.
pub(super) async fn write(c: &mut Conn<'_>, accepted: &[&PreparedBatch]) -> Result<(), StoreError> {
    let backend = c.backend();
    let chunks: Vec<(i64, &ArchiveChunk)> = accepted
        .iter()
        .flat_map(|b| b.archive.iter().map(move |a| (b.file_id, a)))
        .collect();
    for part in row_chunks(backend, &chunks) {
        let mut q = Sql::new(
            "INSERT INTO archive_chunks (file_id, generation, start_off, end_off, codec, \
             packed, partial, data) ",
        );
        q.push_rows(backend, part, |row, (id, a)| {
            row.bind(*id)
                .bind(a.generation)
                .bind(a.start as i64)
                .bind(a.end as i64)
                .bind(if a.deferred {
                    CODEC_DEFERRED
                } else {
                    CODEC_ZSTD
                })
                .bind(a.packed)
                .bind(a.partial)
                .bind(Cow::Borrowed(a.data.as_slice()));
        });
        q.push(
            " ON CONFLICT (file_id, generation, start_off) DO UPDATE SET \
             end_off = excluded.end_off, codec = excluded.codec, dict_id = NULL, \
             packed = excluded.packed, partial = excluded.partial, data = excluded.data",
        );
        c.execute(&q).await?;
    }
    let sidecars: Vec<(i64, &Sidecar)> = accepted
        .iter()
        .filter_map(|b| b.sidecar.as_ref().map(|s| (b.file_id, s)))
        .collect();
    for part in row_chunks(backend, &sidecars) {
        let mut q = Sql::new("INSERT INTO archive_sidecars (file_id, name, codec, data) ");
        q.push_rows(backend, part, |row, (id, s)| {
            row.bind(*id)
                .bind(s.name.as_str())
                .bind(CODEC_ZSTD)
                .bind(Cow::Borrowed(s.data.as_slice()));
        });
        q.push(" ON CONFLICT (file_id, name) DO UPDATE SET codec = excluded.codec, data = excluded.data");
        c.execute(&q).await?;
    }
    Ok(())
}

impl Store {
    /// Archive the last line without its newline of a file gone idle (`chunk.partial`), only
    /// while the file's checkpoint is still where the chunk starts.
    pub async fn add_partial_chunk(
        &self,
        file_id: i64,
        chunk: &ArchiveChunk,
    ) -> Result<(), StoreError> {
        let q = Sql::new(
            "INSERT INTO archive_chunks (file_id, generation, start_off, end_off, codec, packed, \
             partial, data) SELECT $1, $2, $3, $4, $5, $6, $7, $8 WHERE EXISTS (SELECT 1 FROM \
             files WHERE id = $1 AND generation = $2 AND byte_offset = $3) \
             ON CONFLICT (file_id, generation, start_off) DO UPDATE SET end_off = excluded.end_off, \
             codec = excluded.codec, dict_id = NULL, packed = excluded.packed, \
             partial = excluded.partial, data = excluded.data",
        )
        .arg(file_id)
        .arg(chunk.generation)
        .arg(chunk.start as i64)
        .arg(chunk.end as i64)
        .arg(CODEC_ZSTD)
        .arg(false)
        .arg(true)
        .arg(Cow::Borrowed(chunk.data.as_slice()));
        self.execute(&q).await?;
        Ok(())
    }
}

/// Which archived transcripts a restore takes.
#[derive(Debug, Clone, Default)]
pub struct ArchiveFilter {
    /// Only these sessions (`None`: every session).
    pub session_ids: Option<Vec<String>>,
    /// Project folder or working directory containing this text.
    pub project: Option<String>,
    /// Sessions active at or after this time (as stored).
    pub since: Option<String>,
}

/// A transcript the archive holds: where it was, and how far it was read.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ArchivedFile {
    /// `files.id`.
    pub id: i64,
    /// The machine that read it.
    pub machine: String,
    /// Its path there.
    pub path: String,
    /// Its project folder.
    pub project: String,
    /// Its session.
    pub session_id: Option<String>,
    /// The generation the checkpoint is in (what the file is now).
    pub generation: i64,
    /// Bytes read: the checkpoint's offset.
    pub byte_offset: i64,
    /// The file's size when it was last seen: more than the archive holds when its last line
    /// had no newline yet (archived only once the file has been idle).
    pub size: i64,
}

/// A stored chunk with its bytes.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct StoredChunk {
    /// File offset of its first byte.
    pub start_off: i64,
    /// File offset past its last byte.
    pub end_off: i64,
    /// How it is encoded.
    pub codec: i64,
    /// A last line without its newline.
    pub partial: bool,
    /// The dictionary it was compressed against (`archive_dicts.id`; only chunks packed before
    /// issue 48 name one).
    pub dict_id: Option<i64>,
    /// The block that holds its bytes (`archive_blocks.id`; then `data` is empty).
    pub block_id: Option<i64>,
    /// Where its bytes start in that block.
    pub block_off: Option<i64>,
    /// The encoded bytes.
    pub data: Vec<u8>,
}

/// A stored dictionary.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct StoredDict {
    /// `archive_dicts.id`.
    pub id: i64,
    /// Raw length.
    pub raw_len: i64,
    /// Its raw bytes, compressed alone.
    pub data: Vec<u8>,
}

/// A chunk packed against a retired dictionary, to be compressed again without it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct BoundChunk {
    /// `archive_chunks.file_id`.
    pub file_id: i64,
    /// The file generation.
    pub generation: i64,
    /// First byte.
    pub start_off: i64,
    /// Byte after the last.
    pub end_off: i64,
    /// The frame, compressed against the dictionary.
    pub data: Vec<u8>,
}

/// Archive totals, for `status` and `doctor`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ArchiveTotals {
    /// Files with at least one chunk.
    pub files: i64,
    /// Chunks stored.
    pub chunks: i64,
    /// Transcript bytes they hold.
    pub raw_bytes: i64,
    /// Their compressed size (sidecars, blocks and dictionaries included).
    pub stored_bytes: i64,
    /// Transcript bytes packing has not reached yet (kept as ingest wrote them).
    #[serde(default)]
    pub waiting_bytes: i64,
    /// Transcript bytes read but not archived yet: deferred chunks, still only in their files
    /// until packing takes them (not counted in `raw_bytes`).
    #[serde(default)]
    pub unarchived_bytes: i64,
    /// When the oldest file holding such bytes was last modified (ms since the epoch; 0: none):
    /// Claude Code deletes a transcript some 30 days after that.
    #[serde(default)]
    pub unarchived_oldest_mtime_ms: i64,
}

/// Chunks fetched per statement while a file is walked (a packed block can be megabytes).
const CHUNKS_PER_FETCH: i64 = 8;

impl Store {
    /// The archived transcripts the filter selects (empty ones included), after `after`
    /// (project folder and file id; start from `("", 0)`), at most `limit`, in project then id
    /// order: a restore walks them page by page (its memory does not grow with the store), and
    /// one project's files together, as packing put them in its blocks, so each block is
    /// decoded once.
    pub async fn archived_files(
        &self,
        f: &ArchiveFilter,
        after: (&str, i64),
        limit: i64,
    ) -> Result<Vec<ArchivedFile>, StoreError> {
        let mut q = Sql::new(
            "SELECT f.id, f.machine, f.path, f.project, f.session_id, f.generation, \
             f.byte_offset, f.size FROM files f WHERE (f.project > ",
        );
        q.push_bind(after.0)
            .push(" OR (f.project = ")
            .push_bind(after.0)
            .push(" AND f.id > ")
            .push_bind(after.1)
            .push("))");
        // An empty transcript has no chunk: it is restored empty (unless its session was
        // pruned: then there is nothing to restore).
        q.push(
            " AND (EXISTS (SELECT 1 FROM archive_chunks a WHERE a.file_id = f.id \
             AND a.generation = f.generation) OR (f.size = 0 AND f.byte_offset = 0 \
             AND NOT EXISTS (SELECT 1 FROM pruned_sessions p WHERE p.session_id = f.session_id)))",
        );
        if let Some(ids) = &f.session_ids {
            q.push(" AND ").push_in("f.session_id", ids);
        }
        if f.project.is_some() || f.since.is_some() {
            q.push(" AND f.session_id IN (SELECT s.session_id FROM sessions s WHERE 1 = 1");
            if let Some(p) = &f.project {
                push_project_filter(&mut q, p, "s.project", "s.cwd");
            }
            if let Some(s) = &f.since {
                q.push(" AND s.last_activity_at >= ").push_bind(s.as_str());
            }
            q.push(")");
        }
        q.push(" ORDER BY f.project, f.id LIMIT ").push_bind(limit);
        self.fetch_all(&q.not_persistent()).await
    }

    /// The chunks of a file's generation from offset `from` on, in offset order, at most
    /// [`CHUNKS_PER_FETCH`] (the caller asks again from the last one's end).
    pub async fn archive_chunks(
        &self,
        file_id: i64,
        generation: i64,
        from: i64,
    ) -> Result<Vec<StoredChunk>, StoreError> {
        let q = Sql::new(
            "SELECT start_off, end_off, codec, partial, dict_id, block_id, block_off, data FROM archive_chunks \
             WHERE file_id = $1 AND generation = $2 AND start_off >= $3 \
             ORDER BY start_off LIMIT $4",
        )
        .arg(file_id)
        .arg(generation)
        .arg(from)
        .arg(CHUNKS_PER_FETCH);
        self.fetch_all(&q).await
    }

    /// The sidecars archived with a file: `(name, codec, data)`.
    pub async fn archive_sidecars(
        &self,
        file_id: i64,
    ) -> Result<Vec<(String, i64, Vec<u8>)>, StoreError> {
        let q = Sql::new(
            "SELECT name, codec, data FROM archive_sidecars WHERE file_id = $1 ORDER BY name",
        )
        .arg(file_id);
        self.fetch_all(&q).await
    }

    /// How much the archive holds.
    pub async fn archive_totals(&self) -> Result<ArchiveTotals, StoreError> {
        let q = Sql::new(
            "SELECT COUNT(DISTINCT file_id), COUNT(*), \
             CAST(COALESCE(SUM(CASE WHEN codec IN (0, 2) THEN 0 ELSE end_off - start_off END), \
             0) AS BIGINT), \
             CAST(COALESCE(SUM(CASE WHEN codec IN (0, 2) THEN 0 ELSE LENGTH(data) END), 0) \
             AS BIGINT), \
             CAST(COALESCE(SUM(CASE WHEN packed OR codec = 0 THEN 0 ELSE end_off - start_off END), \
             0) AS BIGINT), \
             CAST(COALESCE(SUM(CASE WHEN codec = 0 THEN end_off - start_off ELSE 0 END), 0) \
             AS BIGINT) FROM archive_chunks",
        );
        let (files, chunks, raw_bytes, stored, waiting_bytes, unarchived_bytes): (
            i64,
            i64,
            i64,
            i64,
            i64,
            i64,
        ) = self.fetch_optional(&q).await?.unwrap_or_default();
        let unarchived_oldest_mtime_ms = if unarchived_bytes > 0 {
            // Through the partial index of unpacked chunks: deferred ones are among them.
            let q = Sql::new(
                "SELECT CAST(COALESCE(MIN(f.mtime_ms), 0) AS BIGINT) FROM archive_chunks a \
                 JOIN files f ON f.id = a.file_id WHERE NOT a.packed AND a.codec = 0",
            );
            self.fetch_i64(&q).await?
        } else {
            0
        };
        let q = Sql::new(
            "SELECT CAST(COALESCE((SELECT SUM(LENGTH(data)) FROM archive_sidecars), 0) \
             + COALESCE((SELECT SUM(LENGTH(data)) FROM archive_dicts), 0) \
             + COALESCE((SELECT SUM(LENGTH(data)) FROM archive_blocks), 0) AS BIGINT)",
        );
        let sidecars = self.fetch_i64(&q).await?;
        Ok(ArchiveTotals {
            files,
            chunks,
            raw_bytes,
            stored_bytes: stored + sidecars,
            waiting_bytes,
            unarchived_bytes,
            unarchived_oldest_mtime_ms,
        })
    }
}

/// Packing (`run::pack`; the blocks are `store::blocks`'): what is left to pack, and the
/// dictionaries of chunks packed before issue 48.
impl Store {
    /// The chunks of a file generation packing has not reached (partial lines left out), from
    /// offset `from` on, at most [`CHUNKS_PER_FETCH`].
    pub async fn archive_unpacked(
        &self,
        file_id: i64,
        generation: i64,
        from: i64,
    ) -> Result<Vec<StoredChunk>, StoreError> {
        let q = Sql::new(
            "SELECT start_off, end_off, codec, partial, dict_id, block_id, block_off, data FROM archive_chunks \
             WHERE file_id = $1 AND generation = $2 AND start_off >= $3 AND NOT packed \
             AND NOT partial ORDER BY start_off LIMIT $4",
        )
        .arg(file_id)
        .arg(generation)
        .arg(from)
        .arg(CHUNKS_PER_FETCH);
        self.fetch_all(&q).await
    }

    /// Dictionary `id`.
    pub async fn archive_dict(&self, id: i64) -> Result<Option<StoredDict>, StoreError> {
        let q = Sql::new("SELECT id, raw_len, data FROM archive_dicts WHERE id = $1").arg(id);
        self.fetch_optional(&q).await
    }
}
