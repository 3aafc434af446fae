//! `gleaner restore`: archived transcripts back on disk (`run::restore` does the work), and
//! `gleaner pack`: the archive packed now (`run::pack`).

use std::path::PathBuf;

use clap::Args;

use super::{resolve_prefix, Outcome, EXIT_ERROR, EXIT_NOT_FOUND, EXIT_OK};
use crate::config::Config;
use crate::query;
use crate::run::restore::{restore, FileReport, Outcome as FileOutcome, RestoreOptions};

/// `gleaner restore` flags.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// The session to restore (a unique prefix of its id is enough).
    #[arg(
        value_name = "SESSION_PREFIX",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    pub session: Option<String>,
    /// Every archived session (narrowed by --project and --since).
    #[arg(long)]
    pub all: bool,
    /// Only sessions whose project folder or working directory contains this text.
    #[arg(long, value_name = "P")]
    pub project: Option<String>,
    /// Only sessions active at or after this time (a date, a date-time, or an age: 12h, 7d).
    #[arg(long, value_name = "T")]
    pub since: Option<String>,
    /// Write below this folder, in Claude Code's layout, instead of where the files were.
    #[arg(long, value_name = "DIR")]
    pub to: Option<PathBuf>,
    /// Where another file is in the way, write the archived copy beside it as
    /// `<name>.restored` (without this it is left alone and reported).
    #[arg(long)]
    pub force_suffix: bool,
    /// Write nothing: read every selected file back from the archive and report the ones
    /// that are damaged or incomplete (exit 2 when any is).
    #[arg(long, conflicts_with_all = ["to", "force_suffix"])]
    pub check: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Run `gleaner restore`.
pub async fn run(cfg: &Config, args: RestoreArgs) -> Outcome {
    let since = query::time_opt("--since", args.since.as_deref())?;
    let store = super::open_store(cfg).await?;
    let session_ids = match &args.session {
        None => None,
        Some(p) => match resolve_prefix(&store, p).await? {
            Ok(id) => Some(vec![id]),
            Err(code) => return Ok(code),
        },
    };
    let opts = RestoreOptions {
        filter: query::store::ArchiveFilter {
            session_ids,
            project: query::project(("--project", args.project.clone()))?,
            since,
        },
        to: args.to.clone(),
        force_suffix: args.force_suffix,
        projects_dir: cfg.projects_dir.clone(),
        machine_id: cfg.machine_id.clone(),
    };
    let json = args.json;
    let say = |r: &FileReport| {
        if json {
            return;
        }
        let what = match r.outcome {
            FileOutcome::Written | FileOutcome::Present => return,
            FileOutcome::WrittenBeside => "written beside",
            FileOutcome::WrittenShort => "written short",
            FileOutcome::Differs => "not restored",
            FileOutcome::Incomplete => "incomplete",
            FileOutcome::Damaged => "damaged",
            FileOutcome::Pruned => "skipped",
        };
        let session = r
            .session_id
            .as_deref()
            .map(|s| format!("session {s}, "))
            .unwrap_or_default();
        eprintln!(
            "{what}: {session}{}{}",
            r.path.display(),
            r.detail
                .as_deref()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        );
    };
    if args.check {
        let report = crate::run::restore::verify(&store, &opts.filter, say).await?;
        store.close().await;
        if json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            println!(
                "checked {} files: {} whole, {} damaged, {} incomplete{}",
                report.present + report.damaged + report.incomplete,
                report.present,
                report.damaged,
                report.incomplete,
                match report.pruned {
                    0 => String::new(),
                    n => format!(", {n} pruned meanwhile"),
                }
            );
        }
        return Ok(if report.damaged + report.incomplete > 0 {
            EXIT_ERROR
        } else {
            EXIT_OK
        });
    }
    let report = restore(&store, &opts, say).await?;
    store.close().await;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        let nothing =
            report.written + report.present + report.differs + report.incomplete + report.damaged
                == 0;
        if nothing {
            println!("nothing archived matches");
        } else {
            println!(
                "restored {} file{} ({:.1} MB){}; {} already there{}{}",
                report.written,
                if report.written == 1 { "" } else { "s" },
                report.bytes_written as f64 / 1e6,
                match report.sidecars_written {
                    0 => String::new(),
                    n => format!(" and {n} sub-agent .meta.json"),
                },
                report.present,
                match report.differs {
                    0 => String::new(),
                    n => format!("; {n} left alone (another file in the way: --force-suffix)"),
                },
                match (report.incomplete, report.damaged) {
                    (0, 0) => String::new(),
                    (n, 0) => format!("; {n} incomplete in the archive"),
                    (0, d) => format!("; {d} damaged in the archive"),
                    (n, d) => format!("; {n} incomplete and {d} damaged in the archive"),
                },
            );
            if report.short > 0 {
                println!(
                    "{} of them short of an unfinished last line that was never archived",
                    report.short
                );
            }
        }
    }
    // Any file not restored whole shows in the exit code, so a script notices: 2 when the
    // archive lacks bytes (a file written short included) or holds them damaged, 1 when
    // another file was in the way and left alone.
    Ok(if report.incomplete + report.damaged + report.short > 0 {
        EXIT_ERROR
    } else if report.differs > 0 {
        EXIT_NOT_FOUND
    } else {
        EXIT_OK
    })
}

