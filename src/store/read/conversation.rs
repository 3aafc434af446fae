//! A session's conversation: its user and assistant messages that carry text, in order.

use super::super::sql::Sql;
use super::super::{Store, StoreError};

/// One stored message of a session's conversation.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ConversationRow {
    /// `user` or `assistant`.
    pub kind: String,
    /// The message text (redacted when stored).
    pub text: String,
    /// The sub-agent it belongs to (`None`: the main transcript).
    pub agent_id: Option<String>,
}

impl Store {
    /// The user and assistant messages of a session that carry text, in conversation order:
    /// the main transcript (without its sidechain lines: a sub-agent's) by line (by time when several machines hold copies of it), with
    /// `subagents` also the sub-agents' messages, all by time (a line without a timestamp
    /// after the timed ones). A file's generations are its copies (each line stored once).
    /// Injected (meta) lines are left out.
    pub async fn conversation_rows(
        &self,
        session_id: &str,
        subagents: bool,
    ) -> Result<Vec<ConversationRow>, StoreError> {
        // The main transcript held by several machines, or read in several generations (cut
        // short and grown back), is merged from its copies by time (`store::copies`); held by
        // one in one generation, its line order is the truth.
        let copies = Sql::new(
            "SELECT COUNT(*) + COALESCE(MAX(generation), 1) - 1 FROM files \
             WHERE session_id = $1 AND kind = 'main'",
        )
        .arg(session_id);
        let by_time = subagents || self.fetch_i64(&copies).await? > 1;
        let order = if by_time {
            "CASE WHEN m.ts IS NULL THEN 1 ELSE 0 END, m.ts, f.kind DESC, m.line_no, m.file_id, \
             m.generation, m.seq"
        } else {
            "m.file_id, m.generation, m.line_no, m.seq"
        };
        // Old transcripts (Claude Code 1.0.x) keep a sub-agent's lines in the main file, marked
        // `isSidechain`: they are the sub-agent's, as the newer layout's own files are.
        let agents = if subagents {
            ""
        } else {
            " AND f.kind = 'main' AND NOT m.is_sidechain"
        };
        let text = self.backend().stored_text("m.text");
        let q = Sql::new(format!(
            "SELECT m.kind, {text} AS text, CASE WHEN f.kind = 'agent' THEN f.agent_id \
             WHEN m.is_sidechain THEN COALESCE(m.agent_id, 'sidechain') END AS agent_id \
             FROM messages m JOIN files f ON f.id = m.file_id \
             WHERE f.session_id = $1 AND m.kind IN ('user', 'assistant') AND m.text IS NOT NULL \
             AND NOT m.is_meta{agents} ORDER BY {order}"
        ))
        .arg(session_id);
        self.fetch_all(&q.not_persistent()).await
    }

    /// Whether a sub-agent of the session said anything (so that a door showing an empty main
    /// conversation can point at them). Stops at the first such message.
    pub async fn has_subagent_conversation(&self, session_id: &str) -> Result<bool, StoreError> {
        let q = Sql::new(
            "SELECT CAST(1 AS BIGINT) FROM messages m JOIN files f ON f.id = m.file_id \
             WHERE f.session_id = $1 AND (f.kind = 'agent' OR m.is_sidechain) \
             AND m.kind IN ('user', 'assistant') \
             AND m.text IS NOT NULL AND NOT m.is_meta LIMIT 1",
        )
        .arg(session_id);
        Ok(self.fetch_optional::<(i64,)>(&q).await?.is_some())
    }
}
