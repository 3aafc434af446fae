//! `/usage`: tokens and cost over time, from the query layer's usage report (the same figures
//! as `gleaner usage` and MCP's `get_usage`).
//!
//! A bar per local day, stacked by model, drawn here as inline SVG (the Content-Security-Policy
//! allows no script, and a chart needs none): the colours are classes of the style sheet, a
//! model's chosen by a hash of its name so that it keeps its colour from page to page. Each
//! segment's `<title>` is its tooltip. Then the current 5-hour block and the report's table.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::response::Response;
use chrono::{Local, NaiveDate, TimeZone};
use maud::{html, Markup};

use super::layout::{enc, when};
use super::pages::{ok, page_param, param, Params};
use super::{AppState, WebError};
use crate::query::usage::{
    dollars, report, By, Figures, UsageInput, UsageQuery, UsageReport, UsageRow, DEFAULT_ROWS,
};
use crate::query::{Page, TimeBound};
use crate::text::thousands;

/// Days the chart covers when `since` is not given.
const DEFAULT_DAYS: i64 = 30;
/// The most bars a chart draws: a longer range shows its newest days (and says so).
const MAX_DAYS: i64 = 366;
/// Colours of the palette (`.m0` to `.m9` in the style sheet).
const PALETTE: usize = 10;

/// The chart's frame, in SVG user units (the SVG scales to the page's width).
const W: f64 = 900.0;
const LEFT: f64 = 78.0;
const RIGHT: f64 = 8.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 26.0;

/// `/usage?by=&since=&until=&project=&machine=&user=&breakdown=&limit=&offset=`.
pub async fn usage(
    State(st): State<Arc<AppState>>,
    Query(q): Params,
) -> Result<Response, WebError> {
    let breakdown = flag(&q, "breakdown")?;
    let mut uq = UsageQuery::parse(
        UsageInput {
            by: param(&q, "by"),
            since: param(&q, "since"),
            until: param(&q, "until"),
            project: param(&q, "project").map(str::to_string),
            machine: param(&q, "machine").map(str::to_string),
            user: param(&q, "user").map(str::to_string),
            breakdown,
            limit: None,
            offset: None,
        },
        str::to_string,
    )?;
    // Limit and offset arrive as text: the web's page parser names a bad one.
    uq.page = page_param(&q, DEFAULT_ROWS)?;
    let now = chrono::Utc::now().timestamp_millis();
    let today = local_date(now).unwrap_or_default();
    let since = match uq.since {
        Some(s) => s,
        None => midnight(today - chrono::Duration::days(DEFAULT_DAYS - 1))
            .ok_or_else(|| WebError::Internal("no local midnight for the default range".into()))?,
    };
    uq.since = Some(since);
    let (days, cut) = day_range(since, uq.until, today);

    let prices = &st.cfg.prices;
    let per_day = report(
        &st.store,
        &UsageQuery {
            by: By::Day,
            breakdown: true,
            page: newest(u32::try_from(days.len()).unwrap_or(u32::MAX).max(1)),
            ..uq.clone()
        },
        prices,
        now,
    )
    .await?;
    // The block open now, whatever the page's dates: a block's start depends on the usage
    // before it, so the whole history of these filters is read (hours, not messages).
    let block = report(
        &st.store,
        &UsageQuery {
            by: By::Block,
            since: None,
            until: None,
            breakdown: false,
            page: newest(1),
            ..uq.clone()
        },
        prices,
        now,
    )
    .await?;
    let table = report(&st.store, &uq, prices, now).await?;

    let by_day: HashMap<&str, &UsageRow> =
        per_day.rows.iter().map(|r| (r.key.as_str(), r)).collect();
    let models = models_of(&days, &by_day);
    let palette = colours(&models);
    let first = days.first().map(|d| d.to_string()).unwrap_or_default();
    let last = days.last().map(|d| d.to_string()).unwrap_or_default();
    let body = html! {
        h1 { "Usage" }
        (filters(&q, uq.by, breakdown))
        p.muted {
            @if days.is_empty() { "An empty range: until is before since." }
            @else { "Local days " (first) " to " (last) }
            @if cut { " (the newest " (MAX_DAYS) " days of the range)" }
            @if let Some(p) = &uq.project { " · project " (p) }
        }
        @if models.is_empty() {
            p.muted { "No usage recorded in this range." }
        } @else {
            (token_chart(&days, &by_day, &models, &palette))
            (legend(&models, &palette))
            h2 { "Cost per day" }
            (cost_chart(&days, &by_day))
        }
        h2 { "5-hour block" }
        (block_panel(&block))
        h2 { "By " (uq.by.as_str()) }
        (rows_table(&table))
        (pager(&q, uq.page, table.next_offset))
        // The main table is by day already; otherwise the charted days as figures.
        @if uq.by != By::Day && !per_day.rows.is_empty() {
            h2 { "Per day" }
            (cost_table(&per_day.rows))
        }
        @if table.undated {
            p.muted { "Some usage was stored before Gleaner dated it and is in no row: "
                code { "gleaner reextract --all" } " reads it again." }
        }
    };
    Ok(ok("Usage", body))
}

