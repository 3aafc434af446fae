//! Token usage as the reports read it: sums of `usage_hours` (kept by ingest, see
//! `store::usage`), never a read of messages, grouped by what the report needs. The query layer
//! (`query::usage`) folds them into rows and prices them.

use serde::Serialize;

use super::super::sql::Sql;
use super::super::{Page, Store, StoreError};
use super::{push_project_filter, Origin};
use crate::usage::Counts;

/// Which usage a report counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UsageFilter {
    /// From this UTC hour (`unix_ms / 3_600_000`), inclusive.
    pub since_hour: Option<i64>,
    /// Before this UTC hour.
    pub until_hour: Option<i64>,
    /// Sessions whose project folder or working directory contains this text.
    pub project: Option<String>,
    /// The machine that wrote the session first, and its user.
    pub origin: Origin,
}

/// What the cells of a report are keyed by, besides model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UsageKey {
    /// The UTC hour (days, weeks, months and blocks are folded from hours).
    Hour,
    /// The session.
    Session,
    /// The project folder.
    Project,
    /// The machine.
    Machine,
    /// The user.
    User,
    /// Nothing: one cell per model (the totals, and `--by model`).
    Model,
}

impl UsageKey {
    /// The key's kind in `usage_groups` (see `store::usage`), for keys kept there.
    fn group_kind(self) -> Option<&'static str> {
        match self {
            UsageKey::Session => Some("session"),
            UsageKey::Project => Some("project"),
            UsageKey::Machine => Some("machine"),
            UsageKey::User => Some("user"),
            UsageKey::Hour | UsageKey::Model => None,
        }
    }

    fn column(self) -> &'static str {
        match self {
            UsageKey::Hour | UsageKey::Model => "''",
            UsageKey::Session => "h.session_id",
            UsageKey::Project => "s.project",
            UsageKey::Machine => "s.machine",
            UsageKey::User => "s.user_name",
        }
    }
}

/// The sums of one key, model and cost kind.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageCell {
    /// The key's value (`""` for [`UsageKey::Hour`] and [`UsageKey::Model`]).
    pub key: String,
    /// The hour for [`UsageKey::Hour`]; else the key's last hour with usage.
    pub hour: i64,
    /// Model (`""` when the transcript named none).
    pub model: String,
    /// The messages' own recorded cost applies (`costUSD`).
    pub recorded: bool,
    /// The sums.
    pub counts: Counts,
}

/// A cell as a query gives it (the columns [`SUMS`] and [`GROUP_COLUMNS`] name, in order).
#[derive(sqlx::FromRow)]
pub(in crate::store) struct CellRow {
    key: String,
    hour: i64,
    model: String,
    recorded: bool,
    messages: i64,
    input: i64,
    output: i64,
    creation: i64,
    creation_1h: i64,
    read: i64,
    over_input: i64,
    over_output: i64,
    over_creation: i64,
    over_creation_1h: i64,
    over_read: i64,
    recorded_cost: f64,
}

impl crate::store::lite::LiteRow for CellRow {
    fn from_lite(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(CellRow {
            key: r.get(0)?,
            hour: r.get(1)?,
            model: r.get(2)?,
            recorded: r.get(3)?,
            messages: r.get(4)?,
            input: r.get(5)?,
            output: r.get(6)?,
            creation: r.get(7)?,
            creation_1h: r.get(8)?,
            read: r.get(9)?,
            over_input: r.get(10)?,
            over_output: r.get(11)?,
            over_creation: r.get(12)?,
            over_creation_1h: r.get(13)?,
            over_read: r.get(14)?,
            recorded_cost: r.get(15)?,
        })
    }
}

/// `usage_groups h` rows as cells (each row's own last hour as `hour`): the report's page and
/// the writer's moves (`store::usage::groups`) read them alike.
pub(in crate::store) const GROUP_COLUMNS: &str = "h.key AS key, h.last_hour AS hour, \
     h.model AS model, h.recorded AS recorded, h.messages AS messages, \
     h.input_tokens AS input, h.output_tokens AS output, h.cache_creation_tokens AS creation, \
     h.cache_creation_1h_tokens AS creation_1h, h.cache_read_tokens AS read, \
     h.over_input AS over_input, h.over_output AS over_output, \
     h.over_creation AS over_creation, h.over_creation_1h AS over_creation_1h, \
     h.over_read AS over_read, h.recorded_cost AS recorded_cost";

