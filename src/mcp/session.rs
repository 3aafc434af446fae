//! The tools about one session: its overview, its conversation, and lines of its transcript.

use rmcp::{tool, tool_router};
use serde_json::{json, Value};

use super::args::{ConversationArgs, LinesArgs, Parameters, SessionArgs};
use super::{cut_text, done, store_err, Body, Gleaner};
use crate::query;
use crate::query::overview::session_overview;
use crate::snippet::excerpt::{Selection, SourceError};

type Result = std::result::Result<rmcp::model::CallToolResult, rmcp::ErrorData>;

#[tool_router(router = session_router, vis = "pub(super)")]
impl Gleaner {
    #[tool(
        description = "A compact overview of one session: metadata and counts, the shell line that resumes it (resume: cd <cwd> && claude --resume <id>), its summaries, its episodes with their labels (error_recovery, user_correction, pivot, design_decision, routine), the titles of its snippets and the files its tools read, edited and wrote (files_touched). Read it before asking for more (get_conversation, get_transcript_lines, query_snippets).",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_session(&self, Parameters(a): Parameters<SessionArgs>) -> Result {
        done(self.get_session_body(a).await)
    }

    #[tool(
        description = "Lines of a session's main transcript rendered readably (user and assistant text, tool calls and results, each labelled with its line number), secrets redacted. Use it to read the context of a search result or a snippet by line. A range past the end is cut to the file's last line (the answer says so and gives lines_in_file).",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_transcript_lines(&self, Parameters(a): Parameters<LinesArgs>) -> Result {
        done(self.transcript_lines_body(a).await)
    }

    #[tool(
        description = "A session's conversation as plain text (User:/Assistant: turns, tool traffic left out), from the stored messages, so it works after the transcript is deleted. With max_chars, the last characters are kept (cut at a paragraph boundary); with offset (0: the beginning), it reads forward a page at a time and next_offset says where the next page starts.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_conversation(&self, Parameters(a): Parameters<ConversationArgs>) -> Result {
        done(self.conversation_body(a).await)
    }
}

impl Gleaner {
    async fn get_session_body(&self, a: SessionArgs) -> Body {
        let id = self.resolve(&a.session_id).await?;
        let overview = session_overview(&self.store, &id)
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("no session {id}"))?;
        Ok(overview.to_json(self.cap()))
    }

    async fn transcript_lines_body(&self, a: LinesArgs) -> Body {
        let names = ("start_line", "end_line");
        // The range's own shape first, before the session is looked up.
        query::transcript::line_range(names, (a.start_line, a.end_line), "", u64::MAX)?;
        let id = self.resolve(&a.session_id).await?;
        // Only a file Gleaner tracks for this session is read: its main transcript, or the
        // sub-agent's asked for.
        let files = self.store.session_files(&id).await.map_err(store_err)?;
        let agent = a.agent_id.as_deref();
        let file = query::transcript_copy(&files, &self.cfg.machine_id, agent).ok_or_else(
            || match agent {
                Some(g) => format!("session {id} has no sub-agent {g}"),
                None => format!("session {id} has no main transcript"),
            },
        )?;
        let path = file.path.clone();
        // The file on disk, else the archive's copy (deleted, or another machine's).
        let Some(source) = query::transcript::open(&self.store, file, &self.cfg.machine_id)
            .await
            .map_err(store_err)?
        else {
            return Err(format!(
                "{} through get_conversation",
                query::unreadable_copy(file, &self.cfg.machine_id)
            ));
        };
        let archived = source.is_archived();
        let known = u64::try_from(file.lines).unwrap_or(0);
        let range = query::transcript::line_range(names, (a.start_line, a.end_line), &path, known)?;
        let (end, note) = (range.end, range.note);
        let redactor = self.cfg.redactor.clone();
        let sel = Selection::Lines(a.start_line, end);
        let read = crate::run::blocking(move || source.excerpt(sel, &redactor))
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
                    "end_line": end,
                    "lines_in_file": known,
                    "text": "",
                    "note": note.unwrap_or_else(|| "these lines hold only metadata, progress, \
                        thinking or unparseable lines".into()),
                    "truncated": false,
                }))
            }
            Err(e) => return Err(e.to_string()),
        };
        let cap = self.cap();
        let mut budget = cap.saturating_sub(400);
        loop {
            let (text, last, next) = cut_at_line(&ex.content, budget);
            let mut v = json!({
                "session_id": id,
                "source_file": path,
                "start_line": ex.line_start,
                "end_line": last.unwrap_or(ex.line_end),
                "lines_in_file": known.max(ex.lines_in_file),
                "text": text,
                "truncated": next.is_some(),
            });
            if let Some(n) = next {
                v["next_start_line"] = json!(n);
            }
            if let Some(g) = agent {
                v["agent_id"] = json!(g);
            }
            if archived {
                v["from_archive"] = Value::Bool(true);
            }
            if let Some(n) = &note {
                v["note"] = Value::String(n.clone());
            }
            match over_cap(&v, cap) {
                Some(over) if budget > 0 => budget = budget.saturating_sub(over),
                _ => return Ok(v),
            }
        }
    }

    async fn conversation_body(&self, a: ConversationArgs) -> Body {
        let id = self.resolve(&a.session_id).await?;
        let budget = self.cap().saturating_sub(300);
        let max = a.max_chars.unwrap_or(budget).min(budget);
        if max == 0 {
            return Err("max_chars must be at least 1".into());
        }
        let subagents = a.subagents.unwrap_or(false);
        let rows = self
            .store
            .conversation_rows(&id, subagents)
            .await
            .map_err(store_err)?;
        let cap = self.cap();
        let mut max = max;
        let mut v = match a.offset {
            Some(offset) => {
                let c = crate::conversation::from_stored(
                    rows.iter()
                        .map(|r| (r.kind.as_str(), r.text.as_str(), r.agent_id.as_deref())),
                    None,
                );
                if offset > c.total_chars {
                    return Err(format!(
                        "offset {offset} is past the end of the conversation ({} characters)",
                        c.total_chars
                    ));
                }
                loop {
                    let (text, next) = c.window(offset, max);
                    let v = json!({
                        "session_id": id,
                        "text": text,
                        "turns": c.turns,
                        "total_chars": c.total_chars,
                        "offset": offset,
                        "next_offset": next,
                    });
                    match over_cap(&v, cap) {
                        Some(over) if max > 1 => max = max.saturating_sub(over).max(1),
                        _ => break v,
                    }
                }
            }
            None => loop {
                let c = crate::conversation::from_stored(
                    rows.iter()
                        .map(|r| (r.kind.as_str(), r.text.as_str(), r.agent_id.as_deref())),
                    Some(max),
                );
                let v = json!({
                    "session_id": id,
                    "text": c.text,
                    "turns": c.turns,
                    "total_chars": c.total_chars,
                    "dropped_chars": c.dropped_chars,
                });
                match over_cap(&v, cap) {
                    Some(over) if max > 1 => max = max.saturating_sub(over).max(1),
                    _ => break v,
                }
            },
        };
        if v["turns"] == 0 {
            let in_subagents = !subagents
                && self
                    .store
                    .has_subagent_conversation(&id)
                    .await
                    .map_err(store_err)?;
            v["note"] = json!(if in_subagents {
                "the main transcript holds no conversation; its sub-agents do: call again with \
                 subagents: true"
                    .to_string()
            } else {
                crate::query::no_conversation(&self.store, &id)
                    .await
                    .map_err(store_err)?
            });
        }
        Ok(v)
    }
}

