//! The search query language, parsed once for both backends.
//!
//! ```text
//! query  := or
//! or     := and ("OR" and)*
//! and    := unary (["AND"] unary)*          implicit AND between terms
//! unary  := ("NOT" | "-") unary | atom
//! atom   := "\"" words "\"" | word ["*"] | "(" or ")"
//! ```
//!
//! Operators are the upper-case words `AND`, `OR`, `NOT` (lower-case ones are ordinary words,
//! as in most search boxes); `-word` negates. Why a parser of our own rather than handing the
//! text to FTS5 or `websearch_to_tsquery`: FTS5 answers a stray quote or operator with an SQL
//! error, and `websearch_to_tsquery` silently drops what it cannot read and has no prefix
//! operator. Parsing first gives one language on both backends, a clear message for a query
//! that means nothing (an unbalanced quote, an operator alone, a lone `*`), and an SQL text
//! built from the tree, so the user's text only ever reaches the database as bound values.

use std::fmt;

/// A parsed query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    /// One word; `prefix`: written `word*`.
    Term {
        /// The word as typed.
        word: String,
        /// Matches any word starting with it.
        prefix: bool,
    },
    /// Words that must appear in this order (`"exact words"`); `prefix`: the last word is a
    /// prefix (`foo.ba*`).
    Phrase {
        /// The words, lower-case.
        words: Vec<String>,
        /// The last word matches any word starting with it.
        prefix: bool,
    },
    /// Every part matches.
    And(Vec<Query>),
    /// Some part matches.
    Or(Vec<Query>),
    /// The part does not match (only inside an `And` with a positive part).
    Not(Box<Query>),
}

/// Why a query cannot be run. Each message names the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// Nothing to search for.
    #[error("empty search query")]
    Empty,
    /// Text with no letter or digit (`🙂`, `...`): neither index keeps such characters, so
    /// there is nothing to look for; said apart from an empty query so the user sees why.
    #[error("search query {0:?} has no letters or digits to search for")]
    NoWords(String),
    /// A `"` without its closing partner.
    #[error("unbalanced quote in search query (a phrase needs a closing \")")]
    UnbalancedQuote,
    /// A `(` without `)` or the reverse.
    #[error("unbalanced parenthesis in search query")]
    UnbalancedParen,
    /// `AND`, `OR` or `NOT` with nothing to apply to.
    #[error("operator {0} needs a term on each side")]
    DanglingOperator(&'static str),
    /// A `*` that follows no word.
    #[error("a lone * matches nothing: write it right after a word, as in migrat*")]
    LoneStar,
    /// A `*` inside a word (`x*y`): a prefix mark only ends a word.
    #[error("{0:?}: a * can only end a word, as in migrat*")]
    InnerStar(String),
    /// Only negated terms: there is nothing to look for.
    #[error("a query needs at least one term that is not negated")]
    OnlyNegated,
    /// A negation inside `OR` (the index cannot answer "this or not that").
    #[error("NOT cannot be a choice of OR; negate outside the OR, as in: a NOT (b OR c)")]
    NegatedChoice,
    /// A phrase with no word in it.
    #[error("empty phrase \"\" in search query")]
    EmptyPhrase,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Word(String, bool),
    Phrase(Vec<String>, bool),
    And,
    Or,
    Not,
    Open,
    Close,
}

/// Characters that end a word (besides white space).
fn is_break(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '(' | ')')
}

/// The words of a phrase or a bare word: runs of letters and digits (what both indexes'
/// tokenizers keep), so `foo.bar` is the phrase `foo bar`.
fn words(s: &str) -> Vec<String> {
    // The index's own word rule: a CJK character is a word of its own, so a run of them
    // (`修正`) is a phrase of its characters, found inside a longer run (`幫我修正`).
    crate::extract::lexemes::words(s)
        .map(|(_, w)| w.to_lowercase())
        .collect()
}

