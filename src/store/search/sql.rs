//! The SQL of a search, built from the parsed query: the user's words only ever travel as bound
//! values.

use super::pg_kind::{pg_kind, pg_sources, PgKind, PG_CALL_TEXT};
use super::{
    tools_last, Query, Ranked, SearchFilter, SearchKind, COUNT_CAP, PG_RANKED_CANDIDATES,
    RANKED_CANDIDATES, START, STOP, SUMMARY_BOOST,
};
use crate::extract::lexemes::{accented_lexeme, lexeme};
use crate::store::read::{push_origin_filter, push_project_filter};
use crate::store::sql::{Backend, Sql};

/// The kinds a search covers.
fn kinds(f: &SearchFilter) -> Vec<SearchKind> {
    if f.kinds.is_empty() {
        SearchKind::ALL.to_vec()
    } else {
        SearchKind::ALL
            .into_iter()
            .filter(|k| f.kinds.contains(k))
            .collect()
    }
}

/// Whether a search for messages but not feedback also takes the feedback rows that are human
/// prompts: a prompt is indexed once, as feedback (one hit per line), and is a message too.
fn prompts_as_messages(f: &SearchFilter) -> bool {
    let ks = kinds(f);
    ks.contains(&SearchKind::Message) && !ks.contains(&SearchKind::Feedback)
}

/// ` AND` clauses for the session, project and time filters.
fn push_filters<'a>(q: &mut Sql<'a>, f: &'a SearchFilter, session: &str, ts: &str) {
    if let Some(p) = &f.project {
        q.push(&format!(" AND {session} IN ("));
        push_project_sessions(q, p);
        q.push(")");
    }
    push_other_filters(q, f, session, ts);
}

/// `SELECT` of the sessions of the projects `project` names.
fn push_project_sessions<'a>(q: &mut Sql<'a>, project: &'a str) {
    q.push("SELECT ss.session_id FROM sessions ss WHERE 1 = 1");
    push_project_filter(q, project, "ss.project", "ss.cwd");
}

/// ` AND` clauses for the session and time filters (not the project).
fn push_other_filters<'a>(q: &mut Sql<'a>, f: &'a SearchFilter, session: &str, ts: &str) {
    if let Some(ids) = &f.session_ids {
        q.push(" AND ").push_in(session, ids);
    }
    push_origin_filter(q, &f.origin, session);
    if let Some(s) = &f.since {
        q.push(&format!(" AND {ts} >= ")).push_bind(s.as_str());
    }
    if let Some(u) = &f.until {
        q.push(&format!(" AND {ts} < ")).push_bind(u.as_str());
    }
}

/// A narrow project names at most this many sessions: searched through the list of its rows
/// ([`pg_push_filters`], [`sqlite_tool_matches`]), not by looking up each match's session.
pub(super) const NARROW_PROJECT: i64 = 1_000;

/// How many sessions the search's project names, counted up to [`NARROW_PROJECT`] + 1.
pub(super) fn project_sessions(project: &str) -> Sql<'_> {
    let mut q = Sql::new("SELECT COUNT(*) FROM (");
    push_project_sessions(&mut q, project);
    q.push(&format!(" LIMIT {}) p", NARROW_PROJECT + 1));
    q
}

/// PostgreSQL: the filters of kind `p`. A narrow project (`narrow`: at most
/// [`NARROW_PROJECT`] sessions) is given as an array of its sessions (a message's: of their
/// files), which the planner intersects with the full-text match in the indexes before it reads
/// a row (`BitmapAnd`): on the 5 GB store a project's tool results matching "error" took 11 ms
/// instead of 96, its messages 9 instead of 33. A broad one stays a semi-join: walking the
/// word's matches finds its hits soon, where listing the project's rows would cost more
/// (63 ms instead of 12 for a project of nearly every session).
fn pg_push_filters<'a>(q: &mut Sql<'a>, f: &'a SearchFilter, p: &PgKind, narrow: bool) {
    match (&f.project, narrow) {
        (Some(project), true) => {
            let (column, inner, close) = match p.file_scoped {
                true => (
                    "t.file_id",
                    "SELECT sf.id FROM files sf WHERE sf.session_id IN (",
                    ")))",
                ),
                false => ("t.session_id", "", "))"),
            };
            q.push(&format!(" AND {column} = ANY(ARRAY({inner}"));
            push_project_sessions(q, project);
            q.push(close);
            push_other_filters(q, f, p.session, p.ts);
        }
        _ => push_filters(q, f, p.session, p.ts),
    }
}

