//! Search words of a text, as PostgreSQL's `english` configuration would index them, computed
//! here instead of in the database.
//!
//! Why: `to_tsvector('english', text)` in the server cost more than a third of PostgreSQL
//! ingest (its parser is slow, and it runs on the writer's one connection, in series with every
//! insert). Here the words are found on the pump's reading threads, in parallel, and the
//! server only reads a `tsvector` literal. The same rules turn a query's words into lexemes,
//! so index and query always agree: words are runs of letters and digits, lower-cased, English
//! stop words left out (PostgreSQL's list; positions still count them, so a phrase keeps its
//! gaps), accents removed (`régimen` is `regimen`, as SQLite's FTS5 index has it with
//! `remove_diacritics 2`), the rest stemmed with the Snowball English stemmer (PostgreSQL's
//! `english_stem`).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};

use super::rows::{MessageRow, PreparedBatch};

/// PostgreSQL's `english.stop`, separated by spaces.
const STOP_WORDS: &str =
    "i me my myself we our ours ourselves you your yours yourself yourselves he him his \
     himself she her hers herself it its itself they them their theirs themselves what which \
     who whom this that these those am is are was were be been being have has had having do \
     does did doing a an the and but if or because as until while of at by for with about \
     against between into through during before after above below to from up down in out on \
     off over under again further then once here there when where why how all any both each \
     few more most other some such no nor not only own same so than too very s t can will \
     just don should now";

/// PostgreSQL keeps positions up to this value (larger ones are stored as it).
const MAX_POSITION: usize = 16_383;
/// PostgreSQL keeps at most this many positions per lexeme.
const MAX_POSITIONS: usize = 256;
/// PostgreSQL rejects longer lexemes (bytes).
const MAX_LEXEME: usize = 2046;

fn stemmer() -> &'static Stemmer {
    static S: OnceLock<Stemmer> = OnceLock::new();
    S.get_or_init(|| Stemmer::create(Algorithm::English))
}

fn is_stop(w: &str) -> bool {
    static SET: OnceLock<std::collections::HashSet<&'static str, Fast>> = OnceLock::new();
    SET.get_or_init(|| STOP_WORDS.split_whitespace().collect())
        .contains(w)
}

/// The lexeme of one word (`None` for a stop word or a word too long to index).
/// Words with a digit (numbers, hashes, identifiers) are not stemmed: they are not English
/// words, and the stemmer would only clip a trailing letter.
pub fn lexeme(word: &str) -> Option<String> {
    let w = word.to_lowercase();
    let w = if w.is_ascii() { w } else { without_accents(&w) };
    stemmed(w)
}

/// The lexeme `word` had before accents were removed (texts indexed by earlier builds, and by
/// PostgreSQL's own `to_tsvector` in the first migrations, keep them), when it differs from
/// [`lexeme`]'s: a query looks for both, so it finds those texts too.
pub fn accented_lexeme(word: &str) -> Option<String> {
    let w = word.to_lowercase();
    if w.is_ascii() || without_accents(&w) == w {
        return None;
    }
    stemmed(w)
}

/// The letter a word's lexeme starts with: its first, lower-cased, without accents (the
/// English stemmer rewrites endings only).
pub fn first_letter(word: &str) -> Option<char> {
    let c = word.chars().next()?.to_lowercase().next()?;
    if c.is_ascii() {
        return Some(c);
    }
    without_accents(c.encode_utf8(&mut [0; 4])).chars().next()
}

fn stemmed(w: String) -> Option<String> {
    if w.is_empty() || w.len() > MAX_LEXEME {
        return None;
    }
    // No stop word holds a digit.
    if w.bytes().any(|b| b.is_ascii_digit()) {
        return Some(w);
    }
    if is_stop(&w) {
        return None;
    }
    Some(stemmer().stem(&w).into_owned())
}

/// `w` with its combining marks removed after canonical decomposition (`é` -> `e`, `ñ` -> `n`);
/// letters without a decomposition (`ø`, `ß`, CJK) stay as they are.
fn without_accents(w: &str) -> String {
    use unicode_normalization::char::is_combining_mark;
    use unicode_normalization::UnicodeNormalization;
    w.nfd().filter(|c| !is_combining_mark(*c)).nfc().collect()
}

/// Words seen by this thread and their lexemes, interned: a vocabulary repeats, and stemming
/// and allocating were most of the cost of [`tsvector`]. Cleared when it grows past
/// [`CACHE_WORDS`].
const CACHE_WORDS: usize = 100_000;

/// Most entries of the per-text buffers kept from one text to the next.
const KEEP_PAIRS: usize = 1 << 14;

/// No lexeme (a stop word).
const NONE: u32 = u32::MAX;

/// A fast hasher for short words (the default SipHash cost a third of the time here).
type Fast = foldhash::fast::FixedState;

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

