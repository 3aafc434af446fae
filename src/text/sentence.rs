//! Where sentences end in assistant prose: one splitter for titles, observations, lessons and
//! the evidence of a phrase.
//!
//! A dot ends a sentence only when it could: not inside inline code (`manual_commit_git.go`),
//! not in a file name, path, version or number (`config.toml`, `v1.2.3`, `3.5`: no space
//! follows), not after an abbreviation (`e.g.`, `i.e.`, `etc.`, `vs.`) or an initial, and not
//! when the next word starts in lower case (a sentence starts with a capital, a digit or
//! markup). A line end always ends one; a heading or a table row is never one.

/// Words that end with a dot without ending a sentence (lower case, without the dot).
const ABBREVIATIONS: &[&str] = &[
    "e.g", "i.e", "etc", "vs", "cf", "approx", "incl", "resp", "esp", "mr", "mrs", "ms", "dr",
    "st", "jr", "no", "fig", "al", "min", "max", "sec", "ca", "viz", "aka", "u.s", "a.k.a",
];

/// Characters that end a sentence.
fn is_terminator(c: char) -> bool {
    matches!(c, '.' | '!' | '?' | '。' | '！' | '？')
}

/// Whether the terminator at byte `i` of `line` ends a sentence (see the module).
fn ends_at(line: &str, i: usize, c: char) -> bool {
    if matches!(c, '。' | '！' | '？') {
        return true;
    }
    // Inside inline code: an odd number of backticks before it on the line.
    if line[..i].matches('`').count() % 2 == 1 {
        return false;
    }
    let rest = &line[i + c.len_utf8()..];
    // Closing quotes, brackets or emphasis may follow; then a space or the line's end.
    let after = rest.trim_start_matches(['"', '\'', ')', ']', '*', '_', '”', '’']);
    match after.chars().next() {
        None => return true,
        Some(n) if !n.is_whitespace() => return false,
        Some(_) => {}
    }
    if c != '.' {
        return true;
    }
    // The word the dot closes.
    let word_start = line[..i]
        .rfind(|ch: char| ch.is_whitespace() || ch == '(')
        .map_or(0, |s| s + 1);
    let word = line[word_start..i]
        .trim_start_matches(|ch: char| !ch.is_alphanumeric())
        .to_lowercase();
    if ABBREVIATIONS.contains(&word.as_str()) {
        return false;
    }
    // An initial ("J. Smith") or a list marker at the start of the line ("1.").
    let letters = word.chars().count();
    if letters == 1 && word.chars().all(char::is_alphabetic) {
        return false;
    }
    if word_start == line.len() - line.trim_start().len()
        && !word.is_empty()
        && word.chars().all(|ch| ch.is_ascii_digit())
    {
        return false;
    }
    // The next sentence starts with a capital, a digit or markup; a lower-case word goes on.
    !after
        .trim_start()
        .chars()
        .next()
        .is_some_and(char::is_lowercase)
}

/// Byte offsets (in `line`) just past each sentence end inside one line.
fn ends_in_line(line: &str) -> Vec<usize> {
    line.char_indices()
        .filter(|&(i, c)| is_terminator(c) && ends_at(line, i, c))
        .map(|(i, c)| i + c.len_utf8())
        .collect()
}

/// Whether a line is a heading, a table row or a fence: never a sentence.
fn is_structure(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with('#') || t.starts_with('|') || t.starts_with("```")
}

/// The sentences of a text, in order: split where a sentence ends (see the module) and at line
/// ends, trimmed, without list markers or emphasis around them; code blocks, headings and table
/// rows left out. A piece of 20 bytes or less is joined to the next one ("Done. The cache ...").
pub fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || is_structure(line) {
            continue;
        }
        let line = line
            .trim()
            .trim_start_matches(['-', '*', '•'])
            .trim()
            .trim_matches('*');
        if line.is_empty() {
            continue;
        }
        let mut start = 0;
        for end in ends_in_line(line) {
            if end - start > 21 {
                out.push(line[start..end].trim().to_string());
                start = end;
            }
        }
        if line[start..].trim().len() > 3 {
            out.push(line[start..].trim().to_string());
        }
    }
    out
}

/// Byte length of the first sentence of a one-line text, when it ends before the line does
/// and is at least `min` bytes long.
pub fn first_end(line: &str, min: usize) -> Option<usize> {
    ends_in_line(line)
        .into_iter()
        .find(|&e| e >= min && e < line.trim_end().len())
}

/// The sentence of `text` holding bytes `start..end`: from the end of the sentence before it
/// (or the line's start) to its own end (or the line's end).
pub fn sentence_around(text: &str, start: usize, end: usize) -> String {
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[end..].find('\n').map_or(text.len(), |i| end + i);
    let line = &text[line_start..line_end];
    let (s, e) = (start - line_start, end - line_start);
    let ends = ends_in_line(line);
    let from = ends.iter().rev().find(|&&x| x <= s).copied().unwrap_or(0);
    let to = ends
        .iter()
        .find(|&&x| x >= e)
        .copied()
        .unwrap_or(line.len());
    line[from..to].trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_paths_versions_and_abbreviations_end_no_sentence() {
        let t = "The root cause is in `manual_commit_git.go`. It drops the trailer.";
        assert_eq!(
            sentences(t),
            [
                "The root cause is in `manual_commit_git.go`.",
                "It drops the trailer."
            ]
        );
        let t = "Bumped serde to 1.0.210 in Cargo.toml and config.yaml, e.g. for the derive. Then it built.";
        assert_eq!(sentences(t).len(), 2, "{:?}", sentences(t));
        assert!(sentences(t)[0].ends_with("for the derive."));
        // An initial, a list marker, "vs." and a lower-case word after a dot.
        assert_eq!(sentences("Written by J. Smith for the team.").len(), 1);
        assert_eq!(sentences("1. Copy the files during the build").len(), 1);
        assert_eq!(
            sentences("Pick a bridge vs. macvlan for the container network").len(),
            1
        );
        // Headings and table rows are not sentences.
        assert!(sentences("## My Instinct\n| a | b |").is_empty());
        // Short pieces join the next one.
        assert_eq!(
            sentences("Done. The cache key now includes the version."),
            ["Done. The cache key now includes the version."]
        );
    }

    #[test]
    fn the_sentence_around_a_phrase() {
        let t =
            "Found it. The root cause is in `manual_commit_git.go`: the loop breaks early. Fixed.";
        let at = t.find("root cause").unwrap();
        assert_eq!(
            sentence_around(t, at, at + 10),
            "The root cause is in `manual_commit_git.go`: the loop breaks early."
        );
        let t = "Fallbacks stay useful (e.g., states written by older versions), but the root cause is fixed.";
        let at = t.find("root cause").unwrap();
        assert!(sentence_around(t, at, at + 10).starts_with("Fallbacks"));
        assert_eq!(first_end("Short. And then a long sentence.", 3), Some(6));
        assert_eq!(first_end("One sentence only.", 3), None);
    }
}
