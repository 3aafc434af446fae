//! `gleaner prune`: old sessions removed on purpose (`store::prune` says what goes and stays).

use std::io::{BufRead, IsTerminal, Write};

use clap::Args;

use super::{Outcome, EXIT_ERROR, EXIT_OK};
use crate::config::Config;
use crate::query;

/// `gleaner prune` flags.
#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Finished sessions last active before this time (a date, a date-time, or an age: 90d).
    #[arg(long, value_name = "DATE")]
    pub before: String,
    /// Keep what was kept about them (summaries, feedback, episodes, snippets); remove only
    /// their archive and message rows.
    #[arg(long)]
    pub keep_knowledge: bool,
    /// Do not ask (required when not run from a terminal).
    #[arg(long)]
    pub yes: bool,
    /// Print what was removed as JSON.
    #[arg(long)]
    pub json: bool,
}

/// A size for people: bytes, KB or MB, never "0.0 MB" for a few kilobytes.
fn mb(bytes: i64) -> String {
    match bytes {
        b if b < 1_000 => format!("{b} bytes"),
        b if b < 1_000_000 => format!("{:.1} KB", b as f64 / 1e3),
        b => format!("{:.1} MB", b as f64 / 1e6),
    }
}

/// Run `gleaner prune`.
pub async fn run(cfg: &Config, args: PruneArgs) -> Outcome {
    let before = query::TimeBound::parse("--before", &args.before)?.as_stored();
    let store = super::open_store(cfg).await?;
    let plan = store.prune_plan(&before, args.keep_knowledge).await?;
    if plan.sessions == 0 {
        store.close().await;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&plan)?);
        } else {
            println!("nothing to prune: no finished session was last active before {before}");
        }
        return Ok(EXIT_OK);
    }
    let what = format!(
        "{} sessions ({} transcript files) last active before {before}: {} message rows, the \
         archive of {} of transcripts ({} stored){}",
        plan.sessions,
        plan.files,
        plan.messages,
        mb(plan.archived_bytes),
        mb(plan.stored_bytes),
        if args.keep_knowledge {
            "; their summaries, feedback, episodes and snippets are kept".to_string()
        } else {
            format!(
                ", and {} summaries, feedback, episodes and snippets{}",
                plan.knowledge,
                match plan.kept_before {
                    0 => String::new(),
                    n => format!(
                        " (of them, the knowledge of {n} session{} an earlier prune kept on \
                         purpose with --keep-knowledge)",
                        if n == 1 { "" } else { "s" }
                    ),
                }
            )
        }
    );
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            store.close().await;
            if args.json {
                // What it would remove, for a script to read before it adds --yes.
                println!("{}", serde_json::to_string_pretty(&plan)?);
            }
            eprintln!("gleaner: prune would remove {what}; not run from a terminal: add --yes");
            return Ok(EXIT_ERROR);
        }
        eprint!("remove {what}? [y/N] ");
        std::io::stderr().flush()?;
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            store.close().await;
            eprintln!("nothing removed");
            return Ok(EXIT_OK);
        }
    }
    let done = store.prune(&before, args.keep_knowledge).await?;
    // The blocks that held the pruned sessions' bytes beside others' (and any dictionary of
    // their projects, from before issue 48): gone too before this returns (an interrupted run
    // leaves them to the next `pack` or daemon pass).
    let cancel = tokio_util::sync::CancellationToken::new();
    let retire = async {
        let blocks = crate::run::pack::retire_blocks(&store, &cancel, None).await?;
        let dicts = crate::run::pack::retire_dicts(&store, &cancel, None).await?;
        Ok::<_, crate::run::pack::PackError>((blocks, dicts))
    };
    let (blocks, retired) = match retire.await {
        Ok(n) => n,
        Err(e) => {
            // The prune itself is committed: say what failed, then what was removed.
            eprintln!(
                "gleaner: warning: taking the pruned bytes out of the archive's shared blocks \
                 failed ({e}); the next `gleaner pack` tries again"
            );
            (0, 0)
        }
    };
    let backend = store.backend();
    store.close().await;
    if args.json {
        let mut v = serde_json::to_value(done)?;
        v["blocks_retired"] = blocks.into();
        v["dictionaries_retired"] = retired.into();
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("removed {what}");
        if blocks + retired > 0 {
            println!(
                "rewrote the other sessions of {} archive block{} that also held pruned bytes; \
                 `gleaner pack` or the daemon packs them again",
                blocks + retired,
                if blocks + retired == 1 { "" } else { "s" }
            );
        }
        if backend == query::store::Backend::Sqlite {
            println!(
                "the database file keeps its size: SQLite reuses the freed pages (`sqlite3 FILE \
                 VACUUM` gives them back to the disk)"
            );
        }
    }
    Ok(EXIT_OK)
}
