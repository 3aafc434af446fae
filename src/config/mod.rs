//! Configuration: layered loading and validation.
//!
//! Sources, lowest to highest precedence: the embedded default file (`config/gleaner.toml`, the
//! single source of truth for keys and defaults) < the user's config file < `GLEANER_*`
//! environment variables (`__` separates nested keys) < command-line flags ([`Overrides`]).
//! Loading happens in two stages, as ripgrep's low/high args: the `config` crate merges the
//! sources into [`RawConfig`], then [`Config::from_raw`] validates once and resolves paths, so
//! the rest of the program only ever sees a valid [`Config`].

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// The fully commented default configuration, embedded so `gleaner config --default` can print it
/// and so defaults live in exactly one place.
pub const DEFAULT_CONFIG_TOML: &str = include_str!("../../config/gleaner.toml");

/// Prefix of the environment variables that override configuration keys.
pub const ENV_PREFIX: &str = "GLEANER";

/// Why a configuration could not be loaded. Each message is one line naming the key or file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file exists but could not be read or is not valid TOML.
    #[error("config file {path}: {message}")]
    File {
        /// The file that failed.
        path: PathBuf,
        /// What the parser said.
        message: String,
    },
    /// The config file names a key Gleaner does not know (most often a typo).
    #[error("config file {path}: unknown key `{key}`")]
    UnknownKey {
        /// The file holding the key.
        path: PathBuf,
        /// The dotted key.
        key: String,
    },
    /// A key has a value of the wrong type or out of range.
    #[error("invalid config value for `{key}`: {message}")]
    Invalid {
        /// The dotted key (or environment variable) at fault.
        key: String,
        /// What is wrong with it.
        message: String,
    },
    /// Merging the sources failed (the `config` crate's message names the key).
    #[error("invalid configuration: {0}")]
    Merge(String),
}

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
    /// `--log-level LEVEL`.
    pub log_level: Option<String>,
}

/// The merged, not yet validated configuration (mirrors `config/gleaner.toml`).
#[derive(Debug, Clone, Deserialize)]
pub struct RawConfig {
    projects_dir: String,
    data_dir: String,
    machine_id: String,
    database: RawDatabase,
    tail: RawTail,
    batch: RawBatch,
    daemon: RawDaemon,
    sessions: RawSessions,
    episodes: RawEpisodes,
    triage: RawTriage,
    redact: RawRedact,
    log: RawLog,
}

#[derive(Debug, Clone, Deserialize)]
struct RawEpisodes {
    enabled: bool,
    mode: String,
    idle_gap_mins: u64,
    topic_threshold: f64,
    min_prompt_terms: u64,
    window_turns: u64,
}

#[derive(Debug, Clone, Deserialize)]
struct RawTriage {
    correction_phrases: Vec<String>,
    pivot_phrases: Vec<String>,
    decision_phrases: Vec<String>,
    learning_phrases: Vec<String>,
    choice_words: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct RawRedact {
    extra: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Clone, Deserialize)]
struct RawSessions {
    idle_timeout_secs: u64,
}

#[derive(Debug, Clone, Deserialize)]
struct RawDatabase {
    url: String,
    max_connections: u32,
    connect_timeout_secs: u64,
}

#[derive(Debug, Clone, Deserialize)]
struct RawTail {
    max_line_bytes: u64,
    read_chunk_bytes: u64,
    idle_evict_secs: u64,
}

#[derive(Debug, Clone, Deserialize)]
struct RawBatch {
    max_bytes: u64,
    max_lines: u64,
}

#[derive(Debug, Clone, Deserialize)]
struct RawDaemon {
    rescan_interval_secs: u64,
    debounce_ms: u64,
    workers: u64,
}

#[derive(Debug, Clone, Deserialize)]
struct RawLog {
    level: String,
    format: String,
}

