//! File rows: the registry of tracked transcripts and their checkpoints.

use super::sql::{row_chunks, Sql};
use super::{Store, StoreError};
use crate::extract::rows::{now_iso, unpack_state};
use crate::tail::discovery::FileInfo;
use crate::tail::Checkpoint;

/// A file row as the pipeline needs it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct FileRecord {
    /// Row id.
    pub id: i64,
    /// Absolute path.
    pub path: String,
    /// `main` or `agent`.
    pub kind: String,
    /// Project folder.
    pub project: String,
    /// Session id, once known.
    pub session_id: Option<String>,
    /// Sub-agent id.
    pub agent_id: Option<String>,
    /// Device id.
    pub dev: i64,
    /// Inode.
    pub inode: i64,
    /// Generation.
    pub generation: i64,
    /// Committed offset.
    pub byte_offset: i64,
    /// Committed line count.
    pub lines: i64,
    /// Size at last commit.
    pub size: i64,
    /// Head fingerprint length.
    pub head_len: i64,
    /// Head fingerprint.
    pub head_hash: i64,
    /// Tail check length.
    pub tail_len: i64,
    /// Tail check hash.
    pub tail_hash: i64,
    /// `active` or `gone`.
    pub state: String,
    /// Modification time seen when last read (Unix ms; 0 when unknown).
    pub mtime_ms: i64,
}

impl FileRecord {
    /// The stored checkpoint, or `None` when nothing was ever committed for this file (so the
    /// tailer treats it as new instead of as a replaced file).
    pub fn checkpoint(&self) -> Option<Checkpoint> {
        if self.inode == 0 && self.byte_offset == 0 && self.head_len == 0 {
            return None;
        }
        Some(Checkpoint {
            dev: self.dev as u64,
            inode: self.inode as u64,
            generation: self.generation,
            offset: self.byte_offset as u64,
            lines: self.lines as u64,
            head_len: self.head_len as u32,
            head_hash: self.head_hash as u64,
            tail_len: self.tail_len as u32,
            tail_hash: self.tail_hash as u64,
        })
    }
}

const FILE_COLUMNS: &str =
    "id, path, kind, project, session_id, agent_id, dev, inode, generation, \
     byte_offset, lines, size, head_len, head_hash, tail_len, tail_hash, state, mtime_ms";

impl Store {
    /// All file rows of one machine.
    pub async fn files_of(&self, machine: &str) -> Result<Vec<FileRecord>, StoreError> {
        let q = Sql::new(format!(
            "SELECT {FILE_COLUMNS} FROM files WHERE machine = $1"
        ))
        .arg(machine);
        self.fetch_all(&q).await
    }

    /// The file rows of one session, main files first.
    pub async fn files_of_session(&self, session_id: &str) -> Result<Vec<FileRecord>, StoreError> {
        let q = Sql::new(format!(
            "SELECT {FILE_COLUMNS} FROM files WHERE session_id = $1 \
             ORDER BY CASE WHEN kind = 'main' THEN 0 ELSE 1 END, id"
        ))
        .arg(session_id);
        self.fetch_all(&q).await
    }

    /// The file rows for `infos`, created where they do not exist yet, in one transaction
    /// (a backfill registers thousands of files; one round trip each would dominate).
    pub async fn register_files(
        &self,
        (machine, user): (&str, &str),
        infos: &[FileInfo],
    ) -> Result<Vec<FileRecord>, StoreError> {
        let now = now_iso();
        let paths: Vec<String> = infos
            .iter()
            .map(|i| i.path.to_string_lossy().into_owned())
            .collect();
        let rows: Vec<(&FileInfo, &String)> = infos.iter().zip(paths.iter()).collect();
        let backend = self.backend();
        // On its own connection, closed if the transaction fails: SQLite may end a transaction
        // itself on a full disk, and a connection whose driver still counts it open would go
        // back to the pool holding the write lock, its next "transaction" a savepoint inside
        // one that is never committed (measured: the files' rows lost, every batch then
        // refused as "checkpoint moved", in the disk-full outage test at 4 MB).
        let mut pooled = self.acquire().await?;
        let result = register_in(&mut pooled, backend, (machine, user), &rows, &now).await;
        if result.is_err() {
            pooled.close().await;
        }
        result
    }

    /// Mark a file whose path no longer exists. Its rows are kept.
    pub async fn mark_gone(&self, file_id: i64) -> Result<(), StoreError> {
        let q = Sql::new("UPDATE files SET state = 'gone', updated_at = $1 WHERE id = $2")
            .arg(now_iso())
            .arg(file_id);
        self.execute(&q).await?;
        Ok(())
    }

    /// The episode builder state of a file (JSON), if any was stored. A stored state that
    /// does not unpack reads as `Some("")`, which no builder accepts (the caller starts afresh
    /// and says so).
    pub async fn episode_state(&self, file_id: i64) -> Result<Option<String>, StoreError> {
        let q = Sql::new("SELECT episode_state FROM files WHERE id = $1").arg(file_id);
        let row: Option<(Option<Vec<u8>>,)> = self.fetch_optional(&q).await?;
        Ok(row
            .and_then(|(s,)| s)
            .map(|s| unpack_state(&s).unwrap_or_default()))
    }
}

impl Store {
    /// The path of a session's main transcript, as recorded (it may have been deleted since).
    pub async fn main_transcript(&self, session_id: &str) -> Result<Option<String>, StoreError> {
        let q = Sql::new(
            "SELECT path FROM files WHERE session_id = $1 AND kind = 'main' ORDER BY id LIMIT 1",
        )
        .arg(session_id);
        Ok(self.fetch_optional::<(String,)>(&q).await?.map(|(p,)| p))
    }
}

/// [`Store::register_files`]'s transaction on `pooled`.
async fn register_in(
    pooled: &mut super::conn::Pooled,
    backend: super::Backend,
    (machine, user): (&str, &str),
    rows: &[(&FileInfo, &String)],
    now: &str,
) -> Result<Vec<FileRecord>, StoreError> {
    let mut tx = pooled.begin().await?;
    let mut out = Vec::with_capacity(rows.len());
    for chunk in row_chunks(backend, rows) {
        let mut q = Sql::new(
            "INSERT INTO files (machine, path, project, kind, session_id, agent_id, \
         first_seen_at, updated_at, user_name) ",
        );
        q.push_rows(backend, chunk, |row, (info, path)| {
            row.bind(machine)
                .bind(path.as_str())
                .bind(&*info.project)
                .bind(info.kind.as_str())
                .bind(info.session_id.as_deref())
                .bind(info.agent_id.as_deref())
                .bind(now)
                .bind(now)
                .bind(user);
        });
        // An update so RETURNING also yields rows that already existed; the user is the
        // machine's current one (a row from before migration 0015 has none).
        q.push(
            " ON CONFLICT (machine, path) DO UPDATE SET user_name = excluded.user_name \
         RETURNING ",
        );
        q.push(FILE_COLUMNS);
        out.append(&mut tx.conn().fetch_all::<FileRecord>(&q).await?);
    }
    tx.commit().await?;
    Ok(out)
}
