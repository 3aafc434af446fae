-- Search what tools did (issue 49): each tool call's name and target (the command, the file
-- path, the pattern, the URL) and a bounded part of its result's text (extract::tools) are
-- search documents of the kind 'tool', in the one index, so a phrase from a command or an
-- error line is found at the line that holds it (the call's line, or the result's).
--
-- `tool_uses` is rebuilt with an INTEGER PRIMARY KEY: a search document names its row by id,
-- and a table without one may have its rowids renumbered by VACUUM. `search_docs` is rebuilt
-- to let its kind be 'tool' (SQLite cannot change a CHECK in place); its ids (the index's
-- rowids) are kept. The view and triggers that name it are dropped first; 0033 makes them
-- again as 0026 left them, with the tool kind added (apart, so that it can be applied again).

DROP VIEW IF EXISTS search_content;
DROP TRIGGER IF EXISTS summaries_search;
DROP TRIGGER IF EXISTS feedback_search;
DROP TRIGGER IF EXISTS snippets_search;
DROP TRIGGER IF EXISTS snippets_search_delete;
DROP TRIGGER IF EXISTS snippets_fts_update;

CREATE TABLE search_docs_v32 (
    id         INTEGER PRIMARY KEY,
    kind       TEXT    NOT NULL CHECK (kind IN ('message', 'summary', 'feedback', 'snippet', 'tool')),
    session_id TEXT    NOT NULL,
    ts         TEXT,
    -- tool: the row's file, the line of the call (seq 0) or of its result (seq 1).
    file_id    INTEGER,
    generation INTEGER,
    line_no    INTEGER,
    seq        INTEGER,
    -- summaries.id, feedback.id, snippets.id or tool_uses.id.
    ref_id     INTEGER
);
INSERT INTO search_docs_v32 (id, kind, session_id, ts, file_id, generation, line_no, seq, ref_id)
SELECT id, kind, session_id, ts, file_id, generation, line_no, seq, ref_id FROM search_docs;
DROP TABLE search_docs;
ALTER TABLE search_docs_v32 RENAME TO search_docs;
CREATE INDEX search_docs_ref ON search_docs (kind, ref_id) WHERE ref_id IS NOT NULL;

CREATE TABLE tool_uses_v32 (
    id          INTEGER PRIMARY KEY,
    tool_use_id TEXT    NOT NULL UNIQUE,
    session_id  TEXT    NOT NULL,
    name        TEXT,
    target      TEXT,
    ts          TEXT,
    is_error    INTEGER NOT NULL DEFAULT 0,
    file_id     INTEGER NOT NULL REFERENCES files (id),
    line_no     INTEGER NOT NULL,
    -- The result's line in the same file, and its text, bounded (extract::tools).
    result_line INTEGER,
    result      TEXT
);
INSERT INTO tool_uses_v32 (tool_use_id, session_id, name, target, ts, is_error, file_id, line_no)
SELECT tool_use_id, session_id, name, target, ts, is_error, file_id, line_no FROM tool_uses;
DROP TABLE tool_uses;
ALTER TABLE tool_uses_v32 RENAME TO tool_uses;
CREATE INDEX tool_uses_session ON tool_uses (session_id);
