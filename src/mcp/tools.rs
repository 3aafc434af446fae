//! The MCP tools. Each description says what the tool is for and when to prefer it: it is what
//! a model reads to choose.

use std::collections::HashSet;

use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router, ErrorData};
use serde_json::{json, Value};

use super::args::{
    ConversationArgs, EpisodesArgs, ExtractArgs, FeedbackArgs, LinesArgs, ListSessionsArgs,
    Parameters, SearchArgs, SessionArgs, SnippetsArgs, SummariesArgs,
};
use super::{cut_text, fail, ok, page, page_size, store_err, time, Gleaner};
use crate::run::snippet_add::{self, AddRequest, Content};
use crate::snippet::excerpt::{self, Selection, SourceError};
use crate::snippet::SnippetType;
use crate::store::search::{self, SearchFilter, SearchKind, MAX_LIMIT};
use crate::store::{
    EpisodeFilter, FeedbackFilter, SessionFilter, SessionListing, SnippetFilter, SnippetListing,
};

type Result = std::result::Result<CallToolResult, ErrorData>;

/// A tool's body: `Ok` is its result, `Err` the text of an error result.
type Body = std::result::Result<Value, String>;

fn done(body: Body) -> Result {
    Ok(match body {
        Ok(v) => ok(v),
        Err(msg) => fail(msg),
    })
}

/// Items of `all` from `offset`, at most `limit`.
fn slice<T: Clone>(all: &[T], offset: u32, limit: u32) -> Vec<T> {
    all.iter()
        .skip(offset as usize)
        .take(limit as usize)
        .cloned()
        .collect()
}

/// A session as listed: the fields an agent picks a session by.
fn session_json(s: &SessionListing) -> Value {
    json!({
        "session_id": s.session_id,
        "title": s.title,
        "project": s.project,
        "cwd": s.cwd,
        "git_branch": s.git_branch,
        "started_at": s.started_at,
        "last_activity_at": s.last_activity_at,
        "status": s.status,
        "messages": s.messages,
        "subagents": s.subagent_count,
        "tool_calls": s.tool_calls,
        "tool_errors": s.tool_errors,
        "feedback": s.feedback,
        "summaries": s.summaries,
    })
}

/// A snippet with the field names of the MCP interface (`source_line_start`/`_end`).
fn snippet_json(s: &SnippetListing) -> Value {
    json!({
        "id": s.id,
        "session_id": s.session_id,
        "episode_id": s.episode_id,
        "origin": s.origin,
        "snippet_type": s.snippet_type,
        "title": s.title,
        "content": s.content,
        "project": s.project,
        "source_file": s.source_file,
        "source_line_start": s.line_start,
        "source_line_end": s.line_end,
        "tags": s.tags,
        "metadata": s.metadata,
        "created_at": s.created_at,
    })
}

fn one_of(field: &str, v: &str, allowed: &[&str]) -> std::result::Result<(), String> {
    if allowed.contains(&v) {
        Ok(())
    } else {
        Err(format!(
            "invalid {field} {v:?}: expected one of {}",
            allowed.join(", ")
        ))
    }
}

