//! Cutting a readable excerpt out of a transcript, by physical lines or by turns.
//!
//! Why this exists: `gleaner snippet add --file T --lines A:B | --turns A:B` stores a piece of a
//! session as a snippet. The JSONL itself is unreadable (and mostly bookkeeping), so the
//! selected records are rendered as short labelled lines (`[L12] user: ...`,
//! `[L13] tool Bash: cargo test`, `[L14] tool result (error): ...`) that a person can read and
//! that point back to the physical line they came from.
//!
//! Line numbers are the tailer's: a line is the bytes up to `\n` (a trailing `\r` and, on line
//! 1, a UTF-8 BOM removed), blank lines count, so an excerpt's `[Ln]` and its
//! `line_start`/`line_end` agree with every other line number Gleaner stores. A final line
//! without `\n` is read too (it keeps the number the tailer will give it once complete).
//!
//! Every text is redacted as it is rendered, before a tool output is cut down: cutting first
//! could drop the line that makes a secret recognisable (the `BEGIN` of a private key) or split
//! a token at the byte limit, and the rest would then pass unnoticed.
//!
//! The file is streamed through the tailer's line splitter (a read chunk and the line being
//! split are buffered; a line over `tail.max_line_bytes` is dropped as it arrives) and reading
//! stops right after the selection, so a huge transcript costs memory for its longest line
//! only. Lines that do not parse are skipped: a
//! transcript is foreign data and a bad line is never an error here.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::extract::feedback::{self, FeedbackType};
use crate::extract::prompt::{is_interruption, is_plumbing};
use crate::extract::redact::Redactor;
use crate::parse::{parse_line, Block, Content, Kind, Record};
use crate::tail::lines::{self, LineSplitter};
use crate::tail::TailerConfig;

/// Lines kept of a tool output (see [`crate::text::cut_tool_output`]): enough for an error and its
/// location, few enough that one result does not crowd out the reasoning around it.
const TOOL_OUTPUT_LINES: usize = 20;

/// Bytes kept of one tool output after cutting it to [`TOOL_OUTPUT_LINES`] lines: a single
/// minified or base64 line would otherwise fill the whole snippet.
const TOOL_OUTPUT_BYTES: usize = 2048;

/// Which part of a transcript to cut. Why two units: lines are exact (what an editor or
/// `gleaner episodes` shows), turns are what a person remembers ("the second prompt and what
/// followed").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selection {
    /// Physical lines A to B, 1-based, inclusive.
    Lines(u64, u64),
    /// Turns A to B, 1-based, inclusive. Turn k runs from the k-th prompt line (a line with a
    /// [`FeedbackType::Message`] item, as [`feedback::items`] finds them in a main file) to
    /// the line before the next prompt, or to the end of the file.
    Turns(u64, u64),
}

impl Selection {
    /// The unit, plural, as shown in messages.
    fn unit(self) -> &'static str {
        match self {
            Selection::Lines(..) => "lines",
            Selection::Turns(..) => "turns",
        }
    }

    /// The inclusive range.
    fn bounds(self) -> (u64, u64) {
        match self {
            Selection::Lines(a, b) | Selection::Turns(a, b) => (a, b),
        }
    }
}

impl fmt::Display for Selection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (a, b) = self.bounds();
        write!(f, "{} {a}:{b}", self.unit())
    }
}

/// What [`excerpt`] cut: the rendered text and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Excerpt {
    /// The selected records as readable text, one labelled block per record content
    /// (`[L12] user: ...`), joined by `\n`, redacted by the [`Redactor`] given to [`excerpt`].
    pub content: String,
    /// First physical line covered (the range start for lines, the first prompt for turns).
    pub line_start: u64,
    /// Last physical line covered (the range end for lines; for turns the line before the
    /// next prompt, or the file's last line).
    pub line_end: u64,
    /// Physical lines read. Reading stops after the selection, so this is the file's line
    /// count only when the selection reached the end of the file; otherwise it is `line_end`
    /// (plus the next prompt line that ended a turn selection).
    pub lines_in_file: u64,
    /// Claude Code version of the last selected record that names one (snippet metadata).
    pub version: Option<String>,
    /// Names of the tools called in the selection, deduplicated and sorted (snippet tags).
    pub tools: Vec<String>,
    /// File paths targeted by file tools (`Read`, `Edit`, `Write`...) in the selection,
    /// deduplicated and sorted (snippet tags by extension). Redacted like the content.
    pub paths: Vec<String>,
    /// Secrets replaced while rendering.
    pub redacted: u64,
}

