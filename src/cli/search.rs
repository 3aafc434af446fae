//! `gleaner search`: full-text search over messages, summaries, feedback, snippets and what
//! tools did.
//!
//! The query is parsed before the database is opened: a query that means nothing is one line
//! naming the problem and exit 2, whatever the backend.

use clap::Args;

use super::output::print_search;
use super::{open_store, resolve_optional_prefix, Outcome, EXIT_OK};
use crate::config::Config;
use crate::query::store::search::{self, SearchFilter, SearchKind, MAX_LIMIT};

/// `--kind` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum KindArg {
    Message,
    Summary,
    Feedback,
    Snippet,
    Tool,
}

impl From<KindArg> for SearchKind {
    fn from(k: KindArg) -> Self {
        match k {
            KindArg::Message => SearchKind::Message,
            KindArg::Summary => SearchKind::Summary,
            KindArg::Feedback => SearchKind::Feedback,
            KindArg::Snippet => SearchKind::Snippet,
            KindArg::Tool => SearchKind::Tool,
        }
    }
}

/// `gleaner search` flags.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Words (all must match), "exact phrases", prefixes (migrat*), OR, NOT or -word, ( ).
    /// One argument: quote it when it has several words (`gleaner search 'auth -flaky'`).
    #[arg(value_name = "QUERY", allow_hyphen_values = true)]
    pub query: String,
    /// Only this kind; repeat for several (default: all).
    #[arg(long = "kind", value_name = "K")]
    pub kinds: Vec<KindArg>,
    /// Only what this tool did (its calls and results): Bash, Edit, Read, mcp__server__tool...
    /// (any case; implies --kind tool).
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    /// Only sessions whose project folder or working directory contains this text.
    #[arg(long, value_name = "P", allow_hyphen_values = true)]
    pub project: Option<String>,
    #[command(flatten)]
    pub origin: super::list::OriginArgs,
    /// Only this session (a unique prefix of its id is enough).
    #[arg(long, value_name = "PREFIX")]
    pub session: Option<String>,
    /// Only results at or after T (ISO date/time, or an age such as 7d, 12h, 30m).
    #[arg(long, value_name = "T")]
    pub since: Option<String>,
    /// Only results before T (ISO date/time, or an age; a date alone includes its day).
    #[arg(long, value_name = "T")]
    pub until: Option<String>,
    /// Most results to return (1 to 200).
    #[arg(long, value_name = "N", allow_negative_numbers = true, default_value_t = 20,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_LIMIT)))]
    pub limit: u32,
    /// Skip this many (for paging).
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        default_value_t = 0
    )]
    pub offset: u32,
    /// Print `{results, total_count, has_more}` as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Run `gleaner search`.
pub async fn run(cfg: &Config, args: SearchArgs) -> Outcome {
    let query = search::parse(&args.query).map_err(|e| anyhow::anyhow!("{e}"))?;
    let (since, until) = crate::query::time_range_stored(
        ("--since", args.since.as_deref()),
        ("--until", args.until.as_deref()),
    )?;
    let origin = args.origin.origin()?;
    let (kinds, tool) = crate::query::tool_kinds(
        (
            "--kind",
            args.kinds.into_iter().map(SearchKind::from).collect(),
        ),
        ("--tool", args.tool),
    )?;
    let project = crate::query::project(("--project", args.project))?;
    let store = open_store(cfg).await?;
    let session_ids = match resolve_optional_prefix(&store, args.session.as_deref()).await? {
        Ok(ids) => ids,
        Err(code) => return Ok(code),
    };
    let filter = SearchFilter {
        query,
        kinds,
        tool,
        project,
        origin,
        session_ids,
        since,
        until,
        limit: args.limit,
        offset: args.offset,
    };
    let page = store.search(&filter).await?;
    print_search(&page, filter.offset, args.json)?;
    Ok(EXIT_OK)
}
