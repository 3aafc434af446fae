//! The pages: home (search, recent sessions, counts), sessions, one session, its raw lines,
//! snippets. Each handler reads the store and renders with maud; nothing is written.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::response::{Html, IntoResponse, Response};
use maud::{html, Markup};

use super::layout::{clip, duration, enc, label, marked, page, when};
use super::timeline::{self, SessionView};
use super::{AppState, WebError};
use crate::query::store::search::{self, SearchFilter, SearchHit, SearchKind};
use crate::query::store::{
    EpisodeFilter, Origin, SessionFilter, SessionListing, SessionSort, SessionStatus, SnippetFilter,
};
use crate::query::{self, Page};
use crate::snippet::SnippetType;

pub(super) type Params = Query<BTreeMap<String, String>>;

/// Sessions per page.
const PAGE: u32 = 50;

pub(super) fn param<'a>(q: &'a BTreeMap<String, String>, k: &str) -> Option<&'a str> {
    q.get(k).map(|s| s.trim()).filter(|s| !s.is_empty())
}

/// The `machine`/`user` parameters (an empty field is no filter).
fn origin_param(q: &BTreeMap<String, String>) -> Result<Origin, WebError> {
    Ok(query::origin(
        ("machine", param(q, "machine").map(str::to_string)),
        ("user", param(q, "user").map(str::to_string)),
    )?)
}

/// A time parameter, or a 400 naming it.
fn since_param(q: &BTreeMap<String, String>, k: &str) -> Result<Option<String>, WebError> {
    Ok(query::time_opt(k, param(q, k))?)
}

/// The `since` and `until` parameters as one range ([`query::time_range_stored`]).
fn range_param(q: &BTreeMap<String, String>) -> Result<(Option<String>, Option<String>), WebError> {
    Ok(query::time_range_stored(
        ("since", param(q, "since")),
        ("until", param(q, "until")),
    )?)
}

/// The page asked for (`offset`, and `limit` where a page offers it), or a 400 naming the bad
/// value.
pub(super) fn page_param(q: &BTreeMap<String, String>, default: u32) -> Result<Page, WebError> {
    Ok(Page::parse_text(
        ("limit", param(q, "limit")),
        ("offset", param(q, "offset")),
        default,
        default.max(query::MAX_LISTING),
    )?)
}

/// A value of a closed vocabulary, or a 400 naming it and the accepted values.
fn choice_param<T: query::Vocabulary>(
    q: &BTreeMap<String, String>,
    k: &str,
) -> Result<Option<T>, WebError> {
    Ok(param(q, k).map(|v| query::choice::<T>(k, v)).transpose()?)
}

pub(super) fn ok(title: &str, body: Markup) -> Response {
    Html(page(title, body).into_string()).into_response()
}

/// `/`: search box with filters, results when a query is given, recent sessions, counts.
pub async fn home(State(st): State<Arc<AppState>>, Query(q): Params) -> Result<Response, WebError> {
    let query = param(&q, "q").map(str::to_string);
    let results = match &query {
        Some(text) => Some(search_results(&st, &q, text).await?),
        None => None,
    };
    let totals = st.store.totals().await?;
    let projects = st.store.projects().await?;
    let recent = st
        .store
        .sessions(
            &SessionFilter {
                hide_unprompted: true,
                ..SessionFilter::default()
            },
            Page {
                limit: 10,
                offset: 0,
            },
        )
        .await?
        .items;
    let kind = param(&q, "kind").unwrap_or("");
    let project = param(&q, "project").unwrap_or("");
    let body = html! {
        h1 { "Search what your sessions kept" }
        form.filters method="get" action="/" {
            label { "Words, \"phrases\", prefix*, OR, -not"
                input type="search" name="q" value=(query.as_deref().unwrap_or("")) autofocus; }
            label { "Kind" select name="kind" {
                option value="" { "all" }
                @for k in SearchKind::ALL {
                    option value=(k.as_str()) selected[kind == k.as_str()] { (k.as_str()) }
                }
            } }
            label { "Tool" input name="tool" placeholder="Bash, Edit…" size="10" value=(param(&q, "tool").unwrap_or("")); }
            (project_select(&projects, project))
            label { "Since" input name="since" placeholder="7d or 2026-01-31" value=(param(&q, "since").unwrap_or("")); }
            label { "Until" input name="until" placeholder="2026-02-28" value=(param(&q, "until").unwrap_or("")); }
            button type="submit" { "Search" }
        }
        @if let Some(r) = results { (r) }
        div.counts {
            @for (name, f) in [
                ("sessions", totals.sessions),
                ("messages", totals.messages),
                ("summaries", totals.summaries),
                ("feedback", totals.feedback),
                ("episodes", totals.episodes),
                ("snippets", totals.snippets),
            ] {
                @if f.exact {
                    div { b { (f.n) } (name) }
                } @else {
                    div title="estimated" { b { "≈" (f.n) } (name) }
                }
            }
        }
        h2 { "Recent sessions" }
        (session_table(&recent, None))
        p { a href="/sessions" { "All sessions →" } }
    };
    Ok(ok("Search", body))
}