/// The session of SQLite search document `d` (a table alias): a message's is its file's (its
/// `search_docs` row keeps none, as `messages` keeps none: migration 0008), the other kinds
/// carry their own.
fn sqlite_doc_session(d: &str) -> String {
    format!(
        "(CASE WHEN {d}.kind = 'message' THEN (SELECT sf.session_id FROM files sf \
         WHERE sf.id = {d}.file_id) ELSE {d}.session_id END)"
    )
}

/// The time of SQLite search document `d`: a message's is its row's (its `search_docs` row
/// keeps none since migration 0011: 24 bytes on each of tens of thousands of rows), found by
/// the key the document carries; the other kinds carry their own.
fn sqlite_doc_ts(d: &str) -> String {
    format!(
        "(CASE WHEN {d}.kind = 'message' THEN (SELECT sm.ts FROM messages sm \
         WHERE sm.file_id = {d}.file_id AND sm.generation = {d}.generation \
         AND sm.line_no = {d}.line_no AND sm.seq = {d}.seq) ELSE {d}.ts END)"
    )
}

/// One page of the ranked results (best first) as [`Ranked`] rows. On SQLite a document's
/// session and time are looked up for the page only, after ranking (each is a lookup in
/// another table, and a common word matches thousands of documents).
///
/// `indexes`: which sides it reads ([`indexes`], or one of them: the caller reads what tools
/// did only for a page past every other kind's hits). `narrow`: whether the project is narrow
/// ([`NARROW_PROJECT`]).
pub(super) fn ranked<'a>(
    backend: Backend,
    f: &'a SearchFilter,
    limit: i64,
    offset: i64,
    indexes: (bool, bool),
    narrow: bool,
) -> Sql<'a> {
    let mut q = match backend {
        Backend::Sqlite => {
            // Whether a feedback hit is a human prompt (then a message too), for the page
            // only: a lookup by the row's key.
            let mut q = Sql::new(format!(
                "SELECT h.doc_id, h.kind, {} AS session_id, {} AS ts, h.file_id, h.generation, \
                 h.line_no, h.seq, h.ref_id, h.score, CASE WHEN h.kind = 'feedback' THEN \
                 EXISTS (SELECT 1 FROM feedback pf WHERE pf.id = h.ref_id \
                 AND pf.feedback_type = 'message') ELSE 0 END AS prompt FROM (SELECT * FROM (",
                sqlite_doc_session("h"),
                sqlite_doc_ts("h"),
            ));
            // Each index's newest matches only (the index walks them newest first and stops):
            // what a page costs then depends on the page, not on how common the words are.
            let (docs, tools) = indexes;
            if docs {
                q.push(&format!(
                    "SELECT * FROM (SELECT d.id AS doc_id, d.kind, d.session_id, d.ts, \
                     d.file_id, d.generation, d.line_no, d.seq, d.ref_id, -bm25(search_fts) * \
                     (CASE d.kind WHEN 'summary' THEN {SUMMARY_BOOST:.2} ELSE 1.0 END) AS score "
                ));
                sqlite_matches(&mut q, f);
                q.push(&format!(
                    " ORDER BY search_fts.rowid DESC LIMIT {RANKED_CANDIDATES})"
                ));
            }
            if tools {
                // A call and its result are one row of `tool_fts` and two documents, each at
                // its own line (as on PostgreSQL): one walk per column.
                for (seq, line) in [(0, "t.line_no"), (1, "t.result_line")] {
                    if docs || seq == 1 {
                        q.push(" UNION ALL ");
                    }
                    q.push(&format!(
                        "SELECT * FROM (SELECT t.id * 2 + {seq} AS doc_id, 'tool' AS kind, \
                         t.session_id, t.ts, t.file_id, NULL AS generation, {line} AS line_no, \
                         {seq} AS seq, t.id AS ref_id, -bm25(tool_fts) AS score "
                    ));
                    sqlite_tool_matches(&mut q, f, seq, narrow);
                    q.push(&format!(
                        " ORDER BY tool_fts.rowid DESC LIMIT {RANKED_CANDIDATES})"
                    ));
                }
            }
            q.push(&format!(
                ") c ORDER BY {}, c.score DESC, c.doc_id DESC",
                tools_last("c")
            ));
            q
        }
        Backend::Postgres => {
            // A message's session is looked up for the page only, after ranking (as on
            // SQLite): for every candidate it was a lookup per match.
            let mut q = Sql::new(
                "SELECT 0::bigint AS doc_id, h.kind, CASE WHEN h.kind = 'message' THEN \
                 (SELECT tf.session_id FROM files tf WHERE tf.id = h.file_id) \
                 ELSE h.session_id END AS session_id, h.ts, h.file_id, h.generation, \
                 h.line_no, h.seq, h.ref_id, h.score, h.prompt FROM (SELECT * FROM (",
            );
            pg_union(&mut q, f, true, indexes, narrow);
            q.push(&format!(
                ") hits ORDER BY {}, score DESC, ts DESC NULLS LAST, kind, ref_id",
                tools_last("")
            ));
            q
        }
    };
    q.push(" LIMIT ")
        .push_bind(limit)
        .push(" OFFSET ")
        .push_bind(offset);
    q.push(&match backend {
        Backend::Sqlite => format!(
            ") h ORDER BY {}, h.score DESC, h.doc_id DESC",
            tools_last("h")
        ),
        Backend::Postgres => format!(
            ") h ORDER BY {}, h.score DESC, h.ts DESC NULLS LAST, h.kind, h.ref_id",
            tools_last("h")
        ),
    });
    q
}

