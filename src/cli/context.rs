//! `gleaner context`: the digest a new session is given at its start (`query::context`), for
//! people: what earlier sessions of a project kept.

use std::io::Write;

use super::{Outcome, EXIT_OK};
use crate::config::Config;
use crate::query::context::{digest, resolve_project, ContextRequest};

/// `gleaner context` arguments.
#[derive(Debug, clap::Args)]
pub struct ContextArgs {
    /// The project: its working directory or its folder under the projects folder (default:
    /// the current directory). A folder name starts with `-` (`-home-u-app`): taken as a
    /// value, not a flag.
    #[arg(long, allow_hyphen_values = true)]
    pub project: Option<String>,
    /// Leave this session out (as the hook leaves out the session it starts): its id or a
    /// prefix of it.
    #[arg(long, value_name = "SESSION")]
    pub exclude: Option<String>,
    /// Longest digest in bytes, 256 to 1,000,000 (default: config `context.max_bytes`).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(256..=1_000_000))]
    pub max_bytes: Option<u32>,
    /// Print `{project, context}` as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Run `gleaner context`.
pub async fn run(cfg: &Config, args: ContextArgs) -> Outcome {
    let project = match crate::query::project(("--project", args.project))? {
        Some(p) => p,
        None => std::env::current_dir()?.display().to_string(),
    };
    let store = super::open_store(cfg).await?;
    // A prefix names a stored session, as everywhere else; a full id not stored yet (the
    // session just started) leaves out nothing, as the hook's does.
    let exclude = match args.exclude {
        None => None,
        Some(p) => match crate::query::resolve_session(&store, "session", &p).await {
            Ok(id) => Some(id),
            Err(crate::query::Error::NoSession { .. }) => Some(p),
            Err(_) => match super::resolve_prefix(&store, &p).await? {
                Ok(id) => Some(id),
                Err(code) => return Ok(code),
            },
        },
    };
    let req = ContextRequest {
        project: resolve_project(&store, &project).await?,
        exclude,
        max_bytes: args.max_bytes.map_or(cfg.context.max_bytes, |n| n as usize),
    };
    let text = digest(&store, &req).await?;
    store.close().await;
    let mut out = std::io::stdout().lock();
    if args.json {
        let v = serde_json::json!({"project": req.project, "context": text});
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
    } else if text.is_empty() {
        eprintln!("nothing kept yet for project {}", req.project);
    } else {
        write!(out, "{text}")?;
    }
    Ok(EXIT_OK)
}
