//! A page of a listing, as the store runs it: `LIMIT`/`OFFSET` in SQL over an indexed order,
//! one row more than asked so that "is there more" needs no count. The query layer parses
//! pages from what the doors are given (`query::Page::parse`).

use serde::Serialize;

/// Which rows of a listing: at most `limit`, after skipping `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// Rows wanted (at least 1).
    pub limit: u32,
    /// Rows skipped.
    pub offset: u32,
}

impl Page {
    /// The `LIMIT` to ask SQL for: one row more than the page, so that `has_more` needs no
    /// count.
    pub fn probe(self) -> u32 {
        self.limit.saturating_add(1)
    }

    /// The page from rows fetched with [`Page::probe`]: the extra row, if any, says there is
    /// more and is dropped.
    pub fn finish<T>(self, mut rows: Vec<T>, total: Option<u64>) -> Paged<T> {
        let has_more = rows.len() > self.limit as usize;
        rows.truncate(self.limit as usize);
        let next_offset = has_more.then(|| u64::from(self.offset) + rows.len() as u64);
        Paged {
            items: rows,
            total,
            has_more,
            next_offset,
        }
    }
}

/// One page of a listing.
#[derive(Debug, Clone, Serialize)]
pub struct Paged<T> {
    /// The rows of the page.
    pub items: Vec<T>,
    /// How many rows match in all, when the listing can say without scanning the store.
    pub total: Option<u64>,
    /// Rows follow this page.
    pub has_more: bool,
    /// The offset of the next page, when there is one.
    pub next_offset: Option<u64>,
}
