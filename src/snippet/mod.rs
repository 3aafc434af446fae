//! Snippets: short, sourced pieces of reasoning worth keeping, and the gates they pass.
//!
//! Why gates: the text an assistant writes around its work is full of scaffolding (markdown
//! labels, tables, box drawings, step headers of prompt frameworks) that reads as content to a
//! naive extractor and as noise to a person. A snippet is only stored when it survives
//! [`noise_reason`] and the size limits ([`validate`]); the database enforces the type list and
//! the size range again, so no writer can bypass them.

pub mod excerpt;

use std::fmt::Write as _;
use std::str::FromStr;

/// Tools whose target (see [`crate::parse::Block::ToolUse`]) is a file path rather than a
/// command, URL or pattern: their targets give `ext:` tags and episode vocabulary.
pub const FILE_TOOLS: &[&str] = &[
    "Read",
    "Edit",
    "Write",
    "MultiEdit",
    "NotebookEdit",
    "NotebookRead",
];

/// Smallest content stored, in bytes.
pub const MIN_CONTENT_BYTES: usize = 100;
/// Largest content stored, in bytes.
pub const MAX_CONTENT_BYTES: usize = 10_240;
/// Longest title, in characters.
pub const MAX_TITLE_CHARS: usize = 256;

/// What a snippet captures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SnippetType {
    /// What failed, the error, what was tried, what fixed it.
    ErrorReasoning,
    /// What was chosen, the alternatives, why.
    DecisionRationale,
    /// A reusable lesson.
    LearningPattern,
}

impl SnippetType {
    /// Every type, in display order.
    pub const ALL: [SnippetType; 3] = [
        SnippetType::ErrorReasoning,
        SnippetType::DecisionRationale,
        SnippetType::LearningPattern,
    ];

    /// Stored name (fixed: it is data in a column with a CHECK constraint).
    pub fn as_str(self) -> &'static str {
        match self {
            SnippetType::ErrorReasoning => "error_reasoning",
            SnippetType::DecisionRationale => "decision_rationale",
            SnippetType::LearningPattern => "learning_pattern",
        }
    }
}

impl FromStr for SnippetType {
    type Err = SnippetError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let norm = s.trim().to_ascii_lowercase().replace('-', "_");
        SnippetType::ALL
            .into_iter()
            .find(|t| t.as_str() == norm)
            .ok_or_else(|| SnippetError::InvalidType(s.to_string()))
    }
}

/// Why a snippet cannot be stored. One line each, for the CLI.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnippetError {
    /// Not one of the three types.
    #[error(
        "invalid type {0:?}: expected error_reasoning, decision_rationale or learning_pattern"
    )]
    InvalidType(String),
    /// Content outside 100..=10240 bytes.
    #[error("content is {bytes} bytes; a snippet must be 100 to 10240 bytes")]
    ContentSize {
        /// Its size.
        bytes: usize,
    },
    /// Title empty after trimming.
    #[error("title is empty")]
    EmptyTitle,
    /// Title over 256 characters.
    #[error("title is {chars} characters; at most 256 are allowed")]
    TitleTooLong {
        /// Its length.
        chars: usize,
    },
    /// The content is noise (see [`noise_reason`]).
    #[error("content rejected: {0}")]
    Rejected(&'static str),
}

/// Step headers of prompt frameworks, rejected as whole candidates.
const STEP_HEADERS: &[&str] = &[
    "phase", "observe", "think", "plan", "build", "execute", "verify", "learn",
];

/// Why `text` is noise rather than content, or `None` when it passes the gates:
/// markdown labels (`**Label**:`), box-drawing runs, table borders, bracketed numbered lists,
/// step headers, and anything under 20 characters after trimming, with fewer than 3 word
/// characters, or under 10 characters once `* _ # -` are stripped.
pub fn noise_reason(text: &str) -> Option<&'static str> {
    let t = text.trim();
    if t.chars().count() < 20 {
        return Some("shorter than 20 characters");
    }
    if t.chars().filter(|c| c.is_alphanumeric()).count() < 3 {
        return Some("fewer than 3 word characters");
    }
    let stripped: String = t
        .chars()
        .filter(|c| !matches!(c, '*' | '_' | '#' | '-') && !c.is_whitespace())
        .collect();
    if stripped.chars().count() < 10 {
        return Some("under 10 characters without markdown");
    }
    let lines: Vec<&str> = t.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    if lines.iter().all(|l| is_markdown_label(l)) {
        return Some("markdown label");
    }
    if lines
        .iter()
        .all(|l| is_box_drawing(l) || is_table_border(l))
    {
        return Some("box drawing or table border");
    }
    if lines.iter().all(|l| is_table_row(l) || is_table_border(l)) {
        return Some("table");
    }
    if lines.iter().all(|l| is_bracketed_numbered(l)) {
        return Some("bracketed numbered list");
    }
    if lines.iter().all(|l| is_step_header(l)) {
        return Some("step header");
    }
    None
}

