//! How a row becomes searchable on PostgreSQL: its `search_vec` column (SQLite indexes through
//! `search_docs`/`search_fts`: rows of `store::messages`, triggers for the other tables).

use std::borrow::Cow;

use crate::extract::lexemes;
use crate::store::sql::Arg;

/// A row's `search_vec`: the one the reading threads computed, else computed here from `text`
/// (rows that did not come through a pump).
pub(crate) fn tsvector_arg<'a>(pre: &'a Option<Vec<u8>>, text: Option<&str>) -> Arg<'a> {
    tsvector_arg_with(pre, || text.map(Cow::Borrowed))
}

/// [`tsvector_arg`] for a text that must be built first (a tool call's name and target): it is
/// built only for a row that came without its vector, not on the writer's path for every row.
pub(crate) fn tsvector_arg_with<'a, 't>(
    pre: &'a Option<Vec<u8>>,
    text: impl FnOnce() -> Option<Cow<'t, str>>,
) -> Arg<'a> {
    Arg::TsVector(match pre {
        Some(v) => Some(Cow::Borrowed(v.as_slice())),
        None => text().map(|t| Cow::Owned(lexemes::tsvector_binary(&t))),
    })
}