#[tool_router(vis = "pub(super)")]
impl Gleaner {
    #[tool(
        description = "Full-text search over past Claude Code sessions: user and assistant messages, compaction summaries, user feedback and snippets, best match first, each with its session, time, transcript file and line, and an excerpt (highlights give the matched character ranges). Use it first when looking for when something was done, said or decided. Query: words (all must match), \"exact phrase\", prefix*, OR, NOT / -word, parentheses."
    )]
    async fn search(&self, Parameters(a): Parameters<SearchArgs>) -> Result {
        done(self.search_body(a).await)
    }

    #[tool(
        description = "List sessions, most recent activity first, with title, project, branch, status and counts (messages, sub-agents, tool calls and errors, feedback, summaries). Use it to find a session by time or project; then get_session for its overview."
    )]
    async fn list_sessions(&self, Parameters(a): Parameters<ListSessionsArgs>) -> Result {
        done(self.list_sessions_body(a).await)
    }

    #[tool(
        description = "A compact overview of one session: metadata and counts, its summaries, its episodes with their labels (error_recovery, user_correction, pivot, design_decision, routine) and the titles of its snippets. Read it before asking for more (get_conversation, get_transcript_lines, query_snippets)."
    )]
    async fn get_session(&self, Parameters(a): Parameters<SessionArgs>) -> Result {
        done(self.get_session_body(a).await)
    }

    #[tool(
        description = "Summaries, oldest first: `summary` lines, compaction boundaries (trigger, tokens before) and the compaction summaries Claude wrote, the densest record of what a session did. Filter by session, project, kind and time."
    )]
    async fn get_summaries(&self, Parameters(a): Parameters<SummariesArgs>) -> Result {
        done(self.get_summaries_body(a).await)
    }

    #[tool(
        description = "What the user said, by time: their prompts (message), rejected tool uses with the reason they typed (tool_denial) and interruptions. Use it to learn the user's preferences and corrections."
    )]
    async fn query_feedback(&self, Parameters(a): Parameters<FeedbackArgs>) -> Result {
        done(self.query_feedback_body(a).await)
    }

    #[tool(
        description = "Snippets of reasoning kept from sessions (error_reasoning, decision_rationale, learning_pattern), newest first, filtered by session, type, project, tags (all must match), keyword and dates. Returns {success, snippets, total_count, has_more}."
    )]
    async fn query_snippets(&self, Parameters(a): Parameters<SnippetsArgs>) -> Result {
        done(self.query_snippets_body(a).await)
    }

    #[tool(
        description = "Store a snippet worth keeping from a session: give its content, or cut it from the transcript by source_line_start/source_line_end or start_turn/end_turn. The content is redacted, then must be 100 B to 10 KB; the title at most 256 characters. Returns {success, snippet_id, session_id, snippet_type, title, created_at}."
    )]
    async fn extract_snippet(&self, Parameters(a): Parameters<ExtractArgs>) -> Result {
        done(self.extract_snippet_body(a).await)
    }

    #[tool(
        description = "Lines of a session's main transcript rendered readably (user and assistant text, tool calls and results, each labelled with its line number), secrets redacted. Use it to read the context of a search result or a snippet by line."
    )]
    async fn get_transcript_lines(&self, Parameters(a): Parameters<LinesArgs>) -> Result {
        done(self.transcript_lines_body(a).await)
    }

    #[tool(
        description = "A session's conversation as plain text (User:/Assistant: turns, tool traffic left out), from the stored messages, so it works after the transcript is deleted. With max_chars, the last characters are kept (cut at a paragraph boundary)."
    )]
    async fn get_conversation(&self, Parameters(a): Parameters<ConversationArgs>) -> Result {
        done(self.conversation_body(a).await)
    }

    #[tool(
        description = "Episodes (runs of turns about one task) in the order they happened, each with its triage label (its strongest turn's), confidence, evidence, line range and every turn's own label (turn_labels). Filter by session and label (routine, error_recovery, user_correction, pivot, design_decision; an episode matches when one of its turns holds the label) to find where things broke and were fixed or decided."
    )]
    async fn list_episodes(&self, Parameters(a): Parameters<EpisodesArgs>) -> Result {
        done(self.list_episodes_body(a).await)
    }
}

impl Gleaner {
    async fn search_body(&self, a: SearchArgs) -> Body {
        let query = search::parse(&a.query).map_err(|e| e.to_string())?;
        let mut kinds = Vec::new();
        for k in a.kinds.unwrap_or_default() {
            let kind = SearchKind::ALL
                .into_iter()
                .find(|x| x.as_str() == k)
                .ok_or_else(|| {
                    format!("invalid kind {k:?}: expected message, summary, feedback or snippet")
                })?;
            kinds.push(kind);
        }
        let filter = SearchFilter {
            query,
            kinds,
            project: a.project,
            session_ids: self.resolve_opt(a.session_id.as_deref()).await?,
            since: time("since", a.since.as_deref())?,
            until: time("until", a.until.as_deref())?,
            limit: page_size("limit", a.limit, 20, MAX_LIMIT)?,
            offset: a.offset.unwrap_or(0),
        };
        let p = self.store.search(&filter).await.map_err(store_err)?;
        Ok(page(
            "results",
            &p.results,
            u64::from(filter.offset),
            p.total_count as u64,
            &[],
            self.cap(),
        ))
    }

