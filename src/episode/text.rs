//! Small text cuts the builder keeps: the first line of a prompt, the sentence or paragraph
//! around a phrase, and whether a phrase sits in prose at all.

use super::PIECE_BYTES;
pub(super) use crate::snippet::text::first_line;

/// The first `max` bytes of `s`, on a character boundary.
pub(super) fn head_bytes(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Whether byte `at` of an assistant text is prose: not inside a code fence, a table row, a
/// heading or a quoted line (a phrase there is an example or a label, not a statement).
pub(super) fn in_prose(text: &str, at: usize) -> bool {
    let before = &text[..at];
    if before.matches("```").count() % 2 == 1 {
        return false;
    }
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].trim_start();
    !(line.starts_with('|') || line.starts_with('#') || line.starts_with('>'))
}

pub(super) use crate::snippet::sentence::sentence_around;

/// The blank-line-delimited paragraph holding byte `at`; a short one (a header, a label) takes
/// the next paragraph too, and with `previous` the paragraph before it (the problem a decision
/// answers). At most [`PIECE_BYTES`].
pub(super) fn paragraph_around(text: &str, at: usize, previous: bool) -> String {
    let mut from = text[..at].rfind("\n\n").map_or(0, |i| i + 2);
    if previous && from >= 2 {
        from = text[..from - 2].rfind("\n\n").map_or(0, |i| i + 2);
    }
    let mut to = text[at..].find("\n\n").map_or(text.len(), |i| at + i);
    if to - from < 160 && to < text.len() {
        to = text[to + 2..]
            .find("\n\n")
            .map_or(text.len(), |i| to + 2 + i);
    }
    crate::snippet::truncate_bytes(text[from..to].trim(), PIECE_BYTES)
}

/// The first of two or more labelled alternatives laid out in a text, one per line: "A) ...",
/// "**B)** ...", "Option 1: ...", "### Approach 2 - ...". A numbered list is steps, not options.
pub(super) fn laid_out_option(text: &str) -> Option<&str> {
    let mut labels: Vec<String> = Vec::new();
    let mut first = None;
    let mut fenced = false;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let bare = t
            .trim_start_matches(['-', '*', '#', '>', ' '])
            .trim_start_matches("**");
        let lower = bare.to_lowercase();
        let label = ["option ", "approach ", "choice "]
            .iter()
            .find_map(|w| lower.strip_prefix(w))
            .and_then(|rest| rest.split(|c: char| !c.is_alphanumeric()).next())
            .filter(|l| l.len() == 1)
            .map(str::to_string)
            .or_else(|| {
                let mut cs = bare.chars();
                match (cs.next(), cs.next()) {
                    (Some(c), Some(')')) if c.is_ascii_uppercase() => Some(c.to_string()),
                    _ => None,
                }
            });
        if let Some(l) = label {
            if !labels.contains(&l) {
                labels.push(l);
                first.get_or_insert(t);
            }
        }
    }
    first.filter(|_| labels.len() >= 2)
}

/// The first line of a prompt that reads as pasted error output (`Traceback`, `error: ...`,
/// `KeyError: ...`, `command not found`, `fatal: ...`), if any.
pub(super) fn pasted_failure(head: &str) -> Option<&str> {
    head.lines().map(str::trim).find(|l| {
        let lower = l.to_ascii_lowercase();
        crate::snippet::text::is_error_statement(l)
            || lower.starts_with("traceback")
            || lower.starts_with("fatal:")
            || lower.contains("command not found")
            || lower.contains("no such file or directory")
            || lower.contains("missing destination file")
    })
}

/// Whether `text` ends by asking: one of its last three lines of prose is a question ("Which
/// would you prefer?" followed by the options).
pub(super) fn ends_with_question(text: &str) -> bool {
    text.lines()
        .rev()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("```"))
        .take(3)
        .any(|l| l.trim_end_matches(['*', '_', ')', ' ']).ends_with('?'))
}

#[cfg(test)]
mod tests {
    use super::laid_out_option;

    #[test]
    fn options_are_labelled_alternatives() {
        let t = "Which?\n- **A) Silently skip**\n- **B) Prompt user**\n- **C) Add --force**\nI'd lean toward C.";
        assert_eq!(laid_out_option(t), Some("- **A) Silently skip**"));
        assert!(laid_out_option("**Option 1:** do x\n**Option 2:** do y").is_some());
        assert!(laid_out_option("1. read\n2. write\n3. test").is_none());
        assert!(laid_out_option("Option 1 only").is_none());
        assert!(laid_out_option("```\nA) x\nB) y\n```").is_none());
    }
}
