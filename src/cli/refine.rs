//! `gleaner refine`: one pass of the `[refine]` command over the closed non-routine episodes
//! that wait for it (the daemon runs the same pass every `[refine] interval_secs`).

use crate::config::Config;
use crate::query::store::Store;
use crate::run::refine::refine_pending;

use super::{Outcome, EXIT_ERROR, EXIT_OK};

/// Arguments of `gleaner refine`.
#[derive(Debug, clap::Args)]
pub struct RefineArgs {
    /// Most episodes to refine in this pass.
    #[arg(long, default_value_t = 100)]
    pub limit: i64,
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Refine up to `--limit` waiting episodes, one at a time, and print what happened.
pub async fn run(cfg: &Config, args: RefineArgs) -> Outcome {
    if cfg.refine.command.is_none() {
        eprintln!("gleaner: refine is off: set `[refine] command` in the config");
        return Ok(EXIT_ERROR);
    }
    let store = Store::connect(&cfg.database).await?;
    let report = refine_pending(&store, &cfg.refine, &cfg.redactor, args.limit.max(0)).await?;
    let (done, failed, learnings) = store.refinement_counts().await?;
    store.close().await;
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "refined": report.refined,
                "failed": report.failed,
                "learnings": report.learnings,
                "total": {"refined": done, "failed": failed, "learnings": learnings},
            })
        );
    } else {
        println!(
            "{} episodes refined, {} failed, {} learnings stored (all time: {done} refined, \
             {failed} failing, {learnings} learnings)",
            report.refined, report.failed, report.learnings
        );
    }
    Ok(EXIT_OK)
}
