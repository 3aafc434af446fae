//! `gleaner doctor`: one verdict line per thing a new setup gets wrong, each with a hint.
//!
//! Checks: the configuration, the transcripts folder, the database (opened, never created or
//! migrated), the daemon's socket, the service unit, the Claude Code hooks, and how long Claude
//! Code keeps transcripts (`cleanupPeriodDays`). Exit 0 when nothing failed (warnings allowed), 1 otherwise.

use std::time::Duration;

use serde::Serialize;

use super::{hooks, service, Outcome, EXIT_NOT_FOUND, EXIT_OK};
use crate::config::Config;
use crate::query::store::{Store, StoreError};
use crate::run::socket::{self, Request, Response};

/// Claude Code's default `cleanupPeriodDays`.
const CLAUDE_DEFAULT_CLEANUP_DAYS: i64 = 30;

/// One check's outcome.
#[derive(Debug, Serialize)]
struct Check {
    check: &'static str,
    /// `ok`, `warn` or `fail`.
    verdict: &'static str,
    detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<String>,
    /// Figures behind the verdict, where there are some (the archive's sizes).
    #[serde(skip_serializing_if = "Option::is_none")]
    figures: Option<serde_json::Value>,
}

fn check(check: &'static str, verdict: &'static str, detail: String, hint: Option<&str>) -> Check {
    Check {
        check,
        verdict,
        detail,
        hint: hint.map(str::to_string),
        figures: None,
    }
}