/// Why an excerpt could not be cut. Each message is one line naming the file, for the CLI.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The transcript cannot be opened or read (missing, a folder, no permission, IO error).
    #[error("cannot read {}", .path.display())]
    Unreadable {
        /// The transcript.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// The selection reaches past the end of the file: the file has fewer lines (or turns)
    /// than the range's end.
    #[error(
        "{unit} {start}:{end} are outside {}, which has {available} {}",
        .path.display(),
        if *.available == 1 { unit.strip_suffix('s').unwrap_or(unit) } else { unit }
    )]
    RangeOutsideFile {
        /// The transcript.
        path: PathBuf,
        /// `lines` or `turns`.
        unit: &'static str,
        /// Requested start.
        start: u64,
        /// Requested end.
        end: u64,
        /// How many lines (or turns) the file has.
        available: u64,
    },
    /// The range text is not `A:B` with `1 <= A <= B`.
    #[error("invalid range {0:?}: expected A:B with 1 <= A <= B")]
    BadRange(String),
    /// Every selected record is bookkeeping (snapshots, progress, thinking, injected text),
    /// or no selected line parses: there is nothing to store.
    #[error("{selection} of {} hold nothing readable (only metadata, progress, thinking or unparseable lines)", .path.display())]
    Empty {
        /// The transcript.
        path: PathBuf,
        /// What was selected.
        selection: Selection,
    },
}

/// Parse a range `A:B` (1-based, inclusive, `1 <= A <= B`; spaces around the numbers allowed).
/// Why strict: a reversed or zero range is almost always a typo, and silently swapping or
/// clamping it would store a snippet from lines the user did not mean.
pub fn parse_range(s: &str) -> Result<(u64, u64), SourceError> {
    let bad = || SourceError::BadRange(s.to_string());
    let (a, b) = s.split_once(':').ok_or_else(bad)?;
    let a: u64 = a.trim().parse().map_err(|_| bad())?;
    let b: u64 = b.trim().parse().map_err(|_| bad())?;
    if a == 0 || a > b {
        return Err(bad());
    }
    Ok((a, b))
}

/// Cut `sel` out of the transcript at `path` and render it as readable text, every piece
/// redacted by `redactor` before it is cut or truncated.
///
/// Why it reads the file itself rather than the database: a snippet may be cut from any
/// transcript, ingested or not, and the stored rows keep only part of each line (no tool
/// outputs), while a snippet about an error needs the error text.
pub fn excerpt(path: &Path, sel: Selection, redactor: &Redactor) -> Result<Excerpt, SourceError> {
    let (start, end) = sel.bounds();
    if start == 0 || start > end {
        return Err(SourceError::BadRange(format!("{start}:{end}")));
    }
    let file = File::open(path).map_err(|source| SourceError::Unreadable {
        path: path.to_path_buf(),
        source,
    })?;
    excerpt_from(path, file, sel, redactor)
}

