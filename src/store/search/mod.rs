//! Full-text search over messages, summaries, feedback, snippets and tool calls, on both backends.
//!
//! The query language is parsed once ([`parse`]); each backend gets SQL built from the tree with
//! every word bound as a value:
//! - SQLite: FTS5 (porter + unicode61), ranked by BM25, excerpts by FTS5's `snippet()`: one
//!   index (`search_fts`) over messages, summaries, feedback and snippets, and one of their own
//!   for tool calls and results (`tool_fts`), so that a common word's search for what people
//!   said does not walk the build logs that hold it.
//! - PostgreSQL: a `tsvector` column on each table, filled by Gleaner from the same lexemes
//!   ([`index`]), with a GIN index, ranked by `ts_rank_cd`; excerpts are cut here
//!   (`excerpt`), not by `ts_headline`.
//!
//! Compaction summaries are the best index of a session: their score is multiplied by
//! [`SUMMARY_BOOST`], so a summary ranks above a message that scores the same. The two
//! backends agree on what matches (same words, stems, prefixes, phrases and operators) but not
//! on scores: BM25 weighs rare words up across the whole index, `ts_rank_cd` looks at each text
//! alone (how often and how close together the words occur). README lists every difference.

mod excerpt;
mod page;
pub(crate) mod index;
mod parse;
mod pg_kind;
mod sql;

use serde::Serialize;

pub use parse::{parse, Query, QueryError};
pub(crate) use sql::tsquery;

use super::read::Origin;
use super::sql::Backend;
use super::{Store, StoreError};

/// How much a summary's score is raised over any other kind's.
pub const SUMMARY_BOOST: f64 = 1.25;

/// Tool documents rank after every other kind's, whatever their scores: what people and the
/// assistant said comes before a log that holds the same words (a word in a prompt is what
/// someone meant; in a build log it is often noise, and a short log can outscore a long
/// reply). `--kind tool` lists them alone. The SQL's `ORDER BY` starts with this, for the
/// kind column of the table alias `t` (`""`: unqualified).
pub(crate) fn tools_last(t: &str) -> String {
    match t {
        "" => "(kind = 'tool')".to_string(),
        t => format!("({t}.kind = 'tool')"),
    }
}

/// Most results in one page.
pub const MAX_LIMIT: u32 = 200;

/// A search ranks at most this many matches, the newest (on PostgreSQL, of each kind): a word
/// found in a hundred thousand messages would otherwise be scored in all of them for every
/// page (the cost of a search then grows with the store). Results are the best of the newest
/// matches; a query narrower than this (most are) is ranked whole.
pub const RANKED_CANDIDATES: u32 = 1_000;

/// On PostgreSQL, each kind ranks its newest this many matches. Fewer than SQLite's
/// [`RANKED_CANDIDATES`]: PostgreSQL has no full-text index in time order, so finding the
/// newest matches walks a table newest first and checks each row's vector until it has them,
/// a cost that grows with how many are wanted over how dense the word is. Measured at 50 GB
/// (11 M messages) with 1,000 per kind: 131 ms p50, 169 ms p99 for a common word.
pub const PG_RANKED_CANDIDATES: u32 = 250;

/// How many matches a search ranks on `backend`: no page starts past them.
pub fn ranked_candidates(backend: Backend) -> u32 {
    match backend {
        Backend::Sqlite => RANKED_CANDIDATES,
        Backend::Postgres => PG_RANKED_CANDIDATES,
    }
}

/// Matches counted exactly up to this many; past it `total_count` is a lower bound and
/// `total_count_exact` false (as snippet keyword counts, `COUNT_CAP`).
pub const COUNT_CAP: i64 = 1_000;

/// Marks the start of a match in an excerpt as the database returns it (never in stored text:
/// a control character).
const START: char = '\u{2}';
/// Marks the end of a match.
const STOP: char = '\u{3}';

/// What a result is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchKind {
    /// User or assistant message text.
    Message,
    /// A `summary` line, compaction boundary or compaction summary.
    Summary,
    /// What the user said: a prompt, a denial's reason, an interruption.
    Feedback,
    /// A stored snippet (title and content).
    Snippet,
    /// What a tool did: a call's name and target, or its result's text (bounded).
    Tool,
}

impl SearchKind {
    /// Every kind.
    pub const ALL: [SearchKind; 5] = [
        SearchKind::Message,
        SearchKind::Summary,
        SearchKind::Feedback,
        SearchKind::Snippet,
        SearchKind::Tool,
    ];

