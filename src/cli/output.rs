//! Rendering of command results: aligned tables for people, JSON for programs.
//!
//! Output goes to stdout; a closed pipe (`gleaner files | head`) surfaces as an `io::Error` of
//! kind `BrokenPipe`, which `main` turns into a quiet exit 0.

use std::io::{IsTerminal, Write};

use serde::Serialize;

use crate::query::store::search::SearchPage;
use crate::query::store::{
    DiagnosticListing, EpisodeListing, FeedbackListing, FileListing, SnippetPage, SummaryListing,
};
use crate::run::once::IngestSummary;
use crate::run::socket::StatusReport;
use crate::text::{clip, first_line};

use super::table;

pub(super) fn print_json<T: Serialize + ?Sized>(v: &T) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, v)?;
    writeln!(out)
}

/// Cut `s` to `max` characters, ending with `...` when cut (ASCII: any terminal shows it).
pub fn ellipsize(s: &str, max: usize) -> String {
    clip(s, max, "...")
}

/// `gleaner files`.
pub fn print_files(files: &[FileListing], json: bool) -> std::io::Result<()> {
    if json {
        return print_json(files);
    }
    // An empty listing writes nothing to stdout (its "no files" goes to stderr), as every
    // other listing.
    if files.is_empty() {
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<8} {:>12} {:>12} {:>8} {:>5} {:>4} {:<6} PATH",
        "SESSION", "SIZE", "OFFSET", "LINES", "DIAG", "GEN", "STATE"
    )?;
    for f in files {
        let sid = f.session_id.as_deref().unwrap_or("-");
        let prefix = format!(
            "{:<8} {:>12} {:>12} {:>8} {:>5} {:>4} {:<6} ",
            sid.chars().take(8).collect::<String>(),
            f.size,
            f.offset,
            f.lines,
            f.diagnostics,
            f.generation,
            f.state,
        );
        writeln!(out, "{}", table::line_left(&prefix, &f.path))?;
    }
    Ok(())
}

/// `gleaner diagnostics`: when, where (path:line), what, and the detail.
pub fn print_diagnostics(rows: &[DiagnosticListing], json: bool) -> std::io::Result<()> {
    if json {
        return print_json(rows);
    }
    let mut out = std::io::stdout().lock();
    for d in rows {
        // The path is cut from the left to at most half the width; the detail fills the rest.
        let place = format!("{}:{}", d.path, d.line_no);
        let place = match table::width() {
            Some(w) => table::fit_left(&place, (w / 2).max(16)),
            None => place,
        };
        let prefix = format!(
            "{} {place} {} ({} bytes)",
            when(Some(&d.created_at)),
            d.kind,
            d.byte_len,
        );
        let detail = d
            .detail
            .as_deref()
            .map(|x| format!(": {}", first_line(x)))
            .unwrap_or_default();
        writeln!(out, "{}", table::line(&prefix, &detail))?;
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
            _ => crate::text::summary_preview(r.text.as_deref().unwrap_or("")).to_string(),
        };
        let prefix = format!(
            "{} [{}] {:<16} ",
            when(r.timestamp.as_deref()),
            short_id(&r.session_id),
            r.kind,
        );
        writeln!(out, "{}", table::line(&prefix, &detail))?;
    }
    Ok(())
}

