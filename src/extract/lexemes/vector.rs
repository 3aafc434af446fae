//! A text's search words as a PostgreSQL `tsvector`: its words looked up in the thread's
//! vocabulary, grouped by lexeme with their positions, in PostgreSQL's order. This runs for
//! every text a PostgreSQL store indexes, on the reading threads: its costs are measured
//! (docs/benchmarks.md, "PostgreSQL's ingest, its search words and its tool indexes").

use std::collections::HashMap;
use std::fmt::Write as _;

use super::{lexeme, words, Fast, MAX_POSITION, MAX_POSITIONS};

/// Words seen by this thread and their lexemes, interned: a vocabulary repeats, and stemming
/// and allocating were most of the cost of [`tsvector`]. Cleared when it grows past
/// [`CACHE_WORDS`].
const CACHE_WORDS: usize = 100_000;

/// Most entries of the per-text buffers kept from one text to the next.
const KEEP_PAIRS: usize = 1 << 14;

/// No lexeme (a stop word).
const NONE: u32 = u32::MAX;

#[derive(Default)]
struct Vocabulary {
    /// Word as written, when it is at most 16 bytes long (most are), packed by [`short_key`] ->
    /// lexeme id, or [`NONE`]. A lookup hashes and compares two integers: with string keys,
    /// comparing the found key (a `memcmp` call) was a third of a lookup's cost.
    short: HashMap<u128, u32, Fast>,
    /// Longer words as written -> lexeme id, or [`NONE`].
    ids: HashMap<Box<str>, u32, Fast>,
    /// Lexeme id -> lexeme.
    lexemes: Vec<Box<str>>,
    /// Lexeme id -> [`order_key`] of the lexeme.
    order: Vec<u64>,
    /// Lexeme -> id (two spellings of one lexeme share it).
    by_lexeme: HashMap<Box<str>, u32, Fast>,
    /// Per text, reused: (lexeme id << 16 | position), sorted.
    pairs: Vec<u64>,
    /// Per text, reused: each lexeme's (order key, id, first pair, end of its pairs).
    groups: Vec<(u64, u32, u32, u32)>,
}

/// A word of at most 16 bytes as one integer, zero-padded: words are letters and digits, so no
/// byte of a word is zero and no two words share a key.
fn short_key(w: &str) -> Option<u128> {
    let b = w.as_bytes();
    if b.len() > 16 {
        return None;
    }
    let mut buf = [0u8; 16];
    buf[..b.len()].copy_from_slice(b);
    Some(u128::from_le_bytes(buf))
}

/// A lexeme's first 8 bytes, big-endian, zero-padded: two lexemes' keys compare as their bytes
/// do (no lexeme holds a zero byte), so sorting a text's lexemes compares integers, and strings
/// only for two that share their first 8 bytes.
fn order_key(l: &str) -> u64 {
    let b = l.as_bytes();
    let n = b.len().min(8);
    let mut buf = [0u8; 8];
    buf[..n].copy_from_slice(&b[..n]);
    u64::from_be_bytes(buf)
}

impl Vocabulary {
    fn id(&mut self, word: &str) -> u32 {
        let key = short_key(word);
        let known = match key {
            Some(k) => self.short.get(&k),
            None => self.ids.get(word),
        };
        if let Some(id) = known {
            return *id;
        }
        let id = lexeme(word).map_or(NONE, |l| self.intern(l));
        match key {
            Some(k) => {
                self.short.insert(k, id);
            }
            // Long words with digits (hashes, identifiers) rarely repeat: remembering each
            // would only churn the cache.
            None if word.bytes().any(|b| b.is_ascii_digit()) => {}
            None => {
                self.ids.insert(word.into(), id);
            }
        }
        id
    }

    /// The id of a lexeme, interned.
    fn intern(&mut self, l: String) -> u32 {
        if let Some(id) = self.by_lexeme.get(l.as_str()) {
            return *id;
        }
        let id = self.lexemes.len() as u32;
        self.order.push(order_key(&l));
        self.lexemes.push(l.clone().into_boxed_str());
        self.by_lexeme.insert(l.into_boxed_str(), id);
        id
    }

    /// Forget every word and lexeme, keeping the per-text buffers.
    fn clear(&mut self) {
        self.short.clear();
        self.ids.clear();
        self.lexemes.clear();
        self.order.clear();
        self.by_lexeme.clear();
    }
}

thread_local! {
    static VOCABULARY: std::cell::RefCell<Vocabulary> = std::cell::RefCell::default();
}

