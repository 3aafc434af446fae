//! One SQL text and its arguments, run on whichever backend the store holds.
//!
//! Why not sqlx's `QueryBuilder` generic over the database: every function that binds a value
//! would need a `where` clause per bound type and backend (trait bounds on other types are not
//! implied by a bound-bundle trait), and the alternative, macro bodies expanded once per
//! backend, hides types and dependencies. Instead a [`Sql`] collects its text and its arguments
//! as plain [`Arg`] values; [`Conn`] turns them into the backend's own argument list, where the
//! execution is matched on the backend (the dialect is decided here; the few other backend
//! branches are where the backends store differently: search indexing, the SQLite writer's
//! direct path, snippet-query plans). Borrowed text stays borrowed until the driver encodes it.
//!
//! Placeholders: a hand-written text numbers its own (`$1`, `$2`: both backends read them) and
//! binds with [`Sql::arg`]; a built text binds with [`Sql::push_bind`], which writes `$k` for
//! PostgreSQL and a plain `?` for SQLite (the two texts are built side by side). Why not `$k` on
//! SQLite too: SQLite treats `$k` as a named parameter, and naming 9,500 parameters of a
//! multi-row insert made every bind a linear search (ingest ran at a tenth of its speed). The
//! two styles never meet in one statement.
//!
//! Every write and read of the store goes through here, so the store's functions are ordinary
//! `async fn`s over a [`Conn`] (a pooled connection or an open transaction).

use std::borrow::Cow;
use std::fmt::Write as _;

use sqlx::postgres::PgArguments;
use sqlx::sqlite::SqliteArguments;
use sqlx::{Arguments, Postgres};

pub(crate) use super::conn::{Conn, Pooled, Record, Tx};
pub(crate) use super::unnest::Column;
use super::unnest::PG_ROWS;

/// Which database a URL or a store is: the one name the store has for its dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// Embedded SQLite file.
    Sqlite,
    /// PostgreSQL server.
    Postgres,
}

impl Backend {
    /// The backend a database URL selects, if any.
    pub fn of_url(url: &str) -> Option<Backend> {
        if url.starts_with("sqlite:") {
            Some(Backend::Sqlite)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Some(Backend::Postgres)
        } else {
            None
        }
    }

    /// `INSERT` that skips rows whose natural key exists. SQLite's `OR IGNORE` form cannot
    /// abort midway, so it needs no statement journal (that journal was ~8% of ingest time with
    /// `ON CONFLICT DO NOTHING`); PostgreSQL takes the matching [`Backend::on_conflict_ignore`].
    pub(crate) fn insert_ignore(self) -> &'static str {
        match self {
            Backend::Sqlite => "INSERT OR IGNORE INTO ",
            Backend::Postgres => "INSERT INTO ",
        }
    }

    /// The suffix matching [`Backend::insert_ignore`] for a conflict on `columns`.
    pub(crate) fn on_conflict_ignore(self, columns: &str) -> String {
        match self {
            Backend::Sqlite => String::new(),
            Backend::Postgres => format!(" ON CONFLICT ({columns}) DO NOTHING"),
        }
    }
}

/// One bound value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Arg<'a> {
    /// Integer (or NULL).
    Int(Option<i64>),
    /// Floating point (or NULL).
    Real(Option<f64>),
    /// Boolean (or NULL).
    Bool(Option<bool>),
    /// Text (or NULL), borrowed where it can be.
    Text(Option<Cow<'a, str>>),
    /// A PostgreSQL `text[]`. SQLite has no arrays: binding one there is an encode error.
    TextArray(Vec<String>),
    /// A PostgreSQL `tsvector` in binary form (or NULL). PostgreSQL only, like arrays.
    TsVector(Option<Cow<'a, [u8]>>),
    /// Bytes (or NULL): a SQLite BLOB, a PostgreSQL `bytea`.
    Bytes(Option<Cow<'a, [u8]>>),
    /// Every row's value of one column of a PostgreSQL multi-row statement, sent as one array
    /// ([`Sql::push_rows`]). PostgreSQL only.
    Column(Column<'a>),
}

/// A binary `tsvector` (see `extract::lexemes::tsvector_binary`), sent as it is.
pub(crate) struct PgTsVector<'a>(pub(crate) &'a [u8]);

impl sqlx::postgres::PgHasArrayType for PgTsVector<'_> {
    fn array_type_info() -> sqlx::postgres::PgTypeInfo {
        sqlx::postgres::PgTypeInfo::with_name("_tsvector")
    }
}

impl sqlx::Type<Postgres> for PgTsVector<'_> {
    fn type_info() -> sqlx::postgres::PgTypeInfo {
        sqlx::postgres::PgTypeInfo::with_name("tsvector")
    }
}

