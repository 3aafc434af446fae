//! The line rules of a transcript, written once: bytes in, numbered lines out.
//!
//! A line is the bytes up to a `\n`; its content drops that `\n`, a trailing `\r` and, for the
//! line at stream offset 0, a UTF-8 BOM. Blank lines count (line numbers are physical) but carry
//! no content. A line longer than `max_line_bytes` is skipped without being buffered: its bytes
//! are dropped as they arrive and only its number, offset and length are reported.
//!
//! Why a splitter of its own, without IO (as ripgrep's `LineBuffer`): the tailer reads files by
//! offset with fingerprints and batch limits, `snippet add` streams a file once from the start;
//! both must number lines the same way, so both feed bytes to this one state machine. It also
//! keeps the last `window` bytes before the buffer (the tailer fingerprints the bytes just
//! before its checkpoint with them), which costs nothing when the window is 0.

use std::io::Read;
use std::ops::Range;

/// One complete line found by [`LineSplitter::next`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// 1-based physical line number.
    pub line_no: u64,
    /// Stream offset of its first byte.
    pub offset: u64,
    /// Its length in the stream, `\n` included.
    pub len: u64,
    /// Where its content is in the splitter's buffer (empty for a blank line; valid until the
    /// splitter is next changed). `None` for a line over the limit.
    pub content: Option<Range<usize>>,
}

/// What [`LineSplitter::next`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// A complete line, consumed.
    Line(Split),
    /// The next complete line is longer than the caller's budget: not consumed.
    OverBudget,
    /// No complete line is buffered: feed more bytes.
    NeedMore,
}

/// Splits a stream of bytes into lines; see the module docs.
#[derive(Debug, Clone)]
pub struct LineSplitter {
    max_line_bytes: usize,
    /// Stream bytes `[buf_start, buf_start + buf.len())` not yet dropped.
    buf: Vec<u8>,
    buf_start: u64,
    /// Bytes of `buf` already turned into lines.
    consumed: usize,
    /// `buf[consumed..scanned]` is known to hold no `\n` (a growing partial line is not
    /// rescanned).
    scanned: usize,
    /// Inside an over-long line: bytes are scanned for `\n` and dropped.
    skipping: bool,
    /// Just past the last complete line.
    offset: u64,
    /// Complete lines before `offset`.
    lines: u64,
    /// The last `min(buf_start, window)` stream bytes before `buf_start`.
    win: Vec<u8>,
    window: usize,
    /// The bytes just before `offset` as of the last time they were known (a skip drops the
    /// bytes after `offset` before the line ends, so they are taken before that).
    tail: Option<Vec<u8>>,
    /// The caller takes the lines' bytes with [`LineSplitter::take_consumed`]: consumed bytes
    /// stay where they are until then (see [`LineSplitter::keeping`]).
    keep: bool,
    /// The line before `offset` was taken without its `\n` (the last line of a finished file,
    /// [`LineSplitter::finish`]): a `\n` arriving first is that line's end, not a blank line,
    /// so it joins the next line's bytes and numbers stay physical.
    open_line: bool,
    /// [`LineSplitter::skip_line`] was called for the line being read.
    skip_asked: bool,
}

impl LineSplitter {
    /// A splitter positioned at `offset`, after `lines` lines, keeping a window of `window`
    /// bytes; `before` holds (up to) the `window` stream bytes before `offset`.
    pub fn new(
        offset: u64,
        lines: u64,
        max_line_bytes: usize,
        window: usize,
        before: Vec<u8>,
    ) -> Self {
        let mut win = before;
        if win.len() > window {
            win.drain(..win.len() - window);
        }
        let open_line = offset > 0 && win.last().is_some_and(|&b| b != b'\n');
        LineSplitter {
            max_line_bytes,
            buf: Vec::new(),
            buf_start: offset,
            consumed: 0,
            scanned: 0,
            skipping: false,
            offset,
            lines,
            win,
            window,
            tail: None,
            keep: false,
            open_line,
            skip_asked: false,
        }
    }

    /// A splitter whose consumed bytes stay in its buffer until [`LineSplitter::take_consumed`]
    /// hands them over, so that every line returned meanwhile keeps its place and the caller
    /// can own the lines' bytes without copying them (the tailer's batch: copying each line
    /// out of the read buffer was 2% of a backfill's CPU). [`LineSplitter::fill`] then never
    /// compacts, and a line that turns out over-long is reported as over budget while lines
    /// are held, instead of its bytes being dropped together with theirs.
    pub fn keeping(mut self) -> Self {
        self.keep = true;
        self
    }