/// [`words`] handed to `f` in turn. An ASCII text (most are) is split on its bytes, the same
/// words as [`words`] finds: every ASCII letter and digit is alphanumeric, nothing else is, and
/// no ASCII character is CJK.
fn each_word(text: &str, mut f: impl FnMut(usize, &str)) {
    if !text.is_ascii() {
        words(text).for_each(|(pos, w)| f(pos, w));
        return;
    }
    let b = text.as_bytes();
    let (mut i, mut pos) = (0, 0);
    while i < b.len() {
        if !b[i].is_ascii_alphanumeric() {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_alphanumeric() {
            i += 1;
        }
        pos += 1;
        f(pos, &text[start..i]);
    }
}

/// The size of a text's lexemes, given before they are handed out.
struct Sizes {
    /// Distinct lexemes.
    lexemes: usize,
    /// Their bytes.
    bytes: usize,
    /// Positions kept, over all of them.
    positions: usize,
}

/// The lexemes of a text in PostgreSQL's order (by their bytes), each with its positions
/// (ascending, distinct, at most [`MAX_POSITIONS`]): `sizes` is called once with their sizes,
/// then `emit` with each in turn.
fn each_lexeme<T>(
    text: &str,
    out: &mut T,
    sizes: impl FnOnce(&mut T, Sizes),
    mut emit: impl FnMut(&mut T, &str, &[u16]),
) {
    VOCABULARY.with(|v| {
        let v = &mut *v.borrow_mut();
        if v.short.len() + v.ids.len() >= CACHE_WORDS || v.lexemes.len() >= 4 * CACHE_WORDS {
            v.clear();
        }
        let mut pairs = std::mem::take(&mut v.pairs);
        let mut groups = std::mem::take(&mut v.groups);
        pairs.clear();
        groups.clear();
        each_word(text, |pos, w| {
            let id = v.id(w);
            if id != NONE {
                pairs.push(u64::from(id) << 16 | pos.min(MAX_POSITION) as u64);
            }
        });
        pairs.sort_unstable();
        pairs.dedup();
        let mut sizes_of = Sizes {
            lexemes: 0,
            bytes: 0,
            positions: 0,
        };
        let mut start = 0;
        while start < pairs.len() {
            let id = (pairs[start] >> 16) as u32;
            let mut end = start + 1;
            while end < pairs.len() && (pairs[end] >> 16) as u32 == id {
                end += 1;
            }
            groups.push((v.order[id as usize], id, start as u32, end as u32));
            sizes_of.bytes += v.lexemes[id as usize].len();
            sizes_of.positions += (end - start).min(MAX_POSITIONS);
            start = end;
        }
        sizes_of.lexemes = groups.len();
        // Grouped by lexeme id; PostgreSQL wants them by their bytes.
        let lexemes = &v.lexemes;
        groups.sort_unstable_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| lexemes[a.1 as usize].cmp(&lexemes[b.1 as usize]))
        });
        sizes(out, sizes_of);
        let mut positions = [0u16; MAX_POSITIONS];
        for &(_, id, from, to) in &groups {
            let kept = &pairs[from as usize..(to as usize).min(from as usize + MAX_POSITIONS)];
            for (slot, p) in positions.iter_mut().zip(kept) {
                *slot = (*p & 0xFFFF) as u16;
            }
            emit(out, &lexemes[id as usize], &positions[..kept.len()]);
        }
        // A long text's buffers are not kept: a thread would hold them for good.
        pairs.shrink_to(KEEP_PAIRS);
        groups.shrink_to(KEEP_PAIRS);
        v.pairs = pairs;
        v.groups = groups;
    })
}

/// The text as a PostgreSQL `tsvector` literal (`'lexem':1,4 'other':2`). Lexemes are letters
/// and digits only, so nothing in them needs quoting.
pub fn tsvector(text: &str) -> String {
    let mut out = String::new();
    each_lexeme(
        text,
        &mut out,
        |out, s| out.reserve(s.bytes + 3 * s.lexemes + 6 * s.positions),
        |out, l, positions| {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push('\'');
            out.push_str(l);
            out.push('\'');
            for (i, p) in positions.iter().enumerate() {
                out.push(if i == 0 { ':' } else { ',' });
                let _ = write!(out, "{p}");
            }
        },
    );
    out
}

/// The text as a `tsvector` in PostgreSQL's binary format (what `tsvectorrecv` reads: the
/// lexeme count, then per lexeme its bytes, a NUL, the position count and the positions, all
/// big-endian; weight D is 0). Sent instead of the literal: the server skips parsing text.
/// Its exact size is known before it is written: one allocation, no growing.
pub fn tsvector_binary(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    each_lexeme(
        text,
        &mut out,
        |out, s| {
            out.reserve_exact(4 + s.bytes + 3 * s.lexemes + 2 * s.positions);
            out.extend_from_slice(&(s.lexemes as u32).to_be_bytes());
        },
        |out, l, positions| {
            out.extend_from_slice(l.as_bytes());
            out.push(0);
            out.extend_from_slice(&(positions.len() as u16).to_be_bytes());
            for p in positions {
                out.extend_from_slice(&p.to_be_bytes());
            }
        },
    );
    out
}
