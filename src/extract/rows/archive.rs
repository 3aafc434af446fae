//! What a batch hands the archive: its bytes' chunks and a sidecar file (`crate::archive`
//! makes them, `store::archive` writes them).

/// One stretch of a transcript's bytes as the archive keeps it: `[start, end)` of generation
/// `generation`, as one zstd frame (`data`) of exactly `end - start` bytes; or, `deferred`, the
/// digest of bytes left in the file to be archived straight into a block (`crate::archive`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArchiveChunk {
    /// Generation of the file the bytes belong to.
    pub generation: i64,
    /// File offset of the first byte.
    pub start: u64,
    /// File offset just past the last byte.
    pub end: u64,
    /// The compressed bytes.
    pub data: Vec<u8>,
    /// A block made by packing several chunks (not a batch's own).
    pub packed: bool,
    /// A last line without its newline (see migration 0019).
    pub partial: bool,
    /// Not archived yet: `data` is the digest of the bytes, which packing reads again from the
    /// file (`crate::archive::CODEC_DEFERRED`).
    pub deferred: bool,
}

/// A file kept beside a transcript, compressed whole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sidecar {
    /// Its file name, in the transcript's folder.
    pub name: String,
    /// The compressed bytes.
    pub data: Vec<u8>,
}