/// SQLite: the number of results, counted up to [`COUNT_CAP`] + 1 (a larger count is reported
/// as a lower bound: counting every match of a common word costs what ranking them all did), how
/// many of them the ranking reaches (each index's newest [`RANKED_CANDIDATES`]), and the same
/// two of what people and the assistant said alone (`search_fts`): where a page's tool hits
/// start.
///
/// `indexes` as for [`ranked`]; with both, the tool index is counted only when the other kinds'
/// matches are under the cap (a common word's count stops at the cap anyway, and its tool hits
/// come after the first [`RANKED_CANDIDATES`] of the others).
pub(super) fn sqlite_count<'a>(
    f: &'a SearchFilter,
    indexes: (bool, bool),
    narrow: bool,
) -> Sql<'a> {
    // Each index counts at most what the whole count is capped at.
    let (docs, tools) = indexes;
    // Each count is a walk of the index; written as subqueries in `FROM`, SQLite flattens
    // them into the outer `SELECT` and walks again for every place a count is named (75 ms
    // instead of 45 for `--project` on the 5 GB store): materialized, each walks once.
    let mut q = Sql::new("WITH d AS MATERIALIZED (SELECT ");
    if docs {
        q.push("(SELECT COUNT(*) FROM (SELECT 1 ");
        sqlite_matches(&mut q, f);
        q.push(&format!(" LIMIT {}))", COUNT_CAP + 1));
    } else {
        q.push("0");
    }
    q.push(" AS a), x AS MATERIALIZED (SELECT a");
    for seq in [0, 1] {
        q.push(", ");
        if tools {
            if docs {
                q.push(&format!("CASE WHEN a > {COUNT_CAP} THEN 0 ELSE "));
            }
            q.push("(SELECT COUNT(*) FROM (SELECT 1 ");
            sqlite_tool_matches(&mut q, f, seq, narrow);
            q.push(&format!(" LIMIT {}))", COUNT_CAP + 1));
            if docs {
                q.push(" END");
            }
        } else {
            q.push("0");
        }
        q.push(if seq == 0 { " AS b" } else { " AS c" });
    }
    q.push(&format!(
        " FROM d) SELECT a + b + c, min(a, {RANKED_CANDIDATES}) + min(b, {RANKED_CANDIDATES}) \
         + min(c, {RANKED_CANDIDATES}), a, min(a, {RANKED_CANDIDATES}) FROM x"
    ));
    q
}

