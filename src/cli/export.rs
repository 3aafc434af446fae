//! `gleaner export`: what was kept about some sessions, as Markdown, JSON, JSON lines or
//! learnings, to stdout or atomically to a file.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use super::{open_store, resolve_optional_prefix, Outcome, EXIT_OK};
use crate::config::Config;
use crate::export::{self, ExportFilter, Format};

/// `--format` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum FormatArg {
    /// Markdown for people: per session its summaries, feedback, episodes and snippets; with
    /// --session, the whole session to read (as html), then what was kept.
    Md,
    /// One session (--session) as one self-contained HTML file to read or share: every prompt
    /// and reply, tool calls, thinking and sub-agents folded, images, episodes in the margin.
    Html,
    /// One JSON array of sessions.
    Json,
    /// One JSON object per session per line.
    Jsonl,
    /// One learning per line: {observation, generalization, project, type, tags}.
    Learnings,
}

/// `gleaner export` flags.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Only this session (a unique prefix of its id is enough; needed by --format html).
    #[arg(long, value_name = "PREFIX", required_if_eq("format", "html"))]
    pub session: Option<String>,
    /// Only sessions whose project folder or working directory contains this text.
    #[arg(long, value_name = "P", allow_hyphen_values = true)]
    pub project: Option<String>,
    #[command(flatten)]
    pub origin: super::list::OriginArgs,
    /// Only sessions active at or after T (ISO date/time, or an age such as 7d).
    #[arg(long, value_name = "T")]
    pub since: Option<String>,
    /// Only sessions started before T (ISO date/time, or an age; a date alone includes its day).
    #[arg(long, value_name = "T")]
    pub until: Option<String>,
    /// Output format.
    #[arg(long, value_name = "F")]
    pub format: FormatArg,
    /// Write to this file (atomically: a reader never sees half of it) instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Run `gleaner export`.
pub async fn run(cfg: &Config, args: ExportArgs) -> Outcome {
    let (since, until) = crate::query::time_range_stored(
        ("--since", args.since.as_deref()),
        ("--until", args.until.as_deref()),
    )?;
    let origin = args.origin.origin()?;
    let store = open_store(cfg).await?;
    let session_ids = match resolve_optional_prefix(&store, args.session.as_deref()).await? {
        Ok(ids) => ids,
        Err(code) => return Ok(code),
    };
    let filter = ExportFilter {
        session_ids,
        project: crate::query::project(("--project", args.project))?,
        origin,
        since,
        until,
        limit: None,
    };
    if let (FormatArg::Html | FormatArg::Md, Some(ids)) = (args.format, &filter.session_ids) {
        let Some(id) = ids.first() else {
            eprintln!("no session matched");
            return Ok(EXIT_OK);
        };
        return document(
            cfg,
            &store,
            &filter,
            id,
            args.format,
            args.output.as_deref(),
        )
        .await;
    }
    let format = match args.format {
        FormatArg::Html => anyhow::bail!("--format html needs --session"),
        FormatArg::Md => Format::Markdown,
        FormatArg::Json => Format::Json,
        FormatArg::Jsonl => Format::Jsonl,
        FormatArg::Learnings => Format::Learnings,
    };
    // Each session is written as soon as it is read: memory holds one chunk of them.
    let mut renderer = export::Renderer::new(format);
    let written = match &args.output {
        None => {
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            let n = export::stream(&store, &filter, |s| -> anyhow::Result<()> {
                Ok(renderer.session(&s, &mut out)?)
            })
            .await?;
            renderer.finish(&mut out)?;
            out.flush()?;
            n
        }
        Some(path) => {
            let mut file = AtomicFile::create(path)?;
            let n = export::stream(&store, &filter, |s| -> anyhow::Result<()> {
                renderer
                    .session(&s, file.writer())
                    .map_err(|e| file.error(e))
            })
            .await?;
            renderer.finish(file.writer()).map_err(|e| file.error(e))?;
            file.commit()?;
            n
        }
    };
    if written == 0 {
        eprintln!("no session matched");
    }
    Ok(EXIT_OK)
}

/// One session to read: HTML, or Markdown followed by what Gleaner kept of it.
async fn document(
    cfg: &Config,
    store: &crate::query::store::Store,
    filter: &ExportFilter,
    id: &str,
    format: FormatArg,
    output: Option<&Path>,
) -> Outcome {
    let Some(src) = export::session::gather(store, id, &cfg.machine_id).await? else {
        anyhow::bail!("session {id} vanished while it was read");
    };
    let r = &cfg.redactor;
    let text = match format {
        FormatArg::Html => export::session::html(&src, r, export::session::Style::Inline),
        _ => {
            let mut md = export::session::markdown(&src, r);
            // What was kept (feedback, episodes with their evidence, snippets), as `--format
            // md` gives it without --session; its header is the one above. Not the summaries:
            // the reading above shows each where it was written, and twice is noise.
            let mut kept = export::collect(store, filter).await?;
            for s in &mut kept {
                s.summaries.clear();
            }
            let kept = export::markdown(&kept);
            if let Some(at) = kept.find("\n## ") {
                md.push_str("\n# What Gleaner kept\n");
                md.push_str(&kept[at..]);
            }
            md
        }
    };
    match output {
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
        Some(path) => {
            let mut file = AtomicFile::create(path)?;
            file.writer()
                .write_all(text.as_bytes())
                .map_err(|e| file.error(e))?;
            file.commit()?;
        }
    }
    Ok(EXIT_OK)
}

/// A file written through a temporary file in the same folder, renamed over its path on
/// [`AtomicFile::commit`]: a reader sees the old file or the whole new one, never a part. The
/// temporary file is removed when the export fails.
struct AtomicFile {
    path: PathBuf,
    tmp: PathBuf,
    w: std::io::BufWriter<std::fs::File>,
    committed: bool,
}

impl AtomicFile {
    fn create(path: &Path) -> anyhow::Result<AtomicFile> {
        let name = path
            .file_name()
            .ok_or_else(|| anyhow::anyhow!("--output {} is not a file name", path.display()))?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let tmp = dir.join(format!(
            ".{}.{}.tmp",
            name.to_string_lossy(),
            std::process::id()
        ));
        let file = std::fs::File::create(&tmp)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
        Ok(AtomicFile {
            path: path.to_path_buf(),
            tmp,
            w: std::io::BufWriter::new(file),
            committed: false,
        })
    }

    fn writer(&mut self) -> &mut std::io::BufWriter<std::fs::File> {
        &mut self.w
    }

    /// A write error, naming the file.
    fn error(&self, e: std::io::Error) -> anyhow::Error {
        anyhow::anyhow!("cannot write {}: {e}", self.path.display())
    }

    fn commit(mut self) -> anyhow::Result<()> {
        let result = (|| -> std::io::Result<()> {
            self.w.flush()?;
            self.w.get_ref().sync_all()?;
            std::fs::rename(&self.tmp, &self.path)
        })();
        self.committed = result.is_ok();
        result.map_err(|e| self.error(e))
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}