    /// Just past the last complete line.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Complete lines before [`LineSplitter::offset`].
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Stream offset just past the buffered bytes (where the next bytes fed belong).
    pub fn end(&self) -> u64 {
        self.buf_start + self.buf.len() as u64
    }

    /// Bytes held: a partial line, or complete lines not yet asked for.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// The bytes after the last complete line, when they are all held (none dropped by an
    /// over-long line) and no complete line is among them.
    pub fn unfinished(&self) -> Option<&[u8]> {
        let rest = &self.buf[self.consumed..];
        // After a line taken without its `\n`, that `\n` may come first.
        let lead = usize::from(self.open_line && rest.first() == Some(&b'\n'));
        (!self.skipping && self.buf_start + self.consumed as u64 == self.offset)
            .then_some(rest)
            .filter(|r| !r[lead..].contains(&b'\n'))
    }

    /// Every buffered byte has been scanned and holds no complete line.
    pub fn all_scanned(&self) -> bool {
        self.scanned == self.buf.len()
    }

    /// The content of a line just returned.
    pub fn content(&self, s: &Split) -> &[u8] {
        s.content.clone().map_or(&[][..], |r| &self.buf[r])
    }

    /// Whether the last `k` stream bytes before [`LineSplitter::end`] are `expect` (`false`
    /// when fewer are known).
    pub fn ends_with(&self, expect: &[u8]) -> bool {
        let k = expect.len();
        let from_buf = k.min(self.buf.len());
        let from_win = k - from_buf;
        if from_win > self.win.len() {
            return false;
        }
        let (e_win, e_buf) = expect.split_at(from_win);
        e_win == &self.win[self.win.len() - from_win..]
            && e_buf == &self.buf[self.buf.len() - from_buf..]
    }

    /// Append up to `want` stream bytes read from `from` (until its end or `want` bytes); how
    /// many came. On an error nothing is appended.
    ///
    /// Why `read_to_end` into reserved space: the bytes land in the buffer's spare capacity
    /// without being zeroed first (a 1 GB backfill zeroed 1 GB for nothing), and a short read
    /// is continued until `want` bytes or the end.
    pub fn fill(&mut self, want: usize, from: impl Read) -> std::io::Result<usize> {
        if !self.keep {
            self.compact();
        }
        let old = self.buf.len();
        self.buf.reserve_exact(want);
        match from.take(want as u64).read_to_end(&mut self.buf) {
            Ok(n) => Ok(n),
            Err(e) => {
                self.buf.truncate(old);
                Err(e)
            }
        }
    }

    /// The last `n` buffered bytes (those a [`LineSplitter::fill`] just appended).
    pub fn last(&self, n: usize) -> &[u8] {
        &self.buf[self.buf.len() - n.min(self.buf.len())..]
    }

    /// The next complete line, if one is buffered and its length (`\n` included) fits
    /// `budget`. An over-long line is reported (with no content) once its `\n` arrives; while it
    /// has not, its bytes are dropped as they come.
    pub fn next(&mut self, budget: u64) -> Next {
        // The `\n` that ends a line taken without it belongs to the next line's bytes.
        let lead = usize::from(self.open_line && self.buf.get(self.consumed) == Some(&b'\n'));
        if self.open_line && self.consumed < self.buf.len() && lead == 0 {
            self.open_line = false;
        }
        self.scanned = self.scanned.max(self.consumed + lead);
        let Some(i) = memchr::memchr(b'\n', &self.buf[self.scanned..]) else {
            self.scanned = self.buf.len();
            let over = self.skipping
                || self.skip_asked
                || self.buf.len() - self.consumed > self.max_line_bytes;
            if over && self.keep && self.consumed > 0 {
                // Lines are held: end the caller's batch before this line; once their bytes
                // are taken, the skip starts on a buffer that holds only this line.
                return Next::OverBudget;
            }
            if over {
                self.skipping = true;
                self.discard_all();
            }
            return Next::NeedMore;
        };
        let nl = self.scanned + i;
        let end = self.buf_start + nl as u64 + 1;
        let len = end - self.offset;
        if len > budget {
            self.scanned = nl;
            return Next::OverBudget;
        }
        let content = self
            .content_range(nl)
            .map(|r| (r.start + lead).min(r.end)..r.end);
        let split = Split {
            line_no: self.lines + 1,
            offset: self.offset,
            len,
            content,
        };
        self.open_line = false;
        self.skipping = false;
        self.skip_asked = false;
        self.offset = end;
        self.lines += 1;
        self.tail = None;
        self.consumed = nl + 1;
        self.scanned = nl + 1;
        Next::Line(split)
    }

