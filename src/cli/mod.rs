//! Command-line interface: argument parsing and one function per subcommand.
//!
//! Subcommands render results (table or `--json`) and never write SQL themselves; queries live
//! in [`crate::query`]. Errors surface as `anyhow` chains that `main` prints on one line.

mod context;
mod control;
mod doctor;
mod export;
mod hook;
mod hooks;
mod list;
mod open;
mod output;
mod projects;
mod prune;
mod refine;
mod search;
mod service;
mod snippet_add;
mod snippets;
mod session_table;
mod show;
mod table;
mod restore;
mod text;
mod usage;
mod web;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};

use crate::config::{self, Config, Overrides};
use crate::query::store::Store;

pub(crate) use open::{open_shared_store, open_store, resolve_optional_prefix, resolve_prefix};

/// Exit code for "ran fine".
pub const EXIT_OK: u8 = 0;
/// Exit code for "nothing matched".
pub const EXIT_NOT_FOUND: u8 = 1;
/// Exit code for errors (bad config, unreachable database, lock held...).
pub const EXIT_ERROR: u8 = 2;

/// Keeps what matters from Claude Code sessions.
#[derive(Debug, Parser)]
#[command(name = "gleaner", version, about, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

/// Flags accepted before or after the subcommand.
#[derive(Debug, Args)]
struct GlobalArgs {
    /// Config file (default: $XDG_CONFIG_HOME/gleaner/config.toml if it exists).
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "PATH"
    )]
    config: Option<PathBuf>,
    /// Transcripts folder (default: ~/.claude/projects).
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "DIR"
    )]
    projects_dir: Option<PathBuf>,
    /// sqlite://PATH or postgres://USER@HOST/DB.
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "URL"
    )]
    database_url: Option<String>,
    /// Machine id written on rows (default: host name).
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "ID"
    )]
    machine_id: Option<String>,
    /// Log level or tracing filter (also `GLEANER_LOG`).
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "LEVEL"
    )]
    log_level: Option<String>,
    /// Log format: text or json (one object per line with the tracing fields).
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "FORMAT"
    )]
    log_format: Option<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Follow the transcripts folder and ingest new lines as they are written.
    Daemon,
    /// Print a shell completion script: `gleaner completions bash > ~/.local/share/bash-completion/completions/gleaner`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Ingest every file to its end once, then exit.
    Ingest {
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List this machine's tracked transcript files with their checkpoints, by path.
    Files {
        /// Another machine's files (its machine id) in a shared store.
        #[arg(long, value_name = "ID")]
        machine: Option<String>,
        #[command(flatten)]
        page: list::PageArgs,
        /// Print a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// List sessions, most recent activity first.
    Sessions(list::SessionsArgs),
    /// List projects, most recent activity first: working directory, sessions, first and last
    /// activity, messages, tokens.
    Projects(projects::ProjectsArgs),
    /// List summaries, newest first: `summary` lines, compaction boundaries and compaction
    /// summaries.
    Summaries(list::SummariesArgs),
    /// List user feedback, newest first: messages, tool denials and interruptions.
    Feedback(list::FeedbackArgs),
    /// List episodes (runs of turns about one task), newest first, with their triage label,
    /// confidence, evidence and line range.
    Episodes(list::EpisodesArgs),
    /// Query snippets, newest first.
    Snippets(snippets::SnippetsArgs),
    /// Full-text search over messages, summaries, feedback, snippets and what tools did, best first.
    Search(search::SearchArgs),
    /// Tokens and cost by day, week, month, session, project, model, machine, user or 5-hour
    /// block, newest first, with totals (counted as ccusage counts them; kept after Claude Code
    /// deletes transcripts and after prune).
    Usage(usage::UsageArgs),
    /// Export sessions (summaries, feedback, episodes, snippets) as Markdown, JSON, JSON lines,
    /// or learnings for other memory stores.
    Export(export::ExportArgs),
    /// Run the `[refine]` command over the closed non-routine episodes waiting for it (the
    /// daemon does this in the background when `[refine] command` is set).
    Refine(refine::RefineArgs),
    /// A session's conversation as plain text (user and assistant text, in order).
    Text(text::TextArgs),
    /// Write archived transcripts back to disk, byte for byte (after Claude Code deleted them,
    /// or elsewhere with --to), sub-agents included; an existing file is never overwritten.
    Restore(restore::RestoreArgs),
    /// Pack the archive now: each project's finished transcripts compressed together in blocks
    /// of up to 16 MiB (the daemon does it in the background once a project has settled).
    Pack {
        /// Print what was packed as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Derive sessions' summaries, feedback, episodes, triage and snippets again from the
    /// archive, with this build's rules and the current configuration (hand-made snippets kept).
    Reextract(restore::ReextractArgs),
    /// Remove old sessions on purpose: their archive and message rows (and, without
    /// --keep-knowledge, everything kept about them). Says what it would remove first.
    Prune(prune::PruneArgs),
    /// What earlier sessions of a project kept, as a new session is given it at its start
    /// (corrections, decisions and fixes, recent sessions).
    Context(context::ContextArgs),
    /// What was skipped or went wrong while reading this machine's transcripts (malformed or
    /// over-long lines, ...), newest first.
    Diagnostics(list::DiagnosticsArgs),
    /// One session at a glance: times, place, size, tokens, summaries, feedback, episodes with
    /// their labels and evidence, snippets, sub-agents (`--json`: what MCP `get_session` gives).
    Show(show::ShowArgs),
    /// Serve the Model Context Protocol on stdin/stdout (for coding agents).
    Mcp,
    /// Serve a read-only web view of the database (sessions as timelines, search, snippets).
    Web {
        /// Listen here (default `web.bind`, 127.0.0.1:7270; a non-loopback address requires
        /// the token printed at start).
        #[arg(long, value_name = "ADDR")]
        bind: Option<std::net::SocketAddr>,
        /// Also answer requests naming this host (repeat for several): a name this machine is
        /// reached by. Others get 421, against DNS rebinding.
        #[arg(long = "allow-host", value_name = "NAME")]
        allow_hosts: Vec<String>,
        /// Open the page in the default browser.
        #[arg(long)]
        open: bool,
    },
    /// Manage snippets.
    Snippet {
        #[command(subcommand)]
        command: SnippetCommand,
    },
    /// Ask the running daemon what it is doing.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Make the running daemon read its configuration again (as SIGHUP does).
    Reload,
    /// Add or remove Gleaner's SessionEnd, PreCompact and SessionStart hooks in Claude Code's
    /// settings.
    Hooks {
        #[command(subcommand)]
        cmd: hooks::HooksCommand,
    },
    /// Check the setup: transcripts folder, database, daemon, service, hooks, retention.
    Doctor {
        /// Print the checks as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Install, remove or check the systemd user unit (Linux) or launchd agent (macOS).
    Service {
        #[command(subcommand)]
        cmd: service::ServiceCommand,
    },
    /// Entry points for Claude Code hooks. They never fail or block Claude Code: exit 0, fast.
    Hook {
        #[command(subcommand)]
        hook: HookCommand,
    },
    /// Bring the database's schema up to this version (the daemon and `ingest` do it too;
    /// commands that only read never do).
    Migrate,
    /// Show the effective configuration, or the commented default file.
    Config {
        /// Print the built-in default config file.
        #[arg(long)]
        default: bool,
    },
}

/// Claude Code hook entry points.
#[derive(Debug, Subcommand)]
enum HookCommand {
    /// SessionEnd hook: reads Claude Code's hook JSON on stdin, has the session ingested and
    /// marked finished (by the daemon, or by itself when no daemon runs).
    SessionEnd,
    /// PreCompact hook: asks the daemon to ingest the transcript now, before Claude Code
    /// compacts the conversation; returns at once.
    PreCompact,
    /// SessionStart hook: prints what earlier sessions of the project kept (as `gleaner
    /// context`) for Claude Code to give the new session; prints nothing on any problem.
    SessionStart,
}

/// `gleaner snippet` subcommands.
#[derive(Debug, Subcommand)]
enum SnippetCommand {
    /// Store a snippet written by hand or cut from a transcript.
    Add(snippets::AddArgs),
    /// Print one snippet whole, with its metadata (`gleaner snippets` lists their ids).
    Show {
        /// The snippet's id.
        id: i64,
        /// Print it as JSON (the fields of `gleaner snippets --json`).
        #[arg(long)]
        json: bool,
    },
}

/// `--type` values of snippets.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub(crate) enum SnippetKind {
    #[value(alias = "error-reasoning")]
    ErrorReasoning,
    #[value(alias = "decision-rationale")]
    DecisionRationale,
    #[value(alias = "learning-pattern")]
    LearningPattern,
}

impl From<SnippetKind> for crate::snippet::SnippetType {
    fn from(k: SnippetKind) -> Self {
        match k {
            SnippetKind::ErrorReasoning => crate::snippet::SnippetType::ErrorReasoning,
            SnippetKind::DecisionRationale => crate::snippet::SnippetType::DecisionRationale,
            SnippetKind::LearningPattern => crate::snippet::SnippetType::LearningPattern,
        }
    }
}

/// The first paragraph of a clap error as one line, without its `error: ` label ("the
/// following required arguments were not provided: <QUERY>").
fn first_paragraph(rendered: &str) -> String {
    let words: Vec<&str> = rendered
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty())
        .flat_map(str::split_whitespace)
        .collect();
    let line = words.join(" ");
    line.strip_prefix("error: ").unwrap_or(&line).to_string()
}

/// Outcome of a command, mapped to an exit code by `main`.
pub type Outcome = anyhow::Result<u8>;

impl Cli {
    /// Parse `std::env::args`. A bad flag or value is one line naming it and exit code 2, as
    /// every bad input is (clap's own message adds a usage block and a tip); `--help` and
    /// `--version` print as clap prints them.
    pub fn parse_args() -> Cli {
        use clap::error::ErrorKind;
        match Cli::try_parse() {
            Ok(cli) => cli,
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::DisplayHelp
                        | ErrorKind::DisplayVersion
                        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
                ) =>
            {
                e.exit()
            }
            Err(e) => {
                eprintln!(
                    "gleaner: {} (see --help)",
                    first_paragraph(&e.render().to_string())
                );
                std::process::exit(i32::from(EXIT_ERROR));
            }
        }
    }

    fn overrides(&self) -> Overrides {
        Overrides {
            config_file: self.global.config.clone(),
            projects_dir: self.global.projects_dir.clone(),
            database_url: self.global.database_url.clone(),
            machine_id: self.global.machine_id.clone(),
            log_level: self.global.log_level.clone(),
            log_format: self.global.log_format.clone(),
            ignore_file: false,
        }
    }

    /// The global flags `hooks install` writes into the hooks (see [`hooks::carried_flags`]);
    /// none for an uninstall, which writes none (so any URL is fine there).
    fn carried_flags(&self) -> anyhow::Result<Vec<String>> {
        if !matches!(&self.command, Command::Hooks { cmd } if cmd.installs()) {
            return Ok(Vec::new());
        }
        let g = &self.global;
        hooks::carried_flags(
            g.config.as_deref(),
            g.projects_dir.as_deref(),
            g.database_url.as_deref(),
            g.machine_id.as_deref(),
        )
    }

    /// Run the command. Configuration and logging are set up here, before anything else.
    pub fn run(self) -> Outcome {
        if let Command::Config { default: true } = self.command {
            print!("{}", config::DEFAULT_CONFIG_TOML);
            return Ok(EXIT_OK);
        }
        if let Command::Completions { shell } = self.command {
            use clap::CommandFactory;
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "gleaner",
                &mut std::io::stdout(),
            );
            return Ok(EXIT_OK);
        }
        if let Command::Service { cmd } = self.command {
            let g = &self.global;
            let flags = g.config.is_some()
                || g.projects_dir.is_some()
                || g.database_url.is_some()
                || g.machine_id.is_some();
            return service::run(cmd, flags);
        }
        if matches!(self.command, Command::Hooks { .. }) {
            let flags = self.carried_flags()?;
            if let Command::Hooks { cmd } = self.command {
                return hooks::run(cmd, &flags);
            }
        }
        if let Command::Hook { hook } = &self.command {
            // Never fail Claude Code: whatever happens, exit 0.
            if let Err(e) = hook::run(hook_kind(hook), &self.overrides()) {
                eprintln!("gleaner hook: {e:#}");
            }
            return Ok(EXIT_OK);
        }
        let overrides = self.overrides();
        let (cfg, config_problem) = match config::load(&overrides) {
            Ok(cfg) => (cfg, None),
            // `doctor` reports a broken configuration as one of its checks and goes on with
            // the defaults and the flags; `status` only needs the daemon's socket (the daemon
            // runs on the configuration it read when it was valid), found the same way.
            Err(e)
                if matches!(
                    self.command,
                    Command::Doctor { .. } | Command::Status { .. }
                ) =>
            {
                let mut why = e.to_string();
                if let Some(file) = config::config_file(&overrides) {
                    let shown = file.display().to_string();
                    if !why.contains(&shown) {
                        why = format!("config file {shown}: {why}");
                    }
                }
                let fallback = Overrides {
                    ignore_file: true,
                    ..overrides.clone()
                };
                let cfg = config::load(&fallback).or_else(|_| {
                    config::load(&Overrides {
                        ignore_file: true,
                        ..Overrides::default()
                    })
                })?;
                if matches!(self.command, Command::Status { .. }) {
                    eprintln!(
                        "gleaner: warning: {why}; looking for the daemon with the defaults and \
                         flags"
                    );
                }
                (cfg, Some(why))
            }
            Err(e) => return Err(e.into()),
        };
        let cfg = Arc::new(cfg);
        crate::telemetry::init(&cfg.log);
        // Blocking threads only read and parse files, one per pump; capping them also caps
        // the number of malloc arenas (and so retained memory), which are capped first.
        crate::run::memory::limit_arenas(MALLOC_ARENAS);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .max_blocking_threads(cfg.daemon.workers + 2)
            .on_thread_park(crate::run::memory::on_park)
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        runtime.block_on(self.command.run(cfg, overrides, config_problem))
    }
}