impl sqlx::Encode<'_, Postgres> for PgTsVector<'_> {
    fn encode_by_ref(
        &self,
        buf: &mut sqlx::postgres::PgArgumentBuffer,
    ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
        buf.extend_from_slice(self.0);
        Ok(sqlx::encode::IsNull::No)
    }
}

impl From<i64> for Arg<'_> {
    fn from(v: i64) -> Self {
        Arg::Int(Some(v))
    }
}
impl From<Option<i64>> for Arg<'_> {
    fn from(v: Option<i64>) -> Self {
        Arg::Int(v)
    }
}
impl From<f64> for Arg<'_> {
    fn from(v: f64) -> Self {
        Arg::Real(Some(v))
    }
}
impl From<bool> for Arg<'_> {
    fn from(v: bool) -> Self {
        Arg::Bool(Some(v))
    }
}
impl From<Option<bool>> for Arg<'_> {
    fn from(v: Option<bool>) -> Self {
        Arg::Bool(v)
    }
}
impl From<Option<f64>> for Arg<'_> {
    fn from(v: Option<f64>) -> Self {
        Arg::Real(v)
    }
}
impl<'a> From<&'a str> for Arg<'a> {
    fn from(v: &'a str) -> Self {
        Arg::Text(Some(Cow::Borrowed(v)))
    }
}
impl<'a> From<&'a String> for Arg<'a> {
    fn from(v: &'a String) -> Self {
        Arg::Text(Some(Cow::Borrowed(v.as_str())))
    }
}
impl<'a> From<Option<&'a str>> for Arg<'a> {
    fn from(v: Option<&'a str>) -> Self {
        Arg::Text(v.map(Cow::Borrowed))
    }
}
impl From<String> for Arg<'_> {
    fn from(v: String) -> Self {
        Arg::Text(Some(Cow::Owned(v)))
    }
}
impl From<Option<String>> for Arg<'_> {
    fn from(v: Option<String>) -> Self {
        Arg::Text(v.map(Cow::Owned))
    }
}
impl<'a> From<Cow<'a, [u8]>> for Arg<'a> {
    fn from(v: Cow<'a, [u8]>) -> Self {
        Arg::Bytes(Some(v))
    }
}
impl<'a> From<Option<Cow<'a, [u8]>>> for Arg<'a> {
    fn from(v: Option<Cow<'a, [u8]>>) -> Self {
        Arg::Bytes(v)
    }
}
impl From<Vec<String>> for Arg<'_> {
    fn from(v: Vec<String>) -> Self {
        Arg::TextArray(v)
    }
}

/// An SQL text (for each backend) and the values its placeholders stand for.
#[derive(Debug, Clone)]
pub(crate) struct Sql<'a> {
    /// With `$k` placeholders.
    pub(super) pg: String,
    /// With `?` placeholders where `pg` has generated ones.
    pub(super) lite: String,
    args: Vec<Arg<'a>>,
    pub(super) persistent: bool,
    /// Placeholders written by hand (`arg`) rather than generated (`push_bind`).
    numbered_by_hand: bool,
    /// A row of [`Sql::push_rows`] bound a value of another type than its column's first row
    /// (a bug): reported when the statement is encoded.
    bad_column: bool,
}

