//! Snippets: short, sourced pieces of reasoning worth keeping, and the gates they pass.
//!
//! Why gates: the text an assistant writes around its work is full of scaffolding (markdown
//! labels, tables, box drawings, step headers of prompt frameworks) that reads as content to a
//! naive extractor and as noise to a person. A snippet is only stored when it survives
//! [`noise_reason`] and the size limits ([`validate`]); the database enforces the type list and
//! the size range again, so no writer can bypass them.
//!
//! [`draft`] drafts the automatic snippets of an episode that closes; [`excerpt`] cuts the
//! transcript for `snippet add`.

pub mod draft;
pub mod excerpt;

use std::fmt::Write as _;
use std::str::FromStr;

use crate::text::noise::{is_noise_line, is_table_row, noise_reason};
use crate::text::{clip_chars, sentence, word_count};

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
