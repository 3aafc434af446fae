//! Property and model-based tests: random appends, restarts and file actions give exactly
//! the events of a one-shot read.
// Tests fail loudly by design; unwrap is the clearest way to say "must not fail".
#![allow(clippy::unwrap_used)]

use super::*;

const PMAX: usize = 24;

fn arb_line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'{'), Just(b'}'), Just(b'\r'), Just(b' ')], 0..12),
        1 => Just(Vec::new()),
        1 => Just(b"\r".to_vec()),
        1 => proptest::collection::vec(Just(b'L'), PMAX - 2..PMAX * 3),
    ]
    .prop_map(|mut v| {
        v.push(b'\n');
        v
    })
}

fn arb_content() -> impl Strategy<Value = Vec<u8>> {
    (
        any::<bool>(),
        proptest::collection::vec(arb_line(), 0..25),
        proptest::collection::vec(b'p'..=b'q', 0..30),
    )
        .prop_map(|(bom, lines, tail)| {
            let mut c = if bom {
                b"\xEF\xBB\xBF".to_vec()
            } else {
                Vec::new()
            };
            c.extend(lines.into_iter().flatten());
            c.extend(tail);
            c
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Random appends + restarts yield exactly the events of a one-shot read.
    #[test]
    fn incremental_equals_whole(
        content in arb_content(),
        cuts in proptest::collection::vec((any::<prop::sample::Index>(), any::<bool>()), 0..12),
        chunk in 1usize..40,
        max_bytes in 1usize..200,
        max_lines in 1usize..6,
    ) {
        let (_d, p) = setup();
        let c = cfg(PMAX, chunk);
        let mut points: Vec<(usize, bool)> =
            cuts.iter().map(|(i, r)| (i.index(content.len() + 1), *r)).collect();
        points.sort();
        points.push((content.len(), false));
        write(&p, b"");
        let (mut t, _) = Tailer::open(&p, None, c).unwrap();
        let mut evs = Vec::new();
        let mut written = 0;
        for (cut, restart) in points {
            append(&p, &content[written..cut]);
            written = cut;
            let (e, resumes) = drain_with(&mut t, max_bytes, max_lines);
            prop_assert!(resumes.is_empty());
            evs.extend(e);
            check_cp(t.checkpoint(), &content[..committed_end(&content[..written])]);
            prop_assert_eq!(t.checkpoint().offset as usize, committed_end(&content[..written]));
            if restart {
                let cp = t.checkpoint().clone();
                drop(t);
                let (nt, r) = Tailer::open(&p, Some(cp), c).unwrap();
                prop_assert_eq!(r, Resume::Continue);
                t = nt;
            }
        }
        prop_assert_eq!(evs, reference(&content, PMAX, 1));
    }
}

#[derive(Debug, Clone)]
enum Action {
    Append(Vec<u8>),
    /// Truncate to this fraction (0..=255 of 255) of the current length.
    Truncate(u8),
    RenameOverWithNewContent(Vec<u8>),
    Restart,
    Read,
}

fn arb_bytes() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        prop_oneof![4 => b'a'..=b'c', 2 => Just(b'\n'), 1 => Just(b'\r')],
        0..40,
    )
}

fn arb_action() -> impl Strategy<Value = Action> {
    prop_oneof![
        6 => arb_bytes().prop_map(Action::Append),
        1 => proptest::collection::vec(Just(b'L'), PMAX / 2..PMAX * 2).prop_map(Action::Append),
        1 => any::<u8>().prop_map(Action::Truncate),
        1 => arb_bytes().prop_map(Action::RenameOverWithNewContent),
        2 => Just(Action::Restart),
        4 => Just(Action::Read),
    ]
}

/// In-memory model of what the tailer must emit.
struct Model {
    content: Vec<u8>,
    generation: i64,
    /// What the tailer has read (after a Read: everything).
    read_pos: usize,
    /// Committed offset: just past the last '\n' the tailer has seen.
    committed: usize,
    emitted: Vec<Ev>,
}

impl Model {
    /// The tailer noticed the file changed under what it read.
    fn reset(&mut self) {
        if self.committed > 0 {
            self.generation += 1;
            self.committed = 0;
        }
        self.read_pos = self.committed;
    }

    fn read(&mut self) {
        let end = committed_end(&self.content);
        if end > self.committed {
            let all = reference(&self.content[..end], PMAX, self.generation);
            let start = self.committed as u64;
            self.emitted.extend(all.into_iter().filter(|e| match e {
                Ev::Line { offset, .. } | Ev::TooLong { offset, .. } => *offset >= start,
            }));
            self.committed = end;
        }
        self.read_pos = self.content.len();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Model-based test in the style of vector's file-source tests.
    #[test]
    fn model_based(actions in proptest::collection::vec(arb_action(), 1..40), chunk in 1usize..32) {
        let (_d, p) = setup();
        let c = cfg(PMAX, chunk);
        write(&p, b"");
        let (mut t, _) = Tailer::open(&p, None, c).unwrap();
        let mut m = Model { content: Vec::new(), generation: 1, read_pos: 0, committed: 0, emitted: Vec::new() };
        let mut got = Vec::new();
        for a in actions {
            let mut force_read = false;
            match a {
                Action::Append(b) => {
                    append(&p, &b);
                    m.content.extend_from_slice(&b);
                }
                Action::Truncate(frac) => {
                    let len = m.content.len() * usize::from(frac) / 255;
                    OpenOptions::new().write(true).open(&p).unwrap().set_len(len as u64).unwrap();
                    m.content.truncate(len);
                    if len < m.read_pos {
                        if len < m.committed {
                            m.reset();
                        } else {
                            m.read_pos = m.committed;
                        }
                    }
                    force_read = true;
                }
                Action::RenameOverWithNewContent(b) => {
                    // First byte differs from the old first byte, so the head
                    // fingerprint cannot match by chance.
                    let marker = if m.content.first() == Some(&b'M') { b'N' } else { b'M' };
                    let mut new = vec![marker];
                    new.extend_from_slice(&b);
                    rename_over(&p, &new);
                    m.content = new;
                    m.reset();
                    force_read = true;
                }
                Action::Restart => {
                    let cp = t.checkpoint().clone();
                    drop(t);
                    let (nt, r) = Tailer::open(&p, Some(cp), c).unwrap();
                    prop_assert_eq!(r, Resume::Continue);
                    t = nt;
                    m.read_pos = m.committed;
                }
                Action::Read => force_read = true,
            }
            if force_read {
                let (e, _) = drain_with(&mut t, 64, 3);
                got.extend(e);
                m.read();
                prop_assert_eq!(&got, &m.emitted);
                prop_assert_eq!(t.checkpoint().generation, m.generation);
                check_cp(t.checkpoint(), &m.content);
                prop_assert_eq!(t.checkpoint().offset as usize, m.committed);
            }
        }
        let (e, _) = drain_with(&mut t, 64, 3);
        got.extend(e);
        m.read();
        prop_assert_eq!(got, m.emitted);
    }
}