/// Whether `c` is written without spaces between words: Han (Chinese, Japanese kanji),
/// Hiragana and Katakana. Each such character is a word of its own (a query's run of them is a
/// phrase), so a word inside a run is found: `修正` in `幫我修正`. Hangul is not: Korean puts
/// spaces between its words.
pub fn is_cjk(c: char) -> bool {
    matches!(u32::from(c),
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x31F0..=0x31FF    // Katakana phonetic extensions
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0xFF66..=0xFF9F    // halfwidth Katakana
        | 0x20000..=0x2FA1F) // CJK extensions B-F, compatibility supplement
}

/// The words of a text with their 1-based positions (stop words counted, not returned): runs
/// of letters and digits, each CJK character on its own ([`is_cjk`]).
pub fn words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .flat_map(|run| CjkSplit { rest: run })
        .enumerate()
        .map(|(i, w)| (i + 1, w))
}

/// A run of letters and digits as words: each CJK character alone, the rest of the run
/// together (`abc修正` is `abc`, `修`, `正`). An iterator, not a list: every word of every text
/// indexed goes through it, and an ASCII run is one step.
struct CjkSplit<'a> {
    rest: &'a str,
}

impl<'a> Iterator for CjkSplit<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if self.rest.is_empty() {
            return None;
        }
        if self.rest.is_ascii() {
            return Some(std::mem::take(&mut self.rest));
        }
        let mut chars = self.rest.char_indices();
        let (_, first) = chars.next()?;
        let end = if is_cjk(first) {
            first.len_utf8()
        } else {
            chars
                .find(|(_, c)| is_cjk(*c))
                .map_or(self.rest.len(), |(i, _)| i)
        };
        let (word, rest) = self.rest.split_at(end);
        self.rest = rest;
        Some(word)
    }
}

/// Zero-width space: SQLite's `unicode61` tokenizer takes it for a separator, and it shows as
/// nothing where an excerpt keeps it.
pub const CJK_SEPARATOR: char = '\u{200B}';

