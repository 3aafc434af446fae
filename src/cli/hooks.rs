//! `gleaner hooks install | uninstall`: add Gleaner's `SessionEnd`, `PreCompact` and
//! `SessionStart` entries to Claude Code's `settings.json`, merged with the hooks already there.
//!
//! Why edit the file for the user: the hook format (event -> groups -> commands) is easy to get
//! subtly wrong by hand, and a wrong command silently does nothing. The edit is idempotent (an
//! entry pointing at this binary is kept, one pointing at an older path is replaced), leaves
//! every other key and hook alone, keeps a backup of the file it changed and writes atomically.

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

/// The command line of one of Gleaner's hooks.
fn command(bin: &Path, sub: &str) -> String {
    let b = bin.display().to_string();
    let quoted = if b.contains([' ', '\'', '"']) {
        format!("'{}'", b.replace('\'', r"'\''"))
    } else {
        b
    };
    format!("{quoted} hook {sub}")
}

/// Whether a hook command is Gleaner's `hook <sub>` (from any install path).
pub(super) fn is_ours(cmd: &str, sub: &str) -> bool {
    cmd.contains("gleaner") && cmd.trim_end().ends_with(&format!("hook {sub}"))
}

/// Settings with Gleaner's hooks removed (`bin: None`) or set to this binary.
pub fn merged(settings: &IndexMap<String, Value>, bin: Option<&Path>) -> IndexMap<String, Value> {
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
        if let Some(bin) = bin {
            groups.push(json!({
                "hooks": [{"type": "command", "command": command(bin, sub), "timeout": 10}]
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

/// Run a `hooks` subcommand.
pub fn run(cmd: HooksCommand) -> Outcome {
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
    let next = merged(&current, install.then_some(bin.as_path()));
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
