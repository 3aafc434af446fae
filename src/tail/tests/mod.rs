//! Tests of `tailer` (kept apart so the module itself stays readable).
// Tests fail loudly by design; unwrap is the clearest way to say "must not fail".
#![allow(clippy::unwrap_used)]

use super::*;
use proptest::prelude::*;
use std::fs::OpenOptions;
use std::io::Write;

mod finished;
mod lifecycle;
mod model;

/// One observable event, comparable across runs.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ev {
    Line {
        generation: i64,
        line_no: u64,
        offset: u64,
        len: u64,
        content: Vec<u8>,
    },
    TooLong {
        generation: i64,
        line_no: u64,
        offset: u64,
        len: u64,
    },
}

fn cfg(max_line: usize, chunk: usize) -> TailerConfig {
    TailerConfig {
        max_line_bytes: max_line,
        read_chunk: chunk,
    }
}

fn append(p: &Path, b: &[u8]) {
    let mut f = OpenOptions::new()
        .append(true)
        .create(true)
        .open(p)
        .unwrap();
    f.write_all(b).unwrap();
}

fn write(p: &Path, b: &[u8]) {
    std::fs::write(p, b).unwrap();
}

/// Writes `b` to a sibling temp file and renames it over `p` (new inode).
fn rename_over(p: &Path, b: &[u8]) {
    let tmp = p.with_extension("tmp");
    std::fs::write(&tmp, b).unwrap();
    std::fs::rename(&tmp, p).unwrap();
}

fn batch_events(b: &Batch, out: &mut Vec<Ev>) {
    // Lines and diagnostics are each in file order; merge by offset.
    let mut evs: Vec<Ev> = b
        .lines
        .iter()
        .map(|l| Ev::Line {
            generation: b.generation,
            line_no: l.line_no,
            offset: l.offset,
            len: l.len,
            content: b.line_bytes(l).to_vec(),
        })
        .collect();
    for d in &b.diagnostics {
        let TailDiagnostic::TooLong {
            line_no,
            offset,
            len,
        } = *d;
        evs.push(Ev::TooLong {
            generation: b.generation,
            line_no,
            offset,
            len,
        });
    }
    evs.sort_by_key(|e| match e {
        Ev::Line { offset, .. } | Ev::TooLong { offset, .. } => *offset,
    });
    out.extend(evs);
}

/// Reads until caught up; returns events and the resumes seen.
fn drain_with(t: &mut Tailer, max_bytes: usize, max_lines: usize) -> (Vec<Ev>, Vec<Resume>) {
    let mut evs = Vec::new();
    let mut resumes = Vec::new();
    let mut guard = 0;
    while let Some(b) = t.read_batch(max_bytes, max_lines).unwrap() {
        assert_eq!(b.generation, b.checkpoint.generation);
        assert!(b.lines.len() <= max_lines.max(1));
        if let Some(r) = b.resume {
            resumes.push(r);
            assert_eq!(b.start_offset, 0);
        }
        assert_eq!(&b.checkpoint, t.checkpoint());
        batch_events(&b, &mut evs);
        guard += 1;
        assert!(guard < 1_000_000);
    }
    (evs, resumes)
}

fn drain(t: &mut Tailer) -> Vec<Ev> {
    drain_with(t, usize::MAX, usize::MAX).0
}

/// Reference splitter: what reading `content` whole must produce.
fn reference(content: &[u8], max_line: usize, generation: i64) -> Vec<Ev> {
    let mut evs = Vec::new();
    let mut off = 0usize;
    let mut line_no = 0u64;
    while let Some(i) = content[off..].iter().position(|&b| b == b'\n') {
        line_no += 1;
        let raw = &content[off..off + i];
        if raw.len() > max_line {
            evs.push(Ev::TooLong {
                generation,
                line_no,
                offset: off as u64,
                len: i as u64 + 1,
            });
        } else {
            let mut c = raw.strip_suffix(b"\r").unwrap_or(raw);
            if off == 0 {
                c = c.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(c);
            }
            if !c.is_empty() {
                evs.push(Ev::Line {
                    generation,
                    line_no,
                    offset: off as u64,
                    len: i as u64 + 1,
                    content: c.to_vec(),
                });
            }
        }
        off += i + 1;
    }
    evs
}

fn committed_end(content: &[u8]) -> usize {
    content
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1)
}