impl<'a> Sql<'a> {
    /// Start a statement.
    pub(crate) fn new(text: impl Into<String>) -> Sql<'a> {
        let pg = text.into();
        Sql {
            lite: pg.clone(),
            pg,
            args: Vec::new(),
            persistent: true,
            numbered_by_hand: false,
            bad_column: false,
        }
    }

    /// Append SQL text.
    pub(crate) fn push(&mut self, text: &str) -> &mut Self {
        self.pg.push_str(text);
        self.lite.push_str(text);
        self
    }

    /// Append a placeholder and bind `value` to it.
    pub(crate) fn push_bind(&mut self, value: impl Into<Arg<'a>>) -> &mut Self {
        debug_assert!(!self.numbered_by_hand, "push_bind after arg: {}", self.pg);
        self.args.push(value.into());
        // `write!` into the string: no allocation per placeholder (a 500-row insert has 10,000).
        let _ = write!(self.pg, "${}", self.args.len());
        self.lite.push('?');
        self
    }

    /// Bind `value` to the next placeholder already written in the text (`$1`, `$2`, ...).
    pub(crate) fn arg(mut self, value: impl Into<Arg<'a>>) -> Self {
        debug_assert!(
            self.args.is_empty() || self.numbered_by_hand,
            "arg after push_bind: {}",
            self.pg
        );
        self.numbered_by_hand = true;
        self.args.push(value.into());
        self
    }

    /// Append `VALUES (..), (..)`: one parenthesised group per item, its values bound by `row`.
    pub(crate) fn push_values<T>(
        &mut self,
        items: &'a [T],
        mut row: impl FnMut(&mut Row<'_, 'a>, &'a T),
    ) {
        self.push("VALUES ");
        for (i, item) in items.iter().enumerate() {
            self.push(if i == 0 { "(" } else { ", (" });
            let mut r = Row {
                sql: self,
                first: true,
                columns: None,
            };
            row(&mut r, item);
            self.push(")");
        }
    }

    /// Append the rows of a multi-row `INSERT` (or a `WITH v (..) AS (` list) as `backend`
    /// takes them best: SQLite a `VALUES` list ([`Sql::push_values`]), PostgreSQL
    /// `SELECT * FROM UNNEST(...)` of one array per column (see `store::unnest`). `row` binds
    /// one item's values in column order, the same on both.
    pub(crate) fn push_rows<T>(
        &mut self,
        backend: Backend,
        items: &'a [T],
        mut row: impl FnMut(&mut Row<'_, 'a>, &'a T),
    ) {
        if backend == Backend::Sqlite {
            return self.push_values(items, row);
        }
        let first = self.args.len();
        for (i, item) in items.iter().enumerate() {
            let mut r = Row {
                sql: self,
                first: i == 0,
                columns: Some((first, 0, items.len())),
            };
            row(&mut r, item);
        }
        self.push("SELECT * FROM UNNEST(");
        for k in first..self.args.len() {
            let ty = match &self.args[k] {
                Arg::Column(c) => c.sql_type(),
                _ => "unknown",
            };
            let _ = write!(
                self.pg,
                "{}${}::{ty}",
                if k == first { "" } else { ", " },
                k + 1
            );
        }
        self.push(")");
    }

    /// Append `column IN ($a, $b, ...)`, or `1 = 0` for an empty list (PostgreSQL rejects
    /// `IN ()`): the one place a list of values becomes an `IN`.
    pub(crate) fn push_in<V: Into<Arg<'a>>>(
        &mut self,
        column: &str,
        values: impl IntoIterator<Item = V>,
    ) -> &mut Self {
        let mut values = values.into_iter().peekable();
        if values.peek().is_none() {
            return self.push("1 = 0");
        }
        self.push(column).push(" IN (");
        for (i, v) in values.enumerate() {
            if i > 0 {
                self.push(", ");
            }
            self.push_bind(v);
        }
        self.push(")")
    }

    /// Do not keep this statement prepared: for texts that vary (id lists) or that PostgreSQL
    /// must plan for their actual values each time.
    pub(crate) fn not_persistent(mut self) -> Self {
        self.persistent = false;
        self
    }

    /// The text as SQLite runs it.
    pub(crate) fn lite_text(&self) -> &str {
        &self.lite
    }

    /// The bound values, in placeholder order.
    pub(crate) fn arg_list(&self) -> &[Arg<'a>] {
        &self.args
    }

    /// Whether the placeholders are numbered by hand (`$1`) rather than plain `?`.
    pub(crate) fn hand_numbered(&self) -> bool {
        self.numbered_by_hand
    }

    /// The text as it will be sent to PostgreSQL.
    #[cfg(test)]
    pub(crate) fn text(&self) -> &str {
        &self.pg
    }

    pub(super) fn sqlite_args(&self) -> Result<SqliteArguments<'_>, sqlx::Error> {
        let mut out = SqliteArguments::default();
        for a in &self.args {
            let r = match a {
                Arg::Int(v) => out.add(*v),
                Arg::Real(v) => out.add(*v),
                Arg::Bool(v) => out.add(*v),
                Arg::Text(v) => out.add(v.as_deref()),
                Arg::TextArray(_) => Err("SQLite has no array type".into()),
                Arg::TsVector(_) => Err("SQLite has no tsvector type".into()),
                Arg::Bytes(v) => out.add(v.as_deref()),
                Arg::Column(_) => Err("SQLite has no array type".into()),
            };
            r.map_err(sqlx::Error::Encode)?;
        }
        Ok(out)
    }

    pub(super) fn pg_args(&self) -> Result<PgArguments, sqlx::Error> {
        let mut out = PgArguments::default();
        for a in &self.args {
            let r = match a {
                Arg::Int(v) => out.add(*v),
                Arg::Real(v) => out.add(*v),
                Arg::Bool(v) => out.add(*v),
                Arg::Text(v) => out.add(v.as_deref()),
                Arg::TextArray(v) => out.add(v),
                Arg::TsVector(v) => out.add(v.as_deref().map(PgTsVector)),
                Arg::Bytes(v) => out.add(v.as_deref()),
                Arg::Column(c) => c.add_to(&mut out),
            };
            r.map_err(sqlx::Error::Encode)?;
        }
        if self.bad_column {
            return Err(sqlx::Error::Encode(
                format!(
                    "a row's value does not match its column's type: {}",
                    self.pg
                )
                .into(),
            ));
        }
        Ok(out)
    }
}

