//! Token usage, written so that `gleaner usage` never reads messages: one row per API message
//! (`usage_messages`, the natural key that makes a re-read count nothing twice) and, kept in
//! step in the same transaction, the aggregates the reports read (`usage_hours`: per session,
//! UTC hour, model and whether the transcript recorded its own cost; `usage_totals`: the same
//! over every session, for reports with no session filter) with the facts of each session they
//! need (`usage_sessions`), which outlive `prune`.
//!
//! Why deltas and not a recount: a message's row can be replaced by a later line of the same
//! message (a larger total, see [`UsageRow::replaced_by`]); the aggregate gains the new row's
//! figures and loses the old row's, read under lock. A recount of the touched sessions would
//! cost as much as the session at every batch of a long session.
//!
//! Why the insert comes first: `INSERT .. ON CONFLICT DO NOTHING RETURNING` tells which messages
//! this transaction created. On PostgreSQL a concurrent insert of the same message (a copy of
//! the session on another machine) makes it wait for that transaction, then see the row as
//! existing; the rest are then read `FOR UPDATE`. Two writers can never both count a message.

use std::collections::{BTreeMap, HashMap, HashSet};

mod groups;

use super::sql::{row_chunks, Backend, Conn, Sql};
use super::StoreError;
use crate::extract::rows::{PreparedBatch, UsageRow};
use crate::usage::Counts;

/// Milliseconds in an hour: the aggregate's time grain (any whole-hour time zone reads it
/// exactly).
const HOUR_MS: i64 = 3_600_000;

/// The aggregate key: session, hour, model (`""` for none), cost recorded in the transcript.
type Key = (String, i64, String, bool);

/// One stored message row, as read back to replace it.
#[derive(Debug, sqlx::FromRow)]
struct Stored {
    message_id: String,
    session_id: String,
    input_tokens: i64,
    output_tokens: i64,
    cache_creation_input_tokens: i64,
    cache_read_input_tokens: i64,
    cache_creation_1h_tokens: i64,
    model: Option<String>,
    ts_ms: Option<i64>,
    cost_usd: Option<f64>,
    sidechain: bool,
}

impl super::lite::LiteRow for Stored {
    fn from_lite(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Stored {
            message_id: r.get(0)?,
            session_id: r.get(1)?,
            input_tokens: r.get(2)?,
            output_tokens: r.get(3)?,
            cache_creation_input_tokens: r.get(4)?,
            cache_read_input_tokens: r.get(5)?,
            cache_creation_1h_tokens: r.get(6)?,
            model: r.get(7)?,
            ts_ms: r.get(8)?,
            cost_usd: r.get(9)?,
            sidechain: r.get(10)?,
        })
    }
}

impl Stored {
    fn row(self) -> UsageRow {
        UsageRow {
            message_id: self.message_id,
            session_id: self.session_id,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cache_creation_input_tokens: self.cache_creation_input_tokens,
            cache_read_input_tokens: self.cache_read_input_tokens,
            cache_creation_1h_tokens: self.cache_creation_1h_tokens,
            model: self.model,
            ts_ms: self.ts_ms,
            cost_usd: self.cost_usd,
            sidechain: self.sidechain,
        }
    }
}

const COLUMNS: &str = "message_id, session_id, input_tokens, output_tokens, \
     cache_creation_input_tokens, cache_read_input_tokens, cache_creation_1h_tokens, model, \
     ts_ms, cost_usd, sidechain";