fn project_select(projects: &[String], chosen: &str) -> Markup {
    html! {
        label { "Project" select name="project" {
            option value="" { "all" }
            @for p in projects.iter().filter(|p| !p.is_empty()) {
                option value=(p) selected[chosen == p] { (clip(p, 60)) }
            }
        } }
    }
}

async fn search_results(
    st: &AppState,
    q: &BTreeMap<String, String>,
    text: &str,
) -> Result<Markup, WebError> {
    let query = search::parse(text).map_err(|e| WebError::BadRequest(e.to_string()))?;
    let (since, until) = range_param(q)?;
    let kinds: Vec<SearchKind> = choice_param(q, "kind")?.into_iter().collect();
    let (kinds, tool) = crate::query::tool_kinds(
        ("kind", kinds),
        ("tool", param(q, "tool").map(str::to_string)),
    )
    .map_err(|e| WebError::BadRequest(e.to_string()))?;
    let offset = page_param(q, 20)?.offset;
    let f = SearchFilter {
        query,
        kinds,
        tool,
        project: param(q, "project").map(str::to_string),
        origin: origin_param(q)?,
        session_ids: None,
        since,
        until,
        limit: 20,
        offset,
    };
    let page = st.store.search(&f).await?;
    let next = format!(
        "/?q={}&kind={}&tool={}&project={}&since={}&until={}&offset={}",
        enc(text),
        enc(param(q, "kind").unwrap_or("")),
        enc(param(q, "tool").unwrap_or("")),
        enc(param(q, "project").unwrap_or("")),
        enc(param(q, "since").unwrap_or("")),
        enc(param(q, "until").unwrap_or("")),
        offset + 20
    );
    Ok(html! {
        h2 { @if !page.total_count_exact { "More than " } (page.total_count) " results" }
        @for hit in &page.results {
            @let agent = hit.agent_id();
            div.hit {
                span.pill { (hit.kind.as_str()) @if let Some(t) = &hit.tool { " · " (t) } } " "
                a href=(hit_link(hit, agent.as_deref())) {
                    (clip(&hit.session_id, 8))
                }
                " " span.muted { (hit.project.as_deref().unwrap_or("")) " · " (when(hit.timestamp.as_deref()))
                    @if let Some(a) = &agent { " · sub-agent " (clip(a, 8)) }
                    @if let Some(l) = hit.line { " · line " (l) } }
                div { (marked(&hit.excerpt, &hit.highlights)) }
            }
        }
        @if page.has_more { p.pager { a href=(next) { "More results →" } } }
    })
}

/// Where a hit is read: its line on the session's page, or, for a line of a sub-agent's
/// transcript (numbered from 1 as the session's is, so `#line-N` of the session's page would
/// land on another line), that line in the readable page, where sub-agents are nested.
fn hit_link(hit: &SearchHit, agent: Option<&str>) -> String {
    let id = &hit.session_id;
    match (agent, hit.line) {
        (Some(a), Some(l)) => format!("/sessions/{id}/read#agent-{a}-line-{l}"),
        (Some(_), None) => format!("/sessions/{id}/read"),
        (None, Some(l)) => format!("/sessions/{id}#line-{l}"),
        (None, None) => format!("/sessions/{id}"),
    }
}

