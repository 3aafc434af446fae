//! Excerpts for PostgreSQL results, cut and marked here with the rules that indexed the text.
//!
//! Why not `ts_headline`: it re-parses every result's whole text with the server's slow parser
//! (60 ms for a page of long assistant messages, more than the search itself). Here the words
//! are found as [`crate::extract::lexemes`] found them for the index, so what is marked is
//! what matched.

use super::{Query, START, STOP};
use crate::extract::lexemes::lexeme;

/// Words in an excerpt.
const WINDOW: usize = 24;

/// The query's positive terms as lexemes: `(lexeme, prefix)`.
pub(super) fn terms(q: &Query) -> Vec<(String, bool)> {
    q.positive_terms()
        .into_iter()
        .filter_map(|(w, prefix)| Some((lexeme(&w)?, prefix)))
        .collect()
}

/// The words of `text` with their byte ranges.
fn spans(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, text.len()));
    }
    out
}

/// About [`WINDOW`] words of `text` around the densest run of matches, each match between
/// [`START`] and [`STOP`], `…` where the text goes on.
pub(super) fn excerpt(text: &str, terms: &[(String, bool)]) -> String {
    let words = spans(text);
    let hit: Vec<bool> = words
        .iter()
        .map(|&(s, e)| {
            lexeme(&text[s..e]).is_some_and(|l| {
                terms.iter().any(|(t, prefix)| {
                    if *prefix {
                        l.starts_with(t.as_str())
                    } else {
                        l == *t
                    }
                })
            })
        })
        .collect();
    // The window of WINDOW words holding the most matches (the first such one).
    let n = words.len();
    let w = WINDOW.min(n);
    let (mut best, mut best_at, mut count) = (0, 0, 0);
    for i in 0..n {
        count += usize::from(hit[i]);
        if i >= w {
            count -= usize::from(hit[i - w]);
        }
        if i + 1 >= w && count > best {
            best = count;
            best_at = i + 1 - w;
        }
    }
    // Start a little before the first match of the window when it is not at its start.
    let first = (best_at..best_at + w).find(|&i| hit[i]).unwrap_or(best_at);
    let from = first
        .saturating_sub(3)
        .max(best_at.saturating_sub(3).min(first));
    let to = (from + w).min(n);
    if n == 0 {
        return String::new();
    }
    let mut out = String::new();
    if from > 0 {
        out.push('…');
    }
    let start_byte = words[from].0;
    let mut at = start_byte;
    for (i, &(s, e)) in words.iter().enumerate().take(to).skip(from) {
        out.push_str(&text[at..s]);
        if hit[i] {
            out.push(START);
            out.push_str(&text[s..e]);
            out.push(STOP);
        } else {
            out.push_str(&text[s..e]);
        }
        at = e;
    }
    if to < n {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    fn marked(text: &str, q: &str) -> String {
        excerpt(text, &terms(&parse(q).unwrap()))
            .replace(START, "[")
            .replace(STOP, "]")
    }

    #[test]
    fn marks_stemmed_words_and_prefixes() {
        assert_eq!(
            marked("Ran the Migrations, then migrated.", "migration"),
            "Ran the [Migrations], then [migrated]"
        );
        assert_eq!(
            marked("a quick migratory bird", "migrat*"),
            "a quick [migratory] bird"
        );
    }

    #[test]
    fn cuts_around_the_densest_matches() {
        let text = format!(
            "{} flaky auth test here {}",
            "word ".repeat(100),
            "tail ".repeat(100)
        );
        let e = marked(&text, "flaky auth");
        assert!(e.starts_with('…') && e.ends_with('…'), "{e}");
        assert!(e.contains("[flaky] [auth] test"), "{e}");
        assert!(e.split_whitespace().count() <= WINDOW + 2, "{e}");
        assert_eq!(marked("", "x"), "");
    }
}