fn lex(input: &str) -> Result<Vec<Tok>, QueryError> {
    let mut out = Vec::new();
    let mut chars = input.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            '(' => out.push(Tok::Open),
            ')' => out.push(Tok::Close),
            '"' => {
                let rest = &input[i + 1..];
                let Some(end) = rest.find('"') else {
                    return Err(QueryError::UnbalancedQuote);
                };
                let w = words(&rest[..end]);
                if w.is_empty() {
                    return Err(QueryError::EmptyPhrase);
                }
                out.push(Tok::Phrase(w, false));
                // Skip to after the closing quote.
                while let Some(&(j, _)) = chars.peek() {
                    if j > i + end + 1 {
                        break;
                    }
                    chars.next();
                }
            }
            '-' if out
                .last()
                .is_none_or(|t| !matches!(t, Tok::Word(..) | Tok::Phrase(..)))
                || chars.peek().is_some_and(|&(_, n)| !n.is_whitespace()) =>
            {
                // `-word` negates; a `-` inside a word (`top-level`) never reaches here.
                out.push(Tok::Not);
            }
            '*' => return Err(QueryError::LoneStar),
            _ => {
                let mut end = input.len();
                while let Some(&(j, n)) = chars.peek() {
                    if is_break(n) {
                        end = j;
                        break;
                    }
                    chars.next();
                }
                let raw = &input[i..end];
                match raw {
                    "AND" => out.push(Tok::And),
                    "OR" => out.push(Tok::Or),
                    "NOT" => out.push(Tok::Not),
                    _ => {
                        let (body, prefix) = match raw.strip_suffix('*') {
                            Some(b) => (b, true),
                            None => (raw, false),
                        };
                        if body.contains('*') {
                            return Err(QueryError::InnerStar(raw.to_string()));
                        }
                        let w = words(body);
                        match (w.len(), prefix) {
                            (0, true) => return Err(QueryError::LoneStar),
                            (0, false) => {} // punctuation only: nothing to search
                            (1, _) => out.push(Tok::Word(w[0].clone(), prefix)),
                            _ => out.push(Tok::Phrase(w, prefix)),
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}

fn term(w: &str, prefix: bool) -> Query {
    Query::Term {
        word: w.to_string(),
        prefix,
    }
}

struct Parser {
    toks: Vec<Tok>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at)
    }

    fn or(&mut self) -> Result<Query, QueryError> {
        let mut parts = vec![self.and()?];
        while self.peek() == Some(&Tok::Or) {
            self.at += 1;
            if matches!(self.peek(), None | Some(Tok::Or | Tok::And | Tok::Close)) {
                return Err(QueryError::DanglingOperator("OR"));
            }
            parts.push(self.and()?);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Query::Or(parts)
        })
    }

    fn and(&mut self) -> Result<Query, QueryError> {
        let mut parts = vec![self.unary()?];
        loop {
            match self.peek() {
                Some(Tok::And) => {
                    self.at += 1;
                    if matches!(self.peek(), None | Some(Tok::Or | Tok::And | Tok::Close)) {
                        return Err(QueryError::DanglingOperator("AND"));
                    }
                }
                Some(Tok::Word(..) | Tok::Phrase(..) | Tok::Not | Tok::Open) => {}
                _ => break,
            }
            parts.push(self.unary()?);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Query::And(parts)
        })
    }

    fn unary(&mut self) -> Result<Query, QueryError> {
        match self.peek().cloned() {
            Some(Tok::Not) => {
                self.at += 1;
                if matches!(self.peek(), None | Some(Tok::Or | Tok::And | Tok::Close)) {
                    return Err(QueryError::DanglingOperator("NOT"));
                }
                Ok(Query::Not(Box::new(self.unary()?)))
            }
            Some(Tok::Word(w, prefix)) => {
                self.at += 1;
                Ok(term(&w, prefix))
            }
            Some(Tok::Phrase(words, prefix)) => {
                self.at += 1;
                Ok(Query::Phrase { words, prefix })
            }
            Some(Tok::Open) => {
                self.at += 1;
                let q = self.or()?;
                if self.peek() != Some(&Tok::Close) {
                    return Err(QueryError::UnbalancedParen);
                }
                self.at += 1;
                Ok(q)
            }
            Some(Tok::Close) => Err(QueryError::UnbalancedParen),
            Some(Tok::And) => Err(QueryError::DanglingOperator("AND")),
            Some(Tok::Or) => Err(QueryError::DanglingOperator("OR")),
            None => Err(QueryError::Empty),
        }
    }
}

