//! Excerpts for PostgreSQL results, cut and marked here with the rules that indexed the text.
//!
//! Why not `ts_headline`: it re-parses every result's whole text with the server's slow parser
//! (60 ms for a page of long assistant messages, more than the search itself). Here the words
//! are found as [`crate::extract::lexemes`] found them for the index, so what is marked is
//! what matched.

use super::{Query, START, STOP};
use crate::extract::lexemes::{first_letter, lexeme};

/// Words in an excerpt.
const WINDOW: usize = 24;

/// The query's positive terms as lexemes: `(lexeme, prefix)`.
pub(super) fn terms(q: &Query) -> Vec<(String, bool)> {
    q.positive_terms()
        .into_iter()
        .filter_map(|(w, prefix)| Some((lexeme(&w)?, prefix)))
        .collect()
}

/// The words of `text` with their byte ranges (a CJK character is a word of its own, as the
/// index has it: `extract::lexemes::words`).
fn spans(text: &str) -> Vec<(usize, usize)> {
    use crate::extract::lexemes::is_cjk;
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        if is_cjk(c) {
            if let Some(s) = start.take() {
                out.push((s, i));
            }
            out.push((i, i + c.len_utf8()));
            continue;
        }
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
    // Stemming every word was most of a page's cost (a long message has thousands of words).
    // A lexeme keeps its word's first letter (the English stemmer rewrites endings only, and
    // a word here is letters and digits), so a word whose first letter starts no term is no
    // match and is not stemmed.
    let firsts: Vec<char> = terms.iter().filter_map(|(t, _)| t.chars().next()).collect();
    let first = first_letter;
    let hit: Vec<bool> = words
        .iter()
        .map(|&(s, e)| {
            let word = &text[s..e];
            first(word).is_some_and(|c| firsts.contains(&c))
                && lexeme(word).is_some_and(|l| {
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

    /// What the first-letter filter of [`excerpt`] relies on: a word's lexeme starts with the
    /// word's first letter, lowercased and without accents (the stemmer's exceptions included).
    #[test]
    fn a_lexeme_keeps_its_first_letter() {
        let first = first_letter;
        let tricky = [
            "dying",
            "lying",
            "tying",
            "Yelling",
            "yes",
            "skies",
            "ugly",
            "early",
            "news",
            "Generously",
            "relational",
            "İstanbul",
            "Ünïcode",
            "ΣΑΣ",
            "Straße",
            "x86",
            "a",
        ];
        for w in tricky {
            if let Some(l) = lexeme(w) {
                assert_eq!(l.chars().next(), first(w), "{w} -> {l}");
            }
        }
        proptest::proptest!(|(w in "[a-zA-Zà-öø-ÿ0-9]{1,20}")| {
            if let Some(l) = lexeme(&w) {
                proptest::prop_assert_eq!(l.chars().next(), first(&w), "{} -> {}", w, l);
            }
        });
    }
}
