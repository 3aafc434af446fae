//! Session references: a full id or a unique prefix, resolved the same way by every door.

use serde::Serialize;

use super::Error;
use crate::store::Store;

/// How many matches an ambiguous prefix reports.
pub const MAX_CANDIDATES: u32 = 20;

/// A session a prefix matched.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Candidate {
    /// Its id.
    pub session_id: String,
    /// Its title, if it has one.
    pub title: Option<String>,
}

/// The one session whose id is or starts with `prefix` (trimmed, any case). No match is
/// [`Error::NoSession`]; several are [`Error::Ambiguous`] with up to [`MAX_CANDIDATES`]
/// of them; an empty prefix is an error naming `field`.
pub async fn resolve_session(store: &Store, field: &str, prefix: &str) -> Result<String, Error> {
    let p = prefix.trim();
    if p.is_empty() {
        return Err(Error::BadValue {
            field: field.to_string(),
            value: prefix.to_string(),
            expected: "a session id or a unique prefix of one".into(),
        });
    }
    let mut found = store.sessions_with_prefix(p, MAX_CANDIDATES).await?;
    match found.len() {
        0 => Err(Error::NoSession {
            prefix: p.to_string(),
        }),
        1 => Ok(found.remove(0).0),
        _ => Err(Error::Ambiguous {
            prefix: p.to_string(),
            candidates: found
                .into_iter()
                .map(|(session_id, title)| Candidate { session_id, title })
                .collect(),
        }),
    }
}

/// [`resolve_session`] for an optional filter: `None` stays `None`, a match is a one-id list.
pub async fn resolve_optional_session(
    store: &Store,
    field: &str,
    prefix: Option<&str>,
) -> Result<Option<Vec<String>>, Error> {
    match prefix {
        None => Ok(None),
        Some(p) => Ok(Some(vec![resolve_session(store, field, p).await?])),
    }
}
