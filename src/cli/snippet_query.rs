//! `gleaner snippets` and `gleaner episodes`: resolve the flags into store filters, then print a
//! table for people or JSON for programs (`{snippets, total_count, has_more}` / an array).
//!
//! An empty result is an answer, not an error: exit 0, and the table form says so on stderr so
//! that stdout stays empty for scripts.

use std::io::Write;

use anyhow::anyhow;

use super::output::ellipsize;
use super::snippets::SnippetsArgs;
use super::{parse_since, resolve_optional_prefix, value_name, Outcome, EXIT_OK};
use crate::config::Config;
use crate::store::{
    EpisodeFilter, EpisodeListing, SnippetFilter, SnippetListing, SnippetPage, Store,
};

/// Run `gleaner episodes`.
pub async fn episodes(
    cfg: &Config,
    session_prefix: Option<String>,
    triage: Option<String>,
    json: bool,
) -> Outcome {
    let store = Store::connect(&cfg.database).await?;
    let session_ids = match resolve_optional_prefix(&store, session_prefix.as_deref()).await? {
        Ok(ids) => ids,
        Err(code) => return Ok(code),
    };
    let rows = store
        .list_episodes(&EpisodeFilter {
            session_ids,
            triage,
        })
        .await?;
    print_episodes(&rows, json)?;
    Ok(EXIT_OK)
}

/// Run `gleaner snippets`.
pub async fn snippets(cfg: &Config, args: SnippetsArgs) -> Outcome {
    // Validate the times before touching the database: a typo is an error (exit 2) either way.
    let since = args.since.as_deref().map(parse_since).transpose()?;
    let until = match args.until.as_deref() {
        Some(u) => Some(parse_since(u).map_err(|_| {
            anyhow!("invalid --until {u:?}: expected a date like 2026-01-31 or an age like 7d")
        })?),
        None => None,
    };
    let store = Store::connect(&cfg.database).await?;
    let session_ids = match resolve_optional_prefix(&store, args.session.as_deref()).await? {
        Ok(ids) => ids,
        Err(code) => return Ok(code),
    };
    let filter = SnippetFilter {
        session_ids,
        snippet_type: args.snippet_type.map(value_name),
        project: args.project,
        tags: args.tags,
        keyword: args.keyword.filter(|k| !k.is_empty()),
        since,
        until,
        limit: args.limit,
        offset: args.offset,
    };
    let page = store.list_snippets(&filter).await?;
    print_snippets(&page, filter.offset, args.json)?;
    Ok(EXIT_OK)
}

fn print_json<T: serde::Serialize + ?Sized>(v: &T) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, v)?;
    writeln!(out)
}

/// First `n` characters of an id.
fn short(id: &str, n: usize) -> String {
    id.chars().take(n).collect()
}

/// First non-empty line, trimmed (titles are one line, but nothing guarantees it).
fn one_line(s: &str) -> &str {
    s.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

/// `YYYY-MM-DD HH:MM` of an ISO timestamp.
fn when(ts: &str) -> String {
    ts.get(..16).unwrap_or(ts).replace('T', " ")
}

/// Table columns: id, created, type, title, session, lines.
fn print_snippets(page: &SnippetPage, offset: u32, json: bool) -> std::io::Result<()> {
    if json {
        return print_json(page);
    }
    if page.snippets.is_empty() {
        if page.total_count > 0 {
            eprintln!(
                "no snippets at offset {offset} ({} match)",
                page.total_count
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
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:>id_width$} {:<16} {:<18} {:<60} {:<8} LINES",
        "ID", "CREATED", "TYPE", "TITLE", "SESSION"
    )?;
    for s in &page.snippets {
        write_snippet_row(&mut out, s, id_width)?;
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

fn write_snippet_row(
    out: &mut impl Write,
    s: &SnippetListing,
    id_width: usize,
) -> std::io::Result<()> {
    writeln!(
        out,
        "{:>id_width$} {:<16} {:<18} {:<60} {:<8} {}-{}",
        s.id,
        when(&s.created_at),
        s.snippet_type,
        ellipsize(one_line(&s.title), 60),
        short(&s.session_id, 8),
        s.line_start,
        s.line_end
    )
}

/// Table columns: session, #ordinal, lines, turns, status, label, confidence, title; then one
/// indented line per evidence item.
fn print_episodes(rows: &[EpisodeListing], json: bool) -> std::io::Result<()> {
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
        writeln!(
            out,
            "{:<8} {:>4} {:<13} {:>5} {:<6} {:<16} {:>4.2} {}",
            short(&e.session_id, 8),
            format!("#{}", e.ordinal),
            format!("{}-{}", e.start_line, e.end_line),
            e.turns,
            e.status,
            e.triage,
            e.confidence,
            ellipsize(one_line(e.title.as_deref().unwrap_or("(no title)")), 80)
        )?;
        for item in e.evidence.as_array().into_iter().flatten() {
            writeln!(out, "         {}", evidence_line(item))?;
        }
    }
    Ok(())
}

/// `L<line> <signal> [<label>]: <text>` of one evidence item (missing parts left out).
fn evidence_line(item: &serde_json::Value) -> String {
    let field = |k: &str| item.get(k).and_then(serde_json::Value::as_str);
    let mut s = String::new();
    if let Some(line) = item.get("line").and_then(serde_json::Value::as_i64) {
        s.push_str(&format!("L{line} "));
    }
    s.push_str(field("signal").unwrap_or("?"));
    if let Some(label) = field("label") {
        s.push_str(&format!(" [{label}]"));
    }
    if let Some(text) = field("text").map(one_line).filter(|t| !t.is_empty()) {
        s.push_str(": ");
        s.push_str(&ellipsize(text, 100));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_lines_read_what_is_there() {
        let v = serde_json::json!({"line": 12, "signal": "tool_error", "label": "error_recovery",
                                   "text": "cargo test failed\nmore"});
        assert_eq!(
            evidence_line(&v),
            "L12 tool_error [error_recovery]: cargo test failed"
        );
        assert_eq!(evidence_line(&serde_json::json!({})), "?");
    }

    #[test]
    fn when_cuts_to_minutes() {
        assert_eq!(when("2026-01-31T12:34:56.789Z"), "2026-01-31 12:34");
        assert_eq!(when("2026"), "2026");
    }
}
