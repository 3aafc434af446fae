//! The dependency rules of ARCHITECTURE.md, checked on the source: a pure stage that imports the
//! shell, a store that runs a stage, a task spawned outside `run` or a print outside `cli` fails
//! here, naming the file and line.
//!
//! Test code is exempt: `tests.rs` files and everything after a `#[cfg(test)]` line. Comments
//! are skipped, so a doc comment may name what the code must not use.

use std::path::{Path, PathBuf};

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");

/// Non-test source lines of every `.rs` file under `src/<dir>` (or all of `src` for `""`), with
/// their path and line number.
fn code_lines(dir: &str) -> Vec<(PathBuf, usize, String)> {
    fn walk(p: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(p) else { return };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs")
                && p.file_name().is_some_and(|n| n != "tests.rs")
            {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(&Path::new(SRC).join(dir), &mut files);
    // A module may be a file beside its folder (`conversation.rs` + `conversation/tests.rs`).
    let single = Path::new(SRC).join(format!("{dir}.rs"));
    if !dir.is_empty() && single.is_file() {
        files.push(single);
    }
    files.sort();
    assert!(!files.is_empty(), "no sources under src/{dir}");
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("source file");
        for (i, line) in text.lines().enumerate() {
            let t = line.trim_start();
            if t.starts_with("#[cfg(test)]") {
                break;
            }
            if t.starts_with("//") {
                continue;
            }
            out.push((f.clone(), i + 1, line.to_string()));
        }
    }
    out
}

/// Every line of `dirs` holding one of `needles`, as `path:line: text`.
fn offenders(dirs: &[&str], needles: &[&str]) -> Vec<String> {
    dirs.iter()
        .flat_map(|d| code_lines(d))
        .filter(|(_, _, l)| needles.iter().any(|n| l.contains(n)))
        .map(|(p, n, l)| {
            let rel = p.strip_prefix(SRC).unwrap_or(&p).display().to_string();
            format!("src/{rel}:{n}: {}", l.trim())
        })
        .collect()
}

#[test]
fn pure_stages_import_no_shell_no_runtime_no_database() {
    let bad = offenders(
        &[
            "tail",
            "parse",
            "extract",
            "episode",
            "snippet",
            "conversation",
        ],
        &[
            "crate::store",
            "crate::run",
            "crate::cli",
            "crate::config",
            "tokio",
            "sqlx",
        ],
    );
    assert!(
        bad.is_empty(),
        "pure stages reach into the shell:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_store_runs_no_stage() {
    let bad = offenders(
        &["store"],
        &[
            "crate::episode",
            "crate::run",
            "crate::cli",
            "crate::config",
            "Builder",
        ],
    );
    assert!(bad.is_empty(), "the store reaches up:\n{}", bad.join("\n"));
}

#[test]
fn only_run_spawns_tasks_and_threads() {
    let dirs = [
        "config", "tail", "parse", "extract", "episode", "snippet", "store", "mcp", "cli", "web",
    ];
    let bad = offenders(
        &dirs,
        &[
            "tokio::spawn",
            "spawn_blocking",
            "JoinSet",
            "thread::spawn",
            "task::spawn",
        ],
    );
    assert!(
        bad.is_empty(),
        "tasks started outside run:\n{}",
        bad.join("\n")
    );
}

#[test]
fn only_cli_prints() {
    let dirs = [
        "config", "tail", "parse", "extract", "episode", "snippet", "store", "run", "mcp", "web",
    ];
    let bad = offenders(
        &dirs,
        &[
            "println!",
            "print!(",
            "eprintln!",
            "eprint!(",
            "dbg!(",
            "stdout()",
            "stderr()",
        ],
    );
    let bad: Vec<String> = bad
        .into_iter()
        // Logging goes to stderr by design (stdout is for results): telemetry sets it up.
        .filter(|l| !l.starts_with("src/telemetry.rs"))
        .collect();
    assert!(bad.is_empty(), "printing outside cli:\n{}", bad.join("\n"));
}

#[test]
fn the_checker_sees_a_violation() {
    // The rules above pass by finding nothing; make sure finding works.
    let found = offenders(&["run"], &["tokio::spawn"]);
    assert!(!found.is_empty(), "the scan found no spawn in run/ at all");
}