/// The values of one row: a `VALUES` group, separated by commas as they are bound, or (for
/// [`Sql::push_rows`] on PostgreSQL) the next element of each column's array.
pub(crate) struct Row<'s, 'a> {
    sql: &'s mut Sql<'a>,
    /// `VALUES`: no value bound yet. Columns: this is the statement's first row.
    first: bool,
    /// Columns: (argument index of the first column, the next column, rows in all).
    columns: Option<(usize, usize, usize)>,
}

impl<'a> Row<'_, 'a> {
    /// Bind the next value of the row.
    pub(crate) fn bind(&mut self, value: impl Into<Arg<'a>>) -> &mut Self {
        if let Some((at, col, rows)) = &mut self.columns {
            let value = value.into();
            let ok = if self.first {
                Column::start(value, *rows).map(|c| self.sql.args.push(Arg::Column(c)))
            } else {
                match self.sql.args.get_mut(*at + *col) {
                    Some(Arg::Column(c)) => c.push(value),
                    _ => Err(super::unnest::NotAColumn),
                }
            };
            self.sql.bad_column |= ok.is_err();
            *col += 1;
            return self;
        }
        if !self.first {
            self.sql.push(", ");
        }
        self.first = false;
        self.sql.push_bind(value);
        self
    }
}

/// Split `rows` into the chunks of the multi-row statements [`Sql::push_rows`] builds for
/// `backend`.
///
/// SQLite: chunk sizes from a fixed ladder (500, 100, 20, 5, 1). Every distinct row count is a
/// distinct SQL text that SQLite must parse (a 500-row insert has 9,000 parameters); with a
/// fixed ladder only five texts per table exist and all of them stay prepared. 500 rows of at
/// most 21 columns stay under SQLite's bind-parameter limit.
///
/// PostgreSQL: up to `unnest::PG_ROWS` rows a chunk, one text whatever the count (one array
/// per column).
pub(crate) fn row_chunks<T>(backend: Backend, rows: &[T]) -> impl Iterator<Item = &[T]> {
    const LADDER: [usize; 5] = [500, 100, 20, 5, 1];
    let mut rest = rows;
    std::iter::from_fn(move || {
        let n = match backend {
            Backend::Sqlite => LADDER.iter().copied().find(|&n| n <= rest.len())?,
            Backend::Postgres if rest.is_empty() => return None,
            Backend::Postgres => rest.len().min(PG_ROWS),
        };
        let (chunk, tail) = rest.split_at(n);
        rest = tail;
        Some(chunk)
    })
}