    async fn list_sessions_body(&self, a: ListSessionsArgs) -> Body {
        if let Some(s) = &a.status {
            one_of("status", s, &["active", "finished"])?;
        }
        let limit = page_size("limit", a.limit, 20, 200)?;
        let offset = a.offset.unwrap_or(0);
        let all = self
            .store
            .list_sessions(&SessionFilter {
                project: a.project,
                since: time("since", a.since.as_deref())?,
                status: a.status,
                session_ids: None,
                until: None,
            })
            .await
            .map_err(store_err)?;
        let items: Vec<Value> = slice(&all, offset, limit)
            .iter()
            .map(session_json)
            .collect();
        Ok(page(
            "sessions",
            &items,
            offset.into(),
            all.len() as u64,
            &[],
            self.cap(),
        ))
    }

    async fn get_session_body(&self, a: SessionArgs) -> Body {
        let id = self.resolve(&a.session_id).await?;
        let ids = vec![id.clone()];
        let s = self
            .store
            .list_sessions(&SessionFilter {
                session_ids: Some(ids.clone()),
                ..SessionFilter::default()
            })
            .await
            .map_err(store_err)?
            .into_iter()
            .next()
            .ok_or_else(|| format!("no session {id}"))?;
        let summaries = self
            .store
            .list_summaries(Some(&ids), None)
            .await
            .map_err(store_err)?;
        let episodes = self
            .store
            .list_episodes(&EpisodeFilter {
                session_ids: Some(ids.clone()),
                triage: None,
            })
            .await
            .map_err(store_err)?;
        let snippets = self
            .store
            .list_snippets(&SnippetFilter {
                session_ids: Some(ids),
                limit: 500,
                ..SnippetFilter::default()
            })
            .await
            .map_err(store_err)?;
        // Share the budget: summaries are cut first, each to a readable length.
        let per_summary = (self.cap() / 2 / summaries.len().max(1)).clamp(200, 2000);
        let summaries: Vec<Value> = summaries
            .iter()
            .map(|x| {
                let (text, cut) = cut_text(x.text.as_deref().unwrap_or(""), per_summary);
                json!({"kind": x.kind, "timestamp": x.timestamp, "line": x.line,
                       "trigger": x.trigger, "pre_tokens": x.pre_tokens,
                       "text": text, "text_truncated": cut})
            })
            .collect();
        let episodes: Vec<Value> = episodes
            .iter()
            .map(|e| {
                json!({"id": e.id, "ordinal": e.ordinal, "start_line": e.start_line,
                       "end_line": e.end_line, "turns": e.turns, "status": e.status,
                       "triage": e.triage, "confidence": e.confidence, "title": e.title})
            })
            .collect();
        let snippets: Vec<Value> = snippets
            .snippets
            .iter()
            .map(|x| json!({"id": x.id, "snippet_type": x.snippet_type, "title": x.title}))
            .collect();
        let mut v = json!({
            "session": session_json(&s),
            "duration_ms": s.duration_ms,
            "ended_at": s.ended_at,
            "end_reason": s.end_reason,
            "version": s.version,
            "tokens": s.tokens,
            "subagents": s.subagents,
            "summaries": summaries,
            "episodes": episodes,
            "snippets": snippets,
        });
        // Still too long: drop list items from the end, saying so.
        for key in ["snippets", "episodes", "summaries"] {
            while v.to_string().chars().count() > self.cap() {
                let Some(list) = v[key].as_array_mut() else {
                    break;
                };
                if list.pop().is_none() {
                    break;
                }
                v["truncated"] = Value::Bool(true);
            }
        }
        Ok(v)
    }

    async fn get_summaries_body(&self, a: SummariesArgs) -> Body {
        if let Some(k) = &a.kind {
            one_of(
                "kind",
                k,
                &["summary", "compact_boundary", "compact_summary"],
            )?;
        }
        let limit = page_size("limit", a.limit, 20, 200)?;
        let offset = a.offset.unwrap_or(0);
        let ids = self.resolve_opt(a.session_id.as_deref()).await?;
        let since = time("since", a.since.as_deref())?;
        let mut all = self
            .store
            .list_summaries(ids.as_deref(), a.kind.as_deref())
            .await
            .map_err(store_err)?;
        if let Some(p) = &a.project {
            let in_project: HashSet<String> = self
                .store
                .list_sessions(&SessionFilter {
                    project: Some(p.clone()),
                    ..SessionFilter::default()
                })
                .await
                .map_err(store_err)?
                .into_iter()
                .map(|s| s.session_id)
                .collect();
            all.retain(|s| in_project.contains(&s.session_id));
        }
        if let Some(t) = &since {
            all.retain(|s| s.timestamp.as_deref().is_some_and(|ts| ts >= t.as_str()));
        }
        let items = slice(&all, offset, limit);
        Ok(page(
            "summaries",
            &items,
            offset.into(),
            all.len() as u64,
            &[],
            self.cap(),
        ))
    }

