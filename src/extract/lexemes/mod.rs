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

use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};

use super::rows::{MessageRow, PreparedBatch};

mod vector;

pub use vector::{tsvector, tsvector_binary};

/// A fast hasher for short words (the default SipHash cost a third of the time here).
type Fast = foldhash::fast::FixedState;

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

/// What a feedback item contributes to search: its content, then the reason typed.
pub fn feedback_text(content: &str, reason: Option<&str>) -> String {
    match reason {
        Some(r) => format!("{content}\n{r}"),
        None => content.to_string(),
    }
}

/// Whether a message's text is searchable as a message: user and assistant text that is not
/// injected, and not found as another kind (a human prompt as its feedback row, with its typed
/// text; a compactor's reply as its summary: one hit per line).
pub fn searchable(m: &MessageRow) -> bool {
    !m.is_meta && !m.found_as_other && matches!(m.kind.as_str(), "user" | "assistant")
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
mod tests;
