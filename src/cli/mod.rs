//! Command-line interface: argument parsing and one function per subcommand.
//!
//! Subcommands render results (table or `--json`) and never write SQL themselves; queries live
//! in [`crate::store`]. Errors surface as `anyhow` chains that `main` prints on one line.

mod output;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};

use crate::config::{self, Config, Overrides};
use crate::store::Store;

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
    #[arg(long, global = true, value_name = "PATH")]
    config: Option<PathBuf>,
    /// Transcripts folder (default: ~/.claude/projects).
    #[arg(long, global = true, value_name = "DIR")]
    projects_dir: Option<PathBuf>,
    /// sqlite://PATH or postgres://USER@HOST/DB.
    #[arg(long, global = true, value_name = "URL")]
    database_url: Option<String>,
    /// Machine id written on rows (default: host name).
    #[arg(long, global = true, value_name = "ID")]
    machine_id: Option<String>,
    /// Log level or tracing filter.
    #[arg(long, global = true, value_name = "LEVEL")]
    log_level: Option<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Follow the transcripts folder and ingest new lines as they are written.
    Daemon,
    /// Ingest every file to its end once, then exit.
    Ingest {
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List tracked transcript files with their checkpoints.
    Files {
        /// Print a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// List sessions, most recent first.
    Sessions {
        /// Print a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Show the effective configuration, or the commented default file.
    Config {
        /// Print the built-in default config file.
        #[arg(long)]
        default: bool,
    },
}

/// Outcome of a command, mapped to an exit code by `main`.
pub type Outcome = anyhow::Result<u8>;

impl Cli {
    /// Parse `std::env::args`.
    pub fn parse_args() -> Cli {
        Cli::parse()
    }

    fn overrides(&self) -> Overrides {
        Overrides {
            config_file: self.global.config.clone(),
            projects_dir: self.global.projects_dir.clone(),
            database_url: self.global.database_url.clone(),
            machine_id: self.global.machine_id.clone(),
            log_level: self.global.log_level.clone(),
        }
    }

    /// Run the command. Configuration and logging are set up here, before anything else.
    pub fn run(self) -> Outcome {
        if let Command::Config { default: true } = self.command {
            print!("{}", config::DEFAULT_CONFIG_TOML);
            return Ok(EXIT_OK);
        }
        let cfg = Arc::new(config::load(&self.overrides())?);
        crate::telemetry::init(&cfg.log);
        // Blocking threads only read and parse files, one per pump; capping them also caps
        // the number of malloc arenas (and so retained memory).
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .max_blocking_threads(cfg.daemon.workers + 2)
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        runtime.block_on(self.command.run(cfg))
    }
}

impl Command {
    async fn run(self, cfg: Arc<Config>) -> Outcome {
        match self {
            Command::Config { .. } => {
                output::print_config(&cfg);
                Ok(EXIT_OK)
            }
            Command::Daemon => {
                let store = Store::connect(&cfg.database).await?;
                crate::daemon::run(cfg, store).await?;
                Ok(EXIT_OK)
            }
            Command::Ingest { json } => {
                let store = Store::connect(&cfg.database).await?;
                let bar = (!json && std::io::stderr().is_terminal()).then(progress_bar);
                let cb = bar.clone().map(|bar| {
                    Box::new(move |done: u64, total: u64| {
                        bar.set_length(total.max(done));
                        bar.set_position(done);
                    }) as crate::ingest::Progress
                });
                let summary = crate::ingest::run_once(cfg, store.clone(), cb).await?;
                if let Some(bar) = bar {
                    bar.finish_and_clear();
                }
                store.close().await;
                output::print_ingest(&summary, json)?;
                Ok(if summary.errors > 0 {
                    EXIT_ERROR
                } else {
                    EXIT_OK
                })
            }
            Command::Files { json } => {
                let store = Store::connect(&cfg.database).await?;
                let files = store.list_files(&cfg.machine_id).await?;
                output::print_files(&files, json)?;
                Ok(EXIT_OK)
            }
            Command::Sessions { json } => {
                let store = Store::connect(&cfg.database).await?;
                let sessions = store.list_sessions().await?;
                output::print_sessions(&sessions, json)?;
                Ok(EXIT_OK)
            }
        }
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
