//! Whether two short texts say the same thing: most of the shorter one's words are the other's.
//!
//! Why in the text leaf: a session's snippets and the session-start digest both refuse to say
//! one thing twice (a correction quoted and its snippet, two episodes finding the same cause),
//! and should agree on what "the same" is.

use std::collections::BTreeSet;

/// Words too common to tell two statements apart.
const STOP: &[&str] = &[
    "the", "and", "that", "this", "these", "those", "for", "with", "was", "were", "are", "is",
    "its", "it's", "but", "not", "from", "into", "then", "than", "there", "here", "issue",
    "problem", "you", "your", "our", "has", "have", "had", "can", "will", "would", "should",
];

/// The words a text says: lowercased words of three letters or more, common ones left out.
pub fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .filter(|w| !STOP.contains(&w.as_str()))
        .collect()
}

/// Whether two word sets (see [`words`]) say one thing: at least 70 % of the shorter one's
/// words, and at least three, are the other's.
pub fn says_again(a: &BTreeSet<String>, b: &BTreeSet<String>) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    short.len() >= 3 && short.intersection(long).count() * 10 >= short.len() * 7
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_cause_found_twice_is_one_thing() {
        let a = words("The issue is that biome is formatting the committed Prisma files every time it runs, creating diffs.");
        let b = words("The issue: These Prisma files regenerate every time db:generate runs, creating new diffs.");
        assert!(says_again(&a, &b));
        let c = words("Vercel needs to know to check out the submodule during build.");
        assert!(!says_again(&a, &c));
        // Too few words to tell.
        assert!(!says_again(&words("fix it"), &words("fix it")));
    }
}
