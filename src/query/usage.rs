//! `usage`: tokens and cost by day, week, month, session, project, model, machine, user or
//! 5-hour block, for every door (CLI `gleaner usage`, MCP `get_usage`, web `/usage`).
//!
//! Read from what ingest keeps (`usage_hours`, see `store::usage`), never from messages, so a
//! report costs the hours or keys it covers. Days, weeks and months are the local calendar's
//! (the process's `TZ`, as ccusage reads it), folded from UTC hours: exact for every time zone
//! whose offset is whole hours. Weeks start on Sunday, as ccusage's do. `--since` and `--until`
//! are applied to the hour (a bound inside an hour takes that whole hour).

use std::collections::BTreeMap;

use chrono::{Datelike, Local, TimeZone};
use serde::Serialize;

use super::vocab::Vocabulary;
use super::{Error, Page, TimeBound};
use crate::store::{Origin, Store, UsageCell, UsageFilter, UsageKey};
use crate::usage::{Counts, Prices};

/// A 5-hour block: Claude's usage limits count tokens in windows that open at the first
/// message (floored to the hour, as ccusage floors them) and close five hours later.
pub const BLOCK_HOURS: i64 = 5;
const HOUR_MS: i64 = 3_600_000;

/// What the rows of a report are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum By {
    /// Local calendar day (`2026-11-28`).
    Day,
    /// Week, keyed by its Sunday.
    Week,
    /// Month (`2026-11`).
    Month,
    /// Session id.
    Session,
    /// Project folder.
    Project,
    /// Model.
    Model,
    /// Machine that first wrote the session.
    Machine,
    /// User of that machine.
    User,
    /// 5-hour block, keyed by its start.
    Block,
}

impl By {
    /// Every value, in help order.
    pub const ALL: [By; 9] = [
        By::Day,
        By::Week,
        By::Month,
        By::Session,
        By::Project,
        By::Model,
        By::Machine,
        By::User,
        By::Block,
    ];

    /// The name every door accepts.
    pub fn as_str(self) -> &'static str {
        match self {
            By::Day => "day",
            By::Week => "week",
            By::Month => "month",
            By::Session => "session",
            By::Project => "project",
            By::Model => "model",
            By::Machine => "machine",
            By::User => "user",
            By::Block => "block",
        }
    }
}

impl Vocabulary for By {
    const ALL: &'static [Self] = &By::ALL;
    fn name(self) -> &'static str {
        self.as_str()
    }
}

/// A usage report's request, parsed.
#[derive(Debug, Clone)]
pub struct UsageQuery {
    /// Rows by.
    pub by: By,
    /// From this instant (to the hour).
    pub since: Option<TimeBound>,
    /// Before this instant (to the hour).
    pub until: Option<TimeBound>,
    /// Project folder or working directory containing this text.
    pub project: Option<String>,
    /// Machine and user.
    pub origin: Origin,
    /// Each row split by model.
    pub breakdown: bool,
    /// The page of rows.
    pub page: Page,
}

/// A usage report's inputs as a door received them: parsed and checked once, here, for the
/// CLI (`--by`), MCP and the web (`by`).
#[derive(Debug, Clone, Default)]
pub struct UsageInput<'a> {
    /// `by` (default `day`).
    pub by: Option<&'a str>,
    /// `since`.
    pub since: Option<&'a str>,
    /// `until`.
    pub until: Option<&'a str>,
    /// `project`.
    pub project: Option<String>,
    /// `machine`.
    pub machine: Option<String>,
    /// `user`.
    pub user: Option<String>,
    /// `breakdown`.
    pub breakdown: bool,
    /// `limit`.
    pub limit: Option<u64>,
    /// `offset`.
    pub offset: Option<u64>,
}

/// Rows a report gives unless `limit` says otherwise.
pub const DEFAULT_ROWS: u32 = 50;

