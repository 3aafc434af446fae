//! Project blocks (migration 0030): what packing writes, and what a prune leaves of them.
//!
//! A block is the bytes of several finished files of one project, end to end, compressed as one
//! frame by `crate::archive::pack`. Each file's stretch in it is a chunk row of its own (its
//! file, generation and byte range, no data) naming the block and where the stretch starts, so
//! readers walk a file's chunks as before and only decode differently.
//!
//! Why no locks: a block is written whole, with its chunk rows, in one transaction that first
//! deletes the frames it replaces and gives up unless all of them are still there; no statement
//! ever adds a chunk to a stored block. A prune deletes a pruned file's chunk rows and marks their
//! blocks retired in its own transaction (`DELETE .. RETURNING`, so a block committed before the
//! delete is seen); `run::pack::retire_blocks` then gives the block's other chunks frames of
//! their own and deletes it, so the pruned bytes leave the archive.

use std::borrow::Cow;

use super::sql::{Conn, Sql};
use super::{Store, StoreError};

/// A project with chunks packing has not reached.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct PackProject {
    /// Its project folder.
    pub project: String,
    /// Bytes of its finished sessions waiting.
    pub pending: i64,
    /// Whether one of its sessions is still being written.
    pub live: bool,
    /// Its sessions' last activity (ISO-8601 UTC).
    pub last_activity: Option<String>,
    /// Bytes read but not archived yet (deferred chunks, whatever their sessions' state).
    pub deferred: i64,
    /// The oldest modification time of a file holding them (ms since the epoch).
    pub oldest_deferred: Option<i64>,
}

/// A file generation packing takes chunks of.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct PackFile {
    /// `files.id`.
    pub file_id: i64,
    /// The generation.
    pub generation: i64,
    /// The machine that read it: only it can read a deferred chunk again.
    pub machine: String,
    /// Its path there.
    pub path: String,
}

/// A file's stretch in a block being written: the frames it replaces (their start offsets) and
/// where its bytes start in the block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMember {
    /// `files.id`.
    pub file_id: i64,
    /// The file generation.
    pub generation: i64,
    /// First byte.
    pub start: i64,
    /// Byte after the last.
    pub end: i64,
    /// Where its bytes start in the block.
    pub block_off: i64,
    /// The start offsets of the frames it replaces, which tile `[start, end)`.
    pub replaces: Vec<i64>,
}

/// A file's stretch in a stored block.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct BlockMember {
    /// `files.id`.
    pub file_id: i64,
    /// The file generation.
    pub generation: i64,
    /// First byte.
    pub start_off: i64,
    /// Byte after the last.
    pub end_off: i64,
    /// Where its bytes start in the block.
    pub block_off: i64,
}

/// A stored block.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct StoredBlock {
    /// `archive_blocks.id`.
    pub id: i64,
    /// How it is encoded.
    pub codec: i64,
    /// Its raw length.
    pub raw_len: i64,
    /// The frame.
    pub data: Vec<u8>,
}

impl Store {
    /// The projects with unpacked chunks (partial last lines aside) in their files' current
    /// generations, with what the packer decides on: bytes of finished sessions waiting, whether
    /// a session is live, when they were last active, and bytes `machine` read but has not
    /// archived yet (only it can read them again). Those with such bytes come first, the oldest
    /// file first (Claude Code deletes the oldest first); then the others by name. Its cost is
    /// that of the chunks waiting (the partial index `archive_unpacked`), not of the archive.
    pub async fn pack_projects(&self, machine: &str) -> Result<Vec<PackProject>, StoreError> {
        let q = Sql::new(
            "SELECT f.project, CAST(COALESCE(SUM(CASE WHEN s.status = 'finished' \
             THEN a.end_off - a.start_off ELSE 0 END), 0) AS BIGINT) AS pending, \
             MAX(CASE WHEN s.status = 'finished' THEN 0 ELSE 1 END) = 1 AS live, \
             MAX(s.last_activity_at) AS last_activity, \
             CAST(COALESCE(SUM(CASE WHEN a.codec = 0 AND f.machine = $1 \
             THEN a.end_off - a.start_off ELSE 0 END), 0) AS BIGINT) AS deferred, \
             CAST(MIN(CASE WHEN a.codec = 0 AND f.machine = $1 THEN f.mtime_ms END) AS BIGINT) \
             AS oldest_deferred FROM archive_chunks a \
             JOIN files f ON f.id = a.file_id AND f.generation = a.generation \
             JOIN sessions s ON s.session_id = f.session_id \
             WHERE NOT a.packed AND NOT a.partial GROUP BY f.project ORDER BY f.project",
        )
        .arg(machine);
        let mut projects: Vec<PackProject> = self.fetch_all(&q).await?;
        projects.sort_by_key(|p| (p.oldest_deferred.is_none(), p.oldest_deferred));
        Ok(projects)
    }

