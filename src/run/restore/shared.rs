//! What several archived chunks share, kept while a reader walks them: the dictionaries of
//! chunks packed before issue 48 and the packed blocks, decoded once.

use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::sync::Arc;

use crate::archive::{self, Body, Encoded};
use crate::store::{Store, StoreError, StoredChunk};

/// Dictionaries kept at once (each up to 4 MiB).
const DICTS_KEPT: usize = 4;

/// Decoded blocks kept at once (each up to [`archive::BLOCK_BYTES`]): a restore walks files in
/// id order and packing filled blocks in that order, so the files of one block come together.
const BLOCKS_KEPT: usize = 2;

/// Dictionaries and blocks met last, by id, ready to read from.
#[derive(Debug, Default)]
pub struct Shared {
    dicts: HashMap<i64, Arc<archive::Dict>>,
    blocks: HashMap<i64, Arc<[u8]>>,
}

impl Shared {
    /// A stored chunk of the file at `path` as a reader takes it: its frame with its
    /// dictionary, its stretch of its block (decoded), or, not archived yet, the file's bytes.
    pub async fn encoded(
        &mut self,
        store: &Store,
        c: StoredChunk,
        path: &Arc<Path>,
    ) -> Result<Encoded, SharedError> {
        if c.codec == archive::CODEC_LOST {
            return Ok(Encoded {
                start: c.start_off as u64,
                end: c.end_off as u64,
                body: Body::Unreadable(format!(
                    "bytes {}-{} were lost from the transcript before they were archived",
                    c.start_off, c.end_off
                )),
            });
        }
        if c.codec == archive::CODEC_DEFERRED && c.block_id.is_none() {
            return Ok(Encoded {
                start: c.start_off as u64,
                end: c.end_off as u64,
                body: Body::Disk {
                    path: path.clone(),
                    data: c.data,
                },
            });
        }
        let body = match (c.block_id, c.dict_id) {
            (Some(id), _) => Body::Block {
                raw: self.block(store, id).await?,
                at: c.block_off.unwrap_or(0) as u64,
            },
            (None, Some(id)) => Body::Frame {
                data: c.data,
                dict: Some(self.dict(store, id).await?),
            },
            (None, None) => Body::Frame {
                data: c.data,
                dict: None,
            },
        };
        Ok(Encoded {
            start: c.start_off as u64,
            end: c.end_off as u64,
            body,
        })
    }

    /// Dictionary `id`, prepared.
    async fn dict(&mut self, store: &Store, id: i64) -> Result<Arc<archive::Dict>, SharedError> {
        if let Some(d) = self.dicts.get(&id) {
            return Ok(d.clone());
        }
        let d = store
            .archive_dict(id)
            .await?
            .ok_or(SharedError::Missing("dictionary", id))?;
        let raw = archive::decode(&d.data, d.raw_len as u64, None)
            .map_err(|e| SharedError::Damaged("dictionary", id, e))?;
        let dict = Arc::new(archive::Dict::new(raw.into()));
        if self.dicts.len() >= DICTS_KEPT {
            self.dicts.clear();
        }
        self.dicts.insert(id, dict.clone());
        Ok(dict)
    }

    /// Block `id`, decoded.
    async fn block(&mut self, store: &Store, id: i64) -> Result<Arc<[u8]>, SharedError> {
        if let Some(b) = self.blocks.get(&id) {
            return Ok(b.clone());
        }
        let b = store
            .archive_block(id)
            .await?
            .ok_or(SharedError::Missing("block", id))?;
        if b.codec != archive::CODEC_ZSTD {
            return Err(SharedError::Damaged(
                "block",
                id,
                io::Error::other(format!("unknown codec {}", b.codec)),
            ));
        }
        // Decoded in place, as every chunk is: tens of milliseconds for a whole block.
        let raw: Arc<[u8]> = archive::decode(&b.data, b.raw_len as u64, None)
            .map_err(|e| SharedError::Damaged("block", id, e))?
            .into();
        if self.blocks.len() >= BLOCKS_KEPT {
            self.blocks.clear();
        }
        self.blocks.insert(id, raw.clone());
        Ok(raw)
    }
}

/// Why a dictionary or block cannot be used (the chunks naming it cannot be read).
#[derive(Debug, thiserror::Error)]
pub enum SharedError {
    /// The database.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No such dictionary or block.
    #[error("archive {0} {1} is missing")]
    Missing(&'static str, i64),
    /// It does not decode.
    #[error("archive {0} {1} does not decode: {2}")]
    Damaged(&'static str, i64, #[source] io::Error),
}
