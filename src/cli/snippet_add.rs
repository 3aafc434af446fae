//! `gleaner snippet add`: store a snippet written by hand (`--content-file`) or cut from a
//! transcript (`--file T --lines A:B | --turns A:B`).
//!
//! Why a manual path beside the automatic snippets: the person who lived through a session
//! knows which stretch of it is worth keeping. The snippet goes through the same gates as the
//! automatic ones: secrets redacted before anything else looks at the text, then the size limits
//! and noise gates of [`crate::snippet::validate`], and the store's per-session dedup on the
//! normalized content.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, Context};

use super::snippets::AddArgs;
use super::{resolve_prefix, Outcome, EXIT_OK};
use crate::config::Config;
use crate::extract::redact::Redactor;
use crate::extract::rows::{now_iso, SnippetRow};
use crate::snippet::excerpt::{self, Selection};
use crate::snippet::{self as snip, SnippetError, SnippetType};
use crate::store::{SessionFilter, SnippetSource, Store};

/// Most bytes read of a `--content-file`: far above [`snip::MAX_CONTENT_BYTES`] (redaction can
/// shorten a text) yet bounded, so pointing at a huge file fails fast instead of loading it.
const MAX_CONTENT_FILE_BYTES: u64 = 1024 * 1024;

/// Where the content comes from.
enum Origin {
    /// A file holding the content as written.
    ContentFile(PathBuf),
    /// A part of a transcript.
    Transcript(PathBuf, Selection),
}

/// The content before redaction, and where it sits in its source.
struct Cut {
    content: String,
    /// Canonical path of the source.
    source_file: String,
    /// The source as named in messages (`lines 3:9 of /x.jsonl`).
    what: String,
    line_start: u64,
    line_end: u64,
    version: Option<String>,
    tools: Vec<String>,
    paths: Vec<String>,
    /// Secrets already replaced (while rendering an excerpt).
    redacted: u64,
}

/// Run `gleaner snippet add`. Exit 0 when stored or already stored, 1 when the session is
/// unknown or ambiguous; any other problem is an error (one line, exit 2).
pub async fn run(cfg: &Config, args: AddArgs) -> Outcome {
    // Everything that needs neither the database nor a file is checked first.
    let snippet_type: SnippetType = args.snippet_type.parse()?;
    let origin = origin(&args)?;
    let redactor = cfg.redactor.clone();

    let store = Store::connect(&cfg.database).await?;
    let session_id = match resolve_prefix(&store, &args.session).await? {
        Ok(id) => id,
        Err(code) => return Ok(code),
    };
    let session = store
        .list_sessions(&SessionFilter {
            session_ids: Some(vec![session_id.clone()]),
            ..SessionFilter::default()
        })
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| anyhow!("session {session_id} disappeared while adding the snippet"))?;

    let r = Arc::clone(&redactor);
    let cut = crate::run::blocking(move || read_origin(&origin, &r))
        .await
        .context("reading the snippet content failed")??;

    // Redact before anything else sees the text: validation, hashing, storage and output. An
    // excerpt is redacted piece by piece already (before its tool outputs are cut); redacting
    // the whole again is a no-op for it and the only pass for a content file.
    let mut counts = BTreeMap::new();
    let title = redactor.redact(args.title.trim(), &mut counts).into_owned();
    let content = redactor.redact(&cut.content, &mut counts).into_owned();
    if let Err(e) = snip::validate(&title, &content) {
        return Err(match e {
            SnippetError::ContentSize { .. } | SnippetError::Rejected(_) => {
                anyhow!(e).context(format!("snippet from {}", cut.what))
            }
            _ => anyhow!(e),
        });
    }

    let mut tags = vec!["manual".to_string()];
    tags.extend(snip::project_tag(
        session.cwd.as_deref().unwrap_or(&session.project),
    ));
    tags.extend(
        cut.tools
            .iter()
            .map(|t| format!("tool:{}", t.to_lowercase())),
    );
    tags.extend(cut.paths.iter().filter_map(|p| snip::path_tags(p)));
    tags.sort();
    tags.dedup();
    let version = cut.version.as_deref().or(session.version.as_deref());
    let row = SnippetRow {
        origin: "manual",
        snippet_type: snippet_type.as_str().to_string(),
        content_hash: snip::normalized_hash(&content),
        metadata: snip::metadata_json(&content, None, None, version),
        title,
        content,
        line_start: cut.line_start,
        line_end: cut.line_end,
        tags,
    };
    let created_at = now_iso();
    let src = SnippetSource {
        session_id: &session_id,
        project: &session.project,
        source_file: &cut.source_file,
        episode_id: None,
        created_at: &created_at,
    };
    let id = store.insert_snippet(&src, &row).await?;
    store.close().await;
    match id {
        Some(id) => tracing::debug!(
            snippet_id = id,
            session_id = %session_id,
            bytes = row.content.len(),
            redacted = cut.redacted + counts.values().sum::<u64>(),
            "manual snippet stored"
        ),
        None => tracing::debug!(session_id = %session_id, "manual snippet already stored"),
    }
    print_outcome(id, &session_id, &src, &row, args.json)?;
    Ok(EXIT_OK)
}