    /// Up to `limit` file generations of `project` with unpacked chunks, after file id `after`,
    /// in id order (about the order the sessions were first read): those of finished sessions,
    /// and any with bytes `machine` has not archived yet (archived whatever the session).
    pub async fn pack_files(
        &self,
        machine: &str,
        project: &str,
        after: i64,
        limit: i64,
    ) -> Result<Vec<PackFile>, StoreError> {
        let q = Sql::new(
            "SELECT DISTINCT a.file_id, a.generation, f.machine, f.path FROM archive_chunks a \
             JOIN files f ON f.id = a.file_id AND f.generation = a.generation \
             JOIN sessions s ON s.session_id = f.session_id \
             WHERE NOT a.packed AND NOT a.partial AND f.project = $1 AND a.file_id > $2 \
             AND (s.status = 'finished' OR (a.codec = 0 AND f.machine = $4)) \
             ORDER BY a.file_id LIMIT $3",
        )
        .arg(project)
        .arg(after)
        .arg(limit)
        .arg(machine);
        self.fetch_all(&q).await
    }

    /// Mark deferred chunk `start` of file `file_id`'s generation `generation` lost: its file no
    /// longer holds the bytes it names (deleted or rewritten before packing read them again).
    /// The row stays (`CODEC_LOST`, counted as packed so packing passes it by), so a restore
    /// names the bytes missing and why. `false` when it is no longer deferred.
    pub async fn lose_deferred(
        &self,
        file_id: i64,
        generation: i64,
        start: i64,
    ) -> Result<bool, StoreError> {
        let q = Sql::new(
            "UPDATE archive_chunks SET codec = $4, packed = $5 WHERE file_id = $1 \
             AND generation = $2 AND start_off = $3 AND codec = 0 AND NOT packed",
        )
        .arg(file_id)
        .arg(generation)
        .arg(start)
        .arg(super::archive::CODEC_LOST)
        .arg(true);
        Ok(self.execute(&q).await? > 0)
    }