/// Checkpoint invariants against the file content it describes.
fn check_cp(cp: &Checkpoint, content: &[u8]) {
    let off = cp.offset as usize;
    assert!(off <= content.len());
    assert!(
        off == 0 || content[off - 1] == b'\n',
        "offset not after '\\n'"
    );
    let nl = content[..off].iter().filter(|&&b| b == b'\n').count() as u64;
    assert_eq!(cp.lines, nl);
    let hl = off.min(HEAD_BYTES as usize);
    assert_eq!(cp.head_len as usize, hl);
    assert_eq!(cp.head_hash, fingerprint(&content[..hl]));
    let tl = off.min(TAIL_BYTES as usize);
    assert_eq!(cp.tail_len as usize, tl);
    assert_eq!(cp.tail_hash, fingerprint(&content[off - tl..off]));
}

fn line(ev: &Ev) -> (u64, u64, &[u8]) {
    match ev {
        Ev::Line {
            line_no,
            offset,
            content,
            ..
        } => (*line_no, *offset, content),
        Ev::TooLong { .. } => panic!("not a line: {ev:?}"),
    }
}

fn setup() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.jsonl");
    (dir, p)
}

/// Write `before`, read it all, stop; write `after`; open again from the checkpoint.
fn reopen_after(p: &Path, before: &[u8], after: &[u8]) -> (Tailer, Resume) {
    write(p, before);
    let (mut t, _) = Tailer::open(p, None, TailerConfig::default()).unwrap();
    drain(&mut t);
    let cp = t.checkpoint().clone();
    drop(t);
    write(p, after);
    Tailer::open(p, Some(cp), TailerConfig::default()).unwrap()
}

#[test]
fn growth_returns_each_line_once_in_order() {
    let (_d, p) = setup();
    write(&p, b"{\"a\":1}\n{\"b\":2}\n");
    let (mut t, r) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
    assert_eq!(r, Resume::New);
    assert_eq!(t.checkpoint().generation, 1);
    let evs = drain(&mut t);
    assert_eq!(evs.len(), 2);
    assert_eq!(line(&evs[0]), (1, 0, &b"{\"a\":1}"[..]));
    assert_eq!(line(&evs[1]), (2, 8, &b"{\"b\":2}"[..]));
    assert!(t.read_batch(usize::MAX, usize::MAX).unwrap().is_none());
    append(&p, b"{\"c\":3}\n");
    let b = t.read_batch(usize::MAX, usize::MAX).unwrap().unwrap();
    assert_eq!(b.start_offset, 16);
    assert_eq!(b.resume, None);
    assert_eq!(b.lines.len(), 1);
    assert_eq!(b.lines[0].line_no, 3);
    assert_eq!(b.lines[0].offset, 16);
    assert_eq!(b.lines[0].len, 8);
    assert_eq!(b.line_bytes(&b.lines[0]), b"{\"c\":3}");
    check_cp(&b.checkpoint, &std::fs::read(&p).unwrap());
}

#[test]
fn drained_means_no_complete_line_left() {
    let (_d, p) = setup();
    // Three lines and a final line that never gets its newline.
    write(&p, b"a\nb\nc\npartial");
    let (mut t, _) = Tailer::open(&p, None, cfg(1024, 2)).unwrap();
    let b = t.read_batch(usize::MAX, 2).unwrap().unwrap();
    assert_eq!(b.lines.len(), 2);
    assert!(!b.drained, "line c is still unread");
    let b = t.read_batch(usize::MAX, 2).unwrap().unwrap();
    assert_eq!(b.lines.len(), 1);
    assert!(b.drained, "only the partial line is left");
    assert!(b.checkpoint.offset < std::fs::metadata(&p).unwrap().len());
    assert!(t.read_batch(usize::MAX, 2).unwrap().is_none());
    // A batch cut by the line limit exactly at the end of the file is drained too.
    let (_d2, p2) = setup();
    write(&p2, b"a\nb\n");
    let (mut t, _) = Tailer::open(&p2, None, TailerConfig::default()).unwrap();
    assert!(t.read_batch(usize::MAX, 2).unwrap().unwrap().drained);
    // A byte limit leaves lines unread.
    let (mut t, _) = Tailer::open(&p2, None, TailerConfig::default()).unwrap();
    assert!(!t.read_batch(2, usize::MAX).unwrap().unwrap().drained);
}