impl UsageQuery {
    /// The request from `i`; `name` gives each input's name as the door shows it (`--by` in
    /// the CLI, `by` elsewhere), so that an error names what the caller typed.
    pub fn parse(i: UsageInput<'_>, name: impl Fn(&str) -> String) -> Result<UsageQuery, Error> {
        let (since, until) =
            super::time_range((&name("since"), i.since), (&name("until"), i.until))?;
        Ok(UsageQuery {
            by: i
                .by
                .map(|b| super::choice::<By>(&name("by"), b))
                .transpose()?
                .unwrap_or(By::Day),
            since,
            until,
            project: super::project((&name("project"), i.project))?,
            origin: super::origin((&name("machine"), i.machine), (&name("user"), i.user))?,
            breakdown: i.breakdown,
            page: Page::parse(
                (&name("limit"), i.limit),
                (&name("offset"), i.offset),
                DEFAULT_ROWS,
                super::MAX_LISTING,
            )?,
        })
    }
}

/// Token counts and cost of a row, a model of a row, or the totals.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Figures {
    /// Input tokens.
    pub input_tokens: i64,
    /// Output tokens.
    pub output_tokens: i64,
    /// Cache-creation tokens.
    pub cache_creation_tokens: i64,
    /// Cache-read tokens.
    pub cache_read_tokens: i64,
    /// The four added.
    pub total_tokens: i64,
    /// USD; `None` (JSON `null`) when a model has no price: unknown, never 0.
    pub cost_usd: Option<f64>,
    /// API messages counted.
    pub messages: i64,
}

/// One model's share of a row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelFigures {
    /// Model (`unknown` when the transcript named none).
    pub model: String,
    /// Its figures.
    #[serde(flatten)]
    pub figures: Figures,
}

/// The extra facts of a 5-hour block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Block {
    /// Start (UTC, ISO 8601).
    pub start: String,
    /// End: start plus five hours.
    pub end: String,
    /// The block is open now.
    pub active: bool,
    /// For the active block: its tokens at the end if use goes on at the rate so far.
    pub projected_total_tokens: Option<i64>,
    /// The same for its cost.
    pub projected_cost_usd: Option<f64>,
}

/// A row of a report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsageRow {
    /// The date, week, month, session id, project, model, machine, user or block start.
    pub key: String,
    /// Its figures.
    #[serde(flatten)]
    pub figures: Figures,
    /// The models used, most tokens first.
    pub models: Vec<String>,
    /// Per model (with `--breakdown`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breakdown: Option<Vec<ModelFigures>>,
    /// For `--by block`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<Block>,
}

/// A report: its rows (newest or most recent first), the totals of everything the filters
/// select (not only the page), and where the next page starts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsageReport {
    /// What the rows are.
    pub by: By,
    /// The page of rows.
    pub rows: Vec<UsageRow>,
    /// Everything the filters select.
    pub totals: Figures,
    /// The offset of the next page, if more rows follow.
    pub next_offset: Option<u64>,
    /// Usage stored before Gleaner dated it (in no row: `gleaner reextract` re-reads it).
    pub undated: bool,
}

/// Sums by model and cost kind: what a row (or the totals) is made of.
#[derive(Debug, Clone, Default)]
struct Acc {
    by_model: BTreeMap<(String, bool), Counts>,
}

impl Acc {
    fn add(&mut self, c: &UsageCell) {
        self.by_model
            .entry((c.model.clone(), c.recorded))
            .or_default()
            .add(&c.counts, 1);
    }