    /// Store a block of `project` (`data`, `raw_len` bytes once decoded) in place of the frames
    /// its members replace, in one transaction; `false` (nothing changed) when any of those
    /// frames is no longer there unpacked (a prune, a restore or another packer got there
    /// first).
    pub async fn add_block(
        &self,
        project: &str,
        raw_len: i64,
        data: &[u8],
        members: &[NewMember],
    ) -> Result<bool, StoreError> {
        let mut pooled = self.acquire().await?;
        let mut tx = pooled.begin().await?;
        let mut c = tx.conn();
        for m in members {
            let mut q = Sql::new("DELETE FROM archive_chunks WHERE file_id = ");
            q.push_bind(m.file_id)
                .push(" AND generation = ")
                .push_bind(m.generation)
                .push(" AND NOT packed AND NOT partial AND ")
                .push_in("start_off", m.replaces.iter().copied());
            if c.execute(&q.not_persistent()).await? != m.replaces.len() as u64 {
                // Dropped, the transaction rolls back.
                return Ok(false);
            }
        }
        let q = Sql::new(
            "INSERT INTO archive_blocks (project, codec, raw_len, data, created_at) \
             VALUES ($1, $2, $3, $4, $5) RETURNING id",
        )
        .arg(project)
        .arg(super::archive::CODEC_ZSTD)
        .arg(raw_len)
        .arg(Cow::Borrowed(data))
        .arg(crate::extract::rows::now_iso());
        let id = c.fetch_i64(&q).await?;
        insert_members(&mut c, id, members).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Block `id`.
    pub async fn archive_block(&self, id: i64) -> Result<Option<StoredBlock>, StoreError> {
        let q =
            Sql::new("SELECT id, codec, raw_len, data FROM archive_blocks WHERE id = $1").arg(id);
        self.fetch_optional(&q).await
    }

    /// Blocks a prune retired, oldest first, at most `limit`.
    pub async fn retired_blocks(&self, limit: i64) -> Result<Vec<i64>, StoreError> {
        let q =
            Sql::new("SELECT id FROM archive_blocks WHERE retired ORDER BY id LIMIT $1").arg(limit);
        Ok(self
            .fetch_all::<(i64,)>(&q)
            .await?
            .into_iter()
            .map(|(id,)| id)
            .collect())
    }

    /// The stretches block `id` holds.
    pub async fn block_members(&self, id: i64) -> Result<Vec<BlockMember>, StoreError> {
        let q = Sql::new(
            "SELECT file_id, generation, start_off, end_off, block_off FROM archive_chunks \
             WHERE block_id = $1 ORDER BY block_off",
        )
        .arg(id);
        self.fetch_all(&q).await
    }

    /// Give stretch `m` of block `id` a frame of its own (`data`), left for packing to take
    /// again; `false` when it no longer names the block.
    pub async fn unpack_member(
        &self,
        id: i64,
        m: &BlockMember,
        data: &[u8],
    ) -> Result<bool, StoreError> {
        let q = Sql::new(
            "UPDATE archive_chunks SET data = $1, block_id = NULL, block_off = NULL, packed = $2 \
             WHERE file_id = $3 AND generation = $4 AND start_off = $5 AND block_id = $6",
        )
        .arg(Cow::Borrowed(data))
        .arg(false)
        .arg(m.file_id)
        .arg(m.generation)
        .arg(m.start_off)
        .arg(id);
        Ok(self.execute(&q).await? > 0)
    }

    /// Delete block `id` once no chunk names it; `false` while one does.
    pub async fn drop_block(&self, id: i64) -> Result<bool, StoreError> {
        let q = Sql::new(
            "DELETE FROM archive_blocks WHERE id = $1 \
             AND NOT EXISTS (SELECT 1 FROM archive_chunks WHERE block_id = $1)",
        )
        .arg(id);
        Ok(self.execute(&q).await? > 0)
    }
}

/// The chunk rows of block `id`'s members.
async fn insert_members(
    c: &mut Conn<'_>,
    id: i64,
    members: &[NewMember],
) -> Result<(), StoreError> {
    let empty: &[u8] = &[];
    for part in super::sql::row_chunks(c.backend(), members) {
        let mut q = Sql::new(
            "INSERT INTO archive_chunks (file_id, generation, start_off, end_off, codec, \
             packed, partial, data, block_id, block_off) ",
        );
        q.push_rows(c.backend(), part, |row, m| {
            row.bind(m.file_id)
                .bind(m.generation)
                .bind(m.start)
                .bind(m.end)
                .bind(super::archive::CODEC_ZSTD)
                .bind(true)
                .bind(false)
                .bind(Cow::Borrowed(empty))
                .bind(id)
                .bind(m.block_off);
        });
        c.execute(&q.not_persistent()).await?;
    }
    Ok(())
}

/// In a prune's transaction, after `files_where` selects the pruned files (`file_id IN (...)`):
/// delete their chunks that lie in blocks and retire those blocks.
pub(super) async fn retire_pruned(c: &mut Conn<'_>, pruned: Sql<'_>) -> Result<(), StoreError> {
    let blocks: Vec<(Option<i64>,)> = c.fetch_all(&pruned).await?;
    let mut ids: Vec<i64> = blocks.into_iter().filter_map(|(b,)| b).collect();
    ids.sort_unstable();
    ids.dedup();
    for part in ids.chunks(500) {
        let mut q = Sql::new("UPDATE archive_blocks SET retired = ");
        q.push_bind(true)
            .push(" WHERE ")
            .push_in("id", part.iter().copied());
        c.execute(&q.not_persistent()).await?;
    }
    Ok(())
}
