-- Search what tools did (issue 49), the second half of 0032: the search view and the triggers
-- that index documents, as 0026 left them, with the tool kind added. Each is dropped first, so
-- applying this again is harmless.

DROP VIEW IF EXISTS search_content;
DROP TRIGGER IF EXISTS summaries_search;
DROP TRIGGER IF EXISTS feedback_search;
DROP TRIGGER IF EXISTS snippets_search;
DROP TRIGGER IF EXISTS snippets_search_delete;
DROP TRIGGER IF EXISTS snippets_fts_update;
DROP TRIGGER IF EXISTS tool_calls_search;
DROP TRIGGER IF EXISTS tool_calls_search_named;
DROP TRIGGER IF EXISTS tool_results_search;
DROP TRIGGER IF EXISTS tool_results_search_found;
DROP TRIGGER IF EXISTS tool_uses_search_delete;

CREATE VIEW search_content (id, body) AS
SELECT d.id, gleaner_fts(CASE d.kind
    WHEN 'message' THEN (SELECT m.text FROM messages m WHERE m.file_id = d.file_id
        AND m.generation = d.generation AND m.line_no = d.line_no AND m.seq = d.seq)
    WHEN 'summary' THEN (SELECT s.text FROM summaries s WHERE s.id = d.ref_id)
    WHEN 'feedback' THEN (SELECT f.content || COALESCE(char(10) || f.reason, '')
        FROM feedback f WHERE f.id = d.ref_id)
    WHEN 'snippet' THEN (SELECT sn.title || char(10) || sn.content
        FROM snippets sn WHERE sn.id = d.ref_id)
    WHEN 'tool' THEN (SELECT CASE d.seq
            WHEN 0 THEN t.name || char(10) || t.target
            ELSE t.result END
        FROM tool_uses t WHERE t.id = d.ref_id)
    END)
FROM search_docs d;

CREATE TRIGGER summaries_search AFTER INSERT ON summaries WHEN new.text IS NOT NULL BEGIN
    INSERT INTO search_docs (kind, session_id, ts, file_id, line_no, ref_id)
        VALUES ('summary', new.session_id, new.ts, new.file_id, new.line_no, new.id);
    INSERT INTO search_fts (rowid, body) VALUES (last_insert_rowid(), gleaner_fts(new.text));
END;

CREATE TRIGGER feedback_search AFTER INSERT ON feedback BEGIN
    INSERT INTO search_docs (kind, session_id, ts, file_id, line_no, ref_id)
        VALUES ('feedback', new.session_id, new.ts, new.file_id, new.line_no, new.id);
    INSERT INTO search_fts (rowid, body)
        VALUES (last_insert_rowid(),
                gleaner_fts(new.content || COALESCE(char(10) || new.reason, '')));
END;

CREATE TRIGGER snippets_search AFTER INSERT ON snippets BEGIN
    INSERT INTO search_docs (kind, session_id, ts, ref_id)
        VALUES ('snippet', new.session_id, new.created_at, new.id);
    INSERT INTO search_fts (rowid, body)
        VALUES (last_insert_rowid(), gleaner_fts(new.title || char(10) || new.content));
END;

CREATE TRIGGER snippets_search_delete AFTER DELETE ON snippets BEGIN
    INSERT INTO search_fts (search_fts, rowid, body)
        SELECT 'delete', d.id, gleaner_fts(old.title || char(10) || old.content)
        FROM search_docs d WHERE d.kind = 'snippet' AND d.ref_id = old.id;
    DELETE FROM search_docs WHERE kind = 'snippet' AND ref_id = old.id;
END;

CREATE TRIGGER snippets_fts_update AFTER UPDATE OF title, content, created_at ON snippets BEGIN
    INSERT INTO snippets_fts (snippets_fts, rowid, title, content)
        VALUES ('delete', old.id, old.title, old.content);
    INSERT INTO snippets_fts (rowid, title, content) VALUES (new.id, new.title, new.content);
    INSERT INTO search_fts (search_fts, rowid, body)
        SELECT 'delete', d.id, gleaner_fts(old.title || char(10) || old.content)
        FROM search_docs d WHERE d.kind = 'snippet' AND d.ref_id = old.id;
    UPDATE search_docs SET ts = new.created_at WHERE kind = 'snippet' AND ref_id = new.id;
    INSERT INTO search_fts (rowid, body)
        SELECT d.id, gleaner_fts(new.title || char(10) || new.content)
        FROM search_docs d WHERE d.kind = 'snippet' AND d.ref_id = new.id;
END;

-- A call with a target is a document once its name is known, a result once its text is
-- (extract::tools::call_text, QUIET_OUTPUT). The writer indexes the rows it inserts itself
-- (store::tools, as it does messages: a trigger per row cost twice as much); these triggers
-- index what a later UPDATE fills in (a copy's result, a row a result made first, named by its
-- call). The writer never changes a name, target or result once set, so what the index holds
-- is what the view reads back.
CREATE TRIGGER tool_calls_search_named AFTER UPDATE OF name ON tool_uses
WHEN old.name IS NULL AND new.name IS NOT NULL AND new.target IS NOT NULL BEGIN
    INSERT INTO search_docs (kind, session_id, ts, file_id, line_no, seq, ref_id)
        VALUES ('tool', new.session_id, new.ts, new.file_id, new.line_no, 0, new.id);
    INSERT INTO search_fts (rowid, body)
        VALUES (last_insert_rowid(), gleaner_fts(new.name || char(10) || new.target));
END;

CREATE TRIGGER tool_results_search_found AFTER UPDATE OF result ON tool_uses
WHEN old.result IS NULL AND new.result IS NOT NULL BEGIN
    INSERT INTO search_docs (kind, session_id, ts, file_id, line_no, seq, ref_id)
        VALUES ('tool', new.session_id, new.ts, new.file_id, new.result_line, 1, new.id);
    INSERT INTO search_fts (rowid, body) VALUES (last_insert_rowid(), gleaner_fts(new.result));
END;

-- Prune and re-extraction delete tool rows: their words leave the index with them.
CREATE TRIGGER tool_uses_search_delete AFTER DELETE ON tool_uses BEGIN
    INSERT INTO search_fts (search_fts, rowid, body)
        SELECT 'delete', d.id, gleaner_fts(CASE d.seq
            WHEN 0 THEN old.name || char(10) || old.target
            ELSE old.result END)
        FROM search_docs d WHERE d.kind = 'tool' AND d.ref_id = old.id;
    DELETE FROM search_docs WHERE kind = 'tool' AND ref_id = old.id;
END;