/// Write the usage rows of the accepted batches, and the aggregate's changes. Runs after the
/// sessions upsert: `usage_sessions` copies the sessions' project, machine and user.
pub(super) async fn write(c: &mut Conn<'_>, accepted: &[&PreparedBatch]) -> Result<(), StoreError> {
    // One row per message in the group (PostgreSQL rejects an upsert touching a row twice).
    let mut merged: HashMap<&str, UsageRow> = HashMap::new();
    for u in accepted.iter().flat_map(|b| b.usage.iter()) {
        match merged.get_mut(u.message_id.as_str()) {
            Some(m) => m.offer(u.clone()),
            None => {
                merged.insert(u.message_id.as_str(), u.clone());
            }
        }
    }
    if merged.is_empty() {
        return Ok(());
    }
    let mut rows: Vec<UsageRow> = merged.into_values().collect();
    // Key order, as every upsert of a group (`sql::dedup_sorted_by`).
    rows.sort_by(|a, b| a.message_id.cmp(&b.message_id));
    let backend = c.backend();

    let mut created: HashSet<String> = HashSet::new();
    for chunk in row_chunks(backend, &rows) {
        let mut q = Sql::new(format!("INSERT INTO usage_messages ({COLUMNS}) "));
        q.push_rows(backend, chunk, |row, u| {
            row.bind(u.message_id.as_str())
                .bind(u.session_id.as_str())
                .bind(u.input_tokens)
                .bind(u.output_tokens)
                .bind(u.cache_creation_input_tokens)
                .bind(u.cache_read_input_tokens)
                .bind(u.cache_creation_1h_tokens)
                .bind(u.model.as_deref())
                .bind(u.ts_ms)
                .bind(u.cost_usd)
                .bind(u.sidechain);
        });
        q.push(" ON CONFLICT (message_id) DO NOTHING RETURNING message_id");
        for (id,) in c.fetch_rows::<(String,)>(&q).await? {
            created.insert(id);
        }
    }

    let mut delta: BTreeMap<Key, Counts> = BTreeMap::new();
    let mut existing: Vec<&UsageRow> = Vec::new();
    for u in &rows {
        if created.contains(&u.message_id) {
            add(&mut delta, u, 1);
        } else {
            existing.push(u);
        }
    }
    let mut replace: Vec<&UsageRow> = Vec::new();
    for chunk in existing.chunks(500) {
        let mut q = Sql::new(format!("SELECT {COLUMNS} FROM usage_messages WHERE "));
        q.push_in("message_id", chunk.iter().map(|u| u.message_id.as_str()));
        if backend == Backend::Postgres {
            q.push(" FOR UPDATE");
        }
        let q = q.not_persistent();
        let old: HashMap<String, UsageRow> = c
            .fetch_rows::<Stored>(&q)
            .await?
            .into_iter()
            .map(|s| (s.message_id.clone(), s.row()))
            .collect();
        for u in chunk {
            let Some(o) = old.get(&u.message_id) else {
                continue;
            };
            // A row from before usage was dated (no timestamp) is replaced by its re-read.
            if o.ts_ms.is_none() || o.replaced_by(u) {
                add(&mut delta, o, -1);
                add(&mut delta, u, 1);
                replace.push(u);
            }
        }
    }
    for u in replace {
        let q = Sql::new(
            "UPDATE usage_messages SET session_id = $1, input_tokens = $2, output_tokens = $3, \
             cache_creation_input_tokens = $4, cache_read_input_tokens = $5, \
             cache_creation_1h_tokens = $6, model = $7, ts_ms = $8, cost_usd = $9, \
             sidechain = $10 WHERE message_id = $11",
        )
        .arg(u.session_id.as_str())
        .arg(u.input_tokens)
        .arg(u.output_tokens)
        .arg(u.cache_creation_input_tokens)
        .arg(u.cache_read_input_tokens)
        .arg(u.cache_creation_1h_tokens)
        .arg(u.model.as_deref())
        .arg(u.ts_ms)
        .arg(u.cost_usd)
        .arg(u.sidechain)
        .arg(u.message_id.as_str());
        c.execute(&q).await?;
    }
    let facts = groups::keep_facts(c, &rows, &delta).await?;
    let changes = groups::changes(c, &facts, &delta).await?;
    let (hours, totals) = hour_rows(&delta);
    let aggregates = Aggregates {
        hours,
        totals,
        groups: &changes.rows,
        keys: &changes.keys,
    };
    write_aggregates(c, &aggregates).await?;
    groups::tidy(c, &changes).await
}

/// Add (`sign` 1) or take away (-1) one message's figures under its aggregate key. A message
/// without a timestamp is in no hour: ccusage skips such lines too.
fn add(delta: &mut BTreeMap<Key, Counts>, u: &UsageRow, sign: i64) {
    let Some(ts) = u.ts_ms else { return };
    let key = (
        u.session_id.clone(),
        ts.div_euclid(HOUR_MS),
        u.model.clone().unwrap_or_default(),
        u.cost_usd.is_some(),
    );
    let counts = Counts::message(
        [
            u.input_tokens,
            u.output_tokens,
            u.cache_creation_input_tokens,
            u.cache_read_input_tokens,
        ],
        u.cache_creation_1h_tokens,
        u.cost_usd,
    );
    delta.entry(key).or_default().add(&counts, sign);
}

/// The columns both aggregates sum, in their order.
const SUMS: &str = "messages, input_tokens, output_tokens, cache_creation_tokens, \
     cache_creation_1h_tokens, cache_read_tokens, over_input, over_output, over_creation, \
     over_creation_1h, over_read, recorded_cost";

/// `ON CONFLICT (<key>) DO UPDATE SET` every sum of `table` plus the incoming one.
fn add_on_conflict(table: &str, key: &str) -> String {
    let sets: Vec<String> = SUMS
        .split(',')
        .map(str::trim)
        .map(|c| format!("{c} = {table}.{c} + excluded.{c}"))
        .collect();
    format!(" ON CONFLICT ({key}) DO UPDATE SET {}", sets.join(", "))
}

