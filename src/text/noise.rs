//! Text that is scaffolding rather than content: markdown labels, box drawings, table borders
//! and rows, bracketed numbered lists, step headers of prompt frameworks.
//!
//! Why here, in the text leaf: the same rules decide which lines of a tool output are kept
//! ([`super::cut_tool_output`], [`super::headline`]), which assistant texts the episode builder
//! remembers as tried, which lines a drafted snippet drops, and which snippets may be stored at
//! all (`snippet::validate`); one copy keeps them agreeing, and none of those modules has to
//! import another for it.

/// Step headers of prompt frameworks, rejected as whole candidates.
const STEP_HEADERS: &[&str] = &[
    "phase", "observe", "think", "plan", "build", "execute", "verify", "learn",
];

/// Why `text` is noise rather than content, or `None` when it passes the gates:
/// markdown labels (`**Label**:`), box-drawing runs, table borders, bracketed numbered lists,
/// step headers, and anything under 20 characters after trimming, with fewer than 3 word
/// characters, or under 10 characters once `* _ # -` are stripped.
pub fn noise_reason(text: &str) -> Option<&'static str> {
    let t = text.trim();
    if t.chars().count() < 20 {
        return Some("shorter than 20 characters");
    }
    if t.chars().filter(|c| c.is_alphanumeric()).count() < 3 {
        return Some("fewer than 3 word characters");
    }
    let stripped: String = t
        .chars()
        .filter(|c| !matches!(c, '*' | '_' | '#' | '-') && !c.is_whitespace())
        .collect();
    if stripped.chars().count() < 10 {
        return Some("under 10 characters without markdown");
    }
    let lines: Vec<&str> = t.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    if lines.iter().all(|l| is_markdown_label(l)) {
        return Some("markdown label");
    }
    if lines
        .iter()
        .all(|l| is_box_drawing(l) || is_table_border(l))
    {
        return Some("box drawing or table border");
    }
    if lines.iter().all(|l| is_table_row(l) || is_table_border(l)) {
        return Some("table");
    }
    if lines.iter().all(|l| is_bracketed_numbered(l)) {
        return Some("bracketed numbered list");
    }
    if lines.iter().all(|l| is_step_header(l)) {
        return Some("step header");
    }
    None
}

/// A line that is noise on its own (dropped from a candidate before it is judged).
pub fn is_noise_line(line: &str) -> bool {
    let l = line.trim();
    !l.is_empty()
        && (is_markdown_label(l) || is_box_drawing(l) || is_table_border(l) || is_step_header(l))
}

/// `**Label**:` / `**Label:**` / `Label:` in bold with nothing after it.
fn is_markdown_label(l: &str) -> bool {
    let core = l.trim_start_matches(['#', '-', '*', ' ', '>']).trim_end();
    let core = core.trim_end_matches(['*', '_']);
    let Some(label) = core.strip_suffix(':') else {
        return l.starts_with("**") && l.ends_with("**") && l.len() < 80;
    };
    let label = label.trim_end_matches(['*', '_']).trim();
    !label.is_empty() && label.chars().count() <= 60 && (l.contains("**") || l.starts_with('#'))
}

fn is_box_char(c: char) -> bool {
    ('\u{2500}'..='\u{259F}').contains(&c)
}

/// Mostly box-drawing / block characters (`───`, `═══`, `│ x │`).
fn is_box_drawing(l: &str) -> bool {
    let total = l.chars().filter(|c| !c.is_whitespace()).count();
    let boxy = l.chars().filter(|c| is_box_char(*c)).count();
    let mut run = 0;
    let long_run = l.chars().any(|c| {
        run = if is_box_char(c) { run + 1 } else { 0 };
        run >= 3
    });
    total > 0 && (boxy * 2 >= total || long_run)
        || l.chars().filter(|c| matches!(c, '=' | '~')).count() >= 3
            && l.chars().all(|c| matches!(c, '=' | '~' | ' '))
}

/// `|---|:---:|`, `+----+----+`, `-----`.
fn is_table_border(l: &str) -> bool {
    l.len() >= 3
        && l.chars()
            .all(|c| matches!(c, '|' | '-' | ':' | '+' | ' ' | '='))
}

/// `| a | b |`.
pub(crate) fn is_table_row(l: &str) -> bool {
    l.starts_with('|') && l.ends_with('|') && l.matches('|').count() >= 3
}

/// `[1] ...`, `[2/5] ...`, `(3) ...`.
fn is_bracketed_numbered(l: &str) -> bool {
    let rest = match l.chars().next() {
        Some('[') => l.get(1..).and_then(|r| r.split_once(']')),
        Some('(') => l.get(1..).and_then(|r| r.split_once(')')),
        _ => None,
    };
    rest.is_some_and(|(n, _)| {
        !n.is_empty()
            && n.chars()
                .all(|c| c.is_ascii_digit() || c == '/' || c == '.')
    })
}

/// `Phase 2: ...`, `## OBSERVE`, `**PLAN**`, `VERIFY:`.
fn is_step_header(l: &str) -> bool {
    let core = l
        .trim_start_matches(['#', '*', '_', ' ', '>', '-'])
        .trim_end_matches(['*', '_', ' ', ':']);
    let first = core
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or("");
    let lower = first.to_ascii_lowercase();
    if !STEP_HEADERS.contains(&lower.as_str()) {
        return false;
    }
    // "Phase 1: Setup" and "PLAN" are headers; "Plan the migration so that ..." is prose.
    let words = core.split_whitespace().count();
    let upper = first.chars().all(|c| c.is_ascii_uppercase());
    words <= 2 || (words <= 6 && (lower == "phase" || upper))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates_reject_each_kind_of_noise() {
        let cases = [
            ("**Summary**:", "shorter"),
            ("**Root cause analysis of it**:", "markdown label"),
            ("## Implementation details here:", "markdown label"),
            ("────────────────────────────", "fewer than 3"),
            ("│ box │ drawing │ table │ here ─────", "box"),
            ("|------|--------|-------------|", "fewer than 3"),
            ("| col a | col b |\n|---|---|\n| one | two |", "table"),
            ("[1] first thing\n[2] second thing", "bracketed"),
            ("Phase 2: Implementation", "step header"),
            ("## OBSERVE\n**THINK**", "step header"),
            ("short text", "shorter"),
            ("!!! ??? ... ,,, ;;; ::: a", "fewer than 3"),
            ("** __ ## -- ab ** __ ## -- cd **", "under 10"),
        ];
        for (text, why) in cases {
            let got = noise_reason(text);
            assert!(
                got.is_some_and(|g| g.contains(why)),
                "{text:?}: got {got:?}, want {why}"
            );
        }
    }

    #[test]
    fn gates_accept_prose() {
        for text in [
            "The root cause was a stale lock file left by the previous run.",
            "Plan the migration so that old rows keep their ids and nothing is lost.",
            "**Root cause**: the parser assumed every line ends with a newline.",
        ] {
            assert_eq!(noise_reason(text), None, "{text}");
        }
    }
}
