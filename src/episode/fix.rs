//! What fixed a failure, in the few lines a reader needs: the edit as a compact diff, how the
//! passing command differs from the failing one, and whether the success answers the failure at
//! all (the same goal) or is a different action that merely shares a program name.
//!
//! Why here and not in the snippet code: the builder decides these while the calls stream by
//! (an edit's text is decoded only when a failure is waiting for its fix), and the snippet only
//! formats what the builder kept. The judgements of a sentence or a command that only drafting
//! asks (`is_reason`, `subject_command`, `command_change`...) stay beside their kin, one
//! vocabulary for both, and are `pub(crate)` for `crate::snippet::draft`.

use super::text::first_line;

/// Lines of each side a compact diff keeps.
const DIFF_SIDE_LINES: usize = 4;
/// Longest line of a compact diff.
const DIFF_LINE_CHARS: usize = 140;

/// A compact diff of one edit: the lines removed and added (a line diff, so a line inserted
/// in a list is one `+`, not the list twice), blank lines and common indentation dropped,
/// `- ` / `+ ` prefixed, at most [`DIFF_SIDE_LINES`] per side. A new file (`old` empty) shows
/// its first lines as added. `None` when nothing differs.
pub(super) fn compact_diff(old: &str, new: &str) -> Option<String> {
    use similar::{ChangeTag, TextDiff};
    let diff = TextDiff::from_lines(old, new);
    let mut del: Vec<&str> = Vec::new();
    let mut add: Vec<&str> = Vec::new();
    for change in diff.iter_all_changes() {
        let line = change.value().trim_end_matches(['\n', '\r']);
        if line.trim().is_empty() {
            continue;
        }
        match change.tag() {
            ChangeTag::Delete => del.push(line),
            ChangeTag::Insert => add.push(line),
            ChangeTag::Equal => {}
        }
    }
    // A line only re-indented or with trailing spaces changed is no change.
    if del
        .iter()
        .map(|l| l.trim())
        .eq(add.iter().map(|l| l.trim()))
    {
        return None;
    }
    let indent = del
        .iter()
        .chain(&add)
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out = String::new();
    for (sign, side) in [('-', &del), ('+', &add)] {
        for l in side.iter().take(DIFF_SIDE_LINES) {
            let l = l.get(indent..).unwrap_or(l.trim_start()).trim_end();
            out.push(sign);
            out.push(' ');
            out.push_str(&crate::text::clip_chars(l, DIFF_LINE_CHARS));
            out.push('\n');
        }
        if side.len() > DIFF_SIDE_LINES {
            out.push_str(&format!(
                "{sign} … ({} more lines)\n",
                side.len() - DIFF_SIDE_LINES
            ));
        }
    }
    Some(out.trim_end().to_string())
}

/// The words of the last command of a shell line (after `cd x &&`), first line only.
fn command_words(cmd: &str) -> Vec<&str> {
    let line = first_line(cmd);
    let last = line
        .rsplit("&&")
        .map(|c| {
            c.trim()
                .trim_start_matches('(')
                .trim_end_matches(')')
                .trim()
        })
        .find(|c| !c.is_empty() && !c.starts_with("cd "))
        .unwrap_or(line.trim());
    last.split_whitespace()
        .filter(|w| !matches!(*w, "2>&1" | "|" | "sudo"))
        .collect()
}

/// Whether a successful command answers an earlier failed one: they already share program and
/// subcommand (the call key); here most of their words must match too. `cp a x` after `cp b x`
/// failed, or `pytest --markers` after `pytest -m unit` failed, is another action, not the fix.
pub(super) fn same_goal(failed: &str, passed: &str) -> bool {
    let a = command_words(failed);
    let b = command_words(passed);
    if a.is_empty() || b.is_empty() {
        return false;
    }
    let shared = a.iter().filter(|w| b.contains(w)).count();
    let union = a.len() + b.len() - shared;
    // The failing command with words added (`--target x`) or dropped (`-p parser`: build
    // everything) is the same goal.
    shared == a.len() || (shared == b.len() && b.len() >= 2) || shared * 3 >= union * 2
}

/// Whether a command acts on something the failed one named: a path or file name of the
/// failed line (a word holding `/` or `.`, not a flag) appears in it. `mv calendar.py
/// cal-widget.py && python3 cal-widget.py` acts on the `calendar.py` that failed; `cp b.conf
/// /tmp/out/` after `cp a.rules /etc/udev/` failed does not.
pub(super) fn touches_what_failed(failed: &str, passed: &str) -> bool {
    first_line(failed)
        .split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '=' | ';' | '|' | '&'))
        .filter(|w| !w.starts_with('-') && w.len() >= 4 && (w.contains('/') || w.contains('.')))
        .any(|w| passed.contains(w))
}