#[test]
fn partial_line_is_buffered_not_reread() {
    let (_d, p) = setup();
    write(&p, b"first\n");
    let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
    assert_eq!(drain(&mut t).len(), 1);
    let n = 1000u64;
    for i in 0..n {
        append(&p, &[b'a' + (i % 26) as u8]);
        assert!(t.read_batch(usize::MAX, usize::MAX).unwrap().is_none());
        assert_eq!(t.buffered_bytes() as u64, i + 1);
        assert_eq!(t.checkpoint().offset, 6);
    }
    append(&p, b"\n");
    let evs = drain(&mut t);
    assert_eq!(evs.len(), 1);
    let (no, off, c) = line(&evs[0]);
    assert_eq!((no, off, c.len() as u64), (2, 6, n));
    assert_eq!(t.buffered_bytes(), 0);
    // Each call reads its new byte plus a fixed overlap check: O(n), not O(n^2).
    let bound = 6 + (n + 1) * (1 + VERIFY_BYTES) + 64;
    assert!(t.bytes_read() <= bound, "read {} > {bound}", t.bytes_read());
    check_cp(t.checkpoint(), &std::fs::read(&p).unwrap());
}

#[test]
fn reopen_rereads_only_the_partial_line() {
    let (_d, p) = setup();
    let big = vec![b'x'; 5000];
    let mut content = big;
    content.push(b'\n');
    content.extend_from_slice(b"partial");
    write(&p, &content);
    let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
    assert_eq!(drain(&mut t).len(), 1);
    assert_eq!(t.buffered_bytes(), 7);
    let cp = t.checkpoint().clone();
    drop(t);
    let (mut t, r) = Tailer::open(&p, Some(cp), TailerConfig::default()).unwrap();
    assert_eq!(r, Resume::Continue);
    let validation = t.bytes_read();
    assert!(validation <= HEAD_BYTES + TAIL_BYTES);
    assert!(drain(&mut t).is_empty());
    assert_eq!(t.bytes_read() - validation, 7);
    append(&p, b" done\n");
    let evs = drain(&mut t);
    assert_eq!(line(&evs[0]), (2, 5001, &b"partial done"[..]));
}

#[test]
fn blank_lines_count_but_are_not_returned() {
    let (_d, p) = setup();
    write(&p, b"\n\r\na\n\n\nb\n\n");
    let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
    let evs = drain(&mut t);
    assert_eq!(evs.len(), 2);
    assert_eq!(line(&evs[0]), (3, 3, &b"a"[..]));
    assert_eq!(line(&evs[1]), (6, 7, &b"b"[..]));
    assert_eq!(t.checkpoint().offset, 10);
    assert_eq!(t.checkpoint().lines, 7);
    // Only blank lines: still a batch, so the checkpoint can advance.
    append(&p, b"\n\n");
    let b = t.read_batch(100, 100).unwrap().unwrap();
    assert!(b.lines.is_empty());
    assert_eq!(b.checkpoint.offset, 12);
    assert_eq!(b.checkpoint.lines, 9);
    check_cp(&b.checkpoint, &std::fs::read(&p).unwrap());
}

#[test]
fn crlf_is_stripped() {
    let (_d, p) = setup();
    write(&p, b"one\r\ntwo\r\r\n");
    let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
    let evs = drain(&mut t);
    assert_eq!(line(&evs[0]), (1, 0, &b"one"[..]));
    assert_eq!(line(&evs[1]), (2, 5, &b"two\r"[..]));
    match &evs[0] {
        Ev::Line { len, .. } => assert_eq!(*len, 5),
        Ev::TooLong { .. } => unreachable!(),
    }
}

#[test]
fn bom_is_stripped_only_at_file_start() {
    let (_d, p) = setup();
    write(&p, b"\xEF\xBB\xBF{}\r\n\xEF\xBB\xBF{}\n");
    let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
    let evs = drain(&mut t);
    assert_eq!(line(&evs[0]), (1, 0, &b"{}"[..]));
    assert_eq!(line(&evs[1]), (2, 7, &b"\xEF\xBB\xBF{}"[..]));
}

