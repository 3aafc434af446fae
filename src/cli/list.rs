//! The listings: `gleaner files`, `sessions`, `summaries`, `feedback` and `episodes`. Each parses its
//! flags through the query layer (times, kinds, pages), asks the store for one page, prints it
//! and, when more rows follow, says on stderr how to get them.

use clap::Args;

use super::output::{
    print_diagnostics, print_episodes, print_feedback, print_files, print_summaries,
};
use super::session_table::print_sessions;
use super::{open_store, resolve_optional_prefix, Outcome, EXIT_OK};
use crate::config::Config;
use crate::episode::Label;
use crate::query::store::{
    EpisodeFilter, FeedbackFilter, FeedbackType, Origin, SessionFilter, SessionSort, SessionStatus,
    Store, SummaryFilter, SummaryKind,
};
use crate::query::{self, Page, Paged};

/// Rows a listing prints unless `--limit` says otherwise.
pub const DEFAULT_LIMIT: u32 = 50;
/// The most rows one listing prints: every door's ([`query::MAX_LISTING`]).
pub const MAX_LIMIT: u32 = query::MAX_LISTING;

/// `--limit`/`--offset`, shared by every listing.
#[derive(Debug, Clone, Args)]
pub struct PageArgs {
    /// Most rows to print (1 to 500; default 50).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub limit: Option<u64>,
    /// Skip this many rows first (to page on: the last line says the next offset).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub offset: Option<u64>,
}

impl PageArgs {
    /// The page, or an error naming the flag.
    pub fn page(&self) -> Result<Page, query::Error> {
        Page::parse(
            ("--limit", self.limit),
            ("--offset", self.offset),
            DEFAULT_LIMIT,
            MAX_LIMIT,
        )
    }
}

/// `--machine`/`--user`, shared by every listing, search and export: who and where.
#[derive(Debug, Clone, Default, Args)]
pub struct OriginArgs {
    /// Only sessions with a transcript on this machine (its machine id, as `gleaner sessions`
    /// shows it).
    #[arg(long, value_name = "ID")]
    pub machine: Option<String>,
    /// Only sessions of this user (the `user` of the machine that holds them).
    #[arg(long, value_name = "NAME")]
    pub user: Option<String>,
}

impl OriginArgs {
    /// The filter, or an error naming the flag.
    pub fn origin(&self) -> Result<Origin, query::Error> {
        query::origin(
            ("--machine", self.machine.clone()),
            ("--user", self.user.clone()),
        )
    }
}

/// Tell a person at the end of a page where the next one starts, or that there is nothing
/// (stderr: stdout stays the data, for scripts). An empty listing is not an error: exit 0
/// (README, "Exit codes").
pub(super) fn say_more<T>(p: &Paged<T>, json: bool, page: Page, what: &str) {
    if json {
        return;
    }
    if let Some(next) = p.next_offset {
        eprintln!("{} shown; more with --offset {next}", p.items.len());
    } else if p.items.is_empty() {
        if page.offset > 0 {
            eprintln!("no {what} at offset {}", page.offset);
        } else {
            eprintln!("no {what}");
        }
    }
}

/// Run `gleaner files`: this machine's tracked files (or `machine`'s), a page of them. A
/// shared store holds every machine's: the first line on stderr says whose these are.
pub async fn files(cfg: &Config, machine: Option<String>, page: &PageArgs, json: bool) -> Outcome {
    let origin = query::origin(("--machine", machine), ("--user", None))?;
    let page = page.page()?;
    let store = open_store(cfg).await?;
    let local = origin.machine.is_none();
    let machine = origin.machine.unwrap_or_else(|| cfg.machine_id.clone());
    let mut p = store.files(&machine, page).await?;
    if local {
        for f in p.items.iter_mut().filter(|f| f.state == "active") {
            see_unreadable(f);
        }
    }
    if !json {
        let whose = if local { " (this machine)" } else { "" };
        eprintln!("files of machine {machine}{whose}");
    }
    print_files(&p.items, json)?;
    say_more(&p, json, page, "files");
    Ok(EXIT_OK)
}

/// A tracked file this machine cannot open is shown as it is: state `unreadable` (the reason
/// on stderr) and its size on disk; the stored size is what was last read, 0 for a file never
/// read. (`files` lists this machine's files only, so the paths are local.)
fn see_unreadable(f: &mut crate::query::store::FileListing) {
    let path = std::path::Path::new(&f.path);
    if let Err(e) = std::fs::File::open(path) {
        if e.kind() != std::io::ErrorKind::NotFound {
            eprintln!("cannot read {}: {e}", f.path);
            f.state = "unreadable".into();
            if let Ok(m) = std::fs::metadata(path) {
                f.size = i64::try_from(m.len()).unwrap_or(i64::MAX);
            }
        }
    }
}

/// `gleaner diagnostics` flags.
#[derive(Debug, Args)]
pub struct DiagnosticsArgs {
    /// Only this transcript (its path as `gleaner files` prints it).
    #[arg(long, value_name = "PATH")]
    pub file: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub page: PageArgs,
    /// Print a JSON array.
    #[arg(long)]
    pub json: bool,
}