    async fn query_feedback_body(&self, a: FeedbackArgs) -> Body {
        if let Some(t) = &a.feedback_type {
            one_of(
                "feedback_type",
                t,
                &["message", "tool_denial", "interruption"],
            )?;
        }
        let limit = page_size("limit", a.limit, 50, 500)?;
        let offset = a.offset.unwrap_or(0);
        let all = self
            .store
            .list_feedback(&FeedbackFilter {
                session_ids: self.resolve_opt(a.session_id.as_deref()).await?,
                feedback_type: a.feedback_type,
                project: a.project,
                since: time("since", a.since.as_deref())?,
            })
            .await
            .map_err(store_err)?;
        let items = slice(&all, offset, limit);
        Ok(page(
            "feedback",
            &items,
            offset.into(),
            all.len() as u64,
            &[],
            self.cap(),
        ))
    }

    async fn query_snippets_body(&self, a: SnippetsArgs) -> Body {
        if let Some(t) = &a.snippet_type {
            one_of(
                "snippet_type",
                t,
                &["error_reasoning", "decision_rationale", "learning_pattern"],
            )?;
        }
        let filter = SnippetFilter {
            session_ids: self.resolve_opt(a.session_id.as_deref()).await?,
            snippet_type: a.snippet_type,
            project: a.project,
            tags: a.tags.unwrap_or_default(),
            keyword: a.keyword.filter(|k| !k.is_empty()),
            since: time("start_date", a.start_date.as_deref())?,
            until: time("end_date", a.end_date.as_deref())?,
            limit: page_size("limit", a.limit, 50, 500)?,
            offset: a.offset.unwrap_or(0),
        };
        let p = self.store.list_snippets(&filter).await.map_err(store_err)?;
        let items: Vec<Value> = p.snippets.iter().map(snippet_json).collect();
        let mut v = page(
            "snippets",
            &items,
            u64::from(filter.offset),
            p.total_count as u64,
            &[("success", Value::Bool(true))],
            self.cap(),
        );
        if !p.total_count_exact {
            v["total_count_exact"] = Value::Bool(false);
        }
        Ok(v)
    }

    async fn extract_snippet_body(&self, a: ExtractArgs) -> Body {
        let snippet_type: SnippetType = a.snippet_type.parse().map_err(|e| format!("{e}"))?;
        let session_id = self.resolve(&a.session_id).await?;
        let lines = match (a.source_line_start, a.source_line_end) {
            (Some(s), Some(e)) => Some((s, e)),
            (None, None) => None,
            _ => return Err("give both source_line_start and source_line_end".into()),
        };
        let turns = match (a.start_turn, a.end_turn) {
            (Some(s), Some(e)) => Some((s, e)),
            (None, None) => None,
            _ => return Err("give both start_turn and end_turn".into()),
        };
        let content = match (a.content, lines, turns) {
            (Some(text), _, None) => Content::Text {
                text,
                source_file: a.source_file,
                lines,
            },
            (Some(_), _, Some(_)) => {
                return Err("give either content or a turn range to cut, not both".into())
            }
            (None, Some(_), Some(_)) => {
                return Err("give either a line range or a turn range, not both".into())
            }
            (None, None, None) => {
                return Err("no content: give content, or a line or turn range to cut".into())
            }
            (None, l, t) => {
                let file = match a.source_file {
                    Some(f) => f,
                    None => self
                        .store
                        .main_transcript(&session_id)
                        .await
                        .map_err(store_err)?
                        .ok_or_else(|| format!("session {session_id} has no main transcript"))?,
                };
                // `excerpt` rejects a range that is empty or starts at 0, naming it.
                let sel = match (l, t) {
                    (Some((s, e)), _) => Selection::Lines(s, e),
                    (_, Some((s, e))) => Selection::Turns(s, e),
                    (None, None) => {
                        return Err("no content: give content, or a line or turn range".into())
                    }
                };
                Content::Transcript(file.into(), sel)
            }
        };
        let added = snippet_add::add(
            &self.store,
            &self.cfg.redactor,
            AddRequest {
                session_id,
                snippet_type,
                title: a.title,
                content,
                tags: a.tags.unwrap_or_default(),
                metadata: a.metadata,
            },
        )
        .await
        .map_err(|e| e.to_string())?;
        Ok(json!({
            "success": true,
            "snippet_id": added.id,
            "duplicate": added.id.is_none(),
            "session_id": added.session_id,
            "snippet_type": added.row.snippet_type,
            "title": added.row.title,
            "created_at": added.created_at,
        }))
    }