#[test]
fn over_long_line_is_skipped_without_buffering() {
    let (_d, p) = setup();
    let c = cfg(64, 16);
    write(&p, b"ok1\n");
    let (mut t, _) = Tailer::open(&p, None, c).unwrap();
    assert_eq!(drain(&mut t).len(), 1);
    let long = vec![b'L'; 1000];
    for piece in long.chunks(37) {
        append(&p, piece);
        assert!(t.read_batch(usize::MAX, usize::MAX).unwrap().is_none());
        assert!(
            t.buffered_bytes() <= 64 + 16,
            "buffered {}",
            t.buffered_bytes()
        );
    }
    append(&p, b"\nok2\n");
    let evs = drain(&mut t);
    assert_eq!(
        evs[0],
        Ev::TooLong {
            generation: 1,
            line_no: 2,
            offset: 4,
            len: 1001
        }
    );
    assert_eq!(line(&evs[1]), (3, 1005, &b"ok2"[..]));
    check_cp(t.checkpoint(), &std::fs::read(&p).unwrap());
    // Exactly max_line_bytes is fine; one more is too long.
    let mut exact = vec![b'e'; 64];
    exact.push(b'\n');
    exact.extend(vec![b'f'; 65]);
    exact.push(b'\n');
    append(&p, &exact);
    let evs = drain(&mut t);
    assert_eq!(line(&evs[0]).2.len(), 64);
    assert!(matches!(
        evs[1],
        Ev::TooLong {
            line_no: 5,
            len: 66,
            ..
        }
    ));
}

#[test]
fn restart_mid_skip_rescans_from_committed_offset() {
    let (_d, p) = setup();
    let c = cfg(64, 16);
    write(&p, b"a\n");
    append(&p, &[b'L'; 200]);
    let (mut t, _) = Tailer::open(&p, None, c).unwrap();
    assert_eq!(drain(&mut t).len(), 1);
    let cp = t.checkpoint().clone();
    assert_eq!(cp.offset, 2);
    drop(t);
    append(&p, b"\nb\n");
    let (mut t, r) = Tailer::open(&p, Some(cp), c).unwrap();
    assert_eq!(r, Resume::Continue);
    let evs = drain(&mut t);
    assert!(matches!(
        evs[0],
        Ev::TooLong {
            line_no: 2,
            offset: 2,
            len: 201,
            ..
        }
    ));
    assert_eq!(line(&evs[1]), (3, 203, &b"b"[..]));
}
#[test]
fn batch_limits() {
    let (_d, p) = setup();
    let mut content = Vec::new();
    for i in 0..100 {
        content.extend_from_slice(format!("line-{i:03}\n").as_bytes());
    }
    write(&p, &content);
    let (mut t, _) = Tailer::open(&p, None, cfg(1024, 64)).unwrap();
    let b = t.read_batch(usize::MAX, 7).unwrap().unwrap();
    assert_eq!(b.lines.len(), 7);
    assert_eq!(b.checkpoint.offset, 7 * 9);
    check_cp(&b.checkpoint, &content);
    // 30 bytes of line data = 3 lines of 9 bytes.
    let b = t.read_batch(30, usize::MAX).unwrap().unwrap();
    assert_eq!(b.lines.len(), 3);
    assert_eq!(b.start_offset, 63);
    assert_eq!(b.lines[0].line_no, 8);
    // A single line larger than max_bytes still comes out.
    let b = t.read_batch(1, usize::MAX).unwrap().unwrap();
    assert_eq!(b.lines.len(), 1);
    let (evs, _) = drain_with(&mut t, 50, 4);
    assert_eq!(evs.len(), 100 - 11);
    assert_eq!(reference(&content, 1024, 1)[11..], evs[..]);
    check_cp(t.checkpoint(), &content);
}

#[test]
fn head_fingerprint_extends_as_file_grows() {
    let (_d, p) = setup();
    let mut content = vec![b'h'; 99];
    content.push(b'\n');
    write(&p, &content);
    let (mut t, _) = Tailer::open(&p, None, cfg(4096, 128)).unwrap();
    drain(&mut t);
    assert_eq!(t.checkpoint().head_len, 100);
    let cp100 = t.checkpoint().clone();
    let more: Vec<u8> = std::iter::repeat_n(b"x".repeat(49), 40)
        .flat_map(|mut v| {
            v.push(b'\n');
            v
        })
        .collect();
    append(&p, &more);
    content.extend_from_slice(&more);
    drain(&mut t);
    assert_eq!(t.checkpoint().head_len, 1024);
    check_cp(t.checkpoint(), &content);
    // An old short-head checkpoint still validates and gets extended.
    drop(t);
    let (t, r) = Tailer::open(&p, Some(cp100), cfg(4096, 128)).unwrap();
    assert_eq!(r, Resume::Continue);
    assert_eq!(t.checkpoint().head_len, 100);
    check_cp(t.checkpoint(), &content);
}

#[test]
fn default_checkpoint_means_new() {
    let (_d, p) = setup();
    write(&p, b"a\n");
    let (_t, r) = Tailer::open(&p, Some(Checkpoint::default()), TailerConfig::default()).unwrap();
    assert_eq!(r, Resume::New);
}
