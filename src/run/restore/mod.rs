//! `gleaner restore`: archived transcripts written back to disk, byte for byte.
//!
//! Each file is rebuilt from its current generation's chunks (contiguous from byte 0 to at
//! least the checkpoint, else it is reported incomplete and nothing is written), into a
//! temporary file in the target folder, flushed to disk, then renamed into place, so a crash
//! leaves no half-written transcript where Claude Code would read it. A file already there is
//! never overwritten: the same bytes (or the same bytes followed by more: a live session read up
//! to its checkpoint) count as present; other bytes are left alone and reported, or the restored
//! copy is written beside them as `<name>.restored` (`--force-suffix`), a name neither Claude Code
//! nor Gleaner reads as a transcript.
//!
//! Where a file goes: with `--to DIR`, `DIR/<its path below this machine's projects folder>`
//! (another machine's file: `DIR/<project folder>/<path below it>`), the layout Claude Code
//! reads, sub-agent folders included; otherwise where it was read on this machine, and a file
//! read on another machine (a shared store) under this machine's projects folder.

use std::fs::{self, File};
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};

mod chunks;
mod shared;

use crate::archive;
use crate::store::{ArchiveFilter, ArchivedFile, Store, StoreError};
pub use chunks::verify;
use chunks::{write_chunks, ChunkError};
pub use shared::{Shared, SharedError};

/// What a restore is asked to do.
#[derive(Debug, Clone)]
pub struct RestoreOptions {
    /// Which transcripts.
    pub filter: ArchiveFilter,
    /// Write below this folder instead of where the files were.
    pub to: Option<PathBuf>,
    /// Write a differing file beside the existing one instead of skipping it.
    pub force_suffix: bool,
    /// This machine's projects folder (for files read on another machine).
    pub projects_dir: PathBuf,
    /// This machine's id.
    pub machine_id: String,
}

/// What happened to one file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Written (it was missing).
    Written,
    /// Already there with the same bytes (or those bytes and more after them).
    Present,
    /// Something else is there: left alone.
    Differs,
    /// Something else is there: the restored copy was written beside it.
    WrittenBeside,
    /// Written, but shorter than the file was when last seen: its last line had no newline
    /// yet and the file went away before it was idle, when such a line is archived.
    WrittenShort,
    /// The archive does not hold every byte up to the checkpoint.
    Incomplete,
    /// The archive holds the bytes, but a chunk (or the database page holding it) is damaged:
    /// it does not decode, or its checksum fails. Nothing is written.
    Damaged,
    /// Its session was pruned (while the restore ran): nothing to restore, and no loss.
    Pruned,
}

/// One file's line of the report.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FileReport {
    /// Its session.
    pub session_id: Option<String>,
    /// Where it was written or found.
    pub path: PathBuf,
    /// What happened.
    pub outcome: Outcome,
    /// Bytes restored.
    pub bytes: u64,
    /// Why, for `Incomplete` and `Differs`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// Everything a restore did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct RestoreReport {
    /// Transcript files written (beside or in place).
    pub written: u64,
    /// Of those, written shorter than the file was when last seen ([`Outcome::WrittenShort`]).
    pub short: u64,
    /// Already present.
    pub present: u64,
    /// Left alone because other bytes are there.
    pub differs: u64,
    /// Not complete in the archive.
    pub incomplete: u64,
    /// Damaged in the archive (each named in `problems`, with what is wrong).
    pub damaged: u64,
    /// Skipped: their session was pruned meanwhile.
    pub pruned: u64,
    /// Sidecar files (`.meta.json`) written.
    pub sidecars_written: u64,
    /// Transcript bytes written.
    pub bytes_written: u64,
    /// Every file that was not simply written or present.
    pub problems: Vec<FileReport>,
}

/// Why a restore stopped.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// The database.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Writing a file (disk full, permissions): the restore stops at the first one.
    #[error("cannot write {}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
}

/// Files fetched per statement.
const PAGE: i64 = 500;

/// Restore what `opts` selects; `progress` is told each file's outcome.
pub async fn restore(
    store: &Store,
    opts: &RestoreOptions,
    mut progress: impl FnMut(&FileReport),
) -> Result<RestoreReport, RestoreError> {
    let mut report = RestoreReport::default();
    let mut shared = Shared::default();
    let mut after = (String::new(), 0);
    loop {
        let files = store
            .archived_files(&opts.filter, (&after.0, after.1), PAGE)
            .await?;
        let Some(last) = files.last() else { break };
        after = (last.project.clone(), last.id);
        for f in &files {
            let r = restore_file(store, opts, f, &mut shared).await?;
            match r.outcome {
                Outcome::Written | Outcome::WrittenBeside | Outcome::WrittenShort => {
                    report.written += 1;
                    report.bytes_written += r.bytes;
                    report.short += u64::from(r.outcome == Outcome::WrittenShort);
                }
                Outcome::Present => report.present += 1,
                Outcome::Differs => report.differs += 1,
                Outcome::Incomplete => report.incomplete += 1,
                Outcome::Damaged => report.damaged += 1,
                Outcome::Pruned => report.pruned += 1,
            }
            if matches!(
                r.outcome,
                Outcome::Written
                    | Outcome::WrittenBeside
                    | Outcome::WrittenShort
                    | Outcome::Present
            ) {
                let (n, damaged) = restore_sidecars(store, opts, f, &r.path).await?;
                report.sidecars_written += n;
                for d in damaged {
                    report.damaged += 1;
                    progress(&d);
                    report.problems.push(d);
                }
            }
            progress(&r);
            if !matches!(
                r.outcome,
                Outcome::Written | Outcome::Present | Outcome::Pruned
            ) {
                report.problems.push(r);
            }
        }
    }
    Ok(report)
}

