//! The single-instance lock: one daemon or `ingest` per data folder.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use super::RunError;

/// The single-instance lock: an exclusive advisory lock on `<data_dir>/gleaner.lock`, released
/// by the OS when the process dies (so a `kill -9` never leaves a stale lock behind).
#[derive(Debug)]
pub struct InstanceLock {
    _file: File,
}

/// Take the lock or say who holds it.
pub fn acquire_lock(path: &Path) -> Result<InstanceLock, RunError> {
    let io_err = |source| RunError::LockIo {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io_err)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(io_err)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let holder = std::fs::read_to_string(path)
                .ok()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .map(|pid| format!(" by pid {pid}"))
                .unwrap_or_default();
            return Err(RunError::Locked {
                path: path.to_path_buf(),
                holder,
            });
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(io_err(e)),
    }
    file.set_len(0).map_err(io_err)?;
    writeln!(file, "{}", std::process::id()).map_err(io_err)?;
    Ok(InstanceLock { _file: file })
}
