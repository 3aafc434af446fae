//! Read side of episodes and snippets (`gleaner snippets`, `gleaner episodes`, later the MCP
//! server): filters in, plain listing structs out, no printing.
//!
//! Snippet queries are written once for both backends except for the keyword test, where each
//! backend uses its own substring index: SQLite's FTS5 trigram table `snippets_fts` (kept by
//! triggers), PostgreSQL's `pg_trgm` GIN index on `title || ' ' || content`. Both answer the
//! same question, "does the title or the content contain this text, ignoring ASCII case", so a
//! query returns the same rows on either backend.
//!
//! Speed (see `examples/snippet_bench.rs`, 100k snippets): pages walk `snippets_listing`
//! (migration 0003: the newest-first order plus the filtered columns but the text) and fetch
//! only the rows they return; `--session` and `--project` read `snippets_session` instead; `total_count` is a second query, skipped when the page
//! itself shows where the list ends. SQLite has no statistics to tell a rare tag from a common
//! one, so gleaner measures tag and keyword filters with capped counts first ([`SqlitePlan`]):
//! a selective id list drives the query, a broad one is tested against the walk (`+s.id IN`).
//! PostgreSQL filters tags through a GIN index on the `tag_list` array. Counting keyword matches cannot be settled by the index
//! alone (PostgreSQL rechecks every trigram candidate row; keywords under three characters have
//! no trigram), and any count reads every match, so a count stops at [`COUNT_CAP`]; a rare
//! short keyword still scans the texts.

use serde::Serialize;
use sqlx::{Row, Type};

use super::plan::{fts5_phrase, SqlitePlan, TRIGRAM};
use super::read::{push_origin_filter, push_project_filter, Origin};
use super::sql::{contains_pattern, Backend, Sql};
use super::{Page, Paged, Store, StoreError};
use crate::snippet::SnippetType;

/// What a snippet listing is narrowed to (every door's). Every filter narrows the result (they are ANDed).
#[derive(Debug, Clone)]
pub struct SnippetFilter {
    /// Only these sessions (an empty list matches nothing).
    pub session_ids: Option<Vec<String>>,
    /// Only this type.
    pub snippet_type: Option<SnippetType>,
    /// The session's project folder or working directory contains this text (SQL `LIKE`, as
    /// `gleaner sessions --project`).
    pub project: Option<String>,
    /// Who and where: sessions held by this machine or user.
    pub origin: Origin,
    /// Tags that must all be present.
    pub tags: Vec<String>,
    /// Text the title or the content contains, ignoring ASCII case.
    pub keyword: Option<String>,
    /// Created at or after this ISO-8601 time (compared as text, as stored).
    pub since: Option<String>,
    /// Created strictly before this ISO-8601 time.
    pub until: Option<String>,
    /// Page size.
    pub limit: u32,
    /// Rows skipped before the page (newest first).
    pub offset: u32,
    /// Oldest first (the listing index read forwards).
    pub oldest_first: bool,
}

impl Default for SnippetFilter {
    /// No filter, the CLI's default page (50 newest).
    fn default() -> Self {
        SnippetFilter {
            session_ids: None,
            snippet_type: None,
            project: None,
            origin: Origin::default(),
            tags: Vec::new(),
            keyword: None,
            since: None,
            until: None,
            limit: 50,
            offset: 0,
            oldest_first: false,
        }
    }
}

/// One snippet as `gleaner snippets` shows it. The JSON columns (`tags`, `metadata`) are
/// decoded so that JSON output nests them instead of quoting them as strings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SnippetListing {
    /// Row id (stable: the handle to quote a snippet by).
    pub id: i64,
    /// Session it was cut from.
    pub session_id: String,
    /// Episode it belongs to (automatic snippets).
    pub episode_id: Option<i64>,
    /// `auto` or `manual`.
    pub origin: String,
    /// `error_reasoning`, `decision_rationale` or `learning_pattern`.
    pub snippet_type: String,
    /// Title, readable on its own.
    pub title: String,
    /// The reasoning itself.
    pub content: String,
    /// Project folder of the session.
    pub project: String,
    /// Transcript (or content file) it was cut from.
    pub source_file: String,
    /// First source line (1-based); `source_line_start` in JSON, as `extract_snippet` takes it.
    #[serde(rename = "source_line_start")]
    pub line_start: i64,
    /// Last source line; `source_line_end` in JSON.
    #[serde(rename = "source_line_end")]
    pub line_end: i64,
    /// Tags (tools, file extensions, error kinds, project).
    pub tags: Vec<String>,
    /// word_count, reading_time_s, triage, confidence, version, ...
    pub metadata: serde_json::Value,
    /// When the reasoning happened (or when it was added), ISO-8601.
    pub created_at: String,
}