/// The text SQLite's full-text index holds: `text` with [`CJK_SEPARATOR`] between two CJK
/// characters that touch, so that its tokenizer (which keeps a run of them as one token) sees
/// each as a word, as PostgreSQL's lexemes do ([`words`]). Borrowed when there is none.
pub fn fts_text(text: &str) -> std::borrow::Cow<'_, str> {
    if text.is_ascii() {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut prev_cjk = false;
    let mut needs = false;
    for c in text.chars() {
        let cjk = is_cjk(c);
        if cjk && prev_cjk {
            needs = true;
            break;
        }
        prev_cjk = cjk;
    }
    if !needs {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + text.len() / 2);
    let mut prev_cjk = false;
    for c in text.chars() {
        let cjk = is_cjk(c);
        if cjk && prev_cjk {
            out.push(CJK_SEPARATOR);
        }
        out.push(c);
        prev_cjk = cjk;
    }
    std::borrow::Cow::Owned(out)
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

/// What a feedback item contributes to search: its content, then the reason typed.
pub fn feedback_text(content: &str, reason: Option<&str>) -> String {
    match reason {
        Some(r) => format!("{content}\n{r}"),
        None => content.to_string(),
    }
}

/// Whether a message's text is searchable as a message: user and assistant text that is not
/// injected, and not a human prompt (found as its feedback row, with its typed text: one hit per
/// line).
pub fn searchable(m: &MessageRow) -> bool {
    !m.is_meta && !m.is_prompt && matches!(m.kind.as_str(), "user" | "assistant")
}

/// Fill `search_vec` of every searchable row of a batch (PostgreSQL stores only).
pub fn index_batch(b: &mut PreparedBatch) {
    for m in b.messages.iter_mut().filter(|m| searchable(m)) {
        m.search_vec = m.text.as_deref().map(tsvector_binary);
    }
    for s in &mut b.summaries {
        s.search_vec = s.text.as_deref().map(tsvector_binary);
    }
    for f in &mut b.feedback {
        f.search_vec = Some(tsvector_binary(&feedback_text(
            &f.content,
            f.reason.as_deref(),
        )));
    }
    for t in &mut b.tool_uses {
        t.search_vec = crate::extract::tools::call_text(t.name.as_deref(), t.target.as_deref())
            .map(|c| tsvector_binary(&c));
    }
    for t in &mut b.tool_results {
        t.search_vec = t.result.as_deref().map(tsvector_binary);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accents_are_removed_and_the_accented_form_kept_for_queries() {
        assert_eq!(lexeme("Régimen").as_deref(), Some("regimen"));
        assert_eq!(lexeme("también").as_deref(), Some("tambien"));
        assert_eq!(lexeme("naïve"), lexeme("naive"));
        assert_eq!(accented_lexeme("régimen").as_deref(), Some("régimen"));
        assert_eq!(accented_lexeme("regimen"), None);
        assert_eq!(accented_lexeme("日本語"), None);
        assert_eq!(lexeme("日本語").as_deref(), Some("日本語"));
        assert!(tsvector("el régimen").contains("'regimen':2"));
    }

    #[test]
    fn lexemes_are_stemmed_lower_case_without_stop_words() {
        assert_eq!(lexeme("Migrations").as_deref(), Some("migrat"));
        assert_eq!(lexeme("migration").as_deref(), Some("migrat"));
        assert_eq!(lexeme("running").as_deref(), Some("run"));
        assert_eq!(lexeme("The"), None);
        assert_eq!(lexeme("Über").as_deref(), Some("uber"));
    }

    #[test]
    fn binary_form_holds_the_same_lexemes() {
        let b = tsvector_binary("fix the fix, flaky");
        // 2 lexemes: "fix" at 1 and 3, "flaki" at 4.
        let mut want = vec![0, 0, 0, 2];
        want.extend_from_slice(b"fix\0");
        want.extend_from_slice(&[0, 2, 0, 1, 0, 3]);
        want.extend_from_slice(b"flaki\0");
        want.extend_from_slice(&[0, 1, 0, 4]);
        assert_eq!(b, want);
        assert_eq!(tsvector_binary("the"), vec![0, 0, 0, 0]);
    }

    /// The lexemes and positions of a text the plain way: [`words`], [`lexeme`], a sorted map.
    fn reference(text: &str) -> Vec<(String, Vec<u16>)> {
        let mut m: std::collections::BTreeMap<String, Vec<u16>> = Default::default();
        for (pos, w) in words(text) {
            if let Some(l) = lexeme(w) {
                let ps = m.entry(l).or_default();
                let p = pos.min(MAX_POSITION) as u16;
                if ps.last() != Some(&p) && ps.len() < MAX_POSITIONS {
                    ps.push(p);
                }
            }
        }
        m.into_iter().collect()
    }

    /// [`tsvector_binary`] read back.
    fn decoded(b: &[u8]) -> Vec<(String, Vec<u16>)> {
        let n = u32::from_be_bytes(b[..4].try_into().unwrap()) as usize;
        let mut at = 4;
        let mut out = Vec::new();
        for _ in 0..n {
            let end = at + b[at..].iter().position(|&c| c == 0).unwrap();
            let l = String::from_utf8(b[at..end].to_vec()).unwrap();
            at = end + 1;
            let k = u16::from_be_bytes([b[at], b[at + 1]]) as usize;
            at += 2;
            let ps = (0..k)
                .map(|i| u16::from_be_bytes([b[at + 2 * i], b[at + 2 * i + 1]]))
                .collect();
            at += 2 * k;
            out.push((l, ps));
        }
        assert_eq!(at, b.len(), "exact size");
        out
    }

    #[test]
    fn fast_paths_give_the_plain_way_lexemes() {
        let long = "word ".repeat(300) + &"x1 ".repeat(17_000) + "tail";
        let texts = [
            "Fix the flaky test; fix it.",
            "error[E0308]: mismatched types at src/main.rs:42:7 (exit code 127)",
            "Running migrations: 0001_core.sql 0002 0002 0002 done in 12ms",
            "abcdefgh abcdefghij abcdefghijklmnopqrstu abcdefghijklmnopqrstuv abcdefg ABCDEFGH",
            "Règlement déjà vu: naïve café, 幫我修正 device 的權限, abc修正, 권한 수정",
            "deadbeefdeadbeefdeadbeef0123 deadbeefdeadbeefdeadbeef0123 Deadbeefdeadbeefdeadbeef0123",
            "internationalization Internationalization INTERNATIONALIZATIONS",
            "",
            "the a of",
            &long,
        ];
        // Twice over: the second pass reads every word from the cache.
        for _ in 0..2 {
            for t in texts {
                assert_eq!(decoded(&tsvector_binary(t)), reference(t), "{t:.60}");
            }
        }
        assert_eq!(STOP_WORDS.split_whitespace().count(), 127);
        let lit = tsvector("b2 a1 a1 abcdefghij abcdefghi");
        assert_eq!(lit, "'a1':2,3 'abcdefghi':5 'abcdefghij':4 'b2':1");
    }

    #[test]
    fn tsvector_literal_keeps_positions_with_stop_word_gaps() {
        assert_eq!(
            tsvector("Fix the flaky test; fix it."),
            "'fix':1,5 'flaki':3 'test':4"
        );
        assert_eq!(tsvector("the a of"), "");
        assert_eq!(tsvector("foo.bar-baz"), "'bar':2 'baz':3 'foo':1");
    }

    #[test]
    fn cjk_characters_are_words_of_their_own() {
        let w: Vec<&str> = words("幫我修正 device 的權限, abc修正")
            .map(|(_, w)| w)
            .collect();
        assert_eq!(
            w,
            ["幫", "我", "修", "正", "device", "的", "權", "限", "abc", "修", "正"]
        );
        // Korean keeps its words.
        let w: Vec<&str> = words("권한 수정").map(|(_, w)| w).collect();
        assert_eq!(w, ["권한", "수정"]);
        assert_eq!(fts_text("幫我 a"), "幫\u{200B}我 a");
        assert!(matches!(
            fts_text("plain text"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert!(tsvector("幫我修正").contains("'修':3"));
    }
}
