//! `gleaner hooks install | uninstall`: add Gleaner's `SessionEnd`, `PreCompact` and
//! `SessionStart` entries to Claude Code's `settings.json`, merged with the hooks already there.
//!
//! Why edit the file for the user: the hook format (event -> groups -> commands) is easy to get
//! subtly wrong by hand, and a wrong command silently does nothing. The edit is idempotent (an
//! entry pointing at this binary, whatever its file is called, is kept; one pointing at an older
//! path is replaced), leaves every other key and hook alone, keeps a backup of the file it
//! changed and writes atomically. The hooks carry the global flags the install was given
//! ([`carried_flags`]): a hook that read another database than the install's would fail open
//! and say nothing.

use std::path::{Path, PathBuf};

use anyhow::Context;
use indexmap::IndexMap;
use serde_json::{json, Value};

use super::{Outcome, EXIT_OK};

/// Claude Code event -> `gleaner hook` subcommand.
pub(super) const EVENTS: [(&str, &str); 3] = [
    ("SessionEnd", "session-end"),
    ("PreCompact", "pre-compact"),
    ("SessionStart", "session-start"),
];

/// `gleaner hooks ...`.
#[derive(Debug, clap::Subcommand)]
pub enum HooksCommand {
    /// Add the SessionEnd, PreCompact and SessionStart hooks to Claude Code's settings.
    Install {
        /// Print the resulting settings instead of writing them.
        #[arg(long)]
        print: bool,
        /// The settings file (default: $CLAUDE_CONFIG_DIR/settings.json or ~/.claude/settings.json).
        #[arg(long, value_name = "PATH")]
        settings: Option<PathBuf>,
    },
    /// Remove Gleaner's hooks from Claude Code's settings.
    Uninstall {
        /// Print the resulting settings instead of writing them.
        #[arg(long)]
        print: bool,
        /// The settings file (default: $CLAUDE_CONFIG_DIR/settings.json or ~/.claude/settings.json).
        #[arg(long, value_name = "PATH")]
        settings: Option<PathBuf>,
    },
}

impl HooksCommand {
    /// Whether it writes hooks (and so the flags they carry).
    pub(super) fn installs(&self) -> bool {
        matches!(self, HooksCommand::Install { .. })
    }
}

/// The settings file Claude Code reads.
pub fn settings_path(arg: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(p) = arg {
        return Ok(p);
    }
    if let Some(dir) = std::env::var_os("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir).join("settings.json"));
    }
    let home = std::env::var_os("HOME").context("HOME is not set")?;
    Ok(PathBuf::from(home).join(".claude/settings.json"))
}

