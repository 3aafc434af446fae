//! Configuration loading: precedence, defaults, errors that name the key.

use std::path::PathBuf;

use super::*;
use crate::store::{redact_url, Backend};

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
    // An SQLite URL without a file would keep nothing (an in-memory database).
    for url in ["sqlite://", "sqlite:", "sqlite://?mode=rwc"] {
        let e = env(&[("HOME", "/h"), ("GLEANER_DATABASE__URL", url)]);
        let err = load_with_env(&Overrides::default(), &e)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("database.url") && err.contains("names no file"),
            "{err}"
        );
    }

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
    // The configured pattern is in effect in the redactor built at load.
    let secret = format!("token itk_{}", "a1".repeat(16));
    let mut counts = std::collections::BTreeMap::new();
    let clean = c.redactor.redact(&secret, &mut counts);
    assert_eq!(clean, "token [REDACTED:internal]");
    assert_eq!(counts.get("internal"), Some(&1));
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
    // libpq and sqlx take the password as a query parameter too.
    assert_eq!(
        redact_url("postgres://u@h/db?sslmode=require&password=s3cret&PASSWORD=x"),
        "postgres://u@h/db?sslmode=require&password=***&PASSWORD=***"
    );
    assert_eq!(
        redact_url("postgres://u:pw@h/db?sslpassword=k&application_name=g"),
        "postgres://u:***@h/db?sslpassword=***&application_name=g"
    );
    assert_eq!(
        redact_url("sqlite:///a/b.db?mode=ro"),
        "sqlite:///a/b.db?mode=ro"
    );
}

#[test]
fn relative_folders_become_absolute() {
    // Events name absolute paths: a relative folder would give each file two paths.
    let o = Overrides {
        projects_dir: Some("proj".into()),
        ..Default::default()
    };
    let c = load_with_env(&o, &env(&[("HOME", "/h")])).unwrap();
    assert!(c.projects_dir.is_absolute(), "{}", c.projects_dir.display());
    assert!(c.projects_dir.ends_with("proj"));
    assert_eq!(
        c.projects_dir,
        std::env::current_dir().unwrap().join("proj")
    );
}
