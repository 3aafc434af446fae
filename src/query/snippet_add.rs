//! Storing a snippet by hand: `gleaner snippet add` and the MCP tool `extract_snippet`, the
//! one use case the doors share that writes.
//!
//! Why a manual path beside the automatic snippets: the person (or agent) who lived through a
//! session knows which stretch of it is worth keeping. The snippet goes through the same gates
//! as the automatic ones: secrets redacted before anything else looks at the text, then the
//! size limits and noise gates of [`crate::snippet::validate`], and the store's per-session
//! dedup on the normalized content.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::extract::redact::Redactor;
use crate::extract::rows::{now_iso, SnippetRow};
use crate::snippet::excerpt::{self, Selection, SourceError};
use crate::snippet::{self as snip, SnippetError, SnippetType};
use crate::store::{Schema, SnippetSource, Store, StoreError, TimelineFile};

/// Most bytes read of a content file: far above [`snip::MAX_CONTENT_BYTES`] (redaction can
/// shorten a text) yet bounded, so pointing at a huge file fails fast instead of loading it.
const MAX_CONTENT_FILE_BYTES: u64 = 1024 * 1024;

/// Where the content comes from.
#[derive(Debug, Clone)]
pub enum Content {
    /// Given as text (MCP), with the file it is about, if any.
    Text {
        /// The content.
        text: String,
        /// What it was taken from (stored as the snippet's source).
        source_file: Option<String>,
        /// Its lines in that file, when known.
        lines: Option<(u64, u64)>,
    },
    /// A file holding the content as written.
    File(PathBuf),
    /// A part of a transcript.
    Transcript(PathBuf, Selection),
}

/// A snippet to store.
#[derive(Debug, Clone)]
pub struct AddRequest {
    /// The session it belongs to (a full id).
    pub session_id: String,
    /// Its type.
    pub snippet_type: SnippetType,
    /// Its title, as given.
    pub title: String,
    /// Its content.
    pub content: Content,
    /// Tags beyond the automatic ones (`manual`, project, tools, file extensions).
    pub tags: Vec<String>,
    /// Metadata merged into the automatic one (word count, reading time, version).
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
}

/// What was stored.
#[derive(Debug, Clone)]
pub struct Added {
    /// The row id; `None` when the session already held the same content.
    pub id: Option<i64>,
    /// The session.
    pub session_id: String,
    /// The row as stored (redacted).
    pub row: SnippetRow,
    /// Its source.
    pub source_file: String,
    /// When it was stored.
    pub created_at: String,
}

