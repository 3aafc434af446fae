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

/// Sentences that only announce that something was understood ("I see the issue.", "Got
/// it!", "Yes,"), and lead-ins that end at a colon or dash ("Looking at the git status from
/// earlier:", "My recommendation:", "The issue is clear —"): what comes after them is the
/// statement a title should open with.
const LEADS: &[&str] = &[
    "i see the issue",
    "i see the problem",
    "i see what",
    "i see",
    "i found the issue",
    "i found the problem",
    "found it",
    "found the issue",
    "got it",
    "now i see",
    "now i understand",
    "i understand",
    "perfect",
    "great",
    "excellent",
    "yes",
    "ah",
    "ok",
    "okay",
    "the issue is clear",
    "the problem is clear",
    "looking at",
    "my recommendation",
    "i recommend",
];

/// `text` without the leads of [`LEADS`] it opens with, so that a title states the point.
pub(super) fn without_lead(text: &str) -> &str {
    let mut t = text.trim();
    'strip: loop {
        for lead in LEADS {
            // The text's own first bytes, compared without case (the leads are ASCII, so a
            // text that starts with one has it as its first `lead.len()` bytes).
            let Some(head) = t.get(..lead.len()) else {
                continue;
            };
            // A whole word: "ok" is no lead of "okapi".
            let rest = &t[lead.len()..];
            let whole = rest.chars().next().is_none_or(|c| !c.is_alphanumeric());
            if !head.eq_ignore_ascii_case(lead) || !whole {
                continue;
            }
            // The lead ends at the first sentence end, colon or dash within a few words.
            let Some(end) = rest.find(['.', '!', ':', '—', ',', '-']) else {
                continue;
            };
            if crate::text::word_count(&rest[..end]) > 6 {
                continue;
            }
            let after = rest[end..]
                .trim_start_matches(['.', '!', ':', '—', ',', '-', ' '])
                .trim_start();
            if crate::text::word_count(after) < 4 {
                break 'strip;
            }
            t = after;
            continue 'strip;
        }
        break;
    }
    t
}

/// A statement of the assistant's as a title: its point (see [`without_lead`]), first
/// sentence only, references resolved (see [`resolve`]), first letter upper case.
pub(super) fn as_title(text: &str, open: &Open) -> String {
    let t = resolve(&crate::snippet::title_from(without_lead(text)), open);
    capitalized(&t)
}

fn capitalized(t: &str) -> String {
    let mut cs = t.chars();
    match cs.next() {
        Some(c) => c.to_uppercase().chain(cs).collect(),
        None => String::new(),
    }
}

/// Openings of a correction that only mark it as one ("No, use the md-card ..."): a rule
/// reads better without them.
const MARKERS: &[&str] = &[
    "no", "nope", "nah", "actually", "sorry", "ok", "okay", "well", "hmm", "wait", "also",
    "please", "and", "but", "so", "just", "good", "great", "perfect", "thanks", "yes", "yeah",
];

/// A user's words that state a rule, as a title: the correction's markers dropped ("no, ",
/// "actually "), references to a file resolved (see [`resolve`]), the first letter upper case.
pub(super) fn rule_title(words: &str, open: &Open) -> String {
    let mut t = words.trim();
    while let Some((first, rest)) = t.split_once(|c: char| c.is_whitespace() || c == ',') {
        let bare = first
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        if !MARKERS.contains(&bare.as_str()) || rest.trim().is_empty() {
            break;
        }
        t = rest.trim_start_matches([' ', ',', '.', '!', '-']).trim();
    }
    capitalized(&resolve(t, open))
}

/// Extensions a user names a file by ("the py file").
const KINDS: &[&str] = &[
    "py", "rs", "go", "ts", "tsx", "js", "jsx", "json", "yaml", "yml", "toml", "md", "sh", "css",
    "html", "sql", "conf", "config", "ini", "txt", "lua", "rb", "java", "kt", "swift", "c", "cpp",
    "h",
];