/// One page of snippets plus what a pager needs to ask for the next one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SnippetPage {
    /// The page, newest first.
    pub snippets: Vec<SnippetListing>,
    /// Snippets matching the filters, ignoring limit and offset. Exact up to [`COUNT_CAP`]
    /// matches; beyond, a lower bound (the cap, or the end of the page if further) and
    /// `total_count_exact` is false.
    pub total_count: i64,
    /// Whether `total_count` is exact (left out of JSON when it is, so the usual shape stays
    /// `{snippets, total_count, has_more}`).
    #[serde(skip_serializing_if = "is_true")]
    pub total_count_exact: bool,
    /// More snippets follow this page.
    pub has_more: bool,
}

fn is_true(b: &bool) -> bool {
    *b
}

/// Matches counted exactly. Why a cap: a count reads every match, so its cost grows with the
/// store (20 ms for the newest page's total on PostgreSQL at 50 GB, where the page itself
/// took 2); a keyword count is worse (PostgreSQL rechecks each trigram candidate, about 7 µs
/// a row; a two-letter keyword has no trigram at all). Stopping at the cap keeps every query's
/// cost flat. Search engines do the same (a "1,000+" total).
pub const COUNT_CAP: i64 = 1000;

/// What an episode listing is narrowed to (every door's).
#[derive(Debug, Clone, Default)]
pub struct EpisodeFilter {
    /// Only these sessions (an empty list matches nothing).
    pub session_ids: Option<Vec<String>>,
    /// Episodes holding a turn with this label (an `episode::Label::as_str()`: the store
    /// knows the column's values, not the stage that decides them).
    pub triage: Option<&'static str>,
    /// Who and where: sessions held by this machine or user.
    pub origin: Origin,
    /// Oldest first (the newest-first index read backwards: episodes without a time first).
    pub oldest_first: bool,
}

/// One episode as `gleaner episodes` shows it. JSON columns are decoded (see
/// [`SnippetListing`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EpisodeListing {
    /// Row id (what snippets point at).
    pub id: i64,
    /// Session.
    pub session_id: String,
    /// Transcript file.
    pub source_file: String,
    /// 1-based position in its file.
    pub ordinal: i64,
    /// 1-based number (in the file) of its first turn.
    pub first_turn: i64,
    /// Turns in it.
    pub turns: i64,
    /// Line of its first prompt.
    pub start_line: i64,
    /// Its last line.
    pub end_line: i64,
    /// Timestamp of its first prompt.
    pub started_at: Option<String>,
    /// Latest timestamp seen in it.
    pub ended_at: Option<String>,
    /// `open` or `closed`.
    pub status: String,
    /// What started it: `start`, `compaction`, `idle_gap`, `topic` or `window`.
    pub cut_reason: String,
    /// Triage label.
    pub triage: String,
    /// Confidence of the label, 0..=1.
    pub confidence: f64,
    /// `[{"line", "signal", "label", "text"}]`: why it got its label.
    pub evidence: serde_json::Value,
    /// Every label its turns hold, its own first (JSON array).
    pub labels: serde_json::Value,
    /// `[{ordinal, start_line, end_line, triage, confidence, evidence}]`, one per turn.
    pub turn_labels: serde_json::Value,
    /// First line of its first prompt.
    pub title: Option<String>,
    /// Files touched (JSON array).
    pub files_touched: serde_json::Value,
    /// Tool name -> calls (JSON object).
    pub tools: serde_json::Value,
    /// Linked sub-agents (JSON array).
    pub agents: serde_json::Value,
}

/// Decode a stored JSON column. Lenient on purpose: one odd row must not make a whole listing
/// fail, so text that is not JSON comes back as a JSON string.
fn json_column(text: String) -> serde_json::Value {
    serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text))
}

/// Decode the `tags` column (a JSON array of strings; anything else yields no tags — the
/// `snippet_tags` table, not this column, is what filters use).
fn tags_column(text: &str) -> Vec<String> {
    serde_json::from_str(text).unwrap_or_default()
}

