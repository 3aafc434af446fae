//! The one tool that writes: `extract_snippet`, through the query layer's snippet use case
//! (the same as `gleaner snippet add`).

use rmcp::{tool, tool_router};
use serde_json::json;

use super::args::{ExtractArgs, Parameters};
use super::{done, store_err, Body, Gleaner};
use crate::query::snippet_add::{self, AddRequest, Content};
use crate::query::{self};
use crate::snippet::excerpt::Selection;
use crate::snippet::SnippetType;

type Result = std::result::Result<rmcp::model::CallToolResult, rmcp::ErrorData>;

#[tool_router(router = snippet_router, vis = "pub(super)")]
impl Gleaner {
    #[tool(
        description = "Store a snippet worth keeping from a session: give its content, or cut it from the transcript by source_line_start/source_line_end or start_turn/end_turn. The content is redacted, then must be 100 B to 10 KB; the title at most 256 characters. Returns {success, snippet_id, session_id, snippet_type, title, created_at}.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn extract_snippet(&self, Parameters(a): Parameters<ExtractArgs>) -> Result {
        done(self.extract_snippet_body(a).await)
    }
}

impl Gleaner {
    async fn extract_snippet_body(&self, a: ExtractArgs) -> Body {
        let snippet_type = query::choice::<SnippetType>("snippet_type", &a.snippet_type)
            .map_err(|e| e.to_string())?;
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
            // Written-out content cites no lines: the ones given would not be where it comes
            // from.
            (Some(_), Some(_), _) => {
                return Err("give either content or a line range to cut, not both".into())
            }
            (Some(text), None, None) => Content::Text {
                text,
                source_file: a.source_file,
                lines: None,
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
}
