//! `gleaner export`: what was kept about some sessions, as Markdown, JSON, JSON lines or
//! learnings, to stdout or atomically to a file.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use super::{parse_since, resolve_optional_prefix, Outcome, EXIT_OK};
use crate::config::Config;
use crate::export::{self, ExportFilter, Format};
use crate::store::Store;

/// `--format` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum FormatArg {
    /// Markdown for people: per session its summaries, feedback, episodes and snippets.
    Md,
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
    /// Only this session (a unique prefix of its id is enough).
    #[arg(long, value_name = "PREFIX")]
    pub session: Option<String>,
    /// Only sessions whose project folder or working directory contains this text.
    #[arg(long, value_name = "P", allow_hyphen_values = true)]
    pub project: Option<String>,
    /// Only sessions active at or after T (ISO date/time, or an age such as 7d).
    #[arg(long, value_name = "T")]
    pub since: Option<String>,
    /// Only sessions started before T (ISO date/time, or an age).
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
    let since = args.since.as_deref().map(parse_since).transpose()?;
    let until = match args.until.as_deref() {
        Some(u) => Some(parse_since(u).map_err(|_| {
            anyhow::anyhow!(
                "invalid --until {u:?}: expected a date like 2026-01-31 or an age like 7d"
            )
        })?),
        None => None,
    };
    let store = Store::connect(&cfg.database).await?;
    let session_ids = match resolve_optional_prefix(&store, args.session.as_deref()).await? {
        Ok(ids) => ids,
        Err(code) => return Ok(code),
    };
    let filter = ExportFilter {
        session_ids,
        project: args.project,
        since,
        until,
        limit: None,
    };
    let sessions = export::collect(&store, &filter).await?;
    let format = match args.format {
        FormatArg::Md => Format::Markdown,
        FormatArg::Json => Format::Json,
        FormatArg::Jsonl => Format::Jsonl,
        FormatArg::Learnings => Format::Learnings,
    };
    match &args.output {
        None => {
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            export::render(format, &sessions, &mut out)?;
            out.flush()?;
        }
        Some(path) => write_atomically(path, |w| export::render(format, &sessions, w))?,
    }
    if sessions.is_empty() {
        eprintln!("no session matched");
    }
    Ok(EXIT_OK)
}

/// Write through a temporary file in the same folder, then rename it over `path`: the file is
/// either the old one or the whole new one, never a part.
fn write_atomically(
    path: &Path,
    fill: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> anyhow::Result<()> {
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
    let result = (|| -> std::io::Result<()> {
        let file = std::fs::File::create(&tmp)?;
        let mut w = std::io::BufWriter::new(file);
        fill(&mut w)?;
        let file = w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        anyhow::bail!("cannot write {}: {e}", path.display());
    }
    Ok(())
}
