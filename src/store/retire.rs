//! Retired dictionaries (migration 0023, `archive_dicts_retired`). Packing made a project's
//! dictionary of its first archived bytes until issue 48; since then it makes none, and
//! migration 0030 retired every one. `run::pack::retire_dicts` compresses every chunk that names
//! a retired dictionary again without it (packing then takes it into a block) and empties the
//! dictionary. A prune still retires its projects' dictionaries, in case one is left.
//!
//! Why emptied rather than deleted: SQLite gives a deleted row's id to the next row, and a
//! reader holding the old dictionary by id (a restore in progress) would decode a new chunk
//! with the wrong one.

use std::borrow::Cow;

use super::archive::BoundChunk;
use super::sql::{Backend, Sql};
use super::{Store, StoreError};

impl Store {
    /// The retired dictionaries not emptied yet, and their projects, oldest first.
    pub async fn retired_dicts(&self) -> Result<Vec<(i64, String)>, StoreError> {
        let q = Sql::new(
            "SELECT d.id, d.project FROM archive_dicts d \
             JOIN archive_dicts_retired r ON r.dict_id = d.id WHERE d.raw_len > 0 ORDER BY d.id",
        );
        self.fetch_all(&q).await
    }

    /// Up to `limit` chunks packed against dictionary `dict_id` (of `project`), after
    /// `(file_id, generation, start_off)` in key order.
    pub async fn chunks_of_dict(
        &self,
        dict_id: i64,
        project: &str,
        after: (i64, i64, i64),
        limit: i64,
    ) -> Result<Vec<BoundChunk>, StoreError> {
        let q = Sql::new(
            "SELECT a.file_id, a.generation, a.start_off, a.end_off, a.data FROM archive_chunks a \
             JOIN files f ON f.id = a.file_id WHERE f.project = $1 AND a.dict_id = $2 \
             AND (a.file_id > $3 OR (a.file_id = $3 AND (a.generation > $4 \
             OR (a.generation = $4 AND a.start_off > $5)))) \
             ORDER BY a.file_id, a.generation, a.start_off LIMIT $6",
        )
        .arg(project)
        .arg(dict_id)
        .arg(after.0)
        .arg(after.1)
        .arg(after.2)
        .arg(limit);
        self.fetch_all(&q).await
    }

    /// Replace a chunk packed against `dict_id` by `data`, compressed alone and left for
    /// packing to take again; `false` when it no longer names that dictionary.
    pub async fn unbind_chunk(
        &self,
        chunk: &BoundChunk,
        dict_id: i64,
        data: &[u8],
    ) -> Result<bool, StoreError> {
        let q = Sql::new(
            "UPDATE archive_chunks SET data = $1, dict_id = NULL, packed = $2 \
             WHERE file_id = $3 AND generation = $4 AND start_off = $5 AND dict_id = $6",
        )
        .arg(Cow::Borrowed(data))
        .arg(false)
        .arg(chunk.file_id)
        .arg(chunk.generation)
        .arg(chunk.start_off)
        .arg(dict_id);
        Ok(self.execute(&q).await? > 0)
    }

    /// Empty retired dictionary `dict_id` once no chunk names it; `false` while one does. On
    /// PostgreSQL the row is locked first, so a packer's swap naming it (which takes a shared
    /// lock on it) either committed before the check below, and is seen, or waits and then
    /// finds it emptied.
    pub async fn drop_retired_dict(&self, dict_id: i64) -> Result<bool, StoreError> {
        let mut pooled = self.acquire().await?;
        let mut tx = pooled.begin().await?;
        let backend = tx.conn().backend();
        let mut lock = Sql::new(
            "SELECT d.id FROM archive_dicts d WHERE d.id = $1 \
             AND d.id IN (SELECT dict_id FROM archive_dicts_retired)",
        )
        .arg(dict_id);
        if backend == Backend::Postgres {
            lock.push(" FOR UPDATE OF d");
        }
        if tx.conn().fetch_all::<(i64,)>(&lock).await?.is_empty() {
            return Ok(false);
        }
        let q = Sql::new("SELECT COUNT(*) FROM archive_chunks WHERE dict_id = $1").arg(dict_id);
        let named: Vec<(i64,)> = tx.conn().fetch_all(&q).await?;
        if named.first().is_some_and(|(n,)| *n > 0) {
            return Ok(false);
        }
        let empty: &[u8] = &[];
        let q = Sql::new("UPDATE archive_dicts SET data = $1, raw_len = 0 WHERE id = $2")
            .arg(Cow::Borrowed(empty))
            .arg(dict_id);
        tx.conn().execute(&q).await?;
        tx.commit().await?;
        Ok(true)
    }
}
