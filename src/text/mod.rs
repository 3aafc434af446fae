//! Plain-text helpers shared by the stages and the doors: clipping (by characters or bytes), the
//! first line, the lines of a tool output that matter and its headline, terminal escapes
//! removed, word counts; [`sentence`] is the one sentence splitter, [`noise`] tells scaffolding
//! (markdown labels, tables, box drawings) from content.
//!
//! Why a leaf of its own: the episode stage, snippets (their gates and their drafting), the
//! triage model and the doors all cut text the same way. Kept in `snippet`, these helpers made
//! the episode stage import `snippet`, whose drafting reads the episode's state: a circle.
//! `text` imports nothing of the crate, so anything may use it.

pub mod gist;
pub mod markdown;
pub mod noise;
pub mod rule;
pub mod sentence;

use noise::is_noise_line;

/// Words that mark the lines of a tool output worth keeping. (Not "warning": in a failed
/// build or a server log, warnings crowd out the error.)
const ERROR_MARKERS: &[&str] = &[
    "error",
    "failed",
    "failure",
    "panic",
    "exception",
    "traceback",
    "cannot",
    "can't",
    "not found",
    "no such",
    "denied",
    "invalid",
    "undefined",
    "unexpected",
    "expected",
    "fatal",
    "assert",
    "exit code",
    "-->",
];

/// An error statement: `KeyError: ...`, `error[E0425]: ...`, `error: ...`, `FAILED ...`,
/// `thread 'x' panicked at ...`. `l` is trimmed.
pub(crate) fn is_error_statement(l: &str) -> bool {
    let head = l.split(':').next().unwrap_or("");
    let word = !head.is_empty() && head.len() < 40 && !head.contains(' ');
    word && (head.ends_with("Error") || head.ends_with("Exception") || head.starts_with("error"))
        || l.starts_with("FAILED ")
        || l.contains("panicked at")
}

/// The lines of a tool output that matter, at most `max_lines`, in their order: the first
/// line (tools put their summary there), the last error statement (a traceback ends with the
/// exception that was raised), the other error statements from the top, then lines naming an
/// error; each statement or naming line brings the line after it (the location or the detail).
/// Without any, the first and last lines. Omitted stretches are marked `…`.
pub fn cut_tool_output(text: &str, max_lines: usize) -> String {
    let text = strip_ansi(text);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !is_noise_line(l))
        .collect();
    if lines.len() <= max_lines {
        return lines.join("\n");
    }
    let mut keep = vec![false; lines.len()];
    let mut kept = 0;
    let mut take = |i: usize, keep: &mut [bool]| {
        if i < keep.len() && !keep[i] && kept < max_lines {
            keep[i] = true;
            kept += 1;
        }
    };
    let statements: Vec<usize> = (0..lines.len())
        .filter(|&i| is_error_statement(lines[i].trim()))
        .collect();
    let naming: Vec<usize> = (0..lines.len())
        .filter(|&i| {
            let lower = lines[i].to_ascii_lowercase();
            ERROR_MARKERS.iter().any(|m| lower.contains(m))
        })
        .collect();
    if !statements.is_empty() || !naming.is_empty() {
        take(0, &mut keep);
        if let Some(&last) = statements.last() {
            take(last, &mut keep);
            take(last + 1, &mut keep);
        }
        for &i in statements.iter().chain(&naming) {
            take(i, &mut keep);
            take(i + 1, &mut keep);
        }
    } else {
        let head = max_lines / 2;
        for i in 0..head {
            take(i, &mut keep);
        }
        for i in lines.len().saturating_sub(max_lines - head)..lines.len() {
            take(i, &mut keep);
        }
    }
    let mut out = String::new();
    let mut gap = false;
    for (l, k) in lines.iter().zip(&keep) {
        if *k {
            if gap {
                out.push_str("…\n");
            }
            gap = false;
            out.push_str(l);
            out.push('\n');
        } else {
            gap = true;
        }
    }
    if gap {
        out.push('…');
    }
    out.trim_end().to_string()
}

