//! `gleaner usage`: tokens and cost by day, week, month, session, project, model, machine, user
//! or 5-hour block, from what ingest keeps (the query layer's `usage` report).

use clap::Args;

use super::list::{OriginArgs, PageArgs};
use super::output::print_json;
use super::table::{pad, pad_left, width};
use super::{open_store, Outcome, EXIT_OK};
use crate::config::Config;
use crate::query;
use crate::query::usage::{
    dollars, report, Figures, UsageInput, UsageQuery, UsageReport, UsageRow,
};
use crate::text::thousands;

/// `gleaner usage` flags.
#[derive(Debug, Args)]
pub struct UsageArgs {
    /// Rows by: day, week, month, session, project, model, machine, user or block (the
    /// 5-hour windows usage limits count). Default: day.
    #[arg(long, value_name = "BY", default_value = "day")]
    pub by: String,
    /// Only usage at or after T (ISO date/time, or an age such as 7d, 12h), to the hour.
    #[arg(long, value_name = "T")]
    pub since: Option<String>,
    /// Only usage before T, to the hour (a date alone includes its day).
    #[arg(long, value_name = "T")]
    pub until: Option<String>,
    /// Only sessions whose project folder or working directory contains this text.
    #[arg(long, value_name = "P", allow_hyphen_values = true)]
    pub project: Option<String>,
    #[command(flatten)]
    pub origin: OriginArgs,
    /// Split each row by model.
    #[arg(long)]
    pub breakdown: bool,
    #[command(flatten)]
    pub page: PageArgs,
    /// Print JSON: {"rows": [...], "totals": {...}}.
    #[arg(long)]
    pub json: bool,
}

impl UsageArgs {
    /// The request, every flag checked (a bad one is an error naming it).
    pub fn query(&self) -> Result<UsageQuery, query::Error> {
        UsageQuery::parse(
            UsageInput {
                by: Some(&self.by),
                since: self.since.as_deref(),
                until: self.until.as_deref(),
                project: self.project.clone(),
                machine: self.origin.machine.clone(),
                user: self.origin.user.clone(),
                breakdown: self.breakdown,
                limit: self.page.limit,
                offset: self.page.offset,
            },
            |f| format!("--{f}"),
        )
    }
}

/// Run `gleaner usage`.
pub async fn run(cfg: &Config, a: UsageArgs) -> Outcome {
    let q = a.query()?;
    let store = open_store(cfg).await?;
    let now = chrono::Utc::now().timestamp_millis();
    let r = report(&store, &q, &cfg.prices, now).await?;
    if a.json {
        print_json(&r)?;
    } else {
        print_report(&r)?;
    }
    if r.undated {
        eprintln!(
            "usage: some usage was stored before Gleaner dated it and is in no row; \
             `gleaner reextract --all` reads it again"
        );
    }
    if let (Some(next), false) = (r.next_offset, a.json) {
        eprintln!("more rows: --offset {next}");
    }
    Ok(EXIT_OK)
}

const HEADERS: [&str; 7] = [
    "",
    "input",
    "output",
    "cache write",
    "cache read",
    "total",
    "cost",
];

fn cells(key: &str, f: &Figures) -> [String; 7] {
    [
        key.to_string(),
        thousands(f.input_tokens),
        thousands(f.output_tokens),
        thousands(f.cache_creation_tokens),
        thousands(f.cache_read_tokens),
        thousands(f.total_tokens),
        dollars(f.cost_usd),
    ]
}

/// The report as a table: a row per key (its models under it with `--breakdown`), then the
/// totals of everything the filters select.
fn print_report(r: &UsageReport) -> std::io::Result<()> {
    use std::io::Write;
    let mut lines: Vec<[String; 7]> = Vec::new();
    let mut head = HEADERS.map(str::to_string);
    head[0] = r.by.as_str().to_string();
    lines.push(head);
    for row in &r.rows {
        lines.push(cells(&row_key(row), &row.figures));
        for m in row.breakdown.iter().flatten() {
            lines.push(cells(&format!("  {}", m.model), &m.figures));
        }
    }
    lines.push(cells("total", &r.totals));
    let mut w = [0usize; 7];
    for l in &lines {
        for (i, c) in l.iter().enumerate() {
            w[i] = w[i].max(super::table::cells(c));
        }
    }
    // The key column gives way when the terminal is narrow; the figures never do.
    if let Some(max) = width() {
        let rest: usize = w[1..].iter().map(|n| n + 2).sum();
        w[0] = w[0].min(max.saturating_sub(rest).max(12));
    }
    let mut out = std::io::stdout().lock();
    if r.rows.is_empty() {
        writeln!(out, "no usage recorded for these filters")?;
        return Ok(());
    }
    for l in &lines {
        let mut s = pad(&super::table::fit(&l[0], w[0]), w[0]);
        for i in 1..7 {
            s.push_str("  ");
            s.push_str(&pad_left(&l[i], w[i]));
        }
        writeln!(out, "{}", s.trim_end())?;
    }
    Ok(())
}

/// The key a person reads: a block's span and whether it is open.
fn row_key(row: &UsageRow) -> String {
    match &row.block {
        Some(b) => {
            let start = super::table::local_time(Some(&b.start), false);
            let end = super::table::local_time(Some(&b.end), false);
            let tail = end.rsplit(' ').next().unwrap_or(&end).to_string();
            if b.active {
                format!("{start}-{tail} (active)")
            } else {
                format!("{start}-{tail}")
            }
        }
        None => row.key.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_read_with_separators_and_an_unknown_cost_says_so() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(-1000), "-1,000");
        assert_eq!(dollars(Some(1.005)), "$1.00");
        assert_eq!(dollars(None), "unknown");
    }
}