/// [`excerpt`] of a transcript read from `source` (the archive's copy of the file at `path`
/// once Claude Code deleted it: `crate::archive::ChunkReader`); `path` names it in errors.
pub fn excerpt_from(
    path: &Path,
    source: impl Read,
    sel: Selection,
    redactor: &Redactor,
) -> Result<Excerpt, SourceError> {
    let (start, end) = sel.bounds();
    if start == 0 || start > end {
        return Err(SourceError::BadRange(format!("{start}:{end}")));
    }
    let unreadable = |source| SourceError::Unreadable {
        path: path.to_path_buf(),
        source,
    };
    let mut lines = Lines::new(source);
    let mut buf = Vec::new();
    let mut out = Render::new(redactor);
    let (line_start, line_end) = match sel {
        Selection::Lines(..) => {
            while lines.number + 1 < start {
                if lines.next(&mut buf, false).map_err(unreadable)? == Next::Eof {
                    return Err(outside(path, sel, lines.number));
                }
            }
            while lines.number < end {
                match lines.next(&mut buf, true).map_err(unreadable)? {
                    Next::Eof => return Err(outside(path, sel, lines.number)),
                    Next::TooLong => {}
                    Next::Line => out.line(lines.number, &parse_line(&buf).records),
                }
            }
            (start, end)
        }
        Selection::Turns(..) => {
            let mut prompts = 0u64;
            let mut first = 0u64;
            loop {
                let next = lines.next(&mut buf, true).map_err(unreadable)?;
                if next == Next::Eof {
                    if prompts < end {
                        return Err(outside(path, sel, prompts));
                    }
                    break;
                }
                if next == Next::TooLong {
                    continue;
                }
                let parsed = parse_line(&buf);
                if is_prompt(&parsed.records) {
                    prompts += 1;
                    if prompts > end {
                        break;
                    }
                    if prompts == start {
                        first = lines.number;
                    }
                }
                if prompts >= start {
                    out.line(lines.number, &parsed.records);
                }
            }
            // Stopped at EOF (last line included) or at the prompt after the range (excluded).
            let last = if prompts > end {
                lines.number - 1
            } else {
                lines.number
            };
            (first, last)
        }
    };
    if out.blocks.is_empty() {
        return Err(SourceError::Empty {
            path: path.to_path_buf(),
            selection: sel,
        });
    }
    tracing::debug!(
        path = %path.display(),
        line_start,
        line_end,
        blocks = out.blocks.len(),
        "transcript excerpt cut"
    );
    Ok(Excerpt {
        content: out.blocks.join("\n"),
        line_start,
        line_end,
        lines_in_file: lines.number,
        version: out.version,
        tools: out.tools.into_iter().collect(),
        paths: out.paths.into_iter().collect(),
        redacted: out.counts.values().sum(),
    })
}

fn outside(path: &Path, sel: Selection, available: u64) -> SourceError {
    let (start, end) = sel.bounds();
    SourceError::RangeOutsideFile {
        path: path.to_path_buf(),
        unit: sel.unit(),
        start,
        end,
        available,
    }
}

/// Whether a line opens a turn: one of its records is a human message of a main session.
fn is_prompt(records: &[Record<'_>]) -> bool {
    records.iter().any(|r| {
        feedback::items(r, false)
            .iter()
            .any(|i| i.feedback_type == FeedbackType::Message)
    })
}

/// The excerpt being built.
struct Render<'r> {
    redactor: &'r Redactor,
    counts: BTreeMap<&'static str, u64>,
    blocks: Vec<String>,
    version: Option<String>,
    tools: BTreeSet<String>,
    paths: BTreeSet<String>,
}

impl<'r> Render<'r> {
    fn new(redactor: &'r Redactor) -> Self {
        Render {
            redactor,
            counts: BTreeMap::new(),
            blocks: Vec::new(),
            version: None,
            tools: BTreeSet::new(),
            paths: BTreeSet::new(),
        }
    }

