//! The sessions table of `gleaner sessions`: one row per session with its start (local time),
//! duration, place, counts, status and title, fitted to the terminal by display width.

use std::io::Write;

use super::output::{print_json, short_id};
use super::table;
use crate::query::store::SessionListing;
use crate::text::first_line;

/// `gleaner sessions`: the table, or the JSON array.
pub fn print_sessions(sessions: &[SessionListing], json: bool) -> std::io::Result<()> {
    if json {
        return print_json(sessions);
    }
    if sessions.is_empty() {
        return Ok(());
    }
    let width = table::width();
    let rows: Vec<SessionRow> = sessions.iter().map(SessionRow::of).collect();
    let mut out = std::io::stdout().lock();
    for line in session_table(&rows, width) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// One session as the cells of its row.
struct SessionRow {
    id: String,
    started: Option<String>,
    duration: String,
    project: String,
    /// `user@machine` (machines joined by `,` when several hold it).
    who: String,
    messages: String,
    feedback: String,
    snippets: String,
    status: String,
    title: String,
}

impl SessionRow {
    fn of(s: &SessionListing) -> SessionRow {
        let ms = s.duration_ms.or_else(|| {
            let t = |v: Option<&str>| v.and_then(|v| chrono::DateTime::parse_from_rfc3339(v).ok());
            Some(
                (t(s.last_activity_at.as_deref())? - t(s.started_at.as_deref())?)
                    .num_milliseconds(),
            )
        });
        // The working directory says where; the project folder name is its encoded form.
        let place = s.cwd.clone().unwrap_or_else(|| s.project.clone());
        let place = match std::env::var("HOME") {
            Ok(home) if !home.is_empty() && place.starts_with(&home) => {
                format!("~{}", &place[home.len()..])
            }
            _ => place,
        };
        SessionRow {
            id: short_id(&s.session_id),
            started: s.started_at.clone(),
            duration: ms.map(table::duration).unwrap_or_default(),
            project: place,
            who: who(s),
            messages: s.messages.to_string(),
            feedback: s.feedback.total().to_string(),
            snippets: s.snippets.to_string(),
            status: s.status.clone(),
            title: first_line(s.title.as_deref().unwrap_or("(empty)")).to_string(),
        }
    }
}

/// `user@machine`: who a session came from and where it is held.
fn who(s: &SessionListing) -> String {
    let machines = if s.machines.is_empty() {
        s.machine.clone()
    } else {
        s.machines.join(",")
    };
    match s.user.as_deref().filter(|u| !u.is_empty()) {
        Some(u) => format!("{u}@{machines}"),
        None => machines,
    }
}

/// The lines of the sessions table within `width` columns (`None`: no limit). Narrower than
/// 100 columns the dates lose their year; narrower than 80 the project and the feedback and
/// snippet counts go; the title takes what is left, cut with `…` by display width. A `WHO`
/// column (`user@machine`) appears when the rows come from more than one user or machine (a
/// shared store): on one laptop it would say the same thing on every line.
fn session_table(rows: &[SessionRow], width: Option<usize>) -> Vec<String> {
    let w = width.unwrap_or(usize::MAX);
    let short = w < 100;
    let wide = w >= 80;
    let started: Vec<String> = rows
        .iter()
        .map(|r| table::local_time(r.started.as_deref(), short))
        .collect();
    let col = |head: &str, cells: &mut dyn Iterator<Item = &str>| {
        cells
            .map(table::cells)
            .chain([table::cells(head)])
            .max()
            .unwrap_or(0)
    };
    let w_start = col("STARTED", &mut started.iter().map(String::as_str));
    let w_dur = col("DUR", &mut rows.iter().map(|r| r.duration.as_str()));
    let w_msg = col("MSGS", &mut rows.iter().map(|r| r.messages.as_str()));
    let w_fb = col("FB", &mut rows.iter().map(|r| r.feedback.as_str()));
    let w_snip = col("SNIP", &mut rows.iter().map(|r| r.snippets.as_str()));
    let w_status = col("STATUS", &mut rows.iter().map(|r| r.status.as_str()));
    let fixed = 8 + 1 + w_start + 1 + w_dur + 1 + w_msg + 1 + w_status + 1;
    let fixed = if wide {
        fixed + w_fb + 1 + w_snip + 1
    } else {
        fixed
    };
    let team = wide && rows.iter().any(|r| r.who != rows[0].who);
    let w_who = if team {
        col("WHO", &mut rows.iter().map(|r| r.who.as_str())).min(24)
    } else {
        0
    };
    let fixed = if team { fixed + w_who + 1 } else { fixed };
    let left = w.saturating_sub(fixed);
    // The project gets at most a third of what is left (and what it needs); the title the rest.
    let w_proj = if wide {
        col("PROJECT", &mut rows.iter().map(|r| r.project.as_str()))
            .min(left / 3)
            .max(7)
    } else {
        0
    };
    let w_title = left
        .saturating_sub(if wide { w_proj + 1 } else { 0 })
        .max(5);
    let line = |id: &str,
                st: &str,
                dur: &str,
                proj: &str,
                who: &str,
                msg: &str,
                fb: &str,
                snip: &str,
                status: &str,
                title: &str| {
        let mut l = format!(
            "{} {} {} ",
            table::pad(id, 8),
            table::pad(st, w_start),
            table::pad_left(dur, w_dur),
        );
        if wide {
            l.push_str(&table::pad(&table::fit_left(proj, w_proj), w_proj));
            l.push(' ');
        }
        if team {
            l.push_str(&table::pad(&table::fit(who, w_who), w_who));
            l.push(' ');
        }
        l.push_str(&table::pad_left(msg, w_msg));
        l.push(' ');
        if wide {
            l.push_str(&table::pad_left(fb, w_fb));
            l.push(' ');
            l.push_str(&table::pad_left(snip, w_snip));
            l.push(' ');
        }
        l.push_str(&table::pad(status, w_status));
        l.push(' ');
        l.push_str(&if width.is_some() {
            table::fit(title, w_title)
        } else {
            title.to_string()
        });
        l.trim_end().to_string()
    };
    let mut lines = vec![line(
        "ID", "STARTED", "DUR", "PROJECT", "WHO", "MSGS", "FB", "SNIP", "STATUS", "TITLE",
    )];
    for (r, st) in rows.iter().zip(&started) {
        lines.push(line(
            &r.id,
            st,
            &r.duration,
            &r.project,
            &r.who,
            &r.messages,
            &r.feedback,
            &r.snippets,
            &r.status,
            &r.title,
        ));
    }
    lines
}