/// A line that is noise on its own (dropped from a candidate before it is judged).
pub fn is_noise_line(line: &str) -> bool {
    let l = line.trim();
    !l.is_empty()
        && (is_markdown_label(l) || is_box_drawing(l) || is_table_border(l) || is_step_header(l))
}

/// `**Label**:` / `**Label:**` / `Label:` in bold with nothing after it.
fn is_markdown_label(l: &str) -> bool {
    let core = l.trim_start_matches(['#', '-', '*', ' ', '>']).trim_end();
    let core = core.trim_end_matches(['*', '_']);
    let Some(label) = core.strip_suffix(':') else {
        return l.starts_with("**") && l.ends_with("**") && l.len() < 80;
    };
    let label = label.trim_end_matches(['*', '_']).trim();
    !label.is_empty() && label.chars().count() <= 60 && (l.contains("**") || l.starts_with('#'))
}

fn is_box_char(c: char) -> bool {
    ('\u{2500}'..='\u{259F}').contains(&c)
}

/// Mostly box-drawing / block characters (`───`, `═══`, `│ x │`).
fn is_box_drawing(l: &str) -> bool {
    let total = l.chars().filter(|c| !c.is_whitespace()).count();
    let boxy = l.chars().filter(|c| is_box_char(*c)).count();
    let mut run = 0;
    let long_run = l.chars().any(|c| {
        run = if is_box_char(c) { run + 1 } else { 0 };
        run >= 3
    });
    total > 0 && (boxy * 2 >= total || long_run)
        || l.chars().filter(|c| matches!(c, '=' | '~')).count() >= 3
            && l.chars().all(|c| matches!(c, '=' | '~' | ' '))
}

/// `|---|:---:|`, `+----+----+`, `-----`.
fn is_table_border(l: &str) -> bool {
    l.len() >= 3
        && l.chars()
            .all(|c| matches!(c, '|' | '-' | ':' | '+' | ' ' | '='))
}

/// `| a | b |`.
fn is_table_row(l: &str) -> bool {
    l.starts_with('|') && l.ends_with('|') && l.matches('|').count() >= 3
}

/// `[1] ...`, `[2/5] ...`, `(3) ...`.
fn is_bracketed_numbered(l: &str) -> bool {
    let rest = match l.chars().next() {
        Some('[') => l.get(1..).and_then(|r| r.split_once(']')),
        Some('(') => l.get(1..).and_then(|r| r.split_once(')')),
        _ => None,
    };
    rest.is_some_and(|(n, _)| {
        !n.is_empty()
            && n.chars()
                .all(|c| c.is_ascii_digit() || c == '/' || c == '.')
    })
}

/// `Phase 2: ...`, `## OBSERVE`, `**PLAN**`, `VERIFY:`.
fn is_step_header(l: &str) -> bool {
    let core = l
        .trim_start_matches(['#', '*', '_', ' ', '>', '-'])
        .trim_end_matches(['*', '_', ' ', ':']);
    let first = core
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or("");
    let lower = first.to_ascii_lowercase();
    if !STEP_HEADERS.contains(&lower.as_str()) {
        return false;
    }
    // "Phase 1: Setup" and "PLAN" are headers; "Plan the migration so that ..." is prose.
    let words = core.split_whitespace().count();
    let upper = first.chars().all(|c| c.is_ascii_uppercase());
    words <= 2 || (words <= 6 && (lower == "phase" || upper))
}

/// Check a snippet's title and content against the limits and the gates.
pub fn validate(title: &str, content: &str) -> Result<(), SnippetError> {
    let t = title.trim();
    if t.is_empty() {
        return Err(SnippetError::EmptyTitle);
    }
    let chars = t.chars().count();
    if chars > MAX_TITLE_CHARS {
        return Err(SnippetError::TitleTooLong { chars });
    }
    let bytes = content.len();
    if !(MIN_CONTENT_BYTES..=MAX_CONTENT_BYTES).contains(&bytes) {
        return Err(SnippetError::ContentSize { bytes });
    }
    match noise_reason(content) {
        Some(why) => Err(SnippetError::Rejected(why)),
        None => Ok(()),
    }
}

/// Dedup key of a content: xxh3 of its lowercase words joined by single spaces, so
/// re-wrapped or re-indented copies of one text collide.
pub fn normalized_hash(content: &str) -> String {
    let mut norm = String::with_capacity(content.len());
    for w in content.split_whitespace() {
        if !norm.is_empty() {
            norm.push(' ');
        }
        norm.extend(w.chars().flat_map(char::to_lowercase));
    }
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(norm.as_bytes()))
}