    /// Render the records of physical line `n`.
    fn line(&mut self, n: u64, records: &[Record<'_>]) {
        for rec in records {
            self.record(n, rec);
        }
    }

    fn record(&mut self, n: u64, rec: &Record<'_>) {
        if let Some(v) = &rec.version {
            self.version = Some(v.to_string());
        }
        match rec.kind {
            Kind::User => {
                // Injected lines: meta text, the post-compaction summary, skill bodies.
                if rec.is_meta || rec.is_compact_summary || rec.source_tool_use_id.is_some() {
                    return;
                }
                match rec.message.as_ref().map(|m| &m.content) {
                    Some(Content::Text(t)) => self.user_text(n, t),
                    Some(Content::Blocks(blocks)) => {
                        for b in blocks {
                            match b {
                                Block::Text(t) => self.user_text(n, t),
                                Block::ToolResult { is_error, .. } => {
                                    self.tool_result(n, *is_error, b.tool_result_text())
                                }
                                _ => {}
                            }
                        }
                    }
                    _ => {}
                }
            }
            Kind::Assistant => {
                for b in rec.blocks() {
                    match b {
                        Block::Text(t) => self.push(n, "assistant", t),
                        Block::ToolUse { name, target, .. } => {
                            self.tool_use(n, name, target.as_deref())
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }

    fn user_text(&mut self, n: u64, text: &str) {
        // Interruption markers are kept: where the user stopped the agent is part of the story.
        if is_interruption(text) || !is_plumbing(text) {
            self.push(n, "user", text);
        }
    }

    fn tool_use(&mut self, n: u64, name: &str, target: Option<&str>) {
        self.tools.insert(name.to_string());
        let target = target.map(str::trim).filter(|t| !t.is_empty());
        if let Some(t) = target {
            let t = self.redactor.redact(t, &mut self.counts);
            if crate::parse::FILE_TOOLS.contains(&name) {
                self.paths.insert(t.to_string());
            }
            self.blocks.push(format!("[L{n}] tool {name}: {t}"));
        } else {
            self.blocks.push(format!("[L{n}] tool {name}"));
        }
    }

    fn tool_result(&mut self, n: u64, is_error: bool, text: Option<String>) {
        let Some(text) = text else { return };
        let text = self.redactor.redact(&text, &mut self.counts);
        let cut = crate::text::cut_tool_output(&text, TOOL_OUTPUT_LINES);
        let cut = crate::text::truncate_bytes(&cut, TOOL_OUTPUT_BYTES);
        let label = if is_error {
            "tool result (error)"
        } else {
            "tool result"
        };
        // Already redacted: pushed as is.
        let t = cut.trim();
        if !t.is_empty() {
            self.blocks.push(format!("[L{n}] {label}: {t}"));
        }
    }

    fn push(&mut self, n: u64, label: &str, text: &str) {
        let t = self.redactor.redact(text.trim(), &mut self.counts);
        if !t.is_empty() {
            self.blocks.push(format!("[L{n}] {label}: {t}"));
        }
    }
}

/// What [`Lines::next`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// No more bytes: the previous line was the last.
    Eof,
    /// A line, in the buffer when it was asked for.
    Line,
    /// A line longer than the tailer's `max_line_bytes`: counted, not kept.
    TooLong,
}

/// Physical lines of a file, split by the tailer's own splitter (so they are numbered exactly
/// as the tailer numbers them), the final line read even without its `\n`.
struct Lines<R> {
    inner: R,
    split: LineSplitter,
    eof: bool,
    /// Lines returned so far (the number of the last one).
    number: u64,
}

/// Bytes read from the file at a time.
const READ_CHUNK: usize = 64 * 1024;

impl<R: Read> Lines<R> {
    fn new(inner: R) -> Self {
        let max = TailerConfig::default().max_line_bytes;
        Lines {
            inner,
            split: LineSplitter::new(0, 0, max, 0, Vec::new()),
            eof: false,
            number: 0,
        }
    }

    /// Read the next line into `buf` (cleared first) when `keep`, else only skip it.
    fn next(&mut self, buf: &mut Vec<u8>, keep: bool) -> io::Result<Next> {
        buf.clear();
        let line = loop {
            if let lines::Next::Line(l) = self.split.next(u64::MAX) {
                break l;
            }
            if self.eof {
                match self.split.finish() {
                    Some(l) => break l,
                    None => return Ok(Next::Eof),
                }
            }
            let n = self.split.fill(READ_CHUNK, &mut self.inner)?;
            self.eof = n == 0;
        };
        self.number = line.line_no;
        if line.content.is_none() {
            return Ok(Next::TooLong);
        }
        if keep {
            buf.extend_from_slice(self.split.content(&line));
        }
        Ok(Next::Line)
    }
}

#[cfg(test)]
mod tests;