/// Run `gleaner diagnostics`: what was skipped or went wrong while reading this machine's
/// transcripts, newest first.
pub async fn diagnostics(cfg: &Config, a: DiagnosticsArgs) -> Outcome {
    let page = a.page.page()?;
    // A relative path names the file it would name from here.
    let file = a.file.map(|f| std::path::absolute(&f).unwrap_or(f));
    let file = file.as_deref().map(|f| f.to_string_lossy().into_owned());
    let store = open_store(cfg).await?;
    // A file Gleaner does not track has no diagnostics to list: said, not an empty answer.
    if let Some(f) = file.as_deref() {
        if !store.is_tracked(&cfg.machine_id, f).await? {
            store.close().await;
            eprintln!("gleaner: no tracked file at {f} (`gleaner files` lists them)");
            return Ok(super::EXIT_NOT_FOUND);
        }
    }
    let p = store
        .diagnostics(&cfg.machine_id, file.as_deref(), page)
        .await?;
    print_diagnostics(&p.items, a.json)?;
    say_more(&p, a.json, page, "diagnostics");
    Ok(EXIT_OK)
}

/// `gleaner sessions` flags.
#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// Only sessions whose project folder or working directory contains this text.
    #[arg(long, value_name = "P", allow_hyphen_values = true)]
    pub project: Option<String>,
    /// Only sessions active at or after T (ISO date/time, or an age such as 7d, 12h, 30m).
    #[arg(long, value_name = "T")]
    pub since: Option<String>,
    /// Only sessions started before T (a date alone includes its day).
    #[arg(long, value_name = "T")]
    pub until: Option<String>,
    /// Only sessions with this status: active or finished.
    #[arg(long, value_name = "S")]
    pub status: Option<String>,
    /// Only sessions whose tools read, edited or wrote this file (a path, or its tail such
    /// as src/auth.rs).
    #[arg(long, value_name = "PATH")]
    pub file: Option<String>,
    /// Only sessions on this git branch.
    #[arg(long, value_name = "B")]
    pub branch: Option<String>,
    /// Only sessions with replies from a model whose name contains this text (opus, sonnet-4-5).
    #[arg(long, value_name = "M")]
    pub model: Option<String>,
    /// Also sessions with no typed prompt (warm-ups, empty ones), hidden by default.
    #[arg(long)]
    pub all: bool,
    /// Least recent activity first (default: most recent first).
    #[arg(long)]
    pub reverse: bool,
    #[command(flatten)]
    pub origin: OriginArgs,
    #[command(flatten)]
    pub page: PageArgs,
    /// Print a JSON array.
    #[arg(long)]
    pub json: bool,
}

/// Run `gleaner sessions`.
pub async fn sessions(cfg: &Config, a: SessionsArgs) -> Outcome {
    let (since, until) = query::time_range_stored(
        ("--since", a.since.as_deref()),
        ("--until", a.until.as_deref()),
    )?;
    let filter = SessionFilter {
        project: query::project(("--project", a.project))?,
        since,
        until,
        status: a
            .status
            .as_deref()
            .map(|s| query::choice::<SessionStatus>("--status", s))
            .transpose()?,
        origin: a.origin.origin()?,
        file: query::file_path(("--file", a.file))?,
        branch: query::nonblank(("--branch", a.branch), "a git branch name")?,
        model: query::nonblank(("--model", a.model), "a part of a model name, such as opus")?,
        hide_unprompted: !a.all,
        sort: if a.reverse {
            SessionSort::Oldest
        } else {
            SessionSort::Recent
        },
        ..SessionFilter::default()
    };
    let page = a.page.page()?;
    let store = open_store(cfg).await?;
    let p = store.sessions(&filter, page).await?;
    print_sessions(&p.items, a.json)?;
    say_more(&p, a.json, page, "sessions");
    Ok(EXIT_OK)
}

/// What a listing of things said or written in sessions (summaries, feedback) is narrowed to.
#[derive(Debug, Clone, Args)]
pub struct ScopeArgs {
    /// Only sessions whose project folder or working directory contains this text.
    #[arg(long, value_name = "P", allow_hyphen_values = true)]
    pub project: Option<String>,
    /// Only items at or after T (ISO date/time, or an age such as 7d, 12h, 30m).
    #[arg(long, value_name = "T")]
    pub since: Option<String>,
    /// Only items before T (a date alone includes its day).
    #[arg(long, value_name = "T")]
    pub until: Option<String>,
    /// Oldest first (default: newest first).
    #[arg(long)]
    pub reverse: bool,
    #[command(flatten)]
    pub origin: OriginArgs,
    #[command(flatten)]
    pub page: PageArgs,
    /// Print a JSON array.
    #[arg(long)]
    pub json: bool,
}

/// A scope parsed, its store opened and its session resolved.
struct Scope {
    since: Option<String>,
    until: Option<String>,
    origin: Origin,
    page: Page,
    store: Store,
    session_ids: Option<Vec<String>>,
}