/// Words that mark the lines of a tool output worth keeping. (Not "warning": in a failed
/// build or a server log, warnings crowd out the error.)
const ERROR_MARKERS: &[&str] = &[
    "error",
    "failed",
    "failure",
    "panic",
    "exception",
    "traceback",
    "cannot",
    "can't",
    "not found",
    "no such",
    "denied",
    "invalid",
    "undefined",
    "unexpected",
    "expected",
    "fatal",
    "assert",
    "exit code",
    "-->",
];

/// An error statement: `KeyError: ...`, `error[E0425]: ...`, `error: ...`, `FAILED ...`,
/// `thread 'x' panicked at ...`. `l` is trimmed.
fn is_error_statement(l: &str) -> bool {
    let head = l.split(':').next().unwrap_or("");
    let word = !head.is_empty() && head.len() < 40 && !head.contains(' ');
    word && (head.ends_with("Error") || head.ends_with("Exception") || head.starts_with("error"))
        || l.starts_with("FAILED ")
        || l.contains("panicked at")
}

/// The lines of a tool output that matter, at most `max_lines`, in their order: the first
/// line (tools put their summary there), the last error statement (a traceback ends with the
/// exception that was raised), the other error statements from the top, then lines naming an
/// error; each statement or naming line brings the line after it (the location or the detail).
/// Without any, the first and last lines. Omitted stretches are marked `…`.
pub fn cut_tool_output(text: &str, max_lines: usize) -> String {
    let text = strip_ansi(text);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !is_noise_line(l))
        .collect();
    if lines.len() <= max_lines {
        return lines.join("\n");
    }
    let mut keep = vec![false; lines.len()];
    let mut kept = 0;
    let mut take = |i: usize, keep: &mut [bool]| {
        if i < keep.len() && !keep[i] && kept < max_lines {
            keep[i] = true;
            kept += 1;
        }
    };
    let statements: Vec<usize> = (0..lines.len())
        .filter(|&i| is_error_statement(lines[i].trim()))
        .collect();
    let naming: Vec<usize> = (0..lines.len())
        .filter(|&i| {
            let lower = lines[i].to_ascii_lowercase();
            ERROR_MARKERS.iter().any(|m| lower.contains(m))
        })
        .collect();
    if !statements.is_empty() || !naming.is_empty() {
        take(0, &mut keep);
        if let Some(&last) = statements.last() {
            take(last, &mut keep);
            take(last + 1, &mut keep);
        }
        for &i in statements.iter().chain(&naming) {
            take(i, &mut keep);
            take(i + 1, &mut keep);
        }
    } else {
        let head = max_lines / 2;
        for i in 0..head {
            take(i, &mut keep);
        }
        for i in lines.len().saturating_sub(max_lines - head)..lines.len() {
            take(i, &mut keep);
        }
    }
    let mut out = String::new();
    let mut gap = false;
    for (l, k) in lines.iter().zip(&keep) {
        if *k {
            if gap {
                out.push_str("…\n");
            }
            gap = false;
            out.push_str(l);
            out.push('\n');
        } else {
            gap = true;
        }
    }
    if gap {
        out.push('…');
    }
    out.trim_end().to_string()
}

