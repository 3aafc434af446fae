//! `gleaner text`: a session's conversation as plain text, from the stored rows (so it works
//! after Claude Code has deleted the transcript).

use std::io::Write;

use clap::Args;

use super::{resolve_prefix, Outcome, EXIT_OK};
use crate::config::Config;
use crate::conversation::{self, Conversation};

/// `gleaner text` flags.
#[derive(Debug, Args)]
pub struct TextArgs {
    /// The session (a unique prefix of its id is enough).
    #[arg(value_name = "SESSION_PREFIX")]
    pub session: String,
    /// Keep only the last N characters (cut at a paragraph boundary); says on stderr how much
    /// was dropped.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000_000))]
    pub max_chars: Option<usize>,
    /// Include the sub-agents' conversations, interleaved by time.
    #[arg(long)]
    pub subagents: bool,
    /// Print `{session_id, text, turns, total_chars, dropped_chars}` as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Run `gleaner text`.
pub async fn run(cfg: &Config, args: TextArgs) -> Outcome {
    let store = super::open_store(cfg).await?;
    let session_id = match resolve_prefix(&store, &args.session).await? {
        Ok(id) => id,
        Err(code) => return Ok(code),
    };
    let rows = store.conversation_rows(&session_id, args.subagents).await?;
    let c = conversation::from_stored(
        rows.iter()
            .map(|r| (r.kind.as_str(), r.text.as_str(), r.agent_id.as_deref())),
        args.max_chars,
    );
    if c.dropped_chars > 0 {
        eprintln!(
            "dropped the first {} of {} characters (--max-chars {})",
            c.dropped_chars,
            c.total_chars,
            args.max_chars.unwrap_or_default()
        );
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        #[derive(serde::Serialize)]
        struct Json<'a> {
            session_id: &'a str,
            #[serde(flatten)]
            conversation: &'a Conversation,
        }
        serde_json::to_writer_pretty(
            &mut out,
            &Json {
                session_id: &session_id,
                conversation: &c,
            },
        )?;
        writeln!(out)?;
    } else if !c.text.is_empty() {
        writeln!(out, "{}", c.text)?;
    }
    if c.turns == 0 {
        if !args.subagents && store.has_subagent_conversation(&session_id).await? {
            eprintln!(
                "the main transcript of {session_id} holds no conversation; its sub-agents do: \
                 gleaner text {} --subagents",
                args.session
            );
        } else {
            let why = crate::query::no_conversation(&store, &session_id).await?;
            eprintln!("{session_id}: {why}");
        }
    }
    Ok(EXIT_OK)
}
