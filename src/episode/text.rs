//! Small text cuts the builder keeps: the first line of a prompt, the sentence or paragraph
//! around a phrase, and whether a phrase sits in prose at all.

use super::PIECE_BYTES;
pub(super) use crate::text::{first_line, head_bytes};

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

pub(super) use crate::text::sentence::sentence_around;

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
    crate::text::truncate_bytes(text[from..to].trim(), PIECE_BYTES)
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

/// Words that make a list of named items a list of alternatives, not of parts or steps, when
/// they stand in the line that introduces the list or in the two lines after it.
const CHOICE_CUES: &[&str] = &[
    "option",
    "direction",
    "approach",
    "alternative",
    "which ",
    "prefer",
    "could go",
    "my pick",
    "recommend",
    "i'd go",
    "choose",
    "pick one",
];

/// The body of a list item line (`- x`, `* x`, `1. x`, `2) x`; `t` without its indentation),
/// or `None` for any other line.
pub(crate) fn list_item(t: &str) -> Option<&str> {
    t.strip_prefix("- ")
        .or_else(|| t.strip_prefix("* "))
        .or_else(|| {
            let (n, rest) = t.split_once(['.', ')'])?;
            (!n.is_empty() && n.len() <= 2 && n.chars().all(|c| c.is_ascii_digit()))
                .then(|| rest.trim_start())
        })
}

/// Whether a line is a list item whose body starts with a bold name followed by a dash and
/// what it means ("- **A** — subtle underline", "1. **L&S logo** - ties your brand together").
fn is_named_item(t: &str) -> bool {
    let item = list_item(t);
    item.and_then(|i| i.strip_prefix("**")).is_some_and(|i| {
        i.split_once("**").is_some_and(|(name, rest)| {
            let rest = rest.trim_start();
            !name.trim().is_empty() && ["—", "–", "- "].iter().any(|d| rest.starts_with(d))
        })
    })
}

