//! Loading: the sources merged into a [`RawConfig`], then validated into a [`Config`] with
//! everything built from the settings (the redactor, the episode rules) built here, once.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::raw::RawConfig;
use super::{
    ArchiveConfig, BatchConfig, Config, ConfigError, ContextConfig, DaemonConfig, LogConfig,
    LogFormat, McpConfig, RefineConfig, SessionsConfig, TailSettings, WebConfig,
    DEFAULT_CONFIG_TOML, ENV_PREFIX,
};
use crate::episode::{Rules, Settings};
use crate::extract::redact::Redactor;
use crate::store::{collapse_whitespace, redact_url, Backend, Options};

/// Command-line values that override every other source.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--config PATH`: a config file that must exist.
    pub config_file: Option<PathBuf>,
    /// `--projects-dir DIR`.
    pub projects_dir: Option<PathBuf>,
    /// `--database-url URL`.
    pub database_url: Option<String>,
    /// `--machine-id ID`.
    pub machine_id: Option<String>,
    /// `--log-level LEVEL` (or `GLEANER_LOG`, a tracing filter).
    pub log_level: Option<String>,
    /// `--log-format text|json`.
    pub log_format: Option<String>,
    /// Leave the config file out (defaults, environment and flags only): how `doctor` goes on
    /// checking when the file does not load.
    pub ignore_file: bool,
}

/// The config file a load reads: `--config`, else `$XDG_CONFIG_HOME/gleaner/config.toml`
/// (`~/.config/...`) when it exists; absolute, so that messages name it unambiguously.
pub fn config_file(overrides: &Overrides) -> Option<PathBuf> {
    match &overrides.config_file {
        Some(p) => Some(absolute(p)),
        None => default_file(&process_env()),
    }
}