impl From<CellRow> for UsageCell {
    fn from(r: CellRow) -> Self {
        UsageCell {
            key: r.key,
            hour: r.hour,
            model: r.model,
            recorded: r.recorded,
            counts: Counts {
                messages: r.messages,
                input: r.input,
                output: r.output,
                creation: r.creation,
                creation_1h: r.creation_1h,
                read: r.read,
                over_input: r.over_input,
                over_output: r.over_output,
                over_creation: r.over_creation,
                over_creation_1h: r.over_creation_1h,
                over_read: r.over_read,
                recorded_cost: r.recorded_cost,
            },
        }
    }
}

const SUMS: &str = "h.model AS model, h.recorded AS recorded, \
     CAST(SUM(h.messages) AS BIGINT) AS messages, \
     CAST(SUM(h.input_tokens) AS BIGINT) AS input, \
     CAST(SUM(h.output_tokens) AS BIGINT) AS output, \
     CAST(SUM(h.cache_creation_tokens) AS BIGINT) AS creation, \
     CAST(SUM(h.cache_creation_1h_tokens) AS BIGINT) AS creation_1h, \
     CAST(SUM(h.cache_read_tokens) AS BIGINT) AS read, \
     CAST(SUM(h.over_input) AS BIGINT) AS over_input, \
     CAST(SUM(h.over_output) AS BIGINT) AS over_output, \
     CAST(SUM(h.over_creation) AS BIGINT) AS over_creation, \
     CAST(SUM(h.over_creation_1h) AS BIGINT) AS over_creation_1h, \
     CAST(SUM(h.over_read) AS BIGINT) AS over_read, \
     CAST(SUM(h.recorded_cost) AS DOUBLE PRECISION) AS recorded_cost";

impl UsageFilter {
    /// Whether a session's facts (project, machine, user) narrow the report.
    fn by_session_facts(&self) -> bool {
        self.project.is_some() || !self.origin.is_empty()
    }

    /// Whether the report covers all usage (no date, project, machine or user).
    fn is_whole(&self) -> bool {
        self.since_hour.is_none() && self.until_hour.is_none() && !self.by_session_facts()
    }
}

/// ` FROM <aggregate> h [LEFT JOIN usage_sessions s] WHERE ..` for `f` and `key`: the
/// all-sessions aggregate (`usage_totals`, a few rows an hour) when nothing asks for a session
/// or its facts, else the per-session one, joined to the sessions' facts only when they are
/// asked for (the join is most of the cost of a report over a large store).
fn push_from<'a>(q: &mut Sql<'a>, f: &'a UsageFilter, key: UsageKey) {
    let facts = f.by_session_facts()
        || matches!(key, UsageKey::Project | UsageKey::Machine | UsageKey::User);
    if !facts && matches!(key, UsageKey::Hour | UsageKey::Model) {
        q.push(" FROM usage_totals h WHERE 1 = 1");
    } else if facts {
        q.push(
            " FROM usage_hours h LEFT JOIN usage_sessions s ON s.session_id = h.session_id \
             WHERE 1 = 1",
        );
    } else {
        q.push(" FROM usage_hours h WHERE 1 = 1");
    }
    // A row whose messages all went elsewhere (a message's row replaced by a line of another
    // hour, model or session) is no usage: left out, as the rollups remove theirs.
    q.push(" AND h.messages > 0");
    if let Some(h) = f.since_hour {
        q.push(" AND h.hour >= ").push_bind(h);
    }
    if let Some(h) = f.until_hour {
        q.push(" AND h.hour < ").push_bind(h);
    }
    if let Some(p) = &f.project {
        push_project_filter(q, p, "s.project", "s.cwd");
    }
    if let Some(m) = &f.origin.machine {
        q.push(" AND s.machine = ").push_bind(m.as_str());
    }
    if let Some(u) = &f.origin.user {
        q.push(" AND s.user_name = ").push_bind(u.as_str());
    }
}

/// The cells of a page's keys in the page's order (each key's cells carry the key's last hour,
/// not their model's).
fn in_page_order(rows: Vec<CellRow>, keys: &[(String, i64)]) -> Vec<UsageCell> {
    let mut cells: Vec<UsageCell> = rows.into_iter().map(UsageCell::from).collect();
    let rank = |k: &str| keys.iter().position(|(x, _)| x == k).unwrap_or(usize::MAX);
    cells.sort_by(|a, b| rank(&a.key).cmp(&rank(&b.key)).then(a.model.cmp(&b.model)));
    for c in &mut cells {
        if let Some((_, last)) = keys.iter().find(|(k, _)| *k == c.key) {
            c.hour = *last;
        }
    }
    cells
}