impl ScopeArgs {
    /// Parse the flags (before the database is touched: a typo is an error either way), open
    /// the store and resolve `prefix`; `Err(code)` when the prefix matched no single session
    /// (already said on stderr).
    async fn open(&self, cfg: &Config, prefix: Option<&str>) -> anyhow::Result<Result<Scope, u8>> {
        let (since, until) = query::time_range_stored(
            ("--since", self.since.as_deref()),
            ("--until", self.until.as_deref()),
        )?;
        let origin = self.origin.origin()?;
        let page = self.page.page()?;
        let store = open_store(cfg).await?;
        Ok(match resolve_optional_prefix(&store, prefix).await? {
            Ok(session_ids) => Ok(Scope {
                since,
                until,
                origin,
                page,
                store,
                session_ids,
            }),
            Err(code) => Err(code),
        })
    }
}

/// `gleaner summaries` flags.
#[derive(Debug, Args)]
pub struct SummariesArgs {
    /// Only this session (a unique prefix of its id is enough).
    pub session_prefix: Option<String>,
    /// Only this kind: summary, compact_boundary or compact_summary.
    #[arg(long, value_name = "K")]
    pub kind: Option<String>,
    #[command(flatten)]
    pub scope: ScopeArgs,
}

/// Run `gleaner summaries`.
pub async fn summaries(cfg: &Config, a: SummariesArgs) -> Outcome {
    let kind = a
        .kind
        .as_deref()
        .map(|k| query::choice::<SummaryKind>("--kind", k))
        .transpose()?;
    let s = match a.scope.open(cfg, a.session_prefix.as_deref()).await? {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let filter = SummaryFilter {
        session_ids: s.session_ids,
        kind,
        project: query::project(("--project", a.scope.project))?,
        origin: s.origin,
        since: s.since,
        until: s.until,
        oldest_first: a.scope.reverse,
    };
    let p = s.store.summaries(&filter, s.page).await?;
    print_summaries(&p.items, a.scope.json)?;
    say_more(&p, a.scope.json, s.page, "summaries");
    Ok(EXIT_OK)
}

/// `gleaner feedback` flags.
#[derive(Debug, Args)]
pub struct FeedbackArgs {
    /// Only this session and its sub-agents (a unique prefix of its id is enough).
    pub session_prefix: Option<String>,
    /// Only this type: message, tool_denial or interruption.
    #[arg(long = "type", value_name = "T")]
    pub feedback_type: Option<String>,
    #[command(flatten)]
    pub scope: ScopeArgs,
}

/// Run `gleaner feedback`.
pub async fn feedback(cfg: &Config, a: FeedbackArgs) -> Outcome {
    let feedback_type = a
        .feedback_type
        .as_deref()
        .map(|t| query::choice::<FeedbackType>("--type", t))
        .transpose()?;
    let s = match a.scope.open(cfg, a.session_prefix.as_deref()).await? {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let filter = FeedbackFilter {
        session_ids: s.session_ids,
        feedback_type,
        project: query::project(("--project", a.scope.project))?,
        origin: s.origin,
        since: s.since,
        until: s.until,
        oldest_first: a.scope.reverse,
    };
    let p = s.store.feedback(&filter, s.page).await?;
    print_feedback(&p.items, a.scope.json)?;
    say_more(&p, a.scope.json, s.page, "feedback");
    Ok(EXIT_OK)
}

/// `gleaner episodes` flags.
#[derive(Debug, Args)]
pub struct EpisodesArgs {
    /// Only this session (a unique prefix of its id is enough).
    pub session_prefix: Option<String>,
    /// Only episodes holding a turn with this label (routine, error_recovery,
    /// user_correction, pivot, design_decision; the episode's own label is its strongest
    /// turn's, `--json` lists every turn's under `turn_labels`).
    #[arg(long, value_name = "L")]
    pub triage: Option<String>,
    /// Oldest first (default: newest first).
    #[arg(long)]
    pub reverse: bool,
    #[command(flatten)]
    pub origin: OriginArgs,
    #[command(flatten)]
    pub page: PageArgs,
    /// Print a JSON array.
    #[arg(long)]
    pub json: bool,
}

/// Run `gleaner episodes`.
pub async fn episodes(cfg: &Config, a: EpisodesArgs) -> Outcome {
    let triage = a
        .triage
        .as_deref()
        .map(|t| query::choice::<Label>("--triage", t))
        .transpose()?;
    let origin = a.origin.origin()?;
    let page = a.page.page()?;
    let store = open_store(cfg).await?;
    let session_ids = match resolve_optional_prefix(&store, a.session_prefix.as_deref()).await? {
        Ok(ids) => ids,
        Err(code) => return Ok(code),
    };
    let p = store
        .episodes(
            &EpisodeFilter {
                session_ids,
                triage: triage.map(Label::as_str),
                origin,
                oldest_first: a.reverse,
            },
            page,
        )
        .await?;
    print_episodes(&p.items, a.json)?;
    say_more(&p, a.json, page, "episodes");
    Ok(EXIT_OK)
}
