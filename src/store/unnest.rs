//! PostgreSQL multi-row statements as one array per column: `SELECT * FROM UNNEST($1::int8[],
//! $2::text[], ...)` where SQLite gets `VALUES (?, ?), (?, ?)`.
//!
//! Why: a `VALUES` list of 500 rows of 19 columns is 9,500 parameters the server binds, plans
//! and evaluates one expression at a time, and a group of 2,000 rows took five such statements
//! (the ladder of `sql::row_chunks`). With arrays the statement text has one parameter per
//! column whatever the row count, so a whole group's rows of a table go in one statement of one
//! prepared text, and the server decodes each binary array in a tight loop. The rows are bound
//! by the same closures as the `VALUES` form ([`super::sql::Row::bind`]): the first row's values
//! decide each column's array type.

use std::borrow::Cow;

use sqlx::postgres::PgArguments;
use sqlx::Arguments;

use super::sql::{Arg, PgTsVector};

/// Rows of a table per PostgreSQL statement: bounds the message a group sends at once (a
/// statement must fit in memory on both ends) while keeping statements few.
pub(crate) const PG_ROWS: usize = 5_000;

/// One column of a PostgreSQL multi-row statement: every row's value of it, in row order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Column<'a> {
    /// `int8[]`.
    Int(Vec<Option<i64>>),
    /// `float8[]`.
    Real(Vec<Option<f64>>),
    /// `bool[]`.
    Bool(Vec<Option<bool>>),
    /// `text[]`.
    Text(Vec<Option<Cow<'a, str>>>),
    /// `bytea[]`.
    Bytes(Vec<Option<Cow<'a, [u8]>>>),
    /// `tsvector[]` of binary tsvectors (see `extract::lexemes::tsvector_binary`).
    TsVector(Vec<Option<Cow<'a, [u8]>>>),
}

/// Why a value cannot be a column element.
#[derive(Debug)]
pub(crate) struct NotAColumn;

impl<'a> Column<'a> {
    /// An empty column of `first`'s type (room for `rows`), holding `first`.
    pub(crate) fn start(first: Arg<'a>, rows: usize) -> Result<Column<'a>, NotAColumn> {
        let mut c = match &first {
            Arg::Int(_) => Column::Int(Vec::with_capacity(rows)),
            Arg::Real(_) => Column::Real(Vec::with_capacity(rows)),
            Arg::Bool(_) => Column::Bool(Vec::with_capacity(rows)),
            Arg::Text(_) => Column::Text(Vec::with_capacity(rows)),
            Arg::Bytes(_) => Column::Bytes(Vec::with_capacity(rows)),
            Arg::TsVector(_) => Column::TsVector(Vec::with_capacity(rows)),
            Arg::TextArray(_) | Arg::Column(_) => return Err(NotAColumn),
        };
        c.push(first)?;
        Ok(c)
    }

    /// Append the next row's value; it must have the column's type.
    pub(crate) fn push(&mut self, value: Arg<'a>) -> Result<(), NotAColumn> {
        match (self, value) {
            (Column::Int(c), Arg::Int(v)) => c.push(v),
            (Column::Real(c), Arg::Real(v)) => c.push(v),
            (Column::Bool(c), Arg::Bool(v)) => c.push(v),
            (Column::Text(c), Arg::Text(v)) => c.push(v),
            (Column::Bytes(c), Arg::Bytes(v)) => c.push(v),
            (Column::TsVector(c), Arg::TsVector(v)) => c.push(v),
            _ => return Err(NotAColumn),
        }
        Ok(())
    }

    /// The array type the statement declares for this column.
    pub(crate) fn sql_type(&self) -> &'static str {
        match self {
            Column::Int(_) => "int8[]",
            Column::Real(_) => "float8[]",
            Column::Bool(_) => "bool[]",
            Column::Text(_) => "text[]",
            Column::Bytes(_) => "bytea[]",
            Column::TsVector(_) => "tsvector[]",
        }
    }

    /// Encode the column as one binary array argument.
    pub(crate) fn add_to(&self, out: &mut PgArguments) -> Result<(), sqlx::error::BoxDynError> {
        match self {
            Column::Int(v) => out.add(v),
            Column::Real(v) => out.add(v),
            Column::Bool(v) => out.add(v),
            Column::Text(v) => out.add(v),
            Column::Bytes(v) => out.add(v.iter().map(|b| b.as_deref()).collect::<Vec<_>>()),
            Column::TsVector(v) => out.add(
                v.iter()
                    .map(|b| b.as_deref().map(PgTsVector))
                    .collect::<Vec<_>>(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sql::{Backend, Sql};

    #[test]
    fn postgres_rows_become_one_array_per_column() {
        let rows = [(1i64, Some("a"), true), (2, None, false)];
        let mut q = Sql::new("INSERT INTO t (a, b, c) ");
        q.push_rows(Backend::Postgres, &rows, |r, (a, b, c)| {
            r.bind(*a).bind(*b).bind(*c);
        });
        assert_eq!(
            q.text(),
            "INSERT INTO t (a, b, c) SELECT * FROM UNNEST($1::int8[], $2::text[], $3::bool[])"
        );
        assert_eq!(
            q.arg_list(),
            &[
                Arg::Column(Column::Int(vec![Some(1), Some(2)])),
                Arg::Column(Column::Text(vec![Some("a".into()), None])),
                Arg::Column(Column::Bool(vec![Some(true), Some(false)])),
            ]
        );
        // SQLite keeps the VALUES form.
        let mut v = Sql::new("INSERT INTO t (a, b, c) ");
        v.push_rows(Backend::Sqlite, &rows, |r, (a, b, c)| {
            r.bind(*a).bind(*b).bind(*c);
        });
        assert_eq!(
            v.lite_text(),
            "INSERT INTO t (a, b, c) VALUES (?, ?, ?), (?, ?, ?)"
        );
    }

    #[test]
    fn a_column_keeps_its_first_type() {
        let mut c = Column::start(Arg::Int(Some(1)), 2).expect("int column");
        assert!(c.push(Arg::Int(None)).is_ok());
        assert!(c.push(Arg::Text(None)).is_err());
        assert!(Column::start(Arg::TextArray(vec![]), 1).is_err());
    }
}
