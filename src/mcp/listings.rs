//! The listing tools: search, sessions, summaries, feedback, snippets and episodes. Each one
//! parses its arguments through the query layer and asks the store for one page.

use rmcp::{tool, tool_router};
use serde_json::Value;

use super::args::{
    EpisodesArgs, FeedbackArgs, ListProjectsArgs, ListSessionsArgs, Parameters, SearchArgs,
    SnippetsArgs, SummariesArgs,
};
use super::{choice, done, origin, page, page_of, range, store_err, Body, Gleaner};
use crate::episode::Label;
use crate::query::store::search::{self, SearchFilter, SearchKind, MAX_LIMIT};
use crate::query::store::{
    EpisodeFilter, FeedbackFilter, FeedbackType, ProjectFilter, SessionFilter, SessionStatus,
    SnippetFilter, SummaryFilter, SummaryKind,
};
use crate::query::{self, Paged, MAX_LISTING};
use crate::snippet::SnippetType;

type Result = std::result::Result<rmcp::model::CallToolResult, rmcp::ErrorData>;

#[tool_router(router = listing_router, vis = "pub(super)")]
impl Gleaner {
    #[tool(
        description = "Full-text search over past Claude Code sessions: user and assistant messages, compaction summaries, user feedback, snippets and what tools did (commands, file paths, patterns, URLs and their output; filter with kinds [\"tool\"] or tool: \"Bash\"), best match first, each with its session, time, transcript file and line, and an excerpt (highlights give the matched character ranges). Use it first when looking for when something was done, said or decided. Query: words (all must match), \"exact phrase\", prefix*, OR, NOT / -word, parentheses.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn search(&self, Parameters(a): Parameters<SearchArgs>) -> Result {
        done(self.search_body(a).await)
    }

    #[tool(
        description = "List sessions, most recent activity first, with title, project, branch, status and counts (messages, sub-agents, tool calls and errors, feedback, summaries, snippets, notable episodes). Use it to find a session by time or project; then get_session for its overview.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_sessions(&self, Parameters(a): Parameters<ListSessionsArgs>) -> Result {
        done(self.list_sessions_body(a).await)
    }

    #[tool(
        description = "List projects, most recent activity first: each project's working directory, how many sessions, first and last activity, messages and tokens. Use it to see where work happened; then list_sessions with project for its sessions.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_projects(&self, Parameters(a): Parameters<ListProjectsArgs>) -> Result {
        done(self.list_projects_body(a).await)
    }

    #[tool(
        description = "Summaries, newest first (oldest_first: true for the other order): `summary` lines, compaction boundaries (trigger, tokens before) and the compaction summaries Claude wrote, the densest record of what a session did. Filter by session, project, kind and time.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_summaries(&self, Parameters(a): Parameters<SummariesArgs>) -> Result {
        done(self.get_summaries_body(a).await)
    }

    #[tool(
        description = "What the user said, newest first (oldest_first: true to read a session in order): their prompts (message), rejected tool uses with the reason they typed (tool_denial) and interruptions. Use it to learn the user's preferences and corrections.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn query_feedback(&self, Parameters(a): Parameters<FeedbackArgs>) -> Result {
        done(self.query_feedback_body(a).await)
    }

    #[tool(
        description = "Snippets of reasoning kept from sessions (error_reasoning, decision_rationale, learning_pattern), newest first, filtered by session, type, project, tags (all must match), keyword and dates. Returns {success, snippets, total_count, has_more}.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn query_snippets(&self, Parameters(a): Parameters<SnippetsArgs>) -> Result {
        done(self.query_snippets_body(a).await)
    }

    #[tool(
        description = "Episodes (runs of turns about one task), newest first, each with its triage label (its strongest turn's), confidence, evidence, line range and every turn's own label (turn_labels). Filter by session and label (routine, error_recovery, user_correction, pivot, design_decision; an episode matches when one of its turns holds the label) to find where things broke and were fixed or decided.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_episodes(&self, Parameters(a): Parameters<EpisodesArgs>) -> Result {
        done(self.list_episodes_body(a).await)
    }
}

impl Gleaner {
    async fn search_body(&self, a: SearchArgs) -> Body {
        let query = search::parse(&a.query).map_err(|e| e.to_string())?;
        let kinds = query::choices::<SearchKind>("kinds", &a.kinds.unwrap_or_default())
            .map_err(|e| e.to_string())?;
        let (kinds, tool) =
            query::tool_kinds(("kinds", kinds), ("tool", a.tool)).map_err(|e| e.to_string())?;
        let p = page_of(a.limit, a.offset, 20, MAX_LIMIT)?;
        let (since, until) = range(("since", a.since.as_deref()), ("until", a.until.as_deref()))?;
        let filter = SearchFilter {
            query,
            kinds,
            tool,
            project: query::project(("project", a.project)).map_err(|e| e.to_string())?,
            origin: origin(a.machine, a.user)?,
            session_ids: self.resolve_opt(a.session_id.as_deref()).await?,
            since,
            until,
            limit: p.limit,
            offset: p.offset,
        };
        let r = self.store.search(&filter).await.map_err(store_err)?;
        let paged = Paged {
            has_more: r.has_more,
            next_offset: r
                .has_more
                .then(|| u64::from(p.offset) + r.results.len() as u64),
            total: Some(r.total_count.max(0) as u64),
            items: r.results,
        };
        let mut v = page("results", &paged, p.offset, &[], self.cap());
        if !r.total_count_exact {
            v["total_count_exact"] = Value::Bool(false);
        }
        Ok(v)
    }