/// Keep the first item of each key, in order.
pub(crate) fn dedup_by<T, K: std::hash::Hash + Eq>(items: Vec<T>, key: impl Fn(&T) -> K) -> Vec<T> {
    let mut seen = std::collections::HashSet::new();
    items.into_iter().filter(|i| seen.insert(key(i))).collect()
}

/// [`dedup_by`], then in key order. Why the order: an upsert locks each key it touches until
/// its transaction ends, so two writers of a shared store whose groups hold the same keys (one
/// session synced to two machines) in different orders wait on each other: a deadlock, one
/// group rolled back and retried. In key order they queue instead (20 daemons on one
/// PostgreSQL: 37 deadlocks in a minute before, none after).
pub(crate) fn dedup_sorted_by<T, K: std::hash::Hash + Ord + Clone>(
    items: Vec<T>,
    key: impl Fn(&T) -> K,
) -> Vec<T> {
    let mut v = dedup_by(items, &key);
    v.sort_by_key(|i| key(i));
    v
}

/// Escape `%`, `_` and `\` for a `LIKE ... ESCAPE '\'` pattern.
pub(crate) fn like_escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}

/// `%text%` for a substring `LIKE ... ESCAPE '\'`.
pub(crate) fn contains_pattern(s: &str) -> String {
    format!("%{}%", like_escape(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ladder_covers_every_row_once_with_few_sizes() {
        for n in [0usize, 1, 4, 5, 19, 45, 499, 500, 501, 1234] {
            let rows: Vec<usize> = (0..n).collect();
            let chunks: Vec<&[usize]> = row_chunks(Backend::Sqlite, &rows).collect();
            let flat: Vec<usize> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
            assert_eq!(flat, rows);
            assert!(chunks
                .iter()
                .all(|c| [500, 100, 20, 5, 1].contains(&c.len())));
        }
    }

    #[test]
    fn placeholders_number_the_arguments_in_order() {
        let mut q = Sql::new("SELECT 1 FROM t WHERE a = ");
        q.push_bind(1i64).push(" AND ");
        q.push_in("b", ["x", "y"]);
        assert_eq!(q.text(), "SELECT 1 FROM t WHERE a = $1 AND b IN ($2, $3)");
        assert_eq!(q.lite, "SELECT 1 FROM t WHERE a = ? AND b IN (?, ?)");
        assert_eq!(q.args.len(), 3);
        let mut v = Sql::new("INSERT INTO t (a, b) ");
        v.push_values(&[(1i64, "p"), (2, "q")], |r, (a, b)| {
            r.bind(*a).bind(*b);
        });
        assert_eq!(v.text(), "INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4)");
    }

    #[test]
    fn an_empty_in_list_matches_nothing_on_both_backends() {
        let mut q = Sql::new("SELECT 1 WHERE ");
        q.push_in("id", Vec::<i64>::new());
        assert_eq!(q.text(), "SELECT 1 WHERE 1 = 0");
        assert!(q.args.is_empty());
    }

    #[test]
    fn like_patterns_escape_wildcards() {
        assert_eq!(contains_pattern("50%_a\\b"), "%50\\%\\_a\\\\b%");
    }

    #[test]
    fn urls_select_backends() {
        assert_eq!(Backend::of_url("sqlite://x.db"), Some(Backend::Sqlite));
        assert_eq!(Backend::of_url("postgresql://h/d"), Some(Backend::Postgres));
        assert_eq!(Backend::of_url("mysql://h/d"), None);
    }
}
