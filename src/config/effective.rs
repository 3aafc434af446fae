//! `gleaner config`: the effective configuration as TOML, every key, each with where its value
//! came from (`default`, `file`, `env`, `flag`), so that a person sees what the daemon will
//! run with and why. Values Gleaner resolves (an empty `projects_dir`, `data_dir`,
//! `machine_id` or `database.url`, a `~`) are shown resolved; a password in the database URL
//! is hidden.

use std::collections::BTreeSet;

use super::load::{key_paths, merged, process_env, Env, Overrides, LOG_ENV};
use super::{Config, ConfigError, ENV_PREFIX};
use crate::store::redact_url;

/// Where a key's value came from.
fn source(
    key: &str,
    flags: &BTreeSet<String>,
    env: &BTreeSet<String>,
    file: &BTreeSet<String>,
) -> &'static str {
    if flags.contains(key) {
        "flag"
    } else if env.contains(key) {
        "env"
    } else if file.contains(key) {
        "file"
    } else {
        "default"
    }
}

/// The effective configuration of `cfg` (loaded with `overrides` from the process
/// environment) as TOML.
pub fn effective_toml(overrides: &Overrides, cfg: &Config) -> Result<String, ConfigError> {
    effective_toml_with_env(overrides, cfg, &process_env())
}

/// [`effective_toml`] with an explicit environment (tests).
pub fn effective_toml_with_env(
    overrides: &Overrides,
    cfg: &Config,
    env: &Env,
) -> Result<String, ConfigError> {
    let (merged, file) = merged(overrides, env)?;
    let mut flags = BTreeSet::new();
    for (key, set) in [
        ("projects_dir", overrides.projects_dir.is_some()),
        ("database.url", overrides.database_url.is_some()),
        ("machine_id", overrides.machine_id.is_some()),
        ("log.level", overrides.log_level.is_some()),
        ("log.format", overrides.log_format.is_some()),
    ] {
        if set {
            flags.insert(key.to_string());
        }
    }
    let mut from_env: BTreeSet<String> = env
        .gleaner_vars()
        .keys()
        .filter_map(|k| k.strip_prefix(&format!("{ENV_PREFIX}_")))
        .map(|k| k.to_lowercase().replace("__", "."))
        .collect();
    if overrides.log_level.is_none() && env.vars.get(LOG_ENV).is_some_and(|v| !v.trim().is_empty())
    {
        from_env.insert("log.level".into());
    }
    let from_file = match &file {
        Some(path) => key_paths(
            &config::Config::builder()
                .add_source(config::File::from(path.as_path()).format(config::FileFormat::Toml))
                .build()
                .map_err(|e| ConfigError::Merge(e.to_string()))?,
        ),
        None => BTreeSet::new(),
    };
    let table: toml::Table = merged
        .try_deserialize()
        .map_err(|e| ConfigError::Merge(e.to_string()))?;
    let resolved = |key: &str| -> Option<toml::Value> {
        Some(toml::Value::String(match key {
            "projects_dir" => cfg.projects_dir.display().to_string(),
            "data_dir" => cfg.data_dir.display().to_string(),
            "machine_id" => cfg.machine_id.clone(),
            "user" => cfg.user.clone(),
            "database.url" => redact_url(&cfg.database.url),
            "log.level" => cfg.log.level.clone(),
            _ => return None,
        }))
    };
    let mut out = String::from(
        "# Gleaner's effective configuration: each value and where it came from (default, file,\n\
         # env: a GLEANER_* variable, flag). `gleaner config --default` prints the defaults.\n",
    );
    out.push_str(&match &file {
        Some(p) => format!("# file: {}\n", p.display()),
        None => "# file: none\n".to_string(),
    });
    let line = |out: &mut String, key: &str, name: &str, v: &toml::Value| {
        let v = resolved(key).unwrap_or_else(|| v.clone());
        out.push_str(&format!(
            "{name} = {v}  # from: {}\n",
            source(key, &flags, &from_env, &from_file)
        ));
    };
    // Plain keys first (TOML puts them before the first table), then each table.
    for (k, v) in table.iter().filter(|(_, v)| !v.is_table()) {
        line(&mut out, k, k, v);
    }
    for (t, v) in table.iter().filter(|(_, v)| v.is_table()) {
        out.push_str(&format!("\n[{t}]\n"));
        let Some(sub) = v.as_table() else { continue };
        for (k, v) in sub {
            let key = format!("{t}.{k}");
            match v.as_table() {
                // A map of names (`[redact.extra]`): one inline table.
                Some(_) => {
                    out.push_str(&format!(
                        "{k} = {v}  # from: {}\n",
                        if from_file.iter().any(|f| f.starts_with(&key)) {
                            "file"
                        } else {
                            "default"
                        }
                    ));
                }
                None => line(&mut out, &key, k, v),
            }
        }
    }
    Ok(out)
}
