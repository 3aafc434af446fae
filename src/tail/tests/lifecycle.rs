//! The tailer across a file's life: truncation, rewrites, renames over it, deletion.
// Tests fail loudly by design; unwrap is the clearest way to say "must not fail".
#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn truncation_starts_new_generation() {
    let (_d, p) = setup();
    write(&p, b"aaa\nbbb\n");
    let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
    assert_eq!(drain(&mut t).len(), 2);
    write(&p, b"c\n");
    let b = t.read_batch(usize::MAX, usize::MAX).unwrap().unwrap();
    assert_eq!(b.resume, Some(Resume::Truncated));
    assert_eq!(b.generation, 2);
    assert_eq!(b.start_offset, 0);
    assert_eq!(b.lines.len(), 1);
    assert_eq!((b.lines[0].line_no, b.lines[0].offset), (1, 0));
    assert_eq!(b.line_bytes(&b.lines[0]), b"c");
    check_cp(&b.checkpoint, b"c\n");
    // Emptied with nothing new yet: the reset is still reported.
    write(&p, b"");
    let b = t.read_batch(usize::MAX, usize::MAX).unwrap().unwrap();
    assert_eq!(b.resume, Some(Resume::Truncated));
    assert_eq!(b.generation, 3);
    assert!(b.lines.is_empty());
    assert_eq!(b.checkpoint.offset, 0);
    assert!(t.read_batch(usize::MAX, usize::MAX).unwrap().is_none());
}

#[test]
fn truncation_mid_skip_resets_skip_state() {
    let (_d, p) = setup();
    let c = cfg(64, 16);
    write(&p, b"a\n");
    append(&p, &[b'L'; 200]);
    let (mut t, _) = Tailer::open(&p, None, c).unwrap();
    assert_eq!(drain(&mut t).len(), 1);
    // Size 2 is not below the committed offset 2, but the head differs.
    write(&p, b"b\n");
    let (evs, resumes) = drain_with(&mut t, usize::MAX, usize::MAX);
    assert_eq!(resumes, vec![Resume::Rewritten]);
    assert_eq!(evs.len(), 1);
    assert_eq!(line(&evs[0]), (1, 0, &b"b"[..]));
}

#[test]
fn truncation_while_stopped() {
    let (_d, p) = setup();
    let (mut t, r) = reopen_after(&p, b"aaa\nbbb\n", b"x\n");
    assert_eq!(r, Resume::Truncated);
    assert_eq!(t.checkpoint().generation, 2);
    let (evs, resumes) = drain_with(&mut t, usize::MAX, usize::MAX);
    assert_eq!(resumes, vec![Resume::Truncated]);
    assert_eq!(line(&evs[0]), (1, 0, &b"x"[..]));
}

#[test]
fn same_size_rewrite_is_detected() {
    let (_d, p) = setup();
    // Same size, same head byte, different tail.
    let (mut t, r) = reopen_after(&p, b"aaa\nbbb\n", b"aaa\nbXb\n");
    assert_eq!(r, Resume::Rewritten);
    let evs = drain(&mut t);
    assert_eq!(evs.len(), 2);
    assert_eq!(line(&evs[1]), (2, 4, &b"bXb"[..]));
    assert!(matches!(evs[0], Ev::Line { generation: 2, .. }));
}

#[test]
fn larger_rewrite_while_running_is_detected() {
    let (_d, p) = setup();
    write(&p, b"aaa\nbbb\n");
    let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
    drain(&mut t);
    write(&p, b"zzz\nyyy\nxxx\n");
    let (evs, resumes) = drain_with(&mut t, usize::MAX, usize::MAX);
    assert_eq!(resumes, vec![Resume::Rewritten]);
    assert_eq!(evs.len(), 3);
    assert_eq!(line(&evs[0]), (1, 0, &b"zzz"[..]));
}