impl Store {
    /// The sums of every (key, model, cost kind) under `f`. For [`UsageKey::Hour`] one cell per
    /// hour with usage (a report over days folds them: what it reads grows with the hours
    /// asked for, not with the messages stored); for the others, see [`Store::usage_page`].
    pub async fn usage_cells(
        &self,
        f: &UsageFilter,
        key: UsageKey,
    ) -> Result<Vec<UsageCell>, StoreError> {
        let (k, hour, group) = match key {
            UsageKey::Hour => ("''", "h.hour", "h.hour, "),
            _ => (key.column(), "CAST(MAX(h.hour) AS BIGINT)", ""),
        };
        let key_group = match key {
            UsageKey::Hour | UsageKey::Model => String::new(),
            _ => format!("{}, ", key.column()),
        };
        let mut q = Sql::new(format!(
            "SELECT COALESCE({k}, '') AS key, {hour} AS hour, {SUMS}"
        ));
        push_from(&mut q, f, key);
        q.push(&format!(
            " GROUP BY {group}{key_group}h.model, h.recorded ORDER BY 2 DESC, 1, 3"
        ));
        let rows: Vec<CellRow> = self.fetch_all(&q.not_persistent()).await?;
        Ok(rows.into_iter().map(UsageCell::from).collect())
    }

    /// One page of the keys of a [`UsageKey::Session`], `Project`, `Machine` or `User` report,
    /// most recently used first, paged in SQL, with their cells; `has_more` when more follow.
    pub async fn usage_page(
        &self,
        f: &UsageFilter,
        key: UsageKey,
        page: Page,
    ) -> Result<(Vec<UsageCell>, bool), StoreError> {
        if let (Some(kind), true) = (key.group_kind(), f.is_whole()) {
            return self.usage_group_page(kind, page).await;
        }
        let col = key.column();
        let mut q = Sql::new(format!(
            "SELECT COALESCE({col}, '') AS key, CAST(MAX(h.hour) AS BIGINT) AS last"
        ));
        push_from(&mut q, f, key);
        q.push(&format!(" GROUP BY {col} ORDER BY 2 DESC, 1 LIMIT "))
            .push_bind(i64::from(page.probe()))
            .push(" OFFSET ")
            .push_bind(i64::from(page.offset));
        let mut keys: Vec<(String, i64)> = self.fetch_all(&q.not_persistent()).await?;
        let more = keys.len() > page.limit as usize;
        keys.truncate(page.limit as usize);
        if keys.is_empty() {
            return Ok((Vec::new(), more));
        }
        let mut q = Sql::new(format!(
            "SELECT COALESCE({col}, '') AS key, CAST(MAX(h.hour) AS BIGINT) AS hour, {SUMS}"
        ));
        push_from(&mut q, f, key);
        q.push(" AND ");
        q.push(&format!("COALESCE({col}, '')"));
        q.push_in("", keys.iter().map(|(k, _)| k.as_str()));
        q.push(&format!(" GROUP BY {col}, h.model, h.recorded"));
        let rows: Vec<CellRow> = self.fetch_all(&q.not_persistent()).await?;
        Ok((in_page_order(rows, &keys), more))
    }

    /// [`Store::usage_page`] over all usage: the page's keys from `usage_group_keys` in
    /// recency order (an index range), their sums from `usage_groups` (by primary key). What it
    /// reads grows with the page, not with the store.
    async fn usage_group_page(
        &self,
        kind: &'static str,
        page: Page,
    ) -> Result<(Vec<UsageCell>, bool), StoreError> {
        let mut q = Sql::new("SELECT key, last_hour FROM usage_group_keys WHERE kind = ");
        q.push_bind(kind)
            .push(" ORDER BY last_hour DESC, key LIMIT ")
            .push_bind(i64::from(page.probe()))
            .push(" OFFSET ")
            .push_bind(i64::from(page.offset));
        let mut keys: Vec<(String, i64)> = self.fetch_all(&q).await?;
        let more = keys.len() > page.limit as usize;
        keys.truncate(page.limit as usize);
        if keys.is_empty() {
            return Ok((Vec::new(), more));
        }
        let mut q = Sql::new(format!(
            "SELECT {GROUP_COLUMNS} FROM usage_groups h WHERE h.kind = "
        ));
        q.push_bind(kind).push(" AND ");
        q.push_in("h.key", keys.iter().map(|(k, _)| k.as_str()));
        let rows: Vec<CellRow> = self.fetch_all(&q.not_persistent()).await?;
        Ok((in_page_order(rows, &keys), more))
    }

    /// Usage rows stored before usage was dated (migration 0027): in no report until their
    /// files are read again (`gleaner reextract`). One indexed probe.
    pub async fn undated_usage(&self) -> Result<bool, StoreError> {
        let n = self
            .fetch_i64(&Sql::new(
                "SELECT COUNT(*) FROM (SELECT 1 FROM usage_messages WHERE ts_ms IS NULL LIMIT 1) u",
            ))
            .await?;
        Ok(n > 0)
    }
}