/// A denial as one line: what was denied and the reason typed (`denied Bash rm -rf build:
/// not now`).
pub fn denial_text(r: &FeedbackListing) -> String {
    let what = match (&r.tool_name, &r.tool_target) {
        (Some(n), Some(t)) => format!(" {n} {}", first_line(t)),
        (Some(n), None) => format!(" {n}"),
        _ => String::new(),
    };
    match &r.reason {
        Some(reason) => format!("denied{what}: {}", first_line(reason)),
        None => format!("denied{what}"),
    }
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
        let text = match &r.feedback_type[..] {
            "tool_denial" => denial_text(r),
            _ => first_line(&r.content).to_string(),
        };
        let prefix = format!(
            "{} [{}] {:<12} ",
            when(r.timestamp.as_deref()),
            who,
            r.feedback_type,
        );
        writeln!(out, "{}", table::line(&prefix, &text))?;
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
    // This machine's figures first, then the store's (all machines): a shared store's totals
    // are not this machine's work.
    writeln!(out, "this machine {} (user {}):", r.machine, r.user)?;
    writeln!(
        out,
        "files {}  since start: {:.1} MB committed ({:.1} MB read), {} lines, {} messages, {} diagnostics, {} batches, {} errors",
        r.files,
        r.bytes as f64 / 1e6,
        r.read_bytes as f64 / 1e6,
        r.lines,
        r.messages,
        r.diagnostics,
        r.batches,
        r.errors
    )?;
    writeln!(
        out,
        "watching  {}   database {}   rate {:.2} MB/s over the last minute",
        r.watch_mode,
        r.database_state,
        r.ingest_rate_bytes_per_sec / 1e6
    )?;
    if let Some(e) = &r.last_error {
        writeln!(out, "last error {} ({}): {}", e.at, e.what, e.message)?;
    }
    if r.outages + r.reloads > 0 {
        writeln!(
            out,
            "outages   {} database outages since start ({} failed retries)   reloads {}",
            r.outages, r.failed_retries, r.reloads
        )?;
    }
    if let Some(f) = &r.figures {
        writeln!(
            out,
            "backlog   {:.1} MB behind",
            f.bytes_behind as f64 / 1e6
        )?;
        writeln!(out, "the store (all machines):")?;
        writeln!(
            out,
            "sessions  {} active, {} finished",
            f.sessions_active, f.sessions_finished
        )?;
        let rows: Vec<String> = f.rows.iter().map(|(k, v)| format!("{v} {k}")).collect();
        writeln!(out, "rows      {}", rows.join(", "))?;
        if !f.redactions.is_empty() {
            let red: Vec<String> = f
                .redactions
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            writeln!(out, "redacted  {}", red.join(", "))?;
        }
        if f.rules.older > 0 {
            writeln!(
                out,
                "rules     {} sessions read by older rules ({} archived: derived again in the \
                 background)",
                f.rules.older, f.rules.archived
            )?;
        }
        let a = &f.archive;
        if a.files > 0 {
            writeln!(
                out,
                "archive   {} files, {:.1} MB of transcripts in {:.1} MB ({:.1} MB waiting to \
                 be packed)",
                a.files,
                a.raw_bytes as f64 / 1e6,
                a.stored_bytes as f64 / 1e6,
                a.waiting_bytes as f64 / 1e6
            )?;
            if a.unarchived_bytes > 0 {
                writeln!(
                    out,
                    "          {:.1} MB read but not archived yet (read again from their \
                     transcripts and archived once, straight into blocks)",
                    a.unarchived_bytes as f64 / 1e6
                )?;
            }
        }
    }
    if let Some(t) = &r.today {
        let cost = t
            .cost_usd
            .map_or_else(|| "cost unknown".to_string(), |c| format!("${c:.2}"));
        writeln!(
            out,
            "today     {} tokens ({} in, {} out, {} cache write, {} cache read), {} messages, {cost}",
            t.tokens.iter().sum::<i64>(),
            t.tokens[0],
            t.tokens[1],
            t.tokens[2],
            t.tokens[3],
            t.messages
        )?;
    }
    if r.refined + r.refine_failed > 0 {
        writeln!(
            out,
            "refine    {} episodes refined, {} failed runs",
            r.refined, r.refine_failed
        )?;
    }
    Ok(())
}

pub(super) fn short_id(id: &str) -> String {
    id.chars().take(8).collect()
}

/// `YYYY-MM-DD HH:MM` of an ISO timestamp (16 columns), blank if unknown.
fn when(ts: Option<&str>) -> String {
    let t = ts
        .map(|t| t.get(..16).unwrap_or(t).replace('T', " "))
        .unwrap_or_default();
    format!("{t:<16}")
}

