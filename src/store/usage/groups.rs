//! The rollups per session, project, machine and user (`usage_groups`, with each key's last hour
//! of use in `usage_group_keys`) and the session facts they are keyed by (`usage_sessions`),
//! written in the group's transaction after the hourly aggregate. `gleaner usage --by
//! session|project|machine|user` with nothing narrowing it reads a page of keys from an index and
//! their rows by primary key: what it reads grows with the page, not with the store.
//!
//! Why a session's sums move: its project, machine and user are its `sessions` row's (the
//! project of its earliest-started file, see `commit`'s upsert), which can change when a later
//! file of the same session arrives (a copy in another project folder read first). The session's
//! own rows (kind `session`) are exactly what it added under its old keys: they are taken from
//! those and added to the new ones, so the rollups always equal the hourly aggregate grouped by
//! the facts held now. Rows left with no message are removed (as the reports leave out the
//! hourly aggregate's), so are keys left with no row, and a key that lost a session gets its
//! last hour again from the hourly aggregate. Otherwise a key's last hour is never lowered: a
//! message's row replaced by a line of an earlier hour leaves it (report order only).
//!
//! Known limit (PostgreSQL, several writers): a session's facts are read without a lock; a
//! writer that subtracts a message from session A (its row replaced by a copy in session B)
//! while another moves A to a new project can file that subtraction under A's old project.
//! Both need the same message in two sessions and a session's project changing at once.

use std::collections::{BTreeMap, HashMap};

use super::{add_on_conflict, bind_sums, Key, SUMS};
use crate::extract::rows::UsageRow;
use crate::store::read::usage::{CellRow, GROUP_COLUMNS};
use crate::store::sql::{row_chunks, Backend, Conn, Sql};
use crate::store::{StoreError, UsageCell};
use crate::usage::Counts;

/// The kinds of `usage_groups`: the session, then its facts in [`Facts`] order.
const KINDS: [&str; 4] = ["session", "project", "machine", "user"];

/// A session's project, machine and user, as the reports group by them.
type Facts = [String; 3];

/// The columns of `usage_sessions` that hold [`Facts`], in order.
const FACT_COLUMNS: [&str; 3] = ["project", "machine", "user_name"];

