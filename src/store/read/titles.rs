//! Fallback titles: a name for every session of a page that has none from a real prompt.

use super::super::sql::Sql;
use super::super::{Store, StoreError};
use super::sessions::SessionListing;

impl Store {
    /// A title for each session of a page that has none from a real prompt (a sub-agent's
    /// session, one that only ran commands, one resumed from a summary): the first line of its
    /// first `summary`, else of the first prompt given to one of its sub-agents, else of its
    /// first assistant text; none only when it holds no text at all. (A quarter of the
    /// sessions of the real corpus had no title.) Looked up for the page only: each is a walk
    /// of one session's rows that stops at the first hit.
    pub(super) async fn fill_titles(&self, items: &mut [SessionListing]) -> Result<(), StoreError> {
        // SQLite may keep a message's text as a frame (`store::packed_text`).
        let m_text = self.backend().stored_text("m.text");
        for s in items.iter_mut().filter(|s| s.title.is_none()) {
            let text = |kind: &str, cond: &str| {
                format!(
                    "(SELECT {m_text} FROM files f JOIN messages m ON m.file_id = f.id \
                     WHERE f.session_id = $1 AND m.kind = '{kind}' AND NOT m.is_meta \
                     AND m.text IS NOT NULL AND m.text <> '' AND {cond} \
                     ORDER BY f.id, m.generation, m.line_no, m.seq LIMIT 1)"
                )
            };
            // The compaction summariser's prompt is Claude Code's instruction, not a task.
            let plain = format!(
                "{m_text} NOT LIKE '<%' AND {m_text} NOT LIKE '[Request interrupted%' \
                 AND (f.agent_id IS NULL OR f.agent_id NOT LIKE 'acompact%')"
            );
            let q = Sql::new(format!(
                "SELECT COALESCE((SELECT text FROM summaries WHERE session_id = $1 \
                 AND kind = 'summary' AND text IS NOT NULL AND text <> '' ORDER BY id LIMIT 1), \
                 {}, {}, {})",
                text("user", &plain),
                text("assistant", &plain),
                // A session that only ran commands is named by its first one.
                text("user", &format!("{m_text} LIKE '%<command-name>%'")),
            ))
            .arg(s.session_id.as_str());
            let found: Option<(Option<String>,)> = self.fetch_optional(&q).await?;
            s.title = found.and_then(|(t,)| t).and_then(|t| title_from(&t));
        }
        Ok(())
    }
}

/// The first line of `text` as a title; a slash command's tags give its name (`/exit`).
fn title_from(text: &str) -> Option<String> {
    let text = match (text.find("<command-name>"), text.find("</command-name>")) {
        (Some(a), Some(b)) if a < b => &text[a + "<command-name>".len()..b],
        _ => text,
    };
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(crate::extract::title_line)
}
