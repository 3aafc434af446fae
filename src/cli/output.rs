//! Rendering of command results: aligned tables for people, JSON for programs.
//!
//! Output goes to stdout; a closed pipe (`gleaner files | head`) surfaces as an `io::Error` of
//! kind `BrokenPipe`, which `main` turns into a quiet exit 0.

use std::io::Write;

use serde::Serialize;

use crate::config::Config;
use crate::run::once::IngestSummary;
use crate::run::socket::StatusReport;
use crate::store::redact_url;
use crate::store::{FeedbackListing, FileListing, SessionListing, SummaryListing};

fn print_json<T: Serialize + ?Sized>(v: &T) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, v)?;
    writeln!(out)
}

/// Cut `s` to `max` characters, ending with `...` when cut.
pub fn ellipsize(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let keep = max.saturating_sub(3);
    let mut out: String = s.chars().take(keep).collect();
    out.push_str("...");
    out
}

/// `gleaner files`.
pub fn print_files(files: &[FileListing], json: bool) -> std::io::Result<()> {
    if json {
        return print_json(files);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<8} {:>12} {:>12} {:>8} {:>5} {:>4} {:<6} PATH",
        "SESSION", "SIZE", "OFFSET", "LINES", "DIAG", "GEN", "STATE"
    )?;
    for f in files {
        let sid = f.session_id.as_deref().unwrap_or("-");
        writeln!(
            out,
            "{:<8} {:>12} {:>12} {:>8} {:>5} {:>4} {:<6} {}",
            sid.chars().take(8).collect::<String>(),
            f.size,
            f.offset,
            f.lines,
            f.diagnostics,
            f.generation,
            f.state,
            f.path
        )?;
    }
    Ok(())
}

/// `gleaner sessions`: `[<first 8 chars of id>] <title>`, most recent first.
pub fn print_sessions(sessions: &[SessionListing], json: bool) -> std::io::Result<()> {
    if json {
        return print_json(sessions);
    }
    let mut out = std::io::stdout().lock();
    for s in sessions {
        writeln!(
            out,
            "[{}] {}",
            short_id(&s.session_id),
            ellipsize(
                one_line(s.title.as_deref().unwrap_or("(no title)")).as_str(),
                80
            )
        )?;
    }
    Ok(())
}

/// `gleaner summaries`.
pub fn print_summaries(rows: &[SummaryListing], json: bool) -> std::io::Result<()> {
    if json {
        return print_json(rows);
    }
    let mut out = std::io::stdout().lock();
    for r in rows {
        let detail = match r.kind.as_str() {
            "compact_boundary" => format!(
                "{} compaction at {} tokens",
                r.trigger.as_deref().unwrap_or("?"),
                r.pre_tokens.map_or("?".to_string(), |t| t.to_string())
            ),
            _ => one_line(r.text.as_deref().unwrap_or("")),
        };
        writeln!(
            out,
            "{} [{}] {:<16} {}",
            when(r.timestamp.as_deref()),
            short_id(&r.session_id),
            r.kind,
            ellipsize(&detail, 100)
        )?;
    }
    Ok(())
}

/// `gleaner feedback`.
pub fn print_feedback(rows: &[FeedbackListing], json: bool) -> std::io::Result<()> {
    if json {
        return print_json(rows);
    }
    let mut out = std::io::stdout().lock();
    for r in rows {
        let who = match &r.agent_id {
            Some(a) => format!("{}/{}", short_id(&r.session_id), a),
            None => short_id(&r.session_id),
        };
        let text = match (&r.feedback_type[..], &r.reason) {
            ("tool_denial", Some(reason)) => format!("denied: {}", one_line(reason)),
            ("tool_denial", None) => "denied".to_string(),
            _ => one_line(&r.content),
        };
        writeln!(
            out,
            "{} [{}] {:<12} {}",
            when(r.timestamp.as_deref()),
            who,
            r.feedback_type,
            ellipsize(&text, 100)
        )?;
    }
    Ok(())
}

/// `gleaner status`.
pub fn print_status(r: &StatusReport, json: bool) -> std::io::Result<()> {
    if json {
        return print_json(r);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "gleaner {} running, pid {}, up {} s",
        r.version, r.pid, r.uptime_secs
    )?;
    writeln!(out, "projects  {}", r.projects_dir)?;
    writeln!(out, "database  {}", r.database)?;
    writeln!(
        out,
        "files {}  since start: {:.1} MB, {} lines, {} messages, {} diagnostics, {} batches, {} errors",
        r.files,
        r.bytes as f64 / 1e6,
        r.lines,
        r.messages,
        r.diagnostics,
        r.batches,
        r.errors
    )
}

fn short_id(id: &str) -> String {
    id.chars().take(8).collect()
}

/// First non-empty line, trimmed.
fn one_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .to_string()
}

/// `YYYY-MM-DD HH:MM` of an ISO timestamp (16 columns), blank if unknown.
fn when(ts: Option<&str>) -> String {
    let t = ts
        .map(|t| t.get(..16).unwrap_or(t).replace('T', " "))
        .unwrap_or_default();
    format!("{t:<16}")
}

/// `gleaner ingest` summary.
pub fn print_ingest(s: &IngestSummary, json: bool) -> std::io::Result<()> {
    if json {
        return print_json(s);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{} files, {:.1} MB, {} lines, {} rows, {} diagnostics in {:.2} s ({:.1} MB/s{})",
        s.files,
        s.bytes as f64 / 1e6,
        s.lines,
        s.rows,
        s.diagnostics,
        s.seconds,
        s.mb_per_s,
        s.peak_rss_bytes
            .map(|b| format!(", peak RSS {:.0} MB", b as f64 / 1e6))
            .unwrap_or_default()
    )?;
    if s.errors > 0 {
        writeln!(out, "{} errors (see log)", s.errors)?;
    }
    Ok(())
}

/// `gleaner config`: the effective settings.
pub fn print_config(c: &Config) {
    println!(
        "config_file   = {}",
        c.file
            .as_ref()
            .map_or("(none)".into(), |p| p.display().to_string())
    );
    println!("projects_dir  = {}", c.projects_dir.display());
    println!("data_dir      = {}", c.data_dir.display());
    println!("machine_id    = {}", c.machine_id);
    println!("database.url  = {}", redact_url(&c.database.url));
    println!("{:#?}", (&c.tail, &c.batch, &c.daemon, &c.log));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ellipsis() {
        assert_eq!(ellipsize("short", 80), "short");
        let long = "x".repeat(100);
        let cut = ellipsize(&long, 80);
        assert_eq!(cut.chars().count(), 80);
        assert!(cut.ends_with("..."));
    }
}