fn default_file(env: &Env) -> Option<PathBuf> {
    let base = env
        .get("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| env.home().join(".config"));
    let p = base.join("gleaner").join("config.toml");
    p.is_file().then(|| absolute(&p))
}

/// The login name: `$USER`, else `$LOGNAME`, else `"unknown"` (a service started without
/// either; set `user` in the config then).
fn login_name(env: &Env) -> String {
    env.get("USER")
        .or_else(|| env.get("LOGNAME"))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// The process environment as the variables the loader looks at.
pub(super) fn process_env() -> Env {
    Env {
        vars: std::env::vars().collect(),
    }
}

/// The variable holding a log filter (tracing's syntax), like `RUST_LOG`.
pub(super) const LOG_ENV: &str = "GLEANER_LOG";

/// Environment snapshot, injectable so tests do not mutate the process environment.
#[derive(Debug, Clone, Default)]
pub struct Env {
    /// Variable name to value.
    pub vars: HashMap<String, String>,
}

impl Env {
    fn get(&self, key: &str) -> Option<&str> {
        self.vars
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    fn home(&self) -> PathBuf {
        self.get("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/"))
    }

    pub(super) fn gleaner_vars(&self) -> HashMap<String, String> {
        self.vars
            .iter()
            .filter(|(k, _)| k.starts_with(&format!("{ENV_PREFIX}_")))
            // `GLEANER_LOG` is a log filter (like RUST_LOG), not the `[log]` table.
            .filter(|(k, _)| k.as_str() != LOG_ENV)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

/// Load the configuration from the process environment and the given overrides.
pub fn load(overrides: &Overrides) -> Result<Config, ConfigError> {
    load_with_env(overrides, &process_env())
}

/// Load with an explicit environment (used by tests).
pub fn load_with_env(overrides: &Overrides, env: &Env) -> Result<Config, ConfigError> {
    let (merged, file) = merged(overrides, env)?;
    let raw: RawConfig = merged
        .try_deserialize()
        .map_err(|e| ConfigError::Merge(collapse_whitespace(&e.to_string())))?;
    Config::from_raw(raw, file, env)
}

/// The layers merged (embedded defaults, file, `GLEANER_*` variables, flags), not yet
/// validated, and the file that was read.
pub(super) fn merged(
    overrides: &Overrides,
    env: &Env,
) -> Result<(config::Config, Option<PathBuf>), ConfigError> {
    use config::{Config as Cfg, Environment, File, FileFormat};

    let file = match (&overrides.config_file, overrides.ignore_file) {
        (_, true) => None,
        (Some(p), false) => {
            if !p.is_file() {
                return Err(ConfigError::File {
                    path: absolute(p),
                    message: "no such file".into(),
                });
            }
            Some(absolute(p))
        }
        (None, false) => default_file(env),
    };

    if let Some(path) = &file {
        check_file_keys(path)?;
    }

    let mut builder =
        Cfg::builder().add_source(File::from_str(DEFAULT_CONFIG_TOML, FileFormat::Toml));
    if let Some(path) = &file {
        builder = builder.add_source(File::from(path.as_path()).format(FileFormat::Toml));
    }
    builder = builder.add_source(
        Environment::with_prefix(ENV_PREFIX)
            .prefix_separator("_")
            .separator("__")
            .try_parsing(true)
            .source(Some(env.gleaner_vars().into_iter().collect())),
    );
    let set = |b: config::ConfigBuilder<config::builder::DefaultState>,
               key: &str,
               v: &Option<String>| match v {
        Some(v) => b.set_override(key, v.clone()),
        None => Ok(b),
    };
    let merge_err =
        |e: config::ConfigError| ConfigError::Merge(collapse_whitespace(&e.to_string()));
    builder = set(
        builder,
        "projects_dir",
        &overrides
            .projects_dir
            .as_ref()
            .map(|p| p.display().to_string()),
    )
    .map_err(merge_err)?;
    builder = set(builder, "database.url", &overrides.database_url).map_err(merge_err)?;
    builder = set(builder, "machine_id", &overrides.machine_id).map_err(merge_err)?;
    // `GLEANER_LOG` (tracing's filter syntax, like RUST_LOG) unless --log-level says otherwise.
    let env_level = env
        .get(LOG_ENV)
        .map(str::to_string)
        .filter(|v| !v.trim().is_empty());
    builder = set(
        builder,
        "log.level",
        &overrides.log_level.clone().or(env_level),
    )
    .map_err(merge_err)?;
    builder = set(builder, "log.format", &overrides.log_format).map_err(merge_err)?;

    let merged = builder.build().map_err(|e| match &file {
        Some(path) => ConfigError::File {
            path: path.clone(),
            message: collapse_whitespace(&e.to_string()),
        },
        None => merge_err(e),
    })?;
    Ok((merged, file))
}

/// Reject keys in the user's file that the embedded defaults do not have: a typo would otherwise
/// be silently ignored. Environment variables are not checked (unrelated `GLEANER_*` variables
/// may exist).
fn check_file_keys(path: &Path) -> Result<(), ConfigError> {
    use config::{Config as Cfg, File, FileFormat};
    let known = key_paths(
        &Cfg::builder()
            .add_source(File::from_str(DEFAULT_CONFIG_TOML, FileFormat::Toml))
            .build()
            .map_err(|e| ConfigError::Merge(e.to_string()))?,
    );
    let user = Cfg::builder()
        .add_source(File::from(path).format(FileFormat::Toml))
        .build()
        .map_err(|e| ConfigError::File {
            path: path.to_path_buf(),
            message: collapse_whitespace(&e.to_string()),
        })?;
    for key in key_paths(&user) {
        // `redact.extra` and `pricing` are maps of user-chosen names.
        if !known.contains(&key)
            && !key.starts_with("redact.extra.")
            && !key.starts_with("pricing.")
        {
            return Err(ConfigError::UnknownKey {
                path: path.to_path_buf(),
                key,
            });
        }
    }
    Ok(())
}

pub(super) fn key_paths(cfg: &config::Config) -> BTreeSet<String> {
    fn walk(prefix: &str, table: config::Map<String, config::Value>, out: &mut BTreeSet<String>) {
        for (k, v) in table {
            let key = if prefix.is_empty() {
                k
            } else {
                format!("{prefix}.{k}")
            };
            match v.clone().into_table() {
                Ok(t) => walk(&key, t, out),
                Err(_) => {
                    out.insert(key);
                }
            }
        }
    }
    let mut out = BTreeSet::new();
    if let Ok(t) = cfg
        .clone()
        .try_deserialize::<config::Map<String, config::Value>>()
    {
        walk("", t, &mut out);
    }
    out
}

fn expand_home(p: &str, env: &Env) -> PathBuf {
    if p == "~" {
        env.home()
    } else if let Some(rest) = p.strip_prefix("~/") {
        env.home().join(rest)
    } else {
        PathBuf::from(p)
    }
}

fn positive(key: &str, v: u64, min: u64) -> Result<u64, ConfigError> {
    if v < min {
        Err(ConfigError::Invalid {
            key: key.into(),
            message: format!("must be at least {min}, got {v}"),
        })
    } else {
        Ok(v)
    }
}

/// A zstd level of packing: 1 to 19 (zstd's "ultra" levels above need more memory than the
/// packer's bound allows).
fn zstd_level(key: &str, v: i64) -> Result<i32, ConfigError> {
    match i32::try_from(v) {
        Ok(l @ 1..=19) => Ok(l),
        _ => Err(ConfigError::Invalid {
            key: key.into(),
            message: format!("must be a zstd level from 1 to 19, got {v}"),
        }),
    }
}

/// `v` seconds, at least `min`.
fn secs_at_least(key: &str, v: u64, min: u64) -> Result<Duration, ConfigError> {
    Ok(Duration::from_secs(positive(key, v, min)?))
}

/// `v` as a `usize`, at least `min`.
fn usize_at_least(key: &str, v: u64, min: u64) -> Result<usize, ConfigError> {
    to_usize(key, positive(key, v, min)?)
}

fn to_usize(key: &str, v: u64) -> Result<usize, ConfigError> {
    usize::try_from(v).map_err(|_| ConfigError::Invalid {
        key: key.into(),
        message: format!("{v} is too large"),
    })
}

impl Config {
    /// Validate the merged values and resolve defaults that depend on the environment.
    pub fn from_raw(
        raw: RawConfig,
        file: Option<PathBuf>,
        env: &Env,
    ) -> Result<Config, ConfigError> {
        let projects_dir = if raw.projects_dir.trim().is_empty() {
            match env.get("CLAUDE_CONFIG_DIR") {
                Some(dir) => expand_home(dir, env).join("projects"),
                None => env.home().join(".claude").join("projects"),
            }
        } else {
            expand_home(raw.projects_dir.trim(), env)
        };
        // Absolute: file-system events name absolute paths, and a file must have one path
        // whichever way it was found (a relative `--projects-dir proj` once registered each
        // file twice, as `proj/...` from scans and `/abs/proj/...` from events).
        let projects_dir = std::path::absolute(&projects_dir).unwrap_or(projects_dir);
        let data_dir = if raw.data_dir.trim().is_empty() {
            env.get("XDG_DATA_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| env.home().join(".local").join("share"))
                .join("gleaner")
        } else {
            expand_home(raw.data_dir.trim(), env)
        };
        let data_dir = std::path::absolute(&data_dir).unwrap_or(data_dir);
        let machine_id = if raw.machine_id.trim().is_empty() {
            gethostname::gethostname().to_string_lossy().into_owned()
        } else {
            raw.machine_id.trim().to_string()
        };
        let user = if raw.user.trim().is_empty() {
            login_name(env)
        } else {
            raw.user.trim().to_string()
        };
        let url = raw.database.url.trim();
        let url = if url.is_empty() {
            format!("sqlite://{}", data_dir.join("gleaner.db").display())
        } else if let Some(rest) = url.strip_prefix("sqlite://~/") {
            format!("sqlite://{}", env.home().join(rest).display())
        } else {
            url.to_string()
        };
        match Backend::of_url(&url) {
            None => {
                return Err(ConfigError::Invalid {
                    key: "database.url".into(),
                    message: format!(
                        "{} is neither sqlite://PATH nor postgres://...",
                        redact_url(&url)
                    ),
                })
            }
            // `sqlite://` alone would open a private in-memory database: nothing kept.
            Some(Backend::Sqlite) if sqlite_path_is_empty(&url) => {
                return Err(ConfigError::Invalid {
                    key: "database.url".into(),
                    message: format!(
                        "{} names no file (write sqlite:///path/to/gleaner.db)",
                        redact_url(&url)
                    ),
                })
            }
            Some(_) => {}
        }
        let format = match raw.log.format.trim() {
            "text" => LogFormat::Text,
            "json" => LogFormat::Json,
            other => {
                return Err(ConfigError::Invalid {
                    key: "log.format".into(),
                    message: format!("expected \"text\" or \"json\", got {other:?}"),
                })
            }
        };
        let level = check_log_level(&raw.log.level)?;
        Ok(Config {
            projects_dir,
            data_dir,
            machine_id,
            user,
            database: Options {
                url,
                max_connections: u32::try_from(positive(
                    "database.max_connections",
                    raw.database.max_connections.into(),
                    1,
                )?)
                .unwrap_or(u32::MAX),
                connect_timeout: secs_at_least(
                    "database.connect_timeout_secs",
                    raw.database.connect_timeout_secs,
                    1,
                )?,
            },
            tail: TailSettings {
                max_line_bytes: usize_at_least(
                    "tail.max_line_bytes",
                    raw.tail.max_line_bytes,
                    1024,
                )?,
                read_chunk_bytes: usize_at_least(
                    "tail.read_chunk_bytes",
                    raw.tail.read_chunk_bytes,
                    4096,
                )?,
                idle_evict: Duration::from_secs(raw.tail.idle_evict_secs),
            },
            batch: BatchConfig {
                max_bytes: usize_at_least("batch.max_bytes", raw.batch.max_bytes, 1024)?,
                max_lines: usize_at_least("batch.max_lines", raw.batch.max_lines, 1)?,
            },
            daemon: DaemonConfig {
                rescan_interval: secs_at_least(
                    "daemon.rescan_interval_secs",
                    raw.daemon.rescan_interval_secs,
                    1,
                )?,
                poll_interval: Duration::from_millis(positive(
                    "daemon.poll_interval_ms",
                    raw.daemon.poll_interval_ms,
                    100,
                )?),
                debounce: Duration::from_millis(raw.daemon.debounce_ms),
                workers: usize_at_least("daemon.workers", raw.daemon.workers, 1)?,
            },
            sessions: SessionsConfig {
                idle_timeout: secs_at_least(
                    "sessions.idle_timeout_secs",
                    raw.sessions.idle_timeout_secs,
                    1,
                )?,
            },
            rules: Arc::new(
                Settings::from_tables(raw.episodes, raw.triage)
                    .and_then(Rules::new)
                    .map_err(ConfigError::from)?,
            ),
            redactor: {
                let extra: Vec<(String, String)> = raw.redact.extra.into_iter().collect();
                Arc::new(Redactor::new(&extra).map_err(|e| ConfigError::Invalid {
                    key: format!("redact.extra.{}", e.pattern),
                    message: e.message,
                })?)
            },
            mcp: McpConfig {
                max_result_chars: usize_at_least(
                    "mcp.max_result_chars",
                    raw.mcp.max_result_chars,
                    1000,
                )?,
            },
            archive: ArchiveConfig {
                enabled: raw.archive.enabled,
                defer_finished: raw.archive.defer_finished,
                pack_interval: secs_at_least(
                    "archive.pack_interval_secs",
                    raw.archive.pack_interval_secs,
                    1,
                )?,
                pack_level: zstd_level("archive.pack_level", raw.archive.pack_level)?,
            },
            context: ContextConfig {
                max_bytes: usize_at_least("context.max_bytes", raw.context.max_bytes, 256)?,
            },
            web: WebConfig {
                bind: raw
                    .web
                    .bind
                    .trim()
                    .parse()
                    .map_err(|e| ConfigError::Invalid {
                        key: "web.bind".into(),
                        message: format!(
                            "{:?} is not an address like 127.0.0.1:7270: {e}",
                            raw.web.bind
                        ),
                    })?,
            },
            refine: RefineConfig {
                command: Some(raw.refine.command.trim().to_string()).filter(|c| !c.is_empty()),
                timeout: secs_at_least("refine.timeout_secs", raw.refine.timeout_secs, 1)?,
                max_attempts: positive("refine.max_attempts", raw.refine.max_attempts, 1)?
                    .min(u32::MAX as u64) as u32,
                interval: secs_at_least("refine.interval_secs", raw.refine.interval_secs, 1)?,
            },
            prices: crate::usage::Prices::with_overrides(raw.pricing).map_err(|e| {
                ConfigError::Invalid {
                    key: "pricing".into(),
                    message: e.to_string(),
                }
            })?,
            log: LogConfig { level, format },
            file,
        })
    }
}

/// The levels a log filter may name.
const LOG_LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

/// `log.level` (`--log-level`, `GLEANER_LOG`): a level, or a tracing filter whose every
/// directive ends in a level (`gleaner=debug,sqlx=info`). Why stricter than tracing: its
/// syntax reads a bare unknown word (`warning`, `nonsense`) as a target name, which silently
/// turns off every log line, errors included.
pub fn check_log_level(text: &str) -> Result<String, ConfigError> {
    let level = text.trim();
    let bad = |why: String| ConfigError::Invalid {
        key: "log.level".into(),
        message: format!(
            "{why}: expected one of {}, or a filter such as gleaner=debug,sqlx=info",
            LOG_LEVELS.join(", ")
        ),
    };
    if level.is_empty() {
        return Err(bad("empty".into()));
    }
    for directive in level.split(',').map(str::trim) {
        let lvl = directive
            .rsplit_once('=')
            .map_or(
                directive,
                |(target, lvl)| {
                    if target.trim().is_empty() {
                        ""
                    } else {
                        lvl
                    }
                },
            );
        if !LOG_LEVELS.contains(&lvl.trim().to_ascii_lowercase().as_str()) {
            return Err(bad(format!(
                "{level:?} is not a level or filter ({directive:?})"
            )));
        }
    }
    Ok(level.to_string())
}

/// Whether an `sqlite:` URL names no file (`sqlite://`, `sqlite:`, `sqlite://?mode=rwc`).
fn sqlite_path_is_empty(url: &str) -> bool {
    let rest = url.strip_prefix("sqlite:").unwrap_or(url);
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    rest.split('?').next().unwrap_or_default().trim().is_empty()
}