/// PostgreSQL: the number of results, counted up to [`COUNT_CAP`] + 1 (as [`sqlite_count`]),
/// and how many the ranking reaches (each kind's newest [`PG_RANKED_CANDIDATES`]).
pub(super) fn pg_count<'a>(f: &'a SearchFilter, indexes: (bool, bool), narrow: bool) -> Sql<'a> {
    let mut q = Sql::new("SELECT COUNT(*), ");
    q.push(&format!(
        "{PG_RANKED_CANDIDATES}::bigint FROM (SELECT 1 FROM ("
    ));
    pg_union(&mut q, f, false, indexes, narrow);
    q.push(&format!(") u LIMIT {}) hits", COUNT_CAP + 1));
    q
}

/// PostgreSQL: how many matches the ranking of `indexes` reaches (each kind's newest
/// [`PG_RANKED_CANDIDATES`]).
pub(super) fn pg_candidates<'a>(
    f: &'a SearchFilter,
    indexes: (bool, bool),
    narrow: bool,
) -> Sql<'a> {
    let mut q = Sql::new("SELECT COUNT(*) FROM (");
    pg_union(&mut q, f, true, indexes, narrow);
    q.push(") c");
    q
}

/// Which sides of the store a search reads: what people and the assistant said (messages,
/// summaries, feedback, snippets: `search_fts` on SQLite) and what tools did (`tool_fts` on
/// SQLite, the tool rows' vectors on PostgreSQL). A `--tool` search reads the second only.
pub(super) fn indexes(f: &SearchFilter) -> (bool, bool) {
    let ks = kinds(f);
    let tools = ks.contains(&SearchKind::Tool);
    let docs = f.tool.is_none() && ks.iter().any(|k| *k != SearchKind::Tool);
    (docs, tools)
}

/// `FROM ... WHERE` of `search_fts` (every kind but tools), with the filters.
fn sqlite_matches<'a>(q: &mut Sql<'a>, f: &'a SearchFilter) {
    q.push(
        "FROM search_fts JOIN search_docs d ON d.id = search_fts.rowid \
         WHERE search_fts MATCH ",
    )
    .push_bind(f.query.fts5());
    let ks: Vec<SearchKind> = kinds(f)
        .into_iter()
        .filter(|k| *k != SearchKind::Tool)
        .collect();
    if ks.len() < SearchKind::ALL.len() - 1 {
        q.push(" AND (")
            .push_in("d.kind", ks.iter().map(|k| k.as_str()));
        if prompts_as_messages(f) {
            q.push(
                " OR (d.kind = 'feedback' AND EXISTS (SELECT 1 FROM feedback pf \
                 WHERE pf.id = d.ref_id AND pf.feedback_type = 'message'))",
            );
        }
        q.push(")");
    }
    push_filters(q, f, &sqlite_doc_session("d"), &sqlite_doc_ts("d"));
}

/// `FROM ... WHERE` of `tool_fts`'s calls (`seq` 0) or results (1), with the filters.
///
/// A narrow project (`narrow`, [`NARROW_PROJECT`]) is the list of its tool rows, checked
/// against each match's rowid before the row is read: looking up every match's row for its
/// session made a project's count of a common word walk the word's matches at a row read each
/// (on the 5 GB store 20 ms of `--project`'s count, 8 with the list).
fn sqlite_tool_matches<'a>(q: &mut Sql<'a>, f: &'a SearchFilter, seq: u8, narrow: bool) {
    let column = if seq == 0 { "call" } else { "result" };
    q.push(
        "FROM tool_fts JOIN tool_uses t ON t.id = tool_fts.rowid \
         WHERE tool_fts MATCH ",
    )
    .push_bind(format!("{column} : ({})", f.query.fts5()));
    if let Some(tool) = &f.tool {
        q.push(" AND t.name = ")
            .push_bind(tool.as_str())
            .push(" COLLATE NOCASE");
    }
    match (&f.project, narrow) {
        (Some(project), true) => {
            // `+`: a filter on the walk's rowids, not a lookup per listed row.
            q.push(
                " AND +tool_fts.rowid IN (SELECT pt.id FROM tool_uses pt \
                 WHERE pt.session_id IN (",
            );
            push_project_sessions(q, project);
            q.push("))");
            push_other_filters(q, f, "t.session_id", "t.ts");
        }
        _ => push_filters(q, f, "t.session_id", "t.ts"),
    }
}