    /// At the end of the stream: the bytes after the last `\n` as a final line (a line still
    /// being written, or a file without a final newline), numbered as it will be once complete.
    /// `None` when nothing follows the last `\n`.
    pub fn finish(&mut self) -> Option<Split> {
        if !self.skipping && self.consumed == self.buf.len() {
            return None;
        }
        let end = self.buf_start + self.buf.len() as u64;
        let lead = usize::from(self.open_line && self.buf.get(self.consumed) == Some(&b'\n'));
        let content = self
            .content_range(self.buf.len())
            .map(|r| (r.start + lead).min(r.end)..r.end);
        let split = Split {
            line_no: self.lines + 1,
            offset: self.offset,
            len: end - self.offset,
            content,
        };
        self.skipping = false;
        self.offset = end;
        self.lines += 1;
        self.tail = None;
        self.consumed = self.buf.len();
        self.scanned = self.buf.len();
        self.open_line = true;
        Some(split)
    }

    /// Skip the line being read as over-long, without holding more of it: the caller learnt
    /// from the file (without buffering it) that it runs past the limit. Its bytes held so far
    /// are dropped at the next [`LineSplitter::next`] (once held lines are taken).
    pub fn skip_line(&mut self) {
        self.skip_asked = true;
    }

    /// Bytes of the line being read that are held (after the last complete line).
    pub fn partial_len(&self) -> usize {
        self.buf.len() - self.consumed
    }

    /// Inside the skip of an over-long line.
    pub fn is_skipping(&self) -> bool {
        self.skipping
    }

    /// The (up to) `window` stream bytes just before [`LineSplitter::offset`].
    pub fn tail(&self) -> Vec<u8> {
        if let Some(t) = &self.tail {
            return t.clone();
        }
        let want = (self.offset.min(self.window as u64)) as usize;
        let done = &self.buf[..self.consumed];
        let mut out = Vec::with_capacity(want);
        if done.len() < want {
            let from_win = (want - done.len()).min(self.win.len());
            out.extend_from_slice(&self.win[self.win.len() - from_win..]);
            out.extend_from_slice(done);
        } else {
            out.extend_from_slice(&done[done.len() - want..]);
        }
        out
    }

    /// Move the consumed bytes out of the buffer (into the window).
    pub fn compact(&mut self) {
        if self.consumed == 0 {
            return;
        }
        push_window(&mut self.win, &self.buf[..self.consumed], self.window);
        self.buf.drain(..self.consumed);
        self.buf_start += self.consumed as u64;
        self.scanned -= self.consumed;
        self.consumed = 0;
    }

    /// The consumed bytes, moved out (see [`LineSplitter::keeping`]): the ranges of the lines
    /// returned since the last call index into them. What follows them (a partial line, or
    /// lines not asked for yet) stays, copied into a buffer of its own.
    pub fn take_consumed(&mut self) -> Vec<u8> {
        if self.consumed == 0 {
            return Vec::new();
        }
        push_window(&mut self.win, &self.buf[..self.consumed], self.window);
        let rest = self.buf[self.consumed..].to_vec();
        let mut taken = std::mem::replace(&mut self.buf, rest);
        taken.truncate(self.consumed);
        self.buf_start += self.consumed as u64;
        self.scanned -= self.consumed;
        self.consumed = 0;
        taken
    }

    /// Reserve room for `additional` more bytes (a batch's reads, so that they never regrow
    /// the buffer: each doubling would copy what it holds).
    pub fn reserve(&mut self, additional: usize) {
        self.buf.reserve(additional);
    }

    /// Give memory back: an idle stream must not pin a read chunk.
    pub fn shrink(&mut self) {
        if self.buf.is_empty() {
            self.buf = Vec::new();
        } else if self.buf.capacity() > 2 * self.buf.len() + 64 * 1024 {
            self.buf.shrink_to(self.buf.len() * 2);
        }
    }

    /// The content of the line that ends at `buf[end]` (exclusive): without a trailing `\r`,
    /// and without a BOM at stream offset 0; `None` for a line over the limit.
    fn content_range(&self, end: usize) -> Option<Range<usize>> {
        if self.skipping || end - self.consumed > self.max_line_bytes {
            return None;
        }
        let mut r = self.consumed..end;
        if r.end > r.start && self.buf[r.end - 1] == b'\r' {
            r.end -= 1;
        }
        if self.offset == 0 && self.buf[r.clone()].starts_with(b"\xEF\xBB\xBF") {
            r.start += 3;
        }
        Some(r)
    }

