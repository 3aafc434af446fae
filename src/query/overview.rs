//! One session's overview: what MCP `get_session`, `gleaner show` and `gleaner show --json`
//! read. The three doors share this view, so they never disagree on what a session holds.

use serde_json::{json, Value};

use super::Error;
use crate::store::{
    EpisodeFilter, EpisodeListing, Page, SessionListing, SnippetFilter, SnippetListing, Store,
    SummaryFilter, SummaryListing, TouchedFile, MAX_TOUCHED,
};

/// Most summaries, episodes and snippets an overview lists (it says `truncated` past them).
pub const OVERVIEW_ITEMS: u32 = 100;

/// A session with its summaries (oldest first), episodes (oldest first) and snippets.
#[derive(Debug, Clone)]
pub struct SessionOverview {
    /// The session, as every listing shows it.
    pub session: SessionListing,
    /// Its summaries, oldest first.
    pub summaries: Vec<SummaryListing>,
    /// Its episodes, oldest first.
    pub episodes: Vec<EpisodeListing>,
    /// Snippets kept from it.
    pub snippets: Vec<SnippetListing>,
    /// The files its tools read, edited and wrote, most changed first.
    pub files: Vec<TouchedFile>,
    /// The shell line that goes back into it (`None` without a working directory).
    pub resume: Option<String>,
    /// More items than [`OVERVIEW_ITEMS`] of some kind exist.
    pub truncated: bool,
}

/// The overview of the session `id` (a full id: resolve a prefix first), or `None`.
pub async fn session_overview(store: &Store, id: &str) -> Result<Option<SessionOverview>, Error> {
    let Some(session) = store.session(id).await? else {
        return Ok(None);
    };
    let ids = Some(vec![id.to_string()]);
    let items = Page {
        limit: OVERVIEW_ITEMS,
        offset: 0,
    };
    let summaries = store
        .summaries(
            &SummaryFilter {
                session_ids: ids.clone(),
                oldest_first: true,
                ..SummaryFilter::default()
            },
            items,
        )
        .await?;
    let episodes = store
        .episodes(
            &EpisodeFilter {
                session_ids: ids.clone(),
                ..EpisodeFilter::default()
            },
            items,
        )
        .await?;
    let snippets = store
        .list_snippets(&SnippetFilter {
            session_ids: ids,
            limit: OVERVIEW_ITEMS,
            ..SnippetFilter::default()
        })
        .await?;
    let (files, more_files) = store.touched_files(id, MAX_TOUCHED).await?;
    let truncated = summaries.has_more || episodes.has_more || snippets.has_more || more_files;
    let resume = resume_line(session.cwd.as_deref(), id);
    let mut episodes = episodes.items;
    // Listed newest first; a session reads oldest first.
    episodes.reverse();
    Ok(Some(SessionOverview {
        session,
        summaries: summaries.items,
        episodes,
        snippets: snippets.snippets,
        files,
        resume,
        truncated,
    }))
}

/// `cd <cwd> && claude --resume <id>`, the directory quoted for a POSIX shell: Claude Code
/// finds a session by the project folder of the directory it is started in, so the line must
/// run there. `None` without a working directory (or one a shell cannot be given: a NUL).
pub fn resume_line(cwd: Option<&str>, session_id: &str) -> Option<String> {
    let cwd = cwd.filter(|c| !c.is_empty())?;
    let dir = shlex::try_quote(cwd).ok()?;
    let id = shlex::try_quote(session_id).ok()?;
    Some(format!("cd {dir} && claude --resume {id}"))
}

/// `s` cut to `max` characters, and whether it was cut.
pub fn cut_text(s: &str, max: usize) -> (String, bool) {
    if s.chars().count() <= max {
        (s.to_string(), false)
    } else {
        (s.chars().take(max).collect(), true)
    }
}

impl SessionOverview {
    /// The JSON of the overview within `cap` characters: summaries share half of it (each cut
    /// to 200-2,000 characters), then items are dropped from the end (files touched, snippets,
    /// episodes, summaries), saying `truncated`.
    pub fn to_json(&self, cap: usize) -> Value {
        let per_summary = (cap / 2 / self.summaries.len().max(1)).clamp(200, 2000);
        let summaries: Vec<Value> = self
            .summaries
            .iter()
            .map(|x| {
                let (text, cut) = cut_text(x.text.as_deref().unwrap_or(""), per_summary);
                json!({"kind": x.kind, "timestamp": x.timestamp, "line": x.line,
                       "trigger": x.trigger, "pre_tokens": x.pre_tokens,
                       "text": text, "text_truncated": cut})
            })
            .collect();
        let episodes: Vec<Value> = self
            .episodes
            .iter()
            .map(|e| {
                json!({"id": e.id, "ordinal": e.ordinal, "start_line": e.start_line,
                       "end_line": e.end_line, "turns": e.turns, "status": e.status,
                       "triage": e.triage, "confidence": e.confidence, "title": e.title})
            })
            .collect();
        let snippets: Vec<Value> = self
            .snippets
            .iter()
            .map(|x| json!({"id": x.id, "snippet_type": x.snippet_type, "title": x.title}))
            .collect();
        let mut v = json!({
            "session": self.session,
            "resume": self.resume,
            "summaries": summaries,
            "episodes": episodes,
            "snippets": snippets,
            "files_touched": self.files,
        });
        if self.truncated {
            v["truncated"] = Value::Bool(true);
        }
        for key in ["files_touched", "snippets", "episodes", "summaries"] {
            while v.to_string().chars().count() > cap {
                let Some(list) = v[key].as_array_mut() else {
                    break;
                };
                if list.pop().is_none() {
                    break;
                }
                v["truncated"] = Value::Bool(true);
            }
        }
        v
    }
}
