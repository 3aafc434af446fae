//! `gleaner snippet add`: store a snippet written by hand (`--content-file`) or cut from a
//! transcript (`--file T --lines A:B | --turns A:B`).
//!
//! Why a manual path beside the automatic snippets: the person who lived through a session
//! knows which stretch of it is worth keeping. The snippet goes through the same gates as the
//! automatic ones: secrets redacted before anything else looks at the text, then the size limits
//! and noise gates of [`crate::snippet::validate`], and the store's per-session dedup on the
//! normalized content. The work is [`crate::query::snippet_add`], shared with the MCP server.

use std::io::Write;

use super::snippets::AddArgs;
use super::{resolve_prefix, Outcome, EXIT_OK};
use crate::config::Config;
use crate::query::snippet_add::{add, AddRequest, Added, Content};
use crate::query::store::Store;
use crate::snippet::excerpt::{self, Selection};
use crate::snippet::SnippetType;

/// Run `gleaner snippet add`. Exit 0 when stored or already stored, 1 when the session is
/// unknown or ambiguous; any other problem is an error (one line, exit 2).
pub async fn run(cfg: &Config, args: AddArgs) -> Outcome {
    // Everything that needs neither the database nor a file is checked first.
    let snippet_type: SnippetType = args.snippet_type.parse()?;
    let content = content(&args)?;
    let redactor = cfg.redactor.clone();

    let store = Store::connect(&cfg.database).await?;
    let session_id = match resolve_prefix(&store, &args.session).await? {
        Ok(id) => id,
        Err(code) => return Ok(code),
    };

    let added = add(
        &store,
        &redactor,
        AddRequest {
            session_id,
            snippet_type,
            title: args.title,
            content,
            tags: Vec::new(),
            metadata: None,
        },
    )
    .await?;
    store.close().await;
    print_outcome(&added, args.json)?;
    Ok(EXIT_OK)
}

/// Which content source the flags name (clap already rejects `--content-file` with `--file`,
/// `--lines` with `--turns`, and either without `--file`).
fn content(args: &AddArgs) -> anyhow::Result<Content> {
    match (&args.content_file, &args.file) {
        (Some(f), None) => Ok(Content::File(f.clone())),
        (None, Some(f)) => {
            let sel = match (&args.lines, &args.turns) {
                (Some(r), None) => {
                    let (a, b) = excerpt::parse_range(r)?;
                    Selection::Lines(a, b)
                }
                (None, Some(r)) => {
                    let (a, b) = excerpt::parse_range(r)?;
                    Selection::Turns(a, b)
                }
                _ => anyhow::bail!("--file needs exactly one of --lines A:B or --turns A:B"),
            };
            Ok(Content::Transcript(f.clone(), sel))
        }
        (Some(_), Some(_)) => anyhow::bail!("use either --content-file or --file, not both"),
        (None, None) => anyhow::bail!(
            "no content: give --content-file F, or --file TRANSCRIPT with --lines A:B or --turns A:B"
        ),
    }
}

/// `stored snippet <id>` / `already stored: ...`, or the row as JSON with `--json` (`id` null
/// and `duplicate` true when the session already held the content).
fn print_outcome(added: &Added, json: bool) -> std::io::Result<()> {
    let (id, row) = (added.id, &added.row);
    let mut out = std::io::stdout().lock();
    if json {
        let v = serde_json::json!({
            "id": id,
            "duplicate": id.is_none(),
            "session_id": added.session_id,
            "type": row.snippet_type,
            "title": row.title,
            "content": row.content,
            "line_start": row.line_start,
            "line_end": row.line_end,
            "source_file": added.source_file,
            "tags": row.tags,
        });
        serde_json::to_writer_pretty(&mut out, &v)?;
        return writeln!(out);
    }
    match id {
        Some(id) => writeln!(out, "stored snippet {id}"),
        None => writeln!(out, "already stored: the session holds the same content"),
    }
}
