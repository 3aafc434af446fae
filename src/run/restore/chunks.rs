//! Reading archived files back: every chunk of a file's generation decoded in offset order
//! ([`write_chunks`]), what can be wrong with them ([`Problem`]: bytes missing, or damaged), and
//! `gleaner restore --check` ([`verify`]), which reads the whole archive back writing nothing.

use std::io::{self, Write};
use std::path::PathBuf;

use super::{FileReport, Outcome, RestoreError, RestoreReport, Shared, SharedError, PAGE};
use crate::archive;
use crate::store::{ArchiveFilter, ArchivedFile, Store, StoreError};

pub(super) enum ChunkError {
    Store(StoreError),
    Io(io::Error),
}

/// Why a file's archived bytes cannot be written out whole.
pub(super) struct Problem {
    /// The bytes are there but damaged (else: missing).
    pub(super) damaged: bool,
    /// What is wrong, and where.
    pub(super) why: String,
}

impl Problem {
    fn missing(why: String) -> Problem {
        Problem {
            damaged: false,
            why,
        }
    }

    fn damaged(why: String) -> Problem {
        Problem { damaged: true, why }
    }

    /// What it makes of `f`: damaged, incomplete, or (bytes missing because a prune that ran
    /// meanwhile took them: no loss) pruned; with what to say.
    pub(super) async fn outcome(
        self,
        store: &Store,
        f: &ArchivedFile,
    ) -> Result<(Outcome, Option<String>), StoreError> {
        if self.damaged {
            return Ok((Outcome::Damaged, Some(self.why)));
        }
        let pruned = match &f.session_id {
            Some(sid) => store.pruned_at(sid).await?,
            None => None,
        };
        Ok(match pruned {
            Some(at) => (
                Outcome::Pruned,
                Some(format!("its session was pruned at {at}")),
            ),
            None => (Outcome::Incomplete, Some(self.why)),
        })
    }
}

/// Decode `f`'s chunks into `out` in offset order: `Ok(Ok(bytes))`, or `Ok(Err(problem))` when
/// they leave a gap, stop before the checkpoint, or one is damaged (it does not decode, its
/// checksum fails, or the database cannot read it). Each chunk is decoded whole before it is
/// written (a block is at most [`archive::BLOCK_BYTES`]), so damage is told from a failed write.
pub(super) async fn write_chunks(
    store: &Store,
    f: &ArchivedFile,
    shared: &mut Shared,
    out: &mut impl Write,
) -> Result<Result<u64, Problem>, ChunkError> {
    let mut pos: i64 = 0;
    let path: std::sync::Arc<std::path::Path> = std::path::Path::new(&f.path).into();
    loop {
        let chunks = match store.archive_chunks(f.id, f.generation, pos).await {
            Ok(c) => c,
            Err(e) if e.is_transient() && !e.is_corrupt() => return Err(ChunkError::Store(e)),
            Err(e) => {
                return Ok(Err(Problem::damaged(format!(
                    "the database cannot read its archive from byte {pos}: {e}"
                ))))
            }
        };
        let Some(last) = chunks.last() else { break };
        let next = last.end_off;
        for c in chunks {
            if c.start_off != pos {
                return Ok(Err(Problem::missing(format!(
                    "the archive lacks bytes {pos} to {}",
                    c.start_off
                ))));
            }
            if c.codec == archive::CODEC_LOST {
                return Ok(Err(Problem::missing(format!(
                    "bytes {}-{} were read but their transcript lost them before they were \
                     archived (deleted or rewritten)",
                    c.start_off, c.end_off
                ))));
            }
            if c.codec != archive::CODEC_ZSTD && c.codec != archive::CODEC_DEFERRED {
                return Ok(Err(Problem::damaged(format!(
                    "the chunk of bytes {}-{} has unknown codec {}",
                    c.start_off, c.end_off, c.codec
                ))));
            }
            let (start, end) = (c.start_off, c.end_off);
            let deferred = c.codec == archive::CODEC_DEFERRED;
            let enc = match shared.encoded(store, c, &path).await {
                Ok(e) => e,
                Err(SharedError::Store(e)) if e.is_transient() && !e.is_corrupt() => {
                    return Err(ChunkError::Store(e))
                }
                Err(e) => return Ok(Err(Problem::damaged(e.to_string()))),
            };
            let bytes = match enc.bytes() {
                Ok(b) => b,
                // Not archived yet, and the transcript no longer holds them: missing, not
                // damaged.
                Err(e) if deferred => {
                    return Ok(Err(Problem::missing(format!(
                        "bytes {start}-{end} were read but not archived yet, and: {e}"
                    ))))
                }
                Err(e) => {
                    return Ok(Err(Problem::damaged(format!(
                        "the chunk of bytes {start}-{end} is damaged: {e}"
                    ))))
                }
            };
            out.write_all(&bytes).map_err(ChunkError::Io)?;
            pos = end;
        }
        if pos != next {
            break;
        }
    }
    if pos < f.byte_offset {
        return Ok(Err(Problem::missing(format!(
            "the archive holds {pos} of the {} bytes read",
            f.byte_offset
        ))));
    }
    Ok(Ok(pos as u64))
}

/// Read every archived file `filter` selects back as a restore would, writing nothing
/// (`gleaner restore --check`): each file is `Present` (whole), `Incomplete`, `Damaged` (named
/// with what is wrong) or `Pruned`; a damaged sidecar is reported on its own.
pub async fn verify(
    store: &Store,
    filter: &ArchiveFilter,
    mut progress: impl FnMut(&FileReport),
) -> Result<RestoreReport, RestoreError> {
    let mut report = RestoreReport::default();
    let mut shared = Shared::default();
    let mut after = (String::new(), 0);
    loop {
        let files = store
            .archived_files(filter, (&after.0, after.1), PAGE)
            .await?;
        let Some(last) = files.last() else { break };
        after = (last.project.clone(), last.id);
        for f in &files {
            let mut r = FileReport {
                session_id: f.session_id.clone(),
                path: PathBuf::from(&f.path),
                outcome: Outcome::Present,
                bytes: 0,
                detail: None,
            };
            match write_chunks(store, f, &mut shared, &mut io::sink()).await {
                Ok(Ok(n)) => {
                    r.bytes = n;
                    report.present += 1;
                }
                Ok(Err(p)) => (r.outcome, r.detail) = p.outcome(store, f).await?,
                Err(ChunkError::Store(e)) => return Err(e.into()),
                Err(ChunkError::Io(e)) => {
                    return Err(RestoreError::Io {
                        path: r.path,
                        source: e,
                    })
                }
            }
            for (name, _codec, data) in store.archive_sidecars(f.id).await? {
                if let Err(e) = archive::decode_all(&data) {
                    let d = FileReport {
                        session_id: f.session_id.clone(),
                        path: r.path.with_file_name(&name),
                        outcome: Outcome::Damaged,
                        bytes: 0,
                        detail: Some(format!("its archived copy is damaged: {e}")),
                    };
                    report.damaged += 1;
                    progress(&d);
                    report.problems.push(d);
                }
            }
            match r.outcome {
                Outcome::Damaged => report.damaged += 1,
                Outcome::Incomplete => report.incomplete += 1,
                Outcome::Pruned => report.pruned += 1,
                _ => {}
            }
            progress(&r);
            if !matches!(r.outcome, Outcome::Present | Outcome::Pruned) {
                report.problems.push(r);
            }
        }
    }
    Ok(report)
}
