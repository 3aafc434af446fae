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
const CODEC_ZSTD: i64 = 1;

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
                .bind(CODEC_ZSTD)
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
    /// The dictionary it was compressed against (`archive_dicts.id`).
    pub dict_id: Option<i64>,
    /// The encoded bytes.
    pub data: Vec<u8>,
}

/// A file generation with chunks packing has not reached, in a finished session.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct PackCandidate {
    /// `files.id`.
    pub file_id: i64,
    /// Its current generation.
    pub generation: i64,
    /// Its project folder (the dictionary's).
    pub project: String,
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
    /// Their compressed size (sidecars and dictionaries included).
    pub stored_bytes: i64,
}

/// Chunks fetched per statement while a file is walked (a packed block can be megabytes).
const CHUNKS_PER_FETCH: i64 = 8;

impl Store {
    /// The archived transcripts the filter selects (empty ones included), after file id `after`, at most `limit`, in
    /// id order (a restore walks them page by page: its memory does not grow with the store).
    pub async fn archived_files(
        &self,
        f: &ArchiveFilter,
        after: i64,
        limit: i64,
    ) -> Result<Vec<ArchivedFile>, StoreError> {
        let mut q = Sql::new(
            "SELECT f.id, f.machine, f.path, f.project, f.session_id, f.generation, \
             f.byte_offset, f.size FROM files f WHERE f.id > ",
        );
        q.push_bind(after);
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
        q.push(" ORDER BY f.id LIMIT ").push_bind(limit);
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
            "SELECT start_off, end_off, codec, partial, dict_id, data FROM archive_chunks \
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
             CAST(COALESCE(SUM(end_off - start_off), 0) AS BIGINT), \
             CAST(COALESCE(SUM(LENGTH(data)), 0) AS BIGINT) FROM archive_chunks",
        );
        let (files, chunks, raw_bytes, stored): (i64, i64, i64, i64) =
            self.fetch_optional(&q).await?.unwrap_or_default();
        let q = Sql::new(
            "SELECT CAST(COALESCE((SELECT SUM(LENGTH(data)) FROM archive_sidecars), 0) \
             + COALESCE((SELECT SUM(LENGTH(data)) FROM archive_dicts), 0) AS BIGINT)",
        );
        let sidecars = self.fetch_i64(&q).await?;
        Ok(ArchiveTotals {
            files,
            chunks,
            raw_bytes,
            stored_bytes: stored + sidecars,
        })
    }
}

/// Packing (`run::pack`): what is left to pack, the projects' dictionaries, and the swap.
impl Store {
    /// Up to `limit` file generations of finished sessions with chunks not packed yet, project
    /// by project (the packer holds one project's dictionary at a time).
    pub async fn archive_pack_candidates(
        &self,
        limit: i64,
    ) -> Result<Vec<PackCandidate>, StoreError> {
        let q = Sql::new(
            "SELECT f.id AS file_id, f.generation, f.project FROM files f \
             WHERE EXISTS (SELECT 1 FROM archive_chunks a WHERE a.file_id = f.id \
             AND a.generation = f.generation AND NOT a.packed AND NOT a.partial) \
             AND EXISTS (SELECT 1 FROM sessions s WHERE s.session_id = f.session_id \
             AND s.status = 'finished') ORDER BY f.project, f.id LIMIT $1",
        )
        .arg(limit);
        self.fetch_all(&q).await
    }

    /// The chunks of a file generation packing has not reached (partial lines left out), from
    /// offset `from` on, at most [`CHUNKS_PER_FETCH`].
    pub async fn archive_unpacked(
        &self,
        file_id: i64,
        generation: i64,
        from: i64,
    ) -> Result<Vec<StoredChunk>, StoreError> {
        let q = Sql::new(
            "SELECT start_off, end_off, codec, partial, dict_id, data FROM archive_chunks \
             WHERE file_id = $1 AND generation = $2 AND start_off >= $3 AND NOT packed \
             AND NOT partial ORDER BY start_off LIMIT $4",
        )
        .arg(file_id)
        .arg(generation)
        .arg(from)
        .arg(CHUNKS_PER_FETCH);
        self.fetch_all(&q).await
    }

    /// The first dictionary of `project`, if it has one.
    pub async fn archive_dict_of(&self, project: &str) -> Result<Option<StoredDict>, StoreError> {
        let q = Sql::new(format!(
            "SELECT d.id, d.raw_len, d.data FROM archive_dicts d WHERE d.project = $1 AND {} \
             ORDER BY d.id LIMIT 1",
            super::retire::LIVE_DICT
        ))
        .arg(project);
        self.fetch_optional(&q).await
    }