/// Why a snippet was not stored. One line each.
#[derive(Debug, thiserror::Error)]
pub enum AddError {
    /// The session is not in the store.
    #[error("no session {0}")]
    UnknownSession(String),
    /// The transcript range cannot be read.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The database was migrated by a newer gleaner: this one reads it but never writes to it.
    #[error(
        "the database's schema (version {0}) is newer than this gleaner's: upgrade gleaner to \
         store snippets in it"
    )]
    NewerSchema(i64),
    /// The file named as the source is not a transcript Gleaner tracks for the session.
    #[error(
        "{} is not a transcript of session {session_id} (give one of the session's own files, \
         or leave the file out for its main transcript)",
        .path.display()
    )]
    Untracked {
        /// The file named.
        path: PathBuf,
        /// The session.
        session_id: String,
    },
    /// A content file cannot be read.
    #[error("cannot read {}: {message}", .path.display())]
    ContentFile {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// A content file is not text.
    #[error("{} is not UTF-8 text (invalid byte at offset {offset})", .path.display())]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// Where the first invalid byte is.
        offset: usize,
    },
    /// The snippet fails a gate; `what` names its source. The gate's words are in this
    /// message, not a source of it: as both, a CLI error chain said them twice.
    #[error("snippet from {what}: {gate}")]
    Invalid {
        /// The source, as named to people.
        what: String,
        /// The gate.
        gate: SnippetError,
    },
    /// The title fails a gate.
    #[error(transparent)]
    Title(SnippetError),
    /// Reading the content on a blocking thread failed.
    #[error("reading the snippet content failed: {0}")]
    Task(#[from] tokio::task::JoinError),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The content before redaction, and where it sits in its source.
struct Cut {
    content: String,
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

/// Store a snippet: read its content (off the runtime), redact, validate, tag and insert.
pub async fn add(
    store: &Store,
    redactor: &Arc<Redactor>,
    req: AddRequest,
) -> Result<Added, AddError> {
    if let Schema::Newer(v) = store.check_schema().await? {
        return Err(AddError::NewerSchema(v));
    }
    let session = store
        .session(&req.session_id)
        .await?
        .ok_or_else(|| AddError::UnknownSession(req.session_id.clone()))?;
    // A snippet's source is a transcript of its own session, never any file a caller names:
    // an agent over MCP must not read (and store) files outside what Gleaner tracks.
    let source = match &req.content {
        Content::Transcript(p, _) => Some(p.clone()),
        Content::Text {
            source_file: Some(f),
            ..
        } => Some(PathBuf::from(f)),
        _ => None,
    };
    // A file that is not there says so when it is read ("cannot read ..."), which is the
    // more useful message.
    let mut archived = None;
    if let Some(path) = source {
        let files = store.session_files(&req.session_id).await?;
        if path.exists() {
            if !is_tracked(&path, &files) {
                return Err(AddError::Untracked {
                    path,
                    session_id: req.session_id.clone(),
                });
            }
        } else if let Content::Transcript(..) = &req.content {
            // Gone from the disk (or another machine's): the archive's copy of a transcript of
            // the session, as stored.
            if let Some(f) = files.iter().find(|f| Path::new(&f.path) == path) {
                archived = super::transcript::archived(store, f.id, f.generation, path).await?;
            }
        }
    }
    let r = Arc::clone(redactor);
    let content = req.content.clone();
    let cut = crate::run::blocking(move || read(&content, &r, archived)).await??;

    // Redact before anything else sees the text: validation, hashing, storage and output. An
    // excerpt is redacted piece by piece already (before its tool outputs are cut); redacting
    // the whole again is a no-op for it and the only pass for given text or a content file.
    let mut counts = BTreeMap::new();
    let title = redactor.redact(req.title.trim(), &mut counts).into_owned();
    let content = redactor.redact(&cut.content, &mut counts).into_owned();
    snip::validate(&title, &content).map_err(|e| match e {
        SnippetError::ContentSize { .. } | SnippetError::Rejected(_) => AddError::Invalid {
            what: cut.what.clone(),
            gate: e,
        },
        _ => AddError::Title(e),
    })?;

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
    tags.extend(
        req.tags
            .iter()
            .map(|t| redactor.redact(t.trim(), &mut counts).into_owned())
            .filter(|t| !t.is_empty()),
    );
    tags.sort();
    tags.dedup();
    let version = cut.version.as_deref().or(session.version.as_deref());
    let mut metadata = snip::metadata_json(&content, None, None, version);
    if let Some(extra) = &req.metadata {
        metadata = merge_metadata(&metadata, extra, redactor);
    }
    let row = SnippetRow {
        origin: "manual",
        snippet_type: req.snippet_type.as_str().to_string(),
        content_hash: snip::normalized_hash(&content),
        metadata,
        title,
        content,
        line_start: cut.line_start,
        line_end: cut.line_end,
        tags,
    };
    let created_at = now_iso();
    let src = SnippetSource {
        session_id: &req.session_id,
        project: &session.project,
        source_file: &cut.source_file,
        episode_id: None,
        created_at: &created_at,
    };
    let id = store.insert_snippet(&src, &row).await?;
    match id {
        Some(id) => tracing::debug!(
            snippet_id = id,
            session_id = %req.session_id,
            bytes = row.content.len(),
            redacted = cut.redacted + counts.values().sum::<u64>(),
            "manual snippet stored"
        ),
        None => tracing::debug!(session_id = %req.session_id, "manual snippet already stored"),
    }
    Ok(Added {
        id,
        session_id: req.session_id,
        row,
        source_file: cut.source_file,
        created_at,
    })
}

/// The automatic metadata with the caller's keys added (the automatic ones win; values are
/// redacted as JSON text).
fn merge_metadata(
    auto: &str,
    extra: &serde_json::Map<String, serde_json::Value>,
    redactor: &Redactor,
) -> String {
    let mut map: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(auto).unwrap_or_default();
    for (k, v) in extra {
        if !map.contains_key(k) {
            let text = redactor
                .redact(&v.to_string(), &mut BTreeMap::new())
                .into_owned();
            let v = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
            map.insert(k.clone(), v);
        }
    }
    serde_json::Value::Object(map).to_string()
}

/// Read the content from its source (blocking IO). An excerpt is redacted as it is rendered;
/// given text and a content file are returned as written.
fn read(
    content: &Content,
    redactor: &Redactor,
    archived: Option<super::transcript::Transcript>,
) -> Result<Cut, AddError> {
    match content {
        Content::Text {
            text,
            source_file,
            lines,
        } => {
            let n = text.lines().count().max(1) as u64;
            let (line_start, line_end) = lines.unwrap_or((1, n));
            Ok(Cut {
                content: text.clone(),
                source_file: source_file.clone().unwrap_or_else(|| "mcp".to_string()),
                what: "the given content".to_string(),
                line_start,
                line_end,
                version: None,
                tools: Vec::new(),
                paths: Vec::new(),
                redacted: 0,
            })
        }
        Content::File(path) => {
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
        Content::Transcript(path, sel) => {
            let ex = match archived {
                Some(t) => t.excerpt(*sel, redactor)?,
                None => excerpt::excerpt(path, *sel, redactor)?,
            };
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
fn read_content_file(path: &Path) -> Result<String, AddError> {
    let err = |message: String| AddError::ContentFile {
        path: path.to_path_buf(),
        message,
    };
    let file = std::fs::File::open(path).map_err(|e| err(e.to_string()))?;
    let mut bytes = Vec::new();
    file.take(MAX_CONTENT_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| err(e.to_string()))?;
    if bytes.len() as u64 > MAX_CONTENT_FILE_BYTES {
        let size = std::fs::metadata(path).map_or(bytes.len(), |m| m.len() as usize);
        return Err(AddError::Invalid {
            what: path.display().to_string(),
            gate: SnippetError::ContentSize { bytes: size },
        });
    }
    String::from_utf8(bytes).map_err(|e| AddError::NotUtf8 {
        path: path.to_path_buf(),
        offset: e.utf8_error().valid_up_to(),
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

/// Whether `path` is one of `files` (as stored, or the same file through another spelling:
/// a relative path, a symbolic link).
fn is_tracked(path: &Path, files: &[TimelineFile]) -> bool {
    let given = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let real = std::fs::canonicalize(path).ok();
    files.iter().any(|f| {
        let stored = Path::new(&f.path);
        stored == given
            || real
                .as_ref()
                .is_some_and(|r| std::fs::canonicalize(stored).is_ok_and(|s| &s == r))
    })
}