/// Where `f` goes (see the module docs).
pub fn target_path(opts: &RestoreOptions, f: &ArchivedFile) -> PathBuf {
    let path = Path::new(&f.path);
    // This machine's file: its place below the projects folder, whatever the nesting.
    let mine = (f.machine == opts.machine_id)
        .then(|| path.strip_prefix(&opts.projects_dir).ok())
        .flatten();
    match (&opts.to, mine) {
        (Some(dir), Some(rel)) => dir.join(rel),
        (Some(dir), None) => dir.join(below_project(path, &f.project)),
        (None, _) if f.machine == opts.machine_id => path.to_path_buf(),
        (None, _) => opts.projects_dir.join(below_project(path, &f.project)),
    }
}

/// `path` from its project folder on (`<project>/<session>.jsonl`,
/// `<project>/<session>/subagents/agent-x.jsonl`); the file name alone without a project.
fn below_project(path: &Path, project: &str) -> PathBuf {
    let comps: Vec<&std::ffi::OsStr> = path.iter().collect();
    let dirs = comps.len().saturating_sub(1);
    match (0..dirs)
        .rev()
        .find(|&i| !project.is_empty() && comps[i] == project)
    {
        Some(i) => comps[i..].iter().collect(),
        None => comps.last().map(PathBuf::from).unwrap_or_default(),
    }
}

/// A temporary name beside `target` that no reader takes for a transcript.
fn temp_beside(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    target.with_file_name(format!(".{name}.{}.gleaner-restore", std::process::id()))
}

async fn restore_file(
    store: &Store,
    opts: &RestoreOptions,
    f: &ArchivedFile,
    shared: &mut Shared,
) -> Result<FileReport, RestoreError> {
    let target = target_path(opts, f);
    let io_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| RestoreError::Io { path, source }
    };
    let mut report = FileReport {
        session_id: f.session_id.clone(),
        path: target.clone(),
        outcome: Outcome::Written,
        bytes: 0,
        detail: None,
    };
    if let Some(dir) = target.parent() {
        fs::create_dir_all(dir).map_err(io_err(dir))?;
    }
    let tmp = temp_beside(&target);
    let written = {
        let mut out =
            io::BufWriter::with_capacity(1 << 20, File::create(&tmp).map_err(io_err(&tmp))?);
        let r = write_chunks(store, f, shared, &mut out).await;
        let flushed = out
            .into_inner()
            .map_err(|e| e.into_error())
            .and_then(|file| file.sync_all());
        match (r, flushed) {
            (Ok(Ok(n)), Ok(())) => Ok(n),
            (Ok(Err(problem)), _) => Err(problem),
            (Err(ChunkError::Store(e)), _) => {
                let _ = fs::remove_file(&tmp);
                return Err(e.into());
            }
            (Err(ChunkError::Io(e)), _) | (_, Err(e)) => {
                let _ = fs::remove_file(&tmp);
                return Err(RestoreError::Io {
                    path: tmp,
                    source: e,
                });
            }
        }
    };
    let n = match written {
        Ok(n) => n,
        Err(problem) => {
            let _ = fs::remove_file(&tmp);
            (report.outcome, report.detail) = problem.outcome(store, f).await?;
            return Ok(report);
        }
    };
    report.bytes = n;
    if !target.exists() {
        fs::rename(&tmp, &target).map_err(io_err(&target))?;
        let seen = u64::try_from(f.size).unwrap_or(0);
        if seen > n {
            report.outcome = Outcome::WrittenShort;
            report.detail = Some(format!(
                "{} bytes seen at its end were never archived: a last line without its \
                 newline, and the file went away before it was idle",
                seen - n
            ));
        }
        return Ok(report);
    }
    if starts_with_file(&target, &tmp).map_err(io_err(&target))? {
        let _ = fs::remove_file(&tmp);
        report.outcome = Outcome::Present;
        return Ok(report);
    }
    if !opts.force_suffix {
        let _ = fs::remove_file(&tmp);
        report.outcome = Outcome::Differs;
        report.detail = Some(
            "another file is there; left alone (--force-suffix writes the archived copy beside it)"
                .into(),
        );
        return Ok(report);
    }
    // A copy written beside by an earlier run, with these very bytes, is the restored file:
    // writing another would leave `.restored`, `.restored.2`... all alike.
    if let Some(same) = same_beside(&target, &tmp).map_err(io_err(&target))? {
        let _ = fs::remove_file(&tmp);
        report.outcome = Outcome::Present;
        report.detail = Some(format!("already written beside it at {}", same.display()));
        report.path = same;
        return Ok(report);
    }
    let beside = free_name(&target);
    fs::rename(&tmp, &beside).map_err(io_err(&beside))?;
    report.outcome = Outcome::WrittenBeside;
    report.detail = Some(format!("another file is at {}", target.display()));
    report.path = beside;
    Ok(report)
}

