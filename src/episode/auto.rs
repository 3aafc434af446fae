//! Automatic snippets of a closed episode.
//!
//! Each non-routine episode yields at most two: first the one its label calls for
//! (`error_recovery` -> `error_reasoning` from the first failure that was fixed;
//! `user_correction` -> `learning_pattern` from the correction and the assistant's answer;
//! `pivot` / `design_decision` -> `decision_rationale` from the paragraph holding the phrase),
//! then an explicit lesson ("the root cause was", "key insight", ...) as `learning_pattern`,
//! which qualifies in any episode, routine ones included. Candidates lose their noise lines,
//! must pass [`crate::snippet::validate`] (gates, 100 B to 10 KB), and two candidates with the
//! same normalized content count once.

use std::collections::BTreeSet;

use super::triage::{Label, Triage};
use super::{NoteKind, Open};
use crate::extract::rows::SnippetRow;
use crate::snippet::{
    clip_chars, is_noise_line, metadata_json, normalized_hash, path_tags, title_from,
    truncate_bytes, validate, SnippetType, MAX_CONTENT_BYTES, MAX_TITLE_CHARS,
};

/// Most automatic snippets per episode.
const PER_EPISODE: usize = 2;
/// Smallest automatic `learning_pattern`, in bytes.
const MIN_LESSON_BYTES: usize = 150;

/// A snippet before validation.
struct Draft {
    kind: SnippetType,
    title: String,
    content: String,
    lines: (u64, u64),
    /// What happened, concretely, in a sentence or two (a learning's `observation`).
    observation: String,
    /// The reusable lesson (a learning's `generalization`).
    lesson: String,
}

/// The first sentence of `text` (its first line when there is no sentence end), clipped.
fn first_sentence(text: &str) -> String {
    let t = text.trim();
    let line = t
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let end = line
        .char_indices()
        .find(|&(i, c)| {
            matches!(c, '.' | '!' | '?') && line[i + c.len_utf8()..].starts_with(' ') && i > 20
        })
        .map_or(line.len(), |(i, c)| i + c.len_utf8());
    clip_chars(&line[..end], 300)
}

/// The snippets of a closed episode.
pub fn snippets(
    open: &Open,
    triage: &Triage,
    version: Option<&str>,
    project: Option<&str>,
    end_line: u64,
) -> Vec<SnippetRow> {
    let mut drafts: Vec<Draft> = Vec::new();
    match triage.label {
        Label::ErrorRecovery => drafts.extend(error_reasoning(open)),
        Label::UserCorrection => drafts.extend(correction(open)),
        Label::Pivot => {
            drafts.extend(note_draft(open, NoteKind::Pivot));
            drafts.extend(note_draft(open, NoteKind::Decision));
        }
        Label::DesignDecision => drafts.extend(note_draft(open, NoteKind::Decision)),
        Label::Routine => {}
    }
    drafts.extend(note_draft(open, NoteKind::Learning));
    if triage.label != Label::Routine {
        // Second choices, used only if a first one failed the gates.
        drafts.extend(error_reasoning(open));
        drafts.extend(note_draft(open, NoteKind::Decision));
    }

    let tags = tags(open, project);
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for d in drafts {
        if out.len() >= PER_EPISODE {
            break;
        }
        let content = clean(&d.content);
        let content = truncate_bytes(&content, MAX_CONTENT_BYTES);
        let title = clip_chars(&d.title, MAX_TITLE_CHARS);
        if validate(&title, &content).is_err() {
            continue;
        }
        // A lesson needs room to say what and why; a short "next time ..." is chatter.
        if d.kind == SnippetType::LearningPattern && content.len() < MIN_LESSON_BYTES {
            continue;
        }
        let hash = normalized_hash(&content);
        if !seen.insert(hash.clone()) {
            continue;
        }
        let (start, end) = d.lines;
        let start = start.max(open.start_line).min(end_line);
        let end = end.clamp(start, end_line);
        out.push(SnippetRow {
            origin: "auto",
            snippet_type: d.kind.as_str().to_string(),
            metadata: crate::snippet::with_learning(
                &metadata_json(
                    &content,
                    Some(triage.label.as_str()),
                    Some(triage.confidence),
                    version,
                ),
                &d.observation,
                &d.lesson,
            ),
            title,
            content,
            content_hash: hash,
            line_start: start,
            line_end: end,
            tags: tags.clone(),
        });
    }
    out
}

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

/// Drop lines that are noise on their own, collapse runs of blank lines, and drop a heading
/// left dangling at the end (it introduces text that was cut).
fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = false;
    for line in text.lines() {
        if is_noise_line(line) {
            continue;
        }
        if line.trim().is_empty() {
            if !blank && !out.is_empty() {
                out.push('\n');
            }
            blank = true;
            continue;
        }
        blank = false;
        out.push_str(line.trim_end());
        out.push('\n');
    }
    let mut out = out.trim().to_string();
    // A paragraph cut inside a code block: close the fence so the rest does not read as code.
    if out
        .lines()
        .filter(|l| l.trim_start().starts_with("```"))
        .count()
        % 2
        == 1
    {
        out.push_str("\n```");
    }
    while let Some(i) = out.rfind('\n') {
        if !out[i + 1..].trim_start().starts_with('#') {
            break;
        }
        out.truncate(i);
        out.truncate(out.trim_end().len());
    }
    out
}