/// The program a reader knows a command line by: the first command that is not a `cd`
/// (`python3 make_doc.py && rm make_doc.py` is about `python3 make_doc.py`).
pub(crate) fn subject_command(cmd: &str) -> String {
    let first = first_line(cmd)
        .split("&&")
        .map(|c| {
            c.trim()
                .trim_start_matches('(')
                .trim_end_matches(')')
                .trim()
        })
        .find(|c| {
            !c.is_empty()
                && !c.starts_with("cd ")
                && !c.starts_with("source ")
                && !c.starts_with(". ")
        })
        .unwrap_or(cmd);
    super::terms::command_head(first)
}

/// Whether an error is a merge or rebase conflict: resolving one is bookkeeping of the
/// branch, rarely a lesson.
pub(crate) fn is_conflict(error: &str) -> bool {
    let e = error.to_lowercase();
    e.contains("could not apply")
        || e.contains("merge conflict")
        || e.contains("conflict (content)")
}

/// How the passing command differs from the failing one: the words it added and dropped,
/// e.g. "added `--target x86_64-unknown-linux-gnu`". `None` when they are the same words.
pub(crate) fn command_change(failed: &str, passed: &str) -> Option<String> {
    let a = command_words(failed);
    let b = command_words(passed);
    let added: Vec<&str> = b.iter().copied().filter(|w| !a.contains(w)).collect();
    let dropped: Vec<&str> = a.iter().copied().filter(|w| !b.contains(w)).collect();
    let list = |ws: &[&str]| crate::text::clip_chars(&ws.join(" "), 160);
    match (added.is_empty(), dropped.is_empty()) {
        (true, true) => None,
        (false, true) => Some(format!("added `{}`", list(&added))),
        (true, false) => Some(format!("dropped `{}`", list(&dropped))),
        (false, false) => Some(format!(
            "replaced `{}` with `{}`",
            list(&dropped),
            list(&added)
        )),
    }
}

/// Words that mark a sentence as an explanation of a cause or a fix rather than narration.
const CAUSAL: &[&str] = &[
    "because",
    "caused",
    "the issue",
    "the problem",
    "the error",
    "root cause",
    "the reason",
    "due to",
    "since ",
    "instead",
    "must ",
    "requires",
    "expects",
    "doesn't support",
    "does not support",
    "isn't",
    "wasn't",
    "is not",
    "was not",
    "sets ",
    "so that",
    "which means",
];

/// Whether `sentence` explains something (holds a causal word).
pub(crate) fn is_explanation(sentence: &str) -> bool {
    let s = sentence.to_lowercase();
    CAUSAL.iter().any(|w| s.contains(w))
}

/// Whether a sentence gives a reason: it explains, is not an announcement of the next step
/// ("Let me try X instead"), does not trail off into what follows ("Need to rename it:"), and
/// has some substance.
pub(crate) fn is_reason(sentence: &str) -> bool {
    let s = sentence.trim();
    let lower = s.to_lowercase();
    let announces = [
        "let me ",
        "now let me ",
        "let's ",
        "i'll ",
        "now i'll ",
        "i will ",
    ]
    .iter()
    .any(|o| lower.starts_with(o));
    is_explanation(s) && !announces && !s.ends_with(':') && crate::text::word_count(s) >= 6
}

/// Narration that only announces the next step ("Let me check the config:"): not a reason.
pub(crate) fn is_announcement(text: &str) -> bool {
    let t = text.trim();
    let lower = t.to_lowercase();
    let opens = [
        "let me ",
        "now let me ",
        "now let's ",
        "let's ",
        "i'll ",
        "i will ",
        "now i'll ",
        "first, let me ",
        "perfect! let me",
        "great! let me",
        "good! let me",
    ];
    t.len() < 160 && opens.iter().any(|o| lower.starts_with(o)) && !is_explanation(t)
}

pub(super) use crate::text::sentence::sentences;

/// Markers of a fix that silences a check instead of satisfying it.
const SUPPRESSIONS: &[&str] = &[
    "nolint",
    "noqa",
    "eslint-disable",
    "#[allow(",
    "@ts-ignore",
    "@ts-expect-error",
    "type: ignore",
    "pylint: disable",
    "#nosec",
    "// nosec",
    "--no-verify",
    "continue-on-error",
    "|| true",
];

/// Whether a fix (its diffs and passing command) only silences the check.
pub(crate) fn is_suppression(fix: &str) -> bool {
    let f = fix.to_lowercase();
    SUPPRESSIONS.iter().any(|s| f.contains(s))
}