/// Parse a query (see the module docs).
pub fn parse(input: &str) -> Result<Query, QueryError> {
    let toks = lex(input)?;
    if toks.is_empty() {
        return Err(match input.trim() {
            "" => QueryError::Empty,
            text => QueryError::NoWords(text.to_string()),
        });
    }
    let mut p = Parser { toks, at: 0 };
    let q = p.or()?;
    if p.at != p.toks.len() {
        return Err(match p.peek() {
            Some(Tok::Close) => QueryError::UnbalancedParen,
            Some(Tok::Or) => QueryError::DanglingOperator("OR"),
            _ => QueryError::DanglingOperator("AND"),
        });
    }
    check(&q, false)?;
    if !has_positive(&q) {
        return Err(QueryError::OnlyNegated);
    }
    Ok(q)
}

/// Negations only as parts of an `And` that also has a positive part.
fn check(q: &Query, in_or: bool) -> Result<(), QueryError> {
    match q {
        Query::Term { .. } | Query::Phrase { .. } => Ok(()),
        Query::Not(_) if in_or => Err(QueryError::NegatedChoice),
        Query::Not(inner) => check(inner, false),
        Query::Or(parts) => parts.iter().try_for_each(|p| check(p, true)),
        Query::And(parts) => {
            if !parts.iter().any(has_positive) {
                return Err(QueryError::OnlyNegated);
            }
            parts.iter().try_for_each(|p| check(p, false))
        }
    }
}

fn has_positive(q: &Query) -> bool {
    match q {
        Query::Term { .. } | Query::Phrase { .. } => true,
        Query::Not(_) => false,
        Query::Or(parts) | Query::And(parts) => parts.iter().any(has_positive),
    }
}

impl Query {
    /// The FTS5 form: every word quoted (so no text of the user's is read as syntax), prefix
    /// terms as `"word" *`, negations as FTS5's binary `NOT` after the positive parts.
    pub fn fts5(&self) -> String {
        match self {
            Query::Term { word, prefix } => {
                let q = quote(word);
                if *prefix {
                    format!("{q} *")
                } else {
                    q
                }
            }
            Query::Phrase { words, prefix } => {
                let q = quote(&words.join(" "));
                if *prefix {
                    format!("{q} *")
                } else {
                    q
                }
            }
            Query::Or(parts) => {
                let p: Vec<String> = parts.iter().map(|p| format!("({})", p.fts5())).collect();
                p.join(" OR ")
            }
            Query::And(parts) => {
                let pos: Vec<String> = parts
                    .iter()
                    .filter(|p| !matches!(p, Query::Not(_)))
                    .map(|p| format!("({})", p.fts5()))
                    .collect();
                let mut s = pos.join(" AND ");
                for n in parts.iter().filter_map(|p| match p {
                    Query::Not(inner) => Some(inner),
                    _ => None,
                }) {
                    s = format!("({s}) NOT ({})", n.fts5());
                }
                s
            }
            // Only reached for a lone negation, which `parse` rejects.
            Query::Not(inner) => inner.fts5(),
        }
    }

    /// The words and prefixes of the positive parts (to mark matches in an excerpt).
    pub fn positive_terms(&self) -> Vec<(String, bool)> {
        let mut out = Vec::new();
        fn walk(q: &Query, out: &mut Vec<(String, bool)>) {
            match q {
                Query::Term { word, prefix } => out.push((word.clone(), *prefix)),
                Query::Phrase { words, prefix } => {
                    let last = words.len().saturating_sub(1);
                    out.extend(
                        words
                            .iter()
                            .enumerate()
                            .map(|(i, x)| (x.clone(), *prefix && i == last)),
                    );
                }
                Query::And(p) | Query::Or(p) => p.iter().for_each(|x| walk(x, out)),
                Query::Not(_) => {}
            }
        }
        walk(self, &mut out);
        out
    }
}

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