fn session_table(rows: &[SessionListing], sort: Option<(&str, &str)>) -> Markup {
    // Sortable headers keep the other filters (`base` is the query string without sort).
    let head = |key: &str, name: &str| -> Markup {
        match sort {
            Some((current, base)) => html! {
                a href={ "/sessions?" (base) "&sort=" (key) } class=[(current == key).then_some("on")] { (name) }
            },
            None => html! { (name) },
        }
    };
    html! {
        table.list {
            thead { tr {
                th { (head("title", "Title")) } th { (head("project", "Project")) }
                th { (head("started", "Started")) } th { (head("duration", "Duration")) }
                th { "Status" } th { (head("feedback", "Feedback")) } th { (head("snippets", "Snippets")) }
                th { "Episodes" }
            } }
            tbody {
                @for s in rows {
                    tr {
                        td { a href={ "/sessions/" (s.session_id) } { (clip(s.title.as_deref().unwrap_or("(no title)"), 90)) } }
                        // The working directory says where, as the CLI shows it; the project
                        // folder (its encoded form) is the cell's title.
                        td.place title=(s.project) { (s.cwd.as_deref().unwrap_or(&s.project)) }
                        td.nowrap { (when(s.started_at.as_deref())) }
                        td.nowrap { (duration(s.duration_ms)) }
                        td { (s.status) }
                        td { (s.feedback.total()) }
                        td { (s.snippets) }
                        td { (s.notable_episodes) }
                    }
                }
            }
        }
    }
}

/// `/sessions`: all sessions, sortable, filtered by project and dates, paginated.
pub async fn sessions(
    State(st): State<Arc<AppState>>,
    Query(q): Params,
) -> Result<Response, WebError> {
    let sort = choice_param::<SessionSort>(&q, "sort")?.unwrap_or_default();
    let (since, until) = range_param(&q)?;
    let page = page_param(&q, PAGE)?;
    let offset = page.offset;
    let status = choice_param::<SessionStatus>(&q, "status")?;
    let f = SessionFilter {
        project: param(&q, "project").map(str::to_string),
        since,
        until,
        status,
        origin: origin_param(&q)?,
        hide_unprompted: param(&q, "all").is_none(),
        sort,
        ..SessionFilter::default()
    };
    let rows = st.store.sessions(&f, page).await?;
    let projects = st.store.projects().await?;
    let base = format!(
        "all={}&project={}&since={}&until={}&status={}&machine={}&user={}",
        param(&q, "all").unwrap_or(""),
        enc(param(&q, "project").unwrap_or("")),
        enc(param(&q, "since").unwrap_or("")),
        enc(param(&q, "until").unwrap_or("")),
        status.map_or("", SessionStatus::as_str),
        enc(param(&q, "machine").unwrap_or("")),
        enc(param(&q, "user").unwrap_or(""))
    );
    let at = |o: u32| format!("/sessions?{base}&sort={}&offset={o}", sort.as_str());
    let body = html! {
        h1 { "Sessions" }
        form.filters method="get" action="/sessions" {
            (project_select(&projects, param(&q, "project").unwrap_or("")))
            label { "Active since" input name="since" placeholder="7d or 2026-01-31" value=(param(&q, "since").unwrap_or("")); }
            label { "Started before" input name="until" placeholder="2026-02-28" value=(param(&q, "until").unwrap_or("")); }
            label { "Status" select name="status" {
                option value="" selected[status.is_none()] { "any" }
                @for s in SessionStatus::ALL {
                    option value=(s.as_str()) selected[status == Some(*s)] { (s.as_str()) }
                }
            } }
            label { "Machine" input name="machine" placeholder="machine id" value=(param(&q, "machine").unwrap_or("")); }
            label { "User" input name="user" placeholder="user name" value=(param(&q, "user").unwrap_or("")); }
            label.check { input type="checkbox" name="all" value="1" checked[param(&q, "all").is_some()]; "With warm-ups" }
            input type="hidden" name="sort" value=(sort.as_str());
            button type="submit" { "Filter" }
        }
        p.muted { @if rows.items.is_empty() { "No sessions" } @else { "Sessions " (offset + 1) "–" (u64::from(offset) + rows.items.len() as u64) } }
        (session_table(&rows.items, Some((sort.as_str(), &base))))
        div.pager {
            @if offset > 0 { a href=(at(offset.saturating_sub(page.limit))) { "← Previous" } }
            @if rows.has_more { a href=(at(offset + page.limit)) { "Next →" } }
        }
    };
    Ok(ok("Sessions", body))
}