    /// The name used in flags, JSON and the index.
    pub fn as_str(self) -> &'static str {
        match self {
            SearchKind::Message => "message",
            SearchKind::Summary => "summary",
            SearchKind::Feedback => "feedback",
            SearchKind::Snippet => "snippet",
            SearchKind::Tool => "tool",
        }
    }

    fn from_str(s: &str) -> Option<SearchKind> {
        SearchKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// A search: the query and what narrows it.
#[derive(Debug, Clone)]
pub struct SearchFilter {
    /// The parsed query.
    pub query: Query,
    /// Only these kinds (empty: all).
    pub kinds: Vec<SearchKind>,
    /// Only tool documents of this tool (its name, any case): `Bash`, `Edit`, `mcp__x__y`.
    /// The query layer makes the kinds `[Tool]` with it.
    pub tool: Option<String>,
    /// The session's project folder or working directory contains this text.
    pub project: Option<String>,
    /// Who and where: sessions held by this machine or user.
    pub origin: Origin,
    /// Only these sessions (an empty list matches nothing).
    pub session_ids: Option<Vec<String>>,
    /// At or after this ISO-8601 time.
    pub since: Option<String>,
    /// Strictly before this ISO-8601 time.
    pub until: Option<String>,
    /// Page size (1 to [`MAX_LIMIT`]).
    pub limit: u32,
    /// Results skipped before the page.
    pub offset: u32,
}

/// One result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    /// What it is.
    pub kind: SearchKind,
    /// Every kind its line is (a human prompt is `feedback` and `message`): a line is one hit.
    pub kinds: Vec<SearchKind>,
    /// Its session.
    pub session_id: String,
    /// The session's project folder.
    pub project: Option<String>,
    /// When it was said (a snippet: when it was stored).
    pub timestamp: Option<String>,
    /// The transcript it was read from (a snippet: its source).
    pub source_file: Option<String>,
    /// The line in that transcript (1-based).
    pub line: Option<i64>,
    /// A `tool` hit: the tool's name (left out of JSON for the other kinds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Relevance, higher is better (comparable within one backend only).
    pub score: f64,
    /// A short piece of the text around the matches.
    pub excerpt: String,
    /// Where the matches are in `excerpt`: `[start, end)` in characters.
    pub highlights: Vec<[usize; 2]>,
}

impl SearchHit {
    /// The sub-agent whose transcript holds the hit (`None`: the session's own transcript), by
    /// the file's name and folder as discovery names it. Its lines are numbered from 1 as the
    /// session's are, so a door linking to a line must say which transcript it is in.
    pub fn agent_id(&self) -> Option<String> {
        let file = std::path::Path::new(self.source_file.as_deref()?);
        crate::tail::discovery::classify(std::path::Path::new("/"), file).agent_id
    }

    /// The excerpt with each match between `open` and `close` (`[`/`]`, or terminal bold).
    pub fn marked(&self, open: &str, close: &str) -> String {
        let mut out = String::with_capacity(self.excerpt.len() + 8);
        let mut spans = self.highlights.iter().peekable();
        for (i, c) in self.excerpt.chars().enumerate() {
            if spans.peek().is_some_and(|s| s[0] == i) {
                out.push_str(open);
            }
            out.push(c);
            if let Some(s) = spans.peek() {
                if s[1] == i + 1 {
                    out.push_str(close);
                    spans.next();
                }
            }
        }
        out
    }
}

/// One page of results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchPage {
    /// The results, best first.
    pub results: Vec<SearchHit>,
    /// Results matching the query and filters, ignoring limit and offset.
    pub total_count: i64,
    /// Whether `total_count` is exact: past [`COUNT_CAP`] matches it is a lower bound (left
    /// out of JSON when exact).
    #[serde(skip_serializing_if = "is_true")]
    pub total_count_exact: bool,
    /// More results follow this page.
    pub has_more: bool,
}

fn is_true(b: &bool) -> bool {
    *b
}

/// A result before its excerpt and details are fetched.
#[derive(Debug, Clone, sqlx::FromRow)]
struct Ranked {
    /// SQLite: `search_docs.id`; PostgreSQL: 0.
    doc_id: i64,
    kind: String,
    session_id: String,
    ts: Option<String>,
    file_id: Option<i64>,
    generation: Option<i64>,
    line_no: Option<i64>,
    seq: Option<i64>,
    ref_id: Option<i64>,
    score: f64,
    /// A feedback row that is a human prompt (a message too).
    prompt: bool,
}

/// Longest excerpt kept, in characters (the backends' own limits count words or tokens).
const EXCERPT_CHARS: usize = 320;

/// Split a database excerpt into plain text (runs of white space as one space, at most
/// [`EXCERPT_CHARS`]) and the character ranges of its marked matches.
fn unmark(marked: &str) -> (String, Vec<[usize; 2]>) {
    let mut text = String::with_capacity(marked.len());
    let mut spans = Vec::new();
    let mut open = None;
    let mut n = 0;
    for c in marked.chars() {
        match c {
            // Put between CJK characters for SQLite's tokenizer (`lexemes::fts_text`).
            crate::extract::lexemes::CJK_SEPARATOR => {}
            START => open = Some(n),
            STOP => {
                if let Some(s) = open.take() {
                    if n > s {
                        spans.push([s, n]);
                    }
                }
            }
            c if c.is_whitespace() => {
                // One line per excerpt.
                if n > 0 && !text.ends_with(' ') {
                    text.push(' ');
                    n += 1;
                }
            }
            c => {
                if n >= EXCERPT_CHARS {
                    text.push('…');
                    break;
                }
                text.push(c);
                n += 1;
            }
        }
    }
    let text = text.trim_end().to_string();
    let len = text.chars().count();
    spans.retain(|s| s[1] <= len);
    (text, spans)
}