/// Table columns: id, created, type, title, session, lines.
pub fn print_snippets(page: &SnippetPage, offset: u32, json: bool) -> std::io::Result<()> {
    if json {
        return print_json(page);
    }
    if page.snippets.is_empty() {
        if page.total_count > 0 {
            eprintln!(
                "no snippets at offset {offset} ({} {})",
                page.total_count,
                matches(page.total_count)
            );
        } else {
            eprintln!("no snippets");
        }
        return Ok(());
    }
    let id_width = page
        .snippets
        .iter()
        .map(|s| s.id.to_string().len())
        .max()
        .unwrap_or(2)
        .max(2);
    let lines: Vec<String> = page
        .snippets
        .iter()
        .map(|s| format!("{}-{}", s.line_start, s.line_end))
        .collect();
    let lines_width = lines.iter().map(String::len).max().unwrap_or(5).max(5);
    let width = super::table::width();
    // The title comes last and takes what is left of the terminal (all of it when piped).
    let title_width = width.map(|w| {
        w.saturating_sub(id_width + 16 + 18 + 8 + lines_width + 5)
            .max(10)
    });
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:>id_width$} {:<16} {:<18} {:<8} {:<lines_width$} TITLE",
        "ID", "CREATED", "TYPE", "SESSION", "LINES"
    )?;
    for (s, l) in page.snippets.iter().zip(&lines) {
        let title = first_line(&s.title);
        let title = match title_width {
            Some(w) => super::table::fit(title, w),
            None => title.to_string(),
        };
        writeln!(
            out,
            "{:>id_width$} {:<16} {:<18} {:<8} {:<lines_width$} {title}",
            s.id,
            when(Some(&s.created_at)),
            s.snippet_type,
            short_id(&s.session_id),
            l
        )?;
    }
    drop(out);
    let first = u64::from(offset) + 1;
    let last = u64::from(offset) + page.snippets.len() as u64;
    eprintln!(
        "snippets {first}-{last} of {}{}{}",
        page.total_count,
        if page.total_count_exact { "" } else { "+" },
        if page.has_more {
            format!(" (next page: --offset {last})")
        } else {
            String::new()
        }
    );
    Ok(())
}

/// Table columns: session, #ordinal, lines, turns, status, label, confidence, title; then one
/// indented line per evidence item.
pub fn print_episodes(rows: &[EpisodeListing], json: bool) -> std::io::Result<()> {
    if json {
        return print_json(rows);
    }
    if rows.is_empty() {
        eprintln!("no episodes");
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<8} {:>4} {:<13} {:>5} {:<6} {:<16} {:>4} TITLE",
        "SESSION", "#", "LINES", "TURNS", "STATUS", "LABEL", "CONF"
    )?;
    for e in rows {
        let prefix = format!(
            "{:<8} {:>4} {:<13} {:>5} {:<6} {:<16} {:>4.2} ",
            short_id(&e.session_id),
            format!("#{}", e.ordinal),
            format!("{}-{}", e.start_line, e.end_line),
            e.turns,
            e.status,
            e.triage,
            e.confidence,
        );
        let title = first_line(e.title.as_deref().unwrap_or("(no title)"));
        writeln!(out, "{}", table::line(&prefix, title))?;
        // The other labels its turns hold, with the turns that hold them.
        for t in e.turn_labels.as_array().into_iter().flatten() {
            let label = t["triage"].as_str().unwrap_or("?");
            if label != "routine" && label != e.triage {
                writeln!(
                    out,
                    "         turn {} (L{}-{}): {label} {:.2}",
                    t["ordinal"],
                    t["start_line"],
                    t["end_line"],
                    t["confidence"].as_f64().unwrap_or(0.0)
                )?;
            }
        }
        let room = table::width().map_or(100, |w| w.saturating_sub(9).max(20));
        for item in crate::query::Evidence::list(&e.evidence) {
            writeln!(out, "         {}", table::fit(&item.line_text(room), room))?;
        }
    }
    Ok(())
}