/// Validated configuration used by every part of Gleaner.
#[derive(Debug, Clone)]
pub struct Config {
    /// Root of the transcripts tree (`~/.claude/projects`).
    pub projects_dir: PathBuf,
    /// Gleaner's state folder (lock file, default database).
    pub data_dir: PathBuf,
    /// This machine's id in shared databases.
    pub machine_id: String,
    /// Database settings.
    pub database: DatabaseConfig,
    /// Tailer settings.
    pub tail: TailSettings,
    /// Transaction size limits.
    pub batch: BatchConfig,
    /// Daemon timing.
    pub daemon: DaemonConfig,
    /// Session lifecycle.
    pub sessions: SessionsConfig,
    /// Episode cutting and triage.
    pub episodes: crate::episode::Settings,
    /// Extra redaction patterns `(name, regex)`, validated at load.
    pub redact_extra: Vec<(String, String)>,
    /// Logging.
    pub log: LogConfig,
    /// The config file that was read, if any.
    pub file: Option<PathBuf>,
}

/// Which database and how to reach it.
#[derive(Clone)]
pub struct DatabaseConfig {
    /// `sqlite://...` or `postgres://...`.
    pub url: String,
    /// Pool size.
    pub max_connections: u32,
    /// How long to wait for the database at startup.
    pub connect_timeout: Duration,
}

impl std::fmt::Debug for DatabaseConfig {
    /// Never print a password, not even in debug logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatabaseConfig")
            .field("url", &redact_url(&self.url))
            .field("max_connections", &self.max_connections)
            .field("connect_timeout", &self.connect_timeout)
            .finish()
    }
}

/// Tailer limits.
#[derive(Debug, Clone)]
pub struct TailSettings {
    /// Longest line kept; longer ones become diagnostics.
    pub max_line_bytes: usize,
    /// Bytes per read call.
    pub read_chunk_bytes: usize,
    /// Idle time after which a file's partial-line buffer is dropped.
    pub idle_evict: Duration,
}

/// Bounds of one transaction.
#[derive(Debug, Clone)]
pub struct BatchConfig {
    /// Transcript bytes per transaction.
    pub max_bytes: usize,
    /// Lines per transaction.
    pub max_lines: usize,
}

/// Daemon timing.
#[derive(Debug, Clone)]
pub struct DaemonConfig {
    /// Period of the safety-net rescan.
    pub rescan_interval: Duration,
    /// Delay after an fs event before reading.
    pub debounce: Duration,
    /// Files read in parallel.
    pub workers: usize,
}

/// Session lifecycle.
#[derive(Debug, Clone)]
pub struct SessionsConfig {
    /// A session whose files have not grown for this long is finished.
    pub idle_timeout: Duration,
}

/// Log output.
#[derive(Debug, Clone)]
pub struct LogConfig {
    /// A tracing filter directive.
    pub level: String,
    /// Output format.
    pub format: LogFormat,
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Human readable.
    Text,
    /// One JSON object per line.
    Json,
}

/// Which backend a database URL selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Embedded SQLite file.
    Sqlite,
    /// PostgreSQL server.
    Postgres,
}

impl DatabaseConfig {
    /// The backend the URL selects (validated at load time).
    pub fn backend(&self) -> Backend {
        backend_of(&self.url).unwrap_or(Backend::Sqlite)
    }
}

fn backend_of(url: &str) -> Option<Backend> {
    if url.starts_with("sqlite:") {
        Some(Backend::Sqlite)
    } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Some(Backend::Postgres)
    } else {
        None
    }
}

/// The process environment as the variables the loader looks at.
fn process_env() -> Env {
    Env {
        vars: std::env::vars().collect(),
    }
}

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

    fn gleaner_vars(&self) -> HashMap<String, String> {
        self.vars
            .iter()
            .filter(|(k, _)| k.starts_with(&format!("{ENV_PREFIX}_")))
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
    use config::{Config as Cfg, Environment, File, FileFormat};

    let file = match &overrides.config_file {
        Some(p) => {
            if !p.is_file() {
                return Err(ConfigError::File {
                    path: p.clone(),
                    message: "no such file".into(),
                });
            }
            Some(p.clone())
        }
        None => {
            let base = env
                .get("XDG_CONFIG_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| env.home().join(".config"));
            let p = base.join("gleaner").join("config.toml");
            p.is_file().then_some(p)
        }
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
    let merge_err = |e: config::ConfigError| ConfigError::Merge(one_line(&e.to_string()));
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
    builder = set(builder, "log.level", &overrides.log_level).map_err(merge_err)?;

    let merged = builder.build().map_err(|e| match &file {
        Some(path) => ConfigError::File {
            path: path.clone(),
            message: one_line(&e.to_string()),
        },
        None => merge_err(e),
    })?;
    let raw: RawConfig = merged.try_deserialize().map_err(merge_err)?;
    Config::from_raw(raw, file, env)
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
            message: one_line(&e.to_string()),
        })?;
    for key in key_paths(&user) {
        // `redact.extra` is a map of user-chosen names.
        if !known.contains(&key) && !key.starts_with("redact.extra.") {
            return Err(ConfigError::UnknownKey {
                path: path.to_path_buf(),
                key,
            });
        }
    }
    Ok(())
}