/// Write `f`'s archived bytes to `path` (created or truncated): `Ok(Ok(bytes))`, or
/// `Ok(Err(why))` when the archive does not hold them all. For `gleaner reextract`'s copies.
pub async fn materialize(
    store: &Store,
    f: &ArchivedFile,
    shared: &mut Shared,
    path: &Path,
) -> Result<Result<u64, String>, RestoreError> {
    let io_err = |source| RestoreError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut out = io::BufWriter::with_capacity(1 << 20, File::create(path).map_err(io_err)?);
    let r = match write_chunks(store, f, shared, &mut out).await {
        Ok(r) => r.map_err(|p| p.why),
        Err(ChunkError::Store(e)) => return Err(e.into()),
        Err(ChunkError::Io(e)) => return Err(io_err(e)),
    };
    out.flush().map_err(io_err)?;
    Ok(r)
}

/// The `k`th name beside `target`: `<target>.restored`, then `.restored.2`, `.restored.3`...
fn beside_name(target: &Path, k: u32) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if k == 1 {
        target.with_file_name(format!("{name}.restored"))
    } else {
        target.with_file_name(format!("{name}.restored.{k}"))
    }
}

/// The first free name beside `target`.
fn free_name(target: &Path) -> PathBuf {
    (1..)
        .map(|k| beside_name(target, k))
        .find(|p| !p.exists())
        .unwrap_or_else(|| beside_name(target, 1))
}

/// Names beside a file looked at for an identical copy (a gap, a copy removed by hand, does
/// not end the search).
const BESIDE_LOOKED_AT: u32 = 64;

/// A copy beside `target` holding exactly the bytes of `restored`, if there is one.
fn same_beside(target: &Path, restored: &Path) -> io::Result<Option<PathBuf>> {
    let len = fs::metadata(restored)?.len();
    for p in (1..=BESIDE_LOOKED_AT).map(|k| beside_name(target, k)) {
        let Ok(m) = fs::metadata(&p) else {
            continue;
        };
        if m.len() == len && starts_with_file(&p, restored)? {
            return Ok(Some(p));
        }
    }
    Ok(None)
}

/// Whether the file at `existing` begins with every byte of the file at `restored`.
fn starts_with_file(existing: &Path, restored: &Path) -> io::Result<bool> {
    let (a, b) = (File::open(existing)?, File::open(restored)?);
    if a.metadata()?.len() < b.metadata()?.len() {
        return Ok(false);
    }
    let (mut a, mut b) = (
        BufReader::with_capacity(1 << 20, a),
        BufReader::with_capacity(1 << 20, b),
    );
    let (mut x, mut y) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        let n = read_full(&mut b, &mut y)?;
        if n == 0 {
            return Ok(true);
        }
        if read_full(&mut a, &mut x[..n])? != n || x[..n] != y[..n] {
            return Ok(false);
        }
    }
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// The sidecars of `f` beside its restored transcript at `transcript`: how many were written,
/// and the damaged ones (not written).
async fn restore_sidecars(
    store: &Store,
    opts: &RestoreOptions,
    f: &ArchivedFile,
    transcript: &Path,
) -> Result<(u64, Vec<FileReport>), RestoreError> {
    let Some(dir) = transcript.parent() else {
        return Ok((0, Vec::new()));
    };
    let mut n = 0;
    let mut damaged = Vec::new();
    for (name, codec, data) in store.archive_sidecars(f.id).await? {
        if codec != archive::CODEC_ZSTD || name.contains('/') || name.starts_with('.') {
            continue;
        }
        let path = dir.join(&name);
        let io_err = |source| RestoreError::Io {
            path: path.clone(),
            source,
        };
        let bytes = match archive::decode_all(&data) {
            Ok(b) => b,
            Err(e) => {
                damaged.push(FileReport {
                    session_id: f.session_id.clone(),
                    path: path.clone(),
                    outcome: Outcome::Damaged,
                    bytes: 0,
                    detail: Some(format!("its archived copy is damaged: {e}")),
                });
                continue;
            }
        };
        match fs::read(&path) {
            Ok(existing) if existing == bytes => continue,
            Ok(_) if !opts.force_suffix => continue,
            Ok(_) => {
                let beside = free_name(&path);
                fs::write(&beside, &bytes).map_err(io_err)?;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::write(&path, &bytes).map_err(io_err)?;
            }
            Err(e) => return Err(io_err(e)),
        }
        n += 1;
    }
    Ok((n, damaged))
}