/// `gleaner search`: per result a header line (kind, session, time, where) and the excerpt,
/// matches in bold on a terminal and between `[` `]` otherwise.
pub fn print_search(page: &SearchPage, offset: u32, json: bool) -> std::io::Result<()> {
    if json {
        return print_json(page);
    }
    if page.results.is_empty() {
        if page.total_count > 0 {
            eprintln!(
                "no results at offset {offset} ({} {})",
                page.total_count,
                matches(page.total_count)
            );
        } else {
            eprintln!("no results");
        }
        return Ok(());
    }
    let (open, close) = if std::io::stdout().is_terminal() {
        ("\x1b[1m", "\x1b[0m")
    } else {
        ("[", "]")
    };
    let mut out = std::io::stdout().lock();
    for h in &page.results {
        let place = match (&h.source_file, h.line) {
            (Some(f), Some(l)) => format!("{f}:{l}"),
            (Some(f), None) => f.clone(),
            _ => String::new(),
        };
        let width = table::width();
        // The project (a folder name) and the file's path are cut from the left: their ends
        // (the project's last folders, the file's name and line) say the most.
        let project = h.project.as_deref().unwrap_or("-");
        let project = match width {
            Some(w) => table::fit_left(project, (w / 4).max(12)),
            None => project.to_string(),
        };
        let head = format!(
            "{:<8} [{}] {} {:>6.2} {project} ",
            h.kind.as_str(),
            short_id(&h.session_id),
            when(h.timestamp.as_deref()),
            h.score,
        );
        writeln!(out, "{}", table::line_left(&head, &place))?;
        // A tool hit says its tool's name first: `Bash: npm test ...`. A call's document
        // already opens with it (its name is searched too), so it is not said twice.
        let text = match &h.tool {
            Some(t) if !starts_with_word(&h.excerpt, t) => {
                format!("{t}: {}", h.marked(open, close))
            }
            _ => h.marked(open, close),
        };
        for l in table::wrap(&text, "    ", width) {
            writeln!(out, "{l}")?;
        }
    }
    drop(out);
    let first = u64::from(offset) + 1;
    let last = u64::from(offset) + page.results.len() as u64;
    eprintln!(
        "results {first}-{last} of {}{}{}",
        page.total_count,
        if page.total_count_exact { "" } else { "+" },
        if page.has_more {
            format!(" (next page: --offset {last})")
        } else {
            String::new()
        }
    );
    Ok(())
}

/// `gleaner ingest` summary.
pub fn print_ingest(s: &IngestSummary, json: bool) -> std::io::Result<()> {
    if json {
        return print_json(s);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{} {}, {:.1} MB, {} {}, {} {}, {} {} in {:.2} s ({:.1} MB/s{})",
        s.files,
        table::noun(s.files as i64, "file"),
        s.bytes as f64 / 1e6,
        s.lines,
        table::noun(s.lines as i64, "line"),
        s.rows,
        table::noun(s.rows as i64, "row"),
        s.diagnostics,
        table::noun(s.diagnostics as i64, "diagnostic"),
        s.seconds,
        s.mb_per_s,
        s.peak_rss_bytes
            .map(|b| format!(", peak RSS {:.0} MB", b as f64 / 1e6))
            .unwrap_or_default()
    )?;
    if s.archived_bytes > 0 {
        writeln!(
            out,
            "archived {:.1} MB of finished transcripts straight into blocks in {:.2} s (of the \
             above; searchable before)",
            s.archived_bytes as f64 / 1e6,
            s.archive_seconds
        )?;
    }
    if s.errors > 0 {
        writeln!(
            out,
            "{} {} (see log)",
            s.errors,
            table::noun(s.errors as i64, "error")
        )?;
    }
    Ok(())
}

/// "match" or "matches", for a count.
fn matches(n: i64) -> &'static str {
    if n == 1 {
        "match"
    } else {
        "matches"
    }
}

/// Whether `text` opens with `word` as a whole word (what follows it is not part of a name).
fn starts_with_word(text: &str, word: &str) -> bool {
    text.strip_prefix(word)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_name_said_once() {
        assert!(starts_with_word("Bash git status", "Bash"));
        assert!(starts_with_word("Bash\ngit status", "Bash"));
        assert!(!starts_with_word("Bashful output", "Bash"));
        assert!(!starts_with_word("error: Bash", "Bash"));
    }

    #[test]
    fn ellipsis() {
        assert_eq!(ellipsize("short", 80), "short");
        let long = "x".repeat(100);
        let cut = ellipsize(&long, 80);
        assert_eq!(cut.chars().count(), 80);
        assert!(cut.ends_with("..."));
    }

    #[test]
    fn when_cuts_to_minutes() {
        assert_eq!(
            when(Some("2026-01-31T12:34:56.789Z")).trim_end(),
            "2026-01-31 12:34"
        );
        assert_eq!(when(Some("2026")).trim_end(), "2026");
    }
}