/// Which content source the flags name (clap already rejects `--content-file` with `--file`,
/// `--lines` with `--turns`, and either without `--file`).
fn origin(args: &AddArgs) -> anyhow::Result<Origin> {
    match (&args.content_file, &args.file) {
        (Some(f), None) => Ok(Origin::ContentFile(f.clone())),
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
            Ok(Origin::Transcript(f.clone(), sel))
        }
        (Some(_), Some(_)) => anyhow::bail!("use either --content-file or --file, not both"),
        (None, None) => anyhow::bail!(
            "no content: give --content-file F, or --file TRANSCRIPT with --lines A:B or --turns A:B"
        ),
    }
}

/// Read the content from its source (blocking IO: run on a blocking thread). An excerpt is
/// redacted as it is rendered; a content file is returned as written.
fn read_origin(origin: &Origin, redactor: &Redactor) -> anyhow::Result<Cut> {
    match origin {
        Origin::ContentFile(path) => {
            let content = read_content_file(path)?;
            // The content is at least 100 bytes once valid; an empty file still gets 1:1.
            let lines = content.lines().count().max(1) as u64;
            Ok(Cut {
                content,
                source_file: canonical(path),
                what: path.display().to_string(),
                line_start: 1,
                line_end: lines,
                version: None,
                tools: Vec::new(),
                paths: Vec::new(),
                redacted: 0,
            })
        }
        Origin::Transcript(path, sel) => {
            let ex = excerpt::excerpt(path, *sel, redactor)?;
            Ok(Cut {
                content: ex.content,
                source_file: canonical(path),
                what: format!("{sel} of {}", path.display()),
                line_start: ex.line_start,
                line_end: ex.line_end,
                version: ex.version,
                tools: ex.tools,
                paths: ex.paths,
                redacted: ex.redacted,
            })
        }
    }
}

/// The whole content file as UTF-8 text (at most [`MAX_CONTENT_FILE_BYTES`]).
fn read_content_file(path: &Path) -> anyhow::Result<String> {
    let cannot = || format!("cannot read {}", path.display());
    let file = std::fs::File::open(path).with_context(cannot)?;
    let mut bytes = Vec::new();
    file.take(MAX_CONTENT_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(cannot)?;
    if bytes.len() as u64 > MAX_CONTENT_FILE_BYTES {
        let size = std::fs::metadata(path).map_or(bytes.len(), |m| m.len() as usize);
        return Err(anyhow!(SnippetError::ContentSize { bytes: size })
            .context(format!("snippet from {}", path.display())));
    }
    String::from_utf8(bytes).map_err(|e| {
        anyhow!(
            "{} is not UTF-8 text (invalid byte at offset {})",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })
}

/// The absolute, symlink-free path stored as the snippet's source (as given if that fails,
/// which cannot happen for a file just read unless it was removed meanwhile).
fn canonical(path: &Path) -> String {
    std::fs::canonicalize(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

/// `stored snippet <id>` / `already stored: ...`, or the row as JSON with `--json` (`id` null
/// and `duplicate` true when the session already held the content).
fn print_outcome(
    id: Option<i64>,
    session_id: &str,
    src: &SnippetSource<'_>,
    row: &SnippetRow,
    json: bool,
) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        let v = serde_json::json!({
            "id": id,
            "duplicate": id.is_none(),
            "session_id": session_id,
            "type": row.snippet_type,
            "title": row.title,
            "content": row.content,
            "line_start": row.line_start,
            "line_end": row.line_end,
            "source_file": src.source_file,
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
