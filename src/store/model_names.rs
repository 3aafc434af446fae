//! The `models` lookup: a message row stores its model as a small integer (`messages.model_id`)
//! instead of the name (`claude-sonnet-4-5-20250929`, 23 bytes on average, on every assistant
//! row: 3 MB of the 1 GB bench tree's 103 MB SQLite database, the last step under 10% of the
//! transcript bytes once every session is finished).
//!
//! Ids are resolved per group, inside the group's transaction: a name new to the database is
//! inserted there, so a group that rolls back takes its new names back with the rows that use
//! them. Nothing is cached from one group to the next for the same reason (an id cached from a
//! rolled-back insert could later name another model). The cost is one `SELECT` of a few names
//! per group, and an insert when a name is new.

use std::collections::{BTreeSet, HashMap};

use super::sql::{Conn, Sql};
use super::StoreError;
use crate::extract::rows::{MessageRow, PreparedBatch};

/// The id of every model name the accepted batches' messages carry.
pub(super) async fn ids(
    c: &mut Conn<'_>,
    accepted: &[&PreparedBatch],
) -> Result<HashMap<String, i64>, StoreError> {
    let names: BTreeSet<&str> = accepted
        .iter()
        .flat_map(|b| b.messages.iter().filter_map(|m| m.model.as_deref()))
        .collect();
    if names.is_empty() {
        return Ok(HashMap::new());
    }
    let mut found = lookup(c, &names).await?;
    let missing: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !found.contains_key(*n))
        .collect();
    if !missing.is_empty() {
        let backend = c.backend();
        for chunk in super::sql::row_chunks(backend, &missing) {
            let mut q = Sql::new(format!("{}models (name) ", backend.insert_ignore()));
            q.push_rows(backend, chunk, |row, name| {
                row.bind(*name);
            });
            q.push(&backend.on_conflict_ignore("name"));
            c.execute(&q).await?;
        }
        let added: BTreeSet<&str> = missing.into_iter().collect();
        found.extend(lookup(c, &added).await?);
    }
    Ok(found)
}

async fn lookup(
    c: &mut Conn<'_>,
    names: &BTreeSet<&str>,
) -> Result<HashMap<String, i64>, StoreError> {
    let mut q = Sql::new("SELECT id, name FROM models WHERE ");
    q.push_in("name", names.iter().copied());
    let rows: Vec<(i64, String)> = c.fetch_rows(&q.not_persistent()).await?;
    Ok(rows.into_iter().map(|(id, name)| (name, id)).collect())
}

/// The `models` id of a row's model name (resolved for its group by [`ids`]).
pub(super) fn model_id(models: &HashMap<String, i64>, m: &MessageRow) -> Option<i64> {
    m.model.as_deref().and_then(|n| models.get(n).copied())
}
