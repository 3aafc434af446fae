//! How SQLite runs the snippet tag and keyword filters.
//!
//! SQLite keeps no statistics (gleaner never runs `ANALYZE`), so it cannot tell a tag on half
//! the snippets from a rare one; gleaner measures each with a count capped at [`DRIVE_MAX`] + 1
//! index entries (a millisecond or two) and says which filters are selective enough to drive
//! the query. PostgreSQL plans these itself.

use super::snippet_query::SnippetFilter;
use super::sql::Sql;
use super::{Store, StoreError};

/// Largest id list (tagged or keyword-matching snippets) that SQLite is let to drive a query
/// with: looking up and sorting this many rows costs about what one walk of `snippets_listing`
/// does at 100,000 snippets, and the walk grows with the table while the lookups do not.
pub(super) const DRIVE_MAX: i64 = 5000;

/// Shortest keyword the trigram indexes can serve (shorter ones scan).
pub(super) const TRIGRAM: usize = 3;

/// The keyword as one FTS5 string (a phrase): with the trigram tokenizer a phrase matches
/// exactly where the text contains it, whatever operators or quotes it holds.
pub(super) fn fts5_phrase(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// The measured plan.
#[derive(Debug, Clone, Default)]
pub(super) struct SqlitePlan {
    /// The tags, rarest first.
    pub tags: Vec<String>,
    /// The rarest tag matches at most [`DRIVE_MAX`] snippets.
    pub tags_drive: bool,
    /// The keyword matches at most [`DRIVE_MAX`] snippets (trigram keywords only).
    pub keyword_drives: bool,
    /// Some filter matches nothing: the answer is empty without asking.
    pub empty: bool,
}

impl SqlitePlan {
    /// Measure the filters of `f` on a SQLite store with capped counts.
    pub(super) async fn measure(
        store: &Store,
        f: &SnippetFilter,
        drive_max: i64,
    ) -> Result<SqlitePlan, StoreError> {
        let capped = |sql: &'static str, arg: String| {
            Sql::new(sql).arg(arg).arg(drive_max + 1).not_persistent()
        };
        let mut plan = SqlitePlan::default();
        let mut tags: Vec<(i64, String)> = Vec::new();
        for tag in &f.tags {
            let q = capped(
                "SELECT COUNT(*) FROM (SELECT 1 FROM snippet_tags WHERE tag = $1 LIMIT $2)",
                tag.clone(),
            );
            tags.push((store.fetch_i64(&q).await?, tag.clone()));
        }
        tags.sort();
        tags.dedup_by(|a, b| a.1 == b.1);
        if let Some(&(rarest, _)) = tags.first() {
            plan.empty |= rarest == 0;
            plan.tags_drive = rarest <= drive_max;
        }
        plan.tags = tags.into_iter().map(|(_, t)| t).collect();
        if let Some(k) = f
            .keyword
            .as_deref()
            .filter(|k| k.chars().count() >= TRIGRAM)
        {
            let q = capped(
                "SELECT COUNT(*) FROM (SELECT 1 FROM snippets_fts WHERE snippets_fts MATCH $1 \
                 LIMIT $2)",
                fts5_phrase(k),
            );
            let n = store.fetch_i64(&q).await?;
            plan.empty |= n == 0;
            plan.keyword_drives = n <= drive_max;
        }
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fts5_phrase_quotes_and_doubles_inner_quotes() {
        assert_eq!(fts5_phrase("abc"), "\"abc\"");
        assert_eq!(fts5_phrase("say \"hi\" OR x*"), "\"say \"\"hi\"\" OR x*\"");
    }
}