fn error_reasoning(open: &Open) -> Option<Draft> {
    // A failure, its error and at least one word on what was tried or why the fix works: an
    // error followed by a silent re-run teaches nothing.
    let r = open.recoveries.iter().find(|r| {
        !r.failure.error.trim().is_empty()
            && (!r.failure.tried.is_empty()
                || r.fix_text.is_some()
                || !r.failure.actions.is_empty())
    })?;
    let f = &r.failure;
    let what = match &f.target {
        Some(t) => format!("{} {}", f.tool, clip_command(t)),
        None => f.tool.clone(),
    };
    let first_error = crate::snippet::headline(&f.error);
    let subject = match (f.tool.as_str(), &f.target) {
        ("Bash", Some(cmd)) => format!("`{}`", super::terms::command_head(cmd)),
        (tool, Some(t)) => format!("{tool} {}", t.rsplit(['/', '\\']).next().unwrap_or(t)),
        (tool, None) => tool.to_string(),
    };
    let mut c = format!(
        "What failed (line {}): {what}\n\nError:\n{}\n",
        f.line, f.error
    );
    if !f.tried.is_empty() {
        c.push_str("\nWhat was tried:\n");
        for (l, t) in &f.tried {
            c.push_str(&format!("- (line {l}) {t}\n"));
        }
    }
    let changes: Vec<&(u64, String)> = f.actions.iter().filter(|(l, _)| *l < r.line).collect();
    if !changes.is_empty() {
        c.push_str("\nChanges made before it worked:\n");
        for (l, a) in changes {
            c.push_str(&format!("- (line {l}) {a}\n"));
        }
    }
    let call = crate::snippet::clip_chars(r.call.lines().next().unwrap_or(""), 300);
    c.push_str(&format!("\nWhat fixed it (line {}): {call}\n", r.line));
    if let Some((l, t)) = &r.fix_text {
        if f.tried.iter().all(|(tl, _)| tl != l) {
            c.push_str(&format!("{t}\n"));
        }
    }
    let fix = r
        .fix_text
        .as_ref()
        .map(|(_, t)| first_sentence(t))
        .filter(|t| !t.is_empty())
        .or_else(|| {
            f.actions
                .first()
                .map(|(_, a)| format!("the change that made it work: {a}"))
        })
        .unwrap_or_else(|| format!("it worked with {call}"));
    Some(Draft {
        kind: SnippetType::ErrorReasoning,
        title: format!("{subject} failed, then fixed: {}", title_from(&first_error)),
        observation: clip_chars(
            &format!(
                "{what} failed (line {}) with \"{}\"; it worked at line {} with {call}.",
                f.line,
                clip_chars(&first_error, 200),
                r.line
            ),
            600,
        ),
        lesson: clip_chars(
            &format!(
                "When {subject} fails with \"{}\": {fix}",
                clip_chars(&first_error, 160)
            ),
            600,
        ),
        content: c,
        lines: (f.line, r.line),
    })
}

fn correction(open: &Open) -> Option<Draft> {
    // Only strong corrections teach something: a denial with the reason typed, a redirect
    // after an interruption, a prompt that opens with a correction.
    let s = open
        .signals
        .iter()
        .filter(|s| s.label == Label::UserCorrection && s.weight >= 0.8)
        .filter(|s| s.signal != "tool_denial" || s.weight > 0.9)
        .find(|s| s.followup.is_some())?;
    let (fl, follow) = s.followup.as_ref()?;
    let what = match s.signal.as_str() {
        "tool_denial" => "The user rejected a tool call",
        "interruption_redirect" => "The user interrupted and redirected",
        _ => "The user corrected the assistant",
    };
    let content = format!(
        "{what} (line {}):\n{}\n\nWhat the assistant did next (line {fl}):\n{follow}\n",
        s.line, s.text
    );
    Some(Draft {
        kind: SnippetType::LearningPattern,
        title: format!("User correction: {}", title_from(&s.text)),
        observation: clip_chars(
            &format!(
                "{what} (line {}); the assistant then: {}",
                s.line,
                first_sentence(follow)
            ),
            600,
        ),
        // The user's own words are the rule to keep.
        lesson: clip_chars(
            s.text
                .split_once("the user said:")
                .map_or(s.text.as_str(), |(_, r)| r)
                .trim(),
            600,
        ),
        content,
        lines: (s.line, *fl),
    })
}

