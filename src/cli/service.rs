//! `gleaner service install | uninstall | status`: the systemd user unit (Linux) or the launchd
//! agent (macOS), written from the templates in `systemd/` and `launchd/` with this binary's
//! real path filled in.
//!
//! Why the binary writes its own unit: a copied template needs its `ExecStart` edited by hand,
//! and a wrong path is the first thing a new user gets wrong. Enabling stays the user's step
//! (printed): Gleaner does not start services on its own.

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::{Outcome, EXIT_NOT_FOUND, EXIT_OK};

const SYSTEMD_TEMPLATE: &str = include_str!("../../systemd/gleaner.service");
const LAUNCHD_TEMPLATE: &str = include_str!("../../launchd/dev.gleaner.daemon.plist");
const LAUNCHD_LABEL: &str = "dev.gleaner.daemon";

/// Which service manager a unit is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    /// systemd user unit.
    Systemd,
    /// launchd agent.
    Launchd,
}

impl Target {
    /// This machine's: launchd on macOS, systemd elsewhere.
    pub(super) fn current() -> Target {
        if cfg!(target_os = "macos") {
            Target::Launchd
        } else {
            Target::Systemd
        }
    }
}

/// `gleaner service ...`.
#[derive(Debug, clap::Subcommand)]
pub enum ServiceCommand {
    /// Write the unit (or agent) for this binary and print the command that enables it.
    Install {
        /// Print it instead of writing it.
        #[arg(long)]
        print: bool,
        /// systemd or launchd (default: this machine's).
        #[arg(long, value_enum)]
        target: Option<Target>,
    },
    /// Remove the unit (or agent) and print the command that stops it.
    Uninstall {
        /// systemd or launchd (default: this machine's).
        #[arg(long, value_enum)]
        target: Option<Target>,
    },
    /// Say whether the unit (or agent) is installed, where, and for which binary.
    Status {
        /// systemd or launchd (default: this machine's).
        #[arg(long, value_enum)]
        target: Option<Target>,
    },
}

fn home() -> anyhow::Result<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .context("HOME is not set")
}

/// Where the unit goes: `$XDG_CONFIG_HOME/systemd/user/gleaner.service` or
/// `~/Library/LaunchAgents/dev.gleaner.daemon.plist`.
pub(super) fn unit_path(target: Target) -> anyhow::Result<PathBuf> {
    Ok(match target {
        Target::Systemd => std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .map_or_else(|| home().map(|h| h.join(".config")), Ok)?
            .join("systemd/user/gleaner.service"),
        Target::Launchd => home()?.join(format!("Library/LaunchAgents/{LAUNCHD_LABEL}.plist")),
    })
}

/// The unit text for `bin`.
pub fn render(target: Target, bin: &Path, home: &Path) -> String {
    match target {
        Target::Systemd => SYSTEMD_TEMPLATE.replace("@BIN@", &bin.display().to_string()),
        Target::Launchd => LAUNCHD_TEMPLATE
            .replace("@BIN@", &xml_escape(&bin.display().to_string()))
            .replace(
                "@LOGDIR@",
                &xml_escape(&home.join("Library/Logs/gleaner").display().to_string()),
            ),
    }
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn enable_hint(target: Target, path: &Path) -> String {
    match target {
        Target::Systemd => {
            "systemctl --user daemon-reload && systemctl --user enable --now gleaner".into()
        }
        Target::Launchd => format!("launchctl load -w {}", path.display()),
    }
}

fn disable_hint(target: Target, path: &Path) -> String {
    match target {
        Target::Systemd => "systemctl --user disable --now gleaner".into(),
        Target::Launchd => format!("launchctl unload -w {}", path.display()),
    }
}

/// Run a `service` subcommand; `flags`: the store's global flags were given, which the unit
/// does not take (it runs `gleaner daemon` alone, so it reads the config file's).
pub fn run(cmd: ServiceCommand, flags: bool) -> Outcome {
    if flags {
        eprintln!(
            "note: the service does not take --config, --projects-dir, --database-url or \
             --machine-id; it reads the config file (`gleaner config` shows it)"
        );
    }
    let bin = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .context("cannot find this binary's path")?;
    match cmd {
        ServiceCommand::Install { print, target } => {
            let target = target.unwrap_or_else(Target::current);
            let text = render(target, &bin, &home()?);
            if print {
                print!("{text}");
                return Ok(EXIT_OK);
            }
            let path = unit_path(target)?;
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
            }
            // The folders the service writes: the unit's sandbox makes the home read-only
            // but for the data folder, which must exist before it starts.
            let writes = match target {
                Target::Launchd => home()?.join("Library/Logs/gleaner"),
                Target::Systemd => home()?.join(".local/share/gleaner"),
            };
            std::fs::create_dir_all(&writes)
                .with_context(|| format!("cannot create {}", writes.display()))?;
            let unchanged = std::fs::read_to_string(&path).is_ok_and(|old| old == text);
            if !unchanged {
                std::fs::write(&path, &text)
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
            println!(
                "{} {} (runs {})",
                if unchanged { "unchanged:" } else { "wrote" },
                path.display(),
                bin.display()
            );
            println!("enable it with: {}", enable_hint(target, &path));
            Ok(EXIT_OK)
        }
        ServiceCommand::Uninstall { target } => {
            let target = target.unwrap_or_else(Target::current);
            let path = unit_path(target)?;
            if !path.exists() {
                println!("not installed: {}", path.display());
                return Ok(EXIT_OK);
            }
            println!("stop it first with: {}", disable_hint(target, &path));
            std::fs::remove_file(&path)
                .with_context(|| format!("cannot remove {}", path.display()))?;
            println!("removed {}", path.display());
            Ok(EXIT_OK)
        }
        ServiceCommand::Status { target } => {
            let target = target.unwrap_or_else(Target::current);
            let path = unit_path(target)?;
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    let current = text == render(target, &bin, &home()?);
                    println!(
                        "installed: {}{}",
                        path.display(),
                        if current {
                            ""
                        } else {
                            " (for another binary or version: run `gleaner service install`)"
                        }
                    );
                    Ok(EXIT_OK)
                }
                Err(_) => {
                    println!(
                        "not installed ({}): run `gleaner service install`",
                        path.display()
                    );
                    Ok(EXIT_NOT_FOUND)
                }
            }
        }
    }
}