/// `/sessions/{id}`: the timeline (`?agent=ID` for a sub-agent's transcript).
pub async fn session(
    State(st): State<Arc<AppState>>,
    Path(id): Path<String>,
    Query(q): Params,
) -> Result<Response, WebError> {
    let id = resolve(&st, &id).await?;
    let Some(row) = st.store.session(&id).await? else {
        return Err(WebError::NotFound(format!("no session {id}")));
    };
    let files = st.store.session_files(&id).await?;
    let file = transcript_of(&st, &files, &id, param(&q, "agent"))?;
    let tl = st.store.timeline(&files, file).await?;
    let mut episodes = st
        .store
        .list_episodes(&EpisodeFilter {
            session_ids: Some(vec![id.clone()]),
            ..EpisodeFilter::default()
        })
        .await?;
    // The transcript's episodes, whichever machine's copy stored them (`store::copies`).
    episodes.retain(|e| {
        files
            .iter()
            .any(|f| f.path == e.source_file && f.kind == file.kind && f.agent_id == file.agent_id)
    });
    let snippets = st
        .store
        .list_snippets(&SnippetFilter {
            session_ids: Some(vec![id.clone()]),
            limit: 500,
            ..SnippetFilter::default()
        })
        .await?
        .snippets;
    let bands = timeline::build(&tl, &episodes);
    let no_conversation = if bands.iter().all(|b| b.turns.is_empty()) {
        query::no_conversation(&st.store, &id).await?
    } else {
        String::new()
    };
    let view = SessionView {
        no_conversation,
        session: &row,
        files: &files,
        file,
        bands: &bands,
        snippets: &snippets,
    };
    let title = row.title.clone().unwrap_or_else(|| id.clone());
    Ok(ok(&clip(&title, 60), timeline::render(&view)))
}

/// The transcript a page shows: a sub-agent's (`?agent=ID`) or the main one.
fn transcript_of<'a>(
    st: &AppState,
    files: &'a [crate::query::store::TimelineFile],
    id: &str,
    agent: Option<&str>,
) -> Result<&'a crate::query::store::TimelineFile, WebError> {
    query::transcript_copy(files, &st.cfg.machine_id, agent)
        .or(if agent.is_none() { files.first() } else { None })
        .ok_or_else(|| WebError::NotFound(format!("session {id} has no such transcript")))
}

pub(super) async fn resolve(st: &AppState, prefix: &str) -> Result<String, WebError> {
    Ok(query::resolve_session(&st.store, "session", prefix).await?)
}

/// Lines the raw-lines page shows at most.
const LINES_PER_PAGE: u64 = 2000;

/// `/sessions/{id}/lines?from=A&to=B[&agent=ID]`: the transcript lines, readable and redacted.
pub async fn lines(
    State(st): State<Arc<AppState>>,
    Path(id): Path<String>,
    Query(q): Params,
) -> Result<Response, WebError> {
    let id = resolve(&st, &id).await?;
    let files = st.store.session_files(&id).await?;
    let file = transcript_of(&st, &files, &id, param(&q, "agent"))?;
    let num = |k: &str| param(&q, k).and_then(|s| s.parse::<u64>().ok());
    let (Some(from), Some(to)) = (num("from"), num("to")) else {
        return Err(WebError::BadRequest(
            "expected from=A&to=B with 1 <= A <= B".into(),
        ));
    };
    // The range as every door reads it (cut to the file, saying so), then at most a page.
    let known = u64::try_from(file.lines).unwrap_or(0);
    let range = query::transcript::line_range(("from", "to"), (from, to), &file.path, known)
        .map_err(WebError::BadRequest)?;
    let to = range.end.min(from + LINES_PER_PAGE - 1);
    let note = match (&range.note, to < range.end) {
        (_, true) => Some(format!(
            "lines {from}:{to} shown, at most {LINES_PER_PAGE} a page"
        )),
        (note, false) => note.clone(),
    };
    // The file on disk, else the archive's copy (deleted, or another machine's).
    let source = query::transcript::open(&st.store, file, &st.cfg.machine_id).await?;
    let body = if let Some(source) = source {
        let archived = source.is_archived();
        let redactor = st.cfg.redactor.clone();
        let sel = crate::snippet::excerpt::Selection::Lines(from, to);
        let read = crate::run::blocking(move || source.excerpt(sel, &redactor))
            .await
            .map_err(|e| WebError::Internal(e.to_string()))?;
        match read {
            Ok(ex) => html! {
                @if archived { p.muted { "From the archive: the file is no longer on this disk." } }
                @if let Some(n) = &note { p.muted { (n) } }
                pre.raw { (ex.content) }
            },
            Err(e) => html! { p.muted { (e.to_string()) } },
        }
    } else {
        html! { p.muted { (query::unreadable_copy(file, &st.cfg.machine_id)) ": the session page shows it." } }
    };
    let back = format!("/sessions/{id}#line-{from}");
    Ok(ok(
        "Lines",
        html! {
            h1 { "Lines " (from) "–" (to) }
            p { a href=(back) { "← back to the session" } " · " code { (file.path) } }
            (body)
        },
    ))
}