fn key_paths(cfg: &config::Config) -> BTreeSet<String> {
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

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
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

fn episode_settings(e: RawEpisodes, t: RawTriage) -> Result<crate::episode::Settings, ConfigError> {
    use crate::episode::{Mode, Rules, Settings};
    let mode = match e.mode.trim().to_ascii_lowercase().as_str() {
        "topic" => Mode::Topic,
        "window" => Mode::Window,
        other => {
            return Err(ConfigError::Invalid {
                key: "episodes.mode".into(),
                message: format!("expected \"topic\" or \"window\", got {other:?}"),
            })
        }
    };
    if !(0.0..=1.0).contains(&e.topic_threshold) {
        return Err(ConfigError::Invalid {
            key: "episodes.topic_threshold".into(),
            message: format!("must be between 0 and 1, got {}", e.topic_threshold),
        });
    }
    let settings = Settings {
        enabled: e.enabled,
        mode,
        idle_gap_ms: i64::try_from(positive("episodes.idle_gap_mins", e.idle_gap_mins, 1)?)
            .unwrap_or(i64::MAX / 60_000)
            .saturating_mul(60_000),
        topic_threshold: e.topic_threshold,
        min_prompt_terms: to_usize("episodes.min_prompt_terms", e.min_prompt_terms)?,
        window_turns: to_usize(
            "episodes.window_turns",
            positive("episodes.window_turns", e.window_turns, 1)?,
        )?,
        correction_phrases: t.correction_phrases,
        pivot_phrases: t.pivot_phrases,
        decision_phrases: t.decision_phrases,
        learning_phrases: t.learning_phrases,
        choice_words: t.choice_words,
    };
    Rules::new(settings.clone()).map_err(|message| ConfigError::Invalid {
        key: "triage".into(),
        message,
    })?;
    Ok(settings)
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
        let data_dir = if raw.data_dir.trim().is_empty() {
            env.get("XDG_DATA_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| env.home().join(".local").join("share"))
                .join("gleaner")
        } else {
            expand_home(raw.data_dir.trim(), env)
        };
        let machine_id = if raw.machine_id.trim().is_empty() {
            gethostname::gethostname().to_string_lossy().into_owned()
        } else {
            raw.machine_id.trim().to_string()
        };
        let url = raw.database.url.trim();
        let url = if url.is_empty() {
            format!("sqlite://{}", data_dir.join("gleaner.db").display())
        } else if let Some(rest) = url.strip_prefix("sqlite://~/") {
            format!("sqlite://{}", env.home().join(rest).display())
        } else {
            url.to_string()
        };
        if backend_of(&url).is_none() {
            return Err(ConfigError::Invalid {
                key: "database.url".into(),
                message: format!(
                    "{} is neither sqlite://PATH nor postgres://...",
                    redact_url(&url)
                ),
            });
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
        let level = raw.log.level.trim().to_string();
        if level.is_empty() {
            return Err(ConfigError::Invalid {
                key: "log.level".into(),
                message: "must not be empty".into(),
            });
        }
        Ok(Config {
            projects_dir,
            data_dir,
            machine_id,
            database: DatabaseConfig {
                url,
                max_connections: u32::try_from(positive(
                    "database.max_connections",
                    raw.database.max_connections.into(),
                    1,
                )?)
                .unwrap_or(u32::MAX),
                connect_timeout: Duration::from_secs(positive(
                    "database.connect_timeout_secs",
                    raw.database.connect_timeout_secs,
                    1,
                )?),
            },
            tail: TailSettings {
                max_line_bytes: to_usize(
                    "tail.max_line_bytes",
                    positive("tail.max_line_bytes", raw.tail.max_line_bytes, 1024)?,
                )?,
                read_chunk_bytes: to_usize(
                    "tail.read_chunk_bytes",
                    positive("tail.read_chunk_bytes", raw.tail.read_chunk_bytes, 4096)?,
                )?,
                idle_evict: Duration::from_secs(raw.tail.idle_evict_secs),
            },
            batch: BatchConfig {
                max_bytes: to_usize(
                    "batch.max_bytes",
                    positive("batch.max_bytes", raw.batch.max_bytes, 1024)?,
                )?,
                max_lines: to_usize(
                    "batch.max_lines",
                    positive("batch.max_lines", raw.batch.max_lines, 1)?,
                )?,
            },
            daemon: DaemonConfig {
                rescan_interval: Duration::from_secs(positive(
                    "daemon.rescan_interval_secs",
                    raw.daemon.rescan_interval_secs,
                    1,
                )?),
                debounce: Duration::from_millis(raw.daemon.debounce_ms),
                workers: to_usize(
                    "daemon.workers",
                    positive("daemon.workers", raw.daemon.workers, 1)?,
                )?,
            },
            sessions: SessionsConfig {
                idle_timeout: Duration::from_secs(positive(
                    "sessions.idle_timeout_secs",
                    raw.sessions.idle_timeout_secs,
                    1,
                )?),
            },
            episodes: episode_settings(raw.episodes, raw.triage)?,
            redact_extra: {
                let extra: Vec<(String, String)> = raw.redact.extra.into_iter().collect();
                if let Err(e) = crate::extract::redact::Redactor::new(&extra) {
                    return Err(ConfigError::Invalid {
                        key: format!("redact.extra.{}", e.pattern),
                        message: e.message,
                    });
                }
                extra
            },
            log: LogConfig { level, format },
            file,
        })
    }

    /// Path of the single-instance lock file.
    pub fn lock_path(&self) -> PathBuf {
        self.data_dir.join("gleaner.lock")
    }
}

/// Hide the password of a `scheme://user:password@host/...` URL so it can be printed.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_string();
    };
    let rest_start = scheme_end + 3;
    let rest = &url[rest_start..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let Some(at) = authority.rfind('@') else {
        return url.to_string();
    };
    let userinfo = &authority[..at];
    match userinfo.find(':') {
        Some(colon) => format!(
            "{}{}:***{}",
            &url[..rest_start],
            &userinfo[..colon],
            &rest[at..]
        ),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Env {
        Env {
            vars: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn defaults_follow_home_and_xdg() {
        let e = env(&[("HOME", "/home/u")]);
        let c = load_with_env(&Overrides::default(), &e).unwrap();
        assert_eq!(c.projects_dir, PathBuf::from("/home/u/.claude/projects"));
        assert_eq!(c.data_dir, PathBuf::from("/home/u/.local/share/gleaner"));
        assert_eq!(
            c.database.url,
            "sqlite:///home/u/.local/share/gleaner/gleaner.db"
        );
        assert_eq!(c.tail.max_line_bytes, 64 * 1024 * 1024);
        assert_eq!(c.database.backend(), Backend::Sqlite);
        assert!(!c.machine_id.is_empty());

        let e = env(&[
            ("HOME", "/home/u"),
            ("CLAUDE_CONFIG_DIR", "/opt/claude"),
            ("XDG_DATA_HOME", "/data"),
        ]);
        let c = load_with_env(&Overrides::default(), &e).unwrap();
        assert_eq!(c.projects_dir, PathBuf::from("/opt/claude/projects"));
        assert_eq!(c.database.url, "sqlite:///data/gleaner/gleaner.db");
    }

    #[test]
    fn precedence_file_env_flags() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(
            &file,
            "machine_id = \"from-file\"\n[batch]\nmax_lines = 7\n[database]\nurl = \"sqlite:///file.db\"\n",
        )
        .unwrap();
        let o = Overrides {
            config_file: Some(file),
            ..Default::default()
        };
        let c = load_with_env(&o, &env(&[("HOME", "/h")])).unwrap();
        assert_eq!(c.machine_id, "from-file");
        assert_eq!(c.batch.max_lines, 7);
        assert_eq!(c.database.url, "sqlite:///file.db");

        let e = env(&[
            ("HOME", "/h"),
            ("GLEANER_BATCH__MAX_LINES", "9"),
            ("GLEANER_DATABASE__URL", "postgres://u:pw@h/db"),
            ("GLEANER_UNRELATED", "x"),
        ]);
        let c = load_with_env(&o, &e).unwrap();
        assert_eq!(c.batch.max_lines, 9);
        assert_eq!(c.database.backend(), Backend::Postgres);
        assert_eq!(c.machine_id, "from-file");

        let o2 = Overrides {
            database_url: Some("sqlite:///flag.db".into()),
            projects_dir: Some("/p".into()),
            ..o
        };
        let c = load_with_env(&o2, &e).unwrap();
        assert_eq!(c.database.url, "sqlite:///flag.db");
        assert_eq!(c.projects_dir, PathBuf::from("/p"));
    }

    #[test]
    fn xdg_config_file_is_read_when_present() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("gleaner")).unwrap();
        std::fs::write(
            dir.path().join("gleaner/config.toml"),
            "machine_id = \"xdg\"\n",
        )
        .unwrap();
        let e = env(&[
            ("HOME", "/h"),
            ("XDG_CONFIG_HOME", dir.path().to_str().unwrap()),
        ]);
        let c = load_with_env(&Overrides::default(), &e).unwrap();
        assert_eq!(c.machine_id, "xdg");
        assert_eq!(
            c.file.as_deref(),
            Some(dir.path().join("gleaner/config.toml").as_path())
        );
    }

    #[test]
    fn errors_name_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(&file, "[batch]\nmax_linez = 7\n").unwrap();
        let o = Overrides {
            config_file: Some(file.clone()),
            ..Default::default()
        };
        let err = load_with_env(&o, &env(&[("HOME", "/h")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("batch.max_linez"), "{err}");

        std::fs::write(&file, "[batch]\nmax_lines = \"lots\"\n").unwrap();
        let err = load_with_env(&o, &env(&[("HOME", "/h")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("max_lines"), "{err}");
        assert!(!err.contains('\n'));

        let e = env(&[
            ("HOME", "/h"),
            ("GLEANER_DATABASE__URL", "mysql://u:secret@h/x"),
        ]);
        let err = load_with_env(&Overrides::default(), &e)
            .unwrap_err()
            .to_string();
        assert!(err.contains("database.url"), "{err}");
        assert!(!err.contains("secret"), "{err}");

        let e = env(&[("HOME", "/h"), ("GLEANER_TAIL__MAX_LINE_BYTES", "10")]);
        let err = load_with_env(&Overrides::default(), &e)
            .unwrap_err()
            .to_string();
        assert!(err.contains("tail.max_line_bytes"), "{err}");

        let o = Overrides {
            config_file: Some(dir.path().join("missing.toml")),
            ..Default::default()
        };
        let err = load_with_env(&o, &env(&[("HOME", "/h")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing.toml"), "{err}");
    }

    #[test]
    fn extra_redaction_patterns_are_validated() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(&file, "[redact.extra]\ninternal = \"itk_[a-z0-9]{32}\"\n").unwrap();
        let o = Overrides {
            config_file: Some(file.clone()),
            ..Default::default()
        };
        let c = load_with_env(&o, &env(&[("HOME", "/h")])).unwrap();
        assert_eq!(
            c.redact_extra,
            [("internal".to_string(), "itk_[a-z0-9]{32}".to_string())]
        );
        std::fs::write(&file, "[redact.extra]\nbroken = \"itk_[\"\n").unwrap();
        let err = load_with_env(&o, &env(&[("HOME", "/h")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("redact.extra"), "{err}");
    }

    #[test]
    fn redacts_passwords() {
        assert_eq!(
            redact_url("postgres://u:pw@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(redact_url("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact_url("sqlite:///a/b.db"), "sqlite:///a/b.db");
        assert_eq!(
            redact_url("postgres://u:p@ss@h/db"),
            "postgres://u:***@h/db"
        );
    }
}