    fn figures_of<'a>(
        prices: &Prices,
        parts: impl Iterator<Item = (&'a (String, bool), &'a Counts)>,
    ) -> Figures {
        let (c, cost_usd) = prices.sum(parts.map(|((m, r), c)| (m.as_str(), *r, c)));
        Figures {
            input_tokens: c.input,
            output_tokens: c.output,
            cache_creation_tokens: c.creation,
            cache_read_tokens: c.read,
            total_tokens: c.total(),
            cost_usd,
            messages: c.messages,
        }
    }

    fn figures(&self, prices: &Prices) -> Figures {
        Self::figures_of(prices, self.by_model.iter())
    }

    /// Each model's figures, most tokens first.
    fn models(&self, prices: &Prices) -> Vec<ModelFigures> {
        let mut names: Vec<&String> = self.by_model.keys().map(|(m, _)| m).collect();
        names.dedup();
        let mut out: Vec<ModelFigures> = names
            .into_iter()
            .map(|m| ModelFigures {
                model: if m.is_empty() {
                    "unknown".into()
                } else {
                    m.clone()
                },
                figures: Self::figures_of(
                    prices,
                    self.by_model.iter().filter(|((x, _), _)| x == m),
                ),
            })
            .collect();
        out.sort_by(|a, b| {
            b.figures
                .total_tokens
                .cmp(&a.figures.total_tokens)
                .then(a.model.cmp(&b.model))
        });
        out
    }

    fn row(&self, key: String, prices: &Prices, breakdown: bool) -> UsageRow {
        let models = self.models(prices);
        UsageRow {
            key,
            figures: self.figures(prices),
            models: models.iter().map(|m| m.model.clone()).collect(),
            breakdown: breakdown.then_some(models),
            block: None,
        }
    }
}

/// Answer `q` from `store`, pricing with `prices`; `now_ms` decides the active block.
pub async fn report(
    store: &Store,
    q: &UsageQuery,
    prices: &Prices,
    now_ms: i64,
) -> Result<UsageReport, Error> {
    let filter = UsageFilter {
        since_hour: q.since.map(|t| t.unix_ms().div_euclid(HOUR_MS)),
        until_hour: q
            .until
            .map(|t| (t.unix_ms() + HOUR_MS - 1).div_euclid(HOUR_MS)),
        project: q.project.clone(),
        origin: q.origin.clone(),
    };
    let mut totals = Acc::default();
    for c in store.usage_cells(&filter, UsageKey::Model).await? {
        totals.add(&c);
    }
    let undated = store.undated_usage().await?;
    let keyed = match q.by {
        By::Session => Some(UsageKey::Session),
        By::Project => Some(UsageKey::Project),
        By::Machine => Some(UsageKey::Machine),
        By::User => Some(UsageKey::User),
        _ => None,
    };
    let (rows, next_offset) = if let Some(key) = keyed {
        let (cells, more) = store.usage_page(&filter, key, q.page).await?;
        let rows = fold(cells, |c| c.key.clone(), prices, q.breakdown);
        let next = more.then(|| u64::from(q.page.offset) + rows.len() as u64);
        (rows, next)
    } else {
        let rows = match q.by {
            By::Model => {
                let cells = store.usage_cells(&filter, UsageKey::Model).await?;
                let mut rows = fold(cells, |c| model_name(&c.model), prices, q.breakdown);
                rows.sort_by_key(|r| std::cmp::Reverse(r.figures.total_tokens));
                // A model's row split by model is the row again: a breakdown is shown only
                // where one name gathers several model ids.
                for r in &mut rows {
                    if r.breakdown.as_ref().is_some_and(|b| b.len() < 2) {
                        r.breakdown = None;
                    }
                }
                rows
            }
            By::Block => {
                let cells = store.usage_cells(&filter, UsageKey::Hour).await?;
                blocks(cells, prices, q.breakdown, now_ms)
            }
            by => {
                let cells = store.usage_cells(&filter, UsageKey::Hour).await?;
                fold(cells, |c| calendar_key(by, c.hour), prices, q.breakdown)
            }
        };
        page_rows(rows, q.page)
    };
    Ok(UsageReport {
        by: q.by,
        rows,
        totals: totals.figures(prices),
        next_offset,
        undated,
    })
}