/// `/snippets`: browse and filter snippets (type, project, tag, keyword).
pub async fn snippets(
    State(st): State<Arc<AppState>>,
    Query(q): Params,
) -> Result<Response, WebError> {
    let offset = page_param(&q, 30)?.offset;
    let f = SnippetFilter {
        session_ids: None,
        snippet_type: choice_param::<SnippetType>(&q, "type")?,
        project: param(&q, "project").map(str::to_string),
        origin: origin_param(&q)?,
        tags: param(&q, "tag")
            .map(|t| vec![t.to_string()])
            .unwrap_or_default(),
        keyword: param(&q, "keyword").map(str::to_string),
        since: since_param(&q, "since")?,
        until: None,
        limit: 30,
        offset,
        oldest_first: false,
    };
    let page_ = st.store.list_snippets(&f).await?;
    let projects = st.store.projects().await?;
    let base = format!(
        "/snippets?type={}&project={}&tag={}&keyword={}&since={}",
        enc(param(&q, "type").unwrap_or("")),
        enc(param(&q, "project").unwrap_or("")),
        enc(param(&q, "tag").unwrap_or("")),
        enc(param(&q, "keyword").unwrap_or("")),
        enc(param(&q, "since").unwrap_or(""))
    );
    let types = ["error_reasoning", "decision_rationale", "learning_pattern"];
    let chosen = param(&q, "type").unwrap_or("");
    let body = html! {
        h1 { "Snippets" }
        form.filters method="get" action="/snippets" {
            label { "Type" select name="type" {
                option value="" { "all" }
                @for t in types { option value=(t) selected[chosen == t] { (t) } }
            } }
            (project_select(&projects, param(&q, "project").unwrap_or("")))
            label { "Tag" input name="tag" placeholder="tool:bash" value=(param(&q, "tag").unwrap_or("")); }
            label { "Keyword" input name="keyword" value=(param(&q, "keyword").unwrap_or("")); }
            label { "Since" input name="since" placeholder="30d" value=(param(&q, "since").unwrap_or("")); }
            button type="submit" { "Filter" }
        }
        p.muted { @if !page_.total_count_exact { "More than " } (page_.total_count) " snippets" }
        @for s in &page_.snippets {
            div.hit {
                span.pill { (s.snippet_type) } " " b { (s.title) }
                @if let Some(l) = s.metadata.get("triage").and_then(|v| v.as_str()) { " " (label(l)) }
                div.muted {
                    (s.project) " · " (when(Some(&s.created_at))) " · "
                    // The session page shows every snippet with this anchor, beside its turn or
                    // under "Other snippets".
                    @if s.source_file.ends_with(".jsonl") {
                        a href={ "/sessions/" (s.session_id) "#snippet-" (s.id) } { "source: session " (clip(&s.session_id, 8)) ", lines " (s.line_start) "–" (s.line_end) }
                    } @else {
                        a href={ "/sessions/" (s.session_id) "#snippet-" (s.id) } { "session " (clip(&s.session_id, 8)) }
                        " · " (timeline::snippet_source(s))
                    }
                    @for t in &s.tags { " " span.pill { (t) } }
                }
                details { summary { (clip(&s.content, 200)) } pre.raw { (s.content) } }
            }
        }
        div.pager {
            @if offset > 0 { a href={ (base) "&offset=" (offset.saturating_sub(30)) } { "← Previous" } }
            @if page_.has_more { a href={ (base) "&offset=" (offset + 30) } { "Next →" } }
        }
    };
    Ok(ok("Snippets", body))
}
