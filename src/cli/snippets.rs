//! Flags of `gleaner snippets` and `gleaner snippet add` (run by `snippet_query` and `snippet_add`).

use std::path::PathBuf;

use clap::Args;

use super::SnippetKind;

/// `gleaner snippets` flags.
#[derive(Debug, Args)]
pub struct SnippetsArgs {
    /// Only this session (a unique prefix of its id is enough).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Only this type.
    #[arg(long = "type", value_name = "T")]
    pub snippet_type: Option<SnippetKind>,
    /// Only sessions whose project folder or working directory contains this text.
    #[arg(long, value_name = "P")]
    pub project: Option<String>,
    /// Only snippets with this tag; repeat to require several (all must match).
    #[arg(long = "tag", value_name = "T")]
    pub tags: Vec<String>,
    /// Only snippets whose title or content contains this text (case-insensitive).
    #[arg(long, value_name = "W")]
    pub keyword: Option<String>,
    /// Only snippets created at or after T (ISO date/time, or an age such as 7d, 12h, 30m).
    #[arg(long, value_name = "T")]
    pub since: Option<String>,
    /// Only snippets created before T (ISO date/time, or an age).
    #[arg(long, value_name = "T")]
    pub until: Option<String>,
    /// Most snippets to return (1 to 500).
    #[arg(long, value_name = "N", default_value_t = 50,
          value_parser = clap::value_parser!(u32).range(1..=500))]
    pub limit: u32,
    /// Skip this many (for paging).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub offset: u32,
    /// Print `{snippets, total_count, has_more}` as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `gleaner snippet add` flags.
#[derive(Debug, Args)]
pub struct AddArgs {
    /// Session the snippet belongs to (a unique prefix of its id is enough).
    #[arg(long, value_name = "ID")]
    pub session: String,
    /// Snippet type.
    #[arg(long = "type", value_name = "T")]
    pub snippet_type: String,
    /// Title, readable on its own (at most 256 characters).
    #[arg(long, value_name = "TEXT")]
    pub title: String,
    /// Take the content from this file as written.
    #[arg(long, value_name = "F", conflicts_with = "file")]
    pub content_file: Option<PathBuf>,
    /// Cut the content from this transcript (with --lines or --turns).
    #[arg(long, value_name = "TRANSCRIPT")]
    pub file: Option<PathBuf>,
    /// Physical lines A to B (1-based, inclusive) of --file.
    #[arg(long, value_name = "A:B", requires = "file", conflicts_with = "turns")]
    pub lines: Option<String>,
    /// Turns A to B (1-based, inclusive) of --file.
    #[arg(long, value_name = "A:B", requires = "file")]
    pub turns: Option<String>,
    /// Print the stored snippet as JSON.
    #[arg(long)]
    pub json: bool,
}
