//! How a few values are encoded for storage, on both backends: line uuids in 16 bytes, the
//! episode builder's state compressed. Both were large shares of the database (issue 13) and
//! neither is ever searched or compared as text inside SQL.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::Read;

/// A line uuid as stored in `messages.uuid` / `parent_uuid`: the 16 bytes of a canonical
/// lowercase UUID (`8-4-4-4-12` hex digits), else the text's own bytes (unknown id formats are
/// data, kept as they came). 16 bytes instead of 36 characters per id: two ids a row were a
/// sixth of the messages table (issue 13). [`uuid_from_bytes`] is the way back.
pub fn uuid_bytes(uuid: &str) -> Cow<'_, [u8]> {
    match uuid_stored(uuid) {
        StoredUuid::Canonical(b) => Cow::Owned(b.to_vec()),
        StoredUuid::Other(b) => Cow::Borrowed(b),
    }
}

/// [`uuid_bytes`] without an allocation (the SQLite writer binds it at once, two per row).
pub fn uuid_stored(uuid: &str) -> StoredUuid<'_> {
    match canonical_uuid(uuid.as_bytes()) {
        Some(b) => StoredUuid::Canonical(b),
        None => StoredUuid::Other(uuid.as_bytes()),
    }
}

/// The stored bytes of a line uuid (see [`uuid_bytes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredUuid<'a> {
    /// A canonical UUID's 16 bytes.
    Canonical([u8; 16]),
    /// Any other id, as it came.
    Other(&'a [u8]),
}

impl StoredUuid<'_> {
    /// The bytes to store.
    pub fn as_slice(&self) -> &[u8] {
        match self {
            StoredUuid::Canonical(b) => b,
            StoredUuid::Other(b) => b,
        }
    }
}

/// The 16 bytes of a canonical lowercase UUID, checked and decoded in one pass (it runs twice
/// for every message row the writer stores). Upper case is not canonical: it would not read
/// back as it was written.
fn canonical_uuid(s: &[u8]) -> Option<[u8; 16]> {
    // Where each byte's two hex digits start in `8-4-4-4-12`.
    const AT: [usize; 16] = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
    let s: &[u8; 36] = s.try_into().ok()?;
    if s[8] != b'-' || s[13] != b'-' || s[18] != b'-' || s[23] != b'-' {
        return None;
    }
    let (mut out, mut bad) = ([0u8; 16], 0u8);
    for (o, &i) in out.iter_mut().zip(AT.iter()) {
        let (hi, lo) = (HEX[usize::from(s[i])], HEX[usize::from(s[i + 1])]);
        bad |= hi | lo;
        *o = hi << 4 | lo;
    }
    (bad & 0xF0 == 0).then_some(out)
}

/// The value of a lowercase hex digit, 0xFF for any other byte (a table: the writer decodes
/// two uuids a row, and a match per digit was a few percent of its time).
const HEX: [u8; 256] = {
    let mut t = [0xFF; 256];
    let mut d = 0;
    while d < 10 {
        t[b'0' as usize + d] = d as u8;
        d += 1;
    }
    let mut d = 0;
    while d < 6 {
        t[b'a' as usize + d] = 10 + d as u8;
        d += 1;
    }
    t
};

/// The text of a stored uuid (see [`uuid_bytes`]): 16 bytes are a canonical UUID. (An id in
/// some other format that is exactly 16 bytes long would read back as hex; none is known.)
pub fn uuid_from_bytes(b: &[u8]) -> String {
    if b.len() != 16 {
        return String::from_utf8_lossy(b).into_owned();
    }
    let mut s = String::with_capacity(36);
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        // Writing into a String cannot fail.
        let _ = write!(s, "{byte:02x}");
    }
    s
}

/// The episode builder's state (JSON) as stored in `files.episode_state`: zstd-compressed.
/// Why: it is rewritten with every checkpoint of a main file and holds the open episode's text,
/// 2.4 KB a file on average and 35 KB for a long session; compressed it is under half that
/// (the vocabulary's hashes hardly compress). Why zstd, with one context per thread: on the
/// bench tree's 3,598 states level 3 was 1.6x faster than zlib's fastest level and a little
/// smaller (5.89 vs 5.92 MB), and a fresh zlib compressor per state (300 KB to allocate and
/// clear) was 5% of the reading threads' instructions. Why level 1: with 32-bit terms the
/// states are 4.76 MB at level 1 against 4.66 MB at 3, and compressing was 4% of a reading
/// thread's time at 3 (every batch of a main file packs its state).
pub fn pack_state(json: &str) -> Vec<u8> {
    thread_local! {
        static ZSTD: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
            const { std::cell::RefCell::new(None) };
    }
    let packed = ZSTD.with(|z| {
        let mut z = z.borrow_mut();
        if z.is_none() {
            *z = zstd::bulk::Compressor::new(STATE_LEVEL).ok();
        }
        z.as_mut()?.compress(json.as_bytes()).ok()
    });
    // A context that cannot be made (out of memory) stores the JSON as it is.
    packed.unwrap_or_else(|| json.as_bytes().to_vec())
}