/// The marked excerpts of the page's tool hits: `rowid`, the call's and the result's (the
/// caller appends ` AND rowid IN (...)`).
pub(super) fn sqlite_tool_excerpts(f: &SearchFilter) -> Sql<'_> {
    let mut q = Sql::new(format!(
        "SELECT rowid, snippet(tool_fts, 0, char({s}), char({e}), '…', 24), \
         snippet(tool_fts, 1, char({s}), char({e}), '…', 24) \
         FROM tool_fts WHERE tool_fts MATCH ",
        s = START as u32,
        e = STOP as u32
    ));
    q.push_bind(f.query.fts5());
    q
}

/// The marked excerpts of the SQLite index; the caller appends ` AND rowid IN (...)`.
pub(super) fn sqlite_excerpts(f: &SearchFilter) -> Sql<'_> {
    let mut q = Sql::new(format!(
        "SELECT rowid, snippet(search_fts, 0, char({}), char({}), '…', 24) \
         FROM search_fts WHERE search_fts MATCH ",
        START as u32, STOP as u32
    ));
    q.push_bind(f.query.fts5());
    q
}

/// One `SELECT` per kind, `UNION ALL`; `ranked`: with kind, keys and score.
///
/// Ranked, each kind scores only its newest [`PG_RANKED_CANDIDATES`] matches, as SQLite does:
/// `ts_rank_cd` reads (and decompresses) each scored row's vector, and scoring every match of
/// a common word cost what the store's size made it (1.4 s at 80,000 sessions). The
/// candidates are taken by the table's key, reading no vector (the inner query passes them on
/// unread); a message's session is not looked up here (the caller does, for the page).
fn pg_union<'a>(
    q: &mut Sql<'a>,
    f: &'a SearchFilter,
    ranked: bool,
    indexes: (bool, bool),
    narrow: bool,
) {
    let (docs, tools) = indexes;
    let mut ks: Vec<SearchKind> = kinds(f)
        .into_iter()
        .filter(|k| if *k == SearchKind::Tool { tools } else { docs })
        .collect();
    let prompts_only = docs && prompts_as_messages(f);
    if prompts_only {
        ks.push(SearchKind::Feedback);
    }
    let sources = ks
        .into_iter()
        .flat_map(|k| pg_sources(k).into_iter().map(move |p| (k, p)));
    for (i, (k, p)) in sources.enumerate() {
        if i > 0 {
            q.push(" UNION ALL ");
        }
        if ranked {
            let names = ["file_id", "generation", "line_no", "seq", "ref_id"];
            let key: Vec<String> = p
                .key
                .iter()
                .zip(names)
                .map(|(e, n)| format!("{e}::bigint AS {n}"))
                .collect();
            let session = match k {
                SearchKind::Message => "NULL::text",
                _ => p.session,
            };
            // A feedback row that is a human prompt is a message too (one hit per line).
            let prompt = match k {
                SearchKind::Feedback => "t.feedback_type = 'message'",
                _ => "false",
            };
            q.push(
                "SELECT c.kind, c.session_id, c.ts, c.file_id, c.generation, c.line_no, c.seq, \
                 c.ref_id, ts_rank_cd(c.search_vec, ",
            );
            push_tsquery(q, &f.query);
            q.push(&format!(
                ")::float8 * {:.2} AS score, c.prompt FROM (SELECT '{}'::text AS kind, \
                 {session} AS session_id, {} AS ts, {}, {prompt} AS prompt, \
                 {} AS search_vec",
                p.boost,
                k.as_str(),
                p.ts,
                key.join(", "),
                p.vec,
            ));
        } else {
            q.push("(SELECT 1");
        }
        q.push(&format!(" FROM {} WHERE {} @@ ", p.from, p.vec));
        push_tsquery(q, &f.query);
        pg_push_filters(q, f, &p, narrow);
        if prompts_only && k == SearchKind::Feedback {
            q.push(" AND t.feedback_type = 'message'");
        }
        if let (SearchKind::Tool, Some(tool)) = (k, &f.tool) {
            q.push(" AND lower(t.name) = lower(")
                .push_bind(tool.as_str())
                .push(")");
        }
        if ranked {
            q.push(&format!(
                " ORDER BY {} LIMIT {PG_RANKED_CANDIDATES}) c",
                p.newest
            ));
        } else {
            // Each kind counts at most what the whole count is capped at.
            q.push(&format!(" LIMIT {})", COUNT_CAP + 1));
        }
    }
}