/// `text` with "the file" and "the py file" replaced by the file's name in backquotes, when
/// the episode touched exactly one file of that kind (one file at all for "the file"). Why: a
/// lesson read later, away from its session, cannot tell which file "the file" was.
pub(super) fn resolve(text: &str, open: &Open) -> String {
    let names: Vec<&str> = open
        .files
        .iter()
        .map(|f| f.rsplit(['/', '\\']).next().unwrap_or(f))
        .collect();
    let of_kind = |kind: Option<&str>| -> Option<&str> {
        let mut found: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| kind.is_none_or(|k| n.rsplit_once('.').is_some_and(|(_, e)| e == k)))
            .collect();
        found.dedup();
        (found.len() == 1).then(|| found[0])
    };
    // Found case-blind, in ASCII lower case only, so that byte positions in `lower` are those
    // of `text` (a full lower-casing may change a character's length).
    let lower = text.to_ascii_lowercase();
    let mut out = text.to_string();
    // Longest forms first, so "the py file" is not read as "the file" after "py".
    for kind in KINDS {
        let form = format!("the {kind} file");
        if let (Some(i), Some(name)) = (lower.find(&form), of_kind(Some(kind))) {
            out.replace_range(i..i + form.len(), &format!("`{name}`"));
            return out;
        }
    }
    // "the class": the one source file of a language with classes, by its name.
    if let Some(i) = lower.find("the class") {
        let classy = ["java", "kt", "cs", "ts", "py", "swift", "rb", "cpp"];
        let mut found: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| n.rsplit_once('.').is_some_and(|(_, e)| classy.contains(&e)))
            .collect();
        found.dedup();
        let end = i + "the class".len();
        let whole = lower[end..]
            .chars()
            .next()
            .is_none_or(|c| !c.is_alphanumeric());
        if let ([name], true) = (found.as_slice(), whole) {
            let stem = name.rsplit_once('.').map_or(*name, |(s, _)| s);
            out.replace_range(i..end, &format!("the class `{stem}`"));
            return out;
        }
    }
    if let (Some(i), Some(name)) = (lower.find("the file"), of_kind(None)) {
        let end = i + "the file".len();
        let whole = lower[end..]
            .chars()
            .next()
            .is_none_or(|c| !c.is_alphanumeric());
        if whole {
            out.replace_range(i..end, &format!("`{name}`"));
        }
    }
    out
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

    #[test]
    fn text_that_is_not_ascii_is_cut_safely() {
        // A Korean reason once made the lead test slice inside a character.
        let ko =
            "이는 material tailwind react v2의 타입 정의가 props를 필수로 요구하기 때문입니다.";
        assert_eq!(without_lead(ko), ko);
        assert_eq!(without_lead("é"), "é");
        let open = crate::episode::tests::open_with_files(&["/x/a.py"]);
        assert_eq!(resolve("İİ the py file 이는", &open), "İİ `a.py` 이는");
        assert_eq!(rule_title("아니 the file 이는", &open), "아니 `a.py` 이는");
    }

    #[test]
    fn titles_open_with_the_point() {
        for (text, want) in [
            ("I see the issue. The trailer is not separated by a blank line.", "The trailer is not separated by a blank line."),
            ("The issue is clear — it's trying to build for the embedded target", "it's trying to build for the embedded target"),
            ("Looking at the git status from earlier: The issue: these files regenerate every time", "The issue: these files regenerate every time"),
            ("My recommendation: Option 1 - Check at checkpoint time", "Option 1 - Check at checkpoint time"),
            ("Yes, the failed requests are wasteful.", "the failed requests are wasteful."),
            ("The cache key ignored the version.", "The cache key ignored the version."),
            ("Great.", "Great."),
        ] {
            assert_eq!(without_lead(text), want, "{text}");
        }
    }

    #[test]
    fn rules_lose_their_markers_and_name_their_file() {
        let mut open = crate::episode::tests::open_with_files(&[
            "/home/u/app/cal.py",
            "/home/u/app/pyproject.toml",
        ]);
        assert_eq!(
            rule_title("No, use the md-card like the other views", &open),
            "Use the md-card like the other views"
        );
        assert_eq!(
            rule_title(
                "Let's keep the name of the py file but change the pyproject script to reference it",
                &open
            ),
            "Let's keep the name of `cal.py` but change the pyproject script to reference it"
        );
        // Two files: "the file" names neither.
        assert_eq!(resolve("revert the file", &open), "revert the file");
        open.files.truncate(1);
        assert_eq!(resolve("revert the file", &open), "revert `cal.py`");
        assert_eq!(
            resolve("the filename is wrong", &open),
            "the filename is wrong"
        );
        let open =
            crate::episode::tests::open_with_files(&["/x/src/YamlConfig.java", "/x/pom.xml"]);
        assert_eq!(
            resolve("please add setters to the class to ease testing", &open),
            "please add setters to the class `YamlConfig` to ease testing"
        );
    }
}