/// A row of `usage_groups`: kind, key, model, cost recorded.
type GroupKey = (&'static str, String, String, bool);

/// A change to one row of `usage_groups`: the sums to add, the latest hour that gained a
/// message, and the earliest hour named (the row's last hour when none gained one: the upsert
/// keeps the larger, so it lowers nothing).
#[derive(Default)]
struct Change {
    counts: Counts,
    gained: Option<i64>,
    first: Option<i64>,
}

impl Change {
    fn add(&mut self, d: &Counts, sign: i64, hour: i64) {
        self.counts.add(d, sign);
        if sign > 0 && d.messages > 0 {
            self.gained = Some(self.gained.map_or(hour, |g| g.max(hour)));
        }
        self.first = Some(self.first.map_or(hour, |f| f.min(hour)));
    }

    fn last_hour(&self) -> i64 {
        self.gained.or(self.first).unwrap_or_default()
    }
}

/// A session's facts now (its `sessions` row) and as `usage_sessions` held them.
#[derive(sqlx::FromRow)]
struct FactsRow {
    session_id: String,
    project: String,
    cwd: Option<String>,
    machine: String,
    user_name: String,
    old_project: Option<String>,
    old_cwd: Option<String>,
    old_machine: Option<String>,
    old_user: Option<String>,
}

impl crate::store::lite::LiteRow for FactsRow {
    fn from_lite(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(FactsRow {
            session_id: r.get(0)?,
            project: r.get(1)?,
            cwd: r.get(2)?,
            machine: r.get(3)?,
            user_name: r.get(4)?,
            old_project: r.get(5)?,
            old_cwd: r.get(6)?,
            old_machine: r.get(7)?,
            old_user: r.get(8)?,
        })
    }
}

/// The touched sessions' facts now, and the former facts of those whose facts changed (none
/// held yet counts as all `''`: what the aggregate groups a session without facts under).
pub(super) struct SessionFacts {
    now: HashMap<String, Facts>,
    moved: Vec<(String, Facts)>,
}

/// A row of `usage_groups` to add: its key, sums and last hour.
pub(super) type GroupRow = (GroupKey, Counts, i64);

/// A row of `usage_group_keys` to raise: kind, key, last hour.
pub(super) type KeyRow = ((&'static str, String), i64);

/// What a group changes in the rollups.
pub(super) struct Changes {
    /// Rows to add, in key order.
    pub(super) rows: Vec<GroupRow>,
    /// Keys' last hours to raise, in key order.
    pub(super) keys: Vec<KeyRow>,
    /// Keys with a row that lost messages (a replaced message, a move): their emptied rows go.
    lowered: Vec<(&'static str, String)>,
    /// Keys a session moved away from (fact index, key): their last hour is read again.
    moved_from: Vec<(usize, String)>,
}

/// Read the facts of every session the group touches (the new rows' and those a replaced row
/// leaves), from their `sessions` rows beside what `usage_sessions` held, or from
/// `usage_sessions` alone for a pruned session; copy those that changed into `usage_sessions`,
/// so `--by project`, `--machine` and `--user` survive `prune`.
pub(super) async fn keep_facts(
    c: &mut Conn<'_>,
    rows: &[UsageRow],
    delta: &BTreeMap<Key, Counts>,
) -> Result<SessionFacts, StoreError> {
    let mut ids: Vec<&str> = rows
        .iter()
        .map(|u| u.session_id.as_str())
        .chain(delta.keys().map(|(s, ..)| s.as_str()))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let mut facts = SessionFacts {
        now: HashMap::new(),
        moved: Vec::new(),
    };
    let mut keep: Vec<(String, Facts, Option<String>)> = Vec::new();
    for chunk in ids.chunks(500) {
        let mut q = Sql::new(
            "SELECT s.session_id, COALESCE(s.project, '') AS project, s.cwd, \
             COALESCE(s.machine, '') AS machine, COALESCE(s.user_name, '') AS user_name, \
             u.project AS old_project, u.cwd AS old_cwd, u.machine AS old_machine, \
             u.user_name AS old_user \
             FROM sessions s LEFT JOIN usage_sessions u ON u.session_id = s.session_id WHERE ",
        );
        q.push_in("s.session_id", chunk.iter().copied());
        for r in c.fetch_rows::<FactsRow>(&q.not_persistent()).await? {
            let now = [r.project, r.machine, r.user_name];
            let old = match (r.old_project, r.old_machine, r.old_user) {
                (Some(p), Some(m), Some(u)) => Some([p, m, u]),
                _ => None,
            };
            if old.as_ref() != Some(&now) || r.old_cwd != r.cwd {
                keep.push((r.session_id.clone(), now.clone(), r.cwd));
            }
            let was = old.unwrap_or_default();
            if was != now {
                facts.moved.push((r.session_id.clone(), was));
            }
            facts.now.insert(r.session_id, now);
        }
    }
    let pruned: Vec<&str> = ids
        .into_iter()
        .filter(|id| !facts.now.contains_key(*id))
        .collect();
    for chunk in pruned.chunks(500) {
        let mut q =
            Sql::new("SELECT session_id, project, machine, user_name FROM usage_sessions WHERE ");
        q.push_in("session_id", chunk.iter().copied());
        let rows: Vec<(String, String, String, String)> = c.fetch_rows(&q.not_persistent()).await?;
        for (id, p, m, u) in rows {
            facts.now.insert(id, [p, m, u]);
        }
    }
    write_sessions(c, &keep).await?;
    Ok(facts)
}

/// The rollups' changes of a group: the moved sessions' sums taken from their old keys and
/// added under the new ones (read before this group's changes are written), and `delta` (as
/// `usage_hours` gets it) under each session, project, machine and user.
pub(super) async fn changes(
    c: &mut Conn<'_>,
    facts: &SessionFacts,
    delta: &BTreeMap<Key, Counts>,
) -> Result<Changes, StoreError> {
    let mut changes: BTreeMap<GroupKey, Change> = BTreeMap::new();
    let mut moved_from = move_sessions(c, facts, &mut changes).await?;
    moved_from.sort_unstable();
    moved_from.dedup();
    for ((s, h, m, r), d) in delta.iter().filter(|(_, d)| !d.is_zero()) {
        let keys = facts.now.get(s).cloned().unwrap_or_default();
        for (kind, key) in KINDS.iter().zip(std::iter::once(s.clone()).chain(keys)) {
            changes
                .entry((kind, key, m.clone(), *r))
                .or_default()
                .add(d, 1, *h);
        }
    }
    let mut lowered: Vec<(&'static str, String)> = changes
        .iter()
        .filter(|(_, ch)| ch.counts.messages < 0)
        .map(|((kind, key, ..), _)| (*kind, key.clone()))
        .collect();
    lowered.dedup();
    let rows: Vec<GroupRow> = changes
        .into_iter()
        .filter(|(_, ch)| !ch.counts.is_zero())
        .map(|(k, ch)| {
            let last = ch.last_hour();
            (k, ch.counts, last)
        })
        .collect();
    let mut keys: BTreeMap<(&'static str, String), i64> = BTreeMap::new();
    for ((kind, key, ..), _, last) in &rows {
        let e = keys.entry((kind, key.clone())).or_insert(*last);
        *e = (*e).max(*last);
    }
    Ok(Changes {
        rows,
        keys: keys.into_iter().collect(),
        lowered,
        moved_from,
    })
}

/// Copy `keep` into `usage_sessions`.
async fn write_sessions(
    c: &mut Conn<'_>,
    keep: &[(String, Facts, Option<String>)],
) -> Result<(), StoreError> {
    let backend = c.backend();
    for chunk in row_chunks(backend, keep) {
        let mut q =
            Sql::new("INSERT INTO usage_sessions (session_id, project, machine, user_name, cwd) ");
        q.push_rows(backend, chunk, |row, (id, [p, m, u], cwd)| {
            row.bind(id.as_str())
                .bind(p.as_str())
                .bind(m.as_str())
                .bind(u.as_str())
                .bind(cwd.as_deref());
        });
        q.push(
            " ON CONFLICT (session_id) DO UPDATE SET project = excluded.project, \
             cwd = excluded.cwd, machine = excluded.machine, user_name = excluded.user_name",
        );
        c.execute(&q).await?;
    }
    Ok(())
}

/// Take each moved session's sums from the keys of its old facts and add them under its new
/// ones (the session's own rows, before this group's changes, are what it added there); the
/// keys it left (fact index, key). A session with no rows yet (a new one) moves nothing.
async fn move_sessions(
    c: &mut Conn<'_>,
    facts: &SessionFacts,
    changes: &mut BTreeMap<GroupKey, Change>,
) -> Result<Vec<(usize, String)>, StoreError> {
    let mut left = Vec::new();
    for chunk in facts.moved.chunks(500) {
        let mut q = Sql::new(format!(
            "SELECT {GROUP_COLUMNS} FROM usage_groups h WHERE h.kind = 'session' AND "
        ));
        q.push_in("h.key", chunk.iter().map(|(s, _)| s.as_str()));
        let rows = c.fetch_rows::<CellRow>(&q.not_persistent()).await?;
        for row in rows.into_iter().map(UsageCell::from) {
            let (Some((_, old)), Some(now)) = (
                chunk.iter().find(|(s, _)| *s == row.key),
                facts.now.get(&row.key),
            ) else {
                continue;
            };
            let counts = row.counts;
            for (i, ((kind, old), now)) in KINDS[1..].iter().zip(old).zip(now).enumerate() {
                if old == now {
                    continue;
                }
                left.push((i, old.clone()));
                changes
                    .entry((kind, old.clone(), row.model.clone(), row.recorded))
                    .or_default()
                    .add(&counts, -1, row.hour);
                changes
                    .entry((kind, now.clone(), row.model.clone(), row.recorded))
                    .or_default()
                    .add(&counts, 1, row.hour);
            }
        }
    }
    Ok(left)
}

/// `last_hour = ` the larger of the stored and the incoming one.
fn later(table: &str) -> String {
    format!(
        "last_hour = CASE WHEN excluded.last_hour > {table}.last_hour \
         THEN excluded.last_hour ELSE {table}.last_hour END"
    )
}

/// The upsert of `rows` into `usage_groups` (sums added, last hour raised).
pub(super) fn push_groups<'a>(q: &mut Sql<'a>, backend: Backend, rows: &'a [GroupRow]) {
    q.push(&format!(
        "INSERT INTO usage_groups (kind, key, model, recorded, last_hour, {SUMS}) "
    ));
    q.push_rows(backend, rows, |row, ((kind, key, m, r), d, last)| {
        row.bind(*kind)
            .bind(key.as_str())
            .bind(m.as_str())
            .bind(*r)
            .bind(*last);
        bind_sums(row, d);
    });
    q.push(&add_on_conflict(
        "usage_groups",
        "kind, key, model, recorded",
    ));
    q.push(&format!(", {}", later("usage_groups")));
}

/// The upsert of `rows` into `usage_group_keys` (last hour raised).
pub(super) fn push_keys<'a>(q: &mut Sql<'a>, backend: Backend, rows: &'a [KeyRow]) {
    q.push("INSERT INTO usage_group_keys (kind, key, last_hour) ");
    q.push_rows(backend, rows, |row, ((kind, key), last)| {
        row.bind(*kind).bind(key.as_str()).bind(*last);
    });
    q.push(&format!(
        " ON CONFLICT (kind, key) DO UPDATE SET {}",
        later("usage_group_keys")
    ));
}

/// After the group's changes: remove the rows left with no message and the keys left with no
/// row, and give the keys a session moved away from their last hour again, from the hourly
/// aggregate (their sessions' hours: moves are rare, a session's project changes only when an
/// earlier-started file of it arrives).
pub(super) async fn tidy(c: &mut Conn<'_>, ch: &Changes) -> Result<(), StoreError> {
    for kind in KINDS {
        let keys: Vec<&str> = ch
            .lowered
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, key)| key.as_str())
            .collect();
        for chunk in keys.chunks(500) {
            let mut q = Sql::new("DELETE FROM usage_groups WHERE messages = 0 AND kind = ");
            q.push_bind(kind).push(" AND ");
            q.push_in("key", chunk.iter().copied());
            c.execute(&q.not_persistent()).await?;
            let mut q = Sql::new("DELETE FROM usage_group_keys WHERE kind = ");
            q.push_bind(kind).push(" AND ");
            q.push_in("key", chunk.iter().copied());
            q.push(
                " AND NOT EXISTS (SELECT 1 FROM usage_groups g \
                 WHERE g.kind = usage_group_keys.kind AND g.key = usage_group_keys.key)",
            );
            c.execute(&q.not_persistent()).await?;
        }
    }
    for (i, key) in &ch.moved_from {
        let (kind, column) = (KINDS[i + 1], FACT_COLUMNS[*i]);
        let q = Sql::new(format!(
            "UPDATE usage_groups SET last_hour = COALESCE((SELECT MAX(h.hour) FROM usage_hours h \
             JOIN usage_sessions s ON s.session_id = h.session_id WHERE s.{column} = $1 \
             AND h.model = usage_groups.model AND h.recorded = usage_groups.recorded \
             AND h.messages > 0), last_hour) WHERE kind = $2 AND key = $3"
        ))
        .arg(key.as_str())
        .arg(kind)
        .arg(key.as_str());
        c.execute(&q).await?;
        let q = Sql::new(
            "UPDATE usage_group_keys SET last_hour = (SELECT MAX(g.last_hour) FROM usage_groups g \
             WHERE g.kind = $1 AND g.key = $2) WHERE kind = $3 AND key = $4",
        )
        .arg(kind)
        .arg(key.as_str())
        .arg(kind)
        .arg(key.as_str());
        c.execute(&q).await?;
    }
    Ok(())
}