/// The query as a bound `tsquery` (see [`tsquery`]).
fn push_tsquery<'a>(q: &mut Sql<'a>, query: &'a Query) {
    q.push_bind(tsquery(query).unwrap_or_default())
        .push("::tsquery");
}

/// One word as a `tsquery` operand: its lexeme (`:*` for a prefix), or, for a word with
/// accents, that lexeme or the accented one texts indexed by earlier builds hold
/// (`('regimen' | 'régimen')`). `None` for a stop word.
fn term(word: &str, prefix: bool) -> Option<String> {
    let star = if prefix { ":*" } else { "" };
    let l = lexeme(word)?;
    Some(match accented_lexeme(word) {
        Some(a) if a != l => format!("('{l}'{star} | '{a}'{star})"),
        _ => format!("'{l}'{star}"),
    })
}

/// The query as PostgreSQL `tsquery` text, its words turned into lexemes by the rules that
/// index the texts ([`crate::extract::lexemes`]): stop words dropped (as `to_tsquery` does: a
/// part made only of them disappears, and a phrase keeps their gap as `<n>`), the rest stemmed;
/// a prefix is the stem with `:*`. `None` when nothing is left to search for. Lexemes are
/// letters and digits only, so the text holds no syntax of the user's.
pub(crate) fn tsquery(query: &Query) -> Option<String> {
    match query {
        Query::Term { word, prefix } => term(word, *prefix),
        Query::Phrase { words, prefix } => {
            let last = words.len().saturating_sub(1);
            let mut out = String::new();
            let mut gap = 0;
            for (i, w) in words.iter().enumerate() {
                gap += 1;
                let Some(t) = term(w, *prefix && i == last) else {
                    continue;
                };
                if !out.is_empty() {
                    out.push_str(&if gap == 1 {
                        " <-> ".to_string()
                    } else {
                        format!(" <{gap}> ")
                    });
                }
                out.push_str(&t);
                gap = 0;
            }
            (!out.is_empty()).then(|| format!("({out})"))
        }
        Query::And(parts) | Query::Or(parts) => {
            let op = if matches!(query, Query::And(_)) {
                " & "
            } else {
                " | "
            };
            let kept: Vec<String> = parts.iter().filter_map(tsquery).collect();
            (!kept.is_empty()).then(|| format!("({})", kept.join(op)))
        }
        Query::Not(inner) => tsquery(inner).map(|t| format!("!{t}")),
    }
}

/// `(position, text)` of the given results of one kind (the text their index was made of).
pub(super) fn pg_texts<'a>(kind: SearchKind, picked: &[&Ranked]) -> Sql<'a> {
    let p = pg_kind(kind);
    let text = match kind {
        SearchKind::Tool => format!("CASE WHEN k.b = 0 THEN {PG_CALL_TEXT} ELSE t.result END"),
        _ => p.text.to_string(),
    };
    let mut q = Sql::new(format!("SELECT k.pos, {text} FROM (VALUES "));
    for (i, r) in picked.iter().enumerate() {
        q.push(if i == 0 { "(" } else { ", (" });
        q.push_bind(i as i64).push("::bigint, ");
        match kind {
            SearchKind::Message => {
                q.push_bind(r.file_id)
                    .push("::bigint, ")
                    .push_bind(r.generation)
                    .push("::bigint, ")
                    .push_bind(r.line_no)
                    .push("::bigint, ")
                    .push_bind(r.seq)
                    .push("::bigint)");
            }
            SearchKind::Tool => {
                q.push_bind(r.ref_id)
                    .push("::bigint, ")
                    .push_bind(r.seq)
                    .push("::bigint, NULL::bigint, NULL::bigint)");
            }
            _ => {
                q.push_bind(r.ref_id)
                    .push("::bigint, NULL::bigint, NULL::bigint, NULL::bigint)");
            }
        }
    }
    q.push(") AS k (pos, a, b, c, d) JOIN ");
    q.push(p.text_from);
    q.push(match kind {
        SearchKind::Message => {
            " ON t.file_id = k.a AND t.generation = k.b AND t.line_no = k.c AND t.seq = k.d"
        }
        _ => " ON t.id = k.a",
    });
    q
}
