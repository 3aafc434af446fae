//! Where each kind's documents are in PostgreSQL: the table, its vector, its text, its key and
//! the order its newest matches are walked in (`sql::pg_union` builds one `SELECT` from each).

use super::{SearchKind, SUMMARY_BOOST};

/// Where each kind lives in PostgreSQL: table alias, session, time, key columns, ref, text.
pub(super) struct PgKind {
    /// Where the vectors are (`t`).
    pub(super) from: &'static str,
    /// Where the texts are (`t`): for messages not where their vectors are (migration 0022).
    pub(super) text_from: &'static str,
    /// Newest first, by the table's key (a message's file was found after the files before it,
    /// its lines after the lines before them): the order the candidates are taken in.
    pub(super) newest: &'static str,
    pub(super) session: &'static str,
    pub(super) ts: &'static str,
    /// file_id, generation, line_no, seq, ref_id.
    pub(super) key: [&'static str; 5],
    pub(super) text: &'static str,
    pub(super) boost: f64,
    /// The vector column (`t`).
    pub(super) vec: &'static str,
    /// Whether a row's session is its file's (messages keep none): a narrow project filters
    /// such rows by their files (`sql::pg_push_filters`).
    pub(super) file_scoped: bool,
}

/// The text a tool call's vector was made of (`extract::tools::call_text`).
pub(super) const PG_CALL_TEXT: &str = "t.name || E'\\n' || t.target";

/// Where each kind's documents are: one place per kind but tools, whose calls and results are
/// two vectors of one row (each at its own line; `seq` 0 and 1 tell them apart).
pub(super) fn pg_sources(k: SearchKind) -> Vec<PgKind> {
    match k {
        SearchKind::Tool => [
            ("t.line_no", "0::bigint", PG_CALL_TEXT, "t.call_vec"),
            ("t.result_line", "1::bigint", "t.result", "t.result_vec"),
        ]
        .into_iter()
        .map(|(line, seq, text, vec)| PgKind {
            from: "tool_uses t",
            text_from: "tool_uses t",
            newest: "t.id DESC",
            session: "t.session_id",
            ts: "t.ts",
            key: ["t.file_id", "NULL::bigint", line, seq, "t.id"],
            text,
            boost: 1.0,
            vec,
            file_scoped: false,
        })
        .collect(),
        k => vec![pg_kind(k)],
    }
}

pub(super) fn pg_kind(k: SearchKind) -> PgKind {
    // `text`: the text the row's search_vec was made of (excerpts are cut from it).
    match k {
        SearchKind::Message => PgKind {
            from: "message_search t",
            text_from: "messages t",
            newest: "t.file_id DESC, t.generation DESC, t.line_no DESC, t.seq DESC",
            // A message's session is its file's (messages keep no copy: issue 13).
            session: "(SELECT tf.session_id FROM files tf WHERE tf.id = t.file_id)",
            ts: "t.ts",
            key: [
                "t.file_id",
                "t.generation",
                "t.line_no",
                "t.seq",
                "NULL::bigint",
            ],
            text: "t.text",
            boost: 1.0,
            vec: "t.search_vec",
            file_scoped: true,
        },
        SearchKind::Summary => line_row("summaries t", "t.text", SUMMARY_BOOST),
        SearchKind::Feedback => line_row(
            "feedback t",
            "t.content || COALESCE(E'\\n' || t.reason, '')",
            1.0,
        ),
        SearchKind::Snippet => PgKind {
            from: "snippets t",
            text_from: "snippets t",
            newest: "t.id DESC",
            session: "t.session_id",
            ts: "t.created_at",
            key: [
                "NULL::bigint",
                "NULL::bigint",
                "NULL::bigint",
                "NULL::bigint",
                "t.id",
            ],
            text: "t.title || E'\\n' || t.content",
            boost: 1.0,
            vec: "t.search_vec",
            file_scoped: false,
        },
        // Two places (`pg_sources`); the first names the table.
        SearchKind::Tool => pg_sources(SearchKind::Tool).remove(0),
    }
}

/// A kind whose rows are one per line of a file, with an id, a session and a time of their own
/// (summaries, feedback).
fn line_row(table: &'static str, text: &'static str, boost: f64) -> PgKind {
    PgKind {
        from: table,
        text_from: table,
        newest: "t.id DESC",
        session: "t.session_id",
        ts: "t.ts",
        key: [
            "t.file_id",
            "NULL::bigint",
            "t.line_no",
            "NULL::bigint",
            "t.id",
        ],
        text,
        boost,
        vec: "t.search_vec",
        file_scoped: false,
    }
}
