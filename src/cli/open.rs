//! What most commands do first: open the store (never creating or migrating it) and turn a
//! session prefix into the one session it names, or say why not.

use super::{output, EXIT_NOT_FOUND};
use crate::config::Config;
use crate::query::store::Store;

/// An optional session prefix as the filter of a listing: `Ok(None)` without one, `Ok(Some([id]))`
/// for a unique match; otherwise [`resolve_prefix`] has said why and this is the exit code.
pub(crate) async fn resolve_optional_prefix(
    store: &Store,
    prefix: Option<&str>,
) -> anyhow::Result<Result<Option<Vec<String>>, u8>> {
    Ok(match prefix {
        None => Ok(None),
        Some(p) => resolve_prefix(store, p).await?.map(|id| Some(vec![id])),
    })
}

/// Resolve a session id prefix: `Ok(id)` for exactly one match; otherwise say why on stderr and
/// return the exit code (1: nothing matched).
pub(crate) async fn resolve_prefix(
    store: &Store,
    prefix: &str,
) -> anyhow::Result<Result<String, u8>> {
    match crate::query::resolve_session(store, "session", prefix).await {
        Ok(id) => Ok(Ok(id)),
        Err(crate::query::Error::NoSession { prefix }) => {
            eprintln!("No session found with prefix {prefix}");
            Ok(Err(EXIT_NOT_FOUND))
        }
        Err(crate::query::Error::Ambiguous { prefix, candidates }) => {
            eprintln!("Multiple sessions match prefix {prefix}");
            for c in candidates {
                eprintln!(
                    "  {}  {}",
                    c.session_id,
                    output::ellipsize(c.title.as_deref().unwrap_or("(no title)"), 80)
                );
            }
            Ok(Err(EXIT_NOT_FOUND))
        }
        Err(e) => Err(e.into()),
    }
}

/// The database of a command that only reads (never created, never migrated), as a command
/// that reads one query at a time needs it: one connection. (A pool's
/// connections each keep their own SQLite page cache, up to 16 MB; a whole export handed its
/// queries to four of them in turn and its memory grew with the store: 140 MB at 5 GB.)
pub(crate) async fn open_store(cfg: &Config) -> anyhow::Result<Store> {
    let mut options = cfg.database.clone();
    options.max_connections = 1;
    Ok(Store::open_existing(&options).await?)
}

/// The store of a server answering several requests at once (`gleaner web`, `gleaner mcp`):
/// the pool the configuration asks for.
pub(crate) async fn open_shared_store(cfg: &Config) -> anyhow::Result<Store> {
    Ok(Store::open_existing(&cfg.database).await?)
}