// Hand-written `FromRow` (generic over the backend) because the JSON text columns decode into
// richer types than the derive can express.
impl<'r, R: Row> sqlx::FromRow<'r, R> for SnippetListing
where
    &'r str: sqlx::ColumnIndex<R>,
    String: sqlx::Decode<'r, R::Database> + Type<R::Database>,
    i64: sqlx::Decode<'r, R::Database> + Type<R::Database>,
{
    fn from_row(row: &'r R) -> Result<Self, sqlx::Error> {
        let tags: String = row.try_get("tags")?;
        Ok(SnippetListing {
            id: row.try_get("id")?,
            session_id: row.try_get("session_id")?,
            episode_id: row.try_get("episode_id")?,
            origin: row.try_get("origin")?,
            snippet_type: row.try_get("snippet_type")?,
            title: row.try_get("title")?,
            content: row.try_get("content")?,
            project: row.try_get("project")?,
            source_file: row.try_get("source_file")?,
            line_start: row.try_get("line_start")?,
            line_end: row.try_get("line_end")?,
            tags: tags_column(&tags),
            metadata: json_column(row.try_get("metadata")?),
            created_at: row.try_get("created_at")?,
        })
    }
}

impl<'r, R: Row> sqlx::FromRow<'r, R> for EpisodeListing
where
    &'r str: sqlx::ColumnIndex<R>,
    String: sqlx::Decode<'r, R::Database> + Type<R::Database>,
    i64: sqlx::Decode<'r, R::Database> + Type<R::Database>,
    f64: sqlx::Decode<'r, R::Database> + Type<R::Database>,
{
    fn from_row(row: &'r R) -> Result<Self, sqlx::Error> {
        Ok(EpisodeListing {
            id: row.try_get("id")?,
            session_id: row.try_get("session_id")?,
            source_file: row.try_get("source_file")?,
            ordinal: row.try_get("ordinal")?,
            first_turn: row.try_get("first_turn")?,
            turns: row.try_get("turns")?,
            start_line: row.try_get("start_line")?,
            end_line: row.try_get("end_line")?,
            started_at: row.try_get("started_at")?,
            ended_at: row.try_get("ended_at")?,
            status: row.try_get("status")?,
            cut_reason: row.try_get("cut_reason")?,
            triage: row.try_get("triage")?,
            confidence: row.try_get("confidence")?,
            evidence: json_column(row.try_get("evidence")?),
            labels: json_column(row.try_get("labels")?),
            turn_labels: json_column(row.try_get("turn_labels")?),
            title: row.try_get("title")?,
            files_touched: json_column(row.try_get("files_touched")?),
            tools: json_column(row.try_get("tools")?),
            agents: json_column(row.try_get("agents")?),
        })
    }
}

const SNIPPET_COLUMNS: &str = "s.id, s.session_id, s.episode_id, s.origin, s.snippet_type, \
     s.title, s.content, s.project, s.source_file, s.line_start, s.line_end, s.tags, s.metadata, \
     s.created_at";

/// Append the filters of `f` (as ` AND ...` clauses over `snippets s`) to a query.
fn push_snippet_filters<'a>(
    q: &mut Sql<'a>,
    f: &'a SnippetFilter,
    backend: Backend,
    plan: &'a SqlitePlan,
) {
    if let Some(ids) = &f.session_ids {
        q.push(" AND ").push_in("s.session_id", ids);
    }
    if let Some(t) = f.snippet_type {
        q.push(" AND s.snippet_type = ").push_bind(t.as_str());
    }
    if let Some(p) = &f.project {
        // Resolved to the sessions of the project (a small table), whose snippets the
        // `snippets_session` index lists: a count reads ~1/n of an index instead of testing a
        // pattern on every snippet (38 ms -> 1.3 ms at 100,000 snippets on PostgreSQL). A
        // snippet's project is its session's project folder, so nothing is lost.
        q.push(" AND s.session_id IN (SELECT ss.session_id FROM sessions ss WHERE 1 = 1");
        push_project_filter(q, p, "ss.project", "ss.cwd");
        q.push(")");
    }
    push_origin_filter(q, &f.origin, "s.session_id");
    match backend {
        Backend::Sqlite if !plan.tags.is_empty() => {
            // One id list: the rarest tag's snippets that carry every other tag (probes of the
            // primary key). A selective list drives the query (its rows are looked up and
            // sorted); a broad one is marked `+`, so SQLite walks `snippets_listing` in order
            // and tests each id against it, one pass at most whatever the tag.
            let plus = if plan.tags_drive { "" } else { "+" };
            q.push(&format!(
                " AND {plus}s.id IN (SELECT t0.snippet_id FROM snippet_tags t0 WHERE t0.tag = "
            ))
            .push_bind(plan.tags[0].as_str());
            for tag in &plan.tags[1..] {
                q.push(
                    " AND EXISTS (SELECT 1 FROM snippet_tags t1 WHERE t1.snippet_id = \
                     t0.snippet_id AND t1.tag = ",
                )
                .push_bind(tag.as_str())
                .push(")");
            }
            q.push(")");
        }
        Backend::Sqlite => {}
        Backend::Postgres if !f.tags.is_empty() => {
            // The GIN index on `tag_list` (see migration 0003).
            q.push(" AND s.tag_list @> ")
                .push_bind(f.tags.clone())
                .push("::text[]");
        }
        Backend::Postgres => {}
    }
    if let Some(k) = &f.keyword {
        push_keyword(q, k, backend, plan.keyword_drives);
    }
    if let Some(s) = &f.since {
        q.push(" AND s.created_at >= ").push_bind(s.as_str());
    }
    if let Some(u) = &f.until {
        q.push(" AND s.created_at < ").push_bind(u.as_str());
    }
}

