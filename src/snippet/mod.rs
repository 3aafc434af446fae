//! Snippets: short, sourced pieces of reasoning worth keeping, and the gates they pass.
//!
//! Why gates: the text an assistant writes around its work is full of scaffolding (markdown
//! labels, tables, box drawings, step headers of prompt frameworks) that reads as content to a
//! naive extractor and as noise to a person. A snippet is only stored when it survives
//! [`noise_reason`] and the size limits ([`validate`]); the database enforces the type list and
//! the size range again, so no writer can bypass them.

pub mod excerpt;
pub mod sentence;
pub mod text;

pub use text::{clip_chars, cut_tool_output, headline, strip_ansi, truncate_bytes};

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

/// A title readable on its own: the first sentence of the first non-noise line, without
/// markdown, at most [`MAX_TITLE_CHARS`] characters.
pub fn title_from(text: &str) -> String {
    let line = text
        .split(['\n', '\r'])
        .map(str::trim)
        .find(|l| !l.is_empty() && !is_noise_line(l) && !is_table_row(l) && !l.starts_with("```"))
        .unwrap_or("");
    // Cut at the first sentence's end before the markup goes: a dot inside inline code
    // (`manual_commit_git.go`) ends no sentence.
    let line = line
        .trim_start_matches(|c: char| "#>-*|,;:.) ".contains(c))
        .trim();
    let sentence = match sentence::first_end(line, 20) {
        Some(i) => &line[..i],
        None => line,
    };
    let sentence = sentence.replace("**", "").replace('`', "");
    let sentence = sentence.trim();
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

/// `metadata` with a learning's two halves added (`observation`: what happened, concretely;
/// `generalization`: the reusable lesson), which `gleaner export --format learnings` emits.
/// Empty halves are left out.
pub fn with_learning(metadata: &str, observation: &str, generalization: &str) -> String {
    let mut m: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(metadata).unwrap_or_default();
    for (k, v) in [
        ("observation", observation),
        ("generalization", generalization),
    ] {
        if !v.trim().is_empty() {
            m.insert(k.into(), v.trim().into());
        }
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
