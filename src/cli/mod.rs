//! Command-line interface: argument parsing and one function per subcommand.
//!
//! Subcommands render results (table or `--json`) and never write SQL themselves; queries live
//! in [`crate::query`]. Errors surface as `anyhow` chains that `main` prints on one line.

mod args;
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
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;

use crate::config::{self, Config, Overrides};
use crate::query::store::Store;

pub use args::Cli;
pub(crate) use args::SnippetKind;
use args::{Command, HookCommand, SnippetCommand};
pub(crate) use open::{open_shared_store, open_store, resolve_optional_prefix, resolve_prefix};

/// Exit code for "ran fine".
pub const EXIT_OK: u8 = 0;
/// Exit code for "nothing matched".
pub const EXIT_NOT_FOUND: u8 = 1;
/// Exit code for errors (bad config, unreachable database, lock held...).
pub const EXIT_ERROR: u8 = 2;

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