/// Largest state decoded in one buffer sized from the frame header: a state is at most a few
/// hundred KB (`episode::tests::state_stays_small`), and a damaged header must not make us
/// reserve gigabytes. A larger (or unsized) frame is decoded as a stream, which grows as it goes.
const STATE_MAX_BYTES: u64 = 16 << 20;

/// A zstd state decoded with this thread's context (a new one per state was most of the cost of
/// reading thousands of them back when a backfill's sessions are finished). [`pack_state`]
/// records the size in the frame; a frame without one is decoded as a stream.
fn unzstd(stored: &[u8]) -> Option<String> {
    thread_local! {
        static UNZSTD: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
            const { std::cell::RefCell::new(None) };
    }
    let size = zstd::zstd_safe::get_frame_content_size(stored)
        .ok()
        .flatten()
        .filter(|n| *n <= STATE_MAX_BYTES);
    let bytes = match size {
        Some(n) => UNZSTD.with(|d| {
            let mut d = d.borrow_mut();
            if d.is_none() {
                *d = zstd::bulk::Decompressor::new().ok();
            }
            d.as_mut()?.decompress(stored, n as usize).ok()
        })?,
        None => {
            let mut out = Vec::with_capacity(stored.len() * 4);
            zstd::stream::read::Decoder::new(stored)
                .ok()?
                .read_to_end(&mut out)
                .ok()?;
            out
        }
    };
    String::from_utf8(bytes).ok()
}

/// zstd level of [`pack_state`].
const STATE_LEVEL: i32 = 1;

/// The JSON of a stored state (see [`pack_state`]): zstd (frame magic `28 b5 2f fd`); zlib
/// (states written before zstd; a zlib stream starts with `x`), or the JSON itself (states
/// written before compression; it starts with `{`). `None` if it is none of these.
pub fn unpack_state(stored: &[u8]) -> Option<String> {
    if stored.first() == Some(&b'{') {
        return String::from_utf8(stored.to_vec()).ok();
    }
    if stored.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        return unzstd(stored);
    }
    let mut out = String::with_capacity(stored.len() * 4);
    flate2::read::ZlibDecoder::new(stored)
        .read_to_string(&mut out)
        .ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_stored_in_16_bytes_and_read_back() {
        let u = "0b5e7c2a-91d4-4f3e-8a6b-2c1d0e9f8a7b";
        let b = uuid_bytes(u);
        assert_eq!(b.len(), 16);
        assert_eq!(b[0], 0x0b);
        assert_eq!(uuid_from_bytes(&b), u);
        // Anything else is kept as its own bytes: upper case, no dashes, other formats.
        for other in [
            "0B5E7C2A-91D4-4F3E-8A6B-2C1D0E9F8A7B",
            "0b5e7c2a91d44f3e8a6b2c1d0e9f8a7b",
            "msg_01XyZ",
            "",
            "0b5e7c2a-91d4-4f3e-8a6b-2c1d0e9f8a7g",
            "g b5e7c2a-91d4-4f3e-8a6b-2c1d0e9f8a7",
            "0b5e7c2a-91d4-4f3e-8a6b-2c1d0e9f8a-b",
            "0b5e7c2a-91d4-4f3e-8a6b2-c1d0e9f8a7b",
        ] {
            assert_eq!(uuid_bytes(other).as_ref(), other.as_bytes());
            assert_eq!(uuid_from_bytes(&uuid_bytes(other)), other);
        }
    }

    #[test]
    fn states_pack_and_unpack() {
        let json = format!(
            "{{\"v\":\"1\",\"last_text\":\"{}\"}}",
            "retry the cache ".repeat(200)
        );
        let packed = pack_state(&json);
        assert!(
            packed.len() * 4 < json.len(),
            "{} of {}",
            packed.len(),
            json.len()
        );
        assert_eq!(unpack_state(&packed).as_deref(), Some(json.as_str()));
        // Stored before compression: the JSON's own bytes.
        assert_eq!(
            unpack_state(json.as_bytes()).as_deref(),
            Some(json.as_str())
        );
        assert_eq!(unpack_state(b"garbage"), None);
        // Stored zlib-compressed (before zstd).
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut z, json.as_bytes()).unwrap();
        let zlib = z.finish().unwrap();
        assert_eq!(unpack_state(&zlib).as_deref(), Some(json.as_str()));
        // A damaged zstd state is no state (the builder starts afresh), never a panic: cut
        // short, or with a frame header claiming 2^40 bytes.
        let packed = pack_state(&json);
        assert_eq!(unpack_state(&packed).as_deref(), Some(json.as_str()));
        assert_eq!(unpack_state(&packed[..packed.len() / 2]), None);
        let mut huge = vec![0x28, 0xb5, 0x2f, 0xfd, 0xe0];
        huge.extend_from_slice(&(1u64 << 40).to_le_bytes());
        huge.extend_from_slice(&packed[packed.len() / 2..]);
        assert_eq!(unpack_state(&huge), None);
    }
}