/// Run `gleaner pack`.
pub async fn pack(cfg: &Config, json: bool) -> Outcome {
    let store = super::open_store(cfg).await?;
    let cancel = tokio_util::sync::CancellationToken::new();
    let packer = crate::run::pack::Packer {
        machine: &cfg.machine_id,
        level: cfg.archive.pack_level,
    };
    let r =
        crate::run::pack::pack_pending(&store, packer, crate::run::pack::Which::All, None, &cancel)
            .await?;
    store.close().await;
    if json {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(EXIT_OK);
    }
    if r.retired + r.blocks_retired > 0 {
        println!(
            "rewrote {} archive blocks that held pruned bytes",
            r.retired + r.blocks_retired
        );
    }
    if r.blocks == 0 {
        println!("nothing to pack");
    } else {
        println!(
            "packed {} files ({:.1} MB of transcripts) into {} blocks: {:.1} MB -> {:.1} MB",
            r.files,
            r.raw_bytes as f64 / 1e6,
            r.blocks,
            r.bytes_before as f64 / 1e6,
            r.bytes_after as f64 / 1e6,
        );
        if r.archived_bytes > 0 {
            println!(
                "{:.1} MB of them were read again from their transcripts (not archived before)",
                r.archived_bytes as f64 / 1e6
            );
        }
    }
    if r.lost_bytes > 0 {
        println!(
            "{:.1} MB read before were gone from their transcripts (deleted or rewritten) before \
             they could be archived",
            r.lost_bytes as f64 / 1e6
        );
    }
    Ok(EXIT_OK)
}

/// The running daemon re-extracts `ids` (it holds the lock); `locked` is the error to give
/// when no daemon answers on its socket (another `ingest` holds the lock).
async fn by_the_daemon(
    cfg: &Config,
    ids: Vec<String>,
    locked: crate::run::RunError,
) -> anyhow::Result<crate::run::reextract::ReextractReport> {
    use crate::run::socket::{request, socket_path, ClientError, Request, Response};
    let path = socket_path(&cfg.data_dir);
    // A large store takes minutes; the daemon answers when done.
    let wait = std::time::Duration::from_secs(24 * 3600);
    let req = Request::Reextract { session_ids: ids };
    match request(&path, &req, wait).await {
        Ok(Response::Reextracted(r)) => Ok(*r),
        Ok(Response::Error { message }) => anyhow::bail!("the daemon: {message}"),
        Ok(other) => anyhow::bail!("unexpected answer from the daemon: {other:?}"),
        Err(ClientError::NotRunning { .. }) => Err(locked.into()),
        Err(e) => Err(e.into()),
    }
}

/// `gleaner reextract` flags.
#[derive(Debug, Args)]
pub struct ReextractArgs {
    /// The session (a unique prefix of its id is enough).
    #[arg(value_name = "SESSION_PREFIX", conflicts_with = "all")]
    pub session: Option<String>,
    /// Every archived session.
    #[arg(long)]
    pub all: bool,
    /// Only sessions read by rules older than this build's (alone: all of them).
    #[arg(long)]
    pub older_than_rules: bool,
    /// Print what was done as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Run `gleaner reextract`.
pub async fn reextract(cfg: std::sync::Arc<Config>, args: ReextractArgs) -> Outcome {
    if args.session.is_none() && !args.all && !args.older_than_rules {
        anyhow::bail!("name a session, or give --all or --older-than-rules");
    }
    // Opened first: a missing database is an error that leaves nothing behind (the lock would
    // create its folder).
    let store = super::open_store(&cfg).await?;
    let mut ids = Vec::new();
    if let Some(p) = &args.session {
        match resolve_prefix(&store, p).await? {
            Ok(id) => ids.push(id),
            Err(code) => return Ok(code),
        }
    } else {
        let mut after = String::new();
        loop {
            let page = if args.older_than_rules {
                store.sessions_on_older_rules(&after, 500, false).await?
            } else {
                store.archived_sessions(&after, 500).await?
            };
            let Some(last) = page.last() else { break };
            after = last.clone();
            ids.extend(page);
        }
    }
    // As ingest: one writer per machine. With a daemon running, the daemon does it.
    let r = match crate::run::lock::acquire_lock(&cfg.lock_path()) {
        Ok(_lock) => {
            let cancel = tokio_util::sync::CancellationToken::new();
            crate::run::reextract::reextract(
                &cfg,
                &store,
                &ids,
                crate::run::reextract::AT_ONCE,
                None,
                &cancel,
            )
            .await?
        }
        Err(locked @ crate::run::RunError::Locked { .. }) => {
            store.close().await;
            by_the_daemon(&cfg, ids, locked).await?
        }
        Err(e) => return Err(e.into()),
    };
    store.close().await;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        println!(
            "derived {} {} again ({} {}, {:.1} MB, {} {}) in {:.1} s{}",
            r.sessions,
            super::table::noun(r.sessions as i64, "session"),
            r.files,
            super::table::noun(r.files as i64, "file"),
            r.bytes as f64 / 1e6,
            r.messages,
            super::table::noun(r.messages as i64, "message"),
            r.seconds,
            match r.skipped.len() {
                0 => String::new(),
                n => format!("; {n} left as they were (not wholly archived)"),
            }
        );
    }
    Ok(if r.skipped.is_empty() {
        EXIT_OK
    } else {
        EXIT_ERROR
    })
}