    /// Dictionary `id`.
    pub async fn archive_dict(&self, id: i64) -> Result<Option<StoredDict>, StoreError> {
        let q = Sql::new("SELECT id, raw_len, data FROM archive_dicts WHERE id = $1").arg(id);
        self.fetch_optional(&q).await
    }

    /// Store a dictionary of `project`; the id of the project's first one (another packer may
    /// have stored one meanwhile: every chunk of a project then names the same).
    pub async fn add_archive_dict(
        &self,
        project: &str,
        raw_len: i64,
        data: &[u8],
    ) -> Result<i64, StoreError> {
        let q = Sql::new(
            "INSERT INTO archive_dicts (project, raw_len, data, created_at) VALUES ($1, $2, $3, $4)",
        )
        .arg(project)
        .arg(raw_len)
        .arg(Cow::Borrowed(data))
        .arg(crate::extract::rows::now_iso());
        self.execute(&q).await?;
        let q = Sql::new(format!(
            "SELECT d.id FROM archive_dicts d WHERE d.project = $1 AND {} ORDER BY d.id LIMIT 1",
            super::retire::LIVE_DICT
        ))
        .arg(project);
        self.fetch_i64(&q).await
    }

    /// Up to `limit` archived file generations of finished sessions of `project` after file id
    /// `after`, in id order (a dictionary is made of their first bytes). Why finished only:
    /// those are what packing compresses against it; a live session's bytes in the dictionary
    /// would be stored twice, in it and in the session's own chunks, until that session ends.
    pub async fn project_archived(
        &self,
        project: &str,
        after: i64,
        limit: i64,
    ) -> Result<Vec<(i64, i64)>, StoreError> {
        let q = Sql::new(
            "SELECT f.id, f.generation FROM files f WHERE f.project = $1 AND f.id > $2 \
             AND EXISTS (SELECT 1 FROM archive_chunks a WHERE a.file_id = f.id \
             AND a.generation = f.generation) AND EXISTS (SELECT 1 FROM sessions s \
             WHERE s.session_id = f.session_id AND s.status = 'finished') \
             ORDER BY f.id LIMIT $3",
        )
        .arg(project)
        .arg(after)
        .arg(limit);
        self.fetch_all(&q).await
    }

    /// Replace the unpacked chunks starting at `old` (of one file generation) by `blocks`, in
    /// one transaction; `false` (nothing changed) when those chunks are no longer all there
    /// unpacked (a restore or another packer got there first).
    pub async fn swap_archive_chunks(
        &self,
        file_id: i64,
        old: &[i64],
        blocks: &[ArchiveChunk],
        dict_id: Option<i64>,
    ) -> Result<bool, StoreError> {
        let Some(generation) = blocks.first().map(|b| b.generation) else {
            return Ok(false);
        };
        let mut pooled = self.acquire().await?;
        let mut tx = pooled.begin().await?;
        let mut q = Sql::new("DELETE FROM archive_chunks WHERE file_id = ");
        q.push_bind(file_id)
            .push(" AND generation = ")
            .push_bind(generation)
            .push(" AND NOT packed AND NOT partial AND ")
            .push_in("start_off", old.iter().copied());
        let gone = tx.conn().execute(&q.not_persistent()).await?;
        if gone != old.len() as u64 {
            // Dropped, the transaction rolls back.
            return Ok(false);
        }
        if let Some(d) = dict_id {
            // The dictionary must still be in use: a prune may have retired it since the
            // packer loaded it (`store::retire`; the shared lock orders this against emptying
            // it on PostgreSQL, SQLite's write lock is held already).
            let mut q = Sql::new(format!(
                "SELECT d.id FROM archive_dicts d WHERE d.id = $1 AND {}",
                super::retire::LIVE_DICT
            ))
            .arg(d);
            if tx.conn().backend() == super::sql::Backend::Postgres {
                q.push(" FOR SHARE OF d");
            }
            if tx.conn().fetch_all::<(i64,)>(&q).await?.is_empty() {
                return Ok(false);
            }
        }
        for b in blocks {
            let q = Sql::new(
                "INSERT INTO archive_chunks (file_id, generation, start_off, end_off, codec, \
                 dict_id, packed, partial, data) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .arg(file_id)
            .arg(b.generation)
            .arg(b.start as i64)
            .arg(b.end as i64)
            .arg(CODEC_ZSTD)
            .arg(dict_id)
            .arg(true)
            .arg(false)
            .arg(Cow::Borrowed(b.data.as_slice()));
            tx.conn().execute(&q).await?;
        }
        tx.commit().await?;
        Ok(true)
    }
}