/// Run every check and print the verdicts. `config_problem` is why the configuration did not
/// load (the checks then run on the defaults and the command-line flags): a broken file is a
/// failed check, not a reason to check nothing else.
pub async fn run(cfg: &Config, config_problem: Option<String>, json: bool) -> Outcome {
    let mut checks = Vec::new();
    checks.push(match config_problem {
        None => check(
            "config",
            "ok",
            cfg.file.as_ref().map_or("defaults (no config file)".into(), |p| {
                std::path::absolute(p).unwrap_or_else(|_| p.clone()).display().to_string()
            }),
            None,
        ),
        Some(why) => check(
            "config",
            "fail",
            why,
            Some("fix the file (`gleaner config --default` prints every key); the checks below use the defaults"),
        ),
    });

    let dir = &cfg.projects_dir;
    checks.push(match std::fs::read_dir(dir) {
        Ok(entries) => {
            let projects = entries
                .filter_map(Result::ok)
                .filter(|e| e.path().is_dir())
                .count();
            check("projects", "ok", format!("{} ({projects} project folders)", dir.display()), None)
        }
        Err(e) => check(
            "projects",
            "fail",
            format!("{}: {e}", dir.display()),
            Some("set --projects-dir or `projects_dir` in the config to Claude Code's projects folder"),
        ),
    });

    if dir.is_dir() {
        checks.push(readable_check(dir));
    }

    let url = crate::query::store::redact_url(&cfg.database.url);
    let mut archive = None;
    let mut rules = None;
    checks.push(match Store::open_existing(&cfg.database).await {
        Ok(store) => {
            let schema = store.applied_schema().await.ok().flatten().unwrap_or(0);
            archive = Some(store.archive_totals().await);
            rules = store.rules_counts().await.ok();
            store.close().await;
            check(
                "database",
                "ok",
                format!("{url} opens, schema version {schema}"),
                None,
            )
        }
        Err(e @ StoreError::Missing { .. }) => check(
            "database",
            "warn",
            e.to_string(),
            Some("nothing ingested yet: `gleaner ingest` once, or start the daemon"),
        ),
        Err(e @ StoreError::SchemaBehind { .. }) => check(
            "database",
            "warn",
            e.to_string(),
            Some("`gleaner migrate`, or restart the daemon after an upgrade"),
        ),
        Err(e) => check(
            "database",
            "fail",
            e.to_string(),
            Some("check `database.url` (and that PostgreSQL runs, when used)"),
        ),
    });

    // Placed here, made once Claude Code's retention is known (below).
    let archive_at = checks.len();
    if let Some(r) = rules {
        let mut c = if r.older == 0 {
            check(
                "rules",
                "ok",
                format!(
                    "every session read by this build's rules (version {})",
                    r.current
                ),
                None,
            )
        } else {
            check(
                "rules",
                "warn",
                format!(
                    "{} sessions read by older rules, {} of them archived (rules version {})",
                    r.older, r.archived, r.current
                ),
                Some("the daemon derives archived ones again in the background; `gleaner reextract --older-than-rules` does it at once"),
            )
        };
        c.figures = serde_json::to_value(r).ok();
        checks.push(c);
    }

    let sock = socket::socket_path(&cfg.data_dir);
    checks.push(
        match socket::request(&sock, &Request::Status, Duration::from_secs(1)).await {
            Ok(Response::Status(r)) => check(
                "daemon",
                "ok",
                format!(
                    "running, pid {}, {} files, up {} s",
                    r.pid, r.files, r.uptime_secs
                ),
                None,
            ),
            Ok(other) => check(
                "daemon",
                "warn",
                format!("unexpected answer {other:?}"),
                None,
            ),
            Err(e) => check(
                "daemon",
                "warn",
                e.to_string(),
                Some("start it with `gleaner daemon`, or install the service (below)"),
            ),
        },
    );

    let target = service::Target::current();
    checks.push(match service::unit_path(target) {
        Ok(p) if p.is_file() => check("service", "ok", format!("installed: {}", p.display()), None),
        Ok(p) => check(
            "service",
            "warn",
            format!("not installed ({})", p.display()),
            Some("`gleaner service install`, then the command it prints"),
        ),
        Err(e) => check("service", "warn", e.to_string(), None),
    });

    let settings_path = hooks::settings_path(None);
    let settings: Option<serde_json::Value> = settings_path
        .as_ref()
        .ok()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| serde_json::from_str(&t).ok());
    let installed: Vec<&str> = hooks::EVENTS
        .iter()
        .filter(|(event, sub)| {
            settings.as_ref().is_some_and(|s| {
                s["hooks"][*event].as_array().is_some_and(|groups| {
                    groups.iter().any(|g| {
                        g["hooks"].as_array().is_some_and(|l| {
                            l.iter().any(|h| {
                                h["command"]
                                    .as_str()
                                    .is_some_and(|c| hooks::is_ours(c, sub))
                            })
                        })
                    })
                })
            })
        })
        .map(|(event, _)| *event)
        .collect();
    let where_ = settings_path
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    checks.push(if installed.len() == hooks::EVENTS.len() {
        check(
            "hooks",
            "ok",
            format!("{} in {where_}", hooks::EVENTS.map(|(e, _)| e).join(", ")),
            None,
        )
    } else {
        check(
            "hooks",
            "warn",
            format!("missing in {where_}: {}", {
                let missing: Vec<&str> = hooks::EVENTS
                    .iter()
                    .map(|(e, _)| *e)
                    .filter(|e| !installed.contains(e))
                    .collect();
                missing.join(", ")
            }),
            Some(
                "`gleaner hooks install` (sessions then finish at once, and compaction is caught)",
            ),
        )
    });

    let days = settings
        .as_ref()
        .and_then(|s| s["cleanupPeriodDays"].as_i64())
        .unwrap_or(CLAUDE_DEFAULT_CLEANUP_DAYS);
    checks.push(check(
        "retention",
        if days <= CLAUDE_DEFAULT_CLEANUP_DAYS { "warn" } else { "ok" },
        if cfg.archive.enabled {
            format!(
                "Claude Code deletes transcripts after {days} days; Gleaner's archive keeps \
                 them (`gleaner restore`)"
            )
        } else {
            format!(
                "Claude Code deletes transcripts after {days} days; Gleaner keeps what it \
                 stored (the archive is off)"
            )
        },
        (days <= CLAUDE_DEFAULT_CLEANUP_DAYS && !cfg.archive.enabled).then_some(
            "to keep the transcripts themselves longer, set \"cleanupPeriodDays\": 365 in Claude Code's settings.json, or turn the archive on",
        ),
    ));

    if let Some(totals) = archive {
        checks.insert(archive_at, archive_check(cfg, totals, days));
    }

    let failed = checks.iter().any(|c| c.verdict == "fail");
    if json {
        println!("{}", serde_json::to_string_pretty(&checks)?);
    } else {
        for c in &checks {
            println!("{:<4}  {:<9}  {}", c.verdict, c.check, c.detail);
            if let Some(h) = &c.hint {
                println!("{:<4}  {:<9}  hint: {h}", "", "");
            }
        }
    }
    Ok(if failed { EXIT_NOT_FOUND } else { EXIT_OK })
}

