//! Which failures are the database's and which are one batch's.
//!
//! Why it matters: the daemon pauses every file while the database is down (a server stopped,
//! a full disk, a read-only file) and probes until it takes writes again. A failure caused by
//! one batch's data (a value a column refuses, an encoding error) would keep that gate shut
//! for ever, every file paused behind a batch that can never commit. Such a failure is the
//! file's: recorded as its diagnostic, retried later, the other files going on.

use super::sql::Sql;
use super::{Store, StoreError};

impl StoreError {
    /// The database itself failed (unreachable, out of space or resources, read-only, locked,
    /// shutting down): worth pausing every writer and probing. `false` for failures a batch's
    /// data causes, which the same batch would meet again.
    pub fn is_transient(&self) -> bool {
        match self {
            StoreError::Connect { .. } | StoreError::WriterGone => true,
            StoreError::Group(inner) => inner.is_transient(),
            StoreError::CheckpointMoved { .. } | StoreError::Unsupported(_) => false,
            StoreError::Sqlx(e) => sqlx_transient(e),
            // No SQLite code: a value our side could not convert, which is the batch's.
            StoreError::Sqlite(e) => e.sqlite_error_code().is_some_and(sqlite_code_transient),
            StoreError::Migrate(_)
            | StoreError::Missing { .. }
            | StoreError::SchemaBehind { .. }
            | StoreError::SchemaAhead { .. }
            | StoreError::MachineInUse { .. } => true,
        }
    }
}

impl StoreError {
    /// Whether the database says its own file or pages are damaged (SQLite's `CORRUPT` or
    /// `NOTADB`, PostgreSQL's `XX001`/`XX002`): a reader of the archive reports the file it was
    /// reading as damaged and goes on, where a transient failure stops it.
    pub fn is_corrupt(&self) -> bool {
        use rusqlite::ffi::ErrorCode as C;
        let sqlite = |c: Option<C>| matches!(c, Some(C::DatabaseCorrupt | C::NotADatabase));
        match self {
            StoreError::Group(inner) => inner.is_corrupt(),
            StoreError::Sqlite(e) => sqlite(e.sqlite_error_code()),
            StoreError::Sqlx(sqlx::Error::Database(db)) => {
                let code = db.code().unwrap_or_default();
                if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
                    let primary = code.parse::<i32>().ok().map(|c| c & 0xff);
                    sqlite(primary.map(|c| rusqlite::ffi::Error::new(c).code))
                } else {
                    matches!(&*code, "XX001" | "XX002")
                }
            }
            _ => false,
        }
    }
}

fn sqlx_transient(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => {
            let code = db.code().unwrap_or_default();
            if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
                // SQLite's extended result code: its low byte is the primary code.
                let primary = code.parse::<i32>().ok().map(|c| c & 0xff);
                return primary
                    .is_none_or(|c| sqlite_code_transient(rusqlite::ffi::Error::new(c).code));
            }
            pg_state_transient(&code)
        }
        // Bad values on our side: encoding a parameter, decoding a column.
        sqlx::Error::Encode(_)
        | sqlx::Error::Decode(_)
        | sqlx::Error::ColumnDecode { .. }
        | sqlx::Error::TypeNotFound { .. }
        | sqlx::Error::ColumnNotFound(_)
        | sqlx::Error::ColumnIndexOutOfBounds { .. } => false,
        // IO, TLS, protocol, pool timeouts and closed pools, worker crashes: the connection.
        _ => true,
    }
}

/// PostgreSQL SQLSTATE classes of the server or the connection: 08 connection, 53 resources
/// (disk full, out of memory, too many connections), 57 operator intervention (shutdown),
/// 58 system errors, 40 serialization failure or deadlock (retry), 25006 read-only
/// transaction, 42501 no privilege (a role changed), XX internal. Everything else (22 data
/// exceptions, 23 constraint violations, 42 syntax) is the batch's.
fn pg_state_transient(code: &str) -> bool {
    matches!(code.get(..2), Some("08" | "53" | "57" | "58" | "40" | "XX"))
        || matches!(code, "25006" | "42501" | "")
}

/// SQLite codes of the database file or the machine: busy, locked, IO, full, read-only,
/// cannot open, corrupt, no memory, protocol. Constraint, mismatch, too big, range and the
/// like are the batch's, and so is the generic `SQLITE_ERROR` (`Unknown` here): a statement
/// SQLite refused ("Expression tree is too large"), which the same batch would meet again.
fn sqlite_code_transient(code: rusqlite::ffi::ErrorCode) -> bool {
    use rusqlite::ffi::ErrorCode as C;
    !matches!(
        code,
        C::ConstraintViolation
            | C::TypeMismatch
            | C::TooBig
            | C::ParameterOutOfRange
            | C::ApiMisuse
            | C::Unknown
    )
}

impl Store {
    /// Record that a batch of a file could not be stored because of its data (`kind`
    /// `store_error`, one row per file, generation and first line): what `gleaner files`
    /// counts and the file's diagnostics list. `detail` must be redacted already.
    pub async fn record_batch_failure(
        &self,
        file_id: i64,
        generation: i64,
        (line_no, byte_start, byte_len): (u64, u64, u64),
        detail: &str,
    ) -> Result<(), StoreError> {
        let q = Sql::new(
            "INSERT INTO diagnostics (file_id, generation, line_no, byte_start, byte_len, kind, \
             detail, created_at) VALUES ($1, $2, $3, $4, $5, 'store_error', $6, $7) \
             ON CONFLICT DO NOTHING",
        )
        .arg(file_id)
        .arg(generation)
        .arg(i64::try_from(line_no).unwrap_or(i64::MAX))
        .arg(i64::try_from(byte_start).unwrap_or(i64::MAX))
        .arg(i64::try_from(byte_len).unwrap_or(i64::MAX))
        .arg(detail)
        .arg(crate::extract::rows::now_iso());
        self.execute(&q).await?;
        let q = Sql::new(
            "UPDATE files SET diagnostics = (SELECT COUNT(*) FROM diagnostics d \
             WHERE d.file_id = $1) WHERE id = $1",
        )
        .arg(file_id);
        self.execute(&q).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_states_pause_and_data_errors_do_not() {
        for transient in ["08006", "53100", "57P01", "40001", "25006", "XX000"] {
            assert!(pg_state_transient(transient), "{transient}");
        }
        for batch in ["23514", "22021", "22P02", "23505", "42703"] {
            assert!(!pg_state_transient(batch), "{batch}");
        }
        use rusqlite::ffi::ErrorCode as C;
        assert!(sqlite_code_transient(C::DiskFull));
        assert!(sqlite_code_transient(C::ReadOnly));
        assert!(sqlite_code_transient(C::DatabaseBusy));
        assert!(!sqlite_code_transient(C::ConstraintViolation));
        assert!(!StoreError::Sqlx(sqlx::Error::ColumnNotFound("x".into())).is_transient());
        assert!(StoreError::Sqlx(sqlx::Error::PoolTimedOut).is_transient());
        assert!(StoreError::WriterGone.is_transient());
    }
}