/// A yes/no parameter (a checkbox sends `1`), or a 400 naming the value.
fn flag(q: &BTreeMap<String, String>, k: &str) -> Result<bool, WebError> {
    match param(q, k).map(str::to_ascii_lowercase).as_deref() {
        None | Some("0" | "false" | "no" | "off") => Ok(false),
        Some("1" | "true" | "yes" | "on") => Ok(true),
        Some(_) => Err(crate::query::Error::BadValue {
            field: k.to_string(),
            value: param(q, k).unwrap_or_default().to_string(),
            expected: "1 or 0".to_string(),
        }
        .into()),
    }
}

/// The newest `limit` rows (reports list newest first).
fn newest(limit: u32) -> Page {
    Page { limit, offset: 0 }
}

/// The local calendar date of an instant.
fn local_date(ms: i64) -> Option<NaiveDate> {
    Local
        .timestamp_millis_opt(ms)
        .earliest()
        .map(|t| t.date_naive())
}

/// The instant a local day starts.
fn midnight(d: NaiveDate) -> Option<TimeBound> {
    let t = Local
        .from_local_datetime(&d.and_hms_opt(0, 0, 0)?)
        .earliest()?;
    Some(TimeBound::from_unix_ms(t.timestamp_millis()))
}

/// The local days from `since` to the day before `until` (or today), oldest first, and
/// whether the range was cut to its newest [`MAX_DAYS`].
fn day_range(
    since: TimeBound,
    until: Option<TimeBound>,
    today: NaiveDate,
) -> (Vec<NaiveDate>, bool) {
    let first = local_date(since.unix_ms()).unwrap_or(today);
    let last = until
        .and_then(|u| local_date(u.unix_ms() - 1))
        .unwrap_or(today);
    if last < first {
        return (Vec::new(), false);
    }
    let span = (last - first).num_days() + 1;
    let start = if span > MAX_DAYS {
        last - chrono::Duration::days(MAX_DAYS - 1)
    } else {
        first
    };
    let days = start.iter_days().take_while(|d| *d <= last).collect();
    (days, span > MAX_DAYS)
}

/// The models of the charted days, most tokens first (the stacking order, bottom up).
fn models_of(days: &[NaiveDate], by_day: &HashMap<&str, &UsageRow>) -> Vec<(String, i64)> {
    let mut sums: BTreeMap<&str, i64> = BTreeMap::new();
    for d in days {
        if let Some(row) = by_day.get(d.to_string().as_str()) {
            for m in row.breakdown.iter().flatten() {
                *sums.entry(&m.model).or_default() += m.figures.total_tokens;
            }
        }
    }
    let mut out: Vec<(String, i64)> = sums.into_iter().map(|(m, n)| (m.to_string(), n)).collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out
}

/// A model's place in the palette: FNV-1a of its name (stable across builds and runs, unlike
/// std's hasher), mixed so that names differing in a digit land apart.
fn hue(model: &str) -> usize {
    let mut h = model.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h as usize % PALETTE
}

/// Each model's colour class. A model keeps its hashed colour from page to page; when two
/// models of a page hash alike, the later by name takes the next free colour, so that the
/// segments of one bar stay apart (with more models than colours, some repeat).
fn colours(models: &[(String, i64)]) -> HashMap<String, String> {
    let mut names: Vec<&str> = models.iter().map(|(m, _)| m.as_str()).collect();
    names.sort_unstable();
    let mut taken = [false; PALETTE];
    let mut out = HashMap::new();
    for m in names {
        let start = hue(m);
        let k = (0..PALETTE)
            .map(|i| (start + i) % PALETTE)
            .find(|k| !taken[*k])
            .unwrap_or(start);
        taken[k] = true;
        out.insert(m.to_string(), format!("m{k}"));
    }
    out
}