    async fn list_projects_body(&self, a: ListProjectsArgs) -> Body {
        let filter = ProjectFilter {
            project: query::project(("project", a.project)).map_err(|e| e.to_string())?,
            origin: origin(a.machine, a.user)?,
        };
        let p = page_of(a.limit, a.offset, 20, MAX_LISTING)?;
        let projects = self
            .store
            .project_listing(&filter, p)
            .await
            .map_err(store_err)?;
        Ok(page("projects", &projects, p.offset, &[], self.cap()))
    }

    async fn list_sessions_body(&self, a: ListSessionsArgs) -> Body {
        let (since, until) = range(("since", a.since.as_deref()), ("until", a.until.as_deref()))?;
        let filter = SessionFilter {
            project: query::project(("project", a.project)).map_err(|e| e.to_string())?,
            since,
            until,
            status: choice::<SessionStatus>("status", a.status.as_deref())?,
            origin: origin(a.machine, a.user)?,
            file: query::file_path(("file", a.file)).map_err(|e| e.to_string())?,
            branch: query::nonblank(("branch", a.branch), "a git branch name")
                .map_err(|e| e.to_string())?,
            model: query::nonblank(("model", a.model), "a part of a model name, such as opus")
                .map_err(|e| e.to_string())?,
            hide_unprompted: !a.all.unwrap_or(false),
            ..SessionFilter::default()
        };
        let p = page_of(a.limit, a.offset, 20, MAX_LISTING)?;
        let sessions = self.store.sessions(&filter, p).await.map_err(store_err)?;
        Ok(page("sessions", &sessions, p.offset, &[], self.cap()))
    }

    async fn get_summaries_body(&self, a: SummariesArgs) -> Body {
        let (since, until) = range(("since", a.since.as_deref()), ("until", a.until.as_deref()))?;
        let filter = SummaryFilter {
            kind: choice::<SummaryKind>("kind", a.kind.as_deref())?,
            since,
            until,
            project: query::project(("project", a.project)).map_err(|e| e.to_string())?,
            origin: origin(a.machine, a.user)?,
            oldest_first: a.oldest_first.unwrap_or(false),
            session_ids: self.resolve_opt(a.session_id.as_deref()).await?,
        };
        let p = page_of(a.limit, a.offset, 20, MAX_LISTING)?;
        let rows = self.store.summaries(&filter, p).await.map_err(store_err)?;
        Ok(page("summaries", &rows, p.offset, &[], self.cap()))
    }

    async fn query_feedback_body(&self, a: FeedbackArgs) -> Body {
        let (since, until) = range(("since", a.since.as_deref()), ("until", a.until.as_deref()))?;
        let filter = FeedbackFilter {
            feedback_type: choice::<FeedbackType>("feedback_type", a.feedback_type.as_deref())?,
            since,
            until,
            project: query::project(("project", a.project)).map_err(|e| e.to_string())?,
            origin: origin(a.machine, a.user)?,
            oldest_first: a.oldest_first.unwrap_or(false),
            session_ids: self.resolve_opt(a.session_id.as_deref()).await?,
        };
        let p = page_of(a.limit, a.offset, 50, MAX_LISTING)?;
        let rows = self.store.feedback(&filter, p).await.map_err(store_err)?;
        Ok(page("feedback", &rows, p.offset, &[], self.cap()))
    }

    async fn query_snippets_body(&self, a: SnippetsArgs) -> Body {
        let p = page_of(a.limit, a.offset, 50, MAX_LISTING)?;
        let (since, until) = range(
            ("start_date", a.start_date.as_deref()),
            ("end_date", a.end_date.as_deref()),
        )?;
        let filter = SnippetFilter {
            snippet_type: choice::<SnippetType>("snippet_type", a.snippet_type.as_deref())?,
            since,
            until,
            project: query::project(("project", a.project)).map_err(|e| e.to_string())?,
            origin: origin(a.machine, a.user)?,
            tags: a.tags.unwrap_or_default(),
            keyword: a.keyword.filter(|k| !k.is_empty()),
            limit: p.limit,
            offset: p.offset,
            session_ids: self.resolve_opt(a.session_id.as_deref()).await?,
            oldest_first: false,
        };
        let r = self.store.list_snippets(&filter).await.map_err(store_err)?;
        let paged = Paged {
            has_more: r.has_more,
            next_offset: r
                .has_more
                .then(|| u64::from(p.offset) + r.snippets.len() as u64),
            total: Some(r.total_count.max(0) as u64),
            items: r.snippets,
        };
        let mut v = page(
            "snippets",
            &paged,
            p.offset,
            &[("success", Value::Bool(true))],
            self.cap(),
        );
        if !r.total_count_exact {
            v["total_count_exact"] = Value::Bool(false);
        }
        Ok(v)
    }

    async fn list_episodes_body(&self, a: EpisodesArgs) -> Body {
        let triage = choice::<Label>("triage", a.triage.as_deref())?;
        let p = page_of(a.limit, a.offset, 50, MAX_LISTING)?;
        let filter = EpisodeFilter {
            session_ids: self.resolve_opt(a.session_id.as_deref()).await?,
            triage: triage.map(Label::as_str),
            origin: origin(a.machine, a.user)?,
            oldest_first: false,
        };
        let rows = self.store.episodes(&filter, p).await.map_err(store_err)?;
        Ok(page("episodes", &rows, p.offset, &[], self.cap()))
    }
}