/// Bind one key's sums, in [`SUMS`] order.
fn bind_sums(row: &mut super::sql::Row<'_, '_>, d: &Counts) {
    row.bind(d.messages)
        .bind(d.input)
        .bind(d.output)
        .bind(d.creation)
        .bind(d.creation_1h)
        .bind(d.read)
        .bind(d.over_input)
        .bind(d.over_output)
        .bind(d.over_creation)
        .bind(d.over_creation_1h)
        .bind(d.over_read)
        .bind(d.recorded_cost);
}

/// A row of `usage_totals` to add: hour, model, cost recorded, sums.
type TotalRow = ((i64, String, bool), Counts);

/// The aggregates' rows a group changes, each table's in key order.
struct Aggregates<'k> {
    hours: Vec<(&'k Key, &'k Counts)>,
    totals: Vec<TotalRow>,
    groups: &'k [groups::GroupRow],
    keys: &'k [groups::KeyRow],
}

/// The `INSERT .. ON CONFLICT` of one aggregate, for `rows` of it.
enum Upsert<'a, 'k> {
    Hours(&'a [(&'k Key, &'k Counts)]),
    Totals(&'a [TotalRow]),
    Groups(&'a [groups::GroupRow]),
    Keys(&'a [groups::KeyRow]),
}

impl<'a> Upsert<'a, '_> {
    /// The same upsert for the rows of each chunk `row_chunks` makes of this one's.
    fn chunks(&self, backend: Backend) -> Vec<Upsert<'a, '_>> {
        match self {
            Upsert::Hours(r) => row_chunks(backend, r).map(Upsert::Hours).collect(),
            Upsert::Totals(r) => row_chunks(backend, r).map(Upsert::Totals).collect(),
            Upsert::Groups(r) => row_chunks(backend, r).map(Upsert::Groups).collect(),
            Upsert::Keys(r) => row_chunks(backend, r).map(Upsert::Keys).collect(),
        }
    }

    fn push(&self, q: &mut Sql<'a>, backend: Backend) {
        match self {
            Upsert::Hours(rows) => {
                q.push(&format!(
                    "INSERT INTO usage_hours (session_id, hour, model, recorded, {SUMS}) "
                ));
                q.push_rows(backend, rows, |row, ((s, h, m, r), d)| {
                    row.bind(s.as_str()).bind(*h).bind(m.as_str()).bind(*r);
                    bind_sums(row, d);
                });
                q.push(&add_on_conflict(
                    "usage_hours",
                    "session_id, hour, model, recorded",
                ));
            }
            Upsert::Totals(rows) => {
                q.push(&format!(
                    "INSERT INTO usage_totals (hour, model, recorded, {SUMS}) "
                ));
                q.push_rows(backend, rows, |row, ((h, m, r), d)| {
                    row.bind(*h).bind(m.as_str()).bind(*r);
                    bind_sums(row, d);
                });
                q.push(&add_on_conflict("usage_totals", "hour, model, recorded"));
            }
            Upsert::Groups(rows) => groups::push_groups(q, backend, rows),
            Upsert::Keys(rows) => groups::push_keys(q, backend, rows),
        }
    }
}

/// Add the group's changes to `usage_hours` (per session), `usage_totals` (every session) and
/// the rollups, table by table in this order and each table's rows in key order: two writers
/// lock shared rows (an hour's totals, a machine's rollup) in the same order. (One statement
/// of data-modifying `WITH` parts on PostgreSQL was tried: no gain measured, 22 groups per
/// 512 MB, and the order its parts run in is unspecified.)
async fn write_aggregates(c: &mut Conn<'_>, a: &Aggregates<'_>) -> Result<(), StoreError> {
    let backend = c.backend();
    for u in [
        Upsert::Hours(&a.hours),
        Upsert::Totals(&a.totals),
        Upsert::Groups(a.groups),
        Upsert::Keys(a.keys),
    ] {
        for chunk in u.chunks(backend) {
            let mut q = Sql::new("");
            chunk.push(&mut q, backend);
            c.execute(&q).await?;
        }
    }
    Ok(())
}

/// The per-hour rows of `delta` and their sums over sessions.
fn hour_rows(delta: &BTreeMap<Key, Counts>) -> (Vec<(&Key, &Counts)>, Vec<TotalRow>) {
    let rows: Vec<(&Key, &Counts)> = delta.iter().filter(|(_, d)| !d.is_zero()).collect();
    let mut totals: BTreeMap<(i64, String, bool), Counts> = BTreeMap::new();
    for ((_, h, m, r), d) in &rows {
        totals.entry((*h, m.clone(), *r)).or_default().add(d, 1);
    }
    (rows, totals.into_iter().collect())
}