/// glibc malloc arenas (`run::memory::limit_arenas`): 2 measured the lowest peak RSS, 4 a
/// third of the way back up for a smaller throughput cost (docs/benchmarks.md).
const MALLOC_ARENAS: usize = 2;

impl Command {
    async fn run(
        self,
        cfg: Arc<Config>,
        self_overrides: Overrides,
        config_problem: Option<String>,
    ) -> Outcome {
        match self {
            Command::Completions { .. } | Command::Service { .. } | Command::Hooks { .. } => {
                Ok(EXIT_OK)
            }
            Command::Config { .. } => {
                print!("{}", config::effective_toml(&self_overrides, &cfg)?);
                Ok(EXIT_OK)
            }
            Command::Daemon => {
                let signals = crate::run::daemon::install_signals()
                    .context("cannot install signal handlers")?;
                let store = Store::connect(&cfg.database).await?;
                // A reload reads the same sources again: file, environment and these flags.
                let overrides = self_overrides;
                let load: crate::run::daemon::LoadConfig =
                    Box::new(move || config::load(&overrides));
                crate::run::daemon::run(cfg, store, signals, load).await?;
                Ok(EXIT_OK)
            }
            Command::Ingest { json } => {
                // A mistyped folder would otherwise "ingest 0 files" and succeed.
                if !cfg.projects_dir.is_dir() {
                    eprintln!(
                        "gleaner: projects folder {} does not exist (set --projects-dir or \
                         `projects_dir` in the config)",
                        cfg.projects_dir.display()
                    );
                    return Ok(EXIT_ERROR);
                }
                // The lock first: refused for a running daemon, it leaves no new database.
                let lock = crate::run::lock::acquire_lock(&cfg.lock_path())?;
                let store = Store::connect(&cfg.database).await?;
                tracing::debug!("store connected");
                let bar = (!json && std::io::stderr().is_terminal()).then(progress_bar);
                let cb = bar.clone().map(|bar| {
                    Box::new(move |done: u64, total: u64| {
                        bar.set_length(total.max(done));
                        bar.set_position(done);
                    }) as crate::run::once::Progress
                });
                let summary = crate::run::once::run_once(cfg, store.clone(), cb, lock).await?;
                if let Some(bar) = bar {
                    bar.finish_and_clear();
                }
                store.close().await;
                tracing::debug!("store closed");
                output::print_ingest(&summary, json)?;
                Ok(if summary.errors > 0 {
                    EXIT_ERROR
                } else {
                    EXIT_OK
                })
            }
            Command::Files {
                machine,
                page,
                json,
            } => list::files(&cfg, machine, &page, json).await,
            Command::Sessions(args) => list::sessions(&cfg, args).await,
            Command::Projects(args) => projects::run(&cfg, args).await,
            Command::Summaries(args) => list::summaries(&cfg, args).await,
            Command::Feedback(args) => list::feedback(&cfg, args).await,
            Command::Episodes(args) => list::episodes(&cfg, args).await,
            Command::Migrate => {
                let store = Store::connect(&cfg.database).await?;
                let v = store.applied_schema().await?.unwrap_or(0);
                store.close().await;
                println!("database schema at version {v}");
                Ok(EXIT_OK)
            }
            Command::Status { json } => control::status(&cfg, json).await,
            Command::Reload => control::reload(&cfg).await,
            Command::Snippets(args) => snippets::snippets(&cfg, args).await,
            Command::Search(args) => search::run(&cfg, args).await,
            Command::Usage(args) => usage::run(&cfg, args).await,
            Command::Text(args) => text::run(&cfg, args).await,
            Command::Restore(args) => restore::run(&cfg, args).await,
            Command::Pack { json } => restore::pack(&cfg, json).await,
            Command::Prune(args) => prune::run(&cfg, args).await,
            Command::Reextract(args) => restore::reextract(cfg.clone(), args).await,
            Command::Context(args) => context::run(&cfg, args).await,
            Command::Show(args) => show::run(&cfg, args).await,
            Command::Diagnostics(args) => list::diagnostics(&cfg, args).await,
            Command::Export(args) => export::run(&cfg, args).await,
            Command::Refine(args) => refine::run(&cfg, args).await,
            Command::Doctor { json } => doctor::run(&cfg, config_problem, json).await,
            Command::Mcp => {
                let store = open_shared_store(&cfg).await?;
                crate::mcp::serve(cfg, store.clone()).await?;
                store.close().await;
                Ok(EXIT_OK)
            }
            Command::Web {
                bind,
                allow_hosts,
                open,
            } => web::run(cfg, bind, allow_hosts, open).await,
            Command::Snippet {
                command: SnippetCommand::Add(args),
            } => snippet_add::run(&cfg, args).await,
            Command::Snippet {
                command: SnippetCommand::Show { id, json },
            } => snippets::show(&cfg, id, json).await,
            Command::Hook { .. } => Ok(EXIT_OK),
        }
    }
}

fn hook_kind(h: &HookCommand) -> hook::Kind {
    match h {
        HookCommand::SessionEnd => hook::Kind::SessionEnd,
        HookCommand::PreCompact => hook::Kind::PreCompact,
        HookCommand::SessionStart => hook::Kind::SessionStart,
    }
}

fn progress_bar() -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}