/// An excerpt (`[Ln] ...` blocks joined by `\n`) cut to at most `max` characters at a block's
/// end: the text, the last line it holds whole, and where the next call starts (the first
/// line left out) when it was cut. A first block longer than `max` is cut inside (then the
/// next call starts after it).
fn cut_at_line(content: &str, max: usize) -> (String, Option<u64>, Option<u64>) {
    let (text, cut) = cut_text(content, max);
    if !cut {
        return (text, None, None);
    }
    let line_at = |s: &str| -> Option<u64> {
        let rest = s.strip_prefix("[L")?;
        rest[..rest.find(']')?].parse().ok()
    };
    // Block starts: the text's start and every `\n[L<n>]`.
    let mut starts: Vec<(usize, u64)> = line_at(content).map(|n| (0, n)).into_iter().collect();
    for (i, _) in content.match_indices("\n[L") {
        if let Some(n) = line_at(&content[i + 1..]) {
            starts.push((i + 1, n));
        }
    }
    let kept = text.len();
    // Block i ends where block i+1 starts (its `\n` left out), the last at the end.
    let ends: Vec<usize> = starts
        .iter()
        .skip(1)
        .map(|(at, _)| at - 1)
        .chain(std::iter::once(content.len()))
        .collect();
    let whole = ends.iter().take_while(|e| **e <= kept).count();
    if whole > 0 && whole < starts.len() {
        let text = content[..ends[whole - 1]].to_string();
        return (text, Some(starts[whole - 1].1), Some(starts[whole].1));
    }
    // The first block alone is longer than the room: cut inside; the next call starts after.
    let line = starts.first().map(|(_, n)| *n);
    let next = starts.get(1).map(|(_, n)| *n).or(line.map(|n| n + 1));
    (text, line, next)
}

/// By how many characters `v`, serialized, goes past `cap` (with some room, so that one more
/// cut is enough), if it does. Why: a text cut to the budget grows when serialized (every
/// newline and quote is escaped), and the cap is on what the client receives.
fn over_cap(v: &Value, cap: usize) -> Option<usize> {
    let n = v.to_string().chars().count();
    (n > cap).then(|| n - cap + 64)
}

#[cfg(test)]
mod tests {
    use super::cut_at_line;

    #[test]
    fn an_excerpt_is_cut_after_a_whole_line_and_says_where_to_go_on() {
        let ex = "[L1] user: hello\n[L2] assistant: a longer answer\n[L5] tool Bash: ls";
        assert_eq!(cut_at_line(ex, 1000), (ex.to_string(), None, None));
        let (text, last, next) = cut_at_line(ex, 40);
        assert_eq!(text, "[L1] user: hello");
        assert_eq!((last, next), (Some(1), Some(2)));
        let (text, last, next) = cut_at_line(ex, 55);
        assert_eq!(text, "[L1] user: hello\n[L2] assistant: a longer answer");
        assert_eq!((last, next), (Some(2), Some(5)));
        // A first line longer than the room is cut inside; the next call starts after it.
        let (text, last, next) = cut_at_line(ex, 8);
        assert_eq!(text, "[L1] use");
        assert_eq!((last, next), (Some(1), Some(2)));
    }
}
