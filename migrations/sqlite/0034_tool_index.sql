-- Tool documents get an index of their own (issue 49). In `search_fts` beside messages they
-- doubled what a common word's search walked (a build log holds "error" more often than
-- anything people wrote): on the 5 GB benchmark store SQLite's common-word search went from 25
-- to 56 ms p99 and `--kind summary` from 38 to 82 ms, over the 50 ms bound, and each tool call
-- cost a `search_docs` row besides its own. PostgreSQL keeps tool vectors on `tool_uses` (0032),
-- apart from the other kinds, already.
--
-- `tool_fts` has one row per tool use, its rowid the row's id (an INTEGER PRIMARY KEY, which
-- VACUUM keeps), with two columns: the call (name and target) and the result's bounded text.
-- Each column is searched as a document at its own line, the call's or the result's
-- (`store::search`), as PostgreSQL's two vectors are. The writer indexes the rows it inserts (`store::tools`); the triggers
-- below index what a later UPDATE fills in and remove a row's words when it is deleted (prune,
-- re-extraction). An external-content FTS5 'delete' needs the text that was indexed: a row's
-- name, target and result are written once and never changed, so its columns give it back.

-- The tool documents leave `search_fts` (their words, then their rows).
DROP TRIGGER IF EXISTS tool_calls_search;
DROP TRIGGER IF EXISTS tool_calls_search_named;
DROP TRIGGER IF EXISTS tool_results_search;
DROP TRIGGER IF EXISTS tool_results_search_found;
DROP TRIGGER IF EXISTS tool_uses_search_delete;
INSERT INTO search_fts (search_fts, rowid, body)
    SELECT 'delete', d.id, gleaner_fts(CASE d.seq
        WHEN 0 THEN t.name || char(10) || t.target
        ELSE t.result END)
    FROM search_docs d JOIN tool_uses t ON t.id = d.ref_id
    WHERE d.kind = 'tool';
DELETE FROM search_docs WHERE kind = 'tool';

-- The rows with something to search: a named call with a target, or a result's text.
CREATE VIEW IF NOT EXISTS tool_content (id, call, result) AS
SELECT id, gleaner_fts(name || char(10) || target), gleaner_fts(result) FROM tool_uses
WHERE (name IS NOT NULL AND target IS NOT NULL) OR result IS NOT NULL;

CREATE VIRTUAL TABLE IF NOT EXISTS tool_fts USING fts5 (
    call, result, content = 'tool_content', content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
-- As search_fts (0004): merging 16 segments at a time costs ingest less.
INSERT INTO tool_fts (tool_fts, rank) VALUES ('automerge', 16);

-- Built from its content whole ('rebuild' drops what it held first: applying this migration
-- again, as `tests/it/doors.rs` does with the latest one, indexes nothing twice).
INSERT INTO tool_fts (tool_fts) VALUES ('rebuild');

DROP TRIGGER IF EXISTS tool_fts_update;
DROP TRIGGER IF EXISTS tool_fts_delete;

-- A row indexed already (a call or a result) is indexed again with what the update adds.
CREATE TRIGGER tool_fts_update AFTER UPDATE OF name, result ON tool_uses
WHEN (old.name IS NULL AND new.name IS NOT NULL AND new.target IS NOT NULL)
    OR (old.result IS NULL AND new.result IS NOT NULL) BEGIN
    INSERT INTO tool_fts (tool_fts, rowid, call, result)
        SELECT 'delete', old.id, gleaner_fts(old.name || char(10) || old.target),
            gleaner_fts(old.result)
        WHERE (old.name IS NOT NULL AND old.target IS NOT NULL) OR old.result IS NOT NULL;
    INSERT INTO tool_fts (rowid, call, result)
        VALUES (new.id, gleaner_fts(new.name || char(10) || new.target), gleaner_fts(new.result));
END;

CREATE TRIGGER tool_fts_delete AFTER DELETE ON tool_uses
WHEN (old.name IS NOT NULL AND old.target IS NOT NULL) OR old.result IS NOT NULL BEGIN
    INSERT INTO tool_fts (tool_fts, rowid, call, result)
        VALUES ('delete', old.id, gleaner_fts(old.name || char(10) || old.target),
            gleaner_fts(old.result));
END;
