//! Retired dictionaries (migration 0023, `archive_dicts_retired`): a project's dictionary holds its first archived
//! bytes, so once `prune` removes sessions of that project it may hold theirs. `prune` marks it
//! retired in the same transaction; `run::pack::retire_dicts` then compresses every chunk that
//! names it again without it and deletes it, so what was pruned is gone from the archive too.
//! A retired dictionary is never used to pack again; the project gets a new one made of what
//! is left.

use std::borrow::Cow;

use super::archive::BoundChunk;
use super::sql::Sql;
use super::{Store, StoreError};

impl Store {
    /// The retired dictionaries and their projects, oldest first.
    pub async fn retired_dicts(&self) -> Result<Vec<(i64, String)>, StoreError> {
        let q = Sql::new(
            "SELECT d.id, d.project FROM archive_dicts d \
             JOIN archive_dicts_retired r ON r.dict_id = d.id ORDER BY d.id",
        );
        self.fetch_all(&q).await
    }

    /// Up to `limit` chunks packed against dictionary `dict_id` (of `project`), after
    /// `(file_id, start_off)` in key order.
    pub async fn chunks_of_dict(
        &self,
        dict_id: i64,
        project: &str,
        after: (i64, i64),
        limit: i64,
    ) -> Result<Vec<BoundChunk>, StoreError> {
        let q = Sql::new(
            "SELECT a.file_id, a.generation, a.start_off, a.end_off, a.data FROM archive_chunks a \
             JOIN files f ON f.id = a.file_id WHERE f.project = $1 AND a.dict_id = $2 \
             AND (a.file_id > $3 OR (a.file_id = $3 AND a.start_off > $4)) \
             ORDER BY a.file_id, a.start_off LIMIT $5",
        )
        .arg(project)
        .arg(dict_id)
        .arg(after.0)
        .arg(after.1)
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

    /// Delete retired dictionary `dict_id` once no chunk names it; `false` while one does.
    pub async fn drop_retired_dict(&self, dict_id: i64) -> Result<bool, StoreError> {
        let mut pooled = self.acquire().await?;
        let mut tx = pooled.begin().await?;
        let q = Sql::new(
            "DELETE FROM archive_dicts WHERE id = $1 \
             AND id IN (SELECT dict_id FROM archive_dicts_retired) \
             AND NOT EXISTS (SELECT 1 FROM archive_chunks WHERE dict_id = $1)",
        )
        .arg(dict_id);
        let gone = tx.conn().execute(&q).await? > 0;
        if gone {
            let q = Sql::new("DELETE FROM archive_dicts_retired WHERE dict_id = $1").arg(dict_id);
            tx.conn().execute(&q).await?;
        }
        tx.commit().await?;
        Ok(gone)
    }
}