    async fn transcript_lines_body(&self, a: LinesArgs) -> Body {
        if a.start_line == 0 || a.start_line > a.end_line {
            return Err(format!(
                "invalid range {}:{}: expected 1 <= start_line <= end_line",
                a.start_line, a.end_line
            ));
        }
        let id = self.resolve(&a.session_id).await?;
        let path = self
            .store
            .main_transcript(&id)
            .await
            .map_err(store_err)?
            .ok_or_else(|| format!("session {id} has no main transcript"))?;
        if !std::path::Path::new(&path).is_file() {
            return Err(format!(
                "the transcript {path} is gone (Claude Code deletes transcripts after 30 days); \
                 its stored text is still available through get_conversation"
            ));
        }
        let redactor = self.cfg.redactor.clone();
        let p = path.clone();
        let sel = Selection::Lines(a.start_line, a.end_line);
        let read = crate::run::blocking(move || {
            excerpt::excerpt(std::path::Path::new(&p), sel, &redactor)
        })
        .await
        .map_err(|e| format!("reading the transcript failed: {e}"))?;
        let ex = match read {
            Ok(ex) => ex,
            // Lines that exist but hold only bookkeeping are an answer, not an error.
            Err(SourceError::Empty { .. }) => {
                return Ok(json!({
                    "session_id": id,
                    "source_file": path,
                    "start_line": a.start_line,
                    "end_line": a.end_line,
                    "text": "",
                    "note": "these lines hold only metadata, progress, thinking or unparseable lines",
                    "truncated": false,
                }))
            }
            Err(e) => return Err(e.to_string()),
        };
        let (text, truncated) = cut_text(&ex.content, self.cap().saturating_sub(400));
        Ok(json!({
            "session_id": id,
            "source_file": path,
            "start_line": ex.line_start,
            "end_line": ex.line_end,
            "lines_in_file": ex.lines_in_file,
            "text": text,
            "truncated": truncated,
        }))
    }

    async fn conversation_body(&self, a: ConversationArgs) -> Body {
        let id = self.resolve(&a.session_id).await?;
        let budget = self.cap().saturating_sub(300);
        let max = a.max_chars.unwrap_or(budget).min(budget);
        if max == 0 {
            return Err("max_chars must be at least 1".into());
        }
        let rows = self
            .store
            .conversation_rows(&id, false)
            .await
            .map_err(store_err)?;
        let c = crate::conversation::from_stored(
            rows.iter()
                .map(|r| (r.kind.as_str(), r.text.as_str(), r.agent_id.as_deref())),
            Some(max),
        );
        Ok(json!({
            "session_id": id,
            "text": c.text,
            "turns": c.turns,
            "total_chars": c.total_chars,
            "dropped_chars": c.dropped_chars,
        }))
    }

    async fn list_episodes_body(&self, a: EpisodesArgs) -> Body {
        if let Some(t) = &a.triage {
            one_of(
                "triage",
                t,
                &[
                    "routine",
                    "error_recovery",
                    "user_correction",
                    "pivot",
                    "design_decision",
                ],
            )?;
        }
        let limit = page_size("limit", a.limit, 50, 500)?;
        let offset = a.offset.unwrap_or(0);
        let all = self
            .store
            .list_episodes(&EpisodeFilter {
                session_ids: self.resolve_opt(a.session_id.as_deref()).await?,
                triage: a.triage,
            })
            .await
            .map_err(store_err)?;
        let items = slice(&all, offset, limit);
        Ok(page(
            "episodes",
            &items,
            offset.into(),
            all.len() as u64,
            &[],
            self.cap(),
        ))
    }
}
