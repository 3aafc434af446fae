//! Whether a user's words state a rule (what to do or not to do from now on) and where they
//! stop being the user's words (pasted output after them).
//!
//! Why in the text leaf: the session-start digest orders corrections by it, and snippet drafting
//! keeps a correction only when it states a rule or the assistant states the lesson for it; one
//! copy keeps the two agreeing on what a rule is.

/// Words that make a correction a standing preference wherever they stand ("we should not put
/// the password in that file", "I'd rather keep the old name", "always run the linter").
const RULE_WORDS: [&str; 12] = [
    "should",
    "shouldn't",
    "must",
    "mustn't",
    "need",
    "want",
    "prefer",
    "rather",
    "instead",
    "always",
    "never",
    "avoid",
];

/// Words that state a rule when they open a clause, as an imperative does ("don't touch the
/// tests", "lets just go back to solid orange", "use the md-card like the other views"); after
/// a subject they describe ("i dont see it in the repo").
const RULE_OPENERS: [&str; 9] = [
    "don't", "dont", "stop", "use", "keep", "let's", "lets", "only", "please",
];

/// Two-word forms: "make sure", "i'd like", "would like", "do not" opening a clause.
fn rule_pair(prev: &str, word: &str, opens: bool) -> bool {
    matches!(
        (prev, word),
        ("make", "sure") | ("i'd", "like") | ("would", "like")
    ) || (opens && prev == "do" && word == "not")
}

/// Whether a correction in the user's words states what to do or not to do from now on (a
/// modal, a preference, an imperative), rather than only reporting what they saw ("i didnt see
/// it before"). Why: a report of one moment's result tells the next session nothing it can act
/// on; a rule does.
pub fn states_a_rule(said: &str) -> bool {
    let lower = said.to_lowercase().replace('\u{2019}', "'");
    let mut prev = "";
    // Whether the current word opens a clause, and whether the previous one did.
    let (mut opens, mut prev_opened) = (true, false);
    for raw in lower.split_whitespace() {
        let word = raw.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'');
        if RULE_WORDS.contains(&word)
            || (opens && RULE_OPENERS.contains(&word))
            || rule_pair(prev, word, prev_opened)
        {
            return true;
        }
        prev_opened = opens;
        // A clause ends at its punctuation; "and", "but", "so", "then", "just" and "please"
        // leave the next word opening it ("and just use ...").
        opens = matches!(word, "just" | "and" | "but" | "so" | "then" | "please")
            || raw.ends_with(['.', ',', ';', ':', '!', '?']);
        prev = word;
    }
    false
}

/// Whether a word is the start of something pasted rather than typed: a clock time
/// (`12:03:44`), a date (`2026-11-20`), a log level in brackets (`[ERROR]`, `[WARN]`), an
/// exception or error statement (`KeyError:`, `error[E0425]:`), a path of three or more parts,
/// or a source line's number before a comment or code (`351 #`, `12 |`).
fn pasted_word(word: &str, next: Option<&str>) -> bool {
    let w = word.trim_matches(|c: char| "\"'`(),".contains(c));
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    let clock = {
        let parts: Vec<&str> = w.split(':').collect();
        parts.len() >= 3 && parts.iter().take(3).all(|p| p.len() == 2 && digits(p))
    };
    let date = {
        let parts: Vec<&str> = w.split(['-', '/']).collect();
        parts.len() == 3
            && parts[0].len() == 4
            && digits(parts[0])
            && parts[1].len() == 2
            && digits(parts[1])
            && parts[2].get(..2).is_some_and(digits)
    };
    let level = [
        "[error]",
        "[warn]",
        "[warning]",
        "[info]",
        "[debug]",
        "[trace]",
    ]
    .iter()
    .any(|l| w.to_ascii_lowercase().starts_with(l));
    let statement = w.ends_with(':') && super::is_error_statement(w);
    let path = w.matches('/').count() >= 3 || w.matches('\\').count() >= 3;
    let numbered = digits(w) && next.is_some_and(|n| n == "#" || n == "|" || n == "//");
    clock || date || level || statement || path || numbered
}

/// The words the user typed before anything pasted after them: the first line that is not
/// blank, cut where a pasted piece begins (see [`pasted_word`]), trimmed. Empty when the text
/// opens with a paste (a log line, a traceback, a listing).
pub fn typed_words(text: &str) -> &str {
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let mut words = first.split_whitespace().peekable();
    let mut offset = 0;
    while let Some(w) = words.next() {
        let at = first[offset..].find(w).map_or(offset, |i| offset + i);
        if pasted_word(w, words.peek().copied()) {
            return first[..at].trim_end_matches([' ', ':', '-', ',']).trim();
        }
        offset = at + w.len();
    }
    first
}

/// Whether a text is mostly pasted output rather than words typed to someone: what the user
/// typed before the paste (see [`typed_words`]) is under three words.
pub fn looks_pasted(text: &str) -> bool {
    super::word_count(typed_words(text)) < 3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_told_from_reports() {
        // Corrections from the corpus's digests, and a few made up.
        for rule in [
            "I think we should not be placing my password even if temporary into the user file",
            "lets just go back to solid orange for now",
            "I dont want to change the city I want it automatically detected",
            "don't touch the tests",
            "No, use the md-card like the other views",
            "color it orange, and just keep the font",
            "Do not add a config file",
            "make sure the port is free",
        ] {
            assert!(states_a_rule(rule), "{rule}");
        }
        for report in [
            "i dont see it in the repo",
            "i dont think it copied to ventoy partition",
            "i didnt see it before",
            "we changed wallpaper and sleep time to 10 minutes it seems short again",
            "i have this error it does not cause any issues so i just leave it alone",
            "I do see the button now",
            "do you see it? it looks like the old one",
            "not sure it works",
        ] {
            assert!(!states_a_rule(report), "{report}");
        }
    }

    #[test]
    fn pasted_output_is_cut_from_typed_words() {
        // A new user's digest offered this as a correction (FreeRDP's log after the words).
        assert_eq!(
            typed_words(
                "no when i sign out it closes the rdp session maybe because of this 351 # After RDP closes, check"
            ),
            "no when i sign out it closes the rdp session maybe because of this"
        );
        assert_eq!(
            typed_words("still failing: [ERROR] connection refused"),
            "still failing"
        );
        assert_eq!(
            typed_words("it broke again 2026-11-20 12:03:44 worker stopped"),
            "it broke again"
        );
        assert_eq!(
            typed_words("don't touch the tests"),
            "don't touch the tests"
        );
        assert!(looks_pasted(
            "[12:03:44:120] [4521:4522] [WARN][com.freerdp.core] - session closed"
        ));
        assert!(looks_pasted(
            "KeyError: 'user'\n  File \"/home/u/app/main.py\", line 3"
        ));
        assert!(looks_pasted("/home/u/app/src/main.rs is missing"));
        assert!(!looks_pasted("use the md-card like the other views"));
        assert!(!looks_pasted("the build fails on main.rs since yesterday"));
    }
}