/// A cost as every door shows it to people: dollars and cents; an unknown one (a model
/// without a price) says so, never `$0`.
pub fn dollars(c: Option<f64>) -> String {
    match c {
        Some(c) => format!("${c:.2}"),
        None => "unknown".into(),
    }
}

fn model_name(m: &str) -> String {
    if m.is_empty() {
        "unknown".into()
    } else {
        m.to_string()
    }
}

/// Rows of `cells` grouped by `key`, in the cells' order of first appearance for keyed
/// reports and newest key first for the calendar ones (keys that sort as time).
fn fold(
    cells: Vec<UsageCell>,
    key: impl Fn(&UsageCell) -> String,
    prices: &Prices,
    breakdown: bool,
) -> Vec<UsageRow> {
    let mut order: Vec<String> = Vec::new();
    let mut accs: BTreeMap<String, Acc> = BTreeMap::new();
    for c in &cells {
        let k = key(c);
        if !accs.contains_key(&k) {
            order.push(k.clone());
        }
        accs.entry(k).or_default().add(c);
    }
    order
        .into_iter()
        .map(|k| {
            let acc = &accs[&k];
            acc.row(k, prices, breakdown)
        })
        .collect()
}

/// The local date, Sunday-started week or month of a UTC hour, as a key that sorts as time.
fn calendar_key(by: By, hour: i64) -> String {
    let Some(t) = Local.timestamp_opt(hour * 3600, 0).earliest() else {
        return String::new();
    };
    let d = t.date_naive();
    match by {
        By::Week => {
            let back = i64::from(d.weekday().num_days_from_sunday());
            (d - chrono::Duration::days(back))
                .format("%Y-%m-%d")
                .to_string()
        }
        By::Month => d.format("%Y-%m").to_string(),
        _ => d.format("%Y-%m-%d").to_string(),
    }
}

/// 5-hour blocks from hour cells (newest first): a block opens at the first hour with usage
/// after the previous block's end.
fn blocks(cells: Vec<UsageCell>, prices: &Prices, breakdown: bool, now_ms: i64) -> Vec<UsageRow> {
    let mut hours: Vec<&UsageCell> = cells.iter().collect();
    hours.sort_by_key(|c| c.hour);
    let mut out: Vec<(i64, Acc)> = Vec::new();
    for c in hours {
        match out.last_mut() {
            Some((start, acc)) if c.hour < *start + BLOCK_HOURS => acc.add(c),
            _ => {
                let mut acc = Acc::default();
                acc.add(c);
                out.push((c.hour, acc));
            }
        }
    }
    out.into_iter()
        .rev()
        .map(|(start, acc)| {
            let start_ms = start * HOUR_MS;
            let end_ms = start_ms + BLOCK_HOURS * HOUR_MS;
            let key = crate::extract::rows::iso_from_unix_millis(start_ms);
            let mut row = acc.row(key.clone(), prices, breakdown);
            let active = now_ms >= start_ms && now_ms < end_ms;
            let scale = (active && now_ms > start_ms)
                .then(|| (BLOCK_HOURS * HOUR_MS) as f64 / (now_ms - start_ms) as f64);
            row.block = Some(Block {
                start: key,
                end: crate::extract::rows::iso_from_unix_millis(end_ms),
                active,
                projected_total_tokens: scale
                    .map(|s| (row.figures.total_tokens as f64 * s).round() as i64),
                projected_cost_usd: scale.and_then(|s| row.figures.cost_usd.map(|c| c * s)),
            });
            row
        })
        .collect()
}

/// Newest first, then the page.
fn page_rows(mut rows: Vec<UsageRow>, page: Page) -> (Vec<UsageRow>, Option<u64>) {
    let offset = page.offset as usize;
    let total = rows.len();
    let rows: Vec<UsageRow> = rows
        .drain(..)
        .skip(offset)
        .take(page.limit as usize)
        .collect();
    let next = (offset + rows.len() < total).then(|| (offset + rows.len()) as u64);
    (rows, next)
}
