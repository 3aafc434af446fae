//! The chunks of the batches a tailer returns put the file back together, byte for byte,
//! whatever the appends, line lengths and limits.
#![allow(clippy::unwrap_used)]

use std::io::Write;

use proptest::prelude::*;

use super::*;
use crate::tail::{Tailer, TailerConfig};

/// Every chunk of every batch until the tailer has nothing more, decoded (or, deferred, read
/// again from the file) in offset order.
fn drain(
    t: &mut Tailer,
    path: &Path,
    max_bytes: usize,
    defer: bool,
    into: &mut Vec<(u64, Vec<u8>)>,
) {
    while let Some(b) = t.read_batch(max_bytes, 1_000).unwrap() {
        for c in batch_chunks(&b, path, defer).unwrap() {
            assert_eq!(c.generation, b.checkpoint.generation);
            let bytes = if c.deferred {
                assert_eq!(c.data.len(), 8, "a deferred chunk holds its digest only");
                read_deferred(path, c.start, c.end, &c.data).unwrap()
            } else {
                decode(&c.data, c.end - c.start, None).unwrap()
            };
            into.push((c.start, bytes));
        }
    }
}

fn reassembled(chunks: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (start, bytes) in chunks {
        assert_eq!(*start, out.len() as u64, "chunks are contiguous");
        out.extend_from_slice(bytes);
    }
    out
}

fn line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        // Short JSON-ish lines, some with CRLF, some blank.
        "[a-z{}:\" ]{0,40}".prop_map(|s| format!("{s}\n").into_bytes()),
        "[a-z]{0,10}".prop_map(|s| format!("{s}\r\n").into_bytes()),
        // Lines longer than the limit below.
        (100usize..400).prop_map(|n| {
            let mut v = vec![b'x'; n];
            v.push(b'\n');
            v
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn chunks_reassemble_the_file(
        bom in any::<bool>(),
        lines in prop::collection::vec(line(), 1..40),
        cuts in prop::collection::vec(1usize..120, 0..12),
        max_bytes in 16usize..300,
        defer in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut all = Vec::new();
        if bom {
            all.extend_from_slice(b"\xEF\xBB\xBF");
        }
        for l in &lines {
            all.extend_from_slice(l);
        }
        let cfg = TailerConfig { max_line_bytes: 64, read_chunk: 32 };
        std::fs::write(&path, b"").unwrap();
        let (mut t, _) = Tailer::open(&path, None, cfg).unwrap();
        let mut chunks = Vec::new();
        // Appended in pieces, read after each: batches start and end anywhere.
        let mut at = 0;
        for c in cuts.iter().chain(std::iter::once(&usize::MAX)) {
            let to = at + (*c).min(all.len() - at);
            let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
            f.write_all(&all[at..to]).unwrap();
            at = to;
            drain(&mut t, &path, max_bytes, defer, &mut chunks);
        }
        let got = reassembled(&chunks);
        // Everything up to the last newline is archived, nothing after it.
        let end = all.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        prop_assert_eq!(got, all[..end].to_vec());
    }
}

#[test]
fn a_damaged_chunk_does_not_decode() {
    let mut data = compress(b"{\"a\":1}\n{\"b\":2}\n", LIVE_LEVEL).unwrap();
    let n = data.len();
    data[n - 6] ^= 0x55;
    assert!(decode(&data, 16, None).is_err());
    // A frame of another length is refused too.
    let ok = compress(b"abc\n", LIVE_LEVEL).unwrap();
    assert!(decode(&ok, 5, None).is_err());
    assert_eq!(decode(&ok, 4, None).unwrap(), b"abc\n");
}

#[test]
fn a_deferred_chunk_is_read_again_only_while_the_file_holds_its_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    std::fs::write(&path, b"{\"a\":1}\n{\"b\":2}\n").unwrap();
    let digest = digest(b"{\"b\":2}\n").to_le_bytes();
    assert_eq!(
        read_deferred(&path, 8, 16, &digest).unwrap(),
        b"{\"b\":2}\n"
    );
    // Rewritten in place: the same length, other bytes.
    std::fs::write(&path, b"{\"a\":1}\n{\"b\":3}\n").unwrap();
    let e = read_deferred(&path, 8, 16, &digest).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    assert!(
        e.to_string().contains("no longer holds the bytes 8-16"),
        "{e}"
    );
    // Cut short, then gone.
    std::fs::write(&path, b"{\"a\":1}\n").unwrap();
    let e = read_deferred(&path, 8, 16, &digest).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    std::fs::remove_file(&path).unwrap();
    let e = read_deferred(&path, 8, 16, &digest).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::NotFound);
    // Stored data that is not a digest is damage.
    assert!(read_deferred(&path, 8, 16, b"xyz").is_err());
}
