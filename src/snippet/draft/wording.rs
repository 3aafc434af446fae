//! How a snippet's two learning halves are worded, so that they import well into a memory
//! store: the observation says what happened here, the generalization says when it applies
//! and what to do; both are sentences, they differ, and neither carries a transcript line
//! number or a machine's absolute path where a project-relative name will do.

use super::candidate::shared_words;
use crate::episode::fix::subject_command;
use crate::episode::Open;
use crate::text::clip_chars;

/// `text` with absolute paths shortened: the part after the project's folder when the path
/// holds it (`/Users/x/src/app/lib/db.rs` -> `lib/db.rs` in project `app`), else the file's
/// own name. Paths are whitespace- or quote-delimited tokens starting with `/`, `~/` or a
/// drive letter.
pub(crate) fn relative(text: &str, project: Option<&str>) -> String {
    let delimiter = |c: char| c.is_whitespace() || "\"'`()".contains(c);
    let mut out = String::with_capacity(text.len());
    let mut token_start: Option<usize> = None;
    let flush = |out: &mut String, token: &str| {
        if is_absolute(token) {
            out.push_str(&shorten(token, project));
        } else {
            out.push_str(token);
        }
    };
    for (i, c) in text.char_indices() {
        if delimiter(c) {
            if let Some(s) = token_start.take() {
                flush(&mut out, &text[s..i]);
            }
            out.push(c);
        } else if token_start.is_none() {
            token_start = Some(i);
        }
    }
    if let Some(s) = token_start {
        flush(&mut out, &text[s..]);
    }
    out
}

fn is_absolute(token: &str) -> bool {
    let b = token.as_bytes();
    let unix = (token.starts_with('/') || token.starts_with("~/")) && token[1..].contains('/');
    let windows =
        b.len() > 3 && b[0].is_ascii_uppercase() && b[1] == b':' && (b[2] == b'\\' || b[2] == b'/');
    unix || windows
}

fn shorten(path: &str, project: Option<&str>) -> String {
    let norm = path.replace('\\', "/");
    if let Some(p) = project.filter(|p| !p.is_empty()) {
        let marker = format!("/{p}/");
        if let Some(i) = norm.rfind(&marker) {
            let rel = &norm[i + marker.len()..];
            if !rel.is_empty() {
                return rel.to_string();
            }
        }
    }
    let trimmed = norm.trim_end_matches('/');
    trimmed.rsplit('/').next().unwrap_or(trimmed).to_string()
}

/// `text` without the transcript line references Gleaner adds (`(line 96)`); an error's own
/// "at line 88" stays.
pub(super) fn without_lines(text: &str) -> String {
    let mut out = text.to_string();
    for open in [" (line ", " (lines "] {
        while let Some(i) = out.find(open) {
            let after = &out[i + open.len()..];
            let digits = after
                .find(|c: char| !c.is_ascii_digit() && c != '-')
                .unwrap_or(after.len());
            if digits == 0 {
                break;
            }
            let mut end = i + open.len() + digits;
            if open.contains('(') && out[end..].starts_with(')') {
                end += 1;
            }
            out.replace_range(i..end, "");
        }
    }
    out
}

/// A learning half ready to store: paths shortened, line references gone, one line, ending
/// as a sentence, at most 600 characters.
pub(super) fn finish(text: &str, project: Option<&str>) -> String {
    let t = without_lines(&relative(text, project));
    let t = t.split_whitespace().collect::<Vec<_>>().join(" ");
    let t = t.trim().trim_end_matches([':', ';', ',']).trim();
    let mut t = clip_chars(t, 600);
    if !t.ends_with(['.', '!', '?', '…', '"', ')', '`']) {
        t.push('.');
    }
    t
}

/// When a lesson of this episode applies: the failure it was `about` (one whose error shares
/// two words with the lesson: another failure of the episode is not its context), else
/// the files it changed, else what it was asked to do (unless that is `except`, the words the
/// lesson quotes).
pub(super) fn trigger(open: &Open, about: Option<&str>, except: Option<&str>) -> String {
    let failure = open
        .recoveries
        .iter()
        .map(|r| &r.failure)
        .chain(open.failures.iter())
        .find(|f| {
            !f.error.trim().is_empty() && about.is_some_and(|a| shared_words(a, &f.error) >= 2)
        });
    if let Some(f) = failure {
        let headline = crate::text::headline(&f.error);
        let what = match (f.tool.as_str(), &f.target) {
            ("Bash", Some(cmd)) => format!("`{}`", subject_command(cmd)),
            (tool, _) => tool.to_string(),
        };
        return format!("{what} fails with \"{}\"", clip_chars(&headline, 120));
    }
    let files: Vec<&str> = open
        .files
        .iter()
        .take(2)
        .map(|f| f.rsplit(['/', '\\']).next().unwrap_or(f))
        .collect();
    if !files.is_empty() {
        return format!("changing {}", files.join(" or "));
    }
    // An episode the correction itself started is named by it: that says nothing of when.
    let own = |t: &str| {
        except.is_some_and(|w| {
            let head: String = t.chars().take(40).collect();
            w.starts_with(head.trim_end_matches('…'))
        })
    };
    match &open.title {
        Some(t) if !own(t) => format!("working on \"{}\"", clip_chars(t, 80)),
        _ => "working in this project".to_string(),
    }
}

/// What a tool call the user turned down was about to do ("Bash `npm install`" -> "run `npm
/// install`"), for "When about to ...".
pub(super) fn action(call: &str) -> String {
    match call.split_once(' ') {
        Some(("Bash", cmd)) => format!("run `{}`", subject_command(cmd.trim_matches('`'))),
        Some(("Edit" | "Write" | "MultiEdit" | "NotebookEdit", file)) => format!("change {file}"),
        _ if call.starts_with("ExitPlanMode") => "go ahead with a plan".to_string(),
        Some((tool, what)) => format!("use {tool} on {what}"),
        None => format!("use {call}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_project_relative_and_lines_go() {
        assert_eq!(
            relative(
                "Edit /Users/dain/workspace/claude-code-log/claude_code_log/converter.py failed",
                Some("claude-code-log")
            ),
            "Edit claude_code_log/converter.py failed"
        );
        assert_eq!(
            relative(
                "see \"/home/v/.config/hypr/hyprland.conf\" now",
                Some("app")
            ),
            "see \"hyprland.conf\" now"
        );
        assert_eq!(
            relative("C:\\Users\\x\\proj\\a.ts and b/c.rs", None),
            "a.ts and b/c.rs"
        );
        assert_eq!(relative("Use I/O, not A/B", None), "Use I/O, not A/B");
        assert_eq!(
            without_lines("`go test` failed (line 293) at line 3 of x."),
            "`go test` failed at line 3 of x."
        );
        assert_eq!(finish("the fix was X:", None), "the fix was X.");
        assert_eq!(action("Bash `npm install`"), "run `npm install`");
        assert_eq!(action("Edit `config.go`"), "change `config.go`");
    }
}