    /// Drop the whole buffer (entering or continuing a skip), keeping what [`Self::tail`]
    /// must still answer.
    fn discard_all(&mut self) {
        if self.tail.is_none() && self.window > 0 {
            self.tail = Some(self.tail());
        }
        push_window(&mut self.win, &self.buf, self.window);
        self.buf_start += self.buf.len() as u64;
        self.buf.clear();
        self.consumed = 0;
        self.scanned = 0;
    }
}

/// Append `more` to a rolling window and keep only its last `cap` bytes.
fn push_window(win: &mut Vec<u8>, more: &[u8], cap: usize) {
    if cap == 0 {
        return;
    }
    if more.len() >= cap {
        win.clear();
        win.extend_from_slice(&more[more.len() - cap..]);
    } else {
        win.extend_from_slice(more);
        if win.len() > cap {
            let drop = win.len() - cap;
            win.drain(..drop);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feed `bytes` in pieces of `step` and collect (line_no, offset, len, content).
    fn split(bytes: &[u8], step: usize, max: usize) -> Vec<(u64, u64, u64, Option<Vec<u8>>)> {
        let mut s = LineSplitter::new(0, 0, max, 8, Vec::new());
        let mut out = Vec::new();
        let mut at = 0;
        loop {
            loop {
                match s.next(u64::MAX) {
                    Next::Line(l) => {
                        let c = l.content.as_ref().map(|_| s.content(&l).to_vec());
                        out.push((l.line_no, l.offset, l.len, c));
                    }
                    Next::NeedMore => break,
                    Next::OverBudget => unreachable!(),
                }
            }
            if at >= bytes.len() {
                return out;
            }
            let piece = &bytes[at..(at + step).min(bytes.len())];
            let n = s.fill(piece.len(), piece).unwrap();
            at += n;
        }
    }

    #[test]
    fn crlf_bom_blank_and_partial_lines() {
        let input = b"\xEF\xBB\xBFa\r\n\nb\nc";
        for step in [1, 2, 3, 100] {
            assert_eq!(
                split(input, step, 100),
                vec![
                    (1, 0, 6, Some(b"a".to_vec())),
                    (2, 6, 1, Some(Vec::new())),
                    (3, 7, 2, Some(b"b".to_vec())),
                ],
                "step {step}"
            );
        }
    }

    #[test]
    fn over_long_lines_are_numbered_but_not_kept() {
        let input = b"ok\n0123456789\nok\n";
        for step in [1, 4, 100] {
            assert_eq!(
                split(input, step, 5),
                vec![
                    (1, 0, 3, Some(b"ok".to_vec())),
                    (2, 3, 11, None),
                    (3, 14, 3, Some(b"ok".to_vec())),
                ],
                "step {step}"
            );
        }
    }

    #[test]
    fn a_bom_counts_only_at_stream_start() {
        let input = b"x\n\xEF\xBB\xBFy\n";
        let got = split(input, 100, 100);
        assert_eq!(got[1].3.as_deref(), Some(&b"\xEF\xBB\xBFy"[..]));
    }

    #[test]
    fn finish_yields_the_unterminated_last_line() {
        let mut s = LineSplitter::new(0, 0, 100, 0, Vec::new());
        s.fill(5, &b"a\nbc\r"[..]).unwrap();
        assert!(matches!(s.next(u64::MAX), Next::Line(_)));
        assert_eq!(s.next(u64::MAX), Next::NeedMore);
        let last = s.finish().unwrap();
        assert_eq!((last.line_no, last.offset, last.len), (2, 2, 3));
        assert_eq!(s.content(&last), b"bc");
        assert_eq!(s.finish(), None);
    }

    #[test]
    fn budget_leaves_the_line_for_later() {
        let mut s = LineSplitter::new(0, 0, 100, 0, Vec::new());
        s.fill(8, &b"abc\ndef\n"[..]).unwrap();
        assert!(matches!(s.next(4), Next::Line(_)));
        assert_eq!(s.next(3), Next::OverBudget);
        assert!(matches!(s.next(4), Next::Line(l) if l.line_no == 2));
        assert_eq!(s.next(4), Next::NeedMore);
    }

    #[test]
    fn tail_is_the_bytes_before_the_offset_even_across_a_skip() {
        let mut s = LineSplitter::new(0, 0, 4, 3, Vec::new());
        s.fill(5, &b"abcd\n"[..]).unwrap();
        assert!(matches!(s.next(u64::MAX), Next::Line(_)));
        s.fill(7, &b"0123456"[..]).unwrap();
        assert_eq!(s.next(u64::MAX), Next::NeedMore);
        // Mid-skip: the offset is still after "abcd\n".
        assert_eq!(s.tail(), b"cd\n");
        assert!(s.ends_with(b"456"));
    }
}