fn note_draft(open: &Open, kind: NoteKind) -> Option<Draft> {
    let n = open.notes.iter().find(|n| n.kind == kind)?;
    let (snippet_kind, prefix) = match kind {
        NoteKind::Learning => (SnippetType::LearningPattern, "Lesson"),
        NoteKind::Pivot => (SnippetType::DecisionRationale, "Change of approach"),
        NoteKind::Decision => (SnippetType::DecisionRationale, "Decision"),
    };
    let mut content = String::new();
    let mut start = n.line;
    if kind != NoteKind::Learning {
        if let Some((l, ctx)) = &n.context {
            // The paragraph before a decision usually holds the problem it answers.
            content.push_str(&truncate_bytes(ctx, 1500));
            content.push_str("\n\n");
            start = *l;
        }
    }
    content.push_str(&n.text);
    let mut head = title_from(&n.sentence);
    let words = |t: &str| t.chars().filter(|c| c.is_alphanumeric()).count();
    if words(&head) < 10 {
        head = title_from(&n.text);
    }
    if words(&head) < 10 {
        // No sentence to name it by: not readable on its own.
        return None;
    }
    // "Key design decision: ..." needs no "Decision: " in front.
    let lead = head.chars().take(40).collect::<String>().to_lowercase();
    let title = if lead.contains(&prefix.to_lowercase()) {
        head
    } else {
        format!("{prefix}: {head}")
    };
    let observation = match (&n.context, kind) {
        (Some((_, ctx)), NoteKind::Pivot | NoteKind::Decision) => first_sentence(ctx),
        _ => first_sentence(&n.text),
    };
    Some(Draft {
        kind: snippet_kind,
        title,
        observation,
        lesson: clip_chars(n.sentence.trim(), 600),
        content,
        lines: (start, n.line),
    })
}

/// Tools that organise the work rather than do it: not worth a tag.
const BOOKKEEPING_TOOLS: &[&str] = &[
    "TodoWrite",
    "TodoRead",
    "ExitPlanMode",
    "EnterPlanMode",
    "AskUserQuestion",
    "Skill",
];

/// Tools used (most used first, at most 5), file extensions, error kinds, project.
fn tags(open: &Open, project: Option<&str>) -> Vec<String> {
    let mut tools: Vec<(&String, &i64)> = open.tools.iter().collect();
    tools.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let mut out: BTreeSet<String> = tools
        .into_iter()
        .filter(|(t, _)| !BOOKKEEPING_TOOLS.contains(&t.as_str()))
        .take(5)
        .map(|(t, _)| format!("tool:{}", t.to_lowercase()))
        .collect();
    out.extend(open.files.iter().filter_map(|f| path_tags(f)));
    out.extend(open.error_kinds.iter().map(|k| format!("error:{k}")));
    if let Some(p) = project {
        out.extend(crate::snippet::project_tag(p));
    }
    out.into_iter().collect()
}

/// Whether a failed call is tool mechanics rather than a real failure (see the caller).
pub fn is_mechanics(kind: &Option<String>, tool: Option<&str>) -> bool {
    matches!(kind.as_deref(), Some("edit_mismatch" | "stale_read"))
        || matches!(
            tool,
            Some("KillShell" | "KillBash" | "TodoWrite" | "BashOutput")
        )
}

/// A coarse kind for an error text, for tags.
pub fn error_kind(text: &str) -> Option<String> {
    let t = text.to_ascii_lowercase();
    let kind = if t.contains("string to replace not found")
        || t.contains("old_string")
        || t.contains("matches of the string to replace")
    {
        "edit_mismatch"
    } else if t.contains("has not been read yet") || t.contains("file has been modified") {
        "stale_read"
    } else if t.contains("error[e")
        || t.contains("mismatched types")
        || t.contains("cannot find")
        || t.contains("could not compile")
    {
        "compile"
    } else if t.contains("syntaxerror")
        || t.contains("syntax error")
        || t.contains("unexpected token")
        || t.contains("parse error")
    {
        "syntax"
    } else if t.contains("typeerror") || t.contains("type error") || t.contains("is not assignable")
    {
        "type"
    } else if t.contains("test result: failed")
        || t.contains("tests failed")
        || t.contains("assertion")
        || t.contains("failed:") && t.contains("test")
    {
        "test"
    } else if t.contains("permission denied")
        || t.contains("eacces")
        || t.contains("operation not permitted")
    {
        "permission"
    } else if t.contains("no such file")
        || t.contains("not found")
        || t.contains("does not exist")
        || t.contains("enoent")
    {
        "not_found"
    } else if t.contains("timed out") || t.contains("timeout") {
        "timeout"
    } else if t.contains("connection refused")
        || t.contains("econnrefused")
        || t.contains("network")
    {
        "network"
    } else if t.contains("exit code") {
        "exit_status"
    } else {
        return None;
    };
    Some(kind.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_drops_noise_blank_runs_and_a_dangling_heading() {
        let text = "**Root cause**:\nThe cache key ignored the version.\n\n\n\nSo stale rows came back.\n\n## The Fix\n";
        assert_eq!(
            clean(text),
            "The cache key ignored the version.\n\nSo stale rows came back."
        );
        // A heading followed by its text stays.
        assert_eq!(clean("## Why\nBecause."), "## Why\nBecause.");
        // A code block cut short is closed.
        assert_eq!(
            clean("The options are:\n```bash\npython3 -m http.server"),
            "The options are:\n```bash\npython3 -m http.server\n```"
        );
    }

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
