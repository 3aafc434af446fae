//! A finished file's last line without its newline, and over-long lines skipped as they stream.

use super::*;

fn whole_json(b: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(b).is_ok()
}

#[test]
fn a_finished_files_last_line_is_read_without_its_newline() {
    let (_d, p) = setup();
    write(&p, b"{\"a\":1}\n{\"b\":2}");
    let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
    // Live: the line may still be being written.
    assert_eq!(drain(&mut t).len(), 1);
    assert_eq!(t.checkpoint().offset, 8);
    // Finished: it is a line, numbered and checkpointed past its last byte.
    t.finish_last_line(Some(whole_json));
    let b = t.read_batch(usize::MAX, usize::MAX).unwrap().unwrap();
    assert_eq!(b.lines.len(), 1);
    assert_eq!(
        (b.lines[0].line_no, b.lines[0].offset, b.lines[0].len),
        (2, 8, 7)
    );
    assert_eq!(b.line_bytes(&b.lines[0]), b"{\"b\":2}");
    assert!(b.drained);
    assert_eq!((b.checkpoint.offset, b.checkpoint.lines), (15, 2));
    assert!(t.read_batch(usize::MAX, usize::MAX).unwrap().is_none());
    // The session resumes: the newline that ends line 2 comes first, then line 3. Numbers
    // stay physical, the bytes tile the file, nothing is a blank line.
    append(&p, b"\n{\"c\":3}\n");
    let b = t.read_batch(usize::MAX, usize::MAX).unwrap().unwrap();
    assert_eq!(b.start_offset, 15);
    assert_eq!(b.lines.len(), 1);
    assert_eq!(
        (b.lines[0].line_no, b.lines[0].offset, b.lines[0].len),
        (3, 15, 9)
    );
    assert_eq!(b.line_bytes(&b.lines[0]), b"{\"c\":3}");
    assert_eq!((b.checkpoint.offset, b.checkpoint.lines), (24, 3));
    assert_eq!(b.data.len(), 9, "the batch holds the bytes it consumed");
    // A tailer opened again from that checkpoint (a restart) reads on the same way.
    let cp = b.checkpoint;
    append(&p, b"{\"d\":4}\n");
    let (mut t2, r) = Tailer::open(&p, Some(cp), TailerConfig::default()).unwrap();
    assert_eq!(r, Resume::Continue);
    let evs = drain(&mut t2);
    assert_eq!(line(&evs[0]), (4, 24, &b"{\"d\":4}"[..]));
}

#[test]
fn a_restart_after_the_last_line_was_taken_continues_it() {
    let (_d, p) = setup();
    write(&p, b"{\"a\":1}\n{\"b\":2}");
    let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
    t.finish_last_line(Some(whole_json));
    assert_eq!(drain(&mut t).len(), 2);
    let cp = t.checkpoint().clone();
    assert_eq!(cp.offset, 15);
    append(&p, b"\n{\"c\":3}\n");
    let (mut t, r) = Tailer::open(&p, Some(cp), TailerConfig::default()).unwrap();
    assert_eq!(r, Resume::Continue);
    let evs = drain(&mut t);
    assert_eq!(evs.len(), 1);
    assert_eq!(line(&evs[0]), (3, 15, &b"{\"c\":3}"[..]));
}

#[test]
fn a_cut_off_last_line_is_not_a_line() {
    let (_d, p) = setup();
    write(&p, b"{\"a\":1}\n{\"b\":");
    let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
    t.finish_last_line(Some(whole_json));
    assert_eq!(drain(&mut t).len(), 1);
    assert_eq!(t.checkpoint().offset, 8);
    assert_eq!(t.unfinished_line(), Some(&b"{\"b\":"[..]));
    // Completed later, it is read as usual.
    append(&p, b"2}\n");
    let evs = drain(&mut t);
    assert_eq!(line(&evs[0]), (2, 8, &b"{\"b\":2}"[..]));
}

#[test]
fn an_over_long_line_is_skipped_without_being_held() {
    let (_d, p) = setup();
    let long = vec![b'x'; 12 << 20];
    let mut bytes = b"{\"a\":1}\n".to_vec();
    bytes.extend_from_slice(&long);
    bytes.extend_from_slice(b"\n{\"b\":2}\n");
    write(&p, &bytes);
    // The limit is 8 MiB: the line is measured on disk once 4 MiB of it are held.
    let (mut t, _) = Tailer::open(&p, None, cfg(8 << 20, 1 << 20)).unwrap();
    let mut evs = Vec::new();
    let mut most = 0;
    // Batches of 1 MiB, as the daemon's are of 8 (a batch reserves room for what it reads).
    while let Some(b) = t.read_batch(1 << 20, usize::MAX).unwrap() {
        batch_events(&b, &mut evs);
        most = most.max(b.data.capacity()).max(t.buffered_bytes());
    }
    assert_eq!(evs.len(), 3, "{evs:?}");
    assert!(matches!(evs[1], Ev::TooLong { line_no: 2, len, .. } if len == (12 << 20) + 1));
    assert_eq!(line(&evs[2]), (3, 8 + (12 << 20) + 1, &b"{\"b\":2}"[..]));
    assert!(most <= 6 << 20, "held {most} bytes of a line it skipped");
    // A line under the limit but past the probe is read whole.
    let (_d2, p2) = setup();
    let mut bytes = vec![b'y'; 6 << 20];
    bytes.push(b'\n');
    write(&p2, &bytes);
    let (mut t, _) = Tailer::open(&p2, None, cfg(8 << 20, 1 << 20)).unwrap();
    let evs = drain(&mut t);
    assert_eq!(line(&evs[0]).2.len(), 6 << 20);
}