#[test]
fn head_rewrite_detected_on_open() {
    let (_d, p) = setup();
    let mut content = b"head-one\n".to_vec();
    content.extend(std::iter::repeat_n(b"0123456789\n", 200).flatten());
    write(&p, &content);
    let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
    drain(&mut t);
    let cp = t.checkpoint().clone();
    drop(t);
    content[0] = b'H';
    write(&p, &content);
    let (_t, r) = Tailer::open(&p, Some(cp), TailerConfig::default()).unwrap();
    assert_eq!(r, Resume::Rewritten);
}

#[test]
fn rename_over_with_identical_content_keeps_offset() {
    let (_d, p) = setup();
    write(&p, b"aaa\nbbb\npart");
    let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
    assert_eq!(drain(&mut t).len(), 2);
    let old_inode = t.checkpoint().inode;
    rename_over(&p, b"aaa\nbbb\npartial\nccc\n");
    let (evs, resumes) = drain_with(&mut t, usize::MAX, usize::MAX);
    assert!(resumes.is_empty());
    assert_eq!(evs.len(), 2);
    assert_eq!(line(&evs[0]), (3, 8, &b"partial"[..]));
    assert_eq!(line(&evs[1]), (4, 16, &b"ccc"[..]));
    assert_eq!(t.checkpoint().generation, 1);
    #[cfg(unix)]
    assert_ne!(t.checkpoint().inode, old_inode);
    let _ = old_inode;
    // And while stopped.
    let cp = t.checkpoint().clone();
    drop(t);
    let content = std::fs::read(&p).unwrap();
    rename_over(&p, &content);
    let (mut t, r) = Tailer::open(&p, Some(cp), TailerConfig::default()).unwrap();
    #[cfg(unix)]
    assert_eq!(r, Resume::SameContentNewInode);
    let _ = r;
    assert!(drain(&mut t).is_empty());
    check_cp(t.checkpoint(), &content);
}

#[test]
fn rename_over_with_different_content_replaces() {
    let (_d, p) = setup();
    write(&p, b"aaa\nbbb\n");
    let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
    drain(&mut t);
    rename_over(&p, b"other\nfile\nlonger\n");
    let (evs, resumes) = drain_with(&mut t, usize::MAX, usize::MAX);
    #[cfg(unix)]
    assert_eq!(resumes, vec![Resume::Replaced]);
    let _ = resumes;
    assert_eq!(evs.len(), 3);
    assert_eq!(line(&evs[0]), (1, 0, &b"other"[..]));
    assert_eq!(t.checkpoint().generation, 2);
    // While stopped.
    let cp = t.checkpoint().clone();
    drop(t);
    rename_over(&p, b"third\n");
    let (mut t, r) = Tailer::open(&p, Some(cp), TailerConfig::default()).unwrap();
    assert_eq!(r, Resume::Replaced);
    assert_eq!(line(&drain(&mut t)[0]), (1, 0, &b"third"[..]));
}

#[test]
fn byte_identical_rewrite_in_place_emits_nothing() {
    let (_d, p) = setup();
    let content = b"aaa\nbbb\n";
    write(&p, content);
    let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
    drain(&mut t);
    write(&p, content);
    assert!(t.read_batch(usize::MAX, usize::MAX).unwrap().is_none());
    let cp = t.checkpoint().clone();
    drop(t);
    write(&p, content);
    let (mut t, r) = Tailer::open(&p, Some(cp), TailerConfig::default()).unwrap();
    assert_eq!(r, Resume::Continue);
    assert!(t.read_batch(usize::MAX, usize::MAX).unwrap().is_none());
}

#[test]
fn deleted_file_is_gone() {
    let (_d, p) = setup();
    write(&p, b"a\n");
    let (mut t, _) = Tailer::open(&p, None, TailerConfig::default()).unwrap();
    std::fs::remove_file(&p).unwrap();
    assert!(matches!(t.read_batch(10, 10), Err(TailError::Gone { .. })));
    assert!(matches!(
        Tailer::open(&p, None, TailerConfig::default()),
        Err(TailError::Gone { .. })
    ));
    let dir = p.parent().unwrap();
    assert!(matches!(
        Tailer::open(dir, None, TailerConfig::default()),
        Err(TailError::NotAFile { .. })
    ));
}
