//! The `error_reasoning` draft of a fixed failure: the error, the reason the assistant gave, the
//! fix as compact diffs or the way the passing command differs, and the command that passed,
//! scored by what it holds (see [`super`]).

use super::candidate::{shared_words, shares_word, Draft};
use crate::episode::fix::{self, is_announcement, is_explanation, is_reason};
use crate::episode::{Failure, Label, Open, Recovery};
use crate::snippet::{title_from, SnippetType};
use crate::text::clip_chars;
use crate::text::sentence::sentences;

/// Lines between a failure and its success past which the link is loose.
const LOOSE_LINES: u64 = 40;

/// A command as a snippet shows it: its first lines (a heredoc'd commit message or PR body is
/// not the point), at most 400 characters.
fn clip_command(cmd: &str) -> String {
    const LINES: usize = 4;
    let mut out = cmd.lines().take(LINES).collect::<Vec<_>>().join("\n");
    if cmd.lines().nth(LINES).is_some() {
        out.push_str("\n…");
    }
    clip_chars(&out, 400)
}

/// Whether two failures are of one step: the same tool on the same target, or for `Bash` the
/// same program and subcommand.
fn same_step(a: &Failure, b: &Failure) -> bool {
    a.tool == b.tool
        && match (a.tool.as_str(), &a.target, &b.target) {
            ("Bash", Some(x), Some(y)) => fix::subject_command(x) == fix::subject_command(y),
            (_, x, y) => x == y,
        }
}

/// Whether what followed a fix shows it held: the same step did not fail again later in the
/// episode, and the user did not report the same problem afterwards (a correction sharing two
/// words with the error's headline). Why: a fix recorded before anyone checked it, then
/// replaced minutes later, teaches the wrong thing.
fn held(open: &Open, r: &Recovery) -> bool {
    let again = open
        .failures
        .iter()
        .chain(open.recoveries.iter().map(|x| &x.failure))
        .any(|f| f.line > r.line && same_step(f, &r.failure));
    let headline = crate::text::headline(&r.failure.error);
    let reported = open.signals.iter().any(|s| {
        s.line > r.line && s.label == Label::UserCorrection && shared_words(&s.text, &headline) >= 2
    });
    !again && !reported
}