/// Whether an error says a program or module is missing and the fix installed it: the
/// everyday churn of a fresh machine, not a lesson.
pub(crate) fn is_missing_install(error: &str, fix: &str) -> bool {
    let e = error.to_lowercase();
    let missing = e.contains("command not found")
        || e.contains("which: no ")
        || e.contains("no module named")
        || e.contains("cannot find module")
        || e.contains("not installed")
        || e.contains("is not recognized as");
    let f = fix.to_lowercase();
    let install = [
        "pip install",
        "pip3 install",
        "npm install",
        "npm i ",
        "pnpm add",
        "pnpm install",
        "yarn add",
        "brew install",
        "apt install",
        "apt-get install",
        "pacman -s",
        "cargo install",
        "uv add",
        "uv pip install",
        "go install",
    ];
    missing && install.iter().any(|i| f.contains(i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diffs_keep_only_changed_lines() {
        let old = "fn a() {\n    let x = 1;\n    call(x);\n}\n";
        let new = "fn a() {\n    let x = 2;\n    call(x);\n}\n";
        assert_eq!(
            compact_diff(old, new).as_deref(),
            Some("- let x = 1;\n+ let x = 2;")
        );
        assert_eq!(compact_diff("same", "same"), None);
        // An import inserted in a list is one added line.
        assert_eq!(
            compact_diff(
                "\t\"os\"\n\t\"strings\"\n",
                "\t\"os\"\n\t\"os/exec\"\n\t\"strings\"\n"
            )
            .as_deref(),
            Some("+ \"os/exec\"")
        );
        let long: String = (0..10).map(|i| format!("line {i}\n")).collect();
        let d = compact_diff("", &long).unwrap_or_default();
        assert!(d.starts_with("+ line 0\n"), "{d}");
        assert!(d.ends_with("+ … (6 more lines)"), "{d}");
    }

    #[test]
    fn same_goal_needs_most_words() {
        assert!(same_goal(
            "cargo build --release -p x 2>&1",
            "cargo build --release -p x --target y 2>&1"
        ));
        assert!(same_goal("python3 make_doc.py", "python3 make_doc.py"));
        assert!(same_goal("cd /x && cargo build -p parser", "cargo build"));
        assert!(same_goal("pytest", "(source .venv/bin/activate && pytest)"));
        assert!(!same_goal("cp a.txt /tmp/x", "cp b.txt /tmp/y"));
        assert!(!same_goal(
            "uv run pytest -m unit -v",
            "uv run pytest --markers"
        ));
        assert!(!same_goal(
            "uv run pytest --collect-only -m unit",
            "uv run pytest --collect-only -q"
        ));
        assert!(!same_goal(
            "git rebase origin/main",
            "git add . && git rebase --continue"
        ));
        assert_eq!(
            subject_command("python3 make_doc.py && rm make_doc.py"),
            "python3 make_doc.py"
        );
        assert_eq!(
            subject_command("cd /x && cargo build --release"),
            "cargo build"
        );
        assert!(same_goal(
            "gh pr create --draft --base feature --title T",
            "gh pr create --draft --base main --title T"
        ));
    }

    #[test]
    fn command_changes_are_named() {
        assert_eq!(
            command_change("cargo build -p x", "cargo build -p x --target y").as_deref(),
            Some("added `--target y`")
        );
        assert_eq!(
            command_change("gh pr create --base a", "gh pr create --base main").as_deref(),
            Some("replaced `a` with `main`")
        );
        assert_eq!(command_change("make", "make"), None);
    }

    #[test]
    fn explanations_announcements_and_churn() {
        assert!(is_explanation(
            "Line 23 sets the default target to thumbv6m for the whole workspace."
        ));
        assert!(!is_explanation("Now let me run the failing test again:"));
        assert!(is_announcement("Let me check what test markers exist:"));
        assert!(!is_reason("Need to rename it:"));
        assert!(!is_reason(
            "Let me try a different approach by using a return instead."
        ));
        assert!(is_reason(
            "The path is wrong because the build runs from the workspace root."
        ));
        assert_eq!(
            subject_command("(source .venv/bin/activate && pytest -x)"),
            "pytest"
        );
        assert!(!is_announcement(
            "Let me fix it because the path is wrong and the build needs the host target."
        ));
        assert!(is_suppression("+ //nolint:gosec // path from config"));
        assert!(is_missing_install(
            "ModuleNotFoundError: No module named 'torch'",
            "Bash pip install -r requirements.txt"
        ));
        assert!(!is_missing_install("SyntaxError", "Bash pip install x"));
        assert_eq!(
            sentences("The cause. Is here.\n- item one is long enough to count.\n```\ncode\n```"),
            vec![
                "The cause. Is here.".to_string(),
                "item one is long enough to count.".to_string()
            ]
        );
    }
}
