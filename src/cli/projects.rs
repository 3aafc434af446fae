//! `gleaner projects`: one row per project, most recent activity first: where its sessions ran
//! (the working directory, as every listing shows it), how many, when, and how much.

use std::io::Write;

use clap::Args;

use super::list::{say_more, OriginArgs, PageArgs};
use super::output::print_json;
use super::table;
use super::{open_store, Outcome, EXIT_OK};
use crate::config::Config;
use crate::query;
use crate::query::store::{ProjectFilter, ProjectListing};
use crate::text::thousands;

/// `gleaner projects` flags.
#[derive(Debug, Args)]
pub struct ProjectsArgs {
    /// Only projects whose folder or a session's working directory contains this text.
    #[arg(long, value_name = "P", allow_hyphen_values = true)]
    pub project: Option<String>,
    #[command(flatten)]
    pub origin: OriginArgs,
    #[command(flatten)]
    pub page: PageArgs,
    /// Print a JSON array.
    #[arg(long)]
    pub json: bool,
}

/// Run `gleaner projects`.
pub async fn run(cfg: &Config, a: ProjectsArgs) -> Outcome {
    let filter = ProjectFilter {
        project: query::project(("--project", a.project))?,
        origin: a.origin.origin()?,
    };
    let page = a.page.page()?;
    let store = open_store(cfg).await?;
    let p = store.project_listing(&filter, page).await?;
    store.close().await;
    if a.json {
        print_json(&p.items)?;
    } else if !p.items.is_empty() {
        let mut out = std::io::stdout().lock();
        for line in render(&p.items, table::width()) {
            writeln!(out, "{line}")?;
        }
    }
    say_more(&p, a.json, page, "projects");
    Ok(EXIT_OK)
}

/// The working directory (`~` for the home folder), else the project folder.
pub fn place(p: &ProjectListing) -> String {
    let place = p.cwd.clone().unwrap_or_else(|| p.project.clone());
    match std::env::var("HOME") {
        Ok(home) if !home.is_empty() && place.starts_with(&home) => {
            format!("~{}", &place[home.len()..])
        }
        _ => place,
    }
}

/// The table: counts and dates right of the place, which takes what is left of `width`
/// (cut from the left: a path's end says the most).
fn render(rows: &[ProjectListing], width: Option<usize>) -> Vec<String> {
    let short = width.is_some_and(|w| w < 100);
    let cells: Vec<[String; 5]> = rows
        .iter()
        .map(|p| {
            [
                thousands(p.sessions),
                table::local_time(p.first_activity.as_deref(), short),
                table::local_time(p.last_activity.as_deref(), short),
                thousands(p.messages),
                thousands(p.tokens),
            ]
        })
        .collect();
    let heads = ["SESSIONS", "FIRST", "LAST", "MSGS", "TOKENS"];
    let widths: Vec<usize> = (0..5)
        .map(|i| {
            cells
                .iter()
                .map(|c| table::cells(&c[i]))
                .chain([heads[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let fixed: usize = widths.iter().map(|w| w + 1).sum();
    let w_place = width.map_or(usize::MAX, |w| w.saturating_sub(fixed).max(12));
    let row = |c: &[String], place: &str| {
        let mut l = String::new();
        for (i, cell) in c.iter().enumerate() {
            // Dates read left to right; counts line up on the right.
            if i == 1 || i == 2 {
                l.push_str(&table::pad(cell, widths[i]));
            } else {
                l.push_str(&table::pad_left(cell, widths[i]));
            }
            l.push(' ');
        }
        l.push_str(&table::fit_left(place, w_place));
        l.trim_end().to_string()
    };
    let heads: Vec<String> = heads.iter().map(|h| h.to_string()).collect();
    let mut out = vec![row(&heads, "PROJECT")];
    let places: Vec<String> = rows.iter().map(place).collect();
    for ((p, c), at) in rows.iter().zip(&cells).zip(&places) {
        // Two project folders can name one working directory (a folder renamed, a transcript
        // copied): the folder tells such rows apart.
        if places.iter().filter(|other| *other == at).count() > 1 {
            out.push(row(c, &format!("{at} ({})", p.project)));
        } else {
            out.push(row(c, at));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(project: &str, cwd: &str) -> ProjectListing {
        ProjectListing {
            project: project.into(),
            cwd: Some(cwd.into()),
            sessions: 1,
            first_activity: None,
            last_activity: None,
            messages: 2,
            tokens: 3,
        }
    }

    #[test]
    fn two_folders_of_one_working_directory_are_told_apart() {
        let rows = [
            listing("-w-site", "/w/site"),
            listing("site-copy", "/w/site"),
            listing("-w-other", "/w/other"),
        ];
        let lines = render(&rows, None);
        assert!(lines[1].ends_with("/w/site (-w-site)"), "{lines:?}");
        assert!(lines[2].ends_with("/w/site (site-copy)"), "{lines:?}");
        assert!(lines[3].ends_with(" /w/other"), "{lines:?}");
    }
}