/// A word of a shell command line, quoted when it needs to be.
fn shell_word(w: &str) -> String {
    if !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-:=@%+,".contains(c))
    {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

/// The command line of one of Gleaner's hooks: this binary, the flags it was installed with
/// (`flags`: which database and transcripts the hooks use), `hook <sub>`.
fn command(bin: &Path, flags: &[String], sub: &str) -> String {
    let mut words = vec![shell_word(&bin.display().to_string())];
    words.extend(flags.iter().map(|f| shell_word(f)));
    words.push(format!("hook {sub}"));
    words.join(" ")
}

/// Whether a hook command is Gleaner's `hook <sub>`: one this binary wrote (whatever its file
/// is called), or a `gleaner` from any install path.
pub(super) fn is_ours(cmd: &str, sub: &str) -> bool {
    let this = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map(|p| shell_word(&p.display().to_string()))
        .ok();
    let program = cmd.trim_start();
    let named =
        program.contains("gleaner") || this.is_some_and(|b| program.starts_with(&format!("{b} ")));
    named && cmd.trim_end().ends_with(&format!("hook {sub}"))
}

/// Settings with Gleaner's hooks removed (`bin: None`) or set to this binary with `flags`.
pub fn merged(
    settings: &IndexMap<String, Value>,
    bin: Option<(&Path, &[String])>,
) -> IndexMap<String, Value> {
    let mut out = settings.clone();
    let mut hooks: IndexMap<String, Value> = out
        .get("hooks")
        .and_then(|h| serde_json::from_value(h.clone()).ok())
        .unwrap_or_default();
    for (event, sub) in EVENTS {
        let mut groups: Vec<Value> = hooks
            .get(event)
            .and_then(|g| g.as_array().cloned())
            .unwrap_or_default();
        // Drop our commands (an older path, or all of them when uninstalling), then groups left
        // empty by that.
        for g in &mut groups {
            if let Some(list) = g.get_mut("hooks").and_then(Value::as_array_mut) {
                list.retain(|h| !h["command"].as_str().is_some_and(|c| is_ours(c, sub)));
            }
        }
        groups.retain(|g| !g["hooks"].as_array().is_some_and(|l| l.is_empty()));
        if let Some((bin, flags)) = bin {
            groups.push(json!({
                "hooks": [{"type": "command", "command": command(bin, flags, sub), "timeout": 10}]
            }));
        }
        if groups.is_empty() {
            hooks.shift_remove(event);
        } else {
            hooks.insert(event.to_string(), Value::Array(groups));
        }
    }
    if hooks.is_empty() {
        out.shift_remove("hooks");
    } else {
        out.insert(
            "hooks".into(),
            serde_json::to_value(&hooks).unwrap_or_default(),
        );
    }
    out
}

/// The global flags a `hooks install` was given that the hooks must carry, so that they read
/// the same database and transcripts as the command that installed them: paths made absolute
/// (a hook runs in the session's working directory). A database URL holding a password is
/// refused: it would be written in clear into Claude Code's settings, where `--config`
/// pointing at a file that holds it is not.
pub(super) fn carried_flags(
    config: Option<&Path>,
    projects_dir: Option<&Path>,
    database_url: Option<&str>,
    machine_id: Option<&str>,
) -> anyhow::Result<Vec<String>> {
    let abs = |p: &Path| -> anyhow::Result<String> {
        Ok(std::path::absolute(p)
            .with_context(|| format!("cannot resolve {}", p.display()))?
            .display()
            .to_string())
    };
    let mut out = Vec::new();
    if let Some(p) = config {
        out.extend(["--config".to_string(), abs(p)?]);
    }
    if let Some(p) = projects_dir {
        out.extend(["--projects-dir".to_string(), abs(p)?]);
    }
    if let Some(url) = database_url {
        if crate::query::store::redact_url(url) != url {
            return Err(crate::config::ConfigError::Invalid {
                key: "--database-url".into(),
                message: "holds a password, which the hooks would write in clear into Claude \
                          Code's settings: set `database.url` in a config file and pass \
                          --config instead"
                    .into(),
            }
            .into());
        }
        out.extend(["--database-url".to_string(), absolute_sqlite(url)?]);
    }
    if let Some(m) = machine_id {
        out.extend(["--machine-id".to_string(), m.to_string()]);
    }
    Ok(out)
}

/// A `sqlite://` URL with its file's path made absolute (a relative one would name another
/// file in every session's working directory); other URLs as they are.
fn absolute_sqlite(url: &str) -> anyhow::Result<String> {
    // `sqlite://PATH` and `sqlite:PATH` name the same file, as sqlx reads them.
    let Some(rest) = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
    else {
        return Ok(url.to_string());
    };
    let (path, query) = rest
        .split_once('?')
        .map_or((rest, None), |(p, q)| (p, Some(q)));
    if path.is_empty() || Path::new(path).is_absolute() || path == ":memory:" {
        return Ok(url.to_string());
    }
    // `~/` is the home folder, as the configuration reads it.
    let path = match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(path),
    };
    let abs =
        std::path::absolute(&path).with_context(|| format!("cannot resolve {}", path.display()))?;
    Ok(match query {
        Some(q) => format!("sqlite://{}?{q}", abs.display()),
        None => format!("sqlite://{}", abs.display()),
    })
}

/// Run a `hooks` subcommand; `flags` are the global flags given to it that the hooks must
/// carry (see [`super::Cli`]'s `carried_flags`).
pub fn run(cmd: HooksCommand, flags: &[String]) -> Outcome {
    let (print, settings, install) = match cmd {
        HooksCommand::Install { print, settings } => (print, settings, true),
        HooksCommand::Uninstall { print, settings } => (print, settings, false),
    };
    let path = settings_path(settings)?;
    let bin = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .context("cannot find this binary's path")?;
    let original = match std::fs::read_to_string(&path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let current: IndexMap<String, Value> = match &original {
        Some(t) if !t.trim().is_empty() => serde_json::from_str(t)
            .with_context(|| format!("{} is not a JSON object", path.display()))?,
        _ => IndexMap::new(),
    };
    let next = merged(&current, install.then_some((bin.as_path(), flags)));
    let text = serde_json::to_string_pretty(&next)? + "\n";
    if print {
        print!("{text}");
        return Ok(EXIT_OK);
    }
    if next == current {
        println!("unchanged: {}", path.display());
        return Ok(EXIT_OK);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    // The backup is the file as it was before Gleaner first changed it: kept, never replaced.
    let backup = path.with_extension("json.gleaner-backup");
    if let (Some(old), false) = (&original, backup.exists()) {
        std::fs::write(&backup, old)
            .with_context(|| format!("cannot write the backup {}", backup.display()))?;
        println!("backup: {}", backup.display());
    }
    let tmp = path.with_extension("json.gleaner-tmp");
    std::fs::write(&tmp, &text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("cannot replace {}", path.display()))?;
    println!(
        "{} {} ({})",
        if install {
            "installed hooks in"
        } else {
            "removed hooks from"
        },
        path.display(),
        EVENTS.map(|(e, _)| e).join(", ")
    );
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::{absolute_sqlite, shell_word};
    use std::path::PathBuf;

    #[test]
    fn a_relative_sqlite_path_is_made_absolute() {
        let here = std::env::current_dir().expect("cwd");
        assert_eq!(
            absolute_sqlite("sqlite://data/g.db?mode=rwc").expect("url"),
            format!("sqlite://{}?mode=rwc", here.join("data/g.db").display())
        );
        assert_eq!(
            absolute_sqlite("sqlite:rel.db").expect("url"),
            format!("sqlite://{}", here.join("rel.db").display())
        );
        if let Some(home) = std::env::var_os("HOME") {
            assert_eq!(
                absolute_sqlite("sqlite://~/x.db").expect("url"),
                format!("sqlite://{}", PathBuf::from(home).join("x.db").display())
            );
        }
        for kept in [
            "sqlite:///srv/g.db",
            "postgres://u@h/db?sslmode=require",
            "sqlite://",
        ] {
            assert_eq!(absolute_sqlite(kept).expect("url"), kept);
        }
    }

    #[test]
    fn words_are_quoted_for_the_shell_when_needed() {
        assert_eq!(shell_word("/usr/bin/gleaner"), "/usr/bin/gleaner");
        assert_eq!(shell_word("/a b/it's"), r"'/a b/it'\''s'");
        assert_eq!(
            shell_word("postgres://u@h/db?sslmode=require&x=1"),
            "'postgres://u@h/db?sslmode=require&x=1'"
        );
    }
}