/// A coordinate as SVG text.
fn n(x: f64) -> String {
    format!("{x:.1}")
}

/// Where day `i` of `count` draws its bar: left edge and width.
fn slot(i: usize, count: usize) -> (f64, f64) {
    let step = (W - LEFT - RIGHT) / count.max(1) as f64;
    let gap = (step * 0.15).min(4.0);
    (LEFT + step * i as f64 + gap / 2.0, (step - gap).max(0.5))
}

/// The frame of a chart `h` high: axes, the top value and the first and last day.
fn frame(h: f64, top: &str, days: &[NaiveDate]) -> Markup {
    let base = h - BOTTOM;
    html! {
        line.axis x1=(n(LEFT)) y1=(n(TOP)) x2=(n(LEFT)) y2=(n(base)) {}
        line.axis x1=(n(LEFT)) y1=(n(base)) x2=(n(W - RIGHT)) y2=(n(base)) {}
        text x=(n(LEFT - 6.0)) y=(n(TOP + 9.0)) text-anchor="end" { (top) }
        text x=(n(LEFT - 6.0)) y=(n(base)) text-anchor="end" { "0" }
        @if let Some(d) = days.first() {
            text x=(n(LEFT)) y=(n(h - 8.0)) text-anchor="start" { (d.to_string()) }
        }
        @if days.len() > 1 {
            @if let Some(d) = days.last() {
                text x=(n(W - RIGHT)) y=(n(h - 8.0)) text-anchor="end" { (d.to_string()) }
            }
        }
    }
}

/// Tokens per day, each model a segment stacked in `models` order.
fn token_chart(
    days: &[NaiveDate],
    by_day: &HashMap<&str, &UsageRow>,
    models: &[(String, i64)],
    palette: &HashMap<String, String>,
) -> Markup {
    const H: f64 = 240.0;
    let plot = H - TOP - BOTTOM;
    let max = days
        .iter()
        .filter_map(|d| by_day.get(d.to_string().as_str()))
        .map(|r| r.figures.total_tokens)
        .max()
        .unwrap_or(0)
        .max(1);
    let rank: HashMap<&str, usize> = models
        .iter()
        .enumerate()
        .map(|(i, (m, _))| (m.as_str(), i))
        .collect();
    // Each segment: colour class, x, y, width, height, tooltip.
    let mut segs: Vec<(String, f64, f64, f64, f64, String)> = Vec::new();
    for (i, d) in days.iter().enumerate() {
        let Some(row) = by_day.get(d.to_string().as_str()) else {
            continue;
        };
        let (x, w) = slot(i, days.len());
        let mut parts: Vec<_> = row.breakdown.iter().flatten().collect();
        parts.sort_by_key(|m| rank.get(m.model.as_str()).copied().unwrap_or(usize::MAX));
        let mut y = H - BOTTOM;
        for m in parts {
            let h = m.figures.total_tokens as f64 / max as f64 * plot;
            y -= h;
            let tip = format!(
                "{d} · {} · {} tokens · {}",
                m.model,
                thousands(m.figures.total_tokens),
                dollars(m.figures.cost_usd)
            );
            let class = palette.get(&m.model).cloned().unwrap_or_default();
            segs.push((class, x, y, w, h, tip));
        }
    }
    html! {
        svg.chart viewBox={ "0 0 " (W) " " (H) } role="img" aria-label="Tokens per day, by model" {
            (frame(H, &compact(max), days))
            text x=(n(LEFT + 6.0)) y=(n(TOP + 9.0)) { "tokens" }
            @for (class, x, y, w, h, tip) in &segs {
                rect class={ "seg " (class) } x=(n(*x)) y=(n(*y)) width=(n(*w)) height=(n(*h)) {
                    title { (tip) }
                }
            }
        }
    }
}

/// The models and their colours, with their tokens over the charted days.
fn legend(models: &[(String, i64)], palette: &HashMap<String, String>) -> Markup {
    html! {
        ul.legend {
            @for (m, tokens) in models {
                li {
                    svg width="12" height="12" viewBox="0 0 12 12" aria-hidden="true" {
                        rect class=(palette.get(m).map_or("", String::as_str)) width="12" height="12" rx="2" {}
                    }
                    " " (m) " " span.muted { (thousands(*tokens)) }
                }
            }
        }
    }
}