/// The `error_reasoning` draft of one fixed failure, or `None` when it shows nothing a reader
/// could reuse: no error text, no reason given for it (an error snippet says why it failed),
/// or a fix that did not hold (see [`held`]).
pub(super) fn error_reasoning(open: &Open, r: &Recovery) -> Option<Draft> {
    let f = &r.failure;
    if f.error.trim().is_empty() || !held(open, r) {
        return None;
    }
    let what = match &f.target {
        Some(t) => format!("{} {}", f.tool, clip_command(t)),
        None => f.tool.clone(),
    };
    let headline = crate::text::headline(&f.error);
    let subject = match (f.tool.as_str(), &f.target) {
        ("Bash" | "PowerShell", Some(cmd)) => format!("`{}`", fix::subject_command(cmd)),
        (tool, Some(t)) => format!("{tool} {}", t.rsplit(['/', '\\']).next().unwrap_or(t)),
        (tool, None) => tool.to_string(),
    };
    // A file the tool could not find, then written: the file was created, nothing was fixed.
    let err = f.error.to_lowercase();
    let missing = ["does not exist", "no such file", "not found", "enoent"]
        .iter()
        .any(|m| err.contains(m));
    if f.tool != "Bash" && missing && r.call.starts_with("Write ") {
        return None;
    }
    let context = format!("{what}\n{}", f.error);
    // What the assistant said between failure and fix: an explanation is the lesson, an
    // announcement ("Let me check X:") is not worth quoting, narration about something else
    // is left out.
    let said: Vec<&(u64, String)> = f.tried.iter().chain(r.fix_text.iter()).collect();
    // The first words after the failure are about it; later ones must name something in it.
    let first_said = f
        .tried
        .iter()
        .find(|(_, t)| !is_announcement(t))
        .map(|(l, _)| *l);
    let reason = said.iter().find_map(|(l, t)| {
        sentences(t)
            .into_iter()
            .find(|s| is_reason(s) && (Some(*l) == first_said || shares_word(s, &context)))
            .map(|s| (*l, s))
    });
    // Without a causal word, the first statement after the failure that names something in the
    // error's own text is its reason in context ("The theme name gets converted to lowercase
    // with hyphens for the folder name." after "Theme 'mission-control' does not exist"). Naming
    // only the file or the command is not enough: a remark about `app.js` is no reason for
    // "File content exceeds maximum allowed size". A plan announced ("Let me check ..."), a
    // question, or a sentence leading into what follows ("Need to rename it:") is none.
    let explicit = reason.is_some();
    let reason = reason.or_else(|| {
        let (l, t) = f.tried.iter().find(|(_, t)| !is_announcement(t))?;
        sentences(t)
            .into_iter()
            .take(2)
            .find(|s| {
                let s = s.trim();
                crate::text::word_count(s) >= 6
                    && !s.ends_with([':', '?'])
                    && !is_announcement(s)
                    && shares_word(s, &f.error)
            })
            .map(|s| (*l, s))
    });
    let tried: Vec<&(u64, String)> = f
        .tried
        .iter()
        .filter(|(_, t)| !is_announcement(t) && (is_explanation(t) || shares_word(t, &context)))
        .collect();
    // The fix must touch what failed: for a file tool's failure, a change of that file (a
    // change elsewhere did not fix it); for a command, any change before the passing re-run.
    let touches = |a: &str| match (f.tool.as_str(), &f.target) {
        ("Bash", _) | (_, None) => true,
        (_, Some(t)) => {
            let name = t.rsplit(['/', '\\']).next().unwrap_or(t);
            a.lines().next().is_some_and(|head| head.contains(name))
        }
    };
    let changes: Vec<&(u64, String)> = f
        .actions
        .iter()
        .filter(|(l, a)| *l < r.line && touches(a))
        .collect();
    // A diff that only moves a brace says nothing on its own.
    let diffs: Vec<&str> = changes
        .iter()
        .filter_map(|(_, a)| a.split_once('\n').map(|(_, d)| d))
        .filter(|d| d.chars().filter(|c| c.is_alphanumeric()).count() >= 3)
        .collect();
    let passed = r.call.strip_prefix("Bash ").unwrap_or(&r.call);
    let change = match (f.tool.as_str(), &f.target) {
        ("Bash", Some(t)) => fix::command_change(t, passed),
        _ => None,
    };
    let fix_words = format!(
        "{}\n{}",
        changes
            .iter()
            .map(|(_, a)| a.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        passed
    );

    let mut score: f64 = 0.35;
    // A reason in so many words ("because", "the issue") counts more than a statement read
    // as one from where it stands (see above).
    if explicit {
        score += 0.25;
    } else if reason.is_some() {
        score += 0.15;
    }
    if !diffs.is_empty() {
        score += 0.2;
    } else if change.is_some() {
        score += 0.15;
    }
    if fix::is_suppression(&fix_words) {
        score -= 0.35;
    }
    if fix::is_missing_install(&f.error, &fix_words) || fix::is_conflict(&f.error) {
        score -= 0.35;
    }
    // A success long after the failure, past many changes, is only loosely its fix.
    if r.line.saturating_sub(f.line) > LOOSE_LINES {
        score -= 0.3;
    }

    let mut c = format!(
        "What failed (line {}): {what}\n\nError:\n{}\n",
        f.line, f.error
    );
    if let Some((l, s)) = &reason {
        c.push_str(&format!("\nWhy (line {l}): {s}\n"));
    }
    let tried: Vec<_> = tried
        .into_iter()
        .filter(|(l, t)| {
            reason
                .as_ref()
                .is_none_or(|(rl, s)| rl != l || !t.contains(s.as_str()))
        })
        .collect();
    if !tried.is_empty() {
        c.push_str("\nWhat was tried:\n");
        for (l, t) in tried {
            c.push_str(&format!("- (line {l}) {t}\n"));
        }
    }
    if !changes.is_empty() {
        c.push_str("\nThe fix:\n");
        for (l, a) in &changes {
            match a.split_once('\n') {
                Some((head, diff)) => {
                    c.push_str(&format!("- (line {l}) {head}\n```diff\n{diff}\n```\n"))
                }
                None => c.push_str(&format!("- (line {l}) {a}\n")),
            }
        }
    }
    let call = clip_chars(r.call.lines().next().unwrap_or(""), 300);
    c.push_str(&format!("\nThen it worked (line {}): {call}", r.line));
    match &change {
        Some(ch) => c.push_str(&format!(" ({ch})\n")),
        None => c.push('\n'),
    }

    // The lesson: the reason, then the concrete change.
    let concrete = if let Some(d) = diffs.first() {
        // Only a one-line change reads well inline; a larger one is in the content.
        let one = |sign: &str| {
            let mut it = d.lines().filter(|l| l.starts_with(sign));
            match (it.next(), it.next()) {
                (Some(l), None) => Some(&l[2..]),
                _ => None,
            }
        };
        let (minus, plus) = match (
            d.lines().filter(|l| l.starts_with("- ")).count(),
            d.lines().filter(|l| l.starts_with("+ ")).count(),
        ) {
            (0..=1, 0..=1) => (one("- "), one("+ ").map(str::to_string)),
            // Lines only added (an import, a field): name them all.
            (0, 2..=3) => (
                None,
                Some(d.lines().map(|l| &l[2..]).collect::<Vec<_>>().join("`, `")),
            ),
            _ => (None, None),
        };
        let file = changes
            .iter()
            .find(|(_, a)| a.contains('\n'))
            .and_then(|(_, a)| a.lines().next())
            .and_then(|h| h.rsplit(['/', '\\']).next())
            .unwrap_or("the file");
        match (minus, plus) {
            (Some(m), Some(p)) => format!(
                "changing `{}` to `{}` in {file} fixed it",
                clip_chars(m, 100),
                clip_chars(&p, 100)
            ),
            (None, Some(p)) => format!("adding `{}` to {file} fixed it", clip_chars(&p, 160)),
            (Some(m), None) => format!("removing `{}` from {file} fixed it", clip_chars(m, 100)),
            (None, None) => format!("an edit of {file} fixed it"),
        }
    } else {
        change
            .as_ref()
            .map(|ch| format!("the command worked once it {ch}"))
            .unwrap_or_default()
    };
    // Without a reason, only a change a reader can see teaches ("changing `a` to `b`", "added
    // `--target x`"); "an edit of main.go fixed it" alone does not.
    if reason.is_none() && !concrete.contains('`') {
        score -= 0.2;
    }
    // Why it failed is the lesson; without a reason there is none to keep.
    let (_, why) = reason.as_ref()?;
    let lesson = if concrete.is_empty() {
        why.clone()
    } else {
        format!("{} ({concrete}).", why.trim_end_matches(['.', ':']))
    };
    // The title says what failed, why, and what fixed it.
    // Its first sentence, without a clause announcing the next step ("; I'll widen it").
    let why_short = title_from(super::wording::without_lead(why));
    let why_short = why_short
        .split("; ")
        .filter(|c| !is_announcement(c))
        .collect::<Vec<_>>()
        .join("; ");
    let why_short = why_short.trim_end_matches(['.', ':']);
    let title = if concrete.is_empty() {
        format!("{subject} failed: {why_short}")
    } else {
        format!("{subject} failed: {why_short}; {concrete}")
    };
    Some(Draft {
        kind: SnippetType::ErrorReasoning,
        title,
        observation: clip_chars(
            &format!(
                "{subject} failed with \"{}\"; {}",
                clip_chars(&headline, 200),
                if concrete.is_empty() {
                    "it passed once re-run after the change shown".to_string()
                } else {
                    format!("{concrete}, and the re-run passed")
                }
            ),
            600,
        ),
        lesson: clip_chars(
            &format!(
                "When {subject} fails with \"{}\": {lesson}",
                clip_chars(&headline, 160)
            ),
            600,
        ),
        content: c,
        lines: (f.line, r.line),
        score: score.clamp(0.0, 1.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_commands_are_clipped() {
        let cmd = "git commit -m \"$(cat <<'EOF'\nline 1\nline 2\nline 3\nline 4\nEOF\n)\"";
        assert_eq!(
            clip_command(cmd),
            "git commit -m \"$(cat <<'EOF'\nline 1\nline 2\nline 3\n…"
        );
        assert_eq!(clip_command(&"x".repeat(500)).chars().count(), 400);
        assert_eq!(clip_command("cargo build"), "cargo build");
    }
}
