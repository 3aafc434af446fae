//! `gleaner service`: the unit and the agent are rendered for this binary and pass the real
//! validators (`systemd-analyze verify` where it exists, a plist parse); install, status and
//! uninstall work in a temporary home, idempotently.

use std::process::Command;

use crate::common::*;

fn stdout_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test]
async fn the_systemd_unit_is_valid_and_runs_this_binary() {
    let env = TestEnv::new(Backend::Sqlite).await;
    let out = env
        .cmd()
        .args(["service", "install", "--print", "--target", "systemd"])
        .output()
        .expect("run");
    assert_ok(&out);
    let unit = stdout_of(&out);
    let bin = std::path::Path::new(bin()).canonicalize().expect("binary");
    assert!(
        unit.contains(&format!("ExecStart={} daemon", bin.display())),
        "{unit}"
    );
    for key in [
        "Restart=on-failure",
        "NoNewPrivileges=yes",
        "WantedBy=default.target",
    ] {
        assert!(unit.contains(key), "{key}");
    }
    // No link into the checkout the binary was built from.
    assert!(!unit.contains("Documentation="), "{unit}");
    assert!(unit.contains("ReadWritePaths=-"), "{unit}");
    assert!(!unit.contains('@'), "every placeholder filled: {unit}");
    let file = env.dir.path().join("gleaner.service");
    std::fs::write(&file, &unit).expect("write unit");
    let analyze = Command::new("systemd-analyze").arg("--version").output();
    if analyze.is_ok_and(|o| o.status.success()) {
        let out = Command::new("systemd-analyze")
            .arg("verify")
            .arg(&file)
            .output()
            .expect("systemd-analyze");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(err.trim().is_empty(), "no warning: {err}");
    } else {
        eprintln!("systemd-analyze not installed: unit checked by content only");
    }
}

#[tokio::test]
async fn the_launchd_agent_parses_as_a_plist() {
    let env = TestEnv::new(Backend::Sqlite).await;
    let out = env
        .cmd()
        .args(["service", "install", "--print", "--target", "launchd"])
        .output()
        .expect("run");
    assert_ok(&out);
    // Well-formed XML by a strict reader (plist readers forgive a comment holding `--`;
    // Python's plistlib does not).
    let mut xml = quick_xml::Reader::from_reader(out.stdout.as_slice());
    xml.config_mut().check_comments = true;
    xml.config_mut().check_end_names = true;
    let mut buf = Vec::new();
    loop {
        match xml.read_event_into(&mut buf) {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(_) => buf.clear(),
            Err(e) => panic!("not well-formed XML: {e}"),
        }
    }
    let v = plist::Value::from_reader_xml(out.stdout.as_slice()).expect("valid plist XML");
    let d = v.as_dictionary().expect("a dict");
    assert_eq!(d["Label"].as_string(), Some("dev.gleaner.daemon"));
    let args: Vec<&str> = d["ProgramArguments"]
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|a| a.as_string())
        .collect();
    let bin = std::path::Path::new(bin()).canonicalize().expect("binary");
    assert_eq!(args, [bin.display().to_string().as_str(), "daemon"]);
    assert_eq!(d["RunAtLoad"].as_boolean(), Some(true));
    assert!(d.contains_key("KeepAlive"));
    assert_eq!(d["ProcessType"].as_string(), Some("Background"));
    let log = d["StandardErrorPath"].as_string().expect("log path");
    assert!(log.ends_with("Library/Logs/gleaner/gleaner.log"), "{log}");
    assert!(
        log.starts_with(&env.dir.path().join("home").display().to_string()),
        "{log}"
    );
}

#[tokio::test]
async fn install_status_uninstall_in_a_temporary_home() {
    let env = TestEnv::new(Backend::Sqlite).await;
    let run = |args: &[&str]| {
        env.cmd()
            .args(["service"])
            .args(args)
            .args(["--target", "systemd"])
            .output()
            .expect("run")
    };
    let out = run(&["status"]);
    assert_eq!(out.status.code(), Some(1), "not installed yet");
    let out = run(&["install"]);
    assert_ok(&out);
    let path = env.dir.path().join("config/systemd/user/gleaner.service");
    assert!(path.is_file(), "{}", stdout_of(&out));
    // The folder the unit may write is created, and a missing one would not fail its start.
    assert!(env.dir.path().join("home/.local/share/gleaner").is_dir());
    let unit = std::fs::read_to_string(&path).expect("unit");
    assert!(
        unit.contains("ReadWritePaths=-%h/.local/share/gleaner"),
        "{unit}"
    );
    assert!(!unit.contains("README"), "{unit}");
    assert!(
        stdout_of(&out).contains("systemctl --user"),
        "{}",
        stdout_of(&out)
    );
    let out = run(&["install"]);
    assert_ok(&out);
    assert!(
        stdout_of(&out).starts_with("unchanged:"),
        "{}",
        stdout_of(&out)
    );
    let out = run(&["status"]);
    assert_ok(&out);
    assert!(stdout_of(&out).starts_with("installed:"));
    let out = run(&["uninstall"]);
    assert_ok(&out);
    assert!(!path.exists());
    assert_eq!(run(&["status"]).status.code(), Some(1));
}
