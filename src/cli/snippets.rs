//! `gleaner snippets`, and the flags of `gleaner snippet add` (run by
//! `snippet_add`): resolve the flags into store filters, then print a table for people or JSON
//! for programs (`{snippets, total_count, has_more}` / an array).
//!
//! An empty result is an answer, not an error: exit 0, and the table form says so on stderr so
//! that stdout stays empty for scripts.

use std::path::PathBuf;

use clap::Args;

use super::output::print_snippets;
use std::io::Write;

use super::{open_store, resolve_optional_prefix, Outcome, SnippetKind, EXIT_NOT_FOUND, EXIT_OK};
use crate::config::Config;
use crate::query;
use crate::query::store::SnippetFilter;

/// Run `gleaner snippets`.
pub async fn snippets(cfg: &Config, args: SnippetsArgs) -> Outcome {
    // Validate the times before touching the database: a typo is an error (exit 2) either way.
    let (since, until) = query::time_range_stored(
        ("--since", args.since.as_deref()),
        ("--until", args.until.as_deref()),
    )?;
    let origin = args.origin.origin()?;
    let store = open_store(cfg).await?;
    let session_ids = match resolve_optional_prefix(&store, args.session.as_deref()).await? {
        Ok(ids) => ids,
        Err(code) => return Ok(code),
    };
    let filter = SnippetFilter {
        session_ids,
        snippet_type: args.snippet_type.map(Into::into),
        project: query::project(("--project", args.project))?,
        origin,
        tags: args.tags,
        keyword: args.keyword.filter(|k| !k.is_empty()),
        since,
        until,
        limit: args.limit,
        offset: args.offset,
        oldest_first: args.reverse,
    };
    let page = store.list_snippets(&filter).await?;
    print_snippets(&page, filter.offset, args.json)?;
    Ok(EXIT_OK)
}

/// Run `gleaner snippet show ID`: the whole snippet and its metadata; exit 1 when no snippet
/// has that id.
pub async fn show(cfg: &Config, id: i64, json: bool) -> Outcome {
    let store = open_store(cfg).await?;
    let Some(s) = store.snippet(id).await? else {
        eprintln!("No snippet with id {id}");
        return Ok(EXIT_NOT_FOUND);
    };
    if json {
        super::output::print_json(&s)?;
        return Ok(EXIT_OK);
    }
    let mut out = std::io::stdout().lock();
    let lines = if s.line_start > 0 {
        format!(":{}-{}", s.line_start, s.line_end)
    } else {
        String::new()
    };
    writeln!(out, "Snippet   {} ({}, {})", s.id, s.snippet_type, s.origin)?;
    writeln!(out, "Title     {}", s.title)?;
    writeln!(out, "Session   {}", s.session_id)?;
    if let Some(e) = s.episode_id {
        writeln!(out, "Episode   {e}")?;
    }
    writeln!(out, "Project   {}", s.project)?;
    if !s.source_file.is_empty() {
        writeln!(out, "Source    {}{lines}", s.source_file)?;
    }
    if !s.tags.is_empty() {
        writeln!(out, "Tags      {}", s.tags.join(", "))?;
    }
    writeln!(out, "Created   {}", s.created_at)?;
    if s.metadata.as_object().is_some_and(|m| !m.is_empty()) {
        writeln!(out, "Metadata  {}", s.metadata)?;
    }
    writeln!(out)?;
    writeln!(out, "{}", s.content.trim_end())?;
    Ok(EXIT_OK)
}

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
    #[arg(long, value_name = "P", allow_hyphen_values = true)]
    pub project: Option<String>,
    #[command(flatten)]
    pub origin: super::list::OriginArgs,
    /// Only snippets with this tag; repeat to require several (all must match).
    #[arg(long = "tag", value_name = "T")]
    pub tags: Vec<String>,
    /// Only snippets whose title or content contains this text (case-insensitive).
    #[arg(long, value_name = "W")]
    pub keyword: Option<String>,
    /// Only snippets created at or after T (ISO date/time, or an age such as 7d, 12h, 30m).
    #[arg(long, value_name = "T")]
    pub since: Option<String>,
    /// Only snippets created before T (ISO date/time, or an age; a date alone includes its day).
    #[arg(long, value_name = "T")]
    pub until: Option<String>,
    /// Most snippets to return (1 to 500).
    #[arg(long, value_name = "N", allow_negative_numbers = true, default_value_t = 50,
          value_parser = clap::value_parser!(u32).range(1..=500))]
    pub limit: u32,
    /// Skip this many (for paging).
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        default_value_t = 0
    )]
    pub offset: u32,
    /// Oldest first (default: newest first).
    #[arg(long)]
    pub reverse: bool,
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