/// The first of two or more named alternatives in a list (see [`is_named_item`]), when the
/// line introducing the list or the lines after it say they are alternatives (options,
/// directions, which one is preferred or recommended). Named parts of one plan ("1. **Large
/// clock** — ...") have no such words around them.
pub(super) fn named_alternatives(text: &str) -> Option<&str> {
    let cue = |l: &str| {
        let l = l.to_lowercase();
        CHOICE_CUES.iter().any(|c| l.contains(c))
    };
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let mut i = 0;
    while i < lines.len() {
        if !is_named_item(lines[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < lines.len() && is_named_item(lines[i]) {
            i += 1;
        }
        let lead = start.checked_sub(1).map(|j| lines[j]);
        let after = || lines[i..].iter().take(2).copied();
        // "Want all of these, or pick and choose?": items to add up, not to choose between.
        let additive = |l: &str| {
            let l = l.to_lowercase();
            [
                "all of",
                "any of",
                "which ones",
                "all or some",
                "some or all",
                "pick and choose",
            ]
            .iter()
            .any(|w| l.contains(w))
        };
        let additive = lead.is_some_and(additive) || after().any(additive);
        // "Review of the PR: 1. **Missing null check** - ... 2. ...": findings to fix, all of
        // them, not alternatives to choose between (a "recommend" in them is advice).
        let findings = |l: &str| {
            let l = l.to_lowercase();
            [
                "review", "issue", "finding", "problem", "bug", "concern", "feedback", "nit",
                "found", "fix",
            ]
            .iter()
            .any(|w| l.contains(w))
        };
        let findings = lead.is_some_and(findings);
        if i - start >= 2 && !additive && !findings && (lead.is_some_and(cue) || after().any(cue)) {
            return Some(lines[start]);
        }
    }
    None
}

/// Whether the line of `text` holding byte `at` reads as pasted machine output, not words typed
/// to the assistant: a log line (`[12:01:02:123] [WARN][com.freerdp.client] - No user name
/// set`, `2026-01-31 12:00:01 ERROR ...`, `W/Tag: ...`), whose words ("No user name set") are
/// the program's, not a judgement of the work.
pub(super) fn in_pasted_line(text: &str, at: usize) -> bool {
    let from = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let to = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let line = text[from..to].trim();
    let brackets = line.matches('[').count().min(line.matches(']').count());
    let starts_stamp = line
        .split([' ', 'T'])
        .next()
        .is_some_and(|w| w.len() >= 8 && w.bytes().filter(u8::is_ascii_digit).count() >= 6);
    let level = [
        " ERROR ", " WARN ", " INFO ", " DEBUG ", "[ERROR]", "[WARN]", "[INFO]", "[DEBUG]",
    ]
    .iter()
    .any(|l| line.contains(l));
    (line.starts_with('[') && brackets >= 2) || starts_stamp || level
}

/// The first line of a prompt that reads as pasted error output (`Traceback`, `error: ...`,
/// `KeyError: ...`, `psycopg2.errors.UndefinedColumn: ...`, `umount: /mnt: target is busy.`,
/// `command not found`, `fatal: ...`), if any.
pub(super) fn pasted_failure(head: &str) -> Option<&str> {
    head.lines().map(str::trim).find(|l| {
        let lower = l.to_ascii_lowercase();
        crate::text::is_error_statement(l)
            || qualified_exception(l)
            || tool_complaint(l, &lower)
            || lower.starts_with("traceback")
            || lower.starts_with("fatal:")
            || lower.contains("command not found")
            || lower.contains("no such file or directory")
            || lower.contains("missing destination file")
    })
}

/// `package.module.ClassName: message`: an exception named by its module path, as Python, Java
/// and .NET print one whose name does not end in `Error`.
fn qualified_exception(l: &str) -> bool {
    let Some((name, rest)) = l.split_once(": ") else {
        return false;
    };
    let Some((module, class)) = name.rsplit_once('.') else {
        return false;
    };
    !rest.trim().is_empty()
        && !module.is_empty()
        && module.split('.').all(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        })
        && class.starts_with(|c: char| c.is_ascii_uppercase())
        && class.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// `program: operand: complaint`, the way Unix tools report a failure (`umount: /mnt: target is
/// busy.`, `cp: x: Permission denied`): a lower-case program name, then a failure word.
fn tool_complaint(l: &str, lower: &str) -> bool {
    const FAILED: &[&str] = &[
        "cannot",
        "can't",
        "failed",
        "denied",
        "not found",
        "does not exist",
        "is busy",
        "invalid",
        "not permitted",
        "not mounted",
    ];
    let Some((program, rest)) = l.split_once(": ") else {
        return false;
    };
    !program.is_empty()
        && program.len() <= 24
        && program
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && rest.contains(": ")
        && FAILED.iter().any(|f| lower[program.len()..].contains(f))
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
    use super::{laid_out_option, named_alternatives, pasted_failure};

    #[test]
    fn pasted_failures_in_other_shapes() {
        let t = "    res = self._obj.execute(query)\npsycopg2.errors.UndefinedColumn: column x does not exist";
        assert_eq!(
            pasted_failure(t),
            Some("psycopg2.errors.UndefinedColumn: column x does not exist")
        );
        let t = "~ sudo umount /dev/sda1\numount: /run/media/GIT: target is busy.";
        assert_eq!(
            pasted_failure(t),
            Some("umount: /run/media/GIT: target is busy.")
        );
        // Prose with colons, a version, a note: no failure.
        assert_eq!(pasted_failure("note: see docs: it is fine"), None);
        assert_eq!(pasted_failure("e.g. Foo: bar"), None);
        assert_eq!(pasted_failure("Summary: the build failed: why?"), None);
    }

    #[test]
    fn options_are_labelled_alternatives() {
        let t = "Which?\n- **A) Silently skip**\n- **B) Prompt user**\n- **C) Add --force**\nI'd lean toward C.";
        assert_eq!(laid_out_option(t), Some("- **A) Silently skip**"));
        assert!(laid_out_option("**Option 1:** do x\n**Option 2:** do y").is_some());
        assert!(laid_out_option("1. read\n2. write\n3. test").is_none());
        assert!(laid_out_option("Option 1 only").is_none());
        assert!(laid_out_option("```\nA) x\nB) y\n```").is_none());
        let t = "Which style do you prefer:\n- **A** — subtle underline\n- **B** — a dot";
        assert_eq!(named_alternatives(t), Some("- **A** — subtle underline"));
        let t = "A few options:\n\n- **Graph API + device code flow** — simplest\n- **Use your Teams session** — trickier";
        assert!(named_alternatives(t).is_some());
        // Named parts without a word of choice, or one named item, are not alternatives.
        assert!(named_alternatives("- **Workspace fix** — done\n- **Calendar** — added").is_none());
        assert!(named_alternatives("Options:\n- **A** — x\nplain text\n- **B** — y").is_none());
        let t = "Here are the directions we could go:\n1. **Logo** — brand\n2. **Rocket** — theme\n\nWhich direction appeals to you?";
        assert_eq!(named_alternatives(t), Some("1. **Logo** — brand"));
        let t = "Some ideas:\n1. **Clock** — big\n2. **Date** — small\n\nWant all of these, or pick and choose?";
        assert!(named_alternatives(t).is_none());
    }
}