impl Store {
    /// One page of results, best first, with the number of all matches.
    pub async fn search(&self, f: &SearchFilter) -> Result<SearchPage, StoreError> {
        let backend = self.backend();
        let limit = f.limit.clamp(1, MAX_LIMIT);
        if backend == Backend::Postgres && sql::tsquery(&f.query).is_none() {
            // Only stop words: PostgreSQL's index holds none of them, nothing can match.
            return Ok(SearchPage {
                results: Vec::new(),
                total_count: 0,
                total_count_exact: true,
                has_more: false,
            });
        }
        let offset = i64::from(f.offset);
        let indexes = sql::indexes(f);
        // The page and its count, asked at once on two connections: a narrow filter over a
        // common word walks every match of the word in both.
        // Whether the project is narrow: then searched through the list of its rows.
        let narrow = match &f.project {
            Some(p) => {
                let q = sql::project_sessions(p).not_persistent();
                self.fetch_i64(&q).await? <= sql::NARROW_PROJECT
            }
            None => false,
        };
        let (ranked, (n, reachable)) = match backend {
            Backend::Sqlite => {
                self.sqlite_page(f, i64::from(limit), offset, indexes, narrow)
                    .await?
            }
            Backend::Postgres => {
                let page = async {
                    if indexes == (true, true) {
                        self.pg_split_page(f, i64::from(limit), offset, narrow)
                            .await
                    } else {
                        let q = sql::ranked(backend, f, i64::from(limit), offset, indexes, narrow);
                        self.fetch_all(&q.not_persistent()).await
                    }
                };
                let count = sql::pg_count(f, indexes, narrow).not_persistent();
                let (page, count) = tokio::join!(page, self.fetch_all::<(i64, i64)>(&count));
                (page?, count?.first().copied().unwrap_or_default())
            }
        };
        let returned = ranked.len() as i64;
        let end = offset + returned;
        let full = returned == i64::from(limit);
        let results = self.complete(f, ranked).await;
        let (total_count, exact) = match n {
            n if n > COUNT_CAP => (COUNT_CAP.max(end + i64::from(full)), false),
            n => (n, true),
        };
        // Only the newest matches are ranked: no page starts past them.
        let has_more = end < reachable && if exact { end < total_count } else { full };
        let results = results?;
        Ok(SearchPage {
            has_more,
            results,
            total_count,
            total_count_exact: exact,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_tsquery_uses_the_index_lexemes() {
        let t = |q: &str| sql::tsquery(&parse(q).unwrap());
        assert_eq!(t("Migrations").as_deref(), Some("'migrat'"));
        assert_eq!(t("flaky*").as_deref(), Some("'flaki':*"));
        assert_eq!(t("\"fix the bug\"").as_deref(), Some("('fix' <2> 'bug')"));
        assert_eq!(
            t("\"pull request\"").as_deref(),
            Some("('pull' <-> 'request')")
        );
        // `a` is a stop word: its side of the OR disappears.
        assert_eq!(t("a OR b -c").as_deref(), Some("(('b' & !'c'))"));
        assert_eq!(
            t("auth OR (login -oauth)").as_deref(),
            Some("('auth' | ('login' & !'oauth'))")
        );
        assert_eq!(t("the"), None);
        assert_eq!(t("the flaky").as_deref(), Some("('flaki')"));
    }

    #[test]
    fn unmark_gives_plain_text_and_char_ranges() {
        let (t, s) = unmark("fix the \u{2}flaky\u{3} auth\n\n \u{2}tést\u{3}s");
        assert_eq!(t, "fix the flaky auth tésts");
        assert_eq!(s, vec![[8, 13], [19, 23]]);
        let hit = SearchHit {
            kind: SearchKind::Message,
            kinds: vec![SearchKind::Message],
            session_id: "s".into(),
            project: None,
            timestamp: None,
            source_file: None,
            line: None,
            tool: None,
            score: 1.0,
            excerpt: t,
            highlights: s,
        };
        assert_eq!(hit.marked("[", "]"), "fix the [flaky] auth [tést]s");
    }

    #[test]
    fn unmark_ignores_unbalanced_markers() {
        assert_eq!(unmark("a\u{3}b\u{2}c").0, "abc");
        assert!(unmark("a\u{3}b\u{2}c").1.is_empty());
    }
}