/// The archive's size, against the transcript bytes it holds.
/// Every transcript below the projects folder opened (and every folder listed) as the daemon
/// will: one it cannot read is never ingested, so it is named here, with the OS's reason.
fn readable_check(dir: &std::path::Path) -> Check {
    let (mut seen, mut bad): (u64, Vec<String>) = (0, Vec::new());
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = match std::fs::read_dir(&d) {
            Ok(e) => e,
            Err(e) => {
                bad.push(format!("{} ({e})", d.display()));
                continue;
            }
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                seen += 1;
                if let Err(e) = std::fs::File::open(&p) {
                    bad.push(format!("{} ({e})", p.display()));
                }
            }
        }
    }
    if bad.is_empty() {
        return check("transcripts", "ok", format!("{seen} readable"), None);
    }
    let shown: Vec<&str> = bad.iter().take(3).map(String::as_str).collect();
    check(
        "transcripts",
        "warn",
        format!(
            "{} of {seen} cannot be read, so they are never ingested: {}{}",
            bad.len(),
            shown.join("; "),
            if bad.len() > 3 { "; ..." } else { "" }
        ),
        Some("give this user read access to them (`ls -l` the files named)"),
    )
}

/// Days before Claude Code's cleanup from which a transcript whose bytes are not archived yet
/// is a warning (the daemon archives them within minutes of reading them: one left this long
/// means no daemon runs, or its packer fails).
const UNARCHIVED_WARN_MARGIN_DAYS: i64 = 5;

fn archive_check(
    cfg: &Config,
    totals: Result<crate::query::store::ArchiveTotals, StoreError>,
    cleanup_days: i64,
) -> Check {
    let t = match totals {
        Ok(t) => t,
        Err(e) => return check("archive", "fail", e.to_string(), None),
    };
    let mut c = if !cfg.archive.enabled {
        check(
            "archive",
            "warn",
            format!(
                "off ([archive] enabled = false); {} files kept from before",
                t.files
            ),
            Some("transcripts deleted by Claude Code cannot be restored while it is off"),
        )
    } else {
        let share = if t.raw_bytes > 0 {
            format!(
                " ({:.1}%)",
                100.0 * t.stored_bytes as f64 / t.raw_bytes as f64
            )
        } else {
            String::new()
        };
        check(
            "archive",
            "ok",
            format!(
                "{} files, {:.1} MB of transcripts in {:.1} MB{share}; {:.1} MB waiting to be \
                 packed (live sessions, and projects active within the hour)",
                t.files,
                t.raw_bytes as f64 / 1e6,
                t.stored_bytes as f64 / 1e6,
                t.waiting_bytes as f64 / 1e6
            ),
            None,
        )
    };
    if t.unarchived_bytes > 0 {
        let age_days = (chrono::Utc::now().timestamp_millis() - t.unarchived_oldest_mtime_ms)
            / (24 * 3600 * 1000);
        let detail = format!(
            "{:.1} MB read but not archived yet (left in their transcripts to be archived once, \
             straight into blocks); the oldest such transcript was last written {age_days} days \
             ago",
            t.unarchived_bytes as f64 / 1e6
        );
        if age_days >= cleanup_days - UNARCHIVED_WARN_MARGIN_DAYS {
            c.verdict = "warn";
            c.detail = format!(
                "{}; {detail}, and Claude Code deletes transcripts after {cleanup_days} days",
                c.detail
            );
            c.hint = Some(
                "start the daemon (`gleaner service install`) or run `gleaner pack` now".into(),
            );
        } else {
            c.detail = format!("{}; {detail}", c.detail);
        }
    }
    c.figures = serde_json::to_value(t).ok();
    c
}