/// Title or content contains `k`, ignoring ASCII case, through the backend's trigram index
/// when `k` is long enough to have a trigram.
fn push_keyword(q: &mut Sql<'_>, k: &str, backend: Backend, drives: bool) {
    match backend {
        Backend::Sqlite if k.chars().count() >= TRIGRAM => {
            // The trigram tokenizer folds case (its default `case_sensitive 0`) and matches a
            // phrase as a substring of one column, like the LIKE fallback below. `+`: as for
            // tags, a common word must not make SQLite fetch every matching row to sort it;
            // a rare one drives the query.
            let plus = if drives { "" } else { "+" };
            q.push(&format!(
                " AND {plus}s.id IN (SELECT rowid FROM snippets_fts WHERE snippets_fts MATCH "
            ))
            .push_bind(fts5_phrase(k))
            .push(")");
        }
        Backend::Sqlite => {
            // SQLite's LIKE ignores ASCII case.
            let pat = contains_pattern(k);
            q.push(" AND (s.title LIKE ")
                .push_bind(pat.clone())
                .push(" ESCAPE '\\' OR s.content LIKE ")
                .push_bind(pat)
                .push(" ESCAPE '\\')");
        }
        Backend::Postgres => {
            // The expression the GIN trigram index is built on.
            let pat = contains_pattern(k);
            q.push(" AND (s.title || ' ' || s.content) ILIKE ")
                .push_bind(pat.clone())
                .push(" ESCAPE '\\'");
            if k.contains(' ') {
                // Only a keyword holding the separator can match across title and content;
                // SQLite never matches across columns, so rule that out here too.
                q.push(" AND (s.title ILIKE ")
                    .push_bind(pat.clone())
                    .push(" ESCAPE '\\' OR s.content ILIKE ")
                    .push_bind(pat)
                    .push(" ESCAPE '\\')");
            }
        }
    }
}

/// The columns of [`EpisodeListing`], ready for ` AND ...` filters.
const EPISODE_SELECT: &str = "SELECT e.id, e.session_id, fl.path AS source_file, e.ordinal, \
     e.first_turn, e.turns, e.start_line, e.end_line, e.started_at, e.ended_at, e.status, \
     e.cut_reason, e.triage, e.confidence, e.evidence, e.labels, e.turn_labels, e.title, \
     e.files_touched, e.tools, e.agents FROM episodes e JOIN files fl ON fl.id = e.file_id \
     WHERE 1 = 1";

impl Store {
    /// Snippets matching `f`, newest first (`created_at`, then id), one page of them, with the
    /// number of all matches so a caller can page through without guessing.
    pub async fn list_snippets(&self, f: &SnippetFilter) -> Result<SnippetPage, StoreError> {
        self.list_snippets_with(f, super::plan::DRIVE_MAX).await
    }

    /// One snippet by its id.
    pub async fn snippet(&self, id: i64) -> Result<Option<SnippetListing>, StoreError> {
        let q = Sql::new(format!(
            "SELECT {SNIPPET_COLUMNS} FROM snippets s WHERE s.id = $1"
        ))
        .arg(id);
        self.fetch_optional(&q).await
    }

