//! Terminal cells: the width a table may take and text cut or padded by *display* width (a
//! CJK character or most emoji take two columns, a combining mark none), so that columns stay
//! aligned whatever the titles hold. Widths come from `unicode-width`.

use std::io::IsTerminal;

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// The columns a table may fill: `$COLUMNS` when set (a person's override, and how tests ask
/// for a width), else the terminal's width when stdout is one; `None` (no limit) when piped,
/// so that a script gets whole values.
pub fn width() -> Option<usize> {
    if let Some(n) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
    {
        return Some(n);
    }
    if !std::io::stdout().is_terminal() {
        return None;
    }
    terminal_size::terminal_size_of(std::io::stdout()).map(|(w, _)| usize::from(w.0))
}

/// `prefix` then `text`, the line cut with `…` to the terminal's width (the text first: a
/// table row never wraps); whole when there is no width (piped).
pub fn line(prefix: &str, text: &str) -> String {
    match width() {
        Some(w) => fit(&format!("{prefix}{text}"), w),
        None => format!("{prefix}{text}"),
    }
}

/// `prefix` then `path`, the path cut from the left to what the terminal has left (its end, the
/// file's name, says the most); whole when there is no width.
pub fn line_left(prefix: &str, path: &str) -> String {
    match width() {
        Some(w) => format!(
            "{prefix}{}",
            fit_left(path, w.saturating_sub(cells(prefix)).max(10))
        ),
        None => format!("{prefix}{path}"),
    }
}

/// `text` wrapped at white space into lines of at most `max` columns after `indent` (a word
/// longer than a line is cut into pieces); ANSI escape sequences (`ESC [ ... m`) take no
/// columns. One line when there is no width.
pub fn wrap(text: &str, indent: &str, max: Option<usize>) -> Vec<String> {
    let Some(max) = max else {
        return vec![format!("{indent}{text}")];
    };
    let room = max.saturating_sub(cells(indent)).max(10);
    let mut lines = Vec::new();
    let (mut cur, mut used) = (String::new(), 0usize);
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let w = visible_cells(word);
        if used > 0 && used + 1 + w > room {
            lines.push(std::mem::take(&mut cur));
            used = 0;
        }
        if w > room {
            // A word wider than a line: in pieces.
            for c in word.chars() {
                let cw = c.width().unwrap_or(0);
                if used + cw > room {
                    lines.push(std::mem::take(&mut cur));
                    used = 0;
                }
                cur.push(c);
                used += cw;
            }
            continue;
        }
        if used > 0 {
            cur.push(' ');
            used += 1;
        }
        cur.push_str(word);
        used += w;
    }
    if !cur.is_empty() || lines.is_empty() {
        lines.push(cur);
    }
    lines.into_iter().map(|l| format!("{indent}{l}")).collect()
}

/// `one` for one thing, its plural (an `s` added) for any other number: "1 turn", "2 turns".
pub fn noun(n: i64, one: &str) -> String {
    if n == 1 {
        one.to_string()
    } else {
        format!("{one}s")
    }
}

/// Display width of `s`, ANSI escape sequences left out.
fn visible_cells(s: &str) -> usize {
    let mut n = 0;
    let mut escape = false;
    for c in s.chars() {
        match (escape, c) {
            (false, '\x1b') => escape = true,
            (true, 'm') => escape = false,
            (true, _) => {}
            (false, c) => n += c.width().unwrap_or(0),
        }
    }
    n
}

/// Display width of `s`.
pub fn cells(s: &str) -> usize {
    s.width()
}

/// `s` cut to at most `max` columns, ending with `…` when cut.
pub fn fit(s: &str, max: usize) -> String {
    if cells(s) <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > max - 1 {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// `s` cut from the left to at most `max` columns, starting with `…` when cut (the end of a
/// path says more than its start).
pub fn fit_left(s: &str, max: usize) -> String {
    if cells(s) <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut kept = Vec::new();
    let mut used = 0;
    for c in s.chars().rev() {
        let w = c.width().unwrap_or(0);
        if used + w > max - 1 {
            break;
        }
        kept.push(c);
        used += w;
    }
    std::iter::once('…').chain(kept.into_iter().rev()).collect()
}

/// `s` padded with spaces to `w` columns (left-aligned; never cut).
pub fn pad(s: &str, w: usize) -> String {
    let n = cells(s);
    if n >= w {
        return s.to_string();
    }
    format!("{s}{}", " ".repeat(w - n))
}

/// `s` padded on the left to `w` columns (right-aligned numbers).
pub fn pad_left(s: &str, w: usize) -> String {
    let n = cells(s);
    if n >= w {
        return s.to_string();
    }
    format!("{}{s}", " ".repeat(w - n))
}

/// A stored ISO time in the local zone: `YYYY-MM-DD HH:MM`, or `MM-DD HH:MM` when `short`;
/// the text as stored when it does not parse.
pub fn local_time(ts: Option<&str>, short: bool) -> String {
    let Some(ts) = ts else {
        return String::new();
    };
    match chrono::DateTime::parse_from_rfc3339(ts) {
        Ok(t) => t
            .with_timezone(&chrono::Local)
            .format(if short {
                "%m-%d %H:%M"
            } else {
                "%Y-%m-%d %H:%M"
            })
            .to_string(),
        Err(_) => ts.chars().take(16).collect(),
    }
}

/// A duration for people: `45s`, `12m`, `3h05m`, `2d04h`.
pub fn duration(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86_400 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d{:02}h", s / 86_400, s % 86_400 / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_characters_take_two_columns() {
        assert_eq!(cells("日本語"), 6);
        assert_eq!(fit("日本語のタイトル", 7), "日本語…");
        assert_eq!(cells(&fit("日本語のタイトル", 8)), 7);
        assert_eq!(pad("日本", 6), "日本  ");
        assert_eq!(fit("short", 10), "short");
        assert_eq!(fit_left("/home/u/projects/gleaner", 10), "…s/gleaner");
        assert!(cells(&fit_left("/家/项目/很长的名字", 9)) <= 9);
    }

    #[test]
    fn durations_read_at_a_glance() {
        assert_eq!(duration(45_000), "45s");
        assert_eq!(duration(12 * 60_000 + 5), "12m");
        assert_eq!(duration(3 * 3_600_000 + 5 * 60_000), "3h05m");
        assert_eq!(duration(50 * 3_600_000), "2d02h");
    }
}