impl fmt::Display for Query {
    /// The query in its own syntax (normalised).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Query::Term { word, prefix } => write!(f, "{word}{}", if *prefix { "*" } else { "" }),
            Query::Phrase { words, prefix } => {
                write!(
                    f,
                    "\"{}\"{}",
                    words.join(" "),
                    if *prefix { "*" } else { "" }
                )
            }
            Query::And(p) => {
                let s: Vec<String> = p.iter().map(|x| format!("({x})")).collect();
                write!(f, "{}", s.join(" AND "))
            }
            Query::Or(p) => {
                let s: Vec<String> = p.iter().map(|x| format!("({x})")).collect();
                write!(f, "{}", s.join(" OR "))
            }
            Query::Not(q) => write!(f, "NOT ({q})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phrase(w: &[&str], prefix: bool) -> Query {
        Query::Phrase {
            words: w.iter().map(|s| s.to_string()).collect(),
            prefix,
        }
    }

    #[test]
    fn words_phrases_prefixes_and_operators() {
        assert_eq!(parse("Migrations").unwrap(), term("migrations", false));
        assert_eq!(parse("migrat*").unwrap(), term("migrat", true));
        assert_eq!(
            parse("\"exact  Words\"").unwrap(),
            phrase(&["exact", "words"], false)
        );
        assert_eq!(parse("foo.ba*").unwrap(), phrase(&["foo", "ba"], true));
        assert_eq!(
            parse("auth test").unwrap(),
            Query::And(vec![term("auth", false), term("test", false)])
        );
        assert_eq!(
            parse("a OR b AND c").unwrap(),
            Query::Or(vec![
                term("a", false),
                Query::And(vec![term("b", false), term("c", false)])
            ])
        );
        assert_eq!(
            parse("flaky -windows").unwrap(),
            Query::And(vec![
                term("flaky", false),
                Query::Not(Box::new(term("windows", false)))
            ])
        );
        assert_eq!(
            parse("a NOT (b OR c)").unwrap().fts5(),
            "((\"a\")) NOT ((\"b\") OR (\"c\"))"
        );
        // A hyphen inside a word is part of it: "top-level" is the phrase "top level".
        assert_eq!(
            parse("top-level").unwrap(),
            phrase(&["top", "level"], false)
        );
        assert_eq!(parse("or").unwrap(), term("or", false));
    }

    #[test]
    fn fts5_text_quotes_every_word() {
        assert_eq!(parse("migrat*").unwrap().fts5(), "\"migrat\" *");
        assert_eq!(
            parse("say \"hi there\" x").unwrap().fts5(),
            "(\"say\") AND (\"hi there\") AND (\"x\")"
        );
        // Syntax characters of FTS5 inside words never reach it unquoted.
        assert_eq!(parse("NEAR:col^").unwrap().fts5(), "\"near col\"");
    }

    #[test]
    fn malformed_queries_name_the_problem() {
        assert_eq!(parse(""), Err(QueryError::Empty));
        assert_eq!(parse("   "), Err(QueryError::Empty));
        assert_eq!(parse("\"open"), Err(QueryError::UnbalancedQuote));
        assert_eq!(parse("(a OR b"), Err(QueryError::UnbalancedParen));
        assert_eq!(parse("a)"), Err(QueryError::UnbalancedParen));
        assert_eq!(parse("OR"), Err(QueryError::DanglingOperator("OR")));
        assert_eq!(parse("a OR"), Err(QueryError::DanglingOperator("OR")));
        assert_eq!(parse("AND a"), Err(QueryError::DanglingOperator("AND")));
        assert_eq!(parse("NOT"), Err(QueryError::DanglingOperator("NOT")));
        assert_eq!(parse("*"), Err(QueryError::LoneStar));
        assert_eq!(parse("a * b"), Err(QueryError::LoneStar));
        assert_eq!(parse("-a"), Err(QueryError::OnlyNegated));
        assert_eq!(parse("a OR -b"), Err(QueryError::NegatedChoice));
        assert_eq!(parse("\"\""), Err(QueryError::EmptyPhrase));
        for bad in ["\"open", "OR", "*", "-a"] {
            assert!(!parse(bad).unwrap_err().to_string().is_empty());
        }
    }

    #[test]
    fn positive_terms_leave_out_negations() {
        assert_eq!(
            parse("fix* \"auth test\" -flaky").unwrap().positive_terms(),
            vec![
                ("fix".to_string(), true),
                ("auth".to_string(), false),
                ("test".to_string(), false)
            ]
        );
    }
}
