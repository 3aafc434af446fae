//! The command line's grammar: the global flags, the subcommands and their flags (clap's
//! derive). What each subcommand does is in `super` (dispatch) and the modules it names.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use super::{
    context, export, hooks, list, projects, prune, refine, restore, search, service, show,
    snippets, text, usage,
};

/// Keeps what matters from Claude Code sessions.
#[derive(Debug, Parser)]
#[command(name = "gleaner", version, about, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub(super) global: GlobalArgs,
    #[command(subcommand)]
    pub(super) command: Command,
}

/// Flags accepted before or after the subcommand.
#[derive(Debug, Args)]
pub(super) struct GlobalArgs {
    /// Config file (default: $XDG_CONFIG_HOME/gleaner/config.toml if it exists).
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "PATH"
    )]
    pub(super) config: Option<PathBuf>,
    /// Transcripts folder (default: ~/.claude/projects).
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "DIR"
    )]
    pub(super) projects_dir: Option<PathBuf>,
    /// sqlite://PATH or postgres://USER@HOST/DB.
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "URL"
    )]
    pub(super) database_url: Option<String>,
    /// Machine id written on rows (default: host name).
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "ID"
    )]
    pub(super) machine_id: Option<String>,
    /// Log level or tracing filter (also `GLEANER_LOG`).
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "LEVEL"
    )]
    pub(super) log_level: Option<String>,
    /// Log format: text or json (one object per line with the tracing fields).
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "FORMAT"
    )]
    pub(super) log_format: Option<String>,
}

#[derive(Debug, Subcommand)]
pub(super) enum Command {
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
pub(super) enum HookCommand {
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
pub(super) enum SnippetCommand {
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
