//! `gleaner show SESSION_PREFIX`: one session at a glance (times, place, the line that resumes
//! it, size, tokens, summaries, feedback, episodes with their labels and evidence, snippets,
//! files touched, sub-agents);
//! `--json` prints what MCP `get_session` answers (the same view: `query::overview`).

use std::io::Write;

use clap::Args;

use super::table;
use super::{open_store, resolve_prefix, Outcome, EXIT_OK};
use crate::config::Config;
use crate::query::overview::{session_overview, SessionOverview};
use crate::query::Evidence;
use crate::text::thousands;

/// `gleaner show` flags.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The session (a unique prefix of its id is enough).
    #[arg(value_name = "SESSION_PREFIX")]
    pub session: String,
    /// Print the overview as JSON (what MCP `get_session` answers).
    #[arg(long)]
    pub json: bool,
}

/// Run `gleaner show`.
pub async fn run(cfg: &Config, args: ShowArgs) -> Outcome {
    let store = open_store(cfg).await?;
    let id = match resolve_prefix(&store, &args.session).await? {
        Ok(id) => id,
        Err(code) => return Ok(code),
    };
    let Some(o) = session_overview(&store, &id).await? else {
        anyhow::bail!("session {id} vanished while it was read");
    };
    store.close().await;
    if args.json {
        super::output::print_json(&o.to_json(usize::MAX))?;
    } else {
        let mut out = std::io::stdout().lock();
        for line in render(&o, table::width()) {
            writeln!(out, "{line}")?;
        }
    }
    Ok(EXIT_OK)
}

/// Marks, while the lines are built, a line meant to be copied (the resume command): it is
/// printed whole whatever the width, since a cut command cannot be pasted.
const WHOLE: char = '\u{1}';