/// `s` without terminal escape sequences (colours, cursor moves): tool outputs captured from
/// a terminal are full of them, and they are unreadable once stored.
pub fn strip_ansi(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains('\u{1b}') {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('[') => {
                chars.next();
                // CSI: parameters and intermediates, then one final byte in @..~.
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                // OSC: up to BEL or ESC \.
                for c in chars.by_ref() {
                    if c == '\u{7}' || c == '\\' {
                        break;
                    }
                }
            }
            Some(_) => {
                chars.next();
            }
            None => {}
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The line of an error text that says most: an error statement (`KeyError: ...`,
/// `error[E0425]: ...`, `FAILED ...`, `panicked at ...`), else a line naming an error or a
/// failure (strong words before weak ones: "failed" says more than "can't"), else the first
/// line of a few words that is not an exit status; tool-error tags, decoration (box drawing,
/// prompt arrows) and terminal escapes removed, log-level warnings and infos passed over.
pub fn headline(error: &str) -> String {
    let clean = |l: &str| {
        let decoration = |c: char| matches!(c, '=' | '-' | '_' | '*' | '#');
        l.replace("<tool_use_error>", "")
            .replace("</tool_use_error>", "")
            .trim_start_matches(|c: char| {
                !(c.is_alphanumeric() || "'\"`([{<$~/.".contains(c)) || decoration(c)
            })
            .trim_end_matches(|c: char| {
                !(c.is_alphanumeric() || "'\"`)]}>.!?".contains(c)) || decoration(c)
            })
            .trim_start_matches("Error: ")
            .trim()
            .to_string()
    };
    let text = strip_ansi(error);
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !is_noise_line(l) && !l.trim_start().starts_with('│'))
        .map(clean)
        .filter(|l| l.chars().filter(|c| c.is_alphanumeric()).count() >= 3 && l != "…")
        .collect();
    let not_status = |l: &&String| {
        let lower = l.to_ascii_lowercase();
        !lower.starts_with("exit code")
            && !lower.starts_with("exit status")
            && !lower.contains("passed")
            && !lower.starts_with("traceback")
    };
    let not_minor = |l: &&String| {
        let lower = l.to_ascii_lowercase();
        !["warn", "info", "debug", "note:", "hint:"]
            .iter()
            .any(|p| lower.starts_with(p))
    };
    let naming = |words: &'static [&'static str]| {
        move |l: &&String| {
            let lower = l.to_ascii_lowercase();
            words.iter().any(|m| lower.contains(m))
        }
    };
    const STRONG: &[&str] = &["error", "failed", "failure", "fatal", "panic", "exception"];
    const WEAK: &[&str] = &[
        "not found",
        "cannot",
        "can't",
        "denied",
        "refused",
        "no such",
        "does not exist",
        "unable to",
    ];
    let candidates = || lines.iter().filter(not_status).filter(not_minor);
    candidates()
        .find(|l| is_error_statement(l))
        .or_else(|| candidates().find(naming(STRONG)))
        .or_else(|| candidates().find(naming(WEAK)))
        .or_else(|| candidates().find(|l| l.split_whitespace().count() >= 4))
        .or_else(|| lines.iter().find(not_status))
        .or_else(|| lines.first())
        .cloned()
        .unwrap_or_default()
}

/// `s` trimmed and cut to at most `max` characters, with `…` when cut.
pub fn clip_chars(s: &str, max: usize) -> String {
    let s = s.trim();
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
    t.push('…');
    t
}

/// `s` cut to at most `max` bytes on a character boundary, with `…` when cut.
pub fn truncate_bytes(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// A title readable on its own: the first sentence of the first non-noise line, without
/// markdown, at most [`MAX_TITLE_CHARS`] characters.
pub fn title_from(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !is_noise_line(l) && !is_table_row(l) && !l.starts_with("```"))
        .unwrap_or("");
    let clean: String = line
        .trim_start_matches(|c: char| "#>-*|,;:.) ".contains(c))
        .replace("**", "")
        .replace('`', "");
    let clean = clean.trim();
    let sentence = match clean.find(". ") {
        Some(i) if i >= 20 => &clean[..i + 1],
        _ => clean,
    };
    clip_chars(sentence, MAX_TITLE_CHARS)
}

/// Words in a text (runs of non-whitespace holding a letter or digit).
pub fn word_count(s: &str) -> usize {
    s.split_whitespace()
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .count()
}

/// Metadata stored with a snippet: word count, reading time (200 words a minute, at least one
/// second), and the triage label, confidence and Claude Code version when known.
pub fn metadata_json(
    content: &str,
    triage: Option<&str>,
    confidence: Option<f64>,
    version: Option<&str>,
) -> String {
    let words = word_count(content);
    let mut m = serde_json::Map::new();
    m.insert("word_count".into(), words.into());
    m.insert(
        "reading_time_s".into(),
        (((words as f64) * 60.0 / 200.0).ceil().max(1.0) as u64).into(),
    );
    if let Some(t) = triage {
        m.insert("triage".into(), t.into());
    }
    if let Some(c) = confidence {
        m.insert("confidence".into(), ((c * 100.0).round() / 100.0).into());
    }
    if let Some(v) = version {
        m.insert("version".into(), v.into());
    }
    serde_json::Value::Object(m).to_string()
}

/// `project:<name>`: the last component of the session's working directory (or, when that is
/// unknown, of its project folder), lowercase, runs of whitespace as `-`, so automatic and
/// manual snippets of one project share one tag that `--tag` can name without quoting.
pub fn project_tag(cwd_or_folder: &str) -> Option<String> {
    let base = cwd_or_folder
        .trim_end_matches(['/', '\\'])
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or("");
    let name = base
        .split_whitespace()
        .collect::<Vec<_>>()
        .join("-")
        .to_lowercase();
    (!name.is_empty()).then(|| format!("project:{name}"))
}

/// `ext:rs` for a path with an extension (lowercase, at most 8 characters).
pub fn path_tags(path: &str) -> Option<String> {
    let name = path.rsplit(['/', '\\']).next()?;
    let (stem, ext) = name.rsplit_once('.')?;
    if stem.is_empty() || ext.is_empty() || ext.len() > 8 {
        return None;
    }
    if !ext.chars().all(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    let mut t = String::from("ext:");
    let _ = write!(t, "{}", ext.to_ascii_lowercase());
    Some(t)
}

#[cfg(test)]
mod tests;
