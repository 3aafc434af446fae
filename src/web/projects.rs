//! `/projects`: every project, most recent activity first, as `gleaner projects` lists them:
//! the working directory (the CLI's name for a project), sessions, first and last activity,
//! messages and tokens; each links to its sessions. And `/sessions/{id}/read`: a session to
//! read whole, tool calls shown, as `gleaner export --format html` writes it.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::{Html, IntoResponse, Response};
use maud::html;

use super::layout::{clip, enc, when};
use super::pages::{ok, page_param, param, Params};
use super::{AppState, WebError};
use crate::query;
use crate::query::store::ProjectFilter;
use crate::text::thousands;

/// Projects per page.
const PAGE: u32 = 50;

/// `/projects`.
pub async fn projects(
    State(st): State<Arc<AppState>>,
    axum::extract::Query(q): Params,
) -> Result<Response, WebError> {
    let page = page_param(&q, PAGE)?;
    let f = ProjectFilter {
        project: query::project(("project", param(&q, "project").map(str::to_string)))?,
        origin: query::origin(
            ("machine", param(&q, "machine").map(str::to_string)),
            ("user", param(&q, "user").map(str::to_string)),
        )?,
    };
    let rows = st.store.project_listing(&f, page).await?;
    let offset = page.offset;
    let at = |o: u32| {
        format!(
            "/projects?project={}&offset={o}",
            enc(param(&q, "project").unwrap_or(""))
        )
    };
    let body = html! {
        h1 { "Projects" }
        form.filters method="get" action="/projects" {
            label { "Folder or directory" input name="project" value=(param(&q, "project").unwrap_or("")); }
            button type="submit" { "Filter" }
        }
        @if rows.items.is_empty() { p.muted { "No projects" } }
        @else {
            div.scroll { table.list {
                thead { tr {
                    th { "Working directory" } th.num { "Sessions" } th { "First" } th { "Last" }
                    th.num { "Messages" } th.num { "Tokens" }
                } }
                tbody {
                    @for p in &rows.items {
                        tr {
                            td.place {
                                a href={ "/sessions?project=" (enc(&p.project)) } title=(p.project) {
                                    (clip(p.cwd.as_deref().unwrap_or(&p.project), 80))
                                }
                            }
                            td.num { (thousands(p.sessions)) }
                            td { (when(p.first_activity.as_deref())) }
                            td { (when(p.last_activity.as_deref())) }
                            td.num { (thousands(p.messages)) }
                            td.num { (thousands(p.tokens)) }
                        }
                    }
                }
            } }
        }
        div.pager {
            @if offset > 0 { a href=(at(offset.saturating_sub(page.limit))) { "← Previous" } }
            @if rows.has_more { a href=(at(offset + page.limit)) { "Next →" } }
        }
    };
    Ok(ok("Projects", body))
}

/// `/sessions/{id}/read`: the session whole (prompts, replies, tool calls with their inputs and
/// outputs, thinking, sub-agents, images), as the HTML export, styled by `/export.css`.
pub async fn read(
    State(st): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Response, WebError> {
    let id = super::pages::resolve(&st, &id).await?;
    let src = crate::export::session::gather(&st.store, &id, &st.cfg.machine_id)
        .await
        .map_err(|e| match e {
            crate::export::session::SourceError::Query(q) => WebError::from(q),
            e => WebError::NotFound(e.to_string()),
        })?
        .ok_or_else(|| WebError::NotFound(format!("no session {id}")))?;
    let r = st.cfg.redactor.clone();
    let page = crate::export::session::html(
        &src,
        &r,
        crate::export::session::Style::Linked("/export.css"),
    );
    Ok(Html(page).into_response())
}