/// The overview as lines for a person, each cut to `width` columns when one is given (but the
/// resume command).
fn render(o: &SessionOverview, width: Option<usize>) -> Vec<String> {
    let s = &o.session;
    let mut l: Vec<String> = Vec::new();
    let mut field = |name: &str, value: String| {
        if !value.is_empty() {
            l.push(format!("{name:<10}{value}"));
        }
    };
    field("Session", s.session_id.clone());
    field("Title", s.title.clone().unwrap_or_else(|| "(empty)".into()));
    let status = match (&s.status[..], s.end_reason.as_deref()) {
        ("finished", Some(r)) => format!("finished ({r})"),
        (st, _) => st.to_string(),
    };
    field("Status", status);
    let start = table::local_time(s.started_at.as_deref(), false);
    let end = table::local_time(s.last_activity_at.as_deref(), false);
    let span = match s.duration_ms {
        Some(ms) => format!(" ({})", table::duration(ms)),
        None => String::new(),
    };
    field("When", when(&start, &end, &span));
    field("Project", s.project.clone());
    field("Cwd", s.cwd.clone().unwrap_or_default());
    field(
        "Resume",
        o.resume
            .as_ref()
            .map_or(String::new(), |r| format!("{r}{WHOLE}")),
    );
    field("Branch", s.git_branch.clone().unwrap_or_default());
    // Where each copy is held (a shared store may hold a session on several machines).
    field(
        "Machine",
        if s.machines.len() > 1 {
            format!("{} (held by {})", s.machine, s.machines.join(", "))
        } else {
            s.machine.clone()
        },
    );
    field("User", s.user.clone().unwrap_or_default());
    field("Version", s.version.clone().unwrap_or_default());
    field(
        "Size",
        format!(
            "{} {}, {} {} in {} {} ({} {})",
            thousands(s.messages),
            table::noun(s.messages, "message"),
            thousands(s.lines),
            table::noun(s.lines, "line"),
            s.files,
            table::noun(s.files, "file"),
            s.subagent_count,
            table::noun(s.subagent_count, "sub-agent")
        ),
    );
    field(
        "Tools",
        format!(
            "{} {}, {} {}",
            thousands(s.tool_calls),
            table::noun(s.tool_calls, "call"),
            thousands(s.tool_errors),
            table::noun(s.tool_errors, "error")
        ),
    );
    let t = &s.tokens;
    field(
        "Tokens",
        format!(
            "input {} · output {} · cache write {} · cache read {}",
            thousands(t.input),
            thousands(t.output),
            thousands(t.cache_creation),
            thousands(t.cache_read)
        ),
    );
    let f = &s.feedback;
    field(
        "Feedback",
        format!(
            "{} {}, {} {}, {} {}",
            f.message,
            table::noun(f.message, "prompt"),
            f.tool_denial,
            table::noun(f.tool_denial, "tool denial"),
            f.interruption,
            table::noun(f.interruption, "interruption")
        ),
    );
    let section = |l: &mut Vec<String>, name: &str, n: usize| {
        l.push(String::new());
        l.push(format!("{name} ({n})"));
    };
    if !o.summaries.is_empty() {
        section(&mut l, "Summaries", o.summaries.len());
        for x in &o.summaries {
            let what = match x.kind.as_str() {
                "compact_boundary" => format!(
                    "{} compaction at {} tokens",
                    x.trigger.as_deref().unwrap_or("?"),
                    x.pre_tokens.map_or("?".into(), thousands)
                ),
                _ => crate::text::summary_preview(x.text.as_deref().unwrap_or("")).to_string(),
            };
            l.push(format!(
                "  {} L{:<6} {:<16} {what}",
                table::local_time(x.timestamp.as_deref(), true),
                x.line,
                x.kind
            ));
        }
    }
    if !o.episodes.is_empty() {
        section(&mut l, "Episodes", o.episodes.len());
        for e in &o.episodes {
            l.push(format!(
                "  #{:<3} L{}-{} {} ({:.2}, {} {}, {}) {}",
                e.ordinal,
                e.start_line,
                e.end_line,
                e.triage,
                e.confidence,
                e.turns,
                table::noun(e.turns, "turn"),
                e.status,
                e.title.as_deref().unwrap_or("")
            ));
            if e.triage != "routine" {
                for ev in Evidence::list(&e.evidence).iter().take(3) {
                    l.push(format!("        {}", ev.line_text(160)));
                }
            }
        }
    }
    if !o.snippets.is_empty() {
        section(&mut l, "Snippets", o.snippets.len());
        for x in &o.snippets {
            l.push(format!("  [{}] {:<10} {}", x.id, x.snippet_type, x.title));
        }
    }
    if !o.files.is_empty() {
        section(&mut l, "Files touched", o.files.len());
        for f in &o.files {
            let mut ways = Vec::new();
            for (n, what) in [
                (f.edits, "edited"),
                (f.writes, "written"),
                (f.reads, "read"),
            ] {
                if n > 0 {
                    ways.push(format!("{what} {n}x"));
                }
            }
            l.push(format!("  {:<24} {}", ways.join(", "), f.path));
        }
    }
    if !s.subagents.is_empty() {
        section(&mut l, "Sub-agents", s.subagents.len());
        for a in &s.subagents {
            l.push(format!(
                "  {} {} {}",
                a.agent_id.as_deref().unwrap_or("?"),
                a.agent_type.as_deref().unwrap_or(""),
                a.description.as_deref().unwrap_or("")
            ));
        }
    }
    if o.truncated {
        l.push(String::new());
        l.push(format!(
            "(more than {} items of a kind, or {} files: see `gleaner summaries`, `episodes`, `snippets` with --session)",
            crate::query::overview::OVERVIEW_ITEMS,
            crate::query::store::MAX_TOUCHED
        ));
    }
    l.into_iter()
        .map(|x| match (x.strip_suffix(WHOLE), width) {
            (Some(whole), _) => whole.to_string(),
            (None, Some(w)) => table::fit(&x, w),
            (None, None) => x,
        })
        .collect()
}

/// The `When` line: nothing for a session with no timed line (only summaries, say), so that
/// no bare "-> local time" is printed.
fn when(start: &str, end: &str, span: &str) -> String {
    match (start.is_empty(), end.is_empty()) {
        (true, true) => String::new(),
        (false, true) => format!("{start}{span} local time"),
        (true, false) => format!("until {end}{span} local time"),
        (false, false) => format!("{start} -> {end}{span} local time"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn when_says_nothing_without_times() {
        assert_eq!(super::when("", "", ""), "");
        assert_eq!(
            super::when("2026-01-02 10:00", "2026-01-02 11:00", " (1h00m)"),
            "2026-01-02 10:00 -> 2026-01-02 11:00 (1h00m) local time"
        );
        assert_eq!(
            super::when("2026-01-02 10:00", "", ""),
            "2026-01-02 10:00 local time"
        );
    }

    #[test]
    fn counts_have_separators() {
        assert_eq!(super::thousands(1_234_567), "1,234,567");
        assert_eq!(super::thousands(999), "999");
        assert_eq!(super::thousands(0), "0");
    }
}
