//! Pages of a listing: a bounded limit, an offset, and what the caller needs to ask for the
//! next page. Paging happens in SQL (`LIMIT`/`OFFSET` over an indexed order), never by
//! fetching everything and slicing.

use crate::store::Page;

use super::Error as QueryError;

/// The most rows one page of a listing holds, at every door (the CLI's `--limit`, MCP's
/// `limit`); a search page has its own, smaller cap (`store::search::MAX_LIMIT`), ranking
/// being the costlier part.
pub const MAX_LISTING: u32 = 500;

/// The largest offset any door accepts: beyond it a listing is better narrowed by a filter,
/// and an `OFFSET` that large costs a scan.
pub const MAX_OFFSET: u64 = 1_000_000;

impl Page {
    /// A page with `limit` (default `default`, 1..=`max`) and `offset` (default 0, at most
    /// [`MAX_OFFSET`]); `limit_field`/`offset_field` name them in errors as the door calls them.
    pub fn parse(
        (limit_field, limit): (&str, Option<u64>),
        (offset_field, offset): (&str, Option<u64>),
        default: u32,
        max: u32,
    ) -> Result<Page, QueryError> {
        let limit = match limit {
            None => default,
            Some(n) if (1..=u64::from(max)).contains(&n) => n as u32,
            Some(n) => {
                return Err(QueryError::BadRange {
                    field: limit_field.to_string(),
                    value: n.to_string(),
                    min: 1,
                    max: u64::from(max),
                })
            }
        };
        let offset = match offset {
            None => 0,
            Some(n) if n <= MAX_OFFSET => n as u32,
            Some(n) => {
                return Err(QueryError::BadRange {
                    field: offset_field.to_string(),
                    value: n.to_string(),
                    min: 0,
                    max: MAX_OFFSET,
                })
            }
        };
        Ok(Page { limit, offset })
    }

    /// A page from text (the web's query parameters): a value that is not a number is an
    /// error naming it, as a number out of range is.
    pub fn parse_text(
        (limit_field, limit): (&str, Option<&str>),
        (offset_field, offset): (&str, Option<&str>),
        default: u32,
        max: u32,
    ) -> Result<Page, QueryError> {
        let num = |field: &str, v: Option<&str>| -> Result<Option<u64>, QueryError> {
            v.map(|s| {
                s.trim().parse::<u64>().map_err(|_| QueryError::BadValue {
                    field: field.to_string(),
                    value: s.to_string(),
                    expected: "a whole number".into(),
                })
            })
            .transpose()
        };
        Page::parse(
            (limit_field, num(limit_field, limit)?),
            (offset_field, num(offset_field, offset)?),
            default,
            max,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_and_offsets_are_bounded() {
        let p = Page::parse(("--limit", None), ("--offset", None), 50, 500).unwrap();
        assert_eq!(
            p,
            Page {
                limit: 50,
                offset: 0
            }
        );
        let e = Page::parse(("--limit", Some(0)), ("--offset", None), 50, 500).unwrap_err();
        assert_eq!(e.to_string(), "invalid --limit 0: expected 1 to 500");
        let e = Page::parse(("limit", Some(501)), ("offset", None), 50, 500).unwrap_err();
        assert!(e.to_string().contains("501"), "{e}");
        let e = Page::parse(("limit", None), ("offset", Some(MAX_OFFSET + 1)), 50, 500);
        assert!(e.is_err());
        let e = Page::parse_text(("limit", Some("ten")), ("offset", None), 50, 500).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid limit \"ten\": expected a whole number"
        );
    }

    #[test]
    fn the_probe_row_says_there_is_more() {
        let p = Page {
            limit: 2,
            offset: 4,
        };
        let page = p.finish(vec![1, 2, 3], None);
        assert_eq!(page.items, vec![1, 2]);
        assert!(page.has_more);
        assert_eq!(page.next_offset, Some(6));
        let last = p.finish(vec![1], Some(5));
        assert!(!last.has_more);
        assert_eq!(last.next_offset, None);
        assert_eq!(last.total, Some(5));
    }
}