/// Cost per day; a day with a model of unknown price draws what is priced, paler, and says so.
fn cost_chart(days: &[NaiveDate], by_day: &HashMap<&str, &UsageRow>) -> Markup {
    const H: f64 = 120.0;
    let plot = H - TOP - BOTTOM;
    let known = |r: &UsageRow| -> f64 {
        r.breakdown
            .iter()
            .flatten()
            .filter_map(|m| m.figures.cost_usd)
            .sum()
    };
    let max = days
        .iter()
        .filter_map(|d| by_day.get(d.to_string().as_str()))
        .map(|r| known(r))
        .fold(0.0_f64, f64::max);
    let top = if max > 0.0 { max } else { 1.0 };
    html! {
        svg.chart viewBox={ "0 0 " (W) " " (H) } role="img" aria-label="Cost per day" {
            (frame(H, &dollars(Some(max)), days))
            @for (i, d) in days.iter().enumerate() {
                @if let Some(row) = by_day.get(d.to_string().as_str()) {
                    @let (x, w) = slot(i, days.len());
                    @let c = known(row);
                    @let h = c / top * plot;
                    rect class=(if row.figures.cost_usd.is_some() { "cost" } else { "cost partial" })
                        x=(n(x)) y=(n(H - BOTTOM - h)) width=(n(w)) height=(n(h.max(1.0))) {
                        title { (d.to_string()) " · "
                            @match row.figures.cost_usd {
                                Some(c) => { (dollars(Some(c))) },
                                None => { "unknown (priced models: " (dollars(Some(c))) ")" },
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Tokens and cost of each charted day with usage, newest first.
fn cost_table(rows: &[UsageRow]) -> Markup {
    html! {
        table.list.usage {
            thead { tr { th { "day" } th.num { "total tokens" } th.num { "cost" } } }
            tbody {
                @for r in rows {
                    tr { td { (r.key) } td.num { (thousands(r.figures.total_tokens)) } td.num { (dollars(r.figures.cost_usd)) } }
                }
            }
        }
    }
}

/// The newest 5-hour block: open now (with its projection) or when it ended.
fn block_panel(r: &UsageReport) -> Markup {
    let newest = r
        .rows
        .first()
        .and_then(|row| row.block.as_ref().map(|b| (row, b)));
    html! {
        @match newest {
            Some((row, b)) if b.active => {
                p {
                    "Active block " (when(Some(&b.start))) " – " (when(Some(&b.end))) " UTC: "
                    b { (thousands(row.figures.total_tokens)) } " tokens so far, "
                    b { (dollars(row.figures.cost_usd)) } "."
                }
                p.muted {
                    "At this rate, by its end: "
                    (b.projected_total_tokens.map(thousands).unwrap_or_else(|| "unknown".into()))
                    " tokens, " (dollars(b.projected_cost_usd)) "."
                }
            }
            Some((_, b)) => {
                p { "No block is active; the last one ended " (when(Some(&b.end))) " UTC." }
            }
            None => { p.muted { "No block: no usage recorded for these filters." } }
        }
    }
}

/// The report's rows and the totals of everything the filters select.
fn rows_table(r: &UsageReport) -> Markup {
    html! {
        @if r.rows.is_empty() {
            p.muted { "No usage recorded for these filters." }
        }
        table.list.usage {
            thead { tr {
                th { (r.by.as_str()) } th.num { "input" } th.num { "output" } th.num { "cache write" }
                th.num { "cache read" } th.num { "total" } th.num { "cost" }
            } }
            tbody {
                @for row in &r.rows {
                    tr {
                        td { (row_key(r.by, row)) }
                        (figures(&row.figures))
                    }
                    @for m in row.breakdown.iter().flatten() {
                        tr.model { td { (m.model) } (figures(&m.figures)) }
                    }
                }
                tr.total { td { "total" } (figures(&r.totals)) }
            }
        }
    }
}

/// A row's key as a person reads it: a session links to its page, a block shows its span.
fn row_key(by: By, row: &UsageRow) -> Markup {
    match (&row.block, by) {
        (Some(b), _) => html! {
            (when(Some(&b.start))) " – " (when(Some(&b.end))) " UTC"
            @if b.active { " " span.pill { "active" } }
        },
        (None, By::Session) => html! { a href={ "/sessions/" (enc(&row.key)) } { (row.key) } },
        (None, _) => html! { (row.key) },
    }
}

fn figures(f: &Figures) -> Markup {
    html! {
        td.num { (thousands(f.input_tokens)) }
        td.num { (thousands(f.output_tokens)) }
        td.num { (thousands(f.cache_creation_tokens)) }
        td.num { (thousands(f.cache_read_tokens)) }
        td.num { (thousands(f.total_tokens)) }
        td.num { (dollars(f.cost_usd)) }
    }
}

/// The filter form, filled with what was asked.
fn filters(q: &BTreeMap<String, String>, by: By, breakdown: bool) -> Markup {
    let v = |k: &str| param(q, k).unwrap_or("").to_string();
    html! {
        form.filters method="get" action="/usage" {
            label { "Rows by" select name="by" {
                @for b in By::ALL { option value=(b.as_str()) selected[b == by] { (b.as_str()) } }
            } }
            label { "Since" input name="since" placeholder={ "last " (DEFAULT_DAYS) " days" } value=(v("since")); }
            label { "Until" input name="until" placeholder="2026-02-28" value=(v("until")); }
            label { "Project" input name="project" placeholder="part of a folder" value=(v("project")); }
            label { "Machine" input name="machine" placeholder="machine id" value=(v("machine")); }
            label { "User" input name="user" placeholder="user name" value=(v("user")); }
            label { "By model" input type="checkbox" name="breakdown" value="1" checked[breakdown]; }
            button type="submit" { "Show" }
        }
    }
}

/// Previous and next links that keep every other parameter.
fn pager(q: &BTreeMap<String, String>, page: Page, next: Option<u64>) -> Markup {
    let base: String = [
        "by",
        "since",
        "until",
        "project",
        "machine",
        "user",
        "breakdown",
        "limit",
    ]
    .iter()
    .filter_map(|k| param(q, k).map(|v| format!("{k}={}&", enc(v))))
    .collect();
    let at = |o: u64| format!("/usage?{base}offset={o}");
    html! {
        div.pager {
            @if page.offset > 0 { a href=(at(u64::from(page.offset.saturating_sub(page.limit)))) { "← Previous" } }
            @if let Some(o) = next { a href=(at(o)) { "Next →" } }
        }
    }
}

/// `16707501` as `16.7M`: an axis label.
fn compact(n: i64) -> String {
    let x = n as f64;
    match n {
        1_000_000_000.. => format!("{:.1}B", x / 1e9),
        1_000_000.. => format!("{:.1}M", x / 1e6),
        1_000.. => format!("{:.1}k", x / 1e3),
        _ => n.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_read_and_colours_are_stable() {
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(-1000), "-1,000");
        assert_eq!(dollars(None), "unknown");
        assert_eq!(compact(16_707_501), "16.7M");
        assert_eq!(compact(999), "999");
        assert_eq!(hue("claude-sonnet-4-5"), hue("claude-sonnet-4-5"));
        let spread: std::collections::BTreeSet<usize> =
            (0..64).map(|i| hue(&format!("model-{i}"))).collect();
        assert!(
            spread.len() > PALETTE / 2,
            "the palette is used: {spread:?}"
        );
        let models: Vec<(String, i64)> =
            ["claude-opus-4-6", "claude-sonnet-4-6", "claude-haiku-4-5"]
                .iter()
                .map(|m| (m.to_string(), 1))
                .collect();
        let p = colours(&models);
        let distinct: std::collections::BTreeSet<&String> = p.values().collect();
        assert_eq!(distinct.len(), 3, "a page's models differ: {p:?}");
    }

    #[test]
    fn ranges_are_local_days_and_capped() {
        let d = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap();
        let since = midnight(d("2026-03-01")).unwrap();
        let until = midnight(d("2026-03-05")).unwrap();
        let (days, cut) = day_range(since, Some(until), d("2026-06-01"));
        assert_eq!(days.first().copied(), Some(d("2026-03-01")));
        assert_eq!(days.last().copied(), Some(d("2026-03-04")));
        assert!(!cut);
        let old = midnight(d("2020-01-01")).unwrap();
        let (days, cut) = day_range(old, None, d("2026-06-01"));
        assert_eq!(days.len() as i64, MAX_DAYS);
        assert_eq!(days.last().copied(), Some(d("2026-06-01")));
        assert!(cut);
        assert!(day_range(until, Some(since), d("2026-06-01")).0.is_empty());
    }
}