    /// [`Store::list_snippets`] with another selectivity threshold for SQLite's plan: the tests
    /// run every query with `0` (every id list is tested against the walk) as well, so both
    /// plans are checked against the same oracle. Not for other callers.
    #[doc(hidden)]
    pub async fn list_snippets_with(
        &self,
        f: &SnippetFilter,
        drive_max: i64,
    ) -> Result<SnippetPage, StoreError> {
        let backend = self.backend();
        let plan = match backend {
            Backend::Sqlite => SqlitePlan::measure(self, f, drive_max).await?,
            Backend::Postgres => SqlitePlan::default(),
        };
        if plan.empty {
            return Ok(SnippetPage {
                snippets: Vec::new(),
                total_count: 0,
                total_count_exact: true,
                has_more: false,
            });
        }
        let mut q = Sql::new(format!(
            "SELECT {SNIPPET_COLUMNS} FROM snippets s WHERE 1 = 1"
        ));
        push_snippet_filters(&mut q, f, backend, &plan);
        q.push(if f.oldest_first {
            " ORDER BY s.created_at ASC, s.id ASC LIMIT "
        } else {
            " ORDER BY s.created_at DESC, s.id DESC LIMIT "
        })
        .push_bind(i64::from(f.limit))
        .push(" OFFSET ")
        .push_bind(i64::from(f.offset));
        // Not a cached prepared statement: after five runs PostgreSQL may switch it to a
        // generic plan, which cannot see the keyword and, for a short one, scans the whole
        // trigram index (measured: 1 s instead of 0.5 ms for a page).
        let snippets: Vec<SnippetListing> = self.fetch_all(&q.not_persistent()).await?;
        let returned = snippets.len() as i64;
        let offset = i64::from(f.offset);
        // A page that is not full and not past the end is the tail: its end is the total, and
        // the (often costlier) count can be skipped.
        let end = offset + returned;
        let (total_count, exact) = if returned < i64::from(f.limit) && (returned > 0 || offset == 0)
        {
            (end, true)
        } else {
            // Count at most cap + 1 matches (see COUNT_CAP).
            let mut q = Sql::new("SELECT COUNT(*) FROM (SELECT 1 FROM snippets s WHERE 1 = 1");
            push_snippet_filters(&mut q, f, backend, &plan);
            q.push(" LIMIT ").push_bind(COUNT_CAP + 1).push(") capped");
            let n = self.fetch_i64(&q.not_persistent()).await?;
            if n > COUNT_CAP {
                // At least the cap, and at least one more than this page when it is full.
                let full = returned == i64::from(f.limit);
                (COUNT_CAP.max(end + i64::from(full)), false)
            } else {
                (n, true)
            }
        };
        Ok(SnippetPage {
            has_more: end < total_count,
            snippets,
            total_count,
            total_count_exact: exact,
        })
    }

    /// One page of episodes, newest first (episodes without a timestamp last), optionally of
    /// some sessions and holding a turn of one triage label.
    pub async fn episodes(
        &self,
        f: &EpisodeFilter,
        page: Page,
    ) -> Result<Paged<EpisodeListing>, StoreError> {
        let mut q = Sql::new(EPISODE_SELECT);
        if let Some(ids) = &f.session_ids {
            q.push(" AND ").push_in("e.session_id", ids);
        }
        push_origin_filter(&mut q, &f.origin, "e.session_id");
        // An episode holding a turn labelled L (its `labels` array names every turn label).
        if let Some(t) = f.triage {
            q.push(" AND (e.triage = ")
                .push_bind(t)
                .push(" OR e.labels LIKE ")
                .push_bind(format!("%\"{t}\"%"))
                .push(")");
        }
        q.push(if f.oldest_first {
            " ORDER BY e.started_at ASC NULLS FIRST, e.id ASC LIMIT "
        } else {
            " ORDER BY e.started_at DESC NULLS LAST, e.id DESC LIMIT "
        })
        .push_bind(i64::from(page.probe()))
        .push(" OFFSET ")
        .push_bind(i64::from(page.offset));
        let rows = self.fetch_all(&q.not_persistent()).await?;
        Ok(page.finish(rows, None))
    }

    /// The episodes with these ids (at most a page's worth: the caller's snippets point at
    /// them).
    pub async fn episodes_with_ids(&self, ids: &[i64]) -> Result<Vec<EpisodeListing>, StoreError> {
        let mut q = Sql::new(EPISODE_SELECT);
        q.push(" AND ").push_in("e.id", ids.iter().copied());
        self.fetch_all(&q.not_persistent()).await
    }

    /// Every episode matching `f` (exports and tests), a page at a time.
    pub async fn list_episodes(
        &self,
        f: &EpisodeFilter,
    ) -> Result<Vec<EpisodeListing>, StoreError> {
        super::read::every_page(|page| self.episodes(f, page)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_columns_are_lenient() {
        assert_eq!(tags_column("[\"a\",\"b\"]"), vec!["a", "b"]);
        assert!(tags_column("not json").is_empty());
        assert_eq!(json_column("{\"a\":1}".into())["a"], 1);
        assert_eq!(
            json_column("oops".into()),
            serde_json::Value::String("oops".into())
        );
    }
}