/// `s` without terminal escape sequences (colours, cursor moves): tool outputs captured from
/// a terminal are full of them, and they are unreadable once stored.
pub fn strip_ansi(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains('\u{1b}') {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('[') => {
                chars.next();
                // CSI: parameters and intermediates, then one final byte in @..~.
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                // OSC: up to BEL or ESC \.
                for c in chars.by_ref() {
                    if c == '\u{7}' || c == '\\' {
                        break;
                    }
                }
            }
            Some(_) => {
                chars.next();
            }
            None => {}
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The line of an error text that says most: an error statement (`KeyError: ...`,
/// `error[E0425]: ...`, `FAILED ...`, `panicked at ...`), else a line naming an error or a
/// failure (strong words before weak ones: "failed" says more than "can't"), else the first
/// line of a few words that is not an exit status; tool-error tags, decoration (box drawing,
/// prompt arrows) and terminal escapes removed, log-level warnings and infos passed over.
pub fn headline(error: &str) -> String {
    let clean = |l: &str| {
        let decoration = |c: char| matches!(c, '=' | '-' | '_' | '*' | '#');
        l.replace("<tool_use_error>", "")
            .replace("</tool_use_error>", "")
            .trim_start_matches(|c: char| {
                !(c.is_alphanumeric() || "'\"`([{<$~/.".contains(c)) || decoration(c)
            })
            .trim_end_matches(|c: char| {
                !(c.is_alphanumeric() || "'\"`)]}>.!?".contains(c)) || decoration(c)
            })
            .trim_start_matches("Error: ")
            .trim()
            .to_string()
    };
    // Progress output rewrites its line with `\r` ("Rebasing (1/22)\rRebasing (2/22)").
    let text = strip_ansi(error).replace('\r', "\n");
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !is_noise_line(l) && !l.trim_start().starts_with('│'))
        .map(clean)
        .filter(|l| l.chars().filter(|c| c.is_alphanumeric()).count() >= 3 && l != "…")
        .collect();
    let not_status = |l: &&String| {
        let lower = l.to_ascii_lowercase();
        !lower.starts_with("exit code")
            && !lower.starts_with("exit status")
            && !lower.contains("passed")
            && !lower.starts_with("traceback")
    };
    let not_minor = |l: &&String| {
        let lower = l.to_ascii_lowercase();
        // A log line's level may follow a timestamp ("2026/02/09 17:45:04 INFO ...").
        let head: String = lower.chars().take(40).collect();
        !["warn", "info", "debug", "note:", "hint:"]
            .iter()
            .any(|p| lower.starts_with(p))
            && ![" info ", " warn ", " debug ", "level=info", "level=warn"]
                .iter()
                .any(|p| head.contains(p))
    };
    // Whole words only: `failed_branches=0` names no failure.
    let naming = |words: &'static [&'static str]| {
        move |l: &&String| {
            let lower = l.to_ascii_lowercase();
            lower
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .filter(|t| !t.contains('_'))
                .any(|t| words.iter().any(|m| t.contains(m)))
        }
    };
    const STRONG: &[&str] = &["error", "fail", "fatal", "panic", "exception"];
    const WEAK: &[&str] = &[
        "not found",
        "cannot",
        "can't",
        "denied",
        "refused",
        "no such",
        "does not exist",
        "unable to",
    ];
    let candidates = || lines.iter().filter(not_status).filter(not_minor);
    candidates()
        .find(|l| is_error_statement(l))
        .or_else(|| candidates().find(naming(STRONG)))
        .or_else(|| candidates().find(naming(WEAK)))
        .or_else(|| candidates().find(|l| l.split_whitespace().count() >= 4))
        .or_else(|| lines.iter().find(not_status))
        .or_else(|| lines.first())
        .cloned()
        .unwrap_or_default()
}

/// `s` trimmed and cut to at most `max` characters, with `…` when cut (stored text).
pub fn clip_chars(s: &str, max: usize) -> String {
    clip(s.trim(), max, "…")
}

/// `s` cut to at most `max` characters, the last of them `marker` when cut.
pub fn clip(s: &str, max: usize, marker: &str) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let keep = max.saturating_sub(marker.chars().count());
    let mut t: String = s.chars().take(keep).collect();
    t.push_str(marker);
    t
}

/// The first non-empty line of `s`, trimmed.
pub fn first_line(s: &str) -> &str {
    s.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

/// A line that says what a compaction summary is about: the line after its "Primary Request
/// and Intent" heading when it has one, else its first line that is not Claude Code's
/// boilerplate ("This session is being continued from a previous conversation...", headings
/// such as "Analysis:", "Let me analyze the conversation chronologically"). Every compaction
/// starts with the same sentence, so a listing of them showed the same line over and over.
pub fn summary_preview(text: &str) -> &str {
    let lines = || text.lines().map(str::trim).filter(|l| !l.is_empty());
    if let Some(i) = text.find("Primary Request and Intent") {
        let after = &text[i..];
        if let Some(l) = after.lines().skip(1).map(str::trim).find(|l| !l.is_empty()) {
            return l.trim_start_matches(['-', '*', ' ']);
        }
    }
    let boilerplate = |l: &str| {
        let bare = l
            .trim_matches(['*', '#', ' ', ':', '<', '>', '/'])
            .to_ascii_lowercase();
        l.starts_with("This session is being continued")
            || matches!(bare.as_str(), "analysis" | "summary")
            || (bare.starts_with("let me") && bare.contains("analy"))
    };
    lines()
        .find(|l| !boilerplate(l))
        .unwrap_or_else(|| first_line(text))
}

/// The first `max` bytes of `s`, on a character boundary (fewer when `max` falls inside one).
pub fn head_bytes(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// `s` cut to at most `max` bytes on a character boundary, with `…` when cut.
pub fn truncate_bytes(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    format!("{}…", head_bytes(s, max.saturating_sub('…'.len_utf8())))
}

/// Words in a text (runs of non-whitespace holding a letter or digit).
pub fn word_count(s: &str) -> usize {
    s.split_whitespace()
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .count()
}

/// `1234567` as `1,234,567`: a count for people (every door shows counts alike).
pub fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

#[cfg(test)]
mod tests;
